"""What each of the mount's caching and threading choices buys: ``bench_fs.py``'s workloads on the private zone,
once per variant of the daemon, all in one run, with every variant's time as a ratio to the default's.

A variant is the default daemon with one choice undone, patched in before ``omxfs mount`` starts (so the shipped
code has no switches that exist only for this script):

- ``timeouts_0``: entry and attribute timeouts of 0 (pyfuse3's example's choice) instead of 60 s for nodes that
  cannot change behind the kernel's back and 0.5 s for the rest: every stat and open re-asks the daemon;
- ``no_keep_cache``: the page cache of an unchanged private file is dropped at every open;
- ``no_inline``: every request runs in a worker thread, even the cheap ones the handlers vouch for (``Inline``);
- ``writeback_cache``: the kernel's writeback cache on (writes are acknowledged before the daemon sees them; the
  product keeps it off so every write reaches the store before write() returns: measured, not proposed).

Usage: ``scripts/bench_mount_options.py [--files N] [--size-mib N] [--samples N] [--only v1,v2]``; it ends with
one JSON line ``{"workloads_ms": {variant: {workload: ms}}, "ratio_vs_default": {...}}``. Figures move with
machine load, which is why every variant runs in the same invocation as the default.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fs  # a sibling script, importable once its directory is on the path

VARIANTS: dict[str, str] = {
    "default": "",
    "timeouts_0": "import omxfs.fuse.ops as o; o.STABLE_TIMEOUT = o.VOLATILE_TIMEOUT = 0.0",
    "no_keep_cache": "from omxfs.fuse.zones.private import PrivateHandler as P; P._keep_cache = lambda *a: False",
    "no_inline": "import omxfs.fuse.ops as o; o._has_inline = lambda t: False; o.INLINE_IO = -1",
    "writeback_cache": "from omxfs.fuse.ops import Operations as O; O.enable_writeback_cache = True",
}


def daemon_command(patch: str, *args: str) -> list[str]:
    """``omxfs`` run by this interpreter with ``patch`` applied first."""
    code = f"{patch}\nimport sys\nfrom cli.omxfs import main\nsys.exit(main())"
    return [sys.executable, "-c", code, *args]


def run_variant(name: str, params: bench_fs.Params, run_dir: Path, cold_reason: str | None) -> bench_fs.Results:
    results = bench_fs.Results(params)
    ws, mountpoint = run_dir / f"{name}-ws", run_dir / f"{name}-mnt"
    subprocess.run(
        daemon_command("", "init", str(ws), "--agent", bench_fs.AGENT),
        check=True,
        capture_output=True,
        cwd=bench_fs.REPO,
    )
    command = daemon_command(VARIANTS[name], "mount", str(ws), str(mountpoint), "--as", bench_fs.AGENT, "--foreground")
    unmount = daemon_command("", "umount")
    with bench_fs.fuse_daemon(name, command, mountpoint, run_dir / f"{name}.log", unmount=unmount) as mnt:
        bench_fs.run_all(results, "omx", mnt / "agents" / bench_fs.AGENT, cold_reason)
    return results


def summary(by_variant: dict[str, bench_fs.Results]) -> dict[str, Any]:
    workloads = {name: {w: t["omx"] for w, t in r.workloads_ms.items()} for name, r in by_variant.items()}
    base = workloads.get("default", {})
    ratios = {
        name: {w: bench_fs.ratio(ms, base.get(w)) for w, ms in figures.items()}
        for name, figures in workloads.items()
        if name != "default"
    }
    latencies = {
        name: {k: v["omx"] for k, v in r.latency_us.items() if k in bench_fs.LATENCIES}
        for name, r in by_variant.items()
    }
    return {"workloads_ms": workloads, "ratio_vs_default": ratios, "latency_us": latencies}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=64, help="sequential file size (default 64)")
    parser.add_argument("--files", type=int, default=2000, help="small files (default 2000)")
    parser.add_argument("--samples", type=int, default=500, help="latency samples (default 500)")
    parser.add_argument("--workdir", type=Path, help="where the run directory goes (default: the system temp dir)")
    parser.add_argument("--only", default=",".join(VARIANTS), help=f"comma list of {', '.join(VARIANTS)}")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    if unknown := [n for n in names if n not in VARIANTS]:
        parser.error(f"--only: unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    if "default" not in names:
        names.insert(0, "default")  # the baseline is measured in the same run, always
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="omx-bench-options-", dir=args.workdir)).resolve()
    params = bench_fs.Params(args.size_mib, args.files, args.samples, run_dir, ["omx"])
    cold_reason = bench_fs.drop_caches()
    by_variant: dict[str, bench_fs.Results] = {}
    try:
        for name in names:
            bench_fs.log(f"variant {name}")
            by_variant[name] = run_variant(name, params, run_dir, cold_reason)
    finally:
        bench_fs.remove_run_dir(run_dir)
    print(json.dumps(summary(by_variant)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
