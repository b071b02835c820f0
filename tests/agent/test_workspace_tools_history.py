"""The tools on an agent's own checkpoints (issue 27) through ``StoreBackend``, on real files: offered only when
asked for (the MCP server asks; omx's plans and agent runs have their own checkpoint and do not)."""

from __future__ import annotations

from pathlib import Path

from agent.workspace_tools import StoreBackend, WorkspaceTools, get_tool_definitions
from omxfs.store import Workspace


def test_make_diff_restore_and_list_on_the_store(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    tools = WorkspaceTools(StoreBackend(ws, "bob"), history=True)
    (ws.root / "agents/bob/keep.md").write_text("A\n", encoding="utf-8")
    made = tools.dispatch_tool_call("make_checkpoint", {"message": "start"})
    assert made["success"] and made["message"] == "start" and made["by"] == "bob"
    (ws.root / "agents/bob/keep.md").write_text("B\n", encoding="utf-8")
    (ws.root / "agents/bob/new.md").write_text("n\n", encoding="utf-8")
    changes = tools.dispatch_tool_call("diff_my_zone", {})
    assert (changes["added"], changes["modified"], changes["deleted"]) == (["new.md"], ["keep.md"], [])
    done = tools.dispatch_tool_call("restore_checkpoint", {"checkpoint": "last", "paths": ["keep.md"]})
    assert done["success"] and done["paths"] == ["keep.md"], done
    assert (ws.root / "agents/bob/keep.md").read_text(encoding="utf-8") == "A\n"
    assert (ws.root / "agents/bob/new.md").exists()  # only the path asked for
    listed = tools.dispatch_tool_call("list_my_checkpoints", {})
    assert [c["id"] for c in listed["checkpoints"]] == [made["id"], done["undo"]]
    missing = tools.dispatch_tool_call("restore_checkpoint", {"checkpoint": "9"})
    assert missing["error_type"] == "not_found" and "list_my_checkpoints" in missing["hint"]


def test_the_history_tools_are_offered_only_when_asked_for(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", agents=["bob"])
    plain = WorkspaceTools(StoreBackend(ws, "bob"))
    assert plain.dispatch_tool_call("make_checkpoint", {})["error_type"] == "unknown_tool"
    names = {d["name"] for d in get_tool_definitions(history=True)} - {d["name"] for d in get_tool_definitions()}
    checkpoints = {"make_checkpoint", "list_my_checkpoints", "diff_my_zone", "restore_checkpoint"}
    assert names == checkpoints | {"list_my_branches", "compare_my_branches", "fork_my_zone"}
    assert not (ws.meta / "checkpoints" / "bob").exists()
