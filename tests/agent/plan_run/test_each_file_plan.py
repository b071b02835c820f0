"""The plan omx writes itself for one operation on each file of a folder, in place: the task's pattern of files read
from its words, the plan made from a real workspace's files (or none, where the model is to plan), and, end to end
through the real ``omx`` command with a scripted model, the real step sandbox and real files, the files on disk
after the run and the run's verdict, which is never a success."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.each_file_plan import MOST_EACH, each_file_plan
from agent.plan_run.folder_files import extensions
from agent.plan_run.plan import Plan, RiskLevel
from agent.plan_run.reading_plan import BY_OMX, plan_from_reading
from agent.plan_run.risk import assess
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.task_reading import READING_SCHEMA_TITLE, TaskReading
from agent.plan_run.text_operations import SCHEMA_TITLE, TextOperation
from agent.plan_run.tools.inputs import PythonInput, ReadTextInput, Ref, WriteTextInput
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import PLAN_A, kinds, omx, only_run, run_end, trace_of

# -- the task's pattern of files -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "found"),
    [
        ("Add the line 'x' at the top of every .md file in docs/", {".md"}),
        ("Lower-case all .txt files under names/", {".txt"}),
        ("Sort the lines of each *.csv in data/", {".csv"}),
        ("Replace 'a' with 'b' in notes/*.TXT", {".txt"}),
        ("Upper-case the .md and .txt files of notes/", {".md", ".txt"}),
        ("Upper-case the .md, .rst or .txt files of notes/", {".md", ".rst", ".txt"}),
        ("Replace 'colour' with 'color' in all files under notes/", set()),
        ("Lower-case each file in names/", set()),
        ("Add a line to readme.md files", set()),  # a file's name, not a pattern
        ("Sort notes/a.txt", set()),
        ("Put the PDF files of inbox/ in inbox/pdf/", {".pdf"}),  # a format named as people write it
        ("Move all PDFs to docs/", {".pdf"}),
        ("Put the CSV and JSON files in data/", {".csv", ".json"}),
        ("Sort the Python scripts of tools/", {".py"}),
        ("Move the JPEG images to photos/", {".jpg", ".jpeg"}),
        ("Delete the old files in tmp/", set()),  # a word, not a format
        ("Move the US files to archive/", set()),
        (
            "Move the pictures of stuff/ to images/",
            {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".tif", ".tiff", ".heic"},
        ),  # images as a kind, every format's
        ("Move the images/ folder to old/", set()),  # a folder's name, no kind
    ],
)
def test_the_pattern_of_files_is_read_from_the_task(task: str, found: set[str]) -> None:
    assert extensions(task) == found


# -- the plan ------------------------------------------------------------------------------------------------------


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """notes/ with two .txt files, one more in a subfolder, a .md file and a hidden file."""
    files = {
        "notes/a.txt": "apples\nthe colour red\n",
        "notes/b.txt": "bread\n",
        "notes/deep/d.txt": "dates and colour\n",
        "notes/c.md": "# Cherries\ncolour\n",
        "notes/.hidden.txt": "secret\n",
        "other.txt": "outside the folder\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def op(name: str, text: str = "", new_text: str = "", number: int = 0) -> TextOperation:
    return TextOperation(op=name, text=text, new_text=new_text, number=number)


def planned(task: str, ws: Path, operation: TextOperation, kind: str = "exact") -> Plan | None:
    """The plan omx makes of ``task`` where the model read it as ``kind`` work with no output, and picked
    ``operation``."""
    reading = TaskReading.model_validate({"inputs": [], "outputs": [], "kind": kind, "operation": operation})
    return plan_from_reading(task, ws, TaskExpectations.before(task, ws, reading), reading)


def test_each_file_the_pattern_takes_is_read_changed_by_omx_s_code_and_written_over_after_every_one_is_made(
    notes: Path,
) -> None:
    task = "Add the line 'Owner: Kim' at the top of every .txt file in notes/"
    plan = planned(task, notes, op("add_first_line", "Owner: Kim"))
    assert plan is not None
    files = ["notes/a.txt", "notes/b.txt", "notes/deep/d.txt"]  # not c.md, not the hidden file
    assert [step.tool for step in plan.steps] == ["read_text", "python"] * 3 + ["write_text"] * 3
    reads = [step.inputs.path for step in plan.steps if isinstance(step.inputs, ReadTextInput)]
    writes = [step.inputs for step in plan.steps if isinstance(step.inputs, WriteTextInput)]
    assert reads == files and [w.path for w in writes] == files
    assert all(w.mode == "overwrite" and isinstance(w.content, Ref) for w in writes)  # the empty-output guard's form
    code = [step.inputs for step in plan.steps if isinstance(step.inputs, PythonInput)]
    assert all(c.code == "print('Owner: Kim')\nprint(INPUT.rstrip('\\n'))" for c in code)
    assert [c.input.ref for c in code if isinstance(c.input, Ref)] == [f"step:{n}.output" for n in (1, 3, 5)]
    assert all(BY_OMX in step.description for step in plan.steps)
    assert "(code by omx for the operation 'add_first_line' the model picked)" in plan.steps[1].description
    risk = assess(plan, notes)
    assert risk.level is RiskLevel.MEDIUM and "writes 3 files" not in " ".join(risk.reasons)  # 3 is not "many"
    assert any("overwrites the existing file notes/a.txt" in reason for reason in risk.reasons)


def test_a_read_as_prose_or_a_command_is_planned_the_same_where_the_pick_edits_a_text(notes: Path) -> None:
    task = "Upper-case every file in notes/"
    assert planned(task, notes, op("upper"), "prose") == planned(task, notes, op("upper"), "command") is not None


@pytest.mark.parametrize(
    ("task", "operation"),
    [
        # the pick: a value, a text other than the file's, a folder's files, prose, none
        ("Count the lines of every .txt file in notes/", op("count_lines")),
        ("Pull the numbers out of every .txt file in notes/", op("extract_numbers")),
        ("List every .txt file in notes/", op("list_files")),
        ("Describe every .txt file in notes/", op("write_prose")),
        # the operation does not fit the files: its TEXT is missing, no file has the column
        ("Add a first line to every .txt file in notes/", op("add_first_line")),
        ("Keep the rows of every .txt file in notes/ whose team is red", op("csv_where", "team", "red")),
        # the task's files: none the pattern takes, another file or folder named, a folder that is not there, the
        # workspace itself
        ("Upper-case every .rst file in notes/", op("upper")),
        ("Upper-case every .txt file in notes/ and other.txt", op("upper")),
        ("Upper-case every .txt file in notes/ into out/", op("upper")),
        ("Upper-case every .txt file in notes/deep/ and notes/", op("upper")),
        ("Upper-case every .txt file in gone/", op("upper")),
        ("Upper-case every .txt file in ./", op("upper")),
    ],
)
def test_no_plan_where_the_pick_or_the_files_leave_the_task_to_the_model(
    notes: Path, task: str, operation: TextOperation
) -> None:
    assert planned(task, notes, operation) is None


def test_a_path_in_the_operation_s_own_quoted_text_is_no_other_file_of_the_task(notes: Path) -> None:
    task = "Add the line 'See docs/index.md' at the end of every .txt file in notes/"
    plan = planned(task, notes, op("add_last_line", "See docs/index.md"))
    assert plan is not None and len(plan.steps) == 9


def test_no_plan_for_a_file_that_is_empty_or_not_text_or_a_folder_of_too_many_files(notes: Path) -> None:
    task = "Upper-case every .txt file in notes/"
    (notes / "notes" / "e.txt").write_text("", encoding="utf-8")
    assert planned(task, notes, op("upper")) is None  # read_text fails on an empty file
    (notes / "notes" / "e.txt").write_bytes(b"\xff\xfe binary")
    assert planned(task, notes, op("upper")) is None
    (notes / "notes" / "e.txt").unlink()
    assert planned(task, notes, op("upper")) is not None
    for n in range(MOST_EACH):
        (notes / "notes" / f"many{n}.txt").write_text("x\n", encoding="utf-8")
    assert planned(task, notes, op("upper")) is None


def test_each_file_the_task_names_is_changed_in_place(notes: Path) -> None:
    """The 0.5B model's own plans for "Rename the function calc_total to compute_total in app/util.py and
    app/main.py" referred to their own step's output, three times over."""
    task = "Replace 'colour' with 'color' in notes/a.txt and notes/c.md"
    plan = planned(task, notes, op("replace", "colour", "color"))
    assert plan is not None
    assert [step.tool for step in plan.steps] == ["read_text", "python"] * 2 + ["write_text"] * 2
    writes = [step.inputs.path for step in plan.steps if isinstance(step.inputs, WriteTextInput)]
    assert writes == ["notes/a.txt", "notes/c.md"]


def test_files_the_model_read_each_as_read_and_written_are_changed_in_place_where_the_rules_read_one(
    notes: Path,
) -> None:
    """The rules read "to notes/a.txt" as the task's output; the plan before this made notes/a.txt from
    notes/b.txt alone (the 1.5B model's reading: both files read, both written), losing a.txt's own text."""
    task = "Prepend 'DRAFT' as a new first line to notes/a.txt and notes/b.txt"
    both = ["notes/a.txt", "notes/b.txt"]
    reading = TaskReading(inputs=both, outputs=both, kind="exact", operation=op("add_first_line", "DRAFT"))
    expected = TaskExpectations.before(task, notes, reading)
    assert list(expected.outputs) == ["notes/a.txt"]
    plan = plan_from_reading(task, notes, expected, reading)
    assert plan is not None
    assert [step.inputs.path for step in plan.steps if isinstance(step.inputs, ReadTextInput)] == both
    assert [step.inputs.path for step in plan.steps if isinstance(step.inputs, WriteTextInput)] == both
    alone = TaskReading(inputs=both, outputs=["notes/a.txt"], kind="exact", operation=op("add_first_line", "DRAFT"))
    assert each_file_plan(task, notes, TaskExpectations.before(task, notes, alone), alone, BY_OMX) is None
    assert plan_from_reading(task, notes, TaskExpectations.before(task, notes, alone), alone) is None  # the model's


@pytest.mark.parametrize(
    ("task", "outputs"),
    [
        ("Replace 'colour' with 'color' in notes/a.txt", []),  # one file: the plan of one input and its output
        ("Replace 'colour' with 'color' in notes/a.txt and gone.txt", []),  # a file that is not there
        ("Replace 'colour' with 'color' in notes/a.txt and notes/", []),  # a folder too
        ("Copy the lines of notes/a.txt that hold 'colour' into notes/c.md", []),  # the rules read one output
        ("Keep the lines of notes/a.txt with 'colour', notes/c.md gets them", ["notes/c.md"]),  # the model read one
        ("Replace 'colour' with 'color' in notes/a.txt and link.txt", []),  # a link
    ],
)
def test_no_plan_where_the_files_named_are_not_each_changed_in_place(
    notes: Path, task: str, outputs: list[str]
) -> None:
    (notes / "link.txt").symlink_to(notes / "other.txt")
    operation = op("keep_containing", "colour") if "lines" in task else op("replace", "colour", "color")
    reading = TaskReading.model_validate({"inputs": [], "outputs": outputs, "kind": "exact", "operation": operation})
    expected = TaskExpectations.before(task, notes, reading)
    assert each_file_plan(task, notes, expected, reading, BY_OMX) is None


def test_no_plan_where_the_task_names_an_output_file(notes: Path) -> None:
    task = "Upper-case every .txt file in notes/ and save them together to out/all.txt"
    reading = TaskReading(inputs=[], outputs=["out/all.txt"], kind="exact", operation=op("upper"))
    expected = TaskExpectations.before(task, notes, reading)
    assert expected.output == "out/all.txt"
    assert each_file_plan(task, notes, expected, reading, BY_OMX) is None


# -- end to end ----------------------------------------------------------------------------------------------------


def read_as(kind: str = "exact") -> dict[str, Any]:
    """The model's reading of a task on a folder's files: no input file, no output."""
    read = {"inputs": [], "outputs": [], "from_input": True, "kind": kind, "shape": "free", "count": None,
            "max_words": None}  # fmt: skip
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}


def pick(name: str, text: str = "", new_text: str = "", number: int = 0) -> dict[str, Any]:
    return {"for": SCHEMA_TITLE, "content": json.dumps(op(name, text, new_text, number).model_dump())}


def model_calls(ws: Path) -> list[str]:
    return [c["purpose"] for c in kinds(trace_of(only_run(ws)), "model") if c["purpose"] != "reading"]


def text(ws: Path, name: str) -> str:
    return (ws / name).read_text(encoding="utf-8")


def test_a_line_is_added_at_the_top_of_each_txt_file_and_the_run_is_done_not_a_success(
    notes: Path, script: Callable[..., ScriptedModel]
) -> None:
    script(read_as(), pick("add_first_line", "Owner: Kim"))
    result = omx("Put the line 'Owner: Kim' at the top of every .txt file in notes/", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert text(notes, "notes/a.txt") == "Owner: Kim\napples\nthe colour red\n"
    assert text(notes, "notes/b.txt") == "Owner: Kim\nbread\n"
    assert text(notes, "notes/deep/d.txt") == "Owner: Kim\ndates and colour\n"
    assert text(notes, "notes/c.md") == "# Cherries\ncolour\n"  # not a .txt file
    assert text(notes, "notes/.hidden.txt") == "secret\n" and text(notes, "other.txt") == "outside the folder\n"
    assert model_calls(notes) == []  # no plan, no code asked of the model
    assert "planned by omx from the task's reading" in result.output
    assert "Result: success" not in result.output
    assert run_end(trace_of(only_run(notes)))["status"] == "done"  # nothing checked what the files hold


def test_a_word_is_replaced_in_each_file_of_the_folder(notes: Path, script: Callable[..., ScriptedModel]) -> None:
    script(read_as(), pick("replace", "colour", "color"))
    result = omx("Replace 'colour' with 'color' in all files under notes/", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert text(notes, "notes/a.txt") == "apples\nthe color red\n"
    assert text(notes, "notes/deep/d.txt") == "dates and color\n"
    assert text(notes, "notes/c.md") == "# Cherries\ncolor\n"
    assert text(notes, "notes/b.txt") == "bread\n"
    assert model_calls(notes) == []
    assert run_end(trace_of(only_run(notes)))["status"] != "success"


def test_an_empty_output_is_not_written_over_a_file_that_holds_text(
    notes: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Every line of b.txt holds 'b': its new text is empty, and omx writes nothing over it (the files written
    before it stay changed)."""
    script(read_as(), pick("drop_containing", "b"))
    result = omx("Remove the lines that contain 'b' from every .txt file in notes/", "--yes", input="y\n")
    assert result.exit_code != 0, result.output
    assert text(notes, "notes/a.txt") == "apples\nthe colour red\n"  # no 'b' in it: the same text written
    assert text(notes, "notes/b.txt") == "bread\n"  # not emptied
    assert "holds text: writing nothing over it would lose that text" in result.output
    assert run_end(trace_of(only_run(notes)))["status"] != "success"


def test_a_function_is_renamed_in_each_file_the_task_names(tmp_path: Path, script: Callable[..., ScriptedModel],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    files = {"app/util.py": "def calc_total(xs):\n    return sum(xs)\n",
             "app/main.py": "from util import calc_total\n\nprint(calc_total([3]))\n"}  # fmt: skip
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    script(read_as(), pick("replace", "calc_total", "compute_total"))
    result = omx("Rename the function calc_total to compute_total in app/util.py and app/main.py", input="y\n")
    assert result.exit_code == 0, result.output
    assert text(tmp_path, "app/util.py") == "def compute_total(xs):\n    return sum(xs)\n"
    assert text(tmp_path, "app/main.py") == "from util import compute_total\n\nprint(compute_total([3]))\n"
    assert model_calls(tmp_path) == []
    assert run_end(trace_of(only_run(tmp_path)))["status"] == "done"


@pytest.mark.parametrize(
    ("task", "picked"),
    [
        ("Upper-case every .rst file in notes/", pick("upper")),  # no file the pattern takes
        ("Add a first line to every .txt file in notes/", pick("add_first_line")),  # no TEXT: it does not fit
    ],
)
def test_the_model_plans_where_omx_makes_no_plan_of_each_file(
    notes: Path, script: Callable[..., ScriptedModel], task: str, picked: dict[str, Any]
) -> None:
    plan = {**PLAN_A, "steps": [{"id": 1, "description": "Read a note", "tool": "read_text",
                                 "inputs": {"path": "notes/b.txt"}}], "success_criteria": []}  # fmt: skip
    script(read_as(), picked, json.dumps(plan))
    result = omx(task, "--yes", input="y\n")
    assert model_calls(notes)[0] == "plan", result.output
    assert "planned by omx" not in result.output
    assert text(notes, "notes/a.txt") == "apples\nthe colour red\n"
