"""``omxfs status [PATH]``: the live mounts, and what a workspace holds and who serves it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from cli.declare import Argument, Declared
from cli.echo import echo

if TYPE_CHECKING:
    from omxfs.store.mount_records import MountRecord
    from omxfs.store.workspace import Workspace


def _status(path: Path | None) -> None:
    """Show the live mounts; with PATH (a workspace or a mount), what it holds and who serves it.

    Each running view (``omxfs run``) of a workspace shown is listed with its limits and what it uses of them now."""
    from omxfs import mount_table
    from omxfs.errors import MountError
    from omxfs.shell_line import shell_line
    from omxfs.store.mount_records import read_records
    from omxfs.store.workspace import Workspace

    if path is None:
        _print_mounts()
        return
    target = os.path.abspath(path)
    state = mount_table.probe(target)
    if state is mount_table.State.STALE:
        raise MountError(f"{target} is a stale mount (its daemon died): run `{shell_line('omxfs', 'umount', target)}`")
    if state is mount_table.State.UNRESPONSIVE:
        raise MountError(f"{target} does not answer (its daemon is stopped, hung or swamped)")
    ws = Workspace(path)
    echo(f"workspace {ws.root.resolve()}")
    for agent in ws.agents():
        files = ws.private.list(agent)
        inbox = ws.handoff.inbox(agent)
        echo(f"  {agent}: {len(files)} private file(s), {len(inbox)} handoff(s) received")
    for rel in ws.collab.list():
        echo(f"  collaborative/{rel}: version {ws.collab.current_version(rel)}")
    for doc in ws.realtime.list():
        echo(f"  realtime/{doc}: {', '.join(f'{k}:{v}' for k, v in ws.realtime.load(doc).schema.items())}")
    records = read_records(ws.meta)
    echo("mounts:" if records else "mounts: none")
    for record in records:
        _print_record(record)
    _print_views(ws)


def _print_record(record: MountRecord) -> None:
    from omxfs.store.daemon_log import last_refusals

    echo(
        f"  {record.mountpoint}: default agent {record.default_agent}, pid {record.pid}, since {record.started},"
        f" log {record.store}/{record.log}"
    )
    for line in last_refusals(Path(record.store) / record.log):
        echo(f"    {line}")


def _print_views(ws: Workspace, indent: str = "") -> None:
    """The running views of ``ws``, each with its limits and use (``omxfs.cgroups.observe``)."""
    from omxfs.checkpoints.views import running_views

    config = ws.config
    found = [(agent, pid) for agent in (*config.agents, *config.supervisors) for pid in running_views(ws.meta, agent)]
    echo(f"{indent}views:" if found else f"{indent}views: none")
    if not found:
        return
    from omxfs.cgroups import observe, view_name  # only to show views

    for agent, pid in found:
        seen = observe(pid, view_name(pid))
        limits = seen.line() if seen is not None else "not known (starting, or ending)"
        echo(f"{indent}  {agent}: launcher pid {pid}, limits: {limits}")


def _print_mounts() -> None:
    from omxfs import mount_table
    from omxfs.errors import OmxError
    from omxfs.shell_line import shell_line
    from omxfs.store.layout import META_DIR
    from omxfs.store.mount_records import read_records
    from omxfs.store.workspace import Workspace

    found = mount_table.omx_mounts()
    if not found:
        echo("no omxfs mounts")
    stores: set[str] = set()
    for mountpoint in found:
        state = mount_table.probe(mountpoint)
        if state is mount_table.State.STALE:
            echo(f"{mountpoint}: stale (its daemon died): run `{shell_line('omxfs', 'umount', mountpoint)}`")
            continue
        if state is mount_table.State.UNRESPONSIVE:
            echo(
                f"{mountpoint}: not answering within {mount_table.PROBE_TIMEOUT:g} s (its daemon is stopped, hung or "
                f"swamped): `{shell_line('omxfs', 'umount', mountpoint)}` unmounts it"
            )
            continue
        records = [r for r in read_records(Path(mountpoint, META_DIR)) if r.mountpoint == mountpoint]
        echo(f"{mountpoint}: live" + (f", store {records[0].store}" if records else ""))
        for record in records:
            _print_record(record)
        if records and records[0].store not in stores:  # a store's views once, under its first mount
            stores.add(records[0].store)
            with contextlib.suppress(OmxError, OSError):
                _print_views(Workspace(Path(records[0].store)), "  ")


status = Declared("status", _status, Argument("path", kind="path", required=False))
