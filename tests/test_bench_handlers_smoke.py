"""``scripts/bench_handlers.py`` runs both targets' operations and omx's duties in-process and ends with one JSON
line (issue 16: the handler CPU per request is a benchmark, so no time is asserted here, only that every operation
and duty was measured)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.scripts import load_script, run_bench


def test_bench_handlers_measures_every_operation_of_both_targets(tmp_path: Path) -> None:
    code, out, err = run_bench("bench_handlers", "--files", "20", "--rounds", "1", workdir=tmp_path, timeout=300)
    assert code == 0, err
    report = json.loads(out.splitlines()[-1])
    operations = set(load_script("bench_handlers").OPERATIONS)
    for target in ("omx_us", "floor_us"):
        assert set(report[target]) == operations
        assert all(us > 0 for us in report[target].values()), report[target]
    assert report["ratio_vs_floor"] == round(report["cycle_us"]["omx"] / report["cycle_us"]["floor"], 2)
    assert set(report["duties_us"]) == set(load_script("bench_handlers").DUTIES)
    assert all(us > 0 for us in report["duties_us"].values()), report["duties_us"]
    assert list(tmp_path.iterdir()) == []  # the run directory is removed


def test_bench_handlers_refuses_nonsense(tmp_path: Path) -> None:
    code, _, err = run_bench("bench_handlers", "--files", "0", workdir=tmp_path, timeout=60)
    assert code == 2 and "at least 1" in err
