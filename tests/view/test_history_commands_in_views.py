"""``omxfs``'s reading commands on the workspace from inside a view, as the agent in it types them.

In a view the workspace is the view's daemon, with the store's ``.omxfs/`` and the agent's zone bound over it, so the
path serves as the store to read: ``omxfs checkpoints``, ``diff`` and ``branches`` answer there as on the host (they
said "an omxfs mount whose daemon cannot be found"). In a view of one of the agent's branches the zone is that
branch's overlay, so a command that compares a branch with the zone is refused with its line for the host, which
works when run there.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs
from tests.view.conftest import clean_env, run_view

#: ``omxfs`` in a view: this interpreter, which the view binds
OMXFS = f"{shlex.quote(sys.executable)} -m cli.omxfs"


def test_the_history_commands_read_the_workspace_from_inside_a_plain_view(store: Workspace) -> None:
    ws, zone = store.root, store.root / "agents/bob"
    (zone / "notes.md").write_text("one\n")
    script = f"""
    echo two > {ws}/agents/bob/notes.md
    {OMXFS} checkpoints {ws} bob --json
    {OMXFS} diff {ws} bob
    {OMXFS} checkpoint {ws} || echo "checkpoint refused"
    """
    seen = run_view(ws, "bob", script)
    assert seen.returncode == 0, seen.stderr
    assert '"message": "view started"' in seen.stdout and "-one\n+two" in seen.stdout, seen.stdout
    assert "checkpoint refused" in seen.stdout
    assert "checkpoints are made and restored from outside a view" in seen.stderr
    assert "daemon cannot be found" not in seen.stderr


def test_another_agents_branches_are_listed_in_a_view_as_on_the_host(store: Workspace) -> None:
    ws = store.root
    (ws / "agents/bob/notes.md").write_text("one\n")
    made = run_view(ws, "bob", "echo two > notes.md", "--branch", "try")
    assert made.returncode == 0, made.stderr
    seen = run_view(ws, "alice", f"{OMXFS} branches {ws} bob; {OMXFS} diff {ws} bob --branch try")
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.startswith(omxfs("branches", str(ws), "bob").stdout), seen.stdout
    assert "-one\n+two" in seen.stdout


def test_in_a_branch_view_comparing_a_branch_with_the_zone_is_refused_with_the_host_line(store: Workspace) -> None:
    ws = store.root
    (ws / "agents/bob/notes.md").write_text("one\n")
    made = run_view(ws, "bob", "echo two > notes.md", "--branch", "first")
    assert made.returncode == 0, made.stderr
    seen = run_view(ws, "bob", f"echo three > notes.md; {OMXFS} branches {ws} bob", "--branch", "second")
    assert seen.returncode == 1 and "Traceback" not in seen.stderr, seen.stderr
    refusal = next(line for line in seen.stderr.splitlines() if line.startswith("Error:"))
    assert "in the view of bob's branch second the zone is that branch's overlay" in refusal, refusal
    host = shlex.split(refusal.split("`")[1])
    assert host == ["omxfs", "branches", str(ws), "bob"]
    listed = subprocess.run(
        [sys.executable, "-m", "cli.omxfs", *host[1:]], env=clean_env(), capture_output=True, text=True, check=True
    )
    assert "first" in listed.stdout and "second" in listed.stdout
