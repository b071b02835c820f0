"""Writing a realtime field through the mount: a field file's new text becomes CRDT operations against the
writer's base (the rule is ``realtime_files.choose_base``), and what every agent and process observed is remembered
for the next write.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import PurePosixPath
from typing import Any

from omxfs.crdt import CRDT, RGA, Document
from omxfs.crdt.rga import RGABase
from omxfs.crdt.text_diff import diff_spans
from omxfs.errors import NotFound, OmxError
from omxfs.fuse.zones.base import Caller
from omxfs.fuse.zones.realtime_files import (
    Cached,
    Seen,
    SeenLog,
    StateCache,
    choose_base,
    decode,
    process_key,
    written_base,
)
from omxfs.fuse.zones.scratch import ScratchView
from omxfs.fuse.zones.staging import StagedHandle
from omxfs.store.layout import REALTIME
from omxfs.store.workspace import Workspace


class FieldWrites:
    """The field writes of one mount (thread-safe: ``SeenLog`` locks, the store merges)."""

    def __init__(
        self, ws: Workspace, scratch: ScratchView, states: StateCache, state: Callable[[str], Cached | None]
    ) -> None:
        self.ws = ws
        self.scratch = scratch
        self._states = states
        self._state = state
        self._agents = SeenLog()
        self._processes = SeenLog()

    def flush(self, handle: StagedHandle, doc: str, name: str, ftype: str, at_open: Seen) -> None:
        data = bytes(handle.data)
        opened = handle.opened
        if ftype == "pn_counter" and handle.append and opened is not None:
            data = data.removeprefix(opened)  # `echo +1 >> counter`: the appended text is the write
            if not data.strip():
                return
        self.commit(handle.caller, doc, name, data, handle.own, at_open)

    @staticmethod
    def _keys(caller: Caller, doc: str, name: str) -> tuple[Hashable, Hashable]:
        return (caller.agent, doc, name), (caller.agent, process_key(caller.pid), doc, name)

    def observe(self, caller: Caller, doc: str, name: str, seen: Seen) -> None:
        agent_key, process = self._keys(caller, doc, name)
        self._agents.record(agent_key, seen)
        self._processes.record(process, seen)

    def _backup_text(self, caller: Caller, doc: str, name: str) -> str | None:
        """The text of the agent's ``<field>~`` (vim's and emacs' backup), if there is one."""
        try:
            return self.scratch.read(caller.agent, PurePosixPath(REALTIME, doc, name + "~")).decode("utf-8")
        except (OmxError, UnicodeDecodeError):
            return None

    def commit(
        self, caller: Caller, doc: str, name: str, data: bytes, own: Seen | None = None, fallback: Seen | None = None
    ) -> None:
        """Apply a field's new content as CRDT operations against the writer's base.

        ``own`` is the content at open of a file edited in place (rule 1 of ``realtime_files``); otherwise the
        base is chosen from what the writing process and the agent observed, and ``fallback`` (the value at
        open; default: now) is the base of a blind write.
        """
        text = decode(data, f"{REALTIME}/{doc}/{name}")
        cached = self._state(doc)
        if cached is None or name not in cached.doc.schema:
            raise NotFound(f"{REALTIME}/{doc}/{name}: no such document or field")
        if own is not None:
            used = own
        else:
            agent_key, process = self._keys(caller, doc, name)
            versions = self._processes.versions(process)
            backup = self._backup_text(caller, doc, name) if versions and versions[-1].read else None
            fallback = fallback or self._states.field(cached, name)
            used = choose_base(
                versions, self._processes.has_read(process), self._agents.versions(agent_key), backup, fallback
            )
        if text == used.text:
            return  # nothing changed since what the writer saw: an editor saving an untouched file
        base = used.base
        spans = diff_spans(base.text, text) if isinstance(base, RGABase) and base.text == used.text else None

        def change(document: Document, replica: str) -> tuple[CRDT, Any, str]:
            crdt = document.field(name)
            before = crdt.base()
            if spans is not None and isinstance(crdt, RGA):
                crdt.write_text(base, text, replica, spans=spans)
            else:
                crdt.write_text(base, text, replica)
            return crdt, before, replica

        # what the writer has seen now is worked out once the writer's lock is released: the state is stored then
        crdt, before, replica = self.ws.realtime.update(caller.agent, doc, change)
        self.observe(caller, doc, name, written_base(crdt, before, used, text, replica, spans))
