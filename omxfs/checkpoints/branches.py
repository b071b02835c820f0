"""Branches of a zone: several held-apart changes of one agent's zone at once, the person keeps the best.

A branch is a review run's pending change (``omxfs.checkpoints.review``) under a name: ``omxfs run WS --as NAME
--branch B`` holds its writes in ``.omxfs/branches/<zone>/<B>/`` (the branch named ``review`` is ``omxfs run
--review``'s, kept where it always was, ``.omxfs/reviews/<zone>/``). This module holds what a branch has besides
its overlay's layers, all under ``.omxfs`` (read-only to every view):

- ``branch.json`` in the branch's directory: when it was made and by whom, from which branch (a *nested* branch,
  ``omxfs run --branch B --from P``: its view's lower layers are P's upper layer over the zone, and an accept applies
  it into P), the moment it was last rebased, and its *base*, the zone's checkpoint it was made (or rebased) on
  (``Made``): what the zone changed since then is checked against it as accepted siblings are (``zone_change``);
- ``parent-change.json`` beside it, for a nested branch: its parent's change as the branch was made (or rebased), a
  ``change_record``, what the parent's own change since is judged from (``parent_change``);
- ``running`` in it, locked (``flock``) by the launcher for as long as the branch's view runs (``hold_running``):
  a second run of one branch is refused, siblings run side by side, and a killed launcher frees it;
- ``.omxfs/branches/<zone>/.ended.jsonl``: one line per branch accepted or discarded (``Ended``); an accepted one
  names the paths it changed and what each became, against which a sibling made before it is checked (``overlap``);
- ``.omxfs/branches/<zone>/.accept.lock``, locked by an accept for as long as it runs (``accepting_alone``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from omxfs.checkpoints import Entry
from omxfs.errors import InvalidInput, OSFailure
from omxfs.store.layout import META_DIR
from omxfs.store.stamps import utc_now

#: the branch ``omxfs run --review`` makes, and ``--review`` names everywhere
REVIEW = "review"
#: ``.omxfs/branches/<zone>/<name>/``: every branch but ``review``
BRANCHES = "branches"
BRANCH_RECORD = "branch.json"
#: a nested branch's record of its parent's change as it was made (``record_parent_change``)
PARENT_RECORD = "parent-change.json"
BRANCH_RUNNING = "running"
#: accepted and discarded branches of a zone; a dot first, so no branch is ever named so
ENDED_LOG = ".ended.jsonl"
#: locked (``flock``) by an accept of one of the zone's branches from its check for conflicts to its end
ACCEPT_LOCK = ".accept.lock"
#: a plain name: a letter or digit, then letters, digits, ``.``, ``_`` and ``-``
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: how much of a record is read (a longer one is not ours)
_RECORD_LIMIT = 1 << 20


def check_name(name: str) -> str:
    """``name`` if it is a plain branch name (no ``/``, no ``..``, not empty, at most 64 characters); InvalidInput
    otherwise."""
    if not NAME.fullmatch(name):
        raise InvalidInput(
            f"{name!r} is no branch name: a branch is named by a letter or digit, then letters, digits, '.', '_' "
            "or '-' (at most 64 characters)"
        )
    return name


def zone_branches_dir(meta: Path, zone: str) -> Path:
    return meta / BRANCHES / zone


def shown_zone_branches(zone: str) -> str:
    return f"{META_DIR}/{BRANCHES}/{zone}"


# -- when and by whom a branch was made ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Made:
    created: str  # ISO 8601 UTC
    created_ns: int  # the same moment, in ns since the epoch
    by: str | None  # None for a review made before branches were recorded
    #: the branch it was made from and is accepted into (``--from``); None for a branch of the zone itself
    parent: str | None = None
    #: when it was last rebased (``rebased``), else None
    rebased_ns: int | None = None
    #: the zone's checkpoint as the branch was made or last rebased, what the zone's own change since is judged
    #: from; None for a nested branch, and for one recorded before branches had a base (only siblings are checked)
    base: int | None = None

    @property
    def base_ns(self) -> int:
        """What accepts are ordered against: those made after it (made, or rebased) may conflict with it."""
        return self.created_ns if self.rebased_ns is None else self.rebased_ns


def is_made(branch_dir: Path) -> bool:
    """Whether the branch at ``branch_dir`` has its record (``record_made``): a run of it continues it."""
    return os.path.lexists(branch_dir / BRANCH_RECORD)


def record_made(branch_dir: Path, by: str, parent: str | None = None, base: int | None = None) -> None:
    """``branch.json`` in a branch's new directory (kept if there is one: a run continues the branch); ``base``:
    the zone's checkpoint as the branch starts (``Made.base``)."""
    now = time.time_ns()
    record = {"created": utc_now(now / 1e9), "created_ns": now, "by": by, "parent": parent, "base": base}
    with contextlib.suppress(FileExistsError):
        _write_new(branch_dir / BRANCH_RECORD, json.dumps(record).encode("utf-8"))


def made(branch_dir: Path) -> Made:
    """When the branch at ``branch_dir`` was made: its record, or its directory's change time without one."""
    data = _read_json(branch_dir / BRANCH_RECORD)
    if isinstance(data, dict) and isinstance(data.get("created_ns"), int) and isinstance(data.get("created"), str):
        by, parent, rebased, base = data.get("by"), data.get("parent"), data.get("rebased_ns"), data.get("base")
        return Made(
            data["created"],
            data["created_ns"],
            by if isinstance(by, str) else None,
            parent if isinstance(parent, str) and NAME.fullmatch(parent) else None,
            rebased if isinstance(rebased, int) else None,
            base if isinstance(base, int) and not isinstance(base, bool) and base > 0 else None,
        )
    st = os.stat(branch_dir, follow_symlinks=False)
    return Made(utc_now(st.st_ctime), st.st_ctime_ns, None)


def record_rebased(branch_dir: Path, base: int | None = None) -> Made:
    """The branch's record with its base moved to now (``Made.base_ns``): accepts made before now no longer
    conflict with it, nor what the zone changed before its checkpoint ``base`` (the zone now; None: a nested
    branch's, which has none). Replaced whole (a new file renamed over the old), so a crash leaves one or the other."""
    before = made(branch_dir)
    now = time.time_ns()
    record = {"created": before.created, "created_ns": before.created_ns, "by": before.by, "parent": before.parent,
              "rebased_ns": now, "base": base}  # fmt: skip
    fresh = branch_dir / f".{BRANCH_RECORD}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(fresh)
    _write_new(fresh, json.dumps(record).encode("utf-8"))
    os.rename(fresh, branch_dir / BRANCH_RECORD)
    return made(branch_dir)


def record_parent_change(branch_dir: Path, change: Mapping[str, tuple[str, bool] | None]) -> None:
    """A nested branch's record of its parent's change now (a ``change_record``), replacing any: written whole to a
    new file renamed over the old, so a crash leaves one or the other."""
    fresh = branch_dir / f".{PARENT_RECORD}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(fresh)
    data = {path: list(new) if new else None for path, new in change.items()}
    _write_new(fresh, json.dumps(data, separators=(",", ":")).encode("utf-8"))
    os.rename(fresh, branch_dir / PARENT_RECORD)


def parent_change_made(branch_dir: Path) -> dict[str, tuple[str, bool] | None] | None:
    """The parent's change as the nested branch at ``branch_dir`` was made or last rebased
    (``record_parent_change``); None where there is no record (a branch made before they were kept, or one of the
    zone) or it cannot be read."""
    try:
        fd = os.open(branch_dir / PARENT_RECORD, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        raw = f.read()
    try:
        data = json.loads(raw)
        return {str(p): (str(v[0]), bool(v[1])) if v else None for p, v in data.items()}
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


# -- a branch's view running ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def hold_running(branch_dir: Path, called: str) -> Iterator[None]:
    """The branch's ``running`` lock held, with this process's pid in it, while the block runs; OSFailure (EBUSY)
    naming the pid that holds it if another launcher does."""
    fd = os.open(branch_dir / BRANCH_RUNNING, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = running_pid(branch_dir)
            raise OSFailure(
                f"{called} is running in a view already (pid {holder}): a review run needs the zone to itself but "
                "for its sibling branches; end that view first",
                errno.EBUSY,
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor


def running_pid(branch_dir: Path) -> int | None:
    """The pid of the launcher running the branch's view, or None when none runs (the lock is free)."""
    try:
        fd = os.open(branch_dir / BRANCH_RUNNING, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 32).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def no_accept_running(meta: Path, zone: str) -> Iterator[None]:
    """The zone's accept lock held shared while the block runs (waiting for an accept to end): a view that records
    itself in the block is seen by every accept after it, and starts after any accept before it, never during one,
    whose changes of the zone it would see half made. A store where the lock cannot be had (a ``.omxfs/`` this user
    cannot write) runs the block without it, as it records no view either."""
    try:
        fd = _accept_lock(meta, zone)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _accept_lock(meta: Path, zone: str) -> int:
    top = zone_branches_dir(meta, zone)
    top.mkdir(parents=True, exist_ok=True, mode=0o700)
    return os.open(top / ACCEPT_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


@contextlib.contextmanager
def accepting_alone(meta: Path, zone: str) -> Iterator[None]:
    """The zone's accept lock held while the block runs (waiting for another accept to end): two branches accepted at
    once would each be checked against the zone before the other's change is logged."""
    fd = _accept_lock(meta, zone)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# -- accepted and discarded branches -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ended:
    name: str
    state: str  # "accepted" or "discarded"
    at: str
    at_ns: int
    by: str
    made: Made | None
    #: an accepted branch's changed paths, each with what it became (``change_record``)
    changed: Mapping[str, tuple[str, bool] | None]

    def summary(self) -> str:
        return f"{len(self.changed)} path(s)" if self.state == "accepted" else "-"


def ended_now(
    name: str, state: str, by: str, made_at: Made | None, changed: Mapping[str, tuple[str, bool] | None]
) -> Ended:
    """A branch ending now: ``state`` is "accepted" or "discarded"."""
    now = time.time_ns()
    return Ended(name, state, utc_now(now / 1e9), now, by, made_at, changed)


def change_record(change: Mapping[str, Entry | None]) -> dict[str, tuple[str, bool] | None]:
    """What ``overlap`` needs of a change: each path's new entry as a digest of its key (everything a diff compares,
    so that two branches that made a path the same are no conflict) and whether it is a directory; None where it was
    deleted."""
    return {path: _recorded(entry) for path, entry in change.items()}


def _recorded(entry: Entry | None) -> tuple[str, bool] | None:
    if entry is None:
        return None
    return hashlib.sha256(repr(entry.key()).encode("utf-8")).hexdigest(), entry.type == "dir"


def log_ended(meta: Path, zone: str, ended: Ended) -> None:
    """One line appended to the zone's log of ended branches (made with ``branches/<zone>/`` if need be)."""
    top = zone_branches_dir(meta, zone)
    top.mkdir(parents=True, exist_ok=True, mode=0o700)
    line = {
        "name": ended.name,
        "state": ended.state,
        "at": ended.at,
        "at_ns": ended.at_ns,
        "by": ended.by,
        "created": ended.made.created if ended.made else None,
        "created_ns": ended.made.created_ns if ended.made else None,
        "made_by": ended.made.by if ended.made else None,
        "parent": ended.made.parent if ended.made else None,
        "changed": {p: list(v) if v else None for p, v in ended.changed.items()},
    }
    fd = os.open(top / ENDED_LOG, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"  # a line a crash cut short: this one starts anew
        os.write(fd, ("\n" if torn else "").encode("ascii") + (json.dumps(line) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def ended_branches(meta: Path, zone: str) -> list[Ended]:
    """The zone's ended branches, oldest first; a line that cannot be read (one cut short by a crash) is skipped."""
    try:
        fd = os.open(zone_branches_dir(meta, zone) / ENDED_LOG, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as f:
        raw = f.read()
    found: list[Ended] = []
    for text in raw.splitlines():
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            data = json.loads(text)
            made_at = (
                Made(data["created"], int(data["created_ns"]), data.get("made_by"), data.get("parent"))
                if data.get("created_ns") is not None
                else None
            )
            changed = {str(p): (str(v[0]), bool(v[1])) if v else None for p, v in (data.get("changed") or {}).items()}
            found.append(
                Ended(
                    str(data["name"]),
                    str(data["state"]),
                    str(data["at"]),
                    int(data["at_ns"]),
                    str(data["by"]),
                    made_at,
                    changed,
                )
            )
    return found


# -- conflicts -----------------------------------------------------------------------------------------------------


def overlap(accepted: Mapping[str, tuple[str, bool] | None], sibling: Mapping[str, Entry | None]) -> list[str]:
    """The sibling's paths that an accepted branch's change collides with: a path both changed to different
    results, or one under a path the other deleted or made a non-directory (its paths, sorted)."""
    mine = change_record(sibling)
    found: set[str] = set()
    for path in accepted.keys() & mine.keys():
        if accepted[path] != mine[path]:
            found.add(path)
    for ours, theirs in ((accepted, mine), (mine, accepted)):
        for path, new in ours.items():
            if path == "." or (new is not None and new[1]):
                continue  # a directory still: what lies below it is compared path by path
            below = path + "/"
            found.update(p if p in mine else path for p in theirs if p.startswith(below))
    return sorted(found)


def zone_change(
    base: Mapping[str, Entry], now: Mapping[str, Entry], change: Mapping[str, Entry | None]
) -> dict[str, Entry | None]:
    """What the zone changed from ``base`` (its checkpoint, by path) to ``now`` (it as it is, by path) at the paths
    ``overlap`` compares with a branch's ``change`` (``_compared``). Each such path that differs (anything but the
    times, as a diff compares) with what it became, None where it is gone: a record for ``change_record``."""
    found: dict[str, Entry | None] = {}
    for path in _compared(change, (*base, *(p for p in now if p not in base))):
        before, after = base.get(path), now.get(path)
        if before is None and after is None:
            continue
        if before is None or after is None or before.key() != after.key():
            found[path] = after
    return found


def parent_change(
    made_then: Mapping[str, tuple[str, bool] | None],
    below: Mapping[str, Entry],
    parent: Mapping[str, Entry],
    change: Mapping[str, Entry | None],
) -> dict[str, Entry | None]:
    """What a nested branch's parent changed since the branch was made, at the paths ``overlap`` compares with the
    branch's ``change`` (``_compared``): ``made_then`` is the parent's change then (``parent_change_made``),
    ``below`` what the parent goes into now and ``parent`` the parent as it is now, both by path. A path counts where
    the parent now has other than ``made_then`` says it made it, and one ``made_then`` does not hold that the parent
    changes now; each with what it is in the parent now, None where it is gone: a record for ``change_record``."""
    changed_now = changed(below, parent)
    found: dict[str, Entry | None] = {}
    for path in _compared(change, (*made_then, *(p for p in changed_now if p not in made_then))):
        entry = parent.get(path)
        if path not in made_then:  # then as below the parent: changed if the parent's own now
            if path in changed_now:
                found[path] = entry
        elif _recorded(entry) != made_then[path]:
            found[path] = entry
    return found


def changed(before: Mapping[str, Entry], after: Mapping[str, Entry]) -> dict[str, Entry | None]:
    """Each path whose entry in ``after`` differs from that in ``before`` (anything but the times, as a diff
    compares), with what it is in ``after``, None where ``after`` has none. An entry that is the very one of
    ``before`` (a scan's, laid over) is not compared."""
    found: dict[str, Entry | None] = {}
    for path, entry in after.items():
        old = before.get(path)
        if old is not entry and (old is None or old.key() != entry.key()):
            found[path] = entry
    found.update((path, None) for path in before if path not in after)
    return found


def _compared(change: Mapping[str, Entry | None], others: Iterable[str]) -> set[str]:
    """The paths at which another change can collide with ``change`` (``overlap``): each path of it and each
    directory above one, and those of ``others`` below a path it deleted or made a non-directory."""
    looked: set[str] = set()
    cut: set[str] = set()
    for path, entry in change.items():
        looked.add(path)
        parent = path.rpartition("/")[0]
        while parent and parent not in looked:
            looked.add(parent)
            parent = parent.rpartition("/")[0]
        if path != "." and (entry is None or entry.type != "dir"):
            cut.add(path)
    if cut:  # everything below them: one pass over the other paths
        for path in others:
            parent = path.rpartition("/")[0]
            while parent and parent not in cut:
                parent = parent.rpartition("/")[0]
            if parent:
                looked.add(path)
    return looked


def conflicts(
    meta: Path, zone: str, name: str, since: Made, change: Mapping[str, Entry | None]
) -> dict[str, list[str]]:
    """Each branch accepted into what the branch ``name`` is accepted into (the zone, or its parent branch) after it
    was made or last rebased (``since``) whose change collides with ``change``, the branch's own: the accepted
    branch's name, with the paths."""
    found: dict[str, list[str]] = {}
    for ended in ended_branches(meta, zone):
        if ended.state != "accepted" or ended.at_ns <= since.base_ns:
            continue
        if (ended.made.parent if ended.made else None) != since.parent:
            continue  # accepted into another branch, or into the zone where this one goes into a branch
        if ended.name == name and ended.made is not None and ended.made.created_ns == since.created_ns:
            continue  # this very branch, accepted half-way
        paths = overlap(ended.changed, change)
        if paths:
            found.setdefault(ended.name, []).extend(p for p in paths if p not in found.get(ended.name, []))
    return found


# -- records -------------------------------------------------------------------------------------------------------


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_json(path: Path) -> object:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        raw = f.read(_RECORD_LIMIT)
    try:
        return json.loads(raw)
    except ValueError:
        return None
