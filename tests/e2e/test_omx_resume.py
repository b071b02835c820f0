"""``omx run PLAN --from-step N`` (issue 17): after a failed step is fixed, the plan resumes there; the steps before
it are not run again and later steps get the outputs that run saved."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from agent.model.llm import LLMError, ScriptedModel
from tests.e2e.helpers import NOTES, PLAN_A, SUMMARY, TASK_A, kinds, omx, run_end, trace_of


def failed_run(ws: Path, script: Callable[..., ScriptedModel]) -> Path:
    """Case A whose llm step meets a server error: step 1 ran and saved its output, step 2 failed."""
    script(json.dumps(PLAN_A), LLMError("LLM error: openai/x failed (HTTP 500): crashed", kind="server"))
    result = omx(TASK_A, "--yes")
    assert result.exit_code == 1
    (run_dir,) = sorted((ws / "runs").iterdir())
    plan = run_dir / "plan.json"
    assert f"Next: the model's server failed, not the task: run it again when the server is back: omx run {plan} " \
        "--from-step 2" in result.output  # fmt: skip
    assert (run_dir / "outputs" / "1.txt").read_text(encoding="utf-8") == NOTES
    return plan


def test_a_plan_resumes_at_the_failed_step_with_the_saved_outputs(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    plan = failed_run(ws, script)
    (ws / "data" / "notes.txt").write_text("changed since the first run\n", encoding="utf-8")
    model = script(SUMMARY)
    result = omx("run", str(plan), "--from-step", "2", "--yes")
    assert result.exit_code == 0, result.output
    assert "Resuming at step 2: step 1 is not run again" in result.output
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8").startswith("- omx plans first")
    (request,) = model.requests  # only step 2 asked the model, with step 1's saved output, not the changed file
    assert NOTES in request["messages"][-1]["content"] and "changed since" not in request["messages"][-1]["content"]
    _, second = sorted((ws / "runs").iterdir())
    steps = kinds(trace_of(second), "step")
    assert [(s["step_id"], s["status"]) for s in steps] == [(1, "reused"), (2, "success"), (3, "success")]
    end = run_end(trace_of(second))
    assert (end["status"], end["steps_executed"]) == ("done_unverified", 2)  # a summary: its form checked
    assert (second / "outputs" / "1.txt").read_text(encoding="utf-8") == NOTES  # a resume of this run works too
    assert trace_of(second)[0]["data"]["from_step"] == 2


def test_a_missing_output_names_the_step_to_start_at(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    plan = failed_run(ws, script)
    (plan.parent / "outputs" / "1.txt").unlink()
    result = omx("run", str(plan), "--from-step", "2", "--yes")
    assert result.exit_code == 1
    assert f"step 2 uses the output of step 1, which {plan.parent / 'outputs'} does not hold" in result.stderr
    assert f"start at step 1: omx run {plan} --from-step 1" in result.stderr
    unknown = omx("run", str(plan), "--from-step", "9")
    assert unknown.exit_code == 1 and "the plan has no step 9; its steps are 1, 2, 3" in unknown.stderr
