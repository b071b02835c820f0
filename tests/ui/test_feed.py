"""The event feed (``omxfs.ui.feed``) on a real store: every kind of event found at start and, once, when it lands;
what an agent lays out to mislead (a symlinked trace) not followed; and the untrusted text helpers."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

import pytest

from omxfs.checkpoints import ZoneHistory
from omxfs.checkpoints.review import Review, accept, discard
from omxfs.errors import Conflict
from omxfs.store import Workspace
from omxfs.ui import shown, zones
from omxfs.ui.arrivals import Arrivals
from omxfs.ui.feed import HOLD, Feed, Filter, chosen
from omxfs.ui.stamps import SETTLE
from omxfs.ui.zones import PrivateZones
from tests.fuse.conftest import poll


def _kinds(events: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(e.kind, e.agent) for e in events]


def _trace(ws: Workspace, agent: str, stamp: str, *entries: dict[str, object]) -> Path:
    run = ws.root / "agents" / agent / "runs" / stamp
    run.mkdir(parents=True, exist_ok=True)
    with open(run / "trace.jsonl", "a", encoding="utf-8") as f:
        for entry in entries:
            f.write(json.dumps(entry) + "\n")
    return run / "trace.jsonl"


def test_every_kind_of_event_is_found_at_start_oldest_first(ws: Workspace) -> None:
    ws.collab.write("alice", "plan.md", b"one\n", expected_version=0, message="first draft")
    ws.collab.write("bob", "plan.md", b"two\n", expected_version=1)
    with contextlib.suppress(Conflict):
        ws.collab.write("alice", "plan.md", b"mine\n", expected_version=1)
    ws.handoff.deliver("alice", "bob", "report.txt", b"hi", message="for you")
    ws.realtime.create("alice", "board", {"title": "lww_register"})
    ws.realtime.update("bob", "board", lambda doc, replica: doc.field("title").set("hello", replica))  # type: ignore[attr-defined]
    (ws.root / "agents" / "alice" / "a.txt").write_text("a\n")
    ZoneHistory(ws, "alice").make("boss", "before review")  # a supervisor's checkpoint: audited too
    _trace(ws, "alice", "20261127-000000", {"kind": "run", "event": "start", "time": "2026-11-27T00:00:00+00:00"})

    feed = Feed(ws.root)

    kinds = {e.kind for e in feed.events}
    assert kinds == {"commit", "conflict", "delivery", "realtime", "checkpoint", "audit", "run"}
    commits = [e for e in feed.events if e.kind == "commit"]
    assert [(e.agent, e.summary) for e in commits] == [
        ("alice", "committed plan.md version 1: first draft"),
        ("bob", "committed plan.md version 2: write by bob"),
    ]
    conflict = next(e for e in feed.events if e.kind == "conflict")
    assert conflict.agent == "alice" and "wrote on version 1, it is at 2" in conflict.summary
    assert next(e for e in feed.events if e.kind == "delivery").zone == "handoff/alice_to_bob"
    assert {e.agent for e in feed.events if e.kind == "realtime"} == {"bob"}  # a change, not the creation
    assert next(e for e in feed.events if e.kind == "audit").agent == "boss"
    epochs = [e.epoch for e in feed.events if e.kind != "run"]  # the trace's stamp is made up
    assert epochs == sorted(epochs)
    assert feed.poll() == []  # nothing new: nothing again


def test_events_are_numbered_in_the_order_they_arrive_and_the_newest_kept(ws: Workspace) -> None:
    """A late event lands in the middle of the time order but at the end of the arrival order, which a page's
    cursor counts in; past the kept ones a cursor is told so (None: the page loads itself again)."""
    ws.collab.write("alice", "a.md", b"1", expected_version=0)
    feed = Feed(ws.root, arrivals=Arrivals(limit=2))
    assert feed.arrivals.last == 1
    _trace(ws, "bob", "run-1", {"kind": "run", "event": "start", "time": "2000-01-01T00:00:00+00:00"})
    ws.collab.write("alice", "b.md", b"2", expected_version=0)
    assert _kinds(feed.poll()) == [("run", "bob"), ("commit", "alice")]
    assert feed.events[0].kind == "run"  # the oldest by its time, the last but one to arrive
    assert feed.arrivals.last == 3
    assert [(a.seq, a.event.kind) for a in feed.arrivals.after(1) or []] == [(2, "run"), (3, "commit")]
    assert [a.seq for a in feed.arrivals.after(2) or []] == [3]
    assert feed.arrivals.after(3) == [] and feed.arrivals.after(7) == []  # nothing newer (7: no such cursor)
    assert feed.arrivals.after(0) is None  # the first is no longer kept


def test_a_poll_returns_each_new_event_once(ws: Workspace) -> None:
    feed = Feed(ws.root)
    assert feed.events == []
    # two commits within one timestamp tick of their directory: both seen (a young directory is listed again)
    ws.collab.write("alice", "notes/a.md", b"1", expected_version=0)
    first = feed.poll()
    ws.collab.write("bob", "notes/a.md", b"2", expected_version=1)
    second = feed.poll()
    assert _kinds(first) == [("commit", "alice")]
    assert _kinds(second) == [("commit", "bob")]
    trace = _trace(ws, "bob", "run-1", {"kind": "run", "event": "start", "data": {"task": "sum it"}})
    with open(trace, "a", encoding="utf-8") as f:
        f.write('{"kind": "step", "step_id": 1, "tool": "read_text", "status": "succ')  # being written
    started = feed.poll()
    assert [e.summary for e in started] == ["run run-1: start sum it"]
    with open(trace, "a", encoding="utf-8") as f:
        f.write('ess"}\n')
    assert [e.summary for e in feed.poll()] == ["run run-1: step 1 read_text: success"]
    assert feed.poll() == []
    assert len(feed.events) == 4


def test_a_review_held_accepted_and_discarded_are_review_events_each_once(ws: Workspace) -> None:
    feed = Feed(ws.root)
    review = Review(ws, "alice")
    review.prepare()  # what the first review run of alice's zone makes: the review, and its base checkpoint
    (review.upper / "held.md").write_text("held\n")
    held = feed.poll()
    assert [(e.kind, e.agent, e.zone, e.link) for e in held] == [
        ("checkpoint", "alice", "agents/alice", "/checkpoints/alice"),
        ("review", "alice", "agents/alice", "/checkpoints/alice"),
    ]
    review.prepare()  # a next review run continues the same change: no new event
    (review.upper / "more.md").write_text("more\n")
    assert feed.poll() == []
    accept(review, "boss")
    decided = feed.poll()
    assert [(e.kind, e.agent, e.zone) for e in decided if e.kind == "review"] == [("review", "boss", "agents/alice")]
    assert decided[-1].summary.startswith("accept review")
    review.prepare()  # a new review after the accept: an event again (and a base: the zone changed)
    assert _kinds(feed.poll()) == [("checkpoint", "alice"), ("review", "alice")]
    discard(review, "boss")
    assert [e.summary.split(" agents/")[0] for e in feed.poll()] == ["discard review"]
    assert [e.kind for e in feed.events].count("review") == 4


def test_a_symlinked_trace_is_not_followed(ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"kind": "run", "event": "start", "data": {"task": "SECRET"}}) + "\n")
    run = ws.root / "agents" / "alice" / "runs" / "evil"
    run.mkdir(parents=True)
    os.symlink(secret, run / "trace.jsonl")
    os.symlink(tmp_path, ws.root / "agents" / "bob" / "runs")  # a runs/ that leads out of the zone
    (tmp_path / "x").mkdir()
    os.symlink(secret, tmp_path / "x" / "trace.jsonl")

    feed = Feed(ws.root)

    assert not any("SECRET" in e.summary for e in feed.events)


def test_filter_keeps_by_agent_zone_kind_and_time(ws: Workspace) -> None:
    ws.collab.write("alice", "a.md", b"1", expected_version=0)
    ws.handoff.deliver("bob", "alice", "b.txt", b"2")
    feed = Feed(ws.root)
    events = feed.events
    assert _kinds(chosen(events, Filter(agent="bob"), 10)) == [("delivery", "bob")]
    assert _kinds(chosen(events, Filter(zone="handoff"), 10)) == [("delivery", "bob")]  # a prefix: every box
    assert _kinds(chosen(events, Filter(zone="handoff/bob_to_alice"), 10)) == [("delivery", "bob")]
    assert _kinds(chosen(events, Filter(kind="commit"), 10)) == [("commit", "alice")]
    late = max(e.epoch for e in events) + 1
    assert chosen(events, Filter(since=late), 10) == []
    assert len(chosen(events, Filter(until=late), 10)) == 2
    assert len(chosen(events, Filter(), 1)) == 1


def test_untrusted_text_is_cut_and_its_control_characters_shown() -> None:
    assert shown.visible("a\x1b[31mb\x00c\u202ed\n\te") == "a\\x1b[31mb\\x00c\\u202ed\n\te"
    assert shown.line("two\nlines\x07") == "two\\nlines\\x07"
    assert shown.line("x" * 1000, 10).startswith("x" * 10 + "…")
    big = b"y" * shown.READ_LIMIT
    text = shown.content(big, 10 * 1024 * 1024)
    assert len(text) < shown.CONTENT_LIMIT + 100
    assert text.endswith("[cut: 10,485,760 bytes in all]")
    assert shown.content(b"short") == "short"


def _writes(events: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(e.agent, e.summary) for e in events if e.kind == "write"]


def test_writes_in_a_private_zone_are_events_of_its_owner(ws: Workspace) -> None:
    zone = ws.root / "agents" / "alice"
    (zone / "old.txt").write_text("there before\n")
    (zone / "src").mkdir()
    feed = Feed(ws.root)
    assert _writes(feed.events) == []  # what the zone held at start is learned, not an event

    (zone / "src" / "new.py").write_text("print(1)\n")
    (zone / "src" / "deep").mkdir()
    (zone / "src" / "deep" / "x.txt").write_text("x\n")
    made = feed.poll()
    assert _writes(made) == [("alice", "wrote in agents/alice: added src/deep/x.txt, src/new.py")]
    assert [(e.zone, e.link) for e in made] == [("agents/alice", "/checkpoints/alice")]

    with open(zone / "old.txt", "r+") as f:  # rewritten in place: its directory's stamp does not move
        f.write("THERE")
    assert _writes(feed.poll()) == [("alice", "wrote in agents/alice: modified old.txt")]

    (zone / "src" / "new.py").unlink()
    os.rename(zone / "src" / "deep", zone / "moved")
    assert _writes(feed.poll()) == [
        ("alice", "wrote in agents/alice: added moved/x.txt; deleted src/deep/x.txt, src/new.py")
    ]
    (ws.root / "agents" / "bob" / "b.txt").write_text("b\n")
    assert _writes(feed.poll()) == [("bob", "wrote in agents/bob: added b.txt")]
    assert feed.poll() == []


def test_a_big_zone_costs_a_poll_at_most_its_directories_and_the_sweeps_budget(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zones, "FILES_PER_POLL", 100)
    zone = ws.root / "agents" / "alice"
    for d in range(3):
        (zone / f"d{d}").mkdir()
        for n in range(100):
            (zone / f"d{d}" / f"f{n}.txt").write_text(str(n))
    git = zone / "repo" / ".git"  # a nested repository: its objects are git's, not walked
    for d in range(20):
        (git / "objects" / f"{d:02x}").mkdir(parents=True)
        for n in range(20):
            (git / "objects" / f"{d:02x}" / f"{n:038x}").write_text("blob")
    (ws.root / "agents" / "alice" / "runs" / "r1").mkdir(parents=True)  # omx's records: the run events' business
    (ws.root / "agents" / "alice" / "runs" / "r1" / "trace.jsonl").write_text("")
    feed = Feed(ws.root, PrivateZones(ws.root / "agents", watch=False))  # the stamps alone: the sweep's budget
    directories = 1 + 3 + 1 + 1 + 2  # agents/alice, d0-d2, repo (.git: one entry), and bob's and charlie's zones

    with open(zone / "d2" / "f99.txt", "r+") as f:  # in place: only the sweep finds it
        f.write("9")
    found: list[tuple[str, str]] = []
    for _ in range(4):  # 301 known entries (300 files and .git), 100 a poll: once round in 4 polls
        found += _writes(feed.poll())
        assert feed.zones.stats <= 1 + directories + 100
    assert found == [("alice", "wrote in agents/alice: modified d2/f99.txt")]

    (git / "index").write_text("staged")  # what git add does at the repository's top
    (git / "objects" / "00" / ("f" * 38)).write_text("blob")
    found = []
    for _ in range(4):
        found += _writes(feed.poll())
    assert found == [("alice", "wrote in agents/alice: modified repo/.git")]


def test_a_delivery_whose_message_is_set_after_the_copy_is_one_event_with_its_message(ws: Workspace) -> None:
    """``cp`` then ``setfattr -n user.omx.message``: the metadata is written twice, for one delivery."""
    feed = Feed(ws.root)
    ws.handoff.deliver("alice", "bob", "data.csv", b"city\n")
    assert [e for e in feed.poll() if e.kind == "delivery"] == []  # held: its message may follow
    ws.handoff.set_message("alice", "bob", "data.csv", "please analyse")
    found: list[str] = []
    poll(lambda: bool(found.extend(e.summary for e in feed.poll() if e.kind == "delivery")) or len(found) > 0)
    quiet_until = time.monotonic() + HOLD + SETTLE  # past the hold and the directory's settling: nothing more
    while time.monotonic() < quiet_until:
        found += [e.summary for e in feed.poll() if e.kind == "delivery"]
    assert found == ["delivered data.csv to bob: please analyse"]
    ws.handoff.deliver("alice", "bob", "data.csv", b"city\nOslo\n", message="again")  # a redelivery is one more
    poll(lambda: bool(found.extend(e.summary for e in feed.poll() if e.kind == "delivery")) or len(found) > 1)
    assert found[1:] == ["delivered data.csv to bob: again"]
