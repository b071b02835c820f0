"""A step of ``omx --as NAME`` (in NAME's view, confined by Landlock and the step filter) makes no set-ID file, in a
view started by root (whose own filter refuses set-ID modes too) and in one started by an unprivileged user (where
the step filter alone does). The ways are plain Python's from ``tests/agent/sandbox/test_set_id.py`` (ctypes makes a
plan HIGH risk, refused), judged by the zone's files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omxfs.store import Workspace
from tests.agent.sandbox.test_set_id import SET_ID_PLAIN, assert_refused
from tests.e2e.helpers import PLAN_A
from tests.support.unprivileged import NOBODY, as_nobody, nobody_dir
from tests.view.conftest import OMX, OMXFS, clean_env, run_from_root, run_omx_as

#: the ways, tried in the agent's zone; what each did is written to out.json there
IN_ZONE = "import os\nos.chdir('agents/{agent}')\n{code}\nopen('out.json', 'w').write(json.dumps(out))\n"


def replies(zone: Path, agent: str) -> Path:
    code = IN_ZONE.format(agent=agent, code=SET_ID_PLAIN)
    plan = {**PLAN_A, "risk_level": "MEDIUM", "success_criteria": [],
            "steps": [{"id": 1, "description": "modes", "tool": "python", "inputs": {"code": code}}]}  # fmt: skip
    path = zone / "replies.json"
    path.write_text(json.dumps([json.dumps(plan)]), encoding="utf-8")
    return path


def outcome(zone: Path, done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    said = done.stdout + done.stderr
    assert "Sandbox: landlock" in said, said  # in the view: Landlock and the step filter, no bwrap
    assert (zone / "out.json").is_file(), said  # confirmed: the step ran
    out: dict[str, Any] = json.loads((zone / "out.json").read_text(encoding="utf-8"))
    return out


def test_a_step_in_a_root_view_makes_no_set_id_file(store: Workspace) -> None:
    if os.geteuid() != 0:
        pytest.skip("a view started by root")
    zone = store.root / "agents/bob"
    done = run_omx_as("bob", store.root, "modes", replies(zone, "bob"))
    assert_refused(outcome(zone, done), zone, raw=False)


@pytest.fixture
def home() -> Iterator[Path]:
    path = nobody_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_step_in_an_unprivileged_view_makes_no_set_id_file(tmp_path: Path, home: Path) -> None:
    """nobody's view refuses no mode of its own (a set-ID file of nobody's gives nothing nobody lacks); the step
    filter refuses them anyway, for every user."""
    if os.geteuid() != 0:
        pytest.skip("becoming nobody needs root")
    ws = home / "ws"
    init = run_from_root(as_nobody([*OMXFS, "init", str(ws), "--agent", "alice"], tmp_path))
    assert init.returncode == 0, init.stderr
    zone = ws / "agents/alice"
    scripted = replies(zone, "alice")
    os.chown(scripted, NOBODY, NOBODY)
    argv = [str(OMX), "modes", "--as", "alice", "-w", str(ws), "--model", f"scripted:{scripted}"]
    done = subprocess.run(as_nobody(argv, tmp_path), input="y\n", capture_output=True, text=True, timeout=120,
                          env=clean_env(), cwd="/", check=False)  # fmt: skip
    assert_refused(outcome(zone, done), zone, raw=False)
    assert (zone / "plain").stat().st_uid == NOBODY  # the step was nobody's
