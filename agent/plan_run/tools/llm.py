"""The llm tool: one model call on a step's material; its text is the step's output.

With a ``shape`` (``agent.plan_run.output_shape``: the task said "3 bullets", "just the number", "one line"), the
reply is asked as a JSON object of the shape's schema and rendered as the text the task asked for; a reply that is
not that object (a server that took neither the schema nor JSON mode) is kept as the model wrote it. A shape with no
schema (a text of at most N words) is asked in prose and the reply fitted to it. A reply that repeats the text the
step was given, whole or most of it (the 0.5B model's "title" of a report was the report), or, where the step asks
for composed wording (a limerick, an email, a summary), is mostly that text's lines again, is asked for once more,
the text first and the instruction after it, without the step's instructions (told that its reply repeated the
text, or asked with the text last, the same model repeated it again); the second reply is kept where it does not
repeat it too, and the trace says which.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

from agent.model.llm import LLMError, ModelReply
from agent.model.schema_request import complete_with_schema
from agent.plan_run.task_reading import asks_composed
from agent.plan_run.tools.base import ToolContext, ToolResult
from agent.plan_run.tools.inputs import LlmInput

if TYPE_CHECKING:
    from agent.plan_run.output_shape import OutputShape

__all__ = ["llm"]

#: the step's instructions: short, and ending on what to reply. Told "reply with the result only: no preamble, no
#: explanation, no code fences", the 0.5B model replied "no preamble, no explanation, no code fences." to an
#: upper-casing and a merge (its fences are taken off the reply below anyway)
SYSTEM = (
    "You carry out one step of a plan: do what the instruction asks with the text given. Reply with the resulting "
    "text only."
)
FENCE = re.compile(r"^```[\w-]*\n(.*)\n```$", re.DOTALL)
#: a fenced block inside a reply, and a fence line alone
BLOCK = re.compile(r"^```[\w-]*\n(.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE)
FENCE_LINE = re.compile(r"^```[\w-]*[ \t]*$")
#: a placeholder left in a text to fill in: "[Your Name]", "[customer's name]", "[Date]"; not a link, a checkbox or a
#: footnote
PLACEHOLDER = re.compile(
    r"\[(?=[^\]\n]*\b(?:your|name|date|insert|recipient|customer|client|company|sender|address|phone|email|"
    r"signature|title|position|contact)\b)[A-Za-z][^\]\n]{1,40}\](?!\()",
    re.IGNORECASE,
)
#: the shortest text given whose repetition is taken for an echo (a short text may well be its own answer)
ECHO_MIN = 40
#: the longest text given that a reply is compared with piece by piece (the comparison grows with its square)
COPY_MAX = 6000
#: the shortest run of characters taken as copied from the text given, not as words both happen to use
COPY_RUN = 12


def llm(inputs: LlmInput, ctx: ToolContext, shape: OutputShape | None = None) -> ToolResult:
    assert isinstance(inputs.prompt, str) and not hasattr(inputs.input, "ref"), "references are resolved first"
    if ctx.model is None:
        return ToolResult.failure("no model is configured for llm steps", "pass --model (or set OMX_MODEL)", "NoModel")
    prompt = inputs.prompt if shape is None or shape.schema is None else f"{inputs.prompt}\n{shape.instruction()}"
    content = prompt if inputs.input is None else f"{prompt}\n\n---\n{inputs.input}"
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]
    asked_plainly = False
    try:
        if shape is None or shape.schema is None:
            reply = ctx.model.complete(messages)
        else:
            try:
                reply = complete_with_schema(ctx.model, messages, shape.schema)
            except LLMError as exc:
                if not exc.unreadable_reply:
                    raise
                # llama.cpp with the 0.5B model: a title's words ran past the schema and the server failed the
                # request; asked again without it (the shape is still in the prompt) it answered
                reply, asked_plainly = ctx.model.complete(messages), True
    except LLMError as exc:
        return ToolResult.failure(str(exc), "the model call failed, not the plan", "LLMError", kind=exc.kind,
                                  attempts=exc.attempts, retries=exc.retries)  # fmt: skip
    text = _unfenced(reply.content)
    details: dict[str, Any] = {"request_id": reply.request_id, "model": reply.model}
    schema = shape.schema if shape is not None else None
    rendered = shape.text(text) if shape is not None and schema is not None else None
    composed = asks_composed(prompt)
    if inputs.input and _echoes(rendered or text, inputs.input, composed=composed):
        again = [{"role": "user", "content": f"{inputs.input}\n\n{prompt}"}]
        try:  # the text first, the instruction last, no instructions of the step's: the 0.5B model then answered
            second = complete_with_schema(ctx.model, again, schema) if schema else ctx.model.complete(again)
        except LLMError:
            second = None
        fresh = _unfenced(second.content) if second is not None else ""
        as_shape = shape.text(fresh) if shape is not None and schema is not None else fresh
        if second is not None and as_shape and not _echoes(as_shape, inputs.input, composed=composed):
            text, reply = fresh, second
            details |= {"request_id": reply.request_id, "echo": "the first reply repeated the text given; asked again"}
        else:
            details["echo"] = "the reply repeats the text given, also when asked again"
    if composed and schema is None and (found := PLACEHOLDER.search(text)):
        text, reply, details["placeholder"] = _filled(ctx, messages, reply, text, found.group())
    if shape is not None:
        text, details["shape"] = _shaped(text, shape)
        if asked_plainly:
            details["shape"] += " (asked again without the schema: the server could not read its reply to it)"
    if not text:
        return ToolResult.failure(
            "the model returned an empty reply",
            "run the plan again, or rephrase the prompt",
            "EmptyReply",
            request_id=reply.request_id,
        )
    return ToolResult(ok=True, output=text + "\n", details=details)


def _filled(
    ctx: ToolContext, messages: list[dict[str, str]], reply: ModelReply, text: str, found: str
) -> tuple[str, ModelReply, str]:
    """The text of a reply that holds the placeholder ``found``, asked for once more, and what the trace says of it:
    the second reply where it holds none; else the first, without its lines that are only a placeholder."""
    assert ctx.model is not None
    told = (f"Your text holds a placeholder to fill in, {found}. Write it again, ready to use as it is, with no "
            "placeholder: leave out what you do not know.")  # fmt: skip
    again = [*messages, {"role": "assistant", "content": reply.content or ""}, {"role": "user", "content": told}]
    try:
        second = ctx.model.complete(again)
    except LLMError:
        second = None
    fresh = _unfenced(second.content) if second is not None else ""
    if second is not None and fresh and not PLACEHOLDER.search(fresh):
        return fresh, second, f"the first reply held {found}; asked again"
    kept = [line for line in text.split("\n") if not (line.strip() and not PLACEHOLDER.sub("", line).strip(" ,.-"))]
    return (
        "\n".join(kept).strip(),
        reply,
        f"the reply held {found}, also when asked again: its lines of placeholders left out",
    )


def _unfenced(content: str | None) -> str:
    """A reply's text, without the code fences around it: where it is one fenced block, that block; where it
    announces one ("Below is the updated file:", a line or two ending with a colon) and holds one, that block, with
    no explanation after it; where it opens or closes a fence it never closes or opens (the 0.5B model ended an
    edited Python file with a lone fence line), without that line."""
    text = (content or "").strip()
    fenced = FENCE.match(text)
    if fenced:
        return fenced.group(1).strip()
    blocks: list[str] = BLOCK.findall(text)
    before = text[: text.find("```")].strip()
    if len(blocks) == 1 and before.endswith(":") and before.count("\n") < 2:
        return blocks[0].strip()
    lines = text.split("\n")
    if text.count("```") == 1 and FENCE_LINE.match(lines[-1]):
        return "\n".join(lines[:-1]).strip()
    if text.count("```") == 1 and FENCE_LINE.match(lines[0]):
        return "\n".join(lines[1:]).strip()
    return text


def _echoes(reply: str, given: str, *, composed: bool = False) -> bool:
    """Whether ``reply`` repeats the text the step was ``given`` (of 40 characters or more) whole, or is most of it
    (whitespace and case aside): asked for a title of a report, the 0.5B model replied with the report. Where the
    step asks for ``composed`` wording, also a reply (as its shape renders it) made mostly of runs of the text
    (``COPY_RUN`` characters or more) that hold most of it: asked for a limerick about a van, the same model
    returned the van's description with its first words cut. An extract of a longer text (a summary's sentences
    picked from it) holds too little of it to be one."""
    said, text = " ".join(reply.lower().split()), " ".join(given.lower().split())
    if len(text) < ECHO_MIN:
        return False
    if text in said or (len(said) >= 0.8 * len(text) and said in text):
        return True
    if not composed or len(text) > COPY_MAX or not said:
        return False
    blocks = SequenceMatcher(None, said, text, autojunk=False).get_matching_blocks()
    copied = sum(block.size for block in blocks if block.size >= COPY_RUN)
    return copied >= 0.7 * len(said) and copied >= 0.6 * len(text)


def _shaped(text: str, shape: OutputShape) -> tuple[str, str]:
    """The reply rendered in the task's shape, and what the trace says of it; the reply as written if it is not
    the shape's JSON object (the task's checks judge it then, as any other output); a shape asked in prose (no
    schema) is fitted from the reply."""
    if shape.schema is None:
        fitted = shape.from_prose(text) if shape.from_prose else None
        if fitted is None or fitted == text:
            return text, f"{shape.what}, asked in prose: the reply is kept as written"
        return fitted, f"{shape.what}, asked in prose: the reply was fitted to it"
    rendered = shape.text(text)
    cut = shape.from_prose(text) if rendered is None and shape.from_prose else None
    if cut:
        return cut, f"asked for {shape.what}; the reply was not of its schema: its first line, cut to the shape"
    if rendered is None:
        return text, f"asked for {shape.what}; the reply was not of its schema and is kept as written"
    return rendered, f"asked for {shape.what} (JSON schema), rendered as text"
