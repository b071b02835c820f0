"""Issue 28's failures reported as success, end to end with a scripted model: a criterion that names a number is
not met by another number, one omx cannot check is "not checked" (never met by the file existing), and the result
line says "success" only when every criterion was checked and met and a value the task asks for was verified."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.model.llm import ScriptedModel
from tests.e2e.helpers import PLAN_A, TASK_A, omx, only_run, run_end, trace_of


def plan(goal: str, steps: list[tuple[str, dict[str, Any]]], criteria: list[str]) -> str:
    numbered = [{"id": i, "description": tool, "tool": tool, "inputs": inputs} for i, (tool, inputs) in
                enumerate(steps, 1)]  # fmt: skip
    data = {"version": 1, "goal": goal, "risk_level": "LOW", "workspace_root": ".", "steps": numbered,
            "success_criteria": criteria}  # fmt: skip
    return json.dumps(data)


COPY: list[tuple[str, dict[str, Any]]] = [
    ("read_text", {"path": "data/notes.txt"}),
    ("write_text", {"path": "out/copy.txt", "content": {"ref": "step:1.output"}}),
]


def test_a_count_written_as_the_text_is_not_a_success(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """The plan copied data/a.txt instead of counting it; "out/count.txt has 3 lines" was [met] (the file exists)."""
    (ws / "data" / "a.txt").write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
    script(
        plan(
            "Count the lines of data/a.txt",
            [("read_text", {"path": "data/a.txt"}),
             ("write_text", {"path": "out/count.txt", "content": {"ref": "step:1.output"}})],
            ["out/count.txt has just the number 4", "out/count.txt has 1 line"],
        )
    )  # fmt: skip
    result = omx("Count the lines of data/a.txt and write just the number into out/count.txt", "--yes")
    assert result.exit_code == 1, result.output
    assert "Result: success" not in result.output
    assert "[met, omx's reading] out/count.txt is written by this run (from the task) (written)" in result.output
    assert "[not met, omx's reading] out/count.txt holds just a number (from the task) (it holds 'one" in result.output
    # omx counts nothing itself: 4 and 1 are the plan's own numbers, not the task's; not checked
    assert "[not checked] out/count.txt has just the number 4 (4 is the plan's own number" in result.output
    assert "[not checked] out/count.txt has 1 line (1 is the plan's own number" in result.output
    end = run_end(trace_of(only_run(ws)))
    assert end["status"] == "failed"
    # the last: the count came from no code run on data/a.txt (a read written out computes nothing)
    assert [c["status"] for c in end["criteria"]] == ["met", "not met", "not checked", "not checked", "not checked"]
    assert [(c["kind"], c["source"]) for c in end["criteria"]] == [
        ("form", "reading"),
        ("form", "reading"),
        ("value", "plan"),
        ("form", "plan"),
        ("value", "code"),
    ]


def test_a_criterion_omx_cannot_check_is_not_checked_and_the_run_is_done_not_success(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The whole source was copied, and "out/todo.md has 10 TODO comments" was [met] (the file exists)."""
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("# TODO: one\nx = 1\n# TODO: two\n", encoding="utf-8")
    script(
        plan(
            "Collect the TODO comments of src/app.py",
            [("read_text", {"path": "src/app.py"}),
             ("write_text", {"path": "out/todo.md", "content": {"ref": "step:1.output"}})],
            ["out/todo.md has 10 TODO comments"],
        )
    )  # fmt: skip
    result = omx("Write every TODO comment of src/app.py into out/todo.md", "--yes")
    assert result.exit_code == 0, result.output  # nothing failed, and nothing was verified: said, not failed
    assert "Result: done, 1 criterion not checked (1 met) (2/2 steps)" in result.output
    assert "Result: success" not in result.output
    assert (
        "[met, omx's reading] out/todo.md is written by this run (from the task)" in result.output
    )  # omx's own, from the task
    # 10 is no number the task said: the plan's guess, neither checked nor given to the model to judge
    assert "[not checked] out/todo.md has 10 TODO comments (10 is the plan's own number" in result.output
    run_dir = only_run(ws)
    end = run_end(trace_of(run_dir))
    assert end["status"] == "done" and end["criteria"][1]["status"] == "not checked"
    replayed = omx("replay", str(run_dir))
    assert "run ended: done, 2 step(s) executed" in replayed.output
    assert "[not checked] out/todo.md has 10 TODO comments" in replayed.output


def test_four_bullets_do_not_meet_three_bullet_lines(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Issue 28: `[met] out/summary.md has 3 bullet lines (4 bullet lines)`."""
    script(json.dumps(PLAN_A), "- omx plans first\n- tools are sandboxed\n- every run is traced\n- and replayed")
    result = omx(TASK_A, "--yes")
    assert result.exit_code == 1, result.output
    assert "[not met] out/summary.md has 3 bullet lines (4 bullet lines)" in result.output
    assert "Result: failed: success criterion not met: out/summary.md has 3 bullet lines" in result.output
    assert run_end(trace_of(only_run(ws)))["status"] == "failed"


def test_a_plan_without_criteria_is_done_with_nothing_checked(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(plan("Copy the notes", COPY, []))
    result = omx("Copy data/notes.txt to out/copy.txt", "--yes")
    assert result.exit_code == 0, result.output
    assert "Result: done, only that the output was written is checked, not what it holds (2/2 steps)" in result.output
    assert run_end(trace_of(only_run(ws)))["status"] == "done"


def test_every_criterion_checked_and_met_is_done_where_no_value_was_verified(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """3 lines and a word the notes hold: forms, which another text meets too; no value the task asks for was made
    by code and checked, so the run is done, its content not checked."""
    script(
        plan(
            "Copy the notes",
            COPY,
            ["out/copy.txt exists and has 3 lines", 'out/copy.txt contains "sandbox"'],
        )
    )  # fmt: skip
    result = omx("Copy the 3 lines of data/notes.txt to out/copy.txt", "--yes")
    assert result.exit_code == 0, result.output
    assert "Result: done, form checked, content not checked (2/2 steps)" in result.output
    assert "[met] out/copy.txt exists and has 3 lines (the file exists; 3 non-empty lines)" in result.output
    assert run_end(trace_of(only_run(ws)))["status"] == "done_unverified"


def test_a_criterion_copied_from_the_planners_example_does_not_fail_a_right_result(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Issue 28: the 0.5B model wrote "has 3 bullet lines" (the planner's example) for a markdown table, and omx
    reported the right table as failed; the task says nothing of 3, so that is the plan's guess, not checked."""
    (ws / "data" / "people.csv").write_text("name,age\nada,36\n", encoding="utf-8")
    table = "| name | age |\n|---|---|\n| ada | 36 |\n"
    script(plan("Convert", [("write_text", {"path": "out/people.md", "content": table})],
                ["out/people.md has 3 bullet lines"]))  # fmt: skip
    result = omx("Convert data/people.csv to a markdown table in out/people.md", "--yes")
    assert result.exit_code == 0, result.output
    assert "[met, omx's reading] out/people.md is a markdown table (from the task)" in result.output
    assert "[not checked] out/people.md has 3 bullet lines (3 is the plan's own number" in result.output
    assert "Result: done, 1 criterion not checked (2 met)" in result.output
