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

from agent.plan_run.list_form import ListForm, Style, first_sentence, sentences_of
from agent.plan_run.plan import Plan
from agent.plan_run.tools.inputs import LlmInput

__all__ = ["OutputShape", "shape_of", "shaped_step", "shortened"]

#: the longest bullet or line, and word, a shaped reply may hold: without a bound, the 0.5B model wrote one "word"
#: (no space allowed) for 800 s under the one-line title's schema, until the server's own cap failed the request.
#: A pattern says the bound where there is one: llama.cpp's grammar reads a string's pattern and then no maxLength
MAX_LINE, MAX_WORD = 400, 40
#: the most words of a limit asked as one line of words; a text allowed more is asked as prose (and checked)
MOST_LINE_WORDS = 30
#: the most items a list asked for with no count may hold ("then bullet points")
MOST_ITEMS = 8


@dataclass(frozen=True)
class OutputShape:
    """``what`` in words (for the prompt and the trace), the reply's JSON ``schema``, and ``render``, which turns a
    reply of that schema into the output's text (None: the reply does not hold the shape)."""

    what: str
    schema: dict[str, Any] | None  # None: asked in prose, the reply fitted by ``from_prose``
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


def _items(form: ListForm) -> OutputShape:
    """The form's items as an array of strings (exactly its count; 2 to ``MOST_ITEMS`` where it says none), rendered
    as bullets, numbered lines, plain lines, or sentences one after the other."""
    name = {"bullets": "bullets", "sentences": "sentences"}.get(form.style, "items")

    def render(data: dict[str, Any]) -> str | None:
        items = data.get(name)
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            return None
        texts = [text for item in items if (text := _one_line(item).lstrip("-*•# ").strip())]
        if form.style == "sentences":
            sentences = [first_sentence(text) for text in texts]
            return " ".join(text if text[-1] in ".!?" else f"{text}." for text in sentences) or None
        return "\n".join(f"{_mark(form.style, i)}{text}" for i, text in enumerate(texts, 1)) or None

    item = {"type": "string", "minLength": 1, "maxLength": MAX_LINE}
    low, high = (form.count, form.count) if form.count is not None else (2, MOST_ITEMS)
    strings = {"type": "array", "items": item, "minItems": low, "maxItems": high}
    kind = {"bullets": "bullet points", "numbered": "numbered items", "lines": "lines", "sentences": "sentences"}
    said = f"exactly {form.count}" if form.count is not None else f"{low} to {high}"
    return OutputShape(f"{said} {kind[form.style]}", _object(name.title(), name, strings), render)


def _mark(style: Style, index: int) -> str:
    return {"bullets": "- ", "numbered": f"{index}. "}.get(style, "")


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


def _within_words(max_words: int) -> OutputShape:
    """A text of at most ``max_words`` words (an email, a paragraph), asked in prose and shortened to the limit by
    whole sentences, its lines kept (``shortened``). Asked for one string whose pattern ended after the last word
    allowed, the 0.5B model wrote an email as one line; asked for an array of lines, it wrote one line twenty times."""
    return OutputShape(f"a text of at most {max_words} words", None, lambda data: None,
                       lambda reply: shortened(reply, max_words))  # fmt: skip


def shortened(text: str, max_words: int) -> str | None:
    """``text`` within ``max_words`` words: as written where it is; else without the last sentences of its longest
    lines, one at a time (a greeting and a sign-off, lines of their own, are kept); where no line has a sentence to
    spare, its first ``max_words`` words up to the last whole sentence among them."""
    lines = text.strip().splitlines()
    while sum(len(line.split()) for line in lines) > max_words:
        longest = max(range(len(lines)), key=lambda i: len(lines[i].split()))
        sentences = sentences_of(lines[longest])
        if len(sentences) < 2:
            cut = " ".join(text.split()[:max_words])
            end = max(cut.rfind(mark) for mark in ".!?")
            return cut[: end + 1] if end > 0 else cut
        lines[longest] = " ".join(sentences[:-1])
    return "\n".join(lines) or None


def _headed(shape: OutputShape | None, line: str) -> OutputShape:
    """``shape`` (a free text where None) rendered after ``line``, the line the task says the output starts with."""
    inner = shape or OutputShape("a text", _object("Text", "text", {"type": "string", "minLength": 1}),
                                 lambda data: _text(data.get("text")), lambda reply: reply.strip() or None)  # fmt: skip

    def after_line(body: str | None) -> str | None:
        if body is None:
            return None
        rest = body.strip().splitlines()
        while rest and rest[0].strip().lstrip("-*• ") in (line, line.lstrip("# ")):  # the model wrote it too
            rest = rest[1:]
        return "\n".join([line, *rest])

    cut = inner.from_prose
    return OutputShape(f"{inner.what}, after the line {line!r}", inner.schema,
                       lambda data: after_line(inner.render(data)),
                       None if cut is None else lambda reply: after_line(cut(reply)))  # fmt: skip


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def shape_of(
    *, items: ListForm | None, number: bool, max_words: int | None, one_line: bool, first_line: str | None = None
) -> OutputShape | None:
    """The shape of what the task says of its output (``agent.plan_run.task_checks`` reads the task), or None."""
    shape: OutputShape | None
    if items is not None:
        shape = _items(items)
    elif number:
        shape = _number()
    elif one_line or (max_words and max_words <= MOST_LINE_WORDS):
        shape = _line(max_words)
    elif max_words:
        shape = _within_words(max_words)
    else:
        shape = None
    return _headed(shape, first_line) if first_line and not number else shape


def shaped_step(plan: Plan, output: str) -> int | None:
    """The llm step whose whole output a ``write_text`` step writes over ``output`` (the task's output file): the
    step to ask for the shape. None when no single llm step writes it whole (a template, an append, a shell)."""
    llm_steps = {step.id for step in plan.steps if isinstance(step.inputs, LlmInput)}
    writers = plan.whole_writers(output)
    return writers[0] if len(writers) == 1 and writers[0] in llm_steps else None
