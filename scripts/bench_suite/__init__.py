"""The everyday tasks ``scripts/bench_tasks.py`` runs omx on, each with its inputs, its own checker and a reference
solution, in two parts: ``tuning`` (the 35 tasks omx's rules were written from, and the added tasks the split left
to tune on) and ``held-out`` (drawn once, by seed, from the added tasks; run, scored and reported, never studied to
write a rule). The split is data, in scripts/bench_split.json (see ``split``).

Import it with scripts/ on ``sys.path`` (a script there has it)."""

from __future__ import annotations

from dataclasses import replace

from bench_suite import split
from bench_suite.checks import Checker, Verdict
from bench_suite.commands import COMMANDS
from bench_suite.data import DATA
from bench_suite.edits import EDITS
from bench_suite.lines import LINES
from bench_suite.prose import PROSE
from bench_suite.task import PARTS, SCENARIOS, Task, prepare
from bench_suite.tuned import TUNED

ADDED: list[Task] = [*PROSE, *LINES, *EDITS, *DATA, *COMMANDS]  # the tasks the split was drawn from


def added_by_kind() -> dict[str, list[str]]:
    """The added tasks' names by kind: what the split is drawn from."""
    kinds: dict[str, list[str]] = {}
    for task in ADDED:
        kinds.setdefault(task.kind, []).append(task.name)
    return kinds


HELD_OUT: frozenset[str] = frozenset(split.load()["held_out"])

SUITE: list[Task] = [*TUNED, *(replace(t, part="held-out" if t.name in HELD_OUT else "tuning") for t in ADDED)]
TASKS: dict[str, Task] = {task.name: task for task in SUITE}

__all__ = ["PARTS", "SCENARIOS", "SUITE", "TASKS", "TUNED", "Checker", "Task", "Verdict", "added_by_kind", "prepare"]
