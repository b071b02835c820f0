"""One error taxonomy for the whole workspace.

Every rule of the workspace is enforced in the store and the CRDT core, and each breach raises one of these.
The edges translate them, each in one place: the FUSE layer to an errno (``exc.errno``), the agent tools to
``{"success": false, "error": ...}``, the CLI to a ``click.ClickException``. An ``OSError`` met on the store is
turned into one of these by ``from_os_error`` alone; the tools, which see the mount's errnos, turn them back with
``from_mount_errno``::

    OmxError                      base; ``errno`` is what a Unix tool should show
    ├── NotFound                  ENOENT   no such file, version, document, field or agent
    ├── AlreadyExists             EEXIST   creating what exists (a document, a schema)
    ├── ZoneDenied                EACCES   the caller may not write there (another agent's zone, a generated file)
    │   └── IdentityMismatch      EACCES   the mount does not take this process for the tools' agent
    ├── NotPermitted              EPERM    an operation no one may do there (a hard link into a zone…)
    ├── InvalidInput              EINVAL   bad name, bad path, bad value for a field, bad JSON, bad schema
    │   ├── NameTooLong           ENAMETOOLONG
    │   └── PathBlocked           EINVAL   a symlink or non-directory on the way of a path the store walks
    ├── Conflict                  EBUSY    a collaborative commit whose base is older than the current version
    ├── StoreCorrupt              EIO      the store on disk breaks its own invariants (fsck's business)
    ├── NoAttribute               ENODATA  no such extended attribute (getfattr: "No such attribute")
    ├── NotSupported              EOPNOTSUPP
    ├── CrossZone                 EXDEV    a rename between zones (``mv`` then copies and deletes, under the rules)
    ├── FileTooLarge              EFBIG    a staged file would grow past what the daemon keeps in memory
    ├── IsADirectory              EISDIR
    ├── NotADirectory             ENOTDIR
    ├── NotEmpty                  ENOTEMPTY
    ├── OSFailure                 (the OS's) any other OS error on the store, its errno kept (ENOSPC, ELOOP…)
    └── MountError                (given)  the mount cannot be made or unmade as asked
"""

from __future__ import annotations

import errno as _errno
import os
from collections.abc import Callable
from types import TracebackType

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
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


class IdentityMismatch(ZoneDenied):
    """The mount does not see this process as the agent the tools were built for."""


class NotPermitted(OmxError):
    errno = _errno.EPERM


class InvalidInput(OmxError):
    errno = _errno.EINVAL


class NameTooLong(InvalidInput):
    errno = _errno.ENAMETOOLONG


class PathBlocked(InvalidInput):
    """The store walks paths without following symlinks: one on the way (or a file where a directory should be)
    is refused as input, never followed out of the zone."""


class StoreCorrupt(OmxError):
    errno = _errno.EIO


class Conflict(OmxError):
    """A commit was refused because its base version is not the current one.

    ``info`` is what the refused writer needs to recover: current_version, current_content,
    current_author, your_content, your_base and a suggestion. The same record is kept on disk under
    ``collaborative/.conflicts/<agent>/`` so that nothing is lost.
    """

    errno = _errno.EBUSY

    def __init__(self, message: str, info: dict[str, Any]) -> None:
        super().__init__(message)
        self.info = info


class NoAttribute(OmxError):
    """The extended attribute does not exist (ENODATA, which getfattr shows as "No such attribute")."""

    errno = _errno.ENODATA


class NotSupported(OmxError):
    errno = _errno.EOPNOTSUPP


class CrossZone(OmxError):
    """A rename between zones: programs such as ``mv`` then fall back to copy and delete, under the rules."""

    errno = _errno.EXDEV


class FileTooLarge(OmxError):
    """A staged file would grow past what the daemon keeps in memory: refused before it allocates it (EFBIG)."""

    errno = _errno.EFBIG


class IsADirectory(OmxError):
    errno = _errno.EISDIR


class NotADirectory(OmxError):
    errno = _errno.ENOTDIR


class NotEmpty(OmxError):
    errno = _errno.ENOTEMPTY


class OSFailure(OmxError):
    """An OS error on the store (ENOSPC, EIO, EDQUOT, ELOOP…), carrying the OS errno so the edges report it as is:
    a passthrough answers what the kernel would have."""

    def __init__(self, message: str, os_errno: int) -> None:
        super().__init__(message)
        self.errno = os_errno


class MountError(OmxError):
    """The mount cannot be made or unmade as asked; the message says why and what to do, in one line."""

    def __init__(self, message: str, code: int = _errno.EIO) -> None:
        super().__init__(message)
        self.errno = code


#: what a symlink or a file met while walking a path answers: ELOOP (O_NOFOLLOW), ENOTDIR, EXDEV (openat2)
_ON_THE_WAY = frozenset({_errno.ELOOP, _errno.ENOTDIR, _errno.EXDEV})


def from_os_error(exc: OSError, what: object, *, walking: bool = False) -> OmxError:
    """The workspace's error for an OS error met on the store at ``what``: the one translation of OS errors.

    The errno is kept: ENOENT is ``NotFound``, anything else an ``OSFailure`` carrying it. ``walking``: the store
    API was walking a path it was given, where a symlink or a non-directory on the way means the path is refused
    (``PathBlocked``, EINVAL) rather than followed; a passthrough of the private zone answers ELOOP or ENOTDIR as
    the kernel does.
    """
    code = exc.errno or _errno.EIO
    if walking and code in _ON_THE_WAY:
        return PathBlocked(f"{what}: a symlink or non-directory is in the way")
    if code == _errno.ENOENT:
        return NotFound(f"{what}: no such file or directory")
    return OSFailure(f"{what}: {os.strerror(code)}", code)


#: the tools' reading of an errno the mount answered (the FUSE edge's mapping, inverted); the tools report a
#: kind of mistake, so ENOTDIR (a file on the way) reads as not found and ENOTEMPTY as exists
_BY_MOUNT_ERRNO: dict[int, type[OmxError]] = {
    _errno.ENOENT: NotFound,
    _errno.ENOTDIR: NotFound,
    _errno.ENODATA: NotFound,  # an omx xattr asked of what has none (a directory): no such file
    _errno.EACCES: ZoneDenied,
    _errno.EPERM: ZoneDenied,
    _errno.EROFS: ZoneDenied,
    _errno.EINVAL: InvalidInput,
    _errno.EISDIR: InvalidInput,
    _errno.ENOTSUP: InvalidInput,
    _errno.ENAMETOOLONG: NameTooLong,
    _errno.EEXIST: AlreadyExists,
    _errno.ENOTEMPTY: AlreadyExists,
}


def from_mount_errno(exc: OSError, what: str, conflict: Callable[[], dict[str, Any]] | None = None) -> OmxError | None:
    """The store's error for an errno the mount answered (the inverse of the FUSE edge's mapping), or None for an
    errno that is not the caller's to fix (EIO: an internal error of the daemon).

    EBUSY is a refused collaborative commit: ``conflict`` reads the record the mount kept of it.
    """
    code = exc.errno or _errno.EIO
    message = f"{what}: {os.strerror(code)}"
    if code == _errno.EBUSY:
        info = conflict() if conflict is not None else {}
        suggestion = info.get("suggestion")
        return Conflict(f"conflict on {what}: {suggestion}" if suggestion else message, info)
    cls = _BY_MOUNT_ERRNO.get(code)
    return None if cls is None else cls(message)


def os_errors(what: object, *, walking: bool = False) -> _OsErrors:
    """Turn the OS errors of one store access into the workspace's error taxonomy (``from_os_error``)."""
    return _OsErrors(what, walking)


class _OsErrors:
    """``os_errors``' context: a class, not a ``contextlib.contextmanager``, whose generator costs three times as
    much to enter and leave; every write and read of a store file through the mount goes through one."""

    __slots__ = ("walking", "what")

    def __init__(self, what: object, walking: bool) -> None:
        self.what = what
        self.walking = walking

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(exc, OSError):
            raise from_os_error(exc, self.what, walking=self.walking) from exc
