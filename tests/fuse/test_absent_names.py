"""Issue 16: absent names in the private zones are cached by the kernel (negative entries), so the probes of git
and build tools (``.gitignore`` in every directory, ``__init__.py`` candidates) ask the daemon once; a name created
behind the daemon's back (the store written directly, another daemon, a rename into place) still shows through
the mount, because the watch invalidates the negative entry.

Each "behind the back" test first makes the kernel hold the negative entry (a failed stat, checked by the request
counter where it matters), so without the invalidation the name would stay absent for a minute.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from omxfs.store.layout import REQUESTS
from tests.fuse.conftest import Mount, poll

#: a negative entry left in place would hide the name for a minute (``WATCHED_TIMEOUT``); the promise is a second,
#: and this leaves a loaded machine (the watch thread is niced) room without letting a missed invalidation pass
SHOWS_S = 5.0
#: longer than the watch's batching (``watch.COALESCE_S``): its events of what the test did have been handled
PAST_A_BATCH_S = 0.5
PROBES = 20


def counts(m: Mount) -> dict[str, int]:
    value: dict[str, int] = json.loads(os.getxattr(m.root, REQUESTS))
    return value


def lookups_for(m: Mount, action: Callable[[], None]) -> int:
    before = counts(m).get("lookup", 0)
    action()
    return counts(m).get("lookup", 0) - before


def absent(path: Path) -> bool:
    try:
        path.stat()
    except FileNotFoundError:
        return True
    return False


def probe(path: Path) -> None:
    """Stat an absent name the way git probes ``.gitignore``: each must fail with ENOENT."""
    for _ in range(PROBES):
        with pytest.raises(FileNotFoundError):
            path.stat()


def test_i16_repeated_stats_of_an_absent_name_ask_the_daemon_once(mount: Callable[..., Mount]) -> None:
    m = mount()
    home = m.path("agents/alice")
    (home / "src").mkdir()
    asked = lookups_for(m, lambda: probe(home / "src" / ".gitignore"))
    assert asked == 1, f"{PROBES} stats of an absent name sent {asked} lookups (20 before negative entries)"


def test_i16_a_name_made_through_the_mount_after_its_absence_was_cached_stays_cached(
    mount: Callable[..., Mount],
) -> None:
    m = mount()
    home = m.path("agents/alice")
    (home / "src").mkdir()
    made = [home / "src" / f"f{i}.txt" for i in range(5)] + [home / "src" / "sub"]
    for f in made:
        assert absent(f)
        if f.name == "sub":
            f.mkdir()
        else:
            f.write_text("x")  # the kernel replaces its negative entry with the created one
    # The watch reports these creations too; they must not invalidate the entries the kernel now holds.
    time.sleep(PAST_A_BATCH_S)
    asked = lookups_for(m, lambda: [f.stat() for f in made] and None)
    assert asked == 0, f"stats of names created through the mount sent {asked} lookups"


@pytest.mark.parametrize("how", ["write", "mkdir", "rename into place", "hard link"])
def test_i16_a_name_created_in_the_store_after_an_absent_lookup_shows(mount: Callable[..., Mount], how: str) -> None:
    m = mount()
    home, disk = m.path("agents/alice"), m.store / "agents/alice"
    (home / "d").mkdir()
    (home / "other.txt").write_text("elsewhere")
    probe(home / "d/new")
    assert lookups_for(m, lambda: probe(home / "d/new")) == 0, "the absence was not cached: nothing to invalidate"
    if how == "write":
        (disk / "d/new").write_text("n")
    elif how == "mkdir":
        (disk / "d/new").mkdir()
    elif how == "rename into place":
        (disk / "d/.new.tmp").write_text("n")
        os.rename(disk / "d/.new.tmp", disk / "d/new")
    else:
        os.link(disk / "other.txt", disk / "d/new")
    poll(lambda: (home / "d/new").exists(), SHOWS_S, f"the name made in the store ({how}) through the mount")


def test_i16_a_name_created_by_another_daemon_shows_where_its_absence_was_cached(mount: Callable[..., Mount]) -> None:
    m = mount()
    m2 = m.second_mount(default="bob")
    (m.path("agents/alice/d")).mkdir()
    seen = m2.path("agents/alice/d/late.txt")
    poll(lambda: seen.parent.is_dir(), SHOWS_S, "the directory on the second mount")
    probe(seen)
    m.path("agents/alice/d/late.txt").write_text("from the first daemon")
    poll(lambda: seen.exists(), SHOWS_S, "the first daemon's new file on the second mount")
    assert seen.read_text() == "from the first daemon"


def test_i16_an_absent_name_in_a_directory_replaced_behind_the_back_shows(mount: Callable[..., Mount]) -> None:
    m = mount()
    home, disk = m.path("agents/alice"), m.store / "agents/alice"
    (home / "d").mkdir()
    probe(home / "d/x")
    os.rename(disk / "d", disk / "gone")
    (disk / "d").mkdir()
    (disk / "d/x").write_text("in the new directory")
    poll(lambda: (home / "d/x").exists(), SHOWS_S, "the new directory's file")
    assert (home / "d/x").read_text() == "in the new directory"
