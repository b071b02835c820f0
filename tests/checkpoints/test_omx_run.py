"""``omx --as NAME`` on an omxfs store runs in NAME's view, whose start made the checkpoint the run names (issue 27):
the view's ``.omxfs/`` is read-only, so the run reads that checkpoint instead of making one, and its result's
lines, run on the host once the view has ended, show and undo what the run did."""

from __future__ import annotations

import json

from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs
from tests.e2e.helpers import PLAN_A, run_end, trace_of
from tests.support.scripts import changes_and_undo
from tests.view.conftest import run_omx_as

PLAN = {
    **PLAN_A,
    "steps": [
        {
            "id": 1,
            "description": "edit",
            "tool": "write_text",
            "inputs": {"path": "agents/bob/keep.md", "content": "B\n"},
        },
    ],
    "success_criteria": [],
}


def test_omx_as_in_a_view_names_the_views_checkpoint_and_its_undo_works_on_the_host(store: Workspace) -> None:
    ws = store.root
    zone = ws / "agents" / "bob"
    (zone / "keep.md").write_text("A\n", encoding="utf-8")
    replies = zone / "replies.json"
    replies.write_text(json.dumps([json.dumps(PLAN)]), encoding="utf-8")
    done = run_omx_as("bob", ws, "edit keep.md", replies)
    assert done.returncode == 0, done.stdout + done.stderr
    show, undo = changes_and_undo(done.stdout)
    listed = json.loads(omxfs("checkpoints", str(ws), "bob", "--json").stdout)
    assert [c["message"] for c in listed] == ["view started"]  # the view's, and no second one from inside it
    assert show == ["omxfs", "diff", str(ws), "bob", str(listed[0]["id"])]
    (run_dir,) = (zone / "runs").iterdir()
    trace = trace_of(run_dir)
    start = next(e for e in trace if e.get("event") == "start")
    assert start["data"]["checkpoint"]["made"] is False and str(start["data"]["checkpoint"]["id"]) == listed[0]["id"]
    changes = json.loads(omxfs(*show[1:], "--json").stdout)
    assert changes["modified"] == ["keep.md"] and changes["deleted"] == []
    assert run_end(trace)["changes"] == {"added": len(changes["added"]), "modified": 1, "deleted": 0}
    omxfs(*undo[1:])
    assert (zone / "keep.md").read_text(encoding="utf-8") == "A\n" and not (zone / "runs").exists()
