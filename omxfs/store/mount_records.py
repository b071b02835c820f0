"""What a mount keeps in the store: ``WS/.omxfs/mounts/<pid>.json`` (one record per live daemon), and the descriptor
a daemon holds on the store before it mounts over it. The daemon's log is ``omxfs.store.daemon_log``'s.

A record says which daemon serves which mountpoint (mountpoint, store, default agent, log); it is how
``omxfs status`` and ``omxfs umount`` find the daemon behind a mountpoint. A record whose process is gone is stale:
it is never shown, and the next daemon to start removes it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path, PurePosixPath

from omxfs.errors import InvalidInput, MountError, StoreCorrupt
from omxfs.plain_record import PlainRecord
from omxfs.process import pid_alive
from omxfs.store.layout import MOUNT_RECORDS
from omxfs.store.names import relative_path

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace


class MountRecord(PlainRecord):
    """One live daemon's record; its file is a JSON object of ``FIELDS``, in that order."""

    __slots__ = ("default_agent", "log", "mountpoint", "pid", "started", "store")
    FIELDS = ("pid", "mountpoint", "store", "default_agent", "started", "log")

    def __init__(self, pid: int, mountpoint: str, store: str, default_agent: str, started: str, log: str) -> None:
        self.pid, self.mountpoint, self.store = pid, mountpoint, store
        self.default_agent, self.started = default_agent, started
        self.log = log  # relative to the store

    def to_json(self) -> bytes:
        return json.dumps(dict(zip(self.FIELDS, self.values(), strict=True)), indent=2).encode("utf-8")


def record_name(pid: int) -> str:
    return f"{pid}.json"


def load_record(raw: bytes, where: str) -> MountRecord:
    """A mount record from its file's bytes, every field checked (a pid a positive integer, the mountpoint and the
    store absolute paths, the log a relative path); StoreCorrupt naming ``where`` otherwise: a
    record names a process ``omxfs umount`` waits for and a store ``omxfs`` opens."""
    try:
        data = json.loads(raw)
        if type(data) is not dict or set(data) != set(MountRecord.FIELDS):
            raise ValueError("not a mount record: it holds " + ", ".join(MountRecord.FIELDS))
        record = MountRecord(**data)
        if type(record.pid) is not int or record.pid < 1:
            raise ValueError(f"pid {record.pid!r} is no positive integer")
        for name in ("mountpoint", "store"):
            value = getattr(record, name)
            if type(value) is not str or not value.startswith("/") or "\0" in value:
                raise ValueError(f"{name} {value!r} is no absolute path")
        for name in ("started", "default_agent"):  # the agent a login's name too, as --as defaults to it
            if type(getattr(record, name)) is not str:
                raise ValueError(f"{name} {getattr(record, name)!r} is no string")
        relative_path(record.log)
    except (ValueError, TypeError, InvalidInput) as exc:
        raise StoreCorrupt(f"{where}: {getattr(exc, 'message', exc)}") from None
    return record


def read_records(meta_dir: Path) -> list[MountRecord]:
    """The records under ``meta_dir/mounts`` of daemons still running."""
    found = []
    try:
        names = sorted(os.listdir(meta_dir / MOUNT_RECORDS))
    except OSError:
        return []
    for name in names:
        try:
            record = load_record((meta_dir / MOUNT_RECORDS / name).read_bytes(), name)
        except (OSError, StoreCorrupt):
            continue  # a record being replaced, or not one (``omxfs fsck`` reports it)
        if pid_alive(record.pid):
            found.append(record)
    return found


def prune_records(meta_dir: Path) -> None:
    """Remove the records of daemons that died without cleaning up (kill -9): a daemon does this at start."""
    with contextlib.suppress(OSError):
        for name in os.listdir(meta_dir / MOUNT_RECORDS):
            pid = name.removesuffix(".json")
            if name.endswith(".json") and pid.isdigit() and not pid_alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(meta_dir / MOUNT_RECORDS / name)


def write_record(ws: Workspace, record: MountRecord) -> None:
    ws.writer.write(ws.meta, PurePosixPath(MOUNT_RECORDS, record_name(record.pid)), record.to_json())


def remove_record(ws: Workspace, pid: int) -> None:
    """Best effort: a record left behind is stale once the process is gone."""
    with contextlib.suppress(OSError):
        os.unlink(ws.meta / MOUNT_RECORDS / record_name(pid))


def hold_store(ws_path: str | os.PathLike[str]) -> int:
    """An ``O_PATH`` descriptor of the store, taken before mounting: once a mount covers the store's path, the
    daemon still reaches the store through it (``/proc/self/fd/N``), never through its own mount."""
    try:
        return os.open(ws_path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise MountError(f"cannot open the workspace {ws_path}: {exc.strerror}", exc.errno or errno.EIO) from None
