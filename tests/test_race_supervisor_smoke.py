"""``scripts/race_supervisor.py --tries 2`` on three commands: a line per command with its counts, then one JSON
line of them, exit 0 when every try held, and nothing left behind (its workspaces, mounts and attackers). Which
commands hold is the hostile-agent tests' to say (tests/hostile/); these three hold on any checkout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.scripts import run_bench

COMMANDS = ("discard", "restore-zone", "undo-checkpoint")


def test_race_supervisor_runs_a_few_tries_of_each_command_and_counts_them(tmp_path: Path) -> None:
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("the race runs as root with /dev/fuse (as CI does)")
    args = ["--tries", "2", "--files", "50"]
    for command in COMMANDS:
        args += ["--command", command]
    code, out, err = run_bench("race_supervisor", *args, workdir=tmp_path, timeout=300)
    assert code == 0, out + err
    lines = out.strip().splitlines()
    counted = [line for line in lines if line.startswith(COMMANDS)]
    assert [line.split(":")[0] for line in counted] == list(COMMANDS)
    assert all("2 tries" in line and "0 canary changes" in line for line in counted), counted
    report = json.loads(lines[-1])
    assert [r["command"] for r in report] == list(COMMANDS)
    assert all(r["tries"] == 2 and r["canary_changes"] == 0 and r["held"] for r in report)
    assert report[1]["landed"] == 2  # the restore raced by a flipping attacker: each try's attack landed
    assert list(tmp_path.iterdir()) == []
