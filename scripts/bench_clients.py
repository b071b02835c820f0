"""How throughput grows with concurrent clients: 1, 2 and 4 processes doing ``bench_fs.py``'s small-file workload at
once, each in a directory of its own, on every target in one run (issue 16, "Scale with concurrent work").

Why: the omx daemon is one process whose requests are answered on one trio thread (worker threads only for what
may block), where ``passthrough_ll`` answers on as many threads as requests are in flight. A single client shows
what one request costs; several show whether the daemon becomes the queue that every client waits in.

Why a script of its own rather than ``bench_fs.py --clients``: ``bench_fs.py`` times one process's system calls and
latencies, this one times wall-clock throughput of several processes, with a barrier, a process per client and
the daemons' CPU time; only the workload and the mounts are shared, and they are imported from ``bench_fs.py``.

The targets are ``bench_fs.py``'s, mounted as it mounts them, all at once for the whole run: ``native``,
``passthrough_ll`` (defaults), ``pyfuse3_floor`` and ``omx`` (the private zone ``agents/bench/``); and
``omx_per_client``: as many omx daemons as the largest level has clients, each mounting the same fresh store, client
i working through daemon i (what a team gets from one mount per agent). A level of N clients starts N processes
(``multiprocessing``, spawned), each in a fresh directory of the target; they meet at a barrier, then each runs
``bench_fs.run_small_files`` (its ``os.sync`` finds nothing to write: the parent synced before starting the
clients): ``--files`` files of 4 KiB created (open + write + close), stat'ed, read, listed 5 times, unlinked. That
is ``4 * files + 5`` operations per client (a listing counts as one). Each client stamps ``CLOCK_MONOTONIC`` (one
clock for every process) when it leaves the barrier and when it is done; the level's wall time runs from the first
start to the last end, and its rate is every client's operations over that wall time. A round runs every level on
every target, the targets in an order that starts one later each round (so the load of a shared machine spreads over
all of them); each figure is the best of ``--rounds`` rounds.

Beside the rates: the daemons' CPU seconds per wall second while a level ran (``/proc/PID/stat``, every thread and
child process; 1.0 is one CPU busy the whole time; the kernel counts in ticks of 10 ms, so ``--quick`` figures are
coarse), and for omx the daemon's requests per operation (its ``user.omx.requests`` xattr, read before and after
each level) and its CPU time per request.

Output: progress on stderr; on stdout a markdown table (ops/s per target and level, the speed-up over one client,
and omx's time per operation over passthrough_ll's at each level), a second one of daemon CPU, then ONE JSON line:
``ops_per_s`` ({target: {clients: rate}}), ``speedup`` ({target: {clients: rate / rate at 1}}),
``omx_vs_passthrough_ll`` ({clients: passthrough_ll's rate / omx's, i.e. omx's time per operation over
passthrough_ll's}), ``daemon_cpu`` ({target: {clients: CPU s / wall s}}, native has none), ``phases_ms`` ({target:
{clients: {workload: mean ms per client}}} of the best round), ``requests_per_op`` ({clients: {operation: count}}
for omx), ``daemon_us_per_request`` ({clients: the omx daemon's CPU µs per request}), ``options``, ``params``,
``unavailable`` ({target: why}). Exits 1 if a client read back wrong data or failed, 0 otherwise. Mounts are
unmounted on every exit, Ctrl-C and SIGTERM included, and the run directory is removed unless ``--keep``.

    .venv/bin/python scripts/bench_clients.py [--quick] [--clients 1,2,4] [--files 1000] [--rounds 3]
        [--targets native,passthrough_ll,pyfuse3_floor,omx,omx_per_client] [--workdir /dev/shm] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import queue
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fs  # a sibling script, importable once its directory is on the path

TARGETS = (*bench_fs.TARGETS, "omx_per_client")
DAEMONS = TARGETS[1:]  # every target but native is a daemon whose CPU time is read
PHASES = (*bench_fs.SMALL_WORKLOADS, "list_dir")
CLIENT_DEADLINE_S = 600.0  # a level that takes longer has hung: its clients are killed and the target fails
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def ops_per_client(files: int) -> int:
    """Create, stat, read and unlink of every file, and each listing as one operation."""
    return 4 * files + bench_fs.LIST_REPEATS


# -- a client ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientRun:
    """What one client reports: when it ran (CLOCK_MONOTONIC ns), its phases, and anything it found wrong."""

    start_ns: int
    end_ns: int
    phases_ms: dict[str, float]
    wrong: list[str]


def client(target: str, root: str, files: int, barrier: Barrier, out: multiprocessing.Queue[ClientRun | str]) -> None:
    """One client process: wait for the others, run the small-file workload in ``root``, report."""
    try:
        params = bench_fs.Params(size_mib=0, files=files, samples=0, workdir=Path(root), targets=[target])
        results = bench_fs.Results(params)
        barrier.wait(timeout=CLIENT_DEADLINE_S)
        with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):  # its per-phase lines
            start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            bench_fs.run_small_files(results, target, Path(root))
            end = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        phases = {w: results.workloads_ms[w][target] for w in PHASES}
        out.put(ClientRun(start, end, {w: ms for w, ms in phases.items() if ms is not None}, results.wrong))
    except BaseException as e:  # the parent reports it; a traceback in a child's stderr would be lost in the noise
        out.put(f"client in {root}: {e!r}")


# -- the daemons ------------------------------------------------------------------------------------------------


def children(pid: int | str = "self") -> set[int]:
    """A process's children (every thread's), so a daemon's pid is known once it is mounted."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found.update(int(child) for child in (task / "children").read_text().split())
    return found


def cpu_seconds(pid: int) -> float:
    """User and system time of a daemon, every thread and every process it started included (fields 14 and 15 of
    ``/proc/PID/stat``): a daemon that serves from a child of its own is counted whole."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # it ended between the listing of its parent's children and now
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS + sum(cpu_seconds(c) for c in children(pid))


@dataclass(frozen=True)
class Mount:
    """Where clients work, and for a daemon its pid and (omx) the mount root whose xattr counts its requests."""

    root: Path
    pid: int | None = None
    counter: Path | None = None


@dataclass(frozen=True)
class Target:
    """A target's mounts: one, or for ``omx_per_client`` one daemon per client on one store (client i uses mount i)."""

    name: str
    mounts: list[Mount]

    def cpu_seconds(self) -> float | None:
        pids = [m.pid for m in self.mounts]
        return None if None in pids else sum(cpu_seconds(pid) for pid in pids if pid is not None)

    def requests(self) -> dict[str, int]:
        """The omx daemons' request counts, summed; empty for the others, which count nothing."""
        total: dict[str, int] = {}
        for counter in [m.counter for m in self.mounts if m.counter is not None]:
            for op, n in bench_fs.read_requests(counter).items():
                total[op] = total.get(op, 0) + n
        return total


@contextlib.contextmanager
def daemon(name: str, command: list[str], mountpoint: Path, log_path: Path, *, omx: bool) -> Iterator[Mount]:
    """A daemon mounted by ``bench_fs.fuse_daemon``, with its pid: the one child of ours that mounting added."""
    before = children()
    unmount = bench_fs.omxfs("umount") if omx else None
    with bench_fs.fuse_daemon(name, command, mountpoint, log_path, unmount=unmount) as mnt:
        pids = children() - before
        pid = pids.pop() if len(pids) == 1 else None
        yield Mount(mnt / "agents" / bench_fs.AGENT, pid, counter=mnt) if omx else Mount(mnt, pid)


@contextlib.contextmanager
def mounted(name: str, run_dir: Path, build_dir: Path, options: dict[str, str], clients: int) -> Iterator[Target]:
    """The target ``name`` ready for ``clients`` clients at most, mounted as ``bench_fs.py`` mounts it."""
    if name == "native":
        (run_dir / "native").mkdir()
        options[name] = "a plain directory"
        yield Target(name, [Mount(run_dir / "native")])
        return
    if name in ("omx", "omx_per_client"):
        ws = run_dir / f"{name}-ws"
        bench_fs.init_workspace(ws)
        agent = bench_fs.AGENT
        how = f"omxfs mount WS MNT --as {agent} --foreground; clients in MNT/agents/{agent}/"
        options[name] = how if name == "omx" else f"{how}; a daemon (a mount) per client, all on WS"
        with contextlib.ExitStack() as stack:
            mounts = []
            for i in range(1 if name == "omx" else clients):
                mountpoint = run_dir / f"{name}-mnt{i}"
                command = bench_fs.omxfs("mount", str(ws), str(mountpoint), "--as", agent, "--foreground")
                log_path = run_dir / f"{name}{i}.log"
                mounts.append(stack.enter_context(daemon(f"{name}{i}", command, mountpoint, log_path, omx=True)))
            yield Target(name, mounts)
        return
    if name == "passthrough_ll":
        binary, build = bench_fs.build_passthrough_ll(build_dir)
        source, mountpoint = run_dir / "passthrough-src", run_dir / "passthrough-mnt"
        command = bench_fs.passthrough_ll_command(binary, source, mountpoint)
        options[name] = f"{' '.join(command)} (defaults, as in bench_fs.py); built with: {build}"
    else:
        source, mountpoint = run_dir / "pyfuse3-src", run_dir / "pyfuse3-mnt"
        command = bench_fs.floor_command(source, mountpoint)
        options[name] = f"{' '.join(command)} (pyfuse3 {bench_fs.pyfuse3_version()} + trio, as in bench_fs.py)"
    source.mkdir()
    with daemon(name, command, mountpoint, run_dir / f"{name}.log", omx=False) as mount:
        yield Target(name, [mount])


# -- a level ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Level:
    """N clients at once on one target: their rate, the daemon's CPU (seconds, and per wall second), the requests,
    the mean phases."""

    ops_per_s: float
    daemon_cpu_s: float | None
    daemon_cpu: float | None
    requests: dict[str, int]
    phases_ms: dict[str, float]


def run_level(target: Target, clients: int, files: int, tag: str) -> Level:
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue[ClientRun | str] = ctx.Queue()
    barrier = ctx.Barrier(clients)
    roots = [target.mounts[i % len(target.mounts)].root / f"{tag}-c{i}" for i in range(clients)]
    for root in roots:
        root.mkdir()
    os.sync()  # no writeback of earlier levels lands in this one
    cpu, counted = target.cpu_seconds(), target.requests()
    runs: list[ClientRun] = []
    procs = [ctx.Process(target=client, args=(target.name, str(r), files, barrier, out)) for r in roots]
    for proc in procs:
        proc.start()
    try:
        deadline = time.monotonic() + CLIENT_DEADLINE_S
        for _ in procs:
            try:
                report = out.get(timeout=max(1.0, deadline - time.monotonic()))
            except queue.Empty:
                late = f"{target.name}: {clients} clients not done within {CLIENT_DEADLINE_S:.0f} s"
                raise RuntimeError(late) from None
            if isinstance(report, str):
                raise RuntimeError(report)
            runs.append(report)
    finally:
        stop_clients(procs, grace_s=30 if len(runs) == len(procs) else 0)
    wrong = [w for run in runs for w in run.wrong]
    if wrong:
        raise RuntimeError(f"{target.name}: {'; '.join(wrong)}")
    wall_s = (max(r.end_ns for r in runs) - min(r.start_ns for r in runs)) / 1e9
    now = target.cpu_seconds()
    used = None if cpu is None or now is None else now - cpu
    requests = bench_fs.request_delta(counted, target.requests())
    for root in roots:
        (root / "small").rmdir()
        root.rmdir()
    return Level(
        ops_per_s=clients * ops_per_client(files) / wall_s,
        daemon_cpu_s=used,
        daemon_cpu=None if used is None else round(used / wall_s, 2),
        requests=requests,
        phases_ms={w: round(sum(r.phases_ms[w] for r in runs) / clients, 2) for w in PHASES},
    )


def stop_clients(procs: Sequence[multiprocessing.process.BaseProcess], grace_s: float) -> None:
    """Reap every client; one still running ``grace_s`` after all reported (at once after a failure) is killed."""
    for proc in procs:
        proc.join(timeout=grace_s)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=30)


# -- the run ----------------------------------------------------------------------------------------------------


@dataclass
class Results:
    clients: list[int]
    best: dict[str, dict[int, Level]] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)

    def keep(self, target: str, clients: int, level: Level) -> None:
        by_level = self.best.setdefault(target, {})
        if clients not in by_level or level.ops_per_s > by_level[clients].ops_per_s:
            by_level[clients] = level


def measure(results: Results, targets: list[Target], files: int, rounds: int) -> None:
    failed: set[str] = set()
    for r in range(rounds):
        order = targets[r % len(targets) :] + targets[: r % len(targets)]
        for clients in results.clients:
            for target in order:
                if target.name in failed:
                    continue
                try:
                    level = run_level(target, clients, files, f"r{r}-n{clients}")
                except Exception as e:  # keep the other targets' figures, and exit 1
                    bench_fs.log(f"{target.name}: FAILED: {e}")
                    results.unavailable[target.name] = f"failed: {e}"
                    failed.add(target.name)
                    continue
                cpu = "" if level.daemon_cpu is None else f"  daemon CPU {level.daemon_cpu:.2f}"
                bench_fs.log(f"round {r + 1} {target.name:15} {clients} clients {level.ops_per_s:10,.0f} ops/s{cpu}")
                results.keep(target.name, clients, level)


def report(results: Results, params: dict[str, Any]) -> dict[str, Any]:
    def rate(target: str, n: int) -> float | None:
        level = results.best.get(target, {}).get(n)
        return level.ops_per_s if level else None

    names = [t for t in TARGETS if t in params["targets"]]
    ops = {t: {n: None if (x := rate(t, n)) is None else round(x) for n in results.clients} for t in names}
    first = results.clients[0]
    speedup = {t: {n: bench_fs.ratio(rate(t, n), rate(t, first)) for n in results.clients} for t in names}
    omx_vs = {n: bench_fs.ratio(rate("passthrough_ll", n), rate("omx", n)) for n in results.clients}
    best = results.best
    return {
        "ops_per_s": ops,
        "speedup": speedup,
        "omx_vs_passthrough_ll": omx_vs,
        "daemon_cpu": {t: {n: lv.daemon_cpu for n, lv in best.get(t, {}).items()} for t in names if t in DAEMONS},
        "phases_ms": {t: {n: lv.phases_ms for n, lv in best.get(t, {}).items()} for t in names},
        "daemon_us_per_request": {
            n: round(lv.daemon_cpu_s * 1e6 / sum(lv.requests.values()), 1)
            for n, lv in best.get("omx", {}).items()
            if lv.daemon_cpu_s is not None and lv.requests
        },
        "requests_per_op": {
            n: {op: round(c / (n * ops_per_client(params["files_per_client"])), 2) for op, c in lv.requests.items()}
            for n, lv in best.get("omx", {}).items()
        },
        "options": results.options,
        "params": params,
        "unavailable": results.unavailable,
    }


def markdown(summary: dict[str, Any], clients: list[int]) -> str:
    """The rates with their speed-up, omx against passthrough_ll, and the daemons' CPU, as markdown tables."""

    def plural(n: int) -> str:
        return f"{n} client{'s' if n > 1 else ''}"

    def cell(rate: float | None, speedup: float | None, first: bool) -> str:
        if rate is None:
            return "-"
        return f"{rate:,.0f}" + ("" if speedup is None or first else f" ({speedup:.2f}x)")

    head = "| ops/s (speed-up over 1 client) | " + " | ".join(plural(n) for n in clients) + " |"
    lines = [head, "|---" * (len(clients) + 1) + "|"]
    for target, rates in summary["ops_per_s"].items():
        cells = [cell(rates[n], summary["speedup"][target][n], n == clients[0]) for n in clients]
        lines.append(f"| {target} | " + " | ".join(cells) + " |")
    ratios = summary["omx_vs_passthrough_ll"]
    lines.append(
        "| omx time per op / passthrough_ll's | "
        + " | ".join("-" if ratios[n] is None else f"{ratios[n]:.2f}x" for n in clients)
        + " |"
    )
    lines += ["", "| daemon CPU s per wall s | " + " | ".join(plural(n) for n in clients) + " |"]
    lines.append("|---" * (len(clients) + 1) + "|")
    for target, shares in summary["daemon_cpu"].items():
        cells = ["-" if shares.get(n) is None else f"{shares[n]:.2f}" for n in clients]
        lines.append(f"| {target} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- main -------------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 files per client, one round (CI smoke)")
    parser.add_argument("--clients", default="1,2,4", help="comma list of client counts (default 1,2,4)")
    parser.add_argument("--files", type=int, help="small files per client (default 1000)")
    parser.add_argument("--rounds", type=int, help="rounds; each figure is the best (default 3)")
    parser.add_argument("--targets", default=",".join(TARGETS), help=f"comma list of {', '.join(TARGETS)}")
    parser.add_argument("--workdir", type=Path, help="where the run directory goes (default: the system temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the run directory (it is printed)")
    parser.add_argument(
        "--build-dir", type=Path, default=bench_fs.REPO / "build" / "bench", help="where passthrough_ll is built"
    )
    args = parser.parse_args(argv)
    try:
        args.clients = sorted({int(n) for n in args.clients.split(",") if n.strip()})
    except ValueError:
        parser.error(f"--clients: not a comma list of numbers: {args.clients}")
    if not args.clients or args.clients[0] < 1:
        parser.error("--clients: give at least one count, each 1 or more")
    chosen = {t.strip() for t in args.targets.split(",") if t.strip()}
    if unknown := chosen - set(TARGETS):
        parser.error(f"--targets: unknown {', '.join(sorted(unknown))}; choose from {', '.join(TARGETS)}")
    args.targets = [t for t in TARGETS if t in chosen]
    args.files = args.files or (20 if args.quick else 1000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run_dir = bench_fs.start_run(args.workdir, "omx-bench-clients-")
    bench_fs.log(f"run directory {run_dir}: clients {args.clients}, {args.files} files each, {args.rounds} rounds")
    results = Results(args.clients)
    load_before = os.getloadavg()
    try:
        with contextlib.ExitStack() as stack:
            targets = []
            for name in args.targets:
                try:
                    mount = mounted(name, run_dir, args.build_dir, results.options, max(args.clients))
                    targets.append(stack.enter_context(mount))
                except bench_fs.Unavailable as e:
                    bench_fs.log(f"{name}: unavailable: {e}")
                    results.unavailable[name] = str(e)
            measure(results, targets, args.files, args.rounds)
    except KeyboardInterrupt:
        bench_fs.log("interrupted: mounts are gone, no results")
        return 130
    finally:
        if args.keep:
            bench_fs.log(f"kept {run_dir}")
        else:
            bench_fs.remove_run_dir(run_dir)
    params = {
        "clients": args.clients,
        "files_per_client": args.files,
        "ops_per_client": ops_per_client(args.files),
        "rounds": args.rounds,
        "targets": args.targets,
        "workdir": str(run_dir),
        "load_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
    }
    summary = report(results, params)
    print(markdown(summary, args.clients))
    print(json.dumps(summary))
    failed = any(why.startswith("failed") for why in results.unavailable.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
