"""Issue 16: an access ACL that is only a mode is read as that mode (``cp -a`` sets modes so); any other is not."""

from __future__ import annotations

import struct

from omxfs.store.acl import equivalent_mode

USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
UNDEFINED = 0xFFFFFFFF


def acl(*entries: tuple[int, int, int], version: int = 2) -> bytes:
    return struct.pack("<I", version) + b"".join(struct.pack("<HHI", *e) for e in entries)


def test_i16_a_minimal_acl_is_its_mode() -> None:
    assert equivalent_mode(acl((USER_OBJ, 6, UNDEFINED), (GROUP_OBJ, 4, UNDEFINED), (OTHER, 0, UNDEFINED))) == 0o640
    assert equivalent_mode(acl((USER_OBJ, 7, UNDEFINED), (GROUP_OBJ, 5, UNDEFINED), (OTHER, 5, UNDEFINED))) == 0o755
    # the order of the entries does not matter
    assert equivalent_mode(acl((OTHER, 1, UNDEFINED), (USER_OBJ, 2, UNDEFINED), (GROUP_OBJ, 3, UNDEFINED))) == 0o231


def test_i16_an_acl_that_says_more_than_a_mode_or_is_malformed_is_none() -> None:
    base = [(USER_OBJ, 6, UNDEFINED), (GROUP_OBJ, 4, UNDEFINED), (OTHER, 0, UNDEFINED)]
    named = acl(base[0], (USER, 6, 1000), base[1], (MASK, 6, UNDEFINED), base[2])
    assert equivalent_mode(named) is None, "a named user needs a real ACL"
    assert equivalent_mode(acl(base[0], base[1], (MASK, 4, UNDEFINED))) is None
    assert equivalent_mode(acl(base[0], base[0], base[2])) is None, "one entry twice"
    assert equivalent_mode(acl(*base, version=1)) is None
    assert equivalent_mode(acl(*base)[:-1]) is None, "truncated"
    assert equivalent_mode(acl((USER_OBJ, 8, UNDEFINED), base[1], base[2])) is None, "a permission past rwx"
    assert equivalent_mode(b"") is None
