"""Show a plan so a person can judge it, and decide whether it may run.

- LOW runs with ``--yes``, otherwise the user is asked. In a review run, a write of the agent's zone is LOW
  (``risk``): held apart, it lands only once a person accepts the review.
- MEDIUM is always asked, and ``--yes`` does not count as the answer (as in Aider, where ``--yes`` never approves
  shell commands): overwrites and code need a person who has read the plan.
- HIGH is refused, with the reasons; nothing runs. Except a plan whose only HIGH steps move or delete paths
  (``RiskAssessment.confirmable``): they need a second confirmation. It is asked, ``--yes`` or not,
  and then the person types the number of paths it moves or deletes; a "y" piped in, or ``--yes``, never runs it.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any

from agent.plan_run.plan import Plan, RiskLevel
from agent.plan_run.review_run import HELD
from agent.plan_run.risk import RiskAssessment
from agent.plan_run.tools.inputs import REF_PATTERN

__all__ = ["Decision", "Declined", "Refused", "confirm", "decide", "inline_value", "render_plan"]


class Decision(enum.Enum):
    RUN = "run"
    ASK = "ask"
    ASK_TWICE = "ask twice"  # asked, then the number of moves and deletes typed
    REFUSE = "refuse"


class Refused(Exception):
    """A HIGH risk plan: it does not run. ``reasons`` says why, one line each."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("the plan is HIGH risk and was refused: " + "; ".join(reasons))
        self.reasons = reasons


class Declined(Exception):
    """The user did not confirm the plan (answered no, or could not be asked)."""


def decide(level: RiskLevel, *, yes: bool, confirmable: bool = False) -> Decision:
    if level is RiskLevel.HIGH:
        return Decision.ASK_TWICE if confirmable else Decision.REFUSE
    if level is RiskLevel.LOW and yes:
        return Decision.RUN
    return Decision.ASK


def inline_value(value: Any) -> str:
    """An input's value on one line of at most 100 characters; a reference as the step whose output it is."""
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
            lines.append(f"       {name}: {inline_value(value)}")
    if plan.success_criteria:
        lines.append("Success criteria:")
        lines += [f"  - {criterion}" for criterion in plan.success_criteria]
    return "\n".join(lines)


def confirm(
    assessment: RiskAssessment,
    *,
    yes: bool,
    ask: Callable[[str], bool],
    ask_text: Callable[[str], str] | None = None,
    what: str = "plan",
) -> str:
    """Raise Refused or Declined unless the plan may run; returns how it was approved (for the trace).

    ``ask_text`` asks for a typed answer ("" when there is none): the second confirmation of moves and deletes.
    ``what`` is how the question names what runs ("tool call" in ``omx --loop``, where each call is a plan)."""
    decision = decide(assessment.level, yes=yes, confirmable=assessment.confirmable)
    if decision is Decision.REFUSE:
        raise Refused(assessment.reasons)
    if decision is Decision.RUN:
        held = any(finding.held for finding in assessment.findings)
        return f"--yes (LOW risk{'; ' + HELD if held else ''})"
    level = assessment.level.value
    note = f" (--yes does not answer for {level} risk {what}s)" if yes and assessment.level is not RiskLevel.LOW else ""
    if not ask(f"Run this {level} risk {what}?{note}"):
        raise Declined(f"not confirmed: the {level} risk {what} did not run")
    if decision is Decision.ASK:
        return "confirmed at the prompt"
    count = len(assessment.confirmable_steps)
    paths = "path" if count == 1 else "paths"
    typed = ask_text(f"It moves or deletes {count} {paths}. To run it, type {count}") if ask_text else ""
    if typed.strip() != str(count):
        said = f"{typed.strip()!r} was typed" if typed.strip() else "nothing was typed"
        raise Declined(f"not confirmed: the plan moves or deletes {count} {paths}, and {said}, not {count}")
    return f"confirmed at the prompt, {count} typed for its moves and deletes"
