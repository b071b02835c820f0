"""How a field file's text becomes CRDT operations: which base a write is diffed against, and what comes after.

SPEC §5 turns a write into operations against the value *the writer last read*. Through a file system the writer
is an agent and a process, and programs read and write in separate opens: an editor loads a file, and writes it
back with ``O_TRUNC`` (or ``ftruncate``) minutes later, while the agent may have read the field elsewhere since.
So the handler remembers what was observed (``Seen``: reads, and the writer's own writes) twice, per agent and
per process image (pid, start time, exec), in two ``SeenLog`` objects, and ``choose_base`` picks a write's base:

1. a file opened without ``O_TRUNC`` and not truncated to 0 was edited in place: its content at open;
2. else, if the writing process has read the field: the last version that process observed. vim with
   ``backupcopy=yes`` re-reads the file to copy it to ``<field>~`` just before writing its (older) buffer, so a
   last read whose text is exactly that backup's, after an earlier observation, was a copy: the one before it;
3. else (a shell's ``echo > f``, ``cp``: the writer never read it) the agent's last observed version;
4. else the value when the file was opened: a blind write replaces the value.

After a write the writer has seen exactly the text it wrote, and ``written_base`` builds that base, so saving
twice in a row neither applies the first save's edits again nor undoes what others did in between.

Also here: ``StateCache``, the stored states with what readers of each field see, computed once per state. No
pyfuse3.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from itertools import accumulate
from types import MappingProxyType
from typing import Any

from omxfs.crdt import CRDT, Document, LWWMap
from omxfs.crdt.rga import RGABase
from omxfs.crdt.text_diff import Span, diff_spans
from omxfs.errors import InvalidInput, NotFound
from omxfs.fuse.identity import split_image
from omxfs.store.realtime import StateView
from omxfs.store.workspace import Workspace

_ABSOLUTE = re.compile(r"\s*[0-9]+\s*")
_seq = itertools.count(1)


@dataclass(frozen=True)
class Seen:
    """One version of a field that was observed: the text of the file and the CRDT base behind it."""

    text: str
    base: Any
    #: observation order across the whole daemon
    seq: int
    #: observed by reading (False: by writing it)
    read: bool = False

    @classmethod
    def of(cls, text: str, base: Any) -> Seen:
        return cls(text, base, next(_seq))

    @classmethod
    def read_from(cls, crdt: CRDT) -> Seen:
        return cls(crdt.render(), crdt.base(), next(_seq), True)


def decode(data: bytes, what: str) -> str:
    """The text of a write; invalid UTF-8 is refused (SPEC §5) rather than stored as replacement characters."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{what}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def parse_schema(data: bytes, where: str) -> dict[str, Any]:
    """A ``.schema.json``: a JSON object of field → type (the types are checked by ``Document``)."""
    try:
        schema = json.loads(decode(data, where))
    except ValueError as exc:
        raise InvalidInput(f"{where}: not valid JSON: {exc}") from exc
    if not isinstance(schema, dict):
        raise InvalidInput(f'{where}: expected an object such as {{"title": "lww_register"}}')
    return schema


def process_key(pid: int) -> Hashable:
    """One process image: pid, start time and exec (a recycled pid or an exec'd program is another writer)."""
    try:
        with open(f"/proc/{pid}/stat", "rb", buffering=0) as f:
            return (pid, *split_image(f.read(4096)))
    except (OSError, ValueError):
        return (pid,)


def choose_base(process: list[Seen], process_read: bool, agent: list[Seen], backup: str | None, fallback: Seen) -> Seen:
    """Rules 2-4 of the module docstring (rule 1 is the caller's): the base of a rewrite."""
    if process and process_read:
        last = process[-1]
        if backup is not None and last.read and last.text == backup and len(process) > 1:
            return process[-2]
        return last
    return agent[-1] if agent else fallback


# -- what the writer has seen after its write -------------------------------------------------------------------


def written_base(
    field: CRDT, before: Any, used: Seen, text: str, replica: str, spans: list[Span] | None = None
) -> Seen:
    """The writer's view after ``field.write_text(used.base, text, replica)``: the text it wrote, with its base.

    ``before`` is ``field.base()`` just before the write, on the same state. Where the type's base of that exact
    text cannot be derived, the field's state after the write is the fallback (newest read). ``spans``, for an
    rga field, is ``diff_spans(used.text, text)`` if the caller has it already.
    """
    after = field.base()
    derived: Any = None
    if field.TYPE == "lww_register":
        derived = text
    elif field.TYPE == "lww_map":
        fresh = LWWMap()
        fresh.write_text(MappingProxyType({}), text, replica)
        derived = fresh.base()
    elif field.TYPE == "or_set" and isinstance(used.base, Mapping):
        derived = _or_set_written(before, after, used.base, text)
    elif field.TYPE == "rga" and isinstance(before, RGABase) and isinstance(after, RGABase):
        if after.text == text:
            derived = after  # nobody else's edit shows: the ids of what it wrote are the state's
        elif isinstance(used.base, RGABase):
            derived = _rga_written(before, after, used.base, text, replica, spans)
    elif field.TYPE == "pn_counter" and _ABSOLUTE.fullmatch(text):
        derived = int(text)
    if derived is None:
        return Seen.of(field.render(), field.base())
    return Seen.of(text, derived)


def _lines(text: str) -> set[str]:
    """The elements of an or_set's text, as ``ORSet.write_text`` reads them."""
    return {line.removesuffix("\r") for line in text.split("\n") if line.strip()}


def _or_set_written(before: Any, after: Any, used: Mapping[str, Any], text: str) -> Any:
    """Elements kept keep the tags read; elements added carry the tags this write just made."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return None
    view: dict[str, frozenset[Any]] = {}
    for element in _lines(text):
        if element in used:
            view[element] = frozenset(used[element])
        else:
            view[element] = frozenset(after.get(element, frozenset())) - frozenset(before.get(element, frozenset()))
    return MappingProxyType(view)


def _rga_written(
    before: RGABase, after: RGABase, used: RGABase, text: str, replica: str, spans: list[Span] | None
) -> RGABase | None:
    """The ids of ``text`` as the writer has it: the characters it kept from ``used``, then the ones it inserted.

    ``RGA.write_text`` inserts the diff's spans in order, each under consecutive new counters above every
    counter seen so far, so the new characters are exactly those of the state after the write whose counter is
    above all counters before it, and sorting them by counter gives them in the order of the text. Anything
    that does not add up returns None (the caller falls back to the state after the write).
    """
    top = max((c + n - 1 for c, n in zip(before.ctrs, before.lens, strict=True)), default=0)
    fresh: list[tuple[int, int]] = []
    for rep, c, n in zip(after.reps, after.ctrs, after.lens, strict=True):
        if c + n - 1 > top:
            if rep != replica:
                return None
            start = max(c, top + 1)
            fresh.append((start, c + n - start))
    fresh.sort()
    new_ids = [(c + k) for c, n in fresh for k in range(n)]
    starts = list(accumulate(used.lens, initial=0))
    runs: list[list[Any]] = []

    def put(rep: str, ctr: int, n: int) -> None:
        if runs and runs[-1][0] == rep and runs[-1][1] + runs[-1][2] == ctr:
            runs[-1][2] += n
        elif n:
            runs.append([rep, ctr, n])

    def keep(i1: int, i2: int) -> None:  # the used base's characters i1 … i2-1
        j = 0
        while i1 < i2:
            while starts[j + 1] <= i1:
                j += 1
            take = min(starts[j + 1], i2) - i1
            put(used.reps[j], used.ctrs[j] + i1 - starts[j], take)
            i1 += take

    old_at = taken = 0
    for i1, i2, j1, j2 in diff_spans(used.text, text) if spans is None else spans:
        keep(old_at, i1)
        for ctr in new_ids[taken : taken + j2 - j1]:
            put(replica, ctr, 1)
        taken += j2 - j1
        old_at = i2
    keep(old_at, len(used.text))
    if taken != len(new_ids) or sum(r[2] for r in runs) != len(text):
        return None
    return RGABase(text, tuple(r[0] for r in runs), tuple(r[1] for r in runs), tuple(r[2] for r in runs))


# -- the log of what each agent saw -----------------------------------------------------------------------------


class SeenLog:
    """Per key (agent or process image, and field), the last few versions observed; bounded, thread-safe.

    A few versions per key are enough (an editor's load, its own saves and its backup read are what matter);
    the least recently used keys are dropped past ``max_keys``. ``has_read`` stays true once the key has read.
    """

    def __init__(self, per_key: int = 4, max_keys: int = 4096) -> None:
        self._per_key = per_key
        self._max_keys = max_keys
        self._log: OrderedDict[Hashable, tuple[list[Seen], bool]] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, key: Hashable, seen: Seen) -> None:
        with self._lock:
            versions, has_read = self._log.pop(key, ([], False))
            versions = [*versions[-self._per_key + 1 :], seen]
            self._log[key] = (versions, has_read or seen.read)
            while len(self._log) > self._max_keys:
                self._log.popitem(last=False)

    def versions(self, key: Hashable) -> list[Seen]:
        with self._lock:
            return list(self._log.get(key, ((), False))[0])

    def has_read(self, key: Hashable) -> bool:
        with self._lock:
            return self._log.get(key, ((), False))[1]


# -- the open file ---------------------------------------------------------------------------------------------


# -- the stored states, with what their readers see -------------------------------------------------------------


@dataclass
class Cached:
    """One state of a document (``ws.realtime.current``) and, computed once, each field as its readers see it."""

    view: StateView
    seen: dict[str, Seen] = field(default_factory=dict)

    @property
    def doc(self) -> Document:
        return self.view.doc

    @property
    def raw(self) -> bytes:
        """The state's JSON, what ``.crdt_state/<doc>.crdt.json`` reads as."""
        return self.view.raw

    @property
    def mtime_ns(self) -> int:
        return self.view.mtime_ns


class StateCache:
    """The documents' states, asked of the store on every call (so edits by other processes and daemons show at
    once; the store re-reads only files that are new), with the fields' renderings kept while a state is current."""

    def __init__(self, ws: Workspace, size: int = 64) -> None:
        self.ws = ws
        self._size = size
        self._cache: OrderedDict[str, Cached] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, doc: str) -> Cached | None:
        """The document's current state; None if there is no such document (or the name cannot be one)."""
        try:
            view = self.ws.realtime.current(doc)
        except (InvalidInput, NotFound):
            return None
        with self._lock:
            cached = self._cache.get(doc)
            if cached is not None and cached.view is view:
                self._cache.move_to_end(doc)
                return cached
            cached = self._cache[doc] = Cached(view)
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return cached

    def field(self, cached: Cached, name: str) -> Seen:
        """What a reader of the field sees in this state: its text and base, computed once."""
        with self._lock:
            if name not in cached.seen:
                cached.seen[name] = Seen.read_from(cached.doc.field(name))
            return cached.seen[name]
