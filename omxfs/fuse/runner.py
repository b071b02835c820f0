"""Where every request of the mount runs and its errors are translated: the one place (STYLE lesson 1).

Each request's work runs for its caller in a worker thread (handlers touch the disk and may wait on a store lock;
the trio loop that serves every other request must never wait with them), or on the loop when the handler vouches
it is cheap (``capabilities.Inline``). An ``OmxError`` (or ``OSError``) becomes its errno, and every refusal is one
log line ``agent=<a> op=<op> path=<p> errno=<name>: <reason>``; anything else is a bug, logged with its traceback
and answered with EIO so the daemon never dies of it.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from typing import TypeVar, cast

import pyfuse3
import trio

from omxfs.errors import OmxError
from omxfs.fuse.capabilities import NotInline
from omxfs.fuse.entries import Request, Target
from omxfs.fuse.identity import Identity
from omxfs.fuse.zones.base import Caller
from omxfs.store.workspace import REQUESTER

T = TypeVar("T")


class _Later:
    """What work tried on the loop answers when it must run in a worker thread instead."""


LATER = _Later()

#: errnos that answer a question rather than refuse a request (is there such a name, such an attribute; may I
#: create it exclusively): not worth a log line each. EOPNOTSUPP refuses what a program asked (a FIFO, an xattr a
#: zone does not keep): logged like every refusal (SPEC §7)
QUIET_ERRNOS = frozenset({errno.ENOENT, errno.ENODATA, errno.EEXIST})


class Runner:
    def __init__(self, identity: Identity, log: logging.Logger, thread_limit: int = 64) -> None:
        self.identity = identity
        self.log = log
        self._limiter = trio.CapacityLimiter(thread_limit)

    async def run(
        self,
        op: str,
        who: Request | Caller,
        target: Target | str,
        work: Callable[[Caller], T],
        *,
        inline: Callable[[Caller], bool] | bool = False,
    ) -> T:
        """Run ``work`` for the caller, in a worker thread unless ``inline`` says it is cheap (see ``Inline``).

        Resolving the caller reads a small virtual file of /proc at most, so it is done on the loop whenever the
        decision to stay there depends on who asks. Work on the loop that finds, once it looked, that it is too slow
        for the loop after all raises ``NotInline`` having changed nothing, and runs again in a worker thread.
        """
        caller: Caller | None = who if isinstance(who, Caller) else None

        def serve(on_loop: bool) -> T | _Later:
            nonlocal caller
            # The store is told which process the request is for (``REQUESTER``: the audit log records it, and one
            # request reads the config once) from the naming of the caller on.
            token = REQUESTER.set((who.uid, who.pid))
            try:
                if caller is None:
                    assert isinstance(who, Request)
                    caller = self.caller(who)
                if on_loop and not (inline is True or (inline is not False and inline(caller))):
                    return LATER
                return work(caller)
            except Exception as exc:
                if on_loop and isinstance(exc, NotInline):
                    return LATER
                raise self.failure(op, caller, who, target, exc) from None
            finally:
                REQUESTER.reset(token)

        if inline is not False:
            done = serve(True)
            if not isinstance(done, _Later):
                return done
        return cast(T, await trio.to_thread.run_sync(serve, False, limiter=self._limiter))

    def caller(self, request: Request) -> Caller:
        return Caller(self.identity.resolve(request.uid, request.pid), *request)  # uid, gid, pid, umask: in order

    def failure(
        self, op: str, caller: Caller | None, who: Request | Caller, target: Target | str, exc: Exception
    ) -> pyfuse3.FUSEError:
        agent = caller.agent if caller is not None else f"?(uid={who.uid},pid={who.pid})"
        if isinstance(exc, pyfuse3.FUSEError):
            return exc
        if isinstance(exc, OmxError | OSError):
            code = exc.errno or errno.EIO
            if code not in QUIET_ERRNOS:
                reason = exc.message if isinstance(exc, OmxError) else str(exc)
                self.log.warning(
                    "agent=%s op=%s path=%s errno=%s: %s", agent, op, target, errno.errorcode.get(code, code), reason
                )
            return pyfuse3.FUSEError(code)
        self.log.error("agent=%s op=%s path=%s errno=EIO: internal error", agent, op, target, exc_info=exc)
        return pyfuse3.FUSEError(errno.EIO)
