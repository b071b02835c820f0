"""``MountBackend``: the workspace tools done with plain file operations and xattrs on an omxfs mount (SPEC §4-§5).

Every call is what any other program on the mount could do (open, read, write, close, mkdir, get/setxattr), so
the mount's rules and merges apply exactly as they do to editors and shells, and the agent is whoever the mount
sees: the calling process's identity (its initial ``OMX_AGENT``, the uid map, or the mount's default). A
backend can therefore act only as the agent its process *is* on the mount; the constructor checks that.

Failures come back as errnos and are turned into the store's own errors in one place,
``omxfs.errors.from_mount_errno``; a collaborative write refused with EBUSY becomes a ``Conflict`` carrying the
record the mount kept under ``collaborative/.conflicts/<agent>/``, so the tools answer
exactly as they do with ``StoreBackend``.

Realtime edits read the field and write it back in the same process: the mount diffs the write against what
this process read last (its base) and merges it with what others did meanwhile. A lock keeps threads of one
process from interleaving their read-then-write pairs, since the mount tells processes, not threads, apart.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath
from typing import Any

from agent.workspace_tools import zone_branches, zone_history
from agent.workspace_tools.backend import (
    BranchChanges,
    BranchForked,
    BranchListing,
    CheckpointInfo,
    Delivery,
    FieldChange,
    FieldValue,
    HandoffNote,
    RefusedWrite,
    TextEdit,
    VersionedText,
    VersionInfo,
    ZoneChanges,
    ZoneRestored,
    refused_write,
)
from omxfs.checkpoints import ZoneHistory
from omxfs.errors import (
    AlreadyExists,
    IdentityMismatch,
    InvalidInput,
    NotFound,
    NotSupported,
    OmxError,
    from_mount_errno,
)
from omxfs.store.layout import (
    AGENTS,
    BRANCH_MARK,
    COLLABORATIVE,
    CONFLICTS,
    CURRENT,
    EXPECTED,
    HANDOFF,
    HISTORY,
    MESSAGE,
    META_SUFFIX,
    REALTIME,
    REJECTED,
    SCHEMA,
    SNAPSHOT,
    TEMP_SUFFIX,
    TYPE,
    VERSION,
    VERSIONS,
    entry_name,
    version_name,
)
from omxfs.store.workspace import Workspace
from omxfs.view.env import VIEW_ENV
from omxfs.view.locate import store_beneath

NO_CHECK = -1

#: the mount keeps one base per process and field: one read-then-write pair at a time in this process
_EDIT_LOCK = threading.Lock()


def _failure(exc: OSError, what: str, conflict: Callable[[], dict[str, Any]] | None = None) -> OmxError:
    """``errors.from_mount_errno``; an errno that is not the caller's to fix (EIO) is re-raised as it is."""
    error = from_mount_errno(exc, what, conflict)
    if error is None:
        raise exc
    return error


@contextmanager
def _mapped(what: str, conflict: Callable[[], dict[str, Any]] | None = None) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise _failure(exc, what, conflict) from None


def _relative(path: str, what: str = "path") -> str:
    """A clean path inside a zone, so that no ``..`` lets the kernel walk out of it."""
    if not isinstance(path, str) or not path:
        raise InvalidInput(f"empty {what}")
    if path.startswith("/"):
        raise InvalidInput(f"absolute {what} {path!r}: paths are relative to the zone")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        raise InvalidInput(f"{what} {path!r} names no file")
    for part in parts:
        if part == ".." or "\0" in part:
            raise InvalidInput(f"{what} {path!r}: no '..' or NUL in a path")
    return "/".join(parts)


def _name(name: str, what: str) -> str:
    """One path component: an agent, a document or a field."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\0" in name:
        raise InvalidInput(f"{what} {name!r} is not a valid name")
    return name


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode text (it has a lone surrogate)") from None


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _read_text(path: Path) -> str:
    return _read_bytes(path).decode("utf-8", errors="replace")


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _initial_environment() -> dict[str, str]:
    """This process's environment as the mount reads it: /proc/self/environ, not ``os.environ``."""
    try:
        raw = _read_bytes(Path("/proc/self/environ"))
    except OSError:
        return dict(os.environ)
    pairs = (entry.partition(b"=") for entry in raw.split(b"\0") if entry)
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, _, v in pairs}


def _note(meta: Mapping[str, Any]) -> HandoffNote:
    return HandoffNote(meta["from"], meta["to"], meta["filename"], meta.get("message", ""), meta["timestamp"])


def _version(entry: Mapping[str, Any]) -> VersionInfo:
    return VersionInfo(entry["version"], entry["author"], entry.get("message", ""), entry["timestamp"])


def _set_lines(text: str) -> list[str]:
    return sorted({line.removesuffix("\r") for line in text.split("\n") if line.strip()})


def _check_element(element: str) -> str:
    if not element.strip():
        raise InvalidInput(f"or_set element must not be empty or blank: {element!r}")
    if "\n" in element or "\r" in element:
        raise InvalidInput(f"or_set element must not contain a line break: {element!r}")
    _encode(element, "or_set element")
    return element


def _parse(field_type: str, text: str, what: str) -> Any:
    """A field file's text as the field's plain value (SPEC §5, read column)."""
    try:
        if field_type == "or_set":
            return _set_lines(text)
        if field_type == "lww_map":
            return json.loads(text)
        if field_type == "pn_counter":
            return int(text.strip())
    except ValueError as exc:
        raise InvalidInput(f"{what}: unreadable {field_type} value: {exc}") from None
    return text


def _render(field_type: str, value: Any) -> str:
    """A whole value as the text of its field file (SPEC §5, write column), checked as ``StoreBackend`` does."""
    if field_type in ("lww_register", "rga"):
        if not isinstance(value, str):
            raise InvalidInput(f"a {field_type} field takes a string, not {type(value).__name__}")
        _encode(value, "value")
        return value
    if field_type == "or_set":
        if not isinstance(value, list) or not all(isinstance(e, str) for e in value):
            raise InvalidInput("an or_set field takes a list of strings")
        return "".join(f"{_check_element(e)}\n" for e in sorted(set(value)))
    if field_type == "lww_map":
        if not isinstance(value, dict):
            raise InvalidInput(f"an lww_map field takes an object, not {type(value).__name__}")
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if field_type == "pn_counter":
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInput(f"a pn_counter field takes an integer, not {type(value).__name__}")
        return str(value)
    raise InvalidInput(f"unknown field type {field_type!r}")


class MountBackend:
    """The ``WorkspaceBackend`` of ``agent`` on the omxfs mount at ``root``, as this process.

    Raises ``IdentityMismatch`` when the mount sees this process as another agent (start the process with
    ``OMX_AGENT=<agent>`` in its environment), ``InvalidInput`` when ``root`` is not a mount point.
    """

    def __init__(self, root: Path | str, agent: str) -> None:
        self.root = Path(root)
        self._agent = _name(agent, "agent")
        if not os.path.ismount(self.root):
            raise InvalidInput(f"{self.root} is not a mount point: mount the workspace with `omxfs mount`")
        self._check_identity()

    @property
    def agent(self) -> str:
        return self._agent

    def _check_identity(self) -> None:
        """The mount sees this process as ``agent``: its claim agrees, and it may create in ``agent``'s zone."""
        claimed = _initial_environment().get("OMX_AGENT")
        hint = f"start the process with OMX_AGENT={self.agent} in its environment"
        if claimed is not None and claimed != self.agent:
            raise IdentityMismatch(f"this process is {claimed!r} on the mount (OMX_AGENT), not {self.agent!r}: {hint}")
        zone = self.root / AGENTS / self.agent
        if not zone.is_dir():
            raise NotFound(f"no agent {self.agent!r} on the mount at {self.root}")
        probe = zone / f".omx-identity-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except PermissionError:
            raise IdentityMismatch(
                f"the mount at {self.root} does not see this process as {self.agent!r}: {hint}"
            ) from None
        os.close(fd)
        os.unlink(probe)

    # -- private zone -------------------------------------------------------------------------------------------

    def write_private(self, filename: str, content: str) -> str:
        rel = _relative(filename, "filename")
        data = _encode(content, "content")
        target = self.root / AGENTS / self.agent / rel
        with _mapped(f"agents/{self.agent}/{rel}"):
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as f:
                f.write(data)
        return f"agents/{self.agent}/{rel}"

    def read_private(self, owner: str, filename: str) -> str:
        rel = f"agents/{_name(owner, 'agent')}/{_relative(filename, 'filename')}"
        with _mapped(rel):
            return _read_text(self.root / rel)

    def list_private(self, owner: str) -> list[str]:
        zone = self.root / AGENTS / _name(owner, "agent")
        with _mapped(f"agents/{owner}"):
            if not zone.is_dir():
                raise NotFound(f"no agent {owner!r}")
            files = []
            for top, dirs, names in os.walk(zone):
                if top == str(zone):  # the mount's directories of the zone's branches are not the zone's files
                    dirs[:] = [d for d in dirs if not d.startswith(BRANCH_MARK)]
                files += [os.path.relpath(os.path.join(top, name), zone) for name in names]
        return sorted(files)

    # -- handoff zone -------------------------------------------------------------------------------------------

    def deliver(self, recipient: str, filename: str, content: str, message: str) -> HandoffNote:
        _name(recipient, "agent")
        if recipient == self.agent:
            raise InvalidInput(f"{self.agent} cannot hand a file off to itself: use the private zone")
        rel = _relative(filename, "filename")
        data = _encode(content, "content")
        note = _encode(message, "message")
        box = f"handoff/{self.agent}_to_{recipient}"
        if not (self.root / AGENTS / recipient).is_dir():
            raise NotFound(f"no agent {recipient!r}")
        with _mapped(f"{box}/{rel}"):
            fd = os.open(self.root / box / rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                os.setxattr(fd, MESSAGE, note)  # applies at this close: one delivery, with its message
                _write_fd(fd, data)
            finally:
                os.close(fd)  # the delivery happens here; its failure is the write's
            meta = json.loads(_read_bytes(self.root / box / f"{rel}{META_SUFFIX}"))
        return _note(meta)

    def inbox(self) -> list[HandoffNote]:
        suffix = f"_to_{self.agent}"
        notes = []
        with _mapped(HANDOFF):
            for box in sorted((self.root / HANDOFF).iterdir()):
                if not box.name.endswith(suffix):
                    continue
                for meta in sorted(box.rglob(f"*{META_SUFFIX}")):
                    try:
                        notes.append(_note(json.loads(_read_bytes(meta))))
                    except FileNotFoundError:  # withdrawn while listed
                        continue
        return sorted(notes, key=lambda n: (n.timestamp, n.sender, n.filename))

    def read_delivery(self, sender: str, filename: str) -> Delivery:
        rel = f"handoff/{_name(sender, 'agent')}_to_{self.agent}/{_relative(filename, 'filename')}"
        with _mapped(rel):
            content = _read_text(self.root / rel)
            meta = json.loads(_read_bytes(self.root / f"{rel}{META_SUFFIX}"))
        return Delivery(_note(meta), content)

    # -- collaborative zone -------------------------------------------------------------------------------------

    def collab_read(self, path: str) -> VersionedText:
        rel = _relative(path)
        with _mapped(f"collaborative/{rel}"):
            # reading the version observes it (it becomes this agent's base); its content is immutable
            version = int(os.getxattr(self._current(rel), VERSION))
            content = _read_text(self._versions(rel) / version_name(version))
        return VersionedText(content, self._entry(rel, version))

    def collab_write(self, path: str, content: str, message: str, expected_version: int) -> VersionInfo:
        """The content goes to a temp file first and is committed by renaming it onto the file (a save as
        ``sed -i`` makes it) on the base this call declares: the mount decides the commit with the content in hand,
        so a refused one is kept with it under ``.conflicts/`` (a base refused at ``open`` would be recorded with
        nothing written)."""
        rel = _relative(path)
        data = _encode(content, "content")
        note = _encode(message, "message")
        if isinstance(expected_version, bool) or not isinstance(expected_version, int) or expected_version < NO_CHECK:
            raise InvalidInput(f"expected_version must be an integer >= -1, not {expected_version!r}")
        target = self._current(rel)
        what = f"collaborative/{rel}"
        with _mapped(what):
            exists = bool(self.collab_history(rel))
            if not exists:
                target.parent.mkdir(parents=True, exist_ok=True)
        if not exists and expected_version > 0:
            with _mapped(what, lambda: self._conflict_record(rel)):
                try:
                    return self._create_on(rel, data, note, expected_version)
                except FileExistsError:
                    exists = True  # created meanwhile: written on as any existing file
        with _mapped(what):
            if exists:
                os.setxattr(target, EXPECTED, str(expected_version).encode())
                self._forget_message(target)  # the mount's default message, not one left over from a refused write
            temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                if note:
                    os.setxattr(fd, MESSAGE, note)  # the rename carries it to the file
                _write_fd(fd, data)
            finally:
                os.close(fd)
        with _mapped(what, lambda: self._conflict_record(rel)):
            try:
                os.rename(temp, target)  # the commit: EBUSY if the base is not the current version
            except OSError:
                with suppress(OSError):
                    os.unlink(temp)
                raise
            return self._committed(rel)

    def _create_on(self, rel: str, data: bytes, note: bytes, expected_version: int) -> VersionInfo:
        """Create a file that does not exist on a version it never had, declared on the open file: the mount
        commits it at the close on that base, which is a conflict it keeps with the content (unless other writers
        brought the file to that version meanwhile). FileExistsError: another writer created it first."""
        fd = os.open(self._current(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            os.setxattr(fd, EXPECTED, str(expected_version).encode())
            if note:
                os.setxattr(fd, MESSAGE, note)
            _write_fd(fd, data)
        finally:
            os.close(fd)  # the commit happens here
        return self._committed(rel)

    def _committed(self, rel: str) -> VersionInfo:
        """The entry of the version this agent just committed, which is its base now."""
        return self._entry(rel, int(os.getxattr(self._current(rel), EXPECTED)))

    def collab_history(self, path: str) -> list[VersionInfo]:
        """``history.json``, then the entries of versions committed since it was last brought up to date (it is
        derived from the ``v<N>.json`` entry files, which decide; see ``omxfs.store.collab``)."""
        rel = _relative(path)
        try:
            raw = _read_bytes(self._versions(rel) / HISTORY)
        except FileNotFoundError:
            raw = b"[]"
        except OSError as exc:
            raise _failure(exc, f"collaborative/{rel}") from None
        entries = [_version(entry) for entry in json.loads(raw)]
        while True:
            try:
                entry = json.loads(_read_bytes(self._versions(rel) / entry_name(len(entries) + 1)))
            except FileNotFoundError:
                return entries
            except OSError as exc:
                raise _failure(exc, f"collaborative/{rel}") from None
            entries.append(_version(entry))

    def collab_refused(self, path: str) -> list[RefusedWrite]:
        rel = PurePosixPath(_relative(path))
        directory = self.root / COLLABORATIVE / CONFLICTS / self.agent / rel.parent
        prefix = f"{rel.name}{REJECTED}"
        try:
            names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".json")]
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise _failure(exc, f"collaborative/.conflicts/{self.agent}/{rel}") from None
        records = [json.loads(_read_bytes(directory / name)) for name in names]
        return sorted((refused_write(r) for r in records), key=lambda r: r.timestamp)

    def collab_rollback(self, path: str, to_version: int) -> VersionInfo:
        rel = _relative(path)
        if isinstance(to_version, bool) or not isinstance(to_version, int) or to_version < 1:
            raise InvalidInput(f"version must be a positive integer, not {to_version!r}")
        try:
            old = _read_text(self._versions(rel) / version_name(to_version))
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise NotFound(f"collaborative/{rel} has no version {to_version}") from None
            raise _failure(exc, f"collaborative/{rel}") from None
        return self.collab_write(rel, old, f"rollback to version {to_version}", NO_CHECK)

    def _current(self, rel: str) -> Path:
        return self.root / COLLABORATIVE / CURRENT / rel

    def _versions(self, rel: str) -> Path:
        return self.root / COLLABORATIVE / VERSIONS / rel

    def _entry(self, rel: str, version: int) -> VersionInfo:
        for entry in self.collab_history(rel):
            if entry.version == version:
                return entry
        raise NotFound(f"collaborative/{rel} has no version {version}")

    def _conflict_record(self, rel: str) -> dict[str, Any]:
        """The record the mount kept of the refused write, the rejected content with it (``kept_at``)."""
        record = self.root / COLLABORATIVE / CONFLICTS / self.agent / f"{rel}.json"
        info: dict[str, Any] = json.loads(_read_bytes(record))
        return info

    def _forget_message(self, target: Path) -> None:
        try:
            os.removexattr(target, MESSAGE)
        except OSError as exc:
            if exc.errno not in (errno.ENODATA, errno.ENOENT):
                raise

    # -- realtime documents -------------------------------------------------------------------------------------

    def realtime_create(self, doc_id: str, schema: Mapping[str, str]) -> dict[str, str]:
        doc = self._doc(doc_id)
        data = _encode(json.dumps(dict(schema), ensure_ascii=False), "schema")
        try:
            doc.mkdir()
        except FileExistsError:
            raise AlreadyExists(f"realtime document {doc_id!r} exists") from None
        except OSError as exc:
            raise _failure(exc, f"realtime/{doc_id}") from None
        try:
            with _mapped(f"{REALTIME}/{doc_id}/{SCHEMA}"), open(doc / SCHEMA, "wb") as f:
                f.write(data)  # the document is created at this close
        except OmxError:
            self._drop_pending(doc)
            raise
        with _mapped(f"realtime/{doc_id}"):
            field_types: dict[str, str] = json.loads(_read_bytes(doc / SCHEMA))
        return field_types

    def realtime_get(self, doc_id: str, field: str) -> FieldValue:
        path, field_type = self._field(doc_id, field)
        return FieldValue(field_type, self._read_field(path, field_type))

    def realtime_set(self, doc_id: str, field: str, value: Any) -> FieldChange:
        path, field_type = self._field(doc_id, field)
        text = _render(field_type, value)
        with _EDIT_LOCK:
            before = self._read_field(path, field_type)  # the base the mount diffs this write against
            self._write_field(path, text)
            after = self._read_field(path, field_type)
        return FieldChange(before != after, after)

    def realtime_splice_text(self, doc_id: str, field: str, start: int, end: int, text: str) -> TextEdit:
        _encode(text, "text")
        path = self._typed(doc_id, field, "rga")
        with _EDIT_LOCK:
            before = self._read_field(path, "rga")
            lo, hi = min(start, len(before)), min(end, len(before))  # past the end is the end
            deleted = max(hi - lo, 0)
            if deleted or text:
                self._write_field(path, before[:lo] + text + before[lo + deleted :])
            after = self._read_field(path, "rga")
        return TextEdit(deleted, after)

    def realtime_set_add(self, doc_id: str, field: str, element: str) -> FieldChange:
        _check_element(element)
        path = self._typed(doc_id, field, "or_set")
        with _EDIT_LOCK:
            elements = self._read_field(path, "or_set")
            if element not in elements:
                self._write_field(path, "".join(f"{e}\n" for e in sorted([*elements, element])))
            after = self._read_field(path, "or_set")
        return FieldChange(element not in elements, after)

    def realtime_set_remove(self, doc_id: str, field: str, element: str) -> FieldChange:
        path = self._typed(doc_id, field, "or_set")
        with _EDIT_LOCK:
            elements = self._read_field(path, "or_set")
            if element in elements:
                self._write_field(path, "".join(f"{e}\n" for e in elements if e != element))
            after = self._read_field(path, "or_set")
        return FieldChange(element in elements, after)

    def realtime_set_contains(self, doc_id: str, field: str, element: str) -> bool:
        path = self._typed(doc_id, field, "or_set")
        return element in self._read_field(path, "or_set")

    def realtime_map_set(self, doc_id: str, field: str, key: str, value: Any) -> FieldChange:
        path = self._typed(doc_id, field, "lww_map")
        with _EDIT_LOCK:
            before = self._read_field(path, "lww_map")
            changed = key not in before or before[key] != value
            if changed:
                self._write_field(path, _render("lww_map", {**before, key: value}))
            after = self._read_field(path, "lww_map")
        return FieldChange(changed, after)

    def realtime_map_delete(self, doc_id: str, field: str, key: str) -> FieldChange:
        path = self._typed(doc_id, field, "lww_map")
        with _EDIT_LOCK:
            before = self._read_field(path, "lww_map")
            if key in before:
                self._write_field(path, _render("lww_map", {k: v for k, v in before.items() if k != key}))
            after = self._read_field(path, "lww_map")
        return FieldChange(key in before, after)

    def realtime_counter_add(self, doc_id: str, field: str, delta: int) -> FieldChange:
        path = self._typed(doc_id, field, "pn_counter")
        with _EDIT_LOCK:
            before = self._read_field(path, "pn_counter")
            step = f"{delta:+d}"
            if step == str(before):
                # text equal to the value read is an editor's unchanged save, a no-op (SPEC §5): at -3, "-3" would
                # not count, so the same step is written as "-03"
                step = f"{step[0]}0{step[1:]}"
            self._write_field(path, step)
            after = self._read_field(path, "pn_counter")
        return FieldChange(delta != 0, after)

    def realtime_snapshot(self, doc_id: str) -> dict[str, Any]:
        doc = self._doc(doc_id)
        try:
            snapshot: dict[str, Any] = json.loads(_read_bytes(doc / SNAPSHOT))
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise NotFound(f"no realtime document {doc_id!r}") from None
            raise _failure(exc, f"realtime/{doc_id}") from None
        return snapshot

    def _doc(self, doc_id: str) -> Path:
        return self.root / REALTIME / _name(doc_id, "doc_id")

    def _field(self, doc_id: str, field: str) -> tuple[Path, str]:
        """A field's file and type; NotFound names the document or the field that is missing."""
        doc = self._doc(doc_id)
        path = doc / _name(field, "field_name")
        try:
            return path, os.getxattr(path, TYPE).decode("utf-8")
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                if not (doc / SNAPSHOT).exists():
                    raise NotFound(f"no realtime document {doc_id!r}") from None
                raise NotFound(f"realtime document {doc_id!r} has no field {field!r}") from None
            raise _failure(exc, f"realtime/{doc_id}/{field}") from None

    def _typed(self, doc_id: str, field: str, field_type: str) -> Path:
        path, actual = self._field(doc_id, field)
        if actual != field_type:
            raise InvalidInput(f"field {field!r} is {actual}, not {field_type}")
        return path

    def _read_field(self, path: Path, field_type: str) -> Any:
        what = f"realtime/{path.parent.name}/{path.name}"
        with _mapped(what):
            return _parse(field_type, _read_text(path), what)

    def _write_field(self, path: Path, text: str) -> None:
        """Replace the field's text; the mount turns it into operations against this process's last read."""
        with _mapped(f"realtime/{path.parent.name}/{path.name}"):
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
            try:
                _write_fd(fd, _encode(text, "value"))
            finally:
                os.close(fd)  # the write is merged here; a bad value fails with EINVAL

    @staticmethod
    def _drop_pending(doc: Path) -> None:
        """A document whose schema was refused stays pending in the mount's memory: remove it, if allowed."""
        with suppress(OSError):
            doc.rmdir()

    # -- the history of the agent's own zone ------------------------------------------------------------------

    @contextmanager
    def _store(self) -> Iterator[Workspace]:
        """The store: read through the mount in a view (its ``.omxfs/`` read-only); beneath the mount elsewhere, as
        ``omxfs checkpoint`` reaches it. The commands its messages name say the workspace as the server was given it."""
        if os.environ.get(VIEW_ENV):
            yield Workspace(self.root, shown_as=str(self.root))
            return
        beneath = store_beneath(self.root)
        if beneath is None:
            raise InvalidInput(f"{self.root} is not an omxfs mount")
        try:
            yield Workspace(beneath.reached, shown_as=str(self.root))
        finally:
            os.close(beneath.fd)

    @contextmanager
    def _history(self, *, changes: bool) -> Iterator[ZoneHistory]:
        """The zone's history (``_store``). A view's ``.omxfs/`` is read-only and a restore swaps the very directory
        the view has bound, so in a view a checkpoint or a restore is refused with the command that does it."""
        viewed = os.environ.get(VIEW_ENV)
        if viewed and changes:
            raise NotSupported(
                f"checkpoints are made and restored outside {viewed}'s view, where this server runs (its .omxfs/ "
                f"is read-only, and a restore waits for the view to end): the view's start made a checkpoint; "
                f"a person runs `omxfs checkpoint WS --as {self.agent}` or `omxfs restore WS {self.agent} ID` on "
                "the host"
            )
        with self._store() as ws:
            yield ZoneHistory(ws, self.agent)

    def checkpoint_make(self, message: str) -> CheckpointInfo:
        with self._history(changes=True) as history:
            return zone_history.make(history, message)

    def checkpoint_list(self) -> list[CheckpointInfo]:
        with self._history(changes=False) as history:
            return zone_history.listing(history)

    def checkpoint_diff(self, since: str | None) -> ZoneChanges:
        with self._history(changes=False) as history:
            return zone_history.changes(history, since)

    def checkpoint_restore(self, checkpoint: str, paths: list[str]) -> ZoneRestored:
        with self._history(changes=True) as history:
            return zone_history.restore_to(history, checkpoint, paths)

    # -- the branches of the agent's own zone -------------------------------------------------------------------

    def _view(self, ws: Workspace) -> zone_branches.InView | None:
        return zone_branches.in_view(ws, self.agent) if os.environ.get(VIEW_ENV) else None

    def branch_list(self) -> BranchListing:
        with self._store() as ws:
            return zone_branches.listing(ws, self.agent, self._view(ws))

    def branch_compare(self, branch: str, other: str | None) -> BranchChanges:
        with self._store() as ws:
            return zone_branches.compare(ws, self.agent, branch, other, self._view(ws))

    def branch_fork(self, branch: str, from_branch: str | None) -> BranchForked:
        with self._store() as ws:
            return zone_branches.fork(ws, self.agent, branch, from_branch, self._view(ws))
