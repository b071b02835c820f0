#!/usr/bin/env python3
"""Race each supervisor command against a hostile agent, thousands of times: the hostile-agent tests' long loop.

For each command (``--command NAME``, repeatable; all by default) a fresh workspace, ``omxfs mount``, canary tree and
attacker process (``tests/hostile/harness.py``), then ``--tries`` tries of the command's scenario
(``tests/hostile/scenarios.py``): bob, acting through the mount, swaps his zone's ``d`` for a symlink to the
canary (a file, a FIFO), timed to what the mount shows of the command's phases, or over and over; a canary
directory is bind-mounted into the zone; a canary file is hard-linked into it. Each try is judged by the same rules
as the tests: the canary unchanged, no checkpoint holding a canary file's content, the command succeeded or failed
cleanly, and the zone as the command meant or brought back by the undo it printed.

Prints one line per command (tries, attacks that landed in time, canary changes: must be 0, leaks, commands that
failed cleanly, tries whose zone was not as meant and was undone, other problems), then one JSON line with them
all. Exits 1 if any try broke a rule (``--show`` prints the first such try of each command). Runs as root, with
``/dev/fuse`` (the supervisor is root; the attacker acts through a real mount).

    scripts/race_supervisor.py --tries 2000 --command accept --command restore-paths
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.hostile.harness import Arena  # noqa: E402
from tests.hostile.scenarios import NAMES, Tally, run_try, scenario  # noqa: E402

#: commands whose scenario lays its attack before the command runs: no mount, no attacker process
UNMOUNTED = frozenset({"undo-checkpoint", "mountpoint-restore-zone", "mountpoint-restore-paths", "mountpoint-accept"})


def race(name: str, tries: int, workdir: Path, *, files: int, real: bool, show: bool) -> Tally:
    base = Path(tempfile.mkdtemp(prefix=f"race-{name}-", dir=workdir))
    tally = Tally(name)
    arena = Arena(base, mounted=name not in UNMOUNTED)
    try:
        each = scenario(name, files=files, real=real)
        each.prepare(arena)
        for _ in range(tries):
            tally.add(run_try(arena, each))
    except Exception:  # the harness could not go on (a setup that failed): counted, and this command ends
        tally.problems += 1
        tally.first_failure = tally.first_failure or traceback.format_exc()
    finally:
        problems = arena.close()
        shutil.rmtree(base, ignore_errors=True)
    if problems:
        tally.problems += 1
        tally.first_failure = tally.first_failure or "\n".join(problems)
    if show and tally.first_failure:
        print(f"--- {name}: the first try that broke a rule\n{tally.first_failure}\n---", flush=True)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=1000, help="tries per command (default 1000)")
    parser.add_argument("--command", action="append", choices=NAMES, help="a command to race (default: all)")
    parser.add_argument("--files", type=int, default=3000, help="files of the review run an accept applies")
    parser.add_argument(
        "--review",
        choices=("store", "run"),
        default="store",
        help="how bob's review run is made: its upper layer written directly (store, default) or a real "
        "`omxfs run --review` each try (run, slower)",
    )
    parser.add_argument("--workdir", type=Path, help="where the workspaces go (default: a temporary directory)")
    parser.add_argument("--show", action="store_true", help="print the first try of each command that broke a rule")
    args = parser.parse_args(argv)
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        parser.error("run as root, with /dev/fuse: the supervisor is root and the attacker acts through a mount")
    workdir = Path(tempfile.mkdtemp(prefix="race-supervisor-", dir=args.workdir))
    tallies = []
    try:
        for name in args.command or NAMES:
            start = time.monotonic()
            tally = race(name, args.tries, workdir, files=args.files, real=args.review == "run", show=args.show)
            print(f"{tally.line()} ({time.monotonic() - start:.0f} s)", flush=True)
            tallies.append(tally)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps([t.as_json() for t in tallies]))
    return 0 if all(t.held for t in tallies) else 1


if __name__ == "__main__":
    sys.exit(main())
