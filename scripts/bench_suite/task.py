"""A task of the suite, how its workspace is made, and the small file operations its reference solutions use."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bench_suite.checks import Checker

SCENARIOS = ("summary", "text", "command")  # seed 004's three: file summaries, batch text work, controlled commands
PARTS = ("held-out", "tuning")

Action = Callable[[Path], None]


@dataclass(frozen=True)
class Task:
    """One everyday task: its prompt, its input files, its checker of the workspace afterwards.

    ``kind`` is what it asks for (move, csv_math, haiku...), each kind phrased three ways or more; ``part`` is
    ``tuning`` (may be studied to write omx's rules) or ``held-out`` (only ever run and scored). ``setup`` runs on
    the workspace after its files are written (mtimes); ``solve`` is a reference solution, run by the tests only, to
    show that the checker can pass."""

    name: str
    scenario: str  # one of SCENARIOS
    prompt: str
    files: dict[str, str]
    check: Checker
    kind: str = ""
    solve: Action | None = None
    setup: Action | None = None
    part: str = "tuning"


def prepare(task: Task, ws: Path) -> None:
    """Write ``task``'s input files into the empty directory ``ws``, then run its setup."""
    for path, text in task.files.items():
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text(text, encoding="utf-8")
    if task.setup:
        task.setup(ws)


# -- setups and the reference solutions' file operations ----------------------------------------------------------

DAY = 86400.0


def set_mtimes(mtimes: Mapping[str, float]) -> Action:
    """A setup giving each path its modification time (seconds since the epoch)."""

    def setup(ws: Path) -> None:
        for path, mtime in mtimes.items():
            os.utime(ws / path, (mtime, mtime))

    return setup


def set_ages(days: Mapping[str, float]) -> Action:
    """A setup making each path last modified that many days before the setup runs."""

    def setup(ws: Path) -> None:
        now = time.time()
        set_mtimes({path: now - age * DAY for path, age in days.items()})(ws)

    return setup


def nothing(ws: Path) -> None:
    """The solution of a task that must be refused: the workspace left as it is."""


def read(ws: Path, path: str) -> str:
    return (ws / path).read_text(encoding="utf-8")


def write(ws: Path, path: str, text: str) -> None:
    (ws / path).parent.mkdir(parents=True, exist_ok=True)
    (ws / path).write_text(text, encoding="utf-8")


def move(ws: Path, source: str, target: str) -> None:
    (ws / target).parent.mkdir(parents=True, exist_ok=True)
    shutil.move(ws / source, ws / target)
