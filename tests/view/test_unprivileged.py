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
