"""The handoff zone handler, called directly (no mount): every rule of SPEC §4 "Handoff"."""

from __future__ import annotations

import json
import os
import stat
from pathlib import PurePosixPath

import pytest

from omxfs.errors import AlreadyExists, InvalidInput, NoAttribute, NotEmpty, NotFound, NotSupported, ZoneDenied
from omxfs.fuse.zones.base import AttrChanges, Caller, Handle
from omxfs.fuse.zones.handoff import HandoffHandler
from omxfs.store import Workspace

ZONE = PurePosixPath("handoff")
BOX = ZONE / "alice_to_bob"
DATA = BOX / "data.csv"
META = BOX / "data.csv.meta.json"
CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


def who(agent: str) -> Caller:
    return Caller(agent, 1000, 1000, 4242)


@pytest.fixture
def h(ws: Workspace) -> HandoffHandler:
    handler = HandoffHandler(ws)
    handler.mkdir(who("alice"), BOX, 0o755)
    return handler


def close(handle: Handle) -> None:
    try:
        handle.flush()
    finally:
        handle.release()


def put(h: HandoffHandler, agent: str, path: PurePosixPath, data: bytes) -> None:
    try:
        handle = h.create(who(agent), path, 0o644, CREATE)
    except AlreadyExists:
        handle = h.open(who(agent), path, os.O_WRONLY | os.O_TRUNC)
    handle.write(0, data)
    close(handle)


def read(h: HandoffHandler, agent: str, path: PurePosixPath) -> bytes:
    handle = h.open(who(agent), path, os.O_RDONLY)
    try:
        return handle.read(0, 1 << 20)
    finally:
        handle.release()


def meta(ws: Workspace, box: str = "alice_to_bob", name: str = "data.csv") -> dict[str, str]:
    data: dict[str, str] = json.loads((ws.root / "handoff" / box / f"{name}.meta.json").read_text("utf-8"))
    return data


def test_B_1_deliver_then_set_the_message(h: HandoffHandler, ws: Workspace) -> None:
    put(h, "alice", DATA, b"1,2,3")
    assert (ws.root / "handoff/alice_to_bob/data.csv").read_bytes() == b"1,2,3"
    assert meta(ws)["message"] == ""
    h.setxattr(who("alice"), DATA, "user.omx.message", "请分析这份数据".encode())
    m = meta(ws)
    assert (m["from"], m["to"], m["message"]) == ("alice", "bob", "请分析这份数据") and m["timestamp"]
    assert read(h, "bob", DATA) == b"1,2,3"
    assert json.loads(read(h, "bob", META))["message"] == "请分析这份数据"


def test_message_set_on_an_open_file_applies_at_its_close(h: HandoffHandler, ws: Workspace) -> None:
    handle = h.create(who("alice"), DATA, 0o644, CREATE)
    handle.write(0, b"1,2,3")
    h.setxattr(who("alice"), DATA, "user.omx.message", b"before close")
    assert h.getxattr(who("alice"), DATA, "user.omx.message") == b"before close"
    assert h.getattr(DATA).size == 5 and h.listdir(who("bob"), BOX) == ["data.csv"]  # staged, shown
    close(handle)
    assert meta(ws)["message"] == "before close"
    # Redelivered on an open file whose message is set while it is open.
    handle = h.open(who("alice"), DATA, os.O_WRONLY | os.O_TRUNC)
    h.setxattr(who("alice"), DATA, "user.omx.message", b"while open")
    assert meta(ws)["message"] == "while open"  # the existing delivery's metadata, at once
    handle.write(0, b"4,5,6")
    close(handle)
    assert meta(ws)["message"] == "while open"
    assert (ws.root / "handoff/alice_to_bob/data.csv").read_bytes() == b"4,5,6"
    assert h.notes.message("alice", DATA) is None  # nothing left pending after the close


def test_B_5_redelivery_replaces_the_content_and_keeps_or_sets_the_message(h: HandoffHandler, ws: Workspace) -> None:
    put(h, "alice", DATA, "旧数据".encode())
    h.setxattr(who("alice"), DATA, "user.omx.message", b"first")
    put(h, "alice", DATA, b"edited")
    assert meta(ws)["message"] == "first"  # no new message: the delivery keeps its description
    handle = h.open(who("alice"), DATA, os.O_WRONLY | os.O_TRUNC)
    handle.write(0, "新数据".encode())
    h.setxattr(who("alice"), DATA, "user.omx.message", "更新了".encode())
    close(handle)
    assert read(h, "bob", DATA).decode() == "新数据"
    assert meta(ws)["message"] == "更新了"


def test_only_the_sender_writes(h: HandoffHandler, ws: Workspace) -> None:
    put(h, "alice", DATA, b"1,2,3")
    with pytest.raises(ZoneDenied):
        h.create(who("bob"), BOX / "reply.txt", 0o644, CREATE)
    with pytest.raises(ZoneDenied):
        h.open(who("bob"), DATA, os.O_WRONLY)
    with pytest.raises(ZoneDenied):
        h.setxattr(who("bob"), DATA, "user.omx.message", b"hijack")
    with pytest.raises(ZoneDenied):
        h.unlink(who("bob"), DATA)
    with pytest.raises(ZoneDenied):
        h.create(who("bob"), BOX / ".reply.txt.swp", 0o600, CREATE)
    with pytest.raises(ZoneDenied):
        h.setattr(who("bob"), DATA, AttrChanges(size=0), None)
    assert h.may_write(who("alice"), DATA) and not h.may_write(who("bob"), DATA)
    assert not h.may_write(who("alice"), META)
    assert read(h, "charlie", DATA) == b"1,2,3"


def test_supervisor_writes_anywhere_audited(h: HandoffHandler, ws: Workspace) -> None:
    h.mkdir(who("boss"), ZONE / "bob_to_charlie", 0o755)
    put(h, "boss", ZONE / "bob_to_charlie/order.txt", b"do it")
    h.setxattr(who("boss"), ZONE / "bob_to_charlie/order.txt", "user.omx.message", b"from above")
    assert meta(ws, "bob_to_charlie", "order.txt")["message"] == "from above"
    assert meta(ws, "bob_to_charlie", "order.txt")["from"] == "bob"
    assert "boss" in {a["agent"] for a in ws.audit_trail().records}


def test_metadata_is_read_only(h: HandoffHandler) -> None:
    put(h, "alice", DATA, b"1,2,3")
    assert stat.S_IMODE(h.getattr(META).mode) == 0o444
    for agent in ("alice", "bob"):
        with pytest.raises(ZoneDenied):
            h.open(who(agent), META, os.O_WRONLY)
        with pytest.raises(ZoneDenied):
            h.unlink(who(agent), META)
        with pytest.raises(ZoneDenied):
            h.setxattr(who(agent), META, "user.omx.message", b"x")
    with pytest.raises(ZoneDenied):
        h.create(who("alice"), BOX / "other.csv.meta.json", 0o644, CREATE)
    with pytest.raises(ZoneDenied):
        h.rename(who("alice"), DATA, META, 0)


def test_listings(h: HandoffHandler, ws: Workspace) -> None:
    h.mkdir(who("charlie"), ZONE / "charlie_to_bob", 0o755)
    (ws.root / "handoff/not-a-box").mkdir()
    # Boxes on disk, plus the caller's own outgoing boxes (where it can deliver), never stray directories.
    assert h.listdir(who("bob"), ZONE) == ["alice_to_bob", "bob_to_alice", "bob_to_charlie", "charlie_to_bob"]
    assert h.listdir(who("bob"), BOX) == []
    put(h, "alice", DATA, b"1,2,3")
    assert h.listdir(who("bob"), BOX) == ["data.csv", "data.csv.meta.json"]
    assert h.getattr(ZONE).is_dir and h.getattr(BOX).is_dir
    assert h.getattr(DATA).size == 5 and not h.getattr(DATA).stable


def test_mkdir_rules(h: HandoffHandler, ws: Workspace) -> None:
    with pytest.raises(AlreadyExists):
        h.mkdir(who("alice"), BOX, 0o755)
    with pytest.raises(ZoneDenied):
        h.mkdir(who("bob"), ZONE / "alice_to_charlie", 0o755)
    with pytest.raises(ZoneDenied, match="no agent named 'zed'"):
        h.mkdir(who("alice"), ZONE / "alice_to_zed", 0o755)
    with pytest.raises(ZoneDenied):
        h.mkdir(who("alice"), ZONE / "alice_to_alice", 0o755)
    with pytest.raises(ZoneDenied):
        h.mkdir(who("alice"), ZONE / "stuff", 0o755)
    with pytest.raises(ZoneDenied):
        h.mkdir(who("alice"), BOX / "sub", 0o755)
    with pytest.raises(ZoneDenied):
        h.mkdir(who("mallory"), ZONE / "mallory_to_bob", 0o755)
    with pytest.raises(NotFound):
        h.create(who("alice"), ZONE / "alice_to_zed/x.txt", 0o644, CREATE)
    with pytest.raises(ZoneDenied):
        h.create(who("alice"), ZONE / "loose.txt", 0o644, CREATE)


def test_a_box_between_known_agents_needs_no_mkdir(h: HandoffHandler, ws: Workspace) -> None:
    box = ZONE / "alice_to_charlie"
    assert h.getattr(box).is_dir and h.listdir(who("alice"), box) == []
    assert not (ws.root / "handoff/alice_to_charlie").exists()
    # its times are handoff/'s own, not 1970's
    assert h.getattr(box).mtime_ns == (ws.root / "handoff").stat().st_mtime_ns > 0
    put(h, "alice", box / "x.txt", b"hi")
    assert ws.handoff.read("alice", "charlie", "x.txt").content == b"hi"
    assert h.listdir(who("charlie"), box) == ["x.txt", "x.txt.meta.json"]
    with pytest.raises(ZoneDenied):
        put(h, "bob", box / "y.txt", b"not bob's box")
    with pytest.raises(NotFound):
        h.getattr(ZONE / "alice_to_zed")


def test_rmdir_of_an_empty_own_box(h: HandoffHandler) -> None:
    with pytest.raises(ZoneDenied):
        h.rmdir(who("bob"), BOX)
    put(h, "alice", DATA, b"x")
    with pytest.raises(NotEmpty):
        h.rmdir(who("alice"), BOX)
    h.unlink(who("alice"), DATA)
    h.rmdir(who("alice"), BOX)
    assert not (h.ws.root / BOX).exists()
    assert h.listdir(who("alice"), ZONE) == ["alice_to_bob", "alice_to_charlie"]  # still where alice can deliver


def test_xattrs(h: HandoffHandler, ws: Workspace) -> None:
    put(h, "alice", DATA, b"1,2,3")
    h.setxattr(who("alice"), DATA, "user.omx.message", b"please")
    m = meta(ws)
    names = h.listxattr(who("bob"), DATA)
    got = {n: h.getxattr(who("bob"), DATA, n).decode() for n in names}
    assert got == {
        "user.omx.owner": "alice",
        "user.omx.from": "alice",
        "user.omx.to": "bob",
        "user.omx.message": "please",
        "user.omx.timestamp": m["timestamp"],
        "user.omx.sha256": m["sha256"],
    }
    assert h.getxattr(who("bob"), BOX, "user.omx.owner") == b"alice"
    assert h.getxattr(who("bob"), META, "user.omx.to") == b"bob"
    assert h.listxattr(who("bob"), ZONE) == []
    with pytest.raises(NoAttribute):
        h.getxattr(who("bob"), META, "user.omx.message")
    with pytest.raises(ZoneDenied):
        h.setxattr(who("alice"), DATA, "user.omx.to", b"charlie")
    with pytest.raises(NotSupported):
        h.setxattr(who("alice"), DATA, "user.other", b"x")
    with pytest.raises(InvalidInput):
        h.setxattr(who("alice"), DATA, "user.omx.message", b"\xff\xfe")
    h.removexattr(who("alice"), DATA, "user.omx.message")
    assert meta(ws)["message"] == ""


def test_withdrawing_a_delivery(h: HandoffHandler, ws: Workspace) -> None:
    put(h, "alice", DATA, b"oops")
    h.unlink(who("alice"), DATA)
    assert h.listdir(who("bob"), BOX) == []
    assert not (ws.root / "handoff/alice_to_bob/data.csv.meta.json").exists()
    assert ws.handoff.inbox("bob") == []
    with pytest.raises(NotFound):
        h.unlink(who("alice"), DATA)


def test_orphan_metadata_is_hidden(h: HandoffHandler, ws: Workspace) -> None:
    put(h, "alice", DATA, b"x")
    (ws.root / "handoff/alice_to_bob/data.csv").unlink()  # a withdrawal cut short by a crash
    assert h.listdir(who("bob"), BOX) == []
    with pytest.raises(NotFound):
        h.getattr(META)


def test_rename_moves_a_delivery(h: HandoffHandler, ws: Workspace) -> None:
    put(h, "alice", DATA, b"1,2,3")
    h.setxattr(who("alice"), DATA, "user.omx.message", b"keep me")
    h.rename(who("alice"), DATA, BOX / "numbers.csv", 0)
    assert h.listdir(who("bob"), BOX) == ["numbers.csv", "numbers.csv.meta.json"]
    assert meta(ws, name="numbers.csv")["message"] == "keep me"
    with pytest.raises(ZoneDenied):
        h.rename(who("bob"), BOX / "numbers.csv", BOX / "x.csv", 0)
    with pytest.raises(ZoneDenied):
        h.rename(who("alice"), BOX, ZONE / "alice_to_charlie", 0)


def test_truncate_by_path_redelivers(h: HandoffHandler, ws: Workspace) -> None:
    put(h, "alice", DATA, b"1,2,3")
    h.setattr(who("alice"), DATA, AttrChanges(size=1), None)
    assert (ws.root / "handoff/alice_to_bob/data.csv").read_bytes() == b"1"
    h.setattr(who("alice"), DATA, AttrChanges(mode=0o600), None)  # ignored


def test_B_2_inbox_after_deliveries_through_the_handler(h: HandoffHandler, ws: Workspace) -> None:
    put(h, "alice", DATA, b"1,2,3")
    h.setxattr(who("alice"), DATA, "user.omx.message", "请分析".encode())
    h.mkdir(who("charlie"), ZONE / "charlie_to_bob", 0o755)
    put(h, "charlie", ZONE / "charlie_to_bob/config.json", b"{}")
    h.setxattr(who("charlie"), ZONE / "charlie_to_bob/config.json", "user.omx.message", "新配置".encode())
    inbox = ws.handoff.inbox("bob")
    assert sorted((m.sender, m.filename, m.message) for m in inbox) == [
        ("alice", "data.csv", "请分析"),
        ("charlie", "config.json", "新配置"),
    ]


def test_editor_saves_are_one_delivery(h: HandoffHandler, ws: Workspace) -> None:
    """sed -i and vim's backup dance in a box: the temp files are scratch, one delivery results."""
    put(h, "alice", DATA, b"a,b\n")
    me = who("alice")
    temp = BOX / "sedQ1w2E3"
    handle = h.create(me, temp, 0o600, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    handle.write(0, b"a,c\n")
    close(handle)
    assert ws.handoff.inbox("bob")[0].sha256 == meta(ws)["sha256"]
    assert h.listdir(me, BOX) == ["data.csv", "data.csv.meta.json", "sedQ1w2E3"]
    assert h.listdir(who("bob"), BOX) == ["data.csv", "data.csv.meta.json"]
    h.rename(me, temp, DATA, 0)
    assert (ws.root / "handoff/alice_to_bob/data.csv").read_bytes() == b"a,c\n"
    # vim
    h.rename(me, DATA, BOX / "data.csv~", 0)
    assert (ws.root / "handoff/alice_to_bob/data.csv").exists()
    put(h, "alice", DATA, b"a,d\n")
    h.unlink(me, BOX / "data.csv~")
    assert h.listdir(me, BOX) == ["data.csv", "data.csv.meta.json"]
    assert sorted(p.name for p in (ws.root / "handoff/alice_to_bob").iterdir()) == ["data.csv", "data.csv.meta.json"]
    assert [m.filename for m in ws.handoff.inbox("bob")] == ["data.csv"]


def test_scratch_rename_carries_its_message(h: HandoffHandler, ws: Workspace) -> None:
    temp = BOX / "report.tmp"
    put(h, "alice", temp, b"report")
    h.setxattr(who("alice"), temp, "user.omx.message", b"weekly")
    h.rename(who("alice"), temp, BOX / "report.txt", 0)
    assert meta(ws, name="report.txt")["message"] == "weekly"
    assert h.notes.message("alice", temp) is None


def test_self_box_cannot_be_written(ws: Workspace) -> None:
    (ws.root / "handoff/alice_to_alice").mkdir()
    h = HandoffHandler(ws)
    with pytest.raises(InvalidInput):
        h.create(who("alice"), ZONE / "alice_to_alice/x", 0o644, CREATE)
