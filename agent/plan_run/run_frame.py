"""What every omx run of a task does before and after its work, in plan mode and in ``omx --loop`` alike.

Before: the workspace checked, the tools' sandbox, the team and checkpoint on an omxfs mount, the run's record in
``runs/<ts>/``, the model, and the task's expectations read. After: the trace's end entry with the zone's changes
since the checkpoint. Between, the records and lines both modes show of the sandbox, checkpoint and risk.

A run that cannot start raises ``NotStarted``; each mode turns it into its own failed outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.model.llm import LLMError, Model
from agent.plan_run.risk import RiskAssessment
from agent.plan_run.run_checkpoint import RunCheckpoint, change_stat, start_checkpoint
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.task_reading import read_task
from agent.record.runs_dir import RunsError, agent_for, is_omxfs_mount, is_omxfs_store, runs_root
from agent.record.trace import RecordingModel, RunEntry, RunRecorder
from agent.sandbox.confine import Sandbox, SandboxMode, SandboxUnavailable
from omxfs.errors import OmxError
from omxfs.limits import Limits

__all__ = ["ModelFactory", "NotStarted", "Team", "assessment_record", "change_record", "checkpoint_record"]
__all__ += ["end_run", "read_expectations", "run_model", "run_recorder", "run_sandbox", "run_team"]
__all__ += ["sandbox_line", "sandbox_record", "schema_refusal_recorder", "workspace_dir"]

ModelFactory = Callable[[], Model]


class NotStarted(OmxError):
    """The run could not start (a bad workspace, no run directory, no model); ``run_dir``: its record, if one was
    begun (then ended by ``end_run``)."""

    def __init__(self, message: str, run_dir: Path | None = None) -> None:
        super().__init__(message)
        self.run_dir = run_dir


def workspace_dir(path: Path) -> Path:
    """``path`` resolved, as the run's workspace: a directory, and not ``/``."""
    if not path.is_dir():
        raise NotStarted(f"workspace {path} is not a directory")
    if path.resolve() == Path("/"):
        raise NotStarted("the workspace cannot be / : run omx in a project directory")
    return path.resolve()


def run_recorder(workspace: Path, as_agent: str | None) -> RunRecorder:
    """The run's record, a new ``runs/<ts>/`` of the workspace (of ``as_agent``'s zone on an omxfs store)."""
    try:
        return RunRecorder.create(runs_root(workspace, as_agent))
    except RunsError as exc:
        raise NotStarted(str(exc)) from None
    except OSError as exc:
        raise NotStarted(f"cannot create the run directory: {exc}") from None


def run_sandbox(workspace: Path, as_agent: str | None, mode: SandboxMode, limits: Limits) -> Sandbox:
    """The tools' sandbox; its processes carry the run's agent in OMX_AGENT, so the mount knows who they are."""
    agent = None
    try:
        if as_agent or is_omxfs_store(workspace):
            agent = agent_for(workspace, as_agent)
    except RunsError as exc:
        raise NotStarted(str(exc)) from None
    env = {"OMX_AGENT": agent} if agent else None
    return Sandbox(workspace, mode=mode, env=env, limits=limits)


@dataclass(frozen=True)
class Team:
    """On an omxfs mount: who this run acts as, and the team it shares the workspace with (else empty)."""

    agent: str | None = None
    agents: tuple[str, ...] = ()
    checkpoint: RunCheckpoint | None = None  # the zone's checkpoint this run starts from
    no_checkpoint: str | None = None  # why there is none, when the store refused one

    def no_checkpoint_line(self) -> str | None:
        """What the person is told when the store refused the run's checkpoint (None: there is one, or no mount)."""
        if not self.no_checkpoint:
            return None
        return f"No checkpoint of {self.agent}'s zone before this run (it cannot be undone): {self.no_checkpoint}"


def run_team(workspace: Path, as_agent: str | None, dry_run: bool) -> Team:
    """The run's team; on a mount, unless ``dry_run``, a checkpoint of the agent's zone is made first (a store that
    refuses one leaves the reason in ``no_checkpoint``, and the run goes on)."""
    if not (is_omxfs_store(workspace) and is_omxfs_mount(workspace)):
        return Team()
    try:
        agent = agent_for(workspace, as_agent, mounted=True)
        agents = tuple(sorted(p.name for p in (workspace / "agents").iterdir() if p.is_dir()))
    except RunsError as exc:
        raise NotStarted(str(exc)) from None
    except OSError as exc:
        raise NotStarted(f"cannot list the agents of {workspace}: {exc}") from None
    if dry_run:  # nothing is executed: nothing to undo
        return Team(agent, agents)
    try:
        return Team(agent, agents, start_checkpoint(workspace, agent, "before an omx run"))
    except OmxError as exc:
        return Team(agent, agents, no_checkpoint=exc.message)
    except OSError as exc:
        return Team(agent, agents, no_checkpoint=exc.strerror or str(exc))


def run_model(factory: ModelFactory, recorder: RunRecorder) -> Model:
    """The run's model; a run that has none (none configured, a scripted file unreadable) still ends its record."""
    try:
        return factory()
    except LLMError as exc:
        end_run(recorder, "error", error=str(exc), steps_executed=0)
        raise NotStarted(str(exc), recorder.run_dir) from None


def read_expectations(
    task: str, workspace: Path, model: RecordingModel, recorder: RunRecorder, on_refused: Callable[[str], None] | None
) -> TaskExpectations:
    """What the task asks, read before the run by the model and by omx's rules, acting where both agree
    (``agent.plan_run.task_reading``); the trace's ``task_reading`` says what each read, or why the model did not."""
    model.purpose, model.step_id = "reading", None
    reading, why_none = read_task(model, task, workspace, on_refused=on_refused)
    model.purpose = "plan"
    expected = TaskExpectations.before(task, workspace, reading)
    recorder.record(RunEntry(event="task_reading", data=expected.reading or {"model": None, "why": why_none}))
    return expected


def schema_refusal_recorder(recorder: RunRecorder) -> Callable[[str], None]:
    """What the trace hears of a server that took no JSON schema (JSON mode from here on)."""

    def on_schema_refused(error: str) -> None:
        recorder.record(RunEntry(event="schema_refused", data={"error": error}))

    return on_schema_refused


def end_run(recorder: RunRecorder, status: str, **data: Any) -> None:
    """The trace's last entry: the run's status and what the mode adds."""
    recorder.record(RunEntry(event="end", data={"status": status, **data}))


def sandbox_record(sandbox: Sandbox) -> dict[str, Any]:
    """The start entry's word on the sandbox: its mechanism, or why there is none."""
    try:
        return sandbox.info.as_dict()
    except SandboxUnavailable as exc:
        return {"mechanism": "unavailable", "error": str(exc)}


def sandbox_line(sandbox: Sandbox) -> str:
    """The line shown before code runs: what confines it, or why nothing does."""
    try:
        info = sandbox.info
    except SandboxUnavailable as exc:
        return f"Sandbox: none: {exc}"
    return f"Sandbox: {info.mechanism}; files: {info.filesystem}; network: {info.network}; limits: {info.limits}"


def checkpoint_record(team: Team) -> dict[str, Any]:
    """The start entry's word on the run's checkpoint: which one, or why there is none."""
    if team.checkpoint is not None:
        return {"checkpoint": team.checkpoint.record()}
    return {"checkpoint_error": team.no_checkpoint} if team.no_checkpoint else {}


def change_record(team: Team) -> dict[str, Any]:
    """The end entry's diff stat of the zone since the run's checkpoint, for ``omx replay``."""
    if team.checkpoint is None:
        return {}
    try:
        return {"changes": change_stat(team.checkpoint)}
    except OmxError as exc:
        return {"changes_error": exc.message}
    except OSError as exc:
        return {"changes_error": exc.strerror or str(exc)}


def assessment_record(assessment: RiskAssessment) -> dict[str, Any]:
    """A plan entry's word on its risk: the level, omx's and the model's, and why."""
    return {
        "risk_level": assessment.level.value,
        "computed": assessment.computed.value,
        "model_label": assessment.model_label.value,
        "reasons": [str(f) for f in assessment.findings],
    }
