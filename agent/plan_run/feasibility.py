"""What a valid plan cannot do in this workspace, found before it runs.

The 0.5B model's plans were valid and still bound to fail: one read ``data/items.txt``, a file of the planner's
example that the workspace does not have (a read of a directory is made a listing, ``agent.plan_run.listings``,
before this looks); others wrote the file they read unchanged to the task's output ("Summarise data/notes.txt in 2
bullets into out/s.md" as read + write), which the form the task gives its output (``agent.plan_run.task_checks``)
rejects whatever happens at run time. Each such plan is asked
for again with its problem named (``Planner``), as an invalid one is; the checks that judge the run are the same
ones, so this only moves a certain failure before the run, where it costs one request instead of a run.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.plan_run.plan import Plan
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.tools.inputs import CopyInput, MoveInput, ReadTextInput, Ref, WriteTextInput

__all__ = ["infeasible", "missing_reads"]

#: the most of a file read to predict a verbatim copy's checks (the checks themselves read at most as much)
_MOST = 1_000_000


def infeasible(plan: Plan, workspace: Path, expected: TaskExpectations) -> list[str]:
    """Why ``plan`` cannot do its task here (empty: nothing found)."""
    missing = missing_reads(plan, workspace)  # a directory's read is a listing already (``listings``)
    problems = [
        f"step {step.id} reads {step.inputs.path}, which is not in the workspace (its files are listed above)"
        for step in plan.steps
        if step.id in missing and isinstance(step.inputs, ReadTextInput)
    ]
    return problems + _verbatim_copies(plan, workspace, expected)


def missing_reads(plan: Plan, workspace: Path) -> set[int]:
    """The read_text steps of ``plan`` whose file is not in the workspace, and no earlier step writes (or copies or
    moves into place)."""
    missing: set[int] = set()
    written: set[str] = set()
    for step in plan.steps:
        inputs = step.inputs
        if isinstance(inputs, ReadTextInput):
            path = os.path.normpath(inputs.path)
            if path not in written and not (workspace / path).exists():
                missing.add(step.id)
        elif isinstance(inputs, WriteTextInput):
            written.add(os.path.normpath(inputs.path))
        elif isinstance(inputs, CopyInput | MoveInput):
            written.add(os.path.normpath(inputs.target))
    return missing


def _verbatim_copies(plan: Plan, workspace: Path, expected: TaskExpectations) -> list[str]:
    """A step that writes a file read by an earlier step, unchanged, to the task's output, where that text does not
    have the form the task gives its output."""
    output = expected.output
    if output is None or not expected.content:
        return []
    reads = {s.id: s.inputs.path for s in plan.steps if isinstance(s.inputs, ReadTextInput)}
    problems = []
    for step in plan.steps:
        inputs = step.inputs
        if not (isinstance(inputs, WriteTextInput) and isinstance(inputs.content, Ref) and inputs.mode == "overwrite"):
            continue
        source = reads.get(inputs.content.step_id)
        if source is None or os.path.normpath(inputs.path) != os.path.normpath(output):
            continue
        text = _text(workspace / source)
        if text is None:
            continue
        unmet = [check.criterion for check in expected.content if check.judge(text)[0] == "not met"]
        if unmet:
            problems.append(
                f"step {step.id} writes {source} unchanged to {output}, and the task wants {output} to be different: "
                f"{unmet[0]}. Add the step that makes it (python with the text as input for exact work, llm for prose)"
            )
    return problems


def _text(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return f.read(_MOST)
    except OSError:
        return None
