"""The store stays correct when its OS locks hold nothing, as on a shared filesystem whose clients share no locks.

Each worker is a real process whose ``Locks.hold`` is a no-op, so every commit races every other one for real,
and only the exclusive create of the entry file decides (SPEC §1). Nothing acknowledged may be lost, every
refused commit must be explained by a commit that took its version, and every refusal keeps its own record.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing as mp
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omxfs.errors import Conflict
from omxfs.store import NO_CHECK, Workspace
from omxfs.store.fsck import fsck

WORKERS = 4
COMMITS = 40


@contextlib.contextmanager
def _nothing(name: str) -> Iterator[None]:
    yield


def unlocked(root: str) -> Workspace:
    """A view of the store whose locks are shared with nobody, not even this machine's other processes."""
    ws = Workspace(root)
    ws.locks.hold = _nothing  # type: ignore[method-assign]
    return ws


def checked_worker(root: str, agent: str, results: Any) -> None:
    """Commit on the version just read, as an agent does; on a conflict read again and retry."""
    ws = unlocked(root)
    acknowledged: list[tuple[int, int]] = []
    refused: list[tuple[int, int]] = []
    while len(acknowledged) < COMMITS:
        base = ws.collab.current_version("shared.md")
        content = f"{agent} commit {len(acknowledged)} on top of v{base}\n".encode()
        try:
            entry = ws.collab.write(agent, "shared.md", content, expected_version=base)
        except Conflict as exc:
            assert exc.info["current_version"] > base
            refused.append((base, exc.info["current_version"]))
            continue
        acknowledged.append((base, entry.version))
    results.put((agent, acknowledged, refused))


def blind_worker(root: str, agent: str, results: Any) -> None:
    ws = unlocked(root)
    versions = [
        ws.collab.write(agent, "blind.md", f"{agent} {i}".encode(), expected_version=NO_CHECK).version
        for i in range(COMMITS)
    ]
    results.put((agent, versions, []))


def run_workers(root: Path, target: Any, agents: list[str]) -> list[tuple[str, list[Any], list[Any]]]:
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=(str(root), agent, results)) for agent in agents]
    for p in procs:
        p.start()
    outcome = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return outcome


@pytest.fixture
def agents() -> list[str]:
    return [f"w{i}" for i in range(WORKERS)]


@pytest.mark.slow
def test_racing_commits_without_locks_lose_nothing_and_every_refusal_is_explained(
    tmp_path: Path, agents: list[str]
) -> None:
    ws = Workspace.init(tmp_path / "ws", agents=agents)
    outcome = run_workers(ws.root, checked_worker, agents)

    history = ws.collab.history("shared.md")
    assert [h.version for h in history] == list(range(1, WORKERS * COMMITS + 1))
    claimed: dict[int, str] = {}
    for agent, acknowledged, refused in outcome:
        for i, (base, version) in enumerate(acknowledged):
            assert version == base + 1
            assert version not in claimed, f"version {version} acknowledged to both {claimed[version]} and {agent}"
            claimed[version] = agent
            content = ws.collab.read_version("shared.md", version).decode()
            assert content == f"{agent} commit {i} on top of v{base}\n"
            assert history[version - 1].author == agent
        for base, current in refused:  # someone else took the version this commit wanted
            assert history[base].author != agent or current > base + 1
        # every refused write has a record of its own, none overwritten
        records = ws.collab.conflicts(agent, "shared.md")
        assert len(records) == len(refused)
        assert sorted(r["your_base"] for r in records) == sorted(base for base, _ in refused)
        assert all(Path(ws.root, r["kept_at"]).read_text().startswith(f"{agent} commit ") for r in records)
    for h in history:
        assert hashlib.sha256(ws.collab.read_version("shared.md", h.version)).hexdigest() == h.sha256
    assert sum(len(refused) for _, _, refused in outcome) > 0, "the workers never raced"
    report = fsck(ws)
    assert report.clean, [f.line() for f in report.findings]
    assert (ws.collab.current_dir / "shared.md").read_bytes() == ws.collab.read("shared.md").content


@pytest.mark.slow
def test_blind_writes_without_locks_each_get_a_version_of_their_own(tmp_path: Path, agents: list[str]) -> None:
    ws = Workspace.init(tmp_path / "ws", agents=agents)
    outcome = run_workers(ws.root, blind_worker, agents)
    history = ws.collab.history("blind.md")
    assert [h.version for h in history] == list(range(1, WORKERS * COMMITS + 1))
    for agent, versions, _ in outcome:
        assert versions == sorted(versions)
        for i, version in enumerate(versions):
            assert ws.collab.read_version("blind.md", version) == f"{agent} {i}".encode()
    assert fsck(ws).clean


def test_every_refused_write_keeps_its_own_record(tmp_path: Path) -> None:
    """Regression: each conflict replaced the agent's previous record for the path, so only the last survived."""
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    ws.collab.write("alice", "plan.md", b"v1", expected_version=0)
    ws.collab.write("alice", "plan.md", b"v2", expected_version=1)
    for i in range(3):
        with pytest.raises(Conflict):
            ws.collab.write("bob", "plan.md", f"bob's try {i}".encode(), expected_version=1)
    records = ws.collab.conflicts("bob", "plan.md")
    assert [r["your_content"] for r in records] == ["bob's try 0", "bob's try 1", "bob's try 2"]
    kept = [Path(ws.root, r["kept_at"]) for r in records]
    assert [k.name for k in kept] == ["plan.md.rejected-1", "plan.md.rejected-2", "plan.md.rejected-3"]
    assert [k.read_text() for k in kept] == ["bob's try 0", "bob's try 1", "bob's try 2"]
    # the latest is also where it always was
    assert ws.collab.conflict_record("bob", "plan.md")["your_content"] == "bob's try 2"
    assert (ws.collab.conflicts_dir / "bob/plan.md").read_text() == "bob's try 2"
    assert ws.collab.conflicts("alice", "plan.md") == []
    assert fsck(ws).clean


def test_a_delivery_overtaken_between_its_file_and_its_metadata_delivers_again(tmp_path: Path) -> None:
    """Two daemons of the sender deliver one file at once, sharing no lock. The worst order: A's file, then all of
    B's delivery, then A's metadata, which would leave B's content beside A's message and checksum. A sees that
    the file beside its metadata is no longer its own and delivers again: what the recipient finds belongs
    together."""
    root = Workspace.init(tmp_path / "ws", agents=["alice", "bob"]).root
    a, b = unlocked(str(root)), unlocked(str(root))
    install = a.writer.install
    overtaken = []

    def install_then_overtaken(tmp: Path, where: Path, relative: Any, **kw: Any) -> None:
        install(tmp, where, relative, **kw)
        if not overtaken and relative.name == "data.csv":
            overtaken.append(b.handoff.deliver("alice", "bob", "data.csv", b"from B", "B's message"))

    a.writer.install = install_then_overtaken  # type: ignore[method-assign]
    a.handoff.deliver("alice", "bob", "data.csv", b"from A", "A's message")
    assert overtaken, "B never overtook A"
    delivery = Workspace(root).handoff.read("alice", "bob", "data.csv")
    assert (delivery.content, delivery.meta.message) == (b"from A", "A's message")
    assert delivery.meta.sha256 == hashlib.sha256(b"from A").hexdigest()
    assert fsck(Workspace(root)).clean
