"""``scripts/bench_ui.py`` at a tiny size: every page answers, every write reaches the event stream, one JSON line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.scripts import run_bench


def test_bench_ui_tiny(tmp_path: Path) -> None:
    tiny = ["--agents", "3", "--versions", "20", "--files", "4", "--deliveries", "5", "--docs", "2", "--runs", "3"]
    code, out, err = run_bench("bench_ui", *tiny, "--repeat", "2", "--writes", "3", workdir=tmp_path, timeout=120)
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert len(result["pages"]) == 8
    assert all(t["p50_ms"] > 0 for t in result["pages"].values())
    assert result["event_ms"]["p95"] > 0
