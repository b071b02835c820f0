"""The path tools in a review run: ``omx --as bob --review`` moves and deletes in bob's view, whose zone is an overlay,
so the change is held for review: bob's zone stays as it was until ``omxfs accept`` applies it. The real ``omx``
command, started in ``/`` so it runs itself again in the view; the model's replies sit in bob's zone."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs, tree_state
from tests.view.conftest import OMX, clean_env

PLAN = {
    "version": 1,
    "goal": "tidy bob's zone",
    "risk_level": "HIGH",
    "workspace_root": ".",
    "steps": [
        {"id": 1, "description": "file the notes", "tool": "move",
         "inputs": {"source": "agents/bob/notes.md", "target": "agents/bob/archive/notes.md"}},
        {"id": 2, "description": "rename the project", "tool": "move",
         "inputs": {"source": "agents/bob/proj", "target": "agents/bob/project"}},
        {"id": 3, "description": "drop the old logs", "tool": "delete", "inputs": {"path": "agents/bob/old"}},
        {"id": 4, "description": "keep a copy", "tool": "copy",
         "inputs": {"source": "agents/bob/project/app.py", "target": "agents/bob/app.py.bak"}},
    ],
    "success_criteria": [],
}  # fmt: skip


def _omx_review(ws: Path, replies: Path, answer: str) -> subprocess.CompletedProcess[str]:
    argv = [str(OMX), "tidy", "--as", "bob", "--review", "-w", str(ws), "--model", f"scripted:{replies}"]
    return subprocess.run(argv, input=answer, capture_output=True, text=True, timeout=120, env=clean_env(), cwd="/",
                          check=False)  # fmt: skip


def test_moves_and_deletes_of_a_review_run_land_in_the_review_and_reach_the_zone_on_accept(store: Workspace) -> None:
    ws, zone = store.root, store.root / "agents/bob"
    (zone / "notes.md").write_text("notes\n", encoding="utf-8")
    (zone / "proj/src").mkdir(parents=True)
    (zone / "proj/app.py").write_text("app = 1\n", encoding="utf-8")
    (zone / "proj/src/lib.py").write_text("lib = 2\n", encoding="utf-8")
    (zone / "old").mkdir()
    (zone / "old/a.log").write_text("a\n", encoding="utf-8")
    replies = zone / "replies.json"
    replies.write_text(json.dumps([json.dumps(PLAN)]), encoding="utf-8")
    lib_mtime = (zone / "proj/src/lib.py").stat().st_mtime_ns

    declined = _omx_review(ws, replies, "y\n")  # confirmed, but the number of moves and deletes not typed
    assert declined.returncode == 4, declined.stdout + declined.stderr
    assert "nothing held for review" in declined.stderr  # its record is in the zone's runs/, no review pending
    before = tree_state(zone)
    done = _omx_review(ws, replies, "y\n3\n")
    assert done.returncode == 0, done.stdout + done.stderr
    shown = done.stdout[: done.stdout.index("Run this HIGH risk plan?")]
    assert "Step 2 moves agents/bob/proj (a directory: 2 files, 1 directory) to agents/bob/project" in shown
    assert f"  Undo:    omxfs restore {ws} bob " in shown and "held for review in bob's zone" in done.stderr

    runs = {p for p in tree_state(zone) if p == "runs" or p.startswith("runs/")}
    assert {p: v for p, v in tree_state(zone).items() if p not in runs} == {
        p: v for p, v in before.items() if p not in runs
    }  # the zone is as it was: the run's changes are held apart
    pending = json.loads(omxfs("diff", str(ws), "bob", "--review", "--json").stdout)
    added = [p for p in pending["added"] if not p.startswith("runs")]
    assert added == ["app.py.bak", "archive", "archive/notes.md", "project", "project/app.py", "project/src",
                     "project/src/lib.py"]  # fmt: skip
    assert pending["deleted"] == ["notes.md", "old", "old/a.log", "proj", "proj/app.py", "proj/src", "proj/src/lib.py"]

    omxfs("accept", str(ws), "bob", "--as", "bob")
    assert (zone / "archive/notes.md").read_text(encoding="utf-8") == "notes\n"
    assert (zone / "project/src/lib.py").read_text(encoding="utf-8") == "lib = 2\n"
    # moved, not written anew (an overlay moves a directory of its lower layer as a copy: the copy keeps the times)
    assert (zone / "project/src/lib.py").stat().st_mtime_ns == lib_mtime
    assert (zone / "app.py.bak").read_text(encoding="utf-8") == "app = 1\n"
    assert not (zone / "notes.md").exists() and not (zone / "proj").exists() and not (zone / "old").exists()
