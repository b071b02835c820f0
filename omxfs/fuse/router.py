"""Which zone handler serves a view path: the one place that knows the top-level layout (SPEC §2).

.                                  layout (the root: the zone directories, nothing else may be created)
agents/ and below                  private
agents/<agent>/@<branch> and below the agent's pending branches, read-only (every top-level name of a zone
                                   that starts with @ is routed there)
handoff/ and below                 handoff
collaborative/, collaborative/current/ and below
                                   collaborative
collaborative/.versions/, collaborative/.conflicts/ and below, .omxfs/ and below
                                   read-only passthrough
realtime/ and below                realtime (documents as directories, .crdt_state/)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from omxfs.errors import CrossZone, NotFound
from omxfs.fuse.zones.base import ViewPath, ZoneHandler
from omxfs.fuse.zones.branch_dirs import is_branch_path
from omxfs.store.layout import AGENTS, COLLABORATIVE, HANDOFF, META_DIR, READ_ONLY_COLLAB, REALTIME
from omxfs.store.names import nfc

#: zones whose names are compared after NFC normalisation (``names.shared_path``): one file per name as people
#: read it; the private zone keeps the bytes a program gave, as a POSIX filesystem does
_NFC_ZONES = frozenset({HANDOFF, COLLABORATIVE, REALTIME})


@dataclass(frozen=True)
class Router:
    layout: ZoneHandler
    private: ZoneHandler
    handoff: ZoneHandler
    collab: ZoneHandler
    realtime: ZoneHandler
    read_only: ZoneHandler
    #: ``agents/<agent>/@<branch>/``: None, and those names are the private zone's (a router of tests)
    branches: ZoneHandler | None = None

    def route(self, path: ViewPath) -> ZoneHandler:
        """The handler of ``path``; handlers receive the whole view path."""
        parts = path.parts
        if not parts:  # the root
            return self.layout
        top = parts[0]
        if top == AGENTS:
            if self.branches is not None and is_branch_path(parts):
                return self.branches
            return self.private
        if top == HANDOFF:
            return self.handoff
        if top == COLLABORATIVE:
            if len(parts) > 1 and parts[1] in READ_ONLY_COLLAB:
                return self.read_only
            return self.collab
        if top == REALTIME:
            return self.realtime
        if top == META_DIR:
            return self.read_only
        # Only lookups of names that do not exist reach here: the layout handler answers ENOENT or EACCES.
        return self.layout

    def route_pair(self, old: ViewPath, new: ViewPath) -> ZoneHandler:
        """The handler of a rename; a rename between zones is refused so tools fall back to copy + delete."""
        handler, other = self.route(old), self.route(new)
        if self.branches is not None and self.branches in (handler, other):
            return self.branches  # it refuses every change, into it and out of it alike (EROFS, not EXDEV)
        if other is not handler:
            raise CrossZone(f"cannot rename {old} to {new}: they are in different zones")
        return handler


def view_path(parent: ViewPath, name: bytes) -> ViewPath:
    """The view path of ``name`` in ``parent``; names are checked by the handlers, not here. In the shared zones a
    name is its NFC form, so both forms of ``café`` are one node (one inode, one file in the store)."""
    if b"/" in name or name in (b"", b".", b".."):
        raise NotFound(f"no entry {name!r}")
    text = name.decode("utf-8", "surrogateescape")
    parts = parent.parts
    if not parts:  # the root
        return PurePosixPath(text)
    # joinpath parses only the new name (a new PurePosixPath(parent, name) parses the parent's parts again)
    return parent.joinpath(nfc(text) if parts[0] in _NFC_ZONES else text)
