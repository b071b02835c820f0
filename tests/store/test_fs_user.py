"""Acting as the caller: the supplementary groups the store's kernel checks are the caller's as they are now."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from omxfs.store.fs_user import groups_of

# A child that takes the groups it is told on each line of its stdin and says "ok" (as root: setgroups needs it).
CHILD = """
import os, sys
for line in sys.stdin:
    os.setgroups([int(g) for g in line.split()])
    print("ok", flush=True)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="setgroups needs root")
def test_groups_are_the_caller_s_now_and_none_once_it_is_gone() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        for groups in ((1234, 5678), (42,), ()):
            child.stdin.write(" ".join(map(str, groups)) + "\n")
            child.stdin.flush()
            assert child.stdout.readline() == "ok\n"
            # asked twice: the groups are the caller's as they are at each request, never remembered from an earlier one
            assert groups_of(child.pid, 99) == groups_of(child.pid, 99) == groups, groups
        child.stdin.close()
        child.wait(timeout=10)
    assert groups_of(child.pid, 99) == (99,)  # gone: only the gid the request came with, no group it may not have


def test_the_groups_of_a_process_that_never_was() -> None:
    assert groups_of(2**22 + 7, 5) == (5,)
