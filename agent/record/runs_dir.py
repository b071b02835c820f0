"""Where a run's record goes: ``<workspace>/runs/<ts>/``, or ``agents/<me>/runs/<ts>/`` in an omxfs workspace.

An omxfs workspace allows nothing new at its top level (SPEC §2), and an agent may only write its own private
zone, so there the record goes into the agent's zone, where every other agent can read it. An omxfs workspace is
recognised by its layout (``.omxfs/`` and ``agents/`` at the root); its rules are only enforced when it is served
by the mount, found in ``/proc/self/mountinfo`` as a FUSE file system of type ``fuse.omxfs`` (or named ``omxfs``)
mounted exactly at the workspace root. omx refuses to work on the bare store directory: plain writes there would
bypass the zone rules and the version history.

On the mount, who "I" am is decided by the mount, per process (SPEC §3): the uid map, else ``OMX_AGENT`` in the
environment omx started with, else the mount's default identity. ``--as`` cannot change that for omx's own file
I/O, so it must agree with it; the record then goes into that agent's zone.

omx writes its record only inside the workspace: ``runs`` is made and opened from its parent without following a
symlink (``open_runs``), and one that is a symlink (a cloned repository's, one another agent prepared) or not a
directory is refused, with what to do, before anything runs; the run's own directory and files are reached from
that descriptor (``agent.record.trace.RunRecorder``).
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import json
import os
import stat
from pathlib import Path

from omxfs.errors import OmxError
from omxfs.fuse.mounts import FSTYPE, MOUNTINFO, mount_table
from omxfs.process import pid_alive
from omxfs.store.config import parse_config
from omxfs.store.layout import AGENTS, CONFIG, META_DIR, MOUNT_RECORDS
from omxfs.store.names import AGENT_NAME, AGENT_RULE

__all__ = [
    "RunsError",
    "agent_for",
    "current_agent",
    "is_omxfs_mount",
    "is_omxfs_store",
    "mount_identity",
    "omxfs_mount_of",
    "open_runs",
    "runs_root",
]

#: a directory below one already open, never through a symlink (a symlink there: ENOTDIR, or ELOOP)
DIR_BENEATH = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RunsError(Exception):
    """The workspace cannot hold a run record for this agent; the message says what to do."""


def is_omxfs_store(workspace: Path) -> bool:
    return (workspace / META_DIR).is_dir() and (workspace / AGENTS).is_dir()


def omxfs_mount_of(path: Path, mountinfo: Path = MOUNTINFO) -> Path | None:
    """The root of the omxfs mount that ``path`` lies on, or None (Linux; None where there is no mountinfo).

    Another filesystem mounted over part of the workspace hides it there, except where an agent view binds the
    store's own directories into it (``agents/``, ``agents/<name>/``, ``.omxfs/``): that is still the workspace.
    """
    try:
        table = mount_table(mountinfo)
    except OSError:
        return None
    target = path.resolve()
    holding = [  # the mount points holding the path, in mount order (the last at a point is the visible one)
        (point, entry.fstype == FSTYPE or (entry.fstype.startswith("fuse") and entry.source == "omxfs"))
        for entry in table
        if (point := Path(entry.mountpoint)) == target or point in target.parents
    ]
    depth, found = -1, None
    for point, omxfs in holding:
        hides = omxfs or found is None or not _view_bind(found, point)
        if hides and len(point.parts) >= depth:
            depth, found = len(point.parts), (point if omxfs else None)
    return found


def _view_bind(root: Path, point: Path) -> bool:
    """Whether ``point`` is where a view binds a store directory into the workspace at ``root``."""
    rel = point.relative_to(root).parts if point.is_relative_to(root) else ()
    return rel in ((AGENTS,), (META_DIR,)) or (len(rel) == 2 and rel[0] == AGENTS)


def is_omxfs_mount(workspace: Path, mountinfo: Path = MOUNTINFO) -> bool:
    """Whether the omxfs FUSE view is mounted exactly at ``workspace``."""
    return omxfs_mount_of(workspace, mountinfo) == workspace.resolve()


def current_agent(as_agent: str | None) -> str:
    """``--as``, else ``OMX_AGENT``, else the login name: the name omx gives its tools outside a mount."""
    name = as_agent or os.environ.get("OMX_AGENT") or getpass.getuser()
    return _check_name(name)


def _check_name(name: str) -> str:
    if not AGENT_NAME.fullmatch(name):
        raise RunsError(f"invalid agent name {name!r}: use {AGENT_RULE} (pass --as AGENT)")
    return name


def mount_identity(workspace: Path) -> str | None:
    """The agent the omxfs mount at ``workspace`` takes this process for: uid map, OMX_AGENT, the mount's default."""
    try:
        config = parse_config((workspace / META_DIR / CONFIG).read_text(encoding="utf-8"))
    except (OSError, OmxError):
        config = None
    if config is not None and os.getuid() in config.uids:
        return config.uids[os.getuid()]
    if os.environ.get("OMX_AGENT"):
        return os.environ["OMX_AGENT"]
    records = workspace / META_DIR / MOUNT_RECORDS
    target = str(workspace.resolve())
    for record in sorted(records.glob("*.json")) if records.is_dir() else []:
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            if data["mountpoint"] == target and pid_alive(int(data["pid"])):
                return str(data["default_agent"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def agent_for(workspace: Path, as_agent: str | None, *, mounted: bool | None = None) -> str:
    """The agent a run acts as: on an omxfs mount the mount's view of this process, which ``--as`` must match."""
    if not is_omxfs_store(workspace) or not (is_omxfs_mount(workspace) if mounted is None else mounted):
        return current_agent(as_agent)
    seen = mount_identity(workspace)
    if as_agent and seen and as_agent != seen:
        raise RunsError(
            f"the omxfs mount at {workspace} takes this process for {seen!r} (uid map, OMX_AGENT or the mount's "
            f"default), not {as_agent!r}: start omx as `OMX_AGENT={as_agent} omx ...` instead of --as"
        )
    return _check_name(as_agent or seen or getpass.getuser())


def runs_root(workspace: Path, as_agent: str | None, *, mounted: bool | None = None) -> Path:
    """The directory that holds this workspace's runs for this agent (``mounted`` overrides the mount check)."""
    if not is_omxfs_store(workspace):
        return workspace / "runs"
    if not (is_omxfs_mount(workspace) if mounted is None else mounted):
        raise RunsError(
            f"{workspace} is an omxfs store that is not mounted: its zone rules are enforced by the mount; "
            f"run `omxfs mount {workspace}` first, then run omx there"
        )
    agent = agent_for(workspace, as_agent, mounted=True)
    zone = workspace / AGENTS / agent
    if not zone.is_dir():
        known = ", ".join(sorted(p.name for p in (workspace / AGENTS).iterdir() if p.is_dir())) or "none"
        raise RunsError(f"agent {agent!r} has no private zone in {workspace} (agents: {known}); pass --as AGENT")
    return zone / "runs"


def open_runs(runs_root: Path) -> int:
    """A descriptor of the directory ``runs_root``, made if missing, opened from its parent (made too if missing)
    without following a symlink; RunsError, saying what to do, where ``runs_root`` is a symlink or not a directory."""
    runs_root.parent.mkdir(parents=True, exist_ok=True)
    parent = os.open(runs_root.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    name = runs_root.name
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=parent)
        try:
            return os.open(name, DIR_BENEATH, dir_fd=parent)
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            found = os.lstat(name, dir_fd=parent)
            if stat.S_ISLNK(found.st_mode):
                raise RunsError(
                    f"{runs_root} is a symlink to {os.readlink(name, dir_fd=parent)}: omx writes its run record only "
                    f"inside the workspace; remove or rename {runs_root}"
                ) from None
            if not stat.S_ISDIR(found.st_mode):
                raise RunsError(
                    f"{runs_root} is not a directory: omx keeps its run records in a directory of that name; "
                    f"remove or rename {runs_root}"
                ) from None
            raise
    finally:
        os.close(parent)
