"""``omxfs fsck``: check a store against its invariants, repair what crashes left (``omxfs.store.fsck``).

What it finds is told as ``omxfs.store.findings`` says: corruption one line per item, debris one line per kind,
with what leaves it and what ``--repair`` does about it, and when; ``--verbose`` lists every item.
"""

from __future__ import annotations

from pathlib import Path

import click

from cli.errors import friendly_errors
from omxfs.store.findings import TEMP_GRACE_SECONDS

EPILOG = """\b
Exit status:
  0  nothing needs doing: the store is clean, or all that is left is debris
     younger than --grace (a checkpoint, commit or restore that may still be
     running owns it; an interrupted one left it): a notice, not an error
  1  corruption, or debris that --repair repairs now (run it), or that it
     leaves for a person (it says why)"""


@click.command("fsck", epilog=EPILOG)
@click.argument("workspace", type=click.Path(file_okay=False, path_type=Path))
@click.option("--repair", is_flag=True, help="Complete what interrupted writes left half-done (safe beside mounts).")
@click.option("-v", "--verbose", is_flag=True, help="One line per item of debris, not one per kind.")
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=int(TEMP_GRACE_SECONDS),
    show_default=True,
    metavar="SECONDS",
    help="Debris a running write may own (temp files, a checkpoint's blobs, a restore's work) is removed by "
    "--repair only once older than this. 0 when you know no omx process writes the store now.",
)
def fsck(workspace: Path, repair: bool, verbose: bool, grace: float) -> None:
    """Check the store WORKSPACE against its invariants (versions vs history, checksums, metadata, CRDT states,
    checkpoints, snapshots).

    Corruption is reported, one line each, and never guessed at. Debris, what an interrupted write leaves behind
    and no reader sees, is summed up by kind: how many, where, what left it, what --repair does and when.
    WORKSPACE may be a mountpoint: the store beneath is checked.
    """
    from omxfs.store.fsck import fsck as check
    from omxfs.store.workspace import Workspace
    from omxfs.view.locate import store_path

    with friendly_errors(), store_path(workspace) as store:
        report = check(Workspace(store), repair=repair, temp_grace=grace)
    if verbose:
        for finding in report.findings:
            if not finding.is_corruption:
                click.echo(finding.line())
    for line in report.summary():
        click.echo(line)
    if report.unresolved:
        raise SystemExit(1)
