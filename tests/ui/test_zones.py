"""The private zones watched (``omxfs.ui.zones``) at a team's scale, on real files: a rewrite in place, which moves
no directory's stamp, shows at the next poll however many zones the sweep goes through (inotify), made by a real
``omxfs run`` view; and when inotify fails the watch (its queue overflowed, its watch limit reached) the writes are
still found: by a full re-scan, and by the stamps' poll and sweep."""

from __future__ import annotations

import http.client
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omxfs.store import Workspace
from omxfs.ui import zones
from omxfs.ui.feed import Feed
from omxfs.ui.zones import PrivateZones
from tests.ui.conftest import start_ui
from tests.ui.test_server import signed_in
from tests.view.conftest import run_view

ZONES = 50
DIRS = 4
FILES = 50  # per directory: 200 files a zone, 10,000 in all, ten polls of the sweep's 1,000 to go round


def _writes(events: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(e.agent, e.summary) for e in events if e.kind == "write"]


def _fill(zone: Path, dirs: int = DIRS, files: int = FILES) -> None:
    for d in range(dirs):
        (zone / f"d{d}").mkdir(parents=True, exist_ok=True)
        for n in range(files):
            (zone / f"d{d}" / f"f{n}.txt").write_text(f"{n}\n")


def _rewrite(path: Path) -> None:
    """In place: the file's directory keeps its stamp."""
    with open(path, "r+") as f:
        f.write("#")


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """A workspace of fifty agents, each zone of 200 files in four directories."""
    ws = Workspace.init(tmp_path_factory.mktemp("team") / "ws", agents=[f"a{n:02d}" for n in range(ZONES)])
    for agent in ws.agents():
        _fill(ws.root / "agents" / agent)
    yield ws


def test_a_rewrite_in_place_by_a_view_in_the_last_zone_of_the_sweep_shows_at_the_next_poll(team: Workspace) -> None:
    feed = Feed(team.root)
    last = feed.zones.sweep_order()[-1]  # the sweep stats it last: in its tenth poll from now
    agent, rel = last.split("/", 1)
    assert feed.zones.watches() >= ZONES * (DIRS + 1)

    done = run_view(team.root, agent, f"printf X 1<> {team.root}/agents/{last}")  # in place, from the agent's view
    assert done.returncode == 0, done.stderr

    assert _writes(feed.poll()) == [(agent, f"wrote in agents/{agent}: modified {rel}")]
    assert _writes(feed.poll()) == []  # once: the sweep, coming by later, finds the stamp it knows


def test_without_inotify_the_same_rewrite_waits_for_the_sweep(team: Workspace) -> None:
    """The control: the stamps alone find it only when the sweep comes round to it (what a write from another
    machine on a shared store costs)."""
    feed = Feed(team.root, PrivateZones(team.root / "agents", watch=False))
    last = feed.zones.sweep_order()[-1]
    agent, rel = last.split("/", 1)
    _rewrite(team.root / "agents" / last)

    polls = [_writes(feed.poll()) for _ in range(ZONES * DIRS * FILES // zones.FILES_PER_POLL)]

    assert polls[:2] == [[], []]
    assert [p for p in polls if p] == [[(agent, f"wrote in agents/{agent}: modified {rel}")]]


def test_names_made_removed_and_renamed_and_a_new_zone_are_seen_at_the_next_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zones, "FILES_PER_POLL", 1)  # the rewrites below are inotify's to find, not the sweep's
    agents = tmp_path / "agents"
    _fill(agents / "alice", 2, 3)
    watched = PrivateZones(agents)
    watched.poll(quiet=True)

    (agents / "alice" / "d0" / "new.txt").write_text("new\n")
    os.rename(agents / "alice" / "d1", agents / "alice" / "moved")
    (agents / "alice" / "moved" / "deep").mkdir()
    (agents / "alice" / "moved" / "deep" / "x.txt").write_text("x\n")
    _fill(agents / "bob", 1, 1)
    found = watched.poll()

    assert found["alice"].summary() == (
        "added d0/new.txt, moved/deep/x.txt, moved/f0.txt, moved/f1.txt, moved/f2.txt; "
        "deleted d1/f0.txt, d1/f1.txt, d1/f2.txt"
    )
    assert found["bob"].summary() == "added d0/f0.txt"
    _rewrite(agents / "alice" / "moved" / "deep" / "x.txt")  # in a directory made and renamed since the start
    _rewrite(agents / "bob" / "d0" / "f0.txt")
    found = watched.poll()
    assert {a: c.summary() for a, c in found.items()} == {
        "alice": "modified moved/deep/x.txt",
        "bob": "modified d0/f0.txt",
    }
    assert watched.poll() == {}


def test_a_queue_overflowed_is_a_full_rescan_that_finds_the_write_whose_event_was_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(zones, "FILES_PER_POLL", 10)
    agents = tmp_path / "agents"
    _fill(agents / "alice", 4, 50)
    (agents / "bob").mkdir()
    watched = PrivateZones(agents)
    watched.poll(quiet=True)
    last = watched.sweep_order()[-1]

    # Fill inotify's queue: events that differ one from the next (identical ones are merged), one past its size,
    # so that the rewrite after them is dropped and only an IN_Q_OVERFLOW says that something was.
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    a, b = (os.open(agents / "bob" / name, os.O_WRONLY | os.O_CREAT) for name in ("a", "b"))
    try:
        for n in range(queued // 2 + 1):
            os.pwrite(a, b"a", n % 7)
            os.pwrite(b, b"b", n % 7)
    finally:
        os.close(a)
        os.close(b)
    _rewrite(agents / last)

    with caplog.at_level(logging.WARNING, logger="omxfs.ui.zones"):
        found = watched.poll()

    assert watched.overflows == 1
    assert found["alice"].modified == [last.split("/", 1)[1]]
    assert sorted(found["bob"].added) == ["a", "b"]
    assert [r.getMessage() for r in caplog.records] == [
        "private zones: inotify's queue overflowed (events lost): every zone looked at again"
    ]
    _rewrite(agents / "alice" / "d0" / "f0.txt")  # watched as before
    assert {a: c.summary() for a, c in watched.poll().items()} == {"alice": "modified d0/f0.txt"}


def test_past_the_watch_limit_the_directories_without_a_watch_are_polled_and_it_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(zones, "FILES_PER_POLL", 10)
    agents = tmp_path / "agents"
    _fill(agents / "alice", 4, 10)
    with caplog.at_level(logging.WARNING, logger="omxfs.ui.zones"):
        watched = PrivateZones(agents, max_watches=3)  # agents/, alice/, and the first of its directories
        watched.poll(quiet=True)
        (agents / "alice" / "d9").mkdir()  # another directory without a watch: said once still
        watched.poll()
    assert watched.watches() == 3
    assert watched.notice is not None and "watch limit is reached" in watched.notice
    assert [r.getMessage() for r in caplog.records] == [f"private zones: {watched.notice}"]

    order = watched.sweep_order()
    unwatched = next(k for k in reversed(order) if not k.startswith("alice/d0/"))
    _rewrite(agents / unwatched)
    (agents / "alice" / "d3" / "made.txt").write_text("made\n")  # a new name: its directory's stamp moved
    first = watched.poll()
    assert first["alice"].added == ["d3/made.txt"] and first["alice"].modified == []
    found = [c.summary() for _ in range(len(order) // zones.FILES_PER_POLL + 1) for c in watched.poll().values()]
    assert found == [f"modified {unwatched.split('/', 1)[1]}"]  # the sweep's pace, as without inotify


def test_a_nested_repositorys_top_is_watched_as_one_entry_even_when_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zones, "FILES_PER_POLL", 1)  # the sweep aside: inotify's to find
    agents = tmp_path / "agents"
    _fill(agents / "alice", 2, 20)
    git = agents / "alice" / "repo" / ".git"
    (git / "objects" / "00").mkdir(parents=True)
    watched = PrivateZones(agents)
    watched.poll(quiet=True)
    assert watched.watches() == 1 + 1 + 2 + 1 + 1  # agents/, alice/, d0, d1, repo, and .git's top (not objects/)

    (git / "index").write_text("staged")  # what git add does at the repository's top
    assert {a: c.summary() for a, c in watched.poll().items()} == {"alice": "modified repo/.git"}
    (git / "objects" / "00" / ("f" * 38)).write_text("blob")  # git's own business: not watched
    assert watched.poll() == {}

    for path in sorted(git.rglob("*"), reverse=True):  # rm -rf .git; git init
        path.rmdir() if path.is_dir() else path.unlink()
    git.rmdir()
    git.mkdir()
    assert {a: c.summary() for a, c in watched.poll().items()} == {"alice": "modified repo/.git"}
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    assert {a: c.summary() for a, c in watched.poll().items()} == {"alice": "modified repo/.git"}


#: ``omxfs ui`` in a user namespace of its own whose inotify watch limit is 3 (a real ENOSPC past it; the machine's
#: own limit untouched: a namespace's limit counts its own watches)
WATCH_LIMIT_3 = [
    "unshare",
    "--user",
    "--map-root-user",
    "sh",
    "-c",
    'echo 3 > /proc/sys/user/max_inotify_watches && exec "$@"',
    "sh",
]


@pytest.mark.timeout(120)  # a write never shown would hold the stream open (it pings): a failure, not a hang
def test_past_a_real_watch_limit_the_page_says_so_once_and_the_writes_still_show(ws: Workspace) -> None:
    probe = subprocess.run([*WATCH_LIMIT_3, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no user namespace with its own inotify limit here: {probe.stderr.decode().strip()}")
    zone = ws.root / "agents" / "alice"
    for d in range(6):
        (zone / f"d{d}").mkdir()
    server = start_ui(ws.root, prefix=WATCH_LIMIT_3)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("GET", "/activity", headers=signed_in(server))
        page = connection.getresponse().read().decode()
        assert "watch limit is reached (3 directories watched)" in page
        connection.request("GET", "/events?kind=write", headers=signed_in(server))
        stream = connection.getresponse()
        assert stream.readline().startswith(b"event: ready")
        for d in range(6):  # watched or not, each directory's new name shows: the stamps' poll finds the others
            (zone / f"d{d}" / f"made-{d}.txt").write_text("made\n")
            line = b""
            while f"added d{d}/made-{d}.txt".encode() not in line:
                line = stream.readline()
                assert line, "the stream ended"
        connection.close()
    finally:
        server.process.terminate()
        _, err = server.process.communicate(timeout=30)
    assert err.count("watch limit is reached") == 1, err


def test_the_ui_and_its_inotify_need_no_fuse_stack() -> None:
    """``omxfs ui`` runs where pyfuse3 is absent (a supervisor's machine needs no FUSE): omxfs.inotify, which the
    zones share with the daemon's watch, brings none of it."""
    code = "import sys; sys.modules['pyfuse3'] = None; import omxfs.inotify, omxfs.ui.app, omxfs.ui.zones"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
