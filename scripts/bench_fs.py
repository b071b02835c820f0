"""Benchmark the omx mount against a native directory and libfuse's C ``passthrough_ll``, in one run.

Why ``passthrough_ll`` is the yardstick: every FUSE request is a round trip from the kernel to a daemon and
back (a cross-CPU wakeup of some 50 µs here), so per-file operations through *any* FUSE daemon cost 10-30×
native ext4. Comparing omx with native alone would blame omx for FUSE itself. ``passthrough_ll`` is the C
low-level example that ships with libfuse (Debian's libfuse3-dev): it forwards each request to the underlying
directory with almost no work of its own, so its times are the practical limit of FUSE on this machine and
the ratio omx / passthrough_ll is what omx adds to FUSE, its Python binding included. It is built here with gcc
and mounted with its defaults (``cache=auto``: entry and attr timeouts of 1 s, page cache dropped on every open,
no writeback cache, multithreaded loop).

Why ``pyfuse3_floor`` too: omx is written on pyfuse3 + trio, and a pyfuse3 daemon that does almost nothing already
costs about twice passthrough_ll per request (the binding's dispatch into Python, a coroutine and trio's loop per
request, Python objects for every reply). ``scripts/pyfuse3_floor.py`` is that daemon: a passthrough written on
pyfuse3 + trio with as few Python statements per request as possible, all inline on the trio loop, and
passthrough_ll's defaults (timeouts of 1 s, no keep_cache, no writeback cache, readdirplus, xattrs answered
ENOSYS, no default_permissions). Its times are the floor of the binding, so passthrough_ll → pyfuse3_floor is
what pyfuse3/trio cost and pyfuse3_floor → omx what omx's own code costs. One difference is pyfuse3's and shows
in ``list_dir``: it turns the kernel's adaptive readdirplus off, so every listing looks up every entry, where
passthrough_ll gets plain READDIR after the first reply of a listing.

Why ``passthrough_ll_cached``: a warm re-read through FUSE is served from the kernel's page cache only when the
daemon opens the file with ``keep_cache``, and even then the kernel's FUSE read path is slower than ext4's. The same
passthrough_ll binary, mounted with ``-o cache=always`` (keep_cache on every open, entry/attr timeouts of 1 day)
over a fresh plain directory of its own, runs only the sequential workloads (``seq_write``, ``seq_read_cold`` when
available, ``seq_read_warm``). Its ``seq_read_warm`` is the best a daemon that keeps the page cache can reach on
this kernel, so ``kernel_limits`` tells a gap that is the kernel's from one that is the daemon's. It runs right
after ``passthrough_ll``, whenever that is in ``--only``.

The same workloads run, one after the other in this process, in four directories of one fresh run directory
(so on one filesystem): ``native``, a plain directory; ``passthrough_ll`` and ``pyfuse3_floor``, each mounted
over a plain directory of its own; ``omx``, the private zone ``agents/bench/`` of ``omxfs mount WS MNT --as bench
--foreground``. Each is timed with ``time.perf_counter_ns`` around plain ``os.open``/``os.write``/``os.read``/
``os.close`` calls, no fsync unless the workload says so:

- ``seq_write``: write ``--size-mib`` MiB (256) in 1 MiB writes, then close: the data path of a write request
  (no fsync, so native is memory speed and the FUSE targets show their per-request cost);
- ``seq_read_cold``: read it back in 1 MiB reads after ``sync; echo 3 > /proc/sys/vm/drop_caches`` (needs root;
  reported as unavailable otherwise, never faked): the disk plus the read path;
- ``seq_read_warm``: read it again with a new open: whether the kernel may keep the page cache across opens
  (``keep_cache``), which is what makes a re-read of an unchanged file as fast as native;
- ``small_create_write``, ``small_stat``, ``small_read``, ``small_unlink``: ``--files`` (2000) files of 4 KiB,
  created (open O_CREAT|O_TRUNC + write + close), stat'ed, read (open + read to EOF + close), unlinked, each
  pass timed as a whole: lookups, creates, opens and releases, where entry/attr timeouts decide how many
  requests reach the daemon;
- ``list_dir``: ``os.listdir`` of the directory of those files, median of 5 listings: readdir(plus) cost and
  whether the daemon re-lists the directory on every call.

Latencies, p50 and p99 in µs over ``--samples`` (2000) samples after 20 untimed ones:

- ``write_close_4k``: open O_WRONLY|O_CREAT|O_TRUNC + 4 KiB write + close of one file, the whole cycle;
- ``stat``: ``os.stat`` of that file: a cached stat should cost what a native one does;
- ``collab_commit``: a 4 KiB write to ``collaborative/current/<file>`` through the mount (open O_WRONLY|O_TRUNC,
  write, close; every write is a commit, fsync included), and for a baseline the same commit through
  ``Workspace.collab.write`` on the store directly, so the FUSE share is visible. The mount needs a base
  version for each commit: the script sets the xattr ``user.omx.expected_version`` to -1 once, and if the mount
  refuses that, reads the file (untimed) before each write; ``options.omx`` says which.

Targets (``null`` when omx did not run; only omx is judged): every small-file workload within 1.5× of
passthrough_ll; a cached stat (p50) and a warm re-read within 1.25× of native, that is as fast as native within
timer noise; sequential reads at least half of native's throughput; the listing within 2× of passthrough_ll; a
collaborative commit p99 under 5 ms. Beside them, ``floor`` says for each small-file workload and the listing
whether omx is within 1.5× of pyfuse3_floor (``null`` when either did not run): where a target against
passthrough_ll fails but this holds, the gap is the binding's, not omx's.

Progress goes to stderr; the last line on stdout is one JSON object: ``workloads_ms`` (one column per target:
native, passthrough_ll, passthrough_ll_cached, pyfuse3_floor, omx; passthrough_ll_cached is ``null`` but for the
sequential workloads), ``ratio_vs_native``, ``ratio_vs_passthrough_ll`` and ``ratio_vs_pyfuse3_floor`` (omx /
other), ``floor_vs_passthrough_ll`` (pyfuse3_floor / passthrough_ll: the binding's own cost), ``latency_us``
(write_close_4k and stat for every target but passthrough_ll_cached), ``targets``, ``floor``, ``kernel_limits``
(``seq_read_warm_page_cache_vs_native``: passthrough_ll_cached's seq_read_warm / native's, what the kernel's FUSE
page-cache read path costs over native; ``omx_seq_read_warm_vs_page_cache_limit``: omx's / passthrough_ll_cached's,
what omx adds to it; each ``null`` when either side did not run), ``requests`` (the omx daemon's
requests by operation for each workload and latency, read from the mount root's xattr ``user.omx.requests`` when
each figure is recorded, so the few untimed steps before a workload are included), ``options`` (how each daemon
ran), ``params`` (``targets``: the ``--only`` targets; passthrough_ll_cached goes with passthrough_ll) and
``unavailable`` (what could not run, and why: omx before its mount exists, cold reads without root). Exits 1 if a
workload read back wrong data or a target failed to run, 0 otherwise: a goal missed is reported in ``targets``,
not by the exit code.
Mounts are always unmounted (also on Ctrl-C and SIGTERM) and the run directory is removed unless ``--keep``.

    .venv/bin/python scripts/bench_fs.py [--quick] [--only native,passthrough,pyfuse3,omx] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

EXAMPLES = Path("/usr/share/doc/libfuse3-dev/examples")
TARGETS = ("native", "passthrough_ll", "pyfuse3_floor", "omx")
CACHED = "passthrough_ll_cached"  # runs the sequential workloads only, right after passthrough_ll
COLUMNS = ("native", "passthrough_ll", CACHED, "pyfuse3_floor", "omx")
FLOOR_SCRIPT = REPO / "scripts" / "pyfuse3_floor.py"
SMALL_WORKLOADS = ("small_create_write", "small_stat", "small_read", "small_unlink")
WORKLOADS = ("seq_write", "seq_read_cold", "seq_read_warm", *SMALL_WORKLOADS, "list_dir")
LATENCIES = ("write_close_4k", "stat")
AGENT = "bench"
MIB = 1 << 20
SMALL = 4096
LIST_REPEATS = 5
WARMUP = 20
MOUNT_DEADLINE_S = 30.0
AS_FAST_AS_NATIVE = 1.25  # "as fast as native", within timer noise
WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
READ = os.O_RDONLY | os.O_CLOEXEC

Percentiles = dict[str, float]


class Unavailable(Exception):
    """A target or measurement cannot run here; the reason goes to stderr and into ``unavailable``."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Params:
    size_mib: int
    files: int
    samples: int
    workdir: Path
    targets: list[str]


@dataclass
class Results:
    """Everything measured so far; a target that did not run keeps its ``None``s."""

    params: Params
    workloads_ms: dict[str, dict[str, float | None]] = field(
        default_factory=lambda: {w: dict.fromkeys(COLUMNS) for w in WORKLOADS}
    )
    latency_us: dict[str, dict[str, Percentiles | None]] = field(
        default_factory=lambda: {
            **{name: dict.fromkeys(TARGETS) for name in LATENCIES},
            "collab_commit": {"store_direct": None, "omx": None},
        }
    )
    options: dict[str, str | None] = field(
        default_factory=lambda: {"passthrough_ll": None, CACHED: None, "pyfuse3_floor": None, "omx": None}
    )
    unavailable: dict[str, str] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)
    #: the omx daemon's requests by operation, per workload and latency
    requests: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the omx mount root while omx runs: its counts are read at each record of an omx figure
    counter: Path | None = None
    counted: dict[str, int] = field(default_factory=dict)

    def record(self, target: str, workload: str, ms: float, note: str = "") -> None:
        self.workloads_ms[workload][target] = round(ms, 3)
        log(f"  {target:21} {workload:19} {ms:11.2f} ms {note}")
        self.count(target, workload)

    def latency(self, name: str, target: str, value: Percentiles) -> None:
        self.latency_us[name][target] = value
        log(f"  {target:21} {name:19} p50 {value['p50']:9.1f} µs  p99 {value['p99']:9.1f} µs")
        self.count(target, name)

    def start_counting(self, mountpoint: Path) -> None:
        self.counter = mountpoint
        self.counted = read_requests(mountpoint)

    def count(self, target: str, name: str) -> None:
        """The omx daemon's requests since the previous omx figure (or the start): the timed work, and the few
        untimed steps before it (a mkdir, a sync, the warm-up samples of a latency)."""
        if target != "omx" or self.counter is None:
            return
        now = read_requests(self.counter)
        self.requests[name] = request_delta(self.counted, now)
        self.counted = now
        log(f"  {'':21} {'':19} {sum(self.requests[name].values()):8} requests: {self.requests[name]}")

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.wrong.append(what)
            log(f"  WRONG: {what}")


def read_requests(mountpoint: Path) -> dict[str, int]:
    """An omx daemon's request counts by operation: the mount root's virtual xattr (uncounted itself)."""
    from omxfs.store.layout import REQUESTS  # the product, imported only where omx runs

    counts: dict[str, int] = json.loads(os.getxattr(mountpoint, REQUESTS))
    return counts


def request_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The requests between two reads of a daemon's counts, by operation, most first."""
    delta = {op: n - before.get(op, 0) for op, n in after.items() if n != before.get(op, 0)}
    return dict(sorted(delta.items(), key=lambda item: (-item[1], item[0])))


# -- measuring --------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """No garbage collection inside a timed section: we measure the filesystem, not Python's collector."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def ms_since(t0: int) -> float:
    return (time.perf_counter_ns() - t0) / 1e6


def percentiles(samples_ns: list[int]) -> Percentiles:
    """Nearest-rank p50 and p99, in µs."""
    ordered = sorted(samples_ns)

    def rank(q: float) -> float:
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)] / 1000

    return {"p50": round(rank(0.50), 1), "p99": round(rank(0.99), 1)}


def sample(op: Callable[[int], int], samples: int) -> Percentiles:
    """``op(i)`` does one operation and returns its own duration in ns, so untimed preparation can stay outside."""
    os.sync()  # start with no writeback of earlier workloads in flight: it would land in the fsyncs of commits
    for i in range(WARMUP):
        op(i)
    with quiet():
        times = [op(WARMUP + i) for i in range(samples)]
    return percentiles(times)


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_to_eof(path: str, buf: bytearray) -> int:
    fd = os.open(path, READ)
    total = 0
    try:
        while n := os.readv(fd, [buf]):
            total += n
    finally:
        os.close(fd)
    return total


def drop_caches() -> str | None:
    """Write back and drop the page cache, dentries and inodes; the reason if that is not allowed here."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        return f"cannot drop the page cache ({e}); cold reads need root"
    return None


# -- the workloads ----------------------------------------------------------------------------------------------


def run_sequential(results: Results, target: str, root: Path, cold_reason: str | None) -> None:
    size = results.params.size_mib
    chunk = os.urandom(MIB)
    big = str(root / "big.bin")
    os.sync()
    with quiet():
        t0 = time.perf_counter_ns()
        fd = os.open(big, WRITE, 0o644)
        for _ in range(size):
            write_all(fd, chunk)
        os.close(fd)
        ms = ms_since(t0)
    results.record(target, "seq_write", ms, f"{size / ms * 1000:8.0f} MiB/s")
    buf = bytearray(MIB)
    kinds = ("seq_read_warm",) if cold_reason else ("seq_read_cold", "seq_read_warm")
    for kind in kinds:
        if kind == "seq_read_cold" and (reason := drop_caches()):  # probed at start, so only a surprise lands here
            results.unavailable.setdefault("seq_read_cold", reason)
            continue
        with quiet():
            t0 = time.perf_counter_ns()
            total = read_to_eof(big, buf)
            ms = ms_since(t0)
        results.record(target, kind, ms, f"{size / ms * 1000:8.0f} MiB/s")
        results.check(total == size * MIB, f"{target}/{kind}: read {total} bytes, wrote {size * MIB}")


def run_small_files(results: Results, target: str, root: Path) -> None:
    data = os.urandom(SMALL)
    directory = root / "small"
    os.mkdir(directory)
    paths = [str(directory / f"f{i:05d}") for i in range(results.params.files)]
    os.sync()

    with quiet():
        t0 = time.perf_counter_ns()
        for path in paths:
            fd = os.open(path, WRITE, 0o644)
            write_all(fd, data)
            os.close(fd)
        results.record(target, "small_create_write", ms_since(t0))

        t0 = time.perf_counter_ns()
        sizes = [os.stat(path).st_size for path in paths]
        results.record(target, "small_stat", ms_since(t0))

        buf = bytearray(65536)
        t0 = time.perf_counter_ns()
        total = sum(read_to_eof(path, buf) for path in paths)
        results.record(target, "small_read", ms_since(t0))

        listings = []
        for _ in range(LIST_REPEATS):
            t0 = time.perf_counter_ns()
            names = os.listdir(directory)
            listings.append(ms_since(t0))
        results.record(target, "list_dir", statistics.median(listings))

        t0 = time.perf_counter_ns()
        for path in paths:
            os.unlink(path)
        results.record(target, "small_unlink", ms_since(t0))

    n = len(paths)
    results.check(sizes == [SMALL] * n, f"{target}/small_stat: sizes differ from {SMALL}")
    results.check(total == SMALL * n, f"{target}/small_read: read {total} bytes, wrote {SMALL * n}")
    results.check(len(names) == n, f"{target}/list_dir: listed {len(names)} entries, created {n}")
    results.check(not os.listdir(directory), f"{target}/small_unlink: files left behind")


def run_latencies(results: Results, target: str, root: Path) -> None:
    data = os.urandom(SMALL)
    path = str(root / "latency.bin")

    def write_close(_: int) -> int:
        t0 = time.perf_counter_ns()
        fd = os.open(path, WRITE, 0o644)
        write_all(fd, data)
        os.close(fd)
        return time.perf_counter_ns() - t0

    def stat(_: int) -> int:
        t0 = time.perf_counter_ns()
        os.stat(path)
        return time.perf_counter_ns() - t0

    results.latency("write_close_4k", target, sample(write_close, results.params.samples))
    results.latency("stat", target, sample(stat, results.params.samples))


def run_all(results: Results, target: str, root: Path, cold_reason: str | None) -> None:
    log(f"{target}: {root}")
    run_sequential(results, target, root, cold_reason)
    run_small_files(results, target, root)
    run_latencies(results, target, root)


# -- FUSE daemons -----------------------------------------------------------------------------------------------


def unescape_mount_field(text: str) -> str:
    """/proc/mounts writes space, tab, newline and backslash as octal escapes."""
    for raw, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(raw, char)
    return text


def mountpoints() -> list[Path]:
    with open("/proc/self/mounts") as f:
        return [Path(unescape_mount_field(line.split()[1])) for line in f if line.strip()]


def is_mounted(path: Path) -> bool:
    return path.resolve() in mountpoints()


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextlib.contextmanager
def fuse_daemon(
    name: str, command: list[str], mountpoint: Path, log_path: Path, unmount: list[str] | None = None
) -> Iterator[Path]:
    """Run a FUSE daemon in the foreground (our child, its own session so Ctrl-C reaches only us), wait until
    ``mountpoint`` is mounted and answers, and always unmount and reap it on the way out."""
    with fuse_daemon_process(name, command, mountpoint, log_path, unmount) as (root, _):
        yield root


@contextlib.contextmanager
def fuse_daemon_process(
    name: str, command: list[str], mountpoint: Path, log_path: Path, unmount: list[str] | None = None
) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """``fuse_daemon``, giving the daemon's process too (its CPU time is read from ``/proc``)."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO
        )
    mounted = False
    try:
        deadline = time.monotonic() + MOUNT_DEADLINE_S
        while not is_mounted(mountpoint):
            if proc.poll():  # 0 is fine: a daemon that forks anyway, whose mount shows up in a moment
                raise Unavailable(f"{name} exited with {proc.returncode} before mounting:\n{log_tail(log_path)}")
            if time.monotonic() > deadline:
                raise Unavailable(f"{name} did not mount within {MOUNT_DEADLINE_S:.0f} s:\n{log_tail(log_path)}")
            time.sleep(0.02)
        os.stat(mountpoint)  # answers, not just listed
        mounted = True
        yield mountpoint, proc
    finally:
        stop_daemon(name, proc, mountpoint, unmount)
        if mounted and proc.returncode:
            log(f"{name}: the daemon exited {proc.returncode}; its log, {log_path}:\n{log_tail(log_path)}")


def stop_daemon(name: str, proc: subprocess.Popen[bytes], mountpoint: Path, unmount: list[str] | None) -> None:
    """Unmount (the daemon's own command first, then fusermount3, then lazily), then reap the daemon."""
    close_fds_under(mountpoint)
    attempts = [*([unmount] if unmount else []), ["fusermount3", "-u"], ["fusermount3", "-u", "-z"]]
    for command in attempts:
        if not is_mounted(mountpoint):
            break
        try:
            done = subprocess.run(
                [*command, str(mountpoint)], capture_output=True, text=True, timeout=30, check=False, cwd=REPO
            )
            if done.returncode:
                log(f"{name}: {' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
        except subprocess.TimeoutExpired:
            log(f"{name}: {' '.join(command)} timed out")
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        log(f"{name}: still running 15 s after unmounting; terminating it")
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def close_fds_under(mountpoint: Path) -> None:
    """Close what an interrupted workload left open on the mount, which would keep it busy and the daemon alive."""
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if Path(os.readlink(f"/proc/self/fd/{fd}")).is_relative_to(mountpoint):
                os.close(int(fd))


def build_passthrough_ll(build_dir: Path) -> tuple[Path, str]:
    """Compile libfuse's example once into ``build_dir``; rebuilt when the source is newer."""
    source = EXAMPLES / "passthrough_ll.c"
    if not source.exists():
        raise Unavailable(f"{source} is missing: apt-get install libfuse3-dev (Debian/Ubuntu ship the examples)")
    for tool in ("gcc", "pkg-config", "fusermount3"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} is not installed")
    flags = subprocess.run(["pkg-config", "fuse3", "--cflags", "--libs"], capture_output=True, text=True, check=False)
    if flags.returncode:
        raise Unavailable(f"pkg-config fuse3 failed: {flags.stderr.strip()}")
    binary = build_dir / "passthrough_ll"
    # The source includes "passthrough_helpers.h" from its own directory, so it compiles in place.
    command = ["gcc", "-Wall", "-O2", str(source), *flags.stdout.split(), "-o"]
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        build_dir.mkdir(parents=True, exist_ok=True)
        partial = build_dir / f"passthrough_ll.{os.getpid()}"
        done = subprocess.run([*command, str(partial)], capture_output=True, text=True, check=False)
        if done.returncode:
            raise Unavailable(f"building passthrough_ll failed:\n{done.stderr.strip()}")
        os.replace(partial, binary)  # atomic, so concurrent runs never start a half-written binary
        log(f"built {binary}")
    return binary, " ".join([*command, str(binary)])


def passthrough_ll_command(binary: Path, source: Path, mountpoint: Path, *options: str) -> list[str]:
    """Foreground, over ``source``; with no ``options``, its defaults."""
    if "," in str(source):
        raise Unavailable(f"{source}: a comma cannot be passed in -o source=")
    return [str(binary), "-f", *options, "-o", f"source={source}", str(mountpoint)]


def floor_command(source: Path, mountpoint: Path, xattr: bool = False) -> list[str]:
    return [sys.executable, str(FLOOR_SCRIPT), *(["--xattr"] if xattr else []), str(source), str(mountpoint)]


def run_passthrough_ll(
    results: Results, run_dir: Path, build_dir: Path, cold_reason: str | None, cached: bool = False
) -> None:
    """Its defaults and every workload; or, ``cached``, ``-o cache=always`` and the sequential workloads only."""
    binary, build = build_passthrough_ll(build_dir)
    name, prefix = (CACHED, "passthrough-cached") if cached else ("passthrough_ll", "passthrough")
    source, mountpoint = run_dir / f"{prefix}-src", run_dir / f"{prefix}-mnt"
    source.mkdir()
    command = passthrough_ll_command(binary, source, mountpoint, *(["-o", "cache=always"] if cached else []))
    how = (
        "cache=always: entry/attr timeout 86400 s, keep_cache on every open; sequential workloads only"
        if cached
        else "defaults: cache=auto, entry/attr timeout 1.0 s, no keep_cache"
    )
    results.options[name] = f"{' '.join(command)} ({how}, no writeback cache, multithreaded); built with: {build}"
    with fuse_daemon(name, command, mountpoint, run_dir / f"{name}.log") as root:
        if cached:
            log(f"{name}: {root}")
            run_sequential(results, name, root, cold_reason)
        else:
            run_all(results, name, root, cold_reason)


def run_pyfuse3_floor(results: Results, run_dir: Path, cold_reason: str | None) -> None:
    source, mountpoint = run_dir / "pyfuse3-src", run_dir / "pyfuse3-mnt"
    source.mkdir()
    command = floor_command(source, mountpoint)
    results.options["pyfuse3_floor"] = (
        f"{' '.join(command)} (pyfuse3 {pyfuse3_version()} + trio, every handler inline on the loop of "
        "pyfuse3.main() with its default tasks; passthrough_ll's defaults: entry/attr timeout 1.0 s, no "
        "keep_cache, no writeback cache, readdirplus, xattrs ENOSYS, no default_permissions)"
    )
    with fuse_daemon("pyfuse3_floor", command, mountpoint, run_dir / "pyfuse3_floor.log") as root:
        run_all(results, "pyfuse3_floor", root, cold_reason)


def pyfuse3_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyfuse3")
    except PackageNotFoundError:
        raise Unavailable("pyfuse3 is not installed in this interpreter") from None


# -- omx --------------------------------------------------------------------------------------------------------


def omxfs(*args: str) -> list[str]:
    """The ``omxfs`` console script beside this interpreter, else its entry point (cwd is the repository)."""
    script = Path(sys.executable).parent / "omxfs"
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-c", "import sys; from cli.omxfs import main; sys.exit(main())", *args]


def init_workspace(ws: Path) -> None:
    """``omxfs init WS --agent bench``: a fresh workspace whose only agent is the benchmark's."""
    init = subprocess.run(omxfs("init", str(ws), "--agent", AGENT), capture_output=True, text=True, cwd=REPO)
    if init.returncode or not (ws / ".omxfs" / "config.toml").is_file():
        raise Unavailable(f"omxfs init failed ({init.returncode}): {init.stderr.strip() or init.stdout.strip()}")


def commit_bodies(n: int) -> list[bytes]:
    """4 KiB, different every time, so no layer can skip a commit as unchanged."""
    filler = os.urandom(SMALL // 2).hex().encode()
    return [b"%012d " % i + filler[13:] for i in range(n)]


def collab_store_direct(results: Results, ws: Path) -> None:
    from omxfs.store import NO_CHECK, Workspace  # the product, imported only for this baseline

    collab = Workspace(ws).collab
    bodies = commit_bodies(WARMUP + results.params.samples)

    def commit(i: int) -> int:
        t0 = time.perf_counter_ns()
        collab.write(AGENT, "bench-direct.txt", bodies[i], expected_version=NO_CHECK)
        return time.perf_counter_ns() - t0

    results.latency("collab_commit", "store_direct", sample(commit, results.params.samples))


def collab_through_mount(results: Results, mountpoint: Path, ws: Path) -> str:
    """Commit latency through the mount; returns how each commit got its base version."""
    from omxfs.store import Workspace

    path = str(mountpoint / "collaborative" / "current" / "bench-commit.txt")
    bodies = commit_bodies(WARMUP + results.params.samples + 2)
    buf = bytearray(65536)

    def write(data: bytes) -> int:
        t0 = time.perf_counter_ns()
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        return time.perf_counter_ns() - t0

    fd = os.open(path, WRITE, 0o644)  # version 1: a new file has base 0, which is current
    write_all(fd, bodies[-1])
    os.close(fd)
    read_first = False
    try:
        os.setxattr(path, "user.omx.expected_version", b"-1")
        write(bodies[-2])
        write(bodies[-1])
        how = "xattr user.omx.expected_version=-1 set once, then plain writes"
    except OSError as e:
        log(f"  omx: commits with expected_version=-1 failed ({e}); reading the file before each write instead")
        how = f"open+read of the file (untimed) before each write (the xattr route failed: {e})"
        read_first = True

    def op(i: int) -> int:
        if read_first:
            read_to_eof(path, buf)
        return write(bodies[i])

    results.latency("collab_commit", "omx", sample(op, results.params.samples))
    versions = Workspace(ws).collab.current_version("bench-commit.txt")
    results.check(versions >= results.params.samples, f"omx/collab_commit: only {versions} versions were committed")
    return how


def run_omx(results: Results, run_dir: Path, cold_reason: str | None) -> None:
    ws, mountpoint = run_dir / "omx-ws", run_dir / "omx-mnt"
    init_workspace(ws)
    collab_store_direct(results, ws)
    if (agent := os.environ.get("OMX_AGENT")) not in (None, AGENT):
        log(f"  warning: OMX_AGENT={agent} in this environment; the mount may take our requests as {agent}")
    command = omxfs("mount", str(ws), str(mountpoint), "--as", AGENT, "--foreground")
    with fuse_daemon("omxfs", command, mountpoint, run_dir / "omxfs.log", unmount=omxfs("umount")) as mnt:
        how = f"omxfs mount WS MNT --as {AGENT} --foreground; workloads in MNT/agents/{AGENT}/"
        results.options["omx"] = how
        results.start_counting(mnt)
        try:
            run_all(results, "omx", mnt / "agents" / AGENT, cold_reason)
            results.options["omx"] = f"{how}; collaborative base version: {collab_through_mount(results, mnt, ws)}"
        finally:
            results.counter = None


# -- the report -------------------------------------------------------------------------------------------------


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def all_of(checks: list[bool | None]) -> bool | None:
    """True/False once every check could be made; None if any input is missing."""
    return None if not checks or any(c is None for c in checks) else all(checks)


def at_most(value: float | None, limit: float) -> bool | None:
    return None if value is None else value <= limit


def report(results: Results) -> dict[str, Any]:
    ms = results.workloads_ms
    vs_native = {w: ratio(t["omx"], t["native"]) for w, t in ms.items()}
    vs_passthrough = {w: ratio(t["omx"], t["passthrough_ll"]) for w, t in ms.items()}
    vs_floor = {w: ratio(t["omx"], t["pyfuse3_floor"]) for w, t in ms.items()}
    floor_vs_passthrough = {w: ratio(t["pyfuse3_floor"], t["passthrough_ll"]) for w, t in ms.items()}
    stat, commit = results.latency_us["stat"], results.latency_us["collab_commit"]["omx"]
    stat_ratio = ratio(stat["omx"]["p50"] if stat["omx"] else None, stat["native"]["p50"] if stat["native"] else None)
    seq_reads = ["seq_read_warm"] if "seq_read_cold" in results.unavailable else ["seq_read_cold", "seq_read_warm"]
    targets = {
        "small_files_within_1_5x_passthrough": all_of([at_most(vs_passthrough[w], 1.5) for w in SMALL_WORKLOADS]),
        "cached_stat_as_fast_as_native": at_most(stat_ratio, AS_FAST_AS_NATIVE),
        "warm_reread_as_fast_as_native": at_most(vs_native["seq_read_warm"], AS_FAST_AS_NATIVE),
        "seq_read_at_least_half_native": all_of([at_most(vs_native[w], 2.0) for w in seq_reads]),
        "list_dir_within_2x_passthrough": at_most(vs_passthrough["list_dir"], 2.0),
        "collab_commit_p99_under_5ms": None if commit is None else commit["p99"] < 5000,
    }
    floor = {f"{w}_within_1_5x_floor": at_most(vs_floor[w], 1.5) for w in (*SMALL_WORKLOADS, "list_dir")}
    warm = ms["seq_read_warm"]
    kernel_limits = {
        "seq_read_warm_page_cache_vs_native": ratio(warm[CACHED], warm["native"]),
        "omx_seq_read_warm_vs_page_cache_limit": ratio(warm["omx"], warm[CACHED]),
    }
    params = results.params
    return {
        "workloads_ms": ms,
        "ratio_vs_native": vs_native,
        "ratio_vs_passthrough_ll": vs_passthrough,
        "ratio_vs_pyfuse3_floor": vs_floor,
        "floor_vs_passthrough_ll": floor_vs_passthrough,
        "latency_us": results.latency_us,
        "targets": targets,
        "floor": floor,
        "kernel_limits": kernel_limits,
        "requests": results.requests,
        "options": results.options,
        "params": {
            "size_mib": params.size_mib,
            "files": params.files,
            "samples": params.samples,
            "workdir": str(params.workdir),
            "targets": params.targets,
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
        },
        "unavailable": results.unavailable,
    }


# -- main -------------------------------------------------------------------------------------------------------


def exit_on_signal(signum: int, _frame: object) -> None:
    log(f"{signal.Signals(signum).name}: unmounting and leaving, no results")
    raise SystemExit(128 + signum)  # unwinds through every finally, so mounts are unmounted


def start_run(workdir: Path | None, prefix: str) -> Path:
    """A fresh run directory under ``workdir`` (else the system temp dir); SIGTERM and SIGHUP now unmount and
    leave (``exit_on_signal``), as Ctrl-C does."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on_signal)
    if workdir:
        workdir.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=workdir)).resolve()


def remove_run_dir(run_dir: Path) -> None:
    """Never delete through a mount that is still there: that would reach into whatever it serves."""
    left = [m for m in mountpoints() if m.is_relative_to(run_dir.resolve())]
    if left:
        log(f"NOT removing {run_dir}: still mounted: {', '.join(map(str, left))}")
    else:
        for _ in range(3):  # a file a dying process wrote while the tree was removed: removed by the next pass
            shutil.rmtree(run_dir, ignore_errors=True)
            if not run_dir.exists():
                return
            time.sleep(0.2)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="16 MiB, 200 files, 200 samples (CI smoke)")
    parser.add_argument("--size-mib", type=int, help="sequential file size (default 256)")
    parser.add_argument("--files", type=int, help="small files, and directory entries (default 2000)")
    parser.add_argument("--samples", type=int, help="latency samples (default 2000)")
    parser.add_argument(
        "--only",
        default=",".join(TARGETS),
        help="comma list of native, passthrough(_ll) (with passthrough_ll_cached), pyfuse3(_floor), omx",
    )
    parser.add_argument("--keep", action="store_true", help="keep the run directory (it is printed)")
    parser.add_argument("--workdir", type=Path, help="where the run directory goes (default: the system temp dir)")
    parser.add_argument(
        "--build-dir", type=Path, default=REPO / "build" / "bench", help="where passthrough_ll is built"
    )
    args = parser.parse_args(argv)
    names = {"passthrough": "passthrough_ll", "pyfuse3": "pyfuse3_floor"} | {t: t for t in TARGETS}
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    if unknown := [s for s in only if s not in names]:
        parser.error(f"--only: unknown target(s) {', '.join(unknown)}; choose from {', '.join(names)}")
    args.targets = [t for t in TARGETS if t in {names[s] for s in only}]
    quick = args.quick
    args.size_mib = args.size_mib or (16 if quick else 256)
    args.files = args.files or (200 if quick else 2000)
    args.samples = args.samples or (200 if quick else 2000)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run_dir = start_run(args.workdir, "omx-bench-")
    results = Results(Params(args.size_mib, args.files, args.samples, run_dir, args.targets))
    log(f"run directory {run_dir}: {args.size_mib} MiB, {args.files} files, {args.samples} samples")
    cold_reason = drop_caches()
    if cold_reason:
        log(f"seq_read_cold: unavailable: {cold_reason}")
        results.unavailable["seq_read_cold"] = cold_reason
    runs = [r for t in args.targets for r in ([t, CACHED] if t == "passthrough_ll" else [t])]
    interrupted = False
    try:
        for target in runs:
            try:
                if target == "native":
                    (run_dir / "native").mkdir()
                    run_all(results, "native", run_dir / "native", cold_reason)
                elif target in ("passthrough_ll", CACHED):
                    run_passthrough_ll(results, run_dir, args.build_dir, cold_reason, cached=target == CACHED)
                elif target == "pyfuse3_floor":
                    run_pyfuse3_floor(results, run_dir, cold_reason)
                else:
                    run_omx(results, run_dir, cold_reason)
            except Unavailable as e:
                log(f"{target}: unavailable: {e}")
                results.unavailable[target] = str(e)
            except Exception as e:  # a workload failed: keep the other targets' figures, and exit 1
                log(f"{target}: FAILED\n{traceback.format_exc()}")
                results.unavailable[target] = f"failed: {e!r}"
                results.wrong.append(f"{target}: {e!r}")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if args.keep:
            log(f"kept {run_dir}")
        else:
            remove_run_dir(run_dir)
    if interrupted:
        log("interrupted: mounts are gone, no results")
        return 130
    if results.wrong:
        log(f"WRONG: {'; '.join(results.wrong)}")
    if "omx" in results.unavailable:
        log(f"omx was not measured; once `omxfs mount` works, re-run: {' '.join(sys.argv)}")
    print(json.dumps(report(results)))
    return 1 if results.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
