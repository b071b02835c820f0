"""The inputs of the shared-workspace tools, one pydantic model per tool.

These models are the single source of each tool: its name (``tool_name``), its description (the docstring,
written for the model that calls it), its parameters (the fields, each with a description) and the validation
of the arguments a model sends. ``definitions.py`` turns them into the JSON schemas LLM APIs take, so the
schema the model sees and the checks its arguments meet can never drift apart.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

FieldType = Literal["lww_register", "rga", "or_set", "lww_map", "pn_counter"]


def _check_unicode(value: Any) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (it has a lone surrogate escape like \\ud800)") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key)
            _check_unicode(item)
    elif isinstance(value, list):
        for item in value:
            _check_unicode(item)


class Arguments(BaseModel):
    """Arguments from a model: unknown keys are refused so a typo is reported, not ignored, and all text must
    be storable as UTF-8 (JSON can carry lone surrogates, which no file can hold)."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:
        _check_unicode(value)
        return value


class ToolInput(Arguments):
    """The arguments of one tool."""

    tool_name: ClassVar[str]
    #: which part of the workspace the tool works on; picks the recovery hint of a failed call
    zone: ClassVar[Literal["private", "handoff", "collab", "realtime", "history", "branches"]]


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be an integer, not true or false")
    return value


#: after an int's Field (so its bounds stay plain JSON schema): a number may come as "3", never as true/false,
#: which pydantic would otherwise read as 1/0
NotBool = BeforeValidator(_not_bool)


# -- arguments shared by several tools ---------------------------------------------------------------------


def _a_file(path: str) -> str:
    """A path that ends in '/' names a directory: the zones dropped the slash and wrote a file of that name."""
    if path.endswith("/"):
        raise ValueError(f"{path!r} ends in '/': give a file's name, not a directory's")
    return path


#: after a path's Field: a file, never a directory
AFile = AfterValidator(_a_file)

Filename = Annotated[
    str,
    Field(description="Path of the file inside the zone, e.g. 'notes.md' or 'data/raw.csv'; no '..', no leading '/'."),
    AFile,
]
Content = Annotated[str, Field(description="The complete text of the file (it replaces any previous content).")]
Filepath = Annotated[
    str, Field(description="Path of the shared file in the collaborative zone, e.g. 'report.md'."), AFile
]
DocId = Annotated[str, Field(description="Id of the realtime document, e.g. 'kanban'.")]
FieldName = Annotated[str, Field(description="Name of a field of the document, as given in its schema.")]
Element = Annotated[str, Field(description="The element: one line of text, e.g. 'write intro'.")]
MapKey = Annotated[str, Field(description="The key in the map, e.g. 'theme'.")]
Amount = Annotated[int, Field(ge=1, description="By how much; a positive integer (default 1)."), NotBool]


# -- private zone ------------------------------------------------------------------------------------------


class PrivateInput(ToolInput):
    zone: ClassVar[Literal["private"]] = "private"


class SaveToMyWorkspace(PrivateInput):
    """Save a file in your own private zone (agents/<you>/), creating or overwriting it.

    Use it for drafts, notes, intermediate results and your own outputs: only you write there, and every
    other agent can read it.
    """

    tool_name: ClassVar[str] = "save_to_my_workspace"
    filename: Filename
    content: Content


class ReadFromWorkspace(PrivateInput):
    """Read a file from the private zone of any agent, yours or another's (read-only access to theirs)."""

    tool_name: ClassVar[str] = "read_from_workspace"
    agent_id: Annotated[str, Field(description="Whose zone to read: your own name or another agent's.")]
    filename: Filename


class ListWorkspaceFiles(PrivateInput):
    """List the files in an agent's private zone (yours when agent_id is omitted)."""

    tool_name: ClassVar[str] = "list_workspace_files"
    agent_id: str | None = Field(None, description="Whose zone to list; omit it to list your own.")


# -- handoff zone ------------------------------------------------------------------------------------------


class HandoffInput(ToolInput):
    zone: ClassVar[Literal["handoff"]] = "handoff"


class HandoffFile(HandoffInput):
    """Formally deliver a file to another agent, with a message saying what it is and what to do with it.

    The file lands in handoff/<you>_to_<to_agent>/; delivering the same filename again replaces it.
    """

    tool_name: ClassVar[str] = "handoff_file"
    to_agent: Annotated[str, Field(description="The agent who receives the file.")]
    filename: Filename
    content: Content
    message: Annotated[str, Field(description="Note for the receiver: what the file is and what to do with it.")]


class CheckMyHandoffs(HandoffInput):
    """List the files other agents have delivered to you, oldest first, with sender, message and time."""

    tool_name: ClassVar[str] = "check_my_handoffs"


class ReadHandoff(HandoffInput):
    """Read a file another agent delivered to you, with the message that came with it."""

    tool_name: ClassVar[str] = "read_handoff"
    from_agent: Annotated[str, Field(description="The agent who delivered the file.")]
    filename: Filename


# -- collaborative zone (version control) ------------------------------------------------------------------


class CollabInput(ToolInput):
    zone: ClassVar[Literal["collab"]] = "collab"


class CollabRead(CollabInput):
    """Read a shared, version-controlled file: its content, current version and last author.

    Remember the version: collab_write needs it as expected_version.
    """

    tool_name: ClassVar[str] = "collab_read"
    filepath: Filepath


class CollabWrite(CollabInput):
    """Commit a new version of a shared file that agents edit in turns.

    The write succeeds only if the file is still at expected_version, the version you read. If another agent
    committed since, nothing is written and the result has is_conflict true with the current content: merge
    your changes into it and write again with the new version.
    """

    tool_name: ClassVar[str] = "collab_write"
    filepath: Filepath
    content: Content
    message: Annotated[str, Field(description="Commit message: what you changed and why.")]
    expected_version: Annotated[
        int,
        Field(
            ge=-1,
            description=(
                "The version your change is based on (from collab_read). Use 0 to create a new file. "
                "-1 skips the check and may overwrite other agents' work: avoid it."
            ),
        ),
        NotBool,
    ]


class CollabHistory(CollabInput):
    """List every version of a shared file, oldest first, with author, message and time."""

    tool_name: ClassVar[str] = "collab_history"
    filepath: Filepath


class CollabRollback(CollabInput):
    """Restore an old version of a shared file: its content becomes a new version; history is kept."""

    tool_name: ClassVar[str] = "collab_rollback"
    filepath: Filepath
    to_version: Annotated[int, Field(ge=1, description="The version whose content to restore."), NotBool]


# -- realtime documents (CRDT) -----------------------------------------------------------------------------


class RealtimeInput(ToolInput):
    zone: ClassVar[Literal["realtime"]] = "realtime"


class FieldTarget(RealtimeInput):
    doc_id: DocId
    field_name: FieldName


class RealtimeCreateDocument(RealtimeInput):
    """Create a realtime document that several agents edit at the same time; changes merge automatically.

    The schema is fixed once created. Field types: lww_register (one string, the last write wins), rga
    (text edited at positions), or_set (a set of strings), lww_map (an object, merged key by key),
    pn_counter (an integer).
    """

    tool_name: ClassVar[str] = "realtime_create_document"
    doc_id: DocId
    schema_: dict[str, FieldType] = Field(
        alias="schema",
        description='Field name → field type, e.g. {"title": "lww_register", "tasks": "or_set"}.',
    )


class RealtimeSetField(FieldTarget):
    """Replace the whole value of a field of a realtime document.

    The value must suit the field's type: a string for lww_register and rga, a list of strings for or_set, an
    object for lww_map, an integer for pn_counter. To change part of a field, prefer the targeted tools
    (realtime_edit_text, realtime_set_add, realtime_map_set, realtime_counter_increment): they merge better
    with other agents' concurrent edits.
    """

    tool_name: ClassVar[str] = "realtime_set_field"
    value: Any = Field(description="The new value of the field, of the type the field needs.")


class RealtimeGetField(FieldTarget):
    """Read the current value and type of one field of a realtime document."""

    tool_name: ClassVar[str] = "realtime_get_field"


class TextEditArgs(Arguments):
    """Where and what to edit; which keys are needed depends on the operation."""

    position: Annotated[
        int | None, Field(ge=0, description="insert: where to insert (0 = start of the text)."), NotBool
    ] = None
    start: Annotated[
        int | None, Field(alias="from", ge=0, description="delete/replace: first position of the range."), NotBool
    ] = None
    end: Annotated[
        int | None, Field(alias="to", ge=0, description="delete/replace: position just after the range."), NotBool
    ] = None
    text: str | None = Field(None, description="insert/replace: the text to put there.")


_EDIT_KEYS = {"insert": ("position", "text"), "delete": ("from", "to"), "replace": ("from", "to", "text")}


class RealtimeEditText(FieldTarget):
    """Edit an rga text field at a position; concurrent edits by other agents merge without conflicts.

    insert: args {position, text}. delete: args {from, to}, deletes the characters from..to-1. replace: args
    {from, to, text}. Positions count characters from 0; a position past the end means the end.
    """

    tool_name: ClassVar[str] = "realtime_edit_text"
    operation: Literal["insert", "delete", "replace"] = Field(description="What to do: insert, delete or replace.")
    args: TextEditArgs = Field(
        description="insert: {position, text}; delete: {from, to}; replace: {from, to, text}.",
    )

    @model_validator(mode="after")
    def _args_fit_operation(self) -> RealtimeEditText:
        given = {
            key
            for key, value in (
                ("position", self.args.position),
                ("from", self.args.start),
                ("to", self.args.end),
                ("text", self.args.text),
            )
            if value is not None
        }
        needed = _EDIT_KEYS[self.operation]
        if given != set(needed):
            shape = ", ".join(needed)
            raise ValueError(f"{self.operation} takes args {{{shape}}}, got {{{', '.join(sorted(given))}}}")
        if self.args.start is not None and self.args.end is not None and self.args.end < self.args.start:
            raise ValueError(f"'to' ({self.args.end}) must not be before 'from' ({self.args.start})")
        return self


class RealtimeSetAdd(FieldTarget):
    """Add an element to an or_set field; a concurrent remove by another agent does not undo it."""

    tool_name: ClassVar[str] = "realtime_set_add"
    element: Element


class RealtimeSetRemove(FieldTarget):
    """Remove an element from an or_set field (the adds you have seen; a concurrent add by another agent wins)."""

    tool_name: ClassVar[str] = "realtime_set_remove"
    element: Element


class RealtimeSetContains(FieldTarget):
    """Tell whether an or_set field contains an element."""

    tool_name: ClassVar[str] = "realtime_set_contains"
    element: Element


class RealtimeMapSet(FieldTarget):
    """Set one key of an lww_map field; other keys, and other agents' changes to them, are kept."""

    tool_name: ClassVar[str] = "realtime_map_set"
    key: MapKey
    value: Any = Field(description="The value for the key: any JSON value.")


class RealtimeMapDelete(FieldTarget):
    """Delete one key of an lww_map field."""

    tool_name: ClassVar[str] = "realtime_map_delete"
    key: MapKey


class RealtimeCounterIncrement(FieldTarget):
    """Add to a pn_counter field; increments by several agents at once all count."""

    tool_name: ClassVar[str] = "realtime_counter_increment"
    amount: Amount = 1


class RealtimeCounterDecrement(FieldTarget):
    """Subtract from a pn_counter field; decrements by several agents at once all count."""

    tool_name: ClassVar[str] = "realtime_counter_decrement"
    amount: Amount = 1


class RealtimeGetDocumentSnapshot(RealtimeInput):
    """Read a whole realtime document: every field's current value and type."""

    tool_name: ClassVar[str] = "realtime_get_document_snapshot"
    doc_id: DocId


# -- the history of your own zone ------------------------------------------------------------------------


class HistoryInput(ToolInput):
    zone: ClassVar[Literal["history"]] = "history"


CheckpointId = Annotated[
    str, Field(description="A checkpoint's id (a number, as list_my_checkpoints shows it), or 'last'.")
]


class MakeCheckpoint(HistoryInput):
    """Record your private zone (agents/<you>/) exactly as it is now, so that you can see later what changed
    and undo it. Content is stored once: unchanged files cost nothing. Returns the checkpoint's id."""

    tool_name: ClassVar[str] = "make_checkpoint"
    message: Annotated[str, Field(description="What the checkpoint is for, e.g. 'before the refactor'.")] = ""


class ListMyCheckpoints(HistoryInput):
    """List the checkpoints of your private zone, oldest first: id, time, message, who made it, files changed."""

    tool_name: ClassVar[str] = "list_my_checkpoints"


class DiffMyZone(HistoryInput):
    """Show what changed in your private zone since a checkpoint: the paths added, modified and deleted, and a
    unified diff of each text file."""

    tool_name: ClassVar[str] = "diff_my_zone"
    since: Annotated[str | None, Field(description="The checkpoint to compare from (default: the latest).")] = None


class RestoreCheckpoint(HistoryInput):
    """Put your private zone, or only the given paths in it, back exactly as in a checkpoint. A checkpoint of
    the zone as it is now is made first: its id (``undo``) restores what this replaced."""

    tool_name: ClassVar[str] = "restore_checkpoint"
    checkpoint: CheckpointId
    paths: Annotated[
        list[str], Field(description="Paths in your zone to restore, e.g. ['notes.md']; empty: the whole zone.")
    ] = []


# -- the branches of your own zone ------------------------------------------------------------------------


class BranchInput(ToolInput):
    zone: ClassVar[Literal["branches"]] = "branches"


BranchName = Annotated[
    str,
    Field(
        description="A branch's name: a letter or digit, then letters, digits, '.', '_' or '-' (at most 64), as "
        "list_my_branches shows it."
    ),
]


class ListMyBranches(BranchInput):
    """List the branches of your private zone: each an attempt at your work held apart from the zone until a person
    accepts it (`omxfs run --branch`). Pending ones first, then the last accepted or discarded one of each name,
    each with its name, parent (the branch it was made from and goes into; null: the zone), created, by, stat
    (+added ~modified -deleted against its parent), state (pending, conflicted, orphaned, accepted, discarded) and
    detail. ``current`` is the branch these tools run in, null for the zone itself."""

    tool_name: ClassVar[str] = "list_my_branches"


class CompareMyBranches(BranchInput):
    """Show what one of your pending branches changes against what it goes into (the zone, or the branch it was
    made from), or, with other, your zone as branch has it against your zone as other has it: the paths added,
    modified and deleted, and a unified diff of each text file."""

    tool_name: ClassVar[str] = "compare_my_branches"
    branch: BranchName
    other: Annotated[str | None, Field(description="A second pending branch to compare branch with.")] = None


class ForkMyZone(BranchInput):
    """Start a new branch of your private zone: an empty attempt held apart from the zone (or made from one of your
    pending branches), to work in with the command it returns; nothing runs in it yet. While it is pending, a plain
    view of your zone is refused: work goes on in the branch until a person accepts or discards it."""

    tool_name: ClassVar[str] = "fork_my_zone"
    branch: Annotated[
        str, Field(description="The new branch's name: a letter or digit, then letters, digits, '.', '_' or '-'.")
    ]
    from_branch: Annotated[
        str | None, Field(description="A pending branch to make it from (default: your zone itself).")
    ] = None


#: every tool, in the order they are offered to a model
TOOL_INPUTS: tuple[type[ToolInput], ...] = (
    SaveToMyWorkspace,
    ReadFromWorkspace,
    ListWorkspaceFiles,
    HandoffFile,
    CheckMyHandoffs,
    ReadHandoff,
    CollabRead,
    CollabWrite,
    CollabHistory,
    CollabRollback,
    RealtimeCreateDocument,
    RealtimeSetField,
    RealtimeGetField,
    RealtimeEditText,
    RealtimeSetAdd,
    RealtimeSetRemove,
    RealtimeSetContains,
    RealtimeMapSet,
    RealtimeMapDelete,
    RealtimeCounterIncrement,
    RealtimeCounterDecrement,
    RealtimeGetDocumentSnapshot,
)

TOOLS_BY_NAME: dict[str, type[ToolInput]] = {model.tool_name: model for model in TOOL_INPUTS}

#: the tools on the agent's own history and branches, offered by the MCP server only: an omx plan or agent run has
#: its own checkpoint and undo lines, and a restore in the middle of a run would swap the zone its record is written in
HISTORY_TOOL_INPUTS: tuple[type[ToolInput], ...] = (
    MakeCheckpoint,
    ListMyCheckpoints,
    DiffMyZone,
    RestoreCheckpoint,
    ListMyBranches,
    CompareMyBranches,
    ForkMyZone,
)

HISTORY_TOOLS_BY_NAME: dict[str, type[ToolInput]] = {model.tool_name: model for model in HISTORY_TOOL_INPUTS}
