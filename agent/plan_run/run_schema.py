"""The plan's JSON schema as one run sends it: valid by construction, down to the tools and the files it reads.

``plan_json_schema`` is the format, the same for every run. The planning request narrows it for the run, so a
grammar-constrained server (llama.cpp, Ollama, vLLM) cannot decode a plan that names a tool this run lacks or reads a
file that is not there:

- the steps are those of the run's tools: the shared-workspace tools only on an omxfs mount;
- read_text's path is one of the workspace's files, and list_dir's one of its directories or ``.``;
- write_text's path is one the run may write (``writable``, where the task names its outputs): those outputs, the
  other files the task names that are not there yet, and the files already in a directory it names. A small model
  otherwise wrote a summary over the file it summarised (the one path it had just read), also when told which file
  the task asks for; what a python step's code writes is the sandbox's and the checks' to judge;
- a plan has at most ``MAX_STEPS`` steps: a small model that starts repeating steps (one step per file, then the
  same steps again) is made to close the plan there, not to decode until the context is full (minutes of a CPU).

A step may read what an earlier step of the same plan writes. JSON schema cannot say "a path an earlier write_text
names" without the whole plan as a grammar, so read_text's choices are the files there now and the paths the task
names as its outputs (``TaskExpectations.outputs``): the file a plan writes and then reads again is nearly always
the task's own. Anything else an earlier step makes is left to the validation and feasibility checks, as before.

The choices are bounded (``PATH_CAP`` entries; runs/, hidden and tool directories are not walked): a larger
workspace keeps plain strings for paths, and ``RunSchema.open_paths`` says why, for the trace. In JSON mode or with
no format (``agent.model.schema_request``) this schema is not sent and the plan's checks catch a missing file.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.plan_run.plan import plan_json_schema
from agent.plan_run.tools.inputs import TOOL_INPUTS

__all__ = ["MAX_STEPS", "PATH_CAP", "SKIPPED_DIRS", "RunSchema", "run_plan_schema", "workspace_paths"]
__all__ += ["writable_paths"]

#: the most files and directories offered as choices; beyond it, paths are plain strings
PATH_CAP = 200
#: directories never walked for choices (runs/ holds omx's own records), besides hidden ones
SKIPPED_DIRS = frozenset({"runs", "venv", "node_modules", "__pycache__"})
#: the most steps a plan sent with the run's schema can have (a python step does any number of files at once)
MAX_STEPS = 16


@dataclass(frozen=True)
class RunSchema:
    """The schema sent with this run's planning requests; ``open_paths``: why paths are plain strings (None: enums);
    ``writable``: the only paths a write_text step may write (None: any)."""

    schema: dict[str, Any]
    open_paths: str | None = None
    writable: list[str] | None = None


def workspace_paths(workspace: Path, cap: int = PATH_CAP) -> tuple[list[str], list[str]] | None:
    """The workspace's files and directories, relative and sorted, not walking into hidden or ``SKIPPED_DIRS``
    directories nor through symlinks; None when there are more than ``cap`` of them."""
    files: list[str] = []
    dirs: list[str] = []
    for top, subdirs, names in os.walk(workspace):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        rel = Path(top).relative_to(workspace)
        dirs += [(rel / d).as_posix() for d in subdirs]
        files += [(rel / n).as_posix() for n in names]
        if len(files) + len(dirs) > cap:
            return None
    return sorted(files), sorted(dirs)


def run_plan_schema(
    workspace: Path,
    outputs: Iterable[str] = (),
    *,
    writable: Iterable[str] | None = None,
    workspace_tools: bool = False,
    cap: int = PATH_CAP,
) -> RunSchema:
    """The plan schema for a run in ``workspace`` whose task names ``outputs``; ``writable``: the only paths a
    write_text step may write (None: any); ``workspace_tools``: on an omxfs mount, where the shared-workspace tools
    are plan tools too."""
    schema = copy.deepcopy(plan_json_schema())
    schema["properties"]["steps"]["maxItems"] = MAX_STEPS
    tools = set(TOOL_INPUTS) if not workspace_tools else None
    paths = workspace_paths(workspace, cap)
    open_paths = None
    if paths is None:
        open_paths = f"more than {cap} files and directories in the workspace: read paths are not listed in the schema"
    else:
        files, dirs = paths
        readable = sorted(set(files) | {os.path.normpath(p) for p in outputs})
        _choices(schema, "ReadTextInput", readable, "A file of the workspace, or one the task asks for.")
        _choices(schema, "ListDirInput", [".", *dirs], "A directory of the workspace ('.' is its root).")
        if not readable:  # an empty enum admits nothing, and some servers refuse it: no read_text step then
            tools = (tools or set(TOOL_INPUTS) | _workspace_tool_names(schema)) - {"read_text"}
    written = sorted({os.path.normpath(p) for p in writable or ()}) or None  # an empty enum admits nothing
    if written:
        _choices(schema, "WriteTextInput", written, "A file the task asks for.")
    if tools is not None:
        _only_tools(schema, tools)
    return RunSchema(schema, open_paths, written)


def writable_paths(
    workspace: Path, outputs: Iterable[str], named: Iterable[str], cap: int = PATH_CAP
) -> list[str] | None:
    """The paths a run whose task has ``outputs`` and names ``named`` (files, and directories with their final
    slash) may write with write_text: its outputs, the named files not there yet, and the files now in a named
    directory (a header added to each file of ``src/``). None, any path, where the task names no output (omx cannot
    tell the files it asks for from the rest) or a named directory holds more than ``cap`` files."""
    paths = {os.path.normpath(p) for p in outputs}
    if not paths:
        return None
    for name in named:
        target = workspace / name
        if name.endswith("/") and target.is_dir():
            found = workspace_paths(target, cap)
            if found is None:
                return None
            paths |= {os.path.normpath(f"{name}{file}") for file in found[0]}
        elif not name.endswith("/") and not target.exists():
            paths.add(os.path.normpath(name))
    return sorted(paths)


def _choices(schema: dict[str, Any], model: str, values: list[str], description: str) -> None:
    path = schema["$defs"][model]["properties"]["path"]
    path.update(enum=values, description=description)


def _step_items(schema: dict[str, Any]) -> dict[str, Any]:
    items: dict[str, Any] = schema["properties"]["steps"]["items"]
    return items


def _workspace_tool_names(schema: dict[str, Any]) -> set[str]:
    step = schema["$defs"].get("WorkspaceStep")
    return set(step["properties"]["tool"]["enum"]) if step else set()


def _only_tools(schema: dict[str, Any], tools: set[str]) -> None:
    """``schema`` with the steps of ``tools`` only (the discriminator's mapping and the ``oneOf`` both)."""
    items = _step_items(schema)
    mapping: dict[str, str] = items["discriminator"]["mapping"]
    kept = {tool: ref for tool, ref in mapping.items() if tool in tools}
    items["discriminator"]["mapping"] = kept
    items["oneOf"] = [choice for choice in items["oneOf"] if choice["$ref"] in kept.values()]
    used = {ref.rsplit("/", 1)[-1] for ref in kept.values()}
    for step in [name for name in schema["$defs"] if name.endswith("Step") and name not in used]:
        del schema["$defs"][step]
        schema["$defs"].pop(step.removesuffix("Step") + "Input", None)
