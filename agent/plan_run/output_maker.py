"""The tool that makes the task's output: code for exact work, a model for prose.

The 0.5B model planned an ``llm`` step to count the lines or words of a file, to count TODO comments, to pick the
lines with WARN and to merge two files; the model then miscounted (5 lines for 4, 15 words for 13) or wrote prose,
and its two re-plans returned the same plan, told each time that exact work is a python step's. Where the task's
one output is an exact text computed from an input (``TaskExpectations.exact``: the model read the task as exact
work, and the task has an input to compute from), an llm step whose whole output is written to that file is made
a python step, and its code is asked for by the focused request of ``agent.plan_run.code_steps`` (the task, the
step, what INPUT holds); the same model wrote working counting and filtering code that way. If no working code
comes back, the llm step stays as planned. omx's rules do not say a task is exact work: they read only the
output's form (N bullets, just a number), which prose has as much as code.

The other way round, the same model answered "Describe data/sales.csv in 2 bullet points" and "the single most
important decision ... as one line (at most 20 words)" with a python step (the planner's example, reversing lines,
or code printing the input whole), also in every re-plan. Where the task gives its output prose's shape and asks
neither an exact text nor a value (a count, a total, an answer), a python step whose whole output is written to
it, and that is given the material as its input, is made an llm step that is asked the task itself, in its shape
(``output_shape``).

Each new step is in the plan the person confirms, its description says omx made it, and its risk is assessed like
any other step's (a python step's is MEDIUM: it is asked).
"""

from __future__ import annotations

from agent.plan_run.code_steps import Ask, working_code
from agent.plan_run.plan import LlmStep, Plan, PythonStep, Step
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.tools.inputs import LlmInput, PythonInput, ReadTextInput, Ref

__all__ = ["with_code_for_exact_work", "with_model_for_prose"]


def with_code_for_exact_work(plan: Plan, task: str, expected: TaskExpectations, ask: Ask) -> Plan:
    """``plan`` with the llm step that writes the task's exact output made a python step (see the module)."""
    if not expected.exact or expected.output is None:
        return plan
    writers = set(plan.whole_writers(expected.output))
    for step in [s for s in plan.steps if s.id in writers and isinstance(s.inputs, LlmInput)]:
        code_step = _as_code(plan, step)
        written = working_code(plan.with_step(code_step), code_step, task, ask)
        if written is not None:
            plan = plan.with_step(written)
    return plan


def _as_code(plan: Plan, step: Step) -> PythonStep:
    """llm ``step`` as a python step with no code yet. It keeps the llm step's input, unless a file the plan reads
    reaches no step (merging a.txt and b.txt, the model gave the llm a.txt alone): then the code reads the files."""
    assert isinstance(step.inputs, LlmInput)
    given = step.inputs.input
    used = {ref.step_id for later in plan.steps for ref in later.inputs.refs() if later.id != step.id}
    unread = [s for s in plan.steps if isinstance(s.inputs, ReadTextInput) and s.id not in used]
    if isinstance(given, Ref) and any(s.id != given.step_id for s in unread):
        given = None
    prompt = step.inputs.prompt if isinstance(step.inputs.prompt, str) else step.description
    return PythonStep(
        id=step.id,
        tool="python",
        description=f"{prompt} (python by omx: the task wants an exact result, which code computes and a model "
        "guesses)",
        inputs=PythonInput(code="", input=given),
        produces=step.produces,
    )


def with_model_for_prose(plan: Plan, task: str, expected: TaskExpectations) -> Plan:
    """``plan`` with the python step that writes the task's prose output, given its material, made an llm step
    asked the task (see the module)."""
    if expected.shape is None or expected.exact or expected.value_asked or expected.output is None:
        return plan  # a number asked for is a value, which code computes and a model guesses: no prose
    writers = set(plan.whole_writers(expected.output))
    for step in [s for s in plan.steps if s.id in writers]:
        inputs = step.inputs
        if isinstance(inputs, PythonInput) and isinstance(inputs.input, Ref):
            plan = plan.with_step(
                LlmStep(
                    id=step.id,
                    tool="llm",
                    description=f"{task} (llm by omx: the task wants prose of a shape, which a model writes and code "
                    "cannot)",
                    inputs=LlmInput(prompt=task, input=inputs.input),
                    produces=step.produces,
                )
            )
    return plan
