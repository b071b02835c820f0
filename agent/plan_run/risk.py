"""The risk of a plan, computed from its steps (seed 004 §4.2), never only taken from the model.

- LOW: reads, new files inside the workspace, allow-listed read-only commands, model calls.
- MEDIUM: overwriting or appending to an existing file, many writes, running code (python tool, ``python3 -c``),
  a shell or python step without an OS sandbox.
- HIGH: a command outside the allow-list (or chained, redirected, substituted), any path outside the workspace,
  code that deletes, moves, starts programs or uses the network.

The result is the highest of the computed level and the model's own label: the model can raise the level,
never lower it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.plan_run.plan import Plan, PythonStep, ShellStep, Step, WorkspaceStep, WriteTextStep
from agent.plan_run.plan import RiskLevel as Level
from agent.plan_run.shell_policy import classify, code_concerns, path_problem

__all__ = ["Finding", "RiskAssessment", "assess"]

#: more distinct files written than this is "many writes" (MEDIUM)
MANY_WRITES = 3


@dataclass(frozen=True)
class Finding:
    level: Level
    reason: str
    step_id: int | None = None

    def __str__(self) -> str:
        return self.reason if self.step_id is None else f"step {self.step_id}: {self.reason}"


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


def _step_findings(
    step: Step, workspace: Path, written: set[str], sandboxed: bool, agent: str | None = None
) -> list[Finding]:
    found: list[Finding] = []
    path = getattr(step.inputs, "path", None)
    if isinstance(path, str) and (problem := path_problem(path, workspace)):
        found.append(Finding(Level.HIGH, problem, step.id))
    if isinstance(step, WriteTextStep) and not found:
        target = workspace / step.inputs.path
        if target.exists() and step.inputs.path not in written:
            verb = "overwrites" if step.inputs.mode == "overwrite" else "appends to"
            found.append(Finding(Level.MEDIUM, f"{verb} the existing file {step.inputs.path}", step.id))
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

    ``agent``: who runs it on an omxfs mount, whose private zone and deliveries a workspace step may replace.
    """
    workspace = workspace.resolve()
    written: set[str] = set()
    findings: list[Finding] = []
    for step in plan.steps:
        findings += _step_findings(step, workspace, written, sandboxed, agent)
    if len(written) > MANY_WRITES:
        findings.append(Finding(Level.MEDIUM, f"writes {len(written)} files"))
    computed = Level.highest(*(f.level for f in findings))
    level = Level.highest(computed, plan.risk_level)
    if plan.risk_level.rank > computed.rank:
        findings.append(Finding(plan.risk_level, f"the model rated the plan {plan.risk_level.value}"))
    return RiskAssessment(level, computed, plan.risk_level, tuple(findings))
