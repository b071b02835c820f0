"""``omxfs fsck`` after an ``omxfs checkpoint`` killed with SIGKILL half-way (a crash point: ``crashpoints``).

Its debris is summed up by kind, one line each, saying how many, where, what left it and what ``--repair`` does
and when (``--verbose`` lists every item); debris younger than the grace period is a notice (exit 0) that
``--repair`` leaves, saying so, and removes once older; corruption, and debris to repair now, exit 1.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from omxfs.checkpoints.crashpoints import ENV
from tests.checkpoints.conftest import omxfs
from tests.fuse.conftest import clean_env

#: the blobs the killed checkpoint writes before its kill (the 40th is killed while being written)
KILLED_AT = 40


def debris_files(ws: Path) -> set[Path]:
    """Every blob of alice's checkpoints and every temp file of the store, found without omxfs."""
    blobs = ws / ".omxfs/checkpoints/alice/blobs"
    return {p for p in blobs.rglob("*") if p.is_file()} | set((ws / ".omxfs/tmp").iterdir())


@pytest.fixture
def killed(tmp_path: Path) -> tuple[Path, set[Path]]:
    """A workspace whose first checkpoint is whole, and whose second was killed after writing 39 of its 60 new
    blobs: the store and the killed checkpoint's debris (its blobs, and the temp file of the blob it was writing)."""
    ws = tmp_path / "ws"
    omxfs("init", str(ws), "--agent", "alice")
    zone = ws / "agents/alice"
    for n in range(60):
        (zone / f"d{n % 6}").mkdir(exist_ok=True)
        (zone / f"d{n % 6}/f{n}.txt").write_text(f"first {n}\n")
    omxfs("checkpoint", str(ws), "--as", "alice", "-m", "whole")
    kept = debris_files(ws)
    for n in range(60):
        (zone / f"d{n % 6}/f{n}.txt").write_text(f"second {n}\n")
    env = {**clean_env(), ENV: f"checkpoint-blob:{KILLED_AT}"}
    done = omxfs("checkpoint", str(ws), "--as", "alice", env=env, check=False)
    assert done.returncode == -9, done.stderr
    debris = debris_files(ws) - kept
    assert len({p for p in debris if "blobs" in p.parts}) >= KILLED_AT - 1
    return ws, debris


def blob_count(debris: set[Path]) -> int:
    return len({p for p in debris if "blobs" in p.parts})


def summary_line(out: str, kind: str) -> str:
    lines = [line for line in out.splitlines() if f" {kind} " in line]
    assert len(lines) == 1, out
    return lines[0]


def age(paths: set[Path], seconds: float) -> None:
    for path in paths:
        then = time.time() - seconds
        os.utime(path, (then, then), follow_symlinks=False)


def test_young_debris_is_one_line_per_kind_and_a_notice(killed: tuple[Path, set[Path]]) -> None:
    ws, debris = killed
    done = omxfs("fsck", str(ws), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) <= 3, done.stdout  # unreferenced blobs, at most one temp file, the totals: not one per blob
    blobs = summary_line(done.stdout, "unreferenced-blob").split()
    assert blobs[:4] == ["debris", str(blob_count(debris)), "unreferenced-blob", "under"]
    line = " ".join(blobs)
    assert ".omxfs/checkpoints/alice/blobs:" in line and "interrupted checkpoint" in line
    assert "younger than 300 s" in line and "(--repair then)" in line
    assert lines[-1].endswith(f": 0 corrupt, 0 unresolved, {len(debris)} too young to remove yet (removable in 300 s)")


def test_verbose_lists_every_item(killed: tuple[Path, set[Path]]) -> None:
    ws, debris = killed
    done = omxfs("fsck", str(ws), "--verbose", check=False)
    assert done.returncode == 0, done.stdout
    items = [
        line.split()[2] for line in done.stdout.splitlines() if line.split()[1] in ("unreferenced-blob", "temp-file")
    ]
    assert {ws / item.rstrip(":") for item in items} == debris
    assert " unreferenced-blob under " in done.stdout  # and the summary after them


def test_repair_leaves_young_debris_says_so_and_removes_it_once_old(killed: tuple[Path, set[Path]]) -> None:
    ws, debris = killed
    early = omxfs("fsck", str(ws), "--repair", check=False)
    assert early.returncode == 0, early.stdout
    line = summary_line(early.stdout, "unreferenced-blob")
    assert line.split()[:2] == ["left", str(blob_count(debris))] and "run --repair again" in line
    assert all(path.exists() for path in debris)

    age(debris, 400)  # past the 300 s grace period: nothing still running can own it
    due = omxfs("fsck", str(ws), check=False)
    assert due.returncode == 1, due.stdout
    assert summary_line(due.stdout, "unreferenced-blob").endswith("--repair: removed")
    assert due.stdout.splitlines()[-1].endswith(f": 0 corrupt, {len(debris)} unresolved")

    repaired = omxfs("fsck", str(ws), "--repair", check=False)
    assert repaired.returncode == 0, repaired.stdout
    line = summary_line(repaired.stdout, "unreferenced-blob")
    assert line.split()[:2] == ["repaired", str(blob_count(debris))] and line.endswith("; removed")
    assert not any(path.exists() for path in debris)
    clean = omxfs("fsck", str(ws))
    assert clean.stdout.splitlines() == [clean.stdout.splitlines()[-1]]
    assert clean.stdout.endswith(": 0 corrupt, 0 unresolved\n")
    assert omxfs("checkpoint", str(ws), "--as", "alice").stdout.strip() == "2"


def test_grace_zero_removes_young_debris_at_once(killed: tuple[Path, set[Path]]) -> None:
    ws, debris = killed
    assert omxfs("fsck", str(ws), "--grace", "0", check=False).returncode == 1  # due now, not waiting
    repaired = omxfs("fsck", str(ws), "--repair", "--grace", "0")
    assert summary_line(repaired.stdout, "unreferenced-blob").startswith("repaired")
    assert not any(path.exists() for path in debris)


def test_debris_repair_never_removes_is_left_with_why_and_exits_1(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    omxfs("init", str(ws), "--agent", "alice")
    (ws / "collaborative/current/by-hand.md").write_text("made on the store\n")
    done = omxfs("fsck", str(ws), "--repair", check=False)
    assert done.returncode == 1
    line = summary_line(done.stdout, "untracked-current")
    assert line.startswith("left") and "collaborative/current/by-hand.md" in line and "--repair leaves it: " in line
    assert (ws / "collaborative/current/by-hand.md").exists()


def test_help_says_the_exit_status_and_the_grace_period() -> None:
    text = " ".join(omxfs("fsck", "--help").stdout.split())
    assert "Exit status: 0 nothing needs doing" in text and "1 corruption, or debris that --repair repairs now" in text
    assert "--grace SECONDS" in text and "[default: 300; x>=0]" in text
    assert "-v, --verbose" in text
