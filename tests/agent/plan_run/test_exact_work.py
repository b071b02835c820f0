"""What omx does where the 0.5B model's plans failed the same way through every re-plan, end to end
through the real ``omx`` command with a scripted model, the real step sandbox and real files: exact work planned as
an llm step is done by a python step whose code is asked for on its own; a read of a directory is a listing; after a
run, the code of the python step at fault is asked for again with what came of it, before a whole new plan. Exact
work is what the model's reading says (kind "exact", scripted here) of a task with an input to compute from."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.code_steps import TEMPLATE, WORDS_TEMPLATE
from agent.plan_run.list_form import ListForm
from agent.plan_run.output_shape import MAX_LINE, MAX_WORD, shape_of
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, run_end, trace_of

LOG = "INFO start\nWARN slow disk\nINFO ok\nWARN slow response\n"
STEP_1, STEP_2 = {"ref": "step:1.output"}, {"ref": "step:2.output"}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "log.txt").write_text(LOG, encoding="utf-8")
    (tmp_path / "data" / "b.txt").write_text("pears\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def plan(goal: str, *steps: tuple[str, dict[str, Any]], risk: str = "LOW") -> str:
    numbered = [{"id": i, "description": f"{tool} step", "tool": tool, "inputs": inputs}
                for i, (tool, inputs) in enumerate(steps, 1)]  # fmt: skip
    return json.dumps({"version": 1, "goal": goal, "risk_level": risk, "steps": numbered})


def filled(result: str) -> str:
    """The code template as a model fills it in, in a fence."""
    return TEMPLATE.replace("result = ...  # computed from text or lines: a str, a number, or a list of lines",
                            f"result = {result}")  # fmt: skip


def unfenced(result: str) -> str:
    """The filled-in template as a plan's python step holds it."""
    return filled(result).removeprefix("```python\n").removesuffix("```").strip()


def llm(prompt: str, given: Any = STEP_1) -> tuple[str, dict[str, Any]]:
    return "llm", {"prompt": prompt, "input": given}


def write(path: str, content: Any = STEP_2, mode: str = "overwrite") -> tuple[str, dict[str, Any]]:
    return "write_text", {"path": path, "content": content, "mode": mode}


READ_LOG = ("read_text", {"path": "data/log.txt"})


def read_as(kind: str, output: str, shape: str = "free") -> dict[str, Any]:
    """The model's reading of the task, scripted: it answers the reading's request only. It lists no input: what
    exact work is computed from is the file the task names, there before the run."""
    reading = {"inputs": [], "outputs": [output], "kind": kind, "shape": shape, "count": None, "max_words": None}
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(reading)}


def asked(model: ScriptedModel) -> list[str]:
    """The last message of each request after the task's reading: the plan's, a step's, a code request's."""
    return [r["messages"][-1]["content"] for r in model.requests if r["json_mode"] is False
            or r["json_mode"].get("title") != READING_SCHEMA_TITLE]  # fmt: skip


def model_calls(ws: Path) -> list[tuple[str, int | None]]:
    """The model calls after the task's reading, which every run asks first and these scripts answer not."""
    calls = kinds(trace_of(only_run(ws)), "model")
    return [(c["purpose"], c["step_id"]) for c in calls if c["purpose"] != "reading"]


def events(ws: Path, event: str) -> list[dict[str, Any]]:
    return [e["data"] for e in trace_of(only_run(ws)) if e["kind"] == "run" and e["event"] == event]


# -- exact work is code's ------------------------------------------------------------------------------------------

COUNT = "Count the lines of data/log.txt and write just the number to out/n.txt"


READ_EXACT = read_as("exact", "out/n.txt", shape="number")


def test_a_count_planned_for_a_model_is_done_by_code(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    model = script(READ_EXACT, plan(COUNT, READ_LOG, llm("Count the lines"), write("out/n.txt")), filled("len(lines)"),
                   "print(INPUT.count(chr(10)))")  # the second program, asked for apart  # fmt: skip
    result = omx(COUNT, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "n.txt").read_text(encoding="utf-8").strip() == "4"
    assert "2. [python] Count the lines (python by omx: the task wants an exact result" in result.output
    assert model_calls(ws) == [("plan", None), ("code", 2), ("second_program", 2)]  # no llm step ran
    code = asked(model)[1]
    assert "This step: Count the lines\n" in code and "by omx" not in code  # the note is the person's
    assert "INPUT holds the text of data/log.txt" in code and "written to out/n.txt" in code
    assert "words = text.split()" not in code  # a task of lines: words led the model to work word by word
    assert run_end(trace_of(only_run(ws)))["status"] == "success"


@pytest.mark.parametrize(
    "reading",
    [
        read_as("prose", "out/n.txt"),
        read_as("command", "out/n.txt"),
        None,  # no reading: the rules do not say a task is exact work
    ],
)
def test_a_count_not_read_as_exact_work_on_an_input_stays_the_model_s(
    ws: Path, script: Callable[..., ScriptedModel], reading: dict[str, Any] | None
) -> None:
    # read as prose made from an input (none listed): omx plans the read, the model's text and the write itself
    by_omx = reading is not None and json.loads(reading["content"])["kind"] == "prose"
    replies = ["4"] if by_omx else [plan(COUNT, READ_LOG, llm("Count the lines"), write("out/n.txt")), "4"]
    model = script(*([reading] if reading is not None else []), *replies)
    result = omx(COUNT, "--yes", "--replans", "0")
    assert result.exit_code == 0, result.output
    assert model_calls(ws) == [("step", 2)] if by_omx else [("plan", None), ("step", 2)]  # the llm step ran
    assert not any("(python by omx" in text for text in asked(model))
    (event,) = events(ws, "task_reading")
    assert event.get("exact", False) is False


def test_a_task_of_words_is_asked_with_its_words(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Without ``words`` in the template, the 0.5B model counted a sentence's words as ``len(lines)``."""
    task = "Count the words in data/log.txt and write just the number to out/n.txt"
    reply = WORDS_TEMPLATE.replace("result = ...  # computed from text, lines or words", "result = len(words)  #")
    model = script(READ_EXACT, plan(task, READ_LOG, llm("Count the words"), write("out/n.txt")), reply)
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert "words = text.split()" in asked(model)[1]
    assert (ws / "out" / "n.txt").read_text(encoding="utf-8").strip() == "10"


def test_picking_lines_planned_for_a_model_is_done_by_code(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    task = "Write the lines of data/log.txt that contain 'WARN' to out/warn.txt"
    script(read_as("exact", "out/warn.txt", shape="lines"),
           plan(task, READ_LOG, llm("Find lines with WARN"), write("out/warn.txt")),
           filled("[line for line in lines if 'WARN' in line]"))  # fmt: skip
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "warn.txt").read_text(encoding="utf-8") == "WARN slow disk\nWARN slow response\n"


def test_a_merge_whose_model_step_saw_one_file_gets_code_that_reads_both(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model read a.txt and b.txt and gave its llm step a.txt alone: the code is asked to read the files."""
    (ws / "data" / "a.txt").write_text("apples\n", encoding="utf-8")
    task = "Merge data/a.txt and data/b.txt (a first, then b) into out/merged.txt"
    code = "print(open('data/a.txt').read() + open('data/b.txt').read(), end='')"
    steps = (("read_text", {"path": "data/a.txt"}), ("read_text", {"path": "data/b.txt"}),
             llm("Merge them"), write("out/merged.txt", {"ref": "step:3.output"}))  # fmt: skip
    model = script(read_as("exact", "out/merged.txt"), plan(task, *steps), code)
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "merged.txt").read_text(encoding="utf-8") == "apples\npears\n"
    assert "reads the files it needs itself" in asked(model)[1]


def test_prose_stays_a_model_s_work(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    task = "Summarise data/log.txt in 2 bullets into out/s.md"
    model = script(plan(task, READ_LOG, llm("Summarise in 2 bullets"), write("out/s.md")),
                   json.dumps({"bullets": ["it started", "it was slow"]}))  # fmt: skip
    result = omx(task, "--yes")
    assert result.exit_code == 0, result.output
    assert model_calls(ws) == [("plan", None), ("step", 2)] and len(model.requests) == 2


def test_without_working_code_the_model_step_stays_as_planned(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(READ_EXACT, plan(COUNT, READ_LOG, llm("Count the lines"), write("out/n.txt")), "print(count)", "print(n)",
           "4")  # fmt: skip
    result = omx(COUNT, "--yes")
    assert result.exit_code == 0, result.output
    assert "2. [llm] llm step" in result.output and "python by omx" not in result.output
    assert model_calls(ws) == [("plan", None), ("code", 2), ("code", 2), ("step", 2)]
    assert (ws / "out" / "n.txt").read_text(encoding="utf-8").strip() == "4"


# -- a read of a directory is a listing ----------------------------------------------------------------------------


def test_a_read_of_a_directory_runs_as_its_listing(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    task = "List the files in data/ and write their names, one per line, to out/files.txt"
    model = script(plan(task, ("read_text", {"path": "data/"}), ("list_dir", {"path": "data/", "pattern": ".*"}),
                        write("out/files.txt")))  # fmt: skip
    result = omx(task, "--yes")
    assert result.exit_code == 0, result.output
    assert "1. [list_dir] read_text step (list_dir by omx: data/ is a directory" in result.output
    assert "(every name, by omx: the pattern '.*' would name hidden files only)" in result.output
    assert (ws / "out" / "files.txt").read_text(encoding="utf-8").splitlines() == ["b.txt", "log.txt"]
    assert len(model.requests) == 1 and not events(ws, "plan_unfit")  # nothing to ask again


# -- the code at fault, asked for again after the run --------------------------------------------------------------


WARNS = "Count the lines of data/log.txt that contain 'WARN' and write just the number to out/n.txt"


def test_code_whose_output_fails_the_task_s_check_is_asked_for_again_with_what_it_printed(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    wrong = unfenced("[line for line in lines if 'WARN' in line]")  # the lines, not how many
    right = filled("len([line for line in lines if 'WARN' in line])")
    second = "print(sum('WARN' in line for line in INPUT.splitlines()))"
    model = script(READ_EXACT, plan(WARNS, READ_LOG, ("python", {"code": wrong, "input": STEP_1}), write("out/n.txt")),
                   right, second)  # fmt: skip
    result = omx(WARNS, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "n.txt").read_text(encoding="utf-8").strip() == "2"
    assert "Re-plan 1 of 2:" in result.output and "after 1 re-plan" in result.output
    assert "Result: success (3/3 steps, after 1 re-plan)" in result.output
    assert model_calls(ws) == [("plan", None), ("code", 2), ("second_program", 2)]  # no whole re-plan was asked for
    told = asked(model)[1]
    assert wrong not in told  # asked anew: shown its own code, the 0.5B model returned it
    assert (
        "Code written for this step before printed 'WARN slow disk\\nWARN slow response\\n', which is wrong: "
        "out/n.txt holds just a number: not met (it holds 'WARN slow disk\\nWARN slow response').\nComplete this code"
        in told
    )
    (fixed,) = events(ws, "code_fixed")
    assert fixed["step"] == 2
    assert run_end(trace_of(only_run(ws)))["replans"] == 1
    replay = omx("replay", str(only_run(ws)))
    assert "the re-plan is the same plan with new code for step 2, the model told: Code written for this step" in (
        replay.output
    )


def test_code_that_failed_is_asked_for_again_with_its_error(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    broken = "text = INPUT\nprint(len(text.splitlines()) / 0)"
    model = script(plan(COUNT, READ_LOG, ("python", {"code": broken, "input": STEP_1}), write("out/n.txt")),
                   filled("len(lines)"))  # fmt: skip
    result = omx(COUNT, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert "ZeroDivisionError" in asked(model)[1]
    assert (ws / "out" / "n.txt").read_text(encoding="utf-8").strip() == "4"


def test_the_same_code_again_leads_to_a_whole_re_plan(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    broken = "print(len(INPUT) / 0)"  # code that reads its INPUT, or it is asked for again at once
    failing = plan(COUNT, READ_LOG, ("python", {"code": broken, "input": STEP_1}), write("out/n.txt"))
    fixed = plan(COUNT, READ_LOG, ("python", {"code": unfenced("len(lines)"), "input": STEP_1}), write("out/n.txt"))
    script(failing, broken, fixed)
    result = omx(COUNT, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert model_calls(ws) == [("plan", None), ("code", 2), ("replan", None), ("second_program", 2)]
    assert not events(ws, "code_fixed")


PROSE = "Write the most important line of data/log.txt as one line (at most 3 words) into out/one.txt"


def test_prose_planned_as_code_is_given_to_a_model(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """The 0.5B model answered prose tasks with the planner's example (reversing lines) or code printing the input
    whole, in every re-plan: a python step given the material is made an llm step asked the task, in its shape."""
    model = script(plan(PROSE, READ_LOG, ("python", {"code": "print(INPUT)", "input": STEP_1}), write("out/one.txt")),
                   json.dumps({"words": ["WARN", "slow", "disk"]}))  # fmt: skip
    result = omx(PROSE, "--yes")
    assert result.exit_code == 0, result.output
    assert "2. [llm] " + PROSE + " (llm by omx: the task wants prose of a shape" in result.output
    assert model_calls(ws) == [("plan", None), ("step", 2)]
    assert PROSE.removesuffix(" into out/one.txt") + "\n" in model.requests[1]["messages"][-1]["content"]
    assert (ws / "out" / "one.txt").read_text(encoding="utf-8") == "WARN slow disk\n"


def test_prose_that_code_got_wrong_gets_a_whole_re_plan(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Code that reads its file itself stays code; when its prose fails the task's check, its code is not asked for
    again (the 0.5B model's fixes printed the input whole): a whole re-plan may give the work to a model."""
    whole = plan(PROSE, ("python", {"code": "print(open('data/log.txt').read())"}), write("out/one.txt", STEP_1))
    by_a_model = plan(PROSE, READ_LOG, llm("The most important line"), write("out/one.txt"))
    script(whole, by_a_model, json.dumps({"words": ["WARN", "slow", "disk"]}))
    result = omx(PROSE, "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert model_calls(ws) == [("plan", None), ("replan", None), ("step", 2)] and not events(ws, "code_fixed")
    assert (ws / "out" / "one.txt").read_text(encoding="utf-8") == "WARN slow disk\n"


def test_a_shaped_reply_in_prose_is_cut_to_the_shape(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """A server that answered without the schema (or a model that ignored it): one line of at most N words is the
    reply's first line, cut to N words, as the schema's N items would have held it."""
    script(plan(PROSE, READ_LOG, llm("The most important line"), write("out/one.txt")),
           "# WARN slow disk again and again\nmore prose")  # fmt: skip
    result = omx(PROSE, "--yes")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "one.txt").read_text(encoding="utf-8") == "WARN slow disk\n"
    (step,) = [s for s in kinds(trace_of(only_run(ws)), "step") if s["tool"] == "llm"]
    assert step["details"]["shape"].endswith("the reply was not of its schema: its first line, cut to the shape")


def test_a_plan_that_changes_its_own_input_gets_a_whole_re_plan(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Run again, it would read the file it wrote: the code alone is not asked for again, exact work as it is."""
    task = "Append the number of lines of data/log.txt to data/b.txt"
    wrong = unfenced("lines")  # data/b.txt as it was: the run did not change it
    steps = (("read_text", {"path": "data/b.txt"}), ("python", {"code": wrong, "input": STEP_1}), write("data/b.txt"))
    script(read_as("exact", "data/b.txt"), plan(task, *steps), plan(task, *steps))
    result = omx(task, "--yes", "--replans", "1", input="y\ny\n")
    assert result.exit_code == 1, result.output
    assert model_calls(ws) == [("plan", None), ("replan", None)]


# -- the shape's bounds --------------------------------------------------------------------------------------------


def test_a_shaped_reply_cannot_run_on() -> None:
    """Without a bound the 0.5B model wrote one endless word under the one-line title's schema."""
    words = shape_of(items=None, number=False, max_words=12, one_line=True)
    line = shape_of(items=None, number=False, max_words=None, one_line=True)
    bullets = shape_of(items=ListForm(3, "bullets"), number=False, max_words=None, one_line=False)
    text_of = shape_of(items=None, number=False, max_words=80, one_line=False)
    assert words is not None and line is not None and bullets is not None and text_of is not None
    word = words.schema["properties"]["words"]["items"]["pattern"]
    assert re.fullmatch(word, "w" * MAX_WORD) and not re.fullmatch(word, "w" * (MAX_WORD + 1))
    text = line.schema["properties"]["text"]["pattern"]
    assert re.fullmatch(text, "x" * MAX_LINE) and not re.fullmatch(text, "x" * (MAX_LINE + 1))
    assert bullets.schema["properties"]["bullets"]["items"]["maxLength"] == MAX_LINE
    assert text_of.schema is None and text_of.from_prose is not None  # asked in prose, cut to 80 words
    assert text_of.from_prose("w " * 200) == " ".join(["w"] * 80)
    # a server that let the array run on past maxItems (llama.cpp did, to 20 words for 12): the items allowed
    assert words.render({"words": [f"w{i}" for i in range(20)]}) == " ".join(f"w{i}" for i in range(12))
