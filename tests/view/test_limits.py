"""A view's limits, through real ``omxfs run`` processes: a fork bomb and a memory hog are held in the view while the
host still answers, a file stops at its size, none of it can be lifted from inside, and ``omxfs status`` shows
them (from the command line, else the workspace's config)."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from omxfs.cgroups import holder
from omxfs.limits import Limits
from omxfs.store import Workspace
from omxfs.store.config import render_config
from omxfs.store.layout import CONFIG
from tests.fuse.conftest import clean_env, poll
from tests.test_limits import BOMB
from tests.view.conftest import OMXFS, run_view, view_argv

MIB = 1 << 20


@pytest.fixture(autouse=True)
def cgroups() -> None:
    if os.geteuid() != 0 or not holder(Limits(1, 1)).startswith("cgroup"):
        pytest.skip("no pids and memory cgroups this process can make (CI runs as root on cgroup v1)")


@contextmanager
def view(store: Workspace, script: str, *options: str) -> Iterator[subprocess.Popen[str]]:
    """A running view of alice's that runs ``script`` with stdin, stdout and stderr as pipes; given a line at the
    end, which ends a script that waits for one."""
    proc = subprocess.Popen(
        view_argv(store.root, "alice", script, *options),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        cwd=store.root.parent,
    )
    try:
        yield proc
    finally:
        try:
            proc.communicate("\n", timeout=30)  # ends a script waiting for a line
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def status(store: Workspace) -> str:
    done = subprocess.run([*OMXFS, "status", str(store.root)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_fork_bomb_in_a_view_is_held_at_its_limit_and_the_host_answers(store: Workspace) -> None:
    script = f'exec "{sys.executable}" -c "$1"'  # the bomb, as the shell's first argument
    argv = view_argv(store.root, "alice", script, "--max-procs", "40", args=["sh", BOMB])
    bomb = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()
    )
    try:
        assert bomb.stdout is not None
        held = bomb.stdout.readline()
        assert held.startswith("held ") and "Resource temporarily unavailable" in held, held
        count = int(held.split()[1].rstrip(":"))
        assert 25 <= count < 40, held  # bwrap's two, the shell that exec'd python, python: 40 in all at most
        shown = status(store)  # while the bomb holds its children: the host starts processes as ever
        assert "alice: launcher pid" in shown and "40 processes (" in shown, shown
        now = int(shown.split("40 processes (")[1].split()[0])
        assert count < now <= 40, shown
        _, err = bomb.communicate("\n", timeout=60)
    finally:
        if bomb.poll() is None:
            bomb.kill()
            bomb.communicate()
    assert bomb.returncode == 1, err
    assert "omxfs run: stopped: the view reached its limit of 40 processes (--max-procs)" in err, err


def test_a_memory_hog_in_a_view_is_killed_and_the_message_names_the_limit(
    store: Workspace, ok: Callable[[subprocess.CompletedProcess[str], int], str]
) -> None:
    hog = f'"{sys.executable}" -c "b = bytearray(256 << 20); print(\'survived\')"'
    done = run_view(store.root, "alice", f"exec {hog}", "--max-memory", "64M")
    assert "survived" not in ok(done, 137)
    assert "stopped: the view reached its limit of 64 MiB of memory (--max-memory)" in done.stderr, done.stderr
    assert subprocess.run(["true"], check=False).returncode == 0


def test_a_file_in_a_view_stops_at_its_size_and_the_limit_cannot_be_lifted(
    store: Workspace, ok: Callable[[subprocess.CompletedProcess[str], int], str]
) -> None:
    done = run_view(store.root, "alice", "head -c 3M /dev/zero > big", "--max-file-size", "1M")
    ok(done, 128 + 25)  # head was killed by SIGXFSZ, as outside a view
    assert (store.root / "agents/alice/big").stat().st_size == MIB
    assert "stopped: the view reached its limit of 1 MiB per file (--max-file-size)" in done.stderr, done.stderr
    lift = (
        f'"{sys.executable}" -c "import resource as r; r.setrlimit(r.RLIMIT_FSIZE, (r.RLIM_INFINITY,) * 2)"; '
        "echo $$ > /sys/fs/cgroup/pids/cgroup.procs; echo $$ > /sys/fs/cgroup/memory/cgroup.procs; "
        'echo "pids $(cat /sys/fs/cgroup/pids/pids.max 2>&1)"'
    )
    done = run_view(store.root, "alice", lift, "--max-file-size", "1M", "--max-procs", "64")
    assert "not allowed to raise maximum limit" in done.stderr, done.stderr
    assert done.stderr.count("Read-only file system") == 2, done.stderr  # the host's cgroups: read-only in a view


def test_a_view_takes_its_limits_from_the_workspace_config_and_the_command_line_first(store: Workspace) -> None:
    config = store.config
    limited = type(config)(config.agents, config.supervisors, dict(config.uids), Limits(77, 96 * MIB, 2 * MIB))
    store.writer.write(store.meta, CONFIG, render_config(limited).encode("utf-8"))
    with view(store, "grep 'Max file size' /proc/self/limits; read line") as proc:
        assert proc.stdout is not None
        limits = proc.stdout.readline()
        assert limits.split()[3:5] == [str(2 * MIB), str(2 * MIB)], limits  # soft and hard
        shown = status(store)
        assert "limits: 77 processes (" in shown and "96 MiB of memory (" in shown, shown
        assert "2 MiB per file (cgroup v1 (pids, memory); setrlimit (file size))" in shown, shown
    with view(store, "read line", "--max-procs", "55"):
        poll(lambda: "55 processes (" in status(store), 30, "the view's limits in omxfs status")
        assert "96 MiB of memory" in status(store)


def test_a_view_without_options_has_the_default_limits(store: Workspace) -> None:
    done = run_view(store.root, "alice", "grep 'Max file size' /proc/self/limits")
    assert done.returncode == 0 and str(16 << 30) in done.stdout, done.stdout + done.stderr


def test_the_dashboard_shows_a_running_views_limits(store: Workspace) -> None:
    from tests.ui.conftest import start_ui

    def team_page() -> str:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        cookie = f"omxfs-ui-{server.port}={server.token}"
        connection.request("GET", "/team", headers={"Host": f"127.0.0.1:{server.port}", "Cookie": cookie})
        page = connection.getresponse().read().decode()
        connection.close()
        return page

    server = start_ui(store.root, "--as", "boss")
    try:
        with view(store, "read line", "--max-procs", "33", "--max-memory", "200M"):
            poll(lambda: "limits: 33 processes" in team_page(), 30, "the view's limits on the team page")
            page = team_page()
            assert "limits: 33 processes (" in page and "200 MiB of memory (" in page, page
        assert "limits: 33 processes" not in team_page()  # gone with the view
    finally:
        server.stop()
