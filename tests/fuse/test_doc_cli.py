"""``omxfs doc create``: through a mount (mkdir + .schema.json, as any program), and on an unmounted workspace."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from cli.doc import COMMANDS, doc_group
from omxfs.store import Workspace
from tests.fuse.conftest import Mount

MountFactory = Callable[..., Mount]
BOARD_ARGS = ["title=lww_register", "body=rga", "members=or_set", "settings=lww_map", "view_count=pn_counter"]


def test_exported_for_the_omxfs_group() -> None:
    assert [c.name for c in COMMANDS] == ["doc"]


def test_I_1_doc_create_through_the_mount(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"], default="alice")
    result = CliRunner().invoke(doc_group, ["create", "board", *BOARD_ARGS, "-w", str(m.root)])
    assert result.exit_code == 0, result.output
    assert "created realtime/board" in result.output
    schema = dict(arg.split("=") for arg in BOARD_ARGS)
    assert m.ws.realtime.load("board").schema == schema
    assert json.loads(m.path("realtime/board/.schema.json").read_text()) == schema
    again = CliRunner().invoke(doc_group, ["create", "board", "title=rga", "-w", str(m.root)])
    assert again.exit_code == 1 and "exists" in again.output
    assert m.ws.realtime.load("board").schema == schema


def test_doc_create_finishes_a_pending_directory(mount: MountFactory) -> None:
    m = mount()
    m.path("realtime/notes").mkdir()
    result = CliRunner().invoke(doc_group, ["create", "notes", "text=rga", "--workspace", str(m.root)])
    assert result.exit_code == 0, result.output
    assert m.path("realtime/notes/text").read_text() == ""


def test_doc_create_reports_what_the_mount_refuses_and_leaves_no_directory(mount: MountFactory) -> None:
    m = mount()
    result = CliRunner().invoke(doc_group, ["create", "notes", ".hidden=rga", "-w", str(m.root)])
    assert result.exit_code == 1 and "Invalid argument" in result.output
    assert m.ws.realtime.list() == []
    assert not m.path("realtime/notes").exists()  # its directory is removed with the refused schema


def test_doc_create_says_the_rule_for_a_bad_document_name(mount: MountFactory) -> None:
    """Through the mount a bad name was a bare EINVAL, and ``../x`` a "permission denied"."""
    m = mount()
    for name in ("bad name", "../x", "d" * 200):
        result = CliRunner().invoke(doc_group, ["create", name, "text=rga", "-w", str(m.root)])
        assert result.exit_code == 1 and "invalid document id" in result.output, result.output
    assert m.ws.realtime.list() == []


def test_doc_create_checks_its_arguments(tmp_path: Path) -> None:
    Workspace.init(tmp_path / "ws", agents=["alice"])
    runner = CliRunner()
    for args, message in [
        (["board", "title"], "FIELD=TYPE"),
        (["board", "title=text"], "unknown type"),
        (["board", "t=rga", "t=rga"], "twice"),
        (["board"], "Missing argument"),
    ]:
        result = runner.invoke(doc_group, ["create", *args, "-w", str(tmp_path / "ws")])
        assert result.exit_code == 2 and message in result.output, result.output
    result = runner.invoke(doc_group, ["create", "board", "t=rga", "-w", str(tmp_path)])
    assert result.exit_code == 1 and "not an omx workspace" in result.output


def test_doc_create_on_an_unmounted_workspace_uses_the_store(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", agents=["alice"])
    runner = CliRunner(env={"OMX_AGENT": "alice"})
    result = runner.invoke(doc_group, ["create", "board", "title=lww_register", "-w", str(ws.root)])
    assert result.exit_code == 0, result.output
    assert ws.realtime.load("board").schema == {"title": "lww_register"}
    result = runner.invoke(doc_group, ["create", "board", "title=rga", "-w", str(ws.root)])
    assert result.exit_code == 1 and "exists" in result.output
    result = CliRunner(env={"OMX_AGENT": "mallory"}).invoke(doc_group, ["create", "x", "t=rga", "-w", str(ws.root)])
    assert result.exit_code == 1 and "you act as 'mallory' (OMX_AGENT), which is no agent" in result.output


def test_doc_create_as_an_agent_in_process(mount: MountFactory) -> None:
    """--as NAME on a store acts as NAME at once; through a mount it needs the omxfs process to start again with
    OMX_AGENT=NAME (``test_mount_tools`` runs that), which a command called inside another program cannot: it says
    so rather than create the document as the mount's default agent."""
    m = mount(default="alice")
    store = CliRunner(env={"OMX_AGENT": "mallory"})
    result = store.invoke(doc_group, ["create", "board", "t=rga", "-w", str(m.store), "--as", "bob"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(doc_group, ["create", "notes", "t=rga", "-w", str(m.root), "--as", "bob"])
    assert result.exit_code == 1 and "--as bob through a mount starts omxfs again with OMX_AGENT=bob" in result.output
    assert m.ws.realtime.list() == ["board"]
