"""``scripts/bench_branches.py --quick`` measures what a branch costs, every measure against its baseline, and prints
a row for each, then one JSON line with the same figures; it refuses to run without root. Only the shape and the
arithmetic are checked, never a time: the ratio, the difference and the verdict follow from the two figures printed,
to within what their rounding allows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fuse.conftest import clean_env
from tests.support.unprivileged import as_nobody

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_branches.py"
BRANCHES = 2  # --quick's
MEASURES = {
    "branch setup, isolated": "+5 ms",
    "branch setup: the launcher's steps": None,
    "branch setup: the overlay's mount": None,
    "omxfs run --branch: start to command": "+5 ms",
    "tar_x in a branch": "1.1x",
    "git_commit in a branch": "1.1x",
    "venv_pip in a branch": "1.1x",
    "omxfs accept (10 changed files)": "1.5x",
    "omxfs accept, against python's start + git": None,
    f"{BRANCHES} at once: slowest one's work": "1.2x",
    f"{BRANCHES} at once: slowest one's CPU": None,
    "memory of a branch's processes, alone": None,
    f"memory of each of {BRANCHES} branches at once": None,
}
#: every figure printed is rounded to 0.1 (ms or MiB), every ratio to 0.01
HALF_STEP, HALF_RATIO_STEP = 0.05, 0.005


def ratio_tolerance(value: float, baseline: float) -> float:
    """How far value / baseline, each rounded to 0.1, may lie from the ratio of the figures before rounding, plus
    the ratio's own rounding: each figure is off by up to 0.05, the smaller the baseline the more that moves it."""
    ratio = value / baseline
    return (HALF_STEP + ratio * HALF_STEP) / (baseline - HALF_STEP) + HALF_RATIO_STEP + 1e-9


@pytest.mark.skipif(os.geteuid() != 0, reason="views need root here, as the benchmark does")
def test_bench_branches_prints_every_measure_against_its_baseline(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    *table, last = done.stdout.strip().splitlines()
    report = json.loads(last)
    assert (report["repeat"], report["quick"], report["branches"]) == (1, True, BRANCHES)
    measures: dict[str, dict[str, Any]] = report["measures"]
    assert list(measures) == list(MEASURES)  # the table's order
    assert table[0].split()[:3] == ["measure", "median", "baseline"]
    for name, figures in measures.items():
        value, baseline, ratio = figures["value"], figures["baseline"], figures["ratio"]
        assert value > 0 and baseline >= 0, (name, figures)
        assert figures["unit"] == ("MiB" if name.startswith("memory") else "ms")
        assert figures["target"] == MEASURES[name]
        assert report["samples"][name] == {"value": [value], "baseline": [baseline]}  # one round: its figures
        assert figures["extra"] == pytest.approx(value - baseline, abs=3 * HALF_STEP + 1e-9)
        if baseline > HALF_STEP:  # a baseline printed as 0.0 tells nothing of the ratio
            tolerance = ratio_tolerance(value, baseline)
            assert ratio == pytest.approx(value / baseline, abs=tolerance), name
            assert figures["paired_ratio"] == pytest.approx(value / baseline, abs=tolerance), name  # one round
        target = MEASURES[name]
        if target is None:
            assert figures["met"] is None
        elif target == "+5 ms" and abs(figures["extra"] - 5) > 3 * HALF_STEP:  # else too close to tell
            assert figures["met"] == (figures["extra"] <= 5), (name, figures)
        elif target.endswith("x") and abs(ratio - float(target[:-1])) > HALF_RATIO_STEP:
            assert figures["met"] == (ratio <= float(target[:-1])), (name, figures)
        row = next(line for line in table if line.startswith(f"{name}  "))
        cells = row[len(name) :].split()
        assert f"{value:.1f}" in cells and f"{baseline:.1f}" in cells and f"{ratio:.2f}" in cells, row
        assert f"{figures['paired_ratio']:.2f}" in cells, row
        assert cells[-1] == {None: "-", True: "met", False: "MISSED"}[figures["met"]], row
    assert list(tmp_path.iterdir()) == []  # its scratch workspaces, repository and inputs are removed


def test_bench_branches_refuses_without_root_and_says_why(tmp_path: Path) -> None:
    done = subprocess.run(
        as_nobody([sys.executable, str(SCRIPT), "--quick"], tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "bench_branches.py needs root" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""
