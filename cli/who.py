"""Whom a command acts as where it is given no ``--as`` (SPEC §3), and what the process claimed when it started;
without click, for the commands that run without it (``cli.declare``). ``cli.acting`` makes ``--as`` so."""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import TYPE_CHECKING

from omxfs.store.layout import META_DIR
from omxfs.store.mount_records import read_records
from omxfs.view.env import AGENT_ENV

if TYPE_CHECKING:
    from omxfs.store.config import Config


def who(root: Path, config: Config | None, *, mounted: bool) -> tuple[str, str]:
    """Whom SPEC §3 makes this process on ``root``, and what chose it: through a mount the uid map, ``OMX_AGENT``,
    the mount's default; on a store directory ``OMX_AGENT``, else the login name."""
    if mounted and config is not None and os.getuid() in config.uids:
        return config.uids[os.getuid()], f"the workspace's uid map binds uid {os.getuid()} to it"
    claimed = started_with(AGENT_ENV) if mounted else os.environ.get(AGENT_ENV)  # what the mount reads; ours
    if claimed:
        return claimed, "OMX_AGENT"
    if mounted:
        here = os.path.realpath(root)
        for record in read_records(root / META_DIR):
            if os.path.realpath(record.mountpoint) == here:
                return record.default_agent, "the mount's --as"
    return getpass.getuser(), "your login, with no --as and no OMX_AGENT"


def started_with(name: str) -> str | None:
    """A variable of the environment this process started with, which is what an omxfs mount reads (SPEC §3)."""
    try:
        with open("/proc/self/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return os.environ.get(name)
    prefix = name.encode() + b"="
    found = next((e[len(prefix) :] for e in entries if e.startswith(prefix)), None)
    return found.decode("utf-8", "replace") if found is not None else None
