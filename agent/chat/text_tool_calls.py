"""Tool calls written as text: what many local models served by llama.cpp or Ollama send instead of ``tool_calls``.

A reply is read as tool calls only when it is nothing else, so that prose which merely contains braces or JSON stays
an answer. The formats understood, the whole reply minus surrounding whitespace:

1. One JSON object ``{"name": "python", "arguments": {"code": "print(42)"}}`` (``"parameters"`` is read as
   ``"arguments"``, as Llama 3.1's template writes it); the arguments are an object or the JSON text of one.
2. Several of them: a JSON array of such objects, or such objects one after the other.
3. Either of the above inside one Markdown code fence (```````` ``` ```` or ```` ```json ````).
4. Qwen's and Hermes' tags, ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``, one or more, with any text
   around them (the model's reasoning); a reply that starts with the opening tag and lost its closing one (cut off
   by a token limit) counts too. Inside a tag the model has said it is calling a tool, so a body that is not
   a call is reported back to it (``TextCall.problem``) rather than read as an answer.

An object counts as a call only with a string ``name``, an ``arguments`` (or ``parameters``) member, and no member
beyond ``id`` and ``type``: ``{"name": "Ada", "age": 36}`` is an answer. Whether the name is a known tool is not
decided here: the caller runs the calls through its tools, and an unknown name becomes an error the model sees.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["TextCall", "parse_text_tool_calls"]

_FENCE = re.compile(r"\A```[A-Za-z]*[ \t]*\n(?P<body>.*?)\n?```\Z", re.DOTALL)
_TAG = re.compile(r"<tool_call>(?P<body>.*?)</tool_call>", re.DOTALL)
_OPEN_TAG = "<tool_call>"
_ARGUMENT_KEYS = ("arguments", "parameters")
_ALLOWED_KEYS = {"name", "id", "type", *_ARGUMENT_KEYS}


@dataclass(frozen=True)
class TextCall:
    """One call read from text: the tool's name and its arguments as JSON text (as a native call carries them).

    ``problem`` is set, and ``name`` may be empty, when a ``<tool_call>`` tag held something that is not a call:
    the model meant to call a tool and should hear what was wrong.
    """

    name: str
    arguments: str
    problem: str | None = None


def parse_text_tool_calls(text: str) -> list[TextCall] | None:
    """The calls ``text`` consists of, in order, or None when it is an answer (see the module docstring)."""
    stripped = text.strip()
    if not stripped:
        return None
    tagged = [_tagged(match.group("body")) for match in _TAG.finditer(stripped)]
    if tagged:
        return tagged
    if stripped.startswith(_OPEN_TAG):  # a reply cut off before its closing tag (max_tokens) is still a call
        return [_tagged(stripped.removeprefix(_OPEN_TAG))]
    fence = _FENCE.match(stripped)
    body = fence.group("body").strip() if fence else stripped
    if not body.startswith(("{", "[")):
        return None
    values = _json_values(body)
    if values is None:
        return None
    objects: list[Any] = values[0] if len(values) == 1 and isinstance(values[0], list) else values
    calls = [_call(value) for value in objects]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _json_values(text: str) -> list[Any] | None:
    """The JSON values ``text`` is made of, one after the other with whitespace between; None if it is not that."""
    decoder = json.JSONDecoder()
    values, at = [], 0
    while at < len(text):
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return None
        values.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return values


def _call(value: Any) -> TextCall | None:
    """The call ``value`` is, or None when it is some other JSON (an answer that happens to be JSON)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"].strip():
        return None
    if set(value) - _ALLOWED_KEYS:
        return None
    present = [key for key in _ARGUMENT_KEYS if key in value]
    if len(present) != 1:
        return None
    arguments = value[present[0]]
    if isinstance(arguments, str):
        return TextCall(value["name"].strip(), arguments)  # the JSON text of the arguments, checked by the caller
    if isinstance(arguments, dict):
        return TextCall(value["name"].strip(), json.dumps(arguments, ensure_ascii=False))
    return None


def _tagged(body: str) -> TextCall:
    """The call inside one ``<tool_call>`` tag; arguments may be left out (a tool without any)."""
    inner = body.strip()
    fence = _FENCE.match(inner)
    inner = fence.group("body").strip() if fence else inner
    try:
        value = json.loads(inner)
    except json.JSONDecodeError as exc:
        return TextCall("", "", f"the <tool_call> tag does not hold valid JSON ({exc.msg} at character {exc.pos})")
    if isinstance(value, dict) and not any(key in value for key in _ARGUMENT_KEYS):
        value = {**value, "arguments": {}}
    call = _call(value)
    if call is None:
        return TextCall("", "", 'the <tool_call> tag must hold one JSON object {"name": ..., "arguments": {...}}')
    return call
