"""The daemon's request counter (issue 16): a real mount counts each FUSE request by operation, the root's
virtual xattr ``user.omx.requests`` reads the counts as JSON (without counting itself, never listed), and the
unmount logs them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

from omxfs.store.layout import REQUESTS
from tests.fuse.conftest import Mount


def counts(m: Mount) -> dict[str, int]:
    value: dict[str, int] = json.loads(os.getxattr(m.root, REQUESTS))
    return value


def moved(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {op: n - before.get(op, 0) for op, n in after.items() if n != before.get(op, 0)}


def test_i16_each_operation_moves_its_own_count(mount: Callable[..., Mount]) -> None:
    m = mount()
    home = m.path("agents/alice")
    first = counts(m)
    assert counts(m) == first, "reading the counts is itself a request, and must not count"

    before = counts(m)
    os.mkdir(home / "d")
    assert moved(before, counts(m)).get("mkdir") == 1

    before = counts(m)
    (home / "d" / "f.txt").write_bytes(b"hello")
    delta = moved(before, counts(m))
    assert delta.get("create") == 1 and delta.get("write") == 1 and delta.get("release") == 1, delta

    before = counts(m)
    os.unlink(home / "d" / "f.txt")
    os.rmdir(home / "d")
    delta = moved(before, counts(m))
    assert delta.get("unlink") == 1 and delta.get("rmdir") == 1, delta
    assert "mkdir" not in delta and "create" not in delta, delta


def test_i16_the_counter_is_read_only_unlisted_and_logged_at_unmount(mount: Callable[..., Mount]) -> None:
    m = mount()
    assert REQUESTS not in os.listxattr(m.root), "cp -a of the mount root would copy the counts"
    os.mkdir(m.path("agents/alice/d"))
    with pytest.raises(PermissionError):
        os.setxattr(m.root, REQUESTS, b"{}")
    assert counts(m).get("mkdir", 0) >= 1, "the counts cannot be overwritten"
    assert m.unmount() == 0
    logged = [line for line in m.log().splitlines() if "requests served:" in line]
    assert logged, m.log()
    assert json.loads(logged[-1].split("requests served: ", 1)[1]).get("mkdir", 0) >= 1
