"""``scripts/bench_crdt.py --quick`` runs, checks its texts, and ends with one line of JSON results."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_crdt.py"
WORKLOADS = {"automerge_paper", "append", "random_insert", "random_delete"}
LIBS = {"omx", "loro", "pycrdt"}


@pytest.mark.skipif(
    importlib.util.find_spec("pycrdt") is None or importlib.util.find_spec("loro") is None,
    reason="the benchmark peers pycrdt and loro are not installed (pip install -e '.[bench]')",
)
def test_bench_crdt_quick() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(results) == {"trace_ms", "ratio_vs_loro", "ratio_vs_pycrdt", "state_bytes", "merge_ms", "write_text"}
    assert set(results["trace_ms"]) == WORKLOADS
    for times in results["trace_ms"].values():
        assert set(times) == LIBS
        assert all(ms > 0 for ms in times.values())
    assert set(results["ratio_vs_loro"]) == set(results["ratio_vs_pycrdt"]) == WORKLOADS
    assert set(results["state_bytes"]) == LIBS
    assert all(size > 0 for size in results["state_bytes"].values())
    assert results["merge_ms"] > 0
    writes = results["write_text"]
    assert set(writes) == {"scattered_s", "scattered_rewritten", "one_line_diff_ms", "one_line_write_ms"}
    assert all(value > 0 for value in writes.values())
