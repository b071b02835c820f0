"""The checkpoint an omx run on an omxfs workspace starts with: what shows the run's changes and undoes
them.

Where it is made:

- in a view (``omx --as NAME``, which starts itself again through ``omxfs run``): the view made it as it started
  (``omxfs.checkpoints.views``), and the view's ``.omxfs/`` is read-only, so the run takes the zone's latest
  checkpoint, which is that one, or an earlier one of the same content when nothing had changed since;
- on an ``omxfs mount`` outside a view: through the store beneath the mount, as ``omxfs checkpoint`` reaches it,
  unless nothing changed since the latest checkpoint (then that one is the run's).

A store that refuses (a full disk, a mount over its own store that this user cannot see beneath) costs the run its
checkpoint, never the run: the reason is shown in one line. The run's own record (``runs/<ts>/``) lies in the zone
it checkpoints, so a restore to the run's checkpoint removes that record too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.plan_run.review_run import review_zone
from agent.record.runs_dir import RunsError, agent_for, is_omxfs_mount, is_omxfs_store
from agent.view import in_view
from omxfs.checkpoints import ZoneHistory
from omxfs.checkpoints.scan import scan_zone
from omxfs.errors import OmxError
from omxfs.shell_line import shell_line
from omxfs.store.workspace import Workspace
from omxfs.view.locate import store_beneath


@dataclass(frozen=True)
class RunCheckpoint:
    workspace: Path  # as the person names it: the lines below are run on the host
    zone: str
    number: int
    made: bool  # False: the zone had not changed since checkpoint ``number`` (or the view made it)
    held: bool = False  # the run writes a branch of the zone (a review, an attempt): the zone itself stays as it is

    def record(self) -> dict[str, Any]:
        """What the trace's start entry keeps: enough for ``omx replay`` to find the checkpoint again."""
        return {"zone": self.zone, "id": self.number, "made": self.made, "workspace": str(self.workspace)}

    def lines(self) -> list[str]:
        """How the person sees and undoes the run's changes: nothing to undo in a branch, which a person accepts or
        drops (``omxfs run`` and ``omx --attempts`` print those commands)."""
        if self.held:
            return ["Changes: held apart in a branch of the zone until a person accepts them (see below)"]
        return [f"Changes: {shell_line('omxfs', 'diff', self.workspace, self.zone, self.number)}",
                f"Undo:    {self.undo_line()}"]  # fmt: skip

    def undo_line(self) -> str:
        """The restore of the zone as the run found it (in a branch: once accepted, what the run changed)."""
        return shell_line("omxfs", "restore", self.workspace, self.zone, self.number, "--as", self.zone)


@contextlib.contextmanager
def _history(workspace: Path, zone: str) -> Iterator[ZoneHistory]:
    """The zone's history: through the view's read-only ``.omxfs/`` in a view, else beneath the mount."""
    if in_view():
        yield ZoneHistory(Workspace(workspace), zone)
        return
    beneath = store_beneath(workspace)
    if beneath is None:  # a bare store: omx refuses to run on one before it gets here
        raise OmxError(f"{workspace} is not an omxfs mount")
    try:
        yield ZoneHistory(Workspace(beneath.reached), zone)
    finally:
        os.close(beneath.fd)


def start_checkpoint(workspace: Path, zone: str, message: str) -> RunCheckpoint:
    """The checkpoint a run starts from (OmxError or OSError when the store gives none)."""
    with _history(workspace, zone) as history:
        made = None if in_view() else history.make(zone, message, only_if_changed=True)
        base = made if made is not None else history.latest()
    if base is None:
        raise OmxError(f"{zone}'s zone has no checkpoint (the view could not make one)")
    return RunCheckpoint(workspace, zone, base.number, made is not None, review_zone(workspace, zone) is not None)


def checkpoint_here(directory: Path, message: str) -> tuple[RunCheckpoint | None, str | None]:
    """For a run whose tools work in ``directory`` (``omx agent``, which has no ``-w``): the checkpoint of the
    acting agent's zone, or why there is none; (None, None) where ``directory`` is in no mounted workspace or view."""
    workspace = next((d for d in (directory, *directory.parents) if is_omxfs_store(d)), None)
    if workspace is None or not (in_view() or is_omxfs_mount(workspace)):
        return None, None
    try:
        agent = in_view() or agent_for(workspace, None, mounted=True)
        return start_checkpoint(workspace, agent, message), None
    except OmxError as exc:
        return None, exc.message
    except RunsError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, exc.strerror or str(exc)


def change_stat(checkpoint: RunCheckpoint) -> dict[str, int]:
    """How many paths of the zone were added, modified and deleted since the run's checkpoint, counted as
    ``omxfs diff`` counts them, from the stat and hashes alone: no file's content is diffed for a count."""
    with _history(checkpoint.workspace, checkpoint.zone) as history:
        manifest = history.load(checkpoint.number)
        old = manifest.by_path()
        # the manifest's listings and stat cache let unchanged directories go unlisted, as a checkpoint's scan does
        scan = scan_zone(history.zone_dir, old, listings=manifest.listings, cached=manifest.stat_cache)
        new = {e.path: e for e in scan.entries}
    modified = sum(1 for path in old.keys() & new.keys() if old[path].key() != new[path].key())
    return {"added": len(new.keys() - old.keys()), "modified": modified, "deleted": len(old.keys() - new.keys())}
