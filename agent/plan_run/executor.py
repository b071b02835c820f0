"""Run a plan's steps in order: resolve references, run the tool, check the output, trace it.

The first failure stops the run; the remaining steps are traced as skipped, and the result carries a summary and
a next step. There is no loop and no step limit to hit: a plan has a fixed number of steps, each run once.

Two steps fail without running (``_refused``): a python step without code (the model gave none that can work: run,
it would print nothing), and a write of an earlier step's output that is empty over a file that holds text. The
person confirmed that write before the text was known ("known only when that step has run"); the 0.5B model's empty
code then wrote nothing over the very list the task asked to add a line to. Losing a person's file to a step that
made nothing is the worst a run can do, so the file is left as it is and the step fails, saying why.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.model.errors import advice
from agent.plan_run.code_steps import held_start
from agent.plan_run.criteria import CriterionCheck, check_criteria, planned_outputs
from agent.plan_run.output_shape import OutputShape, shaped_step
from agent.plan_run.plan import Plan, Step, WorkspaceStep
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.tools.base import ToolContext, ToolResult
from agent.plan_run.tools.inputs import LlmInput, PythonInput, Ref, ToolInput, WorkspaceInput, WriteTextInput
from agent.plan_run.tools.llm import llm
from agent.plan_run.tools.registry import run_tool
from agent.plan_run.tools.workspace import run_workspace_step
from agent.plan_run.value_checks import value_check
from agent.plan_run.verdict import UNMET_SUGGESTION, run_status, unmet_error
from agent.record.trace import RecordingModel, RunRecorder, TraceEntry, digest, now, preview
from agent.sandbox.confine import OUTPUT_LIMIT
from omxfs.shell_line import acting_as, shell_line

__all__ = ["EMPTY_OVERWRITE", "NO_CODE", "CriterionCheck", "ExecutionResult", "Executor", "StepOutcome"]

#: the error types of the steps that fail without running (``_refused``)
NO_CODE, EMPTY_OVERWRITE = "NoCode", "EmptyOverwrite"


class StepOutcome(BaseModel):
    step_id: int
    tool: str
    status: Literal["success", "failed", "skipped", "reused"]  # reused: before --from-step, not run again
    error: str | None = None
    hint: str | None = None
    error_type: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)  # the failed tool's details (an LLMError's kind...)
    note: str | None = None  # e.g. a collaborative conflict the model merged
    duration_s: float = 0.0


class ExecutionResult(BaseModel):
    """How a plan's run ended: ``success`` only when every step ran and every success criterion was checked and
    met; ``done`` when every step ran but some criterion (or, without criteria, anything) was not checked;
    ``failed`` when a step failed or a criterion was checked and not met."""

    status: Literal["success", "done_unverified", "done", "failed"]  # agent.plan_run.verdict says which
    steps_total: int
    steps_executed: int
    steps: list[StepOutcome] = Field(default_factory=list)
    produced_files: list[str] = Field(default_factory=list)
    criteria: list[CriterionCheck] = Field(default_factory=list)
    failed_step: int | None = None
    error: str | None = None
    suggestion: str | None = None


def _resolve(inputs: ToolInput, outputs: dict[int, str]) -> ToolInput:
    """The inputs with every reference replaced by the referenced step's output (the plan guarantees it exists)."""
    if isinstance(inputs, WorkspaceInput):
        resolved = {k: outputs[v.step_id] if isinstance(v, Ref) else v for k, v in inputs.arguments().items()}
        return WorkspaceInput.model_validate(resolved)
    update = {name: outputs[value.step_id] for name, value in inputs.__dict__.items() if isinstance(value, Ref)}
    return inputs.model_copy(update=update)


def _refused(step: Step, inputs: ToolInput, ctx: ToolContext) -> ToolResult | None:
    """Why ``step`` (its ``inputs`` resolved) must not run (see the module), or None."""
    if isinstance(inputs, PythonInput) and not inputs.code.strip():
        return ToolResult.failure(
            "the step has no code: the model gave none that can work", "write the step's code", NO_CODE
        )
    planned = step.inputs
    if not (isinstance(planned, WriteTextInput) and isinstance(planned.content, Ref) and planned.mode == "overwrite"):
        return None
    assert isinstance(inputs, WriteTextInput) and isinstance(inputs.content, str)
    held = held_start(ctx.workspace, inputs.path, 4096) if not inputs.content.strip() else None
    if not held or not held.strip():
        return None
    made_by = planned.content.step_id
    return ToolResult.failure(
        f"step {made_by}'s output is empty, and {inputs.path} holds text: writing nothing over it would lose that "
        "text, so it was left as it is",
        f"step {made_by} made nothing: fix it, then run the plan again",
        EMPTY_OVERWRITE,
        path=inputs.path,
        made_by=made_by,
    )


def _check_output(step: Step, result: ToolResult, ctx: ToolContext) -> ToolResult:
    """Basic output checks: text was read and generated, the written file is there."""
    if not result.ok:
        return result
    if step.tool in ("read_text", "llm") and not result.output.strip():
        what = f"{result.details.get('path', 'the file')} is empty" if step.tool == "read_text" else "empty output"
        return ToolResult.failure(what, "check the input of this step", "EmptyOutput", **result.details)
    if step.tool == "write_text" and not (ctx.workspace / result.output).is_file():
        return ToolResult.failure(f"{result.output} is missing after the write", "check the path", "NotWritten")
    return result


def _check_whole(step: Step, result: ToolResult, users: list[int]) -> ToolResult:
    """A step whose output was cut (the sandbox keeps its first OUTPUT_LIMIT bytes) fails when a later step uses
    that output: the later step would get the start of the data, and the run would say success."""
    if not result.ok or not result.details.get("truncated") or not users:
        return result
    who = f"step {users[0]}" if len(users) == 1 else f"steps {', '.join(map(str, users))}"
    return ToolResult.failure(
        f"the output of step {step.id} is longer than the {OUTPUT_LIMIT:,} bytes omx keeps of it, and {who} "
        "would get only its start",
        "have the code write the data to a file in the workspace and print only a short summary",
        "OutputTooLarge",
        **result.details,
    )


def _note(result: ToolResult) -> str | None:
    conflict = result.details.get("recovered_from")
    if not result.ok or not isinstance(conflict, dict):
        return None
    version = result.details.get("result", {}).get("version")
    return (
        f"conflict: {conflict.get('path')} was at version {conflict.get('current_version')} "
        f"(by {conflict.get('current_author')}); merged and committed version {version} "
        f"in {result.details.get('retries')} retry(ies)"
    )


class Executor:
    """Executes plans in one workspace, writing each step to the run's trace."""

    def __init__(self, ctx: ToolContext, recorder: RunRecorder, *, as_agent: str | None = None) -> None:
        self.ctx = ctx
        self.recorder = recorder
        self.as_agent = as_agent  # omx's --as, which the printed command that runs the plan again must carry

    def execute(
        self,
        plan: Plan,
        *,
        from_step: int | None = None,
        earlier: dict[int, str] | None = None,
        expected: TaskExpectations | None = None,
    ) -> ExecutionResult:
        """Run the steps in order; with ``from_step``, the steps before it are not run and ``earlier`` holds the
        outputs of theirs that later steps refer to (``agent.plan_run.resume``). ``expected``: what the task itself
        asks for, read before the run (``agent.plan_run.task_checks``), checked with the plan's criteria."""
        outputs: dict[int, str] = {}
        outcomes: list[StepOutcome] = []
        produced: list[Path] = []
        # the llm step that writes the task's output whole is asked for the shape the task gave it
        shape = expected.shape if expected is not None else None
        shaped = shaped_step(plan, expected.output) if expected is not None and expected.output and shape else None
        for index, step in enumerate(plan.steps):
            if from_step is not None and step.id < from_step:
                outcomes.append(self._reuse(step, (earlier or {}).get(step.id), outputs, produced))
                continue
            users = [later.id for later in plan.steps if any(ref.step_id == step.id for ref in later.inputs.refs())]
            outcome, result = self._run_step(step, outputs, users, shape if step.id == shaped else None)
            outcomes.append(outcome)
            if outcome.status == "failed":
                for rest in plan.steps[index + 1 :]:
                    self.recorder.record(
                        TraceEntry(
                            step_id=rest.id,
                            tool=rest.tool,
                            inputs_digest=None,
                            output_digest=None,
                            start_time=None,
                            end_time=None,
                            status="skipped",
                        )
                    )
                    outcomes.append(StepOutcome(step_id=rest.id, tool=rest.tool, status="skipped"))
                return ExecutionResult(
                    status="failed",
                    steps_total=len(plan.steps),
                    steps_executed=sum(1 for o in outcomes if o.status not in ("reused", "skipped")),
                    steps=outcomes,
                    produced_files=[str(p) for p in dict.fromkeys(produced)],
                    failed_step=step.id,
                    error=outcome.error,
                    suggestion=self._suggestion(step, outcome),
                )
            outputs[step.id] = result.output
            self.recorder.save_output(step.id, result.output)
            if step.tool == "write_text":
                produced.append(Path(result.details["path"]))
            elif step.tool in ("copy", "move") and result.details.get("kind") == "file":  # a file put into place
                produced.append(self.ctx.workspace / result.output)
        files = list(dict.fromkeys(produced))
        meant = planned_outputs(plan) | set(expected.outputs if expected is not None else ())
        checks = check_criteria(plan.success_criteria, files, self.ctx.workspace, meant)
        if expected is not None:
            checks = expected.check(plan) + [expected.vet(check) for check in checks]
            checks += [value] if (value := value_check(plan, outputs, expected)) is not None else []
        status = run_status(checks)
        return ExecutionResult(
            status=status,
            steps_total=len(plan.steps),
            steps_executed=sum(1 for o in outcomes if o.status != "reused"),
            steps=outcomes,
            produced_files=[str(p) for p in files],
            criteria=checks,
            error=unmet_error(checks),
            suggestion=UNMET_SUGGESTION if status == "failed" else None,
        )

    def _reuse(self, step: Step, output: str | None, outputs: dict[int, str], produced: list[Path]) -> StepOutcome:
        """A step before ``--from-step``: traced as reused, its saved output kept for this run's own resume."""
        if output is not None:
            outputs[step.id] = output
            self.recorder.save_output(step.id, output)
        if isinstance(step.inputs, WriteTextInput) and (self.ctx.workspace / step.inputs.path).is_file():
            produced.append(self.ctx.workspace / step.inputs.path)  # what it wrote then counts for the criteria
        self.recorder.record(
            TraceEntry(step_id=step.id, tool=step.tool, inputs_digest=None, output_digest=None, start_time=None,
                       end_time=None, status="reused", output=preview(output) if output is not None else None)
        )  # fmt: skip
        return StepOutcome(step_id=step.id, tool=step.tool, status="reused")

    def _run_step(
        self, step: Step, outputs: dict[int, str], users: list[int], shape: OutputShape | None = None
    ) -> tuple[StepOutcome, ToolResult]:
        """Run one step; ``users`` are the later steps that use its output; ``shape``: what the task says its
        output must look like (an llm step's, ``agent.plan_run.output_shape``)."""
        inputs = _resolve(step.inputs, outputs)
        dumped = inputs.model_dump(exclude_none=True)
        if isinstance(self.ctx.model, RecordingModel):
            self.ctx.model.purpose, self.ctx.model.step_id = "step", step.id
        if self.ctx.run_id is not None:  # what the step's programs write on the mount names this run and step
            self.ctx.sandbox.extra_env.update(OMX_RUN=self.ctx.run_id, OMX_STEP=str(step.id))
        start, began = now(), time.monotonic()
        try:
            if isinstance(step, WorkspaceStep):
                assert isinstance(inputs, WorkspaceInput)
                result = run_workspace_step(step, inputs, self.ctx, self.recorder)
            elif (refused := _refused(step, inputs, self.ctx)) is not None:
                result = refused
            else:
                if shape is not None and isinstance(inputs, LlmInput):
                    ran = llm(inputs, self.ctx, shape)
                else:
                    ran = run_tool(inputs, self.ctx)
                result = _check_whole(step, _check_output(step, ran, self.ctx), users)
        except Exception as exc:  # our bug, not the model's: trace it, then let it surface
            self.recorder.record(
                TraceEntry(
                    step_id=step.id,
                    tool=step.tool,
                    inputs_digest=digest(dumped),
                    output_digest=None,
                    start_time=start,
                    end_time=now(),
                    status="failed",
                    error=f"internal error: {exc}",
                    error_type=type(exc).__name__,
                    inputs=preview(dumped),
                )
            )
            raise
        duration = round(time.monotonic() - began, 3)
        status: Literal["success", "failed"] = "success" if result.ok else "failed"
        self.recorder.record(
            TraceEntry(
                step_id=step.id,
                tool=step.tool,
                inputs_digest=digest(dumped),
                output_digest=digest(result.output) if result.ok else None,
                start_time=start,
                end_time=now(),
                status=status,
                error=result.error,
                error_type=result.error_type,
                hint=result.hint,
                inputs=preview(dumped),
                output=preview(result.output) if result.ok else None,
                details=preview(result.details),
            )
        )
        outcome = StepOutcome(
            step_id=step.id,
            tool=step.tool,
            status=status,
            error=result.error,
            hint=result.hint,
            error_type=result.error_type,
            details=result.details if not result.ok else {},
            note=_note(result),
            duration_s=duration,
        )
        return outcome, result

    def _suggestion(self, step: Step, outcome: StepOutcome) -> str:
        plan = self.recorder.plan_path
        rerun = shell_line("omx", "run", plan, "--from-step", step.id, *acting_as(self.as_agent))
        if outcome.error_type == "LLMError":  # the model failed, not the step: nothing in the plan to fix
            kind, attempts = str(outcome.details.get("kind", "other")), int(outcome.details.get("attempts", 1))
            return advice(kind, attempts, rerun)
        hint = f"{outcome.hint}; then " if outcome.hint else ""
        return f"{hint}fix step {step.id} in {plan} and run it again from there: {rerun}"
