"""A list asked for in the words people use ("the three key points", "a numbered list of 4 takeaways", "5 keywords,
one per line", "in two sentences", "a '# Report' heading followed by bullet points") is read as a count of items in
a style and a first line: checked on the output's text, and asked of the llm step that writes it as that many items,
rendered in that style. Real files; the end-to-end case through omx with the scripted model."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.list_form import ListForm, count_sentences, first_line, list_form
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.task_reading import READING_SCHEMA_TITLE, TaskReading
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import omx

NOTES = "The build broke twice.\nThe cache fix landed.\nTwo people joined.\nThe release moved to May.\n"


@pytest.mark.parametrize(
    ("task", "form"),
    [
        ("Give me the three key points of data/notes.txt in out/p.md", ListForm(3, "bullets")),
        ("Write a numbered list of 4 takeaways from data/notes.txt to out/t.md", ListForm(4, "numbered")),
        ("List 5 keywords for data/notes.txt, one per line, in out/k.txt", ListForm(5, "lines")),
        ("Summarise data/notes.txt in two sentences and save it as out/s.txt", ListForm(2, "sentences")),
        ("Write a one-sentence summary of data/notes.txt to out/s.txt", ListForm(1, "sentences")),
        ("Summarise it in a single sentence into out/s.txt", ListForm(1, "sentences")),
        ("What are the two biggest risks? Write them as 2 short bullets to out/r.md", ListForm(2, "bullets", True)),
        ("Summarise a and b in one bullet point each (2 bullets) in out/s.md", ListForm(2, "bullets", True)),
        ("Write a summary to out/s.md: the first line is '# Summary', then bullet points",
         ListForm(None, "bullets", True)),
        ("Write the lines of src/app.py that start with 'import' to out/i.txt", None),  # lines picked: not a list
        ("Write the 3 most frequent words of data/notes.txt to out/w.txt", None),
        ("Write the first 3 lines of data/notes.txt to out/head.txt", None),
        ("Summarise a in 2 bullets and b in 3 bullets into out/s.md", None),  # two counts, neither the total
        ("Compose a two-line slogan for a bakery in out/s.txt", ListForm(2, "lines", said_lines=True)),
        ("Write a 4 line poem about autumn to out/p.txt", ListForm(4, "lines", said_lines=True)),
        ("Write a three-line advert for our cake to out/ad.txt", ListForm(3, "lines", said_lines=True)),
        ("Put an eight-line welcome for new staff in out/w.txt", ListForm(8, "lines", said_lines=True)),
        ("Write a haiku about the sea to out/h.txt", ListForm(3, "lines", said_lines=True)),  # a poem's form
        ("Write a funny limerick about a cat into out/l.txt", ListForm(5, "lines", said_lines=True)),
        ("Write three haiku about rain to out/h.txt", None),  # poems counted, not lines
        ("Write a one-line title for data/notes.txt to out/t.txt", None),  # one line: checked as one line
        ("Remove the 3-line header of data/t.csv", None),  # lines of the input
        ("Write a sonnet and a haiku to out/p.txt", None),  # two forms
    ],
)  # fmt: skip
def test_a_list_is_read_in_the_words_people_ask_for_it(task: str, form: ListForm | None) -> None:
    assert list_form(task) == form


@pytest.mark.parametrize(
    ("task", "line"),
    [
        ("Write a summary to out/s.md: the first line is '# Summary', then bullet points", "# Summary"),
        ("Make a summary with a '# Report' heading followed by 3 bullet points, in out/r.md", "# Report"),
        ("Write notes to out/n.md. Start with '## Notes' and list the dates", "## Notes"),
        ('The reply should begin with "Dear Kim," and be short; save it as out/r.txt', "Dear Kim,"),
        ("Write the lines of src/app.py that start with 'import' to out/i.txt", None),
        ("Each line that begins with '#' is a comment: count them into out/n.txt", None),
    ],
)
def test_a_first_line_is_the_one_the_task_quotes_for_its_output(task: str, line: str | None) -> None:
    assert first_line(task) == line


@pytest.mark.parametrize(
    ("form", "text", "count"),
    [
        (ListForm(3, "bullets"), "- a\n- b\n- c\n", 3),
        (ListForm(3, "bullets"), "1. a\n2) b\n* c\n", 3),  # any list marks count as items
        (ListForm(3, "bullets"), "a\nb\n\nc\n", 3),  # no marks: the lines
        (ListForm(3, "bullets", said_bullets=True), "a\nb\nc\n", 0),  # bullets said: only bullet marks count
        (ListForm(2, "numbered"), "1. a\n- b\n2. c\n", 2),
        (ListForm(2, "lines"), "alpha\n\nbeta\n", 2),
        (ListForm(2, "sentences"), "The build broke. It was fixed on May 2! Done?", 3),
        (ListForm(None, "bullets", True), "# Summary\n- a\n- b\n", 2),
    ],
)
def test_a_form_counts_its_own_items(form: ListForm, text: str, count: int) -> None:
    assert form.counted(text) == count


def test_sentences_are_pieces_ending_in_a_full_stop_question_or_exclamation_mark() -> None:
    assert count_sentences("") == 0
    assert count_sentences("One. Two? Three! Four") == 4
    assert count_sentences("Version 2.5 shipped. Done.") == 2  # a number's point ends no sentence


def reading(**fields: Any) -> TaskReading:
    base = {"inputs": ["data/notes.txt"], "outputs": [], "kind": "prose", "shape": "lines", "count": None}
    return TaskReading.model_validate(base | fields)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text(NOTES, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


@pytest.mark.parametrize(
    ("task", "reply", "written", "criteria"),
    [
        ("Give me the three key points of data/notes.txt in out/p.md", {"bullets": ["- build", "cache", "people"]},
         "- build\n- cache\n- people", ["out/p.md has 3 items (one a line)"]),
        ("Write a numbered list of 2 takeaways from data/notes.txt to out/p.md", {"items": ["cache", "May"]},
         "1. cache\n2. May", ["out/p.md has 2 numbered lines"]),
        ("List 2 keywords for data/notes.txt, one per line, in out/p.md", {"items": ["build", "release"]},
         "build\nrelease", ["out/p.md has 2 lines"]),
        ("Summarise data/notes.txt in two sentences into out/p.md",
         {"sentences": ["The build broke twice. Then it held", "The release moved"]},
         "The build broke twice. The release moved.", ["out/p.md has 2 sentences"]),
        ("Write a summary of data/notes.txt to out/p.md: the first line is '# Notes', then bullet points",
         {"bullets": ["# Notes", "build", "release"]}, "# Notes\n- build\n- release",
         ["out/p.md starts with the line '# Notes'", "out/p.md has bullet lines"]),
        ("Write a haiku about data/notes.txt to out/p.md", {"items": ["Build broke twice", "cache fix", "May"]},
         "Build broke twice\ncache fix\nMay", ["out/p.md has 3 lines"]),
    ],
)  # fmt: skip
def test_a_list_s_shape_is_rendered_in_its_style_and_its_form_checked(
    ws: Path, task: str, reply: dict[str, Any], written: str, criteria: list[str]
) -> None:
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/p.md"], count=len(reply[next(iter(reply))])))
    assert expected.shape is not None
    assert expected.shape.text(json.dumps(reply)) == written
    assert [check.criterion for check in expected.content] == criteria
    assert all(check.on(ws / "absent.md")[0] == "not met" for check in expected.content)
    (ws / "out").mkdir()
    (ws / "out" / "p.md").write_text(written + "\n", encoding="utf-8")
    assert [check.on(ws / "out" / "p.md")[0] for check in expected.content] == ["met"] * len(criteria)


def test_a_count_the_model_read_otherwise_is_neither_asked_nor_checked(ws: Path) -> None:
    task = "Give me the three key points of data/notes.txt in out/p.md"
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/p.md"], count=4))
    assert expected.shape is None and expected.content == ()


def test_a_poem_s_lines_are_asked_whatever_count_the_model_read(ws: Path) -> None:
    """A poem's form is the task's own words: the 0.5B model read no count, or another, for a limerick."""
    task = "Write a limerick about data/notes.txt to out/p.md"
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/p.md"], count=2))
    assert expected.shape is not None
    items = expected.shape.schema["properties"]["items"]
    assert (items["minItems"], items["maxItems"]) == (5, 5)


def test_an_unnumbered_list_is_asked_as_two_to_eight_items(ws: Path) -> None:
    task = "Write a summary of data/notes.txt to out/p.md as bullet points"
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/p.md"]))
    assert expected.shape is not None
    bullets = expected.shape.schema["properties"]["bullets"]
    assert (bullets["minItems"], bullets["maxItems"]) == (2, 8)


def test_a_heading_and_bullets_asked_by_the_task_are_what_omx_writes(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model read "the first line is '# Summary', then bullet points" as one line and copied the README
    under its own heading: the llm step is now asked for bullets, and the line the task quotes is put first."""
    task = "Write a summary of data/notes.txt to out/summary.md: the first line is '# Summary', then bullet points"
    read = {"inputs": ["data/notes.txt"], "outputs": ["out/summary.md"], "from_input": True, "kind": "prose",
            "shape": "lines", "count": 1, "max_words": None}  # fmt: skip
    model = script({"for": READING_SCHEMA_TITLE, "content": json.dumps(read)},
                   json.dumps({"bullets": ["The build broke twice", "The release moved to May"]}))  # fmt: skip
    result = omx(task, "--yes")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8") == (
        "# Summary\n- The build broke twice\n- The release moved to May\n"
    )
    assert "Result: done, form checked, content not checked" in result.output
    asked = model.requests[-1]["json_mode"]
    assert asked and asked["properties"]["bullets"]["maxItems"] == 8
