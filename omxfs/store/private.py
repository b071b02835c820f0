"""Private zones, ``agents/<agent>/``: only the owner writes, everyone reads (SPEC §4, seed FR-1)."""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from omxfs.errors import NotFound, ZoneDenied
from omxfs.store.atomic import list_files, open_dir, read_bytes
from omxfs.store.layout import AGENTS
from omxfs.store.names import relative_path

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace


class PrivateZone:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir = ws.root / AGENTS

    def check_write(self, actor: str, owner: str) -> None:
        """The owner writes its own zone; a supervisor anywhere (audited); everyone else is refused."""
        self.ws.require_actor(actor)
        self.ws.require_known(owner)
        if actor != owner and not self.ws.is_supervisor(actor):
            raise ZoneDenied(f"{actor} may not write in agents/{owner}/: only {owner} writes there")

    def write(self, actor: str, owner: str, path: str, data: bytes) -> None:
        """Create or overwrite ``agents/<owner>/<path>`` atomically."""
        rel = relative_path(path)
        self.check_write(actor, owner)
        self.ws.writer.write(self.dir, PurePosixPath(owner) / rel, data)
        if actor != owner:
            self.ws.audit(actor, "write", f"agents/{owner}/{rel}")

    def read(self, owner: str, path: str) -> bytes:
        self.ws.require_known(owner)
        return read_bytes(self.dir, PurePosixPath(owner) / relative_path(path))

    def delete(self, actor: str, owner: str, path: str) -> None:
        rel = relative_path(path)
        self.check_write(actor, owner)
        dir_fd = open_dir(self.dir, PurePosixPath(owner) / rel.parent)
        try:
            os.unlink(rel.name, dir_fd=dir_fd)
        except FileNotFoundError:
            raise NotFound(f"agents/{owner}/{rel}: no such file") from None
        finally:
            os.close(dir_fd)
        if actor != owner:
            self.ws.audit(actor, "delete", f"agents/{owner}/{rel}")

    def list(self, owner: str) -> list[str]:
        """Every regular file in the zone, as sorted paths relative to it (symlinks are not followed)."""
        self.ws.require_known(owner)
        return sorted(str(p) for p in list_files(self.dir / owner))
