"""``scripts/bench_fs.py --quick`` mounts, measures, unmounts, and ends with one line of JSON results.

Only the shape of the results is checked, never a time. The benchmark runs in a subprocess under ``tmp_path``;
whatever happens, nothing stays mounted there afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_fs.py"
PASSTHROUGH_LL = Path("/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c")
KEYS = {
    "workloads_ms",
    "ratio_vs_native",
    "ratio_vs_passthrough_ll",
    "latency_us",
    "targets",
    "options",
    "params",
    "unavailable",
}
WORKLOADS = {
    "seq_write",
    "seq_read_cold",
    "seq_read_warm",
    "small_create_write",
    "small_stat",
    "small_read",
    "small_unlink",
    "list_dir",
}
TARGETS = {"native", "passthrough_ll", "omx"}
GOALS = {
    "small_files_within_1_5x_passthrough",
    "cached_stat_as_fast_as_native",
    "warm_reread_as_fast_as_native",
    "seq_read_at_least_half_native",
    "list_dir_within_2x_passthrough",
    "collab_commit_p99_under_5ms",
}


def fuse_missing() -> str | None:
    if not Path("/dev/fuse").exists():
        return "/dev/fuse is absent"
    if not PASSTHROUGH_LL.exists():
        return f"{PASSTHROUGH_LL} is absent (libfuse3-dev)"
    missing = [tool for tool in ("gcc", "pkg-config", "fusermount3") if shutil.which(tool) is None]
    return f"not installed: {', '.join(missing)}" if missing else None


def omx_mount_missing() -> str | None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from cli.omxfs import main; sys.exit(main())", "mount", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    last = (done.stderr.strip().splitlines() or [""])[-1]
    return None if done.returncode == 0 else f"`omxfs mount` is not available yet: {last}"


def unmount_everything_under(path: Path) -> None:
    with open("/proc/self/mounts") as f:
        mounts = [Path(line.split()[1].replace("\\040", " ")) for line in f if line.strip()]
    for mountpoint in mounts:
        if mountpoint.is_relative_to(path.resolve()):
            subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], check=False, timeout=30)


def run_bench(tmp_path: Path, only: str) -> dict[str, Any]:
    """The parsed last line; on a timeout the script gets SIGTERM (it unmounts), and we lazily unmount the rest."""
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    command = [sys.executable, str(SCRIPT), "--quick", "--only", only, "--workdir", str(tmp_path)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        try:
            out, err = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
            pytest.fail(f"the benchmark timed out:\n{err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        unmount_everything_under(tmp_path)
    assert proc.returncode == 0, err
    results: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert set(results) == KEYS
    assert set(results["workloads_ms"]) == set(results["ratio_vs_native"]) == WORKLOADS
    assert set(results["ratio_vs_passthrough_ll"]) == WORKLOADS
    assert set(results["targets"]) == GOALS
    assert set(results["options"]) == {"passthrough_ll", "omx"}
    assert set(results["latency_us"]) == {"write_close_4k", "stat", "collab_commit"}
    assert set(results["latency_us"]["collab_commit"]) == {"store_direct", "omx"}
    for times in results["workloads_ms"].values():
        assert set(times) == TARGETS
    return results


def assert_measured(results: dict[str, Any], target: str) -> None:
    cold = "seq_read_cold" not in results["unavailable"]
    for workload, times in results["workloads_ms"].items():
        if workload != "seq_read_cold" or cold:
            assert times[target] > 0, f"{workload}/{target}"
    for name in ("write_close_4k", "stat"):
        latency = results["latency_us"][name][target]
        assert 0 < latency["p50"] <= latency["p99"], f"{name}/{target}"


@pytest.mark.skipif(fuse_missing() is not None, reason=str(fuse_missing()))
def test_bench_fs_quick_native_and_passthrough_ll(tmp_path: Path) -> None:
    results = run_bench(tmp_path, "native,passthrough")
    assert_measured(results, "native")
    assert_measured(results, "passthrough_ll")
    assert results["options"]["passthrough_ll"]
    assert all(times["omx"] is None for times in results["workloads_ms"].values())
    assert all(r is None for r in results["ratio_vs_native"].values())
    assert all(goal is None for goal in results["targets"].values())
    assert not any(tmp_path.iterdir()), "the run directory was not removed"


@pytest.mark.skipif(fuse_missing() is not None, reason=str(fuse_missing()))
def test_bench_fs_quick_omx(tmp_path: Path) -> None:
    if reason := omx_mount_missing():
        pytest.skip(reason)
    results = run_bench(tmp_path, "native,passthrough,omx")
    assert "omx" not in results["unavailable"], results["unavailable"].get("omx")
    for target in TARGETS:
        assert_measured(results, target)
    for name in ("store_direct", "omx"):
        latency = results["latency_us"]["collab_commit"][name]
        assert 0 < latency["p50"] <= latency["p99"], name
    cold = "seq_read_cold" not in results["unavailable"]
    for workload, ratio in results["ratio_vs_passthrough_ll"].items():
        assert ratio is None if workload == "seq_read_cold" and not cold else ratio > 0, workload
    assert all(isinstance(goal, bool) for goal in results["targets"].values())
    assert results["options"]["omx"]
