"""A count or a total the task asks for is checked only by code the run ran on its input and a second program that
prints the same, end to end through the real ``omx`` command with a scripted model, the real step sandbox and real
files: a file that holds just a number, the wrong one, is "done, form checked, value not checked", never success;
the number a python step counted from the input is a success when a second program, asked for apart, prints it too,
and not when it prints another or none; and the model told a result is wrong is never told the answer omx's own
reading computed."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from agent.model.llm import ScriptedModel
from agent.plan_run.code_fix import DISAGREED
from agent.plan_run.second_program import SECOND_PROMPT, same_value
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, run_end, trace_of

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
    script(plan(steps, ["out/words.txt holds just a number"]), "import re\nprint(len(re.findall(r'\\S+', INPUT)))")
    result = omx(WORDS, "--yes", input="y\n")  # a python step is MEDIUM risk: asked
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "words.txt").read_text(encoding="utf-8").strip() == "18"
    assert result_line(result) == "Result: success (3/3 steps)"
    assert (
        "[met] out/words.txt holds what this run's code made of data/notes.txt (from the run's code) "
        "(it holds '18', what step 2 (python) output)"
    ) in result.output
    assert "[met] a second program, written apart, printed the same value (18)" in result.output
    assert ended(ws) == "success"


def test_a_second_program_that_ends_in_its_answer_prints_it(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Asked to print its answer, a second program ended in a function call that returns it: its value is printed,
    as a REPL shows it, and compared."""
    steps = [read("data/notes.txt"), python("print(len(INPUT.split()))"), write("out/words.txt", STEP_2)]
    script(plan(steps, ["out/words.txt holds just a number"]), "def count(text):\n    return len(text.split())\n"
           "count(INPUT)")  # fmt: skip
    result = omx(WORDS, "--yes", input="y\n")
    assert result_line(result) == "Result: success (3/3 steps)", result.output
    assert "[met] a second program, written apart, printed the same value (18)" in result.output


FIRST_TOTAL = "import csv, io\nprint(sum(float(r['amount']) for r in csv.DictReader(io.StringIO(INPUT))))"
TOTAL_PLAN = plan([read("data/sales.csv"), python(FIRST_TOTAL), write("out/total.txt", STEP_2)], [])


def second_programs(ws: Path) -> list[dict[str, Any]]:
    return [e["data"] for e in trace_of(only_run(ws)) if e["kind"] == "run" and e["event"] == "second_program"]


def test_a_total_is_a_success_when_a_second_program_prints_the_same(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The second program rounds to three places: 49.750 is 49.75. It is asked apart: neither the first program nor
    what it printed is in its request, which is worded apart from a code request, and it gets the first's INPUT."""
    second = "rows = INPUT.splitlines()[1:]\nprint(f\"{sum(float(r.split(',')[1]) for r in rows):.3f}\")"
    model = script(TOTAL_PLAN, second)
    result = omx(TOTAL, "--yes", input="y\n")
    assert (ws / "out" / "total.txt").read_text(encoding="utf-8").strip() == "49.75"
    assert result_line(result) == "Result: success (3/3 steps)", result.output
    assert "[met] a second program, written apart, printed the same value (49.75)" in result.output
    asked = model.requests[-1]["messages"]
    assert asked[0]["content"] == SECOND_PROMPT
    assert FIRST_TOTAL not in json.dumps(asked) and "49.75" not in json.dumps(asked)
    assert "The variable INPUT holds the text of data/sales.csv" in asked[-1]["content"]
    assert f"it begins:\n```\n{SALES.strip()}\n```" in asked[-1]["content"]  # what a program needs to read it
    (event,) = second_programs(ws)
    assert (event["status"], event["first"], event["second"], event["code"]) == ("met", "49.75\n", "49.750\n", second)
    assert [c["purpose"] for c in kinds(trace_of(only_run(ws)), "model")][-1] == "second_program"


def test_a_total_of_the_wrong_column_is_no_success_when_a_second_program_disagrees(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 1.5B model's false success: code summed the wrong column and printed 0, a number made by code run on the
    input. A second program sums the amounts: the two disagree, and neither is taken for the right one."""
    wrong = "import csv, io\nrows = list(csv.reader(io.StringIO(INPUT)))[1:]\nprint(sum(r[0].isdigit() for r in rows))"
    steps = [read("data/sales.csv"), python(wrong), write("out/total.txt", STEP_2)]
    script(plan(steps, ["out/total.txt holds just a number"]), FIRST_TOTAL)
    result = omx(TOTAL, "--yes", "--replans", "0", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "total.txt").read_text(encoding="utf-8").strip() == "0"
    assert result_line(result) == f"{UNVERIFIED} (3/3 steps)"
    assert "[met] out/total.txt holds what this run's code made of data/sales.csv" in result.output
    assert (
        "[not met] a second program, written apart, printed the same value "
        "(it printed '49.75', out/total.txt holds '0')"
    ) in result.output
    assert ended(ws) == "done_unverified" and run_end(trace_of(only_run(ws)))["error"] is None
    (event,) = second_programs(ws)
    assert (event["status"], event["first"], event["second"]) == ("not met", "0\n", "49.75\n")
    replay = omx("replay", str(only_run(ws)))
    assert "[not met] a second program, written apart, printed the same value" in replay.output


def test_a_count_a_shell_command_made_is_checked_by_a_program_that_reads_the_file(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    task = "How many lines does data/notes.txt have? Write just the number to out/lines.txt"
    steps = [("shell", {"cmd": "grep -c . data/notes.txt"}), write("out/lines.txt", {"ref": "step:1.output"})]
    model = script(plan(steps, []), "print(len(open('data/notes.txt').read().splitlines()))")
    result = omx(task, "--yes", input="y\n")
    assert result_line(result) == "Result: success (2/2 steps)", result.output
    assert "[met] a second program, written apart, printed the same value (3)" in result.output
    assert "- data/notes.txt, which begins:" in model.requests[-1]["messages"][-1]["content"]


def test_an_output_that_links_out_of_the_workspace_is_not_compared(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """omx reads what it compares without following a link: the agent's file outside is never shown to a model."""
    outside = ws.parent / "outside.txt"
    outside.write_text("49.75\n", encoding="utf-8")
    code = (
        f"import os\nopen('data/sales.csv')\nos.makedirs('out')\nos.symlink({str(outside)!r}, 'out/total.txt')\nprint()"
    )
    model = script(plan([("python", {"code": code})], []))
    result = omx(TOTAL, "--yes", input="y\n")
    assert result_line(result) == f"{UNVERIFIED} (1/1 steps)", result.output
    assert "[not checked] a second program, written apart, printed the same value (out/total.txt cannot be read" in (
        result.output
    )
    assert len(model.requests) == 1  # no second program asked


WRONG_COLUMN = (
    "import csv, io\nrows = list(csv.reader(io.StringIO(INPUT)))[1:]\nprint(sum(r[0].isdigit() for r in rows))"
)


def test_code_a_second_program_disagreed_with_is_asked_for_again_told_only_that_they_disagree(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """One round: the step's code asked anew, told neither value nor which omx takes for right; the plan runs again
    (shown and confirmed), and the second program, asked again, agrees with the new code. Two programs disagreed in
    this run, so that agreement does not settle the value: done, not a success."""
    steps = [read("data/sales.csv"), python(WRONG_COLUMN), write("out/total.txt", STEP_2)]
    model = script(plan(steps, []), FIRST_TOTAL, FIRST_TOTAL, FIRST_TOTAL)  # second program, new code, second again
    result = omx(TOTAL, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert "Two programs written apart printed different values\nRe-planning (1 of at most 2)" in result.output
    assert result_line(result) == "Result: done, form checked, value not checked (3/3 steps, after 1 re-plan)"
    assert (ws / "out" / "total.txt").read_text(encoding="utf-8").strip() == "49.75"
    fix = model.requests[2]["messages"][-1]["content"]
    assert DISAGREED in fix and WRONG_COLUMN not in fix
    assert "49.75" not in fix and "printed '0'" not in fix  # neither value
    assert [e["status"] for e in second_programs(ws)] == ["not met", "not checked"]
    (fixed,) = [e["data"] for e in trace_of(only_run(ws)) if e["kind"] == "run" and e["event"] == "code_fixed"]
    assert fixed == {"step": 2, "failure": DISAGREED}


def test_code_a_second_program_disagreed_with_twice_is_asked_for_once(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    other_wrong = WRONG_COLUMN.replace("r[0].isdigit()", "len(r[0])")
    steps = [read("data/sales.csv"), python(WRONG_COLUMN), write("out/total.txt", STEP_2)]
    model = script(plan(steps, []), FIRST_TOTAL, other_wrong, FIRST_TOTAL)
    result = omx(TOTAL, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert result_line(result) == f"{UNVERIFIED} (3/3 steps, after 1 re-plan)"
    assert [e["status"] for e in second_programs(ws)] == ["not met", "not met"]
    assert len(model.requests) == 4 and run_end(trace_of(only_run(ws)))["replans"] == 1


@pytest.mark.parametrize(
    ("second", "why"),
    [
        ("print(1 / 0)", "it failed: python exited with status 1: ZeroDivisionError: division by zero"),
        (None, "the model's request failed (LLM error: the scripted model has no reply left for request 2)"),
    ],
    ids=["it-fails", "no-reply-left"],
)
def test_a_second_program_that_gives_no_value_leaves_the_value_not_checked(
    ws: Path, script: Callable[..., ScriptedModel], second: str | None, why: str
) -> None:
    script(TOTAL_PLAN, *([second] if second else []))
    result = omx(TOTAL, "--yes", input="y\n")  # no code fix: the second program printed no value to disagree
    assert result.exit_code == 0, result.output
    assert result_line(result) == f"{UNVERIFIED} (3/3 steps)"
    unchecked = "[not checked] a second program, written apart, printed the same value"
    assert f"{unchecked} (the second program gave no value: {why})" in result.output
    assert ended(ws) == "done_unverified"


def test_a_second_program_that_writes_a_file_is_asked_for_again(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """It would change the workspace after the run's checks: asked once more, told why; it never runs."""
    writes = "open('out/total.txt', 'w').write('49.75')\nprint(49.75)"
    model = script(TOTAL_PLAN, writes, FIRST_TOTAL.replace("INPUT", "open('data/sales.csv').read()"))
    result = omx(TOTAL, "--yes", input="y\n")
    assert result_line(result) == "Result: success (3/3 steps)", result.output
    again = model.requests[-1]["messages"][-1]["content"]
    assert again.startswith("That program cannot be used: it calls write(), and the program must write no file")
    assert second_programs(ws)[0]["code"] != writes


@pytest.mark.parametrize("path", ["out/total.txt", "./out/total.txt", "total.txt"])
def test_a_second_program_that_reads_the_output_it_is_compared_with_is_asked_for_again(
    ws: Path, script: Callable[..., ScriptedModel], path: str
) -> None:
    """Printing what the output holds agrees with any value: the 0.5B model's second program, given the input as
    INPUT, opened the task's output and printed its rows again. Asked once more, told why; it never runs."""
    reads = f"import os\nprint(open(os.path.join('out', 'total.txt')).read() if 0 else open({path!r}).read())"
    model = script(TOTAL_PLAN, reads, FIRST_TOTAL.replace("INPUT", "open('data/sales.csv').read()"))
    result = omx(TOTAL, "--yes", input="y\n")
    assert result_line(result) == "Result: success (3/3 steps)", result.output
    again = model.requests[-1]["messages"][-1]["content"]
    assert again.startswith("That program cannot be used: it reads out/total.txt, the answer it is compared with")
    assert second_programs(ws)[0]["code"] != reads


def test_a_second_program_that_changes_the_output_all_the_same_gives_no_value(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Its look is no wall: what the output holds is compared before and after it ran."""
    copies = "import shutil\nshutil.copyfile('data/sales.csv', 'out' + '/total.txt')\nprint(49.75)"
    script(TOTAL_PLAN, copies)
    result = omx(TOTAL, "--yes", input="y\n")
    assert result_line(result) == f"{UNVERIFIED} (3/3 steps)", result.output
    assert "(the second program gave no value: it changed out/total.txt)" in result.output


def test_code_that_reads_its_files_itself_is_checked_by_a_program_that_reads_them_too(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    first = FIRST_TOTAL.replace("io.StringIO(INPUT)", "open('data/sales.csv')")
    steps = [("python", {"code": first}), write("out/total.txt", {"ref": "step:1.output"})]
    model = script(
        plan(steps, []),
        first.replace("float", "Decimal").replace("import csv", "from decimal import Decimal\nimport csv"),
    )
    result = omx(TOTAL, "--yes", input="y\n")
    assert result_line(result) == "Result: success (2/2 steps)", result.output
    asked = model.requests[-1]["messages"][-1]["content"]
    assert (
        f"The program reads what it needs itself:\n- data/sales.csv, which begins:\n```\n{SALES.strip()}\n```" in asked
    )
    assert "INPUT" not in asked and second_programs(ws)[0]["input"] == ["data/sales.csv"]


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("49.75\n", "49.750", True),
        ("  18 ", "18\n\n", True),
        ("166", "166.00", True),
        ("0.30000000000000004", "0.3", True),
        ("a  b\nc", "a b\n c\n", True),
        ("0", "166.0", False),
        ("18", "18 words", False),
        ("a b\nc", "a\nb c", False),
        ("12345678901234567", "12345678901234568", False),
        ("", "0", False),
        ('{\n  "a": [1, 2]\n}\n', '{"a":[1,2]}', True),  # JSON as its data, however indented
        ('{"a": 1}', '{"a": 2}', False),
        ("[1, 2]", "[2, 1]", False),
        ("1,ann,open\n3,cy,open\n", "[['1', 'ann', 'open'], ['3', 'cy', 'open']]", True),  # rows, as Python prints
        ("1,ann,open\n3,cy,open\n", "['1', 'ann', 'open']\n['3', 'cy', 'open']\n", True),  # them, whole or a line
        ("ada\nbob\n", "['ada', 'bob']", True),
        ("1,ann,open\n", "['3', 'cy', 'open']", False),
        ("yes\n", "True", True),  # a yes or a no is the same answer however written
        ("No.", "no", True),
        ("no", "False\n", True),
        ("yes", "no", False),
        ("yes", "yes, twice", False),
    ],
)
def test_values_compare_with_whitespace_aside_and_numbers_as_numbers(first: str, second: str, same: bool) -> None:
    assert same_value(first, second) is same


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


def lines_read_as_exact() -> dict[str, Any]:
    """The model's reading: exact work on data/notes.txt, one output of lines (a shape the rules check nothing of)."""
    read = {"inputs": ["data/notes.txt"], "outputs": ["out/top.txt"], "from_input": True, "kind": "exact",
            "shape": "lines", "count": None, "max_words": None}  # fmt: skip
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}


TOP = "Put the first 2 lines of data/notes.txt into out/top.txt"
FIRST_TWO = "print('\\n'.join(INPUT.splitlines()[:2]))"


def test_an_exact_result_no_form_checks_is_compared_by_a_second_program(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Lines picked from a file have no form to check: the second program's value is the check of what the file
    holds. It disagreed with code that kept one line; that code, asked again, kept two, and the second program
    printed the same: the file is right, but after a disagreement in the same run an agreement settles nothing."""
    model = script(lines_read_as_exact(), "result = lines[:1]", FIRST_TWO, "result = lines[:2]", FIRST_TWO)
    result = omx(TOP, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    first, second = NOTES.splitlines()[:2]
    assert (ws / "out" / "top.txt").read_text(encoding="utf-8") == f"{first}\n{second}\n"
    assert DISAGREED in model.requests[3]["messages"][-1]["content"]
    done = "Result: done, only that the output was written is checked, not what it holds (3/3 steps, after 1 re-plan)"
    assert result_line(result) == done, result.output
    assert "[not checked] a second program, written apart, printed the same value" in result.output


def test_an_exact_result_two_programs_disagree_on_is_done(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    model = script(lines_read_as_exact(), "result = lines[:1]", FIRST_TWO, "result = lines[-1:]", FIRST_TWO)
    result = omx(TOP, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert len(model.requests) == 5  # the reading, the code, the second program, the code again, the second again
    assert result_line(result).startswith("Result: done, only that the output was written is checked"), result.output
    assert "[not met] a second program, written apart, printed the same value" in result.output
    assert ended(ws) == "done"
