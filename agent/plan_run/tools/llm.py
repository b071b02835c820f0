"""The llm tool: one model call on a step's material; its text is the step's output."""

from __future__ import annotations

import re

from agent.model.llm import LLMError
from agent.plan_run.tools.base import ToolContext, ToolResult
from agent.plan_run.tools.inputs import LlmInput

__all__ = ["llm"]

SYSTEM = (
    "You carry out one step of a plan. Do exactly what the instruction asks with the material given and reply "
    "with the result only: no preamble, no explanation, no code fences."
)
FENCE = re.compile(r"^```[\w-]*\n(.*)\n```$", re.DOTALL)


def llm(inputs: LlmInput, ctx: ToolContext) -> ToolResult:
    assert isinstance(inputs.prompt, str) and not hasattr(inputs.input, "ref"), "references are resolved first"
    if ctx.model is None:
        return ToolResult.failure("no model is configured for llm steps", "pass --model (or set OMX_MODEL)", "NoModel")
    content = inputs.prompt if inputs.input is None else f"{inputs.prompt}\n\n---\n{inputs.input}"
    try:
        reply = ctx.model.complete([{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}])
    except LLMError as exc:
        return ToolResult.failure(str(exc), "the model call failed, not the plan", "LLMError", kind=exc.kind,
                                  attempts=exc.attempts, retries=exc.retries)  # fmt: skip
    text = (reply.content or "").strip()
    fenced = FENCE.match(text)
    text = fenced.group(1).strip() if fenced else text
    if not text:
        return ToolResult.failure(
            "the model returned an empty reply",
            "run the plan again, or rephrase the prompt",
            "EmptyReply",
            request_id=reply.request_id,
        )
    return ToolResult(ok=True, output=text + "\n", details={"request_id": reply.request_id, "model": reply.model})
