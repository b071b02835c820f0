"""The event feed: one timeline of what happens in a workspace, read from the files the store leaves, and the new
events as they land.

Every event is a file the store creates: a version's entry (``collaborative/.versions/<path>/vN.json``), a
rejected write's record (``.conflicts/<agent>/<path>.rejected-K.json``), a delivery's ``.meta.json``, a realtime
writer's state file (``.crdt_state/.writers/<doc>/<replica>.<seq>.crdt.json``, a new name per write), a checkpoint's
manifest, an audit record (an accept or discard of a review or a branch is a ``review`` event), a review's directory
(``.omxfs/reviews/<zone>/``: a review run holds a change apart) or a branch's and the end of a branch's run
(``.omxfs/branches/<zone>/<name>/``, ``held_branches``), and the lines of an omx run's ``trace.jsonl``
(``agents/<a>/runs/<ts>/``). A write in a private zone makes no file of the store's: the zones' own files are
watched for it (``zones``: inotify for this machine's writes, stamps for other machines'), one ``write`` event per
zone and poll, its owner's.

**How new ones are found: a poll of directory stamps.** Creating a name changes its directory's mtime, so each poll
stats every known directory (one ``stat`` each, no listing) and lists only those whose stamp moved; a run's trace
is appended to, so its size is looked at instead. inotify would wake sooner, but it sees only this kernel's writes:
the store may live on a shared filesystem written by other machines (SPEC §1), which a poll sees as the store's
readers do; and the store's own trees cost a poll little, each a new name in a few directories. (The private zones
are another matter: files rewritten in place, thousands per zone; ``zones`` adds inotify for them.)
A directory whose stamp is younger than ``SETTLE`` seconds is listed again on the next poll too: two creations
within one timestamp tick leave one stamp, and the second would otherwise wait for the next change.
What a poll costs on a large store is measured by ``scripts/bench_ui.py``.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from omxfs.checkpoints.branches import BRANCHES
from omxfs.checkpoints.manifest import load_head
from omxfs.errors import OmxError
from omxfs.store.layout import (
    AGENTS,
    AUDIT_DIR,
    AUDIT_RECORD,
    BLOBS,
    CHECKPOINTS,
    COLLABORATIVE,
    CONFLICTS,
    CRDT_STATE,
    ENTRY,
    HANDOFF,
    LOGS,
    MANIFEST,
    META_DIR,
    META_SUFFIX,
    REALTIME,
    REJECTED,
    RESTORING,
    REVIEWS,
    VERSIONS,
    WRITERS,
)
from omxfs.store.records import load_handoff_meta, load_version_record
from omxfs.store.replicas import agent_of, parse_writer_file
from omxfs.ui.arrivals import Arrival, Arrivals
from omxfs.ui.files import read_part
from omxfs.ui.held_branches import HeldBranches
from omxfs.ui.stamps import SETTLE
from omxfs.ui.view_limits import ViewLimits, what_of, when_of
from omxfs.ui.zones import PrivateZones

#: where omx keeps a run's record in an omxfs workspace: ``agents/<agent>/runs/<ts>/trace.jsonl``
RUNS = "runs"
TRACE = "trace.jsonl"
#: the kinds of event, in the order the filter lists them
KINDS = ("write", "commit", "conflict", "delivery", "realtime", "checkpoint", "review", "audit", "run", "limit")
#: the audit's actions that decide a review or a branch (``omxfs.checkpoints.review``): shown as review events
BRANCH_ACTIONS = ("accept branch", "discard branch")
REVIEW_ACTIONS = ("accept review", "discard review", *BRANCH_ACTIONS)
#: seconds a delivery without a message waits to be an event: a message set right after the copy (``setfattr -n
#: user.omx.message``) rewrites its metadata, the same delivery, which is one event, with the message
HOLD = 1.0
#: the audit's action of a person marking what waited for them done (a conflict, a run, a view's limit): ``marks``
MARK = "mark resolved (omxfs ui)"


@dataclass(frozen=True)
class Event:
    epoch: float  # when it happened (the record's own time, else the file's mtime)
    kind: str  # one of KINDS
    agent: str  # who did it (as the record says: agents choose nothing of it but their content)
    zone: str  # "collaborative", "handoff/<a>_to_<b>", "realtime/<doc>", "agents/<a>", ".omxfs"
    summary: str  # one line; untrusted parts included (escaped when shown)
    link: str  # the page that shows it
    key: str  # what it is, once: the file (and for a rewritten file its stamp or line)

    @property
    def time(self) -> str:
        return datetime.fromtimestamp(self.epoch).astimezone().isoformat(timespec="milliseconds")

    def to_json(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "kind": self.kind,
            "agent": self.agent,
            "zone": self.zone,
            "summary": self.summary,
            "link": self.link,
        }


def epoch_of(stamp: object, fallback: float) -> float:
    """The Unix time of an ISO 8601 stamp (the store's UTC ``...Z``, omx's local time with its offset)."""
    if isinstance(stamp, str):
        with contextlib.suppress(ValueError):
            return datetime.fromisoformat(stamp).timestamp()
    return fallback


def link(page: str, **query: object) -> str:
    return f"{page}?{urlencode({k: str(v) for k, v in query.items()})}" if query else page


class _Tree:
    """The directories under ``root`` (but those named in ``skip``), each listed again when its stamp moves."""

    def __init__(self, root: Path, skip: frozenset[str] = frozenset()) -> None:
        self.root = root
        self.skip = skip
        self.stamps: dict[str, int] = {}

    def changed(self) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
        """(directory, its entries) of every directory new or changed since the last call, root first."""
        queue = [str(self.root)] if str(self.root) not in self.stamps else []
        queue += list(self.stamps)
        recent = time.time() - SETTLE
        while queue:
            directory = queue.pop(0)
            try:
                st = os.stat(directory, follow_symlinks=False)
                if st.st_mtime_ns == self.stamps.get(directory) and st.st_mtime < recent:
                    continue
                self.stamps[directory] = st.st_mtime_ns
                with os.scandir(directory) as listing:
                    entries = list(listing)
            except (FileNotFoundError, NotADirectoryError):
                self.stamps.pop(directory, None)
                continue
            for entry in entries:
                if entry.name not in self.skip and entry.path not in self.stamps and _is_dir(entry):
                    queue.append(entry.path)
            yield directory, entries


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _json(path: str) -> Any:
    with open(path, "rb") as f:
        return json.loads(f.read())


def _record(path: str) -> dict[str, Any] | None:
    """A JSON object an agent or the store wrote, or None where it is unreadable or not an object (skipped)."""
    try:
        record = _json(path)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


class Feed:
    """Every event of the workspace at ``root`` (the store's directory), oldest first; ``poll`` adds the new ones,
    each numbered in ``arrivals`` too (the order they were found in)."""

    def __init__(self, root: Path, zones: PrivateZones | None = None, arrivals: Arrivals | None = None) -> None:
        """``zones``: how the private zones under ``root`` are watched (by default, inotify and stamps both);
        ``arrivals``: how many of the newest events are kept numbered (by default ``arrivals.LIMIT``)."""
        self.root = root
        self.events: list[Event] = []
        self.arrivals = arrivals or Arrivals()
        self._seen: set[str] = set()
        versions = root / COLLABORATIVE / VERSIONS
        self._handoff = _Tree(root / HANDOFF)
        self._sources: list[tuple[_Tree, Callable[[str, list[os.DirEntry[str]]], Iterable[Event]]]] = [
            (_Tree(versions), lambda d, es: self._commits(versions, d, es)),
            (_Tree(root / COLLABORATIVE / CONFLICTS), self._conflicts),
            (self._handoff, self._deliveries),
            (_Tree(root / REALTIME / CRDT_STATE / WRITERS), self._realtime),
            (_Tree(root / META_DIR / CHECKPOINTS, frozenset({BLOBS, RESTORING})), self._checkpoints),
            (_Tree(root / META_DIR / LOGS / AUDIT_DIR), self._audit),
        ]
        self._run_dirs: dict[str, int] = {}  # agents/<a>/runs → its stamp when last listed
        self._runs: dict[str, int] = {}  # agents/<a>/runs/<ts>/trace.jsonl → bytes read of it
        self._reviews_stamp = 0  # .omxfs/reviews when last listed
        self._reviews: dict[str, str] = {}  # zone → the key of its pending review's event
        self._branches = HeldBranches(root / META_DIR)
        self.limits = ViewLimits(root / META_DIR)  # the daemon logs' limit lines, read once for the pages too
        self.marks: dict[str, dict[str, Any]] = {}  # path → the audit record that marked it resolved (``MARK``)
        self.zones = zones or PrivateZones(root / AGENTS)
        self.zones.poll(quiet=True)  # what the zones hold now: learned, the writes from now on are events
        self._polls = 0
        self.poll()

    # -- polling ----------------------------------------------------------------------------------------------

    def poll(self) -> list[Event]:
        """The events that appeared since the last poll, oldest first; they are added to ``events``."""
        new = self.find()
        self.add(new)
        return new

    def find(self) -> list[Event]:
        """The events that appeared since the last poll, oldest first, not added yet: the slow half of a poll,
        which the app runs without holding the lock its pages take to read ``events``."""
        new: list[Event] = []
        for tree, handler in self._sources:
            for directory, entries in tree.changed():
                for event in handler(directory, entries):
                    if event.key not in self._seen:
                        self._seen.add(event.key)
                        new.append(event)
        new += self._run_events()
        new += self._review_events()
        new += self._branch_events()
        new += self._zone_events()
        new += self._limit_events()
        new.sort(key=lambda e: e.epoch)
        return new

    def add(self, new: list[Event]) -> list[Arrival]:
        """Add the events ``find`` found to ``events``, in time order, and to ``arrivals``, numbered."""
        for event in new:
            if not self.events or event.epoch >= self.events[-1].epoch:
                self.events.append(event)
            else:
                bisect.insort(self.events, event, key=lambda e: e.epoch)
        return self.arrivals.add(new)

    def watched_dirs(self) -> int:
        """How many directories a poll stats (for the benchmark)."""
        return sum(len(tree.stamps) for tree, _ in self._sources) + len(self._run_dirs) + len(self._runs)

    # -- the sources ------------------------------------------------------------------------------------------

    def _commits(self, versions: Path, directory: str, entries: list[os.DirEntry[str]]) -> Iterator[Event]:
        rel = os.path.relpath(directory, versions)
        for entry in entries:
            if not ENTRY.fullmatch(entry.name) or f"commit:{entry.path}" in self._seen:
                continue
            try:
                record = load_version_record(_read(entry.path), f"{COLLABORATIVE}/{VERSIONS}/{rel}/{entry.name}")
            except (OSError, OmxError):
                continue  # half made (its writer is finishing it) or corrupt (fsck says so): looked at again
            yield Event(
                epoch_of(record.timestamp, 0.0),
                "commit",
                record.author,
                COLLABORATIVE,
                f"committed {rel} version {record.version}: {record.message}",
                link("/collab/file", path=rel),
                f"commit:{entry.path}",
            )

    def _conflicts(self, directory: str, entries: list[os.DirEntry[str]]) -> Iterator[Event]:
        top = self.root / COLLABORATIVE / CONFLICTS
        for entry in entries:
            name = entry.name
            if not name.endswith(".json") or REJECTED not in name or f"conflict:{entry.path}" in self._seen:
                continue
            rel = os.path.relpath(entry.path, top)
            agent = rel.split("/", 1)[0]
            record = _record(entry.path)
            if record is None:
                continue
            yield Event(
                epoch_of(record.get("timestamp"), 0.0),
                "conflict",
                agent,
                COLLABORATIVE,
                f"conflict on {record.get('path')}: wrote on version {record.get('your_base')}, "
                f"it is at {record.get('current_version')}",
                link("/collab/conflict", record=rel),
                f"conflict:{entry.path}",
            )

    def _deliveries(self, directory: str, entries: list[os.DirEntry[str]]) -> Iterator[Event]:
        for entry in entries:
            if not entry.name.endswith(META_SUFFIX):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                meta = load_handoff_meta(_read(entry.path), entry.path)
            except (OSError, OmxError):
                continue
            key = f"delivery:{entry.path}:{meta.timestamp}:{meta.sha256}"  # a redelivery has a new timestamp
            if key in self._seen:
                continue
            if self._polls and not meta.message and time.time() - st.st_mtime < HOLD:  # its message may follow
                self._handoff.stamps[directory] = -1  # listed again at the next poll
                continue
            box = os.path.relpath(directory, self.root / HANDOFF).split("/", 1)[0]
            yield Event(
                epoch_of(meta.timestamp, st.st_mtime),
                "delivery",
                meta.sender,
                f"{HANDOFF}/{box}",
                f"delivered {meta.filename} to {meta.recipient}: {meta.message}",
                link("/handoffs", box=box),
                key,
            )

    def _realtime(self, directory: str, entries: list[os.DirEntry[str]]) -> Iterator[Event]:
        doc = os.path.basename(directory)
        for entry in entries:
            parsed = parse_writer_file(entry.name)
            if parsed is None or f"realtime:{entry.path}" in self._seen:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            replica, seq = parsed
            yield Event(
                st.st_mtime,
                "realtime",
                agent_of(replica),
                f"{REALTIME}/{doc}",
                f"changed {doc} (replica {replica}, write {seq})",
                link("/realtime", doc=doc),
                f"realtime:{entry.path}",
            )

    def _checkpoints(self, directory: str, entries: list[os.DirEntry[str]]) -> Iterator[Event]:
        zone = os.path.basename(os.path.dirname(directory))
        for entry in entries:
            if not MANIFEST.fullmatch(entry.name) or f"checkpoint:{entry.path}" in self._seen:
                continue
            try:
                head = load_head(_read(entry.path), entry.path)  # its entries are not shown
            except (OSError, OmxError):
                continue
            note = f": {head.get('message')}" if head.get("message") else ""
            yield Event(
                epoch_of(head.get("time"), 0.0),
                "checkpoint",
                str(head.get("by")),
                f"{AGENTS}/{zone}",
                f"checkpoint {head.get('number')} of {zone} ({head.get('changed', 0)} change(s)){note}",
                link(f"/checkpoints/{zone}"),
                f"checkpoint:{entry.path}",
            )

    def _audit(self, directory: str, entries: list[os.DirEntry[str]]) -> Iterator[Event]:
        for entry in entries:
            if not AUDIT_RECORD.fullmatch(entry.name) or f"audit:{entry.path}" in self._seen:
                continue
            record = _record(entry.path)
            if record is None:
                continue
            action, path = str(record.get("action")), str(record.get("path"))
            if action == MARK:
                self.marks.setdefault(path, record)
            decided = action.startswith(REVIEW_ACTIONS) and path.startswith(f"{AGENTS}/")
            zone_page = f"/checkpoints/{path.split('/', 1)[1]}" if decided else ""
            page = f"{zone_page}/branches" if action.startswith(BRANCH_ACTIONS) else zone_page
            yield Event(
                epoch_of(record.get("timestamp"), 0.0),
                "review" if decided else "audit",
                str(record.get("agent", "")),
                path if decided else META_DIR,
                f"{action} {path} (uid {record.get('uid')}, pid {record.get('pid')})",
                link(page) if decided else link("/activity", kind="audit"),
                f"audit:{entry.path}",
            )

    def _run_events(self) -> list[Event]:
        agents = self.root / AGENTS
        with contextlib.suppress(OSError):
            for agent in os.listdir(agents):
                runs = agents / agent / RUNS
                try:
                    st = os.lstat(runs)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode):  # a symlink an agent made is not followed
                    continue
                if self._run_dirs.get(str(runs)) == st.st_mtime_ns and st.st_mtime < time.time() - SETTLE:
                    continue
                self._run_dirs[str(runs)] = st.st_mtime_ns
                for run in os.listdir(runs):
                    self._runs.setdefault(str(runs / run / TRACE), 0)
        found: list[Event] = []
        for trace, done in list(self._runs.items()):
            try:
                if os.stat(trace, follow_symlinks=False).st_size == done:
                    continue  # nothing appended (a size only: the read below never follows a symlink)
                chunk, _ = read_part(self.root, os.path.relpath(trace, self.root), done)
            except (OSError, OmxError):
                continue
            if not chunk:
                continue
            whole = chunk[: chunk.rfind(b"\n") + 1]  # a line being written is read once it is whole
            self._runs[trace] = done + len(whole)
            run_dir = os.path.dirname(trace)
            agent = os.path.basename(os.path.dirname(os.path.dirname(run_dir)))
            stamp = os.path.basename(run_dir)
            for offset, raw in _lines(whole, done):
                event = run_event(agent, stamp, raw, f"run:{trace}:{offset}")
                if event is not None:
                    found.append(event)
        return found

    def _limit_events(self) -> list[Event]:
        """Each line of a view's daemon log saying the view reached a limit, once (``view_limits``)."""
        found = []
        for log in self.limits.logs():
            agent, lines = self.limits.of(log)
            for line in lines:
                key = f"limit:{log}:{line}"
                if key in self._seen:
                    continue
                self._seen.add(key)
                when = when_of(line, time.time())
                summary = f"a view of {agent} reached its limit of {what_of(line)} ({log})"
                found.append(Event(when, "limit", agent, META_DIR, summary, link("/needs"), key))
        return found

    def _zone_events(self) -> list[Event]:
        """The writes in the private zones since the last poll: one event per zone that changed, its owner's."""
        self._polls += 1
        return [
            Event(
                changes.latest or time.time(),  # deleted only: no file tells when
                "write",
                agent,
                f"{AGENTS}/{agent}",
                f"wrote in {AGENTS}/{agent}: {changes.summary()}",
                link(f"/checkpoints/{agent}"),
                f"write:{agent}:{self._polls}",
            )
            for agent, changes in sorted(self.zones.poll().items())
        ]

    def _review_events(self) -> list[Event]:
        """A review held (its directory made by the zone's first review run), once per review: a zone whose review
        was accepted or discarded is forgotten, so that its next review is an event again. Only the directory of
        reviews is listed, never the change inside (it is the zone's size)."""
        top = self.root / META_DIR / REVIEWS
        try:
            st = os.lstat(top)
        except OSError:
            self._reviews.clear()
            return []
        if self._reviews_stamp == st.st_mtime_ns and st.st_mtime < time.time() - SETTLE:
            return []
        self._reviews_stamp = st.st_mtime_ns
        found: list[Event] = []
        try:
            with os.scandir(top) as listing:
                zones = {entry.name: entry.stat(follow_symlinks=False) for entry in listing if _is_dir(entry)}
        except OSError:
            return []
        for gone in set(self._reviews) - set(zones):
            self._seen.discard(self._reviews.pop(gone))
        for zone, held in zones.items():
            key = f"review:{zone}:{held.st_ino}:{held.st_ctime_ns}"
            if zone in self._reviews:
                continue
            self._reviews[zone] = key
            if key in self._seen:
                continue
            self._seen.add(key)
            found.append(
                Event(
                    held.st_mtime,
                    "review",
                    zone,
                    f"{AGENTS}/{zone}",
                    f"review run held a change of {zone} apart ({META_DIR}/{REVIEWS}/{zone}): accept or discard it",
                    link(f"/checkpoints/{zone}"),
                    key,
                )
            )
        return found

    def _branch_events(self) -> list[Event]:
        """A branch held (its directory made by its first run), once per branch, and each of its runs that ended
        (``held_branches``)."""
        return [
            Event(
                found.epoch,
                "review",
                found.zone,
                f"{AGENTS}/{found.zone}",
                f"branch {found.name} of {found.zone} "
                + ("run ended: its change waits" if found.ran else "held a change apart")
                + f" ({META_DIR}/{BRANCHES}/{found.zone}/{found.name}): accept or discard it",
                link(f"/checkpoints/{found.zone}/branches"),
                found.key,
            )
            for found in self._branches.poll()
        ]


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _lines(chunk: bytes, start: int) -> Iterator[tuple[int, bytes]]:
    offset = start
    for raw in chunk.split(b"\n"):
        if raw.strip():
            yield offset, raw
        offset += len(raw) + 1


def run_event(agent: str, stamp: str, raw: bytes, key: str) -> Event | None:
    """One line of an omx run's trace as an event (None for a line that is no JSON object)."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    when = epoch_of(entry.get("time") or entry.get("end_time") or entry.get("start_time"), time.time())
    return Event(
        when,
        "run",
        agent,
        f"{AGENTS}/{agent}",
        f"run {stamp}: {describe(entry)}",
        link(f"/runs/{agent}/{stamp}"),
        key,
    )


def describe(entry: dict[str, Any]) -> str:
    """A trace line in a few words (``omx replay`` shows it whole)."""
    kind = entry.get("kind")
    if kind == "run":
        data = entry.get("data") if isinstance(entry.get("data"), dict) else {}
        assert isinstance(data, dict)
        detail = data.get("task") or data.get("status") or data.get("outcome") or ""
        return f"{entry.get('event')} {detail}".strip()
    if kind == "step":
        return f"step {entry.get('step_id')} {entry.get('tool')}: {entry.get('status')}"
    if kind == "model":
        tokens = int(entry.get("prompt_tokens") or 0) + int(entry.get("completion_tokens") or 0)
        return f"model call ({entry.get('purpose')}): {entry.get('status')}, {tokens} tokens"
    if kind == "tool":
        return f"tool {entry.get('tool')}: {entry.get('status')}"
    return str(kind)


@dataclass(frozen=True)
class Filter:
    """What the Activity page asks for: an agent, a zone (a prefix: ``handoff`` takes every box), a kind, a time."""

    agent: str = ""
    zone: str = ""
    kind: str = ""
    since: float = 0.0
    until: float = 0.0

    def keeps(self, event: Event) -> bool:
        return (
            (not self.agent or event.agent == self.agent)
            and (not self.zone or event.zone == self.zone or event.zone.startswith(self.zone + "/"))
            and (not self.kind or event.kind == self.kind)
            and (not self.since or event.epoch >= self.since)
            and (not self.until or event.epoch <= self.until)
        )


def chosen(events: list[Event], keep: Filter, limit: int) -> list[Event]:
    """The newest ``limit`` events ``keep`` keeps, newest first."""
    found: list[Event] = []
    for event in reversed(events):
        if keep.keeps(event):
            found.append(event)
            if len(found) >= limit:
                break
    return found
