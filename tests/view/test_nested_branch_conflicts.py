"""A nested branch is judged against what its parent branch itself changed since the branch was made from it.

A branch made from another (``omxfs run --branch c --from p``) records p's change as it is then
(``parent-change.json`` beside ``branch.json``). p may run again while c is pending (never at once with c); a path
p changed since that c changed too makes c conflicted: ``omxfs branches``, the dashboard and the MCP list say so, and
its accept into p is refused naming the path, with c kept and p's write not applied over, as for a branch of the
zone whose zone changed. p changing other paths is no conflict; a rebase moves the record to p's change now; a
record made before they were kept is accepted as ever. All on real ``omxfs run`` views and the real commands.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.workspace_tools.zone_branches import fork, listing
from omxfs.checkpoints.branches import PARENT_RECORD, parent_change_made
from omxfs.store import Workspace
from omxfs.ui.branches import zone_branches
from tests.checkpoints.conftest import omxfs
from tests.view.conftest import OMXFS, clean_env, run_view

Ok = Callable[..., str]


def _branches(ws: Path) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in json.loads(omxfs("branches", str(ws), "alice", "--json").stdout)}


def _pasted(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command line a message gave, run as pasted (``omxfs`` as this checkout's) in ``cwd``."""
    argv = shlex.split(line)
    assert argv[0] == "omxfs", line
    return subprocess.run(
        [*OMXFS, *argv[1:]], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=120, check=False
    )


def test_a_path_the_parent_changed_again_is_refused_kept_and_taken_after_a_rebase(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    (zone / "todo.md").write_text("base\n")
    ok(run_view(ws, "alice", "echo p > notes.md", "--branch", "p"))
    ok(run_view(ws, "alice", "echo c > notes.md", "--branch", "c", "--from", "p"))
    assert _branches(ws)["c"]["state"] == "pending"
    ok(run_view(ws, "alice", "echo p2 > notes.md; echo p2 > todo.md", "--branch", "p"))  # p again, c pending

    listed = _branches(ws)
    assert (listed["c"]["state"], listed["c"]["detail"]) == ("conflicted", "branch p changed since: notes.md"), listed
    assert listed["p"]["state"] == "pending"
    column = next(c for c in zone_branches(Workspace(ws), "alice") if c.name == "c")
    assert column.state == "conflicted" and [s.path for s in column.sides] == ["notes.md"]
    assert [s.why for s in column.sides] == ["branch p, its parent, changed since"]
    mcp_row = next(r for r in listing(Workspace(ws), "alice", None).branches if r.name == "c")
    assert (mcp_row.state, mcp_row.detail) == ("conflicted", "branch p changed since: notes.md")

    refused = omxfs("accept", str(ws), "alice", "--branch", "c", "--as", "alice", check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    (line,) = refused.stderr.splitlines()
    assert line.startswith(
        "Error: alice's branch c is conflicted: branch p changed notes.md since branch c was made from it. It is kept"
    ), line
    upper = ws / ".omxfs/branches/alice"
    assert (upper / "p/upper/notes.md").read_text() == "p2\n"  # not applied over
    assert (upper / "c/upper/notes.md").read_text() == "c\n"  # kept
    commands = [part.split("`")[0] for part in line.split("`")[1::2]]
    assert [c.split()[1] for c in commands] == ["diff", "rebase", "discard"], commands
    both = _pasted(commands[0], ws.parent)
    assert both.returncode == 0 and "-p2\n+c\n" in both.stdout, both.stdout + both.stderr

    rebased = _pasted(commands[1], ws.parent)
    assert rebased.returncode == 0 and "rebased alice's branch c on branch p as it is now" in rebased.stdout
    assert "notes.md" in rebased.stderr, rebased.stderr  # what its accept overwrites
    assert _branches(ws)["c"]["state"] == "pending"
    ok(run_view(ws, "alice", "echo p3 > todo.md", "--branch", "p"))  # p again, elsewhere: no conflict
    assert _branches(ws)["c"]["state"] == "pending"
    accepted = omxfs("accept", str(ws), "alice", "--branch", "c", "--as", "alice").stdout
    assert accepted.startswith("accepted alice's branch c into branch p\n"), accepted
    assert (upper / "p/upper/notes.md").read_text() == "c\n" and (upper / "p/upper/todo.md").read_text() == "p3\n"


def test_the_parent_changing_other_paths_or_making_the_same_change_is_no_conflict(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    (zone / "lib").mkdir()
    (zone / "lib/a.py").write_text("a\n")
    ok(run_view(ws, "alice", "echo p > notes.md; echo p > plan.md", "--branch", "p"))
    ok(run_view(ws, "alice", "echo c > notes.md; echo c > c.md; echo b > lib/a.py", "--branch", "c", "--from", "p"))
    ok(run_view(ws, "alice", "echo c > notes.md; echo p2 > plan.md; echo p2 > other.md", "--branch", "p"))
    assert _branches(ws)["c"]["state"] == "pending"  # notes.md as c made it, the rest elsewhere

    ok(run_view(ws, "alice", "rm -r lib", "--branch", "p"))  # p drops the directory c edits in
    row = _branches(ws)["c"]
    assert (row["state"], row["detail"]) == ("conflicted", "branch p changed since: lib, lib/a.py"), row
    ok(run_view(ws, "alice", "mkdir lib; echo a > lib/a.py", "--branch", "p"))  # and makes it again as it was
    assert _branches(ws)["c"]["state"] == "pending"

    omxfs("accept", str(ws), "alice", "--branch", "c", "--as", "alice")
    omxfs("accept", str(ws), "alice", "--branch", "p", "--as", "alice")
    files = {str(p.relative_to(zone)): p.read_text() for p in zone.rglob("*") if p.is_file()}
    assert files == {"notes.md": "c\n", "plan.md": "p2\n", "other.md": "p2\n", "c.md": "c\n", "lib/a.py": "b\n"}


def test_a_sibling_accepted_into_the_parent_is_named_as_itself_not_as_the_parent(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    ok(run_view(ws, "alice", "echo p > p.md", "--branch", "p"))
    ok(run_view(ws, "alice", "echo c > notes.md", "--branch", "c", "--from", "p"))
    ok(run_view(ws, "alice", "echo d > notes.md", "--branch", "d", "--from", "p"))
    omxfs("accept", str(ws), "alice", "--branch", "d", "--as", "alice")
    row = _branches(ws)["c"]
    assert (row["state"], row["detail"]) == ("conflicted", "with d: notes.md"), row


def test_a_nested_branch_recorded_without_its_parents_change_is_accepted_as_before(store: Workspace, ok: Ok) -> None:
    """A nested branch made before their parent's change was recorded: its directory as the code before left it."""
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    ok(run_view(ws, "alice", "echo p > notes.md; echo p > p.md", "--branch", "p"))
    forked = fork(store, "alice", "c", "p", None)  # made as omxfs run makes one: it records p's change too
    record = ws / ".omxfs/branches/alice/c" / PARENT_RECORD
    assert forked.parent == "p" and set(parent_change_made(record.parent) or {}) == {"notes.md", "p.md"}
    ok(run_view(ws, "alice", "echo c > notes.md", "--branch", "c"))
    record.unlink()
    ok(run_view(ws, "alice", "echo p2 > notes.md", "--branch", "p"))
    assert _branches(ws)["c"]["state"] == "pending"
    omxfs("accept", str(ws), "alice", "--branch", "c", "--as", "alice")
    assert (ws / ".omxfs/branches/alice/p/upper/notes.md").read_text() == "c\n"
