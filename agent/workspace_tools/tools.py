"""``WorkspaceTools``: one agent's shared-workspace tools, and the dispatcher a model's tool calls go through.

``dispatch_tool_call(name, arguments)`` routes a call to ``tool_<name>`` (seed J-1) after validating the
arguments with the tool's input model, and always answers with a dict that has ``success`` (FR-5.3): a model's
mistake becomes a failed result it can learn from (``failures.py``), while a bug of ours is raised, so it is
seen and fixed rather than fed back to the model as if the model had erred.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from agent.workspace_tools import failures
from agent.workspace_tools.backend import (
    BranchChanges,
    FieldChange,
    HandoffNote,
    VersionInfo,
    WorkspaceBackend,
    ZoneChanges,
)
from agent.workspace_tools.definitions import ToolDefinition, get_tool_definitions
from agent.workspace_tools.models import (
    HISTORY_TOOLS_BY_NAME,
    TOOLS_BY_NAME,
    CheckMyHandoffs,
    CollabHistory,
    CollabRead,
    CollabRollback,
    CollabWrite,
    CompareMyBranches,
    DiffMyZone,
    ForkMyZone,
    HandoffFile,
    ListMyBranches,
    ListMyCheckpoints,
    ListWorkspaceFiles,
    MakeCheckpoint,
    ReadFromWorkspace,
    ReadHandoff,
    RealtimeCounterDecrement,
    RealtimeCounterIncrement,
    RealtimeCreateDocument,
    RealtimeEditText,
    RealtimeGetDocumentSnapshot,
    RealtimeGetField,
    RealtimeMapDelete,
    RealtimeMapSet,
    RealtimeSetAdd,
    RealtimeSetContains,
    RealtimeSetField,
    RealtimeSetRemove,
    RestoreCheckpoint,
    SaveToMyWorkspace,
    ToolInput,
)
from omxfs.errors import NotFound, OmxError

Result = dict[str, Any]


def _version(info: VersionInfo) -> Result:
    return {"version": info.version, "author": info.author, "message": info.message, "timestamp": info.timestamp}


def _handoff(note: HandoffNote) -> Result:
    return {"from": note.sender, "filename": note.filename, "message": note.message, "timestamp": note.timestamp}


def _elements(change: FieldChange) -> Result:
    return {"elements": change.value, "count": len(change.value)}


def _parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any] | str:
    """The arguments as a dict, or what is wrong with them. APIs send a JSON string; no arguments may be ''."""
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            return f"arguments are not valid JSON ({exc})"
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        return f"arguments must be a JSON object, not {type(arguments).__name__}"
    return dict(arguments)


class WorkspaceTools:
    """The shared-workspace tools for the agent ``backend.agent``."""

    def __init__(self, backend: WorkspaceBackend, *, history: bool = False) -> None:
        """``history``: also the tools on the agent's own checkpoints and branches (``HISTORY_TOOL_INPUTS``)."""
        self.backend = backend
        self.offered = {**TOOLS_BY_NAME, **(HISTORY_TOOLS_BY_NAME if history else {})}
        missing = [name for name in self.offered if not callable(getattr(self, f"tool_{name}", None))]
        if missing:
            raise TypeError(f"tools without an implementation: {', '.join(missing)}")

    @property
    def agent(self) -> str:
        return self.backend.agent

    @staticmethod
    def tool_names() -> list[str]:
        return list(TOOLS_BY_NAME)

    @staticmethod
    def get_tool_definitions() -> list[ToolDefinition]:
        return get_tool_definitions()

    def dispatch_tool_call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> Result:
        """Run one tool call of a model; never raises for the model's mistakes (seed J-2, J-3)."""
        model = self.offered.get(name) if isinstance(name, str) else None
        if model is None:
            return failures.unknown_tool(name, list(self.offered))
        parsed = _parse_arguments(arguments)
        if isinstance(parsed, str):
            return failures.bad_arguments(model, parsed)
        try:
            args = model.model_validate(parsed)
        except ValidationError as exc:
            return failures.invalid_arguments(model, exc)
        handler: Callable[[ToolInput], Result] = getattr(self, f"tool_{name}")
        try:
            return {"success": True, **handler(args)}
        except OmxError as exc:
            return failures.store_error(model, exc)

    # -- private zone -------------------------------------------------------------------------------------------

    def tool_save_to_my_workspace(self, args: SaveToMyWorkspace) -> Result:
        path = self.backend.write_private(args.filename, args.content)
        return {"agent_id": self.agent, "filename": args.filename, "path": path}

    def tool_read_from_workspace(self, args: ReadFromWorkspace) -> Result:
        content = self.backend.read_private(args.agent_id, args.filename)
        return {"agent_id": args.agent_id, "filename": args.filename, "content": content}

    def tool_list_workspace_files(self, args: ListWorkspaceFiles) -> Result:
        owner = args.agent_id or self.agent
        files = self.backend.list_private(owner)
        return {"agent_id": owner, "files": files, "count": len(files)}

    # -- handoff zone -------------------------------------------------------------------------------------------

    def tool_handoff_file(self, args: HandoffFile) -> Result:
        note = self.backend.deliver(args.to_agent, args.filename, args.content, args.message)
        path = f"handoff/{note.sender}_to_{note.recipient}/{note.filename}"
        return {"to": note.recipient, "filename": note.filename, "path": path, "timestamp": note.timestamp}

    def tool_check_my_handoffs(self, args: CheckMyHandoffs) -> Result:
        handoffs = [_handoff(note) for note in self.backend.inbox()]
        return {"count": len(handoffs), "handoffs": handoffs}

    def tool_read_handoff(self, args: ReadHandoff) -> Result:
        delivery = self.backend.read_delivery(args.from_agent, args.filename)
        return {**_handoff(delivery.note), "content": delivery.content}

    # -- collaborative zone -------------------------------------------------------------------------------------

    def tool_collab_read(self, args: CollabRead) -> Result:
        file = self.backend.collab_read(args.filepath)
        return {"filepath": args.filepath, "content": file.content, **_version(file.info)}

    def tool_collab_write(self, args: CollabWrite) -> Result:
        info = self.backend.collab_write(args.filepath, args.content, args.message, args.expected_version)
        return {"filepath": args.filepath, "version": info.version, "message": info.message}

    def tool_collab_history(self, args: CollabHistory) -> Result:
        history = self.backend.collab_history(args.filepath)
        if not history:
            raise NotFound(f"collaborative file {args.filepath!r} does not exist")
        refused = [dataclasses.asdict(r) for r in self.backend.collab_refused(args.filepath)]
        return {
            "filepath": args.filepath,
            "count": len(history),
            "history": [_version(v) for v in history],
            "your_refused_writes": refused,
        }

    def tool_collab_rollback(self, args: CollabRollback) -> Result:
        info = self.backend.collab_rollback(args.filepath, args.to_version)
        return {"filepath": args.filepath, "new_version": info.version, "restored_version": args.to_version}

    # -- realtime documents -------------------------------------------------------------------------------------

    def tool_realtime_create_document(self, args: RealtimeCreateDocument) -> Result:
        field_types = self.backend.realtime_create(args.doc_id, args.schema_)
        return {"doc_id": args.doc_id, "field_types": field_types}

    def tool_realtime_set_field(self, args: RealtimeSetField) -> Result:
        change = self.backend.realtime_set(args.doc_id, args.field_name, args.value)
        return {"doc_id": args.doc_id, "field_name": args.field_name, "value": change.value, "changed": change.changed}

    def tool_realtime_get_field(self, args: RealtimeGetField) -> Result:
        field = self.backend.realtime_get(args.doc_id, args.field_name)
        return {
            "doc_id": args.doc_id,
            "field_name": args.field_name,
            "field_type": field.field_type,
            "value": field.value,
        }

    def tool_realtime_edit_text(self, args: RealtimeEditText) -> Result:
        edit = args.args
        if args.operation == "insert":
            assert edit.position is not None  # the model's validator guarantees the keys of each operation
            start = end = edit.position
        else:
            assert edit.start is not None and edit.end is not None
            start, end = edit.start, edit.end
        done = self.backend.realtime_splice_text(args.doc_id, args.field_name, start, end, edit.text or "")
        return {
            "doc_id": args.doc_id,
            "field_name": args.field_name,
            "operation": args.operation,
            "deleted_count": done.deleted_count,
            "text": done.text,
            "length": len(done.text),
        }

    def tool_realtime_set_add(self, args: RealtimeSetAdd) -> Result:
        change = self.backend.realtime_set_add(args.doc_id, args.field_name, args.element)
        return {"element": args.element, "added": change.changed, **_elements(change)}

    def tool_realtime_set_remove(self, args: RealtimeSetRemove) -> Result:
        change = self.backend.realtime_set_remove(args.doc_id, args.field_name, args.element)
        return {"element": args.element, "removed": change.changed, **_elements(change)}

    def tool_realtime_set_contains(self, args: RealtimeSetContains) -> Result:
        exists = self.backend.realtime_set_contains(args.doc_id, args.field_name, args.element)
        return {"element": args.element, "exists": exists}

    def tool_realtime_map_set(self, args: RealtimeMapSet) -> Result:
        change = self.backend.realtime_map_set(args.doc_id, args.field_name, args.key, args.value)
        return {"key": args.key, "changed": change.changed, "map": change.value}

    def tool_realtime_map_delete(self, args: RealtimeMapDelete) -> Result:
        change = self.backend.realtime_map_delete(args.doc_id, args.field_name, args.key)
        return {"key": args.key, "deleted": change.changed, "map": change.value}

    def tool_realtime_counter_increment(self, args: RealtimeCounterIncrement) -> Result:
        change = self.backend.realtime_counter_add(args.doc_id, args.field_name, args.amount)
        return {"field_name": args.field_name, "value": change.value}

    def tool_realtime_counter_decrement(self, args: RealtimeCounterDecrement) -> Result:
        change = self.backend.realtime_counter_add(args.doc_id, args.field_name, -args.amount)
        return {"field_name": args.field_name, "value": change.value}

    def tool_realtime_get_document_snapshot(self, args: RealtimeGetDocumentSnapshot) -> Result:
        return {"snapshot": self.backend.realtime_snapshot(args.doc_id)}

    # -- the history of your own zone -------------------------------------------------------------------------

    def tool_make_checkpoint(self, args: MakeCheckpoint) -> Result:
        return {"agent_id": self.agent, **dataclasses.asdict(self.backend.checkpoint_make(args.message))}

    def tool_list_my_checkpoints(self, args: ListMyCheckpoints) -> Result:
        found = [dataclasses.asdict(c) for c in self.backend.checkpoint_list()]
        return {"agent_id": self.agent, "count": len(found), "checkpoints": found}

    def tool_diff_my_zone(self, args: DiffMyZone) -> Result:
        return self._changes(self.backend.checkpoint_diff(args.since))

    def tool_restore_checkpoint(self, args: RestoreCheckpoint) -> Result:
        done = self.backend.checkpoint_restore(args.checkpoint, args.paths)
        return {"agent_id": self.agent, **dataclasses.asdict(done)}

    # -- the branches of your own zone --------------------------------------------------------------------------

    def tool_list_my_branches(self, args: ListMyBranches) -> Result:
        listed = self.backend.branch_list()
        found = [dataclasses.asdict(b) for b in listed.branches]
        result = {"agent_id": self.agent, "count": len(found), "branches": found, "current": listed.current}
        if not listed.counted:
            result.update(counted=False, note=listed.note)
        return result

    def tool_compare_my_branches(self, args: CompareMyBranches) -> Result:
        return self._changes(self.backend.branch_compare(args.branch, args.other))

    def _changes(self, changes: ZoneChanges | BranchChanges) -> Result:
        """A diff of the zone's history or of branches, as the tools give it."""
        return {
            "agent_id": self.agent,
            "from": changes.source,
            "to": changes.target,
            "added": changes.added,
            "modified": changes.modified,
            "deleted": changes.deleted,
            "diff": changes.text,
        }

    def tool_fork_my_zone(self, args: ForkMyZone) -> Result:
        return {"agent_id": self.agent, **dataclasses.asdict(self.backend.branch_fork(args.branch, args.from_branch))}
