"""The dashboard in a real headless chromium: opened with its token, an agent's commit from a real view shown live,
two versions diffed, a conflict opened and rolled back, a checkpoint restored, review runs accepted and discarded,
and hostile names and contents shown
as text and cut, never run. One server and one browser for the module; each page's screenshot goes to docs/img/
for the README."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
from typing import Any

import pytest

from omxfs.checkpoints import ZoneHistory
from omxfs.checkpoints.review import Review
from omxfs.checkpoints.views import running_views
from omxfs.errors import Conflict
from omxfs.store import Workspace
from tests.fuse.conftest import clean_env, poll
from tests.ui.conftest import SCREENSHOTS, Server
from tests.ui.test_server import signed_in
from tests.view.conftest import TIMEOUT, run_view, view_argv

#: what a hostile name or content would run if it ever became markup: it sets this flag
PWNED = "window.__pwned=1"


def _run_record(ws: Workspace) -> None:
    """An omx run's record in alice's zone, as omx leaves it (plan.json and trace.jsonl)."""
    run = ws.root / "agents" / "alice" / "runs" / "20261127-093000"
    run.mkdir(parents=True)
    plan = {"goal": "sum the sales", "steps": [{"id": 1, "tool": "read_text", "description": "read sales.csv"}]}
    (run / "plan.json").write_text(json.dumps(plan))
    trace = [
        {"kind": "run", "event": "start", "time": "2026-11-27T09:30:00.000+00:00", "data": {"task": "sum the sales"}},
        {
            "kind": "model",
            "purpose": "plan",
            "start_time": "2026-11-27T09:30:00.100+00:00",
            "end_time": "2026-11-27T09:30:01.200+00:00",
            "duration_s": 1.1,
            "status": "success",
            "prompt_tokens": 812,
            "completion_tokens": 95,
        },
        {"kind": "step", "step_id": 1, "tool": "read_text", "status": "success", "start_time": "2026-11-27T09:30:01.3"},
        {
            "kind": "run",
            "event": "end",
            "time": "2026-11-27T09:30:02.000+00:00",
            "data": {  # a local model: no price, so no cost
                "status": "success",
                "usage": {"prompt_tokens": 812, "completion_tokens": 95, "requests": 1, "cost_usd": None},
            },
        },
    ]
    (run / "trace.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trace))


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: the live test runs a view")
    ws = Workspace.init(tmp_path_factory.mktemp("ui") / "ws", agents=["alice", "bob"], supervisors=["boss"])
    ws.collab.write("alice", "notes.md", b"one\n", expected_version=0, message="first notes")
    ws.collab.write("bob", "notes.md", b"one\ntwo\n", expected_version=1, message="adds two")
    with pytest.raises(Conflict):
        ws.collab.write("alice", "notes.md", b"one\nmine\n", expected_version=1)
    ws.handoff.deliver("alice", "bob", "report.txt", b"totals?\n", message="first totals")
    ws.handoff.deliver("alice", "bob", "report.txt", b"totals\n", message="the totals, checked twice")
    ws.realtime.create("alice", "board", {"title": "lww_register", "done": "pn_counter"})
    ws.realtime.update("bob", "board", lambda doc, replica: doc.field("title").set("ship friday", replica))  # type: ignore[attr-defined]
    zone = ws.root / "agents" / "alice"
    (zone / "report.txt").write_text("draft 1\n")
    ZoneHistory(ws, "alice").make("alice", "first draft")
    (zone / "report.txt").write_text("draft 2\n")
    ZoneHistory(ws, "alice").make("alice", "second draft")
    _run_record(ws)
    return ws


def _untouched(page: Any) -> None:
    """Nothing a hostile string holds ran: no flag set, no dialog raised."""
    assert page.evaluate("window.__pwned") is None
    assert page.dialogs == []


def _shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"ui-{name}.png"))


def test_the_page_opens_with_its_token_and_not_without(browser: Any, server: Server, page: Any) -> None:
    assert page.url == f"{server.base}/team"  # the token went into a cookie and left the address bar
    assert page.locator("#team tr[data-agent=alice]").count() == 1
    assert "acting as supervisor boss" in page.locator("#who").inner_text()
    _shot(page, "team")
    for name, path in [
        ("activity", "/activity"),
        ("handoffs", "/handoffs"),
        ("collab", "/collab"),
        ("realtime", "/realtime"),
        ("checkpoints", "/checkpoints/alice?from=1&to=2"),
        ("run", "/runs/alice/20261127-093000"),
    ]:
        page.goto(server.base + path)
        _shot(page, name)
    assert "812" in page.locator("body").inner_text()  # the run's tokens
    assert page.locator("#cost").inner_text() == "unknown (no price for the model)"  # a local model's: never $0
    assert "read sales.csv" in page.locator("#plan").inner_text()
    page.goto(server.base + "/runs")
    assert page.locator("#runs td.cost").all_inner_texts() == ["unknown (no price for the model)"]
    page.goto(server.base + "/handoffs")  # the delivery the second one replaced, from before the server started
    earlier = page.locator("tr.earlier").inner_text()
    assert "earlier #1" in earlier and "first totals" in earlier
    assert hashlib.sha256(b"totals?\n").hexdigest() in earlier

    stranger = browser.new_context()
    try:
        assert stranger.new_page().goto(f"{server.base}/team").status == 403
        assert stranger.new_page().goto(f"{server.base}/team?token=guess").status == 403
    finally:
        stranger.close()


def test_an_agents_writes_from_a_view_show_in_the_open_page(page: Any, server: Server, team: Workspace) -> None:
    page.goto(f"{server.base}/activity")
    page.wait_for_selector("body[data-live=ready]")
    page.evaluate("window.__stayed = 1")  # gone if the page were loaded again
    # a commit (through the view's mount) and a write in its own zone (natively: no daemon on its path)
    script = 'printf "live\\n" > "$0/collaborative/current/live.md"; printf "mine\\n" > "$0/agents/alice/mine.txt"'
    done = run_view(team.root, "alice", script, args=[str(team.root)])
    assert done.returncode == 0, done.stderr
    row = page.locator("#rows tr", has_text="committed live.md version 1")
    row.wait_for(timeout=10_000)
    assert row.locator("td").nth(2).inner_text() == "alice"
    wrote = page.locator("#rows tr", has_text="wrote in agents/alice: added mine.txt")
    wrote.wait_for(timeout=10_000)
    assert wrote.locator("td").nth(2).inner_text() == "alice"
    assert page.evaluate("window.__stayed") == 1


def test_an_event_found_before_the_pages_stream_opens_shows_in_the_page(
    page: Any, server: Server, team: Workspace
) -> None:
    """The page's event stream is held back (a route) until the feed has found a commit made after the page was
    rendered: the commit is in neither the page's HTML nor any queue the stream could have had, and shows all
    the same, sent first by the stream from the page's cursor."""

    def held_back(route: Any) -> None:
        team.collab.write("bob", "between.md", b"x\n", expected_version=0, message="before the stream")
        poll(lambda: "committed between.md" in _served(server, "/activity"), what="the feed to find the commit")
        route.continue_()

    page.route("**/events?*", held_back)
    try:
        page.goto(f"{server.base}/activity")
        page.wait_for_selector("body[data-live=ready]")  # ready comes after what the stream sends first
        assert page.locator("#rows tr", has_text="committed between.md version 1: before the stream").count() == 1
    finally:
        page.unroute("**/events?*", held_back)


def _served(server: Server, path: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", path, headers=signed_in(server))
    page = connection.getresponse().read().decode()
    connection.close()
    return page


def test_two_versions_diffed(page: Any, server: Server) -> None:
    page.goto(f"{server.base}/collab")
    page.get_by_role("link", name="notes.md", exact=True).click()
    page.select_option("#diff-form select[name=a]", "1")
    page.select_option("#diff-form select[name=b]", "2")
    page.click("#diff-form button")
    page.wait_for_url("**a=1&b=2**")
    assert page.locator("#diff .add").all_inner_texts() == ["+++ notes.md v2", "+two"]
    assert page.locator("#diff .del").all_inner_texts() == ["--- notes.md v1"]


def test_a_conflict_opened_and_rolled_back(page: Any, server: Server, team: Workspace) -> None:
    page.goto(f"{server.base}/collab")
    page.click("#conflicts a.open-conflict")
    assert page.locator("#rejected").inner_text() == "one\nmine\n"
    assert page.locator("#current").inner_text() == "one\ntwo\n"
    assert "merge your changes" in page.locator("#suggestion").inner_text()
    page.select_option("#rollback select[name=version]", "1")
    page.click("#rollback button")
    page.locator(".done").wait_for()
    now = team.collab.read("notes.md")
    assert now.content == b"one\n"
    assert now.entry.author == "boss" and "(omxfs ui)" in now.entry.message
    last = team.audit_trail().records[-1]
    assert (last["agent"], last["uid"], last["path"]) == ("boss", os.getuid(), "collaborative/notes.md")


def test_a_checkpoint_restored(page: Any, server: Server, team: Workspace) -> None:
    page.goto(f"{server.base}/checkpoints/alice?from=1&to=2")
    assert "-draft 1" in page.locator("#diff .del").all_inner_texts()
    assert "+draft 2" in page.locator("#diff .add").all_inner_texts()
    page.click("#checkpoints tr[data-id='1'] form.restore button")
    page.locator(".done").wait_for()
    assert (team.root / "agents" / "alice" / "report.txt").read_text() == "draft 1\n"
    last = team.audit_trail().records[-1]
    assert last["agent"] == "boss" and last["action"].startswith("restore checkpoint 1")
    assert last["uid"] == os.getuid()


def test_a_review_run_accepted_and_another_discarded(page: Any, server: Server, team: Workspace) -> None:
    zone = team.root / "agents" / "bob"
    held = run_view(
        team.root, "bob", 'printf "reviewed\\n" > "$0/agents/bob/plan.md"', "--review", args=[str(team.root)]
    )
    assert held.returncode == 0, held.stderr
    assert not (zone / "plan.md").exists()  # held apart
    page.goto(f"{server.base}/team")
    assert page.locator("#team tr[data-agent=bob] td.review a").inner_text() == "pending"
    page.click("#team tr[data-agent=bob] td.review a")
    assert "+reviewed" in page.locator("#review-diff .add").all_inner_texts()
    assert "1 added, 0 modified, 0 deleted" in page.locator("#review-stat").inner_text()
    _shot(page, "review")
    page.click("#reviews form.accept button")
    page.locator(".done").wait_for()
    assert (zone / "plan.md").read_text() == "reviewed\n"
    last = team.audit_trail().records[-1]
    assert (last["agent"], last["uid"], last["path"]) == ("boss", os.getuid(), "agents/bob")
    assert last["action"].startswith("accept review")
    assert page.locator("#reviews").inner_text().startswith("no review pending")

    # a second review run, still running when Discard is clicked: refused in one line, then done once it ends
    script = 'rm "$0/agents/bob/plan.md"; echo other > "$0/agents/bob/other.md"; read _'
    view = subprocess.Popen(
        view_argv(team.root, "bob", script, "--review", args=[str(team.root)]),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=clean_env(),
        text=True,
    )
    try:
        review = Review(team, "bob")
        started = lambda: (review.upper / "other.md").exists() and bool(running_views(team.meta, "bob"))  # noqa: E731
        poll(started, timeout=TIMEOUT, what="the review run to write")  # a view's start: seconds on a loaded machine
        page.goto(f"{server.base}/checkpoints/bob")
        assert "-reviewed" in page.locator("#review-diff .del").all_inner_texts()
        page.click("#reviews form.discard button")
        refused = page.locator("#refused").inner_text()
        assert refused.startswith("a view of bob is running (pid ") and "\n" not in refused
        assert "Traceback" not in page.content()
    finally:
        _, err = view.communicate("\n", timeout=60)
    assert view.returncode == 0, err
    page.goto(f"{server.base}/checkpoints/bob")
    page.click("#reviews form.discard button")
    page.locator(".done").wait_for()
    assert (zone / "plan.md").read_text() == "reviewed\n" and not (zone / "other.md").exists()
    assert not review.pending
    last = team.audit_trail().records[-1]
    assert (last["agent"], last["path"], last["action"]) == ("boss", "agents/bob", "discard review")

    # the three are in the timeline: on one page, those the feed finds after it was rendered sent by its stream
    page.goto(f"{server.base}/activity?kind=review")
    for said in ("review run held a change of bob apart", "accept review", "discard review"):
        page.locator("#rows tr", has_text=said).first.wait_for(timeout=10_000)


def test_hostile_names_and_contents_are_shown_as_text_and_cut(page: Any, server: Server, team: Workspace) -> None:
    page.goto(f"{server.base}/activity")
    page.wait_for_selector("body[data-live=ready]")
    name = f"<img src=x onerror={PWNED}>.md"
    script = f"<script>{PWNED}</script>"
    content = f"{script}\x1b[31mred\x00\n".encode() + b"A" * (10 * 1024 * 1024)
    team.collab.write("bob", name, content, expected_version=0, message=f"{script}\x07")
    team.handoff.deliver("bob", "alice", f"<svg onload={PWNED}>.txt", b"x", message=script)
    team.realtime.update("bob", "board", lambda doc, replica: doc.field("title").set(script, replica))  # type: ignore[attr-defined]
    # the live rows are markup the page inserts: they must hold the names as text too
    page.locator("#rows tr", has_text=f"delivered <svg onload={PWNED}>.txt").wait_for(timeout=10_000)
    rows = page.locator("#rows").inner_text()
    assert f"committed {name} version 1: {script}\\x07" in rows
    _untouched(page)

    page.goto(f"{server.base}/collab")
    page.get_by_role("link", name=name).click()
    shown = page.locator("#content").inner_text()
    assert shown.startswith(f"{script}\\x1b[31mred\\x00\n")
    assert shown.endswith(f"[cut: {len(content):,} bytes in all]")
    assert len(shown) < 30_000
    _untouched(page)
    for path in ("/handoffs", "/realtime", "/activity"):
        page.goto(server.base + path)
        assert script in page.locator("main").inner_text()
        _untouched(page)
