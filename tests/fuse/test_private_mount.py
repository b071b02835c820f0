"""The private zone through a real mount (SPEC §4 "Private", seed cases A-1 … A-8), and the root and ``.omxfs/``.

The test process acts as the mount's default agent (alice); bob and the supervisor act through subprocesses.
Every refused write is checked twice: the errno the program saw, and the store on disk, unchanged.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from omxfs.store import Workspace
from tests.fuse.conftest import Mount, poll


def snapshot(root: Path) -> dict[str, tuple[int, bytes | str, dict[str, bytes]]]:
    """Every node below ``root``: mode, content (or link target) and user xattrs, for "nothing changed" checks."""
    found: dict[str, tuple[int, bytes | str, dict[str, bytes]]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                body: bytes | str = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                body = p.read_bytes()
            else:
                body = ""
            xattrs = {} if stat.S_ISLNK(st.st_mode) else {n: os.getxattr(p, n) for n in os.listxattr(p)}
            found[str(p.relative_to(root))] = (st.st_mode, body, xattrs)
    return found


# -- seed cases A-1 … A-8 through the mount ----------------------------------------------------------------------


def test_A_1_mount_owner_writes_own_zone(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.path("agents/alice/notes.md").write_text("Hello World")
    assert (m.store / "agents/alice/notes.md").read_text() == "Hello World"
    assert m.ws.private.read("alice", "notes.md") == b"Hello World"


def test_A_2_mount_owner_overwrites(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.ws.private.write("alice", "alice", "notes.md", "旧内容".encode())
    m.path("agents/alice/notes.md").write_text("新内容")
    assert m.ws.private.read("alice", "notes.md").decode() == "新内容"


def test_A_3_mount_owner_reads(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.ws.private.write("alice", "alice", "notes.md", "我的笔记".encode())
    assert m.path("agents/alice/notes.md").read_text() == "我的笔记"


def test_A_4_mount_reads_another_agents_file(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.ws.private.write("bob", "bob", "report.md", "Bob的报告".encode())
    assert m.path("agents/bob/report.md").read_text() == "Bob的报告"
    done = m.run(["cat", "agents/bob/report.md"], agent="alice", check=True)
    assert done.stdout.decode() == "Bob的报告"


def test_A_5_mount_write_into_another_zone_is_refused(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.ws.private.write("bob", "bob", "report.md", b"bob's")
    before = snapshot(m.store / "agents/bob")
    for target in ("agents/bob/report.md", "agents/bob/new.md"):
        with pytest.raises(PermissionError) as info:
            m.path(target).write_text("alice was here")
        assert info.value.errno == errno.EACCES
    assert snapshot(m.store / "agents/bob") == before
    assert "agent=alice op=" in m.log() and "errno=EACCES" in m.log()


def test_A_6_mount_missing_file_is_enoent(mount: Callable[..., Mount]) -> None:
    m = mount()
    with pytest.raises(FileNotFoundError):
        m.path("agents/alice/nonexistent.md").read_text()


def test_A_7_mount_lists_workspace_files(mount: Callable[..., Mount]) -> None:
    m = mount()
    for name in ("a.md", "b.txt", "c.json"):
        m.ws.private.write("alice", "alice", name, b"x")
    assert sorted(os.listdir(m.path("agents/alice"))) == ["a.md", "b.txt", "c.json"]
    done = m.run(["ls", "agents/alice"], agent="bob", check=True)
    assert done.stdout.decode().split() == ["a.md", "b.txt", "c.json"]


def test_A_8_mount_lists_an_empty_zone(mount: Callable[..., Mount]) -> None:
    m = mount()
    assert os.listdir(m.path("agents/bob")) == []


# -- the owner: full POSIX -----------------------------------------------------------------------------------


def test_owner_has_full_posix_behaviour(mount: Callable[..., Mount]) -> None:
    m = mount()
    zone = m.path("agents/alice")
    disk = m.store / "agents/alice"
    f = zone / "f.txt"
    f.write_bytes(b"one\n")
    with open(f, "ab") as out:
        out.write(b"two\n")
    assert f.read_bytes() == b"one\ntwo\n" == (disk / "f.txt").read_bytes()
    with open(f, "r+b") as rw:
        rw.seek(4)
        rw.write(b"TWO")
    assert f.read_bytes() == b"one\nTWO\n"
    os.truncate(f, 3)
    assert (disk / "f.txt").read_bytes() == b"one"
    with open(f, "r+b") as rw:
        rw.truncate(1)
        assert os.fstat(rw.fileno()).st_size == 1
    os.chmod(f, 0o600)
    assert stat.S_IMODE((disk / "f.txt").stat().st_mode) == 0o600
    os.utime(f, ns=(1_000_000_000, 2_000_000_000))
    assert (disk / "f.txt").stat().st_mtime_ns == 2_000_000_000
    (zone / "d" / "e").mkdir(parents=True)
    os.rename(f, zone / "d" / "e" / "g.txt")
    assert (disk / "d/e/g.txt").read_bytes() == b"o" and not (disk / "f.txt").exists()
    os.rename(zone / "d", zone / "dd")  # a directory with content moves, and its files follow
    assert (zone / "dd/e/g.txt").read_bytes() == b"o"
    os.symlink("e/g.txt", zone / "dd" / "link")
    assert os.readlink(disk / "dd/link") == "e/g.txt"
    assert (zone / "dd/link").read_bytes() == b"o"  # the kernel follows it, inside the mount
    os.link(zone / "dd/e/g.txt", zone / "hard.txt")
    assert (disk / "hard.txt").stat().st_ino == (disk / "dd/e/g.txt").stat().st_ino
    os.unlink(zone / "dd/link")
    os.unlink(zone / "dd/e/g.txt")
    os.rmdir(zone / "dd/e")
    os.rmdir(zone / "dd")
    with pytest.raises(OSError) as info:
        os.rmdir(zone)  # a zone's root stays
    assert info.value.errno == errno.EACCES
    assert sorted(os.listdir(disk)) == ["hard.txt"]


def test_owner_creates_with_the_mode_asked_for(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.run("umask 002 && touch agents/alice/shared && mkdir agents/alice/dir", check=True)
    assert stat.S_IMODE((m.store / "agents/alice/shared").stat().st_mode) == 0o664
    assert stat.S_IMODE((m.store / "agents/alice/dir").stat().st_mode) == 0o775


def test_rename_replaces_and_exclusive_create_fails(mount: Callable[..., Mount]) -> None:
    m = mount()
    zone = m.path("agents/alice")
    (zone / "a").write_text("A")
    (zone / "b").write_text("B")
    os.replace(zone / "a", zone / "b")
    assert (zone / "b").read_text() == "A" and not (zone / "a").exists()
    with pytest.raises(FileExistsError):
        open(zone / "b", "x").close()
    done = m.run("mv -n agents/alice/b agents/alice/c && mv -T agents/alice/c agents/alice/d", check=True)
    assert done.returncode == 0 and (zone / "d").read_text() == "A"


def test_unlinked_open_file_stays_usable(mount: Callable[..., Mount]) -> None:
    m = mount()
    path = m.path("agents/alice/tmp.bin")
    with open(path, "w+b") as f:
        f.write(b"still here")
        f.flush()
        os.unlink(path)
        assert os.fstat(f.fileno()).st_size == 10
        f.seek(0)
        assert f.read() == b"still here"
    assert not path.exists()


# -- everyone else: read-only --------------------------------------------------------------------------------

ATTEMPTS = textwrap.dedent(
    """
    import errno, json, os
    z = "agents/alice"
    attempts = {
        "overwrite": lambda: open(f"{z}/a.txt", "w").close(),
        "append": lambda: open(f"{z}/a.txt", "a").close(),
        "read-write": lambda: open(f"{z}/a.txt", "r+").close(),
        "create": lambda: open(f"{z}/new.txt", "x").close(),
        "truncate": lambda: os.truncate(f"{z}/a.txt", 0),
        "unlink": lambda: os.unlink(f"{z}/a.txt"),
        "rename": lambda: os.rename(f"{z}/a.txt", f"{z}/b.txt"),
        "rename-out": lambda: os.rename(f"{z}/a.txt", "agents/bob/a.txt"),
        "rename-in": lambda: os.rename("agents/bob/mine.txt", f"{z}/mine.txt"),
        "mkdir": lambda: os.mkdir(f"{z}/newdir"),
        "rmdir": lambda: os.rmdir(f"{z}/empty"),
        "symlink": lambda: os.symlink("a.txt", f"{z}/link"),
        "link-in": lambda: os.link("agents/bob/mine.txt", f"{z}/mine.txt"),
        "link-out": lambda: os.link(f"{z}/a.txt", "agents/bob/stolen.txt"),
        "chmod": lambda: os.chmod(f"{z}/a.txt", 0o777),
        "utime": lambda: os.utime(f"{z}/a.txt", (0, 0)),
        "setxattr": lambda: os.setxattr(f"{z}/a.txt", "user.note", b"bob"),
        "removexattr": lambda: os.removexattr(f"{z}/a.txt", "user.kept"),
        "access-w": lambda: None if not os.access(f"{z}/a.txt", os.W_OK) else 1 / 0,
    }
    result = {}
    for name, attempt in attempts.items():
        try:
            attempt()
            result[name] = "allowed" if name != "access-w" else "EACCES"
        except OSError as exc:
            result[name] = errno.errorcode[exc.errno]
        except ZeroDivisionError:
            result[name] = "allowed"
    result["read"] = open(f"{z}/a.txt").read()
    result["list"] = sorted(os.listdir(z))
    print(json.dumps(result))
    """
)


def test_another_agent_reads_but_every_write_is_eacces(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.ws.private.write("alice", "alice", "a.txt", b"alice's")
    m.ws.private.write("bob", "bob", "mine.txt", b"bob's")
    (m.store / "agents/alice/empty").mkdir()
    os.setxattr(m.store / "agents/alice/a.txt", "user.kept", b"1")
    before = snapshot(m.store / "agents")
    result = json.loads(m.py(ATTEMPTS, agent="bob").stdout)
    assert result.pop("read") == "alice's"
    assert result.pop("list") == ["a.txt", "empty"]
    assert result == {name: "EACCES" for name in result}
    assert snapshot(m.store / "agents") == before
    log = m.log()
    assert "agent=bob op=open path=agents/alice/a.txt errno=EACCES: bob may not write in agents/alice/" in log
    assert "agent=bob op=unlink path=agents/alice/a.txt errno=EACCES" in log


def test_shell_tools_of_another_agent_fail_and_change_nothing(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.ws.private.write("alice", "alice", "a.txt", b"alice's")
    before = snapshot(m.store / "agents")
    for command in (
        "echo x > agents/alice/a.txt",
        "echo x >> agents/alice/a.txt",
        "touch agents/alice/t",
        "rm -f agents/alice/a.txt",
        "mv agents/alice/a.txt agents/bob/",
        "cp /etc/hostname agents/alice/",
        "mkdir agents/alice/d",
        "sed -i s/a/b/ agents/alice/a.txt",
    ):
        done = m.run(command, agent="bob")
        assert done.returncode != 0, command
        assert b"Permission denied" in done.stderr, (command, done.stderr)
    assert snapshot(m.store / "agents") == before


def test_supervisor_writes_anywhere_and_is_audited(mount: Callable[..., Mount]) -> None:
    m = mount(agents=["alice", "bob"], supervisors=["boss"])
    done = m.run("echo $$; echo fixed > agents/alice/report.md && mkdir agents/bob/reviews", agent="boss", check=True)
    assert (m.store / "agents/alice/report.md").read_text() == "fixed\n"
    assert (m.store / "agents/bob/reviews").is_dir()
    audit = Workspace(m.store).audit_trail().records
    actions = {(a["agent"], a["action"], a["path"]) for a in audit}
    assert ("boss", "create", "agents/alice/report.md") in actions
    assert ("boss", "mkdir", "agents/bob/reviews") in actions
    # and which process did it: the shell that redirected (issue 14: the audit log records uid and pid)
    shell = int(done.stdout.split()[0])
    created = next(a for a in audit if a["action"] == "create")
    assert (created["uid"], created["pid"]) == (os.getuid(), shell)


def test_owner_writes_are_not_audited(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.path("agents/alice/x").write_text("x")
    assert not [a for a in Workspace(m.store).audit_trail().records if a["path"] == "agents/alice/x"]


# -- the root, agents/ and .omxfs/ ---------------------------------------------------------------------------


def test_root_lists_the_zones_and_refuses_anything_else(mount: Callable[..., Mount]) -> None:
    m = mount()
    assert sorted(os.listdir(m.root)) == [".omxfs", "agents", "collaborative", "handoff", "realtime"]
    before = sorted(os.listdir(m.store))
    for command in ("touch stray", "mkdir stray", "ln -s agents stray", "mkdir agents/carol", "touch agents/file"):
        done = m.run(command)
        assert done.returncode != 0 and b"Permission denied" in done.stderr, (command, done.stderr)
    for command in ("rmdir agents/bob", "mv agents/bob agents/robert", "rmdir agents"):
        done = m.run(command)
        assert done.returncode != 0, command
    assert sorted(os.listdir(m.store)) == before
    assert sorted(os.listdir(m.store / "agents")) == ["alice", "bob"]


def test_omxfs_dir_is_read_only(mount: Callable[..., Mount]) -> None:
    m = mount()
    config = m.path(".omxfs/config.toml")
    text = config.read_text()
    assert 'agents = ["alice", "bob"]' in text
    for attempt in (
        lambda: config.write_text('agents = ["alice", "bob", "mallory"]\nsupervisors = ["alice"]\n'),
        lambda: m.path(".omxfs/new").write_text("x"),
        lambda: config.unlink(),
        lambda: os.chmod(config, 0o666),
        lambda: os.rename(config, m.path(".omxfs/old.toml")),
        lambda: m.path(".omxfs/dir").mkdir(),
    ):
        with pytest.raises(PermissionError):
            attempt()
    assert (m.store / ".omxfs/config.toml").read_text() == text
    assert not os.access(config, os.W_OK)


def test_xattrs_show_the_owner_by_name_and_keep_user_attributes(mount: Callable[..., Mount]) -> None:
    """user.omx.owner is read by name, never listed (issue 15: a listed one failed every xattr-preserving copy)."""
    m = mount()
    m.path("agents/alice/a.txt").write_text("x")
    done = m.run(["getfattr", "-n", "user.omx.owner", "agents/alice/a.txt"], check=True)
    assert 'user.omx.owner="alice"' in done.stdout.decode()
    assert "user.omx" not in m.run(["getfattr", "-d", "agents/alice/a.txt"], check=True).stdout.decode()
    m.run(["setfattr", "-n", "user.note", "-v", "hello", "agents/alice/a.txt"], check=True)
    assert os.getxattr(m.store / "agents/alice/a.txt", "user.note") == b"hello"  # kept on the store
    dumped = m.run(["getfattr", "-d", "agents/alice/a.txt"], agent="bob", check=True).stdout.decode()
    assert 'user.note="hello"' in dumped
    m.run(["setfattr", "-n", "user.omx.owner", "-v", "bob", "agents/alice/a.txt"], check=True)  # accepted, ignored
    assert os.listxattr(m.store / "agents/alice/a.txt") == ["user.note"]
    for args, agent in (
        (["setfattr", "-n", "user.omx.owner", "-v", "bob", "agents/alice/a.txt"], "bob"),
        (["setfattr", "-n", "user.note", "-v", "bob", "agents/alice/a.txt"], "bob"),
        (["setfattr", "-x", "user.note", "agents/alice/a.txt"], "bob"),
    ):
        refused = m.run(args, agent=agent)
        assert refused.returncode != 0 and b"Permission denied" in refused.stderr, (args, refused.stderr)
    m.run(["setfattr", "-x", "user.note", "agents/alice/a.txt"], check=True)
    assert os.listxattr(m.store / "agents/alice/a.txt") == []
    missing = m.run(["getfattr", "-n", "user.nothing", "agents/alice/a.txt"])
    assert b"No such attribute" in missing.stderr


def test_symlinks_are_never_followed_by_the_daemon(mount: Callable[..., Mount]) -> None:
    m = mount()
    outside = m.store.parent / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret")
    # planted on the store directly: a directory symlink inside alice's zone pointing out of the workspace
    os.symlink(outside, m.store / "agents/alice/escape")
    assert os.readlink(m.path("agents/alice/escape")) == str(outside)
    # through the mount the kernel resolves it on the client side, to the real outside directory
    assert m.path("agents/alice/escape/secret").read_text() == "secret"
    # the daemon itself never walks through it: a store path with the symlink on the way is refused
    with pytest.raises(Exception):  # noqa: B017 (InvalidInput from the store walk)
        m.ws.private.read("alice", "escape/secret")


# -- coherence: other writers of the same store --------------------------------------------------------------


def test_store_side_changes_are_visible_within_a_second(mount: Callable[..., Mount]) -> None:
    m = mount()
    target = m.path("agents/alice/c.txt")
    m.ws.private.write("alice", "alice", "c.txt", b"v1")
    assert target.read_bytes() == b"v1"
    m.ws.private.write("alice", "alice", "c.txt", b"version two, longer")
    poll(lambda: target.read_bytes() == b"version two, longer", 1.0, "the new content through the mount")
    m.ws.private.write("alice", "alice", "new.txt", b"n")
    poll(lambda: "new.txt" in os.listdir(m.path("agents/alice")), 1.0, "a new file in the listing")
    poll(lambda: m.path("agents/alice/new.txt").exists(), 1.0, "a new file by name")
    m.ws.private.delete("alice", "alice", "c.txt")
    poll(lambda: not target.exists(), 1.0, "a deleted file to vanish")


def test_a_second_daemon_sees_the_first_ones_writes(mount: Callable[..., Mount]) -> None:
    m = mount()
    m2 = m.second_mount(default="bob")
    m.path("agents/alice/shared.txt").write_text("from alice")
    poll(lambda: m2.path("agents/alice/shared.txt").exists(), 1.0, "the file on the second mount")
    assert m2.path("agents/alice/shared.txt").read_text() == "from alice"
    m.path("agents/alice/shared.txt").write_text("changed by alice")
    poll(lambda: m2.path("agents/alice/shared.txt").read_text() == "changed by alice", 1.0, "the change")
    with pytest.raises(PermissionError):  # the second mount's default is bob
        m2.path("agents/alice/shared.txt").write_text("bob")


def test_a_reader_is_not_stalled_by_a_slow_writer(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.ws.private.write("alice", "alice", "r.txt", b"r")
    writer = subprocess.Popen(
        ["dd", "if=/dev/zero", "of=agents/alice/big.bin", "bs=1M", "count=64", "conv=fsync"],
        cwd=m.root,
        env=m.env(None),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(20):
            assert m.path("agents/alice/r.txt").read_bytes() == b"r"
    finally:
        assert writer.wait(60) == 0
    assert (m.store / "agents/alice/big.bin").stat().st_size == 64 << 20


def test_in_place_mount_keeps_the_store_underneath(mount: Callable[..., Mount]) -> None:
    m = mount(in_place=True)
    assert m.root == m.store and os.path.ismount(m.store)
    m.path("agents/alice/in-place.md").write_text("through the mount")
    assert m.ws.private.read("alice", "in-place.md") == b"through the mount"  # the store, underneath
    m.ws.private.write("alice", "alice", "direct.md", b"underneath")
    poll(lambda: m.path("agents/alice/direct.md").exists(), 1.0, "the store-side file through the mount")
    with pytest.raises(PermissionError):
        m.path(".omxfs/config.toml").write_text("")
    assert m.unmount() == 0
    assert (m.store / "agents/alice/in-place.md").read_text() == "through the mount"
    assert (m.store / ".omxfs/config.toml").read_text().startswith("# omx workspace configuration")


def test_a_name_over_255_bytes_is_refused_with_the_errno_tools_expect(mount: Callable[..., Mount]) -> None:
    """Any other name POSIX allows is made (``test_private_posix.py``); one over 255 bytes is ENAMETOOLONG."""
    m = mount()
    zone = m.path("agents/alice")
    for make in (lambda p: p.write_text("x"), Path.mkdir):
        with pytest.raises(OSError) as info:
            make(zone / ("x" * 256))
        assert info.value.errno == errno.ENAMETOOLONG
    (zone / ("x" * 255)).write_text("the longest name there is")
    assert sorted(os.listdir(m.store / "agents/alice")) == ["x" * 255]
