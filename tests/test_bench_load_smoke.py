"""``scripts/bench_load.py`` for a few seconds, on one daemon and on two daemons sharing a store: it must end with
one JSON line that reports zero lost updates and exactly the conflicts the histories explain, and exit 0.

This is the CI version of the 60 s load run (``--seconds 60``, 16 processes under 4 identities): same code,
same checks, smaller numbers. Whatever happens, nothing stays mounted under ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripts import load_script

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_load.py"
KEYS = {"ops", "lost_updates", "conflicts_reported", "conflicts_expected", "p50_ms", "p99_ms"}


def unmount_everything_under(path: Path) -> None:
    with open("/proc/self/mounts") as f:
        mounted = [Path(line.split()[1].replace("\\040", " ")) for line in f if line.strip()]
    for mountpoint in mounted:
        if mountpoint.is_relative_to(path.resolve()):
            subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], check=False, timeout=30)


def run_load(tmp_path: Path, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    command = [sys.executable, str(SCRIPT), "--workdir", str(tmp_path), *args]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        try:
            out, err = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
            pytest.fail(f"the load run timed out (a deadlock?):\n{err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        unmount_everything_under(tmp_path)
    results: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert proc.returncode == 0, (results, err)
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
