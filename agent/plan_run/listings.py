"""A plan's reads of a directory, made listings by omx (issue 28).

The 0.5B model planned ``read_text`` of ``data/`` and ``src/`` for "list the files in data/" and "count the .py files
in src/", and kept that step through a second request and two re-plans that each said "use list_dir", so the run
failed at its first step every time. What such a step means is not in doubt: the directory's entries, which is what
``list_dir`` gives. omx makes the step a ``list_dir`` of the same path before the plan is shown, and says so in its
description. It also drops a ``list_dir`` pattern that is a regular expression for "every name" (``.*``): as the
glob the tool takes, it matches only hidden files, and the listing came back empty.
"""

from __future__ import annotations

from pathlib import Path

from agent.plan_run.plan import ListDirStep, Plan, Step
from agent.plan_run.tools.base import ToolFailure
from agent.plan_run.tools.inputs import ListDirInput, ReadTextInput
from agent.plan_run.tools.paths import confine

__all__ = ["with_listings"]

#: patterns that mean "every name" as a regular expression, and name hidden files only as a glob
_EVERY_NAME = frozenset({".*", ".+", "^.*$", "^.+$", ".*?"})


def with_listings(plan: Plan, workspace: Path) -> Plan:
    """``plan`` with each ``read_text`` of a directory made a ``list_dir`` of it, and each ``list_dir`` pattern that
    is a regular expression for every name dropped; ``plan`` itself where it has neither."""
    steps = [_fixed(step, workspace) for step in plan.steps]
    return plan if steps == plan.steps else plan.model_copy(update={"steps": steps})


def _fixed(step: Step, workspace: Path) -> Step:
    inputs = step.inputs
    if isinstance(inputs, ReadTextInput) and _is_dir(workspace, inputs.path):
        return ListDirStep(
            id=step.id,
            tool="list_dir",
            description=f"{step.description} (list_dir by omx: {inputs.path} is a directory, which read_text cannot "
            "read)",
            inputs=ListDirInput(path=inputs.path),
            produces=step.produces,
        )
    if isinstance(inputs, ListDirInput) and inputs.pattern in _EVERY_NAME:
        return step.model_copy(
            update={
                "description": f"{step.description} (every name, by omx: the pattern {inputs.pattern!r} would name "
                "hidden files only)",
                "inputs": inputs.model_copy(update={"pattern": None}),
            }
        )
    return step


def _is_dir(workspace: Path, path: str) -> bool:
    try:
        return confine(workspace, path).is_dir()
    except (ToolFailure, OSError):  # a path the tool refuses (outside the workspace): the step fails when it runs
        return False
