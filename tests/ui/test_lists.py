"""The lists the pages show (``omxfs.ui.lists``), kept between requests by directory stamps: an unchanged tree is
not read again, a change is seen at the next request; the deliveries a re-delivery replaced; a run's cost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from omxfs.errors import Conflict
from omxfs.store import Workspace
from omxfs.ui.lists import Lists
from omxfs.ui.run_records import usage


def _age(root: Path) -> None:
    """Every directory under ``root`` as if it had not changed for a minute (older than ``stamps.SETTLE``)."""
    old = os.stat(root).st_mtime_ns - 60 * 10**9
    for directory, _, _ in os.walk(root):
        os.utime(directory, ns=(old, old))


def test_an_unchanged_tree_is_not_read_again_and_a_commit_is_seen(ws: Workspace) -> None:
    for n in range(3):
        ws.collab.write("alice", f"docs/f{n}.md", b"1", expected_version=0)
    with pytest.raises(Conflict):
        ws.collab.write("bob", "docs/f0.md", b"mine", expected_version=0)
    lists = Lists(ws)
    _age(ws.root / "collaborative")
    assert [(f["path"], f["latest"].version) for f in lists.collab_files()] == [
        ("docs/f0.md", 1),
        ("docs/f1.md", 1),
        ("docs/f2.md", 1),
    ]
    assert [c["agent"] for c in lists.conflicts()] == ["bob"]
    read = lists._versions.listed, lists._conflicts.listed

    assert len(lists.collab_files()) == 3 and len(lists.conflicts()) == 1
    assert (lists._versions.listed, lists._conflicts.listed) == read  # nothing listed again

    ws.collab.write("bob", "docs/f1.md", b"2", expected_version=1)
    files = {f["path"]: f["latest"] for f in lists.collab_files()}
    assert (files["docs/f1.md"].version, files["docs/f1.md"].author) == (2, "bob")
    assert lists._versions.listed == read[0] + 1  # only the directory that changed


def test_earlier_deliveries_show_with_their_message_time_and_sha256(ws: Workspace) -> None:
    first = ws.handoff.deliver("alice", "bob", "report.txt", b"v1", message="first cut")
    second = ws.handoff.deliver("alice", "bob", "report.txt", b"v2", message="fixed totals")
    gone = ws.handoff.deliver("alice", "bob", "draft.txt", b"d", message="a draft")
    ws.handoff.retract("alice", "bob", "draft.txt")

    lists = Lists(ws)
    [box] = lists.handoffs()  # a new server: all of it read from the store's delivery history

    assert (box["sender"], box["recipient"]) == ("alice", "bob")
    files = {f.filename: f for f in box["files"]}
    assert files["report.txt"].current == second
    assert [(k.number, k.meta) for k in files["report.txt"].earlier] == [(1, first)]
    assert files["draft.txt"].current is None  # retracted: its delivery kept all the same
    assert [k.meta for k in files["draft.txt"].earlier] == [gone]

    third = ws.handoff.deliver("alice", "bob", "report.txt", b"v3", message="and the notes")  # while it runs
    [box] = lists.handoffs()
    report = next(f for f in box["files"] if f.filename == "report.txt")
    assert report.current == third and [k.meta for k in report.earlier] == [second, first]


def test_a_runs_cost_is_shown_where_its_trace_has_it_and_unknown_never_zero() -> None:
    def end(**recorded: object) -> dict[str, object]:
        return {"kind": "run", "event": "end", "data": {"status": "success", "usage": recorded}}

    priced = end(prompt_tokens=1200, completion_tokens=80, cached_tokens=0, requests=2, cost_usd=0.0123)
    assert usage(priced) == {"tokens": "1,200 prompt, 80 completion, 0 cached", "cost": "$0.0123"}
    local = end(prompt_tokens=812, completion_tokens=95, cached_tokens=0, requests=1, cost_usd=None)
    assert usage(local)["cost"] == "unknown (no price for the model)"
    assert usage(end(requests=0, cost_usd=None))["cost"] == "unknown (no reply from the model)"
    assert usage(None)["cost"] == "unknown (the run has not ended)"
    no_model = {"kind": "run", "event": "end", "data": {"status": "error"}}
    assert usage(no_model)["cost"] == "unknown (no model use recorded)"
