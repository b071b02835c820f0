"""A workspace under attack by one of its agents, for the hostile-agent tests and ``scripts/race_supervisor.py``.

``Arena(base)`` is a real workspace (agents alice and bob, supervisor boss) at ``base/ws``, an ``omxfs mount`` of
it at ``base/mnt`` served by a daemon of its own (``--as alice``), a canary tree at ``base/canary`` (the same
filesystem, outside the workspace: it stands for ``/etc/cron.d``), and bob's attacker, a separate process acting
through the mount as bob (``attacker.py``). The supervisor's commands run as real ``omxfs`` processes started in
this checkout (so a worktree's tests run the worktree's code), as root.

What every try is judged by:

- ``Canary.fingerprint``: every entry's path, type, mode, owner, inode, mtime and content (or symlink target),
  taken before and after; any difference is an escape. Link counts and ctimes are left out: a hard link made into
  the zone by the test itself, and removed again by a command, changes those and nothing the canary holds;
- ``leaked_blobs``: a checkpoint blob whose name is the sha256 of a canary file's content (as made: random, so no
  zone file has it) is a file outside the zone read and copied into the store;
- ``zone_digest``: the zone as types, modes, owners and contents (no times): what a command meant, and what its
  undo must bring back;
- ``Outcome.problem``: a command that failed must say why (exit status not 0, a message) and never with a
  traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.hostile.attacker import exchange

REPO = Path(__file__).resolve().parents[2]
OMXFS = [sys.executable, "-m", "cli.omxfs"]
ATTACKER = Path(__file__).resolve().with_name("attacker.py")
DEADLINE = 20.0
#: what the attacker makes and swaps with ``d`` (a symlink to the canary, or a file or FIFO in its place)
SWAPPED = "lnk"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMX_AGENT", "OMXFS_CRASH_AT")}
    return {**env, **extra}


# -- the canary -----------------------------------------------------------------------------------------------


class Canary:
    """A tree outside the workspace that no supervisor command may change, read or copy."""

    NAMES = ("secret.conf", "zz-victim.conf", "linked.conf", "sub/inner.conf")
    LINKED = "linked.conf"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.contents = {name: f"root's {name}: {secrets.token_hex(16)}\n".encode() for name in self.NAMES}
        # a test hard-links LINKED into the zone, where a checkpoint rightly records it as the zone's file
        self.secrets = {hashlib.sha256(c).hexdigest() for name, c in self.contents.items() if name != self.LINKED}

    def make(self) -> None:
        (self.root / "sub").mkdir(parents=True)
        for name, content in self.contents.items():
            (self.root / name).write_bytes(content)
            os.chmod(self.root / name, 0o644)
        os.symlink("../secret.conf", self.root / "sub" / "link")
        os.chmod(self.root / "sub", 0o755)
        os.chmod(self.root, 0o755)

    def reset(self) -> None:
        """The canary made again as it was, after a try that changed it (so that the next try is judged alone)."""
        shutil.rmtree(self.root)
        self.make()

    def fingerprint(self) -> dict[str, tuple[Any, ...]]:
        found: dict[str, tuple[Any, ...]] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in [".", *dirnames, *filenames]:
                path = os.path.join(dirpath, name)
                if name == "." and dirpath != str(self.root):
                    continue
                st = os.lstat(path)
                content: str | None = None
                if stat.S_ISREG(st.st_mode):
                    with open(path, "rb") as f:
                        content = hashlib.sha256(f.read()).hexdigest()
                elif stat.S_ISLNK(st.st_mode):
                    content = os.readlink(path)
                kind = stat.S_IFMT(st.st_mode)
                found[os.path.relpath(path, self.root)] = (
                    kind,
                    stat.S_IMODE(st.st_mode),
                    st.st_uid,
                    st.st_gid,
                    st.st_ino,
                    st.st_mtime_ns,
                    content,
                )
        return found


def changes(before: dict[str, tuple[Any, ...]], after: dict[str, tuple[Any, ...]]) -> list[str]:
    """What differs between two fingerprints, one line a path."""
    fields = ("type", "mode", "uid", "gid", "inode", "mtime", "content")
    found = []
    for path in sorted(before.keys() | after.keys()):
        if path not in after:
            found.append(f"{path}: removed")
        elif path not in before:
            found.append(f"{path}: created")
        elif before[path] != after[path]:
            differ = [f for f, a, b in zip(fields, before[path], after[path], strict=True) if a != b]
            found.append(f"{path}: {', '.join(differ)} changed")
    return found


# -- the zone -------------------------------------------------------------------------------------------------


def zone_digest(zone: Path) -> dict[str, tuple[Any, ...]]:
    """The zone without times: each path's type, mode, owner and content or symlink target."""
    found: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(zone):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            content: str | None = None
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    content = hashlib.sha256(f.read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                content = os.readlink(path)
            found[os.path.relpath(path, zone)] = (
                stat.S_IFMT(st.st_mode),
                stat.S_IMODE(st.st_mode),
                st.st_uid,
                st.st_gid,
                content,
            )
    return found


def digest_changes(want: dict[str, tuple[Any, ...]], have: dict[str, tuple[Any, ...]]) -> list[str]:
    found = []
    for path in sorted(want.keys() | have.keys()):
        if want.get(path) != have.get(path):
            found.append(f"{path}: {want.get(path)} -> {have.get(path)}")
    return found


def leaked_blobs(store: Path, canary: Canary) -> list[str]:
    """Blobs of any zone's checkpoints that hold a canary file's content."""
    wanted = canary.secrets
    found = []
    for blobs in (store / ".omxfs" / "checkpoints").glob("*/blobs"):
        for digest in wanted:
            path = blobs / digest[:2] / digest
            if os.path.lexists(path):
                found.append(str(path.relative_to(store)))
    return found


# -- a command and what it printed ----------------------------------------------------------------------------

#: how each command names its undo: the CLI's restore and accept, a snapshot restore, the dashboard's messages
UNDO = {
    "checkpoint": (
        re.compile(r"omxfs restore \S+ bob (\d+)"),
        re.compile(r"undo: restore checkpoint (\d+)"),
        re.compile(r"undo: (\d+)"),
    ),
    "snapshot": (re.compile(r"omxfs snapshot restore \S+ (\d+)"),),
}


@dataclass
class Outcome:
    """A supervisor command as it ended: exit status (an HTTP action's: 0 for its redirect, else its status)."""

    what: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def undo(self, kind: str = "checkpoint") -> int | None:
        """The undo it printed (a success's, or a failure's message that names one); the last one named."""
        text = self.stdout + "\n" + self.stderr
        for pattern in UNDO[kind]:
            found = pattern.findall(text)
            if found:
                return int(found[-1])
        return None

    def problem(self) -> str | None:
        """Why a failure is not a clean one: no message, or a traceback; None for a success or a clean failure."""
        text = self.stdout + self.stderr
        if "Traceback" in text or "Internal Server Error" in text:
            return f"{self.what}: failed with a traceback:\n{text[-3000:]}"
        if not self.ok and not self.stderr.strip() and not self.stdout.strip():
            return f"{self.what}: exit {self.returncode} without a message"
        return None

    def shown(self) -> str:
        return f"{self.what}: exit {self.returncode}\n{self.stdout.strip()}\n{self.stderr.strip()}"


def run_omxfs(*args: str, env: dict[str, str] | None = None, bind: tuple[Path, Path] | None = None) -> Outcome:
    """``omxfs ARGS`` as a real process of this checkout. With ``bind`` (source, mount point), it runs in a private
    mount namespace where ``source`` is bind-mounted over the mount point (gone with the command's namespace)."""
    argv = [*OMXFS, *args]
    if bind is not None:
        mount = shlex.join(["mount", "--bind", str(bind[0]), str(bind[1])])
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", f"{mount} && exec {shlex.join(argv)}"]
    start = time.monotonic()
    done = subprocess.run(
        argv, cwd=REPO, env=env or clean_env(), capture_output=True, text=True, timeout=300, check=False
    )
    return Outcome("omxfs " + " ".join(args), done.returncode, done.stdout, done.stderr, time.monotonic() - start)


def checked(*args: str, env: dict[str, str] | None = None) -> str:
    done = run_omxfs(*args, env=env)
    if not done.ok:
        raise AssertionError(done.shown())
    return done.stdout


# -- the attacker ---------------------------------------------------------------------------------------------


@dataclass
class Report:
    """What the attacker did in one try."""

    swaps: int
    polls: int
    fired_after: float | None
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def landed(self) -> bool:
        return self.swaps > 0


class Attacker:
    """bob's process: ``attacker.py`` acting through the mount, armed and stopped once per try."""

    def __init__(self, mountpoint: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ATTACKER)],
            cwd=mountpoint,
            env=clean_env(OMX_AGENT="bob"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the attacker exited ({self.proc.poll()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def arm(self, trigger: dict[str, Any], attack: dict[str, Any]) -> None:
        answer = self._ask({"op": "arm", "trigger": trigger, "attack": attack})
        if not answer.get("ready"):
            raise AssertionError(f"the attacker could not arm: {answer}")

    def stop(self) -> Report:
        answer = self._ask({"op": "stop"})
        return Report(answer["swaps"], answer["polls"], answer["fired_after"], answer.get("errors", {}))

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def swap_attack(make: str, canary: Path, mode: str = "once", a: str = "d") -> dict[str, Any]:
    """The attack on ``agents/bob/<a>``: exchanged with a symlink to the canary directory, a file or a FIFO."""
    return {"a": f"agents/bob/{a}", "b": f"agents/bob/{SWAPPED}", "make": make, "target": str(canary), "mode": mode}


# -- the arena ------------------------------------------------------------------------------------------------


class Arena:
    """The workspace, its mount, the canary and bob's attacker (see the module); ``close`` undoes all of it."""

    def __init__(self, base: Path, *, mounted: bool = True) -> None:
        from omxfs.store import Workspace  # this checkout's, as the commands are

        self.base = base
        self.store = base / "ws"
        self.zone = self.store / "agents" / "bob"
        self.mnt = base / "mnt"
        self.canary = Canary(base / "canary")
        self.daemon: subprocess.Popen[bytes] | None = None
        self.attacker: Attacker | None = None
        self.ui: Any = None
        Workspace.init(self.store, agents=["alice", "bob"], supervisors=["boss"])
        self.canary.make()
        if mounted:
            self._mount()
            self.attacker = Attacker(self.mnt)

    def _mount(self) -> None:
        self.mnt.mkdir()
        self._output = self.base / "daemon.out"
        with open(self._output, "wb") as out:
            self.daemon = subprocess.Popen(
                [*OMXFS, "mount", str(self.store), str(self.mnt), "--as", "alice", "--foreground"],
                cwd=REPO,
                env=clean_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + DEADLINE
        while not (os.path.ismount(self.mnt) and "mounted " in self._output.read_text("utf-8", "replace")):
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the mount did not come up: {self._output.read_text('utf-8', 'replace')}")
            time.sleep(0.02)

    def daemon_log(self) -> str:
        if self.daemon is None:
            return ""
        log = self.store / ".omxfs" / "logs" / f"mount-{self.daemon.pid}.log"
        return log.read_text("utf-8", "replace") if log.exists() else ""

    def close(self) -> list[str]:
        """Stop everything this arena started; the problems its daemon had (a traceback, an unclean exit)."""
        problems = []
        if self.attacker is not None:
            self.attacker.close()
        if self.ui is not None:
            self.ui.stop()
        if self.daemon is not None:
            if self.daemon.poll() is None:
                subprocess.run(["fusermount3", "-u", str(self.mnt)], capture_output=True, check=False)
                try:
                    self.daemon.wait(DEADLINE)
                except subprocess.TimeoutExpired:
                    subprocess.run(["fusermount3", "-uz", str(self.mnt)], capture_output=True, check=False)
                    self.daemon.kill()
                    self.daemon.wait()
                    problems.append("the mount's daemon did not exit on unmount")
            if self.daemon.returncode not in (0, None):
                problems.append(f"the mount's daemon exited {self.daemon.returncode}")
            if "Traceback" in self.daemon_log():
                problems.append(f"the mount's daemon logged an internal error:\n{self.daemon_log()[-3000:]}")
        unmount_below(self.base)
        return problems

    # -- acting -----------------------------------------------------------------------------------------------

    def omxfs(self, *args: str, env: dict[str, str] | None = None, bind: tuple[Path, Path] | None = None) -> Outcome:
        return run_omxfs(*args, env=env, bind=bind)

    def checkpoint(self, message: str = "") -> int:
        """A checkpoint of bob's zone by bob: its id."""
        return int(checked("checkpoint", str(self.store), "--as", "bob", "-m", message or "by the test").strip())

    def checkpoints(self) -> list[int]:
        return [int(c["id"]) for c in json.loads(checked("checkpoints", str(self.store), "bob", "--json"))]

    def restore(self, number: int, *paths: str) -> Outcome:
        return run_omxfs("restore", str(self.store), "bob", str(number), *paths, "--as", "boss")

    def normalize(self) -> None:
        """Undo the attacker's exchange of ``d``, if ``d`` is left swapped (the harness's, on the store): a
        command's result is then comparable with what it meant."""
        d, other = self.zone / "d", self.zone / SWAPPED
        if _is_dir(other) and os.path.lexists(d) and not _is_dir(d):
            code = exchange(d, other)
            if code:
                raise AssertionError(f"could not swap {d} back: {os.strerror(code)}")

    def pending_review(self, code: str, *, real: bool = True) -> None:
        """bob's review run, held for review: the Python ``code`` run in bob's zone, in a real ``omxfs run
        --review`` view (``real``), or run by the test in the upper layer such a run leaves (faster, for the long
        loop: the same upper layer, for a run that only adds files)."""
        if real:
            argv = [*OMXFS, "run", str(self.store), "--as", "bob", "--review", "--", sys.executable, "-c", code]
            done = subprocess.run(
                argv, cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=300, check=False
            )
            if done.returncode != 0:
                raise AssertionError(f"bob's review run failed: {done.stderr}")
            return
        from omxfs.checkpoints.review import Review
        from omxfs.store import Workspace

        review = Review(Workspace(self.store), "bob")
        review.prepare()
        subprocess.run([sys.executable, "-c", code], cwd=review.upper, check=True, timeout=300)
        _merge_dirs_present_below(self.zone, review.upper)


def _merge_dirs_present_below(zone: Path, upper: Path) -> None:
    """An overlay upper directory that merges with the zone's carries the zone directory's mode and owner; a
    directory the run made new is opaque to nothing below: none needs a mark for a run that only adds."""
    for dirpath, dirnames, _ in os.walk(upper):
        for name in dirnames:
            made = Path(dirpath, name)
            lower = zone / made.relative_to(upper)
            if lower.is_dir() and not lower.is_symlink():
                st = os.lstat(lower)
                os.chmod(made, stat.S_IMODE(st.st_mode))
                os.chown(made, st.st_uid, st.st_gid)


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def unmount_below(path: Path) -> None:
    """Lazily unmount whatever is still mounted below ``path`` (a bind mount a test left, a stale mount)."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4].replace("\\040", " ") for line in f]
    for point in sorted(points, key=len, reverse=True):
        if Path(point).is_relative_to(path.resolve()):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def kill_when(proc: subprocess.Popen[str], condition: Any, deadline: float = DEADLINE) -> bool:
    """SIGKILL ``proc`` as soon as ``condition()`` holds: True; False if it ended first."""
    end = time.monotonic() + deadline
    while proc.poll() is None:
        with contextlib.suppress(OSError):
            if condition():
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return True
        if time.monotonic() > end:
            proc.kill()
            proc.wait()
            raise AssertionError("the command neither ended nor reached the point to kill it at")
    return False
