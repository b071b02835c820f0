"""How well a real model reads the suite's tasks, and what omx acts on once its rules cross-check that reading.

    .venv/bin/python scripts/bench_reading.py --model openai/local-model --api-base http://127.0.0.1:8080/v1
        [--part tuning|held-out|all] [--only NAME ...] [--json FILE]

For each task of the suite (scripts/bench_suite/) with a reference solution: its workspace is made, the solution run
on a copy, and the files it creates or changes that the task names are the task's true outputs. Then omx's two
readings of the task are taken (``agent.plan_run.task_reading``): the model's, one schema-constrained request, and
the rules'; and what omx acts on, where both agree. Per task it prints the true outputs, each reading's, the kind
the model read, whether omx takes the task as exact work (its output made by code: the model's kind "exact" and an
input there before the run), and the checks omx left out; then how often each matched the truth. A few seconds a
task with the 0.5B model: the way to judge a change to the reading on the tuning part without running whole tasks
(the held-out part is only ever scored). Not in CI: tests/test_bench_reading_smoke.py runs it against a scripted model.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_suite import PARTS, SUITE, Task, prepare  # noqa: E402  # a package beside this script

from agent.model.llm import Model, model_from_settings  # noqa: E402
from agent.plan_run.task_checks import TaskExpectations  # noqa: E402
from agent.plan_run.task_reading import read_task  # noqa: E402

__all__ = ["Reading", "main", "read_one"]


@dataclass
class Reading:
    name: str
    part: str
    truth: list[str]  # the files the reference solution writes that the task names
    model: list[str] | None  # the model's outputs (None: no reading, ``why``)
    rules: list[str]
    acted: list[str]  # what omx acts on, both readings cross-checked
    kind: str | None = None
    exact: bool = False  # omx takes the task as exact work (``TaskExpectations.exact``)
    why: str | None = None
    left_out: list[str] = field(default_factory=list)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def true_outputs(task: Task, ws: Path) -> list[str]:
    """The files ``task``'s solution creates or changes in a copy of ``ws`` that the task's words name."""
    assert task.solve is not None
    with tempfile.TemporaryDirectory(prefix="omx-reading-") as tmp:
        copy = Path(tmp) / "ws"
        shutil.copytree(ws, copy, symlinks=True)
        before = _files(copy)
        task.solve(copy)
        after = _files(copy)
    written = {path for path, data in after.items() if before.get(path) != data}
    return sorted(path for path in written if path in task.prompt)


def read_one(model: Model, task: Task) -> Reading:
    with tempfile.TemporaryDirectory(prefix="omx-reading-") as tmp:
        ws = Path(tmp)
        prepare(task, ws)
        truth = true_outputs(task, ws)
        reading, why = read_task(model, task.prompt, ws)
        rules = TaskExpectations.before(task.prompt, ws)
        acted = TaskExpectations.before(task.prompt, ws, reading)
    note = acted.reading or {}
    return Reading(task.name, task.part, truth, reading.outputs if reading else None, sorted(rules.outputs),
                   sorted(acted.outputs), reading.kind if reading else None, acted.exact, why,
                   list(note.get("checks_left_out", [])))  # fmt: skip


def _summary(readings: list[Reading]) -> list[str]:
    n = len(readings)
    model = sum(1 for r in readings if r.model is not None and sorted(set(r.model)) == r.truth)
    rules = sum(1 for r in readings if r.rules == r.truth)
    acted = sum(1 for r in readings if r.acted == r.truth)
    none = sum(1 for r in readings if r.model is None)
    exact = sum(1 for r in readings if r.exact)
    left = sum(len(r.left_out) for r in readings)
    return [
        f"{n} tasks: outputs read right by the model {model}, by the rules {rules}, acted on right {acted}",
        f"no reading {none}; taken as exact work {exact}; "
        f"checks of the rules left out where the readings differ: {left}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="litellm model name, e.g. openai/local-model")
    parser.add_argument("--api-base", help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--part", choices=[*PARTS, "all"], default="tuning", help="the part to read (tuning)")
    parser.add_argument("--only", action="append", metavar="NAME", help="read this task (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the readings to this file")
    args = parser.parse_args(argv)
    model = model_from_settings(args.model, args.api_base, timeout=120)
    tasks = [t for t in SUITE if t.solve is not None and (args.part == "all" or t.part == args.part)]
    if args.only:
        tasks = [t for t in tasks if t.name in args.only]
    readings: list[Reading] = []
    for task in tasks:
        r = read_one(model, task)
        readings.append(r)
        mark = "ok" if r.acted == r.truth else "--"
        exact = " exact" if r.exact else ""
        print(f"{mark} {r.name:<24} truth {r.truth} model {r.model} ({r.kind}{exact}) rules {r.rules} acted {r.acted}")
        for left in r.left_out:
            print(f"     left out: {left}")
        if r.why:
            print(f"     no reading: {r.why}")
        sys.stdout.flush()
    for line in _summary(readings):
        print(line)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in readings], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
