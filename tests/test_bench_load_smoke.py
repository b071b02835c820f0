"""``scripts/bench_load.py`` for a few seconds, on one daemon and on two daemons sharing a store: it must end with
one JSON line that reports zero lost updates and exactly the conflicts the histories explain, and exit 0.

This is the CI version of the 60 s load run (``--seconds 60``, 16 processes under 4 identities): same code,
same checks, smaller numbers. Whatever happens, nothing stays mounted under ``tmp_path``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import scripts
from tests.support.scripts import load_script

KEYS = {"ops", "lost_updates", "conflicts_reported", "conflicts_expected", "p50_ms", "p99_ms"}


def run_load(tmp_path: Path, *args: str) -> dict[str, Any]:
    returncode, out, err = scripts.run_bench("bench_load", *args, workdir=tmp_path, timeout=180)  # a deadlock?
    results: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert returncode == 0, (results, err)
    assert set(results) >= KEYS
    assert not any(tmp_path.iterdir()), "the run directory was not removed"
    return results


@pytest.mark.skipif(not Path("/dev/fuse").exists(), reason="/dev/fuse is absent")
@pytest.mark.parametrize("daemons", [1, 2])
def test_bench_load_short_run_loses_nothing(tmp_path: Path, daemons: int) -> None:
    results = run_load(tmp_path, "--seconds", "2", "--procs", "8", "--agents", "4", "--daemons", str(daemons))
    assert results["ops"] > 0
    assert results["lost_updates"] == 0
    assert results["conflicts_reported"] == results["conflicts_expected"]
    assert results["errors"] == {} and results["unexplained"] == 0 and results["deadlock"] is False
    assert results["daemon_exit"] == [0] * daemons
    assert 0 < results["p50_ms"] <= results["p99_ms"]
    assert results["shared_fs"] == "none"


def test_the_check_counts_what_the_store_lost(tmp_path: Path) -> None:
    """The verdict is only worth something if it can say no: acknowledged writes removed from the store count."""
    bench = load_script("bench_load")
    from omxfs.store import Workspace

    agents = bench.agent_names(2)
    bench.prepare(tmp_path / "ws", agents, 2)
    ws = Workspace(tmp_path / "ws")
    ws.collab.write("agent-1", "shared-0.md", b"someone else's", expected_version=1)
    journal = tmp_path / "journal.jsonl"
    records = [
        {"s": "ack", "op": "private_replace", "key": "agents/agent-0/w0-0.txt", "v": bench.digest(b"gone")},
        {"s": "ack", "op": "private_append", "key": "agents/agent-0/w0.log", "v": "w0 line 1"},
        {
            "s": "ack",
            "op": "collab_shared",
            "key": "collaborative/current/shared-0.md",
            "v": bench.digest(b"mine"),
            "base": 1,
            "agent": "agent-0",
        },
        {
            "s": "fail",
            "op": "collab_shared",
            "key": "collaborative/current/shared-0.md",
            "v": bench.digest(b"late"),
            "base": 1,
            "agent": "agent-0",
        },
        {"s": "ack", "op": "rt_count", "key": "count", "v": 1},
        {"s": "ack", "op": "rt_member", "key": "members", "v": "w0-1"},
        {"s": "ack", "op": "rt_note", "key": "w0", "v": 3},
    ]
    journal.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"s": "ack", "op": "torn')
    outcome = bench.verify(tmp_path / "ws", [journal])
    assert outcome.lost_updates == 6, outcome.lost
    assert (outcome.conflicts_reported, outcome.conflicts_expected) == (1, 1)
