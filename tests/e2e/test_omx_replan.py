"""Issue 28: after a failed step omx shows the model what ran and the error, and runs its new plan, at most twice;
each new plan is shown and confirmed by the same risk rules as the first, and the trace keeps every plan. Scripted
model, real files, the real omx command in process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.model.llm import ScriptedModel
from tests.e2e.helpers import omx, only_run, run_end, trace_of


def plan(steps: list[tuple[str, dict[str, Any]]], risk: str = "LOW") -> str:
    numbered = [{"id": i, "description": tool, "tool": tool, "inputs": inputs} for i, (tool, inputs) in
                enumerate(steps, 1)]  # fmt: skip
    return json.dumps({"version": 1, "goal": "count", "risk_level": risk, "workspace_root": ".", "steps": numbered,
                       "success_criteria": []})  # fmt: skip


READ_DIR = plan([("read_text", {"path": "src"}), ("write_text", {"path": "out/n.txt", "content": "?"})])
LIST_THEN_WRITE = plan([("list_dir", {"path": "src"}), ("write_text", {"path": "out/n.txt", "content": "2\n"})])
TASK = "Count the files in src/ and write just the number to out/n.txt"


def test_a_failed_step_is_followed_by_a_new_plan_that_finishes_the_task(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    (ws / "src").mkdir()
    for name in ("a.py", "b.py"):
        (ws / "src" / name).write_text("x = 1\n")
    model = script(READ_DIR, LIST_THEN_WRITE)
    result = omx(TASK, "--yes")
    assert result.exit_code == 0, result.output
    assert "Step 1 failed: src is a directory" in result.output and "Re-planning (1 of at most 2)" in result.output
    assert "Result: success" in result.output and (ws / "out/n.txt").read_text() == "2\n"
    replan_request = model.requests[1]["messages"][-1]["content"]
    assert "step 1 (read_text): failed: src is a directory" in replan_request and "list_dir" in replan_request
    trace = trace_of(only_run(ws))
    (replan,) = [e for e in trace if e.get("event") == "replan"]
    assert replan["data"]["failed_step"] == 1 and replan["data"]["plan"]["steps"][0]["tool"] == "read_text"
    assert [e["event"] for e in trace if e.get("event") in ("plan", "end")] == ["plan", "plan", "end"]
    assert run_end(trace)["status"] == "success"
    replayed = omx("replay", str(only_run(ws)))
    assert "re-plan 1: step 1 failed: src is a directory" in replayed.output
    assert "the failed plan: 1. read_text, 2. write_text" in replayed.output


def test_re_plans_are_bounded(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    (ws / "src").mkdir()
    model = script(READ_DIR, READ_DIR, READ_DIR)
    result = omx(TASK, "--yes")
    assert result.exit_code == 1, result.output
    assert "Re-planning (2 of at most 2)" in result.output and "Re-planning (3" not in result.output
    assert "Result: failed at step 1" in result.output and len(model.requests) == 3
    assert [e["event"] for e in trace_of(only_run(ws)) if e.get("event") == "end"] == ["end"]


def test_a_new_plan_is_confirmed_by_the_same_rules_and_a_high_one_refused(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "keep.py").write_text("x = 1\n")
    delete = plan([("shell", {"cmd": "rm src/keep.py"})], risk="LOW")
    script(READ_DIR, delete)
    result = omx(TASK, "--yes")
    assert result.exit_code == 3, result.output  # refused: HIGH, whatever the plan called itself
    assert "refused: the plan is HIGH risk" in result.output and (ws / "src/keep.py").exists()
