"""The path tools: move, copy, make_dir, delete, inside the workspace only.

Each walks from the workspace root through held directory descriptors (``held_paths``): a path that is absolute,
climbs with ``..`` or goes through a symlink is refused, the source or target itself is never followed (a symlink
is moved, copied or deleted as a link), nothing at a target is replaced unless the step says ``overwrite`` (and
then only a file by a file), and no directory is walked into another mount. omx's own run records (``runs/``, on an
omxfs mount ``agents/<you>/runs/``) are never moved, deleted or written into. The tools run in omx's process,
like ``write_text``: in a view (``omx --as NAME``, a review run too) that process is in the view, so they act on
what the view shows. On an omxfs mount they run in a child started with the step's ``OMX_RUN``/``OMX_STEP``, the
environment the mount reads where a change came from.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent.plan_run.tools.base import ToolContext, ToolFailure, ToolResult
from agent.plan_run.tools.held_paths import (
    WorkspaceRoot,
    copy_entry,
    kind_of,
    lstat_at,
    path_parts,
    remove_entry,
    rename_entry,
    tally,
)
from agent.plan_run.tools.inputs import TOOL_INPUTS, CopyInput, DeleteInput, MakeDirInput, MoveInput, PathToolInput

__all__ = ["copy", "delete", "make_dir", "move", "records_path", "records_problem", "run_path_tool"]

#: how long one call on an omxfs mount may take (a large tree through FUSE takes a while)
CHILD_TIMEOUT = 600.0


def records_path(agent: str | None) -> str:
    """Where omx keeps its run records, relative to the workspace: ``runs``, or ``agents/<agent>/runs`` on a mount."""
    return f"agents/{agent}/runs" if agent else "runs"


def records_problem(path: str, records: str) -> str | None:
    """Why a move, copy or delete must not touch ``path``: it is omx's run records, in them or holds them."""
    try:
        parts, kept = path_parts(path), path_parts(records)
    except ToolFailure:
        return None
    if not parts or (parts[: len(kept)] != kept and kept[: len(parts)] != parts):  # the root is refused apart
        return None
    relation = "is" if parts == kept else "holds" if len(parts) < len(kept) else "is in"
    return f"{path} {relation} {records}/, omx's run records (this run's trace is there)"


def move(inputs: MoveInput, ctx: ToolContext) -> ToolResult:
    return _dispatch(inputs, ctx)


def copy(inputs: CopyInput, ctx: ToolContext) -> ToolResult:
    return _dispatch(inputs, ctx)


def make_dir(inputs: MakeDirInput, ctx: ToolContext) -> ToolResult:
    return _dispatch(inputs, ctx)


def delete(inputs: DeleteInput, ctx: ToolContext) -> ToolResult:
    return _dispatch(inputs, ctx)


def _dispatch(inputs: PathToolInput, ctx: ToolContext) -> ToolResult:
    records = records_path(ctx.agent)
    if ctx.run_id is not None and not ctx.atomic_writes:
        return _in_child(inputs, ctx, records)
    return run_path_tool(inputs, ctx.workspace, records=records, atomic=ctx.atomic_writes)


def _in_child(inputs: PathToolInput, ctx: ToolContext, records: str) -> ToolResult:
    """The tool run by ``python -m agent.plan_run.tools.path_tools`` with the step's environment (module doc)."""
    request = {"tool": inputs.tool_name, "inputs": inputs.model_dump(), "workspace": str(ctx.workspace),
               "records": records, "atomic": ctx.atomic_writes}  # fmt: skip
    env = {**os.environ, **ctx.sandbox.extra_env}
    argv = [sys.executable, "-m", "agent.plan_run.tools.path_tools"]
    try:
        done = subprocess.run(argv, input=json.dumps(request).encode(), env=env, capture_output=True,
                              timeout=CHILD_TIMEOUT, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return ToolResult.failure(
            f"{inputs.tool_name} took more than {CHILD_TIMEOUT:g} s and was stopped part-way",
            "look at what it left with list_dir, then act on smaller parts",
            "Timeout",
        )
    try:
        return ToolResult.model_validate_json(done.stdout)
    except ValueError:
        raise RuntimeError(f"{inputs.tool_name} failed in its process: {done.stderr[-1000:]!r}") from None


def run_path_tool(inputs: PathToolInput, workspace: Path, *, records: str, atomic: bool) -> ToolResult:
    """Do what ``inputs`` asks in ``workspace`` (see the module); every refusal and OS error is a failed result."""
    try:
        with WorkspaceRoot(workspace) as root:
            if isinstance(inputs, MoveInput):
                return _move(inputs, root, records, atomic)
            if isinstance(inputs, CopyInput):
                return _copy(inputs, root, records, atomic)
            if isinstance(inputs, MakeDirInput):
                return _make_dir(inputs, root)
            assert isinstance(inputs, DeleteInput)
            return _delete(inputs, root, records)
    except ToolFailure as failure:
        return failure.result()
    except OSError as exc:
        return _os_failure(inputs, exc)


def _os_failure(inputs: PathToolInput, exc: OSError) -> ToolResult:
    what = {"move": "move {source} to {target}", "copy": "copy {source} to {target}", "make_dir": "make {path}",
            "delete": "delete {path}"}[inputs.tool_name].format(**inputs.model_dump())  # fmt: skip
    hints = {
        errno.EEXIST: "the target exists: choose another target, or set overwrite to true to replace a file",
        errno.ENOTEMPTY: "the target is a directory that is not empty: choose another target",
        errno.EXDEV: "the source and the target are on different file systems or zones",
        errno.EACCES: "check the permissions; in an omxfs workspace change only your own zone",
        errno.EPERM: "check the permissions; in an omxfs workspace change only your own zone",
        errno.EROFS: "this part of the workspace is read-only here; in an omxfs workspace change only your own zone",
    }
    hint = hints.get(exc.errno or 0, "check the paths with list_dir")
    return ToolResult.failure(f"cannot {what}: {exc.strerror or exc}", hint, type(exc).__name__)


def _whole(path: str, what: str) -> tuple[str, ...]:
    """``path``'s components; the workspace root itself is refused: no tool moves, copies or deletes it."""
    parts = path_parts(path)
    if not parts:
        raise ToolFailure(f"{path!r} is the workspace root: {what} it is refused", "name a path inside it",
                          "InvalidPath")  # fmt: skip
    return parts


def _not_records(path: str, records: str) -> None:
    problem = records_problem(path, records)
    if problem:
        raise ToolFailure(problem, "leave runs/ to omx; name other paths", "RunRecords")


def _free_target(existing: os.stat_result | None, source: os.stat_result, target: str, overwrite: bool) -> bool:
    """Whether the target is replaced: refused unless ``overwrite`` and a file replaces a file."""
    if existing is None:
        return False
    if kind_of(existing) == "directory":  # "move a.txt to archive/" meant archive/a.txt: the plan must say so
        raise ToolFailure(
            f"{target} is a directory: the target is the new path itself, never a directory to put it in",
            f"name the new path in full, e.g. {target.rstrip('/')}/NAME",
            "TargetExists",
        )
    if not overwrite:
        raise ToolFailure(
            f"{target} exists ({kind_of(existing)}): nothing is replaced unless the step says overwrite",
            "choose another target, or set overwrite to true to replace a file",
            "TargetExists",
        )
    if kind_of(existing) != "file" or kind_of(source) != "file":
        raise ToolFailure(
            f"{target} is a {kind_of(existing)}: only a file may replace a file",
            f"name the new path in full, e.g. {target}/NAME, or delete {target} first",
            "TargetExists",
        )
    return True


def _into_itself(source: tuple[str, ...], target: tuple[str, ...], shown: str) -> None:
    if target[: len(source)] == source:
        raise ToolFailure(f"{shown} would go inside itself", "choose a target outside the source", "InvalidPath")


def _move(inputs: MoveInput, root: WorkspaceRoot, records: str, atomic: bool) -> ToolResult:
    src, dst = _whole(inputs.source, "moving"), _whole(inputs.target, "replacing")
    for path in (inputs.source, inputs.target):
        _not_records(path, records)
    _into_itself(src, dst, f"{inputs.source} moved to {inputs.target}")
    with root.parent(src) as src_dir:
        st = lstat_at(src_dir, src[-1])
        if st is None:
            raise ToolFailure(f"{inputs.source} does not exist", "check the path with list_dir", "NotFound")
        with root.parent(dst, create=True) as dst_dir:
            replaced = _free_target(lstat_at(dst_dir, dst[-1]), st, inputs.target, inputs.overwrite)
            copied = False
            try:
                rename_entry(src_dir, src[-1], dst_dir, dst[-1], replace=replaced)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                # another file system, or an overlay's lower directory (a review run): copied, then removed, as mv does
                copy_entry(src_dir, src[-1], dst_dir, dst[-1], inputs.source, replace=replaced, atomic=atomic,
                           times=True)  # fmt: skip
                remove_entry(src_dir, src[-1], inputs.source)
                copied = True
    target = "/".join(dst)
    details: dict[str, Any] = {"source": "/".join(src), "target": target, "kind": kind_of(st), "replaced": replaced}
    if copied:
        details["copied_then_removed"] = True
    return ToolResult(ok=True, output=target, details=details)


def _copy(inputs: CopyInput, root: WorkspaceRoot, records: str, atomic: bool) -> ToolResult:
    src, dst = _whole(inputs.source, "copying"), _whole(inputs.target, "replacing")
    _not_records(inputs.target, records)
    _into_itself(src, dst, f"{inputs.source} copied to {inputs.target}")
    with root.parent(src) as src_dir:
        st = lstat_at(src_dir, src[-1])
        if st is None:
            raise ToolFailure(f"{inputs.source} does not exist", "check the path with list_dir", "NotFound")
        counted = tally(src_dir, src[-1], inputs.source, copying=True)
        with root.parent(dst, create=True) as dst_dir:
            replaced = _free_target(lstat_at(dst_dir, dst[-1]), st, inputs.target, inputs.overwrite)
            try:
                copy_entry(src_dir, src[-1], dst_dir, dst[-1], inputs.source, replace=replaced, atomic=atomic)
            except FileExistsError:  # made meanwhile by someone else: theirs, left alone
                raise
            except BaseException:
                if not replaced:  # a copy cut short leaves nothing behind
                    remove_entry(dst_dir, dst[-1], inputs.target)
                raise
    target = "/".join(dst)
    details = {"source": "/".join(src), "target": target, "kind": kind_of(st), "replaced": replaced,
               "files": counted.files, "bytes": counted.bytes}  # fmt: skip
    return ToolResult(ok=True, output=target, details=details)


def _make_dir(inputs: MakeDirInput, root: WorkspaceRoot) -> ToolResult:
    parts = path_parts(inputs.path)
    if not parts:
        return ToolResult(ok=True, output=".", details={"path": ".", "existed": True})
    with root.parent(parts, create=True) as parent:
        existing = lstat_at(parent, parts[-1])
        if existing is not None and kind_of(existing) != "directory":
            raise ToolFailure(f"{inputs.path} exists and is a {kind_of(existing)}, not a directory",
                              "choose another path", "NotADirectory")  # fmt: skip
        if existing is None:
            os.mkdir(parts[-1], 0o777, dir_fd=parent)
    path = "/".join(parts)
    return ToolResult(ok=True, output=path, details={"path": path, "existed": existing is not None})


def _delete(inputs: DeleteInput, root: WorkspaceRoot, records: str) -> ToolResult:
    parts = _whole(inputs.path, "deleting")
    _not_records(inputs.path, records)
    with root.parent(parts) as parent:
        st = lstat_at(parent, parts[-1])
        if st is None:
            raise ToolFailure(f"{inputs.path} does not exist", "check the path with list_dir", "NotFound")
        counted = tally(parent, parts[-1], inputs.path)
        remove_entry(parent, parts[-1], inputs.path)
    path = "/".join(parts)
    details = {"path": path, "kind": kind_of(st), "files": counted.files, "directories": counted.directories,
               "symlinks": counted.symlinks}  # fmt: skip
    return ToolResult(ok=True, output=path, details=details)


def _main() -> None:
    """One call read as JSON on stdin (``_in_child``); its result as JSON on stdout."""
    request = json.loads(sys.stdin.buffer.read())
    inputs = TOOL_INPUTS[request["tool"]].model_validate(request["inputs"])
    assert isinstance(inputs, PathToolInput)
    result = run_path_tool(inputs, Path(request["workspace"]), records=request["records"], atomic=request["atomic"])
    sys.stdout.write(result.model_dump_json())


if __name__ == "__main__":
    _main()
