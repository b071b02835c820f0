"""The JSON form of an RGA state, and the run that both the form and the in-memory structure are made of.

A state is its maximal runs in document order with the replica names in a table; a tombstone keeps only its
length (a deleted character is never shown again, so its text is not needed to converge). Decoding checks
everything, including that the runs are in the order RGA itself would give them, so a state that loads is one
that ``RGA`` could have produced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import pairwise
from typing import Any

from omxfs.crdt.checks import check_replica, check_text
from omxfs.errors import InvalidInput

MAX_COUNTER = 2**53  # JSON numbers beyond this lose precision elsewhere


class Run:
    """A run of ``n`` elements ``(rep, ctr) … (rep, ctr + n - 1)``, the first one's origin ``(orep, octr)``."""

    __slots__ = ("blk", "ctr", "n", "octr", "orep", "rep", "text")

    def __init__(self, rep: str, ctr: int, n: int, orep: str | None, octr: int, text: str) -> None:
        self.rep = rep
        self.ctr = ctr
        self.n = n
        self.orep = orep  # None: the start of the text (octr is then 0)
        self.octr = octr
        self.text = text  # the run's characters, or "" once deleted (a tombstone)
        self.blk: list[Run]  # the block holding it; only kept up to date while the id index exists

    def continues(self, prev: Run) -> bool:
        """Whether this run could be the tail of ``prev``: next counters, and its origin is ``prev``'s last."""
        return (
            self.rep == prev.rep
            and self.ctr == prev.ctr + prev.n
            and self.octr == self.ctr - 1
            and self.orep == prev.rep
        )


def encode(runs_in_order: Iterable[Run]) -> dict[str, Any]:
    """``{"reps": [replica, ...], "runs": [run, ...]}``, the maximal runs in document order.

    A run is ``[payload]`` when it continues the previous run (next counter, origin its last element; only
    the deleted flag differs), ``[payload, rep, ctr]`` when its origin is the element just before it (or
    the start, for the first run), else ``[payload, rep, ctr, orep, octr]``, or ``[payload, rep, ctr,
    null]`` for the start. ``rep``/``orep`` index ``reps`` (in order of first appearance); the payload is
    the text, or for a tombstone its length.
    """
    reps: dict[str, int] = {}
    runs: list[list[Any]] = []
    prev: Run | None = None  # the last run written, as an item
    for cur in runs_in_order:
        payload: str | int = cur.text or cur.n
        ri = reps.setdefault(cur.rep, len(reps))
        implied = (prev.rep, prev.ctr + prev.n - 1) if prev is not None else (None, 0)
        if prev is not None and cur.continues(prev):
            runs.append([payload])
        elif (cur.orep, cur.octr) == implied:
            runs.append([payload, ri, cur.ctr])
        elif cur.orep is None:
            runs.append([payload, ri, cur.ctr, None])
        else:
            runs.append([payload, ri, cur.ctr, reps[cur.orep], cur.octr])
        prev = cur
    return {"reps": list(reps), "runs": runs}


def decode(data: Any) -> list[Run]:
    """The runs of a state in document order, fully checked: malformed data raises ``InvalidInput``."""
    if not isinstance(data, dict) or set(data) != {"reps", "runs"}:
        raise InvalidInput("rga state must be an object with keys reps, runs")
    reps, runs = data["reps"], data["runs"]
    if not isinstance(reps, list) or not isinstance(runs, list):
        raise InvalidInput("rga state: reps and runs must be lists")
    for rep in reps:
        check_replica(rep)
    if len(set(reps)) != len(reps):
        raise InvalidInput("rga state: reps lists a replica twice")
    items = _decode_runs(runs, reps)
    _check_ids_unique(items)
    _check_order(items)
    return items


def ends(items: list[Run]) -> Iterator[int]:
    return (it.ctr + it.n - 1 for it in items)


def _decode_runs(runs: list[Any], reps: list[str]) -> list[Run]:
    items: list[Run] = []
    prev: Run | None = None
    for run in runs:
        if not isinstance(run, list) or len(run) not in (1, 3, 4, 5):
            raise InvalidInput(f"rga state: a run must be a list of 1, 3, 4 or 5 values, not {run!r}")
        text, n = _decode_payload(run[0])
        orep: str | None
        if len(run) == 1:
            if prev is None:
                raise InvalidInput("rga state: the first run cannot continue a previous one")
            rep, ctr = prev.rep, prev.ctr + prev.n
            orep, octr = rep, ctr - 1
        else:
            rep, ctr = _decode_rep(run[1], reps), _decode_counter(run[2])
            if len(run) == 3:
                orep, octr = (prev.rep, prev.ctr + prev.n - 1) if prev is not None else (None, 0)
            elif len(run) == 4:
                if run[3] is not None:
                    raise InvalidInput(f"rga state: a 4-value run must end in null (the start), not {run!r}")
                orep, octr = None, 0
            else:
                orep, octr = _decode_rep(run[3], reps), _decode_counter(run[4])
        if ctr + n - 1 > MAX_COUNTER:
            raise InvalidInput(f"rga state: counters must stay below {MAX_COUNTER}")
        prev = Run(rep, ctr, n, orep, octr, text)
        items.append(prev)
    return items


def _decode_payload(payload: object) -> tuple[str, int]:
    if isinstance(payload, str) and payload:
        return check_text(payload, "rga state: a run's text"), len(payload)
    if isinstance(payload, int) and not isinstance(payload, bool) and 0 < payload <= MAX_COUNTER:
        return "", payload
    raise InvalidInput(f"rga state: a run holds a non-empty text or a positive length, not {payload!r}")


def _decode_rep(value: object, reps: list[str]) -> str:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < len(reps):
        raise InvalidInput(f"rga state: {value!r} is not an index into reps")
    return reps[value]


def _decode_counter(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_COUNTER:
        raise InvalidInput(f"rga state: a counter must be a positive integer, not {value!r}")
    return value


def _check_ids_unique(items: list[Run]) -> None:
    ranges = sorted((it.rep, it.ctr, it.ctr + it.n) for it in items)
    for (rep, _, end), (next_rep, start, _) in pairwise(ranges):
        if rep == next_rep and start < end:
            raise InvalidInput(f"rga state: the id ({rep!r}, {start}) occurs twice")


def _check_order(items: list[Run]) -> None:
    """Check that the runs are in RGA order: a pre-order walk of the origin tree, siblings descending.

    ``path`` holds the elements from the start to the previous one, as ``[rep, first, last]`` chains. An
    element's origin must be on that path (else it is unknown, or not before it); the element of the path
    just after the origin is then its previous sibling, which must be greater.
    """
    path: list[list[Any]] = []
    for it in items:
        key = (it.ctr, it.rep)
        sibling: tuple[int, str] | None = None
        if it.orep is None:
            if path:
                sibling = (path[0][1], path[0][0])
            path.clear()
        else:
            above: list[Any] | None = None
            while path and not (path[-1][0] == it.orep and path[-1][1] <= it.octr <= path[-1][2]):
                above = path.pop()
            if not path:
                raise InvalidInput(f"rga state: origin ({it.orep!r}, {it.octr}) is unknown or not before its run")
            top = path[-1]
            if it.octr < top[2]:
                sibling = (it.octr + 1, top[0])
                top[2] = it.octr
            elif above is not None:
                sibling = (above[1], above[0])
            if it.ctr <= it.octr:
                raise InvalidInput(f"rga state: ({it.rep!r}, {it.ctr}) has a counter not above its origin's")
        if sibling is not None and sibling < key:
            raise InvalidInput(f"rga state: ({it.rep!r}, {it.ctr}) is out of order")
        path.append([it.rep, it.ctr, it.ctr + it.n - 1])
