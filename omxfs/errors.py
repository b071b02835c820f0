"""One error taxonomy for the whole workspace.

Every rule of the workspace is enforced in the store and the CRDT core, and each breach raises one of these.
The edges translate them, each in one place: the FUSE layer to an errno, the agent tools to
``{"success": false, "error": ...}``, the CLI to a ``click.ClickException``::

    OmxError                      base; ``errno`` is what a Unix tool should show
    ├── NotFound                  ENOENT   no such file, version, document, field or agent
    ├── AlreadyExists             EEXIST   creating what exists (a document, a schema)
    ├── ZoneDenied                EACCES   the caller may not write there (another agent's zone, a generated file)
    ├── InvalidInput              EINVAL   bad name, bad path, bad value for a field, bad JSON, bad schema
    │   └── NameTooLong           ENAMETOOLONG
    ├── Conflict                  EBUSY    a collaborative commit whose base is older than the current version
    └── StoreCorrupt              EIO      the store on disk breaks its own invariants (fsck's business)
"""

from __future__ import annotations

import errno as _errno
from typing import Any


class OmxError(Exception):
    """Base of every error the workspace raises on purpose."""

    errno: int = _errno.EIO

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(OmxError):
    errno = _errno.ENOENT


class AlreadyExists(OmxError):
    errno = _errno.EEXIST


class ZoneDenied(OmxError):
    errno = _errno.EACCES


class InvalidInput(OmxError):
    errno = _errno.EINVAL


class NameTooLong(InvalidInput):
    errno = _errno.ENAMETOOLONG


class StoreCorrupt(OmxError):
    errno = _errno.EIO


class Conflict(OmxError):
    """A commit was refused because its base version is not the current one.

    ``info`` is what the refused writer needs to recover (seed 001 FR-3.5): current_version, current_content,
    current_author, your_content, your_base and a suggestion. The same record is kept on disk under
    ``collaborative/.conflicts/<agent>/`` so that nothing is lost.
    """

    errno = _errno.EBUSY

    def __init__(self, message: str, info: dict[str, Any]) -> None:
        super().__init__(message)
        self.info = info
