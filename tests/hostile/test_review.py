"""Accept, discard and the repair of an interrupted accept, each raced by bob through the mount.

bob's review run writes files into ``d/`` (which his zone has) and his ``d/zz-victim.conf``; the canary beside the
workspace has a ``zz-victim.conf`` of root's. As soon as the first file lands in his zone (he lists ``d/`` through
the mount), bob exchanges ``d`` with a symlink to the canary, a file or a FIFO. An accept that renames by path then
moves his files, as root, into the canary.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.hostile.conftest import race
from tests.hostile.harness import Arena
from tests.hostile.scenarios import Accept, Discard, FsckRepair

#: files of the review run: enough that the accept is still renaming when bob's exchange lands
FILES = 1000


@pytest.mark.hole("accept follows a symlink swapped in mid-accept")
def test_accept_never_renames_into_a_symlink_swapped_in_for_a_directory(arena: Callable[..., Arena]) -> None:
    race(arena(), Accept(FILES), tries=2)


@pytest.mark.parametrize("make", ["file", "fifo"])
def test_accept_of_a_directory_replaced_by_a_file_or_fifo_mid_accept_fails_cleanly_or_finishes(
    arena: Callable[..., Arena], make: str
) -> None:
    race(arena(), Accept(FILES // 3, make=make, real=False), tries=2)


def test_discard_drops_the_review_and_nothing_else_while_bob_flips_d(arena: Callable[..., Arena]) -> None:
    race(arena(), Discard(real=False), tries=2)


@pytest.mark.hole("fsck --repair finishes an interrupted accept by path, as accept did")
def test_fsck_repair_of_an_interrupted_accept_never_renames_into_a_swapped_in_symlink(
    arena: Callable[..., Arena],
) -> None:
    race(arena(), FsckRepair(FILES, real=False), tries=2)
