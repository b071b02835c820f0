"""The flow behind ``omx``: plan → show → confirm → execute → summarise, every run recorded in ``runs/<ts>/``.

The CLI only parses arguments and prints; this module decides. It talks to the person through a ``UI`` (show
text, ask yes/no) and returns an ``Outcome`` whose exit code is non-zero on refusal or failure. A success
criterion omx checked and found not met is a failure (exit 1); a run whose steps all ran but whose criteria omx
could not all check is "done" (exit 0), and its result line says how many were not checked, never "success"
(``agent.plan_run.verdict``); the model may judge those first (``agent.plan_run.judge``), labelled as its judgement.
A run whose checks all met yet whose asked-for value came from no code run on the input is "done, form checked,
value not checked" (``done_unverified``, exit 0: ``agent.plan_run.value_checks``), and so is one whose value a
second program, asked for apart, did not print too (``agent.plan_run.second_program``); one that asks no value
(prose of a shape) is "done, form checked, content not checked", the same status. What every run does before and
after its work (the workspace, record, sandbox, checkpoint, model and the task's reading; the end entry) is
``agent.plan_run.run_frame``'s, shared with ``omx --loop``.

Re-plans: after a failed step, a plan still invalid after its retry, or a run whose result omx found short
of what the task itself asks for (``agent.plan_run.task_checks``), the model is told what went wrong
and plans again, at most ``Options.replans`` times in all (2 for ``omx "TASK"``, none for ``omx run PLAN`` unless
asked). The failing step still stops its own plan; every new plan goes through
``_decide_and_run`` as the first did, so it is shown and confirmed by the same risk rules; the earlier plans and
their outputs are kept in ``runs/<ts>/plans/N/``; the outcome is the last plan's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from agent.model.llm import LLMError, Model
from agent.plan_run.code_fix import code_at_fault, disagreed_code, empty_code
from agent.plan_run.confirm import Declined, Refused, confirm, render_plan
from agent.plan_run.criteria import CriterionCheck
from agent.plan_run.executor import ExecutionResult, Executor
from agent.plan_run.judge import judged
from agent.plan_run.outside_paths import outside_paths
from agent.plan_run.overwrites import overwrite_previews
from agent.plan_run.path_previews import path_previews, undo_lines
from agent.plan_run.plan import Plan, PlanError, RiskLevel, load_plan
from agent.plan_run.planner import Planner, PlanningError, invalid_plan_text
from agent.plan_run.resume import ResumeError, earlier_outputs
from agent.plan_run.risk import assess
from agent.plan_run.run_checkpoint import RunCheckpoint
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
from agent.plan_run.second_program import second_checked
from agent.plan_run.task_checks import FROM_THE_TASK, TaskExpectations, told
from agent.plan_run.tools.base import ToolContext
from agent.plan_run.verdict import done_text, unverified_text
from agent.record.runs_dir import omxfs_mount_of
from agent.record.trace import RecordingModel, RunEntry, RunRecorder, preview, read_output
from agent.sandbox.confine import Sandbox, SandboxMode
from omxfs.limits import Limits
from omxfs.shell_line import acting_as, shell_line

__all__ = ["EXIT_DECLINED", "EXIT_FAILED", "EXIT_OK", "EXIT_REFUSED", "UI", "Options", "Outcome"]
__all__ += ["run_plan_file", "run_task", "summary_text"]

EXIT_OK, EXIT_FAILED, EXIT_REFUSED, EXIT_DECLINED = 0, 1, 3, 4
MAX_REPLANS = 2  # the default of Options.replans, and what the re-plan lines count up to


class UI(Protocol):
    def show(self, text: str) -> None: ...

    def ask(self, question: str) -> bool: ...

    def ask_text(self, question: str) -> str: ...


@dataclass
class Options:
    workspace: Path | None = None  # None: the current directory (omx "task") or the plan's root (omx run)
    as_agent: str | None = None
    yes: bool = False
    dry_run: bool = False
    sandbox_mode: SandboxMode = "auto"
    from_step: int | None = None  # omx run --from-step: the steps before it are not run again
    replans: int | None = None  # --replans: new plans at most; None: MAX_REPLANS for a task, 0 for omx run
    judge: bool = True  # the model judges the criteria omx cannot check (agent.plan_run.judge); --no-judge: not
    limits: Limits = field(default_factory=Limits)  # each step's, as the command line sets them (--max-procs ...)


@dataclass
class Outcome:
    exit_code: int
    # success, done_unverified (form checked, value or content not), done (ran, not all checked), failed, refused,
    # declined, dry_run, planning_failed, error
    status: str
    message: str | None = None
    run_dir: Path | None = None
    result: ExecutionResult | None = None
    reasons: list[str] = field(default_factory=list)


def run_task(task: str, options: Options, ui: UI, model_factory: ModelFactory) -> Outcome:
    """``omx "task"``: plan it with the model, then the shared flow."""
    try:
        workspace = workspace_dir(options.workspace or Path.cwd())
        sandbox = run_sandbox(workspace, options.as_agent, options.sandbox_mode, options.limits)
        team = run_team(workspace, options.as_agent, options.dry_run)
        recorder = run_recorder(workspace, options.as_agent)
        recorder.record(
            RunEntry(
                event="start",
                data={
                    "command": "task",
                    "agent": team.agent,
                    "task": task,
                    "workspace": str(workspace),
                    "dry_run": options.dry_run,
                    "sandbox": sandbox_record(sandbox),
                    **checkpoint_record(team),
                },
            )
        )
        if outside := outside_paths(task, workspace):  # no plan can do it: refused before one is asked for
            return _refused_outside(outside, recorder)
        model = run_model(model_factory, recorder)
    except NotStarted as exc:
        return Outcome(EXIT_FAILED, "error", exc.message, exc.run_dir)
    recording = RecordingModel(model, recorder)
    planner = _planner(recording, recorder, team)
    # once: the planner and the checks both judge by it
    expected = read_expectations(task, workspace, recording, recorder, planner.on_schema_refused)
    replans = _Replans(planner, task, MAX_REPLANS if options.replans is None else options.replans, expected=expected)
    try:
        plan = _valid_plan(lambda: planner.plan(task, workspace, expected), replans, workspace, ui, recorder)
    except PlanningError as exc:
        end_run(recorder, "planning_failed", error=str(exc), steps_executed=0, **replans.record(),
             usage=recording.tally.record())  # fmt: skip
        ui.show(recording.tally.line())
        return Outcome(EXIT_FAILED, "planning_failed", str(exc), recorder.run_dir)
    except KeyboardInterrupt:  # Ctrl-C while the model plans: the trace still ends, as one interrupted in a step
        end_run(recorder, "interrupted", steps_executed=0, usage=recording.tally.record())
        raise
    return _decide_and_run(plan, workspace, options, ui, recorder, sandbox, recording, team, task=task,
                           replans=replans, expected=expected)  # fmt: skip


def _refused_outside(paths: list[str], recorder: RunRecorder) -> Outcome:
    reasons = [f"the task names {path}, outside the workspace: omx reads and writes only inside it" for path in paths]
    end_run(recorder, "refused", steps_executed=0, reasons=reasons)
    message = "refused: " + "; ".join(reasons)
    return Outcome(EXIT_REFUSED, "refused", message, recorder.run_dir, reasons=reasons)


def _planner(model: RecordingModel, recorder: RunRecorder, team: Team) -> Planner:
    """The run's planner, whose invalid replies and the server's refusal of the plan's schema go to the trace."""

    def on_invalid(attempt: int, reply: str, problems: str) -> None:
        recorder.record(
            RunEntry(event="plan_invalid", data={"attempt": attempt, "problems": problems, "reply": reply[:2000]})
        )

    def on_unfit(problems: list[str]) -> None:  # a valid plan that cannot do the task: asked for again
        recorder.record(RunEntry(event="plan_unfit", data={"problems": problems}))

    return Planner(model, on_invalid=on_invalid, workspace_agent=team.agent, team=team.agents,
                   on_schema_refused=schema_refusal_recorder(recorder), on_unfit=on_unfit)  # fmt: skip


def run_plan_file(plan_path: Path, options: Options, ui: UI, model_factory: ModelFactory) -> Outcome:
    """``omx run plan.json``: re-execute a saved plan (in its workspace unless --workspace says otherwise)."""
    try:
        plan = load_plan(plan_path)
        earlier = (
            earlier_outputs(plan, plan_path, options.from_step, options.as_agent)
            if options.from_step is not None
            else {}
        )
    except (PlanError, ResumeError) as exc:
        return Outcome(EXIT_FAILED, "error", str(exc))
    start = options.from_step or plan.steps[0].id
    try:
        workspace = workspace_dir(options.workspace or Path(plan.workspace_root))
        sandbox = run_sandbox(workspace, options.as_agent, options.sandbox_mode, options.limits)
        team = run_team(workspace, options.as_agent, options.dry_run)
        recorder = run_recorder(workspace, options.as_agent)
        plan = plan.model_copy(update={"workspace_root": str(workspace)})
        recorder.record(
            RunEntry(
                event="start",
                data={
                    "command": "run",
                    "plan": str(plan_path.resolve()),
                    "from_step": options.from_step,
                    "workspace": str(workspace),
                    "dry_run": options.dry_run,
                    "sandbox": sandbox_record(sandbox),
                    **checkpoint_record(team),
                },
            )
        )
        limit = options.replans or 0  # a saved plan runs as it is, re-planned only with --replans
        needs_model = limit > 0 or any(step.tool == "llm" and step.id >= start for step in plan.steps)
        if needs_model:
            recorder.write_plan(plan)  # the plan is known: the record of a run refused for want of a model has it
        model = run_model(model_factory, recorder) if needs_model else _optional_model(plan, model_factory)
    except NotStarted as exc:
        return Outcome(EXIT_FAILED, "error", exc.message, exc.run_dir)
    recording = RecordingModel(model, recorder) if model is not None else None
    # the saved plan's goal is the task a re-plan is asked for; omx does not check it as a person's own words
    planner = _planner(recording, recorder, team) if recording is not None and limit > 0 else None
    replans = _Replans(planner, plan.goal, limit)
    return _decide_and_run(plan, workspace, options, ui, recorder, sandbox, recording, team, earlier,
                           replans=replans)  # fmt: skip


def _optional_model(plan: Plan, factory: ModelFactory) -> Model | None:
    """A plan with collaborative writes may need the model to merge after a conflict; without one it fails then."""
    if not any(step.tool == "collab_write" for step in plan.steps):
        return None
    try:
        return factory()
    except LLMError:
        return None


@dataclass
class _Replans:
    """A run's re-plans: the planner that makes them (None: this run makes none), the task it is asked
    for, at most how many, how many were made and how many plans were shown to the person; ``expected``: what the
    task asks of its output, read before the run, which finishes every re-plan as it finished the first plan."""

    planner: Planner | None
    task: str
    limit: int
    made: int = 0
    plans: int = 0
    expected: TaskExpectations | None = None
    disagreed: bool = False  # code a second program disagreed with, or that printed nothing, was asked again: once
    disputed: bool = False  # two programs written apart printed different values: no later agreement settles it

    @property
    def left(self) -> bool:
        return self.planner is not None and self.made < self.limit

    def record(self) -> dict[str, Any]:
        """The end entry's count, in every run that could re-plan."""
        return {"replans": self.made, "plans": self.plans} if self.planner is not None else {}


def _announce(replans: _Replans, ui: UI, recorder: RunRecorder, what: str, data: dict[str, Any]) -> None:
    """Say and record that a re-plan is asked for, and mark the model's requests from here as the re-plan's."""
    number = replans.made + 1
    ui.show(f"{what[0].upper()}{what[1:]}\nRe-planning ({number} of at most {replans.limit}) ...")
    recorder.record(RunEntry(event="replan", data={"number": number, "limit": replans.limit, **data}))
    planner = replans.planner
    if planner is not None and isinstance(planner.model, RecordingModel):  # the trace tells re-plans' calls apart
        planner.model.purpose, planner.model.step_id = "replan", None


def _valid_plan(
    ask: Callable[[], Plan], replans: _Replans, workspace: Path, ui: UI, recorder: RunRecorder, replanning: bool = False
) -> Plan:
    """``ask()``'s plan. One still invalid after its retry is asked for again while re-plans are left, the model told
    what was wrong; a model that fails then (its server down) made no re-plan, and the invalid plan's error stands.
    ``replanning``: ``ask`` is itself a re-plan, counted once the model answers."""
    try:
        plan = ask()
    except PlanningError as exc:
        replans.made += replanning and exc.problems is not None
        invalid = exc
    else:
        replans.made += replanning
        return plan
    while invalid.problems is not None and replans.left and replans.planner is not None:
        first = invalid.problems.splitlines()[0]
        _announce(replans, ui, recorder, f"the model's plan was invalid, also after a retry: {first}",
                  {"reason": "invalid plan", "error": first})  # fmt: skip
        try:
            plan = replans.planner.replan(
                replans.task, workspace, invalid_plan_text(invalid.problems), expected=replans.expected
            )
        except PlanningError as exc:
            if exc.problems is None:
                ui.show(f"No new plan: {exc}")
                raise invalid from None
            replans.made += 1
            invalid = exc
            continue
        replans.made += 1
        return plan
    raise invalid


def _decide_and_run(
    plan: Plan,
    workspace: Path,
    options: Options,
    ui: UI,
    recorder: RunRecorder,
    sandbox: Sandbox,
    model: RecordingModel | None,
    team: Team,
    earlier: dict[int, str] | None = None,
    task: str | None = None,  # ``omx "TASK"``'s own words, whose outputs omx checks itself (not a saved plan's)
    replans: _Replans | None = None,  # re-plans after a failed step: who makes them, how many are left
    expected: TaskExpectations | None = None,  # read before the first plan was asked for: re-plans keep it
) -> Outcome:
    replans = replans or _Replans(None, plan.goal, 0)
    replans.plans += 1
    recorder.write_plan(plan)
    assessment = assess(plan, workspace, sandboxed=options.sandbox_mode != "off", agent=team.agent)
    record = assessment_record(assessment)
    if replans.planner is not None:  # every plan of a run that may re-plan is in its trace, whole
        record |= {"number": replans.plans, "plan": plan.model_dump(mode="json", exclude_none=True)}
    recorder.record(RunEntry(event="plan", data=record))
    if replans.made:
        ui.show(f"Re-plan {replans.made} of {replans.limit}:")
    ui.show(render_plan(plan, assessment))
    if changes := path_previews(plan, workspace):
        ui.show("What its file steps do:\n" + "\n".join(f"  {line}" for line in changes))
    if assessment.confirmable and not options.dry_run:
        undo = f"Undo:    {team.checkpoint.undo_line()}" if team.checkpoint else None
        ui.show("\n".join(undo_lines(undo, team.no_checkpoint, team.agent is not None)))
    if (line := team.no_checkpoint_line()) is not None and replans.plans == 1:
        ui.show(line)
    if options.from_step is not None:
        before = [step.id for step in plan.steps if step.id < options.from_step]
        listed = ", ".join(map(str, before))
        reused = f"step {listed} is not" if len(before) == 1 else f"steps {listed} are not"
        reused = f"{reused} run again" if before else "every step runs"
        ui.show(f"Resuming at step {options.from_step}: {reused} (the risk above is the whole plan's)")
    if any(step.tool in ("shell", "python") for step in plan.steps):
        ui.show(sandbox_line(sandbox))
    kept = f" (the earlier plans: {recorder.run_dir / 'plans'})" if replans.plans > 1 else ""
    ui.show(f"Plan saved: {recorder.plan_path}{kept}")
    if options.dry_run:
        end_run(recorder, "dry_run", steps_executed=0, **replans.record(), **_usage(model))
        _show_usage(ui, model)
        if assessment.confirmable:
            ui.show("This plan moves or deletes files (HIGH risk): it would run only when confirmed at the prompt, "
                    "with the number of paths it moves or deletes typed (--yes is no answer)")  # fmt: skip
        elif assessment.level is RiskLevel.HIGH:
            ui.show("This plan would be refused (HIGH risk):\n" + "\n".join(f"  - {r}" for r in assessment.reasons))
        rerun = shell_line("omx", "run", recorder.plan_path, *acting_as(options.as_agent))
        ui.show(f"Dry run: nothing was executed. Run the plan with: {rerun}")
        return Outcome(EXIT_OK, "dry_run", run_dir=recorder.run_dir)
    if assessment.level is RiskLevel.MEDIUM or assessment.confirmable:  # a person is about to be asked: show what
        changes = overwrite_previews(plan, workspace)  # the writes will change
        if changes:
            ui.show("Changes to existing files:\n" + "\n".join(changes))
    try:
        approval = confirm(assessment, yes=options.yes, ask=ui.ask, ask_text=ui.ask_text)
    except Refused as exc:
        recorder.record(RunEntry(event="confirmation", data={"decision": "refused", "reasons": exc.reasons}))
        end_run(recorder, "refused", steps_executed=0, reasons=exc.reasons, **replans.record(), **_usage(model))
        _show_usage(ui, model)
        message = "refused: the plan is HIGH risk:\n" + "\n".join(f"  - {r}" for r in exc.reasons)
        return Outcome(EXIT_REFUSED, "refused", message, recorder.run_dir, reasons=exc.reasons)
    except Declined as exc:
        recorder.record(RunEntry(event="confirmation", data={"decision": "declined"}))
        end_run(recorder, "declined", steps_executed=0, **replans.record(), **_usage(model))
        _show_usage(ui, model)
        return Outcome(EXIT_DECLINED, "declined", str(exc), recorder.run_dir)
    recorder.record(RunEntry(event="confirmation", data={"decision": "approved", "how": approval}))
    ctx = ToolContext(
        workspace=workspace,
        sandbox=sandbox,
        model=model,
        atomic_writes=omxfs_mount_of(workspace) is None,
        agent=team.agent,
        run_id=recorder.run_dir.relative_to(workspace).as_posix() if team.agent else None,
        team=team.agents,
    )
    try:
        if expected is None and task is not None:
            expected = TaskExpectations.before(task, workspace)
        result = Executor(ctx, recorder, as_agent=options.as_agent).execute(
            plan, from_step=options.from_step, earlier=earlier, expected=expected
        )
        if task is not None and expected is not None:  # a value made by code: a second program must print it too
            result = second_checked(result, plan, task, expected, ctx, recorder, replans.disputed)
        if options.judge and model is not None:
            result = judged(result, task, workspace, model)
        again = _replan(plan, result, workspace, ui, recorder, replans) if _may_replan(result, replans) else None
        again = again or _fixed_after_disagreement(plan, result, ui, recorder, replans)
    except KeyboardInterrupt:
        end_run(recorder, "interrupted", **replans.record())
        raise
    if again is not None:
        recorder.archive_plan(replans.plans)  # plan.json and outputs/ are the new plan's, for --from-step
        # a re-plan runs whole: --from-step and the outputs it reused were the first plan's
        return _decide_and_run(again, workspace, replace(options, from_step=None), ui, recorder, sandbox, model,
                               team, task=task, replans=replans, expected=expected)  # fmt: skip
    end_run(
        recorder,
        result.status,
        steps_executed=result.steps_executed,
        produced_files=result.produced_files,
        error=result.error,
        criteria=[check.model_dump() for check in result.criteria],
        **replans.record(),
        **change_record(team),
        **_usage(model),
    )
    ui.show(summary_text(result, recorder, team.checkpoint, replans.made))
    _show_usage(ui, model)
    # done (every step ran, some criterion not checked) is not a failure: the summary says what was not checked
    code = EXIT_FAILED if result.status == "failed" else EXIT_OK
    return Outcome(code, result.status, result.error, recorder.run_dir, result)


def _unmet_task_checks(result: ExecutionResult) -> list[CriterionCheck]:
    """What the task itself asks for (``agent.plan_run.task_checks``), checked after every step ran, and not met."""
    return [c for c in result.criteria if c.status == "not met" and c.criterion.endswith(FROM_THE_TASK)]


def _may_replan(result: ExecutionResult, replans: _Replans) -> bool:
    """Re-plans are left, and a step failed, not because the model's server did (the re-plan would meet the same
    server), or every step ran and omx found the result short of what the task asks for ("6 bullet lines", asked
    for 3). A plan's own criterion not met is no reason: the plan may have guessed it wrong, and the result right."""
    if not replans.left:
        return False
    if result.failed_step is None:
        return result.status == "failed" and bool(_unmet_task_checks(result))
    failed = next((o for o in result.steps if o.step_id == result.failed_step), None)
    return failed is not None and failed.error_type != "LLMError"


def _replan(
    plan: Plan, result: ExecutionResult, workspace: Path, ui: UI, recorder: RunRecorder, replans: _Replans
) -> Plan | None:
    """After a failed step, a new plan for the rest of the task (None: the model gave none): where one python step's
    code is at fault, the same plan with that code asked for again (``code_fix``), else a whole new plan. The
    failing step still stops its own plan; the new plan is shown and confirmed like the first, by
    the same rules."""
    assert replans.planner is not None
    planner = replans.planner
    failed = result.failed_step is not None
    data = {"reason": "failed step" if failed else "unmet task check", "failed_step": result.failed_step,
            "error": result.error, "plan": plan.model_dump(mode="json", exclude_none=True)}  # fmt: skip
    what = f"step {result.failed_step} failed: {result.error}" if failed else f"the result is wrong: {result.error}"
    _announce(replans, ui, recorder, what, data)
    fault = code_at_fault(plan, result, recorder.run_dir, replans.expected)
    fixed = planner.with_fixed_code(plan, replans.task, fault) if fault is not None else None
    if fault is not None and fixed is not None:  # the same plan, the code at fault written again: one re-plan
        recorder.record(RunEntry(event="code_fixed", data={"step": fault.step.id, "failure": fault.failure}))
        replans.made += 1
        return fixed
    happened = _what_happened(plan, result, recorder.run_dir, workspace)
    try:
        return _valid_plan(lambda: planner.replan(replans.task, workspace, happened, plan, replans.expected), replans,
                           workspace, ui, recorder, replanning=True)  # fmt: skip
    except PlanningError as exc:
        ui.show(f"No new plan: {exc}")
        return None


def _fixed_after_disagreement(
    plan: Plan, result: ExecutionResult, ui: UI, recorder: RunRecorder, replans: _Replans
) -> Plan | None:
    """Once in a run, where a second program printed another value than the code that made it, or that code printed
    nothing from an input that holds something, ``plan`` with that code asked for again (``code_fix.disagreed_code``,
    ``code_fix.empty_code``), a re-plan shown and confirmed like any; None otherwise."""
    if not replans.left or replans.disagreed or replans.planner is None:
        return None
    # code that printed nothing is told so: that says more than another program's value
    fault = empty_code(plan, result, recorder.run_dir, replans.expected)
    what, reason = "the code printed nothing from an input that holds something", "nothing printed"
    if fault is None:
        fault = disagreed_code(plan, result, replans.expected)
        what, reason = "two programs written apart printed different values", "values disagree"
        replans.disputed = fault is not None
    if fault is None:
        return None
    replans.disagreed = True
    _announce(replans, ui, recorder, what, {"reason": reason, "failed_step": None, "error": what,
                                           "plan": plan.model_dump(mode="json", exclude_none=True)})  # fmt: skip
    fixed = replans.planner.with_fixed_code(plan, replans.task, fault)
    if fixed is None:
        ui.show("No new code: the model gave none that can work, or the same code again")
        return None
    recorder.record(RunEntry(event="code_fixed", data={"step": fault.step.id, "failure": fault.failure}))
    replans.made += 1
    return fixed


def _what_happened(plan: Plan, result: ExecutionResult, run_dir: Path, workspace: Path) -> str:
    """The failed run as the model needs it: each step, its output cut short, the error of the one that failed, and
    what the task asks that the result is not, never an answer omx computed itself (``task_checks.told``)."""
    lines = ["That plan ran:"]
    for outcome in result.steps:
        step = f"- step {outcome.step_id} ({outcome.tool}): {outcome.status}"
        if outcome.status == "success":
            text = read_output(run_dir, outcome.step_id)
            step += f", output: {preview(text, 300)!r}"
        elif outcome.status == "failed":
            step += f": {outcome.error}" + (f" ({outcome.hint})" if outcome.hint else "")
        lines.append(step)
    unmet = _unmet_task_checks(result) if result.failed_step is None else []
    if unmet:  # what the task asks for, exactly, and what the run wrote instead
        lines.append("Every step ran, but the result is not what the task asks for:")
        lines += [f"- {told(c, workspace)}" for c in unmet]
        lines.append(  # a model step that miscounted would miscount again: exact work is code's
            "Plan it so that the output meets exactly that: exact work (counting, picking, sorting or changing lines) "
            "by a python step given the text as its input and printing its result from INPUT; prose by an llm prompt "
            "that says what the task asks."
        )
    return "\n".join(lines)


def _usage(model: RecordingModel | None) -> dict[str, Any]:
    """The run's tokens and cost for its end line, when it has a model."""
    return {"usage": model.tally.record()} if model is not None else {}


def _show_usage(ui: UI, model: RecordingModel | None) -> None:
    """The last line of every run that had a model: its tokens and cost."""
    if model is not None:
        ui.show(model.tally.line())


def summary_text(
    result: ExecutionResult, recorder: RunRecorder, checkpoint: RunCheckpoint | None = None, replans: int = 0
) -> str:
    """The console summary: outcome, steps, criteria, produced files, where the trace is, and on an
    omxfs workspace the lines that show and undo what the run did to the agent's zone. The steps and
    criteria are the last plan's; ``replans`` says how many re-plans came before it."""
    steps = f"{result.steps_executed}/{result.steps_total} steps"
    after = f", after {replans} re-plan{'s' if replans != 1 else ''}" if replans else ""
    if result.status == "success":
        lines = [f"Result: success ({steps}{after})"]
    elif result.status == "done":
        lines = [f"Result: done, {done_text(result.criteria)} ({steps}{after})"]
    elif result.status == "done_unverified":
        lines = [f"Result: done, {unverified_text(result.criteria)} ({steps}{after})"]
    elif result.failed_step is not None:
        lines = [f"Result: failed at step {result.failed_step} of {result.steps_total}{after}: {result.error}"]
    else:
        lines = [f"Result: failed{after}: {result.error}"]
    for o in result.steps:
        lines.append(f"  {o.step_id}. {o.tool:<10} {o.status:<8} {o.duration_s:.2f}s")
        if o.note:
            lines.append(f"       {o.note}")
    if result.criteria:
        lines.append("Success criteria:")
        lines += [f"  [{c.label}] {c.criterion}" + (f" ({c.detail})" if c.detail else "") for c in result.criteria]
    if result.produced_files:
        lines.append("Produced files:")
        lines += [f"  {path}" for path in result.produced_files]
    if result.suggestion:
        lines.append(f"Next: {result.suggestion}")
    lines.append(f"Trace: {recorder.trace_path}")
    lines.append(f"Replay: {shell_line('omx', 'replay', recorder.run_dir)}")
    lines += checkpoint.lines() if checkpoint is not None else []
    return "\n".join(lines)
