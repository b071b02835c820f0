"""A JSON object whose keys are last-writer-wins registers of their own, for settings and configuration.

Taking the whole object as one register would let a writer's untouched keys overwrite another agent's
concurrent change (the known limitation of seed G-2). Here every key has its own write, and a delete is a
write too (a tombstone), so a delete and a set of the same key order like any two writes and never resurrect.
Writes order by ``(timestamp, replica)``, then by content, which makes merge a join on a total order.
"""

from __future__ import annotations

import builtins
import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple, Self

from omxfs.crdt.base import now_ns
from omxfs.crdt.checks import check_replica, check_text, check_timestamp
from omxfs.errors import InvalidInput


class _Write(NamedTuple):
    """The winning write of one key; ``encoded`` is its canonical JSON, ``""`` for a delete."""

    timestamp: int
    replica: str
    live: bool
    encoded: str


def _check_json(value: object) -> None:
    """Only what JSON can carry and UTF-8 can store: the map is rendered as a JSON file."""
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"lww_map values must be finite numbers, not {value!r}")
    elif isinstance(value, str):
        check_text(value, "a lww_map string")
    elif isinstance(value, list):
        for item in value:
            _check_json(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key, "a lww_map object key")
            _check_json(item)
    else:
        raise InvalidInput(f"lww_map values must be JSON values, not {type(value).__name__}")


def _encode(value: object) -> str:
    try:
        _check_json(value)
    except RecursionError as e:
        raise InvalidInput("lww_map value is nested too deeply") from e
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except ValueError as e:  # an integer with more digits than str() converts
        raise InvalidInput(f"lww_map value cannot be written as JSON: {e}") from e


def _reject_constant(name: str) -> Any:
    raise InvalidInput(f"lww_map text must be plain JSON; {name} is not a JSON number")


class LWWMap:
    """A map from string keys to JSON values, last writer wins per key."""

    TYPE: ClassVar[str] = "lww_map"

    def __init__(self) -> None:
        self._writes: dict[str, _Write] = {}

    # -- typed operations ---------------------------------------------------------------------------------

    def set(self, key: str, value: Any, replica: str, timestamp: int | None = None) -> None:
        """Write one key; timestamps work as in ``LWWRegister.set``."""
        check_text(key, "lww_map key")
        encoded = _encode(value)
        self._write(key, replica, timestamp, True, encoded)

    def delete(self, key: str, replica: str, timestamp: int | None = None) -> bool:
        """Write a tombstone for ``key``; returns whether the key was present."""
        check_text(key, "lww_map key")
        present = key in self
        self._write(key, replica, timestamp, False, "")
        return present

    def get(self, key: str, default: Any = None) -> Any:
        write = self._writes.get(key)
        return json.loads(write.encoded) if write is not None and write.live else default

    def __contains__(self, key: object) -> bool:
        write = self._writes.get(key) if isinstance(key, str) else None
        return write is not None and write.live

    def keys(self) -> list[str]:
        return sorted(key for key, write in self._writes.items() if write.live)

    def __len__(self) -> int:
        return sum(write.live for write in self._writes.values())

    def _write(self, key: str, replica: str, timestamp: int | None, live: bool, encoded: str) -> None:
        check_replica(replica)
        current = self._writes.get(key)
        if timestamp is None:
            timestamp = max(now_ns(), current.timestamp + 1 if current is not None else 0)
        else:
            check_timestamp(timestamp)
        self._adopt(key, _Write(timestamp, replica, live, encoded))

    def _adopt(self, key: str, write: _Write) -> None:
        current = self._writes.get(key)
        if current is None or write > current:
            self._writes[key] = write

    # -- the CRDT protocol --------------------------------------------------------------------------------

    def merge(self, other: Self) -> None:
        if not isinstance(other, LWWMap):
            raise InvalidInput(f"cannot merge {type(other).__name__} into {self.TYPE}")
        for key, write in other._writes.items():
            self._adopt(key, write)

    def new_replicas(self, other: Self) -> builtins.set[str]:
        """Who made each of ``other``'s key writes (deletes included) that would win here."""
        if not isinstance(other, LWWMap):
            raise InvalidInput(f"cannot compare {type(other).__name__} with {self.TYPE}")
        news: builtins.set[str] = builtins.set()
        for key, write in other._writes.items():
            current = self._writes.get(key)
            if current is None or write > current:
                news.add(write.replica)
        return news

    def to_json(self) -> dict[str, Any]:
        entries: dict[str, Any] = {}
        for key, write in sorted(self._writes.items()):
            entry: dict[str, Any] = {"timestamp": write.timestamp, "replica": write.replica}
            if write.live:
                entry["value"] = json.loads(write.encoded)
            else:
                entry["deleted"] = True
            entries[key] = entry
        return {"entries": entries}

    @classmethod
    def from_json(cls, data: Any) -> Self:
        if not isinstance(data, dict) or set(data) != {"entries"} or not isinstance(data["entries"], dict):
            raise InvalidInput("lww_map state must be an object with one key, entries, holding an object")
        writes: dict[str, _Write] = {}
        for key, entry in data["entries"].items():
            check_text(key, "lww_map key")
            if not isinstance(entry, dict):
                raise InvalidInput(f"lww_map state: entry {key!r} must be an object")
            if set(entry) == {"timestamp", "replica", "value"}:
                live, encoded = True, _encode(entry["value"])
            elif set(entry) == {"timestamp", "replica", "deleted"} and entry["deleted"] is True:
                live, encoded = False, ""
            else:
                raise InvalidInput(
                    f"lww_map state: entry {key!r} needs timestamp, replica and either value or deleted: true"
                )
            timestamp, replica = check_timestamp(entry["timestamp"]), check_replica(entry["replica"])
            writes[key] = _Write(timestamp, replica, live, encoded)
        lwwmap = cls()
        lwwmap._writes = writes
        return lwwmap

    def copy(self) -> Self:
        twin = type(self)()
        twin._writes = dict(self._writes)
        return twin

    def value(self) -> dict[str, Any]:
        return {key: json.loads(write.encoded) for key, write in sorted(self._writes.items()) if write.live}

    def render(self) -> str:
        return json.dumps(self.value(), sort_keys=True, ensure_ascii=False, indent=2) + "\n"

    def base(self) -> Mapping[str, str]:
        """Each live key read, with its value's canonical JSON: a write touches only the keys it changed."""
        return MappingProxyType({key: write.encoded for key, write in self._writes.items() if write.live})

    def write_text(self, base: Any, text: str, replica: str, timestamp: int | None = None) -> None:
        """Keys new or changed since ``base`` are set, keys of ``base`` left out deleted, others untouched."""
        if not isinstance(base, Mapping):
            raise InvalidInput("lww_map base must be what base() returned")
        if not isinstance(text, str):
            raise InvalidInput(f"lww_map text must be a string, not {type(text).__name__}")
        check_replica(replica)
        if timestamp is not None:
            check_timestamp(timestamp)
        try:
            parsed = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as e:
            raise InvalidInput(f"lww_map text is not valid JSON: {e}") from e
        if not isinstance(parsed, dict):
            raise InvalidInput(f"lww_map text must be a JSON object, not {type(parsed).__name__}")
        changed = {}
        for key, item in parsed.items():
            check_text(key, "lww_map key")
            encoded = _encode(item)
            if base.get(key) != encoded:
                changed[key] = encoded
        for key, encoded in sorted(changed.items()):
            self._write(key, replica, timestamp, True, encoded)
        for key in sorted(set(base) - set(parsed)):
            self._write(key, replica, timestamp, False, "")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LWWMap):
            return NotImplemented
        return self._writes == other._writes

    def __repr__(self) -> str:
        return f"LWWMap({self.value()!r})"
