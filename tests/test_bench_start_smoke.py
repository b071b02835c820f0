"""``scripts/bench_start.py --runs 1`` runs omx against the local stub and ends with one line of JSON results
(issue 17: the start-to-first-request figure is a benchmark, not a test, so no time is asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_start_measures_both_commands() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_start.py"), "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    for command in ("agent", "task"):
        assert report[command]["median_s"] > 0
        # both are rounded from the same median (3 and 2 places), so they may differ by a rounding step
        assert abs(report[command]["ratio_to_target"] - report[command]["median_s"] / report["target_s"]) <= 0.006
