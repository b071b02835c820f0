"""The ``omxfs`` command as a user runs it: clear output, clear errors, no tracebacks."""

# ruff: noqa: F811  (the ``mount`` fixture is imported from tests/fuse/conftest.py and requested by name)

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.omxfs import main
from omxfs.store import Workspace
from tests.fuse.conftest import Mount, mount  # noqa: F401  (the mount fixture)


def test_init_creates_the_layout_and_is_idempotent(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["init", str(tmp_path / "ws"), "--agent", "alice", "--agent", "bob"])
    assert result.exit_code == 0, result.output
    assert "agents: alice, bob" in result.output
    for sub in ("agents/alice", "agents/bob", "handoff", "collaborative/current", "realtime/.crdt_state"):
        assert (tmp_path / "ws" / sub).is_dir()
    again = runner.invoke(main, ["init", str(tmp_path / "ws"), "--agent", "carol", "--supervisor", "boss"])
    assert again.exit_code == 0, again.output
    assert Workspace(tmp_path / "ws").agents() == ["alice", "bob", "carol"]
    assert "supervisors: boss" in again.output


def test_init_refuses_a_bad_agent_name_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", str(tmp_path / "ws"), "--agent", "Bad_Name"])
    assert result.exit_code == 1
    assert "invalid agent name 'Bad_Name'" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "ws").exists()


def test_status_lists_what_the_zones_hold(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    ws.private.write("alice", "alice", "a.md", b"x")
    ws.handoff.deliver("alice", "bob", "d.csv", b"1", "m")
    ws.collab.write("bob", "plan.md", b"p", expected_version=-1)
    ws.realtime.create("alice", "board", {"title": "lww_register"})
    result = CliRunner().invoke(main, ["status", str(ws.root)])
    assert result.exit_code == 0, result.output
    assert "alice: 1 private file(s), 0 handoff(s) received" in result.output
    assert "bob: 0 private file(s), 1 handoff(s) received" in result.output
    assert "collaborative/plan.md: version 1" in result.output
    assert "realtime/board: title:lww_register" in result.output


def test_status_of_a_plain_directory_says_what_to_do(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["status", str(tmp_path)])
    assert result.exit_code == 1
    assert "is not an omx workspace" in result.output and "omxfs init" in result.output


def test_mount_with_allow_other_warns_that_unmapped_users_act_as_the_default(tmp_path: Path) -> None:
    """Issue 14: --allow-other handed the mount's default identity to every local user, silently."""
    result = CliRunner().invoke(main, ["mount", str(tmp_path / "not-a-workspace"), "--as", "alice", "--allow-other"])
    assert result.exit_code != 0  # no workspace there: refused after the warning, nothing mounted
    assert "warning: --allow-other lets every local user in" in result.stderr
    assert "acts as alice" in result.stderr and "[uids]" in result.stderr
    quiet = CliRunner().invoke(main, ["mount", str(tmp_path / "not-a-workspace"), "--as", "alice"])
    assert "warning" not in quiet.stderr


@pytest.mark.parametrize("command", [["status", "WS"], ["log", "WS/collaborative/current/plan.md"]])
def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path, command: list[str]) -> None:
    """``omxfs status WS | head -1`` printed "Error: Broken pipe" (``omxfs log`` exited 1 without a word): a closed
    pipe is no error to report, and the command ends as ``ls`` does when ``head`` has read enough."""
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    ws.collab.write("alice", "plan.md", b"v1", expected_version=0)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "cli.omxfs", *(arg.replace("WS", str(ws.root)) for arg in command)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr.decode()) == (128 + signal.SIGPIPE, "")


@pytest.mark.parametrize("in_place", [True, False], ids=["mounted-in-place", "mounted-elsewhere"])
def test_init_on_a_mounted_workspace_adds_agents_the_mount_knows_at_once(
    mount: Callable[..., Mount], in_place: bool
) -> None:
    """Issue 25: ``omxfs init ./ws --supervisor boss`` on a mounted workspace said "config.toml: Permission denied"
    (the mount shows the config read-only); it adds them to the store beneath, as the mount's own user may."""
    m = mount(in_place=in_place)
    done = subprocess.run(
        [sys.executable, "-m", "cli.omxfs", "init", str(m.root), "--agent", "carol", "--supervisor", "boss"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"workspace ready at {m.store}" in done.stdout and "agents: alice, bob, carol" in done.stdout
    assert "supervisors: boss" in done.stdout
    assert Workspace(m.disk).agents() == ["alice", "bob", "carol"]
    m.run("echo mine > agents/carol/notes.md", agent="carol", check=True)
    m.run("echo checked > agents/alice/review.md", agent="boss", check=True)
    assert (m.disk / "agents/carol/notes.md").read_text() == "mine\n"
    assert (m.disk / "agents/alice/review.md").read_text() == "checked\n"
