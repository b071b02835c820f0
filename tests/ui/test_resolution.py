"""When a conflict waits and when it is resolved (``omxfs.ui.resolution``, through ``Needs`` on a real store), and
what a run's end line makes of its outcome (``omxfs.ui.run_records``), in the shapes omx writes them."""

from __future__ import annotations

from typing import Any

import pytest

from omxfs.errors import Conflict
from omxfs.store import Workspace
from omxfs.ui.lists import Lists
from omxfs.ui.needs import Needs
from omxfs.ui.run_records import RunRecords, outcome_of


def _states(ws: Workspace, marks: dict[str, dict[str, Any]] | None = None) -> list[tuple[str, str]]:
    needs = Needs(ws, Lists(ws), RunRecords(ws), marks or {})
    return [(c["agent"], c["resolved"]) for c in needs.conflicts()]


def test_a_conflict_waits_until_its_agent_commits_a_later_version_not_anyone_elses(ws: Workspace) -> None:
    ws.collab.write("alice", "plan.md", b"1\n", expected_version=0)
    ws.collab.write("bob", "plan.md", b"2\n", expected_version=1)
    with pytest.raises(Conflict):
        ws.collab.write("alice", "plan.md", b"mine\n", expected_version=1)
    assert _states(ws) == [("alice", "")]
    ws.collab.write("bob", "plan.md", b"3\n", expected_version=2)  # someone else's later version: it still waits
    assert _states(ws) == [("alice", "")]
    ws.collab.write("alice", "plan.md", b"3\nmine\n", expected_version=3)
    assert _states(ws) == [("alice", "alice committed version 4")]


def test_a_conflict_is_resolved_by_a_rollback_after_it_and_by_a_mark(ws: Workspace) -> None:
    ws.collab.write("alice", "plan.md", b"1\n", expected_version=0)
    ws.collab.write("bob", "plan.md", b"2\n", expected_version=1)
    with pytest.raises(Conflict):
        ws.collab.write("alice", "plan.md", b"mine\n", expected_version=1)
    ws.collab.rollback("boss", "plan.md", 1, message="back to the first")  # any message: the content says it
    assert _states(ws) == [("alice", "rolled back: version 3 by boss holds an earlier version's content")]

    with pytest.raises(Conflict):
        ws.collab.write("bob", "other.md", b"x\n", expected_version=2)
    record = next(c["record"] for c in Needs(ws, Lists(ws), RunRecords(ws), {}).conflicts() if c["agent"] == "bob")
    mark = {"agent": "boss", "timestamp": "2026-11-29T08:00:00Z"}
    assert ("bob", "") in _states(ws)
    assert ("bob", "marked resolved by boss at 2026-11-29T08:00:00Z") in _states(
        ws, {f"collaborative/.conflicts/{record}": mark}
    )


@pytest.mark.parametrize(
    ("data", "outcome", "reason"),
    [
        ({"status": "success"}, "success", ""),
        ({"status": "done", "criteria": [{"criterion": "3 bullets", "status": "not met"}]}, "done",
         "not met: 3 bullets"),
        ({"status": "failed", "error": "missing.txt does not exist"}, "failed", "missing.txt does not exist"),
        ({"status": "failed", "error": "step 2 timed out after 30s and was killed"}, "timed out",
         "step 2 timed out after 30s and was killed"),
        ({"status": "planning_failed", "error": "LLM error: qwen timed out after 60s"}, "timed out",
         "LLM error: qwen timed out after 60s"),
        ({"status": "refused", "reasons": ["deletes 40 files"]}, "refused", "deletes 40 files"),
        ({"status": "declined"}, "not confirmed", "the plan was not confirmed at the prompt"),
        ({"status": "interrupted"}, "interrupted", ""),
        ({"status": "max_steps"}, "failed", "stopped at its most model calls without an answer"),
    ],
)  # fmt: skip
def test_a_runs_outcome_and_reason_are_its_end_lines(data: dict[str, Any], outcome: str, reason: str) -> None:
    assert outcome_of({"kind": "run", "event": "end", "data": data}) == (outcome, reason)
    assert outcome_of(None)[0] == "no end"
