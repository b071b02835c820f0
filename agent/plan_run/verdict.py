"""How a run's criteria decide its result (success means checked), and the words of its result line.

- **failed** (exit 1): a criterion is not met, by omx's check or by the model's judgement. A judgement of "not met"
  fails the run although a judgement of "met" cannot make one a success: a false "failed" makes the person look at
  a file the detail names; a false "success" is believed, which is the error this module exists to prevent.
- **success**: every criterion was checked by omx itself and met, at least one of them about what a file holds
  (a second program's value is; that code made the value is not: code that copies its input made it too), the
  task asks for a value, and that value came from code this run ran on its input (``agent.plan_run.value_checks``)
  and a second program, asked for apart, printed it too (``agent.plan_run.second_program``).
- **done_unverified** (exit 0, "done, form checked, value not checked"): every check met, yet the value the task
  asked for (a count, a total, an answer, an exact result) came from no code run on its input, or a second program
  asked for apart did not print it too (``agent.plan_run.second_program``). Two programs that disagree are no
  failure: which of them is wrong is not known. omx's reading of the task (``agent.plan_run.task_checks``) may find
  such a value wrong and ask for another try, but its "met" never makes a success on its own: a reading of the
  task's words is no verification. A run that asks no value (prose: a summary in N bullets, an email of at most N
  words) is "done, form checked, content not checked" when every check met: each check is of a form (N bullets,
  at most N words, a quoted text), which many texts meet, right and wrong, and nothing omx can run checks what a
  text says. Files acted on as omx read the task (``agent.plan_run.file_ops``: moves, copies, deletes, each checked
  on the files) are "done, operations checked, not that the task asks for them": which operations the task asks
  for is the model's reading, and the 0.5B model read "sort the lines of A into B" as a move of A to B.
- **done** (exit 0): nothing failed, and something was not verified: a criterion omx could not check, one only the
  model judged met, or no check of any file's content. The line counts each kind apart.

Why the model's "met" is not a check: the judge is the model that did the work (with a local 0.5B model, the very
one that wrote four bullets for three, or copied a whole source for its TODO comments), asked whether its own
output is right; its "met" is a hint for the person, labelled as such, never the verification "success" promises.
"""

from __future__ import annotations

from typing import Literal

from agent.plan_run.criteria import CriterionCheck

__all__ = ["CONTENT_UNCHECKED", "OPERATIONS_READ", "UNMET_SUGGESTION", "UNVERIFIED_TEXT", "RunStatus", "done_text"]
__all__ += ["run_status", "unmet_error", "unverified_text", "value_to_compare"]

RunStatus = Literal["success", "done_unverified", "done", "failed"]
UNMET_SUGGESTION = "look at the produced files, adjust the plan and run it again"
#: what a done_unverified run's result line says, where the task asked for a value, and where it asked none
UNVERIFIED_TEXT = "form checked, value not checked"
CONTENT_UNCHECKED = "form checked, content not checked"
OPERATIONS_READ = "operations checked, not that the task asks for them"


def run_status(checks: list[CriterionCheck]) -> RunStatus:
    """The result of a run whose every step ran, from what its criteria came to."""
    if any(c.status == "not met" and c.source != "code" for c in checks):
        return "failed"
    values = [c for c in checks if c.source == "code"]  # there when the task asks a value: it came from code, or not
    rest = [c for c in checks if c.source != "code"]
    if not all(c.status == "met" and c.by == "omx" for c in rest):
        return "done"
    # a check of what a file holds: one of the rest, or a second program that printed what the output holds (that
    # code made the value says where it came from, not what the file holds: code that copies its input made it too)
    if not any(c.about_content and c.status == "met" for c in checks):
        return "done"
    # no value asked: prose's forms met say nothing of what it says; operations checked on the files say nothing of
    # whether the task asks for them (the model's reading)
    return "success" if values and all(c.status == "met" for c in values) else "done_unverified"


def value_to_compare(checks: list[CriterionCheck]) -> bool:
    """Whether a run whose every step ran awaits only a second program's value to be a success: every check omx's
    own and met, among them that code run on the input made the task's value (``second_program``)."""
    values = [c for c in checks if c.source == "code"]
    return bool(values) and all(c.status == "met" and c.by == "omx" for c in checks)


def unverified_text(checks: list[CriterionCheck]) -> str:
    """What a done_unverified run's result line says after "done, ": the value not checked, where the task asked
    one (the checks of its code are there); the operations' reading, where it acted on files as omx read the task;
    else the content."""
    if any(c.source == "code" for c in checks):
        return UNVERIFIED_TEXT
    return OPERATIONS_READ if any(c.kind == "value" and c.source == "reading" for c in checks) else CONTENT_UNCHECKED


def unmet_error(checks: list[CriterionCheck]) -> str | None:
    """The error of a failed run: its first criterion not met, and who found it so (two programs that disagree on
    the value fail no run: ``run_status``)."""
    unmet = next((c for c in checks if c.status == "not met" and c.source != "code"), None)
    if unmet is None:
        return None
    by = " (the model's judgement)" if unmet.by == "model" else ""
    return f"success criterion not met{by}: {unmet.criterion} ({unmet.detail})"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def done_text(checks: list[CriterionCheck]) -> str:
    """What a run that is done but not verified left so: "1 criterion not checked, 1 met only by the model's
    judgement (2 met)"; the number in brackets is of those omx checked itself."""
    if not checks:
        return "no success criteria to check"
    unverified = any(c.source == "code" and c.status != "met" for c in checks)
    checks = [c for c in checks if c.source != "code"]
    unchecked = sum(1 for c in checks if c.status == "not checked")
    judged = sum(1 for c in checks if c.status == "met" and c.by == "model")
    met = sum(1 for c in checks if c.status == "met" and c.by == "omx")
    if not unchecked and not judged:  # every check met, none of them about what the files hold
        return "only that the output was written is checked, not what it holds"
    parts = [_count(unchecked, "criterion not checked", "criteria not checked")] if unchecked else []
    if judged and unchecked:  # "2 criteria not checked, 1 met only by the model's judgement"
        parts.append(f"{judged} met only by the model's judgement")
    elif judged:
        parts.append(_count(judged, "criterion", "criteria") + " met only by the model's judgement")
    parts += ["value not checked"] if unverified else []
    return ", ".join(parts) + (f" ({met} met)" if met else "")
