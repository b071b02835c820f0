"""After a run that failed, the code of the step at fault asked for again, before a whole new plan.

Asked for a whole new plan after a python step failed or printed the wrong thing, the 0.5B model returned the plan
that failed, step for step, in each of about twenty re-plans measured; shown its own code and what came of it, it
returned the same code; asked for the step's code anew (``code_steps``), told what was wrong before (the error, or
what the code printed and what the task wants instead), it wrote a filter that works. So where one python step is
at fault and the plan can simply run again, the re-plan is the same plan with that step's new code:
shown, assessed and confirmed like any re-plan, and counted as one. A step is at fault when it failed itself, or
when every step ran, the task's own checks found its one output wrong, that output is the step's output, written
whole, and the task wants an exact text (``TaskExpectations.exact``: the model read it as exact work on an input),
not prose of a shape. The model is told what the task asks and what omx found of the file, never an answer of
omx's own (``task_checks.told``).
A plan runs again from its first step, so one that appended, or wrote a file it also reads, before it failed is left
to a whole re-plan: its inputs are no longer as they were. A write omx refused (an empty output over a file that
holds text: ``executor``) changed nothing, so the step whose output was empty is at fault, and the plan can run
again; so can a python step that had no code, told it had none.

Where a second program asked for apart printed another value than the python step that made the task's value
(``second_program``), that step's code is asked for again the same way, once, told only that two programs disagree:
never either value, nor which one omx takes for right (it takes neither); not where the step's code is omx's code
of the operation the model picked (``text_operations.CODE_BY_OMX``), which does what it names: asked again, the
0.5B model replaced omx's code that kept a checklist's open items, and a CSV filter's rows under its header, by
code that printed the heading alone, and the rows without the header (the run stays done, its value not checked).
Where that step, making the task's exact output, printed nothing from a text that holds something (the 0.5B model
kept the lines that start with ERROR, in a log whose lines start with a date), it is asked for again the same way,
once in a run, told that it printed nothing; an empty result may be right (no line matches), so it stays whatever
the new code prints: the verdict is the checks', as for any run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agent.plan_run.executor import EMPTY_OVERWRITE, NO_CODE, ExecutionResult
from agent.plan_run.plan import Plan, Step
from agent.plan_run.second_program import SECOND_CHECK
from agent.plan_run.task_checks import FROM_THE_TASK, TaskExpectations, told
from agent.plan_run.text_operations import CODE_BY_OMX
from agent.plan_run.tools.inputs import PythonInput, Ref, WriteTextInput
from agent.plan_run.value_checks import value_maker
from agent.record.trace import preview, read_output

__all__ = ["DISAGREED", "EMPTY", "NOTHING", "CodeAtFault", "code_at_fault", "disagreed_code", "empty_code"]

#: what the model is told of code whose value a second program did not print
DISAGREED = (
    "Code written for this step before, and another program written apart for the same task, printed different "
    "results: one of them is wrong. Write this step's code again, with care."
)

#: what the model is told of code that printed nothing from a text that holds something
EMPTY = (
    "Code written for this step before printed nothing, although INPUT holds text: look again at how the lines of "
    "INPUT are written (see how it begins) and write this step's code again."
)

#: what the model is told of a step that had no code, or whose code printed nothing where a file held text
NOTHING = "Code written for this step before printed nothing, or there was none: write this step's code again."


@dataclass(frozen=True)
class CodeAtFault:
    """The python ``step`` whose code made the run fail, and ``failure``: what the model is told of it."""

    step: Step
    failure: str


def code_at_fault(
    plan: Plan, result: ExecutionResult, run_dir: Path, expected: TaskExpectations | None
) -> CodeAtFault | None:
    """The python step of ``plan`` whose code made ``result`` fail (see the module), or None."""
    if not _runs_again(plan, result.failed_step):
        return None
    steps = {step.id: step for step in plan.steps}
    if result.failed_step is not None:
        step = steps.get(result.failed_step)
        outcome = next((o for o in result.steps if o.step_id == result.failed_step), None)
        if step is None or outcome is None:
            return None
        if outcome.error_type == EMPTY_OVERWRITE and isinstance(step.inputs, WriteTextInput):
            maker = steps.get(step.inputs.content.step_id) if isinstance(step.inputs.content, Ref) else None
            if maker is None or not isinstance(maker.inputs, PythonInput):
                return None
            return CodeAtFault(maker, _nothing(maker, run_dir))
        if not isinstance(step.inputs, PythonInput):
            return None
        if outcome.error_type == NO_CODE:
            return CodeAtFault(step, NOTHING)
        return CodeAtFault(step, f"Code written for this step before failed: {outcome.error}")
    unmet = [c for c in result.criteria if c.status == "not met" and c.criterion.endswith(FROM_THE_TASK)]
    # the task's output is prose in a shape (at most 20 words, N bullets): code was the wrong tool, not wrong code;
    # the 0.5B model then printed the input whole in every fix, and a whole re-plan may give the work to a model
    exact_output = expected.output if expected is not None and expected.exact else None
    writers = plan.whole_writers(exact_output) if exact_output else []
    step = steps.get(writers[0]) if len(writers) == 1 else None
    if not unmet or step is None or not isinstance(step.inputs, PythonInput):
        return None
    printed = read_output(run_dir, step.id)
    assert expected is not None  # the task's exact output was found above
    wanted = "; ".join(told(c, expected.workspace) for c in unmet)  # never an answer omx computed itself
    shown = f"printed {preview(printed, 300)!r}" if printed.strip() else "printed nothing"
    return CodeAtFault(step, f"Code written for this step before {shown}, which is wrong: {wanted}.")


def disagreed_code(plan: Plan, result: ExecutionResult, expected: TaskExpectations | None) -> CodeAtFault | None:
    """The python step of ``plan`` that made the task's value, where a second program printed another one and the
    plan can run again (see the module); else None."""
    if expected is None or expected.output is None or not _runs_again(plan):
        return None
    if not any(c.criterion == SECOND_CHECK and c.status == "not met" for c in result.criteria):
        return None
    step = value_maker(plan, expected.output)
    if step is None or not isinstance(step.inputs, PythonInput) or CODE_BY_OMX in step.description:
        return None  # omx's code of the operation picked does what it names: asked again, a model's code replaced it
    return CodeAtFault(step, DISAGREED)


def empty_code(
    plan: Plan, result: ExecutionResult, run_dir: Path, expected: TaskExpectations | None
) -> CodeAtFault | None:
    """The python step that made the task's exact output, where every step ran, the output holds nothing, and the
    text the step was given holds something, and the plan can run again (see the module); else None."""
    if expected is None or not expected.exact or expected.output is None or result.status == "failed":
        return None
    step = value_maker(plan, expected.output)
    given = step.inputs.input if step is not None and isinstance(step.inputs, PythonInput) else None
    if step is None or not isinstance(given, Ref) or not _runs_again(plan):
        return None
    try:
        written = (expected.workspace / expected.output).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if written.strip() or not read_output(run_dir, given.step_id).strip():
        return None
    return CodeAtFault(step, EMPTY)


def _nothing(step: Step, run_dir: Path) -> str:
    """What the model is told of ``step``'s code that printed nothing where a file held text: ``EMPTY`` where its
    INPUT held text, else ``NOTHING``."""
    given = step.inputs.input if isinstance(step.inputs, PythonInput) else None
    return EMPTY if isinstance(given, Ref) and read_output(run_dir, given.step_id).strip() else NOTHING


def _runs_again(plan: Plan, failed: int | None = None) -> bool:
    """Whether running ``plan`` again reads what it read the first time: no step that ran (all of them, or those
    before the ``failed`` one) appended, or wrote a file it reads."""
    read = plan.read_paths()
    ran = [s for s in plan.steps if failed is None or s.id < failed]
    writes = [s.inputs for s in ran if isinstance(s.inputs, WriteTextInput)]
    return all(w.mode == "overwrite" and os.path.normpath(w.path) not in read for w in writes)
