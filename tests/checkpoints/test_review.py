"""Review before merge (issue 27, item 4), on real ``omxfs run --review`` views running real tools.

A review run's changes to its zone are held in an overlay's upper layer: the run sees them, nobody else does (the
host, an ``omxfs mount``, another agent's view) until ``omxfs accept`` applies them; ``omxfs discard`` drops them.
The zone after an accept is compared with what the review run itself saw (``LISTING``, made by ``find`` and
``sha256sum`` in the view and on the host alike).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from omxfs.store import Workspace
from tests.checkpoints.conftest import OMXFS, omxfs, tree_state
from tests.view.conftest import clean_env, poll, run_omx_as, run_view, view_argv

Ok = Callable[..., str]

#: the zone as a tree listing: path, type, mode, symlink target; then every file's sha256 (runs/ is omx's own)
LISTING = (
    "find . -path ./runs -prune -o -printf '%p %y %m %l\\n' | sort; "
    "find . -path ./runs -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum"
)

AGENT_WORK = """
set -e
tar xf project.tar
rm project.tar
rm -rf old
sed -i s/alpha/beta/ notes.md
chmod 755 tool.sh
ln -s notes.md latest
echo fresh > project/src/new.py
"""


def _baseline(zone: Path, tmp: Path) -> None:
    (zone / "notes.md").write_text("alpha\nsecond line\n")
    (zone / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (zone / "old/cache").mkdir(parents=True)
    for n in range(3):
        (zone / f"old/cache/{n}.bin").write_bytes(bytes([n]) * 1000)
    source = tmp / "project"
    (source / "src").mkdir(parents=True)
    (source / "src/app.py").write_text("app = True\n")
    with tarfile.open(zone / "project.tar", "w") as tar:
        tar.add(source, arcname="project")


def _listing(zone: Path) -> str:
    done = subprocess.run(["sh", "-c", LISTING], cwd=zone, capture_output=True, text=True, check=True)
    return done.stdout


def _bob_reads(ws: Path, ok: Ok) -> str:
    """What another agent's view shows of alice's notes and of a name the review run removed."""
    return ok(run_view(ws, "bob", f"cat {ws}/agents/alice/notes.md; ls {ws}/agents/alice"))


def test_a_review_run_is_seen_by_nobody_else_until_accepted_and_the_accept_is_undone_by_its_checkpoint(
    mount: Callable[..., object], ok: Ok, tmp_path: Path
) -> None:
    m = mount(supervisors=("boss",))
    store: Path = m.store  # type: ignore[attr-defined]
    shared: Path = m.root  # type: ignore[attr-defined]
    ws, zone = store, store / "agents/alice"
    _baseline(zone, tmp_path)
    before = tree_state(zone)
    run = run_view(shared, "alice", AGENT_WORK + LISTING, "--review")  # WS given as the mount, as people do
    seen = ok(run)
    assert "./latest l 777 notes.md" in seen and "./project/src/new.py f 644" in seen
    assert "held for review in alice's zone: 5 added, 2 modified, 6 deleted" in run.stderr
    assert f"omxfs accept {shared} alice" in run.stderr
    # nobody else sees it: the host, the shared mount, bob's view
    assert tree_state(zone) == before
    assert (shared / "agents/alice/notes.md").read_text() == "alpha\nsecond line\n"
    assert (shared / "agents/alice/old/cache/1.bin").exists()
    bob = _bob_reads(ws, ok).splitlines()
    assert bob[0] == "alpha" and "project.tar" in bob and "latest" not in bob
    pending = json.loads(omxfs("diff", str(ws), "alice", "--review", "--json").stdout)
    assert sorted(pending["added"]) == ["latest", "project", "project/src", "project/src/app.py", "project/src/new.py"]
    assert pending["modified"] == ["notes.md", "tool.sh"]
    assert pending["deleted"] == [
        "old",
        "old/cache",
        "old/cache/0.bin",
        "old/cache/1.bin",
        "old/cache/2.bin",
        "project.tar",
    ]
    assert pending["details"]["tool.sh"]["mode"] == ["644", "755"]
    text = omxfs("diff", str(ws), "alice", "--review").stdout
    assert "-alpha" in text and "+beta" in text  # the same output as omxfs diff: a unified diff of notes.md
    accepted = omxfs("accept", str(ws), "alice", "--as", "boss").stdout
    undo = accepted.splitlines()[-1].split()
    assert undo[:6] == ["undo", "with:", "omxfs", "restore", str(ws), "alice"] and undo[7:] == ["--as", "boss"]
    assert _listing(zone) == seen  # the zone is now what the review run saw
    assert (shared / "agents/alice/notes.md").read_text() == "beta\nsecond line\n"
    assert _bob_reads(ws, ok).splitlines()[:1] == ["beta"]
    assert not (ws / ".omxfs/reviews/alice").exists()
    trail = [r["action"] for r in Workspace(ws).audit_trail().records]
    assert any(a.startswith("accept review") for a in trail)
    omxfs("restore", str(ws), "alice", undo[6], "--as", "boss")
    assert tree_state(zone) == before  # the accept undone, exactly


def test_a_discarded_review_leaves_the_zone_as_it_was(store: Workspace, ok: Ok, tmp_path: Path) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    _baseline(zone, tmp_path)
    before = tree_state(zone)
    ok(run_view(ws, "alice", AGENT_WORK, "--review"))
    assert "deleted" in json.loads(omxfs("diff", str(ws), "alice", "--review", "--json").stdout)
    refused = omxfs("discard", str(ws), "alice", "--as", "bob", check=False)
    assert refused.returncode == 1 and "only alice or a supervisor" in refused.stderr
    assert omxfs("discard", str(ws), "alice", "--as", "alice").stdout.strip() == "discarded alice's review"
    assert tree_state(zone) == before and not (ws / ".omxfs/reviews/alice").exists()
    assert "discard review" in [r["action"] for r in Workspace(ws).audit_trail().records]
    gone = omxfs("diff", str(ws), "alice", "--review", check=False)
    assert gone.returncode == 1 and "no review pending" in gone.stderr


@pytest.fixture
def control(tmp_path: Path) -> Path:
    path = tmp_path / "control"
    path.mkdir()
    return path


def test_refusals_while_a_review_is_pending_or_its_view_runs(store: Workspace, ok: Ok, control: Path) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("old\n")
    script = f"echo new > notes.md; echo up > {control}/up; until [ -e {control}/go ]; do sleep 0.05; done; cat mine"
    first = ok(run_view(ws, "alice", "echo first > mine", "--review"))
    assert first == ""
    view = subprocess.Popen(
        view_argv(ws, "alice", script, "--review", "--bind", str(control)),
        cwd=ws.parent,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        poll(lambda: (control / "up").exists() or view.poll() is not None)
        assert view.poll() is None, view.communicate()
        # while the review view runs: another agent sees the zone as it was (the review beside it, at @review, as
        # on the mount), and nothing decides or joins
        assert _bob_reads(ws, ok).splitlines() == ["old", "@review", "notes.md"]
        for verb in ("accept", "discard"):
            busy = omxfs(verb, str(ws), "alice", "--as", "alice", check=False)
            assert busy.returncode == 1 and "a view of alice is running" in busy.stderr, busy.stderr
        second = run_view(ws, "alice", "true", "--review")
        assert second.returncode == 1 and "a review run needs the zone to itself" in second.stderr
    finally:
        (control / "go").touch()
        out, err = view.communicate(timeout=60)
    assert view.returncode == 0, err
    assert out == "first\n"  # the second review run continued the first one's pending change
    assert "held for review in alice's zone: 1 added, 1 modified, 0 deleted" in err  # both runs' changes
    assert "omxfs accept" in err and "omxfs discard" in err
    plain = run_view(ws, "alice", "echo plain > notes.md")
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    (line,) = plain.stderr.strip().splitlines()
    assert "alice has a review pending" in line and "omxfs accept" in line and "omxfs discard" in line
    assert (zone / "notes.md").read_text() == "old\n" and not (zone / "mine").exists()
    omxfs("accept", str(ws), "alice", "--as", "alice")
    assert (zone / "notes.md").read_text() == "new\n" and (zone / "mine").read_text() == "first\n"


@pytest.mark.parametrize("finish", ["accept", "fsck --repair"])
def test_an_accept_killed_half_way_is_known_to_fsck_and_finished_by_accept_or_repair(
    store: Workspace, ok: Ok, tmp_path: Path, finish: str
) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    _baseline(zone, tmp_path)
    seen = ok(run_view(ws, "alice", AGENT_WORK + LISTING, "--review"))
    env = {**clean_env(), "OMXFS_CRASH_AT": "accept-applied:3"}
    killed = omxfs("accept", str(ws), "alice", "--as", "alice", env=env, check=False)
    assert killed.returncode == -9
    assert _listing(zone) != seen  # half-way: some of the change applied, not all
    assert (ws / ".omxfs/reviews/alice/accepting").exists()
    report = omxfs("fsck", str(ws), check=False).stdout
    assert "interrupted-accept" in report
    plain = run_view(ws, "alice", "true")
    assert plain.returncode == 1 and "review pending" in plain.stderr
    again = run_view(ws, "alice", "true", "--review")
    assert again.returncode == 1 and "accept of alice's review was interrupted" in again.stderr
    if finish == "accept":
        assert "interrupted accept, finished" in omxfs("accept", str(ws), "alice", "--as", "alice").stdout
    else:
        repaired = omxfs("fsck", str(ws), "--repair").stdout.splitlines()
        assert any(line.startswith("repaired") and "interrupted-accept" in line for line in repaired), repaired
    assert _listing(zone) == seen and not (ws / ".omxfs/reviews/alice").exists()
    assert "interrupted-accept" not in omxfs("fsck", str(ws)).stdout


@pytest.fixture
def home() -> Iterator[Path]:
    from tests.support.unprivileged import nobody_dir

    path = nobody_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_an_unprivileged_review_view_holds_its_change_until_accepted(tmp_path: Path, home: Path) -> None:
    from tests.support.unprivileged import NOBODY, as_nobody

    def nobody(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            as_nobody(list(argv), tmp_path), capture_output=True, text=True, timeout=60, env=clean_env(), cwd="/"
        )

    ws = home / "ws"
    assert nobody(*OMXFS, "init", str(ws), "--agent", "alice").returncode == 0
    zone = ws / "agents/alice"
    (zone / "keep.md").write_text("kept\n")
    (zone / "gone.md").write_text("gone\n")
    os.chown(zone / "keep.md", NOBODY, NOBODY)
    os.chown(zone / "gone.md", NOBODY, NOBODY)
    script = "id -u; echo more >> keep.md; rm gone.md; mkdir d; echo n > d/n; cat keep.md"
    done = nobody(*OMXFS, "run", str(ws), "--as", "alice", "--review", "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(NOBODY), "kept", "more"]
    assert (zone / "keep.md").read_text() == "kept\n" and (zone / "gone.md").exists() and not (zone / "d").exists()
    pending = nobody(*OMXFS, "diff", str(ws), "alice", "--review", "--json")
    assert pending.returncode == 0, pending.stderr
    changes = json.loads(pending.stdout)
    assert (changes["added"], changes["modified"], changes["deleted"]) == (["d", "d/n"], ["keep.md"], ["gone.md"])
    accepted = nobody(*OMXFS, "accept", str(ws), "alice", "--as", "alice")
    assert accepted.returncode == 0, accepted.stderr
    assert (zone / "keep.md").read_text() == "kept\nmore\n" and not (zone / "gone.md").exists()
    assert (zone / "d/n").stat().st_uid == NOBODY
    assert not (ws / ".omxfs/reviews/alice").exists()


def test_omx_as_an_agent_with_review_holds_its_run_and_prints_the_stat_and_the_commands(store: Workspace) -> None:
    from tests.checkpoints.test_omx_run import PLAN  # bob edits agents/bob/keep.md

    ws, zone = store.root, store.root / "agents/bob"
    (zone / "keep.md").write_text("A\n", encoding="utf-8")
    replies = zone / "replies.json"
    replies.write_text(json.dumps([json.dumps(PLAN)]), encoding="utf-8")
    done = run_omx_as("bob", ws, "edit keep.md", replies, "--review")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (zone / "keep.md").read_text(encoding="utf-8") == "A\n"  # held apart
    assert "held for review in bob's zone:" in done.stderr and "1 modified" in done.stderr
    assert f"omxfs accept {ws} bob" in done.stderr and f"omxfs discard {ws} bob" in done.stderr
    changes = json.loads(omxfs("diff", str(ws), "bob", "--review", "--json").stdout)
    assert changes["modified"] == ["keep.md"] and changes["deleted"] == []
    omxfs("accept", str(ws), "bob", "--as", "bob")
    assert (zone / "keep.md").read_text(encoding="utf-8") == "B\n"


def test_omx_review_without_an_agent_or_off_an_omxfs_workspace_is_refused_in_one_line(
    store: Workspace, tmp_path: Path
) -> None:
    from tests.view.conftest import OMX, run_from_root

    alone = run_from_root([str(OMX), "a task", "--review", "-w", str(store.root)])
    assert alone.returncode == 2 and "name the agent with --as NAME" in alone.stderr
    plain = run_from_root([str(OMX), "a task", "--review", "--as", "alice", "-w", str(tmp_path)])
    assert plain.returncode == 2 and "--review needs an omxfs workspace" in plain.stderr
    assert "Traceback" not in alone.stderr + plain.stderr
