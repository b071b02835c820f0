"""A counter that many agents change at once without losing a single increment, for view counts and scores.

Each replica only ever grows its own two tallies (P for increments, N for decrements), so merging takes the
per-replica maximum and no concurrent change is counted twice or dropped (seeds H-3 … H-5).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Self

from omxfs.crdt.checks import check_replica
from omxfs.errors import InvalidInput

_WRITE = re.compile(r"([+-]?)([0-9]+)")


def _check_amount(n: object) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise InvalidInput(f"a counter step must be a non-negative integer, not {n!r}")
    return n


def _tallies_from_json(data: Any, name: str) -> dict[str, int]:
    if not isinstance(data, dict):
        raise InvalidInput(f"pn_counter state: {name} must be an object of replica → count")
    tallies: dict[str, int] = {}
    for replica, count in data.items():
        check_replica(replica)
        if _check_amount(count):
            tallies[replica] = count
    return tallies


class PNCounter:
    """An integer; the sum of every replica's increments minus every replica's decrements."""

    TYPE: ClassVar[str] = "pn_counter"

    def __init__(self) -> None:
        self._p: dict[str, int] = {}
        self._n: dict[str, int] = {}

    # -- typed operations ---------------------------------------------------------------------------------

    def increment(self, replica: str, n: int = 1) -> None:
        check_replica(replica)
        if _check_amount(n):
            self._p[replica] = self._p.get(replica, 0) + n

    def decrement(self, replica: str, n: int = 1) -> None:
        check_replica(replica)
        if _check_amount(n):
            self._n[replica] = self._n.get(replica, 0) + n

    def add(self, replica: str, delta: int) -> None:
        """Increment by a positive ``delta``, decrement by a negative one."""
        if not isinstance(delta, int) or isinstance(delta, bool):
            raise InvalidInput(f"a counter step must be an integer, not {delta!r}")
        if delta >= 0:
            self.increment(replica, delta)
        else:
            self.decrement(replica, -delta)

    # -- the CRDT protocol --------------------------------------------------------------------------------

    def merge(self, other: Self) -> None:
        if not isinstance(other, PNCounter):
            raise InvalidInput(f"cannot merge {type(other).__name__} into {self.TYPE}")
        for mine, theirs in ((self._p, other._p), (self._n, other._n)):
            for replica, count in theirs.items():
                if count > mine.get(replica, 0):
                    mine[replica] = count

    def new_replicas(self, other: Self) -> set[str]:
        """The replicas whose increments or decrements in ``other`` go beyond what this state knows of them."""
        if not isinstance(other, PNCounter):
            raise InvalidInput(f"cannot compare {type(other).__name__} with {self.TYPE}")
        return {
            replica
            for mine, theirs in ((self._p, other._p), (self._n, other._n))
            for replica, count in theirs.items()
            if count > mine.get(replica, 0)
        }

    def to_json(self) -> dict[str, Any]:
        return {"p": dict(sorted(self._p.items())), "n": dict(sorted(self._n.items()))}

    @classmethod
    def from_json(cls, data: Any) -> Self:
        if not isinstance(data, dict) or set(data) != {"p", "n"}:
            raise InvalidInput("pn_counter state must be an object with keys p, n")
        counter = cls()
        counter._p = _tallies_from_json(data["p"], "p")
        counter._n = _tallies_from_json(data["n"], "n")
        return counter

    def copy(self) -> Self:
        twin = type(self)()
        twin._p, twin._n = dict(self._p), dict(self._n)
        return twin

    def value(self) -> int:
        return sum(self._p.values()) - sum(self._n.values())

    def render(self) -> str:
        return f"{self.value()}\n"

    def base(self) -> int:
        """The value read, so that writing an absolute ``N`` adds only the writer's own difference."""
        return self.value()

    def write_text(self, base: Any, text: str, replica: str, timestamp: int | None = None) -> None:
        """``N`` adds ``N - base``; ``+K`` and ``-K`` add ``±K`` (SPEC §5).

        A sign means a step, except that text equal to the value read is a no-op: an editor saving a file it did
        not change (a counter at ``-3`` saved as ``-3``) must not move the counter.
        """
        if not isinstance(base, int) or isinstance(base, bool):
            raise InvalidInput(f"pn_counter base must be the integer that was read, not {base!r}")
        check_replica(replica)
        match = _WRITE.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise InvalidInput(f"pn_counter expects an integer, N, +K or -K, not {text!r}")
        if text.strip() == str(base):
            return
        sign, digits = match.groups()
        try:
            number = int(digits)
        except ValueError as e:  # more digits than int() converts
            raise InvalidInput(f"pn_counter value too long: {len(digits)} digits") from e
        delta = number - base if sign == "" else (number if sign == "+" else -number)
        self.add(replica, delta)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PNCounter):
            return NotImplemented
        return self._p == other._p and self._n == other._n

    def __repr__(self) -> str:
        return f"PNCounter(value={self.value()}, p={self._p!r}, n={self._n!r})"
