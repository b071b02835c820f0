"""``scripts/bench_checkpoint.py --small --repeat 1 --profile`` runs every measure against git, prints its table,
the profiles of the incremental checkpoint and the diff, and one JSON line with a time for each (issue 27, "Speed
and size"). Only shapes are checked, never a time; the size is: an incremental checkpoint adds exactly the changed
files' bytes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_checkpoint.py"
TIMES = {
    "first_checkpoint",
    "git_first_commit",
    "incremental_checkpoint",
    "git_incremental_commit",
    "view_start_checkpoint_10_changed",
    "view_start_checkpoint_unchanged",
    "diff_10_changed",
    "git_status_and_diff",
    "lstat_every_entry",
    "restore_10_paths",
    "git_checkout_10_paths",
}


def test_bench_checkpoint_runs_tiny_and_reports_every_measure(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is the yardstick and is not installed")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--small", "--repeat", "1", "--profile", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    report = json.loads(lines[-1])
    assert set(report["best"]) >= TIMES and all(report["best"][key] > 0 for key in TIMES)
    assert set(report["ratios"]) == {
        "first checkpoint / git first commit",
        "incremental checkpoint / git commit",
        "diff / git status && git diff",
        "restore 10 paths / git checkout",
        "lstat of every entry / git status && diff",
    }
    assert set(report["median_ratios"]) == set(report["ratios"])  # each round's own ratio, their median
    assert report["bytes_ratio"] == 1.0  # the ten files' new contents, nothing else
    assert any(line.startswith("incremental checkpoint / git commit") for line in lines)
    # --profile: where the incremental checkpoint, the diff and the restore spent their time
    profiles = done.stdout.split("--- ")[1:]
    assert [p.split(",")[0] for p in profiles] == ["incremental", "diff", "restore"]
    assert "scan.py" in profiles[0] and "scan.py" in profiles[1] and "restore.py" in profiles[2]
    assert list(tmp_path.iterdir()) == []  # its work directory is removed
