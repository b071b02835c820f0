"""A set of strings where a concurrent add beats a remove, for members, tags and labels.

Every add creates a tag no other add has, ``(replica, counter)`` as in Yjs ids; a remove tombstones only the
tags its writer saw. An add made concurrently with a remove therefore survives the merge (seed F-4), and a
removed tag never comes back because tombstones are kept for good. The state is the set of live tags plus
the set of tombstones, both of ``(element, replica, counter)``; merge is their union minus the tombstoned.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Self

from omxfs.crdt.checks import check_replica, check_text
from omxfs.errors import InvalidInput

#: who added an element, and that replica's how-many-th add it was
Tag = tuple[str, int]
_Entry = tuple[str, str, int]


def _check_element(element: object) -> str:
    """The file form is one element per line, so an element is one non-blank line."""
    text = check_text(element, "or_set element")
    if not text.strip():
        raise InvalidInput(f"or_set element must not be empty or blank: {element!r}")
    if "\n" in text or "\r" in text:
        raise InvalidInput(f"or_set element must not contain a line break: {text!r}")
    return text


def _entries_from_json(data: Any, name: str) -> set[_Entry]:
    if not isinstance(data, dict):
        raise InvalidInput(f"or_set state: {name} must be an object of element → [[replica, counter], ...]")
    entries: set[_Entry] = set()
    for element, tags in data.items():
        _check_element(element)
        if not isinstance(tags, list) or not tags:
            raise InvalidInput(f"or_set state: {name}[{element!r}] must be a non-empty list of tags")
        for tag in tags:
            if not isinstance(tag, list) or len(tag) != 2:
                raise InvalidInput(f"or_set state: a tag must be [replica, counter], not {tag!r}")
            replica, counter = tag
            check_replica(replica)
            if not isinstance(counter, int) or isinstance(counter, bool) or counter < 1:
                raise InvalidInput(f"or_set state: a tag counter must be a positive integer, not {counter!r}")
            entries.add((element, replica, counter))
    return entries


def _entries_to_json(entries: set[_Entry]) -> dict[str, list[list[str | int]]]:
    grouped: dict[str, list[list[str | int]]] = {}
    for element, replica, counter in sorted(entries):
        grouped.setdefault(element, []).append([replica, counter])
    return grouped


def _observed_tags(base: Any, keep: set[str]) -> set[_Entry]:
    """The tags ``base`` saw for elements not in ``keep``; refuses what ``base()`` cannot have returned."""
    if isinstance(base, Mapping):
        try:
            entries = {(e, r, c) for e, tags in base.items() if e not in keep for r, c in tags}
        except (TypeError, ValueError):
            pass
        else:
            if all(isinstance(e, str) and isinstance(r, str) and isinstance(c, int) for e, r, c in entries):
                return entries
    raise InvalidInput("or_set base must be what base() returned")


class ORSet:
    """An observed-remove, add-wins set of one-line strings."""

    TYPE: ClassVar[str] = "or_set"

    def __init__(self) -> None:
        self._live: set[_Entry] = set()
        self._tombstones: set[_Entry] = set()

    # -- typed operations ---------------------------------------------------------------------------------

    def add(self, element: str, replica: str) -> None:
        """Add under a fresh tag, even when present: that tag outlives removes made elsewhere meanwhile."""
        _check_element(element)
        check_replica(replica)
        counters = [c for _, r, c in self._live | self._tombstones if r == replica]
        self._live.add((element, replica, max(counters, default=0) + 1))

    def remove(self, element: str) -> bool:
        """Tombstone every tag of ``element`` seen here; returns whether it was present."""
        _check_element(element)
        observed = {entry for entry in self._live if entry[0] == element}
        self._tombstone(observed)
        return bool(observed)

    def contains(self, element: str) -> bool:
        return any(entry[0] == element for entry in self._live)

    def __contains__(self, element: object) -> bool:
        return isinstance(element, str) and self.contains(element)

    def elements(self) -> list[str]:
        return sorted({entry[0] for entry in self._live})

    def __len__(self) -> int:
        return len({entry[0] for entry in self._live})

    def _tombstone(self, entries: set[_Entry]) -> None:
        self._live -= entries
        self._tombstones |= entries

    # -- the CRDT protocol --------------------------------------------------------------------------------

    def merge(self, other: Self) -> None:
        if not isinstance(other, ORSet):
            raise InvalidInput(f"cannot merge {type(other).__name__} into {self.TYPE}")
        self._tombstones |= other._tombstones
        self._live = (self._live | other._live) - self._tombstones

    def new_replicas(self, other: Self) -> set[str]:
        """Who made the adds whose tags ``other`` has (live or removed since) and this state has never seen.

        A remove of a tag known here is not attributed: a tombstone does not say who removed it.
        """
        if not isinstance(other, ORSet):
            raise InvalidInput(f"cannot compare {type(other).__name__} with {self.TYPE}")
        known = self._live | self._tombstones
        return {replica for _, replica, _ in (other._live | other._tombstones) - known}

    def to_json(self) -> dict[str, Any]:
        return {"live": _entries_to_json(self._live), "tombstones": _entries_to_json(self._tombstones)}

    @classmethod
    def from_json(cls, data: Any) -> Self:
        if not isinstance(data, dict) or set(data) != {"live", "tombstones"}:
            raise InvalidInput("or_set state must be an object with keys live, tombstones")
        live = _entries_from_json(data["live"], "live")
        tombstones = _entries_from_json(data["tombstones"], "tombstones")
        if live & tombstones:
            raise InvalidInput("or_set state: a tag is both live and tombstoned")
        orset = cls()
        orset._live, orset._tombstones = live, tombstones
        return orset

    def copy(self) -> Self:
        twin = type(self)()
        twin._live, twin._tombstones = set(self._live), set(self._tombstones)
        return twin

    def value(self) -> list[str]:
        return self.elements()

    def render(self) -> str:
        return "".join(f"{element}\n" for element in self.elements())

    def base(self) -> Mapping[str, frozenset[Tag]]:
        """Each element read, with the tags it had then: a later remove tombstones only those."""
        observed: dict[str, set[Tag]] = {}
        for element, replica, counter in self._live:
            observed.setdefault(element, set()).add((replica, counter))
        return MappingProxyType({element: frozenset(tags) for element, tags in observed.items()})

    def write_text(self, base: Any, text: str, replica: str, timestamp: int | None = None) -> None:
        """Lines new since ``base`` are added; elements of ``base`` no longer listed lose the tags read."""
        if not isinstance(text, str):
            raise InvalidInput(f"or_set text must be a string, not {type(text).__name__}")
        check_replica(replica)
        wanted: set[str] = set()
        for line in text.split("\n"):
            line = line.removesuffix("\r")
            if line.strip():
                wanted.add(_check_element(line))
        removed = _observed_tags(base, keep=wanted)
        for element in sorted(wanted - set(base)):
            self.add(element, replica)
        self._tombstone(removed)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ORSet):
            return NotImplemented
        return self._live == other._live and self._tombstones == other._tombstones

    def __repr__(self) -> str:
        return f"ORSet({self.elements()!r})"
