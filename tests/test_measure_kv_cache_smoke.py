"""scripts/measure_kv_cache.py: the scripted 10-step demo reaches prefix_reuse >= 0.95, and a runs dir re-reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "measure_kv_cache.py"


def _last_json(*args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(result, dict)
    return result


def test_demo_reaches_the_prefix_reuse_target_and_the_runs_dir_report_agrees(tmp_path: Path) -> None:
    demo = _last_json("--demo", str(tmp_path))
    assert demo["requests"] == 10 and demo["runs"] == 1 and demo["cold_requests"] == 1
    assert isinstance(demo["prefix_reuse"], float) and demo["prefix_reuse"] >= 0.95
    assert isinstance(demo["cached_token_rate"], float) and 0.8 < demo["cached_token_rate"] < 1
    assert _last_json(str(tmp_path)) == demo
    (run,) = tmp_path.iterdir()
    assert _last_json(str(run)) == demo  # one run directory reads the same


def test_an_empty_runs_dir_reports_nothing_measured(tmp_path: Path) -> None:
    report = _last_json(str(tmp_path))
    assert report["requests"] == 0 and report["prefix_reuse"] is None and report["cached_token_rate"] is None
