"""What waits for the person, in a real headless chromium: the Needs-you page and the count in every page's
header, a pending review accepted from there, a conflict that leaves the queue (live) once its agent commits a later
version, a conflict marked resolved (an audit record, still resolved after a restart), a failed omx run with its
reason, and the Runs page's rows with the diff of what a run changed. Real ``omxfs run`` views and real ``omx``
runs (a scripted model); one server and one browser for the module."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from omxfs.errors import Conflict
from omxfs.store import Workspace
from tests.ui.conftest import SCREENSHOTS, Server, start_ui
from tests.view.conftest import run_omx_as, run_view

WAIT = 15_000  # ms: a condition the page reaches by its event stream (a poll of 0.2 s, a refresh after 0.5 s)


def _plan(goal: str, step: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "goal": goal, "risk_level": "LOW", "workspace_root": ".", "steps": [step],
            "success_criteria": []}  # fmt: skip


def _omx(ws: Workspace, agent: str, task: str, plan: dict[str, Any], tmp: Path) -> str:
    """A real ``omx TASK --as AGENT`` with a scripted model whose one reply is ``plan`` (with token usage)."""
    replies = tmp / f"replies-{len(list(tmp.iterdir()))}.json"
    replies.write_text(json.dumps([{"content": json.dumps(plan), "usage": {"prompt_tokens": 812,
                                                                          "completion_tokens": 95}}]))  # fmt: skip
    done = run_omx_as(agent, ws.root, task, replies)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: the tests run views")
    ws = Workspace.init(tmp_path_factory.mktemp("needs") / "ws", agents=["alice", "bob"], supervisors=["boss"])
    ws.collab.write("alice", "plan.md", b"one\n", expected_version=0, message="first")
    return ws


def _count(page: Any) -> int:
    text = page.locator("#needs-count").inner_text()
    return int(text) if text else -1


def _wait_count(page: Any, count: int) -> None:
    page.wait_for_function(f"() => document.getElementById('needs-count').textContent === '{count}'", timeout=WAIT)


def _open_needs(page: Any, server: Server) -> None:
    page.goto(f"{server.base}/needs")
    page.wait_for_selector("body[data-live=ready]")
    page.evaluate("window.__stayed = 1")  # gone if the page were loaded again


def _shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"ui-{name}.png"))


def _rows(page: Any, kind: str) -> Any:
    return page.locator(f"#needs-list tr.need[data-kind={kind}]")


def test_a_pending_review_is_in_needs_and_the_count_and_leaves_after_accept(
    page: Any, server: Server, team: Workspace
) -> None:
    page.goto(f"{server.base}/team")
    before = _count(page)
    held = run_view(team.root, "bob", 'printf "held\\n" > "$0/agents/bob/draft.md"', "--review", args=[str(team.root)])
    assert held.returncode == 0, held.stderr
    page.goto(f"{server.base}/team")  # any page's header counts it (once the feed found it: live)
    _wait_count(page, before + 1)
    page.goto(f"{server.base}/checkpoints")  # and the Checkpoints page lists it
    assert page.locator("#reviews .pending-review").inner_text().startswith("bob: a review run's change pending in")
    _open_needs(page, server)
    review = _rows(page, "review")
    assert review.count() == 1
    assert review.locator("td").nth(2).inner_text() == "bob"
    assert review.locator(".stat").inner_text() == "1 added, 0 modified, 0 deleted"
    review.locator("form.accept button").click()
    page.locator(".done").wait_for()
    assert page.url.startswith(f"{server.base}/needs?")
    assert _rows(page, "review").count() == 0
    assert _count(page) == before
    assert (team.root / "agents" / "bob" / "draft.md").read_text() == "held\n"


def test_a_conflict_waits_and_leaves_live_when_its_agent_commits_a_later_version(
    page: Any, server: Server, team: Workspace
) -> None:
    _open_needs(page, server)
    before = _count(page)
    team.collab.write("bob", "plan.md", b"one\nbob\n", expected_version=1, message="bob's")
    with pytest.raises(Conflict):
        team.collab.write("alice", "plan.md", b"one\nalice\n", expected_version=1)
    conflict = _rows(page, "conflict").filter(has_text="conflict on collaborative/plan.md")
    conflict.wait_for(timeout=WAIT)  # live: the page was not loaded again
    assert conflict.locator("td").nth(2).inner_text() == "alice"
    _wait_count(page, before + 1)

    team.collab.write("alice", "plan.md", b"one\nbob\nalice\n", expected_version=2, message="merged")
    conflict.wait_for(state="detached", timeout=WAIT)
    _wait_count(page, before)
    assert page.evaluate("window.__stayed") == 1

    page.goto(f"{server.base}/team")  # the Team page's count leaves it too; the Collaborative page keeps it, resolved
    assert page.locator("#team tr[data-agent=alice] td").nth(4).inner_text() == "0"
    page.goto(f"{server.base}/collab")
    assert page.locator("#conflicts tr.resolved td.state").inner_text() == "resolved: alice committed version 3"


def test_a_conflict_marked_resolved_leaves_and_stays_resolved_after_a_restart(
    browser: Any, page: Any, server: Server, team: Workspace
) -> None:
    with pytest.raises(Conflict):
        team.collab.write("bob", "plan.md", b"bob again\n", expected_version=2)
    _open_needs(page, server)
    conflict = _rows(page, "conflict").filter(has_text="plan.md")
    conflict.wait_for(timeout=WAIT)
    before = _count(page)
    conflict.locator("form.resolve button").click()
    page.locator(".done").wait_for()
    assert _rows(page, "conflict").count() == 0 and _count(page) == before - 1
    last = team.audit_trail().records[-1]
    assert (last["agent"], last["action"], last["uid"]) == ("boss", "mark resolved (omxfs ui)", os.getuid())
    assert last["path"].startswith("collaborative/.conflicts/bob/plan.md.rejected-")

    again = start_ui(team.root)  # another server reads the mark back from the audit trail
    try:
        context = browser.new_context()
        other = context.new_page()
        other.goto(again.url.replace("/?", "/collab?"))
        bob = other.locator("#conflicts tr", has_text="bob")
        assert bob.locator("td.state").inner_text() == "resolved: marked resolved by boss at " + last["timestamp"]
        other.goto(f"{again.base}/needs")
        assert _rows(other, "conflict").count() == 0
        context.close()
    finally:
        again.stop()


def test_a_failed_omx_run_is_in_needs_with_its_reason(
    page: Any, server: Server, team: Workspace, tmp_path: Path
) -> None:
    _open_needs(page, server)
    before = _count(page)
    step = {"id": 1, "description": "Read", "tool": "read_text", "inputs": {"path": "missing.txt"}}
    _omx(team, "alice", "read missing.txt", _plan("read a missing file", step), tmp_path)
    run = _rows(page, "run").filter(has_text="read missing.txt")
    run.wait_for(timeout=WAIT)
    assert "failed: read missing.txt" in run.inner_text()
    assert run.locator("td.why").inner_text() == "missing.txt does not exist"
    _wait_count(page, before + 1)
    with pytest.raises(Conflict):  # one more kind for the screenshot
        team.collab.write("bob", "plan.md", b"bob's notes\n", expected_version=1)
    _rows(page, "conflict").first.wait_for(timeout=WAIT)
    _shot(page, "needs")


def test_a_view_that_reached_a_limit_is_in_needs_until_marked_resolved(
    page: Any, server: Server, team: Workspace
) -> None:
    assert run_view(team.root, "bob", "true").returncode == 0  # its checkpoint: the next view's start makes none
    _open_needs(page, server)
    before = _count(page)
    done = run_view(team.root, "bob", "head -c 2M /dev/zero > /tmp/big", "--max-file-size", "1M")
    assert "stopped: the view reached its limit of 1 MiB per file" in done.stderr, done.stderr
    limit = _rows(page, "limit")
    limit.wait_for(timeout=WAIT)  # live: the page was not loaded again, and the view wrote nothing else to tell
    assert page.evaluate("window.__stayed") == 1
    assert limit.count() == 1
    assert "a view of bob reached its limit of 1 MiB per file (--max-file-size)" in limit.inner_text()
    _wait_count(page, before + 1)
    before = _count(page)
    limit.locator("form.resolve button").click()
    page.locator(".done").wait_for()
    assert _rows(page, "limit").count() == 0 and _count(page) == before - 1


def test_the_runs_page_shows_task_outcome_duration_tokens_and_the_diff_of_what_it_changed(
    page: Any, server: Server, team: Workspace, tmp_path: Path
) -> None:
    step = {"id": 1, "description": "Write", "tool": "write_text",
            "inputs": {"path": "agents/alice/totals.txt", "content": "total 8\n", "mode": "overwrite"}}  # fmt: skip
    said = _omx(team, "alice", "write the totals", _plan("write the totals", step), tmp_path)
    assert (team.root / "agents" / "alice" / "totals.txt").read_text() == "total 8\n", said
    page.goto(f"{server.base}/runs")
    row = page.locator("#runs tr", has_text="write the totals")
    assert row.locator("td.outcome").inner_text() == "done"  # every step ran; no criterion to check it by
    assert row.locator("td.duration").inner_text().endswith(" s")
    assert row.locator("td.tokens").inner_text() == "812 prompt, 95 completion, 0 cached"
    _shot(page, "runs")
    failed = page.locator("#runs tr", has_text="read missing.txt")
    assert failed.locator("td.outcome").inner_text() == "failed"
    assert failed.locator("td.why").inner_text() == "missing.txt does not exist"
    row.locator("a.diff-link").click()
    page.wait_for_url("**/checkpoints/alice?from=*")
    assert "+total 8" in page.locator("#diff .add").all_inner_texts()


def test_realtime_fields_show_the_value_cat_gives_and_their_crdt_state_behind_a_toggle(
    page: Any, server: Server, team: Workspace
) -> None:
    team.realtime.create("alice", "board", {"title": "lww_register", "done": "pn_counter"})
    team.realtime.update("bob", "board", lambda doc, replica: doc.field("title").set("ship friday", replica))  # type: ignore[attr-defined]
    page.goto(f"{server.base}/realtime")
    title = page.locator("#doc-board ~ table.fields tr", has_text="title").first
    assert title.locator("pre.value").inner_text() == "ship friday"  # as `cat realtime/board/title` prints it
    state = title.locator("details.state")
    assert state.get_attribute("open") is None and not state.locator("pre").is_visible()
    state.locator("summary").click()
    assert '"ship friday"' in state.locator("pre").inner_text()


def test_the_activity_chart_and_its_range_update_live_and_the_live_dot_says_what_it_means(
    page: Any, server: Server, team: Workspace
) -> None:
    page.goto(f"{server.base}/activity")
    page.wait_for_selector("body[data-live=ready]")
    assert page.locator("#live-legend").inner_text() == "live"
    said = page.locator("#live").get_attribute("title") or ""
    assert "green" in said and "red" in said
    page.evaluate("window.__stayed = 1")
    bobs = "[...document.querySelectorAll('#chart text')].map(t => t.textContent).find(t => t.startsWith('bob ('))"
    before = page.evaluate(bobs)  # "bob (N)": his events in the chart, or None before his first
    team.collab.write("bob", "later.md", b"x\n", expected_version=0, message="later")
    page.wait_for_function(f"() => {{ const now = {bobs}; return now !== undefined && now !== {json.dumps(before)}; }}",
                           timeout=WAIT)  # fmt: skip
    assert (
        page.locator("#chart-range")
        .inner_text()
        .endswith(page.locator("#rows tr").first.locator("td").first.inner_text())
    )
    assert page.evaluate("window.__stayed") == 1
