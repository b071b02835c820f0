"""A zone's branches side by side, in a real headless chromium: three branches of bob's zone made by real ``omxfs
run --branch`` views (two change the same file, one another), each shown with its change; Accept on one makes the
sibling that changed the same file conflicted (both sides shown, no Accept) and leaves the other acceptable, which is
then accepted; the zone ends with both accepted changes. Links from the zone's page and from Needs you; a branch made
while the page is open shows in it live; a form without the token changes nothing; a symlink a branch holds is never
followed. One server and one browser."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from omxfs.store import Workspace
from omxfs.ui.branches import DIFF_LINES
from tests.checkpoints.conftest import omxfs
from tests.ui.conftest import SCREENSHOTS, Server
from tests.view.conftest import clean_env, run_view, view_argv

#: each branch's work in bob's zone: first and rival change notes.md and link.md, aside adds a file of its own
WORK = {
    "first": "echo first > notes.md; echo plain > link.md",
    "rival": "echo rival > notes.md; ln -sf {secret} link.md",  # link.md: a symlink to a file outside the zone
    "aside": "echo aside > aside.md",
}
#: ms: what the page reaches by its event stream (a poll of 0.2 s, a refresh after 0.5 s)
WAIT = 15_000
#: what the file outside holds: no page may show it
SECRET = "the person's secret, outside every zone\n"


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: the branches are made by views")
    top = tmp_path_factory.mktemp("branches")
    ws = Workspace.init(top / "ws", agents=["alice", "bob"], supervisors=["boss"])
    (ws.root / "agents/bob/notes.md").write_text("base\n")
    (ws.root / "agents/bob/link.md").write_text("base link\n")
    secret = top / "secret.txt"
    secret.write_text(SECRET)
    for name, work in WORK.items():
        done = run_view(ws.root, "bob", work.format(secret=secret), "--branch", name)
        assert done.returncode == 0, done.stderr
    return ws


def _column(page: Any, name: str) -> Any:
    return page.locator(f"#branches section.branch[data-branch={name}]")


def _files(column: Any) -> list[str]:
    return [text.strip() for text in column.locator("ul.files li").all_inner_texts()]


def _states(ws: Workspace) -> dict[str, str]:
    """What ``omxfs branches --json`` says of each branch: the CLI's reading, beside the page's."""
    return {row["name"]: row["state"] for row in json.loads(omxfs("branches", str(ws.root), "bob", "--json").stdout)}


def test_a_zones_branches_side_by_side_accept_one_the_rival_is_conflicted_the_other_still_accepted(
    page: Any, server: Server, team: Workspace
) -> None:
    zone = team.root / "agents/bob"
    page.goto(f"{server.base}/needs")  # each waits in Needs you, linked to the branches page
    rows = page.locator("#needs-list tr.need[data-kind=branch]")
    assert sorted(rows.locator("td:nth-child(2) a").all_inner_texts()) == [
        f"branch {name} of bob's zone pending" for name in sorted(WORK)
    ]
    assert sorted(rows.locator(".why").all_inner_texts()) == ["pending: +0 ~2 -0"] * 2 + ["pending: +1 ~0 -0"]
    assert rows.locator("a.decide").first.get_attribute("href") == "/checkpoints/bob/branches"
    page.goto(f"{server.base}/checkpoints")  # and the Checkpoints page, and the zone's
    assert page.locator("#pending-branches .pending-branches").all_inner_texts() == [
        "bob: 3 branch(es) pending (aside, first, rival): see them side by side, accept or discard"
    ]
    page.goto(f"{server.base}/checkpoints/bob")
    assert "3 pending (aside, first, rival)" in page.locator("#zone-branches").inner_text()
    page.locator("#zone-branches a").click()
    page.wait_for_url(f"{server.base}/checkpoints/bob/branches")
    page.wait_for_selector("body[data-live=ready]")

    for name in WORK:
        column = _column(page, name)
        assert column.get_attribute("data-state") == "pending"
        assert column.locator("form.accept button").count() == 1
        meta = column.locator("table.meta").inner_text()
        assert "parent\tagents/bob" in meta and "by\tbob" in meta
    assert _files(_column(page, "first")) == ["changed link.md", "changed notes.md"]
    assert _files(_column(page, "rival")) == ["changed link.md (file -> symlink)", "changed notes.md"]
    assert _files(_column(page, "aside")) == ["added aside.md"]
    assert _column(page, "first").locator(".stat").inner_text() == "+0 ~2 -0"
    first_diff = _column(page, "first").locator(".diff").inner_text()
    assert "-base" in first_diff and "+first" in first_diff and "+plain" in first_diff
    assert "+rival" in _column(page, "rival").locator(".diff").inner_text()
    assert "+aside" in _column(page, "aside").locator(".diff").inner_text()

    _column(page, "first").locator("form.accept button").click()
    page.locator("#done").wait_for()
    assert page.locator("#done").inner_text().startswith("accepted bob's branch first; undo: restore checkpoint ")
    assert (zone / "notes.md").read_text() == "first\n"

    rival = _column(page, "rival")
    assert rival.get_attribute("data-state") == "conflicted"
    assert rival.locator("form.accept").count() == 0  # kept, to be discarded only
    assert rival.locator("form.discard button").count() == 1
    sides = rival.locator(".conflict[data-path='notes.md']")
    assert sides.locator(".zone-side").inner_text() == "first\n"
    assert sides.locator(".branch-side").inner_text() == "rival\n"
    linked = rival.locator(".conflict[data-path='link.md']")
    assert linked.locator(".zone-side").inner_text() == "plain\n"
    assert linked.locator(".branch-side").inner_text() == "(a symlink)"  # never followed out of the layer
    assert SECRET.strip() not in page.content()
    assert _column(page, "aside").locator("form.accept button").count() == 1
    assert page.locator("#ended tr[data-branch=first]").get_attribute("data-state") == "accepted"
    assert _states(team) == {"aside": "pending", "rival": "conflicted", "first": "accepted"}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "ui-branches.png"), full_page=True)

    stale = page.request.post(  # a page drawn before the accept still had rival's Accept: the store refuses it
        f"{server.base}/checkpoints/bob/accept",
        form={"token": server.token, "branch": "rival", "back": "branches"},
        headers={"origin": server.base},
    )
    assert stale.status == 409 and "branch rival is conflicted: branch first, accepted after" in stale.text()
    assert (zone / "notes.md").read_text() == "first\n"
    _column(page, "aside").locator("form.accept button").click()
    page.locator("#done").wait_for()
    assert page.locator("#done").inner_text().startswith("accepted bob's branch aside")
    assert _column(page, "aside").count() == 0
    assert _column(page, "rival").get_attribute("data-state") == "conflicted"
    assert (zone / "notes.md").read_text() == "first\n"
    assert (zone / "link.md").read_text() == "plain\n" and not (zone / "link.md").is_symlink()
    assert (zone / "aside.md").read_text() == "aside\n"
    assert _states(team) == {"rival": "conflicted", "first": "accepted", "aside": "accepted"}
    page.goto(f"{server.base}/needs")  # the conflicted one waits still, to be discarded, with why
    rows = page.locator("#needs-list tr.need[data-kind=branch]")
    assert rows.count() == 1
    assert rows.locator(".why").inner_text() == "conflicted: +0 ~2 -0; with first: link.md, notes.md"


def test_a_branch_made_while_the_page_is_open_shows_in_it_and_its_change_once_its_run_ended_without_a_reload(
    page: Any, server: Server, team: Workspace, tmp_path: Path
) -> None:
    page.goto(f"{server.base}/checkpoints/bob/branches")
    page.wait_for_selector("body[data-live=ready]")
    page.evaluate("window.__stayed = 1")  # gone if the page were loaded again
    waiting = int(page.locator("#needs-count").inner_text())
    go = tmp_path / "go"
    script = f"until [ -e {go} ]; do sleep 0.05; done; seq 1 5000 > late.md"  # once the page shows it running
    argv = view_argv(team.root, "bob", script, "--branch", "late", "--bind", str(tmp_path))
    view = subprocess.Popen(argv, cwd=team.root.parent, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        late = _column(page, "late")
        late.locator(".detail").wait_for(timeout=WAIT)
        assert late.locator(".detail").inner_text().startswith("running (pid ")
        assert _files(late) == ["no change"]
        page.wait_for_function(f"() => document.getElementById('needs-count').textContent === '{waiting + 1}'")
        go.touch()
        _, err = view.communicate(timeout=60)
        assert view.returncode == 0, err
    finally:
        if view.poll() is None:
            view.kill()
            view.communicate()
    late.locator("ul.files li[data-path='late.md']").wait_for(timeout=WAIT)  # the end of its run is an event
    assert _files(late) == ["added late.md"]
    shown = late.locator(".diff > div").all_inner_texts()  # bounded: the page says where to see it whole
    assert len(shown) == DIFF_LINES + 1 and shown[-2] == f"+{DIFF_LINES - 3}"
    assert shown[-1] == "… (diff cut: omxfs diff WS bob --branch late prints it whole)"
    assert late.locator(".detail").count() == 0 and late.locator("form.accept button").count() == 1
    assert page.evaluate("window.__stayed") == 1


def test_an_accept_without_the_forms_token_is_refused_and_changes_nothing(
    page: Any, server: Server, team: Workspace
) -> None:
    answer = page.request.post(
        f"{server.base}/checkpoints/bob/discard",
        form={"token": "not-the-token", "branch": "rival", "back": "branches"},
        headers={"origin": server.base},
    )
    assert answer.status == 403
    assert Path(team.root / ".omxfs/branches/bob/rival").is_dir()
