"""A single text value where the last writer wins, for fields such as a title or a status.

Concurrent writes cannot both be kept in one string, so one must win and every replica must pick the same
one: the write with the higher timestamp, and on equal timestamps the higher replica name (SPEC §5, seed D-3).
Ordering whole writes by ``(timestamp, replica, value)`` makes merge a join on a total order, hence
commutative, associative and idempotent even when one replica wrote twice with the same timestamp.
"""

from __future__ import annotations

import builtins
from typing import Any, ClassVar, Self

from omxfs.crdt.base import now_ns
from omxfs.crdt.checks import check_replica, check_text, check_timestamp
from omxfs.errors import InvalidInput


class LWWRegister:
    """A string register; never set, it reads as ``""``."""

    TYPE: ClassVar[str] = "lww_register"

    def __init__(self) -> None:
        self._value = ""
        self._timestamp = 0
        self._replica = ""

    # -- typed operations ---------------------------------------------------------------------------------

    def set(self, value: str, replica: str, timestamp: int | None = None) -> None:
        """Write ``value`` as ``replica``.

        Without a timestamp the write is stamped after both the clock and the write it replaces, so a local
        set always beats what it observed even if the clock lags. With an explicit timestamp the write is
        merged like a remote one: it takes effect only if it orders after the current write.
        """
        check_text(value, "lww_register value")
        check_replica(replica)
        if timestamp is None:
            timestamp = max(now_ns(), self._timestamp + 1)
        else:
            check_timestamp(timestamp)
        self._adopt(timestamp, replica, value)

    @property
    def timestamp(self) -> int:
        return self._timestamp

    @property
    def replica(self) -> str:
        """Who made the winning write; ``""`` when never set."""
        return self._replica

    def _key(self) -> tuple[int, str, str]:
        return (self._timestamp, self._replica, self._value)

    def _adopt(self, timestamp: int, replica: str, value: str) -> None:
        if (timestamp, replica, value) > self._key():
            self._timestamp, self._replica, self._value = timestamp, replica, value

    # -- the CRDT protocol --------------------------------------------------------------------------------

    def merge(self, other: Self) -> None:
        if not isinstance(other, LWWRegister):
            raise InvalidInput(f"cannot merge {type(other).__name__} into {self.TYPE}")
        self._adopt(other._timestamp, other._replica, other._value)

    def new_replicas(self, other: Self) -> builtins.set[str]:
        """Who made ``other``'s write, if it is one that would win here (see ``CRDT.new_replicas``)."""
        if not isinstance(other, LWWRegister):
            raise InvalidInput(f"cannot compare {type(other).__name__} with {self.TYPE}")
        return {other._replica} if other._key() > self._key() else set()

    def to_json(self) -> dict[str, Any]:
        return {"value": self._value, "timestamp": self._timestamp, "replica": self._replica}

    @classmethod
    def from_json(cls, data: Any) -> Self:
        if not isinstance(data, dict) or set(data) != {"value", "timestamp", "replica"}:
            raise InvalidInput("lww_register state must be an object with keys value, timestamp, replica")
        value, timestamp, replica = data["value"], data["timestamp"], data["replica"]
        check_text(value, "lww_register value")
        check_timestamp(timestamp)
        if replica == "":
            if timestamp != 0 or value != "":
                raise InvalidInput("lww_register state: a write needs a replica")
        else:
            check_replica(replica)
        register = cls()
        register._value, register._timestamp, register._replica = value, timestamp, replica
        return register

    def copy(self) -> Self:
        twin = type(self)()
        twin._value, twin._timestamp, twin._replica = self._value, self._timestamp, self._replica
        return twin

    def value(self) -> str:
        return self._value

    def render(self) -> str:
        return self._value

    def base(self) -> str:
        """The value read; a register's write replaces the whole value, so the base is not needed."""
        return self._value

    def write_text(self, base: Any, text: str, replica: str, timestamp: int | None = None) -> None:
        self.set(text, replica, timestamp)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LWWRegister):
            return NotImplemented
        return self._key() == other._key()

    def __repr__(self) -> str:
        return f"LWWRegister(value={self._value!r}, timestamp={self._timestamp}, replica={self._replica!r})"
