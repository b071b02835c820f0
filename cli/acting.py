"""The agent an omxfs convenience (``handoff``, ``rollback``, ``log``, ``doc create``) acts as, and how ``--as NAME``
makes it so (SPEC §3).

Through a mount, the mount decides who each request is: the workspace's uid map, else the ``OMX_AGENT`` the
calling process *started* with, else the mount's own ``--as``. So ``--as NAME`` is passed on as ``OMX_AGENT``: the
command starts itself again with ``OMX_AGENT=NAME`` (a mount reads a process's starting environment, never
``os.environ``), once it has made sure the mount will take it for NAME: a uid the map binds is its agent whatever it
claims, and a name the map binds is its uid's alone, so such an ``--as`` is refused in one line instead of a
request made as someone else. In an agent view every request is the view's agent's. On a workspace directory no
daemon serves, the command calls the store as NAME, as it would as ``OMX_AGENT`` or the login name.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cli.who import started_with, who
from omxfs.errors import OmxError, ZoneDenied
from omxfs.mount_table import FSTYPE, mount_at
from omxfs.store.config import Config, parse_config
from omxfs.store.layout import CONFIG, META_DIR
from omxfs.view.env import AGENT_ENV, VIEW_ENV

#: the names this program runs under, which it can start again as (``omxfs``, ``python -m cli.omxfs``)
PROGRAMS = ("omxfs", "omxfs.py")


def acting_agent(root: Path, agent: str | None) -> str:
    """The agent the command acts as on the workspace ``root`` (a mount or a store directory): NAME of ``--as``,
    else whom SPEC §3 names. With ``--as`` through a mount, this process starts again as NAME if it must
    (``os.execve``: it does not return then). Call it before anything else touches ``root``: a mount answers
    nothing, not even a stat, to a process it does not take for an agent of the workspace."""
    mounted = through_a_mount(root)
    config, refused = _config(root, mounted=mounted)
    if agent is None:
        name, chosen_by = who(root, config, mounted=mounted)
        if refused or (config is not None and not config.knows(name)):
            raise ZoneDenied(
                f"you act as {name!r} ({chosen_by}), which is no agent of this workspace: name one with --as NAME"
            )
        return name
    view = os.environ.get(VIEW_ENV)
    if view and view != agent:
        raise ZoneDenied(f"this process runs in {view}'s view: it cannot act as {agent}")
    if config is not None and not config.knows(agent):
        raise ZoneDenied(f"no agent named {agent!r} in this workspace")
    if mounted and not view and (config is None or config.uids.get(os.getuid()) != agent):
        _check_mount_allows(agent, config)
        if started_with(AGENT_ENV) != agent:
            _start_again_as(agent)
        if refused:  # claimed from the start, and refused all the same
            raise ZoneDenied(
                f"the mount at {root} refuses you as {agent!r}: no agent of this workspace has that name, or its uid "
                "map binds it to another uid"
            )
    return agent


def through_a_mount(root: Path) -> bool:
    """Whether an omxfs daemon serves ``root`` (a mount's root, or a view's workspace), from the mount table: a
    stat there is refused to a process the mount takes for no agent (``os.path.ismount`` then says False)."""
    entry = mount_at(os.path.realpath(root))
    return entry is not None and entry.fstype == FSTYPE


def _config(root: Path, *, mounted: bool) -> tuple[Config | None, bool]:
    """The workspace's config (readable through a mount too), or None where there is none to read; and whether a
    mount refused it to this process, which it then takes for no agent of the workspace."""
    try:
        return parse_config((root / META_DIR / CONFIG).read_text("utf-8")), False
    except PermissionError:
        return None, mounted
    except (OSError, OmxError, UnicodeDecodeError):
        return None, False


def _check_mount_allows(agent: str, config: Config | None) -> None:
    """The mount will take this process for ``agent`` once it claims it: else one line that says why not."""
    if config is None:
        return
    uid = os.getuid()
    mapped = config.uids.get(uid)
    if mapped is not None and mapped != agent:
        raise ZoneDenied(
            f"the mount takes uid {uid} for {mapped} (the workspace's uid map), whatever it claims: act as {agent} "
            f"from {agent}'s own uid, or on the store directory, or in {agent}'s view (`omxfs run WS --as {agent} "
            "-- omxfs ...`)"
        )
    bound = config.bound_uids(agent)
    if bound and uid not in bound:
        raise ZoneDenied(
            f"the workspace's uid map binds {agent} to uid {', '.join(map(str, bound))}: through the mount only that "
            f"uid acts as {agent}"
        )


def _start_again_as(agent: str) -> None:
    """Start this command again with ``OMX_AGENT=agent`` in the environment it starts with, which a mount reads."""
    if os.path.basename(sys.argv[0]) not in PROGRAMS:
        raise ZoneDenied(
            f"--as {agent} through a mount starts omxfs again with OMX_AGENT={agent}: run it as the omxfs command, "
            f"or start this process with OMX_AGENT={agent}"
        )
    sys.stdout.flush()
    sys.stderr.flush()
    argv = [sys.executable, "-P", "-m", "cli.omxfs", *sys.argv[1:]]  # -P: the current directory shadows nothing
    os.execve(argv[0], argv, {**os.environ, AGENT_ENV: agent})
