"""The dashboard's Accept and Restore buttons (``omxfs ui --as boss``, POSTed as its own page does), raced by bob
through the mount as the commands are."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.hostile.conftest import race
from tests.hostile.harness import Arena
from tests.hostile.scenarios import RestoreZone, UiAccept
from tests.hostile.test_review import FILES


@pytest.mark.hole("accept follows a symlink swapped in mid-accept (the dashboard's Accept)")
def test_the_accept_button_never_renames_into_a_symlink_swapped_in_for_a_directory(
    arena: Callable[..., Arena],
) -> None:
    race(arena(), UiAccept(FILES, real=False), tries=2)


def test_the_restore_button_while_bob_flips_d(arena: Callable[..., Arena]) -> None:
    race(arena(), RestoreZone("ui"), tries=2)
