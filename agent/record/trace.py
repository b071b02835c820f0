"""The record of a run: ``runs/<ts>/plan.json`` and ``trace.jsonl``, one JSON object per line (seed 004 FR-R2).

Four kinds of line, told apart by ``kind``: ``run`` (start, plan, confirmation, end: what was decided and why;
a re-plan's reason and, in a run that may re-plan, each plan whole; for ``omx agent`` also its context
compressions and resizes and the answer), ``model`` (every model request:
purpose, request id, token usage including cached tokens, the retries it took), ``tool`` (every tool call of
``omx agent``: arguments, result digest and preview, error) and ``step`` (the
seed's TraceEntry: step_id, tool, inputs_digest, output_digest, start_time, end_time, status, error, plus what a
person needs to debug it: the inputs and output in short, stderr, the sandbox). Lines are appended and flushed
one by one, so a run that crashes still leaves everything up to the crash.

Digests are ``sha256:`` of the canonical JSON (sorted keys, no spaces, UTF-8), so the same inputs always give the
same digest across runs and machines.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.model.llm import JsonMode, LLMError, Model, ModelReply
from agent.model.pricing import Tally

__all__ = ["ModelCallEntry", "RecordingModel", "RunEntry", "RunRecorder", "ToolCallEntry", "TraceEntry", "digest"]
__all__ += ["now", "preview"]

PREVIEW_CHARS = 400


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
    # the agent loop's prefix measurements (seed 003): the request's size in characters of its deterministic
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
        "plan",
        "replan",
        "code_fixed",
        "confirmation",
        "end",
        "compress",
        "resize",
    ]
    time: str = Field(default_factory=now)
    data: dict[str, Any] = Field(default_factory=dict)


Entry = TraceEntry | ModelCallEntry | ToolCallEntry | RunEntry


class RunRecorder:
    """Writes one run's directory. ``create`` picks a fresh ``<runs_root>/<timestamp>`` (suffixed if taken)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.plan_path = run_dir / "plan.json"
        self.trace_path = run_dir / "trace.jsonl"

    @classmethod
    def create(cls, runs_root: Path) -> RunRecorder:
        runs_root.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in range(1, 1000):
            run_dir = runs_root / (stamp if n == 1 else f"{stamp}-{n}")
            try:
                run_dir.mkdir()
            except FileExistsError:
                continue
            return cls(run_dir)
        raise FileExistsError(f"cannot create a run directory in {runs_root}: 999 runs this second")

    def write_plan(self, plan: BaseModel) -> None:
        """plan.json (an ``agent.plan_run.plan.Plan``), atomically: a reader never sees half a plan. Typed as any
        model, so the record, which ``omx agent`` uses too, does not depend on the plan package."""
        tmp = self.plan_path.with_name(".plan.json.tmp")
        tmp.write_text(plan.model_dump_json(indent=2, exclude_none=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.plan_path)

    def archive_plan(self, number: int) -> None:
        """Before a re-plan's plan.json is written: keep plan ``number``'s plan.json and outputs/ in
        ``plans/<number>/``, where ``omx run plans/<number>/plan.json --from-step N`` finds them as in any run
        directory; plan.json and outputs/ beside the trace are then the latest plan's, never a mix of two."""
        kept = self.run_dir / "plans" / str(number)
        kept.mkdir(parents=True, exist_ok=True)
        for name in ("plan.json", "outputs"):
            if (self.run_dir / name).exists():
                os.replace(self.run_dir / name, kept / name)

    def record(self, entry: Entry) -> None:
        line = entry.model_dump_json() + "\n"
        with open(self.trace_path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


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
