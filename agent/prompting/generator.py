"""The prompt generator: a ``PromptObject`` as one text or as chat messages (seed 002 §6 to_text / to_messages).

The main prompt is a fixed sequence of labelled sections, each ``[LABEL]:`` on its own line and separated by one
blank line, so a model (and a person reading a trace) always finds the same part in the same place::

    [INFO]:            background facts
    [INSTRUCT]:        what to do
    [ACTION RESULTS]:  what the tools returned (the tool loop adds this)
    [INPUT]:           the request itself
    [OUTPUT REQUIREMENT]:
    Data Format: JSON
    Data Structure:    the output schema, one "// description" per field
    [OUTPUT]:          an empty section: the model's answer comes next

A prompt with nothing but an input is sent as the input alone: a plain chat turn needs no scaffolding (in
``to_text`` only without a history, where it would read as part of the history).
``to_text`` puts everything in one ``user:`` block, the chat history first as ``[role]:text`` lines, and ends
with ``assistant:``; ``to_messages`` sends the history as messages and the main prompt as the last user message.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent.prompting.output_schema import is_schema, render_schema

__all__ = ["CHAT_HISTORY_OPENER", "CONTINUE_MARKER", "PromptObject", "main_prompt", "to_messages", "to_text"]

log = logging.getLogger("omx.prompting")

#: strict role order: the user message put before a history that starts with another role
CHAT_HISTORY_OPENER = "[CHAT HISTORY]"
#: strict role order: the assistant message put after a history that ends with another role
CONTINUE_MARKER = "[User continue input]"

_FORMAT_LABELS = {"json": "JSON", "yaml": "YAML", "markdown": "Markdown"}


class PromptObject(BaseModel):
    """The parts of a prompt as generated; unknown parts (``user_info=...``) are kept as extras."""

    model_config = ConfigDict(extra="allow")

    system: Any = None
    chat_history: list[dict[str, Any]] = Field(default_factory=list)
    info: Any = None
    instruct: Any = None
    action_results: Any = None
    input: Any = None
    output: Any = None
    output_format: str = "markdown"


def main_prompt(po: PromptObject, *, bare_input: bool = True) -> str | None:
    """The sectioned main prompt, the bare input when that is all there is, or None for an empty prompt."""
    if (
        bare_input
        and po.input is not None
        and all(v is None for v in (po.info, po.instruct, po.action_results, po.output))
    ):
        return _value_text(po.input)
    sections = [
        (label, value)
        for label, value in (
            ("INFO", po.info),
            ("INSTRUCT", po.instruct),
            ("ACTION RESULTS", po.action_results),
            ("INPUT", po.input),
        )
        if value is not None
    ]
    blocks = [f"[{label}]:\n{_value_text(value)}" for label, value in sections]
    if po.output is not None:
        blocks.append(f"[OUTPUT REQUIREMENT]:\n{_output_requirement(po)}")
    if not blocks:
        return None
    blocks.append("[OUTPUT]:")
    return "\n\n".join(blocks)


def to_text(po: PromptObject) -> str:
    """The whole prompt as one text: ``user:`` block with the history folded in, then ``assistant:``."""
    history = [line for line in (_history_line(m) for m in po.chat_history) if line is not None]
    main = main_prompt(po, bare_input=not history)  # after a history, a bare input would read as part of it
    body = [f"[CHAT HISTORY]:\n{chr(10).join(history)}"] if history else []
    body += [main] if main is not None else []
    if not body:
        raise ValueError("the prompt is empty: set at least one of input, info, instruct, output or chat_history")
    head = f"system:\n{_value_text(po.system)}\n\n" if po.system is not None else ""
    return head + "user:\n" + "\n\n".join(body) + "\nassistant:"


def to_messages(
    po: PromptObject, *, rich_content: bool = False, strict_role_orders: bool = False
) -> list[dict[str, Any]]:
    """Chat messages: system, the history, then the main prompt as the last user message.

    Without rich content every content is a string (only the text parts of a list survive, joined by a blank
    line); with it every history and main-prompt content is a list of parts, the original parts kept as they were.
    With strict role orders the history is made to start with a user turn and end with an assistant turn, for
    providers that reject anything else.
    """
    messages: list[dict[str, Any]] = []
    if po.system is not None:
        messages.append({"role": "system", "content": _value_text(po.system)})
    history = [_history_message(m, rich_content) for m in po.chat_history]
    main = main_prompt(po)
    if strict_role_orders and history:
        if history[0].get("role") != "user":
            history.insert(0, {"role": "user", "content": _content(CHAT_HISTORY_OPENER, rich_content)})
        if main is not None and history[-1].get("role") != "assistant":
            history.append({"role": "assistant", "content": _content(CONTINUE_MARKER, rich_content)})
    messages += history
    if main is not None:
        messages.append({"role": "user", "content": _content(main, rich_content)})
    return messages


def _output_requirement(po: PromptObject) -> str:
    if not is_schema(po.output):
        return str(po.output)
    label = _FORMAT_LABELS.get(po.output_format.lower(), po.output_format)
    return f"Data Format: {label}\nData Structure:\n{render_schema(po.output)}"


def _value_text(value: Any) -> str:
    """Strings as they are; anything else as indented JSON, which every model reads."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _content(text: str, rich: bool) -> str | list[dict[str, Any]]:
    return [{"type": "text", "text": text}] if rich else text


def _text_parts(content: Any, role: str) -> str:
    """The text of a message: a string as it is, a list of parts as its text parts joined by a blank line."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        else:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            log.warning("skipped a %r part of a %s message: only text can go into a text prompt", kind, role)
    return "\n\n".join(texts)


def _history_line(message: dict[str, Any]) -> str | None:
    role = str(message.get("role", "user"))
    text = _text_parts(message.get("content"), role)
    return f"[{role}]:{text}" if text else None


def _history_message(message: dict[str, Any], rich: bool) -> dict[str, Any]:
    out = dict(message)
    content = message.get("content")
    role = str(message.get("role", "user"))
    if rich:
        if isinstance(content, str):
            out["content"] = [{"type": "text", "text": content}]
        elif content is not None:
            out["content"] = copy.deepcopy(content)
    elif content is not None:
        out["content"] = _text_parts(content, role)
    return out
