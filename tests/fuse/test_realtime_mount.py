"""The realtime zone through real mounts: seed 001 modules D-I re-run with plain file I/O, editors, two daemons.

The test process is the mount's default agent (alice); other identities are real processes with ``OMX_AGENT``.
Concurrent writers are separate processes that each read, wait for the others at a barrier (files in a
directory outside the mount), then write: the case the realtime zone exists for.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from omxfs.crdt import RGA, Document, LWWRegister, PNCounter
from tests.fuse.conftest import Mount, poll

BOARD = {
    "title": "lww_register",
    "body": "rga",
    "members": "or_set",
    "settings": "lww_map",
    "view_count": "pn_counter",
}
AGENTS = ("alice", "bob", "charlie")
MountFactory = Callable[..., Mount]


def new_board(m: Mount, doc: str = "board", schema: dict[str, str] = BOARD) -> Path:
    d = m.path(f"realtime/{doc}")
    d.mkdir()
    (d / ".schema.json").write_text(json.dumps(schema))
    return d


@pytest.fixture
def m(mount: MountFactory) -> Mount:
    return mount(agents=AGENTS, default="alice")


def close_error(path: Path, data: bytes, flags: int = os.O_WRONLY | os.O_TRUNC) -> int | None:
    """Write ``data`` and close; the errno of the failure (write or close), None if it succeeded."""
    fd = os.open(path, flags)
    try:
        os.write(fd, data)
    except OSError as exc:
        os.close(fd)
        return exc.errno
    try:
        os.close(fd)
    except OSError as exc:
        return exc.errno
    return None


def concurrently(m: Mount, tmp: Path, edits: dict[str, str]) -> None:
    """Each agent's process reads ``path``, waits at a barrier until all have read, then writes ``f(text)``.

    ``edits`` maps an agent to ``"path|python expression of text"``.
    """
    barrier = tmp / "barrier"
    shutil.rmtree(barrier, ignore_errors=True)
    barrier.mkdir()
    procs = []
    for agent, edit in edits.items():
        path, expr = edit.split("|", 1)
        code = textwrap.dedent(f"""
            import os, sys, time
            text = open({path!r}, encoding="utf-8").read()
            open(os.path.join({str(barrier)!r}, {agent!r}), "w").close()
            deadline = time.monotonic() + 20
            while len(os.listdir({str(barrier)!r})) < {len(edits)}:
                assert time.monotonic() < deadline, "barrier timeout"
                time.sleep(0.005)
            with open({path!r}, "w", encoding="utf-8") as f:
                f.write({expr})
        """)
        procs.append(
            subprocess.Popen([sys.executable, "-c", code], cwd=m.root, env=m.env(agent), stderr=subprocess.PIPE)
        )
    for p in procs:
        _, err = p.communicate(timeout=30)
        assert p.returncode == 0, err.decode()


# -- module I: documents ----------------------------------------------------------------------------------------


def test_I_1_mount_mkdir_and_schema_create_a_document(m: Mount) -> None:
    d = m.path("realtime/board")
    d.mkdir()
    assert sorted(os.listdir(m.path("realtime"))) == [".crdt_state", "board"]
    assert os.listdir(d) == []
    (d / ".schema.json").write_text(json.dumps(BOARD))
    assert m.ws.realtime.load("board").schema == BOARD
    assert sorted(os.listdir(d)) == sorted([".schema.json", ".snapshot.json", *BOARD])
    assert json.loads((d / ".schema.json").read_text()) == BOARD
    for name, type_name in BOARD.items():
        assert os.getxattr(d / name, "user.omx.type") == type_name.encode()
        assert os.getxattr(d / name, "user.omx.owner") == b"shared"
    with pytest.raises(PermissionError):
        (d / ".schema.json").write_text('{"x": "rga"}')  # fixed once created
    with pytest.raises(FileExistsError):
        d.mkdir()
    assert m.ws.realtime.load("board").schema == BOARD
    assert m.run("ls realtime/board/.crdt_state 2>/dev/null; ls realtime/.crdt_state", agent="bob").stdout == (
        b"board.crdt.json\n"
    )


def test_I_1_mount_bad_schema_is_EINVAL_and_creates_nothing(m: Mount) -> None:
    d = m.path("realtime/doc")
    d.mkdir()
    assert close_error(d / ".schema.json", b'{"title": "text"}', os.O_WRONLY | os.O_CREAT | os.O_TRUNC) == errno.EINVAL
    assert close_error(d / ".schema.json", b"not json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC) == errno.EINVAL
    assert m.ws.realtime.list() == [] and os.listdir(d) == []
    with pytest.raises(OSError) as info:
        m.path("realtime/bad name").mkdir()
    assert info.value.errno == errno.EINVAL
    d.rmdir()
    assert os.listdir(m.path("realtime")) == [".crdt_state"]


def test_I_2_mount_snapshot(m: Mount) -> None:
    d = new_board(m)
    (d / "title").write_text("看板")
    (d / "body").write_text("描述")
    (d / "members").write_text("alice\n")
    m.run("echo bob >> realtime/board/members", agent="bob", check=True)
    (d / "view_count").write_text("5")
    text = (d / ".snapshot.json").read_text()
    snap = json.loads(text)
    assert snap == {
        "doc_id": "board",
        "fields": {"body": "描述", "members": ["alice", "bob"], "settings": {}, "title": "看板", "view_count": 5},
        "field_types": BOARD,
    }
    assert text == json.dumps(snap, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    assert os.stat(d / ".snapshot.json").st_size == len(text.encode())
    with pytest.raises(PermissionError):
        (d / ".snapshot.json").write_text("{}")


def test_I_4_mount_unknown_field(m: Mount) -> None:
    d = new_board(m)
    with pytest.raises(OSError) as info:
        (d / "color").write_text("red")
    assert info.value.errno == errno.EINVAL
    assert not (d / "color").exists()
    done = m.run("cat realtime/board/color")
    assert done.returncode != 0 and b"No such file" in done.stderr
    done = m.run("cat realtime/nonexistent/.snapshot.json")
    assert done.returncode != 0 and b"No such file" in done.stderr


def test_I_6_mount_unmount_and_remount_keep_the_values(m: Mount) -> None:
    d = new_board(m)
    (d / "title").write_text("看板")
    (d / "view_count").write_text("5")
    before = (d / ".snapshot.json").read_text()
    assert m.unmount() == 0
    assert (m.store / "realtime/.crdt_state/board.crdt.json").is_file()
    again = m.second_mount(default="bob")
    assert (again.path("realtime/board/title")).read_text() == "看板"
    assert (again.path("realtime/board/view_count")).read_text() == "5\n"
    assert again.path("realtime/board/.snapshot.json").read_text() == before


# -- modules D-H: the field types -------------------------------------------------------------------------------


def test_D_1_mount_register_set_and_read(m: Mount) -> None:
    d = new_board(m)
    (d / "title").write_text("第一版标题")
    assert (d / "title").read_text() == "第一版标题"
    assert os.stat(d / "title").st_size == len("第一版标题".encode())


def test_D_2_mount_last_writer_wins(m: Mount) -> None:
    d = new_board(m)
    (d / "title").write_text("Alice的标题")
    m.run("printf 'Bob的标题' > realtime/board/title", agent="bob", check=True)
    assert (d / "title").read_text() == "Bob的标题"


def test_E_1_mount_rga_from_empty(m: Mount) -> None:
    d = new_board(m)
    assert (d / "body").read_text() == ""
    (d / "body").write_text("Hello")
    assert (d / "body").read_text() == "Hello" and os.stat(d / "body").st_size == 5


def test_a_field_emptied_by_O_TRUNC_alone_is_empty_right_after_the_close(m: Mount) -> None:
    """``open(O_TRUNC)`` and ``close`` with nothing written commit at the release, which the kernel sends after
    ``close()`` has returned: the program's next read, stat and snapshot must see the empty value all the same."""
    d = new_board(m)
    empty: dict[str, object] = {"body": "", "members": []}
    stale = []
    for i in range(100):
        for field in empty:
            text = f"line {i}\n"
            (d / field).write_text(text)
            assert (d / field).read_text() == text
            os.close(os.open(d / field, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
            read, size = (d / field).read_text(), os.stat(d / field).st_size
            snapshot = json.loads((d / ".snapshot.json").read_text())["fields"][field]
            if (read, size, snapshot) != ("", 0, empty[field]):
                stale.append((i, field, read, size, snapshot))
    assert stale == []


def test_E_5_mount_two_identities_edit_body_concurrently(m: Mount, tmp_path: Path) -> None:
    d = new_board(m)
    (d / "body").write_text("AC")
    body = "realtime/board/body"
    concurrently(m, tmp_path, {"alice": f"{body}|text[:1] + 'B' + text[1:]", "bob": f"{body}|text + 'D'"})
    assert (d / "body").read_text() == "ABCD"


def test_E_5_mount_concurrent_line_edits(m: Mount, tmp_path: Path) -> None:
    d = new_board(m)
    (d / "body").write_text("".join(f"line {i}\n" for i in range(10)))
    body = "realtime/board/body"
    concurrently(
        m,
        tmp_path,
        {
            "alice": f"{body}|text.replace('line 2', 'LINE TWO (alice)')",
            "bob": f"{body}|text.replace('line 7\\n', '')",
            "charlie": f"{body}|'# charlie\\n' + text + 'end\\n'",
        },
    )
    expected = ["# charlie"] + [f"line {i}" for i in range(10) if i != 7] + ["end"]
    expected[3] = "LINE TWO (alice)"
    assert (d / "body").read_text() == "".join(f"{line}\n" for line in expected)


def test_F_4_mount_add_wins(m: Mount) -> None:
    d = new_board(m)
    m.run("cat realtime/board/members", agent="bob", check=True)  # bob's base: the empty set
    (d / "members").write_text("important\n")  # alice adds (T0)
    assert (d / "members").read_text() == "important\n"  # alice sees it
    m.run("echo important > realtime/board/members", agent="bob", check=True)  # bob adds it, concurrently
    (d / "members").write_text("")  # alice removes what she saw
    assert (d / "members").read_text() == "important\n"


def test_G_2_mount_concurrent_keys(m: Mount, tmp_path: Path) -> None:
    d = new_board(m)
    (d / "settings").write_text('{"theme": "dark", "lang": "zh"}')
    path = "realtime/board/settings"
    concurrently(
        m,
        tmp_path,
        {
            "alice": f"{path}|text.replace('dark', 'light')",
            "bob": f"{path}|text.replace('zh', 'en')",
        },
    )
    assert json.loads((d / "settings").read_text()) == {"theme": "light", "lang": "en"}


def test_or_set_concurrent_lines(m: Mount, tmp_path: Path) -> None:
    d = new_board(m)
    (d / "members").write_text("alice\nbob\n")
    path = "realtime/board/members"
    concurrently(
        m,
        tmp_path,
        {"alice": f"{path}|text + 'carol\\n'", "bob": f"{path}|text.replace('alice\\n', '') + 'dave\\n'"},
    )
    assert (d / "members").read_text() == "bob\ncarol\ndave\n"


def test_H_3_mount_every_increment_counts(m: Mount, tmp_path: Path) -> None:
    d = new_board(m)
    path = "realtime/board/view_count"
    concurrently(m, tmp_path, {"alice": f"{path}|'+5'", "bob": f"{path}|'+3'", "charlie": f"{path}|'+7'"})
    assert (d / "view_count").read_text() == "15\n"
    procs = [subprocess.Popen(["bash", "-c", f"echo +1 >> {path}"], cwd=m.root, env=m.env(agent)) for agent in AGENTS]
    assert [p.wait(30) for p in procs] == [0, 0, 0]
    assert (d / "view_count").read_text() == "18\n"
    m.run(f"cat {path} >/dev/null && echo 20 > {path}", agent="bob", check=True)  # absolute: 20 - 18 more
    assert (d / "view_count").read_text() == "20\n"


# -- bad writes, removals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "data"),
    [
        ("view_count", b"abc\n"),
        ("settings", b"{not json"),
        ("body", b"\xff\xfe broken"),
        ("members", b"caf\xc3\n"),
    ],
)
def test_mount_bad_writes_fail_with_EINVAL_at_close_and_change_nothing(m: Mount, field: str, data: bytes) -> None:
    d = new_board(m)
    (d / "body").write_text("keep")
    (d / "view_count").write_text("+2")
    state = m.store / "realtime/.crdt_state/board.crdt.json"
    before = state.read_bytes()
    assert close_error(d / field, data) == errno.EINVAL
    assert state.read_bytes() == before
    assert "EINVAL" in m.log()


def test_mount_fields_cannot_be_removed(m: Mount) -> None:
    d = new_board(m)
    with pytest.raises(PermissionError):
        (d / "title").unlink()
    with pytest.raises(PermissionError):
        (d / ".snapshot.json").unlink()
    assert m.run("rm -rf realtime/board").returncode != 0
    assert sorted(os.listdir(d)) == sorted([".schema.json", ".snapshot.json", *BOARD])


# -- .crdt_state ------------------------------------------------------------------------------------------------


def test_mount_state_file_merges(m: Mount) -> None:
    d = new_board(m)
    (d / "body").write_text("AC")
    state = m.path("realtime/.crdt_state/board.crdt.json")
    assert state.read_bytes() == (m.store / "realtime/.crdt_state/board.crdt.json").read_bytes()
    remote = Document.from_json(json.loads(state.read_text()))
    remote.typed("body", RGA).insert(2, "D", "bob")  # a replica elsewhere
    remote.typed("view_count", PNCounter).add("bob", 3)
    (d / "body").write_text("ABC")  # meanwhile, here
    m.run(["cp", "/dev/stdin", "realtime/.crdt_state/board.crdt.json"], agent="bob", check=True, input=b"")
    assert (d / "body").read_text() == "ABC"  # an empty state is refused, nothing changed
    m.run(
        ["cp", "/dev/stdin", "realtime/.crdt_state/board.crdt.json"],
        agent="bob",
        check=True,
        input=json.dumps(remote.to_json()).encode(),
    )
    assert (d / "body").read_text() == "ABCD" and (d / "view_count").read_text() == "3\n"


def test_mount_a_state_with_another_agents_operations_is_EACCES_and_logged(m: Mount) -> None:
    d = new_board(m)
    (d / "title").write_text("alice's title")
    state = m.path("realtime/.crdt_state/board.crdt.json")
    forged = Document.from_json(json.loads(state.read_text()))
    forged.typed("title", LWWRegister).set("forged", "alice")
    forged.typed("view_count", PNCounter).add("alice", 1_000_000)
    before = (m.store / "realtime/.crdt_state/board.crdt.json").read_bytes()
    done = m.run(
        ["cp", "/dev/stdin", "realtime/.crdt_state/board.crdt.json"],
        agent="bob",
        input=json.dumps(forged.to_json()).encode(),
    )
    assert done.returncode != 0 and b"Permission denied" in done.stderr
    assert (d / "title").read_text() == "alice's title" and (d / "view_count").read_text() == "0\n"
    assert (m.store / "realtime/.crdt_state/board.crdt.json").read_bytes() == before
    assert [line for line in m.log().splitlines() if "agent=bob" in line and "errno=EACCES" in line]


def test_mount_state_file_creates_a_new_document(m: Mount) -> None:
    doc = Document("notes", {"text": "rga"})
    doc.typed("text", RGA).insert(0, "hello", "alice")  # the writer's own operations (the mount acts as alice)
    m.path("realtime/.crdt_state/notes.crdt.json").write_text(json.dumps(doc.to_json()))
    assert m.path("realtime/notes/text").read_text() == "hello"
    assert close_error(m.path("realtime/.crdt_state/notes.crdt.json"), b"[1, 2]") == errno.EINVAL
    assert m.path("realtime/notes/text").read_text() == "hello"


# -- editors ----------------------------------------------------------------------------------------------------


def vim(
    m: Mount, path: str, commands: list[str], agent: str | None = None, umask: int = 0o022
) -> subprocess.CompletedProcess[bytes]:
    """vim as a user runs it (defaults.vim, swap files), scripted; 'y' answers "file changed, write anyway?".

    With umask 0 vim's probe file ``4913`` gets the field's mode, so vim saves by renaming the field to
    ``body~`` and writing a new ``body``; otherwise it copies the field to ``body~`` and rewrites it in place.
    """
    home = m.root.parent / "home"
    home.mkdir(exist_ok=True)
    args = ["vim", "-N", "-i", "NONE", "-c", "set backupskip=", "-c", 'au FileChangedShell * let v:fcs_choice=""']
    for c in commands:
        args += ["-c", c]
    env = {**m.env(agent), "HOME": str(home), "TERM": "dumb"}
    return subprocess.run(
        [*args, path],
        cwd=m.root,
        env=env,
        input=b"y\n",
        capture_output=True,
        timeout=30,
        check=False,
        preexec_fn=lambda: os.umask(umask),
    )


@pytest.mark.skipif(shutil.which("vim") is None, reason="vim is not installed")
@pytest.mark.parametrize(("settings", "umask"), [("", 0o022), ("", 0), ("set backupcopy=yes", 0o022)])
def test_vim_edit_merges_with_a_concurrent_edit(m: Mount, settings: str, umask: int) -> None:
    d = new_board(m)
    (d / "body").write_text("one\ntwo\nthree\n")
    bob = f"{sys.executable} -c \"p='realtime/board/body'; t=open(p).read(); open(p, 'w').write(t + 'four (bob)\\n')\""
    done = vim(
        m,
        "realtime/board/body",
        [settings or "set backupcopy&", f"silent !OMX_AGENT=bob {bob}", "%s/two/TWO (alice)/", "w", "q"],
        umask=umask,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert (d / "body").read_text() == "one\nTWO (alice)\nthree\nfour (bob)\n"
    assert sorted(os.listdir(d)) == sorted([".schema.json", ".snapshot.json", *BOARD])  # no swap, no backup left


@pytest.mark.skipif(shutil.which("vim") is None, reason="vim is not installed")
def test_vim_bad_counter_write_is_refused(m: Mount) -> None:
    d = new_board(m)
    (d / "view_count").write_text("7")
    done = vim(m, "realtime/board/view_count", ["s/7/seven/", "w", "q!"])
    assert b"seven" not in (d / "view_count").read_bytes() and (d / "view_count").read_text() == "7\n"
    assert done.returncode in (0, 1)


def test_sed_in_place_is_a_commit(m: Mount) -> None:
    d = new_board(m)
    (d / "members").write_text("alice\nbob\n")
    m.run("sed -i 's/bob/carol/' realtime/board/members", agent="bob", check=True)
    assert (d / "members").read_text() == "alice\ncarol\n"
    assert sorted(os.listdir(d)) == sorted([".schema.json", ".snapshot.json", *BOARD])


# -- two daemons ------------------------------------------------------------------------------------------------


def test_two_daemons_on_one_store_see_each_other(m: Mount) -> None:
    d = new_board(m)
    other = m.second_mount(default="bob")
    (d / "body").write_text("from alice\n")
    there = other.path("realtime/board/body")
    poll(lambda: there.read_text() == "from alice\n", timeout=1.0, what="bob's daemon to see alice's edit")
    there.write_text("from alice\nfrom bob\n")
    poll(lambda: (d / "body").read_text() == "from alice\nfrom bob\n", timeout=1.0, what="alice's view")
    poll(lambda: os.stat(d / "body").st_size == len("from alice\nfrom bob\n"), timeout=1.0, what="the size")
    poll(lambda: "board" in os.listdir(other.path("realtime")), timeout=1.0, what="the document listed")


def test_two_daemons_acting_as_one_agent_lose_no_operation(m: Mount) -> None:
    """Two daemons serving alice at once (two machines, two agent views) are two writers: no lost increment."""
    new_board(m)
    other = m.second_mount(default="alice")
    rounds = 25
    script = (
        "for i in $(seq {n}); do echo +1 >> realtime/board/view_count; echo {tag}$i >> realtime/board/members; done"
    )
    procs = [
        subprocess.Popen(
            ["bash", "-c", script.format(n=rounds, tag=tag)],
            cwd=mount.root,
            env=mount.env(None),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for mount, tag in ((m, "a"), (other, "b"))
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    expected = sorted(f"{tag}{i}" for tag in "ab" for i in range(1, rounds + 1))
    for view in (m, other):
        poll(lambda view=view: view.path("realtime/board/view_count").read_text() == f"{2 * rounds}\n", timeout=2.0)
        assert sorted(view.path("realtime/board/members").read_text().split()) == expected
    state = json.loads((m.store / "realtime/.crdt_state/board.crdt.json").read_text())
    assert len(state["fields"]["view_count"]["p"]) == 2  # each daemon its own replica of alice


def test_save_by_renaming_the_original_away(m: Mount) -> None:
    """emacs (and vim when its probe passes): rename the file to a backup, write a new one, drop the backup."""
    d = new_board(m)
    (d / "body").write_text("one\ntwo\n")
    code = textwrap.dedent("""
        import os, subprocess, sys
        body = "realtime/board/body"
        loaded = open(body).read()
        bob = "p = 'realtime/board/body'; open(p, 'w').write(open(p).read() + 'bob\\\\n')"
        subprocess.run([sys.executable, "-c", bob], env={**os.environ, "OMX_AGENT": "bob"}, check=True)
        os.rename(body, body + "~")
        assert "body" in os.listdir("realtime/board"), "a field cannot go away"
        with open(body, "w") as f:
            f.write(loaded.replace("two", "TWO"))
        os.unlink(body + "~")
    """)
    m.py(code)
    assert (d / "body").read_text() == "one\nTWO\nbob\n"
    assert sorted(os.listdir(d)) == sorted([".schema.json", ".snapshot.json", *BOARD])
