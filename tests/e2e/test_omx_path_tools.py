"""The path tools end to end: ``omx`` as a real process with a scripted model moves, renames, copies, makes and
deletes inside its workspace only; a plan that moves or deletes is HIGH and runs only when confirmed and the number
of its moves and deletes is typed (``--yes``, or a piped "y", never runs it); every other HIGH plan stays refused.
On an omxfs mount the plan shows the undo line of the run's checkpoint, and that line undoes the run."""

# ruff: noqa: F811  (the ``mounted`` fixture is imported and requested by name)

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.plan_run import workflow
from tests.e2e.helpers import REPO, kinds, run_end, trace_of
from tests.e2e.test_omx_workspaces import mounted, omx_on  # noqa: F401
from tests.fuse.conftest import poll
from tests.support.scripts import changes_and_undo


def _plan(*steps: dict[str, Any]) -> str:
    numbered = [{"id": n, "description": f"step {n}", **step} for n, step in enumerate(steps, 1)]
    return json.dumps({"version": 1, "goal": "tidy the workspace", "risk_level": "LOW", "workspace_root": ".",
                       "steps": numbered, "success_criteria": []})  # fmt: skip


def _omx(ws: Path, plan: str, *args: str, answer: str | None = None) -> subprocess.CompletedProcess[str]:
    """``omx "tidy the workspace" --model scripted:FILE ARGS`` in ``ws``, a real process; ``answer`` is its stdin."""
    replies = ws.parent / "replies.json"
    replies.write_text(json.dumps([plan]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")} | {"PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "cli.omx", "tidy the workspace", "--model", f"scripted:{replies}", *args]
    return subprocess.run(command, cwd=ws, env=env, input=answer or "", capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


def _runs(ws: Path) -> list[Path]:
    return sorted((ws / "runs").iterdir())


def _tree(root: Path) -> dict[str, str]:
    """Every path below ``root`` (runs/ aside): a file's text, a symlink's target, or '/' for a directory."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if rel == "runs" or rel.startswith("runs/"):
                continue
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[rel] = "/"
            else:
                found[rel] = path.read_text(encoding="utf-8")
    return found


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with notes, a directory of old logs and a draft; beside it, a secret outside the workspace."""
    root = tmp_path / "ws"
    (root / "data").mkdir(parents=True)
    (root / "data/notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    (root / "data/draft.md").write_text("# Draft\n", encoding="utf-8")
    (root / "logs/old").mkdir(parents=True)
    (root / "logs/old/a.log").write_text("a\n", encoding="utf-8")
    (root / "logs/old/b.log").write_text("b\n", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret.txt").write_text("secret\n", encoding="utf-8")
    return root


EVERYDAY = _plan(
    {"tool": "make_dir", "inputs": {"path": "archive/2025"}},
    {"tool": "copy", "inputs": {"source": "data/notes.txt", "target": "archive/2025/notes.txt"}},
    {"tool": "copy", "inputs": {"source": "logs", "target": "backup/logs"}},
    {"tool": "move", "inputs": {"source": "data/draft.md", "target": "data/final.md"}},
    {"tool": "move", "inputs": {"source": "data/notes.txt", "target": "archive/notes-old.txt"}},
    {"tool": "delete", "inputs": {"path": "logs/old"}},
)


def test_moves_renames_copies_new_directories_and_deletes_are_done_as_planned_and_traced(ws: Path) -> None:
    done = _omx(ws, EVERYDAY, answer="y\n3\n")
    assert done.returncode == workflow.EXIT_OK, done.stdout + done.stderr
    assert _tree(ws) == {
        "archive": "/",
        "archive/2025": "/",
        "archive/2025/notes.txt": "one\ntwo\n",
        "archive/notes-old.txt": "one\ntwo\n",
        "backup": "/",
        "backup/logs": "/",
        "backup/logs/old": "/",
        "backup/logs/old/a.log": "a\n",
        "backup/logs/old/b.log": "b\n",
        "data": "/",
        "data/final.md": "# Draft\n",
        "logs": "/",
    }
    # the plan said what each file step does, before it was asked
    asked = done.stdout.index("Run this HIGH risk plan?")
    shown = done.stdout[:asked]
    assert "Risk: HIGH (the model said LOW)" in shown
    assert "Step 1 makes the directory archive/2025" in shown
    assert "Step 3 copies logs (a directory: 2 files, 1 directory) to backup/logs" in shown
    assert "Step 4 moves data/draft.md (a file, 1 line, 8 bytes) to data/final.md" in shown
    assert "Step 6 deletes logs/old (a directory: 2 files)" in shown
    assert "Nothing undoes them: only an omxfs workspace keeps checkpoints to restore." in shown
    assert "It moves or deletes 3 paths. To run it, type 3" in done.stdout
    (run,) = _runs(ws)
    trace = trace_of(run)
    steps = kinds(trace, "step")
    assert [(s["tool"], s["status"], s["output"]) for s in steps] == [
        ("make_dir", "success", "archive/2025"),
        ("copy", "success", "archive/2025/notes.txt"),
        ("copy", "success", "backup/logs"),
        ("move", "success", "data/final.md"),
        ("move", "success", "archive/notes-old.txt"),
        ("delete", "success", "logs/old"),
    ]
    assert steps[5]["details"]["files"] == 2 and steps[2]["details"]["kind"] == "directory"
    (approved,) = [e for e in trace if e.get("event") == "confirmation"]
    assert approved["data"] == {"decision": "approved", "how": "confirmed at the prompt, 3 typed for its moves and "
                                "deletes"}  # fmt: skip
    replay = subprocess.run([sys.executable, "-m", "cli.omx", "replay", str(run)], capture_output=True, text=True,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, check=False)  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    assert "step 5 move: success" in replay.stdout and "-> archive/notes-old.txt" in replay.stdout
    assert "step 6 delete: success" in replay.stdout and "path: logs/old" in replay.stdout


@pytest.mark.parametrize(
    "answer",
    ["", "y\n", "y\ny\n", "y\n2\n", "n\n3\n"],
    ids=["no answer", "a piped y", "y twice", "the wrong number", "no, then the number"],
)
def test_a_plan_that_moves_or_deletes_never_runs_on_yes_or_a_plain_y(ws: Path, answer: str) -> None:
    before = _tree(ws)
    done = _omx(ws, EVERYDAY, "--yes", answer=answer)
    assert done.returncode == workflow.EXIT_DECLINED, done.stdout + done.stderr
    assert _tree(ws) == before
    assert "--yes does not answer for HIGH risk plans" in done.stdout
    (run,) = _runs(ws)
    assert run_end(trace_of(run))["status"] == "declined" and not kinds(trace_of(run), "step")


def test_with_yes_too_the_typed_number_runs_it(ws: Path) -> None:
    done = _omx(ws, EVERYDAY, "--yes", answer="y\n 3 \n")
    assert done.returncode == workflow.EXIT_OK, done.stdout + done.stderr
    assert (ws / "data/final.md").is_file() and not (ws / "logs/old").exists()


def test_any_other_high_step_keeps_the_plan_refused_whatever_is_typed(ws: Path) -> None:
    before = _tree(ws)
    plan = _plan(
        {"tool": "move", "inputs": {"source": "data/draft.md", "target": "data/final.md"}},
        {"tool": "python", "inputs": {"code": "import os\nos.remove('data/notes.txt')"}},
    )
    done = _omx(ws, plan, answer="y\n1\n")
    assert done.returncode == workflow.EXIT_REFUSED, done.stdout + done.stderr
    assert "python code deletes or moves files" in done.stderr and "Run this" not in done.stdout
    assert _tree(ws) == before


@pytest.mark.parametrize(
    ("step", "why"),
    [
        ({"tool": "move", "inputs": {"source": "data/notes.txt", "target": "../stolen.txt"}}, "uses '..'"),
        ({"tool": "delete", "inputs": {"path": "/etc/hostname"}}, "is absolute"),
        ({"tool": "copy", "inputs": {"source": "data/notes.txt", "target": "~/notes.txt"}}, "is absolute"),
        ({"tool": "make_dir", "inputs": {"path": "../made"}}, "uses '..'"),
        ({"tool": "delete", "inputs": {"path": "out/secret.txt"}}, "goes through the symlink out"),
        (
            {"tool": "copy", "inputs": {"source": "out/secret.txt", "target": "mine.txt"}},
            "goes through the symlink out",
        ),
        ({"tool": "move", "inputs": {"source": "data/notes.txt", "target": "out/notes.txt"}}, "through the symlink"),
        ({"tool": "delete", "inputs": {"path": "runs"}}, "omx's run records"),
        ({"tool": "delete", "inputs": {"path": "."}}, "the workspace root"),
    ],
    ids=[
        "move to ..",
        "delete absolute",
        "copy to ~",
        "make_dir ..",
        "delete through a symlink",
        "copy from a symlinked directory",
        "move into a symlinked directory",
        "delete the run records",
        "delete the root",
    ],
)
def test_paths_outside_the_workspace_are_refused_before_anything_runs(ws: Path, step: dict[str, Any], why: str) -> None:
    (ws / "out").symlink_to(ws.parent / "outside")  # a directory of the workspace that is a link out of it
    before, outside = _tree(ws), _tree(ws.parent / "outside")
    done = _omx(ws, _plan(step), answer="y\n1\n")
    assert done.returncode == workflow.EXIT_REFUSED, done.stdout + done.stderr
    assert why in done.stderr
    assert _tree(ws) == before and _tree(ws.parent / "outside") == outside
    assert not (ws.parent / "stolen.txt").exists() and not (ws.parent / "made").exists()


def test_a_symlink_is_moved_copied_and_deleted_as_a_link_never_followed(ws: Path) -> None:
    secret = ws.parent / "outside/secret.txt"
    (ws / "data/link.txt").symlink_to(secret)
    (ws / "data/gone.txt").symlink_to(secret)
    (ws / "logs/old/here.txt").symlink_to("a.log")
    plan = _plan(
        {"tool": "move", "inputs": {"source": "data/link.txt", "target": "kept/link.txt"}},
        {"tool": "copy", "inputs": {"source": "kept/link.txt", "target": "kept/copy.txt"}},
        {"tool": "copy", "inputs": {"source": "logs/old", "target": "old-copy"}},
        {"tool": "delete", "inputs": {"path": "data/gone.txt"}},
    )
    done = _omx(ws, plan, answer="y\n2\n")
    assert done.returncode == workflow.EXIT_OK, done.stdout + done.stderr
    assert "Step 1 moves data/link.txt (a symlink to " in done.stdout and "the link itself" in done.stdout
    assert os.readlink(ws / "kept/link.txt") == os.readlink(ws / "kept/copy.txt") == str(secret)
    assert os.readlink(ws / "old-copy/here.txt") == "a.log"
    assert not os.path.lexists(ws / "data/link.txt") and not os.path.lexists(ws / "data/gone.txt")
    assert secret.read_text(encoding="utf-8") == "secret\n" and sorted(os.listdir(secret.parent)) == ["secret.txt"]


def test_a_target_that_exists_is_replaced_only_when_the_plan_says_so_and_then_shown_as_a_diff(ws: Path) -> None:
    (ws / "data/old.txt").write_text("one\nthree\n", encoding="utf-8")
    kept = _omx(ws, _plan({"tool": "copy", "inputs": {"source": "data/notes.txt", "target": "data/old.txt"}}),
                "--yes")  # fmt: skip
    assert kept.returncode == workflow.EXIT_FAILED, kept.stdout + kept.stderr  # LOW, run by --yes, and refused
    assert ", where something is (a file, 2 lines, 10 bytes): the step will fail, as it does not say overwrite" in (
        kept.stdout
    )  # the plan said so
    assert "data/old.txt exists (file): nothing is replaced unless the step says overwrite" in kept.stdout + kept.stderr
    assert (ws / "data/old.txt").read_text(encoding="utf-8") == "one\nthree\n"

    overwrite = _plan(
        {"tool": "copy", "inputs": {"source": "data/notes.txt", "target": "data/old.txt", "overwrite": True}}
    )
    asked = _omx(ws, overwrite, "--yes")
    assert asked.returncode == workflow.EXIT_DECLINED  # MEDIUM: a person is asked, --yes is no answer
    assert "Risk: MEDIUM" in asked.stdout and "overwrites the existing file data/old.txt with a copy" in asked.stdout
    assert "  -three" in asked.stdout and "  +two" in asked.stdout  # the diff of what it replaces
    done = _omx(ws, overwrite, answer="y\n")
    assert done.returncode == workflow.EXIT_OK, done.stdout + done.stderr
    assert (ws / "data/old.txt").read_text(encoding="utf-8") == "one\ntwo\n"


# -- on an omxfs mount: the undo line is in the plan, and it undoes the moves and deletes ---------------------------


def test_on_an_omxfs_mount_the_plan_shows_the_undo_line_which_undoes_the_run(mounted: Path) -> None:
    zone = mounted / "agents/alice"
    (zone / "notes.md").write_text("keep me\n", encoding="utf-8")
    (zone / "old").mkdir()
    (zone / "old/a.txt").write_text("a\n", encoding="utf-8")
    plan = _plan(
        {"tool": "move", "inputs": {"source": "agents/alice/notes.md", "target": "agents/alice/done/notes.md"}},
        {"tool": "delete", "inputs": {"path": "agents/alice/old"}},
        {"tool": "copy", "inputs": {"source": "agents/alice/done/notes.md", "target": "agents/alice/copy.md"}},
    )
    refused = omx_on(mounted, [plan], "tidy", "--yes")
    assert refused.returncode == workflow.EXIT_DECLINED and (zone / "notes.md").is_file()
    done = omx_on(mounted, [plan], "tidy", answer="y\n2\n")
    assert done.returncode == workflow.EXIT_OK, done.stdout + done.stderr
    assert (zone / "done/notes.md").read_text(encoding="utf-8") == "keep me\n" and not (zone / "old").exists()
    assert (zone / "copy.md").read_text(encoding="utf-8") == "keep me\n" and not (zone / "notes.md").exists()
    _show, undo = changes_and_undo(done.stdout)
    shown = done.stdout[: done.stdout.index("Run this HIGH risk plan?")]
    assert "The whole run, moves and deletes included, is undone by restoring the checkpoint it starts from:" in shown
    assert f"  Undo:    omxfs restore {mounted} alice {undo[4]} --as alice" in shown.splitlines()
    assert undo == ["omxfs", "restore", str(mounted), "alice", undo[4], "--as", "alice"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    undone = subprocess.run([sys.executable, "-m", "cli.omxfs", *undo[1:]], capture_output=True, text=True, env=env,
                            timeout=120, check=False)  # fmt: skip
    assert undone.returncode == 0, undone.stderr
    # the restore changed the store beneath the mount, which shows it within a second (until then the kernel may
    # remember that notes.md was absent, and done/ present)
    restored = {"notes.md": "keep me\n", "old": "/", "old/a.txt": "a\n"}
    poll(lambda: _tree(zone) == restored, 5, f"the mount to show the zone restored, not {_tree(zone)}")
