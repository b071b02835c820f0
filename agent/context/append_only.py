"""Append-only context (seed 003 ContextManager): frozen entries, and one reversible way to shrink.

A provider's KV cache reuses a prompt only up to the first byte that changed, so the loop never edits or drops
a message it has sent: it appends. The one exception is folding (``compress_to_file`` for a size limit, ``fold``
for a seed-002 session resize), which moves a run of whole turns to a file the agent can read back and leaves a
reference in their place; its cut points are turn boundaries, so a tool result is never separated from the
assistant message that called the tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from agent.context.compression import compress_messages

__all__ = ["ContextEntry", "ContextManager"]


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class ContextEntry:
    """One message, immutable: the other message fields are kept as JSON text, so nothing inside can change."""

    role: str
    content: str | None
    extra_json: str = "{}"  # tool_calls, tool_call_id, ...: every field but role and content, in order
    metadata: Mapping[str, Any] = field(default_factory=lambda: _frozen(None))

    @classmethod
    def of(cls, message: Mapping[str, Any], **metadata: Any) -> ContextEntry:
        extra = {k: v for k, v in message.items() if k not in ("role", "content")}
        return cls(str(message["role"]), message.get("content"), json.dumps(extra), _frozen(metadata))

    def to_message(self) -> dict[str, Any]:
        """A fresh dict each time, so a caller that edits it cannot edit the context."""
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        message.update(json.loads(self.extra_json))
        return message


class ContextManager:
    """The messages of one run; ``append`` is the only mutation, folding (to a file) the only shrink."""

    def __init__(self) -> None:
        self._entries: list[ContextEntry] = []

    def append(self, entry: ContextEntry) -> None:
        self._entries.append(entry)

    def append_message(self, message: Mapping[str, Any], **metadata: Any) -> None:
        self.append(ContextEntry.of(message, **metadata))

    def append_user(self, content: str, **metadata: Any) -> None:
        self.append_message({"role": "user", "content": content}, **metadata)

    def append_assistant(self, content: str, **metadata: Any) -> None:
        self.append_message({"role": "assistant", "content": content}, **metadata)

    def append_error(self, content: str, original_query: str = "") -> None:
        """A failed attempt, kept in view (seed 003 error preservation): the model learns from seeing it."""
        self.append_assistant(content, is_error=True, original_query=original_query)

    def get_messages(self) -> list[dict[str, Any]]:
        return [e.to_message() for e in self._entries]

    def get_entries(self) -> tuple[ContextEntry, ...]:
        """A tuple of frozen entries: neither the list nor an entry can be changed through it."""
        return tuple(self._entries)

    @property
    def entry_count(self) -> int:
        return len(self._entries)

    def size_chars(self) -> int:
        return sum(len(e.content or "") + len(e.extra_json) for e in self._entries)

    def compress_to_file(self, directory: Path, keep_last: int = 10, keep_first: int = 0) -> dict[str, Any] | None:
        """Move the entries between the first ``keep_first`` and the last ``keep_last`` to a file; the reference.

        The cuts move to turn boundaries: the kept tail never starts with a tool result (its call is kept too),
        and the head never ends just before one. References left by earlier compressions count as head.
        Returns None when there is nothing to move.
        """
        start, end = keep_first, max(len(self._entries) - keep_last, 0)
        while start < len(self._entries) and (
            self._entries[start].role == "tool" or "compressed" in self._entries[start].metadata
        ):  # earlier references stay where they are: a flat chain, and a longer prefix that never changes
            start += 1
        while start < end < len(self._entries) and self._entries[end].role == "tool":
            end -= 1
        if end <= start:
            return None
        return self._fold(start, end, directory)

    def fold(self, directory: Path, count: int, keep_first: int = 0) -> dict[str, Any] | None:
        """Move the ``count`` oldest entries after the first ``keep_first`` to a file; the reference, or None.

        A session resize (seed 002): unlike ``compress_to_file`` an earlier reference in the range is folded too,
        so references nest and the context stays bounded. The cut moves forward past tool results, so a result
        goes with the call it answers; a lone earlier reference is not folded again.
        """
        start = keep_first
        end = min(start + max(count, 0), len(self._entries))
        while start < end < len(self._entries) and self._entries[end].role == "tool":
            end += 1
        if end <= start or (end - start == 1 and "compressed" in self._entries[start].metadata):
            return None
        return self._fold(start, end, directory)

    def _fold(self, start: int, end: int, directory: Path) -> dict[str, Any]:
        moved = [e.to_message() for e in self._entries[start:end]]
        reference = compress_messages(moved, directory)
        self._entries[start:end] = [ContextEntry.of(reference, compressed=len(moved))]
        return reference


def is_prefix(earlier: Sequence[Mapping[str, Any]], later: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``later`` starts with exactly the messages of ``earlier``: the append-only property of two requests."""
    return len(later) >= len(earlier) and all(dict(a) == dict(b) for a, b in zip(earlier, later, strict=False))
