"""The JSON records the store keeps on disk, as pydantic models so that every read validates them.

They are the store's public format: a person with ``cat`` and ``jq`` reads them, ``omxfs fsck`` checks them.
``provenance`` optionally says what produced a record (for ``omx``: the run id and the step), so a person can
go from any version or delivery back to the step that wrote it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from omxfs.errors import InvalidInput, StoreCorrupt
from omxfs.store.layout import BLOB, HISTORY, STAGED
from omxfs.store.names import AGENT_NAME, relative_path
from omxfs.store.stamps import utc_now as utc_now  # its home before stamps.py: importers keep their line

#: what a record's fields must match, whole (pydantic's patterns search): a record read back is checked, never
#: trusted, and a name in it may end up in a path (a staged name, a delivered file's)
SHA256 = f"^{BLOB.pattern}$"
AGENT = f"^{AGENT_NAME.pattern}$"
STAGED_NAME = f"^{STAGED.pattern}$"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dump_json(data: Any) -> bytes:
    """Pretty, stable JSON for files people read."""
    return (json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False) + "\n").encode("utf-8")


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class VersionEntry(Record):
    """One line of ``history.json``: a commit of a collaborative file."""

    version: int = Field(ge=1)
    author: str
    message: str
    timestamp: str
    sha256: str = Field(pattern=SHA256)
    provenance: dict[str, str] | None = None


class VersionRecord(VersionEntry):
    """``v<N>.json``: version N's entry as its commit created it, and the name its content was staged under.

    Created once, exclusively (the commit point), never changed; ``history.json`` is the list of their entries."""

    staged: str | None = Field(default=None, pattern=STAGED_NAME)  # a name in the file's directory, no path

    def entry(self) -> VersionEntry:
        return VersionEntry.model_validate(self.model_dump(exclude={"staged"}))


def load_version_record(raw: bytes, where: str) -> VersionRecord:
    try:
        return VersionRecord.model_validate(json.loads(raw))
    except (ValueError, TypeError, ValidationError) as exc:
        raise StoreCorrupt(f"{where}: unreadable version entry: {exc}") from exc


def dump_version_record(record: VersionRecord) -> bytes:
    return json.dumps(record.model_dump(exclude_none=True), ensure_ascii=False).encode("utf-8") + b"\n"


class HandoffMeta(Record):
    """``<file>.meta.json`` of a delivery."""

    sender: str = Field(alias="from", pattern=AGENT)
    recipient: str = Field(alias="to", pattern=AGENT)
    filename: str  # the path in its handoff directory, normalized (``names.relative_path``)
    timestamp: str
    message: str
    sha256: str = Field(pattern=SHA256)
    provenance: dict[str, str] | None = None

    @field_validator("filename")
    @classmethod
    def _normalized(cls, value: str) -> str:
        try:
            normal = str(relative_path(value))
        except InvalidInput as exc:
            raise ValueError(exc.message) from None
        if normal != value:
            raise ValueError(f"{value!r} is not a normalized path (it would be {normal!r})")
        return value

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


def load_history(raw: bytes, where: str) -> list[VersionEntry]:
    """Parse and check ``history.json``: every entry valid, versions 1..N in order."""
    return _entries(raw, 1, where)


def _entries(array: bytes, first: int, where: str) -> list[VersionEntry]:
    """The entries of a JSON array of history lines, checked valid and numbered ``first``, ``first + 1``…"""
    try:
        entries = [VersionEntry.model_validate(item) for item in json.loads(array)]
    except (ValueError, TypeError, ValidationError) as exc:
        raise StoreCorrupt(f"{where}: unreadable history: {exc}") from exc
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
    return json.dumps(entry.model_dump(exclude_none=True), ensure_ascii=False).encode("utf-8")


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
        return HandoffMeta.model_validate(json.loads(raw))
    except (ValueError, TypeError, ValidationError) as exc:
        raise StoreCorrupt(f"{where}: unreadable handoff metadata: {exc}") from exc
