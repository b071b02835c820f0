"""``omxfs run WS --as NAME -- COMMAND``: one process that serves a view's daemon and runs COMMAND in the view.

The launcher mounts the view's daemon (``daemon.serve(view=True)``: every request is NAME's) on a private
directory (mode 0700, in ``$XDG_RUNTIME_DIR`` or ``/tmp``), starts bubblewrap with the view's command line, and
waits. The daemon lives exactly as long as its view: when COMMAND ends, the launcher unmounts and exits with
COMMAND's status; if the launcher is killed, bwrap (``--die-with-parent``) kills the view and a small process of
its own (``cleanup.py``) unmounts the daemon and removes the directory. One daemon per view keeps that simple:
views of the same agent share nothing but the store, which is built for several daemons at once.

Limits: COMMAND's whole tree, bwrap included, is held to the view's ``Limits`` (processes, memory, file size:
``omxfs.cgroups``), the command line's, else the workspace config's, else the defaults; the daemon is not. A view
that reaches one ends with a line on stderr that names it, and the view's log (``.omxfs/logs/``) says so too.

Signals: SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to the launcher are forwarded to COMMAND (bwrap's own
PID 1 in the view does not forward). SIGINT and SIGQUIT are forwarded too, unless the launcher is in the
foreground of a terminal: the terminal sends those to COMMAND itself, which shares the launcher's process group
(bwrap, in that group too, ignores them: ``_terminal_signals_ignored``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import json
import logging
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import trio

from omxfs import cgroups
from omxfs.checkpoints import branches
from omxfs.checkpoints.branches import REVIEW, hold_running
from omxfs.checkpoints.held import remove_tree
from omxfs.checkpoints.review import Review, lineage, pending_branches
from omxfs.checkpoints.views import running_views, view_starting
from omxfs.errors import InvalidInput, MountError
from omxfs.fuse.mounts import check_fuse, check_pyfuse3, omx_mounts
from omxfs.limits import Limits, resolve
from omxfs.store.layout import AGENTS, BRANCH_MARK, META_DIR, REVIEW_MARKS
from omxfs.store.names import AGENT_NAME, AGENT_RULE
from omxfs.store.workspace import Workspace
from omxfs.view import namespaces, review_mount, seccomp
from omxfs.view.host_interfaces import why_not_bindable
from omxfs.view.locate import Store, locate
from omxfs.view.sandbox import SYSTEM_DIRS, Bind, ViewSpec, bwrap_args, inside, runtime_dirs, start_dir
from omxfs.view.scope import DEFAULT_SIGNALS_ENV

FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGQUIT)
#: the signals Python ignores from its start (SIGXFSZ: only where the platform has it, as Linux does)
PYTHON_IGNORED = ("SIGPIPE", "SIGXFSZ")
CLEANUP = Path(__file__).with_name("cleanup.py")
#: cleanup processes, referenced so that they are never collected (and warned about) while they wait
_cleanups: list[subprocess.Popen[bytes]] = []
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: the view's $HOME when the caller's lies inside the workspace (in the view's private /tmp)
EMPTY_HOME = "/tmp/home"


def run(
    workspace: str,
    agent: str,
    command: Sequence[str],
    *,
    binds: Sequence[Bind] = (),
    network: bool = True,
    branch: str | None = None,
    parent: str | None = None,
    limits: Limits | None = None,
) -> int:
    """Run ``command`` in ``agent``'s view of ``workspace``; its exit status (128+N if killed by signal N).

    With ``branch`` (``review`` for ``--review``), the view sees the zone through an overlay whose upper layer holds
    the run's changes apart as that branch of the zone (``omxfs.checkpoints.review``): nobody else sees them until
    ``omxfs accept``; other branches of the zone may run beside it. With ``parent`` too (``--from``), a new branch is
    made from that pending branch: its overlay's lower layers are the parent's upper layer over the zone. ``limits``
    are the command line's: a limit it leaves unset is the workspace config's, else the default."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise MountError("omxfs run needs bubblewrap: install it (apt-get install bubblewrap)", errno.ENOENT)
    check_pyfuse3()
    check_fuse()
    if os.geteuid() != 0 and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        # fusermount3 opens the device with the caller's file-system uid: 0600 (some containers) keeps users out
        raise MountError(
            f"a view's daemon cannot mount here: /dev/fuse is not open to uid {os.geteuid()}; as root, "
            "`chmod 0666 /dev/fuse` (its mode on a standard Debian/Ubuntu), or run omxfs run as root",
            errno.EACCES,
        )
    store = locate(workspace)
    try:  # now: a mount this launcher detaches below would leave its directory unreachable
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    with contextlib.ExitStack() as stack:
        stack.callback(os.close, store.fd)
        if os.geteuid() == 0:
            namespaces.private_mounts()
            if store.covered_at is not None:
                namespaces.detach(store.covered_at)
            shown = [*SYSTEM_DIRS, *runtime_dirs(), *(bind.source for bind in binds), os.path.realpath(store.path)]
            namespaces.drop_fuse_mounts(shown)
        elif store.covered_at is not None:
            raise MountError(
                f"{store.covered_at} is mounted over its own store, which a view as uid {os.geteuid()} cannot bind: "
                f"unmount it and mount it elsewhere (`omxfs mount {store.path} MOUNTPOINT`) or run omxfs run as root",
                errno.EBUSY,
            )
        _check_identity(store, agent)
        chosen = resolve(limits or Limits(), Workspace(Path(store.reached)).config.limits)
        pending = Review(Workspace(Path(store.reached), shown_as=workspace), agent, branch or REVIEW)
        if branch is not None:
            parent = pending.run_parent(parent)
            _check_branch_alone(pending, parent)  # before the branch is made: a refused run leaves nothing pending
            new = not pending.pending
            pending.prepare(parent)
            stack.enter_context(hold_running(pending.dir, pending.called))
            try:  # again, held: of two relatives started at once, one sees the other
                _check_branch_alone(pending, parent)
            except MountError:
                if new:  # made by this run: nothing pending is left by it, as by the refusal above
                    remove_tree(pending.dir)
                raise
        elif parent is not None:
            raise InvalidInput(f"--from {parent} makes a branch from another: give the new branch's --branch NAME")
        else:
            pending.refuse_plain_run()
        # a checkpoint of the zone as the view finds it; the view's record, before the zone is opened (restore.py),
        # made between accepts of the zone's branches, never during one (an accept after it sees it and waits)
        with branches.no_accept_running(pending.ws.meta, agent):
            pending.refuse_if_half_accepted("a view of the zone")
            checkpoint = branch is None  # a branch's view writes no zone; its branch made its base checkpoint
            stack.enter_context(view_starting(Workspace(Path(store.reached)), agent, _warn, checkpoint=checkpoint))
            if branch is None:  # again, recorded: a branch started meanwhile either sees this view or is seen here
                pending.refuse_plain_run()
        agents_fd = _open_at(store.fd, AGENTS, store)
        stack.callback(os.close, agents_fd)
        own_fd = _open_at(agents_fd, agent, store)
        stack.callback(os.close, own_fd)
        meta_fd = _open_at(store.fd, META_DIR, store)
        stack.callback(os.close, meta_fd)
        if not os.access(f"/proc/self/fd/{own_fd}", os.W_OK | os.X_OK):
            raise MountError(
                f"{store.path}/{AGENTS}/{agent} is not writable by uid {os.getuid()}: a view acts with your own "
                "uid on the store, so run it as the store's owner (or chown the store to the agent's user)",
                errno.EACCES,
            )
        for bind in binds:
            _check_bind(bind, store)
        mountpoint = tempfile.mkdtemp(prefix=f"omxfs-view-{agent}-", dir=_runtime_dir())
        stack.callback(_remove_quietly, mountpoint)
        stack.callback(os.close, _start_cleanup(mountpoint))  # once the daemon is unmounted: nothing left to do
        zone_fd, overlay, siblings = own_fd, None, []
        if branch is not None:
            # by path (the store's path leads to the store here: see above), mounted on the branch's own empty
            # directory in a mount namespace that only this launcher and its view hold (review_mount.py)
            real = Path(os.path.realpath(store.path))
            upper, work, merged, *middle = (
                real / p.relative_to(pending.ws.root)
                for p in (pending.upper, pending.work, pending.merged, *(b.upper for b in pending.ancestors()))
            )
            siblings = [BRANCH_MARK + b.branch for b in pending_branches(pending.ws, agent) if b != pending]
            marks = _sibling_marks(pending.dir / REVIEW_MARKS, siblings)
            layers = review_mount.Overlay(
                str(real / AGENTS / agent),
                str(upper),
                str(work),
                str(merged),
                tuple(map(str, middle)),
                None if marks is None else str(real / marks.relative_to(pending.ws.root)),
            )
            if os.geteuid() == 0:  # in the namespace of its own made above: mounted here, the view binds its root
                zone_fd = layers.mount(own_fd)
                stack.callback(layers.unmount)
                stack.callback(os.close, zone_fd)
            else:  # by the view's first process, in a user namespace of its own
                overlay = layers
        spec = ViewSpec(
            agent=agent,
            workspace=store.workspace,
            daemon_mount=mountpoint,
            own_fd=zone_fd,
            meta_fd=meta_fd,
            cwd=start_dir(store.workspace, agent, cwd),
            command=command,
            binds=binds,
            network=network,
            home=_view_home(os.environ.get("HOME"), store.workspace),
            privileged=os.geteuid() == 0,
            siblings=tuple(siblings),
        )
        try:
            return trio.run(_serve_and_run, bwrap, spec, store, chosen, overlay)
        except BaseExceptionGroup as group:  # a nursery's: the one error inside is the message
            raise _single(group) from None


def _sibling_marks(marks: Path, names: Sequence[str]) -> Path | None:
    """``marks`` made anew with one empty directory per name (a branch's siblings, ``@NAME``), the overlay's topmost
    lower layer, on which the view binds them; None (and no such layer) where there are none. It lies under the
    store's ``.omxfs/``, which no view can write."""
    if os.path.lexists(marks):
        remove_tree(marks)
    if not names:
        return None
    os.mkdir(marks, 0o700)
    for name in names:
        os.mkdir(marks / name, 0o555)
    return marks


def _warn(line: str) -> None:
    print(f"omxfs run: {line}", file=sys.stderr)


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    errors = group.exceptions
    while len(errors) == 1 and isinstance(errors[0], BaseExceptionGroup):
        errors = errors[0].exceptions
    return errors[0] if len(errors) == 1 else group


def _check_branch_alone(review: Review, parent: str | None) -> None:
    """A branch's view runs beside its siblings' alone (its own is held by ``branches.hold_running``): a plain view
    would write into the overlay's lower layer (the zone) under it, and so would the view of a branch it is made from
    (``parent``, and that one's parent...) or of one made from it, whose lower layer its upper layer is."""
    pending = pending_branches(review.ws, review.zone)
    siblings = {branches.running_pid(branch.dir) for branch in pending}
    plain = [pid for pid in running_views(review.ws.meta, review.zone) if pid not in siblings and pid != os.getpid()]
    if plain:
        raise MountError(
            f"a view of {review.zone} is running (pid {', '.join(map(str, plain))}): a review run needs the zone to "
            "itself; end that view first",
            errno.EBUSY,
        )
    above = lineage(review.ws, review.zone, parent)
    below = [branch for branch in pending if branch.descends_from(review)]
    for relative, how in [*((b, "it is made from") for b in above), *((b, "made from it") for b in below)]:
        pid = branches.running_pid(relative.dir)
        if pid is not None:
            raise MountError(
                f"{relative.called}, {how}, is running in a view (pid {pid}): one's upper layer is the other's lower "
                f"layer, which must not change under it; end that view first",
                errno.EBUSY,
            )


async def _serve_and_run(
    bwrap: str, spec: ViewSpec, store: Store, limits: Limits, overlay: review_mount.Overlay | None = None
) -> int:
    from omxfs.fuse import daemon

    async with trio.open_nursery() as nursery:
        serve = functools.partial(daemon.serve, store.reached, spec.daemon_mount, spec.agent, view=True)
        mounted = await nursery.start(serve)
        log = logging.getLogger(f"{daemon.LOGGER}.{os.getpid()}")  # the view's daemon's log, while it serves
        try:
            with cgroups.confined(limits, cgroups.view_name(os.getpid()), _warn) as box:
                log.info("view limits: %s (%s)", limits.described(), box.how)
                status = await _run_view(bwrap, spec, box, overlay)
                reached = box.reached(status)
            for limit in reached:
                line = f"{'stopped: ' if status else ''}the view {limit.message()}"
                _warn(line)
                log.warning("%s", line)
            return status
        finally:
            await mounted.end()  # serve() returns: the session ends, the mount is removed


async def _run_view(
    bwrap: str, spec: ViewSpec, box: cgroups.Confinement, overlay: review_mount.Overlay | None = None
) -> int:
    """Run the view; ``overlay``: a branch's, to be mounted by the view's first process (an unprivileged launcher's)."""
    syscalls = _seccomp_filter(spec.privileged)
    info_read, info_write = os.pipe()
    spec = dataclasses.replace(spec, info_fd=info_write, seccomp_fd=syscalls)
    args = bwrap_args(bwrap, spec)
    passed = (info_write, spec.own_fd, spec.meta_fd, syscalls)
    report_read, report_write = os.pipe() if overlay is not None else (-1, -1)  # why the overlay's mount failed
    try:
        # Started from this (the main) thread, not by trio.lowlevel.open_process, which forks from a worker thread:
        # --die-with-parent is the kernel's parent-death signal, sent when the *thread* that forked exits, and
        # trio retires idle worker threads after 10 s, which killed every view that ran longer.
        env = dict(os.environ) if spec.home is None else {**os.environ, "HOME": spec.home}
        mount = None
        if overlay is not None:
            mount = overlay.in_namespace_of_its_own(spec.own_fd, report_write, box.process_limit())
        with _terminal_signals_ignored(env):
            process = subprocess.Popen(box.command(args), pass_fds=(*passed, *box.pass_fds), env=env, preexec_fn=mount)
        box.start(process.pid)  # in its cgroups, with its limits, before bwrap runs
    except subprocess.SubprocessError:  # raised for the overlay's mount alone, which wrote why it failed
        os.close(info_read)
        assert overlay is not None
        raise overlay.reported(_pending(report_read)) from None
    except OSError as exc:
        os.close(info_read)
        raise MountError(f"cannot start bubblewrap: {exc.strerror}", exc.errno or errno.EIO) from None
    finally:
        for fd in (info_write, syscalls, report_read, report_write):
            if fd >= 0:
                os.close(fd)
    # The receiver outlives the nursery: the forwarding task must be done with it before it closes (a task
    # cancelled while waiting on a closed receiver ends in a RuntimeError, not in its cancellation).
    with trio.open_signal_receiver(*FORWARDED) as signals:
        async with trio.open_nursery() as nursery:
            child = await _read_child_pid(info_read)
            nursery.start_soon(_forward, signals, child, process.pid)
            status = await _wait(process)
            nursery.cancel_scope.cancel()
    if child is None and status != 0:
        # bwrap makes a user namespace as root too: a limit of 0 (user.max_user_namespaces) or a container's
        # seccomp stops root as well, where the other two switches stop only unprivileged users
        raise MountError(
            f"the view could not be set up (bubblewrap exited with {status}, see its message above): views need "
            "user namespaces; enable them (sysctl user.max_user_namespaces above 0, "
            "kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0; a container must "
            "allow them)" + ("" if spec.privileged else " or run omxfs run as root"),
            errno.EPERM,
        )
    return 128 - status if status < 0 else status


@contextlib.contextmanager
def _terminal_signals_ignored(env: dict[str, str]) -> Iterator[None]:
    """bwrap starts with SIGINT and SIGQUIT ignored; ``scope.py`` gives COMMAND back the dispositions it would have had.

    A terminal's Ctrl-C goes to its whole foreground process group, bwrap's outer process included, which does not
    handle it: it died, and with it (``--die-with-parent``) the view, COMMAND's own Ctrl-C handler killed halfway.
    Ignored dispositions survive exec, so they are set around the start of bwrap only, and COMMAND gets the default
    back unless the launcher itself was started with the signal ignored (a background job's SIGINT)."""
    restore = [signal.Signals(signum).name for signum in TERMINAL_SIGNALS if signal.getsignal(signum) != signal.SIG_IGN]
    # and the two that scope.py, as any Python program, starts with ignored, which an exec keeps: COMMAND gets the
    # defaults a shell gives (``yes | head -1`` ends; a write past --max-file-size kills with SIGXFSZ, as meant)
    env[DEFAULT_SIGNALS_ENV] = ",".join([*restore, *PYTHON_IGNORED])
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in TERMINAL_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: set outside Python, which cannot be put back (never so for these)
                signal.signal(signum, handler)


def _seccomp_filter(privileged: bool) -> int:
    """``seccomp.py``'s filter for bwrap (set-ID modes too for root); on an unknown ABI a view is refused, never
    left unfiltered."""
    fd = seccomp.memfd(set_id=privileged)
    if fd is None:
        raise MountError(
            f"omxfs run has no seccomp filter for {platform.machine()} (x86_64, aarch64, riscv64): a view there could "
            "type into your terminal",
            errno.ENOSYS,
        )
    return fd


def _pending(fd: int) -> bytes:
    """What a pipe holds now, without waiting for more."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b""


async def _wait(process: subprocess.Popen[bytes]) -> int:
    """The process's exit status, waited for without a thread: its pidfd is readable once it has exited."""
    pidfd = os.pidfd_open(process.pid)
    try:
        await trio.lowlevel.wait_readable(pidfd)
    finally:
        os.close(pidfd)
    return process.wait()


async def _read_child_pid(fd: int) -> int | None:
    """bwrap's ``--info-fd`` JSON: the view's PID 1 as the host numbers it; None if the setup failed."""
    data = b""
    async with trio.lowlevel.FdStream(fd) as stream:
        while chunk := await stream.receive_some():
            data += chunk
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


async def _forward(signals: AsyncIterator[int], child: int | None, bwrap_pid: int) -> None:
    async for signum in signals:
        if signum in TERMINAL_SIGNALS and _terminal_foreground():
            continue  # the terminal delivered it to the whole process group, COMMAND included
        targets = _command_pids(child) or [bwrap_pid]
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)


def _command_pids(child: int | None) -> list[int]:
    """COMMAND: the child of the view's PID 1 (bwrap's reaper, which ignores signals it is not built to pass)."""
    if child is None:
        return []
    try:
        return [int(pid) for pid in Path(f"/proc/{child}/task/{child}/children").read_text().split()]
    except OSError:
        return []


def _terminal_foreground() -> bool:
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


def _check_identity(store: Store, agent: str) -> None:
    """The agent exists, and a name the uid map binds is that uid's own (root acts for anyone: it owns the store)."""
    if not AGENT_NAME.fullmatch(agent):
        raise MountError(f"{agent!r} is not a valid agent name: {AGENT_RULE}", errno.EINVAL)
    ws = Workspace(Path(store.reached))
    if not ws.config.knows(agent):
        raise MountError(
            f"no agent named {agent!r} in {store.workspace}: add it with "
            f"`omxfs init {store.workspace} --agent {agent}`",
            errno.EACCES,
        )
    uid = os.getuid()
    bound = ws.config.bound_uids(agent)
    if bound and uid != 0 and uid not in bound:
        raise MountError(
            f"the uid map binds {agent} to uid {', '.join(map(str, bound))}: only that uid (or root) may run as "
            f"{agent}, not uid {uid}",
            errno.EACCES,
        )


def _check_bind(bind: Bind, store: Store) -> None:
    """A bind neither covers the workspace nor shows the store: its source is not the store, nor inside it, nor a
    directory that holds it (the raw store read-write would undo every zone rule: other agents' zones, the config,
    the history), nor an omxfs mount, inside one or holding one (a shared mount believes ``OMX_AGENT``), nor the
    host's kernel interfaces or service sockets (``host_interfaces.py``: the host's ``/proc`` and more). The store
    is compared by path and by device and inode, so another path to the same directory counts too; called once a
    store under a mount in place is uncovered, so its path leads to the store."""
    option = "--ro-bind" if bind.read_only else "--bind"
    if inside(bind.dest, store.workspace):
        raise MountError(f"{option} {bind.dest}: nothing may cover the workspace inside a view", errno.EINVAL)
    source = os.path.realpath(bind.source)
    stores = {os.path.realpath(store.path), store.workspace}
    if any(inside(source, path) or inside(path, source) for path in stores) or _same_tree(source, store):
        raise MountError(
            f"{option} {bind.source}: this is, holds or lies inside the workspace or its store, which a view may show "
            "only at the workspace's path (else the raw store: every zone, the config, the history): bind a "
            "directory beside the workspace",
            errno.EINVAL,
        )
    for point in omx_mounts():
        if inside(point, source) or inside(source, point):
            raise MountError(
                f"{option} {bind.source}: this is, holds or lies inside the omxfs mount at {point}, where a process "
                "names its agent itself (OMX_AGENT): a view reaches the workspace through its own daemon only, as "
                "its agent; bind a directory without an omxfs mount in it",
                errno.EINVAL,
            )
    why = why_not_bindable(bind.source)
    if why is not None:
        raise MountError(f"{option} {bind.source}: {why}", errno.EINVAL)


def _same_tree(source: str, store: Store) -> bool:
    """Whether ``source`` or a directory above it is the store, or ``source`` is a directory above the store,
    judged by device and inode (a bind mount or a hard-to-see alias on the host)."""
    store_id = _identity(os.fstat(store.fd))
    source_id = _identity_of(source)
    if source_id is None:
        return False
    if any(_identity_of(path) == store_id for path in _self_and_above(source)):
        return True
    return any(_identity_of(path) == source_id for path in _self_and_above(os.path.realpath(store.path)))


def _self_and_above(path: str) -> list[str]:
    paths = [path]
    while (parent := os.path.dirname(paths[-1])) != paths[-1]:
        paths.append(parent)
    return paths


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _identity_of(path: str) -> tuple[int, int] | None:
    try:
        return _identity(os.stat(path))
    except OSError:
        return None


def _view_home(home: str | None, workspace: str) -> str | None:
    """The caller's ``$HOME``, shown empty in the view; one inside the workspace would be a zone (another agent's,
    read-only), so the view gets an empty one of its own instead."""
    if home is not None and inside(os.path.abspath(home), workspace):
        return EMPTY_HOME
    return home


def _open_at(dir_fd: int, name: str, store: Store) -> int:
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except OSError as exc:
        raise MountError(
            f"cannot open {name} in the store {store.path}: {exc.strerror} (complete it with `omxfs init`)",
            exc.errno or errno.EIO,
        ) from None


def _runtime_dir() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK):
        return runtime
    return tempfile.gettempdir()


def _start_cleanup(mountpoint: str) -> int:
    """Start ``cleanup.py`` for ``mountpoint``; the write end of its pipe, which only this process holds."""
    read_end, write_end = os.pipe()  # both close on exec: bwrap, fusermount3 and the guardian never hold them
    try:
        _cleanups.append(
            subprocess.Popen(
                [sys.executable, "-I", "-S", str(CLEANUP), mountpoint],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,
            )
        )
    except OSError as exc:
        os.close(write_end)
        raise MountError(f"cannot start the view's cleanup: {exc.strerror}", exc.errno or errno.EIO) from None
    finally:
        os.close(read_end)
    return write_end


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(path)
