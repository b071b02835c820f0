"""What omx does with the code a python step's own request brings back, end to end through the real ``omx`` command
with a scripted model, the real step sandbox and real files: code given INPUT that never reads it is asked for
again, the template's last line, which prints ``result``, stays omx's whatever the model wrote back, and exact
code that printed nothing from a text that holds something is asked for again once."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.code_fix import EMPTY
from agent.plan_run.code_steps import PRINT_LINE, TEMPLATE, code_problem, with_print_line
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, trace_of

LIST = "milk\neggs\n"
TO_FILL = "result = ...  # computed from text or lines: a str, a number, or a list of lines"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "list.txt").write_text(LIST, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def reading(inputs: list[str], outputs: list[str], shape: str = "lines") -> dict[str, Any]:
    read = {"inputs": inputs, "outputs": outputs, "kind": "exact", "shape": shape, "count": None, "max_words": None}
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}


def code_requests(model: ScriptedModel) -> list[list[dict[str, str]]]:
    return [r["messages"] for r in model.requests if "Complete this code" in r["messages"][1]["content"]]


def test_code_that_never_reads_its_input_is_asked_for_again(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    task = "Write the lines of data/list.txt and then the line 'bread' to out/shopping.txt"
    constant = TEMPLATE.replace("text = INPUT", 'text = "bread"').replace(TO_FILL, 'result = lines + ["bread"]')
    right = TEMPLATE.replace(TO_FILL, 'result = lines + ["bread"]')
    model = script(reading(["data/list.txt"], ["out/shopping.txt"]), constant, right)
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "shopping.txt").read_text(encoding="utf-8") == "milk\neggs\nbread\n"
    first, again = code_requests(model)  # the same request again, told what was wrong
    assert again[: len(first)] == first
    told = (
        "That code cannot work: it never reads INPUT, which holds the text to work on. Reply with the corrected code."
    )
    assert again[-1]["content"] == told
    calls = [c["purpose"] for c in kinds(trace_of(only_run(ws)), "model") if c["purpose"] != "reading"]
    assert calls == ["code", "code", "second_program"]  # the value code made, compared (no reply: not checked)


def test_a_count_whose_print_line_the_model_rewrote_prints_the_number(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    task = "Count the lines of data/list.txt and write just the number to out/n.txt"
    rewritten = TEMPLATE.replace(TO_FILL, "result = len(lines)").replace(
        PRINT_LINE, 'print("\\n".join(map(str, result)))'
    )
    model = script(reading(["data/list.txt"], ["out/n.txt"], "number"), rewritten, "print(len(INPUT.splitlines()))")
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "n.txt").read_text(encoding="utf-8").strip() == "2"
    assert len(code_requests(model)) == 1
    assert "Result: success" in result.output, result.output  # and a second program printed the same


@pytest.mark.parametrize(
    ("code", "kept"),
    [
        ("result = 3\nprint(result)", "result = 3\n" + PRINT_LINE),
        ("result = [1]\nprint(\n    result,\n)\n", "result = [1]\n" + PRINT_LINE),
        ("result = 3\nprint('done')", None),  # a print of something else: the model's
        ("result = 3\nprint(result)\nx = 1", None),  # the print is not the last statement
        ("print(result", None),  # does not parse: its problem is said when it is asked again
    ],
)
def test_only_a_last_print_of_result_becomes_the_template_s_line(code: str, kept: str | None) -> None:
    assert with_print_line(code) == (code if kept is None else kept)


def test_code_that_names_input_only_in_a_function_reads_it() -> None:
    assert code_problem("def f():\n    return INPUT\nprint(f())", given_input=True) is None
    assert code_problem("print('bread')", given_input=True) == "it never reads INPUT, which holds the text to work on"
    assert code_problem("print('bread')") is None  # code that is not given INPUT may read what it likes


LOG = "2026-03-04 09:00 INFO start\n2026-03-04 09:01 ERROR disk full\n2026-03-04 09:02 INFO retry\n"


def test_exact_code_that_printed_nothing_from_a_text_is_asked_for_again_once(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    (ws / "data" / "log.txt").write_text(LOG, encoding="utf-8")
    task = "Keep the lines of data/log.txt that contain ERROR, into out/errors.txt"
    starts = TEMPLATE.replace(TO_FILL, 'result = [line for line in lines if line.startswith("ERROR")]')
    contains = TEMPLATE.replace(TO_FILL, 'result = [line for line in lines if "ERROR" in line]')
    second = "print('\\n'.join(line for line in INPUT.splitlines() if 'ERROR' in line))"
    model = script(reading(["data/log.txt"], ["out/errors.txt"]), starts, second, contains)
    result = omx(task, "--yes", input="y\ny\n")  # the plan, then the plan with the new code: each runs code
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == "2026-03-04 09:01 ERROR disk full\n"
    assert EMPTY in code_requests(model)[-1][-1]["content"]  # told it printed nothing, never what to print
    fixed = [e["data"] for e in trace_of(only_run(ws)) if e["kind"] == "run" and e["event"] == "code_fixed"]
    assert fixed == [{"step": 2, "failure": EMPTY}]


def test_code_that_prints_nothing_again_is_kept(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Nothing may be the right result (no line matches): the new code's output stands, and it is asked once. Two
    programs that print nothing agree on nothing: no second program is asked for, and the run is no success."""
    (ws / "data" / "log.txt").write_text(LOG, encoding="utf-8")
    task = "Keep the lines of data/log.txt that contain FATAL, into out/fatal.txt"
    none = TEMPLATE.replace(TO_FILL, 'result = [line for line in lines if "FATAL" in line]')
    also_none = TEMPLATE.replace(TO_FILL, 'result = [line for line in lines if line.find("FATAL") >= 0]')
    model = script(reading(["data/log.txt"], ["out/fatal.txt"]), none, also_none)
    result = omx(task, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "fatal.txt").read_text(encoding="utf-8").strip() == ""
    assert len(code_requests(model)) == 2
    assert "Result: done," in result.output and "Result: success" not in result.output
    assert "out/fatal.txt is empty: there is no value to compare" in result.output
    assert "second_program" not in [c["purpose"] for c in kinds(trace_of(only_run(ws)), "model")]
