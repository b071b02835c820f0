"""``scripts/demo_team.sh`` runs as written: three omx agents on a fresh mount, a handoff, a real conflict that the
analyst recovers from, a realtime board edited at once, and a clean unmount (issue 6's "done when")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_team_demo_runs_end_to_end_and_leaves_nothing_mounted(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"} | {"TMPDIR": str(tmp_path)}
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "demo_team.sh")], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "conflict: report.md was at version 2 (by writer); merged and committed version 3" in out
    assert '"provenance"' in out and "by omx run agents/analyst/runs/" in out  # version -> run and step
    assert '"done": 3' in out  # three agents each counted one task done on the board
    with open("/proc/self/mounts") as mounts:
        assert str(tmp_path) not in mounts.read()
    assert list(tmp_path.iterdir()) == []  # the demo removes its workspace unless KEEP=1
