"""The files of a realtime document: one per writer, merged on read, so that no lock is needed (SPEC §1, §5).

::

    realtime/.crdt_state/<doc>.crdt.json                          the merged state: created once, exclusively;
                                                                  afterwards rewritten as a derived merge
    realtime/.crdt_state/.writers/<doc>/<agent>+<token>.<seq>.crdt.json
                                                                  one writer's whole state after its write

A *writer* is one ``RealtimeZone`` (one process) acting as one agent; its replica id is ``<agent>+<token>``, the
token random per process, so two daemons acting as alice never mint the same element id or raise the same
counter tally. A writer's change loads the current state (the merged file and every writer file, merged: CRDT
merges are commutative, associative and idempotent, so the order and repeats do not matter), applies its
operations, and writes the result under a *new* name of its own (the next ``<seq>``; temp file, fsync, rename,
directory fsync) before it is acknowledged, then unlinks its previous file. A file is never rewritten in place,
so a name stands for one content for good: readers cache parsed files by name, with no attribute (which a shared
filesystem may serve stale) to trust, and no reader ever sees a file change under it.

Nothing rests on a lock: an operation is acknowledged once it is in a durable file that readers merge, and a file
is only removed by someone who has just made a superset of it durable (its owner, with its next file; or a writer
*folding* it). Folding bounds the file count: a writer that loaded more than ``FOLD_AT`` other writer files
unlinks them after its own new file, which holds everything it loaded, is durable; an owner whose file was folded
recreates one at its next write. (With names that never change content, folding needs no tombstone renames: no
one can change a file between the folder's read and its unlink.) The merged file is refreshed after each write,
as a hard link to the writer's new file when no other writer wrote meanwhile, else as a merged copy; it may lag
behind the writers for a moment (``omxfs fsck --repair`` rewrites a lagging one), but it is never the only holder
of an operation, except those of stores older than writer files, which every later merged file keeps. So ``ls``
and ``cat`` on the store still show each document's whole state (SPEC §7).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import threading
import time
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from omxfs.errors import InvalidInput, NotFound, OmxError, StoreCorrupt, from_os_error
from omxfs.store.atomic import NO_LINK, create_exclusive, open_dir, read_at, sync_dir
from omxfs.store.layout import STATE_DIR, STATE_SUFFIX, WRITERS
from omxfs.store.names import check_doc_id

if TYPE_CHECKING:
    from omxfs.crdt import Document
    from omxfs.store.workspace import Workspace

#: a writer that loaded more other writers' files than this folds them into its own
FOLD_AT = 8
#: documents whose latest merged state a process keeps in memory
MAX_VIEWS = 256
#: how long a document seen before may answer ENOENT (a shared filesystem's client, mid-rename) before it is gone
VANISHED_FOR = 3.0
#: how long a file renamed over through another client may answer ESTALE before the read fails with it
STALE_FOR = 3.0
#: how long a merged file read short through a client's stale size may be read again, while writer files that
#: replace it appear, before it is called corrupt
SUPERSEDED_FOR = 3.0

_WRITER_FILE = re.compile(r"([a-z0-9][a-z0-9-]{0,62}\+[0-9a-f]{1,32})\.([0-9]{1,18})\.crdt\.json")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: link(2) refused by the filesystem itself (not by the race): create the name with O_EXCL instead

MergedKey = tuple[int, int, int]  # st_ino, st_mtime_ns, st_size


def state_name(doc_id: str) -> PurePosixPath:
    return PurePosixPath(check_doc_id(doc_id) + STATE_SUFFIX)


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode_state(doc: Document) -> bytes:
    """The state file's bytes: ``doc.to_json()`` as compact JSON (canonical: equal states, equal bytes)."""
    return join_state(doc, encode_fields(doc))


def encode_fields(doc: Document, lender: StateView | None = None) -> dict[str, str]:
    """Each field's JSON, reusing ``lender``'s for the fields ``doc`` still shares with it (``Document.fork``):
    a write of a title need not encode the long text beside it again."""
    fields: dict[str, str] = {}
    for name in sorted(doc.schema):
        if lender is not None and doc.shares(name, lender.doc):
            fields[name] = lender.fields[name]
        else:
            fields[name] = _dump(doc.field_json(name))
    return fields


def join_state(doc: Document, fields: dict[str, str]) -> bytes:
    """``json.dumps(doc.to_json())`` compact, put together from the fields' JSON (``encode_fields``)."""
    body = ",".join(f"{_dump(name)}:{fields[name]}" for name in sorted(fields))
    schema = _dump(dict(sorted(doc.schema.items())))
    return f'{{"doc_id":{_dump(doc.doc_id)},"schema":{schema},"fields":{{{body}}}}}'.encode()


def decode_state(raw: bytes | str, where: str) -> Document:
    from omxfs.crdt import Document  # here: a workspace without documents (``omxfs status``) loads no CRDT code

    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InvalidInput(f"{where}: not valid JSON: {exc}") from exc
    return Document.from_json(data)


def _is_stale(exc: BaseException | None) -> bool:
    """Whether ``exc``, or an error it was raised from, is ESTALE."""
    while exc is not None:
        if getattr(exc, "errno", None) == errno.ESTALE:
            return True
        exc = exc.__cause__
    return False


def agent_of(replica: str) -> str:
    """The agent a replica id acts for: the part before ``+`` (a bare ``alice``, from older stores, is alice)."""
    return replica.partition("+")[0]


def writer_file(replica: str, seq: int) -> str:
    return f"{replica}.{seq}{STATE_SUFFIX}"


def parse_writer_file(name: str) -> tuple[str, int] | None:
    """``alice+9f3a.12.crdt.json`` → ("alice+9f3a", 12); None for any other name."""
    match = _WRITER_FILE.fullmatch(name)
    return None if match is None else (match.group(1), int(match.group(2)))


class _Superseded(Exception):
    """The merged file read short and no writer file was read, yet writer files exist now: they were written (and
    the merged file renamed over) since the listing. The read is done again with the new listing."""

    def __init__(self, corrupt: StoreCorrupt) -> None:
        super().__init__(corrupt)
        self.corrupt = corrupt


class StateView:
    """The state of a document as merged from its files at one moment. Shared between threads: never changed
    (``copy()`` the document to edit it); ``raw`` is its encoding, computed once when first asked for."""

    __slots__ = ("_fields", "_raw", "covered", "doc", "merged_key", "mtime_ns")

    def __init__(
        self,
        doc: Document,
        covered: frozenset[str],
        merged_key: MergedKey | None,
        mtime_ns: int,
        raw: bytes | None = None,
        fields: dict[str, str] | None = None,
    ) -> None:
        self.doc = doc
        #: the writer files merged into ``doc``: every one of them is a subset of it
        self.covered = covered
        #: the stat key of the merged file whose content ``doc`` includes
        self.merged_key = merged_key
        self.mtime_ns = mtime_ns
        self._raw = raw
        self._fields = fields

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = join_state(self.doc, self.fields)
        return self._raw

    @property
    def fields(self) -> dict[str, str]:
        """Each field's JSON (``encode_fields``), computed once."""
        if self._fields is None:
            self._fields = encode_fields(self.doc)
        return self._fields


class Writer:
    """One writer of one document: its replica id, the lock its threads share, and its latest file.

    A writer's changes must each start from a state holding all its earlier ones (a counter tally only grows
    from the writer's own last value; an element id is one above every counter seen), so they are serialised
    on ``lock``, which is held only to load, apply and write the writer's own file; and ``last``, the state
    it wrote last, is merged into a load that (on a filesystem with stale listings) did not see its file.
    """

    def __init__(self, replica: str) -> None:
        self.replica = replica
        self.lock = threading.Lock()
        self.seq = 0
        self.current: str | None = None
        self.last: Document | None = None
        self.dir_ready = False


class StateFiles:
    """Reads and writes the files of every document of one store (see the module docstring); thread-safe."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.state_dir = ws.root / STATE_DIR
        self.fold_at = FOLD_AT
        self._views: dict[str, StateView] = {}
        self._lock = threading.Lock()

    # -- reading ----------------------------------------------------------------------------------------------

    def current(self, doc_id: str) -> StateView:
        """The document's state now: its merged file and every writer file, merged; parsed files are reused.

        A document is never deleted, yet a client of a shared filesystem can answer ENOENT for its merged file
        while another client renames a new one over it (bindfs does, now and then; JuiceFS for about a second): a
        document this process has seen, or whose writers' directory exists (made before its merged file, never
        removed), is looked for again for up to ``VANISHED_FOR`` seconds before it is called gone. A merged file
        that reads short when no writer file could be read, while writer files exist by then, was renamed over
        through another client since the listing: it is read again, with them, for up to ``SUPERSEDED_FOR``."""
        vanished_until = time.monotonic() + VANISHED_FOR
        stale_until = time.monotonic() + STALE_FOR
        superseded_until = time.monotonic() + SUPERSEDED_FOR
        while True:
            try:
                return self._current(doc_id)
            except _Superseded as superseded:
                if time.monotonic() >= superseded_until:
                    raise superseded.corrupt from superseded.corrupt.__cause__
            except (NotFound, FileNotFoundError):
                if time.monotonic() >= vanished_until or not self._seen(doc_id):
                    raise
            except (OmxError, OSError) as exc:
                # GlusterFS answers ESTALE for a file renamed over through another client, for a second or two
                if not _is_stale(exc) or time.monotonic() >= stale_until:
                    raise
            time.sleep(0.005)

    def _current(self, doc_id: str) -> StateView:
        name = str(state_name(doc_id))
        sd = open_dir(self.ws.root, STATE_DIR)
        try:
            try:
                st = os.stat(name, dir_fd=sd, follow_symlinks=False)
            except FileNotFoundError:
                raise NotFound(f"no realtime document {doc_id!r}") from None
            except OSError as exc:
                raise from_os_error(exc, f"{STATE_DIR}/{name}") from exc
            if not stat.S_ISREG(st.st_mode):
                raise NotFound(f"no realtime document {doc_id!r}")
            merged_key = (st.st_ino, st.st_mtime_ns, st.st_size)
            with self._lock:
                old = self._views.get(doc_id)
            dd = self._open_writers(sd, doc_id)
            try:
                listing, dir_mtime = self._list(dd)
                if old is not None and old.merged_key == merged_key and old.covered == listing.keys():
                    return old
                view = self._refresh(sd, dd, doc_id, old, merged_key, listing, max(st.st_mtime_ns, dir_mtime))
            finally:
                if dd is not None:
                    os.close(dd)
        finally:
            os.close(sd)
        self._remember(doc_id, view, unless_not=old)  # a view computed meanwhile by another thread stays
        return view

    def _remember(self, doc_id: str, view: StateView, *, unless_not: StateView | None = None) -> None:
        """Cache ``view`` (if the cached one is still ``unless_not``, when given), most recent last, bounded."""
        with self._lock:
            if unless_not is not None and self._views.get(doc_id) is not unless_not:
                return
            self._views.pop(doc_id, None)
            self._views[doc_id] = view
            while len(self._views) > MAX_VIEWS:
                del self._views[next(iter(self._views))]

    def _seen(self, doc_id: str) -> bool:
        """Whether this process has read the document, or ``.writers/<doc>/`` exists: it was created (by any
        process, on any client; the directory is made before the merged file and never removed)."""
        with self._lock:
            if doc_id in self._views:
                return True
        try:
            return stat.S_ISDIR(os.stat(self.state_dir / WRITERS / doc_id, follow_symlinks=False).st_mode)
        except OSError:
            return False

    @staticmethod
    def _open_writers(sd: int, doc_id: str) -> int | None:
        """The writers' directory of a document, opened (None: no writer has written yet)."""
        try:
            wd = os.open(WRITERS, _DIR_FLAGS, dir_fd=sd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise from_os_error(exc, f"{STATE_DIR}/{WRITERS}") from exc
        try:
            return os.open(doc_id, _DIR_FLAGS, dir_fd=wd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise from_os_error(exc, f"{STATE_DIR}/{WRITERS}/{doc_id}") from exc
        finally:
            os.close(wd)

    @staticmethod
    def _list(dd: int | None) -> tuple[dict[str, int], int]:
        """The writer files (name → inode number) of an open writers' directory, and its mtime."""
        if dd is None:
            return {}, 0
        with os.scandir(dd) as entries:
            listing = {e.name: e.inode() for e in entries if parse_writer_file(e.name) is not None}
        return listing, os.fstat(dd).st_mtime_ns

    def _has_writer_files(self, sd: int, doc_id: str) -> bool:
        """Whether the document's writers' directory lists a writer file now."""
        dd = self._open_writers(sd, doc_id)
        try:
            return bool(self._list(dd)[0])
        finally:
            if dd is not None:
                os.close(dd)

    def _refresh(
        self,
        sd: int,
        dd: int | None,
        doc_id: str,
        old: StateView | None,
        merged_key: MergedKey,
        listing: dict[str, int],
        mtime_ns: int,
    ) -> StateView:
        """``old`` (whose files are all subsets of what exists now) with the files it has not merged yet."""
        parts: list[tuple[Document, bytes]] = []
        covered = set(old.covered & listing.keys()) if old is not None else set()
        for name in sorted(listing.keys() - covered):
            assert dd is not None
            raw = self._read(dd, name, f"{WRITERS}/{doc_id}/{name}")
            if raw is not None:  # gone since the listing: its content is in a newer file, merged next time
                parts.append((self._decode(raw, doc_id, f"{WRITERS}/{doc_id}/{name}"), raw))
                covered.add(name)
        linked = merged_key[0] in {listing[name] for name in covered}
        if (old is None or old.merged_key != merged_key) and not linked:
            # not a hard link of a writer file: a copy, or a store from before writer files (then its only holder)
            # stat'ed just before, and never removed: an ENOENT now is a rename over it seen late
            raw = self._read(sd, str(state_name(doc_id)), str(state_name(doc_id)), known=True)
            if raw is None:
                raise NotFound(f"no realtime document {doc_id!r}")
            try:
                parts.append((self._decode(raw, doc_id, str(state_name(doc_id))), raw))
            except StoreCorrupt as exc:
                # Replaced through another client of a shared filesystem whose cached size is the old one (sshfs,
                # bindfs): read short. Once a writer file exists the merged file holds nothing of its own, so it
                # is left out until it reads whole; before that, it is the document. No writer file read, yet
                # some exist now: another client wrote them since the listing (the listed ones, if any, vanished
                # under their writer's next file) and renamed the merged file over, which is what read short.
                if not covered:
                    if self._has_writer_files(sd, doc_id):
                        raise _Superseded(exc) from exc
                    raise
        if old is None and not parts:
            raise NotFound(f"no realtime document {doc_id!r}")
        if old is not None and not parts:
            return StateView(old.doc, frozenset(covered), merged_key, mtime_ns, old._raw, old._fields)
        if old is None and len(parts) == 1:
            return StateView(parts[0][0], frozenset(covered), merged_key, mtime_ns, parts[0][1])
        doc = old.doc.copy() if old is not None else parts.pop(0)[0]
        try:
            for part, _ in parts:
                doc.merge(part)
        except InvalidInput as exc:
            raise StoreCorrupt(f"{STATE_DIR}: the files of {doc_id!r} do not merge: {exc.message}") from exc
        return StateView(doc, frozenset(covered), merged_key, mtime_ns)

    @staticmethod
    def _read(dir_fd: int, name: str, shown: str, *, known: bool = False) -> bytes | None:
        """The file's content, None if it is not there. A file renamed over through another client of a shared
        filesystem is read again while it answers from the inode it replaced (``atomic.read_at``; JuiceFS says
        ENOENT or EBADF for about a second); ``known``: the caller just saw it, so ENOENT is such a moment too."""
        try:
            raw, st = read_at(dir_fd, name, known=known)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreCorrupt(f"{STATE_DIR}/{shown}: {os.strerror(exc.errno or errno.EIO)}") from exc
        if not stat.S_ISREG(st.st_mode):
            raise StoreCorrupt(f"{STATE_DIR}/{shown}: not a regular file")
        return raw

    @staticmethod
    def _decode(raw: bytes, doc_id: str, shown: str) -> Document:
        try:
            doc = decode_state(raw, f"{STATE_DIR}/{shown}")
        except InvalidInput as exc:
            raise StoreCorrupt(exc.message) from exc
        if doc.doc_id != doc_id:
            raise StoreCorrupt(f"{STATE_DIR}/{shown}: the state of document {doc.doc_id!r}")
        return doc

    # -- writing ----------------------------------------------------------------------------------------------

    def create(self, doc: Document) -> bool:
        """Create the document's merged file holding ``doc`` unless it exists: True if this call created it.

        Of any number of creators, in any processes or machines, exactly one wins: the file is written and
        fsynced under a temporary name, then hard-linked to its name, which fails if it exists (no lock).
        """
        name = str(state_name(doc.doc_id))
        self._make_writers_dir(doc.doc_id)
        sd = open_dir(self.ws.root, STATE_DIR)
        try:
            if not create_exclusive(sd, name, encode_state(doc), staging=self.ws.writer.tmp_dir):
                return False
            sync_dir(sd, self.state_dir)
            return True
        finally:
            os.close(sd)

    def _make_writers_dir(self, doc_id: str) -> None:
        """``.writers/<doc>/``, made durable before any writer file goes in (a file in a directory whose own
        name is lost in a crash would be lost with it)."""
        parent = STATE_DIR
        for part in (WRITERS, doc_id):
            fd = open_dir(self.ws.root, parent)
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
                os.fsync(fd)
            except FileExistsError:
                pass
            except OSError as exc:
                raise from_os_error(exc, f"{parent}/{part}") from exc
            finally:
                os.close(fd)
            parent = parent / part

    def begin(self, writer: Writer, doc_id: str) -> tuple[StateView, Document]:
        """The latest state, and a copy of it for ``writer`` to change (hold ``writer.lock`` until ``commit``)."""
        base = self.current(doc_id)
        work = base.doc.fork()  # only the fields the change takes are copied
        if writer.last is not None and writer.current not in base.covered:
            work.merge(writer.last)  # the writer's own last file was not listed (yet): its operations still count
        return base, work

    def commit(self, doc_id: str, writer: Writer, base: StateView, work: Document) -> StateView:
        """Persist ``work`` (``begin``'s copy, changed) unless it encodes to ``base``: a no-op costs no write."""
        fields = encode_fields(work, base)
        if fields == base.fields:
            return base
        return self.install(doc_id, writer, base, work, fields)

    def install(self, doc_id: str, writer: Writer, base: StateView, doc: Document, fields: dict[str, str]) -> StateView:
        """Write ``doc`` (``base``'s document with the writer's changes; encoded: ``raw``) as the writer's new
        file, durably; then tidy: unlink its previous file, fold others' past ``fold_at``, refresh the merged file.

        Returns once the write is durable; failures of the tidying are not the writer's (it is acknowledged):
        they leave files that the next write or ``fsck --repair`` tidies.
        """
        if not writer.dir_ready:
            self._make_writers_dir(doc_id)
            writer.dir_ready = True
        writer.seq += 1
        name = writer_file(writer.replica, writer.seq)
        writers_dir = PurePosixPath(WRITERS, doc_id)
        raw = join_state(doc, fields)
        self.ws.writer.write(self.state_dir, writers_dir / name, raw)
        previous, writer.current, writer.last = writer.current, name, doc
        drop = {previous} & base.covered if previous is not None else set()
        if len(base.covered - drop) > self.fold_at:
            drop = set(base.covered)  # each a subset of ``doc``, which is durable now
        with contextlib.suppress(OmxError):
            dd = open_dir(self.ws.root, STATE_DIR / writers_dir)
            try:
                for gone in drop:
                    with contextlib.suppress(OSError):
                        os.unlink(gone, dir_fd=dd)
            finally:
                os.close(dd)
        covered = frozenset((base.covered - drop) | {name})
        doc.settle()  # the stored state: never changed again, only read and forked
        view = StateView(doc, covered, base.merged_key, time.time_ns(), raw, fields)
        self._remember(doc_id, view)
        with contextlib.suppress(OmxError, OSError):
            view = self._publish(doc_id, view, name)
        return view

    def _publish(self, doc_id: str, view: StateView, own: str) -> StateView:
        """Refresh the merged file: a hard link to the writer's new file if that is everything, else a copy."""
        name = str(state_name(doc_id))
        sd = open_dir(self.ws.root, STATE_DIR)
        try:
            dd = self._open_writers(sd, doc_id)
            try:
                listing, _ = self._list(dd)
            finally:
                if dd is not None:
                    os.close(dd)
            if listing.keys() == view.covered:
                tmp = self.ws.writer.tmp_dir / f"{name[:40]}.{own[-40:]}.link.tmp"
                try:
                    os.link(f"{WRITERS}/{doc_id}/{own}", tmp, src_dir_fd=sd, follow_symlinks=False)
                except OSError as exc:
                    if exc.errno not in NO_LINK:
                        raise
                else:
                    try:
                        os.replace(tmp, name, dst_dir_fd=sd)
                    except OSError:
                        with contextlib.suppress(OSError):
                            os.unlink(tmp)
                        raise
                    st = os.stat(name, dir_fd=sd, follow_symlinks=False)
                    key = (st.st_ino, st.st_mtime_ns, st.st_size)
                    linked = StateView(view.doc, view.covered, key, view.mtime_ns, view._raw, view._fields)
                    self._remember(doc_id, linked, unless_not=view)
                    return linked
        finally:
            os.close(sd)
        latest = self.current(doc_id)  # others wrote meanwhile: their files merged into this writer's
        self.ws.writer.write(self.state_dir, PurePosixPath(name), latest.raw, durable=False)
        return latest
