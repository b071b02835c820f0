"""A mount point in the zone: a directory of the canary bind-mounted over the zone's ``m/`` while a supervisor
command runs (root makes it, in the command's own mount namespace; bob cannot, but a command must not depend on
that). The command must neither read through it (a checkpoint that copies the canary's files) nor change what is
below it (a cleanup that removes them)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.hostile.conftest import race
from tests.hostile.harness import Arena
from tests.hostile.scenarios import MountPoint


@pytest.mark.hole("a restore or accept crosses a mount point in the zone: reads and removes what is below it")
@pytest.mark.parametrize("command", MountPoint.COMMANDS)
def test_a_command_never_crosses_a_mount_point_in_the_zone(arena: Callable[..., Arena], command: str) -> None:
    race(arena(mounted=False), MountPoint(command), tries=1)
