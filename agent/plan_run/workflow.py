"""The flow behind ``omx``: plan → show → confirm → execute → summarise, every run recorded in ``runs/<ts>/``.

The CLI only parses arguments and prints; this module decides. It talks to the person through a ``UI`` (show
text, ask yes/no) and returns an ``Outcome`` whose exit code is non-zero on refusal or failure. A success
criterion omx checked and found not met is a failure (exit 1); a run whose steps all ran but whose criteria omx
could not all check is "done" (exit 0), and its result line says how many were not checked, never "success"
(``agent.plan_run.verdict``); the model may judge those first (``agent.plan_run.judge``), labelled as its judgement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent.model.llm import LLMError, Model
from agent.plan_run.confirm import Declined, Refused, confirm, render_plan
from agent.plan_run.executor import ExecutionResult, Executor
from agent.plan_run.judge import judged
from agent.plan_run.overwrites import overwrite_previews
from agent.plan_run.plan import Plan, PlanError, RiskLevel, load_plan
from agent.plan_run.planner import Planner, PlanningError
from agent.plan_run.resume import ResumeError, earlier_outputs
from agent.plan_run.risk import RiskAssessment, assess
from agent.plan_run.run_checkpoint import RunCheckpoint, change_stat, start_checkpoint
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.tools.base import ToolContext
from agent.plan_run.verdict import done_text
from agent.record.runs_dir import RunsError, agent_for, is_omxfs_mount, is_omxfs_store, omxfs_mount_of, runs_root
from agent.record.trace import RecordingModel, RunEntry, RunRecorder, preview
from agent.sandbox.confine import Sandbox, SandboxMode, SandboxUnavailable
from omxfs.errors import OmxError

__all__ = ["EXIT_DECLINED", "EXIT_FAILED", "EXIT_OK", "EXIT_REFUSED", "UI", "Options", "Outcome"]
__all__ += ["run_plan_file", "run_task", "summary_text"]

EXIT_OK, EXIT_FAILED, EXIT_REFUSED, EXIT_DECLINED = 0, 1, 3, 4
MAX_REPLANS = 2  # the default of Options.replans, and what the re-plan lines count up to
ModelFactory = Callable[[], Model]


class UI(Protocol):
    def show(self, text: str) -> None: ...

    def ask(self, question: str) -> bool: ...


@dataclass
class Options:
    workspace: Path | None = None  # None: the current directory (omx "task") or the plan's root (omx run)
    as_agent: str | None = None
    yes: bool = False
    dry_run: bool = False
    sandbox_mode: SandboxMode = "auto"
    from_step: int | None = None  # omx run --from-step: the steps before it are not run again
    replans: int = MAX_REPLANS  # omx "TASK": new plans after a failed step, at most (issue 28)
    judge: bool = True  # the model judges the criteria omx cannot check (agent.plan_run.judge); --no-judge: not


@dataclass
class Outcome:
    exit_code: int
    status: str  # success, done (ran, not all checked), failed, refused, declined, dry_run, planning_failed, error
    message: str | None = None
    run_dir: Path | None = None
    result: ExecutionResult | None = None
    reasons: list[str] = field(default_factory=list)


class _Stop(Exception):
    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome


def _workspace(path: Path) -> Path:
    if not path.is_dir():
        raise _Stop(Outcome(EXIT_FAILED, "error", f"workspace {path} is not a directory"))
    if path.resolve() == Path("/"):
        raise _Stop(Outcome(EXIT_FAILED, "error", "the workspace cannot be / : run omx in a project directory"))
    return path.resolve()


def _recorder(workspace: Path, options: Options) -> RunRecorder:
    try:
        return RunRecorder.create(runs_root(workspace, options.as_agent))
    except RunsError as exc:
        raise _Stop(Outcome(EXIT_FAILED, "error", str(exc))) from None
    except OSError as exc:
        raise _Stop(Outcome(EXIT_FAILED, "error", f"cannot create the run directory: {exc}")) from None


def _sandbox(workspace: Path, options: Options) -> Sandbox:
    """The tools' sandbox; its processes carry the run's agent in OMX_AGENT, so the mount knows who they are."""
    agent = None
    try:
        if options.as_agent or is_omxfs_store(workspace):
            agent = agent_for(workspace, options.as_agent)
    except RunsError as exc:
        raise _Stop(Outcome(EXIT_FAILED, "error", str(exc))) from None
    return Sandbox(workspace, mode=options.sandbox_mode, env={"OMX_AGENT": agent} if agent else None)


@dataclass(frozen=True)
class _Team:
    """On an omxfs mount: who this run acts as, and the team it shares the workspace with (else empty)."""

    agent: str | None = None
    agents: tuple[str, ...] = ()
    checkpoint: RunCheckpoint | None = None  # the zone's checkpoint this run starts from (issue 27)
    no_checkpoint: str | None = None  # why there is none, when the store refused one


def _team(workspace: Path, options: Options) -> _Team:
    if not (is_omxfs_store(workspace) and is_omxfs_mount(workspace)):
        return _Team()
    try:
        agent = agent_for(workspace, options.as_agent, mounted=True)
        agents = tuple(sorted(p.name for p in (workspace / "agents").iterdir() if p.is_dir()))
    except RunsError as exc:
        raise _Stop(Outcome(EXIT_FAILED, "error", str(exc))) from None
    except OSError as exc:
        raise _Stop(Outcome(EXIT_FAILED, "error", f"cannot list the agents of {workspace}: {exc}")) from None
    if options.dry_run:  # nothing is executed: nothing to undo
        return _Team(agent, agents)
    try:
        return _Team(agent, agents, start_checkpoint(workspace, agent, "before an omx run"))
    except OmxError as exc:
        return _Team(agent, agents, no_checkpoint=exc.message)
    except OSError as exc:
        return _Team(agent, agents, no_checkpoint=exc.strerror or str(exc))


def _sandbox_record(sandbox: Sandbox) -> dict[str, Any]:
    try:
        return sandbox.info.as_dict()
    except SandboxUnavailable as exc:
        return {"mechanism": "unavailable", "error": str(exc)}


def _end(recorder: RunRecorder, status: str, **data: Any) -> None:
    recorder.record(RunEntry(event="end", data={"status": status, **data}))


def _make_model(factory: ModelFactory, recorder: RunRecorder) -> Model:
    """The run's model; a run that has none (none configured, a scripted file unreadable) still ends its record."""
    try:
        return factory()
    except LLMError as exc:
        _end(recorder, "error", error=str(exc), steps_executed=0)
        raise _Stop(Outcome(EXIT_FAILED, "error", str(exc), recorder.run_dir)) from None


def run_task(task: str, options: Options, ui: UI, model_factory: ModelFactory) -> Outcome:
    """``omx "task"``: plan it with the model, then the shared flow."""
    try:
        workspace = _workspace(options.workspace or Path.cwd())
        sandbox = _sandbox(workspace, options)
        team = _team(workspace, options)
        recorder = _recorder(workspace, options)
        recorder.record(
            RunEntry(
                event="start",
                data={
                    "command": "task",
                    "agent": team.agent,
                    "task": task,
                    "workspace": str(workspace),
                    "dry_run": options.dry_run,
                    "sandbox": _sandbox_record(sandbox),
                    **_checkpoint_record(team),
                },
            )
        )
        model = _make_model(model_factory, recorder)
    except _Stop as stop:
        return stop.outcome
    recording = RecordingModel(model, recorder)

    def on_invalid(attempt: int, reply: str, problems: str) -> None:
        recorder.record(
            RunEntry(event="plan_invalid", data={"attempt": attempt, "problems": problems, "reply": reply[:2000]})
        )

    def on_schema_refused(error: str) -> None:  # the server took no JSON schema: JSON mode from here on
        recorder.record(RunEntry(event="schema_refused", data={"error": error}))

    try:
        planner = Planner(recording, on_invalid=on_invalid, workspace_agent=team.agent, team=team.agents,
                          on_schema_refused=on_schema_refused)  # fmt: skip
        plan = planner.plan(task, workspace)
    except PlanningError as exc:
        _end(recorder, "planning_failed", error=str(exc), steps_executed=0, usage=recording.tally.record())
        ui.show(recording.tally.line())
        return Outcome(EXIT_FAILED, "planning_failed", str(exc), recorder.run_dir)
    except KeyboardInterrupt:  # Ctrl-C while the model plans: the trace still ends, as one interrupted in a step
        _end(recorder, "interrupted", steps_executed=0, usage=recording.tally.record())
        raise
    return _decide_and_run(plan, workspace, options, ui, recorder, sandbox, recording, team, task=task,
                           planner=planner, replans=options.replans)  # fmt: skip


def run_plan_file(plan_path: Path, options: Options, ui: UI, model_factory: ModelFactory) -> Outcome:
    """``omx run plan.json``: re-execute a saved plan (in its workspace unless --workspace says otherwise)."""
    try:
        plan = load_plan(plan_path)
        earlier = earlier_outputs(plan, plan_path, options.from_step) if options.from_step is not None else {}
    except (PlanError, ResumeError) as exc:
        return Outcome(EXIT_FAILED, "error", str(exc))
    start = options.from_step or plan.steps[0].id
    try:
        workspace = _workspace(options.workspace or Path(plan.workspace_root))
        sandbox = _sandbox(workspace, options)
        team = _team(workspace, options)
        recorder = _recorder(workspace, options)
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
                    "sandbox": _sandbox_record(sandbox),
                    **_checkpoint_record(team),
                },
            )
        )
        needs_model = any(step.tool == "llm" and step.id >= start for step in plan.steps)
        if needs_model:
            recorder.write_plan(plan)  # the plan is known: the record of a run refused for want of a model has it
        model = _make_model(model_factory, recorder) if needs_model else _optional_model(plan, model_factory)
    except _Stop as stop:
        return stop.outcome
    recording = RecordingModel(model, recorder) if model is not None else None
    return _decide_and_run(plan, workspace, options, ui, recorder, sandbox, recording, team, earlier)


def _optional_model(plan: Plan, factory: ModelFactory) -> Model | None:
    """A plan with collaborative writes may need the model to merge after a conflict; without one it fails then."""
    if not any(step.tool == "collab_write" for step in plan.steps):
        return None
    try:
        return factory()
    except LLMError:
        return None


def _decide_and_run(
    plan: Plan,
    workspace: Path,
    options: Options,
    ui: UI,
    recorder: RunRecorder,
    sandbox: Sandbox,
    model: RecordingModel | None,
    team: _Team,
    earlier: dict[int, str] | None = None,
    task: str | None = None,  # ``omx "TASK"``'s own words, whose outputs omx checks itself (not a saved plan's)
    planner: Planner | None = None,  # re-plans after a failed step (``omx "TASK"`` only)
    replans: int = 0,  # how many re-plans are left
    expected: TaskExpectations | None = None,  # read before the first plan ran: re-plans keep it
) -> Outcome:
    recorder.write_plan(plan)
    assessment = assess(plan, workspace, sandboxed=options.sandbox_mode != "off", agent=team.agent)
    recorder.record(RunEntry(event="plan", data=_assessment_record(assessment)))
    ui.show(render_plan(plan, assessment))
    if team.no_checkpoint:
        ui.show(f"No checkpoint of {team.agent}'s zone before this run (it cannot be undone): {team.no_checkpoint}")
    if options.from_step is not None:
        before = [step.id for step in plan.steps if step.id < options.from_step]
        listed = ", ".join(map(str, before))
        reused = f"step {listed} is not" if len(before) == 1 else f"steps {listed} are not"
        reused = f"{reused} run again" if before else "every step runs"
        ui.show(f"Resuming at step {options.from_step}: {reused} (the risk above is the whole plan's)")
    if any(step.tool in ("shell", "python") for step in plan.steps):
        ui.show(_sandbox_line(sandbox))
    ui.show(f"Plan saved: {recorder.plan_path}")
    if options.dry_run:
        _end(recorder, "dry_run", steps_executed=0, **_usage(model))
        _show_usage(ui, model)
        if assessment.level is RiskLevel.HIGH:
            ui.show("This plan would be refused (HIGH risk):\n" + "\n".join(f"  - {r}" for r in assessment.reasons))
        ui.show(f"Dry run: nothing was executed. Run the plan with: omx run {recorder.plan_path}")
        return Outcome(EXIT_OK, "dry_run", run_dir=recorder.run_dir)
    if assessment.level is RiskLevel.MEDIUM:  # a person is about to be asked: show what the writes will change
        changes = overwrite_previews(plan, workspace)
        if changes:
            ui.show("Changes to existing files:\n" + "\n".join(changes))
    try:
        approval = confirm(assessment, yes=options.yes, ask=ui.ask)
    except Refused as exc:
        recorder.record(RunEntry(event="confirmation", data={"decision": "refused", "reasons": exc.reasons}))
        _end(recorder, "refused", steps_executed=0, reasons=exc.reasons, **_usage(model))
        _show_usage(ui, model)
        message = "refused: the plan is HIGH risk:\n" + "\n".join(f"  - {r}" for r in exc.reasons)
        return Outcome(EXIT_REFUSED, "refused", message, recorder.run_dir, reasons=exc.reasons)
    except Declined as exc:
        recorder.record(RunEntry(event="confirmation", data={"decision": "declined"}))
        _end(recorder, "declined", steps_executed=0, **_usage(model))
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
        result = Executor(ctx, recorder).execute(plan, from_step=options.from_step, earlier=earlier, expected=expected)
        if options.judge and model is not None:
            result = judged(result, task, workspace, model)
    except KeyboardInterrupt:
        _end(recorder, "interrupted")
        raise
    if result.failed_step is not None and replans > 0 and planner is not None and task is not None:
        number = (options.replans - replans + 1, options.replans)
        again = _replan(plan, result, task, workspace, ui, recorder, planner, number)
        if again is not None:
            return _decide_and_run(again, workspace, options, ui, recorder, sandbox, model, team, task=task,
                                   planner=planner, replans=replans - 1, expected=expected)  # fmt: skip
    _end(
        recorder,
        result.status,
        steps_executed=result.steps_executed,
        produced_files=result.produced_files,
        error=result.error,
        criteria=[check.model_dump() for check in result.criteria],
        **_changes(team),
        **_usage(model),
    )
    ui.show(summary_text(result, recorder, team.checkpoint))
    _show_usage(ui, model)
    # done (every step ran, some criterion not checked) is not a failure: the summary says what was not checked
    code = EXIT_FAILED if result.status == "failed" else EXIT_OK
    return Outcome(code, result.status, result.error, recorder.run_dir, result)


def _replan(
    plan: Plan, result: ExecutionResult, task: str, workspace: Path, ui: UI, recorder: RunRecorder,
    planner: Planner, number: tuple[int, int],
) -> Plan | None:  # fmt: skip
    """After a failed step, a new plan for the rest of the task (None: the model gave none). The failing step still
    stops its own plan (seed 004 FR-E2); the new plan is shown and confirmed like the first, by the same rules."""
    ui.show(f"Step {result.failed_step} failed: {result.error}\nRe-planning ({number[0]} of at most {number[1]}) ...")
    data = {"number": number[0], "failed_step": result.failed_step, "error": result.error, "plan": plan.model_dump()}
    recorder.record(RunEntry(event="replan", data=data))
    if isinstance(planner.model, RecordingModel):  # the trace tells a re-plan's model calls from the first plan's
        planner.model.purpose, planner.model.step_id = "replan", None
    try:
        return planner.replan(task, workspace, plan, _what_happened(plan, result, recorder.run_dir))
    except PlanningError as exc:
        ui.show(f"No new plan: {exc}")
        return None


def _what_happened(plan: Plan, result: ExecutionResult, run_dir: Path) -> str:
    """The failed run as the model needs it: each step, its output cut short, and the error of the one that failed."""
    lines = ["That plan ran:"]
    for outcome in result.steps:
        step = f"- step {outcome.step_id} ({outcome.tool}): {outcome.status}"
        if outcome.status == "success":
            output = run_dir / "outputs" / f"{outcome.step_id}.txt"
            text = output.read_text(encoding="utf-8", errors="replace") if output.is_file() else ""
            step += f", output: {preview(text, 300)!r}"
        elif outcome.status == "failed":
            step += f": {outcome.error}" + (f" ({outcome.hint})" if outcome.hint else "")
        lines.append(step)
    return "\n".join(lines)


def _checkpoint_record(team: _Team) -> dict[str, Any]:
    """The start entry's word on the run's checkpoint: which one, or why there is none."""
    if team.checkpoint is not None:
        return {"checkpoint": team.checkpoint.record()}
    return {"checkpoint_error": team.no_checkpoint} if team.no_checkpoint else {}


def _changes(team: _Team) -> dict[str, Any]:
    """The end entry's diff stat of the zone since the run's checkpoint, for ``omx replay``."""
    if team.checkpoint is None:
        return {}
    try:
        return {"changes": change_stat(team.checkpoint)}
    except OmxError as exc:
        return {"changes_error": exc.message}
    except OSError as exc:
        return {"changes_error": exc.strerror or str(exc)}


def _usage(model: RecordingModel | None) -> dict[str, Any]:
    """The run's tokens and cost for its end line, when it has a model."""
    return {"usage": model.tally.record()} if model is not None else {}


def _show_usage(ui: UI, model: RecordingModel | None) -> None:
    """The last line of every run that had a model: its tokens and cost (issue 17)."""
    if model is not None:
        ui.show(model.tally.line())


def _sandbox_line(sandbox: Sandbox) -> str:
    try:
        info = sandbox.info
    except SandboxUnavailable as exc:
        return f"Sandbox: none: {exc}"
    return f"Sandbox: {info.mechanism}; files: {info.filesystem}; network: {info.network}"


def _assessment_record(assessment: RiskAssessment) -> dict[str, Any]:
    return {
        "risk_level": assessment.level.value,
        "computed": assessment.computed.value,
        "model_label": assessment.model_label.value,
        "reasons": [str(f) for f in assessment.findings],
    }


def summary_text(result: ExecutionResult, recorder: RunRecorder, checkpoint: RunCheckpoint | None = None) -> str:
    """The console summary (seed 004 FR-R1): outcome, steps, criteria, produced files, where the trace is, and on an
    omxfs workspace the lines that show and undo what the run did to the agent's zone (issue 27)."""
    steps = f"{result.steps_executed}/{result.steps_total} steps"
    if result.status == "success":
        lines = [f"Result: success ({steps})"]
    elif result.status == "done":
        lines = [f"Result: done, {done_text(result.criteria)} ({steps})"]
    elif result.failed_step is not None:
        lines = [f"Result: failed at step {result.failed_step} of {result.steps_total}: {result.error}"]
    else:
        lines = [f"Result: failed: {result.error}"]
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
    lines.append(f"Replay: omx replay {recorder.run_dir}")
    lines += checkpoint.lines() if checkpoint is not None else []
    return "\n".join(lines)
