"""Every delivery of a handoff file, kept when a re-delivery (or a retraction) replaces it.

``handoff/<from>_to_<to>/<file>`` shows the latest delivery only; the store keeps them all beside it, in
``.omxfs/deliveries/`` (``layout.py``): the content once per sha256 under ``blobs/<aa>/<sha256>``, and the N-th
delivery of a file as ``<from>_to_<to>/<quoted file>/<N>.json`` (its metadata and N). The file's path is quoted
into one name (``/`` becomes ``%2F``) so that a record never shares a directory with another file's records.

Written by the store's rules, no lock needed to be right: a blob is created exclusively under its hash (two
writers of one content make one blob), a record is created exclusively under the next free number (two writers
at once take N and N + 1), and the blob is durable before the record names it. A delivery is recorded once it
has landed; a process killed between the two leaves a delivery with no record, which is recorded the next time
the file is re-delivered (or snapshotted): what is current is never lost, and a record never names content that
is not there. Killed mid-way, at most a staged file in ``.omxfs/tmp/`` or a blob no record names is left
(``omxfs fsck`` reports them).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from omxfs.errors import InvalidInput, NotFound, StoreCorrupt
from omxfs.plain_record import PlainRecord
from omxfs.store.atomic import create_exclusive, open_dir, read_bytes, sync_dir
from omxfs.store.layout import BLOB, BLOBS, DELIVERIES, DELIVERY_RECORD, META_DIR, TMP, blob_path
from omxfs.store.records import HandoffMeta, dump_json, sha256

#: how many of a file's newest records are looked at for the record of a delivery (``find``)
RECENT = 16


class KeptDelivery(PlainRecord):
    """The ``number``-th delivery of a file, as its metadata said when it was delivered."""

    __slots__ = ("derived", "meta", "number")
    FIELDS = ("number", "meta", "derived")

    def __init__(self, number: int, meta: HandoffMeta, derived: bool = False) -> None:
        self.number, self.meta = number, meta
        #: recorded from a delivery's file alone, its metadata missing (a writer killed between the two, or one
        #: under way on another machine, whose own record then stands for it: ``all``)
        self.derived = derived

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, **self.meta.to_json(), **({"derived": True} if self.derived else {})}


def record_dir(box: str, rel: PurePosixPath) -> PurePosixPath:
    """``<box>/<quoted file>``: where the records of one file are, under ``deliveries/``."""
    return PurePosixPath(box, quote(str(rel), safe=""))


def load_record(raw: bytes, where: str) -> KeptDelivery:
    """A delivery record, every field checked (``HandoffMeta``: agents' names, a normalized path, a sha256);
    StoreCorrupt naming ``where`` and the field otherwise: its content's name never leads outside ``blobs/``."""
    try:
        data = json.loads(raw)
        number = data.pop("number")
        derived = data.pop("derived", False)
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ValueError("number must be a positive integer")
        if not isinstance(derived, bool):
            raise ValueError("derived must be true or false")
        return KeptDelivery(number, HandoffMeta.from_json(data), derived)
    except InvalidInput as exc:
        raise StoreCorrupt(f"{where}: unreadable delivery record: {exc.message}") from exc
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise StoreCorrupt(f"{where}: unreadable delivery record: {exc}") from exc


class DeliveryHistory:
    """The kept deliveries of every handoff file of the store whose metadata directory is ``meta``."""

    def __init__(self, meta: Path) -> None:
        self.root = meta / DELIVERIES
        self.blobs = self.root / BLOBS
        self.tmp = meta / TMP

    # -- reading ----------------------------------------------------------------------------------------------

    def numbers(self, box: str, rel: PurePosixPath) -> list[int]:
        try:
            names = os.listdir(self.root / record_dir(box, rel))
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for name in names if (m := DELIVERY_RECORD.fullmatch(name)))

    def load(self, box: str, rel: PurePosixPath, number: int) -> KeptDelivery:
        where = f"{META_DIR}/{DELIVERIES}/{record_dir(box, rel)}/{number}.json"
        try:
            raw = read_bytes(self.root, record_dir(box, rel) / f"{number}.json")
        except NotFound:
            raise NotFound(f"handoff/{box}/{rel} has no delivery {number}") from None
        kept = load_record(raw, where)
        if kept.number != number:
            raise StoreCorrupt(f"{where}: the record says it is delivery {kept.number}")
        if f"{kept.meta.sender}_to_{kept.meta.recipient}" != box or kept.meta.filename != str(rel):
            raise StoreCorrupt(f"{where}: the record is of another delivery ({kept.meta.filename!r})")
        return kept

    def all(self, box: str, rel: PurePosixPath) -> list[KeptDelivery]:
        """Every delivery of the file, oldest first, each once. With no lock shared between machines, a writer may
        record another's delivery before that one does: as it is (both records say the same: the first stands
        for it), or derived from its file while its metadata was not yet there (the writer's own record, which has
        it, stands for it)."""
        records = [self.load(box, rel, number) for number in self.numbers(box, rel)]
        described = {k.meta.sha256 for k in records if not k.derived}
        seen: set[str] = set()  # each meta as JSON: its provenance (a dict) makes it unhashable
        found: list[KeptDelivery] = []
        for kept in records:
            key = json.dumps(kept.meta.to_json(), sort_keys=True)
            if key in seen or (kept.derived and kept.meta.sha256 in described):
                continue
            seen.add(key)
            found.append(kept)
        return found

    def content(self, kept: KeptDelivery, where: str) -> bytes:
        """What the delivery held, checked against its sha256 (a name that is no sha256 is never read)."""
        if not BLOB.fullmatch(kept.meta.sha256):
            raise StoreCorrupt(f"{where}: delivery {kept.number} names no content ({kept.meta.sha256[:80]!r})")
        try:
            data = read_bytes(self.blobs, blob_path(kept.meta.sha256))
        except NotFound:
            raise StoreCorrupt(f"{where}: the content of delivery {kept.number} is missing") from None
        if sha256(data) != kept.meta.sha256:
            raise StoreCorrupt(f"{where}: the content of delivery {kept.number} is not what it was")
        return data

    def boxes(self) -> list[tuple[str, PurePosixPath]]:
        """Every (box, file) that has records."""
        found: list[tuple[str, PurePosixPath]] = []
        with contextlib.suppress(FileNotFoundError):
            for box in sorted(os.listdir(self.root)):
                if box == BLOBS or not (self.root / box).is_dir():
                    continue
                for quoted in sorted(os.listdir(self.root / box)):
                    found.append((box, PurePosixPath(unquote(quoted))))
        return found

    def blob_names(self) -> list[tuple[str, Path]]:
        found: list[tuple[str, Path]] = []
        with contextlib.suppress(FileNotFoundError):
            for prefix in sorted(os.listdir(self.blobs)):
                with contextlib.suppress(NotADirectoryError, FileNotFoundError):
                    found += [(name, self.blobs / prefix / name) for name in sorted(os.listdir(self.blobs / prefix))]
        return found

    # -- writing ----------------------------------------------------------------------------------------------

    def record(
        self, box: str, rel: PurePosixPath, meta: HandoffMeta, content: bytes, *, derived: bool = False
    ) -> KeptDelivery:
        """Keep a delivery that has landed: its content (once per sha256), then its record under the next number.
        The same delivery recorded twice (a retry, two writers that both saw it) is kept once if they meet."""
        latest = self.latest(box, rel)
        if latest is not None and latest.meta == meta:
            return latest
        self._store_blob(content, meta.sha256)
        directory = self.root / record_dir(box, rel)
        directory.mkdir(parents=True, exist_ok=True)
        number = (latest.number if latest else 0) + 1
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            while True:
                kept = KeptDelivery(number, meta, derived)
                if create_exclusive(fd, f"{number}.json", dump_json(kept.to_json()), staging=self.tmp, mode=0o444):
                    break
                number += 1
            sync_dir(fd, directory)
        finally:
            os.close(fd)
        return kept

    def find(
        self, box: str, rel: PurePosixPath, meta: HandoffMeta, *, same_content: bool = False
    ) -> KeptDelivery | None:
        """A recent record of the delivery ``meta`` describes (with ``same_content``: of any delivery of its
        content), None if there is none. Only the newest few are looked at: a delivery is recorded as soon as it
        lands, so its record, if any, is among the last ones the writers racing it made."""
        for number in reversed(self.numbers(box, rel)[-RECENT:]):
            with contextlib.suppress(NotFound):
                kept = self.load(box, rel, number)
                if kept.meta == meta or (same_content and kept.meta.sha256 == meta.sha256):
                    return kept
        return None

    def latest(self, box: str, rel: PurePosixPath) -> KeptDelivery | None:
        numbers = self.numbers(box, rel)
        return self.load(box, rel, numbers[-1]) if numbers else None

    def _store_blob(self, content: bytes, digest: str) -> None:
        assert BLOB.fullmatch(digest)
        self.blobs.mkdir(parents=True, exist_ok=True)
        fd = open_dir(self.blobs, PurePosixPath(digest[:2]), create=True)
        try:
            if create_exclusive(fd, digest, content, staging=self.tmp, mode=0o444):
                sync_dir(fd, self.blobs / digest[:2])
        finally:
            os.close(fd)
