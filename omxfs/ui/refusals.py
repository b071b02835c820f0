"""The refusals the mounts' and views' daemons logged (``.omxfs/logs/mount-<pid>.log``, a line ``agent=<a> op=<op>
path=<p> errno=<name>: <reason>``), grouped by agent and reason with how many there were.

Not a refusal: ENOTSUP on a POSIX ACL xattr (``system.posix_acl_access``, ``system.posix_acl_default``). Programs
ask for them on every copy and every listing (``cp -a``, ``ls -l``, editors), and take the answer "this filesystem
keeps none" as the plain fact it is.

Each log's end is read once per change of its size or mtime.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from omxfs.store.daemon_log import RECORD, TAIL_BYTES
from omxfs.store.layout import LOGS
from omxfs.store.workspace import Workspace
from omxfs.ui.files import read_part
from omxfs.ui.kept import Kept

#: a refusal line after its timestamp and level
LINE = re.compile(r"agent=(?P<agent>\S+) op=(?P<op>\S+) path=(?P<path>.*?) errno=(?P<errno>\w+): (?P<reason>.*)$")
#: the errno names of ENOTSUP (the same number as EOPNOTSUPP on Linux)
NOT_SUPPORTED = frozenset({"ENOTSUP", "EOPNOTSUPP"})
ACL_XATTRS = ("system.posix_acl_access", "system.posix_acl_default")


@dataclass(frozen=True)
class Refusal:
    time: str  # as the log says it
    agent: str
    op: str
    path: str
    errno: str
    reason: str  # without the path it begins with, where it does: the same reason for every path

    @property
    def line(self) -> str:
        return f"{self.time} op={self.op} path={self.path} errno={self.errno}: {self.reason}"


@dataclass(frozen=True)
class Group:
    agent: str
    op: str
    errno: str
    reason: str
    count: int
    last: Refusal  # the newest of them


def parsed(line: str) -> Refusal | None:
    """A refusal line of a daemon's log as a ``Refusal``; None for any other line, and for ENOTSUP on an ACL."""
    record = RECORD.match(line)
    if record is None or record.group("level") not in ("WARNING", "ERROR") or not line.isprintable():
        return None
    found = LINE.match(line, record.end())
    if found is None:
        return None
    path, reason = found.group("path"), found.group("reason")
    if found.group("errno") in NOT_SUPPORTED and any(name in line for name in ACL_XATTRS):
        return None
    for prefix in {path, os.path.basename(path)}:
        if prefix and reason.startswith(prefix + ": "):
            reason = reason[len(prefix) + 2 :]
            break
    return Refusal(line[:23], found.group("agent"), found.group("op"), path, found.group("errno"), reason)


def grouped(refusals: Iterable[Refusal]) -> list[Group]:
    """By agent, then by how many (most first): one group per (agent, op, errno, reason)."""
    counts: dict[tuple[str, str, str, str], tuple[int, Refusal]] = {}
    for r in refusals:
        key = (r.agent, r.op, r.errno, r.reason)
        n, last = counts.get(key, (0, r))
        counts[key] = (n + 1, r if r.time >= last.time else last)
    groups = [Group(*key, n, last) for key, (n, last) in counts.items()]
    return sorted(groups, key=lambda g: (g.agent, -g.count, g.last.time))


class Refusals:
    """Every refusal the end of each daemon log of ``ws`` holds, kept per log while it stays the same."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._kept = Kept(ws.meta, self._read)

    def all(self) -> list[Refusal]:
        found: list[Refusal] = []
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(self.ws.meta / LOGS)):
                if name.startswith("mount-") and name.endswith(".log"):
                    found += self._of(name)
        return found

    def _of(self, name: str) -> list[Refusal]:
        return self._kept.get(f"{LOGS}/{name}") or []

    def _read(self, rel: str, size: int) -> list[Refusal]:
        raw, _ = read_part(self.ws.meta, rel, max(size - TAIL_BYTES, 0), TAIL_BYTES)
        lines = raw.decode("utf-8", "replace").split("\n")
        if size > TAIL_BYTES:
            lines = lines[1:]  # begun mid-line
        return [r for r in map(parsed, lines) if r is not None]
