"""The record of a run: ``runs/<ts>/plan.json`` and ``trace.jsonl``, one JSON object per line.

Four kinds of line, told apart by ``kind``: ``run`` (start, plan, confirmation, end: what was decided and why;
a re-plan's reason and, in a run that may re-plan, each plan whole; for ``omx agent`` also its context
compressions and resizes, the calls it did not run again (``repeat_refused``) and the answer), ``model``
(every model request: purpose, request id, token usage including cached tokens, the retries it took), ``tool``
(every tool call of ``omx agent``: arguments, result digest and preview, error) and ``step`` (the
seed's TraceEntry: step_id, tool, inputs_digest, output_digest, start_time, end_time, status, error, plus what a
person needs to debug it: the inputs and output in short, stderr, the sandbox). Lines are appended and flushed
one by one, so a run that crashes still leaves everything up to the crash.

``runs`` is opened without following a symlink (``runs_dir.open_runs``), and the run's directory is written
through a descriptor of it, no name in it followed if a symlink (a step runs in the workspace, and may plant
``runs/<ts>/trace.jsonl -> /etc/x`` while omx runs): the trace is a file made new by the run's first line and
appended to through its own descriptor; plan.json and each step's output are new files renamed into place, over
whatever a step left there; a run directory a step renames away still gets the rest of the record.

Digests are ``sha256:`` of the canonical JSON (sorted keys, no spaces, UTF-8), so the same inputs always give the
same digest across runs and machines.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import json
import os
import secrets
import stat
import time
import weakref
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.model.llm import JsonMode, LLMError, Model, ModelReply
from agent.model.pricing import Tally
from agent.record.runs_dir import DIR_BENEATH, open_runs

__all__ = ["ModelCallEntry", "RecordingModel", "RunEntry", "RunRecorder", "ToolCallEntry", "TraceEntry", "digest"]
__all__ += ["OUTPUTS_DIR", "now", "preview", "read_output"]

PREVIEW_CHARS = 400
PLAN, TRACE, PLANS_DIR = "plan.json", "trace.jsonl", "plans"
#: each step's whole output, ``outputs/<id>.txt``, for a later ``--from-step``
OUTPUTS_DIR = "outputs"
#: a file of the run's directory, made new: never an existing one, never through a symlink
NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def now() -> str:
    """Local time with its UTC offset, to the millisecond: sortable, and readable next to other logs."""
    return _dt.datetime.now().astimezone().isoformat(timespec="milliseconds")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def preview(value: Any, limit: int = PREVIEW_CHARS) -> Any:
    """The value with every long string cut to about ``limit`` characters, its start and its end (the digest covers
    the whole value): the end of a traceback or a log is its error line, which a cut after the start would lose."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[: limit // 2] + f" ... [{len(value)} chars] ... " + value[-(limit - limit // 2) :]
    if isinstance(value, dict):
        return {key: preview(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [preview(item, limit) for item in value]
    return value


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceEntry(_Entry):
    """One executed (or skipped) step."""

    kind: Literal["step"] = "step"
    step_id: int
    tool: str
    inputs_digest: str | None
    output_digest: str | None
    start_time: str | None
    end_time: str | None
    status: Literal["success", "failed", "skipped", "reused"]  # reused: before omx run --from-step
    error: str | None = None
    error_type: str | None = None
    hint: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    output: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class ModelCallEntry(_Entry):
    """One request to the model, with the usage the provider reported (cached tokens show KV-cache reuse)."""

    kind: Literal["model"] = "model"
    purpose: str
    step_id: int | None = None
    model: str | None = None
    request_id: str | None = None
    start_time: str
    end_time: str
    duration_s: float
    status: Literal["success", "failed", "interrupted"]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    error: str | None = None
    # the agent loop's prefix measurements: the request's size in characters of its deterministic
    # rendering, how many of them repeat the previous request's, and whether there was a previous request
    prompt_chars: int | None = None
    prefix_chars: int | None = None
    previous_request: bool | None = None
    retries: list[str] = Field(default_factory=list)  # failed attempts before this one's outcome (agent.model.waiting)
    response_format: str | None = None  # how the reply's shape was asked: json_schema, json_object, or None (not)


class ToolCallEntry(_Entry):
    """One tool call of ``omx agent``: what the model asked for and what it got back (digests cover it all)."""

    kind: Literal["tool"] = "tool"
    step: int  # the model call that asked for it
    call_id: str
    tool: str
    arguments: Any  # the parsed JSON arguments in short, or the raw text when they were not JSON
    inputs_digest: str
    output_digest: str
    start_time: str
    end_time: str
    duration_s: float
    status: Literal["success", "failed", "refused"]
    output: str  # the result in short (PREVIEW_CHARS)
    error: str | None = None
    source: Literal["native", "text"] = "native"  # text: the model wrote the call in its reply's content


class RunEntry(_Entry):
    """A decision or milestone of the run: start, plan, confirmation, end."""

    kind: Literal["run"] = "run"
    event: Literal[
        "start",
        "plan_invalid",
        "plan_unfit",
        "schema_refused",
        "plan_schema",
        "plan",
        "replan",
        "code_fixed",
        "confirmation",
        "end",
        "compress",
        "resize",
        "repeat_refused",
        "task_reading",
        "plan_from_reading",
        "second_program",
    ]
    time: str = Field(default_factory=now)
    data: dict[str, Any] = Field(default_factory=dict)


Entry = TraceEntry | ModelCallEntry | ToolCallEntry | RunEntry


class RunRecorder:
    """Writes one run's directory, through a descriptor of it (the module says why). ``create`` makes a fresh
    ``<runs_root>/<timestamp>`` (suffixed if taken); ``run_dir`` and the paths are for showing and for readers."""

    def __init__(self, run_dir: Path, dir_fd: int) -> None:
        """Takes ``dir_fd``, a descriptor of ``run_dir``, and closes it when the recorder is collected."""
        self.run_dir = run_dir
        self.plan_path = run_dir / PLAN
        self.trace_path = run_dir / TRACE
        self._dir = dir_fd
        self._trace: int | None = None
        self._fds = [dir_fd]
        weakref.finalize(self, _close_all, self._fds)

    @classmethod
    def create(cls, runs_root: Path) -> RunRecorder:
        """A new run directory in ``runs_root`` (made if missing); RunsError where ``runs_root`` is a symlink or not
        a directory (``runs_dir.open_runs``)."""
        runs = open_runs(runs_root)
        try:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            for n in range(1, 1000):
                name = stamp if n == 1 else f"{stamp}-{n}"
                try:
                    os.mkdir(name, 0o755, dir_fd=runs)
                except FileExistsError:
                    continue
                return cls(runs_root / name, os.open(name, DIR_BENEATH, dir_fd=runs))
        finally:
            os.close(runs)
        raise FileExistsError(f"cannot create a run directory in {runs_root}: 999 runs this second")

    def write_plan(self, plan: BaseModel) -> None:
        """plan.json (an ``agent.plan_run.plan.Plan``), atomically: a reader never sees half a plan. Typed as any
        model, so the record, which ``omx agent`` uses too, does not depend on the plan package."""
        _replace(self._dir, PLAN, plan.model_dump_json(indent=2, exclude_none=True) + "\n")

    def save_output(self, step_id: int, output: str) -> None:
        """Keep a step's whole output as ``outputs/<step_id>.txt``, for a later ``--from-step``."""
        outputs = _own_dir(self._dir, OUTPUTS_DIR)
        try:
            _replace(outputs, f"{step_id}.txt", output)
        finally:
            os.close(outputs)

    def archive_plan(self, number: int) -> None:
        """Before a re-plan's plan.json is written: keep plan ``number``'s plan.json and outputs/ in
        ``plans/<number>/``, where ``omx run plans/<number>/plan.json --from-step N`` finds them as in any run
        directory; plan.json and outputs/ beside the trace are then the latest plan's, never a mix of two."""
        plans = _own_dir(self._dir, PLANS_DIR)
        try:
            kept = _own_dir(plans, str(number))
        finally:
            os.close(plans)
        try:
            for name in (PLAN, OUTPUTS_DIR):
                with contextlib.suppress(FileNotFoundError):
                    os.replace(name, name, src_dir_fd=self._dir, dst_dir_fd=kept)
        finally:
            os.close(kept)

    def record(self, entry: Entry) -> None:
        """Append ``entry`` as a line of the trace, made by the first line, and sync it."""
        if self._trace is None:
            self._trace = os.open(TRACE, NEW_FILE | os.O_APPEND, 0o644, dir_fd=self._dir)
            self._fds.append(self._trace)
        _write_all(self._trace, (entry.model_dump_json() + "\n").encode("utf-8"))
        os.fsync(self._trace)


def read_output(run_dir: Path, step_id: int) -> str:
    """The output ``RunRecorder.save_output`` kept for ``step_id`` in ``run_dir``; "" where there is none, or where
    a step put a symlink or another kind of file in its place (what omx reads back, it shows the model)."""
    try:
        run = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        outputs = os.open(OUTPUTS_DIR, DIR_BENEATH, dir_fd=run)
    except OSError:
        return ""
    finally:
        os.close(run)
    try:
        fd = os.open(f"{step_id}.txt", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=outputs)
    except OSError:
        return ""
    finally:
        os.close(outputs)
    with open(fd, encoding="utf-8", errors="replace") as f:  # O_NONBLOCK: a FIFO there cannot hold omx up
        return f.read() if stat.S_ISREG(os.fstat(fd).st_mode) else ""


def _own_dir(dir_fd: int, name: str) -> int:
    """The directory ``name`` in ``dir_fd``, made if missing; a symlink or another kind of file a step put in its
    place is removed first (the name is omx's), never followed."""
    found = _open_dir(dir_fd, name)
    if found is not None:
        return found
    os.unlink(name, dir_fd=dir_fd)
    os.mkdir(name, 0o755, dir_fd=dir_fd)
    return os.open(name, DIR_BENEATH, dir_fd=dir_fd)


def _open_dir(dir_fd: int, name: str) -> int | None:
    """``name`` in ``dir_fd`` as a directory, made if missing; None where something else is there."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=dir_fd)
    try:
        return os.open(name, DIR_BENEATH, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            return None
        raise


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _replace(dir_fd: int, name: str, text: str) -> None:
    """``name`` in ``dir_fd`` becomes a new file holding ``text``: written under a fresh name, then renamed over it
    (a symlink or anything else there is replaced, never followed)."""
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, NEW_FILE, 0o644, dir_fd=dir_fd)
    try:
        with open(fd, "w", encoding="utf-8", closefd=False) as f:
            f.write(text)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    finally:
        os.close(fd)


class RecordingModel:
    """A Model that writes a ``model`` line to the trace for every request; set ``purpose``/``step_id`` per use."""

    def __init__(self, model: Model, recorder: RunRecorder) -> None:
        self.model = model
        self.recorder = recorder
        self.purpose = "plan"
        self.step_id: int | None = None
        self.tally = Tally()  # the run's tokens and cost, for its summary
        self._format: str | None = None  # the response format of the request being recorded

    def complete(
        self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None, json_mode: JsonMode = False
    ) -> ModelReply:
        start, began = now(), time.monotonic()
        self._format = "json_schema" if isinstance(json_mode, dict) else "json_object" if json_mode else None
        try:
            reply = self.model.complete(messages, tools=tools, json_mode=json_mode)
        except LLMError as exc:
            self._record(start, began, status="failed", request_id=exc.request_id, error=str(exc),
                         retries=exc.retries)  # fmt: skip
            raise
        except KeyboardInterrupt:
            self._record(start, began, status="interrupted")
            raise
        usage = reply.usage
        self.tally.add(reply.model, usage)
        self._record(
            start,
            began,
            status="success",
            model=reply.model,
            request_id=reply.request_id,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
            retries=reply.retries,
        )
        return reply

    def _record(self, start: str, began: float, **fields: Any) -> None:
        duration = round(time.monotonic() - began, 3)
        self.recorder.record(
            ModelCallEntry(
                purpose=self.purpose,
                step_id=self.step_id,
                start_time=start,
                end_time=now(),
                duration_s=duration,
                response_format=self._format,
                **fields,
            )
        )
