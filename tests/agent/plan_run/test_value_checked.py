"""A count or a total the task asks for is checked only by code the run ran on its input, end to end through the
real ``omx`` command with a scripted model and real files: a file that holds just a number, the wrong one, is
"done, form checked, value not checked", never success; the number a python step counted from the input is a
success; and the model told a result is wrong is never told the answer omx's own reading computed."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from agent.model.llm import ScriptedModel
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import omx, only_run, run_end, trace_of

NOTES = "one two three four five six\nseven eight nine ten eleven twelve\nthirteen fourteen fifteen sixteen a b\n"
SALES = "item,amount\napples,12.50\npears,20.25\nplums,17.00\n"  # 49.75 in all
WORDS = "How many words does data/notes.txt contain? Write just the number to out/words.txt"
TOTAL = "What is the total of the amount column in data/sales.csv? Put only the number in out/total.txt"
UNVERIFIED = "Result: done, form checked, value not checked"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "notes.txt").write_text(NOTES, encoding="utf-8")
    (workspace / "data" / "sales.csv").write_text(SALES, encoding="utf-8")
    monkeypatch.chdir(workspace)
    return workspace.resolve()


def plan(steps: list[tuple[str, dict[str, Any]]], criteria: list[str]) -> str:
    numbered = [{"id": i, "description": tool, "tool": tool, "inputs": inputs} for i, (tool, inputs) in
                enumerate(steps, 1)]  # fmt: skip
    return json.dumps({"version": 1, "goal": "the task", "risk_level": "LOW", "workspace_root": ".",
                       "steps": numbered, "success_criteria": criteria})  # fmt: skip


def read(path: str) -> tuple[str, dict[str, Any]]:
    return "read_text", {"path": path}


def write(path: str, content: Any) -> tuple[str, dict[str, Any]]:
    return "write_text", {"path": path, "content": content}


def python(code: str) -> tuple[str, dict[str, Any]]:
    return "python", {"code": code, "input": {"ref": "step:1.output"}}


STEP_2 = {"ref": "step:2.output"}


def result_line(result: Result) -> str:
    return next(line for line in result.output.splitlines() if line.startswith("Result:"))


def ended(ws: Path) -> str:
    status = run_end(trace_of(only_run(ws)))["status"]
    assert isinstance(status, str)
    return status


def test_a_wrong_word_count_that_holds_just_a_number_is_no_success(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The model wrote 10 for the file's 18 words; "holds just a number" met made it a success."""
    script(plan([write("out/words.txt", "10\n")], ["out/words.txt holds just a number"]))
    result = omx(WORDS, "--yes")
    assert result.exit_code == 0, result.output
    assert result_line(result) == f"{UNVERIFIED} (1/1 steps)"
    assert "[met, omx's reading] out/words.txt holds just a number (from the task)" in result.output
    assert "[not checked] out/words.txt holds what this run's code made of data/notes.txt" in result.output
    assert "wrote the plan's own text, which no code computed" in result.output
    assert ended(ws) == "done_unverified"
    replay = omx("replay", str(only_run(ws)))
    assert "run ended: done_unverified" in replay.output
    assert "[met, omx's reading] out/words.txt holds just a number (from the task)" in replay.output


def test_a_wrong_total_is_no_success(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(plan([write("out/total.txt", "3")], ["out/total.txt holds just a number"]))
    result = omx(TOTAL, "--yes")
    assert result.exit_code == 0, result.output
    assert result_line(result) == f"{UNVERIFIED} (1/1 steps)"
    assert ended(ws) == "done_unverified"


def test_the_plans_own_number_is_no_check_of_the_value(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """The model's 18, written and claimed in its own criterion, is right, and still the model's word alone."""
    script(plan([write("out/words.txt", "18\n")], ["out/words.txt holds just a number"]))
    result = omx(WORDS, "--yes")
    assert result_line(result) == f"{UNVERIFIED} (1/1 steps)"


def test_a_count_a_python_step_made_from_the_input_is_a_success(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    steps = [read("data/notes.txt"), python("print(len(INPUT.split()))"), write("out/words.txt", STEP_2)]
    script(plan(steps, ["out/words.txt holds just a number"]))
    result = omx(WORDS, "--yes", input="y\n")  # a python step is MEDIUM risk: asked
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "words.txt").read_text(encoding="utf-8").strip() == "18"
    assert result_line(result) == "Result: success (3/3 steps)"
    assert (
        "[met] out/words.txt holds what this run's code made of data/notes.txt (from the run's code) "
        "(it holds '18', what step 2 (python) output)"
    ) in result.output
    assert ended(ws) == "success"


def test_a_total_a_python_step_made_from_the_input_is_a_success(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    code = "import csv, io\nprint(sum(float(r['amount']) for r in csv.DictReader(io.StringIO(INPUT))))"
    script(plan([read("data/sales.csv"), python(code), write("out/total.txt", STEP_2)], []))
    result = omx(TOTAL, "--yes", input="y\n")
    assert (ws / "out" / "total.txt").read_text(encoding="utf-8").strip() == "49.75"
    assert result_line(result) == "Result: success (3/3 steps)"


def test_a_number_an_llm_step_gave_is_not_code_s(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Code that prints what a model said computed nothing from the input."""
    steps = [read("data/notes.txt"), ("llm", {"prompt": "count the words", "input": {"ref": "step:1.output"}}),
             ("python", {"code": "print(INPUT.strip())", "input": STEP_2}),
             write("out/words.txt", {"ref": "step:3.output"})]  # fmt: skip
    script(plan(steps, []), "18")
    result = omx(WORDS, "--yes", input="y\n")
    assert result_line(result) == f"{UNVERIFIED} (4/4 steps)"


def test_the_model_is_told_the_form_the_task_asks_and_what_the_file_holds(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """omx computes no count of its own: the re-plan of a count written as words is told what the task asks of the
    file (just a number) and what it holds; a wrong number, written by the plan, is left to the value check."""
    task = "Count the words in data/notes.txt and write just the number to out/words.txt"
    model = script(plan([write("out/words.txt", "ten words\n")], []), plan([write("out/words.txt", "10\n")], []))
    result = omx(task, "--yes", "--replans", "1", input="y\n")  # the re-plan overwrites out/words.txt: asked
    assert result.exit_code == 0, result.output
    told = model.requests[1]["messages"][-1]["content"]
    assert "Every step ran, but the result is not what the task asks for:" in told
    said = told[told.index("Every step ran") :]
    assert "- out/words.txt holds just a number: not met (it holds 'ten words')" in said
    assert "18" not in said
    assert result_line(result) == f"{UNVERIFIED} (1/1 steps, after 1 re-plan)"
