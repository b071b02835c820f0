"""The MCP tools on the acting agent's own branches: list them, compare them, fork the zone, driven by the official
SDK's ``Client`` against real servers, on branches made by real ``omxfs run --branch`` commands.

Beside a mount, outside a view (``python -m agent.workspace_tools.mcp_server MOUNT NAME`` started as NAME), the list
and the comparisons are those of ``omxfs branches`` and ``omxfs diff --branch``, and a fork is a branch the commands
then list and run in. In a branch's view (``omxfs mcp --branch``) the zone is that branch's overlay, which hides the
zone beneath it: the list comes from the records alone, a comparison is refused with the host's command, and so is a
fork (``.omxfs/`` is read-only in every view); in a plain view the list and the comparisons are the commands' and a
fork is refused. Every command a refusal names is run here, on the host, and does what it says.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from agent.workspace_tools import StoreBackend, WorkspaceTools
from agent.workspace_tools.zone_history import DIFF_TEXT_LIMIT
from cli.omxfs import main as omxfs
from omxfs.checkpoints.review import Review
from omxfs.store import Workspace
from tests.cli.test_mcp import call, ok
from tests.fuse.conftest import Mount, clean_env

OMXFS = [sys.executable, "-m", "cli.omxfs"]
#: what each branch of bob's zone does, made in this order by ``omxfs run --branch NAME [--from PARENT]``
BRANCHES = (
    ("b1", None, "echo B > keep.md; echo n > new.md; rm gone.md"),
    ("b2", None, "echo C > keep.md; mkdir -p sub; echo s > sub/s.md"),
    ("c1", "b1", "echo x > nested.md; rm new.md"),
    ("old", None, "echo o > old.md"),  # discarded below: an ended branch
)


def _run(root: Path, agent: str, branch: str, script: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [*OMXFS, "run", str(root), "--as", agent, "--branch", branch, *extra, "--", "sh", "-c", script]
    done = subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done


def _cli(*args: str) -> str:
    done = CliRunner().invoke(omxfs, list(args))
    assert done.exit_code == 0, done.output
    return done.stdout


def _branches(root: Path, agent: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(_cli("branches", str(root), agent, "--json"))
    return rows


def _diff(root: Path, agent: str, *branches: str) -> tuple[tuple[list[str], ...], str]:
    """``omxfs diff --branch``'s paths (added, modified, deleted) and its text."""
    named = [option for b in branches for option in ("--branch", b)]
    found = json.loads(_cli("diff", str(root), agent, *named, "--json"))
    return (found["added"], found["modified"], found["deleted"]), _cli("diff", str(root), agent, *named).rstrip("\n")


def _paths(result: dict[str, Any]) -> tuple[list[str], ...]:
    return result["added"], result["modified"], result["deleted"]


def _refusal(result: dict[str, Any]) -> str:
    """A refused call's error: one line, no traceback, that names a command to run."""
    assert result["success"] is False and "\n" not in result["error"] and "Traceback" not in json.dumps(result)
    assert result["error"].count("`") >= 2, result
    return str(result["error"])


def _quoted(message: str, start: str) -> str:
    """The command a message quotes in backticks that starts with ``start``."""
    (line,) = [q for q in message.split("`")[1::2] if q.startswith(start)]
    return line


def _on_the_host(line: str, script: str | None = None) -> subprocess.CompletedProcess[str]:
    """A printed ``omxfs ...`` line run as it is, this checkout's omxfs for ``omxfs`` and ``sh -c SCRIPT`` for
    ``CMD``."""
    words = shlex.split(line)
    assert words[0] == "omxfs"
    argv = [*OMXFS, *words[1:]]
    if script is not None:
        assert argv[-1] == "CMD"
        argv[-1:] = ["sh", "-c", script]
    done = subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, (line, done.stderr)
    return done


def _beside(m: Mount, agent: str) -> StdioServerParameters:
    """The server beside the mount, outside a view, started as ``agent`` (the mount's identity for it)."""
    args = ["-m", "agent.workspace_tools.mcp_server", str(m.root), agent]
    return StdioServerParameters(command=sys.executable, args=args, env=clean_env(agent))


def _served(root: Path, agent: str, *extra: str) -> StdioServerParameters:
    """``omxfs mcp ROOT --as AGENT``: the server in the agent's view (or its branch's, with ``--branch``)."""
    args = ["-m", "cli.omxfs", "mcp", str(root), "--as", agent, *extra]
    return StdioServerParameters(command=sys.executable, args=args, env=clean_env())


@pytest.fixture(scope="module")
def bob(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mount]:
    """A mount whose default identity is alice, and bob's zone with the branches of ``BRANCHES``, ``old``
    discarded."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: mounts and views need FUSE")
    top = tmp_path_factory.mktemp("branches")
    ws = Workspace.init(top / "ws", agents=["alice", "bob"])
    (ws.root / "agents/bob/keep.md").write_text("A\n", encoding="utf-8")
    (ws.root / "agents/bob/gone.md").write_text("D\n", encoding="utf-8")
    (top / "mnt").mkdir()
    registry: list[Mount] = []
    m = Mount(ws.root, top / "mnt", "alice", registry)
    try:
        for name, parent, script in BRANCHES:
            _run(m.root, "bob", name, script, *(("--from", parent) if parent else ()))
        _cli("discard", str(m.root), "bob", "--branch", "old", "--as", "bob")
        yield m
    finally:
        problems = m.teardown()
    assert not problems, problems


def test_beside_a_mount_the_list_and_the_comparisons_are_the_commands(bob: Mount) -> None:
    async def run() -> None:
        with anyio.fail_after(60):
            async with Client(_beside(bob, "bob")) as client:
                listed = await ok(client, "list_my_branches", {})
                assert listed["branches"] == _branches(bob.root, "bob") and listed["current"] is None
                shown = [(b["name"], b["parent"], b["state"]) for b in listed["branches"]]
                assert shown == [("b1", None, "pending"), ("b2", None, "pending"), ("c1", "b1", "pending"),
                                 ("old", None, "discarded")]  # fmt: skip
                assert listed["count"] == 4 and "counted" not in listed and listed["agent_id"] == "bob"
                for branches in (("b1",), ("c1",), ("b1", "b2"), ("c1", "b2")):
                    arguments = {"branch": branches[0], **({"other": branches[1]} if len(branches) > 1 else {})}
                    compared = await ok(client, "compare_my_branches", arguments)
                    assert (_paths(compared), compared["diff"]) == _diff(bob.root, "bob", *branches), branches
                compared = await ok(client, "compare_my_branches", {"branch": "c1"})
                assert (compared["from"], compared["to"]) == ("b1", "c1")  # against its parent, as it is
                assert _paths(compared) == (["nested.md"], [], ["new.md"])
                gone = await call(client, "compare_my_branches", {"branch": "old"})
                assert gone["error_type"] == "not_found" and "list_my_branches" in gone["hint"]
                assert "has no branch old pending" in gone["error"]

    anyio.run(run)


def test_beside_a_mount_a_fork_is_a_branch_the_commands_list_and_run_in(bob: Mount) -> None:
    async def run() -> None:
        with anyio.fail_after(60):
            async with Client(_beside(bob, "bob")) as client:
                forked = await ok(client, "fork_my_zone", {"branch": "f1"})
                root = str(bob.root)
                assert forked["run"] == f"omxfs run {root} --as bob --branch f1 -- CMD"
                assert forked["serve"] == f"omxfs mcp {root} --as bob --branch f1"
                assert forked["accept"] == f"omxfs accept {root} bob --branch f1 --as bob"
                assert (forked["branch"], forked["parent"], forked["by"]) == ("f1", None, "bob")
                assert f"a plain view of your zone is refused (`omxfs run {root} --as bob -- CMD`" in forked["note"]
                nested = await ok(client, "fork_my_zone", {"branch": "f2", "from_branch": "b1"})
                assert nested["parent"] == "b1"
                rows = {row["name"]: row for row in _branches(bob.root, "bob")}
                assert (rows["f1"]["parent"], rows["f1"]["by"], rows["f1"]["stat"], rows["f1"]["state"]) == (
                    None, "bob", "+0 ~0 -0", "pending"
                )  # fmt: skip
                assert (rows["f1"]["created"], rows["f2"]["parent"]) == (forked["created"], "b1")
                # the session goes on in the zone itself, which the mount still writes
                await ok(client, "save_to_my_workspace", {"filename": "after.md", "content": "still here\n"})
                files = (await ok(client, "list_workspace_files", {}))["files"]
                assert files == ["after.md", "gone.md", "keep.md"]  # the mount's @f1 and @f2 are no files of it
                assert Path(bob.store, "agents/bob/after.md").read_text("utf-8") == "still here\n"

                _on_the_host(forked["run"], "echo f > forked.md")
                seen = _on_the_host(nested["run"], "cat keep.md").stdout
                assert seen == "B\n"  # f2 shows the zone as b1 has it
                compared = await ok(client, "compare_my_branches", {"branch": "f1"})
                assert _paths(compared) == (["forked.md"], [], []) == _diff(bob.root, "bob", "f1")[0]
                assert not Path(bob.store, "agents/bob/forked.md").exists()  # held apart
                assert not Review(Workspace(bob.store), "bob", "f2").pending  # its run changed nothing: it ended

                again = await call(client, "fork_my_zone", {"branch": "f1"})
                assert again["error_type"] == "already_exists" and "is pending already" in again["error"]
                bad = await call(client, "fork_my_zone", {"branch": "../alice/x"})
                assert bad["error_type"] == "invalid_input" and "is no branch name" in bad["error"]
                loop = await call(client, "fork_my_zone", {"branch": "f3", "from_branch": "f3"})
                assert loop["error_type"] == "invalid_input" and not Review(Workspace(bob.store), "bob", "f3").pending

    anyio.run(run)


def test_one_agent_neither_lists_compares_nor_forks_anothers_branches(bob: Mount) -> None:
    before = _branches(bob.root, "bob")

    async def run() -> None:
        with anyio.fail_after(60):
            async with Client(_beside(bob, "alice")) as alice:
                listed = await ok(alice, "list_my_branches", {})
                assert (listed["agent_id"], listed["branches"]) == ("alice", [])  # bob's are not hers
                theirs = await call(alice, "compare_my_branches", {"branch": "b1"})
                assert theirs["error_type"] == "not_found" and "alice has no branch b1 pending" in theirs["error"]
                named = await call(alice, "fork_my_zone", {"branch": "x", "agent_id": "bob"})
                assert named["error_type"] == "invalid_arguments"
                from_theirs = await call(alice, "fork_my_zone", {"branch": "x", "from_branch": "b1"})
                assert from_theirs["error_type"] == "not_found"
                climbed = await call(alice, "list_my_branches", {"agent_id": "bob"})
                assert climbed["error_type"] == "invalid_arguments"
                mine = await ok(alice, "fork_my_zone", {"branch": "a1"})
                assert mine["run"] == f"omxfs run {bob.root} --as alice --branch a1 -- CMD"

    anyio.run(run)
    assert _branches(bob.root, "bob") == before
    assert [row["name"] for row in _branches(bob.root, "alice")] == ["a1"]
    _cli("discard", str(bob.root), "alice", "--branch", "a1", "--as", "alice")


def test_in_a_branch_view_the_list_is_the_records_and_a_comparison_or_a_fork_names_the_host_command(
    bob: Mount,
) -> None:
    """``omxfs mcp --branch b2``: the zone is b2's overlay. The list names b2 as the current branch and agrees with
    ``omxfs branches`` but for the counts (and b2's "running"); a comparison and a fork are refused with the host's
    command, which works there: a sibling's run at once, a branch of b2 once b2's view has ended."""
    later: list[str] = []

    async def run() -> None:
        with anyio.fail_after(60):
            async with Client(_served(bob.root, "bob", "--branch", "b2")) as client:
                listed = await ok(client, "list_my_branches", {})
                assert (listed["current"], listed["counted"]) == ("b2", False)
                host = _branches(bob.root, "bob")
                fields = ("name", "parent", "created", "by", "state")
                assert [[b[f] for f in fields] for b in listed["branches"]] == [[b[f] for f in fields] for b in host]
                pending = [b for b in listed["branches"] if b["state"] == "pending"]
                assert pending and all(b["stat"] == "?" for b in pending)
                assert [b["stat"] for b in listed["branches"] if b["state"] == "discarded"] == ["-"]
                assert f"`omxfs branches {bob.root} bob` on the host counts them" in listed["note"]
                b2 = next(b for b in listed["branches"] if b["name"] == "b2")
                assert b2["detail"].startswith("running (pid ")

                refused = _refusal(await call(client, "compare_my_branches", {"branch": "b1", "other": "c1"}))
                assert "branch b2's view shows your zone as the branch" in refused
                line = _quoted(refused, "omxfs diff")
                assert line == f"omxfs diff {bob.root} bob --branch b1 --branch c1"
                assert _on_the_host(line).stdout.startswith("b1 -> c1: 1 added, 0 modified, 1 deleted")

                sibling = _refusal(await call(client, "fork_my_zone", {"branch": "alt"}))
                assert "on the host, now, `" in sibling and "is read-only" in sibling
                _on_the_host(_quoted(sibling, "omxfs run"), "echo a > alt.md")  # beside b2's view
                assert Review(Workspace(bob.store), "bob", "alt").pending
                assert _quoted(sibling, "omxfs mcp") == f"omxfs mcp {bob.root} --as bob --branch alt"

                child = _refusal(await call(client, "fork_my_zone", {"branch": "c2", "from_branch": "b2"}))
                assert "once this view ends" in child
                later.append(_quoted(child, "omxfs run"))
                assert not Review(Workspace(bob.store), "bob", "c2").pending  # nothing made in the view

    anyio.run(run)
    assert later == [f"omxfs run {bob.root} --as bob --branch c2 --from b2 -- CMD"]
    _on_the_host(later[0], "echo c > c2.md")
    rows = {row["name"]: row for row in _branches(bob.root, "bob")}
    assert (rows["c2"]["parent"], rows["c2"]["stat"], rows["alt"]["stat"]) == ("b2", "+1 ~0 -0", "+1 ~0 -0")


def test_in_a_plain_view_the_list_and_the_comparisons_are_the_commands_and_a_fork_names_the_host_command(
    tmp_path: Path,
) -> None:
    """``omxfs mcp`` on a store no daemon serves: no branch is pending (a plain view is refused then), so the list
    shows the ended ones; a fork is refused with the command that makes the branch once this view ends."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: views need FUSE")
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    _run(ws.root, "bob", "done", "echo d > done.md")
    _cli("accept", str(ws.root), "bob", "--branch", "done", "--as", "bob")
    later: list[str] = []

    async def run() -> None:
        with anyio.fail_after(60):
            async with Client(_served(ws.root, "bob")) as client:
                listed = await ok(client, "list_my_branches", {})
                assert listed["branches"] == _branches(ws.root, "bob") and listed["current"] is None
                assert [(b["name"], b["state"], b["stat"]) for b in listed["branches"]] == [
                    ("done", "accepted", "1 path(s)")
                ]
                refused = _refusal(await call(client, "fork_my_zone", {"branch": "p1"}))
                assert "outside bob's view" in refused and "once this view ends" in refused
                later.append(_quoted(refused, "omxfs run"))
                assert not Review(ws, "bob", "p1").pending
                await ok(client, "save_to_my_workspace", {"filename": "more.md", "content": "m\n"})  # going on

    anyio.run(run)
    assert later == [f"omxfs run {ws.root} --as bob --branch p1 -- CMD"]
    _on_the_host(later[0], "echo p > p.md")
    assert [(b["name"], b["state"], b["stat"]) for b in _branches(ws.root, "bob")] == [
        ("p1", "pending", "+1 ~0 -0"),
        ("done", "accepted", "1 path(s)"),
    ]
    assert (ws.root / "agents/bob/more.md").read_text("utf-8") == "m\n"


def test_a_long_comparison_is_cut_as_diff_my_zone_cuts_it(tmp_path: Path) -> None:
    """Through ``StoreBackend`` (the tools beside the store): the paths are all there, the text is cut."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: views need FUSE")
    ws = Workspace.init(tmp_path / "ws", agents=["bob"])
    _run(ws.root, "bob", "long", "seq 1 9000 > long.txt; echo s > short.md")
    tools = WorkspaceTools(StoreBackend(ws, "bob"), history=True)
    compared = tools.dispatch_tool_call("compare_my_branches", {"branch": "long"})
    assert _paths(compared) == (["long.txt", "short.md"], [], []) == _diff(ws.root, "bob", "long")[0]
    full = _diff(ws.root, "bob", "long")[1]
    assert len(full) > DIFF_TEXT_LIMIT and compared["diff"].startswith(full[:DIFF_TEXT_LIMIT])
    assert compared["diff"].endswith(f"\n... [{len(full)} characters: the rest is cut; diff fewer paths]")
