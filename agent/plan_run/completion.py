"""A plan that never writes the file its task asks for, completed by omx.

The 0.5B model's plans often read a file, transformed it (an llm or python step) and stopped: the run then did its
work and wrote nothing, and a second request with the gap named gave the same plan. Where the task names exactly one
output file, no step may write it, and the plan's last step makes text, omx adds the step the plan lacks: write that
text to the file. The added step is in the plan the person confirms (its description says omx added it), its risk
is computed like any other's, and the task's checks judge the file it writes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from agent.plan_run.plan import Plan, WriteTextStep
from agent.plan_run.tools.inputs import (
    CopyInput,
    ListDirInput,
    LlmInput,
    MoveInput,
    PythonInput,
    ReadTextInput,
    Ref,
    ShellInput,
    WorkspaceInput,
    WriteTextInput,
)

__all__ = ["completed", "unwritten"]

#: the tools whose output is text a file could hold
_TEXT_MAKERS = (ReadTextInput, LlmInput, PythonInput, ShellInput, ListDirInput)


def unwritten(plan: Plan, outputs: Sequence[str]) -> list[str]:
    """The files of ``outputs`` that no step of ``plan`` may write."""
    return [path for path in outputs if not _may_write(plan, path)]


def _may_write(plan: Plan, path: str) -> bool:
    """A write_text step to ``path``, a copy or move to it, python code that names it, or a shared-workspace tool
    (which writes where its arguments say) may write it."""
    wanted = os.path.normpath(path)
    for step in plan.steps:
        inputs = step.inputs
        if isinstance(inputs, WriteTextInput) and os.path.normpath(inputs.path) == wanted:
            return True
        if isinstance(inputs, CopyInput | MoveInput) and os.path.normpath(inputs.target) == wanted:
            return True
        if isinstance(inputs, PythonInput) and os.path.basename(wanted) in inputs.code:  # 'out/x.txt' or 'x.txt'
            return True
        if isinstance(inputs, WorkspaceInput):
            return True
    return False


def completed(plan: Plan, outputs: Sequence[str]) -> Plan:
    """``plan``, with a last step that writes its last step's output to the task's one output file where it lacks
    one (see the module); otherwise ``plan`` as it is."""
    if len(outputs) != 1 or unwritten(plan, outputs) != list(outputs):
        return plan
    last = plan.steps[-1]
    if not isinstance(last.inputs, _TEXT_MAKERS):
        return plan
    path = outputs[0]
    added = WriteTextStep(
        id=last.id + 1,
        tool="write_text",
        description=f"Write the result to {path} (added by omx: the plan wrote no file the task asks for)",
        inputs=WriteTextInput(path=path, content=Ref(ref=f"step:{last.id}.output")),
        produces=path,
    )
    return plan.model_copy(update={"steps": [*plan.steps, added]})
