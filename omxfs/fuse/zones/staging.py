"""Staged writes: the open files of the zones whose writes are commits (handoff, collaborative, realtime).

Such a file is staged whole in memory (``StagedHandle``, a ``BufferHandle``) and turned into one store operation
at the right close; ``Staging`` keeps the open ones per view path, so a file being written exists for getattr and
listings before the store has it. Why a flush alone must not always commit: see ``StagedHandle``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from omxfs.errors import OmxError
from omxfs.fuse.zones.base import BufferHandle, ViewPath

if TYPE_CHECKING:
    from omxfs.fuse.zones.realtime_files import Seen


@dataclass
class StagedHandle(BufferHandle):
    """A staged file that commits at the right close.

    The kernel sends a flush at *every* close of a descriptor, and shells open a file, ``dup2`` it to stdout and
    close the original before the command writes anything. So ``flush`` commits only after the program wrote
    (``write``, ``ftruncate``) since the last commit; a change that was never written by the program (a file
    created and closed empty, ``O_TRUNC`` alone) is committed at ``release``, whose errors the ops layer logs
    but the kernel cannot report. A failed commit is not retried at release (its content is kept by the store).
    """

    #: called once, at the release (``Staging.track`` forgets the handle then)
    on_release: Callable[[StagedHandle], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    written: bool = False
    #: closed once since the last write: its uncommitted change waits for the release
    settled: bool = False
    #: opened with ``O_APPEND``: every write lands at the end, wherever the program says
    append: bool = False
    #: the content at open (a realtime counter appended to is incremented by what was appended)
    opened: bytes | None = None
    #: the realtime field's value at open, the base of an edit in place; None once rewritten from scratch
    #: (``realtime_files``, rule 1)
    own: Seen | None = None
    #: a close with nothing to commit may run on the loop (False: realtime closes, which may merge, never do)
    inline_closes: bool = True
    #: the kernel has sent the release (no descriptor is left) and this daemon has not run it yet (``finish``)
    releasing: bool = False
    #: the error of a commit ``finish`` made for the release, which the release reports (the daemon logs it)
    finished_with: OmxError | None = None
    #: raises when a write can no longer commit (collaborative: a newer commit than the base exists), so the
    #: ``write()`` fails, not only the close a shell ignores; a refused write stages nothing
    before_write: Callable[[StagedHandle], None] | None = None

    def inline(self, op: str, end: int = 0) -> bool:
        """As a buffer's, except that a close commits when the program wrote since the last one (``flush``) or
        left anything uncommitted (``release``), and waits for a commit running in another thread."""
        if op in ("flush", "release"):
            if not self.inline_closes:
                return False
            return not (self.written if op == "flush" else self.dirty) and not self.lock.locked()
        return super().inline(op, end)

    def write(self, offset: int, data: bytes) -> int:
        self._check_write()
        n = super().write(len(self.data) if self.append else offset, data)
        self.written, self.settled = True, False
        return n

    def truncate(self, size: int) -> None:
        self._check_write()
        if size == 0:
            self.own = None  # a rewrite from scratch (vim: open, ftruncate, write), not an edit in place
        super().truncate(size)
        self.written, self.settled = True, False

    def _check_write(self) -> None:
        """``before_write``; a refused write leaves the file to commit at its close, where the commit is refused in
        turn, fails the ``close()`` too and is recorded with what was staged (a write refused right after a
        commit of everything staged would otherwise leave no record of the conflict)."""
        if self.before_write is None:
            return
        try:
            self.before_write(self)
        except OmxError:
            self.dirty, self.written, self.settled = True, True, False
            raise

    def flush(self) -> None:
        with self.lock:
            if self.written:
                self._commit()
            else:
                self.settled = True

    def settle(self) -> None:
        """Commit now a change that waits for the release (``touch x; cat x``: the release may come later than the
        next request); its failure was the closed program's, so it is not raised here (the store kept it)."""
        with self.lock:
            if self.settled and self.dirty:
                with contextlib.suppress(OmxError):
                    self._commit()

    def _commit(self) -> None:
        try:
            if self.dirty and self.on_flush is not None:
                self.on_flush(self)
        finally:
            self.dirty = self.written = False

    def release_requested(self) -> None:
        """The kernel sent the release: the program has closed its last descriptor (the ops layer calls this on
        the loop, before any request the kernel sent after the release is read)."""
        self.releasing = True

    def finish(self) -> None:
        """Commit now what waits for a release the kernel has sent: it runs in a thread of its own and may come
        after the program's next request (an ``O_TRUNC`` alone, with nothing written to flush, commits at the
        release, and the kernel sends it once ``close()`` has returned). Unlike ``settle``, a descriptor still
        open (the shell's ``dup2`` before the command writes) is never committed early."""
        with self.lock:
            if self.releasing and self.dirty:
                try:
                    self._commit()
                except OmxError as exc:
                    self.finished_with = exc

    def release(self) -> None:
        try:
            with self.lock:
                self._commit()
            if self.finished_with is not None:
                raise self.finished_with
        finally:
            if self.on_release is not None:
                self.on_release(self)
            super().release()


class Staging:
    """The open staged handles per view path. A file created through this mount exists (for getattr and listings)
    from its creation on, though the store sees it only when it is committed at close."""

    def __init__(self) -> None:
        self._open: dict[ViewPath, list[StagedHandle]] = {}
        self._lock = threading.Lock()

    def track(self, path: ViewPath, handle: StagedHandle) -> StagedHandle:
        """Register ``handle`` until it is released."""
        handle.on_release = lambda h: self.remove(path, h)
        with self._lock:
            self._open.setdefault(path, []).append(handle)
        return handle

    def remove(self, path: ViewPath, handle: StagedHandle) -> None:
        with self._lock:
            handles = [h for h in self._open.get(path, []) if h is not handle]
            if handles:
                self._open[path] = handles
            else:
                self._open.pop(path, None)

    def settle(self, path: ViewPath) -> None:
        """Commit the closed-but-not-released files at ``path`` before another request looks at it."""
        with self._lock:
            handles = list(self._open.get(path, []))
        for handle in handles:
            handle.settle()

    def finish(self, path: ViewPath) -> None:
        """Commit the files at ``path`` whose release the kernel has sent but this daemon not yet run."""
        with self._lock:
            handles = list(self._open.get(path, []))
        for handle in handles:
            handle.finish()

    def pending(self, path: ViewPath) -> bool:
        """Whether ``settle(path)`` would commit something (a request that settles then must not run inline)."""
        with self._lock:
            return any(h.settled and h.dirty for h in self._open.get(path, []))

    def get(self, path: ViewPath) -> StagedHandle | None:
        with self._lock:
            handles = self._open.get(path)
            return handles[-1] if handles else None

    def names_in(self, directory: ViewPath) -> list[str]:
        with self._lock:
            return [p.name for p in self._open if p.parent == directory]

    def held_by(self, agent: str, path: ViewPath) -> bool:
        with self._lock:
            return any(h.caller.agent == agent for h in self._open.get(path, []))

    def of(self, agent: str, path: ViewPath) -> StagedHandle | None:
        """The latest file ``agent`` has open at ``path``: what its ``fstat`` and ``lseek(SEEK_END)`` must see, since
        the kernel takes the size of an open file from getattr (the store still holds the last commit)."""
        with self._lock:
            mine = [h for h in self._open.get(path, []) if h.caller.agent == agent]
        return mine[-1] if mine else None
