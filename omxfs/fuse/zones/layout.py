"""The mount's root: the zone directories and ``.omxfs/``, and nothing else may be created there (SPEC §2).

The router sends the root itself and any top-level name that is not a zone here. Such names do not exist
(ENOENT to look up) and cannot be created, renamed to or linked (EACCES), so every file of the workspace
lives under the rules of some zone.
"""

from __future__ import annotations

from omxfs.errors import InvalidInput, IsADirectory, NoAttribute, NotFound, ZoneDenied
from omxfs.fuse.zones.base import ROOT, Attr, AttrChanges, Caller, Handle, ViewPath
from omxfs.fuse.zones.read_only import attr_of
from omxfs.store.layout import TOP_LEVEL
from omxfs.store.tree import StoreTree
from omxfs.store.workspace import Workspace

_ZONES = "only agents/, handoff/, collaborative/, realtime/ and .omxfs/ exist at the top level"


class LayoutHandler:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.tree = StoreTree(ws.root)

    def _refuse(self, path: ViewPath, what: str) -> ZoneDenied:
        return ZoneDenied(f"{'/' if path == ROOT else path}: {what} refused: {_ZONES}")

    def inline(self, op: str, caller: Caller, path: ViewPath) -> bool:
        """Everything here is a stat of the store's root or a refusal: cheap enough for the loop (``Inline``)."""
        return op != "listdir"

    def getattr(self, path: ViewPath) -> Attr:
        if path != ROOT:
            raise NotFound(f"{path}: {_ZONES}")
        return attr_of(self.tree.lstat(ROOT))

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]:
        if path != ROOT:
            raise NotFound(f"{path}: {_ZONES}")
        present = set(self.tree.listdir(ROOT))
        return [name for name in TOP_LEVEL if name in present]

    def readlink(self, path: ViewPath) -> bytes:
        raise InvalidInput(f"{path}: not a symlink")

    def open(self, caller: Caller, path: ViewPath, flags: int) -> Handle:
        raise IsADirectory(f"{path}: the root is a directory")

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> Handle:
        raise self._refuse(path, "creating a file")

    def mkdir(self, caller: Caller, path: ViewPath, mode: int) -> None:
        raise self._refuse(path, "creating a directory")

    def unlink(self, caller: Caller, path: ViewPath) -> None:
        raise self._refuse(path, "deleting")

    def rmdir(self, caller: Caller, path: ViewPath) -> None:
        raise self._refuse(path, "removing a directory")

    def rename(self, caller: Caller, old: ViewPath, new: ViewPath, flags: int) -> None:
        raise self._refuse(old, f"renaming to {new}")

    def symlink(self, caller: Caller, path: ViewPath, target: bytes) -> None:
        raise self._refuse(path, "creating a symlink")

    def link(self, caller: Caller, existing: ViewPath, new: ViewPath) -> None:
        raise self._refuse(new, "creating a link")

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> None:
        raise self._refuse(path, "changing attributes")

    def getxattr(self, caller: Caller, path: ViewPath, name: str) -> bytes:
        raise NoAttribute(f"{path}: no attribute {name}")

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None:
        raise self._refuse(path, f"setting {name}")

    def listxattr(self, caller: Caller, path: ViewPath) -> list[str]:
        return []

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None:
        raise self._refuse(path, f"removing {name}")

    def may_write(self, caller: Caller, path: ViewPath) -> bool:
        return False
