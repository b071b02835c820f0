"""Issue 28: a result omx can check from the task's own words and its input (here: "in upper case") is checked;
the 0.5B model's copy of the input for an upper-casing ended "done (criteria not checked)". Now the unmet check is
in the result line, and the model is told it and re-plans. Scripted model, real files, the omx command in process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.model.llm import ScriptedModel
from agent.plan_run import workflow
from tests.e2e.helpers import omx, only_run, run_end, trace_of

pytest_plugins = ["tests.support.fixtures"]

TASK = "Write the text of data/a.txt in upper case to out/upper.txt"
UNMET = "out/upper.txt holds the input's lines in upper case (from the task) (line 1 is 'apples', not 'APPLES')"


def plan(*steps: dict[str, Any], criteria: list[str] | None = None) -> str:
    numbered = [{"id": i, "description": f"step {i}", **step} for i, step in enumerate(steps, 1)]
    return json.dumps({"version": 1, "goal": TASK, "risk_level": "LOW", "steps": numbered,
                       "success_criteria": criteria or []})  # fmt: skip


def write(content: Any) -> dict[str, Any]:
    return {"tool": "write_text", "inputs": {"path": "out/upper.txt", "content": content, "mode": "overwrite"}}


# the 0.5B model's plan: the input read and written as it is
COPY = plan({"tool": "read_text", "inputs": {"path": "data/a.txt"}}, write({"ref": "step:1.output"}))
# COPY's failure is certain before it runs (agent.plan_run.feasibility): omx asks once more for the plan, and the
# tests of the run's checks reply with COPY again, which then runs
UPPER = plan(write("APPLES\nPEARS\n"))


def fruit(ws: Path) -> None:
    (ws / "data" / "a.txt").write_text("apples\npears\n", encoding="utf-8")


def test_a_wrong_upper_casing_fails_with_the_unmet_check_after_one_re_plan(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    fruit(ws)
    model = script(COPY, COPY, COPY)
    result = omx(TASK, "--yes", "--replans", "1", input="y\n")  # the re-plan overwrites the first plan's file
    assert result.exit_code == workflow.EXIT_FAILED, result.output
    assert result.output.count("Re-planning (") == 1 and "Re-planning (1 of at most 1)" in result.output
    assert f"Result: failed, after 1 re-plan: success criterion not met: {UNMET}" in result.output
    told = model.requests[2]["messages"][-1]["content"]
    # what the file holds and what the task asks; never the APPLES omx computed from the input
    assert "- out/upper.txt holds the input's lines in upper case: not met (the file holds 'apples\\npears')" in told
    assert "APPLES" not in told[told.index("Every step ran") :]
    assert len(model.requests) == 3 and (ws / "out" / "upper.txt").read_text(encoding="utf-8") == "apples\npears\n"
    entries = trace_of(only_run(ws))
    assert (run_end(entries)["status"], run_end(entries)["replans"]) == ("failed", 1)


def test_the_re_plan_told_what_was_unmet_makes_it_right(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    fruit(ws)
    script(COPY, COPY, UPPER)
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert f"The result is wrong: success criterion not met: {UNMET}" in result.output
    # the re-plan wrote the upper-cased text itself: omx's reading finds it right, and no code made it from the input
    assert "Result: done, form checked, value not checked (1/1 steps, after 1 re-plan)" in result.output
    assert (
        "[met, omx's reading] out/upper.txt holds the input's lines in upper case (from the task) (the 2 lines "
        "expected)"
    ) in result.output


def test_a_plans_own_quoted_text_does_not_make_the_run_a_success(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The plan writes "Done" and claims it: met, yet the task and its input never said it; not checked."""
    fruit(ws)
    script(plan(write("Done\n"), criteria=["out/upper.txt contains 'Done'"]))
    result = omx("Summarise data/a.txt into out/upper.txt", "--yes", "--no-judge")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert "Result: success" not in result.output and "Result: done" in result.output
    assert "[not checked] out/upper.txt contains 'Done' ('Done' is the plan's own text" in result.output
