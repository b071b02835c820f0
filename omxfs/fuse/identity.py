"""Which agent a FUSE request comes from (SPEC §3): the uid map, then the caller's ``OMX_AGENT``, then the default.

The kernel tells us the uid and the pid (in fact the thread id) of the calling process. The uid map in the
workspace config is real security: the kernel vouches for the uid. ``OMX_AGENT`` is cooperative: it is read
from ``/proc/<pid>/environ``, the environment the process started with, so it stops accidents, not attackers.

Reading ``/proc`` on every request would be wasteful, so the caller's ``OMX_*`` variables (``OMX_AGENT``, and the
``OMX_RUN``/``OMX_STEP``/``OMX_REQUEST`` that ``provenance.py`` records) are cached per process image. A pid alone
is not a safe key, since pids are reused: the cache is keyed by the pid and the process's start time (field 22
of ``/proc/<pid>/stat``), which a new process with a recycled pid cannot share. Nor is that enough: ``exec``
keeps pid and start time but brings a new environment (``subprocess`` with ``cwd=`` even makes requests from the
forked child *before* it execs), so the key also holds where the arguments and the environment lie in memory
(fields 48-51, ``arg_start`` to ``env_end``), which every ``exec`` moves (the stack's place is random; with address
randomization off, an exec whose program, arguments and environment have the lengths of the old image's could
keep them). The environment is read once per process image; whether the image changed is asked on every request,
by one ``pread`` of a ``stat`` file kept open per pid. The kernel regenerates it on every read, and a descriptor
opened for a process that has since exited answers ESRCH, never the stat of a new process that got the same pid:
a stale descriptor is noticed and replaced. So while its descriptor is kept, a process is the same one, and only
``exec`` is left to notice: the line's raw end (fields 48 on) is compared with the one its image was read with, no
field parsed. The resolver keeps the name it settled on per pid too, valid while the image and the config object
are the ones it was settled with.

Names that are malformed or not in the workspace are refused with ``ZoneDenied`` (EACCES), never guessed.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple, Protocol

from omxfs.errors import ZoneDenied
from omxfs.store.config import Config
from omxfs.store.names import AGENT_NAME

ENV_VAR = b"OMX_AGENT"
WATCHED_PREFIX = b"OMX_"  # the variables kept per process: identity and provenance
ENVIRON_LIMIT = 1 << 20  # bytes of /proc/<pid>/environ read at most; the kernel caps argv+env far below this
CACHE_SIZE = 4096  # processes remembered
OPEN_STATS = 128  # /proc/<pid>/stat descriptors kept open, for the busiest recent callers
STAT_LIMIT = 4096  # a stat line is a few hundred bytes


class ProcessGone(Exception):
    """The calling process exited before we could look at it."""


def parse_environ(data: bytes) -> dict[bytes, bytes]:
    """``/proc/<pid>/environ``: ``KEY=VALUE`` entries separated (and usually ended) by NUL bytes."""
    env: dict[bytes, bytes] = {}
    for entry in data.split(b"\0"):
        key, sep, value = entry.partition(b"=")
        if sep and key and key not in env:  # the first definition wins, as getenv(3) does
            env[key] = value
    return env


def split_image(stat_line: bytes) -> tuple[bytes, bytes]:
    """A ``/proc/<pid>/stat`` line's field 22 (starttime), and its end from field 48 on with the space before it
    (``arg_start`` … ``env_end``, ``exit_code``: what ``exec`` changes), as raw bytes: nothing is parsed.

    Field 2 is the command name in parentheses and may itself contain spaces and parentheses, so the fields are
    counted from the last ``)``. Fields are numbers separated by one space, so a later line that ends with this end
    has the same fields 48 on (the space keeps ``123`` from matching ``9123``).
    """
    _, paren, rest = stat_line.rpartition(b")")
    fields = rest.split(None, 45)  # fields 3 to 47, then the rest as written
    if not paren or len(fields) < 46 or len(fields[45].split()) < 4:
        raise ValueError(f"unexpected /proc stat line: {stat_line[:80]!r}")
    return fields[19], b" " + fields[45]


class _Process(NamedTuple):
    """A caller whose ``stat`` descriptor is kept: while it reads, it is this process (a reused pid is another)."""

    fd: int
    #: the end of its stat line when ``env`` was read (``split_image``): while the line ends so, no exec happened
    tail: bytes
    env: Mapping[bytes, bytes]


class CallerEnvironments:
    """The ``OMX_*`` variables of calling processes' starting environments, cached per process image.

    Shared by the identity resolver (``OMX_AGENT``) and the provenance reader (``OMX_RUN`` …), so a request costs
    one ``stat`` read whichever of them asks. ``proc`` is the proc filesystem's root, replaceable in tests.
    Thread-safe: requests are resolved in worker threads. The mapping ``of`` returns for a process image is one
    object for as long as the image is remembered, so a caller may key its own conclusions on it.
    """

    def __init__(self, proc: Path = Path("/proc"), cache_size: int = CACHE_SIZE) -> None:
        self._proc = proc
        self._cache_size = cache_size
        # Both in insertion order, the oldest dropped first: an LRU's reordering on every hit costs more per
        # request than the rare re-read of an image evicted while still in use.
        self._images: dict[tuple[int, bytes, bytes], Mapping[bytes, bytes]] = {}  # (pid, starttime, tail) -> env
        self._processes: dict[int, _Process] = {}  # pid -> its kept stat descriptor and current image
        self._lock = threading.Lock()  # held for every change, and for each read of a kept descriptor

    def of(self, pid: int) -> Mapping[bytes, bytes]:
        """``OMX_*`` of process ``pid``; ProcessGone if it exited, ZoneDenied if it may not be inspected."""
        if pid <= 0:
            raise ProcessGone(f"pid {pid}")
        with self._lock:  # so no thread closes the descriptor while another reads it
            process = self._processes.get(pid)
            if process is not None:
                try:
                    line = os.pread(process.fd, STAT_LIMIT, 0)
                except OSError:
                    line = b""  # the process exited (ESRCH): this pid may be someone else's now
                if line.endswith(process.tail):
                    return process.env  # the same process (its descriptor reads), the same image
                if not line:
                    del self._processes[pid]
                    os.close(process.fd)
        return self._settle(pid)

    def _settle(self, pid: int) -> Mapping[bytes, bytes]:
        """A new process or image: a descriptor of its own, its environment read (or remembered), both kept.

        The descriptor is of the thread's own ``task/<pid>/stat`` (the kernel names the calling thread): the same
        fields for our purpose, without the sums over every thread of the process that ``<pid>/stat`` makes on
        each read.
        """
        fd = self._open(pid, f"task/{pid}/stat")
        try:
            for _ in range(3):
                starttime, tail = split_image(self._stat(fd, pid))
                key = (pid, starttime, tail)
                env = self._images.get(key)  # a dict read needs no lock: every change is made under it
                if env is None:
                    environ = parse_environ(self._read(pid, "environ", ENVIRON_LIMIT))
                    env = {name: v for name, v in environ.items() if name.startswith(WATCHED_PREFIX)}
                    # The environment was read after the stat line: if the process exec'd in between, the line
                    # ends otherwise now, and what was read must not be kept as the old image's: read again. (If
                    # it exited, its descriptor answers ESRCH: ProcessGone, whoever has the pid now.)
                    if not self._stat(fd, pid).endswith(tail):
                        continue
                self._keep(pid, _Process(fd, tail, env), key)
                fd = -1
                return env
        finally:
            if fd >= 0:
                os.close(fd)
        raise ZoneDenied(f"pid {pid} keeps changing (exec) while its identity is read")

    def _keep(self, pid: int, process: _Process, key: tuple[int, bytes, bytes]) -> None:
        with self._lock:
            self._images.setdefault(key, process.env)
            while len(self._images) > self._cache_size:  # the oldest image first
                del self._images[next(iter(self._images))]
            old = self._processes.pop(pid, None)
            if old is not None:  # another thread settled the pid too, or it exec'd: one descriptor is enough
                os.close(old.fd)
            self._processes[pid] = process
            while len(self._processes) > OPEN_STATS:  # the longest kept first
                os.close(self._processes.pop(next(iter(self._processes))).fd)

    def cached(self) -> int:
        """How many process images are remembered."""
        with self._lock:
            return len(self._images)

    def close(self) -> None:
        """Close the kept descriptors (the resolver stays usable: they are reopened on demand)."""
        with self._lock:
            while self._processes:
                os.close(self._processes.popitem()[1].fd)

    def _stat(self, fd: int, pid: int) -> bytes:
        try:
            line = os.pread(fd, STAT_LIMIT, 0)
        except OSError as exc:
            raise self._unreadable(pid, exc) from exc
        if not line:
            raise ProcessGone(f"pid {pid}")
        return line

    def _read(self, pid: int, name: str, limit: int) -> bytes:
        fd = self._open(pid, name)
        try:
            return os.read(fd, limit)
        except OSError as exc:
            raise self._unreadable(pid, exc) from exc
        finally:
            os.close(fd)

    def _open(self, pid: int, name: str) -> int:
        try:
            return os.open(self._proc / str(pid) / name, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise self._unreadable(pid, exc) from exc

    @staticmethod
    def _unreadable(pid: int, exc: OSError) -> Exception:
        if exc.errno in (errno.ENOENT, errno.ESRCH):
            return ProcessGone(f"pid {pid}")
        # EACCES/EPERM: a process we may not inspect (another user's, or not dumpable) cannot claim a name.
        return ZoneDenied(f"cannot read the identity of pid {pid}: {exc.strerror}")


#: the mount's cache, shared by its identity resolver and its provenance reader
CALLERS = CallerEnvironments()


class Identity(Protocol):
    """Who makes a FUSE request, from the uid and pid the kernel reports; ZoneDenied when nobody may."""

    default_agent: str

    def resolve(self, uid: int, pid: int) -> str: ...


class FixedIdentity:
    """A view's daemon (``omxfs run --as NAME``): every request is NAME's, whoever the caller claims to be.

    Only the processes of one view reach this daemon (its mount is bound into that view alone, and the kernel
    lets no other uid in), so nothing is looked up: no uid map, no ``OMX_AGENT``. The name is still checked
    against the current config on every request, so an agent removed from the workspace stops acting at once
    (checked once per config object: the provider gives a new one whenever the file changed).
    """

    def __init__(self, config_provider: Callable[[], Config], agent: str) -> None:
        self._config = config_provider
        self.default_agent = agent
        self._checked: Config | None = None  # the last config that knew the name

    def resolve(self, uid: int, pid: int) -> str:
        config = self._config()
        if config is not self._checked:
            known_agent(config, self.default_agent, "the view's identity (omxfs run --as)")
            self._checked = config
        return self.default_agent


class IdentityResolver:
    """Resolves ``(uid, pid)`` to an agent name, in the order of SPEC §3.

    ``config_provider`` returns the current workspace config (it is re-read when the file changes, so agents
    and uid mappings added while mounted take effect); ``environments`` reads the callers' ``OMX_AGENT``.
    Past the uid map the name depends on the caller's environment and the config alone, so it is kept per pid
    with the two objects it came from and given again while ``environments`` and the provider return those same
    objects (a new image of the process, a changed config file: new objects, the name settled again).
    """

    def __init__(
        self, config_provider: Callable[[], Config], default_agent: str, environments: CallerEnvironments
    ) -> None:
        self._config = config_provider
        self.default_agent = default_agent
        self.environments = environments
        # pid -> (its OMX_* variables, the config, the name they gave), oldest first, as CallerEnvironments' caches
        self._named: dict[int, tuple[Mapping[bytes, bytes], Config, str]] = {}
        self._lock = threading.Lock()

    def resolve(self, uid: int, pid: int) -> str:
        config = self._config()
        mapped = config.uids.get(uid)
        if mapped is not None:
            return known_agent(config, mapped, f"the uid map entry for uid {uid}")
        try:
            env = self.environments.of(pid)
        except ProcessGone:  # the request outlived its process: nothing was claimed, the mount's default answers
            return known_agent(config, self.default_agent, "the mount's default identity (--as)")
        named = self._named.get(pid)
        if named is not None and named[0] is env and named[1] is config:
            return named[2]
        name = self._claimed_or_default(config, env, uid, pid)
        with self._lock:
            self._named[pid] = (env, config, name)
            while len(self._named) > CACHE_SIZE:
                del self._named[next(iter(self._named))]
        return name

    def _claimed_or_default(self, config: Config, env: Mapping[bytes, bytes], uid: int, pid: int) -> str:
        """``OMX_AGENT`` if the process set it, else the default; refused (ZoneDenied) if not a free, known name."""
        claimed = env.get(ENV_VAR)
        if claimed is None:
            return known_agent(config, self.default_agent, "the mount's default identity (--as)")
        name = claimed.decode("utf-8", "replace")
        bound = config.bound_uids(name)
        if bound:  # a name the uid map binds is that uid's alone: claiming it is refused, never guessed
            raise ZoneDenied(
                f"OMX_AGENT={name} of pid {pid} (uid {uid}) refused: the uid map binds {name} to uid "
                f"{', '.join(map(str, bound))}, and only that uid acts as {name}"
            )
        return known_agent(config, name, f"OMX_AGENT of pid {pid}")


def known_agent(config: Config, name: str, source: str) -> str:
    """``name``, if it is well-formed and an agent of the workspace; else ZoneDenied naming ``source``."""
    if not AGENT_NAME.fullmatch(name):
        raise ZoneDenied(f"malformed agent name {name!r} from {source}")
    if not config.knows(name):
        raise ZoneDenied(f"unknown agent {name!r} from {source}: add it with `omxfs init WS --agent {name}`")
    return name
