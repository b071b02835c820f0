"""The collaborative zone through a real mount: seed 001 cases C-1 … C-8, conflicts between processes and
daemons, xattrs with getfattr, and the editors people use (vim, nano, sed -i), each of which must make exactly
one version per save and leave no stray file."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fuse.conftest import Mount, poll

MountFactory = Callable[..., Mount]
CUR = "collaborative/current"
PLAN = f"{CUR}/plan.md"

# Editors run in a pseudo-terminal made by script(1); their keystrokes are fed once the editor is up.
needs_vim = pytest.mark.skipif(not shutil.which("vim") or not shutil.which("script"), reason="vim or script missing")
needs_nano = pytest.mark.skipif(not shutil.which("nano") or not shutil.which("script"), reason="nano or script missing")


class Editor:
    """An interactive editor on the mount as ``agent``, in a pty (``script -qfec``), driven by keystrokes."""

    def __init__(self, m: Mount, command: str, agent: str | None = None) -> None:
        env = {**m.env(agent), "TERM": "xterm", "HOME": str(m.root.parent)}
        self.proc = subprocess.Popen(
            ["script", "-qfec", command, "/dev/null"],
            cwd=m.root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.screen = bytearray()  # everything the editor drew, for expect()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := os.read(self.proc.stdout.fileno(), 4096):
            self.screen += chunk

    def expect(self, text: bytes) -> None:
        """Wait until the editor has shown ``text`` (some prompts drop keys typed ahead of them)."""
        poll(lambda: text in self.screen, what=f"the editor to show {text!r}")

    def keys(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait(self) -> int:
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self._reader.join(5)
        return self.proc.returncode

    def __enter__(self) -> Editor:
        return self

    def __exit__(self, *exc: object) -> None:
        """Never leave an editor holding the mount (the unmount would then be lazy and the test's check fail)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def history(m: Mount, path: str = "plan.md") -> list[tuple[int, str, str]]:
    return [(e.version, e.author, e.message) for e in m.ws.collab.history(path)]


def write_as(m: Mount, agent: str | None, path: str, text: str, message: str | None = None, read: bool = True) -> None:
    """One program as ``agent``: read the file (observe its version), then write it, setting the message while
    the file is open (the message applies at its close)."""
    code = f"""
import os
p = {path!r}
if {read!r} and os.path.exists(p):
    open(p, "rb").read()
fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
if {message!r} is not None:
    os.setxattr(p, "user.omx.message", {message!r}.encode())
os.write(fd, {text!r}.encode())
os.close(fd)
"""
    m.py(code, agent=agent)


def shell_errno(done: subprocess.CompletedProcess[bytes]) -> str:
    return done.stderr.decode(errors="replace")


def scratch_left(m: Mount) -> list[str]:
    root = m.store / ".omxfs/scratch"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir()) if root.exists() else []


# -- seed 001 module C through the mount -------------------------------------------------------------------------


def test_C_1_mount_create_a_collaborative_file(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "初稿", message="创建文档")
    assert m.path(PLAN).read_text("utf-8") == "初稿"
    assert history(m) == [(1, "alice", "创建文档")]
    assert sorted(os.listdir(m.path("collaborative"))) == [".conflicts", ".versions", "current"]
    assert os.listdir(m.path(CUR)) == ["plan.md"]
    assert m.path(PLAN).stat().st_size == len("初稿".encode())


def test_C_2_mount_sequential_edit(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "初稿")
    done = m.run(f"cat {PLAN}; getfattr --only-values -n user.omx.version {PLAN}", agent="bob", check=True)
    assert done.stdout.decode() == "初稿1"
    write_as(m, "bob", PLAN, "修改稿", message="补充内容")
    assert history(m)[-1] == (2, "bob", "补充内容")
    assert m.path(PLAN).read_text("utf-8") == "修改稿"


def test_C_3_mount_stale_write_fails_with_EBUSY(mount: MountFactory) -> None:
    """Two processes under two identities read v1; alice writes; bob's write fails at open, nothing changes."""
    m = mount()
    write_as(m, None, PLAN, "初稿")
    m.run(f"cat {PLAN}", agent="alice", check=True)
    m.run(f"cat {PLAN}", agent="bob", check=True)
    write_as(m, "alice", PLAN, "Alice的修改", read=False)
    done = m.run(f"echo 'Bob的修改' > {PLAN}", agent="bob")
    assert done.returncode != 0 and "Device or resource busy" in shell_errno(done)
    record = json.loads(m.path("collaborative/.conflicts/bob/plan.md.json").read_text("utf-8"))
    assert record["current_version"] == 2 and record["current_author"] == "alice"
    assert record["current_content"] == "Alice的修改" and record["your_base"] == 1
    assert "merge" in record["suggestion"]
    assert m.path(PLAN).read_text("utf-8") == "Alice的修改"
    assert [v for v, _, _ in history(m)] == [1, 2]
    assert "agent=bob op=open path=collaborative/current/plan.md errno=EBUSY" in m.log()


def test_C_3_mount_a_write_refused_at_open_says_nothing_was_written(mount: MountFactory) -> None:
    """Issue 25: a write refused at open kept an empty record whose suggestion said "Your rejected content is kept":
    no content ever reached the file, and the record says so, and why, for a stale base and for a file never read."""
    m = mount(agents=("alice", "bob", "carol"))
    write_as(m, None, PLAN, "v1")
    m.run(f"cat {PLAN}", agent="bob", check=True)
    write_as(m, "alice", PLAN, "v2", read=False)
    for agent, why in [
        ("bob", "you opened plan.md for writing on version 1, but it is at version 2 (by alice)"),
        ("carol", "you opened plan.md for writing without having read it, and it is at version 2 (by alice)"),
    ]:
        done = m.run(f"echo 'lost?' > {PLAN}", agent=agent)
        assert done.returncode != 0 and "Device or resource busy" in shell_errno(done)
        record = json.loads(m.path(f"collaborative/.conflicts/{agent}/plan.md.json").read_text("utf-8"))
        assert record["suggestion"].startswith(f"Nothing was written: {why}, so the open was refused (EBUSY)")
        assert "is kept" not in record["suggestion"] and record["your_content"] == ""
        assert record["kept_at"] == f"collaborative/.conflicts/{agent}/plan.md.rejected-1"
        assert m.path(record["kept_at"]).read_bytes() == b""
        assert f"agent={agent} op=open path=collaborative/current/plan.md errno=EBUSY" in m.log()
    assert m.path(PLAN).read_text("utf-8") == "v2"


def test_C_3_mount_commit_race_fails_at_close(mount: MountFactory) -> None:
    """Bob opens and writes while v1 is current; alice commits v2; bob's close() fails with EBUSY and his
    content is kept under .conflicts/bob/."""
    m = mount()
    write_as(m, None, PLAN, "初稿")
    m.run(f"cat {PLAN}", agent="bob", check=True)
    bob = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import os, sys
fd = os.open({PLAN!r}, os.O_WRONLY | os.O_TRUNC)
os.write(fd, "Bob的修改".encode())
print("open", flush=True)
sys.stdin.readline()
try:
    os.close(fd)
except OSError as exc:
    print("close failed", exc.errno, flush=True)
else:
    print("closed", flush=True)
""",
        ],
        cwd=m.root,
        env=m.env("bob"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert bob.stdout is not None and bob.stdin is not None
    assert bob.stdout.readline() == b"open\n"
    m.run(f"cat {PLAN} > /dev/null && printf %s 'Alice的修改' > {PLAN}", agent="alice", check=True)
    out, _ = bob.communicate(b"go\n", timeout=30)
    assert out.decode().split() == ["close", "failed", str(errno.EBUSY)]
    info = m.ws.collab.conflict_record("bob", "plan.md")
    assert (info["current_version"], info["current_content"], info["your_content"]) == (2, "Alice的修改", "Bob的修改")
    assert m.path("collaborative/.conflicts/bob/plan.md").read_text("utf-8") == "Bob的修改"
    assert m.path(PLAN).read_text("utf-8") == "Alice的修改"


def test_C_3_mount_a_write_after_another_commit_fails_at_the_write(mount: MountFactory) -> None:
    """A writer whose base went stale while its file was open learns it at its next write() (EBUSY), not only at
    the close a program may ignore; what it wrote before is kept under .conflicts/ at the close."""
    m = mount()
    write_as(m, None, PLAN, "v1")
    m.run(f"cat {PLAN}", agent="bob", check=True)
    bob = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import os, sys
fd = os.open({PLAN!r}, os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"bob's first part\\n")
print("written", flush=True)
sys.stdin.readline()
try:
    os.write(fd, b"bob's second part\\n")
except OSError as exc:
    print("write failed", exc.errno, flush=True)
else:
    print("written", flush=True)
try:
    os.close(fd)
except OSError as exc:
    print("close failed", exc.errno, flush=True)
""",
        ],
        cwd=m.root,
        env=m.env("bob"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert bob.stdout is not None
    assert bob.stdout.readline() == b"written\n"
    write_as(m, None, PLAN, "alice's v2")
    out, _ = bob.communicate(b"go\n", timeout=30)
    assert out.decode().splitlines() == [f"write failed {errno.EBUSY}", f"close failed {errno.EBUSY}"]
    info = m.ws.collab.conflict_record("bob", "plan.md")
    assert (info["current_version"], info["your_base"], info["your_content"]) == (2, 1, "bob's first part\n")
    assert m.path(PLAN).read_text("utf-8") == "alice's v2"


def test_C_3_mount_a_shell_redirect_whose_base_went_stale_exits_non_zero(mount: MountFactory) -> None:
    """``(slow; echo x) > f`` while another agent commits: the shell reports the failed write and exits non-zero
    (it ignores a failing close), and the file keeps the other agent's commit."""
    m = mount()
    write_as(m, None, PLAN, "v1")
    alice = subprocess.Popen(
        ["bash", "-c", f"cat {PLAN} > /dev/null; {{ echo opened >&2; read -r go; echo 'alice long write'; }} > {PLAN}"],
        cwd=m.root,
        env=m.env(None),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert alice.stderr is not None
    assert alice.stderr.readline() == b"opened\n"
    m.run(f"cat {PLAN} > /dev/null && echo 'bob quick' > {PLAN}", agent="bob", check=True)
    _, err = alice.communicate(b"go\n", timeout=30)
    assert alice.returncode != 0
    assert "Device or resource busy" in err.decode()
    assert m.path(PLAN).read_text("utf-8") == "bob quick\n"
    assert history(m)[-1][1] == "bob"
    assert m.ws.collab.conflict_record("alice", "plan.md")["current_content"] == "bob quick\n"


def test_C_3_mount_a_writer_whose_base_is_current_or_unchecked_is_not_refused(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "v1")
    lines = "".join(f"line {n}\n" for n in range(200))
    done = m.run(f"cat {PLAN} > /dev/null; for n in $(seq 0 199); do echo line $n; done > {PLAN}", agent="bob")
    assert done.returncode == 0, done.stderr
    assert m.path(PLAN).read_text("utf-8") == lines
    alice = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import os, sys
os.setxattr({PLAN!r}, "user.omx.expected_version", b"-1")
fd = os.open({PLAN!r}, os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"first\\n")
print("written", flush=True)
sys.stdin.readline()
os.write(fd, b"second\\n")
os.close(fd)
""",
        ],
        cwd=m.root,
        env=m.env(None),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert alice.stdout is not None
    assert alice.stdout.readline() == b"written\n"
    m.run(f"cat {PLAN} > /dev/null && echo 'bob again' > {PLAN}", agent="bob", check=True)
    alice.communicate(b"go\n", timeout=30)
    assert alice.returncode == 0
    assert m.path(PLAN).read_text("utf-8") == "first\nsecond\n"
    assert [entry[1] for entry in history(m)] == ["alice", "bob", "bob", "alice"]


def test_C_4_mount_recover_after_a_conflict(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "初稿")
    m.run(f"cat {PLAN}", agent="bob", check=True)
    write_as(m, None, PLAN, "Alice的修改")
    assert m.run(f"echo x > {PLAN}", agent="bob").returncode != 0
    assert m.run(f"cat {PLAN}", agent="bob", check=True).stdout.decode() == "Alice的修改"
    write_as(m, "bob", PLAN, "合并后的内容", message="合并Alice和Bob的修改", read=False)
    assert history(m)[-1] == (3, "bob", "合并Alice和Bob的修改")
    assert m.path(PLAN).read_text("utf-8") == "合并后的内容"


def test_C_5_mount_history_through_the_versions_directory(mount: MountFactory) -> None:
    m = mount()
    for text in ("one", "two", "three"):
        write_as(m, None, PLAN, text)
    entries = json.loads(m.path("collaborative/.versions/plan.md/history.json").read_text("utf-8"))
    assert [e["version"] for e in entries] == [1, 2, 3]
    assert all({"version", "author", "message", "timestamp"} <= set(e) for e in entries)
    assert m.path("collaborative/.versions/plan.md/v1.txt").read_text("utf-8") == "one"


def test_C_6_mount_rollback_is_a_new_version(mount: MountFactory) -> None:
    m = mount()
    for text in ("初稿", "two", "three"):
        write_as(m, None, PLAN, text)
    old = m.path("collaborative/.versions/plan.md/v1.txt").read_text("utf-8")
    write_as(m, None, PLAN, old, message="rollback to version 1")
    assert history(m)[-1] == (4, "alice", "rollback to version 1")
    assert m.path(PLAN).read_text("utf-8") == "初稿" and len(history(m)) == 4


def test_C_7_mount_missing_file(mount: MountFactory) -> None:
    m = mount()
    done = m.run(f"cat {CUR}/nonexistent.md")
    assert done.returncode != 0 and "No such file" in shell_errno(done)


def test_C_8_mount_expected_version_minus_one_skips_the_check(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "v1")
    write_as(m, None, PLAN, "v2")
    done = m.run(f"setfattr -n user.omx.expected_version -v -1 {PLAN} && echo mine > {PLAN}", agent="bob")
    assert done.returncode == 0, shell_errno(done)
    assert history(m)[-1][:2] == (3, "bob")


def test_conflict_between_two_daemons_on_one_store(mount: MountFactory) -> None:
    m = mount()
    m2 = m.second_mount(default="bob")
    write_as(m, None, PLAN, "v1")
    assert m2.run(f"cat {PLAN}", check=True).stdout == b"v1"  # bob, through the second daemon
    write_as(m, None, PLAN, "alice v2")
    done = m2.run(f"echo 'bob v2' > {PLAN}")
    assert done.returncode != 0 and "Device or resource busy" in shell_errno(done)
    assert m2.path(PLAN).read_text("utf-8") == "alice v2"
    assert m2.run(f"cat {PLAN} >/dev/null && echo 'bob v3' > {PLAN}").returncode == 0
    assert history(m)[-1][:2] == (3, "bob")
    assert m.path(PLAN).read_text("utf-8") == "bob v3\n"


def test_getfattr_dump(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "v1", message="first")
    done = m.run(f"getfattr -d {PLAN}", agent="bob", check=True)
    dump = done.stdout.decode()
    sha = m.ws.collab.history("plan.md")[-1].sha256
    for line in (
        'user.omx.owner="alice"',
        'user.omx.version="1"',
        'user.omx.author="alice"',
        f'user.omx.sha256="{sha}"',
        'user.omx.message="first"',
    ):
        assert line in dump
    # getfattr -d read user.omx.version: bob observed version 1 and may now write.
    assert m.run(f"echo bob > {PLAN}", agent="bob").returncode == 0
    done = m.run(f"setfattr -n user.omx.version -v 9 {PLAN}", agent="bob")
    assert "Permission denied" in shell_errno(done)


def test_reads_are_a_snapshot_for_the_whole_open(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "version one " * 1000)
    with open(m.path(PLAN), "rb") as f:
        head = f.read(12)
        m.run(f"cat {PLAN} > /dev/null; echo other > {PLAN}", agent="bob", check=True)
        rest = f.read()
    assert (head + rest).decode() == "version one " * 1000
    assert m.path(PLAN).read_text("utf-8") == "other\n"
    assert m.path(PLAN).stat().st_size == len("other\n")


def test_shell_writes_are_one_version_each(mount: MountFactory) -> None:
    """``>`` dup2s the file to stdout and closes it before writing: that close must not commit."""
    m = mount()
    m.run(f"echo one > {PLAN}; echo two >> {PLAN}; printf 'x' | tee -a {PLAN} > /dev/null", check=True)
    assert [v for v, _, _ in history(m)] == [1, 2, 3]
    assert m.path(PLAN).read_text("utf-8") == "one\ntwo\nx"
    # A file closed without a write is committed at its release, or before anyone opens it, whichever is first.
    assert m.run(f"touch {CUR}/empty.md && cat {CUR}/empty.md && echo ok", check=True).stdout == b"ok\n"
    assert history(m, "empty.md") == [(1, "alice", "write by alice")]
    m.run(f": > {CUR}/plan.md", check=True)
    poll(lambda: len(history(m)) == 4, what="the truncation's commit at release")
    assert m.path(PLAN).read_bytes() == b""


def test_delete_and_rename_are_refused(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "v1")
    for command in (f"rm {PLAN}", f"mv {PLAN} {CUR}/other.md", f"ln {PLAN} {CUR}/hard.md", f"ln -s plan.md {CUR}/s"):
        done = m.run(command)
        assert done.returncode != 0 and "Permission denied" in shell_errno(done), command
    assert os.listdir(m.path(CUR)) == ["plan.md"]


def test_directories_of_versioned_files(mount: MountFactory) -> None:
    m = mount()
    m.run(f"mkdir -p {CUR}/docs/drafts && echo a > {CUR}/docs/drafts/a.md", check=True)
    assert m.ws.collab.list() == ["docs/drafts/a.md"]
    assert "Directory not empty" in shell_errno(m.run(f"rmdir {CUR}/docs/drafts"))
    m.run(f"mkdir {CUR}/empty && rmdir {CUR}/empty", check=True)
    assert "Permission denied" in shell_errno(m.run("mkdir collaborative/elsewhere"))


def test_scratch_files_are_per_agent(mount: MountFactory) -> None:
    m = mount()
    m.run(f"echo swap > {CUR}/.plan.md.swp && echo tmp > {CUR}/notes.tmp", check=True)
    assert sorted(os.listdir(m.path(CUR))) == [".plan.md.swp", "notes.tmp"]
    assert m.run(f"ls -A {CUR}", agent="bob", check=True).stdout == b""
    assert m.ws.collab.list() == []
    m.run(f"rm {CUR}/.plan.md.swp {CUR}/notes.tmp", check=True)
    assert scratch_left(m) == []


def test_two_agents_have_their_own_swap_file_of_one_name(mount: MountFactory) -> None:
    m = mount()
    m.run(f"echo alice > {CUR}/.plan.md.swp", check=True)
    assert m.run(f"stat {CUR}/.plan.md.swp", agent="bob").returncode != 0
    m.run(f"set -o noclobber; echo bob > {CUR}/.plan.md.swp", agent="bob", check=True)
    assert m.path(f"{CUR}/.plan.md.swp").read_text("utf-8") == "alice\n"


# -- editors ----------------------------------------------------------------------------------------------------


def test_sed_i_makes_one_version(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "hello world\n")
    m.run(f"setfattr -n user.omx.message -v 'sed edit' {PLAN} && sed -i s/world/there/ {PLAN}", check=True)
    assert m.path(PLAN).read_text("utf-8") == "hello there\n"
    assert history(m) == [(1, "alice", "write by alice"), (2, "alice", "sed edit")]
    assert os.listdir(m.path(CUR)) == ["plan.md"] and scratch_left(m) == []
    # As another agent, with its own base.
    m.run(f"sed -i s/there/bob/ {PLAN}", agent="bob", check=True)
    assert history(m)[-1] == (3, "bob", "write by bob")
    assert scratch_left(m) == []


def test_omx_file_tool_save_makes_one_version(mount: MountFactory) -> None:
    """``omx``'s write tool saves through ``.<name>.XXXXXXXX.omx-tmp`` and a rename: one version, no stray file."""
    m = mount()
    write_as(m, None, PLAN, "v1\n")
    code = (  # read first: the read is bob's base version, as it is for any program
        f"from pathlib import Path; from agent.plan_run.tools.files import _atomic_write; p = Path({PLAN!r}); "
        "p.read_bytes(); _atomic_write(p, b'v2\\n')"
    )
    m.run([sys.executable, "-c", code], agent="bob", check=True)
    assert m.path(PLAN).read_text("utf-8") == "v2\n"
    assert [(v, who) for v, who, _ in history(m)] == [(1, "alice"), (2, "bob")]
    assert os.listdir(m.path(CUR)) == ["plan.md"] and scratch_left(m) == []


@needs_vim
def test_vim_ex_mode_makes_one_version(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "line one\n")
    m.run(f"vim -N -u NONE -i NONE -es -c '%s/one/two/' -c 'wq' {PLAN}", check=True)
    assert m.path(PLAN).read_text("utf-8") == "line two\n"
    assert [v for v, _, _ in history(m)] == [1, 2]
    assert os.listdir(m.path(CUR)) == ["plan.md"] and scratch_left(m) == []


@needs_vim
def test_vim_interactive_saves_twice_as_bob(mount: MountFactory) -> None:
    """vim in a terminal: swap file, backup by rename, one version per :w, nothing left after :q."""
    m = mount()
    write_as(m, None, PLAN, "line one\n")
    with Editor(m, f"vim -N -u NONE -i NONE {PLAN}", agent="bob") as vim:
        swap = Path(m.store, ".omxfs/scratch/bob", PLAN).with_name(".plan.md.swp")
        poll(swap.exists, what="vim's swap file")
        vim.keys(b"Aand more\x1b:w\r")
        poll(lambda: len(history(m)) == 2, what="the first save")
        vim.keys(b"otwo\x1b:w\r")
        poll(lambda: len(history(m)) == 3, what="the second save")
        vim.keys(b":q\r")
        assert vim.wait() == 0
    assert m.path(PLAN).read_text("utf-8") == "line oneand more\ntwo\n"
    assert history(m)[1:] == [(2, "bob", "write by bob"), (3, "bob", "write by bob")]
    assert os.listdir(m.path(CUR)) == ["plan.md"] and scratch_left(m) == []


@needs_vim
def test_vim_save_over_a_newer_version_is_refused(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "line one\n")
    with Editor(m, f"vim -N -u NONE -i NONE {PLAN}", agent="bob") as vim:
        poll(Path(m.store, ".omxfs/scratch/bob", CUR, ".plan.md.swp").exists, what="vim's swap file")
        write_as(m, None, PLAN, "alice was here\n")
        # vim sees the new mtime and asks "file changed since reading it, write anyway?": yes; the mount refuses.
        vim.keys(b"Abob\x1b:w\r")
        vim.expect(b"(y/n)")
        vim.keys(b"y")
        # vim's write, refused, then the conflict's record: 10 s was once too short on 2 CPUs shared with a model
        poll(m.path("collaborative/.conflicts/bob/plan.md.json").exists, timeout=30, what="the conflict")
        vim.keys(b"\r:q!\r")
        assert vim.wait() == 0
    assert m.path(PLAN).read_text("utf-8") == "alice was here\n" and len(history(m)) == 2
    assert os.listdir(m.path(CUR)) == ["plan.md"]


@needs_nano
def test_nano_makes_one_version(mount: MountFactory) -> None:
    m = mount()
    write_as(m, None, PLAN, "line one\n")
    m.run(f"cat {PLAN}", agent="bob", check=True)
    with Editor(m, f"nano {PLAN}", agent="bob") as nano:
        poll(Path(m.store, ".omxfs/scratch/bob", CUR, ".plan.md.swp").exists, what="nano's lock file")
        nano.keys(b"top line\r\x13")  # type, ^S saves
        poll(lambda: len(history(m)) == 2, what="nano's save")
        nano.keys(b"\x18")  # ^X exits
        assert nano.wait() == 0
    assert m.path(PLAN).read_text("utf-8") == "top line\nline one\n"
    assert history(m)[-1] == (2, "bob", "write by bob")
    assert os.listdir(m.path(CUR)) == ["plan.md"] and scratch_left(m) == []
