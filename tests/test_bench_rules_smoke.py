"""``scripts/bench_rules.py`` on two tuning tasks: a count's value check and a summary's bullets (a form) are found,
counted apart, and judged met on each task's reference solution."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_rules.py"


def test_a_value_check_and_a_form_check_are_counted_apart() -> None:
    command = [sys.executable, str(SCRIPT), "--part", "tuning", "--only", "count_lines", "--only", "sum_notes_3",
               "--verbose"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tuning: 2 tasks; form checks 1 (in 1 tasks), value checks 1 (in 1 tasks)" in done.stdout
    assert "count_lines              met          out/count.txt holds just the number of lines" in done.stdout
    assert "not met on the reference solution: 0" in done.stdout
