"""The mount's lifecycle: store descriptor, log, ``pyfuse3.init``, the trio loop, signals, clean unmount.

The order matters for a mount *in place* (the store directory is its own mountpoint). ``pyfuse3.init`` mounts at
once, and from then on the store's path leads into the mount, so a daemon that reached the store by its path
would call itself and deadlock. The store is therefore opened first (an ``O_PATH`` descriptor) and addressed as
``/proc/self/fd/N``: that magic link resolves to the directory underneath, and paths below it are looked up in
the underlying filesystem (checked after mounting by comparing device numbers). The log file is opened before
mounting too.

``serve`` calls ``task_status.started()`` once the mount answers, and unmounts on
SIGTERM, SIGINT or SIGHUP, or returns when someone else unmounted (``fusermount3 -u``, ``omxfs umount``).
"""

from __future__ import annotations

import contextlib
import errno
import faulthandler
import functools
import json
import logging
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import pyfuse3
import trio

from omxfs.errors import MountError, OmxError
from omxfs.fuse import guardian
from omxfs.fuse.identity import CALLERS, FixedIdentity, Identity, IdentityResolver
from omxfs.fuse.inodes import InodeTable
from omxfs.fuse.mounts import FSTYPE, mount_at, report_ready
from omxfs.fuse.ops import Operations
from omxfs.fuse.router import Router
from omxfs.fuse.watch import StoreWatch, local_store
from omxfs.fuse.zones.branch_dirs import BranchDirsHandler
from omxfs.fuse.zones.collab import CollabHandler
from omxfs.fuse.zones.handoff import HandoffHandler
from omxfs.fuse.zones.layout import LayoutHandler
from omxfs.fuse.zones.private import PrivateHandler
from omxfs.fuse.zones.read_only import ReadOnlyHandler
from omxfs.fuse.zones.realtime import RealtimeHandler
from omxfs.stop_signals import StopSignals
from omxfs.store.daemon_log import LineFormatter, open_log, remove_log
from omxfs.store.layout import META_DIR
from omxfs.store.mount_records import MountRecord, hold_store, prune_records, remove_record, write_record
from omxfs.store.workspace import Workspace

LOGGER = "omxfs.mount"
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
READY_TIMEOUT = 10.0  # seconds for the kernel to start the session after mounting


@dataclass(frozen=True)
class Mounted:
    """What ``serve`` reports once the mount answers."""

    pid: int
    mountpoint: str
    log: Path  # the log file, by a path that works from outside the daemon once it is unmounted
    end: Callable[[], Awaitable[None]]  # ends the session from inside the daemon's process (``end_session``)


async def end_session(ops: Operations) -> None:
    """End the session: the store watch first, while requests are still answered, then pyfuse3's loop.

    The order matters: the watch thread may be waiting in ``invalidate_entry`` for a directory lock that a request
    holds, and that request needs the loop; stopped the other way round, the thread would wait for good.
    """
    if ops.watch is not None:
        with trio.CancelScope(shield=True):  # a cancelled caller still ends the session in this order
            await trio.to_thread.run_sync(ops.watch.stop)
    pyfuse3.terminate()


def _guard(ops: Operations, mountpoint: str, log: logging.Logger) -> None:
    """Start the store watch, and the mount's guardian (``guardian.py``) with it: the watch runs only where the
    guardian can abort the connection, since a watch thread stuck in an invalidation would otherwise keep a killed
    daemon's mount hanging."""
    if ops.watch is None:  # nothing else in the daemon can wait in the kernel on its own mount
        return
    entry = mount_at(mountpoint)
    if entry is None:
        raise MountError(f"{mountpoint} is not in the mount table after mounting")
    if guardian.start(entry.dev):
        ops.watch.start()
        return
    log.info(
        "private zones are cached for 0.5 s, not watched: the connection of a killed daemon could not be aborted "
        "(fusectl is not mounted on %s; mount it, or run as root)",
        guardian.CONNECTIONS,
    )
    ops.watch.stop()
    ops.watch = None


def mount_options(allow_other: bool = False, view: bool = False) -> set[str]:
    """pyfuse3's defaults without ``default_permissions``: access is decided per agent here, not by mode bits.

    A view's daemon is mounted with ``auto_unmount``: fusermount3 stays beside it and unmounts when the daemon's
    connection closes, for root only; for an unprivileged user that fusermount3 cannot check the mount and leaves
    it stale (libfuse issue 1491), so ``omxfs/view/cleanup.py`` unmounts a killed view's mount.
    """
    options = set(pyfuse3.default_options) - {"default_permissions"}
    options |= {"fsname=omxfs", "subtype=omxfs"}
    if allow_other:
        options.add("allow_other")
    if view:
        options.add("auto_unmount")
    return options


def build_router(ws: Workspace) -> Router:
    read_only = ReadOnlyHandler(ws)
    return Router(
        layout=LayoutHandler(ws),
        private=PrivateHandler(ws),
        handoff=HandoffHandler(ws),
        collab=CollabHandler(ws),
        realtime=RealtimeHandler(ws),
        read_only=read_only,
        branches=BranchDirsHandler(ws),
    )


def build_ops(
    ws: Workspace,
    default_agent: str,
    log: logging.Logger,
    *,
    on_init: Callable[[], None] | None = None,
    fixed_identity: bool = False,
) -> Operations:
    """The operations of a mount; ``fixed_identity``: every request is ``default_agent``'s (a view's daemon)."""
    identity: Identity = (
        FixedIdentity(lambda: ws.config, default_agent)
        if fixed_identity
        else IdentityResolver(lambda: ws.config, default_agent, CALLERS)
    )
    inodes = InodeTable()
    watch = _store_watch(ws, inodes, log)
    return Operations(build_router(ws), identity, inodes, log, store_root=ws.root, on_init=on_init, watch=watch)


def _store_watch(ws: Workspace, inodes: InodeTable, log: logging.Logger) -> StoreWatch | None:
    """The watch of the store, by which private zones are cached long where every change to the store can be
    learned (omxfs.fuse.watch); None where it cannot be: the zones are then cached for 0.5 s. inotify that
    cannot start (its per-user instance limit reached by other programs, no file descriptor left) stopped the
    whole mount before; the mount works without it, only its cache is shorter."""
    if not local_store(ws.root):
        log.info("the store is not on a local filesystem: private zones are cached for 0.5 s, not watched")
        return None
    try:
        return StoreWatch(ws.root, inodes, log)
    except OSError as exc:
        log.warning("inotify could not start (%s): private zones are cached for 0.5 s, not watched",
                    exc.strerror or exc)  # fmt: skip
        return None


def _open_log(ws: Workspace, pid: int) -> tuple[logging.Logger, TextIO, Path]:
    """The daemon's log, ``WS/.omxfs/logs/mount-<pid>.log``, opened now, before anything is mounted."""
    stream, rel = open_log(ws, pid)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LineFormatter())  # one line per record, whatever names agents chose
    log = logging.getLogger(f"{LOGGER}.{pid}")
    log.setLevel(logging.INFO)
    log.propagate = False
    for old in list(log.handlers):
        log.removeHandler(old)
    log.addHandler(handler)
    pyfuse3_log = logging.getLogger("pyfuse3")
    pyfuse3_log.addHandler(handler)
    return log, stream, rel


class _Noteworthy(logging.Handler):
    """Counts the records above INFO (refusals, internal errors): a view's log without any is not kept."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def _drop_if_quiet(ws: Workspace, rel: Path, noteworthy: _Noteworthy) -> None:
    """A view is started for every ``omx --as`` run: its log is kept only when it says more than start and stop."""
    if noteworthy.count == 0:
        remove_log(ws, rel)


def _detach_log(log: logging.Logger) -> None:
    for handler in list(log.handlers):
        log.removeHandler(handler)
        logging.getLogger("pyfuse3").removeHandler(handler)


def _check_underlying(root: Path, mountpoint: str) -> None:
    """The store is reached underneath the mount, never through it (which would deadlock or loop).

    The mount's device number comes from the mount table, not from a stat of the mountpoint: the daemon never
    makes requests to its own mount (a thread of a killed daemon waiting on its own mount cannot die).
    """
    entry = mount_at(mountpoint)
    if entry is None or entry.fstype != FSTYPE:
        raise MountError(f"{mountpoint} is not in the mount table after mounting")
    if os.stat(root / META_DIR, follow_symlinks=False).st_dev == entry.dev:
        raise MountError(f"the store is reached through the mount at {mountpoint}: refusing to serve it")


async def serve(
    ws_path: str | os.PathLike[str],
    mountpoint: str | os.PathLike[str],
    default_agent: str,
    *,
    allow_other: bool = False,
    detached: bool = False,
    view: bool = False,
    stop: StopSignals | None = None,
    on_unmounted: Callable[[str], None] | None = None,
    task_status: trio.TaskStatus[Mounted] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Mount the workspace at ``ws_path`` on ``mountpoint`` and serve it until unmounted or signalled.

    A stop signal that ``stop`` noted before this took the signals over ends it before anything is mounted; one
    that comes after mounting and before the mount answers unmounts it: either raises ``MountError`` (EINTR), never
    leaving a mount. ``on_unmounted`` is told the line the log ends with once the mount is gone (``unmounted ...``).

    ``view``: the daemon of one agent view (``omxfs run``, ``omxfs.view``): every request is ``default_agent``'s,
    the mount is unmounted by fusermount3 if this process dies, no mount record is written (the mount is the
    view's, not the machine's), and signals are left to the caller, which forwards them to the view's command;
    the caller ends the session with ``pyfuse3.terminate()``.
    """
    mountpoint = os.path.abspath(mountpoint)
    pid = os.getpid()
    with contextlib.ExitStack() as stack:
        signals: AsyncIterator[int] | None = None if view else stack.enter_context(trio.open_signal_receiver(*SIGNALS))
        if stop is not None:  # from here on the receiver has the signals: none falls between the two
            stop.check(f"stopped before {mountpoint} was mounted")
        store_fd = hold_store(ws_path)
        stack.callback(os.close, store_fd)
        root = Path(f"/proc/self/fd/{store_fd}")
        store_path = os.path.realpath(root)  # now: once mounted in place, resolving it would call ourselves
        ws = Workspace(root)
        ws.require_actor(default_agent)
        # made now, before the mount serves: a zone made on first use imports its module inside a request, and the
        # trio loop serves nothing else meanwhile (seconds on a loaded machine: a vim save timed out on it)
        ws.private, ws.handoff, ws.collab, ws.realtime  # noqa: B018
        log, stream, log_rel = _open_log(ws, pid)
        if view:
            noteworthy = _Noteworthy()
            log.addHandler(noteworthy)
            stack.callback(_drop_if_quiet, ws, log_rel, noteworthy)
        stack.callback(stream.close)
        stack.callback(_detach_log, log)
        log_fd = stream.fileno()
        if detached:  # a crash's traceback and faulthandler's dumps land in the log, not in /dev/null
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
        faulthandler.enable(log_fd)
        stack.callback(faulthandler.disable)

        initialized = trio.Event()  # set by Operations.init: the kernel's INIT is answered, the mount serves
        ops = build_ops(ws, default_agent, log, on_init=initialized.set, fixed_identity=view)
        log.info("mounting %s on %s as %s (pid %d)", store_path, mountpoint, default_agent, pid)
        try:
            pyfuse3.init(ops, mountpoint, mount_options(allow_other, view))
        except RuntimeError as exc:
            if ops.watch is not None:
                ops.watch.stop()
            raise MountError(f"cannot mount on {mountpoint}: {exc} (see the log {store_path}/{log_rel})") from None
        try:
            _guard(ops, mountpoint, log)
            await _serve_mounted(
                ws,
                ops,
                log,
                signals,
                initialized,
                root,
                store_path,
                mountpoint,
                default_agent,
                log_rel,
                view,
                task_status,
            )
        finally:
            if not view:
                remove_record(ws, pid)
            if ops.watch is not None:  # its invalidations need the session that close() ends
                ops.watch.stop()
            pyfuse3.close(unmount=True)
            ended = unmounted_line(mountpoint, guardian.release())
            log.info("%s; requests served: %s", ended, json.dumps(ops.requests, sort_keys=True))
            if on_unmounted is not None:
                on_unmounted(ended)


def unmounted_line(mountpoint: str, in_use: bool | None) -> str:
    """What the log and ``omxfs mount --foreground`` say once the session is closed; ``in_use``: the mount was
    detached while a program still had a file or its working directory there (``guardian.release``)."""
    if not in_use:
        return f"unmounted {mountpoint}"
    return (
        f"unmounted {mountpoint} while a program still had a file or its working directory there: what it wrote "
        "before is kept, and from now on it gets 'Transport endpoint is not connected' there"
    )


async def _serve_mounted(
    ws: Workspace,
    ops: Operations,
    log: logging.Logger,
    signals: AsyncIterator[int] | None,
    initialized: trio.Event,
    root: Path,
    store_path: str,
    mountpoint: str,
    default_agent: str,
    log_rel: Path,
    view: bool,
    task_status: trio.TaskStatus[Mounted],
) -> None:
    """Serve the mounted session until it ends; ``MountError`` if it ended before it answered (EINTR: by a
    signal), so that a mount stopped while it started is an error of its start, never a success."""
    stopped_by: list[int] = []
    answered = False
    async with trio.open_nursery() as nursery:

        async def fuse_loop() -> None:
            try:
                await pyfuse3.main()
            finally:
                nursery.cancel_scope.cancel()  # unmounted from outside, or terminated: stop the other tasks

        async def on_signal(signals: AsyncIterator[int]) -> None:
            async for signum in signals:
                stopped_by.append(signum)
                log.info("%s: unmounting", signal.Signals(signum).name)
                await end_session(ops)
                return

        nursery.start_soon(fuse_loop)
        if signals is not None:
            nursery.start_soon(on_signal, signals)
        with trio.move_on_after(READY_TIMEOUT):
            await initialized.wait()
        if not initialized.is_set():
            raise MountError(f"the kernel did not start the FUSE session on {mountpoint} within {READY_TIMEOUT:g} s")
        # The rest of the start-up is short and must finish even if a signal ends the session meanwhile:
        # otherwise serve() would return without started(), and a clean SIGTERM would look like a crash.
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(_check_underlying, root, mountpoint)
            record = MountRecord(
                pid=os.getpid(),
                mountpoint=mountpoint,
                store=store_path,
                default_agent=default_agent,
                started=datetime.now(UTC).isoformat(timespec="seconds"),
                log=str(log_rel),
            )
            if not view:
                await trio.to_thread.run_sync(write_record, ws, record)
                await trio.to_thread.run_sync(prune_records, ws.meta)
            log.info("ready: %s answers", mountpoint)
            end = functools.partial(end_session, ops)
            task_status.started(Mounted(record.pid, mountpoint, Path(record.store) / log_rel, end))
            answered = True
    await ops.close_all()
    if not answered and stopped_by:
        name = signal.Signals(stopped_by[0]).name
        raise MountError(f"{name}: stopped before {mountpoint} answered, and unmounted it", errno.EINTR)
    if not answered:
        raise MountError(f"{mountpoint} was unmounted before it answered")


def run(
    ws_path: str,
    mountpoint: str,
    default_agent: str,
    *,
    allow_other: bool = False,
    detached: bool = False,
    ready_fd: int | None = None,
    on_ready: Callable[[Mounted], None] | None = None,
    stop: StopSignals | None = None,
) -> str:
    """``omxfs mount --foreground``: serve until unmounted; readiness and startup errors go to ``ready_fd``.
    Returns the line the log ended with (``unmounted ...``); ``stop``: as ``serve`` says."""
    if detached:
        os.chdir("/")  # hold no directory busy (the workspace itself may be mounted over)
    ended: list[str] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            mounted = await nursery.start(
                functools.partial(
                    serve,
                    ws_path,
                    mountpoint,
                    default_agent,
                    allow_other=allow_other,
                    detached=detached,
                    stop=stop,
                    on_unmounted=ended.append,
                )
            )
            report_ready(ready_fd, f"ready {mounted.log}")
            if on_ready is not None:
                on_ready(mounted)

    try:
        trio.run(main)
    except BaseException as exc:
        error = _omx_error(exc)
        if error is None:
            report_ready(ready_fd, f"error the mount daemon failed: {exc!r}")
            raise
        report_ready(ready_fd, f"error {error.message}")
        raise error from None
    return ended[-1] if ended else f"unmounted {mountpoint}"


def _omx_error(exc: BaseException) -> OmxError | None:
    """The ``OmxError`` that ended the daemon, out of the exception groups trio's nurseries wrap it in."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, OmxError) else None
