"""A plan's reads and writes of files the task never named, made the task's own files by omx (issue 28).

The 0.5B model answered "Use python3 -c to compute 2 to the power 20 and write just the result to out/pow.txt"
and "Describe data/sales.csv in 2 bullet points in out/sales.md" with the planner's example plan, its files and
all: read ``data/items.txt`` (which the workspace lacks), write ``out/reversed.txt`` (which the task never names).
Asked again with both problems named, and in two re-plans, it returned the same plan. What the plan means to read
and write is not in doubt where the task names one file to read that no step reads, or none at all, and one file to
write that no step writes. So, before the plan is shown:

- a ``read_text`` of a file that is not in the workspace (and that no earlier step writes) reads the task's one
  named input instead, where no step reads that; where the task names no input and the read's output only feeds a
  python step, the read is left out and the python step gets no input (its code then computes from nothing, as the
  task asks);
- a ``write_text`` of a file the task does not name writes the task's one output instead, where no step writes it;
  the plan's criteria that name the file it wrote name the task's output then.

Each change is in the plan the person confirms, the step's description says omx made it, and its risk is assessed
like any other step's.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.plan_run.feasibility import missing_reads
from agent.plan_run.plan import Plan, Step
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.tools.inputs import PythonInput, ReadTextInput, Ref, WriteTextInput

__all__ = ["with_task_files"]


def with_task_files(plan: Plan, workspace: Path, expected: TaskExpectations) -> Plan:
    """``plan`` with its reads of missing files and writes of unnamed files made the task's (see the module)."""
    return _writes_of_the_output(_reads_of_the_input(plan, workspace, expected), expected)


def _norm(path: str) -> str:
    return os.path.normpath(path)


def _reads_of_the_input(plan: Plan, workspace: Path, expected: TaskExpectations) -> Plan:
    read = plan.read_paths()
    unread = [name for name in expected.inputs if _norm(name) not in read]
    missing_steps = missing_reads(plan, workspace)
    steps: list[Step] = []
    dropped: set[int] = set()
    for step in plan.steps:
        inputs = step.inputs
        missing = step.id in missing_steps
        if missing and isinstance(inputs, ReadTextInput) and len(unread) == 1 and len(expected.inputs) == 1:
            note = f"(reads {unread[0]} by omx: {inputs.path} is not in the workspace, and the task names {unread[0]})"
            step = step.model_copy(
                update={"description": f"{step.description} {note}", "inputs": ReadTextInput(path=unread[0])}
            )
            unread = []
        elif missing and not expected.inputs and _only_feeds_python(plan, step):
            dropped.add(step.id)
            continue
        steps.append(step)
    if not dropped:
        return plan if steps == plan.steps else plan.model_copy(update={"steps": steps})
    return plan.model_copy(update={"steps": [_without_inputs_from(step, dropped) for step in steps]})


def _only_feeds_python(plan: Plan, step: Step) -> bool:
    """Every step that uses ``step``'s output is a python step that takes it as its input (there is one)."""
    users = [s for s in plan.steps if any(ref.step_id == step.id for ref in s.inputs.refs())]
    return bool(users) and all(isinstance(s.inputs, PythonInput) for s in users)


def _without_inputs_from(step: Step, dropped: set[int]) -> Step:
    inputs = step.inputs
    if isinstance(inputs, PythonInput) and isinstance(inputs.input, Ref) and inputs.input.step_id in dropped:
        note = "(no input, by omx: it read a file the workspace lacks, and the task names none to read)"
        return step.model_copy(
            update={"description": f"{step.description} {note}", "inputs": inputs.model_copy(update={"input": None})}
        )
    return step


def _writes_of_the_output(plan: Plan, expected: TaskExpectations) -> Plan:
    output = expected.output
    if output is None:
        return plan
    writes = [s for s in plan.steps if isinstance(s.inputs, WriteTextInput)]
    if any(_norm(s.inputs.path) == _norm(output) for s in writes if isinstance(s.inputs, WriteTextInput)):
        return plan
    named = {_norm(name) for name in (*expected.inputs, *expected.outputs)}
    # a file a later step reads back is the plan's own scratch, not a stray output
    kept = named | plan.read_paths()
    strays = [s for s in writes if isinstance(s.inputs, WriteTextInput) and _norm(s.inputs.path) not in kept]
    if len(strays) != 1:
        return plan
    stray = strays[0]
    assert isinstance(stray.inputs, WriteTextInput)
    note = f"(writes {output} by omx: the task names {output}, not {stray.inputs.path})"
    moved = stray.inputs.model_copy(update={"path": output})
    fixed = stray.model_copy(update={"description": f"{stray.description} {note}", "inputs": moved})
    # the plan's own criteria speak of the file it meant ("out/reversed.txt exists"): they follow the write
    criteria = [c.replace(stray.inputs.path, output) for c in plan.success_criteria]
    return plan.with_step(fixed).model_copy(update={"success_criteria": criteria})
