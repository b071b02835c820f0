"""A question asked yes or no: no operation the model picks answers it, the code asked for completes a template
that prints yes or no, the output is checked to start with one, and a second program's True is the same answer as
yes. End to end through the real ``omx`` command with a scripted model, the real step sandbox and real files."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.operation_fitting import fitted
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.task_reading import READING_SCHEMA_TITLE, TaskReading
from agent.plan_run.text_operations import SCHEMA_TITLE, TextOperation
from agent.plan_run.yes_or_no import answer_in, asks_yes_or_no, first_answer
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, trace_of

POOL = "name: Lido\nopen_days:\n  - mon\n  - wed\n  - sat\nsunday_swim: members only\n"
TASK = "Is the pool open on Sundays according to data/pool.yaml? Answer yes or no in out/sunday.txt"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "pool.yaml").write_text(POOL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def reading(op: str, text: str) -> list[dict[str, Any]]:
    """The model's reading of the task, and the operation it picked."""
    read = {"inputs": ["data/pool.yaml"], "outputs": ["out/sunday.txt"], "kind": "exact", "shape": "one_line"}
    picked = {"op": op, "text": text, "new_text": "", "number": 0}
    return [
        {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)},
        {"for": SCHEMA_TITLE, "content": json.dumps(picked)},
    ]


@pytest.mark.parametrize(
    ("task", "asks"),
    [
        (TASK, True),
        ("does any ticket mention a broken spoke? yes/no -> out/spoke.txt", True),
        ("Is debug on in app.toml? Y/N into out/debug.txt", True),
        ("true or false: the list is sorted. Write it to out/sorted.txt", True),
        ("Which customer spent the most? Write the name to out/top.txt", False),
        ("Count the lines that say no or yes in data/votes.txt", False),
    ],
)
def test_a_task_asks_for_a_yes_or_a_no_where_it_says_so(task: str, asks: bool) -> None:
    assert asks_yes_or_no(task) is asks


@pytest.mark.parametrize(
    ("text", "answer", "first"),
    [("yes", True, True), ("No.\n", False, False), ("True", True, True), ("no, it opens at 10", None, False),
     ("closed", None, None), ("", None, None), ("nobody", None, None)],
)  # fmt: skip
def test_an_answer_is_a_yes_or_a_no_however_written(text: str, answer: bool | None, first: bool | None) -> None:
    assert answer_in(text) is answer
    assert first_answer(text) is first


@pytest.mark.parametrize(
    "picked",
    [
        TextOperation(op="json_value", text="sunday"),
        TextOperation(op="replace", text="debug", new_text="yes"),
        TextOperation(op="count_lines", text="sunday"),
        TextOperation(op="keep_containing", text="sun"),
    ],
)
def test_no_operation_answers_a_question_asked_yes_or_no(picked: TextOperation) -> None:
    assert fitted(picked, POOL, ["data/pool.yaml", "out/sunday.txt"], TASK) is None


def test_a_value_asked_otherwise_is_the_operation_picked() -> None:
    picked = TextOperation(op="json_value", text="sunday_swim")
    task = "What does data/pool.yaml set sunday_swim to? -> out/s.txt"
    assert fitted(picked, POOL, ["data/pool.yaml", "out/s.txt"], task) == picked


def test_the_output_is_checked_to_start_with_yes_or_no(tmp_path: Path) -> None:
    said = TaskReading(inputs=["data/pool.yaml"], outputs=["out/sunday.txt"], kind="exact", shape="one_line")
    expected = TaskExpectations.before(TASK, tmp_path, said)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "sunday.txt").write_text("closed\n", encoding="utf-8")
    (check,) = [c for c in expected.check() if "yes or no" in c.criterion]
    assert (check.criterion, check.status) == ("out/sunday.txt starts with yes or no (from the task)", "not met")
    (tmp_path / "out" / "sunday.txt").write_text("No, members only.\n", encoding="utf-8")
    (check,) = [c for c in expected.check() if "yes or no" in c.criterion]
    assert check.status == "met"
    tabled = said.model_copy(update={"shape": "table"})  # a reading that disagrees: no check of omx's own
    assert not [c for c in TaskExpectations.before(TASK, tmp_path, tabled).check() if "yes or no" in c.criterion]


def test_a_yes_or_no_question_gets_code_that_prints_its_answer(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """The model picked the key's value ('members only' would have been written); omx asks for code instead, with a
    template whose result is True or False. The model's own print of ``result`` becomes the template's, which
    prints no; a second program that prints False agrees."""
    code = "import yaml\ndata = yaml.safe_load(INPUT)\nresult = 'sun' in data['open_days']\nprint(result)"
    model = script(*reading("json_value", "sunday_swim"), code, "print(False)")
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "sunday.txt").read_text(encoding="utf-8") == "no\n"
    (asked,) = [r["messages"] for r in model.requests if "Complete this code" in r["messages"][-1]["content"]]
    assert "result = ...  # computed from data: True or False, the answer to the question" in asked[-1]["content"]
    assert 'print(result if isinstance(result, str) else "yes" if result else "no")' in asked[-1]["content"]
    assert "code by omx" not in result.output
    assert "[met, omx's reading] out/sunday.txt starts with yes or no (from the task) (it holds 'no')" in result.output
    assert "[met] a second program, written apart, printed the same value (no)" in result.output
    assert "Result: success (3/3 steps)" in result.output
    assert [c["purpose"] for c in kinds(trace_of(only_run(ws)), "model")][-2:] == ["code", "second_program"]
