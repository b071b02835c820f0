#!/usr/bin/env python3
"""Checkpoints against git, in one run (issue 27, "Speed and size"): a benchmark, never a timed test.

The zone: ``agents/bench/`` of a fresh workspace, holding ``bench_real.py``'s tree (the interpreter's standard
library, ``tar x``, about 2,400 files; ``--small``: three packages of it) with a nested ``git init && git add -A &&
git commit`` inside, so its ``.git`` is part of the zone as an agent's would be. The yardstick: the same tarball in
a separate directory, committed with ``git add -A && git commit`` (git's own process, as a user runs it). The
checkpoint operations are timed in this process (``omxfs.checkpoints``, what ``omxfs checkpoint`` and ``omxfs run``
call, without the CLI's interpreter start, which ``omxfs run`` does not pay for its checkpoint either).

Rows, each the best of ``--repeat`` rounds (each round a fresh workspace and repository):

- ``first``: the first checkpoint vs git's first commit;
- ``incremental``: after appending a line to 10 files, a checkpoint vs ``git add -A && git commit``; its added
  bytes vs the 10 files' bytes;
- ``view_start``: the automatic checkpoint of a view's start (``only_if_changed``) with those 10 changes, and with
  none (a view started again on an unchanged zone);
- ``diff``: ``diff`` of the 10 changed files vs ``git status && git diff``;
- ``*_new_process``: a view start and a diff as a new process makes them (``omxfs run``, ``omxfs diff``): the latest
  manifest read from its file, where this process would have kept it parsed;
- ``restore``: restore of those 10 paths vs ``git checkout -- PATHS``;
- ``lstat_every_entry``: an lstat of every entry of the zone and nothing else, the floor of any checkpoint or diff
  that finds what changed by looking at every file; against ``git status && git diff``, which stats the tree but not
  the nested ``.git`` (a separate repository to git).

Prints a table, then one JSON line with every number. ``--profile``: each round's incremental checkpoint, diff and
restore are also run under cProfile (their times then count the profiler's cost too: read the table of a run
without it), and the functions they spent most time in are printed after the table.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

from bench_real_inputs import make_tarball  # noqa: E402

from omxfs.checkpoints import ZoneHistory, blobs, diff, restore, syscalls  # noqa: E402
from omxfs.checkpoints.history import forget_parsed_manifests  # noqa: E402
from omxfs.store import Workspace  # noqa: E402

GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org", "-c", "commit.gpgsign=false"]
CHANGED = 10


def sh(*args: str, cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def git_commit(cwd: Path, message: str) -> None:
    """``git add -A && git commit``, as a user runs it."""
    sh(*GIT, "add", "-A", cwd=cwd)
    sh(*GIT, "commit", "-q", "-m", message, cwd=cwd)


def git_status_and_diff(cwd: Path) -> None:
    sh("git", "status", cwd=cwd)
    sh("git", "--no-pager", "diff", cwd=cwd)


def lstat_every_entry(tree: Path) -> int:
    """lstat every entry below ``tree``, each relative to its directory's descriptor, and nothing else: the floor of
    any scan that looks at every file (a diff or checkpoint that finds changes by stat)."""
    count = 0
    todo = [os.open(tree, os.O_RDONLY | os.O_DIRECTORY)]
    while todo:
        fd = todo.pop()
        with os.scandir(fd) as found:
            names = [(e.name, e.is_dir(follow_symlinks=False)) for e in found]
        for name, is_dir in names:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
            count += 1
            if is_dir:
                todo.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd))
        os.close(fd)
    return count


def without_fsync() -> None:
    """Make this process's fsyncs and syncfs do nothing (``--without-fsync``): what checkpoints cost without the
    durability git 2.39 does not pay for either (its ``core.fsync`` default syncs nothing in a commit or checkout).
    The fsyncs issued together from threads are skipped whole, threads and all."""
    os.fsync = lambda fd: None
    for module in (syscalls, blobs, sys.modules["omxfs.checkpoints.restore"]):  # each calls the names it imported
        for name in ("syncfs", "fsync_together", "fsync_path"):
            if hasattr(module, name):
                setattr(module, name, lambda *args: None)


#: where ``--profile`` gathers the profiles of the rows it names, over every round
PROFILES: dict[str, cProfile.Profile] = {}


def timed(action: Callable[[], Any], profiled: str = "") -> tuple[float, Any]:
    profile = PROFILES.get(profiled)
    if profile is not None:
        profile.enable()
    start = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - start
    if profile is not None:
        profile.disable()
    return elapsed, result


def change(tree: Path, files: list[str]) -> int:
    """Append a line to each file: the bytes the changed files now hold."""
    total = 0
    for rel in files:
        with open(tree / rel, "a") as f:
            f.write("# changed by the benchmark\n")
        total += (tree / rel).stat().st_size
    return total


def one_round(base: Path, tarball: Path) -> dict[str, float]:
    ws = Workspace.init(base / "ws", agents=["bench"])
    zone = ws.root / "agents/bench"
    sh("tar", "--no-same-owner", "-xf", str(tarball), cwd=zone)
    sh("git", "init", "-q", cwd=zone)
    sh(*GIT, "add", "-A", cwd=zone)
    sh(*GIT, "commit", "-q", "-m", "inside the zone", cwd=zone)
    yard = base / "yard"
    yard.mkdir()
    sh("tar", "--no-same-owner", "-xf", str(tarball), cwd=yard)
    sh("git", "init", "-q", cwd=yard)
    sh("sync", cwd=base)
    history = ZoneHistory(ws, "bench")
    out: dict[str, float] = {}

    out["first_checkpoint"], first = timed(lambda: history.make("bench", "first"))
    out["git_first_commit"], _ = timed(lambda: git_commit(yard, "1"))
    out["zone_entries"] = len(first.entries)

    files = sorted(str(p.relative_to(zone)) for p in zone.rglob("*.py") if ".git" not in p.parts)[::97][:CHANGED]
    out["changed_bytes"] = change(zone, files)
    change(yard, files)
    out["incremental_checkpoint"], second = timed(lambda: history.make("bench", "ten changed"), "incremental")
    out["incremental_bytes_added"] = second.bytes_added
    out["incremental_manifest_bytes"] = (history.manifests_dir / f"{second.number}.json").stat().st_size
    out["git_incremental_commit"], _ = timed(lambda: git_commit(yard, "2"))

    change(zone, files)
    out["view_start_checkpoint_10_changed"], _ = timed(lambda: history.make("bench", "view", only_if_changed=True))
    out["view_start_checkpoint_unchanged"], none = timed(lambda: history.make("bench", "view", only_if_changed=True))
    assert none is None
    # what a new process pays (`omxfs run` is one): the latest manifest read from its file, not kept from above
    change(zone, files)
    forget_parsed_manifests()
    out["view_start_new_process_10_changed"], _ = timed(
        lambda: ZoneHistory(ws, "bench").make("bench", "view", only_if_changed=True)
    )

    change(zone, files)
    change(yard, files)
    out["diff_10_changed"], result = timed(lambda: diff(history), "diff")
    forget_parsed_manifests()
    out["diff_new_process_10_changed"], _ = timed(lambda: diff(ZoneHistory(ws, "bench")))
    out["lstat_every_entry"], _ = timed(lambda: lstat_every_entry(zone))
    assert len(result.modified) == len(files), result.modified
    out["git_status_and_diff"], _ = timed(lambda: git_status_and_diff(yard))
    last = history.latest()
    assert last is not None
    out["restore_10_paths"], _ = timed(lambda: restore(history, "bench", last.number, tuple(files)), "restore")
    out["git_checkout_10_paths"], _ = timed(lambda: sh("git", "checkout", "--", *files, cwd=yard))
    return out


RATIOS = (
    ("first checkpoint / git first commit", "first_checkpoint", "git_first_commit", "<= 1"),
    ("incremental checkpoint / git commit", "incremental_checkpoint", "git_incremental_commit", "<= 0.5"),
    ("diff / git status && git diff", "diff_10_changed", "git_status_and_diff", "<= 0.5"),
    ("restore 10 paths / git checkout", "restore_10_paths", "git_checkout_10_paths", "<= 1"),
    ("lstat of every entry / git status && diff", "lstat_every_entry", "git_status_and_diff", "(the floor of a scan)"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="Three packages of the standard library (a smoke run).")
    parser.add_argument("--repeat", type=int, default=3, help="Rounds; each time is the best of them.")
    parser.add_argument("--dir", type=Path, help="Where to work (default: a temp directory, removed afterwards).")
    parser.add_argument(
        "--profile", action="store_true", help="Profile the incremental checkpoint, the diff and the restore."
    )
    parser.add_argument(
        "--profile-sort",
        choices=("tottime", "cumtime"),
        default="tottime",
        help="Order the profiles by time in each function itself, or with what it calls (where each phase goes).",
    )
    parser.add_argument(
        "--without-fsync",
        action="store_true",
        help="Checkpoints without their fsyncs (never do that for real): how much of each gap is durability.",
    )
    args = parser.parse_args(argv)
    if args.without_fsync:
        without_fsync()
        print("WITHOUT FSYNC: checkpoints, restores and the audit are not made durable in this run")
    if args.profile:
        PROFILES.update(incremental=cProfile.Profile(), diff=cProfile.Profile(), restore=cProfile.Profile())
    top = Path(tempfile.mkdtemp(prefix="bench-checkpoint-", dir=args.dir))
    try:
        tarball = top / "tree.tar"
        files = make_tarball(tarball, args.small)
        rounds = []
        for n in range(args.repeat):
            base = top / f"round{n}"
            base.mkdir()
            rounds.append(one_round(base, tarball))
            shutil.rmtree(base)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    best = {key: min(r[key] for r in rounds) for key in rounds[0]}
    print(f"tree: {files} files from the tarball; the zone: {int(best['zone_entries'])} entries (its .git included)")
    print(f"{'measure':42} {'seconds':>9}")
    for key, value in best.items():
        if key.endswith(("_bytes", "_added", "entries")):
            continue
        print(f"{key:42} {value:9.4f}")
    # best against best, and the median of each round's own ratio: this machine's speed drifts by a third within
    # minutes, and a round's two sides are measured seconds apart, under the same drift
    print(f"{'ratio':42} {'best':>9} {'median':>7}  target")
    ratios = {}
    medians = {}
    for label, ours, theirs, target in RATIOS:
        ratios[label] = best[ours] / best[theirs]
        medians[label] = statistics.median(r[ours] / r[theirs] for r in rounds)
        print(f"{label:42} {ratios[label]:9.2f} {medians[label]:7.2f}  {target}")
    size_ratio = best["incremental_bytes_added"] / best["changed_bytes"]
    print(
        f"{'bytes added / changed files bytes':42} {size_ratio:9.2f}  <= 1.1 "
        f"(+ manifest {int(best['incremental_manifest_bytes'])} bytes)"
    )
    print(
        f"{'view start checkpoint, 10 changed (ms)':42} {best['view_start_checkpoint_10_changed'] * 1000:9.1f}  <= 100"
    )
    print(f"{'  the same in a new process (ms)':42} {best['view_start_new_process_10_changed'] * 1000:9.1f}  <= 100")
    for row, profile in PROFILES.items():
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(args.profile_sort).print_stats(25)
        print(f"--- {row}, over {len(rounds)} rounds: the functions it spent most time in")
        print(text.getvalue().strip())
    print(
        json.dumps(
            {
                "files": files,
                "rounds": len(rounds),
                "best": best,
                "ratios": ratios,
                "median_ratios": medians,
                "bytes_ratio": size_ratio,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
