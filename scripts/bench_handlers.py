"""The CPU each request's handler costs, omx against the pyfuse3 floor, called in-process: no FUSE, no kernel.

Issue 16's gap to ``scripts/pyfuse3_floor.py`` is the daemon's own CPU per request (``bench_fs.py`` and
``bench_clients.py`` measure it through the kernel, where the run-to-run noise of this VM is larger than most
changes to a handler). This script calls the same operations of both ``Operations`` classes directly on the trio
loop, one small-file cycle per name in a private zone (a lookup of the absent name, create, write 4 KiB, flush,
release; getattr; open, read, flush + release; unlink), and times each call in the calling thread's CPU time. The
omx daemon is built as ``omxfs mount`` builds it (``daemon.build_ops``: identity from this process's environment,
the store watch where the store is local), over a store held by descriptor as the daemon holds it; the floor works
on a plain directory beside it. Rounds alternate between the two and the best round of each operation counts.

It also times, alone in a loop, the two things SPEC has omx do for every request whatever else it does (``DUTIES``:
name the caller, and walk the store beneath its root without following links, here for a stat), beside a bare
``lstat`` by directory descriptor: a lower bound of omx's handler cost, since a step timed alone runs from warm
caches.

    python scripts/bench_handlers.py [--files N] [--rounds R] [--workdir DIR]

Prints a table of microseconds per call and omx/floor, the duties, then one JSON line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath
from types import ModuleType, SimpleNamespace
from typing import Any, cast

import pyfuse3
import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from omxfs.fuse.daemon import build_ops  # noqa: E402  (the repository's own code, not an installed copy)
from omxfs.fuse.entries import Request  # noqa: E402
from omxfs.fuse.inodes import ROOT_INODE  # noqa: E402
from omxfs.store import Workspace  # noqa: E402

AGENT = "bench"
DATA = b"x" * 4096
OPERATIONS = (
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
)

DUTIES = ("name_the_caller", "stat_beneath_the_store_root", "bare_lstat_by_directory_fd")

Ops = Any  # omx's Operations or the floor's: the same pyfuse3 methods


def load_floor() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pyfuse3_floor", REPO / "scripts" / "pyfuse3_floor.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def request() -> pyfuse3.RequestContext:
    """This process as the caller, as the kernel would name it."""
    return cast(pyfuse3.RequestContext, SimpleNamespace(uid=os.getuid(), gid=os.getgid(), pid=os.getpid(), umask=0o022))


async def cycle(ops: Ops, directory: int, names: list[bytes]) -> dict[str, float]:
    """One pass of every operation over ``names``: CPU seconds spent in each."""
    ctx = request()
    spent = dict.fromkeys(OPERATIONS, 0.0)

    async def timed(name: str, call: Awaitable[Any]) -> Any:
        """Await ``call``, a coroutine made by the caller (making it runs none of the handler)."""
        started = time.thread_time()
        result = await call
        spent[name] += time.thread_time() - started
        return result

    async def absent(name: bytes) -> None:
        try:
            entry = await ops.lookup(directory, name, ctx)
        except pyfuse3.FUSEError:
            return
        if entry.st_ino:  # 0: a negative entry, omx's answer in a watched private zone
            raise RuntimeError(f"{name!r} exists before the benchmark made it")

    async def close(fh: int) -> None:
        await ops.flush(fh)
        await ops.release(fh)

    inodes = []
    for name in names:
        await timed("lookup_absent", absent(name))
        info, entry = await timed("create", ops.create(directory, name, 0o100644, os.O_WRONLY | os.O_CREAT, ctx))
        await timed("write", ops.write(info.fh, 0, DATA))
        await timed("flush", ops.flush(info.fh))
        await timed("release", ops.release(info.fh))
        inodes.append(entry.st_ino)
    for inode in inodes:
        await timed("getattr", ops.getattr(inode, ctx))
    for inode in inodes:
        info = await timed("open", ops.open(inode, os.O_RDONLY, ctx))
        await timed("read", ops.read(info.fh, 0, 8192))
        await timed("flush_release_read", close(info.fh))
    for name in names:
        await timed("unlink", ops.unlink(directory, name, ctx))
    return spent


def duties(omx: Ops, ws: Workspace, zone_fd: int, calls: int) -> dict[str, float]:
    """CPU seconds of ``calls`` calls of each of ``DUTIES``, each alone in a loop."""
    caller = Request.of(request())
    directory = PurePosixPath("agents", AGENT, "w")
    steps: dict[str, Callable[[], object]] = {
        "name_the_caller": lambda: omx.runner.caller(caller),
        "stat_beneath_the_store_root": lambda: ws.private.tree.lstat(directory),
        "bare_lstat_by_directory_fd": lambda: os.lstat("w", dir_fd=zone_fd),
    }
    spent: dict[str, float] = {}
    for duty in DUTIES:
        step = steps[duty]
        started = time.thread_time()
        for _ in range(calls):
            step()
        spent[duty] = time.thread_time() - started
    return spent


async def measure(run_dir: Path, files: int, rounds: int) -> dict[str, dict[str, float]]:
    """Microseconds per call, best round: of each operation for ``omx`` and ``floor``, of each of omx's
    ``DUTIES`` for ``duties``."""
    Workspace.init(run_dir / "ws", agents=[AGENT])
    store_fd = os.open(run_dir / "ws", os.O_RDONLY | os.O_DIRECTORY)
    zone_fd = os.open(run_dir / "ws" / "agents" / AGENT, os.O_RDONLY | os.O_DIRECTORY)
    log = logging.getLogger("bench_handlers")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    ws = Workspace(Path(f"/proc/self/fd/{store_fd}"))
    omx = build_ops(ws, AGENT, log)
    ctx = request()
    agents = (await omx.lookup(ROOT_INODE, b"agents", ctx)).st_ino
    zone = (await omx.lookup(agents, AGENT.encode(), ctx)).st_ino
    omx_dir = (await omx.mkdir(zone, b"w", 0o40755, ctx)).st_ino
    (run_dir / "floor").mkdir()
    floor = load_floor().Floor(str(run_dir / "floor"))
    floor_dir = (await floor.mkdir(ROOT_INODE, b"w", 0o40755, ctx)).st_ino
    names = [b"f%d" % i for i in range(files)]
    best: dict[str, dict[str, float]] = {"omx": {}, "floor": {}, "duties": {}}
    try:
        for _ in range(rounds):
            for target, ops, directory in (("floor", floor, floor_dir), ("omx", omx, omx_dir)):
                for op, seconds in (await cycle(ops, directory, names)).items():
                    best[target][op] = min(best[target].get(op, seconds), seconds)
            for duty, seconds in duties(omx, ws, zone_fd, files).items():
                best["duties"][duty] = min(best["duties"].get(duty, seconds), seconds)
    finally:
        if omx.watch is not None:
            omx.watch.stop()
        os.close(zone_fd)
        os.close(store_fd)
    return {target: {op: s / files * 1e6 for op, s in ops.items()} for target, ops in best.items()}


def report(us: dict[str, dict[str, float]], files: int, rounds: int) -> dict[str, Any]:
    omx, floor, duty = us["omx"], us["floor"], us["duties"]
    print(f"handler CPU per call, µs (best of {rounds} rounds of {files} files)")
    print(f"{'operation':20s} {'omx':>8s} {'floor':>8s} {'omx/floor':>10s}")
    for op in OPERATIONS:
        print(f"{op:20s} {omx[op]:8.1f} {floor[op]:8.1f} {omx[op] / floor[op]:10.1f}")
    cycle_omx, cycle_floor = sum(omx.values()), sum(floor.values())
    print(f"{'a whole cycle':20s} {cycle_omx:8.1f} {cycle_floor:8.1f} {cycle_omx / cycle_floor:10.1f}")
    print("omx's duties on every request, µs per call, each alone in a loop (a lower bound)")
    for name in DUTIES:
        print(f"{name:28s} {duty[name]:8.1f}")
    # The ratio is taken of the cycles as reported, so that dividing the printed figures gives the printed ratio.
    cycle = {"omx": round(cycle_omx, 1), "floor": round(cycle_floor, 1)}
    return {
        "files": files,
        "rounds": rounds,
        "omx_us": {op: round(v, 2) for op, v in omx.items()},
        "floor_us": {op: round(v, 2) for op, v in floor.items()},
        "cycle_us": cycle,
        "ratio_vs_floor": round(cycle["omx"] / cycle["floor"], 2),
        "duties_us": {name: round(v, 2) for name, v in duty.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000, help="names per round (default 2000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per target; the best counts (default 5)")
    parser.add_argument("--workdir", type=Path, help="where the run directory goes (default: the system temp dir)")
    args = parser.parse_args(argv)
    if args.files < 1 or args.rounds < 1:
        parser.error("--files and --rounds must be at least 1")
    sys.path.insert(0, str(REPO / "scripts"))
    from bench_fs import remove_run_dir, start_run

    run_dir = start_run(args.workdir, "omx-bench-handlers-")
    try:
        us = trio.run(measure, run_dir, args.files, args.rounds)
    finally:
        remove_run_dir(run_dir)
    print(json.dumps(report(us, args.files, args.rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
