"""Tool masking (seed 003 ToolAvailabilityMask): a mode restricts which tools may be called, never which exist.

Adding or removing a tool definition mid-run changes the prompt prefix (and so discards the provider's KV cache)
and leaves earlier calls pointing at tools the model can no longer see. So every definition is always sent, in the
same order, and a mode only narrows the choice: through the provider's ``tool_choice`` (OpenAI's
``allowed_tools``, or ``"none"``) where the model supports it, and by refusing a disallowed call in any case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["ToolMask", "refusal", "tool_choice_for"]


def _name(tool: Mapping[str, Any]) -> str | None:
    """The name of a tool definition: ``{"name"}`` or OpenAI's ``{"function": {"name"}}``."""
    function = tool.get("function")
    if isinstance(function, Mapping):
        return str(function.get("name"))
    name = tool.get("name")
    return None if name is None else str(name)


class ToolMask:
    """Modes by name, each the list of tool names it allows."""

    def __init__(self, groups: Mapping[str, Sequence[str]]) -> None:
        self.groups = {mode: list(names) for mode, names in groups.items()}

    def check(self, known: Iterable[str]) -> None:
        """Every tool a mode names must exist: a typo in a mode would silently forbid a tool."""
        known = set(known)
        for mode, names in self.groups.items():
            unknown = sorted(set(names) - known)
            if unknown:
                raise ValueError(f"mode {mode!r} allows tools that do not exist: {', '.join(unknown)}")

    def get_allowed_tools(self, mode_name: str) -> list[str]:
        if mode_name not in self.groups:
            raise ValueError(f"unknown mode {mode_name!r}; modes: {', '.join(sorted(self.groups)) or 'none'}")
        return list(self.groups[mode_name])

    def is_tool_allowed(self, mode_name: str, tool_name: str) -> bool:
        return tool_name in self.get_allowed_tools(mode_name)

    def apply_mask(self, mode_name: str, available_tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The allowed subset, in the input's order: what the model may call, not what it is shown."""
        allowed = set(self.get_allowed_tools(mode_name))
        return [t for t in available_tools if _name(t) in allowed]


def tool_choice_for(allowed: Sequence[str], all_names: Sequence[str]) -> str | dict[str, Any] | None:
    """The OpenAI ``tool_choice`` for a mode: None when all are allowed, "none" when none are."""
    if set(all_names) <= set(allowed):
        return None
    if not allowed:
        return "none"
    tools = [{"type": "function", "function": {"name": name}} for name in all_names if name in allowed]
    return {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": tools}}


def refusal(tool_name: str, mode_name: str, allowed: Sequence[str]) -> str:
    """The tool result for a disallowed call: what was refused and what may be called instead."""
    choice = ", ".join(allowed) if allowed else "none; answer in text"
    return f"error: tool {tool_name} is not allowed in mode {mode_name}; tools you may call now: {choice}"
