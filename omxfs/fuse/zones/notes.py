"""What a mount remembers per agent and file between requests, for the zones whose writes are commits
(collaborative, handoff): the version each agent's next commit is based on, and the commit messages it set.

This is per-mount state, never on disk: a base is what *this* mount saw the agent read or declare.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from omxfs.fuse.zones.base import ViewPath

NOTES_SIZE = 65536  # (agent, path) entries remembered per table; the oldest are forgotten first
_stamps = itertools.count(1)


def new_stamp() -> int:
    """The next number of one ordering of events shared by all notes (was a base declared after an open?)."""
    return next(_stamps)


@dataclass(frozen=True)
class Base:
    """The version a commit of one agent to one file is based on. ``stamp`` orders events (declared after open?)."""

    version: int
    declared: bool = False
    stamp: int = field(default_factory=lambda: new_stamp())


class AgentNotes:
    """Per (agent, view path): base versions and pending commit messages. Thread-safe and bounded (LRU).

    Forgetting a base is safe: the next write of that file is then refused as unobserved (strict, never lax).
    """

    def __init__(self, size: int = NOTES_SIZE) -> None:
        self.size = size
        self._bases: OrderedDict[tuple[str, ViewPath], Base] = OrderedDict()
        self._messages: OrderedDict[tuple[str, ViewPath], str] = OrderedDict()
        self._lock = threading.Lock()

    def _put(self, table: OrderedDict[tuple[str, ViewPath], Any], key: tuple[str, ViewPath], value: Any) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > self.size:
            table.popitem(last=False)

    def base(self, agent: str, path: ViewPath) -> Base | None:
        with self._lock:
            return self._bases.get((agent, path))

    def set_base(self, agent: str, path: ViewPath, version: int, *, declared: bool = False) -> Base:
        base = Base(version, declared)
        with self._lock:
            self._put(self._bases, (agent, path), base)
        return base

    def forget_base(self, agent: str, path: ViewPath) -> None:
        with self._lock:
            self._bases.pop((agent, path), None)

    def message(self, agent: str, path: ViewPath) -> str | None:
        with self._lock:
            return self._messages.get((agent, path))

    def set_message(self, agent: str, path: ViewPath, message: str | None) -> None:
        with self._lock:
            if message is None:
                self._messages.pop((agent, path), None)
            else:
                self._put(self._messages, (agent, path), message)

    def used_message(self, agent: str, path: ViewPath, message: str | None) -> None:
        """A commit used ``message``: drop it, unless another was set meanwhile (it is for the next commit)."""
        with self._lock:
            if message is not None and self._messages.get((agent, path)) == message:
                del self._messages[(agent, path)]
