"""Whether the value a task asks for came from code this run ran on the task's input ("success means checked").

A file that holds just a number where a count or a total was asked says nothing of whether it is the right number:
the model wrote 10 for the 18 words of a file, and a form check ("holds just a number") made it a success. omx's
own reading of the task (``agent.plan_run.task_checks``) checks forms only, and a reading of the task's words
computes no value it could hold the output to. So where the task asks its one output for a value
(``TaskExpectations.value_asked``: just the number, a count, a total, an answer, or work the model read as exact),
the run is a success only when that output holds what this run's code made of the task's input, code and
output both in the trace:

- a ``write_text`` of a python or shell step's output, that step run on the input (its code or command names an
  input the task names, or its ``input`` is what a ``read_text`` / ``list_dir`` of one, or such a step, gave),
  and the file holds that output;
- a python step run on the input that writes the file itself (its code names it), and no later step writes it.

Code is a python or a shell step: a ``read_text`` written out, or a ``copy``, puts the input there whole and
computes nothing, and an llm step's text is a model's answer, whichever code prints it afterwards.

A task that names no input at all (a sum of numbers it states) is verified by any such code. Anything else (text the
plan wrote itself, an llm step's output) leaves the value not checked: the run is "done, form checked, value not
checked" (``agent.plan_run.verdict``), never "success". That code made the value says where it came from, not that
it is right: a second program, asked for apart, must print it too (``agent.plan_run.second_program``).
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.plan_run.criteria import CriterionCheck, CriterionStatus
from agent.plan_run.plan import Plan, Step
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.tools.inputs import (
    CopyInput,
    ListDirInput,
    LlmInput,
    MoveInput,
    PythonInput,
    ReadTextInput,
    Ref,
    ShellInput,
    WriteTextInput,
)
from agent.record.trace import preview

__all__ = ["CODE_CHECK", "value_check", "value_maker"]

#: the label of the check that the task's value came from code this run ran
CODE_CHECK = " (from the run's code)"


def value_check(plan: Plan, outputs: dict[int, str], expected: TaskExpectations) -> CriterionCheck | None:
    """Whether the task's one output holds what the code of ``plan`` made of the task's input (``outputs``: each
    step's output, as the trace has it); None where the task asks no value of one output."""
    path = expected.output
    if path is None or not expected.value_asked:
        return None
    steps = {step.id: step for step in plan.steps}
    sources = expected.sources
    status, detail = _verdict(_writer(plan, path), steps, outputs, sources, expected.workspace / path)
    criterion = f"{path} holds what this run's code made of {_named(sources)}{CODE_CHECK}"
    # where the value came from, not what it is: code that copies its input made it too (``verdict``)
    return CriterionCheck(
        criterion=criterion, status=status, detail=detail, about_content=False, kind="value", source="code"
    )


def value_maker(plan: Plan, path: str) -> Step | None:
    """The code step whose output ``path`` holds: python code that writes it itself, or the python or shell step
    whose output the last write of it writes; None where no code made it."""
    writer = _writer(plan, path)
    inputs = writer.inputs if writer is not None else None
    if isinstance(inputs, PythonInput):
        return writer
    if not isinstance(inputs, WriteTextInput) or not isinstance(inputs.content, Ref):
        return None
    maker = next((step for step in plan.steps if step.id == inputs.content.step_id), None)
    return maker if maker is not None and isinstance(maker.inputs, PythonInput | ShellInput) else None


def _named(sources: tuple[str, ...]) -> str:
    return "the task's input" if not sources else ", ".join(sources)


def _writer(plan: Plan, path: str) -> Step | None:
    """The last step that writes ``path``: a write_text, copy or move to it, or python code that names it."""
    wanted, found = os.path.normpath(path), None
    for step in plan.steps:
        inputs = step.inputs
        written = isinstance(inputs, WriteTextInput) and os.path.normpath(inputs.path) == wanted
        put = isinstance(inputs, CopyInput | MoveInput) and os.path.normpath(inputs.target) == wanted
        coded = isinstance(inputs, PythonInput) and os.path.basename(wanted) in inputs.code
        found = step if written or put or coded else found
    return found


def _verdict(
    writer: Step | None, steps: dict[int, Step], outputs: dict[int, str], sources: tuple[str, ...], target: Path
) -> tuple[CriterionStatus, str]:
    if writer is None or not target.is_file():
        return "not checked", "no step of the plan wrote it"
    inputs = writer.inputs
    if isinstance(inputs, CopyInput | MoveInput):
        return "not checked", f"step {writer.id} put {inputs.source} there whole, which computes nothing"
    if isinstance(inputs, PythonInput):
        if _on_input(writer, steps, sources):
            return "met", f"step {writer.id}'s code wrote it from the input"
        return "not checked", f"step {writer.id}'s code wrote it, from no input the task names"
    assert isinstance(inputs, WriteTextInput)
    if not isinstance(inputs.content, Ref):
        return "not checked", f"step {writer.id} wrote the plan's own text, which no code computed"
    maker = steps.get(inputs.content.step_id)
    if maker is None or not isinstance(maker.inputs, PythonInput | ShellInput):
        tool = maker.tool if maker is not None else "?"
        return "not checked", f"step {inputs.content.step_id} ({tool}) made its text, not code run on the input"
    if not _on_input(maker, steps, sources):
        return "not checked", f"step {maker.id} ({maker.tool}) ran on no input the task names"
    made = outputs.get(maker.id)
    held = target.read_text(encoding="utf-8", errors="replace")
    if made is None or held.strip() != made.strip():
        return "not checked", f"it does not hold what step {maker.id} ({maker.tool}) output"
    return "met", f"it holds {preview(held.strip(), 40)!r}, what step {maker.id} ({maker.tool}) output"


def _names_source(text: str, sources: tuple[str, ...]) -> bool:
    """Whether ``text`` (a path, code or a command) names one of the task's inputs (any, where it names none)."""
    if not sources:
        return True
    return any(
        os.path.normpath(source) in text or os.path.basename(os.path.normpath(source)) in text for source in sources
    )


def _on_input(step: Step, steps: dict[int, Step], sources: tuple[str, ...], depth: int = 0) -> bool:
    """Whether ``step`` ran on the task's input: it reads or lists one, its code or command names one, or the text
    it was given came from a step that did. A model's text is no code's: an llm step breaks the chain."""
    inputs = step.inputs
    if isinstance(inputs, LlmInput):
        return False
    if isinstance(inputs, ReadTextInput | ListDirInput):
        return _names_source(inputs.path, sources)
    if isinstance(inputs, PythonInput) and _names_source(inputs.code, sources):
        return True
    if isinstance(inputs, ShellInput) and _names_source(inputs.cmd, sources):
        return True
    if depth > len(steps):
        return False
    return any(
        ref.step_id in steps and _on_input(steps[ref.step_id], steps, sources, depth + 1) for ref in inputs.refs()
    )
