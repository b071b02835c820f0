"""A killed daemon never leaves processes hanging on its mount (``omxfs.fuse.guardian``).

The hang this guards against was found by CI: ``test_crash.py`` killed a daemon whose store-watch thread was
waiting in ``invalidate_entry`` for a directory lock, held by a process whose lookup the daemon had read and would
never answer. That thread never exits, so ``/dev/fuse`` never closes and the kernel never ends the lookup: the
worker, the daemon and every later visitor of the mount hung for good (the CI run timed out after 90 minutes).

The test builds that state on purpose. A second FUSE filesystem (``scripts/pyfuse3_floor.py``), stopped with
SIGSTOP, is mounted on a directory inside a private zone of the store, so the daemon's answer to a lookup there
waits on it; meanwhile a file beside it is removed behind the daemon's back, and the watch thread's invalidation
of that name waits for the directory's lock. Then the daemon gets SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from omxfs.fuse import guardian
from omxfs.fuse.mounts import mount_at
from tests.fuse.conftest import DEADLINE, Mount, poll
from tests.support.scripts import REPO

FLOOR = REPO / "scripts" / "pyfuse3_floor.py"


def fusectl_read(dev: int, name: str) -> str:
    """A file of the FUSE connection of the mount with device ``dev`` in fusectl (``waiting``: its open requests)."""
    root = guardian.fusectl()
    assert root is not None, "fusectl is unreachable (the tests run as root)"
    try:
        fd = os.open(f"{guardian.connection_name(dev)}/{name}", os.O_RDONLY, dir_fd=root)
        try:
            return os.read(fd, 64).decode().strip()
        finally:
            os.close(fd)
    finally:
        os.close(root)


def waiting(dev: int) -> int:
    try:
        return int(fusectl_read(dev, "waiting"))
    except FileNotFoundError:  # the connection is gone
        return 0


def thread_states(pid: int) -> list[str]:
    states = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            states.append((task / "stat").read_text().rpartition(")")[2].split()[0])
        except OSError:
            continue
    return states


def connection(dev: int) -> guardian.Connection:
    root = guardian.fusectl()
    assert root is not None, "fusectl is unreachable (the tests run as root)"
    try:
        found = guardian.Connection.open(root, dev)
    finally:
        os.close(root)
    assert found is not None, f"no FUSE connection {dev}"
    return found


def test_a_daemon_killed_while_its_watch_waits_for_a_directory_leaves_nothing_hanging(
    mount: Callable[..., Mount], tmp_path: Path
) -> None:
    m = mount(agents=["alice"], default="alice")
    directory = m.store / "agents" / "alice" / "e"
    (directory / "sub").mkdir(parents=True)
    (directory / "k").write_text("k")
    source = tmp_path / "floor-source"
    source.mkdir()
    floor = subprocess.Popen([sys.executable, str(FLOOR), str(source), str(directory / "sub")])
    prober: subprocess.Popen[bytes] | None = None
    dev = os.stat(m.root).st_dev
    own = connection(dev)  # the test's own way out if the guardian failed, so that a failure never hangs the suite
    pid = m.proc.pid
    try:
        # Found in the mount table, not by a stat: the floor's root is never asked, so the daemon's stat of it is.
        poll(lambda: mount_at(str(directory / "sub")) is not None, what="the floor's mount")
        floor_dev = mount_at(str(directory / "sub")).dev  # type: ignore[union-attr]
        assert (m.root / "agents/alice/e/k").read_text() == "k"  # the watch covers e; the kernel holds k's entry
        os.kill(floor.pid, signal.SIGSTOP)

        # A lookup of "sub" holds e's lock while the daemon waits for the stopped floor...
        prober = subprocess.Popen([sys.executable, "-c", f"import os; os.stat({str(m.root / 'agents/alice/e/sub')!r})"])
        poll(lambda: waiting(floor_dev) >= 1, what="the daemon's stat to wait on the stopped floor")
        # ...and the watch thread's invalidation of k, removed behind the daemon's back, waits for that lock.
        (directory / "k").unlink()
        poll(lambda: "D" in thread_states(pid), what="the watch thread to wait for e's lock")

        m.kill(signal.SIGKILL)  # waits for the daemon's every thread to end: without the guardian, none does
        assert prober.wait(DEADLINE) != 0  # its lookup ended with an error (the connection is aborted)
        assert waiting(dev) == 0
        assert "aborted FUSE connection" in m.output()
    finally:
        own.abort()
        own.close()
        os.kill(floor.pid, signal.SIGCONT)
        floor.terminate()
        floor.wait(DEADLINE)
        subprocess.run(["fusermount3", "-uz", str(directory / "sub")], capture_output=True, check=False)
        if prober is not None and prober.poll() is None:
            prober.kill()
            prober.wait(DEADLINE)


def test_a_cleanly_unmounted_daemon_leaves_its_guardian_nothing_to_do(mount: Callable[..., Mount]) -> None:
    m = mount()
    guardians = [p for p in Path("/proc").glob("[0-9]*") if _is_guardian_of(p, m.proc.pid)]
    assert len(guardians) == 1, "one guardian per daemon"
    assert m.unmount() == 0
    poll(lambda: not guardians[0].exists() or _state(guardians[0]) == "Z", what="the guardian to end")
    assert "aborted" not in m.output()


def _is_guardian_of(proc: Path, daemon: int) -> bool:
    try:
        argv = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(a.endswith(b"guardian.py") for a in argv) and argv[-2:] == [str(daemon).encode(), b""]


def _state(proc: Path) -> str:
    try:
        return (proc / "stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "X"


def test_the_guardian_never_aborts_a_later_mount_that_got_its_connection_number(tmp_path: Path) -> None:
    """The kernel gives a freed FUSE device number to the next mount at once; a guardian acting a moment after its
    daemon's clean exit must leave that next mount alone (found as a flaky test_crash: a remount was aborted)."""
    source = tmp_path / "source"
    source.mkdir()
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    floors: list[subprocess.Popen[bytes]] = []

    def floor(mountpoint: Path) -> int:
        floors.append(subprocess.Popen([sys.executable, str(FLOOR), str(source), str(mountpoint)]))
        poll(lambda: mount_at(str(mountpoint)) is not None, what=f"the floor's mount on {mountpoint}")
        return mount_at(str(mountpoint)).dev  # type: ignore[union-attr]

    try:
        number = floor(first)
        kept = connection(number)
        subprocess.run(["fusermount3", "-u", str(first)], check=True, timeout=DEADLINE)
        floors[0].wait(DEADLINE)
        if floor(second) != number:  # another connection ended meanwhile and its lower number went first
            pytest.skip("the kernel gave the next mount another number this time")
        assert kept.abort() is False  # opened by name now, as the guardian did before, it would end the new mount
        assert os.listdir(second) == []  # the later mount still answers
        kept.close()
    finally:
        for mountpoint in (first, second):
            subprocess.run(["fusermount3", "-uz", str(mountpoint)], capture_output=True, check=False)
        for f in floors:
            f.terminate()
            f.wait(DEADLINE)


def test_a_guardian_whose_daemon_is_gone_before_it_answers_prints_no_traceback() -> None:
    """A view's launcher killed while it started (SIGTERM in its first half second) closed the pipe the guardian
    answers on: ``print`` raised BrokenPipeError, and its traceback (and another at exit) went to the terminal."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the daemon is gone: no one will read the answer
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", guardian.__file__, str(os.makedev(0, 999_999)), "1"],  # no such connection
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")
