"""``omx --as NAME`` on an omxfs workspace runs itself and its tools in NAME's view (issue 14).

Before views, a python step of ``omx --as bob`` set ``OMX_AGENT=alice`` for a child process, and the child's
writes landed as alice's (the risk rules now rate a step that starts programs HIGH, so the forged child itself
is tried in ``test_escapes.py``, directly in a view). Here the real ``omx`` command is started (so it
re-executes itself through ``omxfs run``), with a scripted model whose replies sit in the workspace, where the
view can read them; its step writes as bob and finds alice's zone read-only, refused by the kernel.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent.view import view_command
from cli.omx import main as omx
from omxfs.store import Workspace
from tests.e2e.helpers import PLAN_A, SEND_UDP
from tests.view.conftest import OMX, TIMEOUT, clean_env, poll, run_omx_as

FORGE = """
open("collaborative/current/f.md", "w").write("mine\\n")
open("agents/alice/planted.txt", "w").write("x")
"""


def test_omx_as_runs_in_the_agents_view_where_no_tool_can_change_identity(store: Workspace) -> None:
    ws = store.root
    plan = {
        **PLAN_A,
        "risk_level": "MEDIUM",
        "steps": [{"id": 1, "description": "forge", "tool": "python", "inputs": {"code": FORGE}}],
        "success_criteria": [],
    }
    replies = ws / "agents/bob/replies.json"
    replies.write_text(json.dumps([json.dumps(plan)]), encoding="utf-8")
    # started with OMX_AGENT=alice: in bob's view it names nobody
    done = run_omx_as("bob", ws, "forge identities", replies, env=clean_env("alice"))
    assert done.returncode == 1, done.stdout + done.stderr  # the step failed: alice's zone is not bob's to write
    assert "Permission denied" in done.stdout + done.stderr
    assert not (ws / "agents/alice/planted.txt").exists()
    assert [v.author for v in store.collab.history("f.md")] == ["bob"]
    (run,) = (ws / "agents/bob/runs").iterdir()  # the run's trace, written natively in bob's own zone
    assert (run / "trace.jsonl").is_file()


def test_a_step_of_omx_as_sends_no_udp_to_the_host(store: Workspace) -> None:
    """In a view a step cannot make a network namespace, and Landlock refuses only TCP: a python step of ``omx --as
    bob`` sent a UDP datagram to a listener on the host's 127.0.0.1 (the exploratory test's bug 1). The socket
    filter refuses the socket, and the banner says what confines the network."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.setblocking(False)
    code = SEND_UDP.format(port=listener.getsockname()[1])
    plan = {**PLAN_A, "steps": [{"id": 1, "description": "send", "tool": "python", "inputs": {"code": code}}]}
    replies = store.root / "agents/bob/replies.json"
    replies.write_text(json.dumps([json.dumps({**plan, "success_criteria": []})]), encoding="utf-8")
    with listener:
        done = subprocess.run(
            [str(OMX), "send", "--as", "bob", "-w", str(store.root), "--model", f"scripted:{replies}"],
            input="y\n",
            capture_output=True,
            text=True,
            timeout=120,
            env=clean_env(),
            cwd="/",
            check=False,
        )
        said = done.stdout + done.stderr
        assert done.returncode == 1 and "PermissionError: [Errno 1] Operation not permitted" in said, said
        assert "network: seccomp: no socket but AF_UNIX pairs (socketpair)" in said, said
        with pytest.raises(BlockingIOError):  # sendto on loopback queues the datagram before it returns
            listener.recv(100)


WRITE_AS = {
    **PLAN_A,
    "steps": [
        {
            "id": 1,
            "description": "write",
            "tool": "write_text",
            "inputs": {"path": "collaborative/current/notes.md", "content": "bob's notes\n", "mode": "overwrite"},
        }
    ],
    "success_criteria": [],
}


@pytest.mark.parametrize("started", ["relative path", "relative path through a symlinked venv", "PATH"])
def test_omx_as_started_by_a_relative_path_or_from_path_runs_in_the_view(
    store: Workspace, tmp_path: Path, started: str
) -> None:
    """``.venv/bin/omx --as bob -w ./ws "task"`` (the README's) exited 2 with "can't open file
    '.../ws/agents/bob/.venv/bin/omx'": the relative script path went into the view, which starts in ws/agents/bob.
    Found on ``$PATH`` outside what a view shows (here ``/tmp``, where the view has its own), it was not there at
    all. Now the view gets the script's absolute path, bound read-only where the view would not show it; the
    scripted replies are named relative to the caller's directory, outside the view's."""
    ws = store.root
    (ws / "agents/bob/replies.json").write_text(json.dumps([json.dumps(WRITE_AS)]), encoding="utf-8")
    env = clean_env("alice")  # started as alice: in bob's view the write is bob's all the same
    if started == "relative path":
        command = os.path.relpath(OMX, tmp_path)
    elif started == "relative path through a symlinked venv":
        (tmp_path / ".venv").symlink_to(Path(sys.prefix))
        command = ".venv/bin/omx"
    else:
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin/omx").symlink_to(OMX)
        env["PATH"] = f"{tmp_path / 'bin'}:/usr/bin:/bin"
        command = "omx"
    assert not os.path.isabs(command) and tmp_path != ws and ws.parent == tmp_path
    done = subprocess.run(
        [command, "--as", "bob", "-w", "./ws", "notes", "--yes", "--model", "scripted:ws/agents/bob/replies.json"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (ws / "collaborative/current/notes.md").read_text("utf-8") == "bob's notes\n"
    assert [v.author for v in store.collab.history("notes.md")] == ["bob"]
    (run,) = (ws / "agents/bob/runs").iterdir()
    assert (run / "trace.jsonl").is_file()


def test_the_omx_script_is_bound_into_the_view_only_where_the_view_does_not_show_it(
    store: Workspace, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "bin/omx"
    elsewhere.parent.mkdir()
    elsewhere.symlink_to(OMX)
    for script, bound in ((str(OMX), False), (str(elsewhere), True)):
        command = view_command(store.root, "bob", [sys.executable, os.path.relpath(script), "task"])
        assert command is not None
        view, omx = command[: command.index("--")], command[command.index("--") + 1 :]
        assert omx == [sys.executable, script, "task"]
        assert (view[-2:] == ["--ro-bind", script]) is bound and view.count("--ro-bind") == int(bound), view


def test_omx_in_one_agents_view_cannot_act_as_another(store: Workspace) -> None:
    view = [sys.executable, "-m", "cli.omxfs", "run", str(store.root), "--as", "bob", "--"]
    done = subprocess.run(
        [*view, str(OMX), "x", "--as", "alice"],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        cwd="/",
        check=False,
    )
    assert done.returncode == 1 and "runs in bob's view: it cannot act as alice" in done.stderr


def test_files_omx_is_given_outside_the_workspace_are_shown_in_the_view(store: Workspace, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    inside = store.root / "agents/alice/notes.md"
    inside.write_text("x")
    argv = [sys.executable, str(OMX), "run", str(plan), "--model", f"scripted:{plan}", "-w", ".", str(inside), "word"]
    command = view_command(store.root, "alice", argv)
    assert command is not None
    view, omx = command[: command.index("--")], command[command.index("--") + 1 :]
    assert view[-2:] == ["--ro-bind", str(plan)] and view.count("--ro-bind") == 1  # once, and not the inside file
    assert omx == [
        sys.executable,
        str(OMX),
        "run",
        str(plan),
        "--model",
        f"scripted:{plan}",
        "-w",
        os.getcwd(),
        str(inside),
        "word",
    ]


def test_the_docs_and_the_help_say_omx_as_runs_in_the_agents_view() -> None:
    """Since omx re-executes in the view (agent/view.py), docs/omx.md and ``omx --help`` no longer say that it
    restarts itself with OMX_AGENT=NAME (the issue-14 review found that sentence left over)."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "omx.md").read_text("utf-8")
    bullet = readme[readme.index("- `omx --as NAME`") :].split("\n- ", 1)[0]
    assert "NAME's view (`omxfs run WS --as NAME`" in bullet, bullet
    assert "restarts itself with `OMX_AGENT" not in readme
    shown = " ".join(CliRunner().invoke(omx, ["task", "--help"]).output.split())
    assert "--as AGENT Act as this agent: on an omxfs workspace, in its view (omxfs run)." in shown, shown


def test_omx_on_a_workspace_whose_daemon_does_not_answer_is_refused_not_waited_on(
    mount: Callable[..., object],
) -> None:
    """``omx --as bob -w MOUNT`` with MOUNT's daemon stopped (SIGSTOP) waited for good: click stats -w, and the
    view's start stats the workspace. Now omx probes the mount first (5 s) and says so in one line, as ``omxfs run``
    does; so do a task without --as and ``omx run`` of a plan saved on that mount (the issue-14 review's case)."""
    shared = mount(agents=("alice", "bob"), default="alice", in_place=True)
    root: Path = shared.root  # type: ignore[attr-defined]
    daemon: subprocess.Popen[bytes] = shared.proc  # type: ignore[attr-defined]
    poll(lambda: "ready:" in shared.log(), what="the daemon to finish starting")  # type: ignore[attr-defined]
    commands = (
        ["a task", "--as", "bob", "-w", str(root)],
        ["a task", "-w", str(root)],
        ["run", f"{root}/agents/bob/runs/1/plan.json", "--as", "bob"],
    )
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        done = [
            subprocess.run(  # TimeoutExpired where omx waits on the mount
                [str(OMX), *argv, "--model", "scripted:/nonexistent.json"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                env=clean_env(),
                cwd="/",
                check=False,
            )
            for argv in commands
        ]
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    for argv, refused in zip(commands, done, strict=True):
        said = refused.stdout + refused.stderr
        assert refused.returncode == 1 and refused.stdout == "", (argv, said)
        assert refused.stderr.startswith(f"Error: {root} is a mount whose daemon does not answer"), (argv, said)
        assert f"`omxfs umount {root}`" in refused.stderr and refused.stderr.count("\n") == 1, (argv, said)


def test_the_from_step_line_omx_as_prints_works_when_pasted_on_the_host(store: Workspace) -> None:
    """A failed step of ``omx --as bob`` prints ``omx run PLAN --from-step N --as bob``: pasted in the same shell on
    the host, once the step is fixed in PLAN, it runs the plan again from there in bob's view."""
    ws = store.root
    (ws / "agents/bob/notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    read = {"id": 1, "description": "read", "tool": "read_text", "inputs": {"path": "agents/bob/notes.txt"}}
    write = {"id": 2, "description": "write", "tool": "write_text",
             "inputs": {"path": "agents/bob/missing/dir/out.txt", "content": "done\n"}}  # fmt: skip
    plan = {**PLAN_A, "goal": "copy a note", "steps": [read, write], "success_criteria": []}
    (ws / "agents/bob/missing").write_text("a file where the step wants a directory\n", encoding="utf-8")
    replies = ws / "agents/bob/replies.json"
    replies.write_text(json.dumps([json.dumps(plan)]), encoding="utf-8")
    failed = run_omx_as("bob", ws, "copy a note", replies, "--yes")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    lines = [line for line in (failed.stdout + failed.stderr).splitlines() if "--from-step 2" in line]
    assert lines, failed.stdout + failed.stderr
    pasted = lines[0][lines[0].index("omx run ") :]
    assert pasted.endswith("--from-step 2 --as bob"), pasted
    plan_file = Path(shlex.split(pasted)[2])
    assert plan_file.is_file() and plan_file.is_relative_to(ws / "agents/bob/runs")  # a host path too
    fixed = json.loads(plan_file.read_text(encoding="utf-8"))
    fixed["steps"][1]["inputs"]["path"] = "agents/bob/out.txt"
    plan_file.write_text(json.dumps(fixed), encoding="utf-8")
    bin_dir = str(OMX.parent)
    env = {**clean_env(), "PATH": f"{bin_dir}:{clean_env().get('PATH', '/usr/bin:/bin')}"}
    again = subprocess.run(["sh", "-c", pasted], input="y\n", capture_output=True, text=True, timeout=120,
                           env=env, cwd="/", check=False)  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert (ws / "agents/bob/out.txt").read_text(encoding="utf-8") == "done\n"
