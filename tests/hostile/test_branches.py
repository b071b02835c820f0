"""Named branches raced by bob (``branch_scenarios.py``): the accept of a nested branch into its parent, discards,
a rebase, accepts of a branch holding a hard link to a canary file, and the mount's ``@NAME`` directories read
while the layers below them flip."""

from __future__ import annotations

import errno
import hashlib
from collections.abc import Callable

import pytest

from tests.hostile.branch_scenarios import (
    Discard,
    HardLinkAccept,
    NestedAccept,
    Rebase,
    bob_reads_branch_dirs,
    bob_reads_his_running_branch,
    bob_tries_the_layers,
    layer_digest,
    make_branch,
)
from tests.hostile.conftest import race
from tests.hostile.harness import Arena
from tests.hostile.scenarios import write


def test_accept_of_a_nested_branch_into_its_parent_while_bob_flips_d(arena: Callable[..., Arena]) -> None:
    race(arena(), NestedAccept(), tries=3)


@pytest.mark.parametrize("nested", [False, True], ids=["branch", "nested"])
def test_discard_of_a_branch_while_its_upper_layer_and_the_zone_flip(arena: Callable[..., Arena], nested: bool) -> None:
    race(arena(), Discard(nested=nested), tries=3)


def test_rebase_while_bob_flips_d(arena: Callable[..., Arena]) -> None:
    race(arena(), Rebase(), tries=3)


@pytest.mark.parametrize("nested", [False, True], ids=["into-zone", "into-parent"])
def test_accept_of_a_hard_link_to_a_canary_file_moves_the_name_and_leaves_the_file(
    arena: Callable[..., Arena], nested: bool
) -> None:
    race(arena(), HardLinkAccept(nested=nested), tries=2)


def test_branch_dirs_on_the_mount_never_show_what_a_symlink_swapped_into_a_layer_leads_to(
    arena: Callable[..., Arena],
) -> None:
    ring = arena()
    found, flippers, zone_swaps = bob_reads_branch_dirs(ring, seconds=3)
    print(
        f"branch dirs: {found['reads']} reads, errors {found['errors']}, zone swaps {zone_swaps}, "
        f"layer swaps {[f.swaps for f in flippers]}"
    )
    seen = found["seen"]
    secrets = {
        f"agents/bob/@{b}/{rel}": f"{b}'s {rel}\n" for b in ("b1", "c1") for rel in ("d/secret.conf", "f/secret.conf")
    }
    for path, content in secrets.items():
        # anything else (the canary's content, or the first bytes of it, as many as the file's size the kernel
        # cached) was read by the daemon through a symlink; none (every read of it fell on a flip) leaks nothing
        assert seen.get(path) in (None, [content]), f"{path} read as {seen.get(path)}"
    assert any(seen.get(path) for path in secrets), "no read ever got through: nothing was tried"
    outside = {"zz-victim.conf", "linked.conf", "sub"}
    listed = {path: names for path, names in seen.items() if path.endswith("/")}
    assert not any(outside & set(",".join(names).split(",")) for names in listed.values()), listed
    assert zone_swaps > 0 and all(f.swaps > 0 for f in flippers), "the layers never flipped"
    logs = "".join(log.read_text("utf-8", "replace") for log in (ring.store / ".omxfs/logs").glob("mount-*.log"))
    assert "/proc/self/fd/" not in logs, [line for line in logs.splitlines() if "/proc/self/fd/" in line][:3]


def test_branch_dir_of_a_running_branch_whose_view_flips_its_upper_layer(arena: Callable[..., Arena]) -> None:
    ring = arena()
    secrets = {f"agents/bob/@b1/{rel}": f"b1's {rel}\n" for rel in ("u/secret.conf", "f/secret.conf")}
    for _attempt in range(3):  # a race where every read fell on a swap tried nothing: raced again, every leak checked
        found, swaps = bob_reads_his_running_branch(ring, seconds=2.5)
        print(f"running branch: {found['reads']} reads, errors {found['errors']}, view swaps {swaps}")
        seen = found["seen"]
        for path, content in secrets.items():  # none: every read of it fell on a swap, which leaks nothing
            assert seen.get(path) in (None, [content]), f"{path} read as {seen.get(path)}"
        assert not any("zz-victim.conf" in names for names in seen.get("agents/bob/@b1/u/", [])), seen
        assert swaps > 0, "bob's view never flipped its upper layer"
        if any(seen.get(path) for path in secrets):
            break
    assert any(seen.get(path) for path in secrets), "no read ever got through: nothing was tried"


def test_bob_changes_no_layer_of_a_branch_through_the_mount(arena: Callable[..., Arena]) -> None:
    """What the races above assume: through the mount, bob's only way to race an accept, a rebase or the daemon
    serving a branch is his zone; a branch's layers (``.omxfs/branches/``, ``@NAME``) refuse every change."""
    ring = arena()
    write(ring.zone / "d" / "keep.txt", "bob's\n")
    parent = make_branch(ring, "p1")
    write(parent / "d" / "p.txt", "p1's\n")
    write(make_branch(ring, "c1", "p1") / "d" / "c.txt", "c1's\n")
    tries = []
    for top in (".omxfs/branches/bob/p1/upper", ".omxfs/branches/bob/c1/upper", "agents/bob/@p1", "agents/bob/@c1"):
        tries += [
            ("create", f"{top}/new.txt", ""),
            ("write", f"{top}/d/p.txt" if "p1" in top else f"{top}/d/c.txt", ""),
            ("symlink", f"{top}/lnk", str(ring.canary.root)),
            ("mkdir", f"{top}/newdir", ""),
            ("rename", f"{top}/d", f"{top}/e"),
            ("rename", "agents/bob/d", f"{top}/d2"),
            ("unlink", f"{top}/d/p.txt" if "p1" in top else f"{top}/d/c.txt", ""),
        ]
    found = bob_tries_the_layers(ring, tries)
    allowed = {p: code for p, code in found.items() if code not in (errno.EACCES, errno.EPERM, errno.EROFS)}
    assert not allowed, f"bob changed a branch's layer through the mount (0), or it was not there: {allowed}"
    assert layer_digest(parent)["d/p.txt"][4] == hashlib.sha256(b"p1's\n").hexdigest()
