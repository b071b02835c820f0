"""The model step that writes the task's output is asked in the person's own words.

A planner paraphrases: the 0.5B model's plan for "a summary of data/README.md to out/summary.md: the first line is
'# Summary', then bullet points" asked its llm step to "Write a summary of the README.md", and the heading was lost.
What the person asked is the task, so the llm step whose whole output is written to the task's one output file is
asked the task itself, in the person's words and nothing else: given the plan's instruction too ("Task: ... Step:
..."), or the material before the instruction, the same model wrote those labels back into its reply, or the
material itself, or one sentence over and over. Only the words that say where the output goes are left out
(``task_words``): the plan's write step puts it there. The step stays in the plan the person confirms, its new
prompt shown.
"""

from __future__ import annotations

import re

from agent.plan_run.plan import Plan
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.tools.inputs import LlmInput

__all__ = ["task_words", "with_task_words"]

#: the words before an output's path that say where the text goes: ", saved as", "and put it in", "Answer in", "->"
_WHERE = (
    r"(?:\s*(?:->|=>|\u2192)\s*|(?:,\s*|\s+)(?:and\s+|then\s+)*(?:(?:save[sd]?|saving|write|written|writing|put|"
    r"store[sd]?|place[sd]?|answer|note|record|output|keep|kept)\s+(?:(?:it|this|that|them|the\s+\w+|"
    r"just\s+(?:it|the\s+\w+)|only\s+(?:it|the\s+\w+))\s+)?)?(?:in|into|to|as|at|under)\s+(?:the\s+file\s+)?)"
)
#: the fewest words a task keeps once where its output goes is left out (fewer: the task is asked whole)
_FEWEST = 3


def task_words(task: str, output: str) -> str:
    """``task`` without the words that say where its ``output`` goes ("Suggest a title for reports/q3.txt and put
    it in out/title.txt" is "Suggest a title for reports/q3.txt"): asked with them, the 0.5B model answered
    "out/when.txt" to "By when must the engineers be hired? Answer in out/when.txt", and a report itself for its
    title; the step's text is written there by the plan, not by the model. The task whole where its output is not
    named after such words, or too little of it is left."""
    where = re.compile(rf"{_WHERE}`?{re.escape(output)}`?(?![\w/-]|\.\w)", re.IGNORECASE)
    left = where.sub("", task).strip()
    left = re.sub(r"\s+([.?!,;:])", r"\1", left).rstrip(",;: ")
    return left if left != task.strip() and len(left.split()) >= _FEWEST else task


def with_task_words(plan: Plan, task: str, expected: TaskExpectations) -> Plan:
    """``plan`` with the llm step that writes the task's one output asked the task (see the module)."""
    output = expected.output
    if output is None:
        return plan
    words = task_words(task, output)
    for step in [s for s in plan.steps if s.id in plan.whole_writers(output)]:
        inputs = step.inputs
        if isinstance(inputs, LlmInput) and isinstance(inputs.prompt, str) and inputs.prompt != words:
            asked = inputs.model_copy(update={"prompt": words})
            plan = plan.with_step(step.model_copy(update={"inputs": asked}))
    return plan
