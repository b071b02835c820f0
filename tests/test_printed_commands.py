"""Every command line omxfs prints for a person to run works pasted into the same shell, by the same person.

Each test runs the real command that prints a line (``omxfs restore``, ``accept``, ``run --review``, ``snapshot
restore``), in a directory beside a workspace whose name has a space, given relative as people type it; takes the
printed line as it is; runs it with ``bash -c`` in the same directory and environment (root with no OMX_AGENT, as
CI runs, or the unprivileged user that owns the workspace); and checks that it succeeds and does what it says.
``omxfs`` and ``omx`` on the PATH are this checkout's.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from omxfs.checkpoints.review import Review
from omxfs.store import Workspace
from tests.fuse.conftest import Mount, clean_env
from tests.support.unprivileged import as_nobody, nobody_dir

CHECKOUT = Path(__file__).resolve().parent.parent
OMXFS = [sys.executable, "-m", "cli.omxfs"]
NAME = "my ws"  # the workspace as the person names it: relative, with a space

#: the ``omxfs`` and ``omx`` commands a person runs, as the package's console scripts are, but of this checkout's
#: code (the one under test, wherever the virtual environment's editable install points)
COMMAND = """#!{python}
import sys
sys.path.insert(0, {checkout!r})
from cli.{name} import main
sys.exit(main())
"""


@pytest.fixture(scope="module")
def bin_dir() -> Iterator[Path]:
    """A directory every user may read, with the ``omxfs`` and ``omx`` commands in it."""
    where = Path(tempfile.mkdtemp(prefix="omx-printed-bin-"))
    os.chmod(where, 0o755)
    for name in ("omxfs", "omx"):
        (where / name).write_text(COMMAND.format(python=sys.executable, checkout=str(CHECKOUT), name=name))
        os.chmod(where / name, 0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture(autouse=True)
def _on_path(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")


def person_env() -> dict[str, str]:
    """The person's environment: no OMX_AGENT, this checkout's commands first on the PATH (``_on_path``)."""
    return {**clean_env(), "PYTHONPATH": str(CHECKOUT)}


def omxfs(here: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``omxfs ARGS`` run by the person in ``here``; it must succeed."""
    done = subprocess.run(
        [*OMXFS, *args], cwd=here, env=person_env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"omxfs {args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def printed(output: str, label: str) -> str:
    """The command printed after ``label`` (the one line that has it)."""
    found = [line.split(label, 1)[1].strip() for line in output.splitlines() if label in line]
    assert len(found) == 1, f"no single {label!r} line in:\n{output}"
    return found[0].removesuffix(")") if label.startswith("(") else found[0]


def pasted(line: str, here: Path, answer: str | None = None) -> subprocess.CompletedProcess[str]:
    """``line`` pasted into the person's shell in ``here`` (who answers a prompt with ``answer``); it must succeed."""
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=here,
        env=person_env(),
        input=answer,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"pasted {line!r}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    made = Workspace.init(tmp_path / NAME, agents=["alice", "bob"], supervisors=["boss"])
    (made.root / "agents/alice/notes.md").write_text("first\n")
    return made


def notes(ws: Workspace) -> str:
    return (ws.root / "agents/alice/notes.md").read_text()


@pytest.mark.parametrize("name", ["ws", NAME])
def test_the_undo_line_of_a_restore_undoes_it_as_root(name: str, tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / name, agents=["alice", "bob"], supervisors=["boss"])
    (ws.root / "agents/alice/notes.md").write_text("first\n")
    omxfs(tmp_path, "checkpoint", name, "--as", "alice")
    (ws.root / "agents/alice/notes.md").write_text("second\n")
    done = omxfs(tmp_path, "restore", name, "alice", "1", "--as", "alice")
    assert notes(ws) == "first\n"
    line = printed(done.stdout, "undo with: ")
    pasted(line, tmp_path)  # as root, with no OMX_AGENT: refused unless the line says --as
    assert notes(ws) == "second\n"
    assert line == f"omxfs restore {shlex.quote(name)} alice 2 --as alice", line


def test_the_undo_lines_of_a_snapshot_restore_undo_it(ws: Workspace, tmp_path: Path) -> None:
    omxfs(tmp_path, "snapshot", NAME, "--as", "boss")
    (ws.root / "agents/alice/notes.md").write_text("second\n")
    done = omxfs(tmp_path, "snapshot", "restore", NAME, "1", "--as", "boss")
    assert notes(ws) == "first\n"
    line, zone_line = printed(done.stdout, "undo with: "), printed(done.stdout, "(or one zone: ")
    assert line == "omxfs snapshot restore 'my ws' 2 --as boss", line
    assert zone_line.startswith("omxfs restore 'my ws' alice ") and zone_line.endswith(" --as boss"), zone_line
    pasted(zone_line, tmp_path)
    assert notes(ws) == "second\n"
    (ws.root / "agents/alice/notes.md").write_text("third\n")
    pasted(line, tmp_path)  # snapshot 2, made before the restore: the zone as it was then
    assert notes(ws) == "second\n"


def test_the_undo_line_of_a_zone_s_snapshot_restore_undoes_it(ws: Workspace, tmp_path: Path) -> None:
    omxfs(tmp_path, "snapshot", NAME, "--as", "boss")
    (ws.root / "agents/alice/notes.md").write_text("second\n")
    done = omxfs(tmp_path, "snapshot", "restore", NAME, "1", "--zone", "alice", "--as", "boss")
    assert notes(ws) == "first\n"
    line = printed(done.stdout, "undo with: ")
    assert line.startswith("omxfs restore 'my ws' alice ") and line.endswith(" --as boss"), line
    pasted(line, tmp_path)
    assert notes(ws) == "second\n"


def review_run(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    """``omxfs run "my ws" --as alice --review -- sh -c SCRIPT`` from beside the workspace (so in alice's zone)."""
    return omxfs(tmp_path, "run", NAME, "--as", "alice", "--review", "--", "sh", "-c", script)


def test_the_show_apply_and_drop_lines_of_a_review_run_do_what_they_say(ws: Workspace, tmp_path: Path) -> None:
    if not os.path.exists("/dev/fuse") or shutil.which("bwrap") is None:
        pytest.skip("views need /dev/fuse and bwrap")
    run = review_run(tmp_path, "echo reviewed > notes.md")
    assert notes(ws) == "first\n"  # held apart
    show, apply = printed(run.stderr, "show: "), printed(run.stderr, "apply: ")
    assert show == "omxfs diff 'my ws' alice --review", show
    assert apply == "omxfs accept 'my ws' alice --as alice", apply
    assert "notes.md" in pasted(show, tmp_path).stdout
    accepted = pasted(apply, tmp_path)
    assert notes(ws) == "reviewed\n" and not Review(ws, "alice").pending
    undo = printed(accepted.stdout, "undo with: ")
    assert undo.startswith("omxfs restore 'my ws' alice ") and undo.endswith(" --as alice"), undo
    pasted(undo, tmp_path)
    assert notes(ws) == "first\n"

    drop = printed(review_run(tmp_path, "echo dropped > notes.md").stderr, "drop: ")
    assert drop == "omxfs discard 'my ws' alice --as alice", drop
    assert Review(ws, "alice").pending
    pasted(drop, tmp_path)
    assert notes(ws) == "first\n" and not Review(ws, "alice").pending


@pytest.fixture
def nobody_home() -> Iterator[Path]:
    """A directory the unprivileged user owns, where it keeps its own workspace."""
    where = nobody_dir()
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_the_undo_line_of_a_restore_works_for_the_agent_s_own_unprivileged_user(
    nobody_home: Path, tmp_path: Path
) -> None:
    """The workspace is an unprivileged user's own, whose login (nobody) is no agent of it: the line needs --as."""
    if shutil.which("unshare") is None or shutil.which("setpriv") is None:
        pytest.skip("needs unshare and setpriv")

    def as_user(script: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(CHECKOUT)}
        argv = as_nobody(["bash", "-c", f"cd {shlex.quote(str(nobody_home))} && {script}"], tmp_path, env)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{script!r}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done

    as_user(
        "omxfs init 'my ws' --agent alice && echo first > 'my ws/agents/alice/notes.md' "
        "&& omxfs checkpoint 'my ws' --as alice && echo second > 'my ws/agents/alice/notes.md'"
    )
    done = as_user("omxfs restore 'my ws' alice 1 --as alice")
    zone_notes = nobody_home / NAME / "agents/alice/notes.md"
    assert zone_notes.read_text() == "first\n"
    line = printed(done.stdout, "undo with: ")
    assert line.startswith("omxfs restore 'my ws' alice ") and line.endswith(" --as alice"), line
    as_user(line)
    assert zone_notes.read_text() == "second\n"


def test_the_changes_and_undo_lines_of_an_omx_run_on_a_mount_work_pasted(tmp_path: Path) -> None:
    """``omx agent`` in a mount whose path has a space: its ``Changes:`` and ``Undo:`` lines, pasted where the
    person is (beside the mount), show the run's change and undo it."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: the mount needs it")
    pytest.importorskip("pyfuse3", reason="pyfuse3 is not installed")
    store = Workspace.init(tmp_path / NAME, agents=["alice", "bob"])
    root = tmp_path / "my mount"
    root.mkdir()
    registry: list[Mount] = []
    mounted = Mount(store.root, root, "alice", registry)
    try:
        zone = root / "agents/alice"
        (zone / "keep.md").write_text("A\n")
        code = "open('agents/alice/keep.md', 'w').write('B\\n'); open('agents/alice/new.md', 'w').write('n\\n')"
        replies = tmp_path / "replies.json"
        call = {"content": None, "tool_calls": [{"name": "python", "arguments": {"code": code}}]}
        replies.write_text(json.dumps([call, {"content": "done"}]))
        done = subprocess.run(
            [sys.executable, "-m", "cli.omx", "agent", "--model", f"scripted:{replies}", "edit and add"],
            cwd=root, env=person_env(), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert (zone / "keep.md").read_text() == "B\n"
        show, undo = printed(done.stderr, "Changes: "), printed(done.stderr, "Undo: ")
        assert show.startswith(f"omxfs diff {shlex.quote(str(root))} alice "), show
        assert "new.md" in pasted(show, tmp_path).stdout
        pasted(undo, tmp_path)
        assert (zone / "keep.md").read_text() == "A\n" and not (zone / "new.md").exists()
    finally:
        assert not mounted.teardown()


def test_the_line_a_dry_run_prints_runs_the_plan(tmp_path: Path) -> None:
    """``omx --dry-run -w "my dir"``: the ``omx run PLAN`` line it prints, pasted, runs the saved plan there."""
    (tmp_path / "my dir").mkdir()
    plan = {
        "version": 1,
        "goal": "Write hi to out.md",
        "risk_level": "LOW",
        "workspace_root": ".",
        "steps": [
            {"id": 1, "description": "write", "tool": "write_text", "inputs": {"path": "out.md", "content": "hi\n"}}
        ],
        "success_criteria": [],
    }
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([json.dumps(plan)]))
    done = subprocess.run(
        [sys.executable, "-m", "cli.omx", "write hi to out.md", "-w", "my dir", "--dry-run", "--model",
         f"scripted:{replies}"],
        cwd=tmp_path, env=person_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "my dir/out.md").exists()
    line = printed(done.stdout + done.stderr, "Run the plan with: ")
    assert line.startswith("omx run ") and line.endswith("/plan.json'"), line
    pasted(line, tmp_path, answer="y\n")
    assert (tmp_path / "my dir/out.md").read_text() == "hi\n"


def test_the_init_line_of_a_directory_that_is_no_workspace_makes_it_one(tmp_path: Path) -> None:
    (tmp_path / NAME).mkdir()
    refused = subprocess.run(
        [*OMXFS, "snapshots", NAME], cwd=tmp_path, env=person_env(), capture_output=True, text=True, check=False
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    line = refused.stderr.split("run `", 1)[1].split("`", 1)[0]
    assert line == "omxfs init 'my ws'", line
    pasted(line, tmp_path)
    assert Workspace(tmp_path / NAME).agents() == []
