"""Which times a checkpoint, a review run and its accept keep, on real views and real tools.

A checkpoint reads the zone without moving an atime; an accept gives each directory the mtime the review run left
it, also where the run added a child to it first; atimes a review run set survive the run's end, its diff and the
accept. (The cases of the overlay conformance tests that disagreed with a native run: scaffold-metadata,
copy-up-metadata, chmod-preserves-host, fs-apply-metadata.)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs
from tests.view.conftest import run_view

Ok = Callable[..., str]

OLD = 946_684_800  # 2000-01-01 00:00:00 UTC
OLDER = 915_148_800  # 1999-01-01


def _times(path: Path) -> tuple[int, int]:
    st = os.lstat(path)
    return int(st.st_atime), int(st.st_mtime)


def test_a_checkpoint_and_a_view_start_leave_every_atime_where_it_was(store: Workspace, ok: Ok) -> None:
    zone = store.root / "agents/alice"
    (zone / "d").mkdir()
    (zone / "d/notes.md").write_text("read me\n")
    (zone / "top.txt").write_text("top\n")
    for path in (zone / "d/notes.md", zone / "top.txt", zone / "d"):
        os.utime(path, (OLDER, OLD))  # atime before mtime: relatime would move it on the first read
    before = {p: _times(zone / p) for p in ("d/notes.md", "top.txt", "d")}
    omxfs("checkpoint", str(store.root), "--as", "alice")
    assert {p: _times(zone / p) for p in before} == before
    (zone / "top.txt").write_text("changed\n")  # a change: the view's start checkpoints again, reading it
    os.utime(zone / "top.txt", (OLDER, OLD))
    ok(run_view(store.root, "alice", "true"))
    assert {p: _times(zone / p) for p in before} == before


def test_an_accept_keeps_the_mtime_a_review_run_set_on_a_directory_it_then_added_to(store: Workspace, ok: Ok) -> None:
    zone = store.root / "agents/alice"
    (zone / "d").mkdir()
    (zone / "d/kept.txt").write_text("kept\n")
    work = (
        "set -e; mkdir d/new e; echo x > d/new/f; echo y > e/f; rm d/kept.txt; "
        f"touch -d @{OLDER} d/new; touch -d @{OLD} d; touch -d @{OLD} e; touch -d @{OLDER} ."
    )
    ok(run_view(store.root, "alice", work, "--review"))
    omxfs("accept", str(store.root), "alice", "--as", "alice")
    assert _times(zone / "d")[1] == OLD  # merged with the zone's d: its children moved in, then its times set
    assert _times(zone / "d/new")[1] == OLDER  # a new directory, moved in whole
    assert _times(zone / "e")[1] == OLD
    assert _times(zone)[1] == OLDER  # the zone's root itself
    assert sorted(os.listdir(zone / "d")) == ["new"]


def test_atimes_a_review_run_set_survive_its_end_its_diff_and_the_accept(store: Workspace, ok: Ok) -> None:
    zone = store.root / "agents/alice"
    (zone / "old.txt").write_text("from before\n")
    work = f"set -e; echo new > new.txt; touch -a -d @{OLD} new.txt old.txt; chmod 600 old.txt"
    ok(run_view(store.root, "alice", work, "--review"))
    omxfs("diff", str(store.root), "alice", "--review")  # reads both files' content
    omxfs("accept", str(store.root), "alice", "--as", "alice")
    assert _times(zone / "new.txt")[0] == OLD
    assert _times(zone / "old.txt")[0] == OLD
    assert os.lstat(zone / "old.txt").st_mode & 0o777 == 0o600
