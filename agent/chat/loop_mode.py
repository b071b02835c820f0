"""``omx --loop "TASK"``: the task as a tool loop, each tool call run as a one-step plan of ``omx "TASK"``.

The model gets the plan tools (``agent.plan_run.tools.registry``, without ``llm``: in a loop the model writes its
prose itself) as the tools of ``agent.chat.loop``'s Agent, which sends them, reads native and text-written calls,
answers repeats and stops at ``LOOP_MAX_STEPS`` model calls. Each call's arguments are checked by its tool's input
model (``agent.plan_run.tools.inputs``; a mistake goes back to the model), made a one-step ``Plan``, assessed by
``risk.assess``, shown and confirmed by ``confirm.confirm`` with plan mode's rules, and run by the ``Executor`` in
the run's Sandbox with its limits (those of ``agent.plan_run``); a call not confirmed is not run and the model is
told so. Everything lands in one ``runs/<ts>/``: the model and tool calls, and per call its plan, confirmation and
step.

The verdict: the task's own checks after it ends (``TaskExpectations``, read before the loop as plan mode reads it:
by the model and by omx's rules, ``agent.plan_run.task_reading``). A loop run is never a success, as there is no
plan whose code omx could verify: ``done`` (exit 0) when every check omx ran is met, ``failed`` (exit 1) when one is
not, or when the loop ended without an answer (max steps, an LLM error).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.chat.loop import UNANSWERED, Agent, AgentConfig, AgentFailed, AgentRun, unanswered
from agent.chat.tool_manager import ToolManager
from agent.model.pricing import Tally
from agent.plan_run.confirm import Declined, Refused, confirm, inline_value
from agent.plan_run.criteria import CriterionCheck
from agent.plan_run.executor import Executor
from agent.plan_run.overwrites import overwrite_previews
from agent.plan_run.path_previews import path_previews
from agent.plan_run.plan import Plan, RiskLevel, validation_summary
from agent.plan_run.risk import RiskAssessment, assess
from agent.plan_run.run_frame import (
    ModelFactory,
    NotStarted,
    Team,
    assessment_record,
    change_record,
    checkpoint_record,
    end_run,
    read_expectations,
    run_model,
    run_recorder,
    run_sandbox,
    run_team,
    sandbox_line,
    sandbox_record,
    schema_refusal_recorder,
    workspace_dir,
)
from agent.plan_run.tools.base import ToolContext
from agent.plan_run.tools.inputs import TOOL_INPUTS, ToolInput
from agent.plan_run.tools.registry import TOOLS
from agent.plan_run.workflow import EXIT_FAILED, EXIT_OK, UI, Options, Outcome
from agent.record.runs_dir import omxfs_mount_of
from agent.record.trace import RecordingModel, RunEntry, RunRecorder, preview, read_output
from agent.sandbox.confine import Sandbox
from omxfs.shell_line import shell_line

__all__ = ["LOOP_MAX_STEPS", "LOOP_TOOLS", "NEVER_SUCCESS", "loop_schema", "run_loop_task"]

#: model calls a loop may make before it ends without an answer (failed)
LOOP_MAX_STEPS = 20
#: the plan tools a loop offers: all but ``llm`` (the model in the loop writes its prose itself)
LOOP_TOOLS = tuple(name for name in TOOLS if name != "llm")
#: what a tool's output sent back to the model is cut to (the whole output is in runs/<ts>/outputs/)
MAX_RESULT_CHARS = 8000
#: why a loop's result line never says success
NEVER_SUCCESS = "a tool loop is never reported a success: it leaves no plan whose code omx can verify"

SYSTEM_PROMPT = """\
You do a task in a workspace directory by calling tools, one call at a time, and reading their results.
Paths are relative to the workspace root ('notes/a.txt'); '..' and absolute paths are refused.
Look before you act (list_dir, read_text); compute exact results (counts, sums, sorting, picking lines) with the \
python tool, whose code runs in the workspace and prints its result; write files with write_text or python.
A person confirms each call that changes files or runs code; a call they decline is not run: do not send it again.
When the task is done, answer in plain text: what you did, and the result the task asks for."""

_REF_WORDS = re.compile(r",? (?:or|usually) \{'ref': 'step:N\.output'\}")


def loop_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The JSON schema of a tool's arguments as a loop offers them: the input model's, without references to an
    earlier step's output (a loop's calls pass the text itself) and without pydantic's titles."""
    schema = model.model_json_schema()
    properties: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        if "anyOf" in prop:
            kept = [branch for branch in prop["anyOf"] if "$ref" not in branch]
            prop = {k: v for k, v in prop.items() if k != "anyOf"} | (kept[0] if len(kept) == 1 else {"anyOf": kept})
        if isinstance(prop.get("description"), str):
            prop["description"] = _REF_WORDS.sub("", prop["description"])
        properties[name] = prop
    loop = {"type": "object", "properties": properties, "additionalProperties": False}
    return loop | ({"required": schema["required"]} if schema.get("required") else {})


def _description(model: type[ToolInput]) -> str:
    return " ".join((model.__doc__ or model.tool_name).split())


@dataclass
class _Calls:
    """The loop's tools: each call checked, assessed, confirmed, executed and traced as a one-step plan."""

    task: str
    workspace: Path
    options: Options
    ui: UI
    recorder: RunRecorder
    sandbox: Sandbox
    team: Team
    ctx: ToolContext
    made: int = 0  # calls that became a step (their ids)
    ran: int = 0  # of them, those that ran
    produced: list[str] = field(default_factory=list)
    sandbox_shown: bool = False

    def manager(self) -> ToolManager:
        tools = ToolManager(workspace=self.workspace)
        for name in LOOP_TOOLS:
            model = TOOL_INPUTS[name]
            tools.register(name, partial(self.call, name), description=_description(model),
                           parameters=loop_schema(model), threaded=False)  # fmt: skip
        return tools

    def call(self, name: str, arguments: str) -> str:
        """One call, as the model is told of it: the step's output, or an error that says what to do."""
        try:
            inputs = TOOL_INPUTS[name].model_validate_json(arguments)
        except ValidationError as exc:
            problems = validation_summary(exc).replace("\n", "; ")
            self.ui.show(f"A call of {name} with arguments that do not fit it (sent back to the model): {problems}")
            return f"error: the arguments of {name} do not fit the tool: {problems}; send them again, corrected"
        if inputs.refs():
            return f"error: {name} got a reference to a step's output: in this loop, pass the text itself"
        self.made += 1
        step = {"id": self.made, "tool": name, "description": f"the model's call {self.made}",
                "inputs": inputs.model_dump(mode="json", exclude_none=True)}  # fmt: skip
        plan = Plan.model_validate({"version": 1, "goal": self.task, "risk_level": RiskLevel.LOW,
                                    "workspace_root": str(self.workspace), "steps": [step]})  # fmt: skip
        assessment = assess(plan, self.workspace, sandboxed=self.options.sandbox_mode != "off", agent=self.team.agent)
        record = {"number": self.made, **assessment_record(assessment)}
        record["plan"] = plan.model_dump(mode="json", exclude_none=True)
        self.recorder.record(RunEntry(event="plan", data=record))
        self._show(plan, assessment)
        try:
            how = confirm(
                assessment, yes=self.options.yes, ask=self.ui.ask, ask_text=self.ui.ask_text, what="tool call"
            )
        except Refused as exc:
            self.recorder.record(RunEntry(event="confirmation", data={"step": self.made, "decision": "refused",
                                                                      "reasons": exc.reasons}))  # fmt: skip
            self.ui.show(f"  not run: HIGH risk, refused ({'; '.join(exc.reasons)})")
            return (f"error: not run: this call is HIGH risk and omx refuses it ({'; '.join(exc.reasons)}); "
                    "do the task another way, or answer in plain text")  # fmt: skip
        except Declined as exc:
            self.recorder.record(RunEntry(event="confirmation", data={"step": self.made, "decision": "declined"}))
            self.ui.show(f"  not run: {exc}")
            return (f"error: not run: the person declined this call ({exc}). Do not send it again; do the task "
                    "another way, or answer in plain text saying what is left undone")  # fmt: skip
        self.recorder.record(RunEntry(event="confirmation", data={"step": self.made, "decision": "approved",
                                                                  "how": how}))  # fmt: skip
        return self._execute(plan)

    def _show(self, plan: Plan, assessment: RiskAssessment) -> None:
        """The call as the person judges it: the tool and its inputs, the risk and why, what it changes."""
        step = plan.steps[0]
        shown = ", ".join(f"{k}: {inline_value(v)}" for k, v in step.inputs.model_dump(exclude_none=True).items())
        lines = [f"Call {step.id}: [{step.tool}] {shown}", f"  Risk: {assessment.level.value}"]
        lines += [f"    - {finding}" for finding in assessment.findings]
        lines += [f"  {line}" for line in path_previews(plan, self.workspace)]
        if assessment.level is RiskLevel.MEDIUM or assessment.confirmable:
            lines += [f"  {line}" for line in overwrite_previews(plan, self.workspace)]
        if step.tool in ("shell", "python") and not self.sandbox_shown:
            self.sandbox_shown = True
            lines.append(f"  {sandbox_line(self.sandbox)}")
        self.ui.show("\n".join(lines))

    def _execute(self, plan: Plan) -> str:
        step = plan.steps[0]
        result = Executor(self.ctx, self.recorder).execute(plan)
        self.ran += 1
        self.produced += [p for p in result.produced_files if p not in self.produced]
        outcome = result.steps[0]
        if outcome.status != "success":
            self.ui.show(f"  -> failed: {outcome.error}")
            hint = f" ({outcome.hint})" if outcome.hint else ""
            return f"error: {outcome.error}{hint}"
        output = read_output(self.recorder.run_dir, step.id)
        self.ui.show(f"  -> {preview(output.strip(), 160)!r}" if output.strip() else "  -> (no output)")
        if len(output) > MAX_RESULT_CHARS:
            return output[:MAX_RESULT_CHARS] + f"\n[cut: {len(output)} characters in all; read less at a time]"
        return output


def run_loop_task(task: str, options: Options, ui: UI, model_factory: ModelFactory) -> Outcome:
    """``omx --loop "TASK"``: the tool loop, each call confirmed and run as plan mode runs a step, then the task's
    checks; ``done`` or ``failed``, never ``success`` (the module docstring says why)."""
    if not task.strip():
        return Outcome(EXIT_FAILED, "error", "the task is empty")
    try:
        workspace = workspace_dir(options.workspace or Path.cwd())
        sandbox = run_sandbox(workspace, options.as_agent, options.sandbox_mode, options.limits)
        team = run_team(workspace, options.as_agent, options.dry_run)
        recorder = run_recorder(workspace, options.as_agent)
        start = {"command": "task", "mode": "loop", "agent": team.agent, "task": task, "workspace": str(workspace),
                 "max_steps": LOOP_MAX_STEPS, "tools": list(LOOP_TOOLS), "sandbox": sandbox_record(sandbox),
                 **checkpoint_record(team)}  # fmt: skip
        recorder.record(RunEntry(event="start", data=start))
        model = run_model(model_factory, recorder)
    except NotStarted as exc:
        return Outcome(EXIT_FAILED, "error", exc.message, exc.run_dir)
    if (line := team.no_checkpoint_line()) is not None:
        ui.show(line)
    # read before the loop, while the task's files are as meant, as plan mode reads it: by the model and the rules
    reading = RecordingModel(model, recorder)
    expected = read_expectations(task, workspace, reading, recorder, schema_refusal_recorder(recorder))
    ctx = ToolContext(workspace=workspace, sandbox=sandbox, atomic_writes=omxfs_mount_of(workspace) is None,
                      agent=team.agent, team=team.agents,
                      run_id=recorder.run_dir.relative_to(workspace).as_posix() if team.agent else None)  # fmt: skip
    calls = _Calls(task, workspace, options, ui, recorder, sandbox, team, ctx)
    agent = Agent(AgentConfig(max_steps=LOOP_MAX_STEPS, system_prompt=SYSTEM_PROMPT), model=model,
                  tools=calls.manager())  # fmt: skip
    ui.show(f"Tool loop: at most {LOOP_MAX_STEPS} model calls; each tool call is shown and confirmed by its risk.")
    run: AgentRun | None = None
    try:
        run = agent.run(task, recorder=recorder)
        error = unanswered(run.answer, f"{LOOP_MAX_STEPS} model calls")
        tally = Tally.combined(reading.tally, run.tally)
    except AgentFailed as failed:
        error, tally = str(failed), Tally.combined(reading.tally, failed.tally)
    except KeyboardInterrupt:
        end_run(recorder, "interrupted", mode="loop", calls=calls.made, steps_executed=calls.ran)
        raise
    checks = expected.check()
    unmet = next((c for c in checks if c.status == "not met"), None)
    status = "failed" if error or unmet else "done"
    if error is None and unmet is not None:
        error = f"a check of the task is not met: {unmet.criterion} ({unmet.detail})"
    answer = run.answer if run is not None and run.answer not in UNANSWERED else None
    end_run(recorder, status, mode="loop", steps=run.steps if run is not None else None, calls=calls.made,
         steps_executed=calls.ran, produced_files=calls.produced, error=error,
         answer=preview(answer) if answer is not None else None, criteria=[c.model_dump() for c in checks],
         **change_record(team), usage=tally.record())  # fmt: skip
    ui.show(_summary(status, error, answer, checks, calls, recorder, team))
    ui.show(tally.line())
    return Outcome(EXIT_OK if status == "done" else EXIT_FAILED, status, error, recorder.run_dir)


def _summary(status: str, error: str | None, answer: str | None, checks: list[CriterionCheck], calls: _Calls,
             recorder: RunRecorder, team: Team) -> str:  # fmt: skip
    """The end of a loop run: the model's answer, the result line with the checks, files, trace and undo lines."""
    lines = [f"Answer: {answer}"] if answer is not None else []
    ran = f"tool loop, {calls.ran} of {calls.made} tool calls run"
    if status == "done":
        met = sum(1 for c in checks if c.status == "met")
        said = f"every check omx ran is met ({met})" if met else "omx found nothing in the task to check"
        lines.append(f"Result: done, {said} ({ran}; {NEVER_SUCCESS})")
    else:
        lines.append(f"Result: failed: {error} ({ran})")
    if checks:
        lines.append("Checks of the task:")
        lines += [f"  [{c.label}] {c.criterion}" + (f" ({c.detail})" if c.detail else "") for c in checks]
    if calls.produced:
        lines.append("Produced files:")
        lines += [f"  {path}" for path in calls.produced]
    lines.append(f"Trace: {recorder.trace_path}")
    lines.append(f"Replay: {shell_line('omx', 'replay', recorder.run_dir)}")
    lines += team.checkpoint.lines() if team.checkpoint is not None else []
    return "\n".join(lines)
