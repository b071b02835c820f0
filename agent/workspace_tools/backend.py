"""What the workspace tools need from a workspace, independent of how it is reached.

The tools speak to a ``WorkspaceBackend``. ``StoreBackend`` calls the store directly; a backend that works on
an omxfs mount with plain file operations and xattrs (SPEC §4-§5) implements the same protocol, so the tools,
their schemas and their results stay the same whichever one is used. Hence the protocol deals only in plain
values (text, not bytes; records defined here, not the store's), each operation is one a mount can do with a
read, a write or an xattr, and failures are always the store's own errors (``omxfs.errors``): a mount backend
maps errnos back to them, and a collaborative conflict is a ``Conflict`` whose ``info`` has the fields of
seed C-3 (current_version, current_content, current_author, your_content, suggestion), as the store keeps them
under ``collaborative/.conflicts/<agent>/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class VersionInfo:
    """One commit of a collaborative file."""

    version: int
    author: str
    message: str
    timestamp: str


@dataclass(frozen=True)
class RefusedWrite:
    """A write refused as a conflict, and where its content is kept."""

    timestamp: str
    your_base: int
    current_version: int
    kept_at: str


def refused_write(record: dict[str, Any]) -> RefusedWrite:
    """A conflict record as the store keeps it (``CollabZone.conflicts``), for the tools."""
    return RefusedWrite(
        timestamp=str(record.get("timestamp", "")),
        your_base=int(record.get("your_base", 0)),
        current_version=int(record.get("current_version", 0)),
        kept_at=str(record.get("kept_at", "")),
    )


@dataclass(frozen=True)
class VersionedText:
    """A collaborative file as read: its content and the commit it is."""

    content: str
    info: VersionInfo


@dataclass(frozen=True)
class HandoffNote:
    """The metadata of a delivery (``<file>.meta.json``)."""

    sender: str
    recipient: str
    filename: str
    message: str
    timestamp: str


@dataclass(frozen=True)
class Delivery:
    note: HandoffNote
    content: str


@dataclass(frozen=True)
class FieldValue:
    field_type: str
    value: Any


@dataclass(frozen=True)
class FieldChange:
    """The outcome of an operation on a realtime field: whether its value changed, and the value now."""

    changed: bool
    value: Any


@dataclass(frozen=True)
class TextEdit:
    deleted_count: int
    text: str


@dataclass(frozen=True)
class CheckpointInfo:
    """One checkpoint of the agent's own zone."""

    id: int
    time: str
    message: str
    by: str
    files_changed: int
    bytes_added: int


@dataclass(frozen=True)
class ZoneChanges:
    """What changed in the agent's zone from one checkpoint to another, or to the zone now (``target`` "now")."""

    source: int
    target: str
    added: list[str]
    modified: list[str]
    deleted: list[str]
    text: str  # as ``omxfs diff`` prints it: a line per path, then each text file's unified diff


@dataclass(frozen=True)
class ZoneRestored:
    checkpoint: int
    undo: int  # the checkpoint of the zone as it was before the restore: restoring it undoes the restore
    paths: list[str]  # the paths restored; empty for the whole zone
    files: int


@dataclass(frozen=True)
class BranchInfo:
    """One branch of the agent's zone, as ``omxfs branches --json`` gives it."""

    name: str
    parent: str | None  # the branch it was made from and is accepted into; None: the zone
    created: str
    by: str | None
    stat: str  # "+A ~M -D" of a pending one against its parent, "N path(s)" of an accepted one, "?" if not counted
    state: str  # pending, conflicted, orphaned, accepted or discarded
    detail: str


@dataclass(frozen=True)
class BranchListing:
    branches: list[BranchInfo]
    current: str | None  # the branch whose view the tools run in; None: the zone itself
    counted: bool  # False in a branch's view, where the zone beneath the branch is out of reach
    note: str  # why nothing was counted, and where it is; empty when counted


@dataclass(frozen=True)
class BranchChanges:
    """A branch against what it goes into (the zone, or its parent branch), or two branches against each other."""

    source: str  # "zone", the parent branch, or the first branch
    target: str
    added: list[str]
    modified: list[str]
    deleted: list[str]
    text: str  # as ``omxfs diff --branch`` prints it, cut like ``ZoneChanges.text``


@dataclass(frozen=True)
class BranchForked:
    """A new, empty branch of the agent's zone, and the commands that work in it and decide it."""

    branch: str
    parent: str | None
    created: str
    by: str
    run: str  # ``omxfs run WS --as NAME --branch BRANCH -- CMD``
    serve: str  # ``omxfs mcp WS --as NAME --branch BRANCH``
    diff: str
    accept: str
    discard: str
    note: str  # what a pending branch changes for the agent's other work


class WorkspaceBackend(Protocol):
    """The operations of the shared-workspace tools, done as ``agent``.

    Paths are relative to their zone. Text edits use character positions; positions past the end mean the end.
    Every failure the caller can fix raises an ``omxfs.errors.OmxError``; anything else is a bug.
    """

    @property
    def agent(self) -> str:
        """The acting agent: the owner of every write."""
        ...

    # -- private zone: agents/<agent>/
    def write_private(self, filename: str, content: str) -> str:
        """Create or overwrite a file of the agent's own zone; returns its workspace path."""
        ...

    def read_private(self, owner: str, filename: str) -> str: ...

    def list_private(self, owner: str) -> list[str]:
        """Every file of ``owner``'s zone, as sorted paths relative to it."""
        ...

    # -- handoff zone: handoff/<from>_to_<to>/
    def deliver(self, recipient: str, filename: str, content: str, message: str) -> HandoffNote: ...

    def inbox(self) -> list[HandoffNote]:
        """Every delivery to the agent, oldest first."""
        ...

    def read_delivery(self, sender: str, filename: str) -> Delivery: ...

    # -- collaborative zone: version-controlled files
    def collab_read(self, path: str) -> VersionedText: ...

    def collab_write(self, path: str, content: str, message: str, expected_version: int) -> VersionInfo:
        """Commit if the file is at ``expected_version`` (-1: do not check), else raise ``Conflict``."""
        ...

    def collab_history(self, path: str) -> list[VersionInfo]:
        """Every commit, ascending; empty for a file never committed."""
        ...

    def collab_rollback(self, path: str, to_version: int) -> VersionInfo:
        """A new version with the content of ``to_version``."""
        ...

    def collab_refused(self, path: str) -> list[RefusedWrite]:
        """The agent's writes to ``path`` refused as conflicts, oldest first (each kept under .conflicts/)."""
        ...

    # -- realtime documents
    def realtime_create(self, doc_id: str, schema: Mapping[str, str]) -> dict[str, str]:
        """Create a document; returns its field types."""
        ...

    def realtime_get(self, doc_id: str, field: str) -> FieldValue: ...

    def realtime_set(self, doc_id: str, field: str, value: Any) -> FieldChange:
        """Replace a field's whole value (a string, list of strings, object or integer, by field type)."""
        ...

    def realtime_splice_text(self, doc_id: str, field: str, start: int, end: int, text: str) -> TextEdit:
        """Replace characters ``start..end-1`` of an rga field with ``text`` (an insert when start == end)."""
        ...

    def realtime_set_add(self, doc_id: str, field: str, element: str) -> FieldChange: ...

    def realtime_set_remove(self, doc_id: str, field: str, element: str) -> FieldChange: ...

    def realtime_set_contains(self, doc_id: str, field: str, element: str) -> bool: ...

    def realtime_map_set(self, doc_id: str, field: str, key: str, value: Any) -> FieldChange: ...

    def realtime_map_delete(self, doc_id: str, field: str, key: str) -> FieldChange: ...

    def realtime_counter_add(self, doc_id: str, field: str, delta: int) -> FieldChange: ...

    def realtime_snapshot(self, doc_id: str) -> dict[str, Any]:
        """``{"doc_id", "fields", "field_types"}`` with plain values (seed I-2)."""
        ...

    # -- the history of the agent's own zone
    def checkpoint_make(self, message: str) -> CheckpointInfo:
        """A checkpoint of the agent's zone as it is now."""
        ...

    def checkpoint_list(self) -> list[CheckpointInfo]:
        """The checkpoints of the agent's zone, oldest first."""
        ...

    def checkpoint_diff(self, since: str | None) -> ZoneChanges:
        """From checkpoint ``since`` (a number, 'last'; None: the latest) to the zone now."""
        ...

    def checkpoint_restore(self, checkpoint: str, paths: list[str]) -> ZoneRestored:
        """The zone (or only ``paths`` in it) as in ``checkpoint``, after a checkpoint of the zone as it is."""
        ...

    # -- the branches of the agent's own zone (``omxfs run --branch``)
    def branch_list(self) -> BranchListing:
        """The zone's branches as ``omxfs branches`` lists them."""
        ...

    def branch_compare(self, branch: str, other: str | None) -> BranchChanges:
        """Branch ``branch`` against what it goes into, or (``other``) against branch ``other``."""
        ...

    def branch_fork(self, branch: str, from_branch: str | None) -> BranchForked:
        """A new branch of the zone (of its branch ``from_branch``), made as ``omxfs run --branch`` makes one."""
        ...
