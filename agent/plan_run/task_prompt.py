"""The model step that writes the task's output is asked in the person's own words.

A planner paraphrases: the 0.5B model's plan for "a summary of data/README.md to out/summary.md: the first line is
'# Summary', then bullet points" asked its llm step to "Write a summary of the README.md", and the heading was lost.
What the person asked is the task, so the llm step whose whole output is written to the task's one output file is
asked the task itself, in the person's words and nothing else: given the plan's instruction too ("Task: ... Step:
..."), or the material before the instruction, the same model wrote those labels back into its reply, or the
material itself, or one sentence over and over. The step stays in the plan the person confirms, its new prompt
shown.
"""

from __future__ import annotations

from agent.plan_run.plan import Plan
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.tools.inputs import LlmInput

__all__ = ["with_task_words"]


def with_task_words(plan: Plan, task: str, expected: TaskExpectations) -> Plan:
    """``plan`` with the llm step that writes the task's one output asked the task (see the module)."""
    output = expected.output
    if output is None:
        return plan
    for step in [s for s in plan.steps if s.id in plan.whole_writers(output)]:
        inputs = step.inputs
        if isinstance(inputs, LlmInput) and isinstance(inputs.prompt, str) and inputs.prompt != task:
            asked = inputs.model_copy(update={"prompt": task})
            plan = plan.with_step(step.model_copy(update={"inputs": asked}))
    return plan
