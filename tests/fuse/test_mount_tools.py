"""``omxfs log``, ``rollback`` and ``handoff``: conveniences that act through the mount like any program (and on
an unmounted workspace through the store)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cli import log as log_module
from cli import to_click
from cli.mount_tools import COMMANDS, handoff, rollback
from cli.omxfs import main as omxfs
from cli.params import ACTING_AGENT_HELP
from omxfs.store import Workspace
from tests.fuse.conftest import Mount, clean_env

MountFactory = Callable[..., Mount]
PLAN = "collaborative/current/plan.md"
log = to_click.command(log_module.log)  # declared (cli.declare): the click command omxfs makes of it
GROUP = click.Group("omxfs", commands={c.name or "": c for c in [log, *COMMANDS]})


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
    assert "you act as 'mallory' (OMX_AGENT), which is no agent of this workspace: name one with --as NAME" in fails(
        handoff, str(source), "--to", "bob", "-w", str(m.store)
    )


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


# -- --as NAME: the same option on every command that acts for an agent (issue 25) -------------------------------


def omxfs_process(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``omxfs ARGS`` as a real process: a mount knows a process by the environment it started with."""
    return subprocess.run(
        [sys.executable, "-m", "cli.omxfs", *map(str, args)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    said = done.stdout + done.stderr
    assert done.returncode == 1 and done.stdout == "" and done.stderr.count("\n") == 1, said
    assert done.stderr.startswith("Error: "), said
    return done.stderr


def agent_commands(root: Path, source: Path) -> dict[str, list[str | Path]]:
    """Each command that acts for an agent, on ``root`` (``-w``), with its paths taken in the workspace."""
    w = ["-w", root]
    return {
        "handoff": ["handoff", source, "--to", "alice", "-m", "from bob", *w],
        "rollback": ["rollback", PLAN, "1", *w],
        "doc create": ["doc", "create", "board", "t=rga", *w],
        "log": ["log", PLAN, *w],  # last: it shows the rollback's author
    }


@pytest.mark.parametrize("mounted", [True, False], ids=["through a mount", "on the store"])
def test_every_agent_command_acts_as_the_agent_its_as_names(mount: MountFactory, tmp_path: Path, mounted: bool) -> None:
    """As root on an unmounted store, ``omxfs handoff data.csv --to alice -w ws`` said "unknown agent 'root'" and
    no command had --as. Each now takes --as NAME: through a mount it is passed on as OMX_AGENT (the process starts
    again with it), so a process that started claiming mallory, whose every request the mount refuses, acts as bob;
    on the store the store acts as bob. Without --as each says in one line whom it took the caller for, and why."""
    if mounted:
        m = mount(default="alice")
        ws, root = m.ws, m.root
        env, chosen = clean_env("mallory"), "OMX_AGENT"
    else:
        ws = Workspace.init(tmp_path / "store", agents=["alice", "bob"])
        root = ws.root
        env, chosen = {**clean_env(), "LOGNAME": "mallory"}, "your login, with no --as and no OMX_AGENT"
    ws.collab.write("alice", "plan.md", b"one", expected_version=0)
    ws.collab.write("alice", "plan.md", b"two", expected_version=1)
    source = tmp_path / "data.csv"
    source.write_text("1,2,3", "utf-8")
    commands = agent_commands(root, source)
    for what, args in commands.items():
        if what == "log" and not mounted:
            continue  # reading a store's history takes no agent; a mount answers only its agents
        said = one_line(omxfs_process(env, *args))
        assert (
            f"you act as 'mallory' ({chosen}), which is no agent of this workspace: name one with --as NAME" in said
        ), what
    assert ws.handoff.inbox("alice") == [] and ws.realtime.list() == [] and len(ws.collab.history("plan.md")) == 2
    done = {what: omxfs_process(env, *args, "--as", "bob") for what, args in commands.items()}
    assert all(d.returncode == 0 for d in done.values()), {what: d.stderr for what, d in done.items()}
    delivered = ws.handoff.read("bob", "alice", "data.csv")
    assert (delivered.content, delivered.meta.sender, delivered.meta.message) == (b"1,2,3", "bob", "from bob")
    [*_, last] = ws.collab.history("plan.md")
    assert (last.version, last.author, ws.collab.read("plan.md").content) == (3, "bob", b"one")
    assert ws.realtime.load("board").schema == {"t": "rga"}
    assert [line.split()[2] for line in done["log"].stdout.splitlines()] == ["alice", "alice", "bob"]
    assert "no agent named 'zed'" in one_line(omxfs_process(clean_env(), "log", PLAN, "-w", root, "--as", "zed"))
    if mounted:  # the mount shows mallory nothing, not even the config that would say whether zed is an agent
        said = one_line(omxfs_process(env, "log", PLAN, "-w", root, "--as", "zed"))
        assert f"the mount at {root} refuses you as 'zed': no agent of this workspace has that name" in said


def test_as_through_a_mount_is_refused_where_the_uid_map_decides(mount: MountFactory, tmp_path: Path) -> None:
    """The uid map is the kernel's word (SPEC §3): a uid it binds is its agent whatever the process claims, and a
    name it binds is its uid's alone. --as says so in one line rather than act as someone else, or be refused."""
    mapped = mount(default="alice", uids={os.getuid(): "alice"})
    bound = mount(default="alice", uids={os.getuid() + 4242: "bob"})
    source = tmp_path / "data.csv"
    source.write_text("x", "utf-8")
    env = clean_env("mallory")
    said = one_line(omxfs_process(env, "handoff", source, "--to", "alice", "--as", "bob", "-w", mapped.root))
    assert f"the mount takes uid {os.getuid()} for alice (the workspace's uid map), whatever it claims" in said
    said = one_line(omxfs_process(clean_env(), "doc", "create", "d", "t=rga", "--as", "bob", "-w", bound.root))
    assert f"the workspace's uid map binds bob to uid {os.getuid() + 4242}: through the mount only that uid" in said
    assert mapped.ws.handoff.inbox("alice") == [] and bound.ws.realtime.list() == []
    ok = omxfs_process(env, "handoff", source, "--to", "bob", "--as", "alice", "-w", mapped.root)
    assert ok.returncode == 0, ok.stderr  # the uid map makes it alice: no claim needed
    assert mapped.ws.handoff.read("alice", "bob", "data.csv").meta.sender == "alice"


def test_as_in_an_agents_view_names_the_views_agent_or_nobody(ws: Workspace) -> None:
    """In bob's view every request is bob's: --as alice there would claim what the view does not do."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: views need FUSE")
    (ws.root / "agents/bob/data.csv").write_text("x", "utf-8")
    view = [sys.executable, "-m", "cli.omxfs", "run", str(ws.root), "--as", "bob", "--", sys.executable, "-m"]
    command = ["cli.omxfs", "handoff", "agents/bob/data.csv", "--to", "charlie", "-w", str(ws.root)]
    runs = [
        subprocess.run(
            [*view, *command, "--as", agent],
            cwd=ws.root,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        for agent in ("alice", "bob")
    ]
    assert "Error: this process runs in bob's view: it cannot act as alice" in one_line(runs[0])
    assert runs[1].returncode == 0, runs[1].stderr
    assert [(h.sender, h.filename) for h in ws.handoff.inbox("charlie")] == [("bob", "data.csv")]


def test_a_path_taken_in_the_workspace_must_lie_in_it(ws: Workspace, tmp_path: Path) -> None:
    other = Workspace.init(tmp_path / "other", agents=["alice"])
    other.collab.write("alice", "plan.md", b"x", expected_version=0)
    said = fails(log, str(other.root / PLAN), "-w", str(ws.root))
    assert f"{other.root / PLAN} is not a file of the workspace {ws.root}" in said


@pytest.mark.parametrize("command", [["handoff"], ["rollback"], ["log"], ["doc", "create"]], ids=" ".join)
def test_the_help_of_each_agent_command_says_how_the_agent_is_chosen(command: list[str]) -> None:
    shown = " ".join(CliRunner().invoke(omxfs, [*command, "--help"]).output.split())
    assert f"--as NAME {' '.join(ACTING_AGENT_HELP.split())}" in shown, shown
    assert "-w, --workspace DIR The mount point (or an unmounted workspace directory)." in shown, shown
