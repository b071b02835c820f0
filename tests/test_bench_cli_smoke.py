"""``scripts/bench_cli.py --repeat 1`` times every command against its yardstick and prints a row and a ratio for
each, then one JSON line with the same figures. Only the shape is checked, never a time."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
YARDSTICK = ("python -c pass", "git add -A && git commit (10 files)")
COMMANDS = (
    "omxfs --help",
    "omx --help",
    "omxfs checkpoint (10 changed files)",
    "omxfs diff (10 changed files)",
    "omxfs checkpoints",
    "omxfs status WS",
    "omxfs log (2 versions)",
    "omxfs audit",
)


def test_bench_cli_prints_every_command_with_its_ratio(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is the yardstick and is not installed")
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "bench_cli.py"),
            "--repeat",
            "1",
            "--files",
            "20",
            "--dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    *table, last = done.stdout.strip().splitlines()
    report = json.loads(last)
    assert set(report["median_ms"]) == {*YARDSTICK, *COMMANDS}
    assert all(ms > 0 for ms in report["median_ms"].values())
    assert set(report["ratios"]) == set(report["cpu_ratios"]) == set(COMMANDS)
    yardstick = report["median_ms"][YARDSTICK[0]] + report["median_ms"][YARDSTICK[1]]
    assert report["yardstick_ms"] == pytest.approx(yardstick, abs=0.11)
    for name in COMMANDS:  # the ratio is the median over the yardstick, computed before either was rounded
        ratio = report["median_ms"][name] / report["yardstick_ms"]
        rounding = (0.05 + ratio * 0.05) / report["yardstick_ms"] + 0.005  # each 0.05 ms off, the ratio 0.005 off
        assert report["ratios"][name] == pytest.approx(ratio, abs=rounding + 1e-9)
        row = next(line for line in table if line.startswith(name))
        assert f"{report['ratios'][name]:.2f}" in row.split()
    assert any(line.startswith("yardstick (their sum)") for line in table)
    assert list(tmp_path.iterdir()) == []  # its scratch workspace and repository are removed
