"""Layered, dotted-key settings for prompting (seed 002 §1 ``set_settings`` / ``settings[...]``).

A request's settings are a child of its agent's, which are a child of the defaults: a child reads through to its
parent and writes only to itself, so a per-request override never leaks back. Every seed-002 feature (this package
and its parts in ``agent.seed_only``) reads its switch from here, and ``DEFAULTS`` keeps each one off, or bounded,
until someone turns it on.

Not the config of ``omx agent``: that is ``agent.chat.loop.AgentConfig`` (its YAML file), validated by pydantic,
with ``context:`` (``agent.context.settings.ContextSettings``) and ``session:`` (``SessionSettings``) as sections;
a ``session:`` section becomes these layered settings only to build the seed-002 ``Session``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULTS", "LayeredSettings"]

#: the safe defaults: no session resize, no streaming parse, lenient role order, bounded tool loop
DEFAULTS: dict[str, Any] = {
    "prompt": {"rich_content": False, "strict_role_orders": False},
    "session": {
        "context_dir": None,  # where compressed messages go; required only once a resize is turned on
        "resize": {
            "max_messages_text_length": None,  # deep resize above this many characters of message text
            "max_keep_messages_count": None,  # lite resize above this many messages
            "every_n_turns": None,  # lite resize after this many user turns
            "keep_last": 4,  # messages an every-n-turns resize keeps verbatim
        },
    },
    "response": {"streaming_parse": False, "streaming_parse_path_style": "dot"},
    "tool": {"loop": {"enabled": True, "max_rounds": 3, "timeout": 30.0}},
}

_MISSING = object()


class LayeredSettings:
    """Nested settings addressed by dotted keys (``"session.resize.every_n_turns"``), with an optional parent."""

    def __init__(self, values: Mapping[str, Any] | None = None, *, parent: LayeredSettings | None = None) -> None:
        self._own: dict[str, Any] = {}
        self._parent = parent
        for key, value in (values or {}).items():
            self.set(key, value)

    @classmethod
    def defaults(cls) -> LayeredSettings:
        """A fresh root holding ``DEFAULTS``; the usual parent of an agent's or a request's settings."""
        return cls(DEFAULTS)

    def child(self) -> LayeredSettings:
        """A layer on top of this one: reads fall through to self, writes stay in the child."""
        return LayeredSettings(parent=self)

    def set(self, key: str, value: Any) -> LayeredSettings:
        """Set ``key`` (dotted); a mapping value is merged leaf by leaf, so setting one option keeps its siblings."""
        parts = _parts(key)
        node = self._own
        for part in parts[:-1]:
            nested = node.get(part)
            if not isinstance(nested, dict):
                nested = node[part] = {}
            node = nested
        last = parts[-1]
        if isinstance(value, Mapping):
            existing = node.get(last)
            target = existing if isinstance(existing, dict) else {}
            node[last] = target
            for sub_key, sub_value in value.items():
                LayeredSettings._merge_into(target, str(sub_key), sub_value)
        else:
            node[last] = copy.deepcopy(value)
        return self

    set_settings = set  # the seed's name, for readers coming from it

    @staticmethod
    def _merge_into(target: dict[str, Any], key: str, value: Any) -> None:
        if isinstance(value, Mapping):
            existing = target.get(key)
            nested = existing if isinstance(existing, dict) else {}
            target[key] = nested
            for sub_key, sub_value in value.items():
                LayeredSettings._merge_into(nested, str(sub_key), sub_value)
        else:
            target[key] = copy.deepcopy(value)

    def get(self, key: str, default: Any = None) -> Any:
        """The value at ``key`` as this layer sees it (own values over the parent's); ``default`` when unset."""
        value = self._lookup(key)
        return default if value is _MISSING else value

    def __getitem__(self, key: str) -> Any:
        value = self._lookup(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._lookup(key) is not _MISSING

    def to_dict(self) -> dict[str, Any]:
        """Everything this layer sees, merged with its parents; a copy, safe to change."""
        merged = self._parent.to_dict() if self._parent is not None else {}
        for key, value in self._own.items():
            LayeredSettings._merge_into(merged, key, value)
        return merged

    def _lookup(self, key: str) -> Any:
        node: Any = self.to_dict()
        for part in _parts(key):
            if not isinstance(node, dict) or part not in node:
                return _MISSING
            node = node[part]
        return node

    def __repr__(self) -> str:
        return f"LayeredSettings({self.to_dict()!r})"


def _parts(key: str) -> list[str]:
    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise KeyError(f"not a settings key: {key!r}; use dotted names such as 'session.resize.every_n_turns'")
    return parts
