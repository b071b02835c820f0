"""The mount fixture: a real daemon per mount, in a subprocess (pyfuse3's state is process-wide).

``m = mount(agents=["alice", "bob"], default="alice")`` creates a workspace, runs
``omxfs mount WS MNT --as alice --foreground`` and waits, with a deadline, until the mountpoint is mounted *and*
the daemon alive and ready by its own word (STYLE lesson 5). Teardown always unmounts (``fusermount3 -u``, then
``-uz``), kills a daemon that does not exit, and fails the test if a daemon that the test did not kill exited
uncleanly or logged a traceback (an internal error answered with EIO).

The test process has no ``OMX_AGENT``, so it acts as the mount's default agent; other identities act through
``m.run(..., agent=...)`` / ``m.py(..., agent=...)``: an identity is read from a process's *initial*
environment, so changing ``os.environ`` in the test process changes nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from omxfs.store import Workspace
from omxfs.store.config import Config, render_config
from omxfs.store.layout import CONFIG

DEADLINE = 10.0  # seconds for a mount to answer or a daemon to exit


def poll(condition: Callable[[], bool], timeout: float = DEADLINE, what: str = "condition") -> None:
    """Wait until ``condition()`` holds, with a deadline; never a blind sleep."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.01)


def clean_env(agent: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    if agent is not None:
        env["OMX_AGENT"] = agent
    return env


class Mount:
    """One live mount of a workspace, served by its own daemon process."""

    def __init__(
        self, store: Path, root: Path, default: str, registry: list[Mount], *, allow_other: bool = False
    ) -> None:
        self.store = store
        self.root = root
        self.default = default
        self._registry = registry
        self._store_fd: int | None = None
        self.unmounted = False
        self.killed = False
        if root == store:  # in place: the store is under the mount, reach it by a descriptor taken before
            self._store_fd = os.open(store, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            self.disk = Path(f"/proc/self/fd/{self._store_fd}")
        else:
            self.disk = store
        self.ws = Workspace(self.disk)
        self._output = root.parent / f".daemon-{root.name}.out"
        with open(self._output, "wb") as out:
            self.proc: subprocess.Popen[bytes] = subprocess.Popen(
                [sys.executable, "-m", "cli.omxfs", "mount", str(store), str(root), "--as", default, "--foreground"]
                + (["--allow-other"] if allow_other else []),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=clean_env(),
            )
        registry.append(self)
        deadline = time.monotonic() + DEADLINE
        while not self._answers():
            if self.proc.poll() is not None:
                raise AssertionError(f"the daemon exited with {self.proc.returncode}: {self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{root} was not mounted within {DEADLINE} s: {self.output()}")
            time.sleep(0.01)

    def _answers(self) -> bool:
        """Mounted, answering, and said so: the daemon prints its "mounted ..." line only once its mount record is
        written, where the tools look up the mount's default identity (``cli.acting.who``); the
        mount answers a few milliseconds before that."""
        if self.proc.poll() is not None or not os.path.ismount(self.root):
            return False
        os.stat(self.root)
        return any(line.startswith("mounted ") for line in self.output().splitlines())

    # -- acting through the mount -----------------------------------------------------------------------------

    def path(self, rel: str) -> Path:
        return self.root / rel

    def env(self, agent: str | None) -> dict[str, str]:
        return clean_env(agent)

    def run(
        self,
        args: list[str] | str,
        agent: str | None = None,
        check: bool = False,
        input: bytes | None = None,
        timeout: float = 30,
    ) -> subprocess.CompletedProcess[bytes]:
        """A real process in the mount's root as ``agent`` (None: the mount's default); a str runs in bash."""
        argv = ["bash", "-c", args] if isinstance(args, str) else args
        done = subprocess.run(
            argv, cwd=self.root, env=self.env(agent), input=input, capture_output=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{argv} as {agent or self.default} exited {done.returncode}\n"
                f"stdout: {done.stdout.decode(errors='replace')}\nstderr: {done.stderr.decode(errors='replace')}"
            )
        return done

    def py(self, code: str, agent: str | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return self.run([sys.executable, "-c", code], agent=agent, check=check)

    # -- lifecycle --------------------------------------------------------------------------------------------

    def unmount(self) -> int:
        """Unmount cleanly now (``fusermount3 -u``; lazily if busy) and return the daemon's exit code."""
        if self.proc.poll() is None:
            done = subprocess.run(["fusermount3", "-u", str(self.root)], capture_output=True, check=False)
            if done.returncode != 0:
                subprocess.run(["fusermount3", "-uz", str(self.root)], capture_output=True, check=False)
            try:
                self.proc.wait(DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.unmounted = True
        return self.proc.returncode

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill the daemon (the mount is left stale: teardown cleans it); the exit is then not checked."""
        self.killed = True
        self.proc.send_signal(sig)
        self.proc.wait(DEADLINE)

    def log(self) -> str:
        try:
            return (self.disk / ".omxfs" / "logs" / f"mount-{self.proc.pid}.log").read_text("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def output(self) -> str:
        return self._output.read_text("utf-8", "replace") if self._output.exists() else ""

    def second_mount(self, default: str = "bob") -> Mount:
        """Another daemon on the same store, mounted beside this one."""
        n = 2
        while (self.root.parent / f"{self.root.name}.{n}").exists():
            n += 1
        root = self.root.parent / f"{self.root.name}.{n}"
        root.mkdir()
        return Mount(self.store, root, default, self._registry)

    def teardown(self) -> list[str]:
        problems = []
        was_running = self.proc.poll() is None
        if was_running:
            code = self.unmount()
            if code != 0:
                problems.append(f"{self.root}: the daemon exited {code} on a clean unmount: {self.output()}")
        elif not (self.unmounted or self.killed or self.proc.returncode < 0):
            problems.append(f"{self.root}: the daemon died during the test ({self.proc.returncode}): {self.output()}")
        if os.path.ismount(self.root) or _stale(self.root):
            subprocess.run(["fusermount3", "-uz", str(self.root)], capture_output=True, check=False)
        log = self.log()
        if "Traceback" in log:
            problems.append(f"{self.root}: the daemon logged an internal error:\n{log[-4000:]}")
        if self._store_fd is not None:
            os.close(self._store_fd)
            self._store_fd = None
        return problems


def _stale(path: Path) -> bool:
    try:
        os.statvfs(path)  # always a request to the daemon, never answered from the kernel's caches
    except OSError:
        return True
    return False


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Callable[..., Mount]]:
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: FUSE mount tests need it")
    pytest.importorskip("pyfuse3", reason="pyfuse3 is not installed (Linux with libfuse3 only)")
    registry: list[Mount] = []

    def make(
        agents: Sequence[str] = ("alice", "bob"),
        default: str = "alice",
        supervisors: Sequence[str] = (),
        uids: dict[int, str] | None = None,
        in_place: bool = False,
        allow_other: bool = False,
    ) -> Mount:
        n = len({m.store for m in registry})
        store = tmp_path / ("ws" if n == 0 else f"ws{n + 1}")
        ws = Workspace.init(store, agents=list(agents), supervisors=list(supervisors))
        if uids:
            config = Config(agents=tuple(agents), supervisors=tuple(supervisors), uids=dict(uids))
            ws.writer.write(ws.meta, CONFIG, render_config(config).encode("utf-8"))
        root = store if in_place else tmp_path / ("mnt" if n == 0 else f"mnt{n + 1}")
        root.mkdir(exist_ok=True)
        return Mount(store, root, default, registry, allow_other=allow_other)

    yield make
    problems = []
    for m in reversed(registry):
        try:
            problems += m.teardown()
        except Exception as exc:  # keep tearing the others down
            problems.append(f"{m.root}: teardown failed: {exc!r}")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
