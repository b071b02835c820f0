"""A checkpoint's manifest: every entry of a private zone, as data (no I/O here).

An entry is what ``ls -l``, ``stat``, ``readlink`` and ``getfattr`` say of one name in the zone, plus, for a regular
file, the sha256 of its content (the name of its blob) and, for a sparse one, where its data lies. The zone's root
is the entry ``"."``. Entries are kept in walk order (a directory before what it holds), so a restore can build the
tree in one pass. ``ino`` and ``ctime`` are the stat a file had when it was hashed: the next checkpoint of the same
zone takes a file whose stat is unchanged for unchanged, without reading it (git's index, restic's parent snapshot).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from omxfs.errors import StoreCorrupt

FORMAT = 1
#: entry types, as ``stat`` tells them
FILE, DIR, SYMLINK, FIFO, CHAR, BLOCK, SOCKET = "file", "dir", "symlink", "fifo", "char", "block", "socket"
TYPES = (FILE, DIR, SYMLINK, FIFO, CHAR, BLOCK, SOCKET)


@dataclass(frozen=True)
class Entry:
    path: str  # relative to the zone, "." for its root; a name that is no UTF-8 is kept by surrogate escapes
    type: str
    mode: int  # the permission bits with set-ID and sticky (stat.S_IMODE)
    uid: int
    gid: int
    mtime_ns: int
    atime_ns: int = 0
    size: int = 0
    sha256: str = ""  # a regular file's content
    data: tuple[tuple[int, int], ...] | None = None  # a sparse file's data extents (offset, length); None: no hole
    target: str = ""  # a symlink's target, as written
    link: str = ""  # a hard link: the path of the first name of the same file in the zone (which holds the rest)
    rdev: int = 0  # a device node's number
    xattrs: tuple[tuple[str, bytes], ...] = ()  # user.* attributes, sorted by name
    ino: int = 0  # the stat the file was hashed with (see the module docstring)
    ctime_ns: int = 0

    def same_node(self, other: Entry) -> bool:
        """Whether both describe the same thing in the zone: every field a restore sets (not the stat cache's)."""
        return self.key() == other.key() and self.mtime_ns == other.mtime_ns

    def key(self) -> tuple[Any, ...]:
        """Everything but the times and the stat cache: what a diff compares."""
        return (
            self.type,
            self.mode,
            self.uid,
            self.gid,
            self.size,
            self.sha256,
            self.data,
            self.target,
            self.link,
            self.rdev,
            self.xattrs,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "type": self.type, "mode": self.mode}
        out |= {"uid": self.uid, "gid": self.gid, "mtime_ns": self.mtime_ns, "atime_ns": self.atime_ns}
        if not self.link:
            out |= {"ino": self.ino, "ctime_ns": self.ctime_ns}
        if self.type == FILE and not self.link:
            out |= {"size": self.size, "sha256": self.sha256}
            if self.data is not None:
                out["data"] = [list(extent) for extent in self.data]
        for name in ("target", "link", "rdev"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.xattrs:
            out["xattrs"] = {name: base64.b64encode(value).decode("ascii") for name, value in self.xattrs}
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Entry:
        data = raw.get("data")
        xattrs = raw.get("xattrs", {})
        entry = cls(
            path=str(raw["path"]),
            type=str(raw["type"]),
            mode=int(raw["mode"]),
            uid=int(raw["uid"]),
            gid=int(raw["gid"]),
            mtime_ns=int(raw["mtime_ns"]),
            atime_ns=int(raw.get("atime_ns", 0)),
            size=int(raw.get("size", 0)),
            sha256=str(raw.get("sha256", "")),
            data=None if data is None else tuple((int(o), int(n)) for o, n in data),
            target=str(raw.get("target", "")),
            link=str(raw.get("link", "")),
            rdev=int(raw.get("rdev", 0)),
            xattrs=tuple(sorted((str(k), base64.b64decode(v)) for k, v in xattrs.items())),
            ino=int(raw.get("ino", 0)),
            ctime_ns=int(raw.get("ctime_ns", 0)),
        )
        if entry.type not in TYPES:
            raise ValueError(f"unknown entry type {entry.type!r}")
        return entry


@dataclass(frozen=True)
class Manifest:
    """Checkpoint ``number`` of ``zone``: who made it, when, why, and every entry."""

    number: int
    zone: str
    time: str  # UTC, ISO 8601
    message: str
    by: str  # the acting agent
    uid: int  # the process's uid that made it
    parent: int | None  # the checkpoint it was compared with (the zone's latest when it began)
    entries: tuple[Entry, ...]
    changed: int = 0  # entries added, changed or removed since ``parent``
    bytes_added: int = 0  # blob bytes this checkpoint wrote (0 when nothing new)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the restore a checkpoint was made before

    def by_path(self) -> dict[str, Entry]:
        return {entry.path: entry for entry in self.entries}

    def blobs(self) -> set[str]:
        return {e.sha256 for e in self.entries if e.type == FILE and not e.link}

    def summary(self) -> dict[str, Any]:
        """What ``omxfs checkpoints --json`` prints of it."""
        return {
            "id": str(self.number),
            "time": self.time,
            "message": self.message,
            "by": self.by,
            "uid": self.uid,
            "parent": None if self.parent is None else str(self.parent),
            "files_changed": self.changed,
            "bytes_added": self.bytes_added,
            "entries": len(self.entries),
            **self.extra,
        }

    def dump(self) -> bytes:
        head = {
            "format": FORMAT,
            "number": self.number,
            "zone": self.zone,
            "time": self.time,
            "message": self.message,
            "by": self.by,
            "uid": self.uid,
            "parent": self.parent,
            "changed": self.changed,
            "bytes_added": self.bytes_added,
            "extra": self.extra,
        }
        # One entry a line: a manifest of thousands of files stays readable with less and grep.
        lines = [json.dumps(entry.to_json(), separators=(",", ":")) for entry in self.entries]
        body = ",\n".join(lines)
        return (json.dumps(head)[:-1] + ', "entries": [\n' + body + "\n]}\n").encode("utf-8", "surrogateescape")


def load_manifest(raw: bytes, where: str) -> Manifest:
    """A manifest from its file's bytes; StoreCorrupt naming ``where`` if it is not one."""
    try:
        data = json.loads(raw.decode("utf-8", "surrogateescape"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a checkpoint manifest of format {FORMAT}")
        parent = data.get("parent")
        return Manifest(
            number=int(data["number"]),
            zone=str(data["zone"]),
            time=str(data["time"]),
            message=str(data["message"]),
            by=str(data["by"]),
            uid=int(data["uid"]),
            parent=None if parent is None else int(parent),
            entries=tuple(Entry.from_json(e) for e in data["entries"]),
            changed=int(data.get("changed", 0)),
            bytes_added=int(data.get("bytes_added", 0)),
            extra=dict(data.get("extra", {})),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StoreCorrupt(f"{where}: {exc}") from None
