"""Named branches under attack: a nested branch's accept into its parent, a discard, a rebase, an accept of a
branch holding a hard link to a canary file, and the mount's ``agents/bob/@NAME/`` read while the layers change.

What bob can reach while each runs decides how he races it. Through the mount he writes his zone (``agents/bob/``)
and nothing under ``.omxfs/`` (read-only there), where every branch's layers lie; an ``@NAME`` directory is
read-only too. Inside a branch's view he writes that branch's upper layer (the overlay renames, exchanges and
symlinks there for him), but an accept and a rebase are refused while any view of the zone runs, and a view waits
for an accept to end: during those he races through the mount alone, flipping ``d`` and a symlink to the canary
(the zone is read for the change and for the undo checkpoint). A discard refuses only the branch's own view, which
may start right after that check: its upper layer is flipped as well (``Flipper``, on the store, as the view's
overlay would). The mount's daemon serves ``@NAME`` while the branch's view (or its parent's) runs: the layers
flip under it, and bob reads through the mount.

The branches are made by the test the way a run leaves them (``Review.prepare`` and the upper layer written on
the store: files, a whiteout, a symlink, a FIFO, a hard link), as ``Arena.pending_review(real=False)`` does.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.hostile.attacker import exchange
from tests.hostile.harness import DEADLINE, OMXFS, REPO, SWAPPED, Arena, Outcome, clean_env, swap_attack, zone_digest
from tests.hostile.scenarios import VICTIM, Arm, Scenario, Start, write

ZONE = "bob"


def branch_dir(arena: Arena, name: str) -> Path:
    return arena.store / ".omxfs" / "branches" / ZONE / name


def make_branch(arena: Arena, name: str, parent: str | None = None) -> Path:
    """bob's branch ``name`` (made from ``parent``), new and empty, as a first run makes it: its upper layer."""
    from omxfs.checkpoints.review import Review  # this checkout's, as the commands are
    from omxfs.store import Workspace

    drop_branch(arena, name)
    review = Review(Workspace(arena.store), ZONE, name)
    review.prepare(parent)
    return review.upper


def drop_branch(arena: Arena, name: str) -> None:
    """The branch's directory gone, by the test (``shutil.rmtree`` follows no symlink)."""
    shutil.rmtree(branch_dir(arena, name), ignore_errors=True)


def whiteout(path: Path) -> None:
    """A deleted name in an upper layer, as the overlay writes it: a character device 0:0."""
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(0, 0))


def hard_link_canary(arena: Arena, path: Path) -> None:
    """A hard link to the canary's ``linked.conf`` at ``path`` in an upper layer. bob cannot make it: through the
    mount a link to a file outside is EXDEV, and natively ``protected_hardlinks`` (1 here) refuses a link to a
    root-owned file he cannot write (EPERM for uid 65534). Root makes it, for the agent whose uid owns such a
    file; an accept must then move the name, never change the file it names."""
    os.link(arena.canary.root / arena.canary.LINKED, path)


def layer_digest(root: Path) -> dict[str, tuple[Any, ...]]:
    """``zone_digest`` of an upper layer, with each entry's device numbers and ``user.overlay.*`` marks."""
    found: dict[str, tuple[Any, ...]] = {}
    for path, entry in zone_digest(root).items():
        st = os.lstat(root / path)
        marks = () if stat.S_ISLNK(st.st_mode) else tuple(sorted(os.listxattr(root / path)))
        found[path] = (*entry, st.st_rdev, marks)
    return found


class Flipper:
    """bob's branch view changing its own upper layer while a command runs: each pair of paths on the store
    exchanged (``renameat2(RENAME_EXCHANGE)``, as the view's overlay does for a rename there) over and over, on a
    thread, until the block ends; any pair left exchanged is exchanged back then. ``swaps``: how many landed."""

    def __init__(self, *pairs: tuple[Path, Path]) -> None:
        self.pairs = pairs
        self.parity = [0] * len(pairs)
        self.swaps = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            for n, (a, b) in enumerate(self.pairs):
                if exchange(a, b) == 0:
                    self.parity[n] ^= 1
                    self.swaps += 1

    def __enter__(self) -> Flipper:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join()
        for n, (a, b) in enumerate(self.pairs):
            if self.parity[n] and os.path.lexists(a) and os.path.lexists(b):
                exchange(a, b)


def flappable(upper: Path, canary: Path) -> tuple[Path, Path]:
    """``d`` of an upper layer and a symlink to the canary beside it: the pair bob's view flips there."""
    link = upper / SWAPPED
    if not os.path.lexists(link):
        os.symlink(canary, link)
    return upper / "d", link


def fill_child(arena: Arena, upper: Path, files: int) -> None:
    """A branch's change of ``d/``: ``files`` new files, bob's ``zz-victim.conf``, a symlink to the canary, a
    hard link to a canary file and a FIFO; ``d/gone.txt`` of the zone deleted."""
    d = upper / "d"
    d.mkdir(exist_ok=True)
    for n in range(files):
        (d / f"c{n:04d}").write_text(f"bob d/c{n:04d}\n")
    (d / "zz-victim.conf").write_text(VICTIM)
    os.symlink(arena.canary.root, d / "evil")
    hard_link_canary(arena, d / "linked.conf")
    os.mkfifo(d / "pipe")
    whiteout(d / "gone.txt")


class BranchScenario(Scenario):
    """The zone of every branch scenario: ``d/keep.txt``, ``d/gone.txt`` (a branch deletes it), ``notes.md``."""

    has_undo = False

    def prepare(self, arena: Arena) -> None:
        super().prepare(arena)
        write(arena.zone / "d" / "gone.txt", "bob's, to be deleted\n")

    def branch_cmd(self, arena: Arena, verb: str, name: str) -> Outcome:
        return arena.omxfs(verb, str(arena.store), ZONE, "--branch", name, "--as", "boss")


class NestedAccept(BranchScenario):
    """``omxfs accept WS bob --branch c1 --as boss`` of c1, made from p1: its upper layer moved into p1's, while bob
    flips ``d`` of his zone (read for the layers below p1 and for the checkpoint the accept makes) and a symlink to
    the canary through the mount. The zone must not change; p1's upper layer must end holding c1's change.

    With ``deletes``, also c1's deletion of the zone's ``d/gone.txt`` as a whiteout there, whatever bob's flip made
    of ``d`` meanwhile (the accept once judged from a read of the zone whether a whiteout was needed, and a ``d`` that
    was a symlink then dropped the deletion)."""

    name = "nested-accept"

    def __init__(self, files: int = 300, *, deletes: bool = True) -> None:
        self.files, self.deletes = files, deletes

    def before(self, arena: Arena) -> Start:
        start = super().before(arena)
        for name in ("c1", "p1"):
            drop_branch(arena, name)
        parent = make_branch(arena, "p1")
        write(parent / "d" / "p00.txt", "p1's, deleted by c1\n")
        write(parent / "d" / "p01.txt", "p1's\n")
        write(parent / "notes.md", "p1's notes\n")
        child = make_branch(arena, "c1", "p1")
        fill_child(arena, child, self.files)
        whiteout(child / "d" / "p00.txt")
        return start

    def arm(self, arena: Arena) -> Arm | None:
        return {"kind": "now"}, swap_attack("symlink", arena.canary.root, "flap")

    def run(self, arena: Arena) -> Outcome:
        return self.branch_cmd(arena, "accept", "c1")

    def finish(self, arena: Arena, failed: Outcome) -> Outcome | None:
        return self.branch_cmd(arena, "accept", "c1")

    def meant(self, arena: Arena) -> list[str]:
        missed = []
        if branch_dir(arena, "c1").exists():
            missed.append("c1 is still pending")
        d = branch_dir(arena, "p1") / "upper" / "d"
        for n in range(self.files):
            name = f"c{n:04d}"
            if not (d / name).is_file() or (d / name).read_text() != f"bob d/{name}\n":
                missed.append(f"p1's d/{name} is not c1's")
        if (d / "zz-victim.conf").read_text() != VICTIM:
            missed.append("p1's d/zz-victim.conf is not c1's")
        if os.readlink(d / "evil") != str(arena.canary.root):
            missed.append("p1's d/evil is not c1's symlink")
        if os.lstat(d / "linked.conf").st_ino != os.lstat(arena.canary.root / arena.canary.LINKED).st_ino:
            missed.append("p1's d/linked.conf is not c1's hard link")
        for deleted, whose in (("p00.txt", "p1's own"), ("gone.txt", "the zone's")):
            if (deleted != "gone.txt" or self.deletes) and not _whiteout(d / deleted):
                missed.append(f"{whose} d/{deleted}, which c1 deleted, is no whiteout in p1's upper layer")
        return missed


def _whiteout(path: Path) -> bool:
    """Whether ``path`` is an overlay's whiteout (a character device 0:0): the name deleted in the layers below."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


class Discard(BranchScenario):
    """``omxfs discard WS bob --branch B --as boss`` of a branch whose upper layer holds symlinks to the canary, a
    hard link to a canary file, a FIFO and a whiteout, while bob flips ``d`` of his zone through the mount and,
    as the branch's view started right after the discard's check could, ``d`` of the upper layer with a symlink to
    the canary. With ``nested``, B is c1, made from p1: p1 and its upper layer must stay exactly as they were."""

    def __init__(self, *, nested: bool = False) -> None:
        self.nested = nested
        self.target = "c1" if nested else "b1"
        self.name = "discard-nested" if nested else "discard-branch"
        self.parent: dict[str, tuple[Any, ...]] = {}

    def before(self, arena: Arena) -> Start:
        start = super().before(arena)
        for name in ("c1", "p1", "b1"):
            drop_branch(arena, name)
        if self.nested:
            parent = make_branch(arena, "p1")
            write(parent / "d" / "p01.txt", "p1's\n")
            os.symlink(arena.canary.root / "secret.conf", parent / "d" / "p1-evil")
            self.parent = layer_digest(parent)
        upper = make_branch(arena, self.target, "p1" if self.nested else None)
        fill_child(arena, upper, 50)
        flappable(upper, arena.canary.root)
        return start

    def arm(self, arena: Arena) -> Arm | None:
        return {"kind": "now"}, swap_attack("symlink", arena.canary.root, "flap")

    def run(self, arena: Arena) -> Outcome:
        with Flipper(flappable(branch_dir(arena, self.target) / "upper", arena.canary.root)):
            return self.branch_cmd(arena, "discard", self.target)

    def finish(self, arena: Arena, failed: Outcome) -> Outcome | None:
        return self.branch_cmd(arena, "discard", self.target)

    def meant(self, arena: Arena) -> list[str]:
        missed = [f"{self.target} is still pending"] if branch_dir(arena, self.target).exists() else []
        if self.nested:
            upper = branch_dir(arena, "p1") / "upper"
            have = layer_digest(upper) if upper.is_dir() else {}
            if have != self.parent:
                missed.append(f"p1's upper layer changed: {sorted(set(have.items()) ^ set(self.parent.items()))}")
        return missed


class Rebase(BranchScenario):
    """``omxfs rebase WS bob --branch r1 --as boss`` of r1, conflicted with f1 (accepted after r1 was made: both
    changed ``notes.md``), while bob flips ``d`` of his zone and a symlink to the canary through the mount (the
    rebase reads the zone, as r1's change is judged against it)."""

    name = "rebase"

    def prepare(self, arena: Arena) -> None:
        super().prepare(arena)
        write(make_branch(arena, "f1") / "notes.md", "f1's notes\n")
        accepted = self.branch_cmd(arena, "accept", "f1")
        assert accepted.ok, accepted.shown()

    def before(self, arena: Arena) -> Start:
        start = super().before(arena)
        upper = make_branch(arena, "r1")
        write(upper / "notes.md", "r1's notes\n")
        write(upper / "d" / "r1.txt", "r1's\n")
        record = branch_dir(arena, "r1") / "branch.json"
        made = json.loads(record.read_text())
        record.write_text(json.dumps({**made, "created_ns": 1}))  # made before f1 was accepted
        return start

    def arm(self, arena: Arena) -> Arm | None:
        return {"kind": "now"}, swap_attack("symlink", arena.canary.root, "flap")

    def run(self, arena: Arena) -> Outcome:
        return self.branch_cmd(arena, "rebase", "r1")

    def meant(self, arena: Arena) -> list[str]:
        made = json.loads((branch_dir(arena, "r1") / "branch.json").read_text())
        return [] if isinstance(made.get("rebased_ns"), int) else ["r1 is not recorded as rebased"]


class HardLinkAccept(BranchScenario):
    """``omxfs accept WS bob --branch h1 --as boss`` (with ``nested``: h1 made from p1, accepted into it) of a
    change holding a hard link to the canary's ``linked.conf`` (``hard_link_canary``) among a symlink to the
    canary, a FIFO and new files, while bob flips ``d`` of his zone through the mount. The canary's file keeps its
    name, owner, mode, times and content: the accept moves the branch's name for it, nothing else."""

    def __init__(self, *, nested: bool = False) -> None:
        self.nested = nested
        self.name = "hardlink-accept-nested" if nested else "hardlink-accept"
        self.has_undo = not nested  # an accept into the zone prints its undo; one into a branch leaves the zone

    def before(self, arena: Arena) -> Start:
        start = super().before(arena)
        for name in ("h1", "p1"):
            drop_branch(arena, name)
        if self.nested:
            write(make_branch(arena, "p1") / "d" / "p01.txt", "p1's\n")
        fill_child(arena, make_branch(arena, "h1", "p1" if self.nested else None), 50)
        return start

    def arm(self, arena: Arena) -> Arm | None:
        return {"kind": "now"}, swap_attack("symlink", arena.canary.root, "flap")

    def run(self, arena: Arena) -> Outcome:
        return self.branch_cmd(arena, "accept", "h1")

    def finish(self, arena: Arena, failed: Outcome) -> Outcome | None:
        return self.branch_cmd(arena, "accept", "h1")

    def meant(self, arena: Arena) -> list[str]:
        missed = ["h1 is still pending"] if branch_dir(arena, "h1").exists() else []
        into = branch_dir(arena, "p1") / "upper" if self.nested else arena.zone
        linked = into / "d" / "linked.conf"
        canary = arena.canary.root / arena.canary.LINKED
        if not os.path.lexists(linked) or os.lstat(linked).st_ino != os.lstat(canary).st_ino:
            missed.append(f"{linked} is not h1's hard link")
        return missed


# -- the mount's @NAME directories, read while the layers flip -------------------------------------------------

#: bob's reader: each path below the mount opened one component at a time with ``O_NOFOLLOW`` (so that a symlink
#: the daemon shows is never resolved by the reader's own kernel: anything read came from the daemon), read and
#: listed over and over for the seconds given; prints what it read (each content, each listing, by path) and its
#: errors, as JSON
READER = r"""
import errno, json, os, sys, time
paths, seconds = json.loads(sys.argv[1]), float(sys.argv[2])
DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
seen, errors, reads = {}, {}, 0
def walk(path):
    parts = path.split("/")
    fd = os.open(".", DIR)
    try:
        for part in parts[:-1]:
            below = os.open(part, DIR, dir_fd=fd)
            os.close(fd)
            fd = below
        return fd, parts[-1]
    except OSError:
        os.close(fd)
        raise
end = time.monotonic() + seconds
while time.monotonic() < end:
    for path in paths:
        try:
            fd, name = walk(path)
            try:
                if path.endswith("/"):
                    below = os.open(name or ".", DIR, dir_fd=fd)
                    try:
                        found = ",".join(sorted(os.listdir(below)))
                    finally:
                        os.close(below)
                    seen.setdefault(path, {})[found] = 1
                    continue
                file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
                try:
                    data = b""
                    while chunk := os.read(file, 65536):
                        data += chunk
                finally:
                    os.close(file)
                reads += 1
                seen.setdefault(path, {})[data.decode("utf-8", "replace")] = 1
            finally:
                os.close(fd)
        except OSError as exc:
            key = errno.errorcode.get(exc.errno or 0, str(exc.errno))
            errors[key] = errors.get(key, 0) + 1
print(json.dumps({"seen": {p: sorted(s) for p, s in seen.items()}, "errors": errors, "reads": reads}))
"""


def read_through_mount(arena: Arena, paths: list[str], seconds: float) -> dict[str, Any]:
    """bob (``OMX_AGENT=bob``, a process of his) reading ``paths`` below the mount's root for ``seconds``
    (``READER``; a path ending in ``/`` is listed)."""
    done = subprocess.run(
        [sys.executable, "-c", READER, json.dumps(paths), str(seconds)],
        cwd=arena.mnt,
        env=clean_env(OMX_AGENT=ZONE),
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@contextlib.contextmanager
def flipping_layers(arena: Arena, *uppers: Path) -> Iterator[list[Flipper]]:
    """Each upper layer's ``d`` flipped with a symlink to the canary directory, and its ``f/secret.conf`` with a
    symlink to the canary's ``secret.conf`` (``Flipper``), for the block."""
    flippers = []
    with contextlib.ExitStack() as stack:
        for upper in uppers:
            evil = upper / "f" / "evil.conf"
            if not os.path.lexists(evil):
                os.symlink(arena.canary.root / "secret.conf", evil)
            pairs = (flappable(upper, arena.canary.root), (upper / "f" / "secret.conf", evil))
            flippers.append(stack.enter_context(Flipper(*pairs)))
        yield flippers


def bob_reads_branch_dirs(arena: Arena, seconds: float) -> tuple[dict[str, Any], list[Flipper], int]:
    """The branches b1 and c1 (made from b1), each with ``d/secret.conf`` and ``f/secret.conf`` of bob's, read by
    bob through ``agents/bob/@b1/`` and ``@c1/`` while both upper layers flip (as their views' processes could) and
    bob's attacker flips the zone's ``d`` through the mount: what he read, the flippers, the zone's swaps."""
    write(arena.zone / "d" / "secret.conf", "bob's zone secret.conf\n")
    write(arena.zone / "f" / "keep.txt", "bob's\n")
    os.symlink(arena.canary.root, arena.zone / SWAPPED)
    for name in ("b1", "c1"):
        upper = make_branch(arena, name, "b1" if name == "c1" else None)
        write(upper / "d" / "secret.conf", f"{name}'s d/secret.conf\n")
        write(upper / "f" / "secret.conf", f"{name}'s f/secret.conf\n")
    paths = [f"agents/bob/@{b}/{p}" for b in ("b1", "c1") for p in ("d/secret.conf", "f/secret.conf", "d/", "f/")]
    assert arena.attacker is not None
    arena.attacker.arm({"kind": "now"}, swap_attack("symlink", arena.canary.root, "flap"))
    try:
        with flipping_layers(arena, branch_dir(arena, "b1") / "upper", branch_dir(arena, "c1") / "upper") as flips:
            found = read_through_mount(arena, paths, seconds)
    finally:
        report = arena.attacker.stop()
    return found, flips, report.swaps


# -- what bob can reach of a branch through the mount ----------------------------------------------------------

#: bob's tries at changing a branch's layers through the mount, each ``[op, path, other]``: every errno it got
#: (0 where one succeeded), as JSON by op and path
TRIES = r"""
import json, os, sys
found = {}
for op, path, other in json.loads(sys.argv[1]):
    try:
        if op == "create":
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        elif op == "write":
            os.close(os.open(path, os.O_WRONLY))
        elif op == "symlink":
            os.symlink(other, path)
        elif op == "rename":
            os.rename(path, other)
        elif op == "unlink":
            os.unlink(path)
        elif op == "mkdir":
            os.mkdir(path)
        found[f"{op} {path}"] = 0
    except OSError as exc:
        found[f"{op} {path}"] = exc.errno
print(json.dumps(found))
"""


def bob_tries_the_layers(arena: Arena, tries: list[tuple[str, str, str]]) -> dict[str, int]:
    """bob (``OMX_AGENT=bob``) trying each change of ``tries`` through the mount (``TRIES``): the errno of each."""
    done = subprocess.run(
        [sys.executable, "-c", TRIES, json.dumps(tries)],
        cwd=arena.mnt,
        env=clean_env(OMX_AGENT=ZONE),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found: dict[str, int] = json.loads(done.stdout)
    return found


# -- a running branch view, flipping its own upper layer -------------------------------------------------------

#: bob's program in his branch's view: ``u/secret.conf`` and ``f/secret.conf`` of his, a symlink to the canary
#: beside ``u`` and one to the canary's ``secret.conf`` beside ``f/secret.conf``, then ``ready``; then each pair
#: exchanged (``renameat2(RENAME_EXCHANGE)`` through the view's overlay, which does it in the upper layer) over and
#: over for the seconds given; prints how many exchanges landed
IN_VIEW = r"""
import ctypes, os, sys, time
canary, seconds = sys.argv[1], float(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
for name in ("u", "f"):
    os.makedirs(name, exist_ok=True)
    with open(f"{name}/secret.conf", "w") as f:
        f.write(f"b1's {name}/secret.conf\n")
os.symlink(canary, "lnk")
os.symlink(os.path.join(canary, "secret.conf"), "f/evil.conf")
open("ready", "w").close()
end, swaps = time.monotonic() + seconds, 0
while time.monotonic() < end:
    for a, b in ((b"u", b"lnk"), (b"f/secret.conf", b"f/evil.conf")):
        swaps += libc.renameat2(-100, a, -100, b, 2) == 0
print(swaps)
"""


def bob_reads_his_running_branch(arena: Arena, seconds: float) -> tuple[dict[str, Any], int]:
    """bob's branch b1 run for real (``omxfs run --branch b1``, ``IN_VIEW`` flipping its upper layer for
    ``seconds`` + 1), read by bob through ``agents/bob/@b1/`` meanwhile: what he read, and the view's exchanges."""
    argv = [*OMXFS, "run", str(arena.store), "--as", ZONE, "--branch", "b1", "--"]
    argv += [sys.executable, "-c", IN_VIEW, str(arena.canary.root), str(seconds + 1)]
    view = subprocess.Popen(argv, cwd=REPO, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = arena.mnt / "agents" / ZONE / "@b1" / "ready"
        end = time.monotonic() + DEADLINE
        while not os.path.lexists(ready):
            if view.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"bob's branch view did not start: {view.communicate()}")
            time.sleep(0.02)
        paths = ["agents/bob/@b1/u/secret.conf", "agents/bob/@b1/f/secret.conf", "agents/bob/@b1/u/"]
        found = read_through_mount(arena, paths, seconds)
        out, err = view.communicate(timeout=DEADLINE + seconds)
    finally:
        if view.poll() is None:
            view.kill()
            view.wait()
    if view.returncode != 0:
        raise AssertionError(f"bob's branch view failed: {err}")
    return found, int(out.split()[0])
