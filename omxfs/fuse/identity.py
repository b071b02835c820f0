"""Which agent a FUSE request comes from (SPEC §3): the uid map, then the caller's ``OMX_AGENT``, then the default.

The kernel tells us the uid and the pid (in fact the thread id) of the calling process. The uid map in the
workspace config is real security: the kernel vouches for the uid. ``OMX_AGENT`` is cooperative: it is read
from ``/proc/<pid>/environ``, the environment the process started with, so it stops accidents, not attackers.

Reading ``/proc`` on every request would be wasteful, so the caller's ``OMX_*`` variables (``OMX_AGENT``, and the
``OMX_RUN``/``OMX_STEP``/``OMX_REQUEST`` that ``provenance.py`` records) are cached per process image. A pid alone
is not a safe key, since pids are reused: the cache is keyed by the pid and the process's start time (field 22
of ``/proc/<pid>/stat``), which a new process with a recycled pid cannot share. Nor is that enough: ``exec``
keeps pid and start time but brings a new environment (``subprocess`` with ``cwd=`` even makes requests from the
forked child *before* it execs), so the key also holds where the environment lies in memory (fields 48-49,
``env_start``/``env_end``), which every ``exec`` changes. The key is re-read on every request, the environment only
once per process image. The re-read is one ``pread`` of a ``stat`` file kept open per pid: the kernel regenerates it
on every read, and a descriptor opened for a process that has since exited answers ESRCH, never the stat of a new
process that got the same pid, so a stale descriptor is noticed and replaced.

Names that are malformed or not in the workspace are refused with ``ZoneDenied`` (EACCES), never guessed.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

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


def parse_image_key(stat_line: bytes) -> tuple[int, int, int]:
    """Fields 22 (starttime), 48 and 49 (env_start, env_end) of ``/proc/<pid>/stat``: one process image.

    Field 2 is the command name in parentheses and may itself contain spaces and parentheses, so the fields
    are counted from the last ``)``: ``fields[0]`` is field 3.
    """
    _, paren, rest = stat_line.rpartition(b")")
    fields = rest.split()
    if not paren or len(fields) < 47:
        raise ValueError(f"unexpected /proc stat line: {stat_line[:80]!r}")
    return int(fields[19]), int(fields[45]), int(fields[46])


class CallerEnvironments:
    """The ``OMX_*`` variables of calling processes' starting environments, cached per process image.

    Shared by the identity resolver (``OMX_AGENT``) and the provenance reader (``OMX_RUN`` …), so a request costs
    one ``stat`` read whichever of them asks. ``proc`` is the proc filesystem's root, replaceable in tests.
    Thread-safe: requests are resolved in worker threads.
    """

    def __init__(self, proc: Path = Path("/proc"), cache_size: int = CACHE_SIZE) -> None:
        self._proc = proc
        self._cache_size = cache_size
        # Both in insertion order, the oldest dropped first: an LRU's reordering on every hit costs more per
        # request than the rare re-read of an image evicted while still in use.
        self._cache: dict[tuple[int, tuple[int, int, int]], dict[bytes, bytes]] = {}
        self._stat_fds: dict[int, int] = {}  # pid -> open /proc/<pid>/stat
        self._lock = threading.Lock()

    def of(self, pid: int) -> Mapping[bytes, bytes]:
        """``OMX_*`` of process ``pid``; ProcessGone if it exited, ZoneDenied if it may not be inspected."""
        if pid <= 0:
            raise ProcessGone(f"pid {pid}")
        for _ in range(3):
            key = (pid, self._image_key(pid))
            found = self._cache.get(key)  # a dict read needs no lock: every change is made under it
            if found is not None:
                return found
            env = parse_environ(self._read(pid, "environ", ENVIRON_LIMIT))
            value = {name: v for name, v in env.items() if name.startswith(WATCHED_PREFIX)}
            # The environment was read after the key: if the pid was reused or the process exec'd in between,
            # the key differs now, and what was read must not be stored under the old one: read again.
            if self._image_key(pid) == key[1]:
                with self._lock:
                    self._cache[key] = value
                    while len(self._cache) > self._cache_size:  # the oldest image first
                        del self._cache[next(iter(self._cache))]
                return value
        raise ZoneDenied(f"pid {pid} keeps changing (exec) while its identity is read")

    def cached(self) -> int:
        """How many process images are remembered."""
        with self._lock:
            return len(self._cache)

    def _image_key(self, pid: int) -> tuple[int, int, int]:
        return parse_image_key(self._read_stat(pid))

    def _read_stat(self, pid: int) -> bytes:
        """``/proc/<pid>/stat`` through a kept descriptor; under the lock, so no thread closes one another uses."""
        with self._lock:
            fd = self._stat_fds.get(pid)
            if fd is not None:
                try:
                    data = os.pread(fd, STAT_LIMIT, 0)
                except OSError:
                    data = b""  # the process exited (ESRCH): this pid may be someone else's now
                if data:
                    return data
                del self._stat_fds[pid]
                os.close(fd)
            fd = self._open(pid, "stat")
            try:
                data = os.pread(fd, STAT_LIMIT, 0)
            except OSError as exc:
                os.close(fd)
                raise self._unreadable(pid, exc) from exc
            self._stat_fds[pid] = fd
            while len(self._stat_fds) > OPEN_STATS:  # the longest kept first
                os.close(self._stat_fds.pop(next(iter(self._stat_fds))))
            return data

    def close(self) -> None:
        """Close the kept descriptors (the resolver stays usable: they are reopened on demand)."""
        with self._lock:
            while self._stat_fds:
                os.close(self._stat_fds.popitem()[1])

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
    against the current config on every request, so an agent removed from the workspace stops acting at once.
    """

    def __init__(self, config_provider: Callable[[], Config], agent: str) -> None:
        self._config = config_provider
        self.default_agent = agent

    def resolve(self, uid: int, pid: int) -> str:
        return known_agent(self._config(), self.default_agent, "the view's identity (omxfs run --as)")


class IdentityResolver:
    """Resolves ``(uid, pid)`` to an agent name, in the order of SPEC §3.

    ``config_provider`` returns the current workspace config (it is re-read when the file changes, so agents
    and uid mappings added while mounted take effect); ``environments`` reads the callers' ``OMX_AGENT``.
    """

    def __init__(
        self, config_provider: Callable[[], Config], default_agent: str, environments: CallerEnvironments
    ) -> None:
        self._config = config_provider
        self.default_agent = default_agent
        self.environments = environments

    def resolve(self, uid: int, pid: int) -> str:
        config = self._config()
        mapped = config.uids.get(uid)
        if mapped is not None:
            return known_agent(config, mapped, f"the uid map entry for uid {uid}")
        try:
            claimed = self.environments.of(pid).get(ENV_VAR)
        except ProcessGone:
            claimed = None  # the request outlived its process: nothing was claimed, the mount's default answers
        if claimed is not None:
            name = claimed.decode("utf-8", "replace")
            bound = config.bound_uids(name)
            if bound:  # a name the uid map binds is that uid's alone: claiming it is refused, never guessed
                raise ZoneDenied(
                    f"OMX_AGENT={name} of pid {pid} (uid {uid}) refused: the uid map binds {name} to uid "
                    f"{', '.join(map(str, bound))}, and only that uid acts as {name}"
                )
            return known_agent(config, name, f"OMX_AGENT of pid {pid}")
        return known_agent(config, self.default_agent, "the mount's default identity (--as)")


def known_agent(config: Config, name: str, source: str) -> str:
    """``name``, if it is well-formed and an agent of the workspace; else ZoneDenied naming ``source``."""
    if not AGENT_NAME.fullmatch(name):
        raise ZoneDenied(f"malformed agent name {name!r} from {source}")
    if not config.knows(name):
        raise ZoneDenied(f"unknown agent {name!r} from {source}: add it with `omxfs init WS --agent {name}`")
    return name
