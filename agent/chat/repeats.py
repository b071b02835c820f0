"""Calls the loop answers without running them: an exact repeat of a call that failed, and an echo of omx's words.

A small model that is stuck sends the call that just failed again, or sends back, as a tool's argument, a text omx
sent it (a nudge, an error message); run again, such a call fails again and the run spends its steps on it. The
``RepeatGuard`` of one run remembers each failed call (by tool name and canonical arguments) with its error, and
the texts omx wrote to the model, and says which calls not to run and what to tell the model instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.model.llm import ToolCall

__all__ = ["ECHO_MIN_CHARS", "Refusal", "RepeatGuard"]

#: an argument shorter than this is never taken for an echo: short code ("x", "6 * 7") may well occur in a message
ECHO_MIN_CHARS = 16


@dataclass(frozen=True)
class Refusal:
    """Why a call was not run (``failed_before`` or ``echo``), the earlier error if any, and what the model is told."""

    reason: Literal["failed_before", "echo"]
    message: str
    earlier_error: str | None = None


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def call_key(call: ToolCall) -> tuple[str, str]:
    """The tool's name and its arguments as canonical JSON (key order and spacing do not matter), else as sent."""
    try:
        arguments: Any = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return call.name, call.arguments
    return call.name, json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _strings(call: ToolCall) -> list[str]:
    """The text values of the call's arguments (the raw arguments when they are not JSON)."""
    try:
        arguments: Any = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return [call.arguments]
    if isinstance(arguments, dict):
        return [value for value in arguments.values() if isinstance(value, str)]
    return [arguments] if isinstance(arguments, str) else []


def _first_line(error: str) -> str:
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    return (lines[0] if lines else error.strip()).removeprefix("error:").strip()


@dataclass
class RepeatGuard:
    """What one run has seen: the calls that failed (with their errors) and the texts omx sent to the model."""

    failed: dict[tuple[str, str], str] = field(default_factory=dict)
    sent: list[str] = field(default_factory=list)

    def refusal(self, call: ToolCall) -> Refusal | None:
        """A ``Refusal`` if ``call`` should not run: it repeats a failed call exactly, or an argument of it is (at
        least ``ECHO_MIN_CHARS`` of) a text omx sent; None to run it."""
        earlier = self.failed.get(call_key(call))
        if earlier is not None:
            message = (
                f"error: this exact call failed before with: {_first_line(earlier)}; it was not run again. "
                "Change the arguments, or answer in plain text."
            )
            return Refusal("failed_before", message, earlier)
        for value in _strings(call):
            text = _normal(value)
            if len(text) >= ECHO_MIN_CHARS and any(text in sent for sent in self.sent):
                message = (
                    "error: the arguments of this call repeat a message omx sent you; it was not run. "
                    "Call the tool with arguments of your own, or answer in plain text."
                )
                return Refusal("echo", message)
        return None

    def ran(self, call: ToolCall, result: str, failed: bool) -> None:
        """Remember a call that ran and failed, and its error, which the model was sent."""
        if failed:
            self.failed.setdefault(call_key(call), result)
            self.said(result)

    def said(self, text: str) -> None:
        """A text omx wrote to the model (a nudge, an error): an argument that repeats it is an echo."""
        if text.strip():
            self.sent.append(_normal(text))
