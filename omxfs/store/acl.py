"""POSIX access ACLs that say no more than a mode, so that setting one is a chmod.

``cp -a`` (coreutils through libacl) sets a copied file's permissions with ``fsetxattr(system.posix_acl_access)``
and falls back to ``fchmod`` only when that fails. The private zones keep no ACLs, but an ACL of just the owner,
group and other entries is the mode itself, which Linux filesystems store as a mode too (the kernel's
``posix_acl_equiv_mode``): applying it as a chmod answers the copy in one request instead of a refused one and a
chmod, and refuses every ACL that says more (named users or groups, a mask), as before. Having set a directory's
mode so, ``cp`` removes its default ACL, and hears that there is none.
"""

from __future__ import annotations

import struct

# <linux/posix_acl_xattr.h>: a little-endian header (version 2) and entries of (tag, permissions, id)
_VERSION = 2
_HEADER = struct.Struct("<I")
_ENTRY = struct.Struct("<HHI")
_USER_OBJ, _GROUP_OBJ, _OTHER = 0x01, 0x04, 0x20
_SHIFT = {_USER_OBJ: 6, _GROUP_OBJ: 3, _OTHER: 0}


def equivalent_mode(value: bytes) -> int | None:
    """The permission bits (``0o777`` at most) an access ACL's value stands for, or None when the ACL says more
    than a mode can (or is malformed): exactly one owner, one group and one other entry, nothing else."""
    body = len(value) - _HEADER.size
    if body != 3 * _ENTRY.size or _HEADER.unpack_from(value)[0] != _VERSION:
        return None
    mode = 0
    seen: set[int] = set()
    for offset in range(_HEADER.size, len(value), _ENTRY.size):
        tag, perm, _ = _ENTRY.unpack_from(value, offset)
        if tag not in _SHIFT or tag in seen or perm & ~0o7:
            return None
        seen.add(tag)
        mode |= perm << _SHIFT[tag]
    return mode
