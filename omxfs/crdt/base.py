"""What every CRDT field type offers, so that documents, the store and the mount treat them alike.

A type is state-based: ``merge`` takes another replica's whole state and is commutative, associative and
idempotent. Its JSON form is canonical (equal states give equal JSON), so replicas are compared by it.

Besides the typed operations of each class (``RGA.insert``, ``ORSet.add``…), every type can be edited as a
file: ``render`` gives the file's text and ``write_text`` turns a new full text into operations against the
``base`` the writer read earlier. Working from the writer's base, not from the current state, is what lets two
agents who read the same value and write different changes both keep their edits (SPEC §5).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Protocol, Self, runtime_checkable


def now_ns() -> int:
    """Wall-clock timestamp for last-writer-wins ordering."""
    return time.time_ns()


@runtime_checkable
class CRDT(Protocol):
    #: the name used in schemas and state files: "lww_register", "rga", "or_set", "lww_map", "pn_counter"
    TYPE: ClassVar[str]

    def merge(self, other: Self) -> None:
        """Fold another replica's state into this one, in place."""

    def to_json(self) -> Any:
        """The whole state as JSON-serialisable data; canonical: equal states give equal data."""

    @classmethod
    def from_json(cls, data: Any) -> Self:
        """Rebuild a state; malformed data raises ``InvalidInput`` and never yields a half-built state."""

    def copy(self) -> Self:
        """An independent replica with the same state."""

    def new_replicas(self, other: Self) -> set[str]:
        """The replicas that made the operations ``other`` has and this state lacks (who would be the author of
        what merging ``other`` adds), so that a state from elsewhere can be checked before it is merged.

        Removals that the type does not attribute (RGA and OR-set tombstones, which record what was removed,
        not who removed it) are not operations of anyone here: they cannot be attributed.
        """

    def value(self) -> Any:
        """The plain value: str, sorted list of str, dict, or int."""

    def render(self) -> str:
        """The value as the text of the field's file (SPEC §5, read column)."""

    def base(self) -> Any:
        """An opaque, immutable record of what a reader saw, to be passed back to ``write_text``."""

    def write_text(self, base: Any, text: str, replica: str, timestamp: int | None = None) -> None:
        """Apply a new full text as operations against ``base`` (SPEC §5, write column).

        Raises ``InvalidInput`` on text the type cannot parse, and then changes nothing.
        """
