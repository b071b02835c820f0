"""``omxfs diff WS NAME [FROM [TO]]``: what changed in a zone between two checkpoints, or since one.

A path is *added* or *deleted* when only one side has it, *modified* when both do and its type, content, mode,
owner, symlink target, hard link or ``user.*`` attributes differ; times alone are no change (a ``touch``). For a
modified regular file the detail is a unified diff where both sides are text (UTF-8, no NUL, at most
``TEXT_LIMIT`` bytes), else both sizes and sha256s. The zone as it is now is read like a checkpoint would read it,
files whose stat is unchanged since FROM taken from FROM without reading them.
"""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

from omxfs.checkpoints.history import ZoneHistory
from omxfs.checkpoints.manifest import FILE, Entry
from omxfs.checkpoints.scan import scan_zone
from omxfs.errors import NotFound
from omxfs.shell_line import shell_line
from omxfs.store.atomic import read_bytes

#: files larger than this are shown by size and hash, as binaries are
TEXT_LIMIT = 1 << 20
NOW = "now"
Reader = Callable[[Entry], bytes]


class ZoneDiff:
    """What changed from checkpoint ``source`` to ``target`` (a checkpoint, or ``NOW``): the paths, and per path
    the details ``to_json`` gives."""

    __slots__ = ("added", "deleted", "details", "modified", "source", "target")

    def __init__(self, source: str, target: str) -> None:
        self.source = source  # the checkpoint compared from
        self.target = target  # the checkpoint compared to, or "now"
        self.added: list[str] = []
        self.modified: list[str] = []
        self.deleted: list[str] = []
        self.details: dict[str, dict[str, Any]] = {}

    @property
    def empty(self) -> bool:
        return not (self.added or self.modified or self.deleted)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "added": self.added,
            "modified": self.modified,
            "deleted": self.deleted,
            "details": self.details,
        }

    def lines(self) -> list[str]:
        """The text ``omxfs diff`` prints: one line per path, then each text diff."""
        out = [
            f"{self.source} -> {self.target}: {len(self.added)} added, {len(self.modified)} modified, "
            f"{len(self.deleted)} deleted"
        ]
        below = self._below(self.added) | self._below(self.deleted)
        hidden = {path for paths in below.values() for path in paths}
        for mark, paths in (("A", self.added), ("M", self.modified), ("D", self.deleted)):
            for path in paths:
                if path in hidden:
                    continue
                if path in below:
                    out.append(f"{mark} {path}/  (dir, and {len(below[path])} entries below it)")
                else:
                    out.append(f"{mark} {path}{_summary(self.details[path])}")
        for path in self.modified + self.added + self.deleted:
            text = self.details[path].get("diff")
            if text and path not in hidden:
                out.append(text.rstrip("\n"))
        return out

    def _below(self, paths: list[str]) -> dict[str, list[str]]:
        """Each outermost directory added or deleted whole, with the paths under it: the text shows it as one line
        (a deleted git repository is one line, not its every object and their contents); ``--json`` lists all."""
        dirs = {path for path in paths if self.details[path].get("type") == "dir"}
        below: dict[str, list[str]] = {}
        for path in paths:
            parts = path.split("/")
            top = next(("/".join(parts[:i]) for i in range(1, len(parts)) if "/".join(parts[:i]) in dirs), None)
            if top is not None:
                below.setdefault(top, []).append(path)
        return below


def _summary(detail: dict[str, Any]) -> str:
    """One path's detail in a few words: the pairs of a modified path, the kind and mode of an added or deleted one."""
    parts = []
    for key in ("type", "mode", "owner", "target", "link", "xattrs"):
        value = detail.get(key)
        if isinstance(value, list):
            parts.append(f"{key} {value[0]} -> {value[1]}")
        elif value is not None and key in ("type", "target", "link"):
            parts.append(value if key == "type" else f"{key} {value}")
    size, digest = detail.get("size"), detail.get("sha256")
    if "diff" not in detail and size is not None:
        if isinstance(size, list):
            parts.append(f"binary, {size[0]} -> {size[1]} bytes, sha256 {_short(digest)}")
        else:
            parts.append(f"binary, {size} bytes, sha256 {str(digest)[:12]}")
    return f"  ({'; '.join(parts)})" if parts else ""


def _short(pair: Any) -> str:
    return " -> ".join((h or "-")[:12] for h in pair)


def diff(history: ZoneHistory, source: str | None = None, target: str | None = None) -> ZoneDiff:
    """From checkpoint ``source`` (default: the latest) to ``target`` (default: the zone now)."""
    if source is None:
        latest = history.latest()
        if latest is None:
            raise NotFound(
                f"{history.zone} has no checkpoint yet: make one with "
                f"`{shell_line('omxfs', 'checkpoint', history.ws.shown_as, '--as', history.zone)}`"
            )
        old = latest
    else:
        old = history.load(history.resolve(source))
    old_entries = old.by_path_view()
    old_read: Reader = lambda e: _blob(history, e)  # noqa: E731
    if target is None or target == NOW:
        scan = scan_zone(history.zone_dir, old_entries, listings=old.listings, cached=old.stat_cache)
        new_read: Reader = lambda e: read_bytes(history.zone_dir, PurePosixPath(e.path))  # noqa: E731
        new_entries, candidates = _scanned(old_entries, scan.entries)
        return compare(old_entries, new_entries, old_read, new_read, str(old.number), NOW, candidates)
    new = history.load(history.resolve(target))
    return compare(old_entries, new.by_path(), old_read, old_read, str(old.number), str(new.number))


def _scanned(old: Mapping[str, Entry], entries: list[Entry]) -> tuple[Mapping[str, Entry], list[str] | None]:
    """A scan's ``entries`` by path, and the paths that may differ from ``old`` if they are known without a look
    at every path. A scan hands back ``old``'s very entry for what did not change: where no path of ``old`` is
    gone, the entries are ``old`` with the others over it, and only those others' paths may differ."""
    get = old.get
    made = {entry.path: entry for entry in entries if get(entry.path) is not entry}
    added = sum(1 for path in made if path not in old)
    if len(entries) - added != len(old):  # some paths of ``old`` are gone: every path is looked at
        return {entry.path: entry for entry in entries}, None
    return ChainMap(made, dict(old)), list(made)


def _blob(history: ZoneHistory, entry: Entry) -> bytes:
    if not entry.size:
        return b""
    return history.blobs.path(entry.sha256).read_bytes()


def compare(
    old: Mapping[str, Entry],
    new: Mapping[str, Entry],
    old_read: Reader,
    new_read: Reader,
    source: str,
    target: str,
    candidates: list[str] | None = None,
) -> ZoneDiff:
    """The difference from ``old`` to ``new``; ``candidates``, if given: the only paths that may differ."""
    result = ZoneDiff(source, target)
    if candidates is None:
        # a scan hands back the very entry of what did not change: only the other paths are looked at
        candidates = [path for path, entry in new.items() if old.get(path) is not entry]
        added = sum(1 for path in candidates if path not in old)
        if len(new) - added != len(old):  # some paths of ``old`` are not in ``new``
            candidates += [path for path in old if path not in new]
    for path in sorted(candidates):
        if path == ".":
            if path in old and path in new and _changed(old[path], new[path]):
                result.modified.append(path)
                result.details[path] = _detail(path, old[path], new[path], old, new, old_read, new_read)
            continue
        if path not in old:
            result.added.append(path)
            result.details[path] = _one(path, new[path], new, new_read, added=True)
        elif path not in new:
            result.deleted.append(path)
            result.details[path] = _one(path, old[path], old, old_read, added=False)
        elif _changed(old[path], new[path]):
            result.modified.append(path)
            result.details[path] = _detail(path, old[path], new[path], old, new, old_read, new_read)
    return result


def _changed(a: Entry, b: Entry) -> bool:
    """Anything but the times (and the stat the hash was taken with)."""
    return a.key() != b.key()


def _content(entry: Entry, entries: Mapping[str, Entry]) -> Entry:
    """The entry that holds a file's content: its first name, for a hard link."""
    return entries.get(entry.link, entry) if entry.link else entry


def _one(path: str, entry: Entry, entries: Mapping[str, Entry], read: Reader, *, added: bool) -> dict[str, Any]:
    detail: dict[str, Any] = {"type": entry.type, "mode": f"{entry.mode:o}"}
    if entry.type == "symlink":
        detail["target"] = entry.target
    if entry.link:
        detail["link"] = entry.link
    if entry.type == FILE:
        held = _content(entry, entries)
        detail["size"], detail["sha256"] = held.size, held.sha256
        text = _text(held, read)
        if text is not None:
            before, after = ([], text) if added else (text, [])
            detail["diff"] = _unified(path, before, after, added=added, deleted=not added)
    return detail


def _detail(
    path: str,
    a: Entry,
    b: Entry,
    old: Mapping[str, Entry],
    new: Mapping[str, Entry],
    old_read: Reader,
    new_read: Reader,
) -> dict[str, Any]:
    detail: dict[str, Any] = {}
    if a.type != b.type:
        detail["type"] = [a.type, b.type]
    if a.mode != b.mode:
        detail["mode"] = [f"{a.mode:o}", f"{b.mode:o}"]
    if (a.uid, a.gid) != (b.uid, b.gid):
        detail["owner"] = [f"{a.uid}:{a.gid}", f"{b.uid}:{b.gid}"]
    if a.target != b.target:
        detail["target"] = [a.target, b.target]
    if a.link != b.link:
        detail["link"] = [a.link or None, b.link or None]
    if a.xattrs != b.xattrs:
        detail["xattrs"] = [sorted(n for n, _ in a.xattrs), sorted(n for n, _ in b.xattrs)]
    held_a = _content(a, old) if a.type == FILE else None
    held_b = _content(b, new) if b.type == FILE else None
    if held_a is not None and held_b is not None and held_a.sha256 != held_b.sha256:
        detail["size"] = [held_a.size, held_b.size]
        detail["sha256"] = [held_a.sha256, held_b.sha256]
        before, after = _text(held_a, old_read), _text(held_b, new_read)
        if before is not None and after is not None:
            detail["diff"] = _unified(path, before, after)
    return detail


def _text(entry: Entry, read: Reader) -> list[str] | None:
    if entry.size > TEXT_LIMIT:
        return None
    try:
        data = read(entry)
    except (OSError, NotFound):
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _unified(path: str, before: list[str], after: list[str], *, added: bool = False, deleted: bool = False) -> str:
    import difflib  # here: a checkpoint, which loads this module with its package, shows no text

    # the lines both sides begin and end with, beyond the hunks' context, are left out of the comparison (difflib
    # is quadratic in what it is given; an edit of a long file is most often a few lines): the hunks' line
    # numbers are then shifted back by the lines left out in front
    common = _common_prefix(before, after)
    skip = max(common - CONTEXT, 0)
    tail = max(_common_suffix(before, after, common) - CONTEXT, 0)
    lines = difflib.unified_diff(
        before[skip : len(before) - tail],
        after[skip : len(after) - tail],
        "/dev/null" if added else f"a/{path}",
        "/dev/null" if deleted else f"b/{path}",
        n=CONTEXT,
    )
    out = []
    for line in lines:
        if skip and line.startswith("@@ "):
            line = _HUNK.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + skip}", line)
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


#: the lines of context around each change (unified diff's, and git's, default)
CONTEXT = 3
#: a hunk header's two starting line numbers
_HUNK = re.compile(r"([-+])(\d+)")


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _common_suffix(a: list[str], b: list[str], prefix: int) -> int:
    """The lines both end with, not counting the first ``prefix`` lines of either."""
    n = 0
    limit = min(len(a), len(b)) - prefix
    while n < limit and a[-1 - n] == b[-1 - n]:
        n += 1
    return n
