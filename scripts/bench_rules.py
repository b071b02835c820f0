"""Where omx's rules reach: which of its checks read from a task's words fire on each part of the suite, and whether
each judges the task's reference solution met. No model: the rules alone, as omx reads a task without one.

    .venv/bin/python scripts/bench_rules.py [--part tuning|held-out|all] [--verbose]

For each task with a reference solution (scripts/bench_suite/): its workspace is made, omx's rules read the task
(``TaskExpectations.before``), the solution runs, and each content check is judged on its files. Every check the
rules make is a form (N bullets, just a number, at most N words, one line, a table): they compute no value the
output must hold, and tell no exact work (the model's reading does). A rule that fires on the tuning part and not
on the held-out part was written from the tuning tasks' wording; one that judges a right solution "not met" would
fail a right run. Not in CI: tests/test_bench_rules_smoke.py runs it on two tasks.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_suite import PARTS, SUITE, Task, prepare  # noqa: E402  # a package beside this script

from agent.plan_run.task_checks import TaskExpectations  # noqa: E402

__all__ = ["main", "rule_checks"]


def rule_checks(task: Task) -> list[tuple[str, str, str]]:
    """The content checks omx's rules read in ``task``: (their kind, criterion, status on the solution)."""
    assert task.solve is not None
    with tempfile.TemporaryDirectory(prefix="omx-rules-") as tmp:
        ws = Path(tmp)
        prepare(task, ws)
        expected = TaskExpectations.before(task.prompt, ws)
        task.solve(ws)
        checks = [check for check in expected.check() if check.about_content]
        return [(check.kind, check.criterion, check.status) for check in checks]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=[*PARTS, "all"], default="all", help="the part to read (all)")
    parser.add_argument("--only", action="append", metavar="NAME", help="this task only (repeatable)")
    parser.add_argument("--verbose", action="store_true", help="print every check")
    args = parser.parse_args(argv)
    parts = PARTS if args.part == "all" else (args.part,)
    for part in parts:
        tasks = [t for t in SUITE if t.part == part and t.solve is not None and (not args.only or t.name in args.only)]
        fired: Counter[str] = Counter()
        reached: Counter[str] = Counter()
        alarms: list[str] = []
        for task in tasks:
            checks = rule_checks(task)
            for kind, criterion, status in checks:
                fired[kind] += 1
                if args.verbose:
                    print(f"  {part:8} {task.name:24} {status:12} {criterion}")
                if status != "met":
                    alarms.append(f"{task.name}: {criterion}: {status}")
            reached.update({kind for kind, _, _ in checks})
        counted = [f"{kind} checks {fired[kind]} (in {reached[kind]} tasks)" for kind in sorted(fired)]
        checks = ", ".join(counted) or "no checks"
        print(f"{part}: {len(tasks)} tasks; {checks}; not met on the reference solution: {len(alarms)}")
        for alarm in alarms:
            print(f"  not met: {alarm}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
