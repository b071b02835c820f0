"""Show a plan so a person can judge it, and decide whether it may run (seed 004 §4.2).

- LOW runs with ``--yes``, otherwise the user is asked.
- MEDIUM is always asked, and ``--yes`` does not count as the answer (as in Aider, where ``--yes`` never approves
  shell commands): overwrites and code need a person who has read the plan.
- HIGH is refused, with the reasons; nothing runs.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any

from agent.plan_run.plan import Plan, RiskLevel
from agent.plan_run.risk import RiskAssessment
from agent.plan_run.tools.inputs import REF_PATTERN

__all__ = ["Decision", "Declined", "Refused", "confirm", "decide", "render_plan"]


class Decision(enum.Enum):
    RUN = "run"
    ASK = "ask"
    REFUSE = "refuse"


class Refused(Exception):
    """A HIGH risk plan: it does not run. ``reasons`` says why, one line each."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("the plan is HIGH risk and was refused: " + "; ".join(reasons))
        self.reasons = reasons


class Declined(Exception):
    """The user did not confirm the plan (answered no, or could not be asked)."""


def decide(level: RiskLevel, *, yes: bool) -> Decision:
    if level is RiskLevel.HIGH:
        return Decision.REFUSE
    if level is RiskLevel.LOW and yes:
        return Decision.RUN
    return Decision.ASK


def _inline(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"ref"} and (match := REF_PATTERN.match(str(value["ref"]))):
        return f"<output of step {match.group(1)}>"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n")
    return text if len(text) <= 100 else text[:97] + "..."


def render_plan(plan: Plan, assessment: RiskAssessment) -> str:
    """The plan as a person reads it: goal, risk and why, numbered steps with their inputs, success criteria."""
    label = "" if assessment.model_label == assessment.level else f" (the model said {assessment.model_label.value})"
    lines = [f"Goal: {plan.goal}", f"Workspace: {plan.workspace_root}", f"Risk: {assessment.level.value}{label}"]
    lines += [f"  - {finding}" for finding in assessment.findings]
    lines.append("Steps:")
    for step in plan.steps:
        lines.append(f"  {step.id}. [{step.tool}] {step.description}")
        for name, value in step.inputs.model_dump(exclude_none=True).items():
            lines.append(f"       {name}: {_inline(value)}")
    if plan.success_criteria:
        lines.append("Success criteria:")
        lines += [f"  - {criterion}" for criterion in plan.success_criteria]
    return "\n".join(lines)


def confirm(assessment: RiskAssessment, *, yes: bool, ask: Callable[[str], bool]) -> str:
    """Raise Refused or Declined unless the plan may run; returns how it was approved (for the trace)."""
    decision = decide(assessment.level, yes=yes)
    if decision is Decision.REFUSE:
        raise Refused(assessment.reasons)
    if decision is Decision.RUN:
        return "--yes (LOW risk)"
    note = " (--yes does not answer for MEDIUM risk plans)" if yes and assessment.level is RiskLevel.MEDIUM else ""
    if not ask(f"Run this {assessment.level.value} risk plan?{note}"):
        raise Declined(f"not confirmed: the {assessment.level.value} risk plan did not run")
    return "confirmed at the prompt"
