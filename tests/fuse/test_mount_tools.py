"""``omxfs log``, ``rollback`` and ``handoff``: conveniences that act through the mount like any program (and on
an unmounted workspace through the store)."""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cli.mount_tools import COMMANDS, handoff, log, rollback
from omxfs.store import Workspace
from tests.fuse.conftest import Mount

MountFactory = Callable[..., Mount]
PLAN = "collaborative/current/plan.md"
GROUP = click.Group("omxfs", commands={c.name or "": c for c in COMMANDS})


def invoke(command: click.Command, *args: str) -> str:
    result = CliRunner().invoke(command, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def fails(command: click.Command, *args: str) -> str:
    result = CliRunner().invoke(command, list(args), catch_exceptions=False)
    assert result.exit_code != 0
    return result.output


def commit(path: Path, text: str) -> None:
    if path.exists():
        path.read_bytes()  # observe the current version
    path.write_text(text, "utf-8")


def test_commands_are_exported() -> None:
    assert sorted(GROUP.commands) == ["handoff", "log", "rollback"]


def test_C_5_log_through_the_mount(mount: MountFactory) -> None:
    m = mount()
    for text in ("one", "two", "three"):
        commit(m.path(PLAN), text)
    lines = invoke(log, str(m.path(PLAN))).splitlines()
    assert [line.split()[0] for line in lines] == ["v1", "v2", "v3"]
    assert all(line.split()[2] == "alice" and line.endswith("write by alice") for line in lines)
    entries = json.loads(invoke(log, "--json", str(m.path(PLAN))))
    assert [e["version"] for e in entries] == [1, 2, 3]
    assert "never written" in fails(log, str(m.path("collaborative/current/other.md")))
    assert "not a file in collaborative/current/" in fails(log, str(m.path("agents/alice/x")))


def test_log_shows_a_message_on_its_own_line_whatever_it_holds(mount: MountFactory) -> None:
    """A commit message is its writer's text: a newline in it printed a second, forged version line, and an escape
    sequence reached the terminal of whoever read the log."""
    m = mount()
    m.ws.collab.write("bob", "plan.md", b"x", expected_version=0, message="ok\nv9  2026-01-01  boss  forged\x1b[2J")
    (line,) = invoke(log, str(m.path(PLAN))).splitlines()
    assert line.endswith("bob  ok\\nv9  2026-01-01  boss  forged\\x1b[2J")


def test_log_lists_every_refused_write(mount: MountFactory) -> None:
    m = mount()
    commit(m.path(PLAN), "one")
    opened = [os.open(m.path(PLAN), os.O_WRONLY | os.O_TRUNC) for _ in range(2)]  # on v1, current now
    for fd, attempt in zip(opened, (b"first", b"second"), strict=True):
        os.write(fd, attempt)
    m.ws.collab.write("bob", "plan.md", b"bob's", expected_version=1)
    for fd in opened:
        with pytest.raises(OSError) as refused:
            os.close(fd)
        assert refused.value.errno == errno.EBUSY
    lines = invoke(log, str(m.path(PLAN))).splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["v1", "v2"]
    assert lines[2] == "refused writes (2), oldest first:"
    kept = [line.split("kept at ")[1] for line in lines[3:]]
    assert len(kept) == 2 and all("alice  on v1, v2 was current" in line for line in lines[3:])
    assert [(m.store / k).read_text() for k in kept] == ["first", "second"]


def test_C_6_rollback_through_the_mount(mount: MountFactory) -> None:
    m = mount()
    for text in ("初稿", "two", "three"):
        commit(m.path(PLAN), text)
    out = invoke(rollback, str(m.path(PLAN)), "1")
    assert "version 4 has the content of version 1" in out
    [*_, last] = m.ws.collab.history("plan.md")
    assert (last.version, last.author, last.message) == (4, "alice", "rollback to version 1")
    assert m.path(PLAN).read_text("utf-8") == "初稿" and len(m.ws.collab.history("plan.md")) == 4
    assert "has no version 9" in fails(rollback, str(m.path(PLAN)), "9")
    invoke(rollback, str(m.path(PLAN)), "2", "-m", "back to two")
    assert m.ws.collab.history("plan.md")[-1].message == "back to two"


def test_B_1_handoff_through_the_mount(mount: MountFactory, tmp_path: Path) -> None:
    m = mount()
    source = tmp_path / "data.csv"
    source.write_text("1,2,3", "utf-8")
    out = invoke(handoff, str(source), "--to", "bob", "-m", "请分析这份数据", "-w", str(m.root))
    assert out.strip() == "delivered handoff/alice_to_bob/data.csv"
    assert (m.store / "handoff/alice_to_bob/data.csv").read_text("utf-8") == "1,2,3"
    meta = json.loads((m.store / "handoff/alice_to_bob/data.csv.meta.json").read_text("utf-8"))
    assert (meta["from"], meta["to"], meta["message"]) == ("alice", "bob", "请分析这份数据")
    # Again, as bob in a process of its own (the mount knows callers by their process's environment).
    code = (
        "import sys, click; from cli.mount_tools import COMMANDS; "
        "click.Group('omxfs', commands={c.name: c for c in COMMANDS})(sys.argv[1:])"
    )
    done = m.run(
        [sys.executable, "-c", code, "handoff", str(source), "--to", "alice", "-m", "back", "--name", "r.csv"],
        agent="bob",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((m.store / "handoff/bob_to_alice/r.csv.meta.json").read_text("utf-8"))["message"] == "back"


def test_handoff_to_an_unknown_agent_or_to_oneself_fails_clearly(
    mount: MountFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = mount()
    source = tmp_path / "x.txt"
    source.write_text("x", "utf-8")
    assert "no agent named 'zed'" in fails(handoff, str(source), "--to", "zed", "-w", str(m.root))
    # To oneself: the mount refuses the box as a permission; the command says why.
    assert "a handoff goes to another agent: you act as alice" in fails(
        handoff, str(source), "--to", "alice", "-w", str(m.root)
    )
    # On the store directory itself the store acts, as OMX_AGENT or the login name: here an unknown one.
    monkeypatch.setenv("OMX_AGENT", "mallory")
    assert "unknown agent 'mallory'" in fails(handoff, str(source), "--to", "bob", "-w", str(m.store))


def test_on_an_unmounted_workspace(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMX_AGENT", "alice")
    plan = ws.root / PLAN
    ws.collab.write("alice", "plan.md", b"one", expected_version=0)
    ws.collab.write("bob", "plan.md", b"two", expected_version=1)
    assert [line.split()[0] for line in invoke(log, str(plan)).splitlines()] == ["v1", "v2"]
    invoke(rollback, str(plan), "1")
    assert ws.collab.read("plan.md").content == b"one" and ws.collab.history("plan.md")[-1].author == "alice"
    source = tmp_path / "data.csv"
    source.write_text("1,2,3", "utf-8")
    invoke(handoff, str(source), "--to", "bob", "-m", "hi", "-w", str(ws.root))
    assert ws.handoff.read("alice", "bob", "data.csv").meta.message == "hi"
