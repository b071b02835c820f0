"""Branches of a zone, on real ``omxfs run --branch`` views: several held-apart changes of one zone at once.

Three branches of alice's zone are written by three ``omxfs run`` processes running at the same time; ``omxfs
branches`` lists them; the first accepted wins, a sibling that changed the same file is conflicted (kept, refused by
accept with the path named), a sibling that changed another file is accepted after it. ``--review`` is the branch
named ``review``; a branch name that is not a plain name is refused.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs
from tests.view.conftest import clean_env, poll, run_view, view_argv

Ok = Callable[..., str]

#: each branch's work: one file written, then it waits for ``go`` (so all three run at once)
WORK = {
    "first": "echo first > notes.md",
    "rival": "echo rival > notes.md",  # the same file as first: conflicted once first is accepted
    "aside": "echo aside > aside.md",  # another file: accepted after first all the same
}


def _branches(ws: Path) -> dict[str, dict[str, Any]]:
    listed = json.loads(omxfs("branches", str(ws), "alice", "--json").stdout)
    return {row["name"]: row for row in listed}


@pytest.fixture
def control(tmp_path: Path) -> Path:
    path = tmp_path / "control"
    path.mkdir()
    return path


def test_three_branches_run_at_once_and_the_first_accepted_wins_without_losing_the_others(
    store: Workspace, ok: Ok, control: Path
) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    views = {}
    for name, work in WORK.items():
        script = f"{work}; touch {control}/up-{name}; until [ -e {control}/go ]; do sleep 0.05; done; cat notes.md"
        argv = view_argv(ws, "alice", script, "--branch", name, "--bind", str(control))
        views[name] = subprocess.Popen(
            argv, cwd=ws.parent, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    try:
        poll(lambda: all((control / f"up-{n}").exists() or v.poll() is not None for n, v in views.items()))
        assert all(v.poll() is None for v in views.values()), {n: v.poll() for n, v in views.items()}
        # all three run at once, each over the zone as it was, which nobody else sees changed
        assert (zone / "notes.md").read_text() == "base\n" and not (zone / "aside.md").exists()
        running = _branches(ws)
        assert sorted(running) == ["aside", "first", "rival"]
        assert all(row["state"] == "pending" and "running (pid" in row["detail"] for row in running.values())
        # the zone changes under no running branch: nothing is accepted while a view of it runs
        busy = omxfs("accept", str(ws), "alice", "--branch", "first", "--as", "alice", check=False)
        assert busy.returncode == 1 and "a view of alice is running" in busy.stderr, busy.stderr
        again = run_view(ws, "alice", "true", "--branch", "first")
        assert again.returncode == 1 and "alice's branch first is running in a view already" in again.stderr
        plain = run_view(ws, "alice", "echo plain > notes.md")
        assert plain.returncode == 1 and "alice has branch" in plain.stderr and "pending" in plain.stderr
    finally:
        (control / "go").touch()
        ended = {name: view.communicate(timeout=60) for name, view in views.items()}
    for name, (_, err) in ended.items():
        assert views[name].returncode == 0, err
        assert f"held for review in branch {name} of alice's zone" in err, err
        assert f"omxfs accept {ws} alice --branch {name} --as alice" in err, err
    assert ended["first"][0] == "first\n" and ended["rival"][0] == "rival\n" and ended["aside"][0] == "base\n"
    assert (zone / "notes.md").read_text() == "base\n"

    listed = _branches(ws)
    assert {n: (r["state"], r["by"], r["stat"]) for n, r in listed.items()} == {
        "aside": ("pending", "alice", "+1 ~0 -0"),
        "first": ("pending", "alice", "+0 ~1 -0"),
        "rival": ("pending", "alice", "+0 ~1 -0"),
    }
    table = omxfs("branches", str(ws), "alice").stdout.splitlines()
    assert table[0].split()[:6] == ["BRANCH", "PARENT", "CREATED", "BY", "CHANGES", "STATE"] and len(table) == 4

    accepted = omxfs("accept", str(ws), "alice", "--branch", "first", "--as", "alice").stdout
    assert accepted.startswith("accepted alice's branch first\nundo with: omxfs restore ")
    assert (zone / "notes.md").read_text() == "first\n"

    after = _branches(ws)
    assert after["first"]["state"] == "accepted" and after["aside"]["state"] == "pending"
    assert after["rival"]["state"] == "conflicted" and "with first: notes.md" in after["rival"]["detail"]
    refused = omxfs("accept", str(ws), "alice", "--branch", "rival", "--as", "alice", check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "alice's branch rival is conflicted" in refused.stderr and "notes.md" in refused.stderr
    assert "branch first" in refused.stderr and "--branch rival" in refused.stderr
    assert (zone / "notes.md").read_text() == "first\n"  # kept the first accepted
    both = omxfs("diff", str(ws), "alice", "--branch", "rival").stdout  # kept too: both sides shown
    assert "-first" in both and "+rival" in both
    assert (ws / ".omxfs/branches/alice/rival/upper/notes.md").read_text() == "rival\n"

    omxfs("accept", str(ws), "alice", "--branch", "aside", "--as", "alice")
    assert (zone / "aside.md").read_text() == "aside\n" and (zone / "notes.md").read_text() == "first\n"
    assert omxfs("discard", str(ws), "alice", "--branch", "rival", "--as", "alice").stdout == (
        "discarded alice's branch rival\n"
    )
    states = {n: r["state"] for n, r in _branches(ws).items()}
    assert states == {"first": "accepted", "aside": "accepted", "rival": "discarded"}
    assert ok(run_view(ws, "alice", "cat notes.md aside.md")) == "first\naside\n"  # decided: plain runs again
    trail = [r["action"] for r in store.audit_trail().records]
    assert any(a.startswith("accept branch first (undo: ") for a in trail) and "discard branch rival" in trail


def test_review_is_the_branch_named_review_in_every_spelling(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    run = run_view(ws, "alice", "echo reviewed > notes.md", "--review")
    ok(run)
    assert "held for review in alice's zone: 0 added, 1 modified, 0 deleted" in run.stderr
    assert (ws / ".omxfs/reviews/alice/upper/notes.md").exists()  # where a review always was
    (row,) = json.loads(omxfs("branches", str(ws), "alice", "--json").stdout)
    assert (row["name"], row["state"], row["by"]) == ("review", "pending", "alice")
    named = omxfs("diff", str(ws), "alice", "--branch", "review").stdout
    assert named == omxfs("diff", str(ws), "alice", "--review").stdout and "+reviewed" in named
    both = run_view(ws, "alice", "true", "--review", "--branch", "other")
    assert both.returncode == 2 and "--review is --branch review" in both.stderr
    assert omxfs("accept", str(ws), "alice", "--review", "--as", "alice").stdout.startswith("accepted alice's review")
    assert (zone / "notes.md").read_text() == "reviewed\n"
    (row,) = json.loads(omxfs("branches", str(ws), "alice", "--json").stdout)
    assert (row["name"], row["state"]) == ("review", "accepted")


def test_a_branch_run_beside_a_plain_view_is_refused_and_leaves_nothing_pending(
    store: Workspace, control: Path
) -> None:
    ws = store.root
    script = f"touch {control}/up; until [ -e {control}/go ]; do sleep 0.05; done"
    plain = subprocess.Popen(
        view_argv(ws, "alice", script, "--bind", str(control)),
        cwd=ws.parent,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        poll(lambda: (control / "up").exists() or plain.poll() is not None)
        refused = run_view(ws, "alice", "echo x > notes.md", "--branch", "b1")
        assert refused.returncode == 1 and "a review run needs the zone to itself" in refused.stderr, refused.stderr
    finally:
        (control / "go").touch()
        plain.communicate(timeout=60)
    assert plain.returncode == 0
    assert not (ws / ".omxfs/branches/alice/b1").exists()  # nothing left pending to refuse the next plain run
    assert json.loads(omxfs("branches", str(ws), "alice", "--json").stdout) == []


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "..", "-x"])
def test_a_branch_name_that_is_not_a_plain_name_is_refused(store: Workspace, name: str) -> None:
    ws = store.root
    run = run_view(ws, "alice", "echo x > notes.md", f"--branch={name}")
    assert run.returncode == 2 and "is no branch name" in run.stderr and "Traceback" not in run.stderr, run.stderr
    for verb, *acting in (("diff",), ("accept", "--as", "alice"), ("discard", "--as", "alice")):
        done = omxfs(verb, str(ws), "alice", f"--branch={name}", *acting, check=False)
        assert done.returncode == 1 and "is no branch name" in done.stderr, (verb, done.stderr)
    assert not (ws / ".omxfs/branches").exists() and not (store.root.parent / "x").exists()
    assert not (ws / "agents/alice/notes.md").exists()


def test_a_branch_accept_killed_half_way_is_finished_by_fsck_repair_and_still_wins(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    work = "echo one > one.md; echo two > two.md; echo three > notes.md"
    ok(run_view(ws, "alice", work, "--branch", "big"))
    ok(run_view(ws, "alice", "echo rival > notes.md", "--branch", "rival"))
    env = {**clean_env(), "OMXFS_CRASH_AT": "accept-applied:1"}
    killed = omxfs("accept", str(ws), "alice", "--branch", "big", "--as", "alice", env=env, check=False)
    assert killed.returncode == -9
    assert (ws / ".omxfs/branches/alice/big/accepting").exists()
    assert "accept interrupted" in _branches(ws)["big"]["detail"]
    assert "interrupted-accept" in omxfs("fsck", str(ws), check=False).stdout
    plain = run_view(ws, "alice", "true")
    assert plain.returncode == 1 and "alice has branch big pending" in plain.stderr
    # nothing starts over, nor is applied over, a zone that holds part of a change
    other = run_view(ws, "alice", "true", "--branch", "other")
    assert other.returncode == 1 and "an accept of alice's branch big was interrupted" in other.stderr
    assert not (ws / ".omxfs/branches/alice/other").exists()
    over = omxfs("accept", str(ws), "alice", "--branch", "rival", "--as", "alice", check=False)
    assert over.returncode == 1 and "an accept of alice's branch big was interrupted" in over.stderr
    repaired = omxfs("fsck", str(ws), "--repair").stdout.splitlines()
    assert any(line.startswith("repaired") and "interrupted-accept" in line for line in repaired), repaired
    assert [(zone / n).read_text() for n in ("one.md", "two.md", "notes.md")] == ["one\n", "two\n", "three\n"]
    listed = _branches(ws)
    assert listed["big"]["state"] == "accepted" and listed["rival"]["state"] == "conflicted"
    refused = omxfs("accept", str(ws), "alice", "--branch", "rival", "--as", "alice", check=False)
    assert refused.returncode == 1 and "conflicted" in refused.stderr and "notes.md" in refused.stderr


def test_a_finished_branch_is_discarded_while_a_sibling_runs_but_not_the_running_one(
    store: Workspace, ok: Ok, control: Path
) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    ok(run_view(ws, "alice", "echo quick > quick.md", "--branch", "quick"))
    script = f"echo slow > slow.md; touch {control}/up; until [ -e {control}/go ]; do sleep 0.05; done"
    slow = subprocess.Popen(
        view_argv(ws, "alice", script, "--branch", "slow", "--bind", str(control)),
        cwd=ws.parent,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        poll(lambda: (control / "up").exists() or slow.poll() is not None)
        assert slow.poll() is None, slow.communicate()
        running = omxfs("discard", str(ws), "alice", "--branch", "slow", "--as", "alice", check=False)
        assert running.returncode == 1 and f"a view of alice is running (pid {slow.pid})" in running.stderr
        assert "alice's branch slow" in running.stderr
        accept = omxfs("accept", str(ws), "alice", "--branch", "quick", "--as", "alice", check=False)
        assert (
            accept.returncode == 1
            and f"a view of alice is running (pid {slow.pid}): an accept changes the zone" in (accept.stderr)
        )
        omxfs("discard", str(ws), "alice", "--branch", "quick", "--as", "alice")  # changes nothing slow sees
        assert not (ws / ".omxfs/branches/alice/quick").exists()
    finally:
        (control / "go").touch()
        _, err = slow.communicate(timeout=60)
    assert slow.returncode == 0, err
    assert {n: r["state"] for n, r in _branches(ws).items()} == {"slow": "pending", "quick": "discarded"}
    assert not (zone / "quick.md").exists() and not (zone / "slow.md").exists()


def test_two_branches_are_compared_with_each_other(store: Workspace, ok: Ok) -> None:
    """``omxfs diff --branch A --branch B``: the zone as A has it against the zone as B has it, the text diffs
    included; the zone itself is in neither side's change."""
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    (zone / "same.md").write_text("kept\n")
    for name, work in {"one": "echo one > notes.md; echo x > only-one.md", "two": "echo two > notes.md"}.items():
        done = run_view(ws, "alice", work, "--branch", name)
        assert done.returncode == 0, done.stderr
    compared = json.loads(omxfs("diff", str(ws), "alice", "--branch", "one", "--branch", "two", "--json").stdout)
    assert (compared["from"], compared["to"]) == ("one", "two")
    assert (compared["added"], compared["modified"], compared["deleted"]) == ([], ["notes.md"], ["only-one.md"])
    text = omxfs("diff", str(ws), "alice", "--branch", "one", "--branch", "two").stdout
    assert "-one\n+two\n" in text, text
    three = omxfs("diff", str(ws), "alice", "--branch", "one", "--branch", "two", "--branch", "x", check=False)
    assert three.returncode == 2 and "at most two branches" in three.stderr
    missing = omxfs("diff", str(ws), "alice", "--branch", "one", "--branch", "nope", check=False)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr, missing.stderr
    assert (zone / "notes.md").read_text() == "base\n" and not (zone / "only-one.md").exists()


def test_a_view_of_the_zone_starts_between_accepts_never_during_one(store: Workspace, control: Path) -> None:
    """An accept holds the zone's accept lock while it changes the zone; a view waits for it before recording itself
    (which every later accept sees), and one whose accept was killed half-way is refused once it may go on."""
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    assert run_view(ws, "alice", "echo one > notes.md", "--branch", "one").returncode == 0
    lock = ws / ".omxfs/branches/alice/.accept.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as an accept of alice's branches holds it
    try:
        argv = view_argv(ws, "alice", f"touch {control}/ran", "--branch", "two", "--bind", str(control))
        waiting = subprocess.Popen(argv, cwd=ws.parent, env=clean_env(), stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)  # long enough for a view to start on this machine, had it not waited
        assert waiting.poll() is None and not (control / "ran").exists()
        marker = ws / ".omxfs/branches/alice/one/accepting"
        marker.write_text(json.dumps({"undo": 1, "by": "alice"}))  # the accept is killed half-way
    finally:
        os.close(fd)
    _, err = waiting.communicate(timeout=60)
    assert waiting.returncode != 0 and "an accept of alice's branch one was interrupted" in err, err
    assert not (control / "ran").exists()
    marker.unlink()
    done = run_view(ws, "alice", f"touch {control}/ran", "--branch", "two", "--bind", str(control))
    assert done.returncode == 0 and (control / "ran").exists(), done.stderr
