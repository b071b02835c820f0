"""What the ops layer keeps per request and per open node, and the entries it gives the kernel: a node's
attributes with how long the kernel may cache them (nodes that cannot change behind its back for a minute; nodes
whose store directory is watched for changes, ``omxfs.fuse.watch``, for a minute too; everything else for half a
second, since other daemons and the CLI write the store directly).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

import pyfuse3

from omxfs.fuse.zones.base import ROOT, Attr, Caller, Handle, ViewPath

#: attribute and entry timeouts (seconds) of nodes that cannot change behind the kernel's back
STABLE_TIMEOUT = 60.0
#: ... of nodes whose every change is invalidated explicitly (``omxfs.fuse.watch``)
WATCHED_TIMEOUT = 60.0
#: ... and of everything else: other daemons and the CLI change the store directly (SPEC: visible within 1 s)
VOLATILE_TIMEOUT = 0.5


class Request(NamedTuple):
    """The kernel's view of a caller, copied out of pyfuse3's RequestContext (a named tuple: one per request)."""

    uid: int
    gid: int
    pid: int
    umask: int

    @classmethod
    def of(cls, ctx: pyfuse3.RequestContext) -> Request:
        return cls(ctx.uid, ctx.gid, ctx.pid, ctx.umask)


class Target(NamedTuple):
    """What a request is about, for its log line: kept as parts, made text only if a line is written (a named
    tuple: one is made per request, nearly always for no line at all)."""

    base: ViewPath | None
    name: bytes | None = None
    inode: int = 0

    def __str__(self) -> str:
        if self.base is None:
            return f"<inode {self.inode}>"
        if self.name is None:
            return str(self.base)
        return str(self.base / os.fsdecode(self.name)) if self.base != ROOT else os.fsdecode(self.name)


@dataclass(eq=False)
class OpenFile:
    inode: int
    handle: Handle


@dataclass(eq=False)
class OpenDir:
    inode: int
    caller: Caller
    #: the listing taken at the first readdir (and again at a rewind): offsets index it, so they stay stable
    names: list[str] | None = None
    #: the attributes of ``names``, when the handler gave them with the listing (``ListsWithAttrs``)
    attrs: list[Attr] | None = None


def entry_attributes(
    inode: int, attr: Attr, *, uncached: bool = False, watched: tuple[bool, bool] = (False, False)
) -> pyfuse3.EntryAttributes:
    """The kernel's entry for a node: its attributes and how long the kernel may cache them. ``watched``: whether
    every change to the node's name, and to its attributes, is invalidated explicitly (``Operations._watched``)."""
    e = pyfuse3.EntryAttributes()
    e.st_ino = inode
    e.generation = 0
    if attr.stable:
        e.entry_timeout = e.attr_timeout = STABLE_TIMEOUT
    elif uncached:
        e.entry_timeout = e.attr_timeout = 0.0
    else:
        e.entry_timeout = WATCHED_TIMEOUT if watched[0] else VOLATILE_TIMEOUT
        e.attr_timeout = WATCHED_TIMEOUT if watched[1] else VOLATILE_TIMEOUT
    e.st_mode = attr.mode
    e.st_nlink = attr.nlink
    e.st_uid = attr.uid
    e.st_gid = attr.gid
    e.st_rdev = attr.rdev
    e.st_size = attr.size
    e.st_blksize = 4096
    e.st_blocks = (attr.size + 511) // 512 if attr.blocks is None else attr.blocks  # du of a sparse file: its data
    e.st_atime_ns = attr.atime_ns
    e.st_mtime_ns = attr.mtime_ns
    e.st_ctime_ns = attr.ctime_ns
    return e


def absent_entry() -> pyfuse3.EntryAttributes:
    """A negative entry: no such name, and the kernel may remember that for ``WATCHED_TIMEOUT`` without asking again
    (node number 0 is FUSE's "absent, cache this"; an ENOENT error is never cached). Only for names whose creation
    behind the daemon's back is invalidated (``StoreWatch.absent``)."""
    e = pyfuse3.EntryAttributes()
    e.st_ino = 0
    e.generation = 0
    e.entry_timeout = WATCHED_TIMEOUT
    e.attr_timeout = 0.0
    return e
