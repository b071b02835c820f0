"""``handoff/``: formal deliveries, ``handoff/<from>_to_<to>/<file>`` with a generated ``<file>.meta.json`` (SPEC §4).

Only ``<from>`` (or a supervisor, audited by the store) writes into its box; everyone reads. A write is staged in
memory and delivered at ``flush`` (the ``close()``) with ``ws.handoff.deliver``, which (re)writes the file and its
metadata; ``*.meta.json`` is read-only for everyone.

- ``mkdir handoff/<me>_to_<agent>`` opens a box (``<agent>`` must be known, and not ``<me>``); nothing else can
  be created in ``handoff/``, and a box has no sub-directories of its own making.
- The message is the xattr ``user.omx.message``: set on a delivered file it rewrites the metadata at once
  (``setfattr`` right after ``cp``); set on a file that is open for writing it also applies at that file's close.
  A redelivery without a new message keeps the previous one (an edit in vim is still the same delivery).
- Deleting a delivery (``rm``) is allowed for ``<from>`` and removes the file and its metadata: a sender can
  withdraw what it sent by mistake. Renaming moves a delivery (new delivery, old one withdrawn).
- Editor temp files and write-to-temp-then-rename saves go to ``<from>``'s scratch area (``scratch.py``) and
  become a delivery only when renamed onto a real name.
"""

from __future__ import annotations

import os
import stat
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from omxfs.errors import (
    AlreadyExists,
    InvalidInput,
    IsADirectory,
    NoAttribute,
    NotEmpty,
    NotFound,
    NotSupported,
    OmxError,
    ZoneDenied,
)
from omxfs.fuse.provenance import READER, ProvenanceReader
from omxfs.fuse.zones.base import Attr, AttrChanges, BufferHandle, Caller, Handle, ViewPath
from omxfs.fuse.zones.notes import AgentNotes
from omxfs.fuse.zones.scratch import (
    FileHandle,
    ScratchView,
    directory_attr,
    file_attr,
    new_file_attr,
    text_value,
)
from omxfs.fuse.zones.staging import StagedHandle, Staging
from omxfs.store.atomic import lstat, open_dir
from omxfs.store.handoff import is_meta
from omxfs.store.layout import (
    FROM,
    MESSAGE,
    META_SUFFIX,
    OWNER,
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    SHA256,
    TIMESTAMP,
    TO,
)
from omxfs.store.names import parse_handoff_dir
from omxfs.store.scratch import is_scratch_name
from omxfs.store.tree import open_in

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

DELIVERY_XATTRS = (OWNER, FROM, TO, MESSAGE, TIMESTAMP, SHA256)


class Where:
    """A view path in ``handoff/``, split: the box's sender and recipient, and the file's path inside the box."""

    def __init__(self, path: ViewPath) -> None:
        parts = path.parts
        self.path = path
        self.box = parts[1] if len(parts) > 1 else ""
        pair = parse_handoff_dir(self.box) if self.box else ("", "")
        if pair is None:
            raise NotFound(f"{path}: no such box (boxes are named <from>_to_<to>)")
        self.sender, self.recipient = pair
        self.filename = "/".join(parts[2:])

    @property
    def rel(self) -> PurePosixPath:
        """The path below ``WS/handoff/``."""
        return PurePosixPath(self.box, self.filename) if self.box else PurePosixPath(".")


class HandoffHandler:
    """``handoff/``, its boxes and the deliveries in them."""

    def __init__(self, ws: Workspace, provenance: ProvenanceReader = READER) -> None:
        self.ws = ws
        self.zone = ws.handoff
        self.provenance = provenance
        self.scratch = ScratchView(ws)
        self.notes = AgentNotes()
        self.staging = Staging()

    # -- helpers --------------------------------------------------------------------------------------------------

    def _stat(self, where: Where) -> os.stat_result | None:
        st = lstat(self.zone.dir, where.rel)
        if st is None or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            return None
        if stat.S_ISREG(st.st_mode) and is_meta(where.filename):
            # Metadata whose delivery is gone (a withdrawal cut short) is not shown.
            delivered = lstat(self.zone.dir, where.rel.with_name(where.rel.name[: -len(META_SUFFIX)]))
            if delivered is None or not stat.S_ISREG(delivered.st_mode):
                return None
        return st

    def _open_box(self, where: Where) -> bool:
        """Whether ``where`` is a box between two distinct known agents: such a box always exists in the view
        (``cp file handoff/alice_to_bob/`` just works); it is made on disk at its first delivery."""
        return (
            bool(where.box)
            and not where.filename
            and where.sender != where.recipient
            and self.ws.config.knows(where.sender)
            and self.ws.config.knows(where.recipient)
        )

    def _delivered(self, where: Where) -> bool:
        st = self._stat(where)
        return st is not None and stat.S_ISREG(st.st_mode) and not is_meta(where.filename)

    def _is_scratch(self, caller: Caller | None, where: Where) -> bool:
        return caller is not None and bool(where.filename) and self.scratch.exists(caller.agent, where.path)

    def _check_writer(self, caller: Caller, where: Where) -> None:
        """Only the box's sender (or a supervisor) writes in it; metadata never; not to oneself."""
        if not where.filename:
            raise ZoneDenied(f"{where.path}: a box is written by delivering files into it")
        self.zone.check_write(caller.agent, where.sender, where.recipient, where.filename)
        if where.sender == where.recipient:
            raise InvalidInput(f"{where.sender} cannot hand a file off to itself: use the private zone")

    def _require_parent(self, where: Where) -> None:
        st = lstat(self.zone.dir, where.rel.parent)
        if st is not None and stat.S_ISDIR(st.st_mode):
            return
        if st is None and where.rel.parent == PurePosixPath(where.box) and self._open_box(Where(where.path.parent)):
            return  # the store makes the box at the first delivery
        raise NotFound(f"{where.path.parent}: no such box (boxes are handoff/<from>_to_<to> between known agents)")

    def _message_for(self, caller: Caller, where: Where, *also: ViewPath) -> str | None:
        for path in (where.path, *also):
            pending = self.notes.message(caller.agent, path)
            if pending is not None:
                return pending
        return None

    def deliver(
        self,
        caller: Caller,
        where: Where,
        content: bytes,
        message: str | None,
        provenance: dict[str, str] | None = None,
    ) -> None:
        """(Re)deliver ``content``; without a new message the previous delivery's is kept.

        ``provenance`` is the writer's omx run and step (read at open); by default the caller's now.
        """
        if message is None:
            try:
                message = self.zone.meta(where.sender, where.recipient, where.filename).message
            except (NotFound, InvalidInput):
                message = ""
        if provenance is None:
            provenance = self.provenance.of(caller.pid)
        self.zone.deliver(
            caller.agent, where.recipient, where.filename, content, message, sender=where.sender, provenance=provenance
        )

    def _staged(self, caller: Caller, where: Where, data: bytes, *, dirty: bool, flags: int) -> StagedHandle:
        provenance = self.provenance.of(caller.pid)  # now: the writer may have exited by the last close

        def on_flush(handle: BufferHandle) -> None:
            pending = self.notes.message(caller.agent, where.path)
            self.deliver(caller, where, bytes(handle.data), pending, provenance)
            self.notes.used_message(caller.agent, where.path, pending)

        def on_release(handle: StagedHandle) -> None:
            self.staging.remove(where.path, handle)
            if not self.staging.held_by(caller.agent, where.path):
                self.notes.set_message(caller.agent, where.path, None)  # a message for a write that never came

        append = bool(flags & os.O_APPEND)
        handle = StagedHandle(caller, bytearray(data), new_file_attr(), writable=True, dirty=dirty, append=append)
        handle.on_flush = on_flush
        self.staging.track(where.path, handle)
        handle.on_release = on_release
        return handle

    # -- nodes ----------------------------------------------------------------------------------------------------

    def uncached(self, path: ViewPath) -> bool:
        """Nodes the kernel must not cache (``ops``): scratch names, which show each agent its own file, and files
        being delivered, which exist only once the delivery succeeds and whose sender sees the staged size."""
        where = Where(path)
        if not where.filename:
            return False
        return is_scratch_name(path.name) or self.staging.get(path) is not None

    def getattr(self, path: ViewPath, caller: Caller | None = None) -> Attr:
        """``caller`` says whose scratch files to show; without it a scratch name shows the first holder's."""
        where = Where(path)
        if where.filename and is_scratch_name(path.name):
            for agent in [caller.agent] if caller is not None else self.scratch.owners(path):
                if self.scratch.exists(agent, path):
                    return self.scratch.getattr(agent, path)
        own = self.staging.of(caller.agent, path) if caller is not None and where.filename else None
        if own is not None:  # the sender's fstat and lseek(SEEK_END) see what it has written so far
            return own.getattr()
        st = self._stat(where)
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                return directory_attr(st, writable=True)
            return file_attr(st, 0o444 if is_meta(where.filename) else 0o644)
        staged = self.staging.get(path)
        if staged is not None and where.filename:
            return staged.getattr()
        if self._open_box(where):  # not on disk yet: the times of handoff/ itself, not 1970
            return directory_attr(lstat(self.zone.dir, PurePosixPath(".")), writable=True)
        raise NotFound(f"{path}: no such file or directory")

    def listdir(self, caller: Caller, path: ViewPath) -> list[str]:
        where = Where(path)
        try:
            dir_fd = open_dir(self.zone.dir, where.rel)
        except InvalidInput:
            raise NotFound(f"{path}: not a directory") from None
        except NotFound:
            if not self._open_box(where):
                raise
            names = []  # a box no one has delivered into yet
        else:
            try:
                with os.scandir(dir_fd) as it:
                    names = [e.name for e in it]
            finally:
                os.close(dir_fd)
        if not where.box:
            # Existing boxes, and the caller's own outgoing boxes: where it can deliver.
            outgoing = [f"{caller.agent}_to_{a}" for a in self.ws.config.agents if a != caller.agent]
            boxes = {n for n in names if parse_handoff_dir(n) and self._stat(Where(path / n)) is not None}
            return sorted(boxes | {n for n in outgoing if self._open_box(Where(path / n))})
        shown = {n for n in names if self._stat(Where(path / n)) is not None}
        shown.update(self.scratch.names(caller.agent, path))
        shown.update(self.staging.names_in(path))
        return sorted(shown)

    def readlink(self, path: ViewPath, caller: Caller | None = None) -> bytes:
        for agent in [caller.agent] if caller is not None else self.scratch.owners(path):
            if self.scratch.exists(agent, path):
                return self.scratch.readlink(agent, path)
        raise InvalidInput(f"{path}: not a symbolic link")

    def may_write(self, caller: Caller, path: ViewPath) -> bool:
        """For ``access(W_OK)``: whether ``caller`` may change ``path`` (the box's sender, a supervisor)."""
        try:
            where = Where(path)
            if not where.box:
                return True  # mkdir of one's own boxes
            if is_meta(where.filename):
                return False
            self.zone.check_write(caller.agent, where.sender, where.recipient, where.filename or "x")
        except OmxError:
            return False
        return True

    # -- files ----------------------------------------------------------------------------------------------------

    def open(self, caller: Caller, path: ViewPath, flags: int) -> Handle:
        self.staging.settle(path)
        where = Where(path)
        if not where.filename:
            raise IsADirectory(f"{path}: is a directory")
        if self._is_scratch(caller, where):
            return self.scratch.open(caller, path, flags)
        st = self._stat(where)
        if st is None:
            raise NotFound(f"{path}: no such file (or it is still being written by its sender)")
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectory(f"{path}: is a directory")
        if flags & os.O_ACCMODE == os.O_RDONLY:
            return FileHandle(caller, open_in(self.zone.dir, where.rel), writable=False)
        self._check_writer(caller, where)
        data = b"" if flags & os.O_TRUNC else self.zone.read(where.sender, where.recipient, where.filename).content
        return self._staged(caller, where, data, dirty=bool(flags & os.O_TRUNC), flags=flags)

    def create(self, caller: Caller, path: ViewPath, mode: int, flags: int) -> Handle:
        if len(path.parts) < 3:
            raise ZoneDenied(f"{path}: only <from>_to_<to> directories can be made in handoff/")
        where = Where(path)
        self._require_parent(where)
        self._check_writer(caller, where)
        if is_scratch_name(path.name):
            return self.scratch.create(caller, path, mode, flags)
        if self._stat(where) is not None:
            if flags & os.O_EXCL:
                raise AlreadyExists(f"{path}: exists")
            return self.open(caller, path, flags)
        return self._staged(caller, where, b"", dirty=True, flags=flags)

    # -- changing the tree ----------------------------------------------------------------------------------------

    def mkdir(self, caller: Caller, path: ViewPath, mode: int) -> None:
        if len(path.parts) == 1:
            raise AlreadyExists("handoff/ exists")
        if len(path.parts) == 2 and parse_handoff_dir(path.name) is None:
            raise ZoneDenied(f"{path}: only boxes named <from>_to_<to> (agent names) can be made in handoff/")
        where = Where(path)
        if where.filename:
            raise ZoneDenied(f"{path}: a box has no sub-directories: deliver files into it")
        self.zone.make_box(caller.agent, where.sender, where.recipient)

    def rmdir(self, caller: Caller, path: ViewPath) -> None:
        where = Where(path)
        if not where.box:
            raise ZoneDenied("handoff/ cannot be removed")
        self.zone.check_write(caller.agent, where.sender, where.recipient, where.filename or "x")
        st = self._stat(where)
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise NotFound(f"{path}: no such directory")
        if self.scratch.has_files(caller.agent, path) or self.staging.names_in(path):
            raise NotEmpty(f"{path}: directory not empty")
        self.zone.remove_dir(where.rel)
        self.scratch.remove_dir(caller.agent, path)

    def unlink(self, caller: Caller, path: ViewPath) -> None:
        """A sender withdraws a delivery (file and metadata); metadata alone is never deleted."""
        self.staging.settle(path)
        where = Where(path)
        if self._is_scratch(caller, where):
            self.scratch.unlink(caller.agent, path)
            return
        if is_meta(where.filename) and self._stat(where) is not None:
            raise ZoneDenied(f"{path}: generated metadata; delete the delivered file to withdraw the delivery")
        if not self._delivered(where):
            raise NotFound(f"{path}: no such file")
        self._check_writer(caller, where)
        self.zone.retract(caller.agent, where.recipient, where.filename, sender=where.sender)

    def rename(self, caller: Caller, old: ViewPath, new: ViewPath, flags: int) -> None:
        """temp → name delivers; delivery → temp copies; delivery → name moves; boxes and metadata stay put."""
        self.staging.settle(old)
        self.staging.settle(new)
        src, dst = Where(old), Where(new)
        if not src.filename or not dst.filename:
            raise ZoneDenied("boxes cannot be renamed: they are named after their sender and recipient")
        if flags & RENAME_EXCHANGE:
            raise InvalidInput("RENAME_EXCHANGE is not supported in handoff/")
        if is_meta(src.filename) or is_meta(dst.filename):
            raise ZoneDenied("*.meta.json files are generated by the workspace and read-only")
        self._check_writer(caller, dst)
        self._require_parent(dst)
        if old == new:
            self.getattr(old, caller)
            return
        dst_st = self._stat(dst)
        if flags & RENAME_NOREPLACE and (dst_st is not None or self._is_scratch(caller, dst)):
            raise AlreadyExists(f"{new}: exists")
        if dst_st is not None and stat.S_ISDIR(dst_st.st_mode):
            raise IsADirectory(f"{new}: is a directory")
        if self._is_scratch(caller, src):
            if is_scratch_name(new.name):
                self.scratch.rename(caller.agent, old, new)
                return
            content = self.scratch.read(caller.agent, old)
            self.deliver(caller, dst, content, self._message_for(caller, dst, old))
            self.notes.set_message(caller.agent, new, None)
            self.notes.set_message(caller.agent, old, None)
            self.scratch.unlink(caller.agent, old)
            return
        if not self._delivered(src):
            raise NotFound(f"{old}: no such file")
        self._check_writer(caller, src)
        delivery = self.zone.read(src.sender, src.recipient, src.filename)
        if is_scratch_name(new.name):
            self.scratch.write(caller.agent, new, delivery.content)  # a backup copy; the delivery stays
            return
        message = self._message_for(caller, dst)
        self.deliver(caller, dst, delivery.content, delivery.meta.message if message is None else message)
        self.zone.retract(caller.agent, src.recipient, src.filename, sender=src.sender)

    def symlink(self, caller: Caller, path: ViewPath, target: bytes) -> None:
        if len(path.parts) < 3 or not is_scratch_name(path.name):
            raise ZoneDenied(f"{path}: symbolic links cannot be delivered (only editors' lock links are kept)")
        where = Where(path)
        self._require_parent(where)
        self._check_writer(caller, where)
        self.scratch.symlink(caller.agent, path, target)

    def link(self, caller: Caller, existing: ViewPath, new: ViewPath) -> None:
        raise ZoneDenied(f"{new}: hard links are not supported in handoff/")

    def setattr(self, caller: Caller, path: ViewPath, changes: AttrChanges, handle: Handle | None) -> None:
        """Truncation is a write (by the sender); mode, owner and times belong to the store: ignored for who may
        write the node, refused (EACCES, as in another agent's private zone) for the rest, never a silent 0."""
        self.staging.settle(path)
        where = Where(path)
        if self._is_scratch(caller, where):
            if isinstance(handle, FileHandle) and changes.size is not None:
                handle.truncate(changes.size)
                changes = AttrChanges(mode=changes.mode, atime_ns=changes.atime_ns, mtime_ns=changes.mtime_ns)
            self.scratch.setattr(caller.agent, path, changes)
            return
        if changes.size is None:
            if not self.may_write(caller, path):
                why = "metadata is generated" if is_meta(where.filename) else f"only {where.sender} writes this box"
                raise ZoneDenied(f"{path}: {why}; its mode, owner and times cannot be changed")
            return
        if isinstance(handle, BufferHandle) and handle.writable:
            handle.truncate(changes.size)
            return
        if not self._delivered(where):
            raise NotFound(f"{path}: no such file") if self._stat(where) is None else IsADirectory(f"{path}")
        staged = self.open(caller, path, os.O_WRONLY)
        try:
            staged.truncate(changes.size)
            staged.flush()
        finally:
            staged.release()

    # -- xattrs ---------------------------------------------------------------------------------------------------

    def _values(self, caller: Caller, where: Where) -> dict[str, str]:
        """The omx attributes of a node: a delivery's from its metadata; a box's and a metadata file's: the pair."""
        if self._is_scratch(caller, where) or (self._stat(where) is None and self.staging.get(where.path)):
            pending = self.notes.message(caller.agent, where.path)
            return {} if pending is None else {MESSAGE: pending}
        st = self._stat(where)
        if st is None or not where.box:
            return {}
        values = {OWNER: where.sender, FROM: where.sender, TO: where.recipient}
        if stat.S_ISDIR(st.st_mode) or is_meta(where.filename):
            return values
        meta = self.zone.meta(where.sender, where.recipient, where.filename)
        values.update({MESSAGE: meta.message, TIMESTAMP: meta.timestamp, SHA256: meta.sha256})
        return values

    def getxattr(self, caller: Caller, path: ViewPath, name: str) -> bytes:
        self.staging.settle(path)
        values = self._values(caller, Where(path))
        if name not in values:
            raise NoAttribute(f"{path} has no attribute {name}")
        return values[name].encode("utf-8")

    def listxattr(self, caller: Caller, path: ViewPath) -> list[str]:
        self.staging.settle(path)
        return list(self._values(caller, Where(path)))

    def setxattr(self, caller: Caller, path: ViewPath, name: str, value: bytes) -> None:
        """``user.omx.message`` by the sender: rewrites the metadata now, and applies at an open file's close."""
        self.staging.settle(path)
        where = Where(path)
        if name in DELIVERY_XATTRS and name != MESSAGE:
            raise ZoneDenied(f"{name} is read-only: it describes the delivery")
        if name != MESSAGE:
            raise NotSupported(f"{name}: only {MESSAGE} can be set in handoff/")
        if not where.filename or is_meta(where.filename):
            raise ZoneDenied(f"{path}: set the message on the delivered file")
        self._check_writer(caller, where)
        text = text_value(name, value)
        scratch = self._is_scratch(caller, where)
        delivered = not scratch and self._delivered(where)
        if not delivered and not scratch and self.staging.get(path) is None:
            raise NotFound(f"{path}: no such file")
        if scratch or self.staging.held_by(caller.agent, path):
            self.notes.set_message(caller.agent, path, text)
        if delivered and caller.agent == where.sender:
            self.zone.set_message(caller.agent, where.recipient, where.filename, text)
        elif delivered:  # a supervisor: the store's set_message only knows the actor's own boxes
            self.deliver(caller, where, self.zone.read(where.sender, where.recipient, where.filename).content, text)

    def removexattr(self, caller: Caller, path: ViewPath, name: str) -> None:
        if name == MESSAGE:
            self.setxattr(caller, path, name, b"")
            self.notes.set_message(caller.agent, path, None)
            return
        if name in DELIVERY_XATTRS:
            raise ZoneDenied(f"{name} is read-only: it describes the delivery")
        raise NoAttribute(f"{path} has no attribute {name}")
