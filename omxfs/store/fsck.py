"""``omxfs fsck WS``: check that a store keeps its own invariants, and repair what a crash can leave behind.

Every mutation of the store is ordered so that a process killed at any moment leaves something readers never
see as half-done (``atomic.py``, ``collab.py``, ``handoff.py``). It can still leave *debris*, invisible through
the store API but visible to a person with ``ls`` on the store (SPEC §7: "the store is the truth"):

    debris (repairable, ``--repair`` fixes it)
    ├── orphan-version        v<N>.txt beyond the last entry (a store older than entry files, killed mid-commit)
    ├── unfinished-version    an entry whose content still has its staged name (killed after the commit point)
    ├── stale-history         history.json lists fewer versions than the entry files (derived: rewritten)
    ├── stale-current         current/<path> differs from the last version (killed before the current copy)
    ├── missing-meta          a delivery without <file>.meta.json (killed between file and metadata)
    ├── stale-meta            metadata whose sha256 is not the file's (killed while re-delivering)
    ├── dangling-meta         metadata without its file (killed while retracting)
    ├── untracked-current     current/<path> with no history (written on the store by hand)
    ├── missing-zone          a configured agent without agents/<agent>/, or a missing zone directory
    ├── stale-state           a realtime document's merged state lags behind its writers' files (derived: rewritten)
    ├── temp-file             a temp file in .omxfs/tmp/, or a commit's in .versions/ (only old ones are removed)
    ├── stray-scratch         .omxfs/scratch/<name>/ of no configured agent: editors' temp files nothing serves
    │                         any more (the agent left the config, or it was made by hand); removed with its files
    ├── torn-audit            the old logs/audit.jsonl ends in a line cut short (a writer killed mid-append, before
    │                         record files): cut off at its last whole line
    ├── unreferenced-blob, stale-restore, unfinished-restore, stale-view: checkpoint data (``omxfs.checkpoints.check``)
    └── stray-snapshot, unreferenced-delivery-blob: snapshots and kept deliveries (``omxfs.snapshots.check``)
    corruption (reported, never guessed at)
    ├── bad-config            config.toml does not parse
    ├── bad-history           history.json does not parse (with no entry files), is not 1..N, or differs from them
    ├── bad-entry             a v<N>.json entry file does not parse (its sha256 no sha256, its staged name no staged
    │                         file's name), or the entry files skip a version
    ├── missing-version       a version the history names has no file
    ├── bad-checksum          a version file's sha256 is not its history entry's
    ├── bad-meta              a handoff metadata file does not parse (agents, a normalized path, a sha256) or names
    │                         another sender/recipient/file
    ├── bad-conflict          a conflict record is not a JSON object
    ├── unreachable-name      a shared-zone name not in Unicode NFC form (made on the store by hand or by a tool
                              before names were normalised): the mount, which looks every shared name up in NFC,
                              cannot reach it; rename it to its NFC form (a twin may exist: which to keep is yours)
    ├── bad-state             a CRDT state file (merged or a writer's) does not parse, is of another document or
    │                         schema, is not named as a writer's file, or is a writer's of no document
    ├── bad-audit             an audit record (a file under logs/audit/, or a line of the old audit.jsonl) that
    │                         does not parse, lacks a field or has one of another type, or is named as no record is
    ├── bad-record            a record under .omxfs/ that is not what the store writes: an accept's marker (its undo
    │                         checkpoint, its agent) or a mount record (its pid, its paths); reported, never followed
    ├── bad-manifest, missing-blob, bad-blob: checkpoint data (``omxfs.checkpoints.check``)
    └── bad-snapshot, dangling-snapshot, bad-delivery-record, missing-delivery-blob, bad-delivery-blob: snapshots and
        kept deliveries (``omxfs.snapshots.check``)

Repairs take the same OS locks as the writers they complete, so ``--repair`` is safe beside live daemons. Debris
a write in progress may own (temp files, unreferenced blobs, a restore's work) is removed only once older than the
grace period; the findings, and how they are told, are ``findings.py``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from omxfs.checkpoints.check import check_checkpoints
from omxfs.checkpoints.held import remove_tree
from omxfs.checkpoints.records import read_accept_marker
from omxfs.checkpoints.review import finish_accept, interrupted
from omxfs.crdt import Document
from omxfs.errors import NotFound, OmxError, StoreCorrupt
from omxfs.snapshots.check import check_snapshots
from omxfs.store import audit as audit_log
from omxfs.store.atomic import list_files, read_bytes
from omxfs.store.config import Config, parse_config
from omxfs.store.findings import DEBRIS, TEMP_GRACE_SECONDS, Finding, Report
from omxfs.store.layout import (
    AGENTS,
    AUDIT_DAY,
    AUDIT_DIR,
    AUDIT_LOG,
    AUDIT_RECORD,
    COLLABORATIVE,
    CONFIG,
    CONFLICTS,
    ENTRY,
    HISTORY,
    LOGS,
    META_DIR,
    META_SUFFIX,
    MOUNT_RECORDS,
    REVIEW_ACCEPTING,
    SCRATCH,
    STAGED,
    STATE_DIR,
    STATE_SUFFIX,
    TMP,
    VERSIONS,
    WRITERS,
    ZONE_DIRS,
    entry_name,
    version_name,
)
from omxfs.store.mount_records import load_record
from omxfs.store.names import AGENT_NAME, nfc, parse_handoff_dir
from omxfs.store.realtime import decode_state, encode_state
from omxfs.store.records import (
    HandoffMeta,
    VersionEntry,
    VersionRecord,
    dump_history,
    dump_json,
    load_handoff_meta,
    load_history,
    load_version_record,
    sha256,
)
from omxfs.store.replicas import parse_writer_file
from omxfs.store.scratch import ScratchArea
from omxfs.store.stamps import utc_now
from omxfs.store.workspace import Workspace


def fsck(ws: Workspace, *, repair: bool = False, temp_grace: float = TEMP_GRACE_SECONDS) -> Report:
    """Check every invariant of the store at ``ws``; with ``repair``, complete what crashes left half-done, and
    remove debris a write may own (temp files, unreferenced blobs…) once older than ``temp_grace`` seconds."""
    return _Checker(ws, repair, temp_grace).run()


class _Checker:
    def __init__(self, ws: Workspace, repair: bool, temp_grace: float) -> None:
        self.ws = ws
        self.repair = repair
        self.temp_grace = temp_grace
        self.report = Report(repair=repair, grace=temp_grace)
        self.config: Config | None = None  # read by layout(), first

    def run(self) -> Report:
        self.checkpoints()  # first: a zone a killed restore left missing is moved back, not recreated empty
        self.reviews()
        self.layout()
        self.collab()
        self.handoff()
        self.realtime()
        self.temp_files()
        self.scratch()
        self.audit()
        self.mounts()
        self.snapshots()
        return self.report

    def found(
        self, kind: str, path: str, detail: str, repaired: bool = False, *, age: float | None = None, left: str = ""
    ) -> None:
        """A finding (``findings.Found``): debris of ``age`` seconds waits until older than the grace period."""
        young = age is not None and age <= self.temp_grace and not repaired
        wait = self.temp_grace - age if young and age is not None else None
        self.report.findings.append(Finding(kind, path, detail, repaired, wait, left))

    # -- layout and config ------------------------------------------------------------------------------------

    def layout(self) -> None:
        root = self.ws.root
        try:
            self.config = parse_config((self.ws.meta / CONFIG).read_text("utf-8"))
            agents = list(self.config.agents)
        except (OmxError, OSError, UnicodeDecodeError) as exc:
            self.found("bad-config", f"{META_DIR}/{CONFIG}", str(exc))
            self.config, agents = None, []
        for sub in ZONE_DIRS:
            if not (root / sub).is_dir():
                self._missing_dir(root / sub, sub, "a zone directory is missing")
        for agent in agents:
            zone = root / AGENTS / agent
            if not zone.is_dir():
                self._missing_dir(zone, f"agents/{agent}", "a configured agent has no private zone")

    def _missing_dir(self, path: Path, shown: str, detail: str) -> None:
        if self.repair:
            path.mkdir(parents=True, exist_ok=True)
        self.found("missing-zone", shown, detail, repaired=self.repair)

    # -- collaborative ----------------------------------------------------------------------------------------

    def collab(self) -> None:
        zone = self.ws.collab
        tracked = {PurePosixPath(rel) for rel in zone.list()}
        for rel in sorted(tracked):
            self._reachable(f"{COLLABORATIVE}/{rel}", str(rel))
            with self.ws.locks.hold(f"collab:{rel}") if self.repair else contextlib.nullcontext():
                self._collab_file(rel)
        for rel in sorted(list_files(zone.current_dir)):
            if rel not in tracked:
                shown, why = f"collaborative/current/{rel}", "not a versioned file: whether to keep it is yours"
                self.found("untracked-current", shown, "no history: not a versioned file", left=why)
        for rel in sorted(list_files(zone.conflicts_dir)):
            if rel.name.endswith(".json"):
                self.report.count("conflict records")
                try:
                    record = json.loads(read_bytes(zone.conflicts_dir, rel))
                except (OmxError, ValueError) as exc:
                    record = exc
                if not isinstance(record, dict):
                    self.found("bad-conflict", f"{COLLABORATIVE}/{CONFLICTS}/{rel}", "not a JSON object")

    def _reachable(self, shown: str, name: str) -> None:
        """Shared zones are reached by the NFC form of each name (``names.shared_path``)."""
        if nfc(name) != name:
            self.found("unreachable-name", shown, f"not in Unicode NFC form: the mount reaches only {nfc(name)!r}")

    def _collab_file(self, rel: PurePosixPath) -> None:
        """The entry files are the truth (``history.json`` only before they existed); the rest is derived."""
        zone = self.ws.collab
        where = f"{COLLABORATIVE}/{VERSIONS}/{rel}"
        self.report.count("collaborative files")
        try:
            listed = load_history(read_bytes(zone.versions_dir, rel / HISTORY), f"{where}/{HISTORY}")
        except NotFound:
            listed = []
        except OmxError as exc:
            if not (zone.versions_dir / rel / entry_name(1)).is_file():
                self.found("bad-history", f"{where}/{HISTORY}", exc.message)
                return
            listed = []  # only a copy of the entries: rewritten below
        try:
            records = self._records(rel, where)
        except OmxError as exc:
            self.found("bad-entry", where, exc.message)
            return
        entries = list(listed)
        for record in records:
            entry = record.entry()
            if entry.version <= len(listed):
                if listed[entry.version - 1] != entry:
                    self.found("bad-history", f"{where}/{HISTORY}", f"version {entry.version} differs from its entry")
            else:
                entries.append(entry)
        if len(listed) < len(entries):
            if self.repair:
                self.ws.writer.write(zone.versions_dir, rel / HISTORY, dump_history(entries))
            detail = f"lists {len(listed)} of {len(entries)} versions"
            self.found("stale-history", f"{where}/{HISTORY}", detail, self.repair)
        staged = {r.version: r.staged for r in records if r.staged}
        last = b""
        for entry in entries:
            self.report.count("versions")
            last = self._version_content(rel, entry, staged.get(entry.version)) or b""
            if not AGENT_NAME.fullmatch(entry.author):
                self.found("bad-history", f"{where}/{HISTORY}", f"version {entry.version}: bad author")
        self._stray_files(rel, entries, set(staged.values()))
        if not entries:
            return
        try:
            current = read_bytes(zone.current_dir, rel)
        except OmxError:
            current = None
        if current != last:
            if self.repair:
                self.ws.writer.write(zone.current_dir, rel, last)
            detail = f"not the content of version {entries[-1].version}"
            self.found("stale-current", f"collaborative/current/{rel}", detail, self.repair)

    def _records(self, rel: PurePosixPath, where: str) -> list[VersionRecord]:
        """The entry files ``v1.json`` … ``vN.json``; an entry file past a gap is corruption."""
        directory = self.ws.collab.versions_dir / rel
        numbers = sorted(int(m.group(1)) for name in os.listdir(directory) if (m := ENTRY.fullmatch(name)))
        records = []
        for n in numbers:
            raw = read_bytes(self.ws.collab.versions_dir, rel / entry_name(n))
            records.append(load_version_record(raw, f"{where}/{entry_name(n)}"))
        first = numbers[0] if numbers else 1
        if numbers != list(range(first, first + len(numbers))):
            raise StoreCorrupt(f"the entry files skip a version: {numbers}")
        return records

    def _version_content(self, rel: PurePosixPath, entry: VersionEntry, staged: str | None) -> bytes | None:
        zone = self.ws.collab
        where = f"{COLLABORATIVE}/{VERSIONS}/{rel}"
        name = version_name(entry.version)
        try:
            content = read_bytes(zone.versions_dir, rel / name)
        except OmxError:
            content = None
        if content is None and staged is not None:  # committed, killed before the rename
            try:
                content = read_bytes(zone.versions_dir, rel / staged)
            except OmxError:
                content = None
            else:
                if self.repair:
                    os.rename(zone.versions_dir / rel / staged, zone.versions_dir / rel / name)
                self.found(
                    "unfinished-version", f"{where}/{name}", f"still under its staged name {staged}", self.repair
                )
        if content is None:
            self.found("missing-version", f"{where}/{name}", "named by the history")
        elif sha256(content) != entry.sha256:
            self.found("bad-checksum", f"{where}/{name}", "sha256 differs from history")
        return content

    def _stray_files(self, rel: PurePosixPath, entries: list[VersionEntry], named: set[str]) -> None:
        """Version files beyond the last entry (killed before its history, in a store older than entry files),
        staged contents and temp files that no entry names (a commit that lost its race or was killed first)."""
        directory = self.ws.collab.versions_dir / rel
        where = f"{COLLABORATIVE}/{VERSIONS}/{rel}"
        known = {version_name(e.version) for e in entries} | {entry_name(e.version) for e in entries} | {HISTORY}
        now = time.time()
        for name in sorted(os.listdir(directory)):
            path = directory / name
            if name in known or name in named or not path.is_file() or path.is_symlink():
                continue
            if name.startswith("v") and name.endswith(".txt") and name[1:-4].isdigit():
                if self.repair:
                    path.unlink()
                self.found("orphan-version", f"{where}/{name}", "beyond the history: never committed", self.repair)
            elif STAGED.fullmatch(name) or (name.startswith(".") and name.endswith(".tmp")):
                age = now - path.stat().st_mtime
                old = age > self.temp_grace
                if self.repair and old:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                detail = "left by a commit that lost or was killed"
                self.found("temp-file", f"{where}/{name}", detail, self.repair and old, age=age)

    # -- handoff ----------------------------------------------------------------------------------------------

    def handoff(self) -> None:
        zone = self.ws.handoff
        for box in sorted(zone.dir.iterdir()) if zone.dir.is_dir() else []:
            pair = parse_handoff_dir(box.name)
            if pair is None or not box.is_dir() or box.is_symlink():
                continue
            files = set(list_files(box))
            for rel in sorted(files):
                name = PurePosixPath(box.name) / rel
                if rel.name.endswith(META_SUFFIX):
                    if rel.with_name(rel.name[: -len(META_SUFFIX)]) not in files:
                        self._dangling_meta(name)
                    continue
                self._reachable(f"handoff/{name}", str(rel))
                with self.ws.locks.hold(f"handoff:{name}") if self.repair else contextlib.nullcontext():
                    self._delivery(pair, box, rel)

    def _dangling_meta(self, name: PurePosixPath) -> None:
        if self.repair:
            with contextlib.suppress(FileNotFoundError):
                (self.ws.handoff.dir / name).unlink()
        self.found("dangling-meta", f"handoff/{name}", "metadata of a delivery that is gone", self.repair)

    def _delivery(self, pair: tuple[str, str], box: Path, rel: PurePosixPath) -> None:
        self.report.count("deliveries")
        name = PurePosixPath(box.name) / rel
        meta_rel = rel.with_name(rel.name + META_SUFFIX)
        try:
            content = read_bytes(box, rel)
        except OmxError:
            return  # retracted meanwhile
        try:
            raw = read_bytes(box, meta_rel)
        except OmxError:
            self._rewrite_meta(pair, box, rel, content, "missing-meta", "no metadata: derived from the file")
            return
        try:
            meta = load_handoff_meta(raw, f"handoff/{name}{META_SUFFIX}")
        except OmxError as exc:
            self.found("bad-meta", f"handoff/{name}{META_SUFFIX}", exc.message)
            return
        if (meta.sender, meta.recipient, meta.filename) != (*pair, str(rel)):
            self.found("bad-meta", f"handoff/{name}{META_SUFFIX}", "names another sender, recipient or file")
        elif meta.sha256 != sha256(content):
            self._rewrite_meta(pair, box, rel, content, "stale-meta", "sha256 is not the file's (a re-delivery)")

    def _rewrite_meta(
        self, pair: tuple[str, str], box: Path, rel: PurePosixPath, content: bytes, kind: str, detail: str
    ) -> None:
        """Complete an interrupted delivery the way ``HandoffZone.meta`` reads one: derived from the file."""
        name = PurePosixPath(box.name) / rel
        if self.repair:
            stamp = utc_now(os.stat(box / rel, follow_symlinks=False).st_mtime)
            meta = HandoffMeta(
                sender=pair[0],
                recipient=pair[1],
                filename=str(rel),
                timestamp=stamp,
                message="",
                sha256=sha256(content),
            )
            self.ws.writer.write(box, rel.with_name(rel.name + META_SUFFIX), dump_json(meta.to_json()))
        self.found(kind, f"handoff/{name}", detail, self.repair)

    # -- realtime and temp files ------------------------------------------------------------------------------

    def realtime(self) -> None:
        zone = self.ws.realtime
        documents: set[str] = set()
        for path in sorted(zone.state_dir.iterdir()) if zone.state_dir.is_dir() else []:
            if not path.name.endswith(STATE_SUFFIX) or not path.is_file() or path.is_symlink():
                continue
            self.report.count("realtime documents")
            where = f"{STATE_DIR}/{path.name}"
            doc_id = path.name[: -len(STATE_SUFFIX)]
            documents.add(doc_id)
            self._reachable(where, doc_id)
            try:
                raw = path.read_bytes()
                doc = decode_state(raw, where)
                doc.snapshot()
            except (OmxError, ValueError, TypeError, KeyError) as exc:
                self.found("bad-state", where, str(exc) or type(exc).__name__)
                continue
            if doc.doc_id != doc_id:
                self.found("bad-state", where, f"the state is of document {doc.doc_id!r}")
                continue
            self._realtime_writers(doc_id, doc, raw)
        writers = zone.state_dir / WRITERS
        for folder in sorted(writers.iterdir()) if writers.is_dir() and not writers.is_symlink() else []:
            if folder.name not in documents:
                self.found("bad-state", f"{STATE_DIR}/{WRITERS}/{folder.name}", "writer files of no document")

    def _realtime_writers(self, doc_id: str, merged: Document, raw: bytes) -> None:
        """Each writer file parses and is of the document; the merged file holds their merge (else it lags)."""
        folder = self.ws.realtime.state_dir / WRITERS / doc_id
        union, whole = merged.copy(), True
        for path in sorted(folder.iterdir()) if folder.is_dir() and not folder.is_symlink() else []:
            shown = f"{STATE_DIR}/{WRITERS}/{doc_id}/{path.name}"
            if parse_writer_file(path.name) is None or path.is_symlink() or not path.is_file():
                self.found("bad-state", shown, "not a writer's state file")
                whole = False
                continue
            self.report.count("realtime writer files")
            try:
                part = decode_state(path.read_bytes(), shown)
                if part.doc_id != doc_id:
                    raise StoreCorrupt(f"the state is of document {part.doc_id!r}")
                union.merge(part)
            except FileNotFoundError:
                continue  # folded or replaced by a writer meanwhile: its content is in a newer file
            except (OmxError, OSError, ValueError, TypeError, KeyError) as exc:
                self.found("bad-state", shown, getattr(exc, "message", str(exc)) or type(exc).__name__)
                whole = False
        if whole and encode_state(union) != raw:
            name = f"{doc_id}{STATE_SUFFIX}"
            if self.repair:
                self.ws.writer.write(self.ws.realtime.state_dir, PurePosixPath(name), encode_state(union))
            where = f"{STATE_DIR}/{name}"
            self.found("stale-state", where, "behind the merge of its writers' files", self.repair)

    def temp_files(self) -> None:
        tmp = self.ws.meta / TMP
        now = time.time()
        for entry in _scan(tmp):
            age = now - entry.stat(follow_symlinks=False).st_mtime
            old = age > self.temp_grace
            if self.repair and old:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
            shown = f"{META_DIR}/tmp/{entry.name}"
            self.found("temp-file", shown, "left by an interrupted write", self.repair and old, age=age)

    def checkpoints(self) -> None:
        check_checkpoints(self.ws, self.found, self.report.count, repair=self.repair, grace=self.temp_grace)

    def snapshots(self) -> None:
        check_snapshots(self.ws, self.found, self.report.count, repair=self.repair, grace=self.temp_grace)

    def reviews(self) -> None:
        """An accept of a review killed half-way (``omxfs.checkpoints.review``): finished by ``--repair``, as by
        ``omxfs accept`` run again."""
        for review in interrupted(self.ws):
            marker = review.dir / REVIEW_ACCEPTING
            try:
                read_accept_marker(marker)
            except FileNotFoundError:
                pass  # finished meanwhile
            except StoreCorrupt as exc:
                self.found("bad-record", f"{review.shown()}/{REVIEW_ACCEPTING}", exc.message)
            if self.repair:
                finish_accept(review)
            detail = "an accept killed half-way: the zone holds part of the change (finish: omxfs accept)"
            self.found("interrupted-accept", review.shown(), detail, self.repair)

    def mounts(self) -> None:
        """The mount records (``store.mount_records``): each one a daemon's, every field what a daemon writes."""
        directory = self.ws.meta / MOUNT_RECORDS
        for entry in _scan(directory):
            shown = f"{META_DIR}/{MOUNT_RECORDS}/{entry.name}"
            try:
                load_record(Path(entry.path).read_bytes(), shown)
            except FileNotFoundError:
                continue  # its daemon removed it meanwhile
            except (OSError, StoreCorrupt) as exc:
                self.found("bad-record", shown, getattr(exc, "message", None) or str(exc))

    def scratch(self) -> None:
        """The scratch area (``store.scratch``): one directory per agent that has had editors' temp files there."""
        if self.config is None:
            return  # who is configured is not known: nothing is called stray
        area = ScratchArea(self.ws)
        for agent in area.agents():
            if self.config.knows(agent):
                continue
            if self.repair:
                remove_tree(area.root / agent)
            self.found("stray-scratch", f"{META_DIR}/{SCRATCH}/{agent}", "scratch of no configured agent", self.repair)

    # -- the audit trail (``store.audit``) ---------------------------------------------------------------------

    def audit(self) -> None:
        logs = self.ws.meta / LOGS
        self._old_audit(logs / AUDIT_LOG)
        root = logs / AUDIT_DIR
        with contextlib.suppress(FileNotFoundError), os.scandir(root) as days:
            for day in sorted(days, key=lambda e: e.name):
                shown = f"{META_DIR}/{LOGS}/{AUDIT_DIR}/{day.name}"
                if not (day.is_dir(follow_symlinks=False) and AUDIT_DAY.fullmatch(day.name)):
                    self.found("bad-audit", shown, "not a day's directory of audit records")
                    continue
                for entry in _scan(Path(day.path)):
                    self._audit_record(Path(entry.path), f"{shown}/{entry.name}")

    def _audit_record(self, path: Path, shown: str) -> None:
        if not AUDIT_RECORD.fullmatch(path.name):
            self.found("bad-audit", shown, "named as no audit record is (<time>-<token>.json)")
            return
        try:
            record = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            self.found("bad-audit", shown, f"unreadable: {exc}")
            return
        if not audit_log.valid(record):
            self.found("bad-audit", shown, f"not an audit record (it needs {', '.join(audit_log.FIELDS)})")
            return
        self.report.count("audit records")

    def _old_audit(self, path: Path) -> None:
        """The audit.jsonl a store kept before record files: read, never written any more."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return
        shown = f"{META_DIR}/{LOGS}/{AUDIT_LOG}"
        lines = raw.split(b"\n")
        torn = lines.pop() if lines else b""  # after the last newline: empty unless a writer was killed mid-line
        for number, line in enumerate(lines, 1):
            try:
                valid = audit_log.valid(json.loads(line))
            except ValueError:
                valid = False
            if valid:
                self.report.count("audit records")
            elif line.strip():
                self.found("bad-audit", f"{shown}:{number}", "not an audit record")
        if torn:
            if self.repair:
                os.truncate(path, len(raw) - len(torn))
            self.found("torn-audit", shown, f"its last {len(torn)} byte(s) are a line cut short", self.repair)


def _scan(directory: Path) -> Iterator[os.DirEntry[str]]:
    with contextlib.suppress(FileNotFoundError), os.scandir(directory) as entries:
        yield from sorted((e for e in entries if e.is_file(follow_symlinks=False)), key=lambda e: e.name)


__all__ = ["DEBRIS", "TEMP_GRACE_SECONDS", "Finding", "Report", "fsck"]
