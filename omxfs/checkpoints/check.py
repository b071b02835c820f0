"""What ``omxfs fsck`` checks of the checkpoint data (``.omxfs/checkpoints/``), one finding per problem.

    debris (repairable)
    ├── unreferenced-blob    a blob no manifest names (a checkpoint killed before its manifest, or pruned)
    ├── stale-restore        a restore's work directory (killed while building, or after its swap): removed
    ├── unfinished-restore   the zone is missing and a complete restored tree waits beside it (killed between the
    │                        two renames of a filesystem without RENAME_EXCHANGE): moved into place
    └── stale-view           the record of a view whose process is gone
    corruption (reported)
    ├── bad-manifest         a manifest that does not parse, has a field that is not what the store writes (a
    │                        blob name that is no sha256, a path not relative and normalized, a mode, owner or
    │                        size that is no such number: ``manifest.entries_from_json``), names another
    │                        checkpoint or zone, or is written against a checkpoint that is gone or not earlier;
    │                        never followed, and while one is there no blob is removed as unreferenced
    ├── missing-blob         a manifest names a blob that is not there
    └── bad-blob             a blob whose content is not its name's sha256, or a file in blobs/ that is no blob

Debris younger than the grace period may belong to a checkpoint or restore in progress: reported, not removed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from omxfs.checkpoints.blobs import hash_fd
from omxfs.checkpoints.held import remove_tree
from omxfs.checkpoints.history import ZoneHistory
from omxfs.checkpoints.restore import READY, TREE
from omxfs.checkpoints.views import running_views
from omxfs.errors import NotFound, OmxError
from omxfs.store.findings import Found
from omxfs.store.layout import AGENTS, BLOB, CHECKPOINTS, META_DIR, RESTORING, VIEWS
from omxfs.store.workspace import Workspace

Count = Callable[[str], None]


def check_checkpoints(ws: Workspace, found: Found, count: Count, *, repair: bool, grace: float) -> None:
    top = ws.meta / CHECKPOINTS
    with contextlib.suppress(FileNotFoundError):
        for zone in sorted(os.listdir(top)):
            try:
                history = ZoneHistory(ws, zone)
            except OmxError:
                history = None
            if history is None:
                continue  # the zone of an agent no longer configured: kept, not judged
            _zone(history, found, count, repair=repair, grace=grace)
    _views(ws, found, repair=repair)


def _zone(history: ZoneHistory, found: Found, count: Count, *, repair: bool, grace: float) -> None:
    where = f"{META_DIR}/{CHECKPOINTS}/{history.zone}"
    referenced: set[str] = set()
    unread = False  # a manifest that is corrupt: the blobs it names are not known, so none is called unreferenced
    for number in history.numbers():
        count("checkpoints")
        try:
            referenced |= history.load(number).blobs()
        except NotFound:
            continue  # pruned meanwhile
        except OmxError as exc:
            found("bad-manifest", f"{where}/manifests/{number}.json", exc.message, False)
            unread = True
    now = time.time()
    present: set[str] = set()
    for name, path in history.blobs.digests():
        shown = f"{where}/blobs/{path.parent.name}/{name}"
        if not BLOB.fullmatch(name) or path.parent.name != name[:2] or not path.is_file() or path.is_symlink():
            found("bad-blob", shown, "not a blob (a blob is a file named by its sha256)", False)
            continue
        present.add(name)
        count("blobs")
        if name in referenced:
            if _digest(path) != name:
                found("bad-blob", shown, "its content's sha256 is not its name", False)
            continue
        if unread:
            why = "a corrupt checkpoint may name it"
            found("unreferenced-blob", shown, "named by no checkpoint read: kept while one is corrupt", left=why)
            continue
        age = now - path.stat().st_mtime
        old = age > grace
        if repair and old:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        found("unreferenced-blob", shown, "named by no checkpoint", repair and old, age=age)
    for digest in sorted(referenced - present):
        found("missing-blob", f"{where}/blobs/{digest[:2]}/{digest}", "a checkpoint names it", False)
    _restores(history, where, found, repair=repair, grace=grace)


def _digest(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return hash_fd(fd, os.fstat(fd).st_size, None)
    finally:
        os.close(fd)


def _restores(history: ZoneHistory, where: str, found: Found, *, repair: bool, grace: float) -> None:
    work_root = history.dir / RESTORING
    now = time.time()
    with contextlib.suppress(FileNotFoundError):
        for token in sorted(os.listdir(work_root)):
            work = work_root / token
            shown = f"{where}/{RESTORING}/{token}"
            if not os.path.lexists(history.zone_dir) and (work / READY).exists() and (work / TREE).is_dir():
                if repair:
                    os.rename(work / TREE, history.zone_dir)
                found("unfinished-restore", f"{AGENTS}/{history.zone}", f"its restored tree waits in {shown}", repair)
            age = now - os.lstat(work).st_mtime
            old = age > grace
            if repair and old:
                remove_tree(work)
            detail = "left by a restore that was killed (the zone is whole)"
            found("stale-restore", shown, detail, repair and old, age=age)


def _views(ws: Workspace, found: Found, *, repair: bool) -> None:
    with contextlib.suppress(FileNotFoundError):
        for agent in sorted(os.listdir(ws.meta / VIEWS)):
            live = set(running_views(ws.meta, agent))
            for name in sorted(os.listdir(ws.meta / VIEWS / agent)):
                pid = name.removesuffix(".json")
                if pid.isdigit() and int(pid) in live:
                    continue
                if repair:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(ws.meta / VIEWS / agent / name)
                found("stale-view", f"{META_DIR}/{VIEWS}/{agent}/{name}", "the record of a view that is gone", repair)
