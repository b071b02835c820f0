"""``omx run PLAN --from-step N``: run a saved plan again from step N, after step N was fixed.

A failed run leaves every step's output in ``runs/<ts>/outputs/<id>.txt`` beside its plan.json. Steps before N
are not run again: a later step that refers to one of them gets the output that run saved. An output that is not
there (the step never ran, or the plan is not in a run directory) is an error naming the step to start from
instead, never a silent empty input.
"""

from __future__ import annotations

from pathlib import Path

from agent.plan_run.plan import Plan
from agent.record.trace import OUTPUTS_DIR
from omxfs.shell_line import acting_as, shell_line

__all__ = ["ResumeError", "earlier_outputs"]


class ResumeError(Exception):
    """The plan cannot resume at that step; the message says which step it can resume at."""


def earlier_outputs(plan: Plan, plan_path: Path, from_step: int, as_agent: str | None = None) -> dict[int, str]:
    """The saved outputs of the steps before ``from_step`` that the steps from it on refer to. ``as_agent``: the
    run's --as, which the command an error prints carries too."""
    ids = [step.id for step in plan.steps]
    if from_step not in ids:
        raise ResumeError(f"the plan has no step {from_step}; its steps are {', '.join(map(str, ids))}")
    directory = plan_path.resolve().parent / OUTPUTS_DIR
    outputs: dict[int, str] = {}
    for step in plan.steps:
        if step.id < from_step:
            continue
        for ref in step.inputs.refs():
            if ref.step_id >= from_step or ref.step_id in outputs:
                continue
            try:
                outputs[ref.step_id] = (directory / f"{ref.step_id}.txt").read_text(encoding="utf-8")
            except OSError:
                raise ResumeError(
                    f"step {step.id} uses the output of step {ref.step_id}, which {directory} does not hold "
                    f"(that step did not run there); start at step {ref.step_id}: "
                    + shell_line("omx", "run", plan_path, "--from-step", ref.step_id, *acting_as(as_agent))
                ) from None
    return outputs
