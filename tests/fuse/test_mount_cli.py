"""``omxfs mount``, ``umount`` and ``status`` as a user runs them: real processes, real mounts, one-line errors."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.omxfs import main
from omxfs.errors import MountError
from omxfs.fuse import mounts
from omxfs.process import pid_alive
from omxfs.store import Workspace
from omxfs.store.layout import META_DIR
from omxfs.store.mount_records import read_records
from tests.fuse.conftest import DEADLINE, Mount, clean_env, poll

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="/dev/fuse is absent")


def omxfs(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.omxfs", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=30,
        env=env or clean_env(),
        check=False,
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@contextlib.contextmanager
def background_mounts(*mountpoints: Path) -> Iterator[None]:
    """Whatever a test leaves mounted by ``omxfs mount`` (daemons not our children) is cleaned up after it."""
    try:
        yield
    finally:
        for mountpoint in mountpoints:
            pids: list[int] = []
            with contextlib.suppress(OSError):
                pids = [r.pid for r in read_records(mountpoint / META_DIR)]
            if os.path.ismount(mountpoint) or mounts.probe(str(mountpoint)) is mounts.State.STALE:
                subprocess.run(["fusermount3", "-uz", str(mountpoint)], capture_output=True, check=False)
            for pid in pids:
                if not mounts.wait_for_exit(pid, DEADLINE):
                    os.kill(pid, signal.SIGKILL)


def daemon_pid(output: str) -> int:
    match = re.search(r"\(pid (\d+),", output)
    assert match, output
    return int(match.group(1))


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.init(tmp_path / "ws", agents=["alice", "bob"])


def test_mount_returns_once_mounted_and_umount_cleans_up(ws: Workspace, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with background_mounts(mnt):
        done = omxfs("mount", ws.root, mnt, "--as", "alice")
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"mounted {ws.root} at {mnt} as alice (pid ")
        pid = daemon_pid(done.stdout)
        assert os.path.ismount(mnt)
        assert sorted(os.listdir(mnt / "agents")) == ["alice", "bob"]  # it answers at once
        (mnt / "agents/alice/a.txt").write_text("through the mount")
        listing = omxfs("status")
        assert f"{mnt}: live, store {ws.root}" in listing.stdout
        assert f"{mnt}: default agent alice, pid {pid}" in listing.stdout
        of_store = omxfs("status", ws.root)
        assert "alice: 1 private file(s)" in of_store.stdout and f"  {mnt}: default agent alice" in of_store.stdout
        record = json.loads((ws.meta / "mounts" / f"{pid}.json").read_text())
        assert record["mountpoint"] == str(mnt) and record["default_agent"] == "alice"
        unmounted = omxfs("umount", mnt)
        assert unmounted.returncode == 0 and unmounted.stdout == f"unmounted {mnt}\n", unmounted.stderr
        assert not os.path.ismount(mnt) and not pid_alive(pid)
        assert not (ws.meta / "mounts" / f"{pid}.json").exists()
        log = (ws.meta / "logs" / f"mount-{pid}.log").read_text()
        assert "ready:" in log and "unmounted" in log
        assert (ws.root / "agents/alice/a.txt").read_text() == "through the mount"
        assert omxfs("status").stdout == "no omxfs mounts\n" or str(mnt) not in omxfs("status").stdout


def test_in_place_mount_serves_the_store_underneath(ws: Workspace) -> None:
    with background_mounts(ws.root):
        done = omxfs("mount", ws.root, "--as", "alice")
        assert done.returncode == 0, done.stderr
        pid = daemon_pid(done.stdout)
        assert os.path.ismount(ws.root)
        (ws.root / "agents/alice/made-in-place.txt").write_text("in place")
        refused = subprocess.run(
            ["bash", "-c", f"echo x > {ws.root}/agents/alice/nope"], env=clean_env("bob"), capture_output=True
        )
        assert refused.returncode != 0
        assert f"pid {pid}" in omxfs("status", ws.root).stdout  # the records live in the store, read through it
        assert omxfs("umount", ws.root).returncode == 0
        assert not os.path.ismount(ws.root)
        assert (ws.root / "agents/alice/made-in-place.txt").read_text() == "in place"  # in the directory itself
        assert not (ws.root / "agents/alice/nope").exists()


def test_a_store_mounted_in_place_is_mounted_elsewhere_too(mount: Callable[..., Mount], tmp_path: Path) -> None:
    """The README's quick start mounts in place, then mounts the extra views elsewhere: the second daemon reached
    the store through the first one's mount (alice's, read-only where it would log) and failed with an
    ExceptionGroup repr; it now serves the store beneath, reached through the first daemon's descriptor."""
    first = mount(in_place=True)
    other = tmp_path / "bob-view"
    other.mkdir()
    with background_mounts(other):
        done = omxfs("mount", first.root, other, "--as", "bob")
        assert done.returncode == 0, done.stderr
        pid = daemon_pid(done.stdout)
        (other / "agents/bob/note").write_text("bob's")  # the test names no agent: bob, that mount's default
        assert (first.disk / "agents/bob/note").read_text() == "bob's"
        assert (first.disk / META_DIR / "logs" / f"mount-{pid}.log").exists()  # its log is in the store beneath
        assert f"{other}: live, store {first.store}" in omxfs("status").stdout
        # a view of that mount binds the store beneath both mounts, not alice's mount of it
        view = omxfs("run", other, "--as", "bob", "--", "sh", "-c", "echo from-view > mine; stat -c %U mine")
        assert view.returncode == 0, view.stderr
        assert (first.disk / "agents/bob/mine").read_text() == "from-view\n"
        assert omxfs("umount", other).returncode == 0 and not pid_alive(pid)


def test_fsck_of_a_store_mounted_in_place_checks_the_store_beneath(mount: Callable[..., Mount]) -> None:
    """``omxfs fsck ws`` with ws mounted in place read the store through alice's mount: the private scratch copy
    her ``perl -pi.bak`` keeps showed as debris (exit 1), and ``--repair`` failed on the mount's read-only locks."""
    m = mount(in_place=True)
    m.run("cd collaborative/current && printf 'a\\nb\\n' > ed.md && perl -pi.bak -e s/a/A/ ed.md", check=True)
    for args in ((), ("--repair",)):
        done = omxfs("fsck", *args, m.root)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "debris" not in done.stdout and "0 corrupt, 0 unresolved" in done.stdout


def test_a_second_mount_on_the_same_mountpoint_is_a_one_line_error(mount: Callable[..., Mount]) -> None:
    m = mount()
    line = one_line_error(omxfs("mount", m.store, m.root, "--as", "alice"))
    assert f"{m.root} is already an omxfs mount" in line and "omxfs umount" in line


def test_a_stale_mount_says_what_to_do_and_umount_cleans_it(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.kill(signal.SIGKILL)
    assert mounts.probe(str(m.root)) is mounts.State.STALE
    line = one_line_error(omxfs("mount", m.store, m.root, "--as", "alice"))
    assert "stale mount" in line and f"omxfs umount {m.root}" in line
    assert f"{m.root}: stale (its daemon died): run `omxfs umount {m.root}`" in omxfs("status").stdout
    assert "stale mount" in one_line_error(omxfs("status", m.root))
    done = omxfs("umount", m.root)
    assert done.returncode == 0, done.stderr
    assert not os.path.ismount(m.root)
    with background_mounts(m.root):  # and the mountpoint is usable again
        assert omxfs("mount", m.store, m.root, "--as", "bob").returncode == 0
        assert omxfs("umount", m.root).returncode == 0


def test_a_mount_whose_daemon_does_not_answer_is_reported_not_waited_on(mount: Callable[..., Mount]) -> None:
    """``omxfs status`` probed every mount with a statfs of its own and waited for good on a daemon that did not
    answer (CI hung on another process's stopped daemon): a mount that does not answer within the probe's time is
    reported as such, and ``omxfs umount`` still unmounts it."""
    m = mount()
    poll(lambda: "ready:" in m.log(), what="the daemon to finish starting")  # it answers a moment before
    os.kill(m.proc.pid, signal.SIGSTOP)
    try:
        listing = omxfs("status")
        assert f"{m.root}: not answering within" in listing.stdout and f"omxfs umount {m.root}" in listing.stdout
        assert "does not answer" in one_line_error(omxfs("status", m.root))
        assert "does not answer" in one_line_error(omxfs("mount", m.store, m.root, "--as", "alice"))
        done = omxfs("umount", m.root)
        assert done.returncode == 0, done.stderr
        assert not os.path.ismount(m.root)
    finally:
        os.kill(m.proc.pid, signal.SIGCONT)
    assert m.proc.wait(DEADLINE) == 0  # it learns of the unmount once it runs again, and ends cleanly
    m.unmounted = True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_unmounts_cleanly(mount: Callable[..., Mount], signum: int) -> None:
    m = mount()
    m.path("agents/alice/kept.txt").write_text("kept")
    m.proc.send_signal(signum)
    assert m.proc.wait(DEADLINE) == 0
    m.unmounted = True
    assert not os.path.ismount(m.root)
    assert (m.store / "agents/alice/kept.txt").read_text() == "kept"
    assert "unmounted" in m.log()


def test_umount_flushes_and_waits_for_the_daemon(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.path("agents/alice/a.txt").write_text("a")
    done = omxfs("umount", m.root)
    assert done.returncode == 0, done.stderr
    assert m.proc.poll() == 0  # exited already: umount waited for it
    m.unmounted = True


def test_umount_of_a_busy_mount_says_what_to_do(mount: Callable[..., Mount]) -> None:
    m = mount()
    with open(m.path("agents/alice/open.txt"), "w") as held:
        line = one_line_error(omxfs("umount", m.root))
        assert "is busy" in line and "--lazy" in line
        held.write("still writable")
    assert omxfs("umount", m.root).returncode == 0
    m.unmounted = True
    assert (m.store / "agents/alice/open.txt").read_text() == "still writable"


def test_umount_of_a_plain_directory_is_an_error(tmp_path: Path) -> None:
    assert "is not mounted" in one_line_error(omxfs("umount", tmp_path))


def test_status_of_a_mount_shows_its_identity_and_last_errors(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.run("echo x > agents/alice/no", agent="bob")
    poll(lambda: "errno=EACCES" in m.log(), what="the refusal in the log")
    done = omxfs("status", m.root)
    assert done.returncode == 0, done.stderr
    assert f"{m.root}: default agent alice, pid {m.proc.pid}" in done.stdout
    assert "agent=bob op=" in done.stdout and "errno=EACCES" in done.stdout


# -- one-line errors before anything is mounted --------------------------------------------------------------


def test_missing_dev_fuse(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mounts, "FUSE_DEVICE", tmp_path / "no-fuse")
    (tmp_path / "mnt").mkdir()
    result = CliRunner().invoke(main, ["mount", str(ws.root), str(tmp_path / "mnt"), "--as", "alice"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        f"Error: cannot mount: FUSE is not available ({tmp_path / 'no-fuse'} is missing): load it with "
        "`modprobe fuse`, or give a container `--device /dev/fuse --cap-add SYS_ADMIN`"
    ]
    with pytest.raises(MountError, match="FUSE is not available"):
        mounts.check_fuse(tmp_path / "no-fuse")
    not_a_device = tmp_path / "fuse"
    not_a_device.write_text("")
    with pytest.raises(MountError, match="FUSE is not available"):
        mounts.check_fuse(not_a_device)


def test_missing_fusermount3(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "mnt").mkdir()
    (tmp_path / "empty-bin").mkdir()
    env = {**clean_env(), "PATH": str(tmp_path / "empty-bin")}
    line = one_line_error(omxfs("mount", ws.root, tmp_path / "mnt", "--as", "alice", env=env))
    assert "fusermount3 is not on PATH" in line and "apt-get install fuse3" in line
    with pytest.raises(MountError, match="fusermount3 is not on PATH"):
        mounts.check_fuse(search_path=str(tmp_path / "empty-bin"))


def test_missing_pyfuse3(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyfuse3", None)  # what `import pyfuse3` does on macOS: ImportError
    result = CliRunner().invoke(main, ["mount", str(ws.root), "--as", "alice"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert "pyfuse3 is not available" in result.output and "without mounting" in result.output


def test_not_a_workspace_unknown_agent_missing_mountpoint(ws: Workspace, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "is not an omx workspace" in one_line_error(omxfs("mount", plain, "--as", "alice"))
    line = one_line_error(omxfs("mount", ws.root, "--as", "mallory"))
    assert "agent 'mallory' is not in the workspace" in line and "--as NAME" in line
    line = one_line_error(omxfs("mount", ws.root, tmp_path / "nowhere", "--as", "alice"))
    assert "does not exist" in line


def test_mount_table_parsing(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
        "42 27 0:39 / /tmp/with\\040space rw,nosuid - fuse.omxfs omxfs rw,user_id=0\n"
        "43 27 0:40 / /mnt/other rw - fuse.sshfs host:/ rw\n"
    )
    assert mounts.omx_mounts(info) == ["/tmp/with space"]
    assert [e.fstype for e in mounts.mount_table(info)] == ["proc", "fuse.omxfs", "fuse.sshfs"]


def test_a_killed_daemon_dies_at_once(mount: Callable[..., Mount]) -> None:
    """kill -9 right after mounting: a daemon that made requests to its own mount would leave a thread stuck."""
    for _ in range(5):
        m = mount()
        m.kill(signal.SIGKILL)  # waits for the exit, with a deadline
        assert m.proc.returncode == -signal.SIGKILL
