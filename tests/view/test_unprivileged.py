"""Views as an unprivileged user (issue 14): ``nobody`` builds a view with user namespaces alone, end to end."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from omxfs.store import Workspace
from omxfs.store.config import Config, render_config
from omxfs.store.layout import CONFIG
from tests.support.unprivileged import NOBODY, as_nobody, nobody_dir
from tests.view.conftest import OMXFS, clean_env


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    path = nobody_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def nobody(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        as_nobody(list(argv), tmp_path), capture_output=True, text=True, timeout=60, env=clean_env(), cwd="/"
    )


def test_a_view_as_an_unprivileged_user_works_end_to_end(tmp_path: Path, home: Path) -> None:
    ws = home / "ws"
    init = nobody(tmp_path, *OMXFS, "init", str(ws), "--agent", "alice", "--agent", "bob")
    assert init.returncode == 0, init.stderr
    script = (
        f"id -u; echo mine > {ws}/agents/alice/notes.md; echo v1 > {ws}/collaborative/current/plan.md; "
        f"echo x > {ws}/agents/bob/f 2>/dev/null || echo bob-refused; "
        "grep CapEff /proc/self/status; exit 3"
    )
    done = nobody(tmp_path, *OMXFS, "run", str(ws), "--as", "alice", "--", "sh", "-c", script)
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == str(NOBODY) and "bob-refused" in lines and "CapEff:\t0000000000000000" in lines
    store = Workspace(ws)
    assert (ws / "agents/alice/notes.md").read_text() == "mine\n"
    assert (ws / "agents/alice/notes.md").stat().st_uid == NOBODY  # written natively, by the user itself
    assert [v.author for v in store.collab.history("plan.md")] == ["alice"]


def test_a_name_the_uid_map_binds_cannot_be_taken_by_another_uid(tmp_path: Path, home: Path) -> None:
    ws = home / "ws"
    assert nobody(tmp_path, *OMXFS, "init", str(ws), "--agent", "alice", "--agent", "bob").returncode == 0
    store = Workspace(ws)
    config = Config(agents=("alice", "bob"), uids={1001: "alice"})
    store.writer.write(store.meta, CONFIG, render_config(config).encode("utf-8"))
    refused = nobody(tmp_path, *OMXFS, "run", str(ws), "--as", "alice", "--", "true")
    assert refused.returncode == 1
    assert "binds alice to uid 1001" in refused.stderr and "Traceback" not in refused.stderr
    assert nobody(tmp_path, *OMXFS, "run", str(ws), "--as", "bob", "--", "true").returncode == 0


KILLED = """
{OMXFS} run {ws} --as alice -- sh -c 'echo started; exec sleep 4713.5' > {ws}/../out &
launcher=$!
i=0; until grep -q started {ws}/../out; do i=$((i+1)); [ $i -lt 600 ] || exit 9; sleep 0.1; done
view=$(grep omxfs-view- /proc/self/mounts | cut -d' ' -f2)
[ -n "$view" ] || exit 8
kill -9 $launcher
i=0; while grep -q omxfs-view- /proc/self/mounts; do i=$((i+1)); [ $i -lt 300 ] || break; sleep 0.1; done
grep omxfs-view- /proc/self/mounts || echo no-mount
[ -e "$view" ] && echo "left $view" || echo no-directory
"""


def test_a_killed_unprivileged_view_leaves_no_stale_mount(tmp_path: Path, home: Path) -> None:
    """Issue 14: fusermount3's auto_unmount did nothing for a user's mount (libfuse 1491: setuid fusermount3 cannot
    open it to check it), so a view killed with SIGKILL left its daemon's mount in the host's table, ENOTCONN."""
    ws = home / "ws"
    assert nobody(tmp_path, *OMXFS, "init", str(ws), "--agent", "alice").returncode == 0
    script = KILLED.replace("{OMXFS}", " ".join(OMXFS)).replace("{ws}", str(ws))
    done = nobody(tmp_path, "sh", "-c", script)  # in the namespace nobody runs in: its mounts are there
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["no-mount", "no-directory"], done.stdout + done.stderr
