"""A prompt as named parts (input, info, instruct, output, chat history...) rather than one string (seed 002 §6).

Keeping the parts apart lets one prompt become plain text, chat messages with or without rich content, or an
output model, and lets a tool loop add ``action_results`` without re-parsing anything. The prompt object is a
snapshot: changing the prompt afterwards never changes an object already taken.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from agent.prompting.generator import PromptObject, to_messages, to_text
from agent.prompting.layered_settings import LayeredSettings
from agent.prompting.output_model import output_model
from agent.prompting.output_schema import is_schema

__all__ = ["Prompt", "PromptObject"]


class Prompt:
    """The parts of one prompt, set by name; rendering lives in ``generator`` and reads the prompt's settings."""

    def __init__(self, settings: LayeredSettings | None = None, parts: Mapping[str, Any] | None = None) -> None:
        self.settings = settings if settings is not None else LayeredSettings.defaults()
        self._parts: dict[str, Any] = {}
        self.update(parts or {})

    def set(self, key: str, value: Any) -> Prompt:
        self._parts[key] = copy.deepcopy(value)
        return self

    def update(self, parts: Mapping[str, Any]) -> Prompt:
        for key, value in parts.items():
            self.set(key, value)
        return self

    def get(self, key: str, default: Any = None) -> Any:
        return copy.deepcopy(self._parts.get(key, default))

    def __getitem__(self, key: str) -> Any:
        return copy.deepcopy(self._parts[key])

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __contains__(self, key: object) -> bool:
        return key in self._parts

    def copy(self) -> Prompt:
        """An independent prompt with the same parts and the same settings object."""
        return Prompt(self.settings, self._parts)

    def to_prompt_object(self) -> PromptObject:
        """The parts, with ``output_format`` filled in: JSON when a schema is asked for, unless the user chose.

        The default is derived here on every call and never stored, so a later ``output`` cannot overwrite an
        ``output_format`` the user set, and one the user did not set follows the current ``output``.
        """
        parts = copy.deepcopy(self._parts)
        if "output_format" not in parts:
            has_schema = parts.get("output") is not None and is_schema(parts["output"])
            parts["output_format"] = "json" if has_schema else "markdown"
        return PromptObject.model_validate(parts)

    def to_text(self) -> str:
        return to_text(self.to_prompt_object())

    def to_messages(
        self, *, rich_content: bool | None = None, strict_role_orders: bool | None = None
    ) -> list[dict[str, Any]]:
        """Chat messages; each option defaults to its ``prompt.*`` setting."""
        rich = self.settings.get("prompt.rich_content", False) if rich_content is None else rich_content
        strict = (
            self.settings.get("prompt.strict_role_orders", False) if strict_role_orders is None else strict_role_orders
        )
        return to_messages(self.to_prompt_object(), rich_content=bool(rich), strict_role_orders=bool(strict))

    def to_output_model(self) -> type[BaseModel]:
        """The pydantic model that checks a reply to this prompt's ``output`` schema."""
        if self._parts.get("output") is None:
            raise ValueError("the prompt has no output schema; set 'output' first")
        return output_model(self._parts["output"])
