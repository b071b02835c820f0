"""The contents of a zone's checkpoints: one file per distinct content, named by its sha256, written once.

A blob is staged in the store's temp directory (``.omxfs/tmp/``, on the same filesystem: a writer killed meanwhile
leaves a temp file there, which ``fsck`` reports and removes) and then ``link``ed to ``blobs/<aa>/<sha256>``, the
exclusive create the whole store rests on (``atomic.create_exclusive``, streamed here: a zone's file may be larger
than memory): of several writers of one content, one name results, and nobody sees half a blob. The hash is of the
bytes the blob holds, computed while they are written or read back, never of a file that may have changed since.

Sparse files stay sparse: only their data extents (``SEEK_DATA``/``SEEK_HOLE``) are read and written, holes are
hashed as the zeros they read as, and the blob is as sparse as its file. The blobs of a checkpoint are not fsynced
as they are written: ``sync_blobs`` makes them durable together before the manifest that names them is written (a
few by fsyncs issued at once, which the filesystem commits together; many by one ``syncfs``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from omxfs.checkpoints.crashpoints import crash_point
from omxfs.checkpoints.records import blob_name, is_blob_name
from omxfs.checkpoints.syscalls import fsync_together, syncfs
from omxfs.errors import from_os_error
from omxfs.sha256 import sha256
from omxfs.store.atomic import NO_LINK
from omxfs.store.layout import blob_path

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from hashlib import _Hash

#: files up to this size are read into memory and hashed before anything is written: an unchanged content (a file
#: touched, or restored) then costs no write at all
IN_MEMORY = 4 << 20
_CHUNK = 1 << 20
#: up to this many new blobs, a checkpoint fsyncs each (``BlobStore.sync_blobs``); more, the whole filesystem
FSYNC_EACH = 128
_ZEROS = bytes(_CHUNK)
Extents = tuple[tuple[int, int], ...]


def data_extents(fd: int, st: os.stat_result) -> Extents | None:
    """Where a file's data lies, as (offset, length) pairs; None for a file without holes (most files: asked only
    of one that occupies fewer blocks than its size)."""
    size = st.st_size
    if size == 0 or st.st_blocks * 512 >= size:
        return None
    extents: list[tuple[int, int]] = []
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data after offset: the rest is a hole
                break
            if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):  # the filesystem cannot tell: all data
                return None
            raise
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        extents.append((start, end - start))
        offset = end
    if extents == [(0, size)]:
        return None
    return tuple(extents)


def _ranges(size: int, extents: Extents | None) -> Iterator[tuple[int, int, bool]]:
    """(offset, length, is_data) over the whole file, holes included, in order."""
    at = 0
    for offset, length in extents if extents is not None else ((0, size),):
        if offset > at:
            yield at, offset - at, False
        yield offset, length, True
        at = offset + length
    if at < size:
        yield at, size - at, False


def _hash_zeros(digest: _Hash, length: int) -> None:
    while length:
        step = min(length, _CHUNK)
        digest.update(_ZEROS[:step])
        length -= step


def hash_fd(fd: int, size: int, extents: Extents | None) -> str:
    """The sha256 of a file's content as read (holes as zeros)."""
    digest = sha256(size=size)
    for offset, length, is_data in _ranges(size, extents):
        if not is_data:
            _hash_zeros(digest, length)
            continue
        end = offset + length
        while offset < end:
            chunk = os.pread(fd, min(_CHUNK, end - offset), offset)
            if not chunk:  # shorter than it was: what was read is what is hashed
                break
            digest.update(chunk)
            offset += len(chunk)
    return digest.hexdigest()


class BlobStore:
    """The blobs of one zone's checkpoints, under ``root`` (``.omxfs/checkpoints/<zone>/blobs``)."""

    def __init__(self, root: Path, staging: Path) -> None:
        self.root = root
        self.staging = staging
        self.written = 0  # bytes of data this process added (not the holes)
        # plain strings on the hot path: a first checkpoint stores thousands of blobs, and pathlib's parsing of
        # each path was a quarter of its time
        self._root = os.fspath(root)
        self._staging = os.fspath(staging)
        self._prefixes: set[str] = set()  # the blobs/<aa>/ directories known to exist

    def path(self, digest: str) -> Path:
        """Where the blob named ``digest`` is; StoreCorrupt for a name that is no blob's (64 lowercase hex
        digits), whoever asks: a name read from a manifest never leads outside ``root``."""
        return self.root / blob_path(blob_name(digest, self._root))

    def _path(self, digest: str) -> str:
        """``path`` as a string (the hot paths'), checked the same way."""
        if type(digest) is not str or not is_blob_name(digest):
            blob_name(digest, self._root)
        return f"{self._root}/{digest[:2]}/{digest}"

    def exists(self, digest: str) -> bool:
        return os.path.exists(self._path(digest))

    def add(self, fd: int, st: os.stat_result) -> tuple[str, Extents | None]:
        """Store the content of the open regular file ``fd`` (``st`` its fstat) unless a blob has it: its sha256 and
        data extents. A file that changes while it is read is stored as read; the caller's stat then tells."""
        extents = data_extents(fd, st)
        if st.st_size <= IN_MEMORY:
            content = bytearray(st.st_size)
            for offset, length in extents if extents is not None else ((0, st.st_size),):
                chunk = os.pread(fd, length, offset)
                content[offset : offset + len(chunk)] = chunk
            digest = sha256(content).hexdigest()
            if not self.exists(digest):
                self._install(digest, lambda out: self._write_memory(out, content, extents))
            return digest, extents
        tmp = self._stage(lambda out: self._copy(fd, out, st.st_size, extents))
        try:
            tmp_fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
            try:
                digest = hash_fd(tmp_fd, st.st_size, extents)
            finally:
                os.close(tmp_fd)
            self._link(tmp, digest)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return digest, extents

    def _write_memory(self, out: int, content: bytearray, extents: Extents | None) -> int:
        view = memoryview(content)
        written = 0
        for offset, length in extents if extents is not None else ((0, len(content)),):
            at = offset
            while at < offset + length:
                at += os.pwrite(out, view[at : offset + length], at)
            written += length
        if extents is not None:  # a hole at the end: the size comes from the truncate, not the data written
            os.ftruncate(out, len(content))
        return written

    @staticmethod
    def _copy(src: int, out: int, size: int, extents: Extents | None) -> int:
        written = 0
        for offset, length in extents if extents is not None else ((0, size),):
            at, end = offset, offset + length
            while at < end:
                n = os.copy_file_range(src, out, end - at, at, at)
                if n == 0:
                    break  # shorter than its stat said: what was there is the blob
                at += n
            written += at - offset
        os.ftruncate(out, size)
        return written

    def _stage(self, fill: Callable[[int], int]) -> str:
        """A new temp file filled by ``fill(fd) -> bytes written``; removed again on any error."""
        tmp = f"{self._staging}/blob.{os.urandom(8).hex()}.tmp"
        try:
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
            try:
                self.written += fill(out)
            finally:
                os.close(out)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise from_os_error(exc, tmp, walking=True) from exc
        return tmp

    def _install(self, digest: str, fill: Callable[[int], int]) -> None:
        tmp = self._stage(fill)
        try:
            self._link(tmp, digest)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def _link(self, tmp: str, digest: str) -> None:
        """Give the staged ``tmp`` its blob name, unless another writer did first (same content, same name)."""
        target = self._path(digest)
        prefix = digest[:2]
        if prefix not in self._prefixes:
            os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
            self._prefixes.add(prefix)
        for attempt in range(2):
            try:
                os.link(tmp, target)
            except FileExistsError:
                pass
            except FileNotFoundError:
                if attempt:
                    raise
                os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)  # removed meanwhile (fsck --repair)
                continue
            except OSError as exc:
                if exc.errno not in NO_LINK:
                    raise from_os_error(exc, target, walking=True) from exc
                if not os.path.exists(target):  # no hard links here: a rename, of the very same content if it races
                    os.rename(tmp, target)
            crash_point("checkpoint-blob")
            return

    def sync(self) -> None:
        """Make every blob written so far durable, at once (see the module docstring)."""
        syncfs(self.root)

    def sync_blobs(self, digests: Collection[str], also: Sequence[str] = ()) -> None:
        """Make the blobs ``digests`` durable, with their names, and the files ``also`` (on the same filesystem):
        a few (a checkpoint of some changed files) each fsynced, all at once from threads (the filesystem commits
        them together), and not the rest of the filesystem, whose other writers' data ``syncfs`` would wait for;
        many (a first checkpoint) by ``syncfs``."""
        if len(digests) > FSYNC_EACH:
            self.sync()
            return
        paths = [self._path(d) for d in digests]
        paths += sorted({os.path.dirname(p) for p in paths})
        if paths:
            paths.append(self._root)  # a blobs/<aa>/ made by this checkpoint
        fsync_together([*paths, *also])

    def digests(self) -> Iterator[tuple[str, Path]]:
        """Every file under ``root`` with its name (a blob's is its sha256; fsck judges the rest)."""
        with contextlib.suppress(FileNotFoundError), os.scandir(self.root) as prefixes:
            for prefix in sorted(prefixes, key=lambda e: e.name):
                if not prefix.is_dir(follow_symlinks=False):
                    yield prefix.name, Path(prefix.path)
                    continue
                with os.scandir(prefix.path) as names:
                    for entry in sorted(names, key=lambda e: e.name):
                        yield entry.name, Path(entry.path)


def blob_size(path: Path) -> int:
    """The bytes a blob occupies on disk (a sparse one less than its size)."""
    st = os.stat(path, follow_symlinks=False)
    return min(st.st_size, st.st_blocks * 512) if stat.S_ISREG(st.st_mode) else 0
