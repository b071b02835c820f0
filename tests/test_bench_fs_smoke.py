"""``scripts/bench_fs.py --quick`` mounts, measures, unmounts, and ends with one line of JSON results; the floor
daemon it measures, ``scripts/pyfuse3_floor.py``, is a working passthrough.

Only the shape of the results is checked, never a time. The benchmark and the daemon run in subprocesses under
``tmp_path``; whatever happens, nothing stays mounted there afterwards.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support import scripts
from tests.support.scripts import load_script, unmount_everything_under

REPO = Path(__file__).resolve().parents[1]
FLOOR = REPO / "scripts" / "pyfuse3_floor.py"
PASSTHROUGH_LL = Path("/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c")
KEYS = {
    "workloads_ms",
    "ratio_vs_native",
    "ratio_vs_passthrough_ll",
    "ratio_vs_pyfuse3_floor",
    "floor_vs_passthrough_ll",
    "latency_us",
    "targets",
    "floor",
    "kernel_limits",
    "requests",
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
TARGETS = {"native", "passthrough_ll", "pyfuse3_floor", "omx"}
CACHED = "passthrough_ll_cached"  # a column of workloads_ms, for the sequential workloads only
SEQUENTIAL = {"seq_write", "seq_read_cold", "seq_read_warm"}
KERNEL_LIMITS = {"seq_read_warm_page_cache_vs_native", "omx_seq_read_warm_vs_page_cache_limit"}
GOALS = {
    "small_files_within_1_5x_passthrough",
    "cached_stat_as_fast_as_native",
    "warm_reread_as_fast_as_native",
    "seq_read_at_least_half_native",
    "list_dir_within_2x_passthrough",
    "collab_commit_p99_under_5ms",
}
FLOOR_CHECKS = {
    f"{w}_within_1_5x_floor" for w in ("small_create_write", "small_stat", "small_read", "small_unlink", "list_dir")
}


def fuse_missing() -> str | None:
    if not Path("/dev/fuse").exists():
        return "/dev/fuse is absent"
    if not PASSTHROUGH_LL.exists():
        return f"{PASSTHROUGH_LL} is absent (libfuse3-dev)"
    missing = [tool for tool in ("gcc", "pkg-config", "fusermount3") if shutil.which(tool) is None]
    return f"not installed: {', '.join(missing)}" if missing else None


def floor_missing() -> str | None:
    if not Path("/dev/fuse").exists():
        return "/dev/fuse is absent"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed"
    return "pyfuse3 is not installed" if importlib.util.find_spec("pyfuse3") is None else None


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


def run_bench(tmp_path: Path, only: str) -> dict[str, Any]:
    """The parsed last line of ``bench_fs.py --quick --only ONLY`` (``scripts.run_bench``: never hangs, unmounts)."""
    returncode, out, err = scripts.run_bench("bench_fs", "--quick", "--only", only, workdir=tmp_path)
    assert returncode == 0, err
    results: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert set(results) == KEYS
    assert set(results["workloads_ms"]) == set(results["ratio_vs_native"]) == WORKLOADS
    assert set(results["ratio_vs_passthrough_ll"]) == WORKLOADS
    assert set(results["ratio_vs_pyfuse3_floor"]) == set(results["floor_vs_passthrough_ll"]) == WORKLOADS
    assert set(results["targets"]) == GOALS
    assert set(results["floor"]) == FLOOR_CHECKS
    assert set(results["kernel_limits"]) == KERNEL_LIMITS
    assert set(results["options"]) == {"passthrough_ll", CACHED, "pyfuse3_floor", "omx"}
    assert set(results["latency_us"]) == {"write_close_4k", "stat", "collab_commit"}
    assert set(results["latency_us"]["collab_commit"]) == {"store_direct", "omx"}
    for times in results["workloads_ms"].values():
        assert set(times) == TARGETS | {CACHED}
    for name in ("write_close_4k", "stat"):
        assert set(results["latency_us"][name]) == TARGETS
    return results


def assert_measured(results: dict[str, Any], target: str) -> None:
    cold = "seq_read_cold" not in results["unavailable"]
    for workload, times in results["workloads_ms"].items():
        if workload != "seq_read_cold" or cold:
            assert times[target] > 0, f"{workload}/{target}"
    for name in ("write_close_4k", "stat"):
        latency = results["latency_us"][name][target]
        assert 0 < latency["p50"] <= latency["p99"], f"{name}/{target}"


def assert_cached_measured(results: dict[str, Any]) -> None:
    """passthrough_ll with cache=always ran the sequential workloads, and nothing else."""
    cold = "seq_read_cold" not in results["unavailable"]
    for workload, times in results["workloads_ms"].items():
        if workload in SEQUENTIAL and (workload != "seq_read_cold" or cold):
            assert times[CACHED] > 0, f"{workload}/{CACHED}"
        else:
            assert times[CACHED] is None, f"{workload}/{CACHED}"
    assert "cache=always" in results["options"][CACHED]
    assert results["kernel_limits"]["seq_read_warm_page_cache_vs_native"] > 0


def assert_ratios(results: dict[str, Any], key: str) -> None:
    """Every workload has a positive ratio under ``key``, but cold reads where they could not run."""
    cold = "seq_read_cold" not in results["unavailable"]
    for workload, ratio in results[key].items():
        assert ratio is None if workload == "seq_read_cold" and not cold else ratio > 0, f"{key}/{workload}"


@pytest.mark.skipif(fuse_missing() is not None, reason=str(fuse_missing()))
def test_bench_fs_quick_native_passthrough_ll_and_floor(tmp_path: Path) -> None:
    results = run_bench(tmp_path, "native,passthrough,pyfuse3")
    assert results["params"]["targets"] == ["native", "passthrough_ll", "pyfuse3_floor"]
    assert results["unavailable"].keys() <= {"seq_read_cold"}, results["unavailable"]
    for target in ("native", "passthrough_ll", "pyfuse3_floor"):
        assert_measured(results, target)
    assert results["options"]["passthrough_ll"]
    assert "cache=always" not in results["options"]["passthrough_ll"]
    assert_cached_measured(results)
    assert results["kernel_limits"]["omx_seq_read_warm_vs_page_cache_limit"] is None
    assert "pyfuse3_floor.py" in results["options"]["pyfuse3_floor"]
    assert_ratios(results, "floor_vs_passthrough_ll")
    assert all(times["omx"] is None for times in results["workloads_ms"].values())
    assert results["requests"] == {}, "only the omx daemon counts its requests"
    for key in ("ratio_vs_native", "ratio_vs_passthrough_ll", "ratio_vs_pyfuse3_floor"):
        assert all(r is None for r in results[key].values()), key
    assert all(goal is None for goal in results["targets"].values())
    assert all(check is None for check in results["floor"].values())
    assert not any(tmp_path.iterdir()), "the run directory was not removed"


@pytest.mark.skipif(floor_missing() is not None, reason=str(floor_missing()))
def test_bench_fs_only_the_floor(tmp_path: Path) -> None:
    """``--only pyfuse3_floor`` runs the floor alone: measured, nothing to compare it with."""
    results = run_bench(tmp_path, "pyfuse3_floor")
    assert results["params"]["targets"] == ["pyfuse3_floor"]
    assert_measured(results, "pyfuse3_floor")
    assert all(r is None for r in results["floor_vs_passthrough_ll"].values())
    assert all(times[CACHED] is None for times in results["workloads_ms"].values())
    assert all(limit is None for limit in results["kernel_limits"].values())


@pytest.mark.skipif(fuse_missing() is not None, reason=str(fuse_missing()))
def test_bench_fs_quick_omx(tmp_path: Path) -> None:
    if reason := omx_mount_missing():
        pytest.skip(reason)
    results = run_bench(tmp_path, "native,passthrough,pyfuse3,omx")
    assert results["unavailable"].keys() <= {"seq_read_cold"}, results["unavailable"]
    for target in TARGETS:
        assert_measured(results, target)
    assert_cached_measured(results)
    assert results["kernel_limits"]["omx_seq_read_warm_vs_page_cache_limit"] > 0
    for name in ("store_direct", "omx"):
        latency = results["latency_us"]["collab_commit"][name]
        assert 0 < latency["p50"] <= latency["p99"], name
    for key in ("ratio_vs_native", "ratio_vs_passthrough_ll", "ratio_vs_pyfuse3_floor", "floor_vs_passthrough_ll"):
        assert_ratios(results, key)
    assert all(isinstance(goal, bool) for goal in results["targets"].values())
    assert all(isinstance(check, bool) for check in results["floor"].values())
    assert results["options"]["omx"] and results["options"]["pyfuse3_floor"]
    # Issue 16: the omx daemon's requests for each figure, by operation.
    requests = results["requests"]
    measured = {w for w, times in results["workloads_ms"].items() if times["omx"] is not None}
    assert set(requests) >= measured | {"write_close_4k", "stat", "collab_commit"}, requests
    assert requests["small_create_write"].get("create", 0) > 0 and requests["small_unlink"].get("unlink", 0) > 0


# -- the floor daemon itself ------------------------------------------------------------------------------------


def load_bench() -> ModuleType:
    """``scripts/bench_fs.py`` as a module, for its mount helpers."""
    return load_script("bench_fs")


@contextlib.contextmanager
def floor_daemon(tmp_path: Path, *options: str) -> Iterator[tuple[Path, Path, subprocess.Popen[bytes]]]:
    """``pyfuse3_floor.py [OPTIONS] SRC MNT`` in a subprocess, once MNT is mounted and answers; always reaped and
    unmounted.

    On a clean exit from the block the daemon must still run (unless the block stopped it) and have logged nothing.
    """
    bench = load_bench()
    source, mountpoint, log = tmp_path / "src", tmp_path / "mnt", tmp_path / "floor.log"
    source.mkdir()
    mountpoint.mkdir()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(FLOOR), *options, str(source), str(mountpoint)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while not bench.is_mounted(mountpoint):
            assert proc.poll() is None, f"the daemon exited {proc.returncode}: {log.read_text()}"
            assert time.monotonic() < deadline, f"{mountpoint} was not mounted within 30 s: {log.read_text()}"
            time.sleep(0.02)
        os.stat(mountpoint)
        yield source, mountpoint, proc
        assert proc.returncode in (None, 0), f"the daemon exited {proc.returncode}: {log.read_text()}"
        assert not log.read_text().strip(), f"the daemon logged: {log.read_text()}"
    finally:
        if proc.poll() is None:
            subprocess.run(["fusermount3", "-u", str(mountpoint)], capture_output=True, check=False, timeout=30)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        unmount_everything_under(tmp_path)


def write_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


@pytest.mark.skipif(floor_missing() is not None, reason=str(floor_missing()))
def test_floor_daemon_with_xattrs_passes_them_through(tmp_path: Path) -> None:
    """``--xattr``: the floor of bench_real's ``pyfuse3_floor_xattr``, which gets the xattr requests omx must answer;
    without it the kernel hears ENOSYS once and refuses every xattr call itself."""
    with floor_daemon(tmp_path, "--xattr") as (source, mnt, _):
        write_file(mnt / "f", b"x")
        os.setxattr(mnt / "f", "user.k", b"v")
        assert os.getxattr(source / "f", "user.k") == b"v" == os.getxattr(mnt / "f", "user.k")
        assert "user.k" in os.listxattr(mnt / "f")
        os.removexattr(mnt / "f", "user.k")
        assert "user.k" not in os.listxattr(source / "f")
        with pytest.raises(OSError) as err:
            os.getxattr(mnt / "f", "user.k")
        assert err.value.errno == errno.ENODATA
    (tmp_path / "plain").mkdir()
    with floor_daemon(tmp_path / "plain") as (source, mnt, _):
        write_file(mnt / "f", b"x")
        with pytest.raises(OSError) as err:
            os.setxattr(mnt / "f", "user.k", b"v")
        assert err.value.errno == errno.EOPNOTSUPP


@pytest.mark.skipif(floor_missing() is not None, reason=str(floor_missing()))
def test_floor_daemon_passes_requests_through(tmp_path: Path) -> None:
    with floor_daemon(tmp_path) as (source, mnt, _):
        big = os.urandom(3 * (1 << 20) + 1)  # several write and read requests, and an odd tail
        write_file(mnt / "big.bin", big)
        assert (mnt / "big.bin").read_bytes() == big
        assert (source / "big.bin").read_bytes() == big
        st, under = os.stat(mnt / "big.bin"), os.stat(source / "big.bin")
        assert (st.st_size, st.st_ino, st.st_mode, st.st_mtime_ns) == (
            len(big),
            under.st_ino,
            under.st_mode,
            under.st_mtime_ns,
        )

        write_file(mnt / "big.bin", b"short")  # O_TRUNC in open
        assert (mnt / "big.bin").read_bytes() == b"short" == (source / "big.bin").read_bytes()
        os.truncate(mnt / "big.bin", 2)  # setattr by path
        fd = os.open(mnt / "big.bin", os.O_RDWR)
        try:
            os.ftruncate(fd, 3)  # setattr by handle
            os.fsync(fd)
        finally:
            os.close(fd)
        assert (source / "big.bin").read_bytes() == b"sh\0"
        os.chmod(mnt / "big.bin", 0o600)
        os.utime(mnt / "big.bin", ns=(1_000_000_000, 2_000_000_000))
        under = os.stat(source / "big.bin")
        assert (under.st_mode & 0o777, under.st_atime_ns, under.st_mtime_ns) == (0o600, 1_000_000_000, 2_000_000_000)
        assert os.stat(mnt / "big.bin").st_mtime_ns == 2_000_000_000

        os.mkdir(mnt / "d")
        names = [f"f{i:03d}" for i in range(150)]  # more entries than one readdirplus reply holds
        for name in names:
            write_file(mnt / "d" / name, name.encode())
        assert sorted(os.listdir(mnt / "d")) == names == sorted(os.listdir(source / "d"))
        assert sorted(e.name for e in os.scandir(mnt / "d") if e.is_file(follow_symlinks=False)) == names
        assert (mnt / "d" / "f042").read_bytes() == b"f042"

        os.symlink("d/f042", mnt / "link")  # python -m venv makes links (bench_real.py)
        assert os.readlink(mnt / "link") == "d/f042" == os.readlink(source / "link")
        assert (mnt / "link").read_bytes() == b"f042"
        assert os.lstat(mnt / "link").st_size == len("d/f042")
        os.unlink(mnt / "link")

        os.rename(mnt / "big.bin", mnt / "d" / "moved.bin")
        assert not (source / "big.bin").exists()
        assert (source / "d" / "moved.bin").read_bytes() == b"sh\0" == (mnt / "d" / "moved.bin").read_bytes()
        with pytest.raises(FileNotFoundError):
            os.stat(mnt / "big.bin")
        with pytest.raises(OSError) as removing_full:
            os.rmdir(mnt / "d")
        assert removing_full.value.errno == errno.ENOTEMPTY  # the underlying call's errno
        for name in [*names, "moved.bin"]:
            os.unlink(mnt / "d" / name)
        os.rmdir(mnt / "d")
        with pytest.raises(FileNotFoundError):
            os.unlink(mnt / "d")
        assert os.listdir(mnt) == [] == os.listdir(source)

        for i in range(50):  # a file made again is a new inode: never the attributes of the removed one
            write_file(mnt / "again", b"x" * i)
            assert os.stat(mnt / "again").st_size == i == os.stat(source / "again").st_size
            os.unlink(mnt / "again")

        with pytest.raises(OSError) as xattr:
            os.setxattr(mnt, "user.floor", b"1")
        assert xattr.value.errno in (errno.EOPNOTSUPP, errno.ENOSYS)  # not implemented, as in passthrough_ll
        assert os.statvfs(mnt).f_blocks == os.statvfs(source).f_blocks


@pytest.mark.skipif(floor_missing() is not None, reason=str(floor_missing()))
def test_floor_daemon_closes_what_the_kernel_forgets(tmp_path: Path) -> None:
    """Lookups are counted: once the kernel drops its inodes, the daemon holds no descriptor for them."""
    if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        pytest.skip("dropping the kernel's inodes needs root")
    with floor_daemon(tmp_path) as (_, mnt, proc):
        fds = Path(f"/proc/{proc.pid}/fd")
        baseline = len(os.listdir(fds))
        for i in range(100):
            write_file(mnt / f"f{i}", b"x")
        assert len(os.listdir(mnt)) == 100
        assert len(os.listdir(fds)) >= baseline + 100
        deadline = time.monotonic() + 10
        while len(os.listdir(fds)) > baseline:
            assert time.monotonic() < deadline, f"{len(os.listdir(fds)) - baseline} descriptors still held"
            os.sync()
            Path("/proc/sys/vm/drop_caches").write_text("2\n")
            time.sleep(0.05)
        assert sorted(os.listdir(mnt)) == sorted(f"f{i}" for i in range(100))  # looked up again


@pytest.mark.skipif(floor_missing() is not None, reason=str(floor_missing()))
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "fusermount3"])
def test_floor_daemon_unmounts_and_exits_0(tmp_path: Path, how: str) -> None:
    bench = load_bench()
    with floor_daemon(tmp_path) as (source, mnt, proc):
        write_file(mnt / "kept", b"kept")
        if how == "fusermount3":
            subprocess.run(["fusermount3", "-u", str(mnt)], check=True, timeout=30)
        else:
            proc.send_signal(signal.Signals[how])
        assert proc.wait(15) == 0
        assert not bench.is_mounted(mnt)
        assert (source / "kept").read_bytes() == b"kept"
        assert not (mnt / "kept").exists()
