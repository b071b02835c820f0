"""The JSON records the store keeps on disk, checked field by field whenever one is made or read back.

They are the store's public format: a person with ``cat`` and ``jq`` reads them, ``omxfs fsck`` checks them.
``provenance`` optionally says what produced a record (for ``omx``: the run id and the step), so a person can
go from any version or delivery back to the step that wrote it.

Each is a ``PlainRecord`` (compared, hashed and shown by its fields, as a frozen dataclass) whose construction
checks every field (``InvalidInput`` naming it); ``from_json`` takes a record read back, a JSON object with exactly
its keys. They are plain classes rather than pydantic models or dataclasses: the commands that read them (``omxfs
status``, ``log``) would otherwise spend most of their time loading pydantic, or ``dataclasses`` and ``inspect``.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, Self

from omxfs.errors import InvalidInput, StoreCorrupt
from omxfs.plain_record import PlainRecord
from omxfs.store.layout import BLOB, HISTORY, STAGED
from omxfs.store.names import AGENT_NAME, relative_path
from omxfs.store.stamps import utc_now as utc_now  # its home before stamps.py: importers keep their line


def sha256(data: bytes) -> str:
    import hashlib  # here: the commands that only read records load none of OpenSSL

    return hashlib.sha256(data).hexdigest()


def dump_json(data: Any) -> bytes:
    """Pretty, stable JSON for files people read."""
    return (json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False) + "\n").encode("utf-8")


def _text(name: str, value: object, pattern: re.Pattern[str] | None = None) -> None:
    """A field that must be a string (matching ``pattern`` whole): a record read back is checked, never trusted,
    and a name in it may end up in a path (a staged name, a delivered file's)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name}: Input should be a valid string, not {type(value).__name__}")
    if pattern is not None and pattern.fullmatch(value) is None:
        raise InvalidInput(f"{name}: String should match pattern '^{pattern.pattern}$', not {value[:80]!r}")


def _provenance(value: object) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise InvalidInput(f"provenance: Input should be an object of strings, not {type(value).__name__}")
    for key, text in value.items():
        _text("provenance key", key)
        _text(f"provenance.{key}", text)


class Record(PlainRecord):
    """A record of the store: its fields checked when made (``check``, called by each class's ``__init__`` once every
    field is set), and read back from JSON (``from_json``)."""

    __slots__ = ()

    #: each field's key in the JSON, where it is not the field's name
    KEYS: ClassVar[dict[str, str]] = {}
    #: the fields a JSON object may leave out (they default to None)
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    def check(self) -> None:
        """Raise ``InvalidInput`` naming the first field that does not fit."""

    @classmethod
    def from_json(cls, data: object) -> Self:
        """The record a JSON object holds: exactly its keys (those with a default may be left out), each checked;
        ``InvalidInput`` otherwise."""
        if not isinstance(data, dict):
            raise InvalidInput(f"Input should be an object, not {type(data).__name__}")
        keys = {cls.KEYS.get(name, name): name for name in cls.FIELDS}
        extra = [key for key in data if key not in keys]
        if extra:
            raise InvalidInput(f"{extra[0]}: Extra inputs are not permitted")
        missing = [key for key, name in keys.items() if key not in data and name not in cls.OPTIONAL]
        if missing:
            raise InvalidInput(f"{missing[0]}: Field required")
        return cls(**{keys[key]: value for key, value in data.items()})

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the record, fields in order, those that are None left out (a dict copied)."""
        return {
            self.KEYS.get(name, name): dict(value) if isinstance(value, dict) else value
            for name, value in zip(self.FIELDS, self.values(), strict=True)
            if value is not None
        }


class VersionEntry(Record):
    """One line of ``history.json``: a commit of a collaborative file."""

    __slots__ = ("author", "message", "provenance", "sha256", "timestamp", "version")
    FIELDS: ClassVar[tuple[str, ...]] = ("version", "author", "message", "timestamp", "sha256", "provenance")
    OPTIONAL: ClassVar[tuple[str, ...]] = ("provenance",)

    def __init__(
        self,
        version: int,
        author: str,
        message: str,
        timestamp: str,
        sha256: str,
        provenance: dict[str, str] | None = None,
    ) -> None:
        self.version, self.author, self.message, self.timestamp = version, author, message, timestamp
        self.sha256, self.provenance = sha256, provenance
        self.check()

    def check(self) -> None:
        if not isinstance(self.version, int) or isinstance(self.version, bool):
            raise InvalidInput(f"version: Input should be a valid integer, not {type(self.version).__name__}")
        if self.version < 1:
            raise InvalidInput(f"version: Input should be greater than or equal to 1, not {self.version}")
        for name in ("author", "message", "timestamp"):
            _text(name, getattr(self, name))
        _text("sha256", self.sha256, BLOB)
        _provenance(self.provenance)

    def staged_as(self, staged: str) -> VersionRecord:
        """The version's record, its content staged under ``staged``."""
        provenance = None if self.provenance is None else dict(self.provenance)
        return VersionRecord(self.version, self.author, self.message, self.timestamp, self.sha256, provenance, staged)


class VersionRecord(VersionEntry):
    """``v<N>.json``: version N's entry as its commit created it, and the name its content was staged under.

    Created once, exclusively (the commit point), never changed; ``history.json`` is the list of their entries."""

    __slots__ = ("staged",)
    FIELDS: ClassVar[tuple[str, ...]] = (*VersionEntry.FIELDS, "staged")
    OPTIONAL: ClassVar[tuple[str, ...]] = (*VersionEntry.OPTIONAL, "staged")

    def __init__(
        self,
        version: int,
        author: str,
        message: str,
        timestamp: str,
        sha256: str,
        provenance: dict[str, str] | None = None,
        staged: str | None = None,  # a name in the file's directory, no path
    ) -> None:
        self.staged = staged  # before the entry's fields: setting them checks the whole record
        super().__init__(version, author, message, timestamp, sha256, provenance)

    def check(self) -> None:
        super().check()
        if self.staged is not None:
            _text("staged", self.staged, STAGED)

    def entry(self) -> VersionEntry:
        return VersionEntry(**{name: getattr(self, name) for name in VersionEntry.FIELDS})


def load_version_record(raw: bytes, where: str) -> VersionRecord:
    try:
        return VersionRecord.from_json(json.loads(raw))
    except (ValueError, InvalidInput) as exc:
        raise StoreCorrupt(f"{where}: unreadable version entry: {_said(exc)}") from exc


def dump_version_record(record: VersionRecord) -> bytes:
    return json.dumps(record.to_json(), ensure_ascii=False).encode("utf-8") + b"\n"


class HandoffMeta(Record):
    """``<file>.meta.json`` of a delivery."""

    __slots__ = ("filename", "message", "provenance", "recipient", "sender", "sha256", "timestamp")
    FIELDS: ClassVar[tuple[str, ...]] = (
        "sender",
        "recipient",
        "filename",
        "timestamp",
        "message",
        "sha256",
        "provenance",
    )
    OPTIONAL: ClassVar[tuple[str, ...]] = ("provenance",)
    KEYS: ClassVar[dict[str, str]] = {"sender": "from", "recipient": "to"}

    def __init__(
        self,
        sender: str,
        recipient: str,
        filename: str,  # the path in its handoff directory, normalized (``names.relative_path``)
        timestamp: str,
        message: str,
        sha256: str,
        provenance: dict[str, str] | None = None,
    ) -> None:
        self.sender, self.recipient, self.filename = sender, recipient, filename
        self.timestamp, self.message, self.sha256, self.provenance = timestamp, message, sha256, provenance
        self.check()

    def check(self) -> None:
        _text("from", self.sender, AGENT_NAME)
        _text("to", self.recipient, AGENT_NAME)
        _text("filename", self.filename)
        try:
            normal = str(relative_path(self.filename))
        except InvalidInput as exc:
            raise InvalidInput(f"filename: {exc.message}") from None
        if normal != self.filename:
            raise InvalidInput(f"filename: {self.filename!r} is not a normalized path (it would be {normal!r})")
        for name in ("timestamp", "message"):
            _text(name, getattr(self, name))
        _text("sha256", self.sha256, BLOB)
        _provenance(self.provenance)


def _said(exc: Exception) -> str:
    return exc.message if isinstance(exc, InvalidInput) else str(exc)


def load_history(raw: bytes, where: str) -> list[VersionEntry]:
    """Parse and check ``history.json``: every entry valid, versions 1..N in order."""
    return _entries(raw, 1, where)


def _entries(array: bytes, first: int, where: str) -> list[VersionEntry]:
    """The entries of a JSON array of history lines, checked valid and numbered ``first``, ``first + 1``…"""
    try:
        items = json.loads(array)
        if not isinstance(items, list):
            raise InvalidInput(f"Input should be a list of entries, not {type(items).__name__}")
        entries = [VersionEntry.from_json(item) for item in items]
    except (ValueError, InvalidInput) as exc:
        raise StoreCorrupt(f"{where}: unreadable history: {_said(exc)}") from exc
    for expected, entry in enumerate(entries, start=first):
        if entry.version != expected:
            raise StoreCorrupt(f"{where}: history has version {entry.version} where {expected} belongs")
    return entries


def extend_history(
    raw: bytes, known_raw: bytes, known: tuple[VersionEntry, ...], where: str
) -> tuple[VersionEntry, ...]:
    """``load_history(raw)``, parsing only what was appended to ``known_raw`` (whose entries are ``known``).

    Commits only ever append (``append_history``), so a history read again is mostly one already parsed: parsing
    it whole made every commit cost O(versions). Anything that is not a pure append is parsed from scratch."""
    stem = known_raw[:-3]
    if not (
        known and known_raw.endswith(b"\n]\n") and raw.startswith(stem) and raw[len(stem) : len(stem) + 2] == b",\n"
    ):
        return tuple(load_history(raw, where))
    return (*known, *_entries(b"[" + raw[len(stem) + 1 :], len(known) + 1, where))


def _history_line(entry: VersionEntry) -> bytes:
    return json.dumps(entry.to_json(), ensure_ascii=False).encode("utf-8")


def dump_history(entries: list[VersionEntry]) -> bytes:
    """A JSON array with one entry per line: valid JSON for tools, one line per version for grep and diff."""
    return b"[\n" + b",\n".join(_history_line(e) for e in entries) + b"\n]\n" if entries else b"[]\n"


def append_history(raw: bytes, entry: VersionEntry) -> bytes:
    """``raw`` (as ``dump_history`` wrote it) with one more entry, without re-serialising the others."""
    if raw.endswith(b"\n]\n") and raw.startswith(b"[\n"):
        return raw[:-3] + b",\n" + _history_line(entry) + b"\n]\n"
    return dump_history([*load_history(raw, HISTORY), entry])


def load_handoff_meta(raw: bytes, where: str) -> HandoffMeta:
    try:
        return HandoffMeta.from_json(json.loads(raw))
    except (ValueError, InvalidInput) as exc:
        raise StoreCorrupt(f"{where}: unreadable handoff metadata: {_said(exc)}") from exc
