"""An operation the model picked whose output is the input's lines or rows is not taken where the model read the
output as one value and the task asks a question, or just a number: omx asks for the step's code instead. End to
end through the real ``omx`` command with a scripted model, the real step sandbox and real files."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.operation_fitting import answers_one_value
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from agent.plan_run.text_operations import SCHEMA_TITLE, TextOperation
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import omx

MAILER = "[general]\ntimeout = 10\n\n; the email timeout, in seconds\n[email]\nretries = 3\ntimeout = 30\n"
WHICH = "Which team scored the most goals in May? data/games.csv, the name into out/top.txt"


@pytest.mark.parametrize(
    ("op", "number", "task", "shape", "counted", "answers"),
    [
        ("replace", 0, "write the email timeout (number only) to out/t.txt", "number", False, False),
        ("csv_where", 0, WHICH, "one_line", False, False),
        ("keep_containing", 0, "What does the first error say? -> out/e.txt", "one_line", False, False),
        ("keep_containing", 0, "How many lines say ERROR? just the number", "number", True, True),  # counted
        ("extract_numbers", 0, "What port does app.toml set? Just the number", "number", True, False),  # not counted
        ("last", 1, "what is the last line of data/log.txt? -> out/l.txt", "one_line", False, True),
        ("upper", 0, "Uppercase the title in data/title.txt into out/t.txt", "one_line", False, True),  # no question
        ("csv_where", 0, "Which orders were shipped? Put the rows in out/s.csv", "lines", False, True),  # rows read
        ("json_value", 0, "What port does app.json set? just the number", "number", False, True),  # a value
    ],
)
def test_an_operation_makes_one_value_only_where_its_output_can_be_one(
    op: str, number: int, task: str, shape: str, counted: bool, answers: bool
) -> None:
    picked = TextOperation(op=op, text="x", new_text="y", number=number)
    assert answers_one_value(picked, task, shape, counted) is answers


def test_a_replacement_picked_for_a_value_asked_is_no_code_of_omx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: Callable[..., ScriptedModel]
) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "mailer.ini").write_text(MAILER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    read = {"inputs": ["conf/mailer.ini"], "outputs": ["out/timeout.txt"], "kind": "exact", "shape": "number"}
    picked = {"op": "replace", "text": "email timeout", "new_text": "email_timeout", "number": 0}
    code = "import configparser\nc = configparser.ConfigParser()\nc.read_string(INPUT)\nresult = c['email']['timeout']"
    model = script({"for": READING_SCHEMA_TITLE, "content": json.dumps(read)},
                   {"for": SCHEMA_TITLE, "content": json.dumps(picked)}, code, "print(30)")  # fmt: skip
    task = "check conf/mailer.ini and write the email timeout (seconds, number only) to out/timeout.txt"
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "timeout.txt").read_text(encoding="utf-8") == "30\n"
    assert "code by omx" not in result.output
    assert any("Complete this code" in r["messages"][-1]["content"] for r in model.requests)
    assert "Result: success (3/3 steps)" in result.output
