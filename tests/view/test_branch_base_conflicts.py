"""A branch is judged against what the zone itself changed since it was made, not only against its accepted siblings.

A branch of the zone records its base, a checkpoint of the zone as the branch starts (``branch.json``'s ``base``).
Its owner writing the zone through an ``omxfs mount``, or a person's ``omxfs restore``, changes the zone under the
branch; a branch that changed one of those paths too is then conflicted, kept and refused by accept with the path
named, as when a sibling accepted first changed it. A branch whose paths the zone left alone, or that made what the
zone made, is accepted; a rebase moves the base to the zone now. All on real ``omxfs run --branch`` views, a real
mount and the real commands.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.workspace_tools.zone_branches import fork, listing
from omxfs.checkpoints import ZoneHistory
from omxfs.checkpoints.branches import made
from omxfs.store import Workspace
from omxfs.ui.branches import zone_branches
from tests.checkpoints.conftest import omxfs
from tests.fuse.conftest import Mount
from tests.view.conftest import OMXFS, clean_env, run_view

Ok = Callable[..., str]


def _branches(ws: Path, agent: str) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in json.loads(omxfs("branches", str(ws), agent, "--json").stdout)}


def _pasted(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command line a message gave, run as pasted (``omxfs`` as this checkout's) in ``cwd``."""
    argv = shlex.split(line)
    assert argv[0] == "omxfs", line
    return subprocess.run(
        [*OMXFS, *argv[1:]], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=120, check=False
    )


def test_a_branch_over_a_path_the_zone_changed_through_a_mount_is_conflicted_kept_and_refused(
    mount: Callable[..., Mount], ok: Ok
) -> None:
    shared = mount(agents=("alice", "bob"), default="bob")
    ws, zone = shared.store, shared.store / "agents/bob"
    (zone / "notes.md").write_text("base\n")
    (zone / "todo.md").write_text("base\n")
    ok(run_view(ws, "bob", "echo branch > notes.md", "--branch", "mine"))
    ok(run_view(ws, "bob", "echo aside > aside.md; echo done > todo.md", "--branch", "aside"))
    record = json.loads((ws / ".omxfs/branches/bob/mine/branch.json").read_text())
    assert isinstance(record["base"], int) and record["base"] in ZoneHistory(Workspace(ws), "bob").numbers()
    assert _branches(ws, "bob")["mine"]["state"] == "pending"

    shared.run("echo zone > agents/bob/notes.md", check=True)  # its owner, through the mount
    assert (zone / "notes.md").read_text() == "zone\n"

    listed = _branches(ws, "bob")
    assert listed["mine"]["state"] == "conflicted", listed
    assert listed["mine"]["detail"] == "the zone changed since: notes.md"
    assert listed["aside"]["state"] == "pending" and listed["aside"]["detail"] == ""
    table = omxfs("branches", str(ws), "bob").stdout
    assert any(line.startswith("mine ") and "conflicted" in line for line in table.splitlines()), table
    # the dashboard's column (both sides of the path) and the MCP tool's list say so too
    column = next(c for c in zone_branches(Workspace(ws), "bob") if c.name == "mine")
    assert column.state == "conflicted" and [(s.path, s.why) for s in column.sides] == [("notes.md", "the zone itself")]
    assert (column.sides[0].zone.strip(), column.sides[0].branch.strip()) == ("zone", "branch")
    mcp_row = next(r for r in listing(Workspace(ws), "bob", None).branches if r.name == "mine")
    assert (mcp_row.state, mcp_row.detail) == ("conflicted", "the zone changed since: notes.md")

    refused = omxfs("accept", str(ws), "bob", "--branch", "mine", "--as", "bob", check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    (line,) = refused.stderr.splitlines()
    assert line.startswith("Error: bob's branch mine is conflicted: the zone changed notes.md since branch mine was")
    assert (zone / "notes.md").read_text() == "zone\n"  # not applied over
    assert (ws / ".omxfs/branches/bob/mine/upper/notes.md").read_text() == "branch\n"  # kept
    commands = [part.split("`")[0] for part in line.split("`")[1::2]]
    assert [c.split()[1] for c in commands] == ["diff", "rebase", "discard"], commands
    both = _pasted(commands[0], ws.parent)
    assert both.returncode == 0 and "-zone\n+branch\n" in both.stdout, both.stdout + both.stderr

    # the branch whose paths the zone left alone goes in as ever
    omxfs("accept", str(ws), "bob", "--branch", "aside", "--as", "bob")
    assert (zone / "aside.md").read_text() == "aside\n" and (zone / "todo.md").read_text() == "done\n"
    assert _branches(ws, "bob")["mine"]["state"] == "conflicted"

    rebased = _pasted(commands[1], ws.parent)
    assert rebased.returncode == 0 and "rebased bob's branch mine" in rebased.stdout, rebased.stderr
    assert "notes.md" in rebased.stderr  # what its accept overwrites
    assert _branches(ws, "bob")["mine"]["state"] == "pending"
    omxfs("accept", str(ws), "bob", "--branch", "mine", "--as", "bob")
    assert (zone / "notes.md").read_text() == "branch\n"


def test_a_restore_under_a_branch_is_a_change_of_the_zone_a_branch_collides_with(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("v1\n")
    (zone / "plan.md").write_text("v1\n")
    first = ZoneHistory(store, "alice").make("alice")
    assert first is not None
    (zone / "notes.md").write_text("v2\n")
    ok(run_view(ws, "alice", "echo branch > notes.md", "--branch", "mine"))
    ok(run_view(ws, "alice", "echo other > other.md", "--branch", "other"))
    omxfs("restore", str(ws), "alice", str(first.number), "--as", "alice")
    assert (zone / "notes.md").read_text() == "v1\n"

    refused = omxfs("accept", str(ws), "alice", "--branch", "mine", "--as", "alice", check=False)
    assert refused.returncode == 1 and "the zone changed notes.md since branch mine was made" in refused.stderr
    assert (zone / "notes.md").read_text() == "v1\n"
    assert _branches(ws, "alice")["mine"]["state"] == "conflicted"
    omxfs("accept", str(ws), "alice", "--branch", "other", "--as", "alice")
    assert (zone / "other.md").read_text() == "other\n"


def test_the_same_change_in_the_zone_and_in_a_branch_is_no_conflict(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    ok(run_view(ws, "alice", "echo same > notes.md; echo x > x.md", "--branch", "mine"))
    (zone / "notes.md").write_text("same\n")  # the store written directly, to what the branch made
    assert _branches(ws, "alice")["mine"]["state"] == "pending"
    omxfs("accept", str(ws), "alice", "--branch", "mine", "--as", "alice")
    assert (zone / "notes.md").read_text() == "same\n" and (zone / "x.md").read_text() == "x\n"


def test_a_deleted_directory_collides_with_a_change_below_it_either_way(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "lib").mkdir()
    (zone / "lib/a.py").write_text("a\n")
    (zone / "docs").mkdir()
    (zone / "docs/guide.md").write_text("guide\n")
    ok(run_view(ws, "alice", "echo b > lib/a.py", "--branch", "edits"))
    ok(run_view(ws, "alice", "rm -r docs", "--branch", "drops"))
    (zone / "lib/a.py").unlink()
    (zone / "lib").rmdir()  # the zone drops what one branch edits
    (zone / "docs/new.md").write_text("new\n")  # and adds below what the other drops
    listed = _branches(ws, "alice")
    assert (listed["edits"]["state"], listed["edits"]["detail"]) == (
        "conflicted",
        "the zone changed since: lib, lib/a.py",
    )
    assert listed["drops"]["state"] == "conflicted" and "docs/new.md" in listed["drops"]["detail"], listed


def test_a_branch_recorded_without_a_base_is_checked_against_its_siblings_only(store: Workspace, ok: Ok) -> None:
    """A branch made before bases were recorded: its record as the code before wrote it (no ``base``)."""
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    ok(run_view(ws, "alice", "echo branch > notes.md", "--branch", "old"))
    record_path = ws / ".omxfs/branches/alice/old/branch.json"
    record = json.loads(record_path.read_text())
    del record["base"]
    record_path.write_text(json.dumps(record))
    assert made(record_path.parent).base is None
    (zone / "notes.md").write_text("zone\n")
    assert _branches(ws, "alice")["old"]["state"] == "pending"
    omxfs("accept", str(ws), "alice", "--branch", "old", "--as", "alice")
    assert (zone / "notes.md").read_text() == "branch\n"


def test_a_branch_forked_over_mcp_records_a_checkpoint_of_the_zone_as_its_base(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    history = ZoneHistory(store, "alice")
    (zone / "notes.md").write_text("base\n")
    history.make("alice")
    (zone / "notes.md").write_text("since\n")  # not in any checkpoint yet: the fork makes one
    forked = fork(store, "alice", "forked", None, None)
    base = made(ws / ".omxfs/branches/alice/forked").base
    assert base == history.numbers()[-1] and base == 2, (base, history.numbers())
    assert history.load(base).message == "branch forked started"
    entry = history.load(base).entry("notes.md")
    assert entry is not None and entry.size == len("since\n")
    ok(run_view(ws, "alice", "echo branch > notes.md", "--branch", forked.branch))
    (zone / "notes.md").write_text("zone\n")
    refused = omxfs("accept", str(ws), "alice", "--branch", "forked", "--as", "alice", check=False)
    assert refused.returncode == 1 and "the zone changed notes.md since branch forked was made" in refused.stderr


def test_a_branch_whose_base_was_pruned_is_conflicted_until_rebased(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    ok(run_view(ws, "alice", "echo branch > notes.md", "--branch", "mine"))
    base = made(ws / ".omxfs/branches/alice/mine").base
    history = ZoneHistory(store, "alice")
    (zone / "other.md").write_text("other\n")
    history.make("alice")
    history.prune("alice", 1)
    assert base not in history.numbers()
    row = _branches(ws, "alice")["mine"]
    assert row["state"] == "conflicted" and f"its base, checkpoint {base}, is gone (pruned)" in row["detail"], row
    refused = omxfs("accept", str(ws), "alice", "--branch", "mine", "--as", "alice", check=False)
    assert refused.returncode == 1 and f"checkpoint {base} of the zone, is gone (pruned)" in refused.stderr
    omxfs("rebase", str(ws), "alice", "--branch", "mine", "--as", "alice")
    omxfs("accept", str(ws), "alice", "--branch", "mine", "--as", "alice")
    assert (zone / "notes.md").read_text() == "branch\n"


def test_omxfs_checkpoints_prune_keeps_the_base_of_a_pending_branch(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    ok(run_view(ws, "alice", "echo branch > notes.md", "--branch", "mine"))
    base = made(ws / ".omxfs/branches/alice/mine").base
    history = ZoneHistory(store, "alice")
    (zone / "other.md").write_text("other\n")
    history.make("alice")
    pruned = omxfs("checkpoints", str(ws), "alice", "--prune", "1", "--as", "alice")
    assert "that snapshots or pending branches name" in pruned.stderr, pruned.stderr
    assert base in history.numbers()
    assert _branches(ws, "alice")["mine"]["state"] == "pending"
    omxfs("accept", str(ws), "alice", "--branch", "mine", "--as", "alice")
    assert (zone / "notes.md").read_text() == "branch\n"
