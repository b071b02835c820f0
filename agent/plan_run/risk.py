"""The risk of a plan, computed from its steps, never only taken from the model.

- LOW: reads, new files inside the workspace, allow-listed read-only commands, model calls.
- MEDIUM: overwriting or appending to an existing file, many writes, running code (python tool, ``python3 -c``),
  a shell or python step without an OS sandbox. In a review run (``omx --as NAME --review``), a write of NAME's
  zone is LOW instead (``held``): nothing lands before a person accepts it. Code is not: it may write elsewhere.
- HIGH: a command outside the allow-list (or chained, redirected, substituted), any path outside the workspace,
  code that deletes, moves, starts programs or uses the network; a ``move`` or ``delete`` step. A plan whose every
  HIGH finding is such a step is ``confirmable``: a person may still run it after an explicit confirmation
  (``confirm``); any other HIGH plan is refused.

The result is the highest of the computed level and the model's own label: the model can raise the level,
never lower it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agent.plan_run.plan import Plan, PythonStep, ShellStep, Step, WorkspaceStep, WriteTextStep
from agent.plan_run.plan import RiskLevel as Level
from agent.plan_run.review_run import HELD, held, review_zone
from agent.plan_run.shell_policy import classify, code_concerns, path_problem
from agent.plan_run.tools.base import ToolFailure
from agent.plan_run.tools.held_paths import path_parts
from agent.plan_run.tools.inputs import CopyInput, DeleteInput, MakeDirInput, MoveInput, PathToolInput
from agent.plan_run.tools.path_tools import records_path, records_problem

__all__ = ["Finding", "RiskAssessment", "assess", "path_tool_problem"]

#: more distinct files written than this is "many writes" (MEDIUM)
MANY_WRITES = 3


@dataclass(frozen=True)
class Finding:
    """One reason for a level; ``confirmable``: a HIGH reason a person may accept (a move or a delete); ``held``: a
    write that would be MEDIUM, LOW because it is held for review (``review_run``)."""

    level: Level
    reason: str
    step_id: int | None = None
    confirmable: bool = False
    held: bool = False

    def __str__(self) -> str:
        reason = f"{self.reason}: {HELD}" if self.held else self.reason
        return reason if self.step_id is None else f"step {self.step_id}: {reason}"


def _write(reason: str, step_id: int | None, held_apart: bool) -> Finding:
    """A write of an existing file, or many writes: MEDIUM, or LOW where the review holds it apart."""
    return Finding(Level.LOW if held_apart else Level.MEDIUM, reason, step_id, held=held_apart)


@dataclass(frozen=True)
class RiskAssessment:
    """The level that decides, the computed level, the model's label, and every finding behind them."""

    level: Level
    computed: Level
    model_label: Level
    findings: tuple[Finding, ...]

    @property
    def reasons(self) -> list[str]:
        """The findings at the deciding level, the ones a person needs to read first."""
        return [str(f) for f in self.findings if f.level == self.level]

    @property
    def confirmable(self) -> bool:
        """HIGH only for moves and deletes: the plan may run once a person confirms it explicitly."""
        high = [f for f in self.findings if f.level is Level.HIGH]
        return self.level is Level.HIGH and bool(high) and all(f.confirmable for f in high)

    @property
    def confirmable_steps(self) -> list[int]:
        """The steps that move or delete, in order."""
        ids = (f.step_id for f in self.findings if f.confirmable and f.step_id is not None)
        return sorted(set(ids))


def path_tool_problem(path: str, workspace: Path) -> str | None:
    """Why a path tool may not use ``path``: absolute, ``..``, or a symlink on the way (the tools never follow one)."""
    try:
        parts = path_parts(path)
    except ToolFailure as failure:
        return failure.error
    for depth in range(1, len(parts)):
        on_the_way = workspace.joinpath(*parts[:depth])
        if on_the_way.is_symlink():
            return f"path {path!r} goes through the symlink {'/'.join(parts[:depth])}: the file tools never follow one"
    return None


def _path_findings(
    step: Step, workspace: Path, written: set[str], agent: str | None, zone: Path | None
) -> list[Finding]:
    """A move or delete is HIGH, which a person may confirm; a copy over an existing file MEDIUM, as a write."""
    inputs = step.inputs
    assert isinstance(inputs, PathToolInput)
    problems = [problem for path in inputs.paths() if (problem := path_tool_problem(path, workspace))]
    if not problems and not isinstance(inputs, MakeDirInput):
        problems += [f"{path!r} is the workspace root: no file tool moves, copies or deletes it"
                     for path in inputs.paths() if not path_parts(path)]  # fmt: skip
    if not isinstance(inputs, CopyInput):  # a copy of the records is harmless; a copy into them is not
        problems += [p for path in inputs.paths() if (p := records_problem(path, records_path(agent)))]
    elif problem := records_problem(inputs.target, records_path(agent)):
        problems.append(problem)
    if problems:
        return [Finding(Level.HIGH, problem, step.id) for problem in problems]
    if isinstance(inputs, MoveInput | CopyInput):
        target = os.path.normpath(inputs.target)
        exists = os.path.lexists(workspace / target) and target not in written
        written.add(target)
        if isinstance(inputs, MoveInput):
            replacing = ", replacing the existing file there" if exists and inputs.overwrite else ""
            return [Finding(Level.HIGH, f"moves {inputs.source} to {inputs.target}{replacing}", step.id, True)]
        if exists and inputs.overwrite:
            reason = f"overwrites the existing file {inputs.target} with a copy"
            return [_write(reason, step.id, held(inputs.target, workspace, zone))]
    if isinstance(inputs, DeleteInput):
        return [Finding(Level.HIGH, f"deletes {inputs.path}", step.id, True)]
    return []


def _step_findings(
    step: Step,
    workspace: Path,
    written: set[str],
    sandboxed: bool,
    agent: str | None = None,
    zone: Path | None = None,
) -> list[Finding]:
    if isinstance(step.inputs, PathToolInput):
        return _path_findings(step, workspace, written, agent, zone)
    found: list[Finding] = []
    path = getattr(step.inputs, "path", None)
    if isinstance(path, str) and (problem := path_problem(path, workspace)):
        found.append(Finding(Level.HIGH, problem, step.id))
    if isinstance(step, WriteTextStep) and not found:
        target = workspace / step.inputs.path
        if target.exists() and step.inputs.path not in written:
            verb = "overwrites" if step.inputs.mode == "overwrite" else "appends to"
            reason = f"{verb} the existing file {step.inputs.path}"
            found.append(_write(reason, step.id, held(step.inputs.path, workspace, zone)))
        written.add(step.inputs.path)
    elif isinstance(step, ShellStep):
        verdict = classify(step.inputs.cmd, workspace)
        found += [Finding(verdict.risk, reason, step.id) for reason in verdict.reasons]
    elif isinstance(step, WorkspaceStep):
        from agent.plan_run.tools.workspace import workspace_findings

        found += [Finding(level, reason, step.id) for level, reason in workspace_findings(step, workspace, agent)]
    elif isinstance(step, PythonStep):
        concerns = code_concerns(step.inputs.code)
        found += [Finding(Level.HIGH, f"python code {what}", step.id) for what in concerns]
        found.append(Finding(Level.MEDIUM, "runs Python code", step.id))
    if isinstance(step, ShellStep | PythonStep) and not sandboxed:
        found.append(Finding(Level.MEDIUM, "runs without an OS sandbox (--no-sandbox)", step.id))
    return found


def assess(plan: Plan, workspace: Path, *, sandboxed: bool = True, agent: str | None = None) -> RiskAssessment:
    """Assess ``plan`` against the workspace as it is now (existing files decide what counts as an overwrite).

    ``agent``: who runs it on an omxfs mount, whose private zone and deliveries a workspace step may replace; in a
    review run of that zone, its writes there are held for review (``review_run``).
    """
    workspace = workspace.resolve()
    zone = review_zone(workspace, agent)
    written: set[str] = set()
    findings: list[Finding] = []
    for step in plan.steps:
        findings += _step_findings(step, workspace, written, sandboxed, agent, zone)
    if len(written) > MANY_WRITES:
        all_held = all(held(path, workspace, zone) for path in written)
        findings.append(_write(f"writes {len(written)} files", None, all_held))
    computed = Level.highest(*(f.level for f in findings))
    level = Level.highest(computed, plan.risk_level)
    if plan.risk_level.rank > computed.rank:
        findings.append(Finding(plan.risk_level, f"the model rated the plan {plan.risk_level.value}"))
    return RiskAssessment(level, computed, plan.risk_level, tuple(findings))
