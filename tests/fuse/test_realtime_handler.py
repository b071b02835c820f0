"""The realtime zone handler called directly (no mount): every rule of SPEC §5 as the ops layer would drive it.

A program's ``open(); write(); close()`` is ``handler.open`` (or ``create``), ``handle.write``, ``handle.flush``
and ``handle.release``, which is what the ops layer calls; the errno a program would see is ``exc.errno``.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import PurePosixPath

import pytest

from omxfs.crdt import RGA, Document, LWWRegister, PNCounter
from omxfs.errors import OmxError
from omxfs.fuse.zones.base import AttrChanges, Caller, Handle
from omxfs.fuse.zones.realtime import RealtimeHandler
from omxfs.store import Workspace

BOARD = {
    "title": "lww_register",
    "body": "rga",
    "members": "or_set",
    "settings": "lww_map",
    "view_count": "pn_counter",
}
RD, WR, RW = os.O_RDONLY, os.O_WRONLY | os.O_TRUNC, os.O_RDWR


def who(agent: str = "alice", pid: int = 4242) -> Caller:
    return Caller(agent, 1000, 1000, pid)


def P(rel: str) -> PurePosixPath:
    return PurePosixPath("realtime", rel) if rel else PurePosixPath("realtime")


@pytest.fixture
def rt(ws: Workspace) -> RealtimeHandler:
    return RealtimeHandler(ws)


@pytest.fixture
def board(rt: RealtimeHandler) -> RealtimeHandler:
    make(rt, "board", BOARD)
    return rt


def make(rt: RealtimeHandler, doc: str, schema: dict[str, str], agent: str = "alice") -> None:
    rt.mkdir(who(agent), P(doc), 0o755)
    h = rt.create(who(agent), P(f"{doc}/.schema.json"), 0o644, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    h.write(0, json.dumps(schema).encode())
    close(h)


def close(h: Handle) -> None:
    try:
        h.flush()
    finally:
        h.release()


# Reads and writes are made by different processes by default (``cat f`` then ``echo x > f``); the editor tests
# use one process for both, as an editor does.
READER, WRITER = 7001, 7002


def read(rt: RealtimeHandler, rel: str, agent: str = "alice", pid: int = READER) -> str:
    h = rt.open(who(agent, pid), P(rel), RD)
    try:
        return h.read(0, 1 << 20).decode()
    finally:
        h.release()


def write(
    rt: RealtimeHandler, rel: str, data: str | bytes, agent: str = "alice", flags: int = WR, pid: int = WRITER
) -> None:
    h = rt.open(who(agent, pid), P(rel), flags)
    h.write(0, data.encode() if isinstance(data, str) else data)
    close(h)


def errno_of(fn: object, *args: object) -> int:
    with pytest.raises(OmxError) as info:
        fn(*args)  # type: ignore[operator]
    return info.value.errno


def state_bytes(ws: Workspace, doc: str = "board") -> bytes:
    return (ws.root / f"realtime/.crdt_state/{doc}.crdt.json").read_bytes()


# -- documents: mkdir, .schema.json, listings -------------------------------------------------------------------


def test_I_1_mkdir_then_schema_creates_the_document(rt: RealtimeHandler, ws: Workspace) -> None:
    rt.mkdir(who(), P("board"), 0o755)
    assert rt.listdir(who(), P("")) == [".crdt_state", "board"]
    assert rt.getattr(P("board")).is_dir and rt.listdir(who(), P("board")) == []
    assert not ws.realtime.exists("board")
    h = rt.create(who(), P("board/.schema.json"), 0o644, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    h.write(0, json.dumps(BOARD).encode())
    assert rt.getattr(P("board/.schema.json")).size == len(json.dumps(BOARD))  # staged, visible
    close(h)
    assert ws.realtime.load("board").schema == BOARD
    assert rt.listdir(who("bob"), P("board")) == [".schema.json", ".snapshot.json", *sorted(BOARD)]
    assert json.loads(read(rt, "board/.schema.json")) == BOARD
    assert rt.getattr(P("board/.schema.json")).mode & 0o777 == 0o444
    for name, type_name in BOARD.items():
        assert rt.getxattr(who(), P(f"board/{name}"), "user.omx.type") == type_name.encode()


def test_schema_is_fixed_after_creation(board: RealtimeHandler, ws: Workspace) -> None:
    assert errno_of(board.open, who(), P("board/.schema.json"), WR) == errno.EACCES
    assert errno_of(board.create, who(), P("board/.schema.json"), 0o644, WR) == errno.EACCES
    assert errno_of(board.mkdir, who(), P("board"), 0o755) == errno.EEXIST
    assert ws.realtime.load("board").schema == BOARD


def test_a_creation_that_loses_the_race_fails_with_EEXIST(rt: RealtimeHandler, ws: Workspace) -> None:
    rt.mkdir(who(), P("doc"), 0o755)
    first = rt.create(who(), P("doc/.schema.json"), 0o644, WR)
    second = rt.create(who("bob"), P("doc/.schema.json"), 0o644, WR)
    first.write(0, b'{"a": "rga"}')
    second.write(0, b'{"b": "rga"}')
    close(first)
    assert errno_of(second.flush) == errno.EEXIST
    second.release()
    assert ws.realtime.load("doc").schema == {"a": "rga"}


@pytest.mark.parametrize(
    "schema",
    [b"not json", b'["title"]', b'{"title": "text"}', b"{}", b'{".hidden": "rga"}', b'{"t": "rga"', b"\xff{}"],
)
def test_bad_schema_is_EINVAL_and_creates_nothing(rt: RealtimeHandler, ws: Workspace, schema: bytes) -> None:
    rt.mkdir(who(), P("doc"), 0o755)
    h = rt.create(who(), P("doc/.schema.json"), 0o644, WR)
    h.write(0, schema)
    assert errno_of(h.flush) == errno.EINVAL
    h.release()
    assert not ws.realtime.exists("doc") and ws.realtime.list() == []
    assert rt.listdir(who(), P("doc")) == []  # still pending: try again
    make_schema = rt.create(who(), P("doc/.schema.json"), 0o644, WR)
    make_schema.write(0, b'{"t": "rga"}')
    close(make_schema)
    assert ws.realtime.load("doc").schema == {"t": "rga"}


def test_pending_directories(rt: RealtimeHandler, ws: Workspace) -> None:
    assert errno_of(rt.mkdir, who(), P("bad name"), 0o755) == errno.EINVAL
    assert errno_of(rt.mkdir, who(), P(".crdt_state"), 0o755) == errno.EEXIST
    rt.mkdir(who(), P("draft"), 0o755)
    assert errno_of(rt.mkdir, who("bob"), P("draft"), 0o755) == errno.EEXIST
    assert rt.getxattr(who("bob"), P("draft"), "user.omx.owner") == b"alice"
    assert errno_of(rt.create, who(), P("draft/title"), 0o644, WR) == errno.EINVAL  # no schema yet
    assert errno_of(rt.mkdir, who(), P("draft/sub"), 0o755) == errno.EACCES
    rt.rmdir(who(), P("draft"))
    assert rt.listdir(who(), P("")) == [".crdt_state"]
    assert errno_of(rt.getattr, P("draft")) == errno.ENOENT
    assert errno_of(rt.create, who(), P("nodoc/.schema.json"), 0o644, WR) == errno.ENOENT


def test_nothing_else_can_be_created_at_the_top(rt: RealtimeHandler) -> None:
    assert errno_of(rt.create, who(), P("notes.txt"), 0o644, WR) == errno.EACCES
    assert errno_of(rt.create, who(), P(".crdt_state/junk.txt"), 0o644, WR) == errno.EACCES
    assert errno_of(rt.symlink, who(), P("link"), b"/etc") == errno.EACCES


def test_I_2_snapshot_is_pretty_sorted_and_read_only(board: RealtimeHandler, ws: Workspace) -> None:
    write(board, "board/title", "看板")
    write(board, "board/body", "描述")
    write(board, "board/members", "alice\nbob\n")
    write(board, "board/view_count", "5")
    text = read(board, "board/.snapshot.json")
    snap = json.loads(text)
    assert snap == {
        "doc_id": "board",
        "fields": {"body": "描述", "members": ["alice", "bob"], "settings": {}, "title": "看板", "view_count": 5},
        "field_types": BOARD,
    }
    assert text == json.dumps(snap, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    assert board.getattr(P("board/.snapshot.json")).size == len(text.encode())
    assert errno_of(board.open, who(), P("board/.snapshot.json"), os.O_WRONLY) == errno.EACCES
    assert errno_of(board.unlink, who(), P("board/.snapshot.json")) == errno.EACCES


# -- fields -----------------------------------------------------------------------------------------------------


def test_D_1_register_reads_back_exactly(board: RealtimeHandler) -> None:
    write(board, "board/title", "第一版标题")
    assert read(board, "board/title") == "第一版标题"
    attr = board.getattr(P("board/title"))
    assert attr.size == len("第一版标题".encode()) and not attr.stable


def test_D_2_last_writer_wins_on_a_register(board: RealtimeHandler) -> None:
    write(board, "board/title", "Alice的标题", "alice")
    write(board, "board/title", "Bob的标题", "bob")
    assert read(board, "board/title") == "Bob的标题"


def test_E_1_rga_from_empty(board: RealtimeHandler) -> None:
    write(board, "board/body", "Hello")
    assert read(board, "board/body") == "Hello"


def test_E_5_concurrent_inserts_both_kept(board: RealtimeHandler) -> None:
    write(board, "board/body", "AC")
    assert read(board, "board/body", "alice") == read(board, "board/body", "bob") == "AC"
    write(board, "board/body", "ABC", "alice")
    write(board, "board/body", "ACD", "bob")
    assert read(board, "board/body") == "ABCD"


def test_F_4_add_wins_over_a_concurrent_remove(board: RealtimeHandler) -> None:
    assert read(board, "board/members", "bob") == ""  # bob's base: the empty set
    write(board, "board/members", "important\n", "alice")
    assert read(board, "board/members", "alice") == "important\n"
    write(board, "board/members", "important\n", "bob")  # bob adds it too, not knowing alice's add
    write(board, "board/members", "", "alice")  # alice removes the one she saw
    assert read(board, "board/members") == "important\n"


def test_G_2_per_key_merge(board: RealtimeHandler) -> None:
    write(board, "board/settings", '{"theme": "dark", "lang": "zh"}')
    read(board, "board/settings", "alice")
    read(board, "board/settings", "bob")
    write(board, "board/settings", '{"theme": "light", "lang": "zh"}', "alice")
    write(board, "board/settings", '{"theme": "dark", "lang": "en"}', "bob")
    assert json.loads(read(board, "board/settings")) == {"theme": "light", "lang": "en"}
    assert read(board, "board/settings") == '{\n  "lang": "en",\n  "theme": "light"\n}\n'


def test_H_3_every_increment_counts(board: RealtimeHandler) -> None:
    for agent, step in (("alice", "+5"), ("bob", "+3\n"), ("charlie", "+7")):
        write(board, "board/view_count", step, agent)
    assert read(board, "board/view_count", "bob") == "15\n"
    write(board, "board/view_count", "20\n", "bob")  # absolute: adds 20 - 15, the value bob read
    write(board, "board/view_count", "-2", "charlie")
    assert read(board, "board/view_count") == "18\n"


def test_append_to_a_counter_is_a_step(board: RealtimeHandler) -> None:
    write(board, "board/view_count", "+4")
    for agent in ("alice", "bob", "charlie"):
        h = board.open(who(agent), P("board/view_count"), os.O_WRONLY | os.O_APPEND)
        h.write(0, b"+1\n")  # the kernel's offset is ignored: appends go to the end
        close(h)
    assert read(board, "board/view_count") == "7\n"


def test_append_to_text_and_sets(board: RealtimeHandler) -> None:
    write(board, "board/body", "line 1\n")
    write(board, "board/members", "alice\n")
    write(board, "board/body", "line 2\n", flags=os.O_WRONLY | os.O_APPEND)
    write(board, "board/members", "bob\n", "bob", flags=os.O_WRONLY | os.O_APPEND)
    assert read(board, "board/body") == "line 1\nline 2\n"
    assert read(board, "board/members") == "alice\nbob\n"


def test_in_place_write_uses_the_handle_base(board: RealtimeHandler) -> None:
    write(board, "board/body", "hello world")
    h = board.open(who(), P("board/body"), os.O_RDWR)
    write(board, "board/body", "hello brave world", "bob")  # after alice opened
    assert h.read(0, 100) == b"hello world"
    h.write(0, b"HELLO")
    close(h)
    assert read(board, "board/body") == "HELLO brave world"


@pytest.mark.parametrize(
    ("field", "data"),
    [
        ("view_count", b"abc"),
        ("view_count", b"1.5"),
        ("view_count", b""),
        ("settings", b"{not json"),
        ("settings", b"[1, 2]"),
        ("body", b"\xff\xfe broken"),
        ("title", b"caf\xc3"),
        ("members", b"\xc3\x28\n"),
    ],
)
def test_bad_writes_fail_with_EINVAL_and_change_nothing(
    board: RealtimeHandler, ws: Workspace, field: str, data: bytes
) -> None:
    write(board, "board/body", "keep me")
    write(board, "board/view_count", "+2")
    before = state_bytes(ws)
    h = board.open(who(), P(f"board/{field}"), WR)
    h.write(0, data)
    assert errno_of(h.flush) == errno.EINVAL
    h.release()
    assert state_bytes(ws) == before


def test_I_4_unknown_field(board: RealtimeHandler) -> None:
    assert errno_of(board.getattr, P("board/color")) == errno.ENOENT
    assert errno_of(board.open, who(), P("board/color"), WR) == errno.ENOENT
    assert errno_of(board.create, who(), P("board/color"), 0o644, WR) == errno.EINVAL
    assert errno_of(board.getattr, P("nonexistent/title")) == errno.ENOENT


def test_fields_and_documents_cannot_be_removed_or_moved(board: RealtimeHandler) -> None:
    assert errno_of(board.unlink, who(), P("board/title")) == errno.EACCES
    assert errno_of(board.unlink, who(), P(".crdt_state/board.crdt.json")) == errno.EACCES
    assert errno_of(board.rmdir, who(), P("board")) == errno.EACCES
    assert errno_of(board.rename, who(), P("board/title"), P("board/body"), 0) == errno.EACCES
    assert errno_of(board.rename, who(), P("board"), P("board2"), 0) == errno.EACCES
    assert errno_of(board.link, who(), P("board/title"), P("board/t2")) == errno.EACCES


def test_I_6_a_new_handler_sees_the_same_values(board: RealtimeHandler, ws: Workspace) -> None:
    write(board, "board/title", "看板")
    write(board, "board/view_count", "5")
    again = RealtimeHandler(Workspace(ws.root))
    assert read(again, "board/title") == "看板" and read(again, "board/view_count") == "5\n"
    assert read(again, "board/.snapshot.json") == read(board, "board/.snapshot.json")


def test_two_handlers_on_one_store_see_each_other(board: RealtimeHandler, ws: Workspace) -> None:
    other = RealtimeHandler(Workspace(ws.root))
    write(board, "board/body", "one\n")
    assert read(other, "board/body", "bob") == "one\n"
    write(other, "board/body", "one\ntwo\n", "bob")
    assert read(board, "board/body") == "one\ntwo\n"
    assert board.getattr(P("board/body")).size == len("one\ntwo\n")


# -- the writer's base ------------------------------------------------------------------------------------------


def test_blind_write_without_a_read_replaces_the_current_value(board: RealtimeHandler) -> None:
    write(board, "board/body", "old text", "bob")
    write(board, "board/body", "new text\n", "alice")  # alice never read: base = the value at open
    assert read(board, "board/body") == "new text\n"


def test_saving_twice_does_not_repeat_edits_nor_undo_others(board: RealtimeHandler) -> None:
    write(board, "board/body", "a\nb\nc\n")
    read(board, "board/body", "alice")
    read(board, "board/body", "bob")
    write(board, "board/body", "a\nb\nc\nBOB\n", "bob")
    write(board, "board/body", "ALICE\na\nb\nc\n", "alice")  # first save: bob's line kept
    assert read(board, "board/body", "bob") == "ALICE\na\nb\nc\nBOB\n"
    write(board, "board/body", "ALICE\na\nB\nc\n", "alice")  # second save, no read in between
    assert read(board, "board/body") == "ALICE\na\nB\nc\nBOB\n"


def vim_save(rt: RealtimeHandler, rel: str, text: str, pid: int, *, backup: bool) -> None:
    """What vim does on ``:w`` with backupcopy=yes (strace): copy to ``<file>~``, open without O_TRUNC,
    ftruncate, write, fsync, close, remove the backup."""
    vim = who("alice", pid)
    if backup:
        copy = read(rt, rel, "alice", pid)
        h = rt.create(vim, P(rel + "~"), 0o644, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        h.write(0, copy.encode())
        close(h)
    h = rt.open(vim, P(rel), os.O_WRONLY)
    rt.setattr(vim, P(rel), AttrChanges(size=0), h)
    h.write(0, text.encode())
    h.fsync(False)
    close(h)
    if backup:
        rt.unlink(vim, P(rel + "~"))


@pytest.mark.parametrize("backup", [True, False])
def test_vim_save_merges_with_concurrent_edits(board: RealtimeHandler, backup: bool) -> None:
    write(board, "board/body", "one\ntwo\nthree\n")
    loaded = read(board, "board/body", "alice", pid=555)  # vim loads the file
    read(board, "board/body", "bob")
    write(board, "board/body", "one\ntwo\nthree\nfour (bob)\n", "bob")
    read(board, "board/body", "alice")  # alice, elsewhere, looks at the file meanwhile: it is not vim's base
    buffer = loaded.replace("two", "TWO (alice)")
    vim_save(board, "board/body", buffer, 555, backup=backup)
    assert read(board, "board/body", "bob") == "one\nTWO (alice)\nthree\nfour (bob)\n"
    write(board, "board/body", "zero (bob)\none\nTWO (alice)\nthree\nfour (bob)\n", "bob")
    vim_save(board, "board/body", buffer + "five (alice)\n", 555, backup=backup)  # :w again, no reload
    # alice appended after "three", where bob had appended too: concurrent inserts at one place, newest first
    final = "zero (bob)\none\nTWO (alice)\nthree\nfive (alice)\nfour (bob)\n"
    assert read(board, "board/body") == final
    vim_save(board, "board/body", buffer + "five (alice)\n", 555, backup=backup)  # :w, unchanged: a no-op
    assert read(board, "board/body") == final


def test_a_blind_write_is_diffed_against_the_agents_last_read(board: RealtimeHandler) -> None:
    """``cat f`` then ``printf x > f`` from a shell: the shell never read f, the agent's last read is the base."""
    write(board, "board/body", "v1\n")
    read(board, "board/body")
    write(board, "board/body", "v2\n")
    write(board, "board/body", "v1\n")  # back to an earlier version: a real change, not a no-op
    assert read(board, "board/body") == "v1\n"
    write(board, "board/body", "v1\nbob\n", "bob")  # alice has not seen this line
    write(board, "board/body", "v1\nalice\n")  # so her blind write keeps it
    assert read(board, "board/body") == "v1\nalice\nbob\n"


def test_editor_save_by_rename(board: RealtimeHandler, ws: Workspace) -> None:
    """vim (backupcopy=auto) and emacs: rename the original to a backup, write a new file, drop the backup."""
    write(board, "board/body", "one\ntwo\n")
    loaded = read(board, "board/body", "alice")
    read(board, "board/body", "bob")
    write(board, "board/body", "zero (bob)\none\ntwo\n", "bob")
    board.rename(who(), P("board/body"), P("board/body~"), 0)
    assert board.listdir(who(), P("board")).count("body") == 1  # a field cannot go away
    assert "body~" in board.listdir(who(), P("board")) and "body~" not in board.listdir(who("bob"), P("board"))
    assert read(board, "board/body~") == "zero (bob)\none\ntwo\n"
    h = board.create(who(), P("board/body"), 0o644, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    h.write(0, (loaded + "three (alice)\n").encode())
    close(h)
    board.unlink(who(), P("board/body~"))
    assert read(board, "board/body") == "zero (bob)\none\ntwo\nthree (alice)\n"
    assert errno_of(board.getattr, P("board/body~")) == errno.ENOENT


def test_write_to_temp_then_rename_is_a_commit(board: RealtimeHandler) -> None:
    write(board, "board/members", "a\n")
    read(board, "board/members")
    h = board.create(who(), P("board/sedAb12Cd"), 0o644, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    h.write(0, b"a\nb\n")
    close(h)
    board.rename(who(), P("board/sedAb12Cd"), P("board/members"), 0)
    assert read(board, "board/members") == "a\nb\n"
    assert "sedAb12Cd" not in board.listdir(who(), P("board"))
    bad = board.create(who(), P("board/x.tmp"), 0o644, WR)
    bad.write(0, b"not a number")
    close(bad)
    assert errno_of(board.rename, who(), P("board/x.tmp"), P("board/view_count"), 0) == errno.EINVAL
    assert "x.tmp" in board.listdir(who(), P("board"))  # nothing lost


def test_scratch_files_are_per_agent(board: RealtimeHandler) -> None:
    h = board.create(who(), P("board/.body.swp"), 0o600, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    h.write(0, b"swap")
    close(h)
    assert ".body.swp" in board.listdir(who(), P("board"))
    assert ".body.swp" not in board.listdir(who("bob"), P("board"))
    assert board.getattr(P("board/.body.swp")).size == 4
    board.unlink(who(), P("board/.body.swp"))
    assert errno_of(board.getattr, P("board/.body.swp")) == errno.ENOENT


def test_schema_written_by_rename(rt: RealtimeHandler, ws: Workspace) -> None:
    rt.mkdir(who(), P("doc"), 0o755)
    h = rt.create(who(), P("doc/tmpabcd1234"), 0o644, WR)
    h.write(0, b'{"notes": "rga"}')
    close(h)
    rt.rename(who(), P("doc/tmpabcd1234"), P("doc/.schema.json"), 0)
    assert ws.realtime.load("doc").schema == {"notes": "rga"}


# -- .crdt_state ------------------------------------------------------------------------------------------------


def test_state_file_reads_the_stored_state(board: RealtimeHandler, ws: Workspace) -> None:
    write(board, "board/title", "t")
    assert board.listdir(who(), P(".crdt_state")) == ["board.crdt.json"]
    assert read(board, ".crdt_state/board.crdt.json").encode() == state_bytes(ws)
    assert board.getattr(P(".crdt_state/board.crdt.json")).size == len(state_bytes(ws))


def test_writing_a_state_merges_it(board: RealtimeHandler, ws: Workspace) -> None:
    write(board, "board/body", "AC")
    remote = Document.from_json(json.loads(state_bytes(ws)))
    remote.typed("body", RGA).insert(2, "D", "bob")  # a replica elsewhere
    remote.typed("view_count", PNCounter).add("bob", 3)
    write(board, "board/body", "ABC", "alice")  # meanwhile, here
    write(board, ".crdt_state/board.crdt.json", json.dumps(remote.to_json()), "bob")
    assert read(board, "board/body") == "ABCD" and read(board, "board/view_count") == "3\n"
    write(board, ".crdt_state/board.crdt.json", json.dumps(remote.to_json()), "bob")  # idempotent
    assert read(board, "board/view_count") == "3\n"


def forged_by(board: RealtimeHandler, reader: str, author: str) -> bytes:
    """The state as ``reader`` reads it, with a new title and a million votes attributed to ``author``."""
    state = Document.from_json(json.loads(read(board, ".crdt_state/board.crdt.json", reader)))
    state.typed("title", LWWRegister).set("forged", author)
    state.typed("view_count", PNCounter).add(author, 1_000_000)
    return json.dumps(state.to_json()).encode()


def test_a_state_with_another_agents_new_operations_is_EACCES(board: RealtimeHandler, ws: Workspace) -> None:
    write(board, "board/title", "alice's title", "alice")
    before = state_bytes(ws)
    for author in ("alice", ws.realtime.replica("alice")):
        h = board.open(who("bob"), P(".crdt_state/board.crdt.json"), WR)
        h.write(0, forged_by(board, "bob", author))
        assert errno_of(h.flush) == errno.EACCES
        h.release()
    assert state_bytes(ws) == before
    assert read(board, "board/title", "bob") == "alice's title" and read(board, "board/view_count") == "0\n"
    write(board, ".crdt_state/board.crdt.json", forged_by(board, "bob", "bob"), "bob")  # bob's own: merged
    assert read(board, "board/title") == "forged" and read(board, "board/view_count") == "1000000\n"


def test_a_supervisor_may_merge_others_operations(board: RealtimeHandler, ws: Workspace) -> None:
    write(board, ".crdt_state/board.crdt.json", forged_by(board, "boss", "alice"), "boss")
    assert read(board, "board/title") == "forged"


def test_the_writers_files_are_not_shown_nor_writable(board: RealtimeHandler, ws: Workspace) -> None:
    write(board, "board/title", "t")
    assert (ws.realtime.state_dir / ".writers" / "board").is_dir()
    assert board.listdir(who(), P(".crdt_state")) == ["board.crdt.json"]
    assert errno_of(board.getattr, P(".crdt_state/.writers")) == errno.ENOENT
    assert errno_of(board.mkdir, who(), P(".crdt_state/.writers"), 0o755) == errno.EACCES
    assert errno_of(board.create, who(), P(".crdt_state/.writers"), 0o644, WR | os.O_CREAT) == errno.EACCES


def test_a_state_for_a_new_document_creates_it(rt: RealtimeHandler, ws: Workspace) -> None:
    doc = Document("notes", {"text": "rga"})
    doc.typed("text", RGA).insert(0, "hi", "bob")
    h = rt.create(who("bob"), P(".crdt_state/notes.crdt.json"), 0o644, WR | os.O_CREAT)
    h.write(0, json.dumps(doc.to_json()).encode())
    close(h)
    assert read(rt, "notes/text") == "hi"


@pytest.mark.parametrize(
    "data",
    [b"{", b"[]", b'{"doc_id": "other", "schema": {"t": "rga"}, "fields": {"t": []}}', b"\xff"],
)
def test_bad_states_are_EINVAL_and_change_nothing(board: RealtimeHandler, ws: Workspace, data: bytes) -> None:
    write(board, "board/title", "kept")
    before = state_bytes(ws)
    h = board.open(who(), P(".crdt_state/board.crdt.json"), WR)
    h.write(0, data)
    assert errno_of(h.flush) == errno.EINVAL
    h.release()
    assert state_bytes(ws) == before


def test_a_state_with_another_schema_is_refused(board: RealtimeHandler, ws: Workspace) -> None:
    other = Document("board", {"title": "rga"})
    before = state_bytes(ws)
    h = board.open(who(), P(".crdt_state/board.crdt.json"), WR)
    h.write(0, json.dumps(other.to_json()).encode())
    assert errno_of(h.flush) == errno.EINVAL
    h.release()
    assert state_bytes(ws) == before


# -- attributes -------------------------------------------------------------------------------------------------


def test_attributes_and_handles(board: RealtimeHandler) -> None:
    write(board, "board/body", "héllo")
    attr = board.getattr(P("board/body"))
    assert attr.size == len("héllo".encode()) and not attr.stable and attr.mode & 0o777 == 0o666
    assert all(not board.getattr(P(p)).stable for p in ("", ".crdt_state", "board", "board/.snapshot.json"))
    h = board.open(who(), P("board/body"), RD)
    assert h.direct_io and not h.keep_cache
    h.release()


def test_xattrs(board: RealtimeHandler) -> None:
    assert board.listxattr(who(), P("board/title")) == ["user.omx.owner", "user.omx.type"]
    assert board.listxattr(who(), P("board/.snapshot.json")) == ["user.omx.owner"]
    assert board.getxattr(who(), P("board/title"), "user.omx.owner") == b"shared"
    assert board.getxattr(who(), P("board"), "user.omx.owner") == b"shared"
    assert board.getxattr(who(), P("board/view_count"), "user.omx.type") == b"pn_counter"
    assert errno_of(board.getxattr, who(), P("board/.schema.json"), "user.omx.type") == errno.ENODATA
    assert errno_of(board.setxattr, who(), P("board/title"), "user.omx.type", b"rga") == errno.EACCES
    assert errno_of(board.removexattr, who(), P("board/title"), "user.omx.owner") == errno.EACCES


def test_setattr(board: RealtimeHandler) -> None:
    write(board, "board/body", "some text")
    board.setattr(who(), P("board/body"), AttrChanges(mtime_ns=1, atime_ns=1), None)  # touch
    board.setattr(who(), P("board/body"), AttrChanges(mode=0o100666), None)  # what it is
    assert errno_of(board.setattr, who(), P("board/body"), AttrChanges(mode=0o100600), None) == errno.EACCES
    assert errno_of(board.setattr, who(), P("board/body"), AttrChanges(uid=12345), None) == errno.EACCES
    board.setattr(who(), P("board/body"), AttrChanges(size=4), None)  # truncate(1)
    assert read(board, "board/body") == "some"
    assert errno_of(board.setattr, who(), P("board/view_count"), AttrChanges(size=0), None) == errno.EINVAL
    h = board.open(who(), P("board/body"), os.O_RDWR)
    board.setattr(who(), P("board/body"), AttrChanges(size=0), h)  # ftruncate on an open file
    h.write(0, b"new")
    close(h)
    assert read(board, "board/body") == "new"


def test_concurrent_threads_lose_no_increment(board: RealtimeHandler) -> None:
    def bump(agent: str) -> None:
        for _ in range(10):
            write(board, "board/view_count", "+1", agent)

    threads = [threading.Thread(target=bump, args=(a,)) for a in ("alice", "bob", "charlie")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert read(board, "board/view_count") == "30\n"


def test_unknown_agents_are_refused(board: RealtimeHandler, ws: Workspace) -> None:
    before = state_bytes(ws)
    h = board.open(who("mallory"), P("board/title"), WR)
    h.write(0, b"pwned")
    assert errno_of(h.flush) == errno.EACCES
    h.release()
    assert state_bytes(ws) == before
    assert errno_of(board.mkdir, who("mallory"), P("evil"), 0o755) == errno.EACCES


def test_shell_redirection_commits_once(board: RealtimeHandler, ws: Workspace) -> None:
    """``echo x > f``: the shell opens with O_TRUNC, dup2s and closes the first descriptor before echo writes."""
    write(board, "board/members", "a\nb\n")
    read(board, "board/members")
    h = board.open(who(), P("board/members"), WR)
    before = state_bytes(ws)
    h.flush()  # the shell's close of the original descriptor
    assert state_bytes(ws) == before and read(board, "board/members") == "a\nb\n"
    h.write(0, b"a\nc\n")
    close(h)
    assert read(board, "board/members") == "a\nc\n"
    emptied = board.open(who(), P("board/members"), WR)  # `: > members`
    close(emptied)
    assert read(board, "board/members") == ""


def test_a_field_whose_release_the_kernel_sent_is_committed_before_the_next_request(
    board: RealtimeHandler, ws: Workspace
) -> None:
    """``O_TRUNC`` alone commits at the release, which runs in a thread of its own and may come after the
    program's next request: once the kernel has sent it, a request on the document finds the field committed."""
    write(board, "board/members", "a\n")
    read(board, "board/members")
    h = board.open(who(), P("board/members"), WR)
    h.flush()  # close() with nothing written: nothing to flush
    assert read(board, "board/members") == "a\n"  # a descriptor may still be open (the shell's dup2)
    h.release_requested()  # the last one is closed
    assert read(board, "board/members") == ""
    assert json.loads(read(board, "board/.snapshot.json"))["fields"]["members"] == []
    before = state_bytes(ws)
    h.release()  # the release itself commits nothing more
    assert state_bytes(ws) == before


def test_an_editor_can_back_up_and_rewrite_a_state_file(board: RealtimeHandler, ws: Workspace) -> None:
    write(board, "board/title", "before")
    board.rename(who(), P(".crdt_state/board.crdt.json"), P(".crdt_state/board.crdt.json~"), 0)
    assert read(board, ".crdt_state/board.crdt.json~").encode() == state_bytes(ws)
    assert ".crdt_state/board.crdt.json~" not in board.listdir(who("bob"), P(".crdt_state"))
    board.unlink(who(), P(".crdt_state/board.crdt.json~"))
    assert board.listdir(who(), P(".crdt_state")) == ["board.crdt.json"]


def test_scratch_files_in_a_pending_directory(rt: RealtimeHandler) -> None:
    rt.mkdir(who(), P("draft"), 0o755)
    h = rt.create(who(), P("draft/..schema.json.swp"), 0o600, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    close(h)
    assert rt.listdir(who(), P("draft")) == ["..schema.json.swp"]
    assert errno_of(rt.rmdir, who(), P("draft")) == errno.ENOTEMPTY
    rt.unlink(who(), P("draft/..schema.json.swp"))
    rt.rmdir(who(), P("draft"))
    assert rt.listdir(who(), P("")) == [".crdt_state"]


def test_scratch_files_are_owned_by_their_agent(board: RealtimeHandler) -> None:
    close(board.create(who("bob"), P("board/.body.swp"), 0o600, os.O_RDWR | os.O_CREAT))
    assert board.getxattr(who("bob"), P("board/.body.swp"), "user.omx.owner") == b"bob"
    assert board.listxattr(who("bob"), P("board/.body.swp")) == ["user.omx.owner"]
    assert errno_of(board.getxattr, who("bob"), P("board/.body.swp"), "user.omx.type") == errno.ENODATA
    assert errno_of(board.setxattr, who("bob"), P("board/.body.swp"), "user.x", b"1") == errno.EOPNOTSUPP
