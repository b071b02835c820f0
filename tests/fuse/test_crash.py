"""SIGKILL of the daemon at random moments while several processes write every zone (SPEC §7: nothing
acknowledged is lost, not even by ``kill -9``).

Each round: worker processes of three identities (``scripts/bench_load.py``'s workers: private saves and
appends, handoff deliveries, collaborative commits on own and shared files, realtime counter / set / map edits)
journal every write as tried and acknowledged outside the mount; after a random number of acknowledged writes
the daemon gets SIGKILL. Then ``omxfs status`` must call the mount stale, ``omxfs mount`` must refuse it with
advice, ``omxfs umount`` must clear it, ``omxfs fsck --repair`` must find no corruption (only crash debris,
which it completes), and the store must hold every acknowledged write, no content that no worker wrote (no
half-written file or version), and every history must parse. The next round runs on a fresh ``omxfs mount``
of the same mountpoint; at the end the daemons' logs hold no traceback.
"""

from __future__ import annotations

import functools
import json
import os
import random
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from omxfs.store import Workspace
from omxfs.store.fsck import fsck
from omxfs.store.layout import META_DIR
from omxfs.store.mount_records import read_records
from omxfs.store.records import sha256
from tests.fuse.conftest import Mount, poll
from tests.support.scripts import load_script, run_omxfs

REPO = Path(__file__).resolve().parents[2]
AGENTS = ["alice", "bob", "carol"]
WORKERS = 6  # two processes per identity
ROUNDS = 4


bench = load_script("bench_load")
omxfs = functools.partial(run_omxfs, timeout=60)


def acks(journals: list[Path]) -> int:
    total = 0
    for journal in journals:
        if journal.exists():
            total += journal.read_bytes().count(b'"s": "ack"')
    return total


def progressed(journals: list[Path], wanted: int) -> bool:
    return acks(journals) >= wanted


def gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie has: it waits only for its parent to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def daemon_pid(store: Path, mountpoint: Path) -> int:
    records = [r for r in read_records(store / META_DIR) if r.mountpoint == str(mountpoint)]
    assert len(records) == 1, records
    return records[0].pid


def test_sigkill_during_mixed_writes_loses_nothing_acknowledged(mount: Callable[..., Mount], tmp_path: Path) -> None:
    m = mount(agents=AGENTS, default="alice")
    store, root = m.store, m.root
    bench.prepare(store, AGENTS, WORKERS)
    rng = random.Random(7)
    journals = [tmp_path / f"journal-{i}.jsonl" for i in range(WORKERS)]
    pid = m.proc.pid
    workers: list[subprocess.Popen[bytes]] = []
    try:
        for round_ in range(ROUNDS):
            start = acks(journals)
            workers = [bench.spawn_worker(root, i, AGENTS, journals[i], 60, round_ * 100 + i) for i in range(WORKERS)]
            wanted = start + rng.randint(10, 80)
            poll(
                functools.partial(progressed, journals, wanted),
                timeout=30,
                what=f"{wanted - start} acknowledged writes",
            )
            if round_ == 0:
                m.kill(signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
                poll(functools.partial(gone, pid), what="the daemon to die")
            for w in workers:
                assert w.wait(timeout=30) == 0, "a worker failed otherwise than by the lost connection"

            # The stale mount is recognised and cleared with advice, and the store is whole again.
            status = omxfs("status", str(root))
            assert status.returncode == 1 and "stale mount" in status.stderr, status.stderr
            refused = omxfs("mount", str(store), str(root), "--as", "alice")
            assert refused.returncode == 1 and f"omxfs umount {root}" in refused.stderr, refused.stderr
            cleared = omxfs("umount", str(root))
            assert cleared.returncode == 0, cleared.stderr
            repaired = fsck(Workspace(store), repair=True, temp_grace=0)
            assert not repaired.corrupt, [f.line() for f in repaired.corrupt]
            assert fsck(Workspace(store), temp_grace=0).clean
            assert omxfs("fsck", str(store)).returncode == 0

            outcome = bench.verify(store, journals)
            assert outcome.lost == [], outcome.lost
            assert outcome.unexplained == [], outcome.unexplained
            assert outcome.errors == {}
            assert outcome.conflicts_reported == outcome.conflicts_expected

            remounted = omxfs("mount", str(store), str(root), "--as", "alice")
            assert remounted.returncode == 0, remounted.stderr
            pid = daemon_pid(store, root)
            assert pid != m.proc.pid

        # The last mount serves what the store holds (checked against the journals above), zone by zone.
        for journal in journals:
            for rec in bench.read_journal(journal):
                if rec["s"] == "ack" and rec["op"] in ("private_replace", "private_append", "handoff"):
                    assert (root / rec["key"]).read_bytes() == (store / rec["key"]).read_bytes(), rec["key"]
        assert json.loads((root / "realtime/board/.snapshot.json").read_bytes())["doc_id"] == "board"
        assert omxfs("umount", str(root)).returncode == 0
        assert gone(pid)
    finally:
        # The daemon first: a worker waits for its answer, uninterruptibly once the daemon has read the request.
        if not gone(pid) and pid != m.proc.pid:
            os.kill(pid, signal.SIGKILL)
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait(60)
        subprocess.run(["fusermount3", "-uz", str(root)], capture_output=True, check=False)
    logs = "".join(p.read_text("utf-8", "replace") for p in (store / ".omxfs" / "logs").glob("mount-*.log"))
    assert "Traceback" not in logs, logs[-4000:]


# -- regressions found by the test above -------------------------------------------------------------------------


def test_mounting_over_a_stale_mount_says_it_is_stale(mount: Callable[..., Mount]) -> None:
    """Bug: a stale mount fails lstat with ENOTCONN, and ``omxfs mount`` called it absent ("create it with mkdir")."""
    m = mount()
    m.kill(signal.SIGKILL)
    refused = omxfs("mount", str(m.store), str(m.root), "--as", "alice")
    assert refused.returncode == 1
    assert "stale mount" in refused.stderr and f"omxfs umount {m.root}" in refused.stderr, refused.stderr
    assert omxfs("umount", str(m.root)).returncode == 0
    assert omxfs("mount", str(m.store), str(m.root), "--as", "alice").returncode == 0
    assert (m.root / "agents" / "alice").is_dir()
    assert omxfs("umount", str(m.root)).returncode == 0


class Killed(BaseException):
    """Stands for SIGKILL between two writes of the store."""


def test_a_redelivery_killed_before_its_metadata_never_shows_the_old_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: re-delivering wrote the new file, then its metadata; killed in between, readers got the *old*
    metadata (old sha256, old message) beside the new content until fsck ran."""
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    ws.handoff.deliver("alice", "bob", "d.txt", b"old", "first")
    install = ws.writer.install

    def killed_at_meta(tmp: Path, root: Path, rel: PurePosixPath, **kw: Any) -> None:
        if rel.name.endswith(".meta.json"):
            raise Killed
        install(tmp, root, rel, **kw)

    monkeypatch.setattr(ws.writer, "install", killed_at_meta)
    with pytest.raises(Killed):
        ws.handoff.deliver("alice", "bob", "d.txt", b"new", "second")
    monkeypatch.undo()
    meta = ws.handoff.meta("alice", "bob", "d.txt")
    assert (meta.sha256, meta.message) == (sha256(b"new"), "")
    assert sorted(f.kind for f in fsck(ws, repair=True, temp_grace=0).findings) == ["missing-meta", "temp-file"]
    assert ws.handoff.meta("alice", "bob", "d.txt").sha256 == sha256(b"new")
