"""The supervisor audit trail (SPEC §3): who changed what outside their own zone, from every machine.

Each record is a file of its own, ``.omxfs/logs/audit/<day>/<time>-<token>.json``, made with
``atomic.create_exclusive`` (staged, fsynced, then linked to its name): no other writer, on this machine or
another client of a shared filesystem, can overwrite or interleave with it, and a writer killed at any point
leaves a whole record or none (at most a staged file in ``.omxfs/tmp/``, which ``fsck`` removes). Appending
to one ``audit.jsonl`` with ``O_APPEND`` is atomic only within one kernel: two JuiceFS clients appending 200
lines each lost 29 to 86 of them. Stores made before keep their ``audit.jsonl``, which is read, never written.

Reading merges both, ordered by each record's timestamp (the writer's clock: machines whose clocks disagree
interleave as their clocks say). A directory per UTC day keeps each directory small.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from omxfs.store.atomic import create_exclusive, sync_dir
from omxfs.store.layout import AUDIT_DAY, AUDIT_DIR, AUDIT_LOG, AUDIT_RECORD, LOGS, TMP
from omxfs.store.stamps import utc_now

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from typing import Any

#: what every record holds
FIELDS = ("timestamp", "agent", "uid", "pid", "action", "path")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def record_name(timestamp: str) -> tuple[str, str]:
    """(day directory, file name) of a record made at ``timestamp`` (``utc_now``), unique by a random token."""
    compact = timestamp.replace("-", "").replace(":", "")
    return timestamp[:10], f"{compact}-{os.urandom(8).hex()}.json"


def append(meta: Path, record: dict[str, Any]) -> None:
    """Write ``record`` (with a ``timestamp`` from ``utc_now``) as a record file of its own, durably."""
    day, name = record_name(record["timestamp"])
    directory = meta / LOGS / AUDIT_DIR / day
    directory.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(directory, _DIR)
    try:
        while not create_exclusive(fd, name, data, staging=meta / TMP):
            day, name = record_name(record["timestamp"])  # a token drawn twice: another name
        sync_dir(fd, directory)
    finally:
        os.close(fd)


def new_record(actor: str, action: str, path: str, uid: int, pid: int) -> dict[str, Any]:
    return {"timestamp": utc_now(), "agent": actor, "uid": uid, "pid": pid, "action": action, "path": path}


def valid(record: Any) -> bool:
    """Whether ``record`` is an audit record: a JSON object with every field of ``FIELDS``, the texts strings and
    the uid and pid integers >= 0 (a record read back is data to show, checked first like any other)."""
    if type(record) is not dict or not all(key in record for key in FIELDS):
        return False
    texts = all(type(record[key]) is str for key in ("timestamp", "agent", "action", "path"))
    return texts and all(type(record[key]) is int and record[key] >= 0 for key in ("uid", "pid"))


class Trail:
    """The audit records of a store, oldest first, and how many could not be read (a torn line of the old log)."""

    __slots__ = ("records", "unreadable")

    def __init__(self, records: list[dict[str, Any]] | None = None, unreadable: list[str] | None = None) -> None:
        self.records: list[dict[str, Any]] = [] if records is None else records
        self.unreadable: list[str] = [] if unreadable is None else unreadable  # where each unreadable record is


def record_files(meta: Path) -> list[Path]:
    """Every record file under ``logs/audit/``, in name order (time order within one writer's clock)."""
    root = meta / LOGS / AUDIT_DIR
    try:
        days = sorted(d for d in os.listdir(root) if AUDIT_DAY.fullmatch(d))
    except FileNotFoundError:
        return []
    found: list[Path] = []
    for day in days:
        try:
            names = sorted(os.listdir(root / day))
        except (FileNotFoundError, NotADirectoryError):
            continue
        found += [root / day / name for name in names if AUDIT_RECORD.fullmatch(name)]
    return found


def read_trail(meta: Path) -> Trail:
    """The old ``audit.jsonl`` and the record files, merged by timestamp."""
    trail = Trail()
    try:
        old = (meta / LOGS / AUDIT_LOG).read_text("utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        old = []
    for number, line in enumerate(old, 1):
        _take(trail, line, f"{LOGS}/{AUDIT_LOG}:{number}")
    for path in record_files(meta):
        try:
            text = path.read_text("utf-8", errors="replace")
        except FileNotFoundError:
            continue
        _take(trail, text, f"{LOGS}/{AUDIT_DIR}/{path.parent.name}/{path.name}")
    trail.records.sort(key=lambda r: r["timestamp"])  # stable: one writer's records keep their order
    return trail


def _take(trail: Trail, text: str, where: str) -> None:
    if not text.strip():
        return
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        record = None
    if valid(record):
        trail.records.append(record)
    else:
        trail.unreadable.append(where)
