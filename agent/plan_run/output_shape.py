"""The shape the task gives its output, asked of the llm step that writes it.

The 0.5B model's llm steps wrote 4-7 bullets when the task said 2, 3 or 5, a sentence around "just the number",
and several lines where the task said one line of at most N words; omx's checks (``agent.plan_run.task_checks``)
caught each, and the run failed. Where the task says such a shape of its one output file and a single llm step
writes that file whole, that step is asked for a JSON object whose schema holds the shape (an array of exactly N
strings, a number, a string of at most N words on one line), which a server that constrains decoding (llama.cpp,
vLLM, Ollama, OpenAI) cannot leave; omx renders it as the text the task asked for (N ``- `` lines, the number).
A server without JSON schemas is asked in JSON mode with the shape in the prompt (``agent.model.schema_request``);
a reply that is not the object is kept as text. Either way the task's checks still judge the file: the shape is
how the step is asked, never a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.plan_run.plan import Plan
from agent.plan_run.tools.inputs import LlmInput

__all__ = ["OutputShape", "shape_of", "shaped_step"]

#: the longest bullet or line, and word, a shaped reply may hold: without a bound, the 0.5B model wrote one "word"
#: (no space allowed) for 800 s under the one-line title's schema, until the server's own cap failed the request.
#: A pattern says the bound where there is one: llama.cpp's grammar reads a string's pattern and then no maxLength
MAX_LINE, MAX_WORD = 400, 40
#: the most words of a limit asked as one line of words; a text allowed more is asked as prose (and checked)
MOST_LINE_WORDS = 30


@dataclass(frozen=True)
class OutputShape:
    """``what`` in words (for the prompt and the trace), the reply's JSON ``schema``, and ``render``, which turns a
    reply of that schema into the output's text (None: the reply does not hold the shape)."""

    what: str
    schema: dict[str, Any]
    render: Callable[[Any], str | None]
    #: a reply in prose instead of the object, made the shape where that is only a cut (one line, at most N words):
    #: the shape a schema would have held it to, for a server that answered without it
    from_prose: Callable[[str], str | None] | None = None

    def text(self, reply: str) -> str | None:
        """The output's text from the model's ``reply``, or None when the reply is not a JSON object of the shape."""
        try:
            data = json.loads(reply)
        except json.JSONDecodeError:
            start, end = reply.find("{"), reply.rfind("}")
            try:
                data = json.loads(reply[start : end + 1]) if 0 <= start < end else None
            except json.JSONDecodeError:
                return None
        return self.render(data) if isinstance(data, dict) else None

    def instruction(self) -> str:
        """The shape as the prompt says it, for a server that takes JSON mode but no schema."""
        return f"Reply with one JSON object of this JSON schema, nothing else ({self.what}): {json.dumps(self.schema)}"


def _object(title: str, name: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"title": title, "type": "object", "properties": {name: value}, "required": [name],
            "additionalProperties": False}  # fmt: skip


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _first_line(text: str) -> str | None:
    """The first line of a reply with words in it, without the marks of a heading, a bullet or quotes."""
    for line in text.splitlines():
        words = _one_line(line.strip().lstrip("#-*• ").strip().strip('"'))
        if words:
            return words
    return None


def _bullets(count: int) -> OutputShape:
    def render(data: dict[str, Any]) -> str | None:
        items = data.get("bullets")
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            return None
        lines = [_one_line(item).lstrip("-*• ").strip() for item in items]
        return "\n".join(f"- {line}" for line in lines if line) or None

    bullet = {"type": "string", "minLength": 1, "maxLength": MAX_LINE}
    strings = {"type": "array", "items": bullet, "minItems": count, "maxItems": count}
    return OutputShape(f"exactly {count} bullet points", _object("Bullets", "bullets", strings), render)


def _number() -> OutputShape:
    def render(data: dict[str, Any]) -> str | None:
        value = data.get("number")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return str(int(value)) if float(value).is_integer() else str(value)

    return OutputShape("just the number", _object("Number", "number", {"type": "number"}), render)


def _line(max_words: int | None) -> OutputShape:
    """One line; with ``max_words``, asked word by word (an array of at most that many words), so that decoding
    ends the line after the last word allowed instead of running words together to stay within a pattern."""
    if max_words is None:

        def render_text(data: dict[str, Any]) -> str | None:
            value = data.get("text")
            return (_one_line(value) or None) if isinstance(value, str) else None

        text = {"type": "string", "pattern": f"^[^\\n]{{1,{MAX_LINE}}}$"}
        return OutputShape("one line", _object("Line", "text", text), render_text, _first_line)

    def render_words(data: dict[str, Any]) -> str | None:
        value = data.get("words")
        if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
            return None
        # at most max_words items, as the schema says: llama.cpp let the 0.5B model's array run on to 20
        return _one_line(" ".join(value[:max_words])) or None

    def words_of_prose(reply: str) -> str | None:
        line = _first_line(reply)
        return " ".join(line.split()[:max_words]) if line else None

    word = {"type": "string", "pattern": f"^[^ \\n]{{1,{MAX_WORD}}}$"}
    words = {"type": "array", "items": word, "minItems": 1, "maxItems": max_words}
    return OutputShape(f"one line of at most {max_words} words, one word per item", _object("Words", "words", words),
                       render_words, words_of_prose)  # fmt: skip


def shape_of(*, bullets: int | None, number: bool, max_words: int | None, one_line: bool) -> OutputShape | None:
    """The shape of what the task says of its output (``agent.plan_run.task_checks`` reads the task), or None."""
    if bullets:
        return _bullets(bullets)
    if number:
        return _number()
    if one_line or (max_words and max_words <= MOST_LINE_WORDS):
        return _line(max_words)
    return None  # a longer text (an email of at most 80 words) is not one line: its limit is checked, not asked


def shaped_step(plan: Plan, output: str) -> int | None:
    """The llm step whose whole output a ``write_text`` step writes over ``output`` (the task's output file): the
    step to ask for the shape. None when no single llm step writes it whole (a template, an append, a shell)."""
    llm_steps = {step.id for step in plan.steps if isinstance(step.inputs, LlmInput)}
    writers = plan.whole_writers(output)
    return writers[0] if len(writers) == 1 and writers[0] in llm_steps else None
