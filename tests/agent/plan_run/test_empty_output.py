"""A step that made nothing never empties a person's file, end to end through the real ``omx`` command with a
scripted model, the real step sandbox and real files: a python step without code fails without running, a write of
an empty output over a file that holds text fails and leaves the file as it was, and the code at fault is asked for
again (the plan, which reads and writes the same file, can run again: nothing was written)."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.code_fix import EMPTY, NOTHING
from agent.plan_run.code_steps import CODE_PROMPT, TEMPLATE
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, trace_of

FRUIT = "apples\nplums\n"
TASK = "Add the line 'pears' to data/fruit.txt"
TO_FILL = "result = ...  # computed from text or lines: a str, a number, or a list of lines"
RIGHT = TEMPLATE.replace(TO_FILL, 'result = lines + ["pears"]')
#: code that works and prints nothing from this file (no line starts with '#')
NOTHING_PRINTED = TEMPLATE.replace(TO_FILL, 'result = [line for line in lines if line.startswith("#")]')


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "fruit.txt").write_text(FRUIT, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def in_place() -> dict[str, Any]:
    """The model's reading: exact work on data/fruit.txt, written where it is."""
    read = {"inputs": ["data/fruit.txt"], "outputs": ["data/fruit.txt"], "from_input": True, "kind": "exact",
            "shape": "lines", "count": None, "max_words": None}  # fmt: skip
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}


def steps(ws: Path) -> list[dict[str, Any]]:
    return kinds(trace_of(only_run(ws)), "step")


def fixed(ws: Path) -> list[dict[str, Any]]:
    return [e["data"] for e in trace_of(only_run(ws)) if e["kind"] == "run" and e["event"] == "code_fixed"]


def fruit(ws: Path) -> str:
    return (ws / "data" / "fruit.txt").read_text(encoding="utf-8")


def test_a_step_without_code_fails_and_its_code_is_asked_for_again(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Both requests for the code came back empty: the step has no code, fails without running, and the write
    after it never runs; its code asked for again, the plan runs again and adds the line."""
    model = script(in_place(), "", "", RIGHT)
    result = omx(TASK, "--yes", input="y\ny\n")  # the plan, then the plan with the new code: each runs code
    assert result.exit_code == 0, result.output
    assert fruit(ws) == "apples\nplums\npears\n"
    first = next(s for s in steps(ws) if s["step_id"] == 2)
    assert first["status"] == "failed" and first["error"] == "the step has no code: the model gave none that can work"
    assert fixed(ws) == [{"step": 2, "failure": NOTHING}]
    # the code and the second program (no reply: not checked) are told the output is the input's whole new text
    replaces = "What the code prints replaces data/fruit.txt whole (INPUT is its text now): print all of its new text."
    assert replaces in model.requests[1]["messages"][-1]["content"]
    fill = "# the whole new text of data/fruit.txt (its lines, changed as the task asks), from text or lines"
    assert f"result = ...  {fill}" in model.requests[1]["messages"][-1]["content"]
    second = model.requests[-1]["messages"][-1]["content"]
    assert "The answer is the whole new text of data/fruit.txt, as the task leaves it: print all of it." in second


def test_a_step_that_never_gets_code_leaves_the_file_as_it_was(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(in_place(), "", "")  # no more replies: the requests for code and for a new plan fail
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 1, result.output
    assert "the step has no code: the model gave none that can work" in result.output
    assert fruit(ws) == FRUIT
    assert [s["status"] for s in steps(ws)] == ["success", "failed", "skipped"]


def test_an_empty_output_is_not_written_over_the_file_it_was_made_from(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The code printed nothing: the write over data/fruit.txt fails, the file keeps its text, and the code is asked
    for again, told it printed nothing from a text that holds something."""
    model = script(in_place(), NOTHING_PRINTED, RIGHT)
    result = omx(TASK, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert fruit(ws) == "apples\nplums\npears\n"
    write = next(s for s in steps(ws) if s["step_id"] == 3)
    assert write["status"] == "failed" and write["error_type"] == "EmptyOverwrite"
    assert "step 2's output is empty, and data/fruit.txt holds text" in write["error"]
    assert fixed(ws) == [{"step": 2, "failure": EMPTY}]
    (asked,) = [r for r in model.requests if r["messages"][0]["content"] == CODE_PROMPT][-1:]
    assert EMPTY in asked["messages"][-1]["content"]


def test_any_plan_s_empty_output_is_not_written_over_a_file(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """A plan the model wrote (no reading): its python step prints nothing, and the write of that over
    data/fruit.txt fails, saying why; the file is as it was."""
    plan = {"version": 1, "goal": "the task", "risk_level": "LOW", "workspace_root": ".", "steps": [
        {"id": 1, "description": "read", "tool": "read_text", "inputs": {"path": "data/fruit.txt"}},
        {"id": 2, "description": "filter", "tool": "python",
         "inputs": {"code": "print('')", "input": {"ref": "step:1.output"}}},
        {"id": 3, "description": "write", "tool": "write_text",
         "inputs": {"path": "data/fruit.txt", "content": {"ref": "step:2.output"}}},
    ]}  # fmt: skip
    script(json.dumps(plan))
    result = omx("Keep the lines of data/fruit.txt that start with '#'", "--yes", "--replans", "0", input="y\n")
    assert result.exit_code == 1, result.output
    assert fruit(ws) == FRUIT
    assert "writing nothing over it would lose that text, so it was left as it is" in result.output


def test_an_empty_output_may_be_written_to_a_new_file_or_appended(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Nothing is lost there: the writes run (an empty result may be right)."""
    plan = {"version": 1, "goal": "the task", "risk_level": "LOW", "workspace_root": ".", "steps": [
        {"id": 1, "description": "nothing", "tool": "python", "inputs": {"code": "print('')"}},
        {"id": 2, "description": "write", "tool": "write_text",
         "inputs": {"path": "out/none.txt", "content": {"ref": "step:1.output"}}},
        {"id": 3, "description": "append", "tool": "write_text",
         "inputs": {"path": "data/fruit.txt", "content": {"ref": "step:1.output"}, "mode": "append"}},
    ]}  # fmt: skip
    script(json.dumps(plan))
    task = "Write what the code prints to out/none.txt and add it to data/fruit.txt"
    result = omx(task, "--yes", "--replans", "0", input="y\n")
    assert [s["status"] for s in steps(ws)] == ["success", "success", "success"], result.output
    assert (ws / "out" / "none.txt").read_text(encoding="utf-8").strip() == ""
    assert fruit(ws).strip() == FRUIT.strip()
