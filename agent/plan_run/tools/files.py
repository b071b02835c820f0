"""The file tools (seed 004 FR-T1): read_text, write_text, list_dir, all confined to the workspace root."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from agent.plan_run.tools.base import ToolContext, ToolFailure, ToolResult
from agent.plan_run.tools.inputs import ListDirInput, ReadTextInput, WriteTextInput
from agent.plan_run.tools.paths import confine

__all__ = ["list_dir", "read_text", "write_text"]

READ_LIMIT = 2 * 1024 * 1024
LIST_LIMIT = 1000


def _relative(ctx: ToolContext, path: Path) -> str:
    return path.relative_to(ctx.workspace).as_posix() or "."


def read_text(inputs: ReadTextInput, ctx: ToolContext) -> ToolResult:
    try:
        path = confine(ctx.workspace, inputs.path)
        if not path.exists():
            raise ToolFailure(f"{inputs.path} does not exist", "check the path with list_dir", "NotFound")
        if path.is_dir():  # said so that a model reading the error (a re-plan) knows which tool to call instead
            raise ToolFailure(
                f"{inputs.path} is a directory, not a file: read_text reads one file; use list_dir with path "
                f"{inputs.path!r} to see its files, then read_text each file you need",
                f"use list_dir for the directory {inputs.path}, then read_text its files",
                "NotAFile",
            )
        if not path.is_file():
            raise ToolFailure(f"{inputs.path} is not a file", "read_text reads regular files only", "NotAFile")
        size = path.stat().st_size
        if size > READ_LIMIT:
            raise ToolFailure(
                f"{inputs.path} is {size} bytes, more than the {READ_LIMIT} bytes read_text reads",
                "read a part of it with the shell tool: head -n 200 FILE",
                "TooLarge",
            )
        text = path.read_bytes().decode("utf-8")
    except ToolFailure as failure:
        return failure.result()
    except UnicodeDecodeError:
        return ToolResult.failure(f"{inputs.path} is not UTF-8 text", "read_text reads text files only", "NotText")
    except OSError as exc:
        return ToolResult.failure(
            f"cannot read {inputs.path}: {exc.strerror}", "check the path and permissions", type(exc).__name__
        )
    return ToolResult(ok=True, output=text, details={"path": str(path), "bytes": size})


def _atomic_write(path: Path, data: bytes) -> None:
    """Write a new file beside the old one and rename it over: a crash leaves the old or the new, never half."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".omx-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# Writes the bytes on stdin to argv[1]; an OSError becomes "errno strerror" on stderr and exit status 3.
_CHILD_WRITE = """import sys
try:
    with open(sys.argv[1], sys.argv[2]) as f:
        f.write(sys.stdin.buffer.read())
except OSError as exc:
    sys.stderr.write(f"{exc.errno} {exc.strerror}")
    sys.exit(3)
"""


def _write_in_child(path: Path, data: bytes, mode: str, ctx: ToolContext) -> None:
    """On an omxfs mount, write from a child started with the step's ``OMX_RUN``/``OMX_STEP``: the mount reads where
    a write came from in the writing process's starting environment, which omx's own process cannot change."""
    env = {**os.environ, **ctx.sandbox.extra_env}
    argv = [sys.executable, "-c", _CHILD_WRITE, str(path), "ab" if mode == "append" else "wb"]
    done = subprocess.run(argv, input=data, env=env, capture_output=True, timeout=ctx.default_timeout, check=False)
    if done.returncode != 0:
        code, _, reason = done.stderr.decode("utf-8", "replace").partition(" ")
        if code.isdigit():
            raise OSError(int(code), reason)
        raise RuntimeError(f"the write of {path} failed in its process: {done.stderr[-500:]!r}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(inputs: WriteTextInput, ctx: ToolContext) -> ToolResult:
    assert isinstance(inputs.content, str), "references are resolved before a tool runs"
    try:
        path = confine(ctx.workspace, inputs.path)
        if path.is_dir():
            raise ToolFailure(f"{inputs.path} is a directory", "write to a file path inside it", "IsADirectory")
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        data = inputs.content.encode("utf-8")
        if inputs.mode == "overwrite" and ctx.atomic_writes:
            _atomic_write(path, data)
        elif ctx.run_id is not None and not ctx.atomic_writes:
            _write_in_child(path, data, inputs.mode, ctx)
        else:
            with open(path, "ab" if inputs.mode == "append" else "wb") as f:
                f.write(data)
    except ToolFailure as failure:
        return failure.result()
    except UnicodeEncodeError:
        return ToolResult.failure("the content is not valid Unicode text", "write plain text", "InvalidContent")
    except OSError as exc:
        return ToolResult.failure(
            f"cannot write {inputs.path}: {exc.strerror}",
            "check the path; in an omxfs workspace write only your own zone",
            type(exc).__name__,
        )
    details = {"path": str(path), "bytes": len(data), "mode": inputs.mode, "existed": existed}
    return ToolResult(ok=True, output=_relative(ctx, path), details=details)


def list_dir(inputs: ListDirInput, ctx: ToolContext) -> ToolResult:
    try:
        path = confine(ctx.workspace, inputs.path)
        if not path.is_dir():
            raise ToolFailure(f"{inputs.path} is not a directory", "list its parent directory instead", "NotADirectory")
        names = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in path.iterdir())
    except ToolFailure as failure:
        return failure.result()
    except OSError as exc:
        return ToolResult.failure(f"cannot list {inputs.path}: {exc.strerror}", "check the path", type(exc).__name__)
    if inputs.pattern:
        names = [name for name in names if fnmatch.fnmatch(name.rstrip("/"), inputs.pattern)]
    details = {"path": str(path), "entries": len(names), "truncated": len(names) > LIST_LIMIT}
    return ToolResult(ok=True, output="\n".join(names[:LIST_LIMIT]), details=details)
