"""What omx does with a valid plan that cannot do its task (issue 28), end to end through the real ``omx`` command
with a scripted model, the real step sandbox and real files: a python step gets its input as INPUT; code that cannot
work is asked for again on its own; a plan that never writes the task's file is asked for again, then completed."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.code_steps import TEMPLATE, code_problem
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, run_end, trace_of

NAMES = "Zoe\nadam\nMia\nBen\n"
SORTED = "adam\nBen\nMia\nZoe\n"
TASK = "Sort the lines of data/names.txt alphabetically, ignoring case, into out/sorted.txt"
STEP_1, STEP_2 = {"ref": "step:1.output"}, {"ref": "step:2.output"}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "names.txt").write_text(NAMES, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def plan(*steps: tuple[str, dict[str, Any]], risk: str = "MEDIUM") -> str:
    numbered = [{"id": i, "description": f"{tool} step", "tool": tool, "inputs": inputs}
                for i, (tool, inputs) in enumerate(steps, 1)]  # fmt: skip
    return json.dumps({"version": 1, "goal": TASK, "risk_level": risk, "steps": numbered})


READ = ("read_text", {"path": "data/names.txt"})
WRITE = ("write_text", {"path": "out/sorted.txt", "content": STEP_2})


def read_as_exact(shape: str) -> dict[str, Any]:
    """The model's reading of the task, scripted: exact work into out/sorted.txt, from the file the task names."""
    reading = {"inputs": [], "outputs": ["out/sorted.txt"], "kind": "exact", "shape": shape, "count": None,
               "max_words": None}  # fmt: skip
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(reading)}


def python(code: str, given: Any = None) -> tuple[str, dict[str, Any]]:
    return "python", {"code": code} | ({"input": given} if given is not None else {})


def filled(result: str) -> str:
    """The code template as a model fills it in, in a fence."""
    return TEMPLATE.replace("result = ...  # computed from text or lines: a str, a number, or a list of lines",
                            f"result = {result}")  # fmt: skip


def events(ws: Path, event: str) -> list[dict[str, Any]]:
    return [e["data"] for e in trace_of(only_run(ws)) if e["kind"] == "run" and e["event"] == event]


def model_calls(ws: Path) -> list[tuple[str, int | None]]:
    """The model calls after the task's reading, which every run asks first and these scripts answer not."""
    calls = kinds(trace_of(only_run(ws)), "model")
    return [(c["purpose"], c["step_id"]) for c in calls if c["purpose"] != "reading"]


# -- INPUT ---------------------------------------------------------------------------------------------------------


def test_a_python_step_works_on_its_input_as_INPUT(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    code = "print('\\n'.join(sorted(INPUT.splitlines(), key=str.lower)))"
    model = script(plan(READ, python(code, STEP_1), WRITE))
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == SORTED
    assert len(model.requests) == 1  # code that works is not asked for again


def test_an_input_beyond_the_argument_limit_reaches_the_code_whole(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The input travels as the step's standard input, not in its code: 300 KB is more than one argument may be."""
    big = "".join(f"line {i:06d}\n" for i in range(25_000))
    (ws / "data" / "names.txt").write_text(big, encoding="utf-8")
    script(plan(READ, python("print(len(INPUT), len(INPUT.splitlines()))", STEP_1), WRITE))
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code in (0, 1), result.output  # the task's sort check fails: the count is what is judged
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8").split() == [str(len(big)), "25000"]


def test_without_an_input_INPUT_is_empty_and_the_step_reads_no_terminal(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    code = "import sys\nprint(repr(INPUT), repr(sys.stdin.read()))"
    script(plan(("python", {"code": code}), ("write_text", {"path": "out/sorted.txt", "content": STEP_1})))
    omx(TASK, "--yes", input="y\nsecret typed at the terminal\n")
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == "'' ''\n"


# -- code asked for again ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        ("sorted(names.split())", "reads names, which nothing defines"),
        ("print(a.txt.upper())", "reads a, which nothing defines"),
        ("print([x for x in INPUT if x not in seen])", "reads seen, which nothing defines"),
        ("for line in INPUT.splitlines(): line = line.upper()", "neither prints nor writes"),
        ("print(", "does not compile"),
        ("text = INPUT\nresult = ...\nprint(result)", "leaves a ..."),
        # the template's print line copied as the line that sets result
        (
            "lines = INPUT.splitlines()\nresult = lines if isinstance(result, list) else result\nprint(result)",
            "reads result before it sets it",
        ),
        ("count = count + len(INPUT)\nprint(count)", "reads count before it sets it"),
    ],
)
def test_code_that_cannot_work_is_named_so(code: str, problem: str) -> None:
    found = code_problem(code)
    assert found is not None and problem in found


@pytest.mark.parametrize(
    "code",
    [
        "import json\nfor user in json.loads(INPUT):\n    print(user['name'])",
        "def upper(s):\n    return s.upper()\nprint(upper(INPUT))",
        "print(len(open('data/a.txt').read().splitlines()))",
        "with open('out/x.txt', 'w') as f:\n    f.write(INPUT)",
        "total = 0\nfor n in INPUT.split():\n    total += int(n)\nprint(total)",
        "for line in INPUT.splitlines():\n    last = line\nprint(last)",  # set in the loop, read after it
        "words = [w for w in INPUT.split() if w]\nf = lambda: later\nlater = 1\nprint(words, f())",
    ],
)
def test_code_that_may_work_is_kept(code: str) -> None:
    assert code_problem(code) is None


def test_a_step_that_writes_instead_of_printing_for_a_later_step_is_a_problem() -> None:
    assert code_problem("open('out/x', 'w').write(INPUT)", must_print=True) is not None
    assert code_problem("print(INPUT)", copied=["print(INPUT)"]) is not None  # the prompt's example, copied


def test_code_that_names_what_nothing_defines_is_written_again_and_runs(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    model = script(plan(READ, python("sorted(names.split())", STEP_1), WRITE),
                   filled("sorted(lines, key=str.lower)"))  # fmt: skip
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == SORTED
    assert model_calls(ws)[:2] == [("plan", None), ("code", 2)]
    asked = model.requests[1]["messages"][-1]["content"]
    assert "INPUT holds the text of data/names.txt" in asked and "written to out/sorted.txt" in asked
    assert f"data/names.txt begins:\n```\n{NAMES.strip()}\n```" in asked  # code is written for the data as it is
    shown = json.loads((only_run(ws) / "plan.json").read_text(encoding="utf-8"))  # the plan run has the new code
    assert "result = sorted(lines, key=str.lower)" in shown["steps"][1]["inputs"]["code"]


def test_a_python_step_without_input_after_an_unused_read_gets_that_read(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    model = script(plan(READ, python("print(sorted(names))"), WRITE), filled("sorted(lines, key=str.lower)"))
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == SORTED
    assert "INPUT holds the text of data/names.txt" in model.requests[1]["messages"][-1]["content"]


def test_new_code_that_cannot_work_either_leaves_the_step_as_planned(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Asked twice (the second time with the problem); neither reply works, so the planned code runs and fails, and
    the run says why: the check decides only whether to ask, never that a run succeeded."""
    script(plan(READ, python("sorted(names.split())", STEP_1), WRITE), "print(names)", "```python\nprint(x)\n```")
    result = omx(TASK, "--yes", "--replans", "0", input="y\n")
    assert result.exit_code == 1, result.output
    assert "NameError: name 'names' is not defined" in result.output
    assert model_calls(ws)[:3] == [("plan", None), ("code", 2), ("code", 2)]
    assert not (ws / "out" / "sorted.txt").exists()


# -- a plan that writes no file the task asks for ----------------------------------------------------------------


def test_a_plan_that_writes_nothing_is_asked_for_again_with_the_gap_named(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    code = "print('\\n'.join(sorted(INPUT.splitlines(), key=str.lower)))"
    model = script(plan(READ, python(code, STEP_1)), plan(READ, python(code, STEP_1), WRITE))
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    (unfit,) = events(ws, "plan_unfit")
    assert unfit["problems"][0].startswith("no step writes out/sorted.txt, which the task asks for")
    assert "no step writes out/sorted.txt, which the task asks for" in model.requests[1]["messages"][-1]["content"]
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == SORTED


def test_a_plan_still_writing_nothing_gets_the_write_step_from_omx(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The same incomplete plan twice: omx adds the write of the last step's output, shown in the plan confirmed."""
    code = "print('\\n'.join(sorted(INPUT.splitlines(), key=str.lower)))"
    incomplete = plan(READ, python(code, STEP_1))
    script(incomplete, incomplete)
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert "3. [write_text] Write the result to out/sorted.txt (added by omx: the plan wrote no file" in result.output
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == SORTED
    # what a sort holds, omx does not compute: only that the output was written is checked
    assert run_end(trace_of(only_run(ws)))["status"] == "done"


def test_python_code_that_writes_the_file_itself_is_not_completed(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    code = (
        "import os\nos.makedirs('out', exist_ok=True)\nlines = sorted(INPUT.splitlines(), key=str.lower)\n"
        "open('out/sorted.txt', 'w').write('\\n'.join(lines) + '\\n')"
    )
    model = script(plan(READ, python(code, STEP_1)))
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert len(model.requests) == 1 and "added by omx" not in result.output
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == SORTED


# -- a plan that cannot work here ----------------------------------------------------------------------------------


def test_a_plan_that_writes_its_input_unchanged_where_the_task_gives_another_form_is_asked_for_again(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Its failure is certain before it runs: the form the task gives its output (one line) rejects the input's
    text (four lines)."""
    task = "Join the names of data/names.txt, sorted ignoring case, as one line into out/sorted.txt"
    code = "print(', '.join(sorted(INPUT.splitlines(), key=str.lower)))"
    second = "import re\nprint(', '.join(sorted(re.findall(r'\\S+', INPUT), key=str.casefold)))"
    model = script(read_as_exact("one_line"), plan(READ, ("write_text", {"path": "out/sorted.txt", "content": STEP_1})),
                   plan(READ, python(code, STEP_1), WRITE), second)  # fmt: skip
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    (unfit,) = events(ws, "plan_unfit")
    assert unfit["problems"][0].startswith("step 2 writes data/names.txt unchanged to out/sorted.txt")
    assert "the task wants out/sorted.txt to be different: out/sorted.txt has 1 line" in unfit["problems"][0]
    assert unfit["problems"][0] in model.requests[-2]["messages"][-1]["content"]  # asked again with it (the last:
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == "adam, Ben, Mia, Zoe\n"  # the second program)
    assert "Result: success (3/3 steps)" in result.output


def test_a_plan_that_reads_a_file_the_workspace_lacks_reads_the_task_s_input(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model copied the planner's example, data/items.txt and all, also when asked again: the task names
    one file to read, which no step reads, so omx reads that one, and says so in the plan."""
    code = "print('\\n'.join(sorted(INPUT.splitlines(), key=str.lower)))"
    model = script(plan(("read_text", {"path": "data/items.txt"}), python(code, STEP_1), WRITE))
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    note = "(reads data/names.txt by omx: data/items.txt is not in the workspace, and the task names data/names.txt)"
    assert note in result.output
    assert len(model.requests) == 1 and not events(ws, "plan_unfit")
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == SORTED


def test_the_example_s_files_copied_into_a_task_without_input_are_the_task_s(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model's plan for "compute 2 to the power 20 and write just the result to out/pow.txt": the example's
    read of data/items.txt and write of out/reversed.txt, with its own code. The task names nothing to read: the
    read is left out; it names out/pow.txt, which no step writes: the write writes it."""
    task = "Use python3 -c to compute 2 to the power 20 and write just the result to out/pow.txt"
    copied = json.loads(plan(("read_text", {"path": "data/items.txt"}), python("print(2 ** 20)", STEP_1),
                             ("write_text", {"path": "out/reversed.txt", "content": STEP_2})))  # fmt: skip
    model = script(json.dumps(copied | {"success_criteria": ["out/reversed.txt exists"]}), "print(pow(2, 20))")
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "pow.txt").read_text(encoding="utf-8").strip() == "1048576"
    assert not (ws / "out" / "reversed.txt").exists() and len(model.requests) == 2  # the plan, the second program
    assert "The question names no file" in model.requests[1]["messages"][-1]["content"]
    assert "1. [read_text]" not in result.output and "2. [python]" in result.output
    assert "(no input, by omx: it read a file the workspace lacks, and the task names none to read)" in result.output
    assert "(writes out/pow.txt by omx: the task names out/pow.txt, not out/reversed.txt)" in result.output
    assert "[met] out/pow.txt exists" in result.output and "Result: success" in result.output


def test_a_file_the_plan_writes_and_reads_back_is_its_own(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """A scratch file the plan reads back is no stray output: it is not moved to the task's output."""
    steps = (READ, ("write_text", {"path": "tmp/names.txt", "content": STEP_1}),
             ("read_text", {"path": "tmp/names.txt"}))  # fmt: skip
    script(plan(*steps), plan(*steps))
    result = omx(TASK, "--yes", "--replans", "0", input="y\n")
    assert "by omx" not in result.output.split("Success criteria")[0].replace("added by omx", "")
    assert (ws / "tmp" / "names.txt").read_text(encoding="utf-8") == NAMES


def test_a_file_an_earlier_step_writes_may_be_read(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    steps = (READ, ("write_text", {"path": "tmp/names.txt", "content": STEP_1}),
             ("read_text", {"path": "tmp/names.txt"}))  # fmt: skip
    code = "print('\\n'.join(sorted(INPUT.splitlines(), key=str.lower)))"
    script(plan(*steps, python(code, {"ref": "step:3.output"}),
                        ("write_text", {"path": "out/sorted.txt", "content": {"ref": "step:4.output"}})))  # fmt: skip
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "sorted.txt").read_text(encoding="utf-8") == SORTED
    # the scratch file's write is no file the task asks for (plans write those only); its read is no missing file
    problems = [problem for event in events(ws, "plan_unfit") for problem in event["problems"]]
    assert problems == ["step 2 writes tmp/names.txt, which the task does not ask for: write to out/sorted.txt instead"]


def test_the_code_request_shows_no_file_a_link_in_the_workspace_points_out_to(
    ws: Path, tmp_path_factory: pytest.TempPathFactory, script: Callable[..., ScriptedModel]
) -> None:
    """An agent that can write the workspace links the input to a file of the person's: the code request that shows
    the input's first lines does not follow the link, so the file's text never reaches the model."""
    secret = tmp_path_factory.mktemp("home") / "secret.txt"
    secret.write_text("the person's password\n", encoding="utf-8")
    (ws / "data" / "names.txt").unlink()
    (ws / "data" / "names.txt").symlink_to(secret)
    model = script(plan(READ, python("sorted(names.split())", STEP_1), WRITE),
                   filled("sorted(lines, key=str.lower)"))  # fmt: skip
    omx(TASK, "--yes", input="y\n")
    asked = model.requests[1]["messages"][-1]["content"]
    assert "INPUT holds the text of data/names.txt" in asked
    assert "password" not in asked and "begins:" not in asked
