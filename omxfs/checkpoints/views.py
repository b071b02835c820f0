"""Which views of a zone are running: ``.omxfs/views/<agent>/<pid>.json``, one record per ``omxfs run``.

A view binds its agent's zone directory itself into its mount namespace, so a restore that swaps the zone for a
new directory would leave a running view writing into the old one, which the restore then removes: a restore
refuses while a view of the zone runs. The launcher writes its record *before* it opens the zone, and a restore
looks again *after* its swap (and swaps back if a view appeared): a view either opened the zone after the swap,
or its record is seen. A record whose process is gone (kill -9) is stale and ignored, as mount records are
(``omxfs.store.mount_records``); like them, liveness is judged on this machine.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from omxfs.errors import OmxError
from omxfs.process import pid_alive
from omxfs.store.layout import VIEWS
from omxfs.store.stamps import utc_now
from omxfs.store.workspace import Workspace


@contextlib.contextmanager
def view_recorded(ws: Workspace, agent: str) -> Iterator[None]:
    """A record of this process's view of ``agent``'s zone while the block runs."""
    name = PurePosixPath(VIEWS, agent, f"{os.getpid()}.json")
    record = {"pid": os.getpid(), "agent": agent, "started": utc_now()}
    ws.writer.write(ws.meta, name, json.dumps(record).encode("utf-8"))
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(ws.meta / name)


@contextlib.contextmanager
def view_starting(ws: Workspace, agent: str, warn: Callable[[str], None], *, checkpoint: bool = True) -> Iterator[None]:
    """What ``omxfs run`` does around a view: a checkpoint of the zone as the view finds it, unless nothing
    changed since the last (or ``checkpoint`` is False: a branch's view, which never writes the zone, and whose
    base checkpoint its branch made), then the view's record for as long as it runs. A store that refuses either (a
    full disk, a read-only ``.omxfs/``) is told in one line through ``warn``; the view starts all the same."""
    from omxfs.checkpoints.history import ZoneHistory  # history imports nothing of views: no cycle either way

    try:
        if checkpoint:
            ZoneHistory(ws, agent).make(agent, "view started", only_if_changed=True)
    except OmxError as exc:
        warn(f"no checkpoint of {agent}'s zone before this view: {exc.message}")
    except OSError as exc:
        warn(f"no checkpoint of {agent}'s zone before this view: {exc.strerror}")
    try:
        record = view_recorded(ws, agent)
        record.__enter__()
    except (OmxError, OSError) as exc:
        warn(f"this view is not recorded, so a restore of {agent} would not wait for it: {exc}")
        yield
        return
    try:
        yield
    finally:
        record.__exit__(None, None, None)


def running_views(meta: Path, agent: str) -> list[int]:
    """The pids of the live views of ``agent`` recorded under ``meta`` (``.omxfs``)."""
    try:
        names = os.listdir(meta / VIEWS / agent)
    except OSError:
        return []
    pids = [int(n.removesuffix(".json")) for n in names if n.endswith(".json") and n[:-5].isdigit()]
    return sorted(pid for pid in pids if pid_alive(pid))


def views_running(meta: Path, agent: str) -> str | None:
    """ "a view of AGENT is running (pid N, ...)" while any runs, else None: how every refusal that waits for the
    agent's views to end begins (a restore, an accept or discard, a review run)."""
    pids = running_views(meta, agent)
    return f"a view of {agent} is running (pid {', '.join(map(str, pids))})" if pids else None
