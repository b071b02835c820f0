"""Hold a process tree (a view, an omx step) to its ``Limits``, in a way no process in it can lift.

The tree gets a cgroup of its own, made below the one this process is in: cgroup v2 where a delegated hierarchy
offers the ``pids`` and ``memory`` controllers, else v1's ``pids`` and ``memory`` hierarchies where those are
mounted. The file size is ``RLIMIT_FSIZE`` (no cgroup limits it), set soft and hard on the tree's first process:
raising a hard limit takes ``CAP_SYS_RESOURCE`` in the host's user namespace, which nothing in a view or a step
holds. A limit no cgroup can hold (an unprivileged user without delegation; a process in a view, whose ``/sys`` is
read-only) is set with setrlimit instead, and ``note`` is told so: ``RLIMIT_NPROC`` counts the uid's processes in
its user namespace, not the tree's, and root ignores it; ``RLIMIT_AS`` bounds each process alone. Nothing is
refused for lack of cgroups.

The tree's first process is a small program (``TRAMPOLINE``) that waits on a pipe until ``Confinement.start`` has
put it in its cgroups and set its limits, then execs the command: nothing of the command runs, and nothing forks,
outside its limits. When the block ends, whatever is left in the cgroups is killed and the cgroups removed; those of
a process killed before it could (SIGKILL) are removed by the next tree's start, once empty.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import resource
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from omxfs.limits import NO_LIMIT, Limits, Reached, format_size, limit_text
from omxfs.process import pid_alive

__all__ = ["PREFIX", "Confinement", "Observed", "confined", "holder", "observe", "unique_name", "view_name"]

#: the names of the cgroups made here: ``omx-view-<launcher pid>``, ``omx-step-<omx pid>-<random>``
PREFIX = "omx-"
#: the first process of a confined tree (``python -I -S -c TRAMPOLINE FD ARGV...``): it waits for "go" on the pipe FD,
#: closes it, gives SIGPIPE and SIGXFSZ back their default (Python ignores both, and an exec keeps that) and execs
#: ARGV. Not a shell: dash cannot name a descriptor above 9.
TRAMPOLINE = """import os, signal, sys
fd = int(sys.argv[1])
if os.read(fd, 3) != b"go\\n":
    os._exit(125)
os.close(fd)
for signum in (signal.SIGPIPE, signal.SIGXFSZ):
    signal.signal(signum, signal.SIG_DFL)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    print(f"{sys.argv[2]}: {exc.strerror}", file=sys.stderr)
    os._exit(127)
"""
KILL_ROUNDS = 100
REMOVE_DEADLINE = 5.0
#: how a fork that RLIMIT_NPROC refused shows in what a program prints (EAGAIN; a shell says "Cannot fork" for
#: ENOMEM too, which RLIMIT_AS causes)
FORK_REFUSED = ("Resource temporarily unavailable",)
#: (controller, the limit it holds as ``Reached.kind`` names it)
CONTROLLERS = (("pids", "processes"), ("memory", "memory"))
_HUGE = 1 << 62  # v1's "no limit" is a page-rounded 2^63-1


@dataclass(frozen=True)
class _Hierarchy:
    version: int  # 1 or 2
    controllers: tuple[str, ...]  # what its cgroups hold: ("pids",) or ("memory",) for v1, both for v2
    here: Path  # the cgroup the process is in, where the tree's cgroup is made


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(root within the hierarchy, mountpoint, fstype, super options) of each cgroup mount in our namespace."""
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                before, _, after = line.partition(" - ")
                parts, tail = before.split(), after.split()
                if len(parts) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                    root, point = (_unescape(part) for part in parts[3:5])
                    found.append((root, point, tail[0], set(tail[2].split(","))))
    except OSError:
        pass
    return found


def _unescape(path: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def _cgroups_of(pid: int | str) -> dict[str, str]:
    """``/proc/PID/cgroup``: controller (``""`` for v2) → the cgroup's path, as our cgroup namespace shows it."""
    found: dict[str, str] = {}
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
            for line in f:
                _, names, path = line.rstrip("\n").split(":", 2)
                for name in names.split(",") if names else [""]:
                    found[name] = path
    except (OSError, ValueError):
        pass
    return found


def _directory(point: str, root: str, path: str) -> Path | None:
    """Where cgroup ``path`` is under a mount of its hierarchy that shows ``root`` of it; None if it shows elsewhere."""
    if root == "/":
        return Path(point, path.lstrip("/"))
    if path != root and not path.startswith(root.rstrip("/") + "/"):
        return None
    return Path(point, path[len(root) :].lstrip("/"))


def _hierarchies(pid: int | str = "self") -> list[_Hierarchy]:
    """The hierarchies that hold ``pid``'s ``pids`` and ``memory``: a v2 one that offers both, else v1's."""
    own = _cgroups_of(pid)
    mounts = _mounts()
    for root, point, fstype, _ in mounts:
        if fstype == "cgroup2" and "" in own:
            here = _directory(point, root, own[""])
            if here is not None and {"pids", "memory"} <= set(_read(here / "cgroup.controllers").split()):
                return [_Hierarchy(2, ("pids", "memory"), here)]
    found = []
    for controller, _ in CONTROLLERS:
        for root, point, fstype, options in mounts:
            if fstype == "cgroup" and controller in options and controller in own:
                here = _directory(point, root, own[controller])
                if here is not None and here.is_dir():
                    found.append(_Hierarchy(1, (controller,), here))
                    break
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _write(path: Path, value: str) -> None:
    path.write_text(value, encoding="ascii")


def _field(path: Path, key: str) -> int:
    """The number after ``key`` in a flat keyed file (``pids.events``, ``memory.events``, ``memory.oom_control``)."""
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _number(path: Path) -> int | None:
    value = _read(path)
    return int(value) if value.isdigit() else None


@dataclass(frozen=True)
class _Group:
    """One cgroup made for a tree."""

    version: int
    controllers: tuple[str, ...]
    path: Path

    def members(self) -> list[int]:
        return [int(pid) for pid in _read(self.path / "cgroup.procs").split() if pid.isdigit()]

    def remove(self) -> None:
        """Kill what is left in it, then remove it (a killed process takes a moment to leave)."""
        deadline = time.monotonic() + REMOVE_DEADLINE
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    return
            _kill_all(self.members())
            time.sleep(0.01)


def _sweep(hierarchy: _Hierarchy) -> None:
    """Remove the empty cgroups of trees whose process is gone (``omx-view-PID``, ``omx-step-PID-...``): a launcher
    killed with SIGKILL could not remove its own."""
    try:
        names = [entry.name for entry in os.scandir(hierarchy.here) if entry.name.startswith(PREFIX)]
    except OSError:
        return
    for name in names:
        owner = name.removeprefix(PREFIX).split("-")[1:2]
        if owner and owner[0].isdigit() and not pid_alive(int(owner[0])):
            group = _Group(hierarchy.version, hierarchy.controllers, hierarchy.here / name)
            if not group.members():
                with contextlib.suppress(OSError):
                    group.path.rmdir()


def _make_group(hierarchy: _Hierarchy, name: str, limits: Limits) -> _Group:
    """The cgroup ``name`` below ``hierarchy``, made with the limits it holds; OSError if it cannot be."""
    if hierarchy.version == 2:
        control = hierarchy.here / "cgroup.subtree_control"
        if not {"pids", "memory"} <= set(_read(control).split()):  # EBUSY while it holds processes itself
            _write(control, "+pids +memory")
    _sweep(hierarchy)
    path = hierarchy.here / name
    try:
        path.mkdir(mode=0o755)
    except FileExistsError:  # left by a killed process that had our pid: empty it and take it
        stale = _Group(hierarchy.version, hierarchy.controllers, path)
        _kill_all(stale.members())
        stale.remove()
        path.mkdir(mode=0o755)
    group = _Group(hierarchy.version, hierarchy.controllers, path)
    try:
        if "pids" in group.controllers and limits.max_procs:
            _write(path / "pids.max", str(limits.max_procs))
        if "memory" in group.controllers and limits.max_memory:
            if group.version == 2:
                _write(path / "memory.max", str(limits.max_memory))
                with contextlib.suppress(FileNotFoundError):  # no swap accounting: no swap to escape into
                    _write(path / "memory.swap.max", "0")
            else:
                _write(path / "memory.limit_in_bytes", str(limits.max_memory))
                with contextlib.suppress(FileNotFoundError):  # memory and swap together, where swap is accounted
                    _write(path / "memory.memsw.limit_in_bytes", str(limits.max_memory))
    except OSError:
        group.remove()
        raise
    return group


def _kill_all(pids: Sequence[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _tasks_of(uid: int) -> int:
    """How many tasks (threads) run as real uid ``uid`` now: what ``RLIMIT_NPROC`` counts."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, ValueError, IndexError):
            status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace").splitlines()
            fields_ = dict(line.split(":", 1) for line in status if ":" in line)
            if int(fields_["Uid"].split()[0]) == uid:
                count += int(fields_["Threads"])
    return count


def _lower(pid: int, which: int, value: int) -> None:
    """Set ``pid``'s limit ``which`` to ``value``, soft and hard, never above the hard limit it has."""
    _, hard = resource.prlimit(pid, which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.prlimit(pid, which, (value, value))


class Confinement:
    """A process tree's limits while ``confined``'s block runs. Start the tree with ``command(argv)``, passing
    ``pass_fds``, and call ``start(pid)`` at once; ``reached()`` then says which limits it hit."""

    def __init__(self, limits: Limits, groups: list[_Group], note: Callable[[str], None]) -> None:
        self.limits = limits
        self.groups = groups
        self._note = note
        self._read, self._write = os.pipe()

    def held(self) -> set[str]:
        """The controllers whose cgroup holds the tree."""
        return {controller for group in self.groups for controller in group.controllers}

    def rlimited(self) -> list[str]:
        """The limits held with setrlimit instead of a cgroup, of ``"processes"`` and ``"memory"`` (the file size
        always is)."""
        return [kind for controller, kind in CONTROLLERS if controller not in self.held()]

    @property
    def how(self) -> str:
        """``"cgroup v1 (pids, memory); setrlimit (file size)"``: what holds each limit."""
        held = [controller for group in self.groups for controller in group.controllers]
        return _how(self.groups[0].version if self.groups else 0, held)

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self._read,) if self._read >= 0 else ()

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv``, started through the trampoline that waits for ``start``."""
        return [sys.executable, "-I", "-S", "-c", TRAMPOLINE, str(self._read), *argv]

    def start(self, pid: int) -> None:
        """Put ``pid`` (the trampoline, waiting) in the tree's cgroups and set its rlimits; then let it exec."""
        for group in list(self.groups):
            try:
                _write(group.path / "cgroup.procs", str(pid))
            except OSError as exc:
                self._note(f"cannot move the process into {group.path} ({exc.strerror}): setrlimit instead")
                self.groups.remove(group)
                group.remove()
        rlimits = [(resource.RLIMIT_FSIZE, self.limits.max_file_size)]
        if (processes := self.process_limit()) is not None:
            rlimits.append((resource.RLIMIT_NPROC, processes))
        if "memory" in self.rlimited():
            rlimits.append((resource.RLIMIT_AS, self.limits.max_memory))
        for which, value in rlimits:
            if value:
                try:
                    _lower(pid, which, value)
                except ProcessLookupError:  # gone: it runs nothing
                    pass
                except OSError as exc:
                    self._note(f"cannot set the limit {which} of process {pid}: {exc.strerror}")
        with contextlib.suppress(BrokenPipeError):  # the trampoline is gone (killed): nothing to let go
            os.write(self._write, b"go\n")
        self._close_pipe()

    def process_limit(self) -> int | None:
        """The ``RLIMIT_NPROC`` that ``start`` sets, None where a cgroup holds the processes or none is asked. A first
        process that makes a user namespace before ``start`` takes it first: the kernel holds the uid's processes in
        a namespace to the limit the namespace's maker had when it made it."""
        if "processes" in self.rlimited() and self.limits.max_procs:  # counts all the uid runs: theirs come on top
            return self.limits.max_procs + _tasks_of(os.getuid())
        return None

    def _close_pipe(self) -> None:
        for fd in (self._read, self._write):
            if fd >= 0:
                os.close(fd)
        self._read = self._write = -1

    def members(self) -> list[int]:
        """The processes in the tree's cgroups now (none known where no cgroup holds it)."""
        return sorted({pid for group in self.groups for pid in group.members()})

    def kill(self) -> None:
        """Kill every process left in the tree's cgroups until none is (a fork bomb's children keep coming)."""
        for _ in range(KILL_ROUNDS):
            left = self.members()
            if not left:
                return
            for group in self.groups:
                if group.version == 2:
                    with contextlib.suppress(OSError):  # cgroup.kill: Linux 5.14
                        _write(group.path / "cgroup.kill", "1")
            _kill_all(left)
            time.sleep(0.005)

    def reached(self, status: int | None = None, stderr: str = "") -> list[Reached]:
        """The limits the tree hit, told by its cgroups' counters, by ``status`` (its first process's: -N if killed
        by signal N, or a shell's 128+N) and by what it printed on ``stderr``, where that was kept."""
        found: list[Reached] = []
        limits = self.limits
        for group in self.groups:
            refused = _field(group.path / "pids.events", "max") if "pids" in group.controllers else 0
            if refused and limits.max_procs:
                found.append(Reached("processes", limits.max_procs, f"{refused} fork(s) refused"))
            if "memory" in group.controllers and limits.max_memory:
                events = group.path / ("memory.events" if group.version == 2 else "memory.oom_control")
                if killed := _field(events, "oom_kill"):
                    found.append(Reached("memory", limits.max_memory, f"{killed} process(es) killed"))
        rlimited = self.rlimited()
        if "processes" in rlimited and limits.max_procs and _said(stderr, *FORK_REFUSED):
            found.append(Reached("processes", limits.max_procs, "a fork was refused (setrlimit)"))
        if "memory" in rlimited and limits.max_memory and _said(stderr, "MemoryError", "Cannot allocate memory"):
            found.append(Reached("memory", limits.max_memory, "an allocation failed (setrlimit)"))
        if limits.max_file_size:
            if status in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):
                found.append(Reached("file size", limits.max_file_size, "killed by SIGXFSZ"))
            elif _said(stderr, "File too large"):
                found.append(Reached("file size", limits.max_file_size, "a write failed (EFBIG)"))
        return found

    def close(self) -> None:
        """Kill what is left of the tree in its cgroups and remove them."""
        self._close_pipe()
        self.kill()
        for group in self.groups:
            group.remove()


def _how(version: int, held: Sequence[str]) -> str:
    """``"cgroup v1 (pids, memory); setrlimit (file size)"``, ``"setrlimit (processes, memory, file size)"``."""
    rlimited = [kind for controller, kind in CONTROLLERS if controller not in held]
    cgroup = [f"cgroup v{version} ({', '.join(held)})"] if held else []
    return "; ".join([*cgroup, f"setrlimit ({', '.join([*rlimited, 'file size'])})"])


def holder(limits: Limits) -> str:
    """What would hold ``limits`` for a tree this process starts now, as ``Confinement.how`` says it."""
    wanted = {"pids": limits.max_procs, "memory": limits.max_memory}
    usable = [h for h in _hierarchies() if any(wanted[c] for c in h.controllers) and os.access(h.here, os.W_OK)]
    return _how(usable[0].version if usable else 0, [c for h in usable for c in h.controllers])


def _said(stderr: str, *phrases: str) -> bool:
    return any(phrase in stderr for phrase in phrases)


@contextlib.contextmanager
def confined(limits: Limits, name: str, note: Callable[[str], None]) -> Iterator[Confinement]:
    """A confinement for one tree: cgroups named ``omx-NAME`` below this process's own, removed at the end with
    whatever is left in them; setrlimit for the limits no cgroup holds (``note`` is told which, and why)."""
    wanted = {"pids": limits.max_procs, "memory": limits.max_memory}
    groups: list[_Group] = []
    why = "no pids or memory cgroup hierarchy here"
    try:
        for hierarchy in _hierarchies():
            if any(wanted[controller] for controller in hierarchy.controllers):
                try:
                    groups.append(_make_group(hierarchy, PREFIX + name, limits))
                except OSError as exc:
                    why = f"{hierarchy.here}: {exc.strerror}"
        box = Confinement(limits, groups, note)
    except BaseException:
        for group in groups:
            group.remove()
        raise
    missing = [kind for controller, kind in CONTROLLERS if wanted[controller] and kind in box.rlimited()]
    if missing:
        note(f"no cgroup could be made for the {' and '.join(missing)} limit ({why}): setrlimit per process instead")
    try:
        yield box
    finally:
        box.close()


def view_name(launcher: int) -> str:
    """The name of the tree of the view that process ``launcher`` runs (its cgroups: ``omx-view-PID``): ``observe``
    finds it from a view's record, which names the launcher."""
    return f"view-{launcher}"


def unique_name(stem: str) -> str:
    """``stem`` with a random suffix, for trees that no other process looks up by name (steps)."""
    return f"{stem}-{os.urandom(4).hex()}"


# -- what a running tree holds -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """A running tree's limits and use, as ``omxfs status`` and the dashboard show them."""

    how: str
    limits: Limits
    procs: int | None = None  # processes now
    memory: int | None = None  # bytes charged now

    def line(self) -> str:
        """``"512 processes (3 now), 8 GiB of memory (12.4 MiB now), 16 GiB per file (cgroup v1)"``."""
        procs, memory, size = (limit_text(f.name, getattr(self.limits, f.name)) for f in fields(self.limits))
        if self.procs is not None:
            procs += f" ({self.procs} now)"
        if self.memory is not None:
            memory += f" ({format_size(self.memory)} now)"
        return f"{procs}, {memory}, {size} ({self.how})"


def observe(launcher: int, name: str) -> Observed | None:
    """The limits and use of the tree that process ``launcher`` confined as ``omx-NAME``: from its cgroups, below
    the launcher's own, and the rlimits of its first process (the launcher's child, where no cgroup holds it);
    None if there is no such tree (any more)."""
    limits: dict[str, int] = {}
    procs = memory = None
    versions: set[int] = set()
    held: list[str] = []
    members: set[int] = set()
    for hierarchy in _hierarchies(launcher):
        path = hierarchy.here / (PREFIX + name)
        if not path.is_dir():
            continue
        versions.add(hierarchy.version)
        held += hierarchy.controllers
        v2 = hierarchy.version == 2
        if "pids" in hierarchy.controllers:
            limits["max_procs"] = _number(path / "pids.max") or NO_LIMIT  # "max": none
            procs = _number(path / "pids.current")
        if "memory" in hierarchy.controllers:
            limit = _number(path / ("memory.max" if v2 else "memory.limit_in_bytes")) or NO_LIMIT
            limits["max_memory"] = NO_LIMIT if limit >= _HUGE else limit
            memory = _number(path / ("memory.current" if v2 else "memory.usage_in_bytes"))
        members.update(_Group(hierarchy.version, hierarchy.controllers, path).members())
    first = min(members) if members else _confined_child(launcher)
    if first is None:
        return None
    limits.setdefault("max_procs", _rlimit_of(first, "Max processes"))
    limits.setdefault("max_memory", _rlimit_of(first, "Max address space"))
    limits["max_file_size"] = _rlimit_of(first, "Max file size")
    return Observed(_how(max(versions, default=0), held), Limits(**limits), procs, memory)


def _confined_child(launcher: int) -> int | None:
    """The launcher's child whose file size is limited below the launcher's own: the tree's first process."""
    own = _rlimit_of(launcher, "Max file size")
    for child in _children(launcher):
        limit = _rlimit_of(child, "Max file size")
        if limit != NO_LIMIT and (own == NO_LIMIT or limit < own):
            return child
    return None


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            found += [int(child) for child in _read(Path(f"/proc/{pid}/task/{task}/children")).split()]
    return found


def _rlimit_of(pid: int, name: str) -> int:
    """A soft limit from ``/proc/PID/limits``; ``NO_LIMIT`` for unlimited, or where it cannot be read."""
    try:
        with open(f"/proc/{pid}/limits", encoding="ascii") as f:
            for line in f:
                if line.startswith(name):
                    value = line[len(name) :].split()[0]
                    return int(value) if value.isdigit() else NO_LIMIT
    except (OSError, IndexError):
        pass
    return NO_LIMIT
