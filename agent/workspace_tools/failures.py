"""What a failed tool call returns to the model: what went wrong, and what to try (STYLE lessons 7 and 11).

A model's mistakes (an unknown tool, bad arguments, a write the workspace refuses, a stale collaborative write)
go back to it as ``{"success": False, "error": ..., ...}`` with a hint, so it can recover on its next turn.
The store's error taxonomy (``omxfs.errors``) is mapped here, in one place, to an ``error_type`` a model or a
program can branch on. Errors that are not ``OmxError`` are bugs of ours and are never turned into results.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from agent.workspace_tools.definitions import argument_hint
from agent.workspace_tools.models import ToolInput
from omxfs.errors import AlreadyExists, Conflict, InvalidInput, NotFound, OmxError, StoreCorrupt, ZoneDenied

#: most specific first: ``NameTooLong`` is an ``InvalidInput``
ERROR_TYPES: tuple[tuple[type[OmxError], str], ...] = (
    (Conflict, "conflict"),
    (NotFound, "not_found"),
    (AlreadyExists, "already_exists"),
    (ZoneDenied, "zone_denied"),
    (InvalidInput, "invalid_input"),
    (StoreCorrupt, "store_corrupt"),
)

_NOT_FOUND = {
    "private": "list_workspace_files shows the files of an agent's zone; check the agent_id and the filename.",
    "handoff": "check_my_handoffs lists what was delivered to you, with each sender and filename.",
    "collab": (
        "collab_history lists the versions of a shared file; a file with none yet is created by collab_write "
        "with expected_version 0."
    ),
    "history": "list_my_checkpoints shows the checkpoints of your zone and their ids.",
    "branches": "list_my_branches shows the branches of your zone, pending and ended, by name.",
    "realtime": (
        "Create the document first with realtime_create_document, or check doc_id and field_name: "
        "realtime_get_document_snapshot shows a document's fields."
    ),
}

_HINTS = {
    "zone_denied": (
        "You write only your own private zone (save_to_my_workspace). To give a file to another agent use "
        "handoff_file; to edit a file together use collab_write or a realtime document."
    ),
    "invalid_input": "Fix the value the error names and call the tool again.",
    "already_exists": "It exists already: use it as it is (read it first), or choose another name.",
    "store_corrupt": "This part of the workspace is damaged on disk: tell a supervisor and work on other files.",
}

#: a refusal of a branch tool names the command that does it instead
_BRANCHES_ELSEWHERE = "The error names the command that does it instead: run it (or ask a person to) where it says."

_REALTIME_INPUT = (
    "realtime_get_document_snapshot shows each field's type. Text edits need an rga field, realtime_set_* an "
    "or_set, realtime_map_* an lww_map, realtime_counter_* a pn_counter; realtime_set_field works on any field."
)


def error_type(exc: OmxError) -> str:
    return next((name for cls, name in ERROR_TYPES if isinstance(exc, cls)), "workspace_error")


def unknown_tool(name: str, available: Sequence[str]) -> dict[str, Any]:
    close = difflib.get_close_matches(name, available, n=1) if isinstance(name, str) else []
    hint = f"Did you mean {close[0]!r}?" if close else "Call one of available_tools."
    return {
        "success": False,
        "error": f"unknown tool {name!r}",
        "error_type": "unknown_tool",
        "available_tools": list(available),
        "hint": hint,
    }


def bad_arguments(model: type[ToolInput], problem: str) -> dict[str, Any]:
    return {
        "success": False,
        "error": f"invalid arguments for {model.tool_name}: {problem}",
        "error_type": "invalid_arguments",
        "hint": argument_hint(model),
    }


def invalid_arguments(model: type[ToolInput], exc: ValidationError) -> dict[str, Any]:
    """Each problem pydantic found, named by the argument's path, without echoing the (maybe long) input."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        message = "missing" if error["type"] == "missing" else error["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return bad_arguments(model, "; ".join(problems))


def store_error(model: type[ToolInput], exc: OmxError) -> dict[str, Any]:
    """A refusal of the workspace; a conflict carries everything needed to merge (seed C-3, FR-3.5)."""
    kind = error_type(exc)
    result: dict[str, Any] = {"success": False, "error": exc.message, "error_type": kind}
    if isinstance(exc, Conflict):
        info = dict(exc.info)
        # the store's message repeats the suggestion; the model reads it once, in "suggestion"
        result["error"] = (
            f"conflict: {info.get('path', 'the file')} is at version {info.get('current_version')} "
            f"(by {info.get('current_author')}), your write was based on version {info.get('your_base')}; "
            "it was not applied"
        )
        result.update(is_conflict=True, conflict=info, suggestion=info.get("suggestion", ""))
        return result
    if kind == "not_found":
        result["hint"] = _NOT_FOUND[model.zone]
    elif kind == "invalid_input" and model.zone == "realtime":
        result["hint"] = f"{_HINTS['invalid_input']} {_REALTIME_INPUT}"
    elif kind == "workspace_error" and model.zone == "branches":
        result["hint"] = _BRANCHES_ELSEWHERE
    else:
        result["hint"] = _HINTS.get(kind, "The workspace could not do this now; try again, or tell a supervisor.")
    return result
