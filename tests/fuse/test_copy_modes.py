"""Issue 16: ``cp -a`` into a private zone sets each copy's mode with an access ACL (libacl's ``fsetxattr`` of
``system.posix_acl_access``) and falls back to ``fchmod`` only when that fails. An ACL that is only a mode is taken
as that chmod, so a copy costs one request for its mode, not a refused one, its log line and a chmod; any ACL that
says more is refused as before, and only the zone's owner may change a mode this way.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from omxfs.store.layout import ACCESS_ACL, DEFAULT_ACL, REQUESTS
from tests.fuse.conftest import Mount

USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
UNDEFINED = 0xFFFFFFFF
FILES = 10


def acl(*entries: tuple[int, int, int]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


def minimal(mode: int) -> bytes:
    return acl(
        (USER_OBJ, mode >> 6 & 7, UNDEFINED), (GROUP_OBJ, mode >> 3 & 7, UNDEFINED), (OTHER, mode & 7, UNDEFINED)
    )


def counts(m: Mount) -> dict[str, int]:
    value: dict[str, int] = json.loads(os.getxattr(m.root, REQUESTS))
    return value


def perm(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.skipif(shutil.which("cp") is None, reason="coreutils cp is needed")
def test_i16_cp_a_keeps_modes_with_one_request_each_and_nothing_refused(
    mount: Callable[..., Mount], tmp_path: Path
) -> None:
    m = mount()
    src = tmp_path / "src"
    src.mkdir(mode=0o750)
    for i in range(FILES):
        (src / f"f{i}").write_text("x")
        os.chmod(src / f"f{i}", 0o640 if i % 2 else 0o755)
    os.chmod(src, 0o750)
    before = counts(m)
    subprocess.run(["cp", "-a", str(src), str(m.path("agents/alice/copy"))], check=True, timeout=60)
    after = counts(m)
    copy = m.path("agents/alice/copy")
    assert perm(copy) == 0o750
    assert [perm(copy / f"f{i}") for i in range(FILES)] == [0o640 if i % 2 else 0o755 for i in range(FILES)]
    assert "op=setxattr" not in m.log(), "a copy's mode was refused as an ACL first (then set by a chmod)"
    changes = sum(after.get(op, 0) - before.get(op, 0) for op in ("setattr", "setxattr"))
    # Per file a time stamp and a mode (3 before: the refused ACL, then a chmod); the directory adds its owner.
    assert changes <= 2 * (FILES + 1) + 1, (before, after)


def test_i16_an_acl_that_is_a_mode_is_a_chmod_for_the_owner_only(mount: Callable[..., Mount]) -> None:
    m = mount()
    f = m.path("agents/alice/f")
    f.write_text("x")
    os.chmod(f, 0o644)
    os.setxattr(f, ACCESS_ACL, minimal(0o600))
    assert perm(f) == 0o600, "the mode through the mount right after"
    assert stat.S_IMODE(os.stat(m.store / "agents/alice/f").st_mode) == 0o600, "the mode on the store"
    named = acl(
        (USER_OBJ, 6, UNDEFINED), (USER, 6, 1000), (GROUP_OBJ, 4, UNDEFINED), (MASK, 6, UNDEFINED), (OTHER, 0, 0)
    )
    with pytest.raises(OSError) as refused:
        os.setxattr(f, ACCESS_ACL, named)
    assert refused.value.errno == errno.EOPNOTSUPP, "an ACL with a named user is not kept"
    assert perm(f) == 0o600
    code = f"import os; os.setxattr({str(f)!r}, {ACCESS_ACL!r}, {minimal(0o666)!r})"
    with pytest.raises(OSError) as none:
        os.removexattr(f.parent, DEFAULT_ACL)
    assert none.value.errno == errno.ENODATA, "no default ACL is kept: there is none to remove"
    done = m.py(code, agent="bob", check=False)
    assert done.returncode != 0 and b"PermissionError" in done.stderr, done.stderr
    assert perm(f) == 0o600, "bob changed alice's mode"
