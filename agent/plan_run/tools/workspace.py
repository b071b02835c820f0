"""The shared-workspace tools of seed 001 as plan tools of ``omx`` on an omxfs mount, and recovery from conflicts.

Each call runs in a fresh process (``agent.workspace_tools.call``) started with ``OMX_AGENT`` (who), ``OMX_RUN``
and ``OMX_STEP`` (which run and step of the trace) and ``OMX_REQUEST`` (which model request asked for it): the
mount reads them from the process, so every version and delivery records the step that wrote it, and the
identity is the one the mount sees, never one the tool claims. The tools themselves only do plain file
operations and xattrs on the mount (``MountBackend``).

A plan is fixed before it runs, but a collaborative write can lose a race with another agent. Then the step is
not failed at once: the model gets the conflict result (current version, current content, suggestion) and the
workspace tools, and may read, merge and commit again, at most ``MAX_RETRIES`` more writes and ``MAX_TURNS``
model requests. Every call it makes is traced under the step, with the request that asked for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent.model.llm import LLMError
from agent.plan_run.plan import RiskLevel, WorkspaceStep
from agent.plan_run.tools.base import ToolContext, ToolResult
from agent.plan_run.tools.inputs import WorkspaceInput
from agent.record.trace import RecordingModel, RunRecorder, TraceEntry, digest, now, preview

__all__ = ["MAX_RETRIES", "MAX_TURNS", "WorkspaceCaller", "run_workspace_step", "workspace_findings"]

MAX_RETRIES = 2  # collaborative writes after the conflict
MAX_TURNS = 6  # model requests while recovering
CALL_TIMEOUT = 60.0
RECOVERY = """\
You are carrying out step {step} of a plan: {description}
It called {tool} with {arguments}
and got this result:
{result}

Another agent committed this file after you read it; your write was not applied and nothing is lost. Resolve it \
with the workspace tools: collab_read the latest version, merge your change into it (keep the other agent's \
changes), and collab_write the merged text with expected_version set to the version you read. You may write at \
most {retries} more times. When the merged version is committed, reply with one short line saying what you merged."""


class WorkspaceCaller:
    """Runs workspace tool calls as ``agent`` on the mount at ``root``, each in its own process."""

    def __init__(self, root: Path, agent: str, run_id: str | None) -> None:
        self.root, self.agent, self.run_id = root, agent, run_id

    def environment(self, step: int, request: str | None) -> dict[str, str]:
        env = {key: os.environ[key] for key in ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "HOME") if key in os.environ}
        env.update(OMX_AGENT=self.agent, OMX_STEP=str(step), PYTHONIOENCODING="utf-8")
        if self.run_id:
            env["OMX_RUN"] = self.run_id
        if request:
            env["OMX_REQUEST"] = request
        return env

    def call(
        self, name: str, arguments: dict[str, Any] | str, *, step: int, request: str | None = None
    ) -> dict[str, Any]:
        """The tool's result. A process that crashes or answers nonsense is our bug: RuntimeError."""
        line = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n"
        argv = [sys.executable, "-m", "agent.workspace_tools.call", str(self.root), self.agent]
        done = subprocess.run(
            argv,
            input=line.encode("utf-8"),
            capture_output=True,
            cwd=self.root,
            env=self.environment(step, request),
            timeout=CALL_TIMEOUT,
            check=False,
        )
        try:
            result: dict[str, Any] = json.loads(done.stdout.decode("utf-8").splitlines()[0])
        except (IndexError, ValueError, UnicodeDecodeError):
            stderr = done.stderr.decode("utf-8", "replace")[-2000:]
            raise RuntimeError(f"workspace tool {name} failed (exit {done.returncode}): {stderr}") from None
        return result


def _result(result: dict[str, Any], **details: Any) -> ToolResult:
    """A tool result as a plan step's: the JSON is the output (a later step's ``ref`` gets all of it)."""
    text = json.dumps(result, ensure_ascii=False)
    if result.get("success"):
        return ToolResult(ok=True, output=text, details={"result": result, **details})
    hint = result.get("suggestion") or result.get("hint") or "fix the inputs of this step"
    error = str(result.get("error", "the workspace tool failed"))
    return ToolResult.failure(
        error, str(hint), str(result.get("error_type", "workspace_error")), result=result, **details
    )


def run_workspace_step(
    step: WorkspaceStep, inputs: WorkspaceInput, ctx: ToolContext, recorder: RunRecorder
) -> ToolResult:
    """Run one workspace step; a collaborative conflict goes to the model to merge and commit again."""
    if ctx.agent is None:
        return ToolResult.failure(
            f"{step.tool} works only on an omxfs mount",
            "run omx in a workspace mounted with `omxfs mount`, or use read_text/write_text",
            "NoWorkspaceMount",
        )
    caller = WorkspaceCaller(ctx.workspace, ctx.agent, ctx.run_id)
    arguments = inputs.arguments()
    result = caller.call(step.tool, arguments, step=step.id)
    if result.get("is_conflict") and ctx.model is not None:
        return _Recovery(step, arguments, result, ctx, caller, recorder).run()
    return _result(result)


class _Recovery:
    """The bounded model loop that merges after a conflict (seed K-1 step 9)."""

    def __init__(
        self,
        step: WorkspaceStep,
        arguments: dict[str, Any],
        conflict: dict[str, Any],
        ctx: ToolContext,
        caller: WorkspaceCaller,
        recorder: RunRecorder,
    ) -> None:
        self.step, self.conflict, self.ctx, self.caller, self.recorder = step, conflict, ctx, caller, recorder
        self.arguments = arguments

    def run(self) -> ToolResult:
        from agent.workspace_tools import openai_tool_definitions, system_prompt

        assert self.ctx.agent is not None and self.ctx.model is not None
        model = self.ctx.model
        if isinstance(model, RecordingModel):
            model.purpose, model.step_id = "recovery", self.step.id
        prompt = RECOVERY.format(
            step=self.step.id,
            description=self.step.description,
            tool=self.step.tool,
            arguments=json.dumps(self.arguments, ensure_ascii=False),
            result=json.dumps(self.conflict, ensure_ascii=False, indent=1),
            retries=MAX_RETRIES,
        )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(self.ctx.agent, self.ctx.team or (self.ctx.agent,))},
            {"role": "user", "content": prompt},
        ]
        tools = openai_tool_definitions()
        self._trace(self.step.tool, json.dumps(self.arguments, ensure_ascii=False), self.conflict, None, now())
        writes, committed = 0, None
        for _ in range(MAX_TURNS):
            try:
                reply = model.complete(messages, tools=tools)
            except LLMError as exc:
                return self._failed(f"{exc}", writes)
            if not reply.tool_calls:
                break
            messages.append(reply.as_message())
            for call in reply.tool_calls:
                if call.name == "collab_write":
                    writes += 1
                if writes > MAX_RETRIES:
                    result = {"success": False, "error": f"no more writes: {MAX_RETRIES} retries are used up"}
                else:
                    result = self._call(call.name, call.arguments, reply.request_id)
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result, ensure_ascii=False)}
                )
                if call.name == "collab_write" and result.get("success"):
                    committed = result
            if committed is not None or writes >= MAX_RETRIES:
                break
        if committed is None:
            return self._failed("the conflict was not resolved", writes)
        return _result(committed, recovered_from=self.conflict.get("conflict"), retries=writes)

    def _call(self, name: str, arguments: str, request: str) -> dict[str, Any]:
        start = now()
        result = self.caller.call(name, arguments, step=self.step.id, request=request)
        self._trace(name, arguments, result, request, start)
        return result

    def _trace(self, name: str, arguments: str, result: dict[str, Any], request: str | None, start: str) -> None:
        """One call of the step in the trace: the planned call that conflicted (no request), then the model's."""
        ok = bool(result.get("success"))
        self.recorder.record(
            TraceEntry(
                step_id=self.step.id,
                tool=name,
                inputs_digest=digest(arguments),
                output_digest=digest(result) if ok else None,
                start_time=start,
                end_time=now(),
                status="success" if ok else "failed",
                error=None if ok else str(result.get("error")),
                error_type=None if ok else str(result.get("error_type")),
                inputs=preview({"arguments": arguments}),
                output=preview(json.dumps(result, ensure_ascii=False)) if ok else None,
                details={"recovery": request is not None, "request_id": request},
            )
        )

    def _failed(self, why: str, writes: int) -> ToolResult:
        failed = _result(self.conflict, retries=writes)
        failed.error = f"{failed.error}; recovery failed after {writes} write(s): {why}"
        return failed


def workspace_findings(step: WorkspaceStep, workspace: Path, agent: str | None) -> list[tuple[RiskLevel, str]]:
    """What makes a workspace step risky: replacing what is there, or skipping the version check."""
    args = step.inputs.arguments()
    found: list[tuple[RiskLevel, str]] = []
    if step.tool == "collab_write" and args.get("expected_version") == -1:
        found.append((RiskLevel.MEDIUM, "collab_write with expected_version -1 may overwrite another agent's work"))
    filename = args.get("filename")
    if agent and isinstance(filename, str):
        if step.tool == "save_to_my_workspace" and (workspace / "agents" / agent / filename).exists():
            found.append((RiskLevel.MEDIUM, f"overwrites the existing file agents/{agent}/{filename}"))
        to = args.get("to_agent")
        if (
            step.tool == "handoff_file"
            and isinstance(to, str)
            and (workspace / "handoff" / f"{agent}_to_{to}" / filename).exists()
        ):
            found.append((RiskLevel.MEDIUM, f"replaces the delivery handoff/{agent}_to_{to}/{filename}"))
    return found
