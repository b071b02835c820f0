"""Several real processes on one store: no lost update, every refused commit reported, crashes leave no half files."""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import random
import signal
import time
from pathlib import Path

import pytest

from omxfs.errors import Conflict
from omxfs.store import Workspace

WORKERS = 8
COMMITS = 100


def commit_worker(root: str, agent: str, commits: int, results: mp.Queue) -> None:  # type: ignore[type-arg]
    """Commit ``commits`` times to one file, retrying on conflict from a fresh read, as an agent would."""
    ws = Workspace(root)
    acknowledged: list[int] = []
    conflicts = 0
    while len(acknowledged) < commits:
        base = ws.collab.current_version("shared.md")
        content = f"{agent} commit {len(acknowledged)} on top of v{base}\n".encode()
        try:
            entry = ws.collab.write(agent, "shared.md", content, expected_version=base)
        except Conflict as exc:
            assert exc.info["current_version"] > base
            conflicts += 1
            continue
        acknowledged.append(entry.version)
    results.put((agent, acknowledged, conflicts))


@pytest.mark.slow
def test_eight_processes_commit_800_versions_and_lose_nothing(tmp_path: Path) -> None:
    agents = [f"w{i}" for i in range(WORKERS)]
    ws = Workspace.init(tmp_path / "ws", agents=agents)
    ctx = mp.get_context("spawn")
    results: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=commit_worker, args=(str(ws.root), a, COMMITS, results)) for a in agents]
    for p in procs:
        p.start()
    outcome = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    history = ws.collab.history("shared.md")
    assert [h.version for h in history] == list(range(1, WORKERS * COMMITS + 1))
    claimed: dict[int, str] = {}
    for agent, versions, _ in outcome:
        assert len(versions) == COMMITS
        for i, v in enumerate(versions):
            assert v not in claimed, f"version {v} acknowledged to both {claimed[v]} and {agent}"
            claimed[v] = agent
            content = ws.collab.read_version("shared.md", v).decode()
            assert content.startswith(f"{agent} commit {i} on top of v{v - 1}\n")
            assert history[v - 1].author == agent
    for h in history:
        assert hashlib.sha256(ws.collab.read_version("shared.md", h.version)).hexdigest() == h.sha256
    # Each commit on a base made stale by another process was refused with a Conflict and retried, so the
    # attempts exceed the commits exactly by the conflicts reported, and every version's base is its predecessor.
    assert sum(c for _, _, c in outcome) > 0
    assert ws.collab.read("shared.md").content == ws.collab.read_version("shared.md", WORKERS * COMMITS)


def churn(root: str, seed: int) -> None:
    """Write private files, commits and realtime edits until killed."""
    ws = Workspace(root)
    rng = random.Random(seed)
    i = 0
    while True:
        i += 1
        body = os.urandom(rng.randint(1, 200_000))
        ws.private.write("alice", "alice", "big.bin", hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        ws.collab.write("alice", "log.md", f"entry {i}\n".encode() * rng.randint(1, 2000), expected_version=-1)
        ws.realtime.update("alice", "doc", lambda d, r, i=i: d.field("body").insert(0, f"[{i}]", r))


def test_kill_mid_write_leaves_previous_state_intact(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", agents=["alice"])
    ws.realtime.create("alice", "doc", {"body": "rga"})
    ctx = mp.get_context("spawn")
    rng = random.Random(1234)
    for round_no in range(6):
        p = ctx.Process(target=churn, args=(str(ws.root), round_no))
        p.start()
        # Kill at a random moment once the child is writing (it may take long to start on a loaded machine).
        started = ws.collab.current_version("log.md")
        deadline = time.monotonic() + 60
        while ws.collab.current_version("log.md") == started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ws.collab.current_version("log.md") > started, "the writer never got going"
        time.sleep(rng.random() * 0.5)
        assert p.pid is not None
        os.kill(p.pid, signal.SIGKILL)
        p.join()
        # The private file is whole: its first line is the checksum of the rest.
        raw = (ws.root / "agents/alice/big.bin").read_bytes()
        digest, _, body = raw.partition(b"\n")
        assert hashlib.sha256(body).hexdigest().encode() == digest
        # Every version in the history exists whole; the current file is a committed version.
        history = ws.collab.history("log.md")
        for h in history:
            assert hashlib.sha256(ws.collab.read_version("log.md", h.version)).hexdigest() == h.sha256
        current = (ws.root / "collaborative/current/log.md").read_bytes()
        assert current in {ws.collab.read_version("log.md", h.version) for h in history[-2:]}
        json.loads((ws.root / "realtime/.crdt_state/doc.crdt.json").read_bytes())
        ws.realtime.load("doc")
        # No half files anywhere in the zones: scratch files live only under .omxfs/tmp.
        for dirpath, _, files in os.walk(ws.root):
            if ".omxfs" not in dirpath:
                assert not [f for f in files if f.endswith(".tmp")], dirpath
