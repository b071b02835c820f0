"""The split of the suite into a tuning part and a held-out part: a seeded draw over the tasks added after the first
35, by kind, recorded once in scripts/bench_split.json before any rule was tuned on them."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SPLIT_FILE = Path(__file__).resolve().parents[1] / "bench_split.json"

HOW = (
    "The tasks added after the 35 omx's rules were written from, grouped by kind (drawn_from). One "
    "random.Random(seed) walks the kinds in sorted order; each kind's task names are sorted, shuffled with it, and "
    "the first n - n // 3 of its n are held out (2 of 3, 3 of 4), so each kind has held-out tasks and some to tune "
    "on. The first 35 tasks are all tuning."
)


def draw(drawn_from: Mapping[str, Sequence[str]], seed: int) -> list[str]:
    """The held-out task names, sorted: the draw ``HOW`` describes over ``drawn_from`` (kind -> task names)."""
    rng = random.Random(seed)
    held: list[str] = []
    for kind in sorted(drawn_from):
        names = sorted(drawn_from[kind])
        rng.shuffle(names)
        held += names[: len(names) - len(names) // 3]
    return sorted(held)


def make(drawn_from: Mapping[str, Sequence[str]], seed: int) -> dict[str, Any]:
    """The split file's content for ``drawn_from`` and ``seed``."""
    kinds = {kind: sorted(names) for kind, names in sorted(drawn_from.items())}
    return {"seed": seed, "how": HOW, "drawn_from": kinds, "held_out": draw(kinds, seed)}


def load(path: Path = SPLIT_FILE) -> dict[str, Any]:
    """The recorded split."""
    split: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return split
