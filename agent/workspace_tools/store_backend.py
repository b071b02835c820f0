"""``StoreBackend``: the workspace tools served by the store itself, for agents running beside the workspace.

Every call goes to ``omxfs.store`` as ``agent``, so the store decides what the agent may do, exactly as it does
for the mount. Realtime changes run inside ``RealtimeZone.update``: on the latest state, as the replica the store
gives this process for the agent, persisted before the call returns, so agents in other threads and processes
never lose an operation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from agent.workspace_tools import zone_branches, zone_history
from agent.workspace_tools.backend import (
    BranchChanges,
    BranchForked,
    BranchListing,
    CheckpointInfo,
    Delivery,
    FieldChange,
    FieldValue,
    HandoffNote,
    RefusedWrite,
    TextEdit,
    VersionedText,
    VersionInfo,
    ZoneChanges,
    ZoneRestored,
    refused_write,
)
from omxfs.checkpoints import ZoneHistory
from omxfs.crdt import CRDT, RGA, Document, LWWMap, LWWRegister, ORSet, PNCounter
from omxfs.crdt.rga import RGABase
from omxfs.crdt.text_diff import diff_spans
from omxfs.errors import InvalidInput
from omxfs.store import Workspace
from omxfs.store.names import relative_path
from omxfs.store.records import HandoffMeta, VersionEntry

C = TypeVar("C", bound=CRDT)


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode text (it has a lone surrogate)") from None


def _check_text(text: str, what: str) -> str:
    _encode(text, what)
    return text


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _version(entry: VersionEntry) -> VersionInfo:
    return VersionInfo(entry.version, entry.author, entry.message, entry.timestamp)


def _note(meta: HandoffMeta) -> HandoffNote:
    return HandoffNote(meta.sender, meta.recipient, meta.filename, meta.message, meta.timestamp)


def _assign(field: CRDT, value: Any, replica: str) -> None:
    """Make ``value`` the field's whole value with the type's own operations, so that it merges as edits do."""
    if isinstance(field, LWWRegister | RGA) and not isinstance(value, str):
        raise InvalidInput(f"a {field.TYPE} field takes a string, not {type(value).__name__}")
    if isinstance(field, LWWRegister):
        field.set(value, replica)
    elif isinstance(field, RGA):
        field.write_text(field.base(), value, replica)
    elif isinstance(field, ORSet):
        if not isinstance(value, list) or not all(isinstance(e, str) for e in value):
            raise InvalidInput("an or_set field takes a list of strings")
        for element in value:
            if not field.contains(element):
                field.add(element, replica)
        for element in set(field.elements()) - set(value):
            field.remove(element)
    elif isinstance(field, LWWMap):
        if not isinstance(value, dict):
            raise InvalidInput(f"an lww_map field takes an object, not {type(value).__name__}")
        for key, item in value.items():
            if key not in field or field.get(key) != item:
                field.set(key, item, replica)
        for key in set(field.keys()) - set(value):
            field.delete(key, replica)
    elif isinstance(field, PNCounter):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInput(f"a pn_counter field takes an integer, not {type(value).__name__}")
        field.add(replica, value - field.value())
    else:
        raise TypeError(f"no assignment for field type {field.TYPE}")


class StoreBackend:
    """The ``WorkspaceBackend`` of one agent on a ``Workspace``.

    ``provenance`` (e.g. ``{"run": ..., "step": ...}``) is recorded with every version and delivery it makes, as
    the mount records the ``OMX_RUN``/``OMX_STEP`` of the writing process.
    """

    def __init__(self, ws: Workspace, agent: str, provenance: dict[str, str] | None = None) -> None:
        self.ws = ws
        self._agent = agent
        self.provenance = provenance

    @property
    def agent(self) -> str:
        return self._agent

    # -- private zone -------------------------------------------------------------------------------------------

    def write_private(self, filename: str, content: str) -> str:
        self.ws.private.write(self.agent, self.agent, filename, _encode(content, "content"))
        return f"agents/{self.agent}/{relative_path(filename)}"

    def read_private(self, owner: str, filename: str) -> str:
        return _decode(self.ws.private.read(owner, filename))

    def list_private(self, owner: str) -> list[str]:
        return self.ws.private.list(owner)

    # -- handoff zone -------------------------------------------------------------------------------------------

    def deliver(self, recipient: str, filename: str, content: str, message: str) -> HandoffNote:
        data = _encode(content, "content")
        note = _check_text(message, "message")
        return _note(self.ws.handoff.deliver(self.agent, recipient, filename, data, note, provenance=self.provenance))

    def inbox(self) -> list[HandoffNote]:
        return [_note(meta) for meta in self.ws.handoff.inbox(self.agent)]

    def read_delivery(self, sender: str, filename: str) -> Delivery:
        delivery = self.ws.handoff.read(sender, self.agent, filename)
        return Delivery(_note(delivery.meta), _decode(delivery.content))

    # -- collaborative zone -------------------------------------------------------------------------------------

    def collab_read(self, path: str) -> VersionedText:
        file = self.ws.collab.read(path)
        return VersionedText(_decode(file.content), _version(file.entry))

    def collab_write(self, path: str, content: str, message: str, expected_version: int) -> VersionInfo:
        data = _encode(content, "content")
        entry = self.ws.collab.write(
            self.agent,
            path,
            data,
            expected_version=expected_version,
            message=_check_text(message, "message") or None,
            provenance=self.provenance,
        )
        return _version(entry)

    def collab_history(self, path: str) -> list[VersionInfo]:
        return [_version(entry) for entry in self.ws.collab.history(path)]

    def collab_refused(self, path: str) -> list[RefusedWrite]:
        return [refused_write(record) for record in self.ws.collab.conflicts(self.agent, path)]

    def collab_rollback(self, path: str, to_version: int) -> VersionInfo:
        old = self.ws.collab.read_version(path, to_version)
        return _version(
            self.ws.collab.write(
                self.agent,
                path,
                old,
                expected_version=-1,
                message=f"rollback to version {to_version}",
                provenance=self.provenance,
            )
        )

    # -- realtime documents -------------------------------------------------------------------------------------

    def realtime_create(self, doc_id: str, schema: Mapping[str, str]) -> dict[str, str]:
        return self.ws.realtime.create(self.agent, doc_id, schema).schema

    def realtime_get(self, doc_id: str, field: str) -> FieldValue:
        value = self.ws.realtime.current(doc_id).doc.field(field)
        return FieldValue(value.TYPE, value.value())

    def realtime_set(self, doc_id: str, field: str, value: Any) -> FieldChange:
        # A text is diffed against the current one first, outside the store's change: the diff is then reused
        # if nobody changed the field meanwhile (the base is the very same object), and redone inside if they did.
        current = self.ws.realtime.current(doc_id).doc.field(field)
        base = current.base() if isinstance(current, RGA) and isinstance(value, str) else None
        spans = diff_spans(base.text, value) if isinstance(base, RGABase) and isinstance(value, str) else None

        def assign(doc: Document, replica: str) -> FieldChange:
            target = doc.field(field)
            before = target.value()
            if spans is not None and isinstance(target, RGA) and target.base() is base:
                target.write_text(base, value, replica, spans=spans)
            else:
                _assign(target, value, replica)
            return FieldChange(before != target.value(), target.value())

        return self.ws.realtime.update(self.agent, doc_id, assign)

    def realtime_splice_text(self, doc_id: str, field: str, start: int, end: int, text: str) -> TextEdit:
        def splice(doc: Document, replica: str) -> TextEdit:
            rga = doc.typed(field, RGA)
            length = len(rga)
            lo, hi = min(start, length), min(end, length)  # seed E-7: a position past the end is the end
            if lo == hi:
                deleted = 0
                if text:
                    rga.insert(lo, text, replica)
            elif text:
                rga.replace(lo, hi, text, replica)
                deleted = hi - lo
            else:
                deleted = rga.delete(lo, hi)
            return TextEdit(deleted, rga.text())

        _check_text(text, "text")
        return self.ws.realtime.update(self.agent, doc_id, splice)

    def realtime_set_add(self, doc_id: str, field: str, element: str) -> FieldChange:
        return self._change(doc_id, field, ORSet, lambda s, replica: s.add(element, replica))

    def realtime_set_remove(self, doc_id: str, field: str, element: str) -> FieldChange:
        return self._change(doc_id, field, ORSet, lambda s, _: s.remove(element))

    def realtime_set_contains(self, doc_id: str, field: str, element: str) -> bool:
        return self.ws.realtime.current(doc_id).doc.typed(field, ORSet).contains(element)

    def realtime_map_set(self, doc_id: str, field: str, key: str, value: Any) -> FieldChange:
        return self._change(doc_id, field, LWWMap, lambda m, replica: m.set(key, value, replica))

    def realtime_map_delete(self, doc_id: str, field: str, key: str) -> FieldChange:
        return self._change(doc_id, field, LWWMap, lambda m, replica: m.delete(key, replica))

    def realtime_counter_add(self, doc_id: str, field: str, delta: int) -> FieldChange:
        return self._change(doc_id, field, PNCounter, lambda c, replica: c.add(replica, delta))

    def realtime_snapshot(self, doc_id: str) -> dict[str, Any]:
        return self.ws.realtime.snapshot(doc_id)

    def _change(self, doc_id: str, field: str, cls: type[C], operation: Callable[[C, str], object]) -> FieldChange:
        """Apply ``operation(field, replica)`` to a field of type ``cls`` on the latest state; report what it did."""

        def change(doc: Document, replica: str) -> FieldChange:
            target = doc.typed(field, cls)
            before = target.value()
            operation(target, replica)
            after = target.value()
            return FieldChange(before != after, after)

        return self.ws.realtime.update(self.agent, doc_id, change)

    # -- the history of the agent's own zone ------------------------------------------------------------------

    def checkpoint_make(self, message: str) -> CheckpointInfo:
        return zone_history.make(ZoneHistory(self.ws, self.agent), message)

    def checkpoint_list(self) -> list[CheckpointInfo]:
        return zone_history.listing(ZoneHistory(self.ws, self.agent))

    def checkpoint_diff(self, since: str | None) -> ZoneChanges:
        return zone_history.changes(ZoneHistory(self.ws, self.agent), since)

    def checkpoint_restore(self, checkpoint: str, paths: list[str]) -> ZoneRestored:
        return zone_history.restore_to(ZoneHistory(self.ws, self.agent), checkpoint, paths)

    # -- the branches of the agent's own zone -------------------------------------------------------------------

    def branch_list(self) -> BranchListing:
        return zone_branches.listing(self.ws, self.agent, None)

    def branch_compare(self, branch: str, other: str | None) -> BranchChanges:
        return zone_branches.compare(self.ws, self.agent, branch, other, None)

    def branch_fork(self, branch: str, from_branch: str | None) -> BranchForked:
        return zone_branches.fork(self.ws, self.agent, branch, from_branch, None)
