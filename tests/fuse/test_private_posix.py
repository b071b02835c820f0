"""Issue 15: the private zone is a POSIX filesystem, checked with the real tools that failed there.

Each test runs real programs through a real mount, in the mount's default agent's zone (``agents/alice/``), as
root: ``tar x`` of an archive with other uids, xattr-preserving copies (``cp -a``, ``rsync -aX``, ``shutil``),
``pip wheel`` of an sdist with a C extension, a FIFO, a bound UNIX socket and a hard link.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import socket
import stat
import subprocess
import sys
import tarfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fuse.conftest import Mount


@pytest.fixture
def m(mount: Callable[..., Mount]) -> Mount:
    return mount()


def add_file(archive: tarfile.TarFile, name: str, data: bytes, uid: int, gid: int, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.uid, info.gid, info.mode = len(data), uid, gid, mode
    info.uname = info.gname = ""  # numeric owners only: no name lookup on this machine
    archive.addfile(info, io.BytesIO(data))


def test_tar_x_as_root_keeps_the_archives_foreign_owners(m: Mount, tmp_path: Path) -> None:
    """tar x as root of an archive with files of other uids exited 2 (chown EPERM on every member)."""
    archive_path = tmp_path / "foreign.tar"
    with tarfile.open(archive_path, "w") as archive:
        directory = tarfile.TarInfo("src")
        directory.type, directory.mode, directory.uid, directory.gid = tarfile.DIRTYPE, 0o755, 1234, 2345
        archive.addfile(directory)
        add_file(archive, "src/a.c", b"int a;\n", 1234, 2345)
        add_file(archive, "src/run.sh", b"#!/bin/sh\n", 4321, 5432, 0o4755)
    m.path("agents/alice/unpack").mkdir()
    done = m.run(["tar", "xf", str(archive_path), "-C", "agents/alice/unpack"])
    assert done.returncode == 0, done.stderr.decode()
    for name, uid, gid in (("src", 1234, 2345), ("src/a.c", 1234, 2345), ("src/run.sh", 4321, 5432)):
        st = os.lstat(m.path(f"agents/alice/unpack/{name}"))
        assert (st.st_uid, st.st_gid) == (uid, gid), name
        assert os.lstat(m.store / f"agents/alice/unpack/{name}").st_uid == uid  # on the store itself
    assert stat.S_IMODE(os.stat(m.path("agents/alice/unpack/src/run.sh")).st_mode) == 0o4755
    assert m.path("agents/alice/unpack/src/a.c").read_bytes() == b"int a;\n"


def tagged(path: Path, data: bytes = b"content\n") -> Path:
    path.write_bytes(data)
    os.setxattr(path, "user.note", b"kept")
    return path


def test_xattr_preserving_copies_within_into_and_out_of_the_zone(m: Mount, tmp_path: Path) -> None:
    """cp --preserve=all, rsync -aX, shutil.copy2 and copytree failed on the generated user.omx.owner; a copy
    carried out of the mount kept it."""
    zone = m.path("agents/alice")
    tagged(zone / "f.txt")
    (zone / "tree").mkdir()
    tagged(zone / "tree" / "g.txt")
    outside = tmp_path / "outside"
    outside.mkdir()
    tagged(outside / "h.txt")
    for argv in (
        ["cp", "--preserve=xattr", "agents/alice/f.txt", "agents/alice/cp-xattr.txt"],
        ["cp", "-a", "--preserve=all", "agents/alice/f.txt", "agents/alice/cp-all.txt"],
        ["cp", "-a", "--preserve=all", str(outside / "h.txt"), "agents/alice/cp-in.txt"],
        ["rsync", "-aX", "agents/alice/tree/", "agents/alice/rsynced/"],
        ["rsync", "-aX", f"{outside}/", "agents/alice/rsynced-in/"],
    ):
        done = m.run(argv)
        assert done.returncode == 0, (argv, done.stderr.decode())
    shutil.copy2(zone / "f.txt", zone / "copy2.txt")
    shutil.copytree(zone / "tree", zone / "copytree")
    shutil.copytree(outside, zone / "copytree-in")
    for copy in ("cp-xattr.txt", "cp-all.txt", "cp-in.txt", "rsynced/g.txt", "rsynced-in/h.txt", "copy2.txt",
                 "copytree/g.txt", "copytree-in/h.txt"):  # fmt: skip
        assert os.getxattr(zone / copy, "user.note") == b"kept", copy
        assert os.listxattr(m.store / "agents/alice" / copy) == ["user.note"], copy  # nothing generated stored
    carried = tmp_path / "carried"
    carried.mkdir()
    done = m.run(["cp", "-a", "--preserve=all", "agents/alice/f.txt", str(carried / "f.txt")])
    assert done.returncode == 0, done.stderr.decode()
    m.run(["rsync", "-aX", "agents/alice/tree/", str(carried / "tree")], check=True)
    shutil.copy2(zone / "f.txt", carried / "copy2.txt")
    for copy in ("f.txt", "tree/g.txt", "copy2.txt"):
        assert os.listxattr(carried / copy) == ["user.note"], copy  # a plain file: no user.omx.owner


SETUP_PY = b"""from setuptools import Extension, setup
setup(name="omxdemo", version="1.0", ext_modules=[Extension("omxdemo", ["omxdemo.c"])])
"""
EXTENSION_C = b"""#include <Python.h>
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "omxdemo", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_omxdemo(void) { return PyModule_Create(&module); }
"""


def test_pip_wheel_of_an_sdist_with_a_c_extension(m: Mount) -> None:
    """setuptools copies with shutil.copy2, which failed on user.omx.owner: pip wheel of any C extension failed."""
    pytest.importorskip("wheel", reason="pip wheel with setuptools < 70.1 needs the wheel package (--dev)")
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    zone = m.path("agents/alice")
    (zone / "tmp").mkdir()
    with tarfile.open(zone / "omxdemo-1.0.tar.gz", "w:gz") as sdist:
        for name, data in (
            ("PKG-INFO", b"Metadata-Version: 2.1\nName: omxdemo\nVersion: 1.0\n"),
            ("setup.py", SETUP_PY),
            ("omxdemo.c", EXTENSION_C),
        ):
            add_file(sdist, f"omxdemo-1.0/{name}", data, 0, 0)
    env = {**m.env(None), "TMPDIR": str(zone / "tmp"), "PIP_NO_INDEX": "1"}
    argv = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", "wheels"]
    done = subprocess.run(
        [*argv, "omxdemo-1.0.tar.gz"], cwd=zone, env=env, capture_output=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout.decode()[-3000:] + done.stderr.decode()[-3000:]
    assert [p.name for p in (zone / "wheels").iterdir() if p.name.startswith("omxdemo-1.0-")]


def test_fifo_socket_and_hard_link_in_a_private_zone(m: Mount) -> None:
    """mkfifo, bind(2) and a hard link's shared inode: EOPNOTSUPP, EOPNOTSUPP and one inode number per name."""
    zone = m.path("agents/alice")
    m.run(["mkfifo", "agents/alice/pipe"], check=True)
    assert stat.S_ISFIFO(os.lstat(zone / "pipe").st_mode)
    assert stat.S_ISFIFO(os.lstat(m.store / "agents/alice/pipe").st_mode)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append((zone / "pipe").read_bytes()))
    reader.start()
    (zone / "pipe").write_bytes(b"through the fifo")
    reader.join(timeout=10)
    assert received == [b"through the fifo"]

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(zone / "sock"))
        server.listen(1)
        assert stat.S_ISSOCK(os.lstat(zone / "sock").st_mode)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(zone / "sock"))
            peer, _ = server.accept()
            with peer:
                client.sendall(b"ping")
                assert peer.recv(4) == b"ping"
    finally:
        server.close()

    (zone / "a.txt").write_bytes(b"one\n")
    os.link(zone / "a.txt", zone / "b.txt")
    a, b = os.stat(zone / "a.txt"), os.stat(zone / "b.txt")
    assert a.st_ino == b.st_ino and a.st_nlink == b.st_nlink == 2
    with open(zone / "b.txt", "rb") as through_b:
        assert through_b.read() == b"one\n"
        with open(zone / "a.txt", "ab") as through_a:
            through_a.write(b"two\n")
        through_b.seek(0)
        assert through_b.read() == b"one\ntwo\n"  # the old content 20 times in 20, before
    os.unlink(zone / "a.txt")
    assert os.stat(zone / "b.txt").st_nlink == 1  # was stale for half a second
    assert (zone / "b.txt").read_bytes() == b"one\ntwo\n"


#: names POSIX allows and UTF-8 does not, or that hold a control character: the zone refused to create them (EINVAL)
ODD_NAMES = (b"caf\xe9.txt", b"new\nline", b"cr\r\ttab\x1b")


@pytest.mark.parametrize("name", ODD_NAMES)
def test_names_that_are_not_utf8_or_hold_a_newline_are_made_listed_read_and_removed(m: Mount, name: bytes) -> None:
    """The zone keeps the bytes a program gave (README): such names made on the store were listed, read and deleted
    through the mount, but creating one (create, mkdir, rename, link, symlink, mknod) was EINVAL."""
    zone = os.fsencode(m.path("agents/alice"))
    store = os.fsencode(m.store / "agents/alice")
    fd = os.open(zone + b"/" + name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"odd\n")
    os.close(fd)
    assert name in os.listdir(zone)
    with open(store + b"/" + name, "rb") as on_store:
        assert on_store.read() == b"odd\n"  # under exactly these bytes

    os.mkdir(zone + b"/d-" + name)
    os.rename(zone + b"/" + name, zone + b"/d-" + name + b"/" + name)
    assert os.listdir(zone + b"/d-" + name) == [name]
    os.link(zone + b"/d-" + name + b"/" + name, zone + b"/h-" + name)
    os.symlink(b"d-" + name + b"/" + name, zone + b"/s-" + name)
    with open(zone + b"/s-" + name, "rb") as through_link:
        assert through_link.read() == b"odd\n"
    os.mkfifo(zone + b"/f-" + name)
    assert sorted(os.listdir(zone)) == sorted(p + name for p in (b"d-", b"h-", b"s-", b"f-"))

    for entry in (b"h-", b"s-", b"f-", b"d-" + name + b"/"):
        os.unlink(zone + b"/" + entry + name)
    os.rmdir(zone + b"/d-" + name)
    assert os.listdir(zone) == os.listdir(store) == []


def test_tar_x_of_an_archive_with_latin1_names(m: Mount, tmp_path: Path) -> None:
    """An archive made on a Latin-1 system: ``tar x`` into the zone exited 2 (Cannot open: Invalid argument)."""
    archive_path = tmp_path / "latin1.tar"
    with tarfile.open(archive_path, "w", format=tarfile.GNU_FORMAT, encoding="latin-1") as archive:
        add_file(archive, "résumé/café.txt", b"latin-1\n", os.getuid(), os.getgid())
    m.path("agents/alice/unpack").mkdir()
    done = m.run(["tar", "xf", str(archive_path), "-C", "agents/alice/unpack"])
    assert done.returncode == 0, done.stderr.decode()
    unpacked = os.fsencode(m.path("agents/alice/unpack")) + "/résumé/café.txt".encode("latin-1")
    with open(unpacked, "rb") as f:
        assert f.read() == b"latin-1\n"


def test_a_sparse_file_takes_the_blocks_it_takes_on_the_store(m: Mount) -> None:
    """st_blocks was the size's, so ``du`` of ``truncate -s 1G`` said 1.0G (ext4: 0) and ``cp --sparse`` found no
    holes; a staged file, held in memory, still counts every byte."""
    m.run(["truncate", "-s", "1G", "agents/alice/sparse"], check=True)
    m.run(["dd", "if=/dev/urandom", "of=agents/alice/sparse", "bs=64K", "count=1", "conv=notrunc"], check=True)
    through_mount, on_store = os.stat(m.path("agents/alice/sparse")), os.stat(m.store / "agents/alice/sparse")
    assert through_mount.st_size == on_store.st_size == 1 << 30
    assert through_mount.st_blocks == on_store.st_blocks < (1 << 20) // 512  # 64 KiB of data, not 1 GiB
    assert int(m.run(["du", "-k", "agents/alice/sparse"], check=True).stdout.split()[0]) < 1024
    m.path("collaborative/current/plan.md").write_bytes(b"x" * 1000)
    assert os.stat(m.path("collaborative/current/plan.md")).st_blocks == 2


def as_uid(m: Mount, uid: int, action: Callable[[], object], cwd: str) -> str:
    """What ``action`` does when a process of ``uid`` (its own group, no other) runs it in ``cwd`` of the mount:
    ``ok`` or the errno's name. A forked child that starts there as root, so the test's private temp
    directories on the way to the mount are never traversed as ``uid``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only system calls, then _exit
        result = b"ok"
        try:
            os.chdir(m.path(cwd))
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            action()
        except OSError as exc:
            result = errno.errorcode.get(exc.errno or 0, "?").encode()
        finally:
            os.write(write_end, result)
            os._exit(0)
    os.close(write_end)
    try:
        return os.read(read_end, 64).decode()
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)


def access_w(name: str) -> None:
    """``access(name, W_OK)`` as an action for ``as_uid``: EACCES when it says no."""
    if not os.access(name, os.W_OK):
        raise OSError(errno.EACCES, "access(W_OK) is false")


def write_text(name: str, text: str, mode: str = "w") -> None:
    with open(name, mode) as f:
        f.write(text)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to other uids needs root")
def test_another_uid_in_a_zone_is_itself_for_the_files_and_a_mapped_uid_is_its_agent(
    mount: Callable[..., Mount],
) -> None:
    """Issue 15's rule for "another uid in my zone": a uid the uid map is silent on is the mount's agent for the
    zone rule and itself for the files (it owns what it creates; mode bits and chown between uids are the store's);
    a uid the map names is that agent, acting as the daemon, but owns what it creates (git refused its repos)."""
    m = mount(uids={60001: "bob"}, allow_other=True)
    shared = m.path("agents/alice/shared")
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    assert as_uid(m, 60002, lambda: write_text("n.txt", "mine"), "agents/alice/shared") == "ok"
    on_store = os.lstat(m.store / "agents/alice/shared/n.txt")
    assert (on_store.st_uid, on_store.st_gid, stat.S_IMODE(on_store.st_mode)) == (60002, 60002, 0o644)
    for action, expected in (
        (lambda: write_text("n.txt", "theirs", "a"), "EACCES"),  # another unmapped uid: the file's mode bits
        (lambda: os.chown("n.txt", 60003, 60003), "EPERM"),  # not the owner
        (lambda: os.chmod("n.txt", 0o666), "EPERM"),
        (lambda: write_text("other.txt", ""), "ok"),  # the directory is 0777
        (lambda: access_w("n.txt"), "EACCES"),  # access(W_OK) says the same (it said yes to any uid)
    ):
        assert as_uid(m, 60003, action, "agents/alice/shared") == expected
    assert (m.store / "agents/alice/shared/n.txt").read_text() == "mine"
    assert as_uid(m, 60002, lambda: access_w("n.txt"), "agents/alice/shared") == "ok"
    # The mapped uid is bob: refused in alice's zone by the zone rule, master of its own (root's directory).
    assert as_uid(m, 60001, lambda: write_text("shared/b.txt", ""), "agents/alice") == "EACCES"
    assert as_uid(m, 60001, lambda: write_text("b.txt", "bob"), "agents/bob") == "ok"
    for make in (lambda: os.mkdir("d"), lambda: os.symlink("b.txt", "l"), lambda: os.mkfifo("p")):
        assert as_uid(m, 60001, make, "agents/bob") == "ok"
    for name in ("b.txt", "d", "l", "p"):  # made by the daemon, given to the mapped uid
        on_store = os.lstat(m.store / "agents/bob" / name)
        assert (on_store.st_uid, on_store.st_gid) == (60001, 60001), name
        assert os.lstat(m.path("agents/bob") / name).st_uid == 60001, name
