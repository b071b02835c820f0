"""The checkpoint tools' work on the acting agent's own zone, the same for every backend: a
``ZoneHistory`` in, the backend protocol's plain records out."""

from __future__ import annotations

from agent.workspace_tools.backend import CheckpointInfo, ZoneChanges, ZoneRestored
from omxfs.checkpoints import Manifest, ZoneDiff, ZoneHistory, diff, restore

#: a diff's text beyond this many characters is cut: a model's context is not the place for a whole tree's diff
DIFF_TEXT_LIMIT = 20_000


def info(manifest: Manifest) -> CheckpointInfo:
    return CheckpointInfo(
        manifest.number, manifest.time, manifest.message, manifest.by, manifest.changed, manifest.bytes_added
    )


def make(history: ZoneHistory, message: str) -> CheckpointInfo:
    made = history.make(history.zone, message)
    assert made is not None  # only_if_changed is not asked for
    return info(made)


def listing(history: ZoneHistory) -> list[CheckpointInfo]:
    return [info(manifest) for manifest in history.all()]


def diff_text(found: ZoneDiff) -> str:
    """The diff as ``omxfs diff`` prints it, cut at ``DIFF_TEXT_LIMIT`` characters."""
    text = "\n".join(found.lines())
    if len(text) > DIFF_TEXT_LIMIT:
        text = text[:DIFF_TEXT_LIMIT] + f"\n... [{len(text)} characters: the rest is cut; diff fewer paths]"
    return text


def changes(history: ZoneHistory, since: str | None) -> ZoneChanges:
    found = diff(history, since)
    return ZoneChanges(int(found.source), found.target, found.added, found.modified, found.deleted, diff_text(found))


def restore_to(history: ZoneHistory, checkpoint: str, paths: list[str]) -> ZoneRestored:
    done = restore(history, history.zone, history.resolve(checkpoint), tuple(paths))
    return ZoneRestored(done.checkpoint, done.undo, list(done.paths), done.files)
