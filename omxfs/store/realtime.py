"""Realtime documents: CRDT documents that any number of writers change at once (SPEC §5, FR-4).

Each writer (one process acting as one agent: replica ``<agent>+<token>``) keeps its state in a file of its own
and a read merges them all (``replicas.py``), so correctness rests on no lock: writers in processes and daemons
sharing the store, also on a filesystem whose clients share no locks, never lose each other's operations. A
change runs on a copy of the latest state and is persisted before it is acknowledged; a change that raises
persists nothing. ``realtime/.crdt_state/<doc>.crdt.json`` is the merged state, created once, exclusively.

A state arriving from elsewhere (another replica) is merged, never written over; it may bring
operations the store has and new operations of the agent merging it, and new operations attributed to another
agent are refused (``ZoneDenied``: a state naming alice as the author of a title cannot come from bob), unless
the merging agent is a supervisor (recorded in the audit log). Removals carry no author in these types (a
tombstone says what was removed, not by whom), so they cannot be attributed and are merged like any edit.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from omxfs.errors import AlreadyExists, InvalidInput, ZoneDenied
from omxfs.store.atomic import exists
from omxfs.store.layout import CRDT_STATE, REALTIME, STATE_DIR, STATE_SUFFIX
from omxfs.store.replicas import (
    StateFiles,
    StateView,
    Writer,
    agent_of,
    decode_state,
    encode_state,
    state_name,
)

if TYPE_CHECKING:
    from omxfs.crdt import Document
    from omxfs.store.workspace import Workspace

T = TypeVar("T")

__all__ = ["RealtimeZone", "StateView", "decode_state", "encode_state", "state_name"]


class RealtimeZone:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir = ws.root / REALTIME
        self.state_dir = self.dir / CRDT_STATE
        self.files = StateFiles(ws)
        self._writers: dict[tuple[str, str], Writer] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._token = os.urandom(8).hex()

    # -- writers ----------------------------------------------------------------------------------------------

    def replica(self, actor: str) -> str:
        """This process's replica id for ``actor``: ``<actor>+<token>``, the token random per process (a forked
        child gets a new one), so no two live writers acting as one agent ever share an id."""
        self._check_fork()
        return f"{actor}+{self._token}"

    def _check_fork(self) -> None:
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    self._pid, self._token = os.getpid(), os.urandom(8).hex()
                    self._writers = {}

    def _writer(self, actor: str, doc_id: str) -> Writer:
        replica = self.replica(actor)
        with self._lock:
            writer = self._writers.get((doc_id, replica))
            if writer is None:
                writer = self._writers[(doc_id, replica)] = Writer(replica)
            return writer

    # -- reading ----------------------------------------------------------------------------------------------

    def exists(self, doc_id: str) -> bool:
        return exists(self.state_dir, state_name(doc_id))

    def list(self) -> list[str]:
        return sorted(
            p.name[: -len(STATE_SUFFIX)]
            for p in self.state_dir.iterdir()
            if p.name.endswith(STATE_SUFFIX) and p.is_file() and not p.is_symlink()
        )

    def current(self, doc_id: str) -> StateView:
        """The latest state, shared and cached while its files are unchanged: never edit ``.doc`` in place."""
        return self.files.current(doc_id)

    def load(self, doc_id: str) -> Document:
        """The stored document, a copy of its own (a restart restores it from disk)."""
        return self.current(doc_id).doc.copy()

    def snapshot(self, doc_id: str) -> dict[str, Any]:
        """``{"doc_id", "fields", "field_types"}`` with every field's plain value."""
        return self.current(doc_id).doc.snapshot()

    # -- changing ---------------------------------------------------------------------------------------------

    def create(self, actor: str, doc_id: str, schema: Mapping[str, str]) -> Document:
        """A new document with a fixed schema; an existing one is never replaced."""
        from omxfs.crdt import Document  # here, as in ``replicas``: listing documents loads no CRDT code

        self.ws.require_actor(actor)
        doc = Document(doc_id, schema)
        if not self.files.create(doc):
            raise AlreadyExists(f"realtime document {doc_id!r} exists; its schema is fixed")
        return doc

    def update(self, actor: str, doc_id: str, change: Callable[[Document, str], T]) -> T:
        """Run ``change(doc, replica)`` on a copy of the latest state and persist it; ``replica`` is the id to make
        the operations under (the actor's, for this process). ``doc`` is the store's once persisted: keep none of it.

        Changes by one writer run one at a time; do slow work (a diff) before calling, not inside ``change``.
        """
        self.ws.require_actor(actor)
        writer = self._writer(actor, doc_id)
        with writer.lock:
            base, work = self.files.begin(writer, doc_id)
            result = change(work, writer.replica)
            self.files.commit(doc_id, writer, base, work)
        return result

    def merge_state(self, actor: str, doc_id: str, state: Any) -> Document:
        """Merge a whole remote state (a dict, or its JSON text) into the stored document.

        A document that does not exist yet is created with the state's schema. A state whose id or schema
        differs is refused (``InvalidInput``), and so is one with new operations of another agent (``ZoneDenied``,
        unless ``actor`` is a supervisor); then nothing changes.
        """
        from omxfs.crdt import Document

        remote = decode_state(state, "state") if isinstance(state, str | bytes) else Document.from_json(state)
        if remote.doc_id != doc_id:
            raise InvalidInput(f"state is of document {remote.doc_id!r}, not {doc_id!r}")
        self.ws.require_actor(actor)
        if not self.exists(doc_id):
            empty = Document(doc_id, remote.schema)
            self._check_authors(actor, doc_id, empty.new_replicas(remote))
            self.files.create(empty)  # lost to another creator: then merged into theirs (or refused) below
        writer = self._writer(actor, doc_id)
        with writer.lock:
            base, work = self.files.begin(writer, doc_id)
            self._check_authors(actor, doc_id, work.new_replicas(remote))
            work.merge(remote)
            self.files.commit(doc_id, writer, base, work)
        return work.copy()

    def _check_authors(self, actor: str, doc_id: str, replicas: set[str]) -> None:
        foreign = sorted(r for r in replicas if agent_of(r) != actor)
        if not foreign:
            return
        where = f"{STATE_DIR}/{state_name(doc_id)}"
        names = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        if self.ws.is_supervisor(actor):
            self.ws.audit(actor, f"merge operations of {names}", where)
            return
        raise ZoneDenied(
            f"{where}: the state has new operations of {names}; {actor} may merge only its own "
            "(and operations the document already has)"
        )
