"""``scripts/bench_real.py --small --repeat 1`` runs every real workload on every target that works here, prints its
table, and ends with one JSON line that has a time for every workload of every target not skipped (issues 14 and
16: the benchmark both are measured with). Only shapes are checked, never a time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fuse.conftest import clean_env
from tests.support.scripts import load_script, unmount_everything_under, with_ctrl_c
from tests.test_bench_fs_smoke import floor_missing, fuse_missing, omx_mount_missing

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_real.py"
WORKLOADS = [
    "tar_x",
    "git_commit",
    "git_status",
    "git_status_later",
    "grep_r",
    "cp_a_git",
    "rm_rf",
    "make_j2",
    "venv_pip",
]
KEYS = {
    "seconds",
    "ratio_vs_native",
    "ratio_vs_passthrough_ll",
    "ratio_vs_pyfuse3_floor",
    "ratio_vs_pyfuse3_floor_xattr",
    "median_round_ratio_vs_native",
    "samples",
    "goals",
    "requests",
    "daemon_cpu",
    "options",
    "params",
    "skipped",
    "failed",
}


def working_targets() -> list[str]:
    """native always; each FUSE target where what it needs is here (the view decides for itself: skipped or run)."""
    targets = ["native"]
    if fuse_missing() is None:
        targets.append("passthrough_ll")
    if floor_missing() is None:
        targets += ["pyfuse3_floor", "pyfuse3_floor_xattr"]
    if fuse_missing() is None and omx_mount_missing() is None:
        targets.append("omx")
    return [*targets, "view", "review"]


def mounted_under(path: Path) -> list[str]:
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if line.split()[1].startswith(str(path.resolve()))]


def test_every_workload_is_timed_on_every_target_that_runs(tmp_path: Path) -> None:
    targets = working_targets()
    command = [sys.executable, str(SCRIPT), "--small", "--repeat", "1", "--workdir", str(tmp_path)]
    try:
        done = subprocess.run(
            [*command, "--targets", ",".join(targets)],
            capture_output=True,
            text=True,
            timeout=300,
            env=clean_env(),
            cwd=REPO,
            check=False,
        )
        left_mounted = mounted_under(tmp_path)
    finally:
        unmount_everything_under(tmp_path)
    assert not left_mounted
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    results: dict[str, Any] = json.loads(lines[-1])
    assert set(results) == KEYS
    assert results["failed"] == {}, results["failed"]
    assert results["params"]["targets"] == targets
    assert results["params"]["workloads"] == WORKLOADS
    assert set(results["skipped"]) <= {"view", "review"}, results["skipped"]
    for target in results["skipped"]:
        assert f"{target}: skipped ({results['skipped'][target]})" in done.stderr
    measured = [t for t in targets if t not in results["skipped"]]
    assert list(results["seconds"]) == WORKLOADS
    for workload, times in results["seconds"].items():
        assert list(times) == targets, workload
        for target in targets:
            assert (times[target] is None) == (target in results["skipped"]), f"{workload}/{target}"
            assert times[target] is None or times[target] > 0, f"{workload}/{target}"
    for target in measured:
        assert results["options"][target], target
    for workload, by_target in results["samples"].items():  # one round: one time each, and no median of ratios
        assert {t: len(times) for t, times in by_target.items()} == {t: int(t in measured) for t in targets}, workload
    assert all(r is None for by in results["median_round_ratio_vs_native"].values() for r in by.values())
    assert list(results["ratio_vs_native"]) == [t for t in targets if t != "native"]
    for target in measured[1:]:
        assert all(r > 0 for r in results["ratio_vs_native"][target].values()), target
    if "passthrough_ll" in measured:
        assert all(r > 0 for r in results["ratio_vs_passthrough_ll"]["native"].values())
    assert set(results["goals"]) == {
        "view_within_1_1x_native",
        "review_within_1_1x_native",
        "omx_within_1_5x_passthrough_ll",
        "omx_within_1_2x_floor_where_floor_misses",
    }
    # Issue 16: the omx daemon's requests, per workload, by operation; no other target counts them.
    assert {t for t, counts in results["requests"].items() if counts is not None} == {"omx"} & set(measured)
    if "omx" in measured:
        by_workload = results["requests"]["omx"]
        assert set(by_workload) == set(WORKLOADS), by_workload
        assert by_workload["tar_x"].get("create", 0) > 0 and by_workload["tar_x"].get("write", 0) > 0
        assert by_workload["rm_rf"].get("unlink", 0) > 0 and by_workload["rm_rf"].get("rmdir", 0) > 0
        assert "requests to the omx daemon" in done.stdout
    if "review" in measured:  # issue 27: the review view's ratio to native is printed, and its change discarded
        assert all(r > 0 for r in results["ratio_vs_native"]["review"].values())
        assert "review" in lines[0].split()
    # Every FUSE daemon's CPU time, per workload; native and the view have none.
    daemons = {"passthrough_ll", "pyfuse3_floor", "pyfuse3_floor_xattr", "omx"} & set(measured)
    assert list(results["daemon_cpu"]) == WORKLOADS
    for workload, by_target in results["daemon_cpu"].items():
        assert {t for t, cpu in by_target.items() if cpu is not None} <= daemons, workload
        assert all(cpu is None or cpu >= 0 for cpu in by_target.values()), workload
    for target in daemons:
        assert sum(results["daemon_cpu"][w][target] for w in WORKLOADS) > 0, target
    if daemons:
        assert "the daemon's CPU seconds" in done.stdout
    assert lines[0].split() == ["seconds", *targets]  # the table, before the JSON line
    assert list(tmp_path.iterdir()) == [], "the run directory was not removed"


@pytest.mark.skipif(fuse_missing() is not None, reason=str(fuse_missing()))
def test_ctrl_c_unmounts_and_removes_the_run_directory(tmp_path: Path) -> None:
    """SIGINT while a round runs through passthrough_ll: exit 130, nothing stays mounted, nothing stays on disk."""
    command = [sys.executable, str(SCRIPT), "--small", "--targets", "passthrough_ll", "--workdir", str(tmp_path)]
    proc = subprocess.Popen(
        with_ctrl_c(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()
    )
    try:
        deadline = time.monotonic() + 120
        while not any(Path(m).name == "passthrough_ll-mnt" for m in mounted_under(tmp_path)):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "passthrough_ll was never mounted"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        left_mounted = mounted_under(tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        unmount_everything_under(tmp_path)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert not left_mounted
    assert os.listdir(tmp_path) == []


def test_targets_are_compared_round_by_round_by_the_median_of_their_ratios() -> None:
    """A long workload's best of a few runs can land in a quiet moment for one target only (venv_pip read 0.82-1.26x
    over four runs): targets run back to back in a round, so the median of each round's ratio is the paired one."""
    bench = load_script("bench_real")
    results = bench.Results(["venv_pip", "tar_x"], ["native", "view"])
    for number, (native, view) in enumerate([(4.0, 4.4), (6.0, 6.0), (5.0, 4.5)], start=1):
        results.record("native", "venv_pip", native, number)
        results.record("view", "venv_pip", view, number)
    results.record("native", "tar_x", 0.1, 1)
    results.record("view", "tar_x", 0.2, 1)
    assert bench.median_round_ratios(results, "native") == {"view": {"venv_pip": 1.0, "tar_x": None}}
    assert results.seconds["venv_pip"] == {"native": 4.0, "view": 4.4}  # the bests, as before: ratio 1.1


def test_venv_pip_runs_in_the_rounds_asked_for() -> None:
    bench = load_script("bench_real")
    inputs = bench.Inputs(Path("inputs"), tree_files=1, packages=("benchpkg0",), c_units=1, pip_wheel=None)
    assert set(bench.round_parts(["tar_x", "venv_pip"], True, inputs)) == {"tree", "venv"}
    assert set(bench.round_parts(["tar_x", "venv_pip"], False, inputs)) == {"tree"}
    for bad in (["--repeat", "2", "--venv-rounds", "3"], ["--venv-rounds", "0"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)
    assert bench.parse_args(["--repeat", "5", "--venv-rounds", "5"]).venv_rounds == 5
