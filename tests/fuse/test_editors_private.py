"""Real tools in a private zone (SPEC §4: "editors, git, sqlite and Python tooling must work there").

Each tool runs as a real process through the mount, as the zone's owner; a few run as another agent too, and
must fail without changing anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fuse.conftest import Mount, poll


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")


@pytest.fixture
def m(mount: Callable[..., Mount]) -> Mount:
    return mount()


def test_vim_substitutes_and_writes(m: Mount) -> None:
    need("vim")
    m.path("agents/alice/notes.txt").write_text("apple\nbanana\n")
    m.run(["vim", "-Es", "-u", "NONE", "-c", "%s/a/o/g", "-c", "wq", "agents/alice/notes.txt"], check=True)
    assert (m.store / "agents/alice/notes.txt").read_text() == "opple\nbonono\n"
    assert sorted(os.listdir(m.store / "agents/alice")) == ["notes.txt"]  # no swap file left behind


def test_vim_with_backups_and_swap_files_as_configured_by_users(m: Mount) -> None:
    need("vim")
    m.path("agents/alice/cfg.ini").write_text("x=1\n")
    # backupskip: its default skips /tmp/*, where pytest puts the mount
    script = ["-c", "set backup writebackup backupcopy=no backupskip= swapfile", "-c", "s/1/2/", "-c", "wq"]
    m.run(["vim", "-Es", "-u", "NONE", *script, "agents/alice/cfg.ini"], check=True)
    assert (m.store / "agents/alice/cfg.ini").read_text() == "x=2\n"
    assert (m.store / "agents/alice/cfg.ini~").read_text() == "x=1\n"  # vim's backup, renamed aside


def test_vim_of_another_agent_cannot_write(m: Mount) -> None:
    need("vim")
    m.path("agents/alice/notes.txt").write_text("apple\n")
    done = m.run(["vim", "-Es", "-u", "NONE", "-c", "%s/a/o/g", "-c", "wq", "agents/alice/notes.txt"], agent="bob")
    assert done.returncode != 0
    assert (m.store / "agents/alice/notes.txt").read_text() == "apple\n"
    assert sorted(os.listdir(m.store / "agents/alice")) == ["notes.txt"]


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Callable[..., list[str]]]:
    """tmux on a private socket, to drive a full-screen editor as a user would; the server is killed after."""
    need("tmux")
    socket = tmp_path / "tmux.sock"

    def run(*args: str) -> list[str]:
        done = subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True, check=False)
        return done.stdout.splitlines() if done.returncode == 0 else []

    yield run
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False)


def screen(tmux: Callable[..., list[str]]) -> str:
    return "\n".join(tmux("capture-pane", "-p"))


@pytest.mark.parametrize(("agent", "saved"), [("alice", True), ("bob", False)])
def test_nano_edits_and_saves(m: Mount, tmux: Callable[..., list[str]], agent: str, saved: bool) -> None:
    need("nano")
    m.path("agents/alice/todo.txt").write_text("buy milk\n")
    tmux(
        "new-session", "-d", "-x", "100", "-y", "30", "-e", f"OMX_AGENT={agent}",
        "-c", str(m.path("agents/alice")), "nano --ignorercfiles todo.txt",
    )  # fmt: skip
    poll(lambda: "buy milk" in screen(tmux), what="nano to show the file")
    tmux("send-keys", "call mom, ")
    poll(lambda: "call mom, buy milk" in screen(tmux), what="the typed text")
    tmux("send-keys", "C-o")
    poll(lambda: "File Name to Write" in screen(tmux), what="nano's save prompt")
    tmux("send-keys", "Enter")
    if saved:
        poll(lambda: "Wrote 1 line" in screen(tmux), what="nano to report the save")
        tmux("send-keys", "C-x")
        poll(lambda: not tmux("list-sessions"), what="nano to exit")
        assert (m.store / "agents/alice/todo.txt").read_text() == "call mom, buy milk\n"
    else:
        poll(lambda: "Permission denied" in screen(tmux), what="nano to report the refusal")
        assert (m.store / "agents/alice/todo.txt").read_text() == "buy milk\n"
    assert sorted(os.listdir(m.store / "agents/alice")) == ["todo.txt"]


def test_sed_in_place(m: Mount) -> None:
    m.path("agents/alice/conf").write_text("debug=false\n")
    m.run(["sed", "-i", "s/false/true/", "agents/alice/conf"], check=True)
    assert (m.store / "agents/alice/conf").read_text() == "debug=true\n"
    m.run(["sed", "-i.bak", "s/true/maybe/", "agents/alice/conf"], check=True)
    assert (m.store / "agents/alice/conf").read_text() == "debug=maybe\n"
    assert (m.store / "agents/alice/conf.bak").read_text() == "debug=true\n"
    assert m.run(["sed", "-i", "s/maybe/no/", "agents/alice/conf"], agent="bob").returncode != 0
    assert (m.store / "agents/alice/conf").read_text() == "debug=maybe\n"
    assert sorted(os.listdir(m.store / "agents/alice")) == ["conf", "conf.bak"]


def test_git_init_add_commit(m: Mount) -> None:
    need("git")
    script = """
        set -e
        cd agents/alice
        git init -q repo && cd repo
        git config user.email alice@example.com && git config user.name alice
        printf 'print("hi")\\n' > main.py && mkdir -p pkg && echo x > pkg/mod.py
        git add -A && git commit -qm "first"
        echo y >> pkg/mod.py && git commit -qam "second"
        git mv main.py app.py && git commit -qm "rename"
        git gc -q
        git log --format=%s
        git status --porcelain
        git fsck --no-progress
    """
    done = m.run(textwrap.dedent(script), check=True, timeout=60)
    assert done.stdout.decode().split("\n")[:3] == ["rename", "second", "first"]
    assert (m.store / "agents/alice/repo/.git/HEAD").is_file()
    clone = m.store.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(m.store / "agents/alice/repo"), str(clone)], check=True)
    assert (clone / "pkg/mod.py").read_text() == "x\ny\n"  # the store holds a valid repository


def test_sqlite_create_insert_select(m: Mount) -> None:
    need("sqlite3")
    db = "agents/alice/data.db"
    m.run(["sqlite3", db, "create table t(x integer); insert into t values (1), (2), (3);"], check=True)
    assert m.run(["sqlite3", db, "select sum(x) from t;"], check=True).stdout == b"6\n"
    assert m.run(["sqlite3", db, "insert into t values (5);"], agent="bob").returncode != 0
    assert m.run(["sqlite3", db, "select count(*) from t;"], agent="bob", check=True).stdout == b"3\n"
    # WAL mode: shared-memory index (-shm, mmap'd MAP_SHARED) and write-ahead log files beside the database.
    # (A reader without write access cannot open a WAL database, on any filesystem: SQLite must create them.)
    wal = m.run(["sqlite3", db, "pragma journal_mode=wal; insert into t values (4); select sum(x) from t;"], check=True)
    assert wal.stdout == b"wal\n10\n"
    assert m.run(["sqlite3", db, "pragma integrity_check;"], check=True).stdout == b"ok\n"


def test_python_tempfile_then_replace(m: Mount) -> None:
    code = """
        import os, tempfile
        target = "agents/alice/state.json"
        for i in range(3):
            with tempfile.NamedTemporaryFile("w", dir="agents/alice", delete=False, suffix=".tmp") as f:
                f.write('{"n": %d}' % i)
                f.flush()
                os.fsync(f.fileno())
            os.replace(f.name, target)
        print(open(target).read())
    """
    assert m.py(textwrap.dedent(code)).stdout == b'{"n": 2}\n'
    assert sorted(os.listdir(m.store / "agents/alice")) == ["state.json"]
    refused = m.py(textwrap.dedent(code), agent="bob", check=False)
    assert refused.returncode != 0 and b"PermissionError" in refused.stderr
    assert (m.store / "agents/alice/state.json").read_text() == '{"n": 2}'
