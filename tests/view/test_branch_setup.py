"""A branch's overlay is mounted before its view starts by no process of its own (``omxfs/view/review_mount.py``):
by a root launcher in its own mount namespace, and for an unprivileged one by the view's first process, between its
fork and its exec, in a user namespace of its own. A mount the kernel refuses ends the run in one line that names
the overlay and the reason, and the command never runs; an unprivileged branch view is held to its process limit
with the uid's other processes counted, as a plain view is, though its namespace is made before the limit is set.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omxfs.checkpoints.review import Review
from omxfs.store import Workspace
from tests.checkpoints.conftest import OMXFS
from tests.support.unprivileged import NOBODY, as_nobody, nobody_dir
from tests.view.conftest import clean_env, run_view

#: forks until the kernel refuses (each child waits), then prints how many it made
FORKS = """import os, sys
made = 0
while made < 500:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.pause()
        os._exit(0)
    made += 1
print(made)
"""


@pytest.fixture
def home() -> Iterator[Path]:
    path = nobody_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _nobody(scratch: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        as_nobody(list(argv), scratch), capture_output=True, text=True, timeout=120, env=clean_env(), cwd="/"
    )


def _break_work_dir(ws: Path, branch: str) -> Path:
    """The branch's overlay work directory made a file, which the kernel refuses (ENOTDIR); its upper layer."""
    review = Review(Workspace(ws), "alice", branch)
    shutil.rmtree(review.work)
    review.work.write_text("")
    return review.upper


def _assert_refused_in_one_line(done: subprocess.CompletedProcess[str], ws: Path, upper: Path) -> None:
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    # what nobody's run says of its limits (no cgroup of its own here) aside, one line
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("omxfs run: no cgroup")]
    assert len(lines) == 1, done.stderr
    # the kernel's reason: EINVAL or ENOTDIR, as the version and the namespace have it
    assert f"cannot mount the branch's overlay of {ws.resolve()}/agents/alice: " in lines[0], lines
    assert "Invalid argument" in lines[0] or "Not a directory" in lines[0], lines
    assert "needs overlayfs" in lines[0], lines
    assert not (ws / "agents/alice/ran.md").exists() and not (upper / "ran.md").exists()  # the command never ran


def test_a_refused_overlay_ends_a_root_run_in_one_line_before_its_command(store: Workspace) -> None:
    ws = store.root
    first = run_view(ws, "alice", "echo kept > kept.md", "--branch", "b")
    assert first.returncode == 0, first.stderr
    upper = _break_work_dir(ws, "b")
    _assert_refused_in_one_line(run_view(ws, "alice", "echo ran > ran.md", "--branch", "b"), ws, upper)
    assert (upper / "kept.md").read_text() == "kept\n"  # the branch is kept as it was


def test_a_refused_overlay_ends_an_unprivileged_run_in_one_line_before_its_command(tmp_path: Path, home: Path) -> None:
    ws = home / "ws"
    assert _nobody(tmp_path, *OMXFS, "init", str(ws), "--agent", "alice").returncode == 0
    run = [*OMXFS, "run", str(ws), "--as", "alice", "--branch", "b", "--", "sh", "-c"]
    first = _nobody(tmp_path, *run, "echo kept > kept.md")
    assert first.returncode == 0, first.stderr
    upper = _break_work_dir(ws, "b")
    _assert_refused_in_one_line(_nobody(tmp_path, *run, "echo ran > ran.md"), ws, upper)


def test_an_unprivileged_branch_view_counts_the_uids_other_processes_against_its_process_limit(
    tmp_path: Path, home: Path
) -> None:
    """Where no cgroup can hold a view's processes (nobody makes none here), ``RLIMIT_NPROC`` does: the limit plus
    the uid's processes at the start, all of the uid's processes counted. The kernel counts them in each user
    namespace and holds each namespace to the limit its maker had when it made it: a branch's namespace made
    before the limit was set would let the view make as many more processes as the uid ran elsewhere."""
    ws = home / "ws"
    assert _nobody(tmp_path, *OMXFS, "init", str(ws), "--agent", "alice").returncode == 0
    elsewhere = [
        subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sleep", "120"])
        for _ in range(60)
    ]
    try:
        script = f'exec "{sys.executable}" -c "$1"'
        argv = [*OMXFS, "run", str(ws), "--as", "alice", "--branch", "b", "--max-procs", "30", "--"]
        done = _nobody(tmp_path, *argv, "sh", "-c", script, "sh", FORKS)
    finally:
        for sleeper in elsewhere:
            sleeper.kill()
            sleeper.wait()
    assert done.returncode == 0, done.stderr
    made = int(done.stdout)
    assert 15 <= made <= 30, f"{made} processes made under --max-procs 30, 60 more of the uid's running elsewhere"
