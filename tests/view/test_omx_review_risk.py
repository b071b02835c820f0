"""Risk in a review run: ``omx --as bob --review`` writes into bob's zone through the review's overlay, so nothing it
writes there lands before a person accepts it. An overwrite there is no MEDIUM risk then: ``--yes`` runs it, and
the plan says why; what can land at once (code, files outside the zone) and moves, deletes and refusals stay as
they are. A run that changes nothing but omx's own record of it leaves no review pending: its record lands in
the zone, as any run's does.

The real ``omx`` command, started in ``/`` so it runs itself again in bob's view, with a scripted model.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from omxfs.checkpoints.review import Review
from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs
from tests.view.conftest import OMX, OMXFS, clean_env

HELD = "in a review: nothing lands before you accept"


def _plan(*steps: dict[str, object], risk: str = "LOW") -> str:
    return json.dumps(
        {"version": 1, "goal": "update bob's summary", "risk_level": risk, "workspace_root": ".",
         "steps": [{"id": n, **step} for n, step in enumerate(steps, 1)], "success_criteria": []}
    )  # fmt: skip


OVERWRITE = {"description": "write the summary", "tool": "write_text",
             "inputs": {"path": "agents/bob/summary.md", "content": "new summary\n"}}  # fmt: skip
PYTHON = {"description": "compute", "tool": "python", "inputs": {"code": "print(1 + 1)"}}
DELETE = {"description": "drop the old notes", "tool": "delete", "inputs": {"path": "agents/bob/old.md"}}


def _omx(ws: Workspace, plan: str, *options: str, answer: str = "") -> subprocess.CompletedProcess[str]:
    replies = ws.root / "agents/bob/replies.json"  # in the zone: the view shows it, and it is there before the run
    replies.write_text(json.dumps([plan]), encoding="utf-8")
    argv = [str(OMX), "update the summary", "--as", "bob", "-w", str(ws.root), "--model", f"scripted:{replies}"]
    return subprocess.run([*argv, *options], input=answer, capture_output=True, text=True, timeout=120,
                          env=clean_env(), cwd="/", check=False)  # fmt: skip


def _runs(ws: Workspace) -> list[Path]:
    return sorted((ws.root / "agents/bob/runs").glob("*/trace.jsonl"))


def _outcome(trace: Path) -> str:
    ends = [entry for line in trace.read_text().splitlines() if (entry := json.loads(line)).get("event") == "end"]
    return str(ends[-1]["data"]["status"]) if ends else ""


def test_yes_runs_an_overwrite_of_the_zone_in_a_review_and_nothing_lands_before_accept(store: Workspace) -> None:
    summary = store.root / "agents/bob/summary.md"
    summary.write_text("old summary\n", encoding="utf-8")

    done = _omx(store, _plan(OVERWRITE), "--review", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    shown = done.stdout[: done.stdout.index("Plan saved:")]
    assert "Risk: LOW" in shown, shown
    assert f"overwrites the existing file agents/bob/summary.md: {HELD}" in shown, shown
    assert "held for review in bob's zone" in done.stderr
    assert summary.read_text() == "old summary\n"  # held apart
    assert Review(store, "bob").pending
    accepted = omxfs("accept", str(store.root), "bob", "--as", "bob")
    assert accepted.returncode == 0, accepted.stderr
    assert summary.read_text() == "new summary\n"


def test_outside_a_review_the_same_overwrite_stays_medium_and_yes_does_not_run_it(store: Workspace) -> None:
    summary = store.root / "agents/bob/summary.md"
    summary.write_text("old summary\n", encoding="utf-8")
    done = _omx(store, _plan(OVERWRITE), "--yes")
    assert done.returncode == 4, done.stdout + done.stderr  # declined: nobody answered
    assert "Risk: MEDIUM" in done.stdout and HELD not in done.stdout
    assert summary.read_text() == "old summary\n"


def test_in_a_review_code_stays_medium_and_a_delete_stays_asked_twice(store: Workspace) -> None:
    (store.root / "agents/bob/old.md").write_text("old\n", encoding="utf-8")
    code = _omx(store, _plan(PYTHON), "--review", "--yes")  # code may write where nothing is held: asked
    assert code.returncode == 4, code.stdout + code.stderr
    assert "Risk: MEDIUM" in code.stdout and "step 1: runs Python code" in code.stdout
    delete = _omx(store, _plan(DELETE), "--review", "--yes", answer="y\n")  # the number of deletes not typed
    assert delete.returncode == 4, delete.stdout + delete.stderr
    assert "Risk: HIGH" in delete.stdout
    assert (store.root / "agents/bob/old.md").exists()


def test_a_declined_review_run_leaves_no_review_pending_and_its_record_in_the_zone(store: Workspace) -> None:
    """It left its trace files alone in the review: "held for review in bob's zone: 3 added", and a zone no plain
    run could use until someone discarded them (the trace with them)."""
    done = _omx(store, _plan(PYTHON), "--review", answer="n\n")
    assert done.returncode == 4, done.stdout + done.stderr
    assert not Review(store, "bob").pending, done.stderr
    nothing = "nothing held for review in bob's zone: the run changed nothing there but omx's record of it"
    assert f"omxfs run: {nothing}, now in runs/\n" in done.stderr, done.stderr
    assert "omxfs run: held for review" not in done.stderr
    (trace,) = _runs(store)  # the record of the run, where every run's record is
    assert _outcome(trace) == "declined"
    plain = _omx(store, _plan(PYTHON), "--yes", answer="y\n")  # a plain run of the zone is not refused
    assert plain.returncode == 0, plain.stdout + plain.stderr
    again = _omx(store, _plan(PYTHON), "--review", answer="n\n")  # runs/ is there now: still only records
    assert again.returncode == 4 and not Review(store, "bob").pending, again.stderr
    assert [_outcome(t) for t in _runs(store)] == ["declined", "done", "declined"]


def test_a_review_run_that_changes_nothing_leaves_no_review_pending(store: Workspace) -> None:
    done = subprocess.run([*OMXFS, "run", str(store.root), "--as", "bob", "--review", "--", "true"],
                          capture_output=True, text=True, timeout=60, env=clean_env(), check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == "omxfs run: nothing held for review in bob's zone: the run changed nothing there\n"
    assert not Review(store, "bob").pending


def test_a_review_run_that_writes_more_than_a_record_under_runs_stays_pending(store: Workspace) -> None:
    """``runs/`` lands unreviewed only as omx writes it: a script, an executable output or a name omx never writes
    there is a change like any other, held until a person decides."""
    for script in (
        "mkdir -p runs/20261129-101010 && echo 'rm -rf ~' > runs/20261129-101010/next.sh",
        "mkdir -p runs/20261129-101010/outputs && echo x > runs/20261129-101010/outputs/1.txt"
        " && chmod +x runs/20261129-101010/outputs/1.txt",
        "mkdir -p runs/tools && echo x > runs/tools/plan.json",
    ):
        done = subprocess.run([*OMXFS, "run", str(store.root), "--as", "bob", "--review", "--", "sh", "-c", script],
                              capture_output=True, text=True, timeout=60, env=clean_env(), check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "omxfs run: held for review in bob's zone: " in done.stderr, (script, done.stderr)
        assert Review(store, "bob").pending
        assert not (store.root / "agents/bob/runs").exists()  # nothing landed
        assert omxfs("discard", str(store.root), "bob", "--as", "bob").returncode == 0
    record = "mkdir -p runs/20261129-101010/outputs && echo x > runs/20261129-101010/outputs/1.txt"
    done = subprocess.run([*OMXFS, "run", str(store.root), "--as", "bob", "--review", "--", "sh", "-c", record],
                          capture_output=True, text=True, timeout=60, env=clean_env(), check=False)  # fmt: skip
    assert "nothing held for review" in done.stderr, done.stderr  # the shape of a record lands, as before
    assert (store.root / "agents/bob/runs/20261129-101010/outputs/1.txt").read_text() == "x\n"


def test_an_attempt_is_a_branch_held_apart_so_yes_runs_its_overwrite_of_the_zone(store: Workspace) -> None:
    """``omx --attempts``: each attempt writes through its branch's overlay, held apart like a review's."""
    summary = store.root / "agents/bob/summary.md"
    summary.write_text("old summary\n", encoding="utf-8")
    done = _omx(store, _plan(OVERWRITE), "--attempts", "1", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Risk: LOW" in done.stdout and f"overwrites the existing file agents/bob/summary.md: {HELD}" in done.stdout
    assert summary.read_text() == "old summary\n"
    assert Review(store, "bob", "attempt-1").pending


def test_a_review_run_prints_no_undo_of_the_zone_and_its_replay_line_works_before_and_after_accept(
    store: Workspace,
) -> None:
    """The run's changes are the review's, not the zone's: no "Undo: omxfs restore" of a zone they never reached.
    Its trace is in the review until accepted, and the printed ``omx replay`` line reads it there, then in the zone."""
    (store.root / "agents/bob/summary.md").write_text("old summary\n", encoding="utf-8")
    done = _omx(store, _plan(OVERWRITE), "--review", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Undo:" not in done.stdout and "Changes: held apart in a branch of the zone" in done.stdout, done.stdout
    (replay,) = [line.removeprefix("Replay: ") for line in done.stdout.splitlines() if line.startswith("Replay: ")]
    for when in ("held", "accepted"):
        shown = subprocess.run(["sh", "-c", replay.replace("omx ", f"{OMX} ", 1)], capture_output=True, text=True,
                               timeout=60, env=clean_env(), check=False)  # fmt: skip
        assert shown.returncode == 0 and "write the summary" in shown.stdout, (when, shown.stdout + shown.stderr)
        assert ("Held apart until a person accepts" in shown.stdout) == (when == "held"), shown.stdout
        if when == "held":
            assert omxfs("accept", str(store.root), "bob", "--as", "bob").returncode == 0
