"""``scripts/bench_handlers.py`` runs both targets' operations in-process and ends with one JSON line (issue 16: the
handler CPU per request is a benchmark, so no time is asserted here, only that every operation was measured)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OPERATIONS = {
    "lookup_absent",
    "create",
    "write",
    "flush",
    "release",
    "getattr",
    "open",
    "read",
    "flush_release_read",
    "unlink",
}


def test_bench_handlers_measures_every_operation_of_both_targets(tmp_path: Path) -> None:
    script = str(REPO / "scripts" / "bench_handlers.py")
    done = subprocess.run(
        [sys.executable, script, "--files", "20", "--rounds", "1", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    for target in ("omx_us", "floor_us"):
        assert set(report[target]) == OPERATIONS
        assert all(us > 0 for us in report[target].values()), report[target]
    assert report["ratio_vs_floor"] == round(report["cycle_us"]["omx"] / report["cycle_us"]["floor"], 2)
    assert list(tmp_path.iterdir()) == []  # the run directory is removed


def test_bench_handlers_refuses_nonsense() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_handlers.py"), "--files", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "at least 1" in done.stderr
