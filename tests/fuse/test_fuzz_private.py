"""Model-based fuzzing of the private zone: random POSIX operation sequences through the mount, each applied
as well to a plain directory (the model), must give the same result, errno for errno, and the same tree,
byte for byte and xattr for xattr (SPEC §4: "full POSIX behaviour" for the owner).

Names come from a small set so that operations collide: a file where a directory is wanted, a rename over a
non-empty directory, a truncate of a directory, an xattr on a missing file. Each example works in a fresh
directory of alice's zone, mirrored by a fresh directory on the disk.
"""

from __future__ import annotations

import functools
import itertools
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from tests.fuse.conftest import Mount

NAMES = st.sampled_from(["a", "b", "d", "d/a", "d/b", "e/d", "é"])
DATA = st.binary(max_size=300)
XATTRS = st.sampled_from(["user.one", "user.two"])
SETTINGS = settings(
    max_examples=int(os.environ.get("OMX_FUZZ_EXAMPLES", "20")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def outcome(action: Callable[[], Any]) -> tuple[str, Any]:
    """What an operation did: its result, or the errno it failed with."""
    try:
        return "ok", action()
    except OSError as exc:
        return "errno", exc.errno


def tree(root: Path) -> dict[str, Any]:
    """Every node below ``root``: kind, content or target, size, user xattrs other than omx's own."""
    found: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath, name)
            st_ = p.lstat()
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st_.st_mode):
                found[rel] = ("link", os.readlink(p))
                continue
            xattrs = {n: os.getxattr(p, n) for n in sorted(os.listxattr(p)) if not n.startswith("user.omx.")}
            body = p.read_bytes() if stat.S_ISREG(st_.st_mode) else None
            found[rel] = (stat.S_IFMT(st_.st_mode), stat.S_IMODE(st_.st_mode), body, xattrs)
    return found


class PrivateModel(RuleBasedStateMachine):
    mount: Mount
    model_root: Path
    cases = itertools.count()

    def __init__(self) -> None:
        super().__init__()
        case = f"case{next(self.cases)}"
        self.roots = (self.mount.path(f"agents/alice/{case}"), self.model_root / case)
        for root in self.roots:
            root.mkdir()

    def both(self, action: Callable[[Path], Any]) -> None:
        got, expected = (outcome(functools.partial(action, root)) for root in self.roots)
        assert got == expected, f"mount {got} != model {expected}"

    @rule(name=NAMES, data=DATA)
    def create(self, name: str, data: bytes) -> None:
        def act(root: Path) -> None:
            fd = os.open(root / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)

        self.both(act)

    @rule(name=NAMES, data=DATA, offset=st.integers(0, 400))
    def write(self, name: str, data: bytes, offset: int) -> None:
        def act(root: Path) -> int:
            fd = os.open(root / name, os.O_WRONLY)
            try:
                return os.pwrite(fd, data, offset)
            finally:
                os.close(fd)

        self.both(act)

    @rule(name=NAMES, data=DATA)
    def append(self, name: str, data: bytes) -> None:
        def act(root: Path) -> int:
            fd = os.open(root / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                return os.write(fd, data)
            finally:
                os.close(fd)

        self.both(act)

    @rule(name=NAMES, size=st.integers(0, 500))
    def truncate(self, name: str, size: int) -> None:
        self.both(lambda root: os.truncate(root / name, size))

    @rule(src=NAMES, dst=NAMES)
    def rename(self, src: str, dst: str) -> None:
        self.both(lambda root: os.rename(root / src, root / dst))

    @rule(name=NAMES)
    def unlink(self, name: str) -> None:
        self.both(lambda root: os.unlink(root / name))

    @rule(name=st.sampled_from(["d", "e", "d/e"]))
    def mkdir(self, name: str) -> None:
        self.both(lambda root: os.mkdir(root / name, 0o755))

    @rule(name=NAMES)
    def rmdir(self, name: str) -> None:
        self.both(lambda root: os.rmdir(root / name))

    @rule(name=NAMES, mode=st.sampled_from([0o600, 0o644, 0o755]))
    def chmod(self, name: str, mode: int) -> None:
        self.both(lambda root: os.chmod(root / name, mode))

    @rule(name=NAMES, key=XATTRS, value=st.binary(max_size=20))
    def setxattr(self, name: str, key: str, value: bytes) -> None:
        self.both(lambda root: os.setxattr(root / name, key, value))

    @rule(name=NAMES, key=XATTRS)
    def removexattr(self, name: str, key: str) -> None:
        self.both(lambda root: os.removexattr(root / name, key))

    @rule(name=NAMES, key=XATTRS)
    def getxattr(self, name: str, key: str) -> None:
        self.both(lambda root: os.getxattr(root / name, key))

    @rule(name=NAMES)
    def read(self, name: str) -> None:
        self.both(lambda root: (root / name).read_bytes())

    @invariant()
    def same_tree(self) -> None:
        mounted, model = (tree(root) for root in self.roots)
        assert mounted == model
        assert tree(self.mount.store / self.roots[0].relative_to(self.mount.root)) == model  # the store is the truth


def test_private_zone_behaves_like_a_plain_directory(mount: Callable[..., Mount], tmp_path: Path) -> None:
    m = mount()
    PrivateModel.mount = m
    PrivateModel.model_root = tmp_path / "model"
    PrivateModel.model_root.mkdir()
    run_state_machine_as_test(PrivateModel, settings=SETTINGS)
