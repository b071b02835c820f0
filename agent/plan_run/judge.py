"""The model's judgement of the success criteria omx cannot check itself (issue 28), one request per criterion.

A criterion such as "out/todo.md lists only TODO comments" is no pattern ``agent.plan_run.criteria`` reads, yet it
is about a file the run wrote. The model is given the task, the criterion and the file's whole content (at most
``MAX_JUDGED_CHARS``: a judgement on part of a file would be a guess about the rest) and asked for met or not met.
Its answer is labelled as the model's judgement wherever it is shown (``CriterionCheck.by``), and what it counts
for is ``agent.plan_run.verdict``'s to say. A criterion the model is not asked about, or whose answer cannot be
read, or whose request fails, stays "not checked": the run's record is never lost to its judge.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agent.model.llm import LLMError, Model
from agent.plan_run.criteria import CriterionCheck
from agent.plan_run.executor import ExecutionResult
from agent.plan_run.verdict import UNMET_SUGGESTION, run_status, unmet_error
from agent.record.trace import RecordingModel

__all__ = ["JUDGE_PROMPT", "MAX_JUDGED", "MAX_JUDGED_CHARS", "judge_criteria", "judged"]

MAX_JUDGED_CHARS = 8_000  # about 2,000 tokens: what a small local model's context holds beside the question
MAX_JUDGED = 3  # requests per run at most: each is seconds to a minute with a local model
JUDGE_PROMPT = """You check whether a file meets one success criterion of a task.
Read the file's content and decide from it alone. Reply with one JSON object and nothing else:
{"met": true or false, "reason": "one short sentence that says what in the file decides it"}"""


def judge_criteria(
    checks: list[CriterionCheck], task: str | None, workspace: Path, model: Model
) -> list[CriterionCheck]:
    """``checks`` with each judgeable one (at most ``MAX_JUDGED``) replaced by the model's judgement of it."""
    judged: list[CriterionCheck] = []
    asked = 0
    for check in checks:
        if check.judgeable and check.file is not None and asked < MAX_JUDGED:
            asked += 1
            check = _judge(check, task, workspace / check.file, model)
        judged.append(check)
    return judged


def _unjudged(check: CriterionCheck, why: str) -> CriterionCheck:
    return check.model_copy(update={"detail": f"{check.detail}; not judged: {why}"})


def _judge(check: CriterionCheck, task: str | None, path: Path, model: Model) -> CriterionCheck:
    try:
        if path.stat().st_size > MAX_JUDGED_CHARS * 4:
            return _unjudged(check, f"{check.file} is too big to show the model")
        content = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return _unjudged(check, f"{check.file} cannot be read ({exc.strerror or exc})")
    if len(content) > MAX_JUDGED_CHARS:
        return _unjudged(check, f"{check.file} is too big to show the model")
    question = (f"Task: {task}\n" if task else "") + (
        f"Criterion: {check.criterion}\n\nThe file {check.file} holds ({len(content.splitlines())} lines):\n"
        f"<<<\n{content}\n>>>\n\nIs the criterion met by this file?"
    )
    messages = [{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": question}]
    if isinstance(model, RecordingModel):
        model.purpose, model.step_id = "judge", None
    try:
        reply = model.complete(messages, json_mode=True)
    except LLMError as exc:
        return _unjudged(check, f"the model's request failed ({str(exc).splitlines()[0]})")
    verdict = _read_verdict(reply.content or "")
    if verdict is None:
        return _unjudged(check, "the model's answer was not met or not met")
    met, reason = verdict
    return check.model_copy(
        update={"status": "met" if met else "not met", "by": "model", "detail": reason or "no reason given"}
    )


def _read_verdict(content: str) -> tuple[bool, str] | None:
    """``{"met": true|false, "reason": ...}`` from the reply (in a code fence too); None where it says neither."""
    text = content.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    text = fenced.group(1) if fenced else text
    start, end = text.find("{"), text.rfind("}")
    if not 0 <= start < end:
        return None
    try:
        data: Any = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    met = data.get("met")
    if isinstance(met, str) and met.strip().lower() in ("true", "yes", "met", "false", "no", "not met"):
        met = met.strip().lower() in ("true", "yes", "met")
    if not isinstance(met, bool):
        return None
    reason = data.get("reason")
    return met, " ".join(str(reason).split())[:200] if reason is not None else ""


def judged(result: ExecutionResult, task: str | None, workspace: Path, model: Model) -> ExecutionResult:
    """A run that is done but not verified, with the model's judgement of what omx could not check, and its
    status, error and suggestion decided again from it (``agent.plan_run.verdict``). A failed run is left as it is:
    a step failed or a criterion was checked and not met, and no judgement changes that."""
    if result.status != "done" or not any(c.judgeable for c in result.criteria):
        return result
    checks = judge_criteria(result.criteria, task, workspace, model)
    status = run_status(checks)
    return result.model_copy(
        update={
            "criteria": checks,
            "status": status,
            "error": unmet_error(checks),
            "suggestion": UNMET_SUGGESTION if status == "failed" else None,
        }
    )
