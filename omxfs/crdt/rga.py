"""Collaborative text: a replicated growable array (RGA) of characters, fast enough for real editing traces.

The CRDT. Every character ever inserted is an element with an id ``(replica, counter)`` (as in Yjs) and an
*origin*, the id of the character left of it when it was typed (``None``: the start). Counters are Lamport
clocks: a new element's counter is one more than the highest this state has seen, so it exceeds its origin's.
Deleting only flags an element (a tombstone), and tombstones stay, so positions anchored on them survive.
The order is classic RGA: an element sits right after its origin, and siblings (same origin) go by
``(counter, replica)``, highest first. To integrate an element, scan right from its origin, skip every element
greater than it, stop at the first smaller one; since descendants are greater than their ancestors, that skips
exactly the subtrees of greater siblings. A state is the set of elements with their deleted flags; the order
follows from it, so merge (union, a tombstone wins) is commutative, associative and idempotent.

The structure. Characters typed in one go are one *item* (a run: consecutive counters of one replica, each
origin the previous one) with its text, or ``""`` and a length once deleted; typing at the end of a run extends
it in place and deleting splits it (a deleted piece joins the tombstone of its run next to it, so backspacing
leaves one tombstone). How items are stored and found, by position or by id, is ``rga_blocks.RunBlocks``.
Python's own objects and loops are the cost here, so the hot paths (``insert``, ``delete``, ``_locate``,
``_kill``) are written flat, with few calls.

The JSON form lists maximal runs in document order with replica names in a table, tombstones by length only;
see ``rga_state``, which also checks, in one pass, that a loaded state is in the order RGA would give it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, ClassVar, Self

from omxfs.crdt.checks import check_int, check_replica, check_text
from omxfs.crdt.rga_blocks import GROUP_BITS, RunBlocks
from omxfs.crdt.rga_state import Run, decode, encode, ends
from omxfs.crdt.text_diff import Span, diff_spans
from omxfs.errors import InvalidInput

#: items per block before it splits: small enough that a scan or ``list.insert`` inside one is cheap, large
#: enough that skipping blocks by their visible length is cheap too
_BLOCK_MAX = 64

Id = tuple[str, int]


@dataclass(frozen=True, slots=True)
class RGABase:
    """What a reader saw: the text, and the ids of its characters as runs ``(reps[i], ctrs[i]…, lens[i])``."""

    text: str
    reps: tuple[str, ...]
    ctrs: tuple[int, ...]
    lens: tuple[int, ...]


class RGA(RunBlocks):
    """A text field many replicas edit at once (seed E-1…E-7); see the module docstring."""

    TYPE: ClassVar[str] = "rga"

    def __init__(self) -> None:
        super().__init__()
        self._max = 0  # the highest counter seen: the Lamport clock
        self._text: str | None = ""
        self._base: RGABase | None = None

    # -- typed operations ---------------------------------------------------------------------------------

    def insert(self, position: int, text: str, replica: str) -> None:
        """Insert ``text`` before visible position ``position`` (clamped into ``[0, len]``)."""
        if (
            type(position) is not int
            or type(text) is not str
            or not text.isascii()
            or type(replica) is not str
            or not replica
        ):
            check_int(position, "position")  # the slow checks, for the error (or a subclass, which is fine)
            check_text(text, "text")
            check_replica(replica)
        m = len(text)
        if not m:
            return
        pos = 0 if position < 0 else min(position, self._len)
        self._local_edit()
        c = self._max + 1
        self._max += m
        # a new element is greater than every other, so it goes right after its origin, before any tombstones
        if pos == 0:
            self._blocks[0].insert(0, Run(replica, c, m, None, 0, text))
            cb = self._cb = self._ci = self._cp = self._cbp = 0
        else:
            cb, ci, cp = self._locate(pos - 1)
            blk = self._blocks[cb]
            it = blk[ci]
            k = pos - cp
            if k < it.n:
                blk.insert(ci + 1, self._split(it, k))
            elif it.ctr + k == c and it.rep == replica:  # typing on at the end of our own latest run
                it.text += text
                it.n += m
                k = 0
            if k:
                blk.insert(ci + 1, Run(replica, c, m, it.rep, it.ctr + k - 1, text))
                self._ci, self._cp = ci + 1, pos
        self._bvis[cb] += m
        self._gvis[cb >> GROUP_BITS] += m
        self._len += m
        if len(self._blocks[cb]) > _BLOCK_MAX:
            self._split_block(cb)

    def delete(self, start: int, end: int) -> int:
        """Delete the visible range ``[start, end)`` (clamped); returns how many characters were deleted."""
        if type(start) is not int or type(end) is not int:
            check_int(start, "start")
            check_int(end, "end")
        if start < 0:
            start = 0
        if end > self._len:
            end = self._len
        if end <= start:
            return 0
        self._local_edit()
        cb, ci, cp = self._locate(start)
        cb0, cbp = cb, self._cbp
        blk, k, left = self._blocks[cb], start - cp, end - start
        while True:
            it = blk[ci]
            if it.text:
                d = min(it.n - k, left)
                ci = self._kill(blk, ci, k, d)
                self._bvis[cb] -= d
                self._gvis[cb >> GROUP_BITS] -= d
                left -= d
                if not left:
                    break
                k = 0
            ci += 1
            while ci == len(blk):
                cb, ci = cb + 1, 0
                blk = self._blocks[cb]
        self._len -= end - start
        # the item holding the last deleted character now sits at visible position ``start``
        self._cb, self._ci, self._cp = cb, ci, start
        self._cbp = cbp if cb == cb0 else start
        if len(blk) > _BLOCK_MAX or cb != cb0:
            for b in range(cb, cb0 - 1, -1):  # splits added items; backwards keeps the indices valid
                if len(self._blocks[b]) > _BLOCK_MAX:
                    self._split_block(b)
        return end - start

    def replace(self, start: int, end: int, text: str, replica: str) -> None:
        """Replace the visible range ``[start, end)`` (clamped) with ``text``."""
        check_text(text, "text")
        check_replica(replica)
        start = max(check_int(start, "start"), 0)
        self.delete(start, end)
        self.insert(start, text, replica)

    def text(self) -> str:
        if self._text is None:
            self._text = "".join([it.text for blk in self._blocks for it in blk])
        return self._text

    def __len__(self) -> int:
        return self._len

    # -- the CRDT protocol --------------------------------------------------------------------------------

    def merge(self, other: Self) -> None:
        """Integrate the runs of ``other`` this state lacks, in counter order, and take its tombstones."""
        if not isinstance(other, RGA):
            raise InvalidInput(f"cannot merge {type(other).__name__} into {self.TYPE}")
        if other is self:
            return
        if len(self._blocks) == 1 and not self._blocks[0]:  # nothing here yet: a copy is much faster
            self._load(other._cloned_blocks(), other._max)
            return
        self._ensure_index()
        kills: list[tuple[str, int, int]] = []
        missing: list[tuple[int, str, int, str | None, int, str]] = []
        for blk in other._blocks:
            for it in blk:
                rep, c, n = it.rep, it.ctr, it.n
                # an element's origin is in every state holding it, so we hold a prefix of each run of other
                have = self._held(rep, c, n)
                if have and not it.text:
                    kills.append((rep, c, have))
                if have < n:
                    if self._holds_any(rep, c + have, c + n):
                        raise InvalidInput(f"cannot merge: the states disagree about ({rep!r}, {c + have})")
                    orep, octr = (rep, c + have - 1) if have else (it.orep, it.octr)
                    missing.append((c + have, rep, n - have, orep, octr, it.text[have:]))
        for rep, c, n in kills:
            self._kill_ids(rep, c, n)
        missing.sort()  # origins have lower counters, so each run's origin is in place before it
        for c, rep, n, orep, octr, text in missing:
            self._integrate(rep, c, n, orep, octr, text)
        self._max = max(self._max, other._max)
        self._id_edit()

    def to_json(self) -> dict[str, Any]:
        """The maximal runs in document order; see ``rga_state.encode``."""
        return encode(self._maximal_runs())

    @classmethod
    def from_json(cls, data: Any) -> Self:
        items = decode(data)
        rga = cls()
        half = _BLOCK_MAX // 2
        rga._load([items[i : i + half] for i in range(0, len(items), half)], max(ends(items), default=0))
        return rga

    def copy(self) -> Self:
        twin = type(self)()
        twin._load(self._cloned_blocks(), self._max)
        twin._text, twin._base = self._text, self._base  # immutable, and of the same state
        return twin

    def new_replicas(self, other: Self) -> set[str]:
        """The replicas of the elements ``other`` has and this state lacks; deletions are not attributed."""
        if not isinstance(other, RGA):
            raise InvalidInput(f"cannot compare {type(other).__name__} with {self.TYPE}")
        self._ensure_index()
        return {it.rep for blk in other._blocks for it in blk if self._held(it.rep, it.ctr, it.n) < it.n}

    def value(self) -> str:
        return self.text()

    def render(self) -> str:
        return self.text()

    def base(self) -> RGABase:
        """The text and its characters' ids, as runs; cached until the next change (reads are frequent)."""
        if self._base is None:
            reps: list[str] = []
            ctrs: list[int] = []
            lens: list[int] = []
            end, last = -1, ""  # the counter after the last run's, and its replica
            for blk in self._blocks:
                for it in blk:
                    if not it.text:
                        continue
                    if it.ctr == end and it.rep == last:
                        lens[-1] += it.n
                    else:
                        last = it.rep
                        reps.append(last)
                        ctrs.append(it.ctr)
                        lens.append(it.n)
                    end = it.ctr + it.n
            self._base = RGABase(self.text(), tuple(reps), tuple(ctrs), tuple(lens))
        return self._base

    def write_text(
        self, base: Any, text: str, replica: str, timestamp: int | None = None, *, spans: list[Span] | None = None
    ) -> None:
        """Diff ``base`` → ``text`` and apply it to the current state, anchored on the characters read.

        Deletions remove the very characters the writer saw; insertions go right after the character read
        left of them. So whatever others did meanwhile (inserted, deleted) is kept. ``timestamp`` is unused:
        text merges by position, not by time. ``spans`` is ``diff_spans(base.text, text)`` computed beforehand,
        so that a caller can diff outside whatever it holds while the state is changed.
        """
        if not isinstance(base, RGABase):
            raise InvalidInput("rga base must be what base() returned")
        check_text(text, "text")
        check_replica(replica)
        if sum(base.lens) != len(base.text) or not len(base.reps) == len(base.ctrs) == len(base.lens):
            raise InvalidInput("rga base is inconsistent")
        if spans is None:
            spans = diff_spans(base.text, text)
        if not spans:
            return
        self._ensure_index()
        starts = list(accumulate(base.lens, initial=0))
        kills: list[tuple[str, int, int]] = []
        inserts: list[tuple[Id | None, str]] = []
        for i1, i2, j1, j2 in spans:
            kills.extend(_base_ids(base, starts, i1, i2))
            if j2 > j1:
                origin = next(_base_ids(base, starts, i1 - 1, i1))[:2] if i1 else None
                inserts.append((origin, text[j1:j2]))
        # check every id first, so a base from elsewhere fails before anything changed
        for rep, c, n in kills:
            if self._held(rep, c, n) < n:
                raise InvalidInput("rga base refers to characters this state does not have")
        for origin, _ in inserts:
            if origin is not None and not self._held(*origin, 1):
                raise InvalidInput("rga base refers to characters this state does not have")
        for rep, c, n in kills:
            self._kill_ids(rep, c, n)
        for origin, chunk in inserts:
            c = self._max + 1
            self._max += len(chunk)
            orep, octr = origin if origin is not None else (None, 0)
            self._integrate(replica, c, len(chunk), orep, octr, chunk)
        self._id_edit()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RGA):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        text = self.text()
        return f"RGA({text[:40]!r}{'…' if len(text) > 40 else ''}, len={self._len})"

    # -- positions --------------------------------------------------------------------------------------

    def _local_edit(self) -> None:
        """A positional edit is coming: drop caches, and the id index rather than pay to keep it."""
        self._text = None
        self._base = None
        self._index = None
        self._bpos = None

    def _id_edit(self) -> None:
        """An edit by ids happened: the cursor may point anywhere, so restart it at the beginning."""
        self._text = None
        self._base = None
        self._cb = self._ci = self._cp = self._cbp = 0

    def _load(self, blocks: list[list[Run]], max_counter: int) -> None:
        """Take these blocks as the whole state (and forget the cursor, caches and index of any other)."""
        self._blocks = blocks or [[]]
        self._bvis = [sum(len(it.text) for it in blk) for blk in self._blocks]
        self._regroup()
        self._len = sum(self._bvis)
        self._max = max_counter
        self._cb = self._ci = self._cp = self._cbp = 0
        self._index = self._bpos = None
        self._text = self._base = None

    def _kill_ids(self, rep: str, c: int, n: int) -> None:
        """Delete elements ``(rep, c) … (rep, c + n - 1)``, all held here, wherever they are now."""
        end = c + n
        while c < end:
            it = self._find(rep, c)
            assert it is not None
            d = min(it.ctr + it.n, end) - c
            if it.text:
                cb, ci = self._where(it)
                self._kill(it.blk, ci, c - it.ctr, d)
                self._bvis[cb] -= d
                self._gvis[cb >> GROUP_BITS] -= d
                self._len -= d
                if len(self._blocks[cb]) > _BLOCK_MAX:
                    self._split_block(cb)
            c += d

    def _integrate(self, rep: str, c: int, n: int, orep: str | None, octr: int, text: str) -> None:
        """Place a run this state lacks by the RGA rule: after its origin, skipping every greater element."""
        cb, ci, scan = 0, 0, True
        if orep is not None:
            o = self._find(orep, octr)
            assert o is not None
            cb, ci = self._where(o)
            ci += 1
            k = octr - o.ctr + 1
            # the rest of o's run is greater than us iff its first element is, and then we skip it all
            if k < o.n and (c > o.ctr + k or (c == o.ctr + k and rep > o.rep)):
                o.blk.insert(ci, self._split(o, k))
                scan = False
        if scan:
            blk = self._blocks[cb]
            while True:
                if ci == len(blk):
                    if cb + 1 == len(self._blocks):
                        break
                    cb, ci = cb + 1, 0
                    blk = self._blocks[cb]
                    continue
                x = blk[ci]
                if x.ctr < c or (x.ctr == c and x.rep < rep):
                    break
                ci += 1
        blk = self._blocks[cb]
        prev = blk[ci - 1] if ci else None
        if (
            prev is not None
            and prev.rep == rep
            and prev.ctr + prev.n == c
            and orep == rep
            and octr == c - 1
            and (bool(prev.text) == bool(text))
        ):
            prev.text += text
            prev.n += n
        else:
            it = Run(rep, c, n, orep, octr, text)
            blk.insert(ci, it)
            self._ix_add(it, blk)
        self._bvis[cb] += len(text)
        self._gvis[cb >> GROUP_BITS] += len(text)
        self._len += len(text)
        if len(blk) > _BLOCK_MAX:
            self._split_block(cb)


# -- decoding ----------------------------------------------------------------------------------------------


def _base_ids(base: RGABase, starts: list[int], i1: int, i2: int) -> Iterator[tuple[str, int, int]]:
    """The ids of the base's characters ``i1 … i2-1``, as ``(replica, counter, count)`` runs."""
    j = bisect_right(starts, i1) - 1
    while i1 < i2:
        take = min(starts[j + 1], i2) - i1
        yield base.reps[j], base.ctrs[j] + i1 - starts[j], take
        i1 += take
        j += 1
