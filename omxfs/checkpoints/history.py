"""A private zone's checkpoints: make one, list them, read one, prune old ones.

Layout (``omxfs.store.layout``): ``.omxfs/checkpoints/<zone>/blobs/<aa>/<sha256>`` holds each content once, and
``manifests/<N>.json`` checkpoint N. A checkpoint is made in this order, so that a process killed at any point
leaves the earlier checkpoints whole and at most blobs no manifest names (``fsck`` reports them; a prune or
``fsck --repair`` removes them):

1. walk the zone, storing the content of each file whose stat changed since the latest checkpoint as a blob
   (``blobs.BlobStore``: staged, then linked to its name; an unchanged file is neither read nor written, and an
   unchanged directory is not listed: ``scan.py``);
2. check that every blob the manifest will name is there, stage the manifest in the store's temp directory, and make
   the new blobs and the staged manifest durable in one round (a few fsynced each, at once from threads; many by
   ``syncfs``);
3. link the staged manifest to ``manifests/<N>.json`` exclusively (no lock; ``atomic.create_exclusive`` where the
   filesystem has no hard links): if another writer took N first (two checkpoints of one zone at once, from several
   daemons or machines), N+1, and so on.

A checkpoint of some paths only (``make_paths``, what a restore of those paths replaces) walks just those: its
manifest is the latest one with those subtrees as they are now, and its ``paths`` say what it vouches for.

A manifest that changes few entries is written as what differs from an earlier one written whole, its base
(``manifest.as_delta``); reading it reads the base too. Nothing is rewritten in place; a manifest is removed only by
a prune, which keeps the newest KEEP and the bases of those it keeps, and then removes the blobs that no remaining
manifest names and that are older than ``PRUNE_GRACE`` (a checkpoint being made may have written them and not yet
its manifest). The blobs a checkpoint reuses are those of the latest checkpoint, which a prune always keeps
(KEEP >= 1).

Who may: the zone's owner, or a supervisor (audited, as every supervisor's change to another zone). Anyone who may
read the zone may list, read and diff its checkpoints.
"""

from __future__ import annotations

import bisect
import contextlib
import operator
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path, PurePosixPath

from omxfs.checkpoints.blobs import BlobStore
from omxfs.checkpoints.manifest import DIR, FILE, SCAN, Entry, Manifest, as_delta, load_manifest, walk_key, whole
from omxfs.checkpoints.scan import scan_paths, scan_zone
from omxfs.errors import InvalidInput, NotFound, StoreCorrupt, ZoneDenied, from_os_error
from omxfs.shell_line import shell_line
from omxfs.store.atomic import NO_LINK, create_exclusive, exists, read_with_stat, sync_dir
from omxfs.store.layout import AGENTS, BLOB, BLOBS, CHECKPOINTS, MANIFEST, MANIFESTS, TMP, manifest_name
from omxfs.store.stamps import utc_now
from omxfs.store.workspace import Workspace

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from typing import Any

#: blobs younger than this are never pruned: a checkpoint being made may have written them, not yet its manifest
PRUNE_GRACE = 300.0
#: manifests this process keeps parsed (a daemon, an MCP server, a restore: each reads the latest again and again)
CACHED_MANIFESTS = 8
#: (manifest file, its stat) -> the manifest it held; a manifest is created once and never rewritten, so a file
#: whose inode, size and times are unchanged holds what was parsed
_parsed: OrderedDict[str, tuple[tuple[int, int, int, int, int], Manifest]] = OrderedDict()
_parsed_lock = threading.Lock()  # the MCP server and the daemon serve requests from threads


def forget_parsed_manifests() -> None:
    """Drop the manifests this process keeps parsed: the next load reads its file, as a new process does (the
    benchmark's measure of an ``omxfs run`` start)."""
    with _parsed_lock:
        _parsed.clear()


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _remember(path: str, st: os.stat_result, manifest: Manifest) -> None:
    with _parsed_lock:
        _parsed[path] = (_identity(st), manifest)
        _parsed.move_to_end(path)
        while len(_parsed) > CACHED_MANIFESTS:
            _parsed.popitem(last=False)


def _recall(path: str, st: os.stat_result) -> Manifest | None:
    """The manifest parsed from ``path`` if the file is still the one it was parsed from."""
    with _parsed_lock:
        known = _parsed.get(path)
        if known is None or not stat.S_ISREG(st.st_mode) or known[0] != _identity(st):
            return None
        _parsed.move_to_end(path)
        return known[1]


class Pruned:
    """What a prune removed."""

    __slots__ = ("bases", "blobs", "bytes", "manifests")

    def __init__(self, manifests: list[int], blobs: int, bytes: int, bases: list[int]) -> None:
        self.manifests, self.blobs, self.bytes = manifests, blobs, bytes
        self.bases = bases  # older than the newest KEEP, kept: a kept checkpoint is written against it


def subtree_end(entries: Sequence[Entry], start: int) -> int:
    """The index after the subtree of ``entries[start]``: in walk order a subtree is one run of entries."""
    inside = entries[start].path + "/"
    end = start + 1
    while end < len(entries) and entries[end].path.startswith(inside):
        end += 1
    return end


def outermost(paths: Collection[str]) -> list[str]:
    """``paths`` without those below another one of them (the subtree of the outer one holds them)."""
    unique = set(paths)
    return [p for p in unique if not any(p.startswith(q + "/") for q in unique)]


def _has_parents(manifest: Manifest, path: str) -> bool:
    """Whether every directory above ``path`` is a directory in ``manifest`` (a path's subtree can be spliced)."""
    parent = path.rpartition("/")[0]
    while parent:
        entry = manifest.entry(parent)
        if entry is None or entry.type != DIR:
            return False
        parent = parent.rpartition("/")[0]
    return True


def _unlink_outside(parent: Manifest, roots: Collection[str]) -> dict[str, Entry]:
    """The names outside ``roots`` that ``parent`` records as a hard link to a first name inside them, each as a
    file of its own with that first name's content as the parent has it: the first name may be gone or another
    file now, and a manifest never names a link to what it does not hold as that link's file."""
    inside = tuple(root + "/" for root in roots)
    found = {}
    for entry in parent.linked:
        link = entry.link
        if (link in roots or link.startswith(inside)) and not (entry.path in roots or entry.path.startswith(inside)):
            held = parent.entry(link)
            if held is None:  # not a manifest this module wrote: left as it is
                continue
            found[entry.path] = entry.replace(
                link="", size=held.size, sha256=held.sha256, data=held.data, xattrs=held.xattrs, ctime_ns=0
            )
    return found


def compare(old: Mapping[str, Entry], new: Sequence[Entry]) -> tuple[int, list[Entry]]:
    """How many paths were added, removed or changed from ``old`` (by path) to ``new`` (a scan's entries, each
    path once), and the entries of ``new`` that are not ``old``'s very entries (only they can name a new blob)."""
    differ = added = 0
    made: list[Entry] = []
    get = old.get
    for entry in new:
        before = get(entry.path)
        # a scan hands back the parent's very entry for what did not change: the common case costs one `is`
        if before is entry:
            continue
        made.append(entry)
        if before is None:
            added += 1
        elif _NODE(before) != _NODE(entry):
            differ += 1
    removed = len(old) - (len(new) - added)  # the paths of ``old`` that ``new`` lacks
    return differ + added + removed, made


#: what ``Entry.same_node`` compares, fetched in C
_NODE = operator.attrgetter(
    "type", "mode", "uid", "gid", "size", "sha256", "data", "target", "link", "rdev", "xattrs", "mtime_ns"
)


class ZoneHistory:
    """The checkpoints of ``zone`` (an agent's name) in the workspace ``ws``."""

    def __init__(self, ws: Workspace, zone: str) -> None:
        ws.require_known(zone)
        self.ws = ws
        self.zone = zone
        self.zone_dir = ws.root / AGENTS / zone
        self.dir = ws.meta / CHECKPOINTS / zone
        self.manifests_dir = self.dir / MANIFESTS
        self.blobs = BlobStore(self.dir / BLOBS, ws.meta / TMP)

    # -- reading ----------------------------------------------------------------------------------------------

    def numbers(self) -> list[int]:
        try:
            names = os.listdir(self.manifests_dir)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for name in names if (m := MANIFEST.fullmatch(name)))

    def load(self, number: int) -> Manifest:
        where = f"checkpoint {number} of {self.zone}"
        name = manifest_name(number)
        path = os.path.join(self.manifests_dir, name)
        with contextlib.suppress(OSError):
            known = _recall(path, os.stat(path, follow_symlinks=False))
            if known is not None:
                return known
        try:
            raw, st = read_with_stat(self.manifests_dir, PurePosixPath(name))
        except NotFound:
            raise NotFound(f"{self.zone} has no checkpoint {number} (see `{self._listing()}`)") from None
        manifest = load_manifest(raw, where, lambda base: self._base(base, where))
        if manifest.number != number or manifest.zone != self.zone:
            raise StoreCorrupt(f"{where}: the manifest says it is checkpoint {manifest.number} of {manifest.zone}")
        _remember(path, st, manifest)
        return manifest

    def _base(self, number: int, where: str) -> Manifest:
        """Checkpoint ``number``, which the checkpoint ``where`` is written against: written whole, and there."""
        try:
            base = self.load(number)
        except NotFound:
            raise StoreCorrupt(f"{where}: written against checkpoint {number}, which is gone") from None
        if base.base is not None:
            raise StoreCorrupt(f"{where}: written against checkpoint {number}, itself not written whole")
        return base

    def all(self) -> list[Manifest]:
        found = []
        for number in self.numbers():
            with contextlib.suppress(NotFound):  # pruned meanwhile
                found.append(self.load(number))
        return found

    def _listing(self) -> str:
        """The command that lists the zone's checkpoints, naming the workspace as the person did."""
        return shell_line("omxfs", "checkpoints", self.ws.shown_as, self.zone)

    def latest(self) -> Manifest | None:
        for number in reversed(self.numbers()):
            with contextlib.suppress(NotFound):
                return self.load(number)
        return None

    def resolve(self, text: str) -> int:
        """A checkpoint as a user names it: its number, or ``last`` (also ``-1``, ``-2``: counted from the end)."""
        numbers = self.numbers()
        if text in ("last", "latest"):
            text = "-1"
        try:
            value = int(text)
        except ValueError:
            raise InvalidInput(f"{text!r} names no checkpoint: give its id (a number) or 'last'") from None
        if value < 0:
            if -value > len(numbers):
                raise NotFound(f"{self.zone} has {len(numbers)} checkpoint(s): {text} is not one of them")
            return numbers[value]
        if value not in numbers:
            raise NotFound(f"{self.zone} has no checkpoint {value} (see `{self._listing()}`)")
        return value

    # -- writing ----------------------------------------------------------------------------------------------

    def check_may_change(self, actor: str) -> None:
        """The zone's owner changes its history; a supervisor too (audited); everyone else is refused."""
        self.ws.require_actor(actor)
        if actor != self.zone and not self.ws.is_supervisor(actor):
            raise ZoneDenied(
                f"{actor} may not checkpoint or restore agents/{self.zone}/: only {self.zone} or a supervisor"
            )

    def make(
        self, actor: str, message: str = "", *, only_if_changed: bool = False, extra: dict[str, Any] | None = None
    ) -> Manifest | None:
        """A new checkpoint of the zone as it is now; None if ``only_if_changed`` and nothing changed since the
        latest one (a checkpoint of some paths only never counts as the zone's: a whole one is made)."""
        self.check_may_change(actor)
        parent = self.latest()
        before = parent.by_path_view() if parent is not None else {}
        self._make_dirs()
        written = self.blobs.written
        listings = parent.listings if parent is not None else None
        cached = parent.stat_cache if parent is not None else None
        scan = scan_zone(self.zone_dir, before, self.blobs.add, listings=listings, cached=cached)
        changed, made = compare(before, scan.entries)
        if only_if_changed and parent is not None and changed == 0 and not parent.paths:
            return None
        manifest = self._write(actor, message, parent, before, scan.entries, made, changed, written, extra or {})
        # the next scan's, without deriving them from all the entries
        manifest.__dict__["listings"] = scan.listings
        manifest.__dict__["stat_cache"] = scan.caches
        # its entries by path (the next checkpoint's ``before``): the parent's with ``made`` over them, since every
        # other entry is the parent's very entry at its path; unless that has paths the new entries lack (removed)
        by_path = dict(before)
        by_path.update({entry.path: entry for entry in made})
        if len(by_path) == len(manifest.entries):
            manifest.__dict__["_by_path"] = by_path
        return manifest

    def make_paths(self, actor: str, message: str, paths: Collection[str]) -> Manifest:
        """A checkpoint of ``paths`` only (relative to the zone, each with everything below it; a path the zone
        lacks is recorded as absent): what a restore of those paths replaces, without walking the rest of the zone.
        Its manifest is the latest checkpoint's with those subtrees as they are now, and ``paths`` in its extra
        data: it vouches for them only, and a restore of it without paths restores them (``Manifest.paths``). A
        whole checkpoint where there is none yet, or where the latest lacks a parent directory of a path."""
        self.check_may_change(actor)
        parent = self.latest()
        roots = outermost(paths)
        if parent is None or not roots or not all(_has_parents(parent, root) for root in roots):
            whole = self.make(actor, message)
            assert whole is not None
            return whole
        self._make_dirs()
        written = self.blobs.written
        before = parent.by_path_view()
        found = scan_paths(self.zone_dir, roots, before, self.blobs.add)
        entries = list(parent.entries)
        changed = 0
        for root in sorted(roots, key=walk_key, reverse=True):  # from the end: earlier positions stay put
            start = bisect.bisect_left(entries, walk_key(root), key=lambda e: walk_key(e.path))
            end = start
            if end < len(entries) and entries[end].path == root:
                end = subtree_end(entries, start)
            changed += compare({e.path: e for e in entries[start:end]}, found[root])[0]
            entries[start:end] = found[root]
        unlinked = _unlink_outside(parent, roots)
        if unlinked:  # rare: a pass over all entries
            entries = [unlinked.get(entry.path, entry) for entry in entries]
        extra = {"paths": sorted(roots, key=walk_key)}
        made = [entry for root in roots for entry in found[root]]
        return self._write(actor, message, parent, before, entries, made, changed, written, extra, parent.scan)

    def _make_dirs(self) -> None:
        for sub in (self.manifests_dir, self.blobs.root):
            sub.mkdir(parents=True, exist_ok=True)

    def _write(
        self,
        actor: str,
        message: str,
        parent: Manifest | None,
        before: Mapping[str, Entry],
        entries: Sequence[Entry],
        made: list[Entry],
        changed: int,
        written: int,
        extra: dict[str, Any],
        scan: int = SCAN,
    ) -> Manifest:
        """Checkpoint ``entries``, ``parent`` (``before``: its entries by path) and the entries not taken from it
        (``made``) given."""
        # a blob the parent names at the same path is durable (synced before the parent's manifest) and kept by any
        # prune (KEEP >= 1 keeps the latest): only the others are synced and looked at, whoever wrote them
        fresh = {
            e.sha256
            for e in made
            if e.type == FILE and not e.link and (e.path not in before or before[e.path].sha256 != e.sha256)
        }
        missing = sorted(d for d in fresh if not self.blobs.exists(d))
        if missing:  # pruned under us (a concurrent prune that removed the latest checkpoint): never name a hole
            raise StoreCorrupt(f"blob {missing[0]} vanished while checkpointing {self.zone}: try again")
        number = (self.numbers() or [0])[-1] + 1
        manifest = Manifest(
            number=number,
            zone=self.zone,
            time=utc_now(),
            message=message,
            by=actor,
            uid=os.getuid(),
            parent=None if parent is None else parent.number,
            entries=tuple(entries),
            changed=changed,
            bytes_added=self.blobs.written - written,
            extra=extra,
            scan=scan,  # the listings it holds are the parent's where it is spliced
        )
        # written against the parent's base (or the parent, if written whole) where that is small
        base = parent if parent is None or parent.base is None else parent.__dict__.get("base_manifest")
        if base is not None:
            manifest = as_delta(manifest, base)
        manifest = self._create(manifest, fresh)
        if actor != self.zone:
            self.ws.audit(actor, f"checkpoint {manifest.number}", f"{AGENTS}/{self.zone}")
        return manifest

    def _create(self, manifest: Manifest, fresh: Collection[str]) -> Manifest:
        """Create the manifest's file, after the blobs ``fresh`` are durable. The manifest is staged first and made
        durable with them, at once (one journal commit where two would wait one after the other); then linked to
        its name (``atomic.create_exclusive``'s rule: the next number if another writer took it)."""
        fd = os.open(self.manifests_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            base = manifest.base
            if base is not None and not exists(self.manifests_dir, PurePosixPath(manifest_name(base))):
                manifest = whole(manifest)  # its base was pruned meanwhile (a prune keeps only the bases it sees)
            staged = self._stage(manifest.dump_parts())
            try:
                self.blobs.sync_blobs(fresh, also=[staged])
                linked = self._link_staged(staged, fd, manifest_name(manifest.number))
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(staged)
            if linked is False:  # another writer took the number
                manifest = manifest.numbered(manifest.number + 1)
            # then, or on a filesystem without hard links, the usual way
            staging = self.ws.meta / TMP
            while not linked and not create_exclusive(
                fd, manifest_name(manifest.number), manifest.dump(), staging=staging
            ):
                manifest = manifest.numbered(manifest.number + 1)
            sync_dir(fd, self.manifests_dir)
            with contextlib.suppress(OSError):  # the next checkpoint's parent: no need to read it back
                name = manifest_name(manifest.number)
                _remember(os.path.join(self.manifests_dir, name), os.stat(name, dir_fd=fd), manifest)
        finally:
            os.close(fd)
        return manifest

    def _stage(self, parts: list[bytes]) -> str:
        """``parts``, one after the other, in a new temp file of the store (not yet durable: ``_create`` syncs it
        with the blobs)."""
        staged = os.path.join(self.ws.meta, TMP, f"manifest.{os.urandom(8).hex()}.tmp")
        out = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            left = [memoryview(part) for part in parts if part]
            while left:  # a short write: the rest again
                done = os.writev(out, left)
                while left and done >= len(left[0]):
                    done -= len(left[0])
                    left.pop(0)
                if left and done:
                    left[0] = left[0][done:]
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(staged)
            raise
        finally:
            os.close(out)
        return staged

    @staticmethod
    def _link_staged(staged: str, dir_fd: int, name: str) -> bool | None:
        """Give the durable ``staged`` the name ``name`` unless it exists: False if taken, None if the filesystem
        has no hard links."""
        try:
            os.link(staged, name, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno in NO_LINK:
                return None
            raise from_os_error(exc, Path(name), walking=True) from exc
        return True

    def prune(self, actor: str, keep: int, pinned: frozenset[int] = frozenset()) -> Pruned:
        """Keep the newest ``keep`` checkpoints (at least 1), those ``pinned`` (a workspace snapshot names them),
        the checkpoints those are written against, and the blobs they name; remove the rest."""
        self.check_may_change(actor)
        if keep < 1:
            raise InvalidInput("--prune keeps at least 1 checkpoint (the newest, which the next one builds on)")
        numbers = self.numbers()
        candidates = [number for number in numbers[:-keep] if number not in pinned]
        bases = set()
        for number in set(numbers) - set(candidates):
            with contextlib.suppress(NotFound):  # pruned meanwhile by another prune
                bases.add(self.load(number).base)
        gone = [number for number in candidates if number not in bases]
        kept_bases = [number for number in candidates if number in bases]
        for number in gone:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.manifests_dir / manifest_name(number))
        blobs, freed = self.remove_unreferenced(time.time() - PRUNE_GRACE)
        if gone:
            self.ws.audit(actor, f"prune checkpoints {gone[0]}..{gone[-1]}", f"{AGENTS}/{self.zone}")
        return Pruned(gone, blobs, freed, kept_bases)

    def referenced(self) -> set[str]:
        names: set[str] = set()
        for manifest in self.all():
            names |= manifest.blobs()
        return names

    def remove_unreferenced(self, older_than: float) -> tuple[int, int]:
        """Remove blobs no manifest names, last changed before ``older_than`` (a time): how many, and their bytes."""
        referenced = self.referenced()
        count = freed = 0
        for name, path in self.blobs.digests():
            if not BLOB.fullmatch(name) or name in referenced:
                continue
            with contextlib.suppress(FileNotFoundError):
                st = path.stat()
                if st.st_mtime < older_than:
                    path.unlink()
                    count, freed = count + 1, freed + st.st_size
        return count, freed
