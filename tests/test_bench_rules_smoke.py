"""``scripts/bench_rules.py`` on two tuning tasks: a count's "just the number" and a summary's bullets are found as
forms (the rules compute no value), counted, and judged met on each task's reference solution."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_rules.py"


def test_the_rules_checks_are_forms_met_by_the_reference_solutions() -> None:
    command = [sys.executable, str(SCRIPT), "--part", "tuning", "--only", "count_lines", "--only", "sum_notes_3",
               "--verbose"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tuning: 2 tasks; form checks 2 (in 2 tasks); not met on the reference solution: 0" in done.stdout
    assert "count_lines              met          out/count.txt holds just a number (from the task)" in done.stdout
    assert "sum_notes_3              met          out/summary.md has 3 bullet lines (from the task)" in done.stdout
