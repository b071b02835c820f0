"""The MCP tools on the acting agent's own zone (issue 27): make a checkpoint, list them, diff since one, restore
one, driven by the official SDK's ``Client`` against real servers on a real mount.

``omxfs mcp`` serves in the agent's view, where ``.omxfs/`` is read-only and a restore waits for the view to end:
there the list and the diff work (the view's start made a checkpoint) and a checkpoint or a restore is refused with
the host's command. The server run beside a mount, outside a view (``python -m agent.workspace_tools.mcp_server
MOUNT NAME`` started as NAME), does all four.
"""

# ruff: noqa: F811  (the ``mount`` fixture is imported from tests/fuse/conftest.py and requested by name)
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from tests.cli.test_mcp import Clients, call, ok, session
from tests.fuse.conftest import Mount, clean_env, mount  # noqa: F401

MountFactory = Callable[..., Mount]


def test_in_the_view_the_list_and_the_diff_work_and_a_change_of_history_is_refused_with_the_host_command(
    mount: MountFactory,
) -> None:
    m = mount(agents=["alice", "bob"], default="alice")
    Path(m.store, "agents/bob/keep.md").write_text("A\n", encoding="utf-8")  # the store: the mount takes us for alice

    async def body(clients: Clients) -> None:
        bob = clients["bob"]
        listed = await ok(bob, "list_my_checkpoints", {})
        assert [c["message"] for c in listed["checkpoints"]] == ["view started"] and listed["agent_id"] == "bob"
        await ok(bob, "save_to_my_workspace", {"filename": "keep.md", "content": "B\n"})
        await ok(bob, "save_to_my_workspace", {"filename": "new.md", "content": "n\n"})
        changes = await ok(bob, "diff_my_zone", {})
        assert (changes["added"], changes["modified"], changes["deleted"]) == (["new.md"], ["keep.md"], [])
        assert "-A" in changes["diff"] and "+B" in changes["diff"]
        for name, arguments in (("make_checkpoint", {"message": "x"}), ("restore_checkpoint", {"checkpoint": "1"})):
            refused = await call(bob, name, arguments)
            assert refused["success"] is False and "outside bob's view" in refused["error"]
            assert "omxfs checkpoint WS --as bob" in refused["error"] and "omxfs restore WS bob ID" in refused["error"]
        missing = await call(bob, "diff_my_zone", {"since": "7"})
        assert missing["error_type"] == "not_found" and "list_my_checkpoints" in missing["hint"]

    session(m.root, ["bob"], body)
    assert m.path("agents/bob/keep.md").read_text(encoding="utf-8") == "B\n"  # nothing was restored


def test_beside_a_mount_the_server_makes_lists_diffs_and_restores_its_own_checkpoints(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"], default="alice")
    Path(m.store, "agents/bob/keep.md").write_text("A\n", encoding="utf-8")  # the store: the mount takes us for alice
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent.workspace_tools.mcp_server", str(m.root), "bob"],
        env=clean_env("bob"),  # the mount takes the process for bob
    )

    async def run() -> None:
        with anyio.fail_after(60):
            async with Client(server) as bob:
                made = await ok(bob, "make_checkpoint", {"message": "before the edit"})
                assert made["message"] == "before the edit" and made["by"] == "bob"
                await ok(bob, "save_to_my_workspace", {"filename": "keep.md", "content": "B\n"})
                changes = await ok(bob, "diff_my_zone", {"since": str(made["id"])})
                assert changes["modified"] == ["keep.md"] and changes["from"] == made["id"]
                done = await ok(bob, "restore_checkpoint", {"checkpoint": str(made["id"])})
                assert done["checkpoint"] == made["id"] and done["undo"] > made["id"]
                assert (await ok(bob, "read_from_workspace", {"agent_id": "bob", "filename": "keep.md"}))[
                    "content"
                ] == "A\n"
                listed = await ok(bob, "list_my_checkpoints", {})
                assert [c["id"] for c in listed["checkpoints"]] == [made["id"], done["undo"]]
                undone = await ok(bob, "restore_checkpoint", {"checkpoint": str(done["undo"])})
                assert undone["checkpoint"] == done["undo"]
                others = await call(bob, "restore_checkpoint", {"checkpoint": "last", "paths": ["../alice/x"]})
                assert others["success"] is False

    anyio.run(run)
    assert m.path("agents/bob/keep.md").read_text(encoding="utf-8") == "B\n"  # the restore undone by its own undo
    assert Path(m.store, ".omxfs/checkpoints/bob/manifests").is_dir()
