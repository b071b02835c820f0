"""Issue 15, the shared zones: every save is one version and nothing acknowledged is lost, through a real mount.

Appends in ``collaborative/`` survive whatever the program asks in between (``fstat``, ``lseek``), and a random
sequence of writes, truncations and reopens (fsx's idea, small) matches an in-memory model byte for byte.
"""

from __future__ import annotations

import errno
import mmap
import os
import random
import shutil
from collections.abc import Callable

import pytest

from tests.fuse.conftest import Mount

MountFactory = Callable[..., Mount]
CUR = "collaborative/current"


def test_i15_append_after_reopen_keeps_every_line(mount: MountFactory) -> None:
    """create ``line1``; reopen O_APPEND, write, fstat, write: ``line2`` used to be overwritten by ``line3``."""
    m = mount()
    path = m.path(f"{CUR}/log.txt")
    with open(path, "wb") as f:
        f.write(b"line1\n")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"line2\n")
        assert os.fstat(fd).st_size == 12
        os.write(fd, b"line3\n")
        assert os.lseek(fd, 0, os.SEEK_END) == 18
    finally:
        os.close(fd)
    assert path.read_bytes() == b"line1\nline2\nline3\n"


def test_i15_fstat_and_seek_end_see_the_open_files_size(mount: MountFactory) -> None:
    m = mount()
    path = m.path(f"{CUR}/grow.txt")
    path.write_bytes(b"12345")
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, b"abcdefgh", 3)
        assert os.fstat(fd).st_size == 11
        assert os.stat(path).st_size == 11  # the writer's own view by name, too
        assert os.lseek(fd, 0, os.SEEK_END) == 11
        os.ftruncate(fd, 4)
        assert os.fstat(fd).st_size == 4
        assert os.lseek(fd, 0, os.SEEK_END) == 4
    finally:
        os.close(fd)
    assert path.read_bytes() == b"123a"


class _Model:
    """One file in ``collaborative/``, driven by random operations, checked against bytes kept here (fsx's idea):
    the program's view while the file is open and the committed content after every close must both match."""

    def __init__(self, path: os.PathLike[str], rng: random.Random) -> None:
        self.path = path
        self.rng = rng
        self.data = bytearray()
        self.fd = -1
        self.append = False
        self.log: list[str] = []

    def reopen(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.log.append("close")
            with open(self.path, "rb") as f:
                assert f.read() == self.data, self.where("committed content")
        self.append = self.rng.random() < 0.4
        flags = os.O_RDWR | (os.O_APPEND if self.append else 0) | (os.O_CREAT if self.fd < 0 else 0)
        self.fd = os.open(self.path, flags, 0o644)
        self.log.append(f"open append={self.append}")

    def where(self, what: str) -> str:
        return f"{what} differs after: {'; '.join(self.log[-12:])}"

    def step(self) -> None:
        rng, op = self.rng, self.rng.choice(["write", "write", "read", "truncate", "fstat", "seek_end"])
        size = len(self.data)
        if op == "write":
            offset, chunk = rng.randrange(size + 64), rng.randbytes(rng.randrange(1, 200))
            os.lseek(self.fd, offset, os.SEEK_SET)
            os.write(self.fd, chunk)
            at = size if self.append else offset
            self.data.extend(b"\0" * max(0, at - len(self.data)))
            self.data[at : at + len(chunk)] = chunk
            self.log.append(f"write {len(chunk)}@{at}")
        elif op == "read":
            offset, n = rng.randrange(size + 1), rng.randrange(1, 300)
            self.log.append(f"read {n}@{offset}")
            assert os.pread(self.fd, n, offset) == bytes(self.data[offset : offset + n]), self.where("read")
        elif op == "truncate":
            new = rng.randrange(size + 100)
            os.ftruncate(self.fd, new)
            self.data = self.data[:new] + b"\0" * max(0, new - size)
            self.log.append(f"truncate {new}")
        elif op == "fstat":
            self.log.append("fstat")
            assert os.fstat(self.fd).st_size == len(self.data), self.where("fstat size")
        else:
            self.log.append("lseek end")
            assert os.lseek(self.fd, 0, os.SEEK_END) == len(self.data), self.where("lseek(SEEK_END)")


def test_i15_random_ops_with_reopens_match_a_model(mount: MountFactory) -> None:
    """fsx with close/reopen every few operations failed at op 72; here 4 seeds x 250 operations, each close a
    commit, compared with the model after every operation that can see the size or the bytes."""
    m = mount()
    for seed in range(4):
        rng = random.Random(seed)
        model = _Model(m.path(f"{CUR}/fsx-{seed}.bin"), rng)
        model.reopen()
        for _ in range(250):
            if rng.random() < 0.15:
                model.reopen()
            model.step()
        model.reopen()
        os.close(model.fd)


def test_i15_handoff_append_after_reopen_keeps_every_line(mount: MountFactory) -> None:
    """The same sequence in a handoff box: the delivery holds every appended line."""
    m = mount()
    path = m.path("handoff/alice_to_bob/log.txt")
    with open(path, "wb") as f:
        f.write(b"line1\n")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"line2\n")
        assert os.fstat(fd).st_size == 12
        os.write(fd, b"line3\n")
    finally:
        os.close(fd)
    assert path.read_bytes() == b"line1\nline2\nline3\n"


def test_i15_shared_writable_mmap_fails_at_mmap_with_ENODEV(mount: MountFactory) -> None:
    """A staged file has no page cache to share: MAP_SHARED fails at mmap() itself (ENODEV, the kernel's answer
    for a direct-I/O file), never later; a private mapping reads the content, and the file is unchanged."""
    m = mount()
    path = m.path(f"{CUR}/mapped.bin")
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDWR)
    try:
        with pytest.raises(OSError) as refused:
            mmap.mmap(fd, 10, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        assert refused.value.errno == errno.ENODEV
        with mmap.mmap(fd, 10, mmap.MAP_PRIVATE, mmap.PROT_READ) as private:
            assert private[:] == b"0123456789"
    finally:
        os.close(fd)
    assert path.read_bytes() == b"0123456789"


# -- saves through a work file: one version each, whatever the work file's name ---------------------------------

PLAN = f"{CUR}/plan.md"


def _versions(m: Mount, path: str = "plan.md") -> list[tuple[int, str]]:
    return [(e.version, e.author) for e in m.ws.collab.history(path)]


def _scratch_left(m: Mount) -> list[str]:
    root = m.store / ".omxfs/scratch"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir()) if root.exists() else []


@pytest.mark.skipif(not shutil.which("perl"), reason="perl missing")
def test_i15_perl_pi_is_one_save(mount: MountFactory) -> None:
    """``perl -pi`` writes ``XXEvjlEY`` (mkstemp) and renames it over the file: one version, no file of its own."""
    m = mount()
    m.path(PLAN).write_text("a plan\n")
    m.run(["perl", "-pi", "-e", "s/a/b/", PLAN], check=True)
    assert m.path(PLAN).read_text() == "b plan\n"
    assert _versions(m) == [(1, "alice"), (2, "alice")]
    assert m.ws.collab.list() == ["plan.md"] and os.listdir(m.path(CUR)) == ["plan.md"]
    # As another agent: its read of the file is its base, as for any program.
    m.run(["perl", "-pi", "-e", "s/plan/bill/", PLAN], agent="bob", check=True)
    assert m.path(PLAN).read_text() == "b bill\n" and _versions(m)[-1] == (3, "bob")
    assert m.ws.collab.list() == ["plan.md"] and _scratch_left(m) == []


@pytest.mark.skipif(not shutil.which("perl"), reason="perl missing")
def test_i15_perl_pi_bak_is_one_save_and_a_private_backup(mount: MountFactory) -> None:
    """``perl -pi.bak`` links the file to ``plan.md.bak`` first: the backup is the agent's private copy."""
    m = mount()
    m.path(PLAN).write_text("a plan\n")
    m.run(["perl", "-pi.bak", "-e", "s/a/b/", PLAN], check=True)
    assert m.path(PLAN).read_text() == "b plan\n" and _versions(m) == [(1, "alice"), (2, "alice")]
    assert m.path(f"{PLAN}.bak").read_text() == "a plan\n"
    assert sorted(os.listdir(m.path(CUR))) == ["plan.md", "plan.md.bak"]
    assert m.run(f"ls -A {CUR}", agent="bob", check=True).stdout == b"plan.md\n"
    assert m.ws.collab.list() == ["plan.md"]
    m.run(f"rm {PLAN}.bak", check=True)
    assert _scratch_left(m) == []


def test_i15_named_temporary_file_and_os_replace_is_one_save(mount: MountFactory) -> None:
    """Python's ``NamedTemporaryFile`` with a prefix of its own (no name rule knows it) + ``os.replace``."""
    m = mount()
    m.path(PLAN).write_text("v1\n")
    m.py(
        "import os, tempfile\n"
        f"open({PLAN!r}).read()\n"
        f"with tempfile.NamedTemporaryFile('w', dir={CUR!r}, prefix='plan-', delete=False) as f:\n"
        "    f.write('v2\\n')\n"
        f"os.replace(f.name, {PLAN!r})\n",
        agent="bob",
    )
    assert m.path(PLAN).read_text() == "v2\n" and _versions(m) == [(1, "alice"), (2, "bob")]
    assert m.ws.collab.list() == ["plan.md"] and _scratch_left(m) == []


def test_i15_a_work_file_left_behind_is_its_creators_and_can_be_deleted(mount: MountFactory) -> None:
    """A tool killed between its work file and the rename leaves the work file: no version, seen and deleted by
    its creator only; ``cp -a`` (0600 and exclusive too, but write-only) still makes a version."""
    m = mount()
    m.py(f"import os; fd = os.open('{CUR}/XXEvjlEY', os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600); os.write(fd, b'w')")
    assert os.listdir(m.path(CUR)) == ["XXEvjlEY"] and m.path(f"{CUR}/XXEvjlEY").read_bytes() == b"w"
    assert m.run(f"ls -A {CUR}", agent="bob", check=True).stdout == b""
    assert m.run(f"rm {CUR}/XXEvjlEY", agent="bob").returncode != 0
    assert m.ws.collab.list() == []
    m.run(f"rm {CUR}/XXEvjlEY", check=True)
    assert os.listdir(m.path(CUR)) == [] and _scratch_left(m) == []
    private = m.root.parent / "private.txt"
    private.write_text("copied\n")
    private.chmod(0o600)
    m.run(["cp", "-a", str(private), f"{CUR}/copied.txt"], check=True)
    assert m.ws.collab.list() == ["copied.txt"]
    assert m.run(f"cat {CUR}/copied.txt", agent="bob", check=True).stdout == b"copied\n"


# -- names ------------------------------------------------------------------------------------------------------


def test_i15_a_handoff_name_too_long_for_its_meta_fails_at_create(mount: MountFactory) -> None:
    """``<250 x a>`` has no room for ``.meta.json``: ENAMETOOLONG at open, never an acknowledged write lost at
    close; 245 bytes is the longest delivery name, and collaborative/ refuses at create the same way."""
    m = mount()
    box = "handoff/bob_to_alice"
    long = m.py(f"import os\ntry:\n    open('{box}/{'a' * 250}', 'w')\nexcept OSError as e:\n    print(e.errno)", "bob")
    assert long.stdout.decode().strip() == str(errno.ENAMETOOLONG)
    assert "ENAMETOOLONG" in m.log()
    m.run(f"echo ok > {box}/{'b' * 245}", agent="bob", check=True)
    assert m.path(f"{box}/{'b' * 245}.meta.json").exists()
    with pytest.raises(OSError) as refused:
        m.path(f"{CUR}/{'c' * 231}").write_text("no room\n")
    assert refused.value.errno == errno.ENAMETOOLONG
    m.path(f"{CUR}/{'c' * 230}").write_text("fits\n")
    assert m.ws.collab.list() == ["c" * 230]


def test_i15_a_refused_touch_or_chmod_is_EACCES(mount: MountFactory) -> None:
    """``touch``/``chmod`` of a box or a ``.meta.json`` by the receiver, of any ``.meta.json`` and of a realtime
    snapshot: EACCES, with a log line (it returned 0 and changed nothing); the sender's touch of its delivery is
    still accepted (times and modes belong to the store)."""
    m = mount()
    box = "handoff/bob_to_alice"
    m.run(f"echo hi > {box}/note.txt", agent="bob", check=True)
    for command in (f"touch {box}", f"touch {box}/note.txt", f"touch {box}/note.txt.meta.json", f"chmod 600 {box}"):
        done = m.run(command, agent="alice")
        assert done.returncode != 0 and b"Permission denied" in done.stderr, command
    assert m.run(f"touch {box}/note.txt.meta.json", agent="bob").returncode != 0
    m.run(f"touch {box}/note.txt && chmod 600 {box}/note.txt", agent="bob", check=True)
    m.run("""mkdir realtime/notes && echo '{"title": "lww_register"}' > realtime/notes/.schema.json""", check=True)
    assert b"Permission denied" in m.run("touch realtime/notes/.snapshot.json").stderr
    m.run("touch realtime/notes/title", check=True)  # a field takes writes: its times are ignored
    assert "op=setattr" in m.log() and "errno=EACCES" in m.log()


def test_i15_EOPNOTSUPP_refusals_are_logged(mount: MountFactory) -> None:
    """An attribute collaborative/ does not keep is refused with EOPNOTSUPP and, like every refusal, a log line."""
    m = mount()
    m.path(f"{CUR}/x.md").write_text("x\n")
    done = m.run(f"setfattr -n user.colour -v red {CUR}/x.md")
    assert done.returncode != 0 and b"not supported" in done.stderr
    assert "op=setxattr" in m.log() and f"errno={errno.errorcode[errno.EOPNOTSUPP]}: user.colour" in m.log()


def test_i15_nfc_and_nfd_names_are_one_file(mount: MountFactory) -> None:
    """``café`` precomposed (NFC) and decomposed (NFD) are one file in the shared zones: the second write is the
    file's next version (not a twin that lists alike), the store holds one NFC name, both names read it."""
    m = mount()
    nfc_name, nfd_name = "caf\u00e9.md", "cafe\u0301.md"
    m.path(f"{CUR}/{nfc_name}").write_text("one\n")
    m.path(f"{CUR}/{nfd_name}").write_text("two\n")
    assert os.listdir(m.path(CUR)) == [nfc_name]
    assert m.ws.collab.list() == [nfc_name] and _versions(m, nfc_name) == [(1, "alice"), (2, "alice")]
    assert m.path(f"{CUR}/{nfd_name}").read_text() == "two\n"
    assert os.stat(m.path(f"{CUR}/{nfd_name}")).st_ino == os.stat(m.path(f"{CUR}/{nfc_name}")).st_ino
    box = "handoff/bob_to_alice"
    m.run(f"echo one > {box}/{nfd_name} && echo two > {box}/{nfc_name}", agent="bob", check=True)
    assert sorted(os.listdir(m.path(box))) == [nfc_name, f"{nfc_name}.meta.json"]
    assert m.path(f"{box}/{nfd_name}").read_text() == "two\n"
