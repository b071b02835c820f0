"""``omxfs snapshot``, ``snapshot restore`` and ``snapshots``: the whole workspace recorded and brought back
(``omxfs.snapshots``), by a supervisor.

WORKSPACE is the store directory or the mountpoint of an ``omxfs mount`` of it, as for the checkpoint commands.
The acting supervisor is ``--as NAME``, else ``OMX_AGENT``, else the login name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cli.checkpoints import store_of
from cli.errors import friendly_errors
from cli.params import MOUNT_PATH
from omxfs.shell_line import shell_line

if TYPE_CHECKING:
    from omxfs.snapshots.bring_back import Brought
    from omxfs.store.workspace import Workspace

AS_SUPERVISOR = click.option(
    "--as",
    "actor",
    metavar="SUPERVISOR",
    help="The supervisor acting (default: OMX_AGENT, else your login).",
)


def _supervisor(ws: Workspace, actor: str | None) -> str:
    from cli.who import who
    from omxfs.snapshots.record import require_supervisor
    from omxfs.view.env import VIEW_ENV

    if os.environ.get(VIEW_ENV):
        raise click.ClickException(
            "snapshots are made and restored from outside a view: its .omxfs/ is read-only (run this on the host)"
        )
    name = actor if actor is not None else who(ws.root, ws.config, mounted=False)[0]
    return require_supervisor(ws, name)


class SnapshotGroup(click.Group):
    """``omxfs snapshot WORKSPACE`` makes a snapshot; ``omxfs snapshot restore WORKSPACE ID`` brings one back: a
    group whose first word is a command only when it names one."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["make", *args]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return ["WORKSPACE [-m MSG] [--as SUPERVISOR]  |  restore WORKSPACE ID [--zone NAME]"]


@click.group("snapshot", cls=SnapshotGroup)
def snapshot() -> None:
    """Record the whole workspace (a supervisor's), or bring a snapshot back.

    `omxfs snapshot WORKSPACE` records every private zone's checkpoint (made now; the latest is reused where
    nothing changed), every collaborative file's version, every handoff delivery and every realtime document's
    state, and prints the snapshot's id: `-m MSG` says what it is for, `--as SUPERVISOR` who makes it (default:
    OMX_AGENT, else your login). `omxfs snapshot restore WORKSPACE ID` brings them back forward (see its --help).
    `omxfs snapshots WORKSPACE` lists them.
    """


@snapshot.command("make", hidden=True)
@click.argument("workspace", type=MOUNT_PATH)
@click.option("-m", "--message", default="", help="What this snapshot is for.")
@AS_SUPERVISOR
def make(workspace: Path, message: str, actor: str | None) -> None:
    """Record the whole workspace and print the snapshot's id."""
    from omxfs.snapshots.take import take

    with friendly_errors(), store_of(workspace) as ws:
        made = take(ws, _supervisor(ws, actor), message)
    click.echo(made.number)
    counts = made.counts()
    click.echo(
        f"snapshot {made.number}: {counts['zones']} zone(s), {counts['files']} collaborative file(s), "
        f"{counts['deliveries']} delivery(ies), {counts['documents']} realtime document(s)",
        err=True,
    )


@snapshot.command("restore")
@click.argument("workspace", type=MOUNT_PATH)
@click.argument("snapshot_id", metavar="ID")
@click.option("--zone", metavar="NAME", help="Restore only NAME's private zone, as the snapshot has it.")
@AS_SUPERVISOR
def restore_command(workspace: Path, snapshot_id: str, zone: str | None, actor: str | None) -> None:
    """Bring the workspace back to snapshot ID, forward: collaborative files get a new version, realtime fields new
    operations by the acting supervisor, deliveries are delivered again (the replaced ones stay in the delivery
    history), private zones are restored (a checkpoint of each is made first). What is as in the snapshot, and
    what was made since it, is left as it is. A snapshot of the workspace is made first: restoring it undoes this.
    """
    from omxfs.snapshots.bring_back import restore_snapshot
    from omxfs.snapshots.record import Snapshots

    with friendly_errors(), store_of(workspace) as ws:
        acting = _supervisor(ws, actor)
        done = restore_snapshot(ws, acting, Snapshots(ws).resolve(snapshot_id), zone=zone)
    _report(workspace, done, zone, acting)


def _report(workspace: Path, done: Brought, zone: str | None, acting: str) -> None:
    """What the restore did, and the commands that undo it, each with the supervisor who restored as its --as."""
    if zone is not None:
        click.echo(f"restored agents/{zone}/ as in snapshot {done.snapshot}")
        click.echo(f"undo with: {shell_line('omxfs', 'restore', workspace, zone, done.zones[zone], '--as', acting)}")
        return
    click.echo(
        f"restored snapshot {done.snapshot}: {len(done.zones)} zone(s), {done.files} collaborative file(s) as new "
        f"versions, {done.deliveries} delivery(ies) delivered again, {done.documents} realtime document(s) "
        f"({done.fields} field(s)) by new operations"
    )
    unchanged = done.zones_unchanged + done.files_unchanged + done.deliveries_unchanged + done.documents_unchanged
    if unchanged:
        click.echo(f"already as in the snapshot, left alone: {unchanged}")
    newer = {k: v for k, v in done.newer.items() if v}
    if newer:
        listed = ", ".join(f"{n} {what}" for what, n in newer.items())
        click.echo(f"made since the snapshot, left as they are: {listed}")
    for where, why in done.not_restored.items():
        click.echo(f"not restored: {where}: {why}", err=True)
    if done.undo_snapshot is not None:
        line = shell_line("omxfs", "snapshot", "restore", workspace, done.undo_snapshot, "--as", acting)
        click.echo(f"undo with: {line}")
    for owner, undo in done.zones.items():
        click.echo(f"  (or one zone: {shell_line('omxfs', 'restore', workspace, owner, undo, '--as', acting)})")
    if done.not_restored:
        raise SystemExit(1)


@click.command("snapshots")
@click.argument("workspace", type=MOUNT_PATH)
@click.option("--json", "as_json", is_flag=True, help="A JSON list of objects (id, time, message, by, counts).")
def snapshots(workspace: Path, as_json: bool) -> None:
    """List the snapshots of the workspace, oldest first."""
    from omxfs.snapshots.record import Snapshots

    with friendly_errors(), store_of(workspace) as ws:
        made = Snapshots(ws).all()
    if as_json:
        click.echo(json.dumps([s.summary() for s in made], indent=2))
        return
    if not made:
        click.echo(f"no snapshots yet (a supervisor makes one with `{shell_line('omxfs', 'snapshot', workspace)}`)")
        return
    click.echo(f"{'ID':>4}  {'TIME':27}  {'BY':12}  {'ZONES':>5}  {'FILES':>5}  {'DELIV':>5}  {'DOCS':>4}  MESSAGE")
    for s in made:
        c: dict[str, Any] = s.counts()
        click.echo(
            f"{s.number:>4}  {s.time:27}  {s.by:12}  {c['zones']:>5}  {c['files']:>5}  {c['deliveries']:>5}  "
            f"{c['documents']:>4}  {s.message}"
        )
