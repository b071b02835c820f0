"""A private zone as it is now, read into manifest entries (``manifest.Entry``).

The walk never follows a symlink (each directory is opened ``O_NOFOLLOW`` relative to its parent's descriptor), never
crosses a mount point (a mount point in a zone, and what it shows, is not recorded: it is not the zone's), and
keeps what a zone holds: regular files, directories, symlinks, FIFOs, device nodes and sockets, with their modes,
owners, times and ``user.*`` attributes; a nested git repository is files and directories like any other. A second
name of a file already met (a hard link) is recorded as a link to the first. A file whose stat (inode, size, mtime,
ctime) is the one a previous manifest recorded for the same path is taken as unchanged without being read: any
change of content, mode, owner or attribute moves its ctime. Where the whole stat is the recorded one, the previous
entry itself is handed back (a diff and a checkpoint then skip it by identity, and its manifest line is reused); so
that this holds after the first scan too, a file's or directory's atime is read after this scan's own reading,
which leaves it where it was (``O_NOATIME``: a checkpoint changes nothing of the zone, not even its atimes), or moves it
once (relatime) where the kernel refuses that flag to this process.

The stat cache is kept by directory, then by name (``manifest.StatCache``): the loop over a directory's files, which
runs once per file of the zone, does no more for an unchanged one than an lstat, a lookup by the name the listing
gives and one comparison of tuples; and a directory whose files were all taken from it, with none read, hands the
very same cache on to the next scan (``Scan.caches``).

A directory whose stat is the one recorded is not listed again: its listing is the previous scan's
(``Manifest.listings``). Adding, removing or renaming a name moves the directory's ctime, which no one can set, and
the stat recorded is the one taken *before* the listing, so a name added while it was listed shows as a changed
ctime next time. Each file below it is still lstat'ed: a file rewritten in place moves only its own ctime.

Racy entries (git's "racy clean"): a filesystem stamps ctimes from a clock that ticks coarsely, so a second change
in the tick of the scan's stat may leave the stat as it was. An entry whose ctime is within ``RACY_NS`` of the scan
is recorded with ctime 0, which no stat equals: the next scan reads (or lists) it again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import operator
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from stat import S_IMODE, S_ISDIR, S_ISLNK, S_ISREG

from omxfs.checkpoints.blobs import Extents, data_extents, hash_fd
from omxfs.checkpoints.manifest import (
    BLOCK,
    CHAR,
    DIR,
    FIFO,
    FILE,
    SOCKET,
    SYMLINK,
    DirCache,
    Entry,
    Listing,
    StatCache,
    new_entry,
    stat_cache,
    stat_key,
)
from omxfs.errors import OmxError, PathBlocked, from_os_error
from omxfs.store.beneath import open_beneath
from omxfs.store.layout import USER_XATTRS

#: how a regular file's content becomes a digest: stored as a blob (a checkpoint) or only hashed (a diff)
Content = Callable[[int, os.stat_result], tuple[str, Extents | None]]
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK


def open_unread(name: str | os.PathLike[str], flags: int = _FILE_FLAGS, *, dir_fd: int | None = None) -> int:
    """Open ``name`` (in ``dir_fd``) with ``flags`` so that reading it leaves its atime as it is: ``O_NOATIME``, which
    the kernel allows the file's owner and root only; for anyone else a plain open (whose reads may move it)."""
    try:
        return os.open(name, flags | os.O_NOATIME, dir_fd=dir_fd)
    except PermissionError as exc:
        if exc.errno != errno.EPERM:
            raise
    return os.open(name, flags, dir_fd=dir_fd)


#: what a name met during the walk answers when its agent replaced it since it was listed or stat'ed: a symlink
#: opened O_NOFOLLOW, a directory opened as a file or the reverse, a readlink of what is no symlink now
_REPLACED = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EINVAL})


def changed_while_read(exc: OSError, zone: str | os.PathLike[str]) -> OmxError:
    """The error of a scan that met ``exc`` on a name of ``zone``: a name its agent replaced during the walk is
    ``PathBlocked`` (nothing was recorded; the command may simply be run again), anything else the OS error's."""
    what = os.path.join(zone, exc.filename) if isinstance(exc.filename, str) else os.fspath(zone)
    if exc.errno in _REPLACED:
        return PathBlocked(f"{what}: changed while it was read ({exc.strerror}): nothing was recorded; run it again")
    return from_os_error(exc, what, walking=True)


def _open_subdir(name: str, dir_fd: int) -> int:
    """The directory ``name`` in ``dir_fd``, opened without following a symlink and without crossing a mount point
    (EXDEV: what another mount shows is not the zone's; a bind mount is told by ``openat2``'s ``RESOLVE_NO_XDEV``,
    and where that call cannot be used, another filesystem by its device)."""
    fd = open_beneath(dir_fd, name, _DIR_FLAGS, same_mount=True)
    if fd is None:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        if os.fstat(fd).st_dev != os.fstat(dir_fd).st_dev:
            os.close(fd)
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), name)
    return fd


def _leave_atime(fd: int) -> None:
    """Reading ``fd`` from now on leaves its atime alone, where the kernel allows it (``open_unread``)."""
    with contextlib.suppress(PermissionError):
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NOATIME)


def hash_only(fd: int, st: os.stat_result) -> tuple[str, Extents | None]:
    extents = data_extents(fd, st)
    return hash_fd(fd, st.st_size, extents), extents


#: an entry whose ctime is this close to the scan's start (or later) may change again within the same tick of the
#: filesystem's clock without its stat showing it (git's "racy clean"): it is recorded with ctime 0, so the next
#: scan reads it again. Linux stamps ctimes from a clock that ticks once a jiffy (1-10 ms; finer since 6.13 on
#: ext4, xfs, btrfs and tmpfs), and a shared filesystem's may be another machine's: the margin covers a tick and
#: the clock offset between machines that NTP leaves. The cost of a wide one: what changed in it is read again.
RACY_NS = 250_000_000
#: the margin for a ctime of whole seconds, the stamp of a filesystem that keeps no fraction (one in a billion
#: finer ones is whole by chance, and is only read again)
RACY_WHOLE_SECONDS_NS = 2_000_000_000


class Scan:
    """The result of one walk: the entries, which files had to be read (not taken from the stat cache), each
    directory's listing (what the next scan reuses for a directory whose stat is unchanged), and the stat cache the
    next scan may use (``Manifest.stat_cache``: the files taken from this scan's cache and those it read; a
    directory where nothing changed hands on the very cache it was given)."""

    __slots__ = ("caches", "entries", "listings", "read")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.read: list[str] = []
        self.listings: dict[str, Listing] = {}
        self.caches: StatCache = {}


def scan_zone(
    zone: str | os.PathLike[str],
    previous: Mapping[str, Entry] | None,
    content: Content = hash_only,
    *,
    listings: Mapping[str, Listing] | None = None,
    cached: StatCache | None = None,
) -> Scan:
    """Every entry of the zone directory ``zone``, in walk order (sorted names, a directory before its content).
    ``previous``: the entries of an earlier scan, by path, whose stats let unchanged files go unread; ``listings``:
    its directories' listings (``Manifest.listings``), which let unchanged directories go unlisted; ``cached``: its
    stat cache (``Manifest.stat_cache``; made from ``previous`` if not given)."""
    result = Scan()
    try:
        root_fd = open_unread(zone, _DIR_FLAGS)
    except OSError as exc:
        raise from_os_error(exc, zone, walking=True) from exc
    try:
        if cached is None:
            cached = stat_cache(previous.values()) if previous else {}
        _Walker(result, previous or {}, content, listings or {}, cached).walk(root_fd, ".")
    except OSError as exc:
        raise changed_while_read(exc, zone) from exc
    finally:
        os.close(root_fd)
    return result


def scan_paths(
    zone: str | os.PathLike[str], paths: Iterable[str], previous: Mapping[str, Entry], content: Content = hash_only
) -> dict[str, list[Entry]]:
    """The entries of each of ``paths`` (relative to the zone; each with everything below it), as ``scan_zone``
    reads them; an empty list for a path the zone does not have. Each parent directory is opened ``O_NOFOLLOW``
    from the zone down: a symlink is never followed. A file with a second name outside the paths is recorded as
    a file of its own (what a restore of these paths builds)."""
    found: dict[str, list[Entry]] = {}
    try:
        root_fd = open_unread(zone, _DIR_FLAGS)
    except OSError as exc:
        raise from_os_error(exc, zone, walking=True) from exc
    try:
        for path in paths:
            result = Scan()
            _Walker(result, previous, content, {}, {}).one(root_fd, path)
            found[path] = result.entries
    except OSError as exc:
        raise changed_while_read(exc, zone) from exc
    finally:
        os.close(root_fd)
    return found


class _Walker:
    def __init__(
        self,
        result: Scan,
        previous: Mapping[str, Entry],
        content: Content,
        listings: Mapping[str, Listing],
        cached: StatCache,
    ) -> None:
        self.result = result
        self.previous = previous
        self.cached = cached
        self.content = content
        self.listings = listings
        self.links: dict[tuple[int, int], str] = {}
        now = time.time_ns()
        self.racy = now - RACY_NS  # a ctime from here on is not trusted by the next scan
        self.racy_whole = now - RACY_WHOLE_SECONDS_NS

    def one(self, root_fd: int, path: str) -> None:
        """``path`` (not ``"."``) and everything below it; nothing if the zone lacks it."""
        parent, _, name = path.rpartition("/")
        fds: list[int] = []
        try:
            fd = root_fd
            for part in parent.split("/") if parent else ():
                try:
                    fd = _open_subdir(part, fd)
                except (FileNotFoundError, NotADirectoryError):
                    return
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.EXDEV):  # a symlink or mount point where a parent was: the
                        return  # path is not in the zone
                    raise
                fds.append(fd)
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return
            self._child(fd, name, path, S_ISDIR(st.st_mode), st)
        finally:
            for held in fds:
                os.close(held)

    def walk(self, dir_fd: int, path: str) -> None:
        entries = self.result.entries
        # the stat before the listing: a name added or removed after it moves the ctime the entry records, so the
        # next scan sees the directory changed and lists it again
        own = os.fstat(dir_fd)
        old = self.previous.get(path)
        listed = self.listings.get(path)
        if old is not None and old.type == DIR and listed is not None and _same_stat(old, own):
            # no name was added, removed or renamed since the listing the previous scan made (every one moves the
            # ctime, which no one can set): its listing holds; no getdents, and the atime stays where it was
            entries.append(old)  # its attributes would have moved the ctime
        else:
            _leave_atime(dir_fd)
            with os.scandir(dir_fd) as found:
                # a directory is told by the listing's type (no lstat: its own fstat follows); names are unique
                listed = tuple(sorted([(e.name, e.is_dir(follow_symlinks=False)) for e in found]))
            # the stat after the listing (which moves the atime only without O_NOATIME): the next scan finds the same
            after = os.fstat(dir_fd)
            entry = self._entry(path, DIR, after, self._xattrs(dir_fd, None, path, after))
            if (after.st_ctime_ns, after.st_mtime_ns) != (own.st_ctime_ns, own.st_mtime_ns):
                entry.__dict__["ctime_ns"] = 0  # changed while listed: listed again next time (not yet shared)
            entries.append(entry)
        prefix = "" if path == "." else path + "/"
        # the loop below runs once per file of the zone, most of them unchanged: it does no more for one than an
        # lstat, a lookup by name and one comparison of tuples
        cache = self.cached.get(path, _NO_FILES)
        append = entries.append
        lstat = os.stat
        hits = 0  # files taken from ``cache``
        slow: list[str] = []  # the names not taken from it: directories, files changed, gone or new
        fresh: DirCache = {}  # the files read or stat'ed anew that the next scan may take from its cache
        # the listing the entries hold, once it differs from ``listed`` (a name gone meanwhile, or of another type):
        # the next scan may reuse only what its manifest can tell
        kept: list[tuple[str, bool]] | None = None
        for index, (name, is_dir) in enumerate(listed):
            st: os.stat_result | None = None
            if not is_dir:
                try:
                    st = lstat(name, dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    slow.append(name)
                    kept = kept if kept is not None else list(listed[:index])
                    continue  # removed while the walk runs
                known = cache.get(name)
                if known is not None and known[0] == (  # nearly every file: the very entry (and its line), at once
                    st.st_ino,
                    st.st_ctime_ns,
                    st.st_mtime_ns,
                    st.st_size,
                    st.st_mode,
                    st.st_atime_ns,
                    st.st_uid,
                    st.st_gid,
                    st.st_nlink,
                ):
                    append(known[1])
                    hits += 1
                    if kept is not None:
                        kept.append((name, False))
                    continue
            slow.append(name)
            before = len(entries)
            self._child(dir_fd, name, prefix + name, is_dir, st)
            made = len(entries) > before  # not gone meanwhile; its entry is the first one it added
            if made:
                entry = entries[before]
                key = stat_key(entry)
                if key is not None:
                    fresh[name] = (key, entry)
            if kept is None and (not made or (entries[before].type == DIR) != is_dir):
                kept = list(listed[:index])
            if kept is not None and made:
                kept.append((name, entries[before].type == DIR))
        final = listed if kept is None else tuple(kept)
        self.result.listings[path] = final
        if hits == len(cache) and not fresh:
            files = cache  # every file it had, unchanged, and no other: the same cache (shared, never changed)
        else:
            # a name of the listing not among the slow ones is a file taken from the cache
            taken = set(slow)
            files = {name: cache[name] for name, _ in final if name not in taken} | fresh
        if files:
            self.result.caches[path] = files

    def _child(self, dir_fd: int, name: str, child: str, is_dir: bool, st: os.stat_result | None) -> None:
        """One name of a directory: ``is_dir`` as its listing says, ``st`` its lstat if taken already."""
        entries = self.result.entries
        previous = self.previous
        if is_dir and self._directory(dir_fd, name, child):
            return
        if st is None:
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return  # removed while the walk runs
        mode = st.st_mode
        if S_ISREG(mode):
            old = previous.get(child)
            if (
                old is not None
                and st.st_nlink == 1
                and _FILE_STAT(old) == (FILE, "", st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size)
                and _FILE_OWNER(old) == (mode & 0o7777, st.st_atime_ns, st.st_uid, st.st_gid)
            ):
                entries.append(old)  # the path of nearly every file: the very entry (and its line), at once
                return
            self._file(dir_fd, name, child, st)
        elif S_ISDIR(mode):
            self._directory(dir_fd, name, child)
        elif S_ISLNK(mode):
            with contextlib.suppress(FileNotFoundError):
                target = os.readlink(name, dir_fd=dir_fd)
                entries.append(self._entry(child, SYMLINK, st, (), target=target))
        else:
            kind = (
                FIFO if stat.S_ISFIFO(mode) else CHAR if stat.S_ISCHR(mode) else BLOCK if stat.S_ISBLK(mode) else SOCKET
            )
            xattrs = self._xattrs(dir_fd, name, child, st)
            entries.append(self._entry(child, kind, st, xattrs, rdev=st.st_rdev if kind in (CHAR, BLOCK) else 0))

    def _directory(self, dir_fd: int, name: str, path: str) -> bool:
        """Walk the directory ``name``: False if it is no directory now (replaced since the listing)."""
        try:
            fd = _open_subdir(name, dir_fd)
        except FileNotFoundError:
            return True  # removed while the walk runs
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                return False
            if exc.errno == errno.EXDEV:
                return True  # a mount point: neither it nor what it shows is the zone's
            raise
        try:
            self.walk(fd, path)
        finally:
            os.close(fd)
        return True

    def _file(self, dir_fd: int, name: str, path: str, st: os.stat_result) -> None:
        if st.st_nlink > 1:
            first = self.links.setdefault((st.st_dev, st.st_ino), path)
            if first != path:
                self.result.entries.append(self._entry(path, FILE, st, (), link=first, ino=0))
                return
        old = self.previous.get(path)
        if (
            old is not None
            and old.ino == st.st_ino
            and old.ctime_ns == st.st_ctime_ns
            and old.mtime_ns == st.st_mtime_ns
            and old.size == st.st_size
            and old.type == FILE
            and not old.link
        ):
            if (
                old.mode == S_IMODE(st.st_mode)
                and old.atime_ns == st.st_atime_ns
                and (old.uid, old.gid)
                == (
                    st.st_uid,
                    st.st_gid,
                )
            ):
                self.result.entries.append(old)  # the path of nearly every file: the very entry (and its line)
                return
            self.result.entries.append(
                new_entry(
                    path,
                    FILE,
                    S_IMODE(st.st_mode),
                    st.st_uid,
                    st.st_gid,
                    st.st_mtime_ns,
                    st.st_atime_ns,
                    old.size,
                    old.sha256,
                    old.data,
                    "",
                    "",
                    0,
                    old.xattrs,
                    st.st_ino,
                    self._ctime(st.st_ctime_ns),
                )
            )
            return
        try:
            fd = open_unread(name, dir_fd=dir_fd)
        except FileNotFoundError:
            return
        try:
            before = os.fstat(fd)
            digest, extents = self.content(fd, before)
            after = os.fstat(fd)
            xattrs = _list_xattrs(fd)
        finally:
            os.close(fd)
        # the atime after the read (moved only without O_NOATIME): the next scan then takes the file as unchanged
        entry = self._entry(path, FILE, before, xattrs, size=before.st_size, sha256=digest, data=extents)
        entry.__dict__["atime_ns"] = after.st_atime_ns  # not yet shared with anyone
        if (after.st_mtime_ns, after.st_ctime_ns, after.st_size) != (
            before.st_mtime_ns,
            before.st_ctime_ns,
            before.st_size,
        ):
            entry = entry.replace(ctime_ns=0)  # written while read: never taken from the stat cache
        self.result.entries.append(entry)
        self.result.read.append(path)

    def _entry(
        self,
        path: str,
        kind: str,
        st: os.stat_result,
        xattrs: tuple[tuple[str, bytes], ...],
        *,
        size: int = 0,
        sha256: str = "",
        data: Extents | None = None,
        target: str = "",
        link: str = "",
        rdev: int = 0,
        ino: int | None = None,
    ) -> Entry:
        return new_entry(
            path,
            kind,
            S_IMODE(st.st_mode),
            st.st_uid,
            st.st_gid,
            st.st_mtime_ns,
            st.st_atime_ns,
            size,
            sha256,
            data,
            target,
            link,
            rdev,
            xattrs,
            st.st_ino if ino is None else ino,
            self._ctime(st.st_ctime_ns),
        )

    def _ctime(self, ctime_ns: int) -> int:
        """The ctime an entry records: 0 where it is racy (``RACY_NS``), so the next scan never trusts it."""
        return ctime_ns if ctime_ns < (self.racy if ctime_ns % 1_000_000_000 else self.racy_whole) else 0

    def _xattrs(self, dir_fd: int, name: str | None, path: str, st: os.stat_result) -> tuple[tuple[str, bytes], ...]:
        old = self.previous.get(path)
        if old is not None and (old.ino, old.ctime_ns) == (st.st_ino, st.st_ctime_ns):
            return old.xattrs  # attributes move the ctime
        if name is None:
            return _list_xattrs(dir_fd)
        return _list_xattrs(f"/proc/self/fd/{dir_fd}/{name}", follow=False)


#: the stat cache of a directory that had no file the next scan may take unread
_NO_FILES: DirCache = {}

#: what an unchanged file's entry says of its stat (``_Walker.walk`` compares it with the file's)
_FILE_STAT = operator.attrgetter("type", "link", "ino", "ctime_ns", "mtime_ns", "size")
_FILE_OWNER = operator.attrgetter("mode", "atime_ns", "uid", "gid")


def _same_stat(old: Entry, st: os.stat_result) -> bool:
    """Whether ``old`` says all that ``st`` says of a node that is not a regular file (its attributes with it:
    setting one moves the ctime)."""
    return (
        old.ino == st.st_ino
        and old.ctime_ns == st.st_ctime_ns
        and old.mtime_ns == st.st_mtime_ns
        and old.atime_ns == st.st_atime_ns
        and old.mode == S_IMODE(st.st_mode)
        and old.uid == st.st_uid
        and old.gid == st.st_gid
        and not old.link
    )


def _list_xattrs(target: int | str, *, follow: bool = True) -> tuple[tuple[str, bytes], ...]:
    try:
        names = os.listxattr(target, follow_symlinks=follow)
    except OSError:  # ENOTSUP: a filesystem without attributes; ENOENT: gone meanwhile
        return ()
    found = []
    for name in names:
        if not name.startswith(USER_XATTRS):
            continue
        with contextlib.suppress(OSError):
            found.append((name, os.getxattr(target, name, follow_symlinks=follow)))
    return tuple(sorted(found))
