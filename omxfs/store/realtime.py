"""Realtime documents: CRDT documents persisted to ``realtime/.crdt_state/<doc>.crdt.json`` (SPEC §5, FR-4).

Every change runs under the document's OS lock on a freshly loaded state and is persisted atomically before the
lock is released, so processes and daemons sharing the store never overwrite each other's operations: each
one's edits are CRDT operations applied to the latest state. A change that raises persists nothing. A state
arriving from elsewhere (another replica, seed FR-4.9) is merged into the stored one, never written over it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from omxfs.crdt import Document
from omxfs.errors import AlreadyExists, InvalidInput, NotFound
from omxfs.store.atomic import exists, read_bytes
from omxfs.store.names import check_doc_id

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

T = TypeVar("T")
STATE_SUFFIX = ".crdt.json"


def state_name(doc_id: str) -> PurePosixPath:
    return PurePosixPath(check_doc_id(doc_id) + STATE_SUFFIX)


def encode_state(doc: Document) -> bytes:
    return json.dumps(doc.to_json(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode_state(raw: bytes | str, where: str) -> Document:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InvalidInput(f"{where}: not valid JSON: {exc}") from exc
    return Document.from_json(data)


class RealtimeZone:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir = ws.root / "realtime"
        self.state_dir = self.dir / ".crdt_state"

    def exists(self, doc_id: str) -> bool:
        return exists(self.state_dir, state_name(doc_id))

    def list(self) -> list[str]:
        return sorted(
            p.name[: -len(STATE_SUFFIX)]
            for p in self.state_dir.iterdir()
            if p.name.endswith(STATE_SUFFIX) and p.is_file() and not p.is_symlink()
        )

    def create(self, actor: str, doc_id: str, schema: Mapping[str, str]) -> Document:
        """A new document with a fixed schema (seed I-1); an existing one is never replaced."""
        self.ws.require_actor(actor)
        doc = Document(check_doc_id(doc_id), schema)
        with self.ws.locks.hold(f"realtime:{doc_id}"):
            if self.exists(doc_id):
                raise AlreadyExists(f"realtime document {doc_id!r} exists; its schema is fixed")
            self.ws.writer.write(self.state_dir, state_name(doc_id), encode_state(doc))
        return doc

    def load(self, doc_id: str) -> Document:
        """The stored document (seed I-6: a restart restores it from disk)."""
        return self._load(doc_id)[1]

    def _load(self, doc_id: str) -> tuple[bytes, Document]:
        name = state_name(doc_id)
        try:
            raw = read_bytes(self.state_dir, name)
        except NotFound:
            raise NotFound(f"no realtime document {doc_id!r}") from None
        return raw, decode_state(raw, f"realtime/.crdt_state/{name}")

    def update(self, actor: str, doc_id: str, change: Callable[[Document], T]) -> T:
        """Run ``change`` on the latest state under the lock and persist it; the actor is the CRDT replica."""
        self.ws.require_actor(actor)
        with self.ws.locks.hold(f"realtime:{doc_id}"):
            raw, doc = self._load(doc_id)
            result = change(doc)
            self._save_if_changed(doc_id, raw, doc)
        return result

    def merge_state(self, actor: str, doc_id: str, state: Any) -> Document:
        """Merge a whole remote state (a dict, or its JSON text) into the stored document (seed FR-4.9).

        A document that does not exist yet is created from the state. A state whose id or schema differs is
        refused and nothing changes.
        """
        remote = decode_state(state, "state") if isinstance(state, str | bytes) else Document.from_json(state)
        if remote.doc_id != doc_id:
            raise InvalidInput(f"state is of document {remote.doc_id!r}, not {doc_id!r}")
        self.ws.require_actor(actor)
        with self.ws.locks.hold(f"realtime:{doc_id}"):
            raw, doc = self._load(doc_id) if self.exists(doc_id) else (b"", remote)
            if doc is not remote:
                doc.merge(remote)
            self._save_if_changed(doc_id, raw, doc)
        return doc

    def _save_if_changed(self, doc_id: str, raw: bytes, doc: Document) -> None:
        """Persist ``doc`` unless it encodes to what is stored: a no-op edit costs no write and no fsync."""
        encoded = encode_state(doc)
        if encoded != raw:
            self.ws.writer.write(self.state_dir, state_name(doc_id), encoded)

    def snapshot(self, doc_id: str) -> dict[str, Any]:
        """``{"doc_id", "fields", "field_types"}`` with every field's plain value (seed I-2)."""
        return self.load(doc_id).snapshot()
