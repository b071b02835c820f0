"""What the ops layer asks of a zone handler beyond ``ZoneHandler``, each asked only of handlers that offer it:
run cheap work on the loop (``Inline``, or hand it back with ``NotInline``), answer ``access(W_OK)``
(``WriteChecker``), show each caller its own nodes (``CallerViews``), list with attributes (``ListsWithAttrs``),
make special files (``NodeMaker``).
"""

from __future__ import annotations

import functools
import inspect
from typing import Protocol, cast, runtime_checkable

from omxfs.fuse.zones.base import Attr, Caller, ViewPath, ZoneHandler


@runtime_checkable
class Inline(Protocol):
    """A zone handler that can say which of its operations are cheap enough to run on the trio loop.

    ``op`` is the ops-layer name (``lookup``, ``getattr``, ``create``…). True only where the work is a few system
    calls on the local store that never wait on a lock, fsync or move much data; handlers without this method
    always run in a worker thread.
    """

    def inline(self, op: str, caller: Caller, path: ViewPath) -> bool: ...


class NotInline(Exception):
    """Raised by an ``Inline`` handler's work running on the loop that found, only once it looked, that the work is
    too slow for the loop after all (the unlink of a large file): nothing has been changed, and the runner runs
    the request again in a worker thread, where the handler does it whole. Never raised off the loop."""


@runtime_checkable
class WriteChecker(Protocol):
    """A zone handler that can say whether a caller may change a node, for ``access(W_OK)``."""

    def may_write(self, caller: Caller, path: ViewPath) -> bool: ...


class CallerViews(Protocol):
    """A zone handler whose nodes may depend on who looks (``getattr`` takes the caller) or exist only for a while,
    and which says which nodes the kernel must therefore not cache (``uncached``)."""

    def getattr(self, path: ViewPath, caller: Caller | None = None) -> Attr: ...

    def uncached(self, path: ViewPath) -> bool: ...


@functools.cache
def views_per_caller(handler_type: type) -> bool:
    try:
        return "caller" in inspect.signature(getattr(handler_type, "getattr")).parameters  # noqa: B009
    except (AttributeError, TypeError, ValueError):
        return False


def is_uncached(handler: ZoneHandler, path: ViewPath) -> bool:
    """Whether the kernel must not cache the entry of ``path`` (see ``CallerViews``)."""
    return views_per_caller(type(handler)) and cast(CallerViews, handler).uncached(path)


@runtime_checkable
class ListsWithAttrs(Protocol):
    """A handler that lists a directory with its entries' attributes in one go (readdirplus needs both)."""

    def listdir_attrs(self, caller: Caller, path: ViewPath) -> list[tuple[str, Attr]]: ...


@runtime_checkable
class NodeMaker(Protocol):
    """A handler that creates FIFOs, UNIX sockets and device nodes (``mknod``), as far as its store allows."""

    def mknod(self, caller: Caller, path: ViewPath, mode: int, rdev: int) -> None: ...


@functools.cache
def has_inline(handler_type: type) -> bool:
    return callable(getattr(handler_type, "inline", None))
