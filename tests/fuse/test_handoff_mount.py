"""The handoff zone through a real mount: seed 001 cases B-1 … B-5 with cp, cat and setfattr, the sender-only
rule, read-only metadata, withdrawals, and editors (vim, sed -i) that must make exactly one delivery."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fuse.conftest import Mount, poll
from tests.fuse.test_collab_mount import Editor, needs_vim, scratch_left

MountFactory = Callable[..., Mount]
BOX = "handoff/alice_to_bob"
AGENTS = ("alice", "bob", "charlie")


def meta(m: Mount, box: str = BOX, name: str = "data.csv") -> dict[str, str]:
    data: dict[str, str] = json.loads(m.path(f"{box}/{name}.meta.json").read_text("utf-8"))
    return data


def deliver(m: Mount, tmp_path: Path, box: str, name: str, content: str, message: str, agent: str) -> None:
    """What a person types: make the box, copy the file in, set the message."""
    source = tmp_path / f"{agent}-{name}"
    source.write_text(content, "utf-8")
    m.run(
        f"mkdir -p {box} && cp {source} {box}/{name} && setfattr -n user.omx.message -v '{message}' {box}/{name}",
        agent=agent,
        check=True,
    )


def test_B_1_mount_cp_and_setfattr(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "1,2,3", "请分析这份数据", "alice")
    assert (m.store / "handoff/alice_to_bob/data.csv").read_text("utf-8") == "1,2,3"
    m_on_disk = json.loads((m.store / "handoff/alice_to_bob/data.csv.meta.json").read_text("utf-8"))
    assert {"from", "to", "timestamp", "message"} <= set(m_on_disk)
    assert (m_on_disk["from"], m_on_disk["to"], m_on_disk["message"]) == ("alice", "bob", "请分析这份数据")
    assert sorted(os.listdir(m.path(BOX))) == ["data.csv", "data.csv.meta.json"]
    assert sorted(os.listdir(m.path("handoff"))) == ["alice_to_bob", "alice_to_charlie"]


def test_cp_into_a_box_needs_no_mkdir(mount: MountFactory, tmp_path: Path) -> None:
    """A new user's first try: copy a file into handoff/<me>_to_<agent>/ and add a message."""
    m = mount(agents=AGENTS)
    (tmp_path / "data.csv").write_text("1,2,3", "utf-8")
    m.run(f"cp {tmp_path / 'data.csv'} {BOX}/ && setfattr -n user.omx.message -v hi {BOX}/data.csv", check=True)
    assert m.ws.handoff.read("alice", "bob", "data.csv").meta.message == "hi"


def test_B_2_mount_recipient_sees_both_deliveries(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "1,2,3", "请分析", "alice")
    deliver(m, tmp_path, "handoff/charlie_to_bob", "config.json", "{}", "新配置", "charlie")
    done = m.run(
        "ls -d handoff/*_to_bob && getfattr --only-values -n user.omx.message handoff/*_to_bob/*[^n]", agent="bob"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split("\n")[:2] == ["handoff/alice_to_bob", "handoff/charlie_to_bob"]
    inbox = m.ws.handoff.inbox("bob")
    assert sorted((d.sender, d.filename, d.message) for d in inbox) == [
        ("alice", "data.csv", "请分析"),
        ("charlie", "config.json", "新配置"),
    ]


def test_B_3_mount_no_deliveries(mount: MountFactory) -> None:
    m = mount(agents=AGENTS)
    # bob sees only where he can deliver; nothing was handed to him, and the boxes to him are empty.
    assert m.run("ls handoff", agent="bob", check=True).stdout == b"bob_to_alice\nbob_to_charlie\n"
    assert m.run("ls handoff/alice_to_bob handoff/charlie_to_bob", agent="bob", check=True).stdout.count(b":") == 2
    assert m.ws.handoff.inbox("bob") == []


def test_B_4_mount_recipient_reads_the_content(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "1,2,3", "x", "alice")
    done = m.run(f"cat {BOX}/data.csv; getfattr --only-values -n user.omx.from {BOX}/data.csv", agent="bob")
    assert done.stdout == b"1,2,3alice"


def test_B_5_mount_redelivery_replaces(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "旧数据", "first", "alice")
    deliver(m, tmp_path, BOX, "data.csv", "新数据", "更新了", "alice")
    assert m.run(f"cat {BOX}/data.csv", agent="bob").stdout.decode() == "新数据"
    assert meta(m)["message"] == "更新了"
    assert sorted(os.listdir(m.path(BOX))) == ["data.csv", "data.csv.meta.json"]


def test_only_the_sender_writes(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "1,2,3", "x", "alice")
    for command in (
        f"echo x > {BOX}/data.csv",
        f"echo x > {BOX}/reply.txt",
        f"rm {BOX}/data.csv",
        f"setfattr -n user.omx.message -v hijack {BOX}/data.csv",
        f"sed -i s/1/9/ {BOX}/data.csv",
        "touch handoff/alice_to_charlie/forged",
    ):
        done = m.run(command, agent="bob")
        assert done.returncode != 0 and b"Permission denied" in done.stderr, command
    assert m.path(f"{BOX}/data.csv").read_text("utf-8") == "1,2,3" and meta(m)["message"] == "x"
    assert "agent=bob op=open path=handoff/alice_to_bob/data.csv errno=EACCES" in m.log()


def test_metadata_is_read_only_for_everyone(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "1,2,3", "x", "alice")
    for agent in ("alice", "bob"):
        for command in (f"echo x > {BOX}/data.csv.meta.json", f"rm {BOX}/data.csv.meta.json"):
            done = m.run(command, agent=agent)
            assert done.returncode != 0 and b"Permission denied" in done.stderr, (agent, command)
    assert oct(m.path(f"{BOX}/data.csv.meta.json").stat().st_mode & 0o777) == "0o444"


def test_mkdir_rules(mount: MountFactory) -> None:
    m = mount(agents=AGENTS)
    m.run(f"mkdir -p {BOX}", check=True)  # a box between known agents exists already
    assert m.run(f"mkdir {BOX}").returncode != 0
    for command in (
        "mkdir handoff/alice_to_zed",
        "mkdir handoff/alice_to_alice",
        "mkdir handoff/stuff",
        f"mkdir {BOX}/sub",
    ):
        done = m.run(command)
        assert done.returncode != 0 and b"Permission denied" in done.stderr, command
    assert "no agent named 'zed'" in m.log()
    assert sorted(os.listdir(m.path("handoff"))) == ["alice_to_bob", "alice_to_charlie"]


def test_getfattr_dump(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "1,2,3", "please", "alice")
    dump = m.run(f"getfattr -d {BOX}/data.csv", agent="charlie", check=True).stdout.decode()
    expected = meta(m)
    for line in (
        'user.omx.owner="alice"',
        'user.omx.from="alice"',
        'user.omx.to="bob"',
        'user.omx.message="please"',
        f'user.omx.timestamp="{expected["timestamp"]}"',
    ):
        assert line in dump


def test_withdrawing_a_delivery(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "oops", "x", "alice")
    m.run(f"rm {BOX}/data.csv && rmdir {BOX}", check=True)
    assert not (m.store / BOX).exists()
    assert os.listdir(m.path(BOX)) == []
    assert m.ws.handoff.inbox("bob") == []


def test_touch_then_setfattr_delivers_an_empty_file_with_its_message(mount: MountFactory) -> None:
    m = mount(agents=AGENTS)
    m.run(f"touch {BOX}/ping && setfattr -n user.omx.message -v 'are you there' {BOX}/ping", check=True)
    poll(lambda: m.path(f"{BOX}/ping.meta.json").exists(), what="the delivery")
    assert meta(m, name="ping")["message"] == "are you there"


def test_sed_i_in_a_box_is_one_delivery(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "a,b\n", "numbers", "alice")
    m.run(f"sed -i s/b/c/ {BOX}/data.csv", check=True)
    assert m.path(f"{BOX}/data.csv").read_text("utf-8") == "a,c\n"
    assert meta(m)["message"] == "numbers"
    assert sorted(os.listdir(m.path(BOX))) == ["data.csv", "data.csv.meta.json"]
    assert sorted(p.name for p in (m.store / "handoff/alice_to_bob").iterdir()) == ["data.csv", "data.csv.meta.json"]
    assert scratch_left(m) == []


@needs_vim
def test_vim_in_a_box_is_one_delivery(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "a,b\n", "numbers", "alice")
    first = meta(m)["timestamp"]
    with Editor(m, f"vim -N -u NONE -i NONE {BOX}/data.csv") as vim:
        poll(Path(m.store, ".omxfs/scratch/alice", BOX, ".data.csv.swp").exists, what="vim's swap file")
        vim.keys(b"A,c\x1b:wq\r")
        assert vim.wait() == 0
    assert m.path(f"{BOX}/data.csv").read_text("utf-8") == "a,b,c\n"
    assert meta(m)["timestamp"] != first and meta(m)["message"] == "numbers"
    assert sorted(os.listdir(m.path(BOX))) == ["data.csv", "data.csv.meta.json"]
    assert scratch_left(m) == []


@pytest.mark.skipif(not shutil.which("vim"), reason="vim missing")
def test_vim_ex_mode_as_the_recipient_is_refused(mount: MountFactory, tmp_path: Path) -> None:
    m = mount(agents=AGENTS)
    deliver(m, tmp_path, BOX, "data.csv", "a,b\n", "numbers", "alice")
    done = m.run(f"vim -N -u NONE -i NONE -es -c 's/b/x/' -c 'wq' {BOX}/data.csv", agent="bob")
    assert done.returncode != 0
    assert m.path(f"{BOX}/data.csv").read_text("utf-8") == "a,b\n"
