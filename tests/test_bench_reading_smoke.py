"""``scripts/bench_reading.py`` with a scripted model (no real model in CI): each task's true outputs come from its
reference solution, and the script reports the model's reading, the rules' and what omx acts on, right or not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_reading.py"


def reading(outputs: list[str]) -> dict[str, object]:
    content = {"inputs": [], "outputs": outputs, "kind": "exact", "shape": "number", "count": None, "max_words": None}
    return {"for": "TaskReading", "content": json.dumps(content)}


@pytest.mark.parametrize(
    ("outputs", "mark", "right"),
    [(["out/count.txt"], "ok", 1), ([], "--", 0)],  # the second names no output: omx acts on nothing
)
def test_a_right_and_a_wrong_reading_are_told_apart(tmp_path: Path, outputs: list[str], mark: str, right: int) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([reading(outputs)]), encoding="utf-8")
    saved = tmp_path / "readings.json"
    command = [sys.executable, str(SCRIPT), "--model", f"scripted:{replies}", "--only", "count_lines", "--json",
               str(saved)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{mark} count_lines" in done.stdout
    assert f"outputs read right by the model {right}, by the rules 1, acted on right {right}" in done.stdout
    # exact work needs the one output omx acts on: the reading of none leaves it none
    assert f"taken as exact work {right};" in done.stdout
    (row,) = json.loads(saved.read_text(encoding="utf-8"))
    assert row["truth"] == ["out/count.txt"] and row["model"] == outputs and row["exact"] is bool(right)
