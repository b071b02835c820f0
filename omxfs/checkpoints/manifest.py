"""A checkpoint's manifest: every entry of a private zone, as data (no I/O here).

An entry is what ``ls -l``, ``stat``, ``readlink`` and ``getfattr`` say of one name in the zone, plus, for a regular
file, the sha256 of its content (the name of its blob) and, for a sparse one, where its data lies. The zone's root
is the entry ``"."``. Entries are kept in walk order (a directory before what it holds), so a restore can build the
tree in one pass. ``ino`` and ``ctime`` are the stat a file had when it was hashed: the next checkpoint of the same
zone takes a file whose stat is unchanged for unchanged, without reading it (git's index, restic's parent snapshot).

A manifest file is JSON with one entry a line. Each entry keeps the line it was read from or last written as
(``Entry.json_line``), so a checkpoint that reuses its parent's entries encodes only the changed ones; a manifest of
any other JSON layout (written by hand or by a tool) is read whole.

A checkpoint's file may hold only what differs from an earlier one written whole, its *base* (format 2): the
entries that are not the base's and the paths the base has and it lacks. A zone of thousands of files has a
manifest of megabytes and most checkpoints change a few entries: writing it whole each time cost more than all the
rest of an incremental checkpoint but the walk, and filled the store (1.5 MB for each view start of a 5,000-entry
zone). One level only: a base is always written whole, so reading a checkpoint reads at most two files. The deltas
of successive checkpoints grow as the zone drifts from their base; once one would hold more than ``LARGEST_DELTA``
of the entries, the checkpoint is written whole and is the next one's base.

A manifest's file is checked whole before any use (``entries_from_json``, ``check_head``, ``check_tree``): anyone
with write access to the store could have changed it, and a blob name or a path in it is data, never a path to
follow; one that is not what this module writes is ``StoreCorrupt``, which ``omxfs fsck`` reports.
"""

from __future__ import annotations

import bisect
import functools
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from stat import S_IFREG

from omxfs.checkpoints.records import (
    ID_MAX,
    agent,
    all_blob_names,
    all_zone_paths,
    entry_attributes,
    entry_extents,
    entry_problem,
    integer,
    shown,
    text,
    zone_path,
)
from omxfs.errors import StoreCorrupt
from omxfs.plain_record import PlainRecord

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
#: a checkpoint written as what differs from its base (``Manifest.base``); a reader of format 1 only refuses it
DELTA_FORMAT = 2
#: the formats a reader takes
FORMATS = (FORMAT, DELTA_FORMAT)
#: a delta holding more than this share of the checkpoint's entries is written whole instead
LARGEST_DELTA = 0.25
#: 2: a directory's stat is taken before it is listed, so a name added meanwhile moves the ctime recorded and the
#: next scan lists it again; a manifest of scan 1 (stat after listing) has no listing a scan may reuse
SCAN = 2
#: a directory's children as a scan recorded them: (name, is a directory), in walk order
Listing = tuple[tuple[str, bool], ...]
#: what a regular file's lstat says when it is the one an entry recorded: (inode, ctime, mtime, size, st_mode, atime,
#: uid, gid, link count); a scan takes the entry for such a file without reading it
StatKey = tuple[int, int, int, int, int, int, int, int, int]
#: entry types, as ``stat`` tells them
FILE, DIR, SYMLINK, FIFO, CHAR, BLOCK, SOCKET = "file", "dir", "symlink", "fifo", "char", "block", "socket"
TYPES = (FILE, DIR, SYMLINK, FIFO, CHAR, BLOCK, SOCKET)


class Entry(PlainRecord):
    """One name of the zone. Its attributes live in its ``__dict__`` (no slots), beside what it caches
    (``json_line``)."""

    FIELDS = (
        "path",
        "type",
        "mode",
        "uid",
        "gid",
        "mtime_ns",
        "atime_ns",
        "size",
        "sha256",
        "data",
        "target",
        "link",
        "rdev",
        "xattrs",
        "ino",
        "ctime_ns",
    )

    def __init__(
        self,
        path: str,
        type: str,
        mode: int,
        uid: int,
        gid: int,
        mtime_ns: int,
        atime_ns: int = 0,
        size: int = 0,
        sha256: str = "",
        data: tuple[tuple[int, int], ...] | None = None,
        target: str = "",
        link: str = "",
        rdev: int = 0,
        xattrs: tuple[tuple[str, bytes], ...] = (),
        ino: int = 0,
        ctime_ns: int = 0,
    ) -> None:
        self.path = path  # relative to the zone, "." for its root; a name that is no UTF-8 is kept by surrogate escapes
        self.type = type
        self.mode = mode  # the permission bits with set-ID and sticky (stat.S_IMODE)
        self.uid = uid
        self.gid = gid
        self.mtime_ns = mtime_ns
        self.atime_ns = atime_ns
        self.size = size
        self.sha256 = sha256  # a regular file's content
        self.data = data  # a sparse file's data extents (offset, length); None: no hole
        self.target = target  # a symlink's target, as written
        self.link = link  # a hard link: the path of the first name of the same file in the zone (which holds the rest)
        self.rdev = rdev  # a device node's number
        self.xattrs = xattrs  # user.* attributes, sorted by name
        self.ino = ino  # the stat the file was hashed with (see the module docstring)
        self.ctime_ns = ctime_ns

    @functools.cached_property
    def json_line(self) -> str:
        """The entry as its manifest line: computed once per entry (a checkpoint reuses the unchanged entries of
        its parent, so it encodes only what changed). Kept in the instance, never a field: not compared, not
        copied by ``replace``."""
        return _ENCODER.encode(self.to_json())

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
            import base64  # only where a file has attributes

            out["xattrs"] = {name: base64.b64encode(value).decode("ascii") for name, value in self.xattrs}
        return out

    @classmethod
    def from_json(cls, raw: Any) -> Entry:
        """The entry a manifest holds as ``raw``, every field checked (``entries_from_json``)."""
        return entries_from_json([raw])[0]


def entries_from_json(parsed: Sequence[Any]) -> list[Entry]:
    """The entries a manifest holds as ``parsed``, every field checked first: a path relative and normalized, a
    known type, a mode within 0o7777, owners, sizes and times integers, a file's blob name 64 lowercase hex digits,
    a hard link's other name a path, a symlink's target a string (data, never followed), attributes ``user.*``;
    StoreCorrupt naming the first bad entry and field otherwise. A manifest's first read makes thousands: each
    entry's numbers and types are a few C-level tests, the names and blob names of all are checked at once, each
    kind joined into one string (``records.all_zone_paths``, ``all_blob_names``)."""
    entries: list[Entry] = []
    names: list[str] = []  # every path but the root's, and every link
    digests: list[str] = []
    add, add_name, add_digest = entries.append, names.append, digests.append
    for raw in parsed:
        try:
            path, kind, mode, uid, gid = raw["path"], raw["type"], raw["mode"], raw["uid"], raw["gid"]
            mtime_ns = raw["mtime_ns"]
            get = raw.get
        except (KeyError, TypeError):
            raise StoreCorrupt(entry_problem(raw) or "not an entry") from None
        atime_ns, size, sha256 = get("atime_ns", 0), get("size", 0), get("sha256", "")
        data, target, link, rdev = get("data"), get("target", ""), get("link", ""), get("rdev", 0)
        xattrs, ino, ctime_ns = get("xattrs"), get("ino", 0), get("ctime_ns", 0)
        if not (
            type(mode) is int
            and type(uid) is int
            and type(gid) is int
            and type(size) is int
            and type(rdev) is int
            and type(ino) is int
            and type(mtime_ns) is int
            and type(atime_ns) is int
            and type(ctime_ns) is int
            and 0 <= mode <= 0o7777
            and (uid | gid | size | rdev | ino) >= 0
            and uid <= ID_MAX
            and gid <= ID_MAX
            and type(kind) is str
            and kind in _TYPES
            and type(path) is str
            and (path != "." or kind == DIR)
            and type(link) is str
            and type(target) is str
            and "\0" not in target
            and (type(sha256) is str and len(sha256) == 64 if kind == FILE and not link else sha256 == "")
        ):
            raise StoreCorrupt(entry_problem(raw) or "not an entry")
        if path != ".":
            add_name(path)
        if link:
            add_name(link)
        if sha256:
            add_digest(sha256)
        add(
            new_entry(
                path,
                kind,
                mode,
                uid,
                gid,
                mtime_ns,
                atime_ns,
                size,
                sha256,
                None if data is None else entry_extents(data, path),
                target,
                link,
                rdev,
                () if not xattrs else entry_attributes(xattrs, path),
                ino,
                ctime_ns,
            )
        )
    if not (all_zone_paths(names) and all_blob_names(digests)):
        for raw in parsed:  # which one: the slow way, once
            problem = entry_problem(raw)
            if problem is not None:
                raise StoreCorrupt(problem)
        raise StoreCorrupt("an entry names no relative, normalized path or no blob")  # each test above is one there
    return entries


_TYPES = frozenset(TYPES)


_new_object = object.__new__


def new_entry(
    path: str,
    kind: str,
    mode: int,
    uid: int,
    gid: int,
    mtime_ns: int,
    atime_ns: int,
    size: int,
    sha256: str,
    data: tuple[tuple[int, int], ...] | None,
    target: str,
    link: str,
    rdev: int,
    xattrs: tuple[tuple[str, bytes], ...],
    ino: int,
    ctime_ns: int,
) -> Entry:
    """``Entry(...)`` with every field given in order, its ``__dict__`` filled in one call rather than one
    assignment per field: a scan or a manifest load makes thousands of them. The result is an ordinary ``Entry``,
    equal to the one the constructor makes."""
    entry = _new_object(Entry)
    entry.__dict__.update(
        path=path,
        type=kind,
        mode=mode,
        uid=uid,
        gid=gid,
        mtime_ns=mtime_ns,
        atime_ns=atime_ns,
        size=size,
        sha256=sha256,
        data=data,
        target=target,
        link=link,
        rdev=rdev,
        xattrs=xattrs,
        ino=ino,
        ctime_ns=ctime_ns,
    )
    return entry


#: the files of one directory a scan may take unread: their ``StatKey`` and entry, by name
DirCache = dict[str, tuple[StatKey, Entry]]
#: every directory's ``DirCache``, by the directory's path ("." for the root): a scan looks a file up by the name
#: its listing gives, without making its path first
StatCache = dict[str, DirCache]


#: one encoder for every entry of a dump (json.dumps makes a new one per call)
_ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False)


class Manifest(PlainRecord):
    """Checkpoint ``number`` of ``zone``: who made it, when, why, and every entry. What it computes once (its
    entries by path, its stat cache) it keeps in its ``__dict__``, beside its fields."""

    FIELDS = (
        "number",
        "zone",
        "time",
        "message",
        "by",
        "uid",
        "parent",
        "entries",
        "changed",
        "bytes_added",
        "extra",
        "scan",
        "base",
    )
    __hash__ = None  # type: ignore[assignment]  # its extra is a dict: no hash, as the frozen dataclass it was

    def __init__(
        self,
        number: int,
        zone: str,
        time: str,
        message: str,
        by: str,
        uid: int,
        parent: int | None,
        entries: tuple[Entry, ...],
        changed: int = 0,
        bytes_added: int = 0,
        extra: dict[str, Any] | None = None,
        scan: int = SCAN,
        base: int | None = None,
    ) -> None:
        self.number = number
        self.zone = zone
        self.time = time  # UTC, ISO 8601
        self.message = message
        self.by = by  # the acting agent
        self.uid = uid  # the process's uid that made it
        self.parent = parent  # the checkpoint it was compared with (the zone's latest when it began)
        self.entries = entries
        self.changed = changed  # entries added, changed or removed since ``parent``
        self.bytes_added = bytes_added  # blob bytes this checkpoint wrote (0 when nothing new)
        self.extra: dict[str, Any] = {} if extra is None else extra  # e.g. the restore a checkpoint was made before
        self.scan = scan  # how the scan that made it took each directory's stat (``SCAN``)
        self.base = base  # the checkpoint its file is written against (a delta, ``as_delta``); None: whole

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths a checkpoint of some paths only vouches for (``ZoneHistory.make_paths``, before a restore of
        them); () for a checkpoint of the whole zone. Its other entries are its parent's."""
        return tuple(self.extra.get("paths", ()))

    def by_path(self) -> dict[str, Entry]:
        return dict(self._by_path)

    def by_path_view(self) -> Mapping[str, Entry]:
        """``by_path`` without the copy, for a reader (a diff, a scan's stat cache)."""
        return self._by_path

    def entry(self, path: str) -> Entry | None:
        return self._by_path.get(path)

    @functools.cached_property
    def _by_path(self) -> dict[str, Entry]:
        # computed once per manifest (a restore and a diff ask several times); by_path hands out copies
        return {entry.path: entry for entry in self.entries}

    @functools.cached_property
    def listings(self) -> dict[str, Listing]:
        """Each directory's children, as the scan that made this manifest listed them (``scan_zone`` reuses the
        listing of a directory whose stat is unchanged). Read-only: shared by every scan made on this manifest.
        None (empty) from a manifest of an earlier scan, whose directory stats were taken after their listings."""
        return listings_of(self.entries) if self.scan >= SCAN else {}

    @functools.cached_property
    def linked(self) -> tuple[Entry, ...]:
        """The entries that are a second name of a file (``link``): few, and looked at without a pass over all."""
        return tuple(entry for entry in self.entries if entry.link)

    @functools.cached_property
    def stat_cache(self) -> StatCache:
        """The files a scan made on this manifest may take unread: their ``StatKey`` and entry, by directory and
        name. Read-only: shared by every scan made on this manifest (and by the next manifest, for the directories
        where nothing changed)."""
        return stat_cache(self.entries)

    def blobs(self) -> set[str]:
        return set(self._blobs)

    @functools.cached_property
    def _blobs(self) -> frozenset[str]:
        return frozenset(e.sha256 for e in self.entries if e.type == FILE and not e.link)

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

    def numbered(self, number: int) -> Manifest:
        """The same checkpoint as number ``number`` (another writer took this one), written as this one is."""
        other = self.replace(number=number)
        for kept in ("delta", "base_manifest"):
            if kept in self.__dict__:
                other.__dict__[kept] = self.__dict__[kept]
        return other

    def dump(self) -> bytes:
        return b"".join(self.dump_parts())

    def dump_parts(self) -> list[bytes]:
        """``dump`` in pieces to be written one after the other (``os.writev``): a manifest of thousands of entries
        is megabytes, and each copy of it made only to join the pieces cost half a millisecond (most of it the page
        faults of fresh memory): 2 to 3 ms of a checkpoint of 25 ms."""
        head: dict[str, Any] = {
            "format": FORMAT if self.base is None else DELTA_FORMAT,
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
            "scan": self.scan,
        }
        entries: Iterable[Entry] = self.entries
        if self.base is not None:
            delta: Delta = self.__dict__["delta"]
            head |= {"base": self.base, "count": len(self.entries), "removed": list(delta.removed)}
            entries = delta.changed
        # One entry a line: a manifest of thousands of files stays readable with less and grep.
        body = ",\n".join([entry.json_line for entry in entries])
        return [
            (json.dumps(head)[:-1] + _ENTRIES).encode("utf-8", "surrogateescape"),
            body.encode("utf-8", "surrogateescape"),
            _END.encode("utf-8"),
        ]


def walk_key(path: str) -> tuple[str, ...]:
    """Where ``path`` comes in walk order (a directory's names sorted, each directory before what it holds): the
    order of these keys."""
    return () if path == "." else tuple(path.split("/"))


def within(path: str, rel: str) -> bool:
    """Whether ``path`` is ``rel`` or below it."""
    return path == rel or path.startswith(rel + "/")


class Delta:
    """What a checkpoint written against a base holds (``DELTA_FORMAT``)."""

    __slots__ = ("changed", "removed")

    def __init__(self, changed: tuple[Entry, ...], removed: tuple[str, ...]) -> None:
        self.changed = changed  # the entries that are not the base's own (changed or added), in walk order
        self.removed = removed  # the base's paths the checkpoint lacks, in walk order


def as_delta(manifest: Manifest, base: Manifest) -> Manifest:
    """``manifest`` to be written against ``base`` (a checkpoint written whole); itself where that would hold more
    than ``LARGEST_DELTA`` of its entries. An entry the base holds unchanged is the base's very entry (a scan hands
    it back, a load of a delta keeps it), so one ``is`` tells it; an equal copy only makes the delta larger."""
    entries = manifest.entries
    limit = int(len(entries) * LARGEST_DELTA)
    get = base.by_path_view().get
    changed = []
    added = 0
    for entry in entries:
        held = get(entry.path)
        if held is entry:
            continue
        changed.append(entry)
        added += held is None
        if len(changed) > limit:
            return manifest
    removed: tuple[str, ...] = ()
    if len(entries) - added != len(base.entries):  # the base has paths the checkpoint lacks
        present = {entry.path for entry in entries}
        removed = tuple(entry.path for entry in base.entries if entry.path not in present)
        if len(changed) + len(removed) > limit:
            return manifest
    written = manifest.replace(base=base.number)
    written.__dict__.update(delta=Delta(tuple(changed), removed), base_manifest=base)
    return written


def whole(manifest: Manifest) -> Manifest:
    """``manifest`` to be written whole."""
    return manifest if manifest.base is None else manifest.replace(base=None)


def apply_delta(base: Sequence[Entry], changed: Sequence[Entry], removed: Collection[str]) -> list[Entry]:
    """The entries of a checkpoint written as ``changed`` and ``removed`` against ``base``, in walk order."""
    replacing = {entry.path: entry for entry in changed}
    gone = set(removed)
    entries = [replacing.pop(entry.path, entry) for entry in base if entry.path not in gone]
    if not replacing:
        return entries
    # the added paths, each put where walk order has it (few, most of the time: one search each)
    out: list[Entry] = []
    start = 0
    for entry in sorted(replacing.values(), key=lambda e: walk_key(e.path)):
        at = bisect.bisect_left(entries, walk_key(entry.path), lo=start, key=lambda e: walk_key(e.path))
        out += entries[start:at]
        out.append(entry)
        start = at
    return out + entries[start:]


def stat_key(entry: Entry) -> StatKey | None:
    """The ``StatKey`` a file must show to be taken as ``entry`` unread; None if no stat may stand for it: not a
    regular file, a second name (a hard-linked file is read to find its other names: the key's link count is 1)
    or a stat not trusted (ctime 0: racy)."""
    if entry.type != FILE or entry.link or not entry.ctime_ns:
        return None
    e = entry
    return (e.ino, e.ctime_ns, e.mtime_ns, e.size, S_IFREG | e.mode, e.atime_ns, e.uid, e.gid, 1)


def stat_cache(entries: Iterable[Entry]) -> StatCache:
    """Each regular file of ``entries`` that a scan may take unread (``stat_key``), by directory and name."""
    found: StatCache = {}
    for entry in entries:
        key = stat_key(entry)
        if key is not None:
            parent, _, name = entry.path.rpartition("/")
            found.setdefault(parent or ".", {})[name] = (key, entry)
    return found


def listings_of(entries: Iterable[Entry]) -> dict[str, Listing]:
    """Each directory's children in ``entries`` (in walk order, so each directory's in its listing's order)."""
    found: dict[str, list[tuple[str, bool]]] = {}
    for entry in entries:
        path = entry.path
        if entry.type == DIR:
            found[path] = []
        if path != ".":
            parent, _, name = path.rpartition("/")
            children = found.get(parent or ".")
            if children is not None:
                children.append((name, entry.type == DIR))
    return {path: tuple(children) for path, children in found.items()}


#: what a dump puts around its entries, one a line (a JSON string holds no raw newline: no entry can contain these)
_ENTRIES = ', "entries": [\n'
_END = "\n]}\n"


def _entries_by_line(text: str) -> tuple[dict[str, Any], list[Entry]] | None:
    """The head and entries of a manifest laid out as ``dump`` writes it, each entry keeping its own line (a
    checkpoint made on this one rewrites only the lines that changed); None for another layout. The entries are
    parsed in one call, not one a line: that was half the time of a new process's first read of a manifest."""
    cut = text.find(_ENTRIES)
    if cut == -1 or not text.endswith(_END):
        return None
    try:
        head = json.loads(text[:cut] + "}")
        body = text[cut + len(_ENTRIES) : -len(_END)]
        lines = body.split(",\n") if body else []
        parsed = json.loads("[" + body + "]")
        if len(parsed) != len(lines):
            return None
        entries = entries_from_json(parsed)
        for entry, line in zip(entries, lines, strict=True):
            entry.__dict__["json_line"] = line
    except ValueError:
        return None  # read whole, which says what is wrong
    return head, entries


def load_head(raw: bytes, where: str) -> dict[str, Any]:
    """What a manifest's file says of the checkpoint (number, time, message, who, ...), every field checked, without
    its entries, which are not read; StoreCorrupt naming ``where`` if it is not a manifest."""
    text = raw.decode("utf-8", "surrogateescape")
    cut = text.find(_ENTRIES)
    try:
        head = json.loads(text[:cut] + "}") if cut != -1 else json.loads(text)
        if type(head) is dict:
            head.pop("entries", None)
        return check_head(head)
    except (ValueError, StoreCorrupt) as exc:
        raise StoreCorrupt(f"{where}: {exc}") from None


def check_head(data: Any) -> dict[str, Any]:
    """``data``, a manifest's head, if every field is what ``Manifest.dump_parts`` writes; StoreCorrupt naming the
    field otherwise. The paths a checkpoint of paths vouches for, and those a delta removes, are paths in the zone;
    a delta's base is an earlier checkpoint."""
    if type(data) is not dict or type(data.get("format")) is not int or data["format"] not in FORMATS:
        raise StoreCorrupt(f"not a checkpoint manifest of format {FORMAT} or {DELTA_FORMAT}")
    number = integer(data.get("number"), "number", least=1)
    agent(data.get("zone"), "zone")
    for name in ("time", "message", "by"):
        text(data.get(name), name)
    integer(data.get("uid"), "uid")
    if data.get("parent") is not None:
        integer(data["parent"], "parent", least=1)
    integer(data.get("changed", 0), "changed")
    integer(data.get("bytes_added", 0), "bytes_added")
    integer(data.get("scan", 1), "scan", least=1)
    extra = data.get("extra", {})
    if type(extra) is not dict:
        raise StoreCorrupt(f"extra: {shown(extra)} is no JSON object")
    _paths(extra.get("paths", []), "extra: paths")
    if data["format"] == DELTA_FORMAT:
        integer(data.get("base"), "base", least=1, most=number - 1)
        integer(data.get("count"), "count")
        _paths(data.get("removed"), "removed")
    return data


def _paths(value: Any, where: str) -> None:
    if type(value) is not list:
        raise StoreCorrupt(f"{where}: {shown(value)} is no list of paths")
    for path in value:
        zone_path(path, where)


def check_tree(entries: Sequence[Entry]) -> dict[str, Entry]:
    """``entries`` by path if they are a tree in walk order, as a scan makes them: the zone's root first, each other
    entry below a directory entry before it, no path twice; StoreCorrupt otherwise. A restore that makes them one
    after the other then never meets a name it did not make as a directory (a symlink, a file) on its way."""
    if not entries or entries[0].path != ".":
        raise StoreCorrupt("its first entry is not the zone's root")
    directories = {"."}
    add = directories.add
    for entry in entries[1:]:
        path = entry.path
        if (path.rpartition("/")[0] or ".") not in directories:
            raise StoreCorrupt(f"entry {shown(path)}: not below a directory entry before it")
        if entry.type == DIR:
            add(path)
    by_path = {entry.path: entry for entry in entries}
    if len(by_path) != len(entries):
        raise StoreCorrupt("a path has two entries")
    return by_path


def load_manifest(raw: bytes, where: str, base_of: Callable[[int], Manifest] | None = None) -> Manifest:
    """A manifest from its file's bytes, every field of its head and entries checked (``Entry.from_json``,
    ``check_head``, ``check_tree``); StoreCorrupt naming ``where`` and the field if it is not one. ``base_of``: the
    checkpoint a delta is written against, by number (its entries are the base's with the delta's over them)."""
    try:
        text = raw.decode("utf-8", "surrogateescape")
        split = _entries_by_line(text)
        if split is not None:
            data, entries = split
        else:  # written by hand or by another tool: any JSON layout of the same content
            data = json.loads(text)
            if type(data) is not dict or type(data.get("entries")) is not list:
                raise ValueError("not a checkpoint manifest")
            entries = entries_from_json(data.pop("entries"))
        check_head(data)
    except (ValueError, StoreCorrupt) as exc:
        raise StoreCorrupt(f"{where}: {exc}") from None
    delta: Delta | None = None
    base: Manifest | None = None
    if data["format"] == DELTA_FORMAT:
        delta = Delta(tuple(entries), tuple(data["removed"]))
        if base_of is None:
            raise StoreCorrupt(f"{where}: written against checkpoint {data['base']}, which was not read")
        base = base_of(data["base"])
        entries = apply_delta(base.entries, delta.changed, delta.removed)
        if len(entries) != data["count"]:
            raise StoreCorrupt(f"{where}: {len(entries)} entries against checkpoint {base.number}, not {data['count']}")
    try:
        by_path = check_tree(entries)
    except StoreCorrupt as exc:
        raise StoreCorrupt(f"{where}: {exc}") from None
    parent = data.get("parent")
    manifest = Manifest(
        number=data["number"],
        zone=data["zone"],
        time=data["time"],
        message=data["message"],
        by=data["by"],
        uid=data["uid"],
        parent=parent,
        entries=tuple(entries),
        changed=data.get("changed", 0),
        bytes_added=data.get("bytes_added", 0),
        extra=dict(data.get("extra", {})),
        scan=data.get("scan", 1),
        base=None if base is None else base.number,
    )
    manifest.__dict__["_by_path"] = by_path  # made by the check: a restore or a diff asks for it
    if delta is not None:
        manifest.__dict__.update(delta=delta, base_manifest=base)
    return manifest
