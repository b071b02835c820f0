"""The inputs of the plan tools (SPEC §6), one pydantic model per tool: the plan schema, the model's instructions
and the tools' argument checks all come from these, so they cannot drift apart.

References (``{"ref": "step:1.output"}``) are allowed only where data flows (file content, a model's prompt and
input). Paths, commands and code must be literal, because the risk of a plan is computed from them before
anything runs: a path or a command that only exists at run time could not be judged.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["TOOL_INPUTS", "ListDirInput", "LlmInput", "PythonInput", "ReadTextInput", "Ref", "ShellInput", "Text"]
__all__ += ["ToolInput", "WorkspaceInput", "WorkspaceToolName", "WriteTextInput"]
__all__ += ["PATH_TOOL_INPUTS", "CopyInput", "DeleteInput", "MakeDirInput", "MoveInput", "PathToolInput"]

REF_PATTERN = re.compile(r"^step:([1-9][0-9]*)\.output$")
MAX_TIMEOUT = 600.0
MAX_CODE = 100_000  # characters: it travels as one argument, and the kernel limits those to 128 KiB


class Ref(BaseModel):
    """The output of an earlier step, injected by the executor when the step runs."""

    model_config = ConfigDict(extra="forbid")

    ref: str = Field(pattern=REF_PATTERN.pattern, description="'step:<id>.output', where <id> is an earlier step")

    @property
    def step_id(self) -> int:
        match = REF_PATTERN.match(self.ref)
        assert match is not None  # the field's pattern guarantees it
        return int(match.group(1))


#: a string, or a reference to the output of an earlier step
Text = str | Ref
RelPath = Annotated[str, Field(description="A path relative to the workspace root, e.g. 'letters/ann.txt'; no '..'.")]
Timeout = Annotated[float, Field(gt=0, le=MAX_TIMEOUT, description="Seconds before it is killed.")] | None


class ToolInput(BaseModel):
    """The inputs of one tool; unknown keys make the plan invalid, so a typo is reported instead of ignored."""

    model_config = ConfigDict(extra="forbid")

    tool_name: ClassVar[str]

    def refs(self) -> list[Ref]:
        return [value for value in self.__dict__.values() if isinstance(value, Ref)]


class ReadTextInput(ToolInput):
    """Read a UTF-8 text file of the workspace; the output is its content."""

    tool_name: ClassVar[str] = "read_text"
    path: RelPath


class WriteTextInput(ToolInput):
    """Write text to a file of the workspace (parent directories are created); the output is the path written."""

    tool_name: ClassVar[str] = "write_text"
    path: RelPath
    content: Text = Field(description="The text, or {'ref': 'step:N.output'}.")
    mode: Literal["overwrite", "append"] = Field(default="overwrite", description="Replace the file or add to it.")


class ListDirInput(ToolInput):
    """List a directory of the workspace, one entry per line (directories end with '/')."""

    tool_name: ClassVar[str] = "list_dir"
    path: RelPath = "."
    pattern: str | None = Field(default=None, description="A glob the names must match, e.g. '*.txt'.")


class ShellInput(ToolInput):
    """Run one allow-listed command (ls, cat, grep, wc, head, tail, python3 -c) without a shell; output: stdout."""

    tool_name: ClassVar[str] = "shell"
    cmd: str = Field(
        max_length=MAX_CODE, description="One command line: no pipes, redirections, ';', '&&', '$(...)' or backquotes."
    )
    timeout: Timeout = None


class PythonInput(ToolInput):
    """Run Python code in the sandbox (workspace as working directory, no network); output: what it prints. The
    code sees input as the string INPUT."""

    tool_name: ClassVar[str] = "python"
    code: str = Field(max_length=MAX_CODE, description="The Python source; it prints the result.")
    input: Text | None = Field(
        default=None, description="The text the code works on, usually {'ref': 'step:N.output'}; the code sees INPUT."
    )
    timeout: Timeout = None


class LlmInput(ToolInput):
    """Ask the model once; the output is its text."""

    tool_name: ClassVar[str] = "llm"
    prompt: Text = Field(description="The instruction, e.g. 'Summarise in 3 bullets'.")
    input: Text | None = Field(default=None, description="The material to work on, usually {'ref': 'step:N.output'}.")


class PathToolInput(ToolInput):
    """The inputs of a tool that moves, copies, makes or deletes paths (``tools/path_tools.py``)."""

    def paths(self) -> list[str]:
        """Every path the step names, source first."""
        return [value for value in self.__dict__.values() if isinstance(value, str)]


Overwrite = Annotated[
    bool, Field(description="Replace a file already at target (false: the step fails if target exists).")
]


class MoveInput(PathToolInput):
    """Move or rename a file or directory of the workspace (HIGH risk: asked for explicitly); a symlink is moved
    itself, never followed; the output is the new path."""

    tool_name: ClassVar[str] = "move"
    source: RelPath
    target: RelPath = Field(description="The new path (its missing parent directories are made), not a directory.")
    overwrite: Overwrite = False


class CopyInput(PathToolInput):
    """Copy a file, or a directory with everything in it, to a new path of the workspace; symlinks are copied as
    symlinks, never followed; the output is the new path."""

    tool_name: ClassVar[str] = "copy"
    source: RelPath
    target: RelPath = Field(description="The new path (its missing parent directories are made), not a directory.")
    overwrite: Overwrite = False


class MakeDirInput(PathToolInput):
    """Make a directory of the workspace, and its missing parents; the output is its path."""

    tool_name: ClassVar[str] = "make_dir"
    path: RelPath


class DeleteInput(PathToolInput):
    """Delete a file, a symlink (never what it points to) or a directory with everything in it (HIGH risk: asked
    for explicitly); the output is the path deleted."""

    tool_name: ClassVar[str] = "delete"
    path: RelPath


#: the tools that change which paths exist; moves and deletes are the HIGH risk steps a person may still confirm
PATH_TOOL_INPUTS: tuple[type[PathToolInput], ...] = (MoveInput, CopyInput, MakeDirInput, DeleteInput)


#: the shared-workspace tools (``agent.workspace_tools``), offered on an omxfs mount
WorkspaceToolName = Literal[
    "save_to_my_workspace",
    "read_from_workspace",
    "list_workspace_files",
    "handoff_file",
    "check_my_handoffs",
    "read_handoff",
    "collab_read",
    "collab_write",
    "collab_history",
    "collab_rollback",
    "realtime_create_document",
    "realtime_set_field",
    "realtime_get_field",
    "realtime_edit_text",
    "realtime_set_add",
    "realtime_set_remove",
    "realtime_set_contains",
    "realtime_map_set",
    "realtime_map_delete",
    "realtime_counter_increment",
    "realtime_counter_decrement",
    "realtime_get_document_snapshot",
]


class WorkspaceInput(ToolInput):
    """The arguments of a shared-workspace tool, exactly as its definition gives them; a text argument may be
    ``{"ref": "step:N.output"}``. The step checks them against the tool's own input model (``plan.py``), so the
    workspace tools are described and validated in one place, ``agent.workspace_tools.models``."""

    model_config = ConfigDict(extra="allow")

    tool_name: ClassVar[str] = "workspace"

    @model_validator(mode="after")
    def _parse_refs(self) -> WorkspaceInput:
        extra = self.__pydantic_extra__ or {}
        for key, value in extra.items():
            if isinstance(value, dict) and set(value) == {"ref"}:
                extra[key] = Ref.model_validate(value)
        return self

    def arguments(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})

    def refs(self) -> list[Ref]:
        return [value for value in self.arguments().values() if isinstance(value, Ref)]


_FIRST: tuple[type[ToolInput], ...] = (ReadTextInput, WriteTextInput, ListDirInput, ShellInput, PythonInput, LlmInput)
TOOL_INPUTS: dict[str, type[ToolInput]] = {model.tool_name: model for model in (*_FIRST, *PATH_TOOL_INPUTS)}
