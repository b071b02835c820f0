"""The realtime zone of the mount: CRDT documents as directories of field files (SPEC §5).

::

    realtime/                          documents (one directory each), .crdt_state/, and pending new documents
    realtime/.crdt_state/<doc>.crdt.json
                                       the document's state (the merge of its files in the store, see
                                       ``omxfs.store.replicas``); a state written there is MERGED (remote replica
                                       sync), and new operations in it must be the writer's own (else EACCES)
    realtime/<doc>/.schema.json        written once to create the document, then read-only (0444)
    realtime/<doc>/.snapshot.json      generated, read-only: {"doc_id", "fields", "field_types"}
    realtime/<doc>/<field>             one file per field: its value as text; writes merge
    realtime/<doc>/<editor temp file>  swap and backup files, per agent, in the scratch area (``scratch.py``)

Creating a document: ``mkdir realtime/<doc>`` makes a *pending* directory, held in this handler's memory
(visible to every agent of this mount, gone at unmount: ``getattr`` does not say who asks, so it cannot be
private), and writing ``.schema.json`` into it creates the document in the store when the file is closed. Once
created, the schema is fixed: opening ``.schema.json`` for writing fails with EACCES (a read-only file); a
creation that loses a race with another writer fails at close with EEXIST. Documents and fields are never
deleted through the mount (EACCES).

The store keeps each writer's state in a file of its own under ``.crdt_state/.writers/``; that directory is the
store's business and is not shown here (a lookup finds nothing, and nothing can be created there): the state
file of a document is its merge, and writing it is the one way in.

Writing a field: the new content is staged in the open file (``StagedHandle``) and committed when the program
closes or fsyncs it (a field only truncated, with nothing written, at its release, or by the next request on its
document if that comes first: ``_finish``): decoded as UTF-8, diffed against the writer's base (what it last
observed; the rule, per process and per agent, is in ``realtime_files``) and applied by ``ws.realtime.update`` to
the latest state as this daemon's replica of the agent, so concurrent writers, processes and daemons merge. The
diff is made before the store is asked, so one field's large diff never holds up a write of another. A bad write (not
UTF-8, not an integer, not JSON…) fails at close with EINVAL and changes nothing; creating a name that is not a
field is EINVAL. ``O_APPEND`` writes go to the end of the content read at open, whatever offset the kernel
passes, and for a ``pn_counter`` the appended text alone is the write: ``echo +1 >> counter`` counts one. The
content is exactly the value: a register written with ``echo`` keeps the newline.

Renames are how editors save: a field renamed to a scratch name (vim's, emacs' backup) stays where it is and the
scratch file gets a copy of its text; a scratch file renamed onto a field, a pending ``.schema.json`` or a state
file (write to temp, then rename) is committed like a write of its content. ``setattr`` may set times (ignored:
the content is generated) and may "change" mode and owner to what they are; anything else is EACCES. xattrs:
``user.omx.owner`` is "shared" (the store records no creator: every agent may write every document), the creator
on a pending directory, the agent on a scratch file; fields also have ``user.omx.type``. Everything is
``stable=False`` and every handle ``direct_io``: other agents, processes and daemons change documents any time.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from omxfs.errors import (
    AlreadyExists,
    InvalidInput,
    IsADirectory,
    NoAttribute,
    NotEmpty,
    NotFound,
    NotSupported,
)
from omxfs.fuse.zones.base import Attr, AttrChanges, BufferHandle, Caller, Handle, ViewPath, dir_attr, read_only
from omxfs.fuse.zones.realtime_files import (
    Cached,
    Seen,
    StateCache,
    decode,
    parse_schema,
)
from omxfs.fuse.zones.realtime_writes import FieldWrites
from omxfs.fuse.zones.scratch import ScratchView
from omxfs.fuse.zones.staging import StagedHandle, Staging
from omxfs.store.layout import CRDT_STATE, OWNER, REALTIME, RENAME_NOREPLACE, SCHEMA, SNAPSHOT, STATE_SUFFIX, TYPE
from omxfs.store.names import check_component, check_doc_id
from omxfs.store.scratch import is_scratch_name
from omxfs.store.workspace import Workspace

SHARED = "shared"


class Kind(enum.Enum):
    ROOT = f"{REALTIME}/"
    STATE_DIR = "the state directory"
    STATE = "a state file"
    NEW_STATE = "a state file of a new document"
    DOC = "a document"
    PENDING = "a pending document"
    NO_DOC = "no document"
    SCHEMA = "a schema"
    NEW_SCHEMA = "the schema of a pending document"
    SNAPSHOT = "a snapshot"
    FIELD = "a field"
    SCRATCH = "a scratch file"
    UNKNOWN = "not a field"
    MISSING = "nothing"


@dataclass
class _Pending:
    """A directory made by mkdir whose ``.schema.json`` has not been committed yet."""

    creator: str
    mtime_ns: int
    staged: list[BufferHandle] = field(default_factory=list)


@dataclass(frozen=True)
class _Node:
    kind: Kind
    path: ViewPath
    doc: str = ""
    name: str = ""
    cached: Cached | None = None
    pending: _Pending | None = None

    @property
    def state(self) -> Cached:
        assert self.cached is not None, self
        return self.cached


def _writes(flags: int) -> bool:
    return (flags & os.O_ACCMODE) in (os.O_WRONLY, os.O_RDWR)


def _pretty(data: Any) -> bytes:
    return (json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode("utf-8")


class RealtimeHandler:
    """The ZoneHandler of ``realtime/``; thread-safe (the ops layer calls it from worker threads)."""

    def __init__(self, ws: Workspace, scratch: ScratchView | None = None) -> None:
        self.ws = ws
        self.scratch = scratch if scratch is not None else ScratchView(ws)
        self._lock = threading.Lock()
        self._states = StateCache(ws)
        self.writes = FieldWrites(ws, self.scratch, self._states, self._state)
        self._pending: dict[str, _Pending] = {}
        #: field files open for writing: one released by the kernel commits before a request looks at its document
        self.fields = Staging()
        self._uid, self._gid = os.getuid(), os.getgid()

    # -- the store, read through a cache ----------------------------------------------------------------------

    def _state(self, doc: str) -> Cached | None:
        cached = self._states.get(doc)
        if cached is not None and self._pending:
            with self._lock:
                self._pending.pop(doc, None)  # created meanwhile, maybe by another daemon
        return cached

    def _field(self, cached: Cached, name: str) -> Seen:
        return self._states.field(cached, name)

    def _finish(self, path: ViewPath) -> None:
        """Commit the field files of ``path``'s document whose release the kernel has sent but this daemon not yet
        run: a field emptied by ``O_TRUNC`` alone commits at its release, so the program's next read of the field
        or the snapshot would otherwise race it and could see the old value (``StagedHandle.finish``)."""
        parts = path.parts
        if len(parts) < 2:
            return
        doc = parts[1]
        if doc == CRDT_STATE:
            if len(parts) != 3 or not parts[2].endswith(STATE_SUFFIX):
                return
            doc = parts[2][: -len(STATE_SUFFIX)]
        directory = ViewPath(REALTIME, doc)
        for name in self.fields.names_in(directory):
            self.fields.finish(directory / name)

    # -- what a path is ---------------------------------------------------------------------------------------

    def _node(self, path: ViewPath) -> _Node:
        parts = path.parts
        if not parts or parts[0] != REALTIME:
            raise NotFound(f"{path}: not in the realtime zone")
        parts = parts[1:]
        if not parts:
            return _Node(Kind.ROOT, path)
        doc = parts[0]
        if doc == CRDT_STATE:
            if len(parts) == 1:
                return _Node(Kind.STATE_DIR, path)
            name = parts[1]
            if len(parts) == 2 and name.endswith(STATE_SUFFIX) and not name.startswith("."):
                doc_id = name[: -len(STATE_SUFFIX)]
                cached = self._state(doc_id)
                return _Node(Kind.STATE if cached else Kind.NEW_STATE, path, doc_id, name, cached)
            return self._leaf(path, parts, None, None)
        cached = self._state(doc)
        with self._lock:
            pending = None if cached is not None else self._pending.get(doc)
        if len(parts) == 1:
            kind = Kind.DOC if cached else Kind.PENDING if pending else Kind.NO_DOC
            return _Node(kind, path, doc, "", cached, pending)
        if cached is None and pending is None:
            return _Node(Kind.MISSING, path, doc)
        name = parts[1]
        if len(parts) == 2 and name in (SCHEMA, SNAPSHOT):
            if cached is None:
                kind = Kind.NEW_SCHEMA if name == SCHEMA else Kind.MISSING
                return _Node(kind, path, doc, name, None, pending)
            return _Node(Kind.SCHEMA if name == SCHEMA else Kind.SNAPSHOT, path, doc, name, cached)
        if len(parts) == 2 and cached is not None and name in cached.doc.schema:
            return _Node(Kind.FIELD, path, doc, name, cached)
        return self._leaf(path, parts, cached, pending)

    @staticmethod
    def _leaf(path: ViewPath, parts: tuple[str, ...], cached: Cached | None, pending: _Pending | None) -> _Node:
        if len(parts) == 2 and is_scratch_name(parts[1]):
            return _Node(Kind.SCRATCH, path, parts[0], parts[1], cached, pending)
        return _Node(Kind.UNKNOWN if len(parts) == 2 else Kind.MISSING, path, parts[0], parts[-1], cached, pending)

    # -- attributes and listings ------------------------------------------------------------------------------

    def _file(self, perm: int, size: int, mtime_ns: int) -> Attr:
        return Attr(
            mode=stat.S_IFREG | perm,
            size=size,
            mtime_ns=mtime_ns,
            ctime_ns=mtime_ns,
            atime_ns=mtime_ns,
            uid=self._uid,
            gid=self._gid,
        )

    def _dir(self, mtime_ns: int) -> Attr:
        # 0777: every agent may create documents and editor files here (whatever its uid), under this zone's rules
        attr = dir_attr(mtime_ns, writable=True, uid=self._uid, gid=self._gid)
        return attr._replace(mode=stat.S_IFDIR | 0o777)

    def _scratch_owner(self, path: ViewPath) -> str:
        owners = self.scratch.owners(path)
        if not owners:
            raise NotFound(f"{path}: no such file")
        return owners[0]

    def getattr(self, path: ViewPath) -> Attr:
        self._finish(path)
        node = self._node(path)
        kind = node.kind
        if kind in (Kind.ROOT, Kind.STATE_DIR):
            try:
                return self._dir(os.stat(self.ws.realtime.state_dir).st_mtime_ns)
            except OSError:
                return self._dir(0)
        if kind is Kind.DOC:
            return self._dir(node.state.mtime_ns)
        if kind is Kind.PENDING and node.pending is not None:
            return self._dir(node.pending.mtime_ns)
        if kind is Kind.STATE:
            return self._file(0o666, len(node.state.raw), node.state.mtime_ns)
        if kind is Kind.SCHEMA or kind is Kind.SNAPSHOT:
            return self._file(0o444, len(self._generated(node)), node.state.mtime_ns)
        if kind is Kind.FIELD:
            return self._file(0o666, len(self._field(node.state, node.name).text.encode()), node.state.mtime_ns)
        if kind is Kind.NEW_SCHEMA and node.pending is not None:
            with self._lock:
                staged = node.pending.staged[-1].data if node.pending.staged else None
            if staged is not None:
                return self._file(0o644, len(staged), node.pending.mtime_ns)
        if kind is Kind.SCRATCH:
            return self.scratch.getattr(self._scratch_owner(path), path)
        raise NotFound(f"{path}: no such file or directory")

    def _generated(self, node: _Node) -> bytes:
        doc = node.state.doc
        return _pretty(doc.schema if node.kind is Kind.SCHEMA else doc.snapshot())

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]:
        node = self._node(path)
        if node.kind is Kind.ROOT:
            with self._lock:
                pending = list(self._pending)
            return sorted({CRDT_STATE, *self.ws.realtime.list(), *pending})
        scratch = self.scratch.names(caller.agent, path)
        if node.kind is Kind.STATE_DIR:
            return sorted(doc + STATE_SUFFIX for doc in self.ws.realtime.list()) + scratch
        if node.kind is Kind.DOC:
            return [SCHEMA, SNAPSHOT, *sorted(node.state.doc.schema), *scratch]
        if node.kind is Kind.PENDING and node.pending is not None:
            with self._lock:
                staged = [SCHEMA] if node.pending.staged else []
            return staged + scratch
        self.getattr(path)
        raise InvalidInput(f"{path}: not a directory")

    def readlink(self, path: ViewPath) -> bytes:
        if self._node(path).kind is Kind.SCRATCH:
            return self.scratch.readlink(self._scratch_owner(path), path)
        self.getattr(path)
        raise InvalidInput(f"{path}: not a symbolic link")

    # -- open and create --------------------------------------------------------------------------------------

    def open(self, caller: Caller, path: ViewPath, flags: int) -> Handle:
        self._finish(path)
        node = self._node(path)
        kind = node.kind
        if kind is Kind.FIELD:
            return self._field_handle(caller, node, flags)
        if kind is Kind.STATE:
            return self._state_handle(caller, node.doc, node.state.raw, flags)
        if kind in (Kind.SCHEMA, Kind.SNAPSHOT):
            if _writes(flags) or flags & os.O_TRUNC:
                why = "the schema is fixed once the document exists" if kind is Kind.SCHEMA else "generated"
                raise read_only(path, why)
            data = self._generated(node)
            return BufferHandle(caller, bytearray(data), self._file(0o444, len(data), node.state.mtime_ns))
        # Opening for writing what only exists while being written (the kernel may still hold the name from a
        # create whose commit failed) is creating it again.
        if kind is Kind.NEW_SCHEMA and node.pending is not None:
            with self._lock:
                staged = bytes(node.pending.staged[-1].data) if node.pending.staged else None
            if staged is not None or _writes(flags):
                return self._schema_handle(caller, node, flags, staged or b"")
        if kind is Kind.NEW_STATE and _writes(flags):
            return self._state_handle(caller, check_doc_id(node.doc), b"", flags)
        if kind is Kind.SCRATCH:
            return self.scratch.open(caller, path, flags)
        attr = self.getattr(path)
        if attr.is_dir:
            raise IsADirectory(f"{path}: is a directory")
        raise NotFound(f"{path}: no such file")

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> Handle:
        check_component(path.name)  # a name too long is ENAMETOOLONG before it is "not a field" (EINVAL)
        node = self._node(path)
        kind = node.kind
        if kind is Kind.FIELD:  # the kernel thought it gone (an editor renamed it away): a rewrite
            return self._field_handle(caller, node, flags | os.O_TRUNC)
        if kind in (Kind.STATE, Kind.NEW_STATE):
            check_doc_id(node.doc)
            return self._state_handle(caller, node.doc, b"", flags | os.O_TRUNC)
        if kind is Kind.NEW_SCHEMA:
            return self._schema_handle(caller, node, flags | os.O_TRUNC, b"")
        if kind is Kind.SCRATCH and (node.cached or node.pending or node.doc == CRDT_STATE):
            return self.scratch.create(caller, path, mode, flags)
        if kind in (Kind.SCHEMA, Kind.SNAPSHOT):
            raise read_only(path, "the schema is fixed" if kind is Kind.SCHEMA else "generated, read-only")
        if kind is Kind.UNKNOWN and node.cached is not None:
            fields = ", ".join(sorted(node.cached.doc.schema))
            raise InvalidInput(f"{path}: document {node.doc!r} has no field {node.name!r}; its fields: {fields}")
        if kind is Kind.UNKNOWN and node.pending is not None:
            raise InvalidInput(f"{path}: document {node.doc!r} has no schema yet; write {SCHEMA} first")
        if kind is Kind.MISSING and node.doc != CRDT_STATE and len(path.parts) == 3:
            raise NotFound(f"{path}: no document {node.doc!r} (mkdir realtime/{node.doc} first)")
        raise read_only(path, f"only documents (mkdir), {SCHEMA}, fields and <doc>{STATE_SUFFIX} go here")

    def _field_handle(self, caller: Caller, node: _Node, flags: int) -> Handle:
        seen = self._field(node.state, node.name)
        if (flags & os.O_ACCMODE) != os.O_WRONLY:
            self.writes.observe(caller, node.doc, node.name, seen)  # a reader's base (SPEC §5)
        content = seen.text.encode("utf-8")
        attr = self._file(0o666, len(content), node.state.mtime_ns)
        if not _writes(flags):
            return BufferHandle(caller, bytearray(content), attr)
        truncate = bool(flags & os.O_TRUNC)
        handle = StagedHandle(
            caller,
            bytearray() if truncate else bytearray(content),
            attr,
            writable=True,
            dirty=truncate,  # O_TRUNC alone empties the value, at the last close
            append=bool(flags & os.O_APPEND),
            opened=content,
            own=None if truncate else seen,
            inline_closes=False,
        )
        ftype = node.state.doc.schema[node.name]
        doc, name = node.doc, node.name
        handle.on_flush = lambda _: self.writes.flush(handle, doc, name, ftype, seen)
        return self.fields.track(node.path, handle)

    def _state_handle(self, caller: Caller, doc: str, raw: bytes, flags: int) -> Handle:
        attr = self._file(0o666, len(raw), 0)
        if not _writes(flags):
            return BufferHandle(caller, bytearray(raw), attr)
        truncate = bool(flags & os.O_TRUNC)
        handle = StagedHandle(
            caller,
            bytearray() if truncate else bytearray(raw),
            attr,
            writable=True,
            append=bool(flags & os.O_APPEND),
            inline_closes=False,
        )
        handle.on_flush = lambda h: self.merge_state(h.caller, doc, bytes(h.data))
        return handle

    def merge_state(self, caller: Caller, doc: str, data: bytes) -> None:
        """A state written into ``.crdt_state/`` is merged into the stored one, never written over it."""
        self.ws.realtime.merge_state(caller.agent, doc, decode(data, f"{REALTIME}/{CRDT_STATE}/{doc}{STATE_SUFFIX}"))

    def _schema_handle(self, caller: Caller, node: _Node, flags: int, staged: bytes) -> Handle:
        pending, doc = node.pending, node.doc
        if pending is None:
            raise NotFound(f"{REALTIME}/{doc}: no such document")
        truncate = bool(flags & os.O_TRUNC)
        handle = StagedHandle(
            caller,
            bytearray(b"" if truncate else staged),
            self._file(0o644, 0, 0),
            writable=True,
            append=bool(flags & os.O_APPEND),
            inline_closes=False,
        )

        def unstage() -> None:
            with self._lock:
                if handle in pending.staged:
                    pending.staged.remove(handle)

        def create(h: BufferHandle) -> None:
            try:
                self.create_document(h.caller, doc, bytes(h.data))
            except BaseException:
                unstage()  # refused at close: the directory is empty again now, not only at the (later) release
                raise

        handle.on_flush = create
        handle.on_release = lambda _: unstage()
        with self._lock:
            pending.staged.append(handle)
        return handle

    def create_document(self, caller: Caller, doc: str, data: bytes) -> None:
        """``.schema.json`` arrived: ``{"field": "type", ...}`` creates the document; anything else is EINVAL."""
        self.ws.realtime.create(caller.agent, doc, parse_schema(data, f"{REALTIME}/{doc}/{SCHEMA}"))
        with self._lock:
            self._pending.pop(doc, None)

    # -- directories ------------------------------------------------------------------------------------------

    def mkdir(self, caller: Caller, path: ViewPath, mode: int) -> None:
        node = self._node(path)
        if node.kind in (Kind.DOC, Kind.PENDING, Kind.STATE_DIR, Kind.ROOT):
            raise AlreadyExists(f"{path}: exists")
        if node.kind is not Kind.NO_DOC:
            raise read_only(path, "documents are the only directories here")
        check_doc_id(node.doc)
        self.ws.require_actor(caller.agent)
        with self._lock:
            if node.doc in self._pending:
                raise AlreadyExists(f"{path}: exists (waiting for its {SCHEMA})")
            self._pending[node.doc] = _Pending(caller.agent, time.time_ns())

    def rmdir(self, caller: Caller, path: ViewPath) -> None:
        node = self._node(path)
        if node.kind is Kind.PENDING and node.pending is not None:
            if self.scratch.has_files(caller.agent, path):
                raise NotEmpty(f"{path}: not empty")
            with self._lock:
                if node.pending.staged:
                    raise NotEmpty(f"{path}: its {SCHEMA} is being written")
                self._pending.pop(node.doc, None)
            self.scratch.remove_dir(caller.agent, path)
            return
        self.getattr(path)
        raise read_only(path, "realtime documents are permanent")

    # -- unlink, rename, links --------------------------------------------------------------------------------

    def unlink(self, caller: Caller, path: ViewPath) -> None:
        node = self._node(path)
        if node.kind is Kind.SCRATCH:
            self.scratch.unlink(caller.agent, path)
            return
        self.getattr(path)
        raise read_only(path, "fields, schemas, snapshots and states cannot be deleted")

    def rename(self, caller: Caller, old: ViewPath, new: ViewPath, flags: int) -> None:
        if flags & ~RENAME_NOREPLACE:
            raise NotSupported(f"rename {old} → {new}: flags {flags:#x} are not supported here")
        self._finish(old)
        self._finish(new)
        src, dst = self._node(old), self._node(new)
        if (
            src.kind is Kind.SCRATCH
            and dst.kind is Kind.SCRATCH
            and (dst.cached or dst.pending or dst.doc == CRDT_STATE)
        ):
            self.scratch.rename(caller.agent, old, new, noreplace=bool(flags & RENAME_NOREPLACE))
        elif src.kind in (Kind.FIELD, Kind.STATE) and dst.kind is Kind.SCRATCH and old.parent == new.parent:
            self._backup(caller, src, new)
        elif src.kind is Kind.SCRATCH and dst.kind in (Kind.FIELD, Kind.STATE, Kind.NEW_STATE, Kind.NEW_SCHEMA):
            if flags & RENAME_NOREPLACE and dst.kind in (Kind.FIELD, Kind.STATE):
                raise AlreadyExists(f"{new}: exists")
            self._save(caller, old, dst)
        else:
            self.getattr(old)
            raise read_only(old, f"cannot rename {src.kind.value} to {dst.kind.value} ({new})")

    def _backup(self, caller: Caller, src: _Node, new: ViewPath) -> None:
        """An editor moving the original aside: the field stays, the backup gets a copy of its text."""
        data = self._field(src.state, src.name).text.encode() if src.kind is Kind.FIELD else src.state.raw
        self.scratch.write(caller.agent, new, data)

    def _save(self, caller: Caller, old: ViewPath, dst: _Node) -> None:
        """Write to temp, rename over: a commit of the temp file's content (which then goes away)."""
        data = self.scratch.read(caller.agent, old)
        if dst.kind is Kind.FIELD:
            self.writes.commit(caller, dst.doc, dst.name, data)
        elif dst.kind is Kind.NEW_SCHEMA:
            self.create_document(caller, dst.doc, data)
        else:
            self.merge_state(caller, dst.doc, data)
        self.scratch.unlink(caller.agent, old)

    def symlink(self, caller: Caller, path: ViewPath, target: bytes) -> None:
        node = self._node(path)
        if node.kind is Kind.SCRATCH and (node.cached or node.pending or node.doc == CRDT_STATE):
            self.scratch.symlink(caller.agent, path, target)  # emacs' lock files
            return
        raise read_only(path, "no symbolic links in the realtime zone")

    def link(self, caller: Caller, existing: ViewPath, new: ViewPath) -> None:
        raise read_only(new, "no hard links in the realtime zone")

    def may_write(self, caller: Caller, path: ViewPath) -> bool:
        """For ``access(W_OK)``: fields, states, directories and scratch files take writes; generated files do not."""
        return self._node(path).kind not in (Kind.SCHEMA, Kind.SNAPSHOT, Kind.MISSING, Kind.UNKNOWN, Kind.NO_DOC)

    # -- setattr and xattrs -----------------------------------------------------------------------------------

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> None:
        self._finish(path)
        node = self._node(path)
        if node.kind is Kind.SCRATCH:
            if handle is not None and changes.size is not None:
                handle.truncate(changes.size)
                changes = dataclasses.replace(changes, size=None)
            self.scratch.setattr(caller.agent, path, changes)
            return
        if not self.may_write(caller, path):  # generated: a touch is refused as any write (EACCES), never a silent 0
            raise read_only(path, f"{node.kind.value} is generated")
        current = handle.getattr() if handle is not None else self.getattr(path)
        if changes.mode is not None and stat.S_IMODE(changes.mode) != stat.S_IMODE(current.mode):
            raise read_only(path, "the mode of realtime nodes is fixed")
        if changes.uid not in (None, current.uid) or changes.gid not in (None, current.gid):
            raise read_only(path, "realtime nodes are shared; their owner is fixed")
        if changes.size is None:
            return  # times: accepted and ignored, the content is generated
        if handle is not None:
            handle.truncate(changes.size)
        elif node.kind in (Kind.FIELD, Kind.STATE):
            writer = self.open(caller, path, os.O_RDWR)
            try:
                writer.truncate(changes.size)
                writer.flush()
            finally:
                writer.release()
        else:
            raise read_only(path, "generated, read-only")

    def getxattr(self, caller: Caller, path: ViewPath, name: str) -> bytes:
        node = self._node(path)
        if node.kind is Kind.SCRATCH and name == OWNER:  # an agent's own file
            return (caller.agent if self.scratch.exists(caller.agent, path) else self._scratch_owner(path)).encode()
        self.getattr(path)
        if name == OWNER:
            return (node.pending.creator if node.kind is Kind.PENDING and node.pending else SHARED).encode()
        if name == TYPE and node.kind is Kind.FIELD:
            return node.state.doc.schema[node.name].encode()
        raise NoAttribute(f"{path}: no attribute {name}")

    def listxattr(self, caller: Caller, path: ViewPath) -> list[str]:
        node = self._node(path)
        self.getattr(path)
        return [OWNER, TYPE] if node.kind is Kind.FIELD else [OWNER]

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None:
        node = self._node(path)
        if node.kind is Kind.SCRATCH:
            raise NotSupported(f"{path}: scratch files carry no attributes")
        self.getattr(path)
        raise read_only(path, f"{name}: realtime attributes are generated")

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None:
        self.setxattr(caller, path, name, b"")
