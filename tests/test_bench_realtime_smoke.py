"""``scripts/bench_realtime.py`` mounts a workspace, times realtime field writes, unmounts, and ends with one line
of JSON. Shapes only, never a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_realtime.py"


@pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse: the benchmark mounts a workspace")
def test_bench_realtime_runs_and_reports(tmp_path: Path) -> None:
    args = ["--chars", "4000", "--samples", "8", "--workdir", str(tmp_path)]
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["body_chars"] == 4000 and result["samples"] == 8
    for workload in ("write_ms", "edit_ms", "title_during_body_ms"):
        assert set(result[workload]) == {"p50", "p90"} and result[workload]["p50"] > 0
    with open("/proc/self/mounts") as mounts:
        assert str(tmp_path) not in mounts.read()  # nothing left mounted
    assert list(tmp_path.iterdir()) == []  # the run directory is removed
