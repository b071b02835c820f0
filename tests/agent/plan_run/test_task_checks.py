"""``agent.plan_run.task_checks``: what omx checks from the task's own words, whatever criteria the plan wrote
(issue 28: a count written as the text, a file the task names and the run never wrote, were not failures); the
forms it reads, no value it computes; and exact work, which the model's reading says, not the rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.task_reading import TaskReading


def statuses(expected: TaskExpectations) -> dict[str, str]:
    return {c.criterion: c.status for c in expected.check()}


def criteria(expected: TaskExpectations) -> list[str]:
    return [c.criterion for c in expected.content]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "data/a.txt").write_text("one\ntwo\nthree\nfour\n")
    (tmp_path / "data/list.txt").write_text("milk\neggs\n")
    (tmp_path / "src/app.py").write_text("# TODO: x\n")
    return tmp_path


def test_the_output_named_after_to_or_into_must_be_written_by_the_run(ws: Path) -> None:
    expected = TaskExpectations.before("Count the lines of data/a.txt and write just the number into out/n.txt", ws)
    assert list(expected.outputs) == ["out/n.txt"]
    assert statuses(expected) == {
        "out/n.txt is written by this run (from the task)": "not met",  # never written
        "out/n.txt holds just a number (from the task)": "not met",
    }
    (ws / "out").mkdir()
    (ws / "out/n.txt").write_text("one\ntwo\nthree\nfour\n")  # issue 28: the text, not a count
    assert list(statuses(expected).values()) == ["met", "not met"]
    (ws / "out/n.txt").write_text("4\n")
    assert list(statuses(expected).values()) == ["met", "met"]


def test_an_existing_file_the_task_appends_to_must_change(ws: Path) -> None:
    expected = TaskExpectations.before("Append the line 'bread' to data/list.txt", ws)
    written = "data/list.txt is written by this run (from the task)"
    assert statuses(expected) == {written: "not met"}
    (ws / "data/list.txt").write_text("milk\neggs\nbread\n")  # by any step: python3 -c counts too
    assert statuses(expected) == {written: "met"}


def test_a_path_after_in_is_an_output_only_if_it_was_not_there(ws: Path) -> None:
    todo = TaskExpectations.before("Count the TODO comments in src/app.py and write just the number to out/t.txt", ws)
    assert list(todo.outputs) == ["out/t.txt"]  # src/app.py is the input
    summary = TaskExpectations.before("Summarise data/a.txt in exactly 2 bullet points in out/s.md", ws)
    assert list(summary.outputs) == ["out/s.md"] and criteria(summary) == ["out/s.md has 2 bullet lines"]
    saved = TaskExpectations.before("Summarise data/a.txt in 2 bullet points and save it as out/s.md", ws)
    assert list(saved.outputs) == ["out/s.md"] and criteria(saved) == ["out/s.md has 2 bullet lines"]
    renamed = TaskExpectations.before("Keep data/a.txt as data/list.txt", ws)
    assert list(renamed.outputs) == []  # a path that is there after "as" is not made by the run


@pytest.mark.parametrize("arrow", ["->", "=>", "\u2192"])
def test_a_path_after_an_arrow_is_an_output(ws: Path, arrow: str) -> None:
    expected = TaskExpectations.before(f"sum up data/a.txt in a single line {arrow} out/s.txt", ws)
    assert list(expected.outputs) == ["out/s.txt"] and criteria(expected) == ["out/s.txt has 1 line"]


def test_what_the_task_says_of_the_content_is_checked(ws: Path) -> None:
    (ws / "out").mkdir()
    cases = {
        "Summarise data/a.txt in 3 bullet points and write them to out/s.md": ("- a\n- b\n- c\n", "- a\n- b\n"),
        "Summarise data/a.txt in at most 5 words and write it to out/s.md": ("four words are here\n", "a b c d e f\n"),
        "Write a one-line title for data/a.txt into out/s.md": ("A title\n", "A title\nand more\n"),
        "Convert data/a.txt to a markdown table in out/s.md": ("| a | b |\n|---|---|\n| 1 | 2 |\n", "a, b\n1, 2\n"),
        "Count the words in data/a.txt and write just the number to out/s.md": ("4\n", "4 words\n"),
        "Use python3 -c to add up data/a.txt and write just the sum to out/s.md": ("10\n", "the sum is 10\n"),
    }
    for task, (right, wrong) in cases.items():
        (ws / "out/s.md").unlink(missing_ok=True)
        expected = TaskExpectations.before(task, ws)
        assert len(expected.content) == 1, task
        (ws / "out/s.md").write_text(right)
        assert set(statuses(expected).values()) == {"met"}, task
        (ws / "out/s.md").write_text(wrong)
        assert "not met" in statuses(expected).values(), task


def test_what_cannot_be_read_without_guessing_is_not_derived(ws: Path) -> None:
    both = TaskExpectations.before("Summarise data/a.txt in 2 bullets or in 3 bullets in out/s.md", ws)
    assert criteria(both) == []  # two numbers of bullets: which one?
    each = TaskExpectations.before(
        "Summarise data/a.txt and data/list.txt in one bullet each (2 bullets) in o/s.md", ws
    )
    assert criteria(each) == ["o/s.md has 2 bullet lines"]  # the one in brackets sums the others up
    two = TaskExpectations.before("Copy data/a.txt to out/m.txt and data/list.txt to out/n.txt in 2 bullets", ws)
    assert set(two.outputs) == {"out/m.txt", "out/n.txt"} and criteria(two) == []
    assert TaskExpectations.before("List the files in data/", ws).check() == []


def test_a_plans_number_the_task_never_said_is_not_checked(ws: Path) -> None:
    from agent.plan_run.criteria import CriterionCheck

    expected = TaskExpectations.before("Summarise data/a.txt in three bullets into out/s.md", ws)
    said = CriterionCheck(criterion="out/s.md has 3 bullet lines", status="not met", detail="4 bullet lines")
    guessed = CriterionCheck(criterion="out/s.md has 5 lines", status="met", detail="5 non-empty lines")
    in_a_name = CriterionCheck(criterion="out/v2.md exists", status="met", detail="the file exists")
    assert expected.vet(said) == said  # "three" is 3
    assert (
        expected.vet(guessed).status == "not checked" and "5 is the plan's own number" in expected.vet(guessed).detail
    )
    assert expected.vet(in_a_name) == in_a_name


@pytest.mark.parametrize(
    ("task", "forms"),
    [
        ("Count the lines of data/a.txt and write just the number to out/n.txt", ["out/n.txt holds just a number"]),
        ("How many lines has data/a.txt? Number only, to out/n.txt", ["out/n.txt holds just a number"]),
        ("Total of data/a.txt in out/n.txt, nothing but the total", ["out/n.txt holds just a number"]),
        ("Write the first 2 lines of data/a.txt to out/n.txt", []),
        ("Write the text of data/a.txt in upper case to out/n.txt", []),
        ("Write the lines of data/a.txt that contain 'o' to out/n.txt", []),
        ("Sort the lines of data/a.txt alphabetically into out/n.txt", []),
    ],
)
def test_the_rules_check_forms_and_compute_no_value_from_the_input(ws: Path, task: str, forms: list[str]) -> None:
    """What the output must hold is no rule's to compute: such rules, written from the tuning tasks' wording,
    reached no held-out task (docs/omx.md). A form is all the rules check, and it is no check of the value."""
    expected = TaskExpectations.before(task, ws)
    assert criteria(expected) == forms
    (ws / "out").mkdir()
    (ws / "out/n.txt").write_text("4\n")
    assert {c.kind for c in expected.check()} == {"form"}
    assert not expected.exact  # no reading: no exact work


def reading(**fields: Any) -> TaskReading:
    return TaskReading.model_validate({"inputs": [], "outputs": ["out/n.txt"], "kind": "exact"} | fields)


@pytest.mark.parametrize(
    ("task", "read", "exact"),
    [
        ("Count the lines of data/a.txt and write just the number to out/n.txt", reading(), True),
        ("Count the lines of the shopping list and write just the number to out/n.txt",
         reading(inputs=["data/list.txt"]), True),  # the reading names the input, the task does not
        ("Count the Python files in src/ and write just the number to out/n.txt", reading(), True),  # a directory
        ("Write the number of days in a leap year to out/n.txt", reading(), False),  # nothing to compute from
        ("Count the lines of data/nope.txt and write just the number to out/n.txt", reading(), False),  # not there
        ("Count the lines of the log and write just the number to out/n.txt", reading(inputs=["data/log.txt"]),
         False),  # the reading's input is not there either
        ("Count the lines of data/a.txt and write just the number to out/n.txt", reading(kind="prose"), False),
        ("Count the lines of data/a.txt and write just the number to out/n.txt", reading(kind="command"), False),
        ("Count the lines of data/a.txt and write just the number to out/n.txt", None, False),  # no reading
        ("Count the lines of data/a.txt and write the number to out/n.txt and out/m.txt",
         reading(outputs=["out/n.txt", "out/m.txt"]), False),  # which output is the exact one?
    ],
)  # fmt: skip
def test_exact_work_is_the_models_reading_with_an_input_to_compute_from(
    ws: Path, task: str, read: TaskReading | None, exact: bool
) -> None:
    expected = TaskExpectations.before(task, ws, read)
    assert expected.exact is exact
    if read is not None and read.kind == "exact" and len(expected.outputs) == 1:
        assert expected.value_asked  # a value is asked where the model read exact work, input or not
    if read is not None and expected.reading is not None:
        assert expected.reading["exact"] is exact  # the trace says what omx acted on


def test_a_plans_guess_is_not_given_to_the_model_to_judge(ws: Path) -> None:
    from agent.plan_run.criteria import CriterionCheck

    expected = TaskExpectations.before("Write every TODO comment of src/app.py into out/todo.md", ws)
    guess = CriterionCheck(criterion="out/todo.md has 10 TODO comments", status="not checked", judgeable=True,
                           file="out/todo.md")  # fmt: skip
    vetted = expected.vet(guess)
    assert (vetted.status, vetted.judgeable, vetted.file) == ("not checked", False, None)
    assert "10 is the plan's own number" in vetted.detail
    plain = guess.model_copy(update={"criterion": "out/todo.md lists only TODO comments"})
    assert expected.vet(plain) == plain


def test_a_plans_quoted_text_the_task_and_its_input_never_said_is_not_checked(ws: Path) -> None:
    """Issue 28: 'FILE contains "TEXT"' is the plan's own claim where neither the task nor its input says TEXT: the
    llm step of the same plan may be told to write it, and it says nothing of the task being done."""
    from agent.plan_run.criteria import CriterionCheck

    (ws / "data/log.txt").write_text("INFO start\nERROR disk full\n")
    expected = TaskExpectations.before("Write the lines of data/log.txt that contain ERROR to out/e.txt", ws)

    def contains(text: str, status: str = "met") -> CriterionCheck:
        return CriterionCheck(criterion=f"out/e.txt contains '{text}'", status=status, detail="")  # type: ignore[arg-type]

    assert expected.vet(contains("ERROR")) == contains("ERROR")  # the task's word
    assert expected.vet(contains("disk full")) == contains("disk full")  # the input's text
    assert expected.vet(contains("error", "not met")) == contains("error", "not met")  # case aside
    for status in ("met", "not met"):
        vetted = expected.vet(contains("Errors found", status))
        assert (vetted.status, vetted.judgeable) == ("not checked", False)
        assert vetted.detail.startswith("'Errors found' is the plan's own text, not the task's nor its input's")
    named = CriterionCheck(criterion="`out/e.txt` exists", status="met", detail="the file exists")
    assert expected.vet(named) == named  # a quoted file name is no text to look for


def test_an_input_changed_by_the_run_cannot_make_a_plans_text_the_inputs(ws: Path) -> None:
    from agent.plan_run.criteria import CriterionCheck

    expected = TaskExpectations.before("Write the first 2 lines of data/a.txt to out/h.txt", ws)
    (ws / "data/a.txt").write_text("Summary\n")  # written by the run, after omx read the task
    check = CriterionCheck(criterion='out/h.txt contains "Summary"', status="met", detail="")
    assert expected.vet(check).status == "not checked"
