"""Restores of paths and of the whole zone, the undo checkpoint a restore makes, snapshot restores and prunes,
each raced by bob through the mount.

A restore of ``d/secret.conf`` checks that ``d`` is a directory, builds, checkpoints and audits, then swaps by
path: bob, who sees the restore's work directory appear under ``.omxfs/checkpoints/bob/restoring/`` through the
mount, exchanges ``d`` with a symlink to the canary, which has a ``secret.conf`` of root's.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.hostile.conftest import race
from tests.hostile.harness import Arena
from tests.hostile.scenarios import Prune, RestorePaths, RestoreZone, UndoCheckpoint


@pytest.mark.hole("restore of paths follows a symlink swapped in after its check")
@pytest.mark.parametrize("absent", [False, True], ids=["replaced", "removed"])
def test_restore_of_a_path_never_swaps_through_a_symlink_swapped_in_after_its_check(
    arena: Callable[..., Arena], absent: bool
) -> None:
    race(arena(), RestorePaths(absent=absent), tries=2)


def test_restore_of_a_path_below_a_directory_replaced_by_a_file_fails_cleanly_or_restores(
    arena: Callable[..., Arena],
) -> None:
    race(arena(), RestorePaths(make="file"), tries=2)


@pytest.mark.parametrize("make", ["symlink", "fifo"])
def test_restore_of_the_whole_zone_while_bob_flips_d(arena: Callable[..., Arena], make: str) -> None:
    race(arena(), RestoreZone("cli", make=make), tries=2)


def test_the_undo_checkpoint_records_a_symlink_to_a_file_outside_as_a_symlink_and_never_writes_through_a_link(
    arena: Callable[..., Arena],
) -> None:
    (done,) = race(arena(mounted=False), UndoCheckpoint(), tries=1)
    assert done.outcome.ok and done.as_meant, done.shown()


@pytest.mark.parametrize("via", ["snapshot", "snapshot-zone"])
def test_snapshot_restore_while_bob_flips_d(arena: Callable[..., Arena], via: str) -> None:
    race(arena(), RestoreZone(via), tries=2)


def test_prune_while_bob_flips_d(arena: Callable[..., Arena]) -> None:
    race(arena(), Prune(), tries=2)
