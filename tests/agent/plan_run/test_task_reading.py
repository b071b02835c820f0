"""The model reads the task, the rules only check: one schema-constrained request returns the task's inputs, outputs,
kind and shape; omx acts on a part of it only where its own reading (the rules) says the same, and withholds success
where either reads a value. Real files, the real ``omx`` command with a scripted model for the end-to-end cases."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.task_reading import (
    MAX_OPERATIONS,
    OPERATIONS_SCHEMA_TITLE,
    READING_SCHEMA_TITLE,
    TaskReading,
    named_paths,
    operations_schema,
    read_task,
    reading_schema,
)
from agent.plan_run.text_operations import SCHEMA_TITLE as TEXT_OPERATION
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import omx, only_run, trace_of

LOG = "09:00 INFO start\n09:01 ERROR disk full\n09:02 INFO retry\n09:03 ERROR disk full again\n"
USERS = '[{"name": "ada"}, {"name": "bob"}]\n'


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "log.txt").write_text(LOG, encoding="utf-8")
    (workspace / "data" / "users.json").write_text(USERS, encoding="utf-8")
    (workspace / "docs").mkdir()
    (workspace / "docs" / "guide.md").write_text("# Guide\nStep one.\nStep two.\n", encoding="utf-8")
    monkeypatch.chdir(workspace)
    return workspace.resolve()


def reading(**fields: Any) -> TaskReading:
    return TaskReading.model_validate({"inputs": [], "outputs": [], "kind": "exact", "shape": "free"} | fields)


def marked(**fields: Any) -> dict[str, Any]:
    """A scripted reply that answers the reading's request only."""
    return {"for": READING_SCHEMA_TITLE, "content": reading(**fields).model_dump_json()}


def marked_text(content: str) -> dict[str, Any]:
    return {"for": READING_SCHEMA_TITLE, "content": content}


def test_the_reading_is_asked_with_a_schema_whose_inputs_are_the_workspaces_files(ws: Path) -> None:
    model = ScriptedModel([marked(inputs=["data/log.txt"], outputs=["out/errors.txt"])])
    got, why = read_task(model, "Put the error lines of data/log.txt in out/errors.txt", ws)
    assert why is None and got is not None
    assert (got.inputs, got.outputs, got.kind) == (["data/log.txt"], ["out/errors.txt"], "exact")
    (request,) = model.requests
    schema = request["json_mode"]
    assert schema["title"] == READING_SCHEMA_TITLE
    assert schema["properties"]["inputs"]["items"]["enum"] == ["data", "data/log.txt", "data/users.json", "docs",
                                                               "docs/guide.md"]  # fmt: skip
    assert schema["properties"]["outputs"]["items"]["enum"] == ["data/log.txt", "out/errors.txt"]  # the task's
    assert set(schema["required"]) == set(schema["properties"])  # strict: every field named


def test_a_command_task_s_operations_are_asked_apart_with_the_files_sizes_and_dates(ws: Path) -> None:
    """Where the model reads kind command, the operations are asked after the reading, apart (in the reading's own
    request the 0.5B model read summaries and filters as files acted on). "The largest file" or "changed before
    May" is read from the listing that request gives, each file with its size and date; each source is one of the
    workspace's paths."""
    changed = datetime(2025, 3, 4, 12, tzinfo=UTC).timestamp()
    os.utime(ws / "data" / "log.txt", (changed, changed))
    ops = {"operations": [{"action": "move", "source": "data/log.txt", "target": "old/"}]}
    model = ScriptedModel([marked(kind="command"), {"for": OPERATIONS_SCHEMA_TITLE, "content": json.dumps(ops)}])
    got, _ = read_task(model, "Move the largest file of data/ into old/", ws)
    assert got is not None and [op.model_dump() for op in got.operations] == ops["operations"]
    first, second = model.requests
    assert "operations" not in first["json_mode"]["properties"] and "bytes" not in first["messages"][-1]["content"]
    asked = second["messages"][-1]["content"]
    assert f"data/log.txt ({len(LOG)} bytes, changed 2025-03-04)\n" in asked and "\ndocs/\n" in asked
    assert f"(today is {datetime.now(UTC).date().isoformat()})" in asked
    operation = second["json_mode"]["properties"]["operations"]["items"]
    assert operation["properties"]["action"]["enum"] == ["move", "copy", "delete", "make_dir"]
    # the sources: the folder the task names and what it holds (docs/ is listed, not offered)
    assert operation["properties"]["source"]["enum"] == ["", "data", "data/log.txt", "data/users.json"]
    assert second["json_mode"]["properties"]["operations"]["maxItems"] == 4  # 3 sources, 1 new folder
    assert operation["required"] == ["action", "source", "target"] and operation["additionalProperties"] is False
    assert "$defs" not in second["json_mode"]  # inline: the choices are this run's


@pytest.mark.parametrize(
    ("task", "sources", "targets", "most"),
    [
        ("Move data/log.txt and docs/guide.md into a new folder called old/",
         ["", "data/log.txt", "docs/guide.md"], ["", "old", "old/guide.md", "old/log.txt"], 3),
        ("Make a copy of docs/guide.md called docs/guide.md.bak", ["", "docs/guide.md"], ["", "docs/guide.md.bak"], 2),
        ("Rename data/log.txt to old.txt", ["", "data/log.txt"], ["", "data/old.txt", "old.txt"], 2),
        ("Rename the folder docs/ to manuals/", ["", "docs", "docs/guide.md"],
         ["", "manuals", "manuals/docs", "manuals/guide.md"], 3),  # never docs/guide.md (there), nor docs/
        ("Delete every empty file", ["", "data", "data/log.txt", "data/users.json", "docs", "docs/guide.md"], None,
         MAX_OPERATIONS),  # no path named: any of the workspace's, any target
        ("Delete the .json files in data/", ["", "data/users.json"], [""], 1),  # of the kind named only
        ("Create a folder named media/videos and move docs/guide.md into it", ["", "docs/guide.md"],
         ["", "media/videos", "media/videos/guide.md"], 2),  # a folder named without its slash
        ("Sort the files in docs/ into docs/text/ and docs/tables/", ["", "docs/guide.md"],
         ["", "docs/tables", "docs/tables/guide.md", "docs/text", "docs/text/guide.md"], 3),  # docs/: where they go
    ],
)  # fmt: skip
def test_the_operations_act_on_the_paths_the_task_names_where_it_names_some(
    ws: Path, task: str, sources: list[str], targets: list[str] | None, most: int
) -> None:
    """Offered every path, the 0.5B model moved the files of another folder than the two the task named, listed
    twenty copies into one backup, one of each file of the workspace, and renamed photos/ "to" photos/p1.jpg; it
    deleted tmp/keep.txt for "Delete the .tmp files in tmp/", and moved inbox/ into inbox/pdf/ for "Sort the files
    in inbox/ into folders by type: PDFs into inbox/pdf/ ..."."""
    schema = operations_schema(ws, task)
    operation = schema["properties"]["operations"]["items"]["properties"]
    assert operation["source"]["enum"] == sources
    assert operation["target"].get("enum") == targets
    assert schema["properties"]["operations"]["maxItems"] == most


@pytest.mark.parametrize(
    ("task", "kind"),
    [
        ("Write a polite reply to the customer in data/log.txt offering a refund, saved as out/reply.txt", "prose"),
        ("Move the summary of the log, data/log.txt, into old/", "command"),  # files moved, whatever they hold
    ],
)
def test_composed_wording_read_as_a_command_with_no_pick_is_prose_unless_the_task_acts_on_files(
    ws: Path, task: str, kind: str
) -> None:
    """The 0.5B model read "Write a polite reply to the customer in mail/complaint.txt ..., saved as out/reply.txt"
    as a command, picked nothing, and its operations moved the complaint to out/reply.txt."""
    ops = {"operations": [{"action": "move", "source": "data/log.txt", "target": "out/reply.txt"}]}
    model = ScriptedModel([marked(kind="command"), {"for": OPERATIONS_SCHEMA_TITLE, "content": json.dumps(ops)}])
    got, _ = read_task(model, task, ws)
    assert got is not None and got.kind == kind
    assert bool(got.operations) is (kind == "command")


@pytest.mark.parametrize(
    ("task", "kind"),
    [
        ("What is the main risk named in docs/guide.md? Answer in one sentence in out/risk.txt", "prose"),
        ("Explain docs/guide.md in two short sentences, into out/e.txt", "prose"),
        ("one paragraph intro to the club for its web page, from docs/guide.md -> out/intro.md", "prose"),
        ("a short welcome message for new members based on docs/guide.md, in out/m.txt", "prose"),
        ("thank you note to Ana for her gift, her letter is docs/guide.md. save as out/t.txt", "prose"),
        ("need a notice for the lobby about the closure, details in docs/guide.md -> out/n.txt", "prose"),
        ("instagram post for the open day, info in docs/guide.md, 50 words max -> out/p.txt", "prose"),
        ("How many lines does docs/guide.md have? Into out/n.txt", "exact"),
    ],
)
def test_a_task_that_asks_for_composed_wording_or_limits_its_sentences_is_prose(ws: Path, task: str, kind: str) -> None:
    """The 0.5B model read "What is the main risk ...? Answer in one sentence" as exact work, and code copied the
    input; it read "one paragraph intro to the bakery ..." as exact work, and code counted the input's lines; it
    read a thank-you note as exact work, and code printed the letter's second line, empty."""
    pick = {"for": TEXT_OPERATION, "content": json.dumps({"op": "top_words", "text": "x", "new_text": "", "number": 0})}
    got, _ = read_task(ScriptedModel([marked(kind="exact"), pick]), task, ws)
    assert got is not None and got.kind == kind


@pytest.mark.parametrize(
    ("task", "named"),
    [
        ("Create a folder named media/videos and move photos/clip.mp4 into it", ["media/videos/", "photos/clip.mp4"]),
        ("Put it in the directory `backup/old`.", ["backup/old/"]),
        ("Move build.log into a new folder called logs/old_builds/", ["build.log", "logs/old_builds/"]),
        ("Copy media/videos into archive/", ["media/", "archive/"]),  # no word folder: only what has its slash
        ("Sort q/ by year, e.g. q/2023/a.txt, i.e. by name", ["q/", "q/2023/a.txt"]),  # abbreviations are no files
    ],
)
def test_a_folder_is_named_also_without_its_slash_after_the_word_folder(task: str, named: list[str]) -> None:
    """ "a folder named media/videos" was read as media/, and the 0.5B model's operations moved the file into it."""
    assert named_paths(task) == named


def test_a_pick_on_a_folder_s_files_makes_a_task_read_as_prose_exact_work(ws: Path) -> None:
    """The 0.5B model read "Which files in docs/ were changed after 2020-01-01? ..." as prose."""
    task = "Which files in docs/ were changed after 2020-01-01? List their names in out/recent.txt"
    answer = {"op": "files_changed_after", "text": "2020-01-01", "new_text": "", "number": 0}
    pick = {"for": TEXT_OPERATION, "content": json.dumps(answer)}
    got, _ = read_task(ScriptedModel([marked(kind="prose"), pick]), task, ws)
    assert got is not None and got.kind == "exact"


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        ({"op": "json_value", "text": "name", "new_text": "", "number": 0}, "exact"),
        ({"op": "json_field", "text": "name", "new_text": "", "number": 0}, "exact"),
        ({"op": "count_words", "text": "", "new_text": "", "number": 0}, "prose"),  # no count asked: no pick
        ({"op": "write_prose", "text": "", "new_text": "", "number": 0}, "prose"),
    ],
)
def test_a_value_looked_up_makes_a_question_read_as_prose_exact_work(ws: Path, answer: dict, kind: str) -> None:
    """A question whose answer a file holds ("What is the name of the first user in data/users.json?") is exact
    work where the model read prose and picked a lookup."""
    task = "What is the name of the first user in data/users.json? Only the name, in out/first.txt"
    pick = {"for": TEXT_OPERATION, "content": json.dumps(answer)}
    got, _ = read_task(ScriptedModel([marked(kind="prose"), pick]), task, ws)
    assert got is not None and got.kind == kind


def test_a_task_naming_no_path_lets_the_model_name_no_output(ws: Path) -> None:
    model = ScriptedModel([marked()])
    read_task(model, "Write a haiku about rain", ws)
    outputs = model.requests[0]["json_mode"]["properties"]["outputs"]
    assert outputs["maxItems"] == 0 and "enum" not in outputs["items"]  # no empty enum: some servers refuse one


@pytest.mark.parametrize(
    ("replies", "why"),
    [
        ([marked_text('{"inputs": [], "outputs": [], "kind": "maybe"}')], "the reply was no reading"),
        ([marked_text("not json")], "the reply was no reading"),
        (["a plan's reply, not the reading's"], "the request failed: LLM error: the scripted model has no reply"),
    ],
)
def test_no_reading_says_why(ws: Path, replies: list[Any], why: str) -> None:
    got, said = read_task(ScriptedModel(replies), "Sort data/log.txt into out/s.txt", ws)
    assert got is None and said is not None and said.startswith(why)


def test_an_output_the_rules_miss_is_one_where_the_model_reads_it_and_the_task_names_it(ws: Path) -> None:
    """ "PATH should hold ...": the rules read only "to/into/in/as PATH" and arrows, and found no output at all."""
    task = "out/people.md should hold the names from data/users.json, one per line"
    assert TaskExpectations.before(task, ws).outputs == {}
    expected = TaskExpectations.before(task, ws, reading(inputs=["data/users.json"], outputs=["out/people.md"]))
    assert expected.outputs == {"out/people.md": None}


def test_an_output_the_task_never_names_is_not_one(ws: Path) -> None:
    task = "Put the error lines of data/log.txt into out/errors.txt"
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/errors.txt", "out/summary.txt"]))
    assert list(expected.outputs) == ["out/errors.txt"]
    assert expected.reading is not None
    assert expected.reading["outputs_of_the_model_only"] == ["out/summary.txt"]


def test_a_file_already_there_is_an_output_only_where_the_rules_read_it_so_too(ws: Path) -> None:
    """The 0.5B model listed the file a summary is made of as the summary's output: a check that the run wrote it
    would fail a right run; it listed the folder of reviews to sum up. Listed so, with no output of its own that
    holds, it leaves the rules' new file."""
    task = "Summarise docs/guide.md in 2 bullets into out/guide.md"
    wrong = TaskExpectations.before(task, ws, reading(outputs=["docs/guide.md"], kind="prose"))
    assert wrong.outputs == {"out/guide.md": None}
    on_a_file_there = "Summarise docs/guide.md in 2 bullets in data/log.txt"  # the rules read no file there "in"
    assert TaskExpectations.before(on_a_file_there, ws, reading(outputs=["docs/guide.md"], kind="prose")).outputs == {}
    folder = "read all the files in docs/ and sum them up in 4 bullets -> out/docs.md"  # a folder that is there
    assert TaskExpectations.before(folder, ws, reading(outputs=["docs/"], kind="prose")).outputs == {
        "out/docs.md": None
    }
    mixed = "sum up docs/ in 4 bullets -> out/docs.md"  # and an output of the model's that is not there
    assert TaskExpectations.before(mixed, ws, reading(outputs=["docs/", "out/x.md"], kind="prose")).outputs == {}
    on_top = "Add a comment at the very top of docs/guide.md that says: Guide"  # in place, where the rules read it
    assert list(TaskExpectations.before(on_top, ws, reading(outputs=["docs/guide.md"])).outputs) == ["docs/guide.md"]
    appended = "Append the line 'Step three.' to docs/guide.md"
    both = TaskExpectations.before(appended, ws, reading(outputs=["docs/guide.md"], kind="command"))
    assert list(both.outputs) == ["docs/guide.md"]


def test_an_output_only_the_rules_read_is_not_acted_on(ws: Path) -> None:
    task = "Put the error lines of data/log.txt into out/errors.txt"
    expected = TaskExpectations.before(task, ws, reading(outputs=[]))
    assert expected.outputs == {} and expected.content == ()
    assert expected.reading is not None and expected.reading["outputs_of_the_rules_only"] == ["out/errors.txt"]


def test_a_transformation_is_exact_work_where_the_model_reads_it_so(ws: Path) -> None:
    """The rules read "the ERROR lines of X" and checked an untranslated copy as met: a false success. They read no
    such thing now; whether the output is code's exact result is the model's reading."""
    task = "Translate the lines of data/log.txt that contain ERROR into French, into out/fr.txt"
    rules = TaskExpectations.before(task, ws)
    assert rules.content == () and not rules.exact and not rules.value_asked
    prose = TaskExpectations.before(task, ws, reading(outputs=["out/fr.txt"], kind="prose"))
    assert prose.content == () and not prose.exact and not prose.value_asked
    exact = TaskExpectations.before(task, ws, reading(outputs=["out/fr.txt"], kind="exact"))
    assert exact.exact and exact.value_asked and exact.content == ()


def test_exact_work_needs_an_output_the_model_says_is_made_from_the_input(ws: Path) -> None:
    """The model writes whether the output is made from the input just before the kind: its "false" vetoes its own
    "exact" (the work then asks no value of code either)."""
    task = "Write the lines of data/log.txt that contain ERROR to out/errors.txt"
    composed = TaskExpectations.before(task, ws, reading(outputs=["out/errors.txt"], kind="exact", from_input=False))
    assert not composed.exact and not composed.value_asked
    made = TaskExpectations.before(task, ws, reading(outputs=["out/errors.txt"], kind="exact", from_input=True))
    assert made.exact and made.value_asked


def test_the_model_writes_whether_the_output_is_made_from_the_input_just_before_the_kind(ws: Path) -> None:
    """A constrained server writes the fields in the schema's order: ``"from_input": true,`` written first, the
    0.5B model read exact work as exact more often."""
    properties = list(reading_schema(ws, "Sort data/log.txt into out/sorted.txt")["properties"])
    assert properties.index("from_input") == properties.index("kind") - 1
    assert "from_input" in reading_schema(ws, "Sort data/log.txt into out/sorted.txt")["required"]


@pytest.mark.parametrize(
    ("shape", "count", "kept"),
    [
        ("bullets", 3, True),
        ("bullets", None, True),
        ("one_line", 3, True),
        ("bullets", 4, False),
        ("free", None, False),
    ],
)
def test_n_bullets_are_checked_where_the_model_read_the_same(ws: Path, shape: str, count: int | None,
                                                             kept: bool) -> None:  # fmt: skip
    task = "Summarise docs/guide.md in 3 bullets into out/guide.md"
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/guide.md"], kind="prose", shape=shape,
                                                         count=count))  # fmt: skip
    bullets = [check for check in expected.content if "bullet" in check.criterion]
    assert bool(bullets) is kept
    assert (expected.shape is not None) is kept  # the llm step is asked for the shape only where both read it


@pytest.mark.parametrize(
    ("max_words", "count", "kept"), [(30, None, True), (None, 30, True), (20, None, False), (None, None, True)]
)
def test_at_most_n_words_is_checked_where_the_model_read_the_same_n(
    ws: Path, max_words: int | None, count: int | None, kept: bool
) -> None:
    """The model read the N of "at most 30 words": as the most words, or as a count (a small model puts it there as
    often), or read no limit (the 0.5B model left "under 80 words" out: a limit written in the task is not misread);
    a different N is a different reading, and nothing is acted on."""
    task = "Summarise docs/guide.md in at most 30 words into out/guide.txt"
    read = reading(outputs=["out/guide.txt"], kind="prose", max_words=max_words, count=count)
    expected = TaskExpectations.before(task, ws, read)
    assert bool([check for check in expected.content if "at most 30 words" in check.criterion]) is kept
    assert (expected.shape is not None) is kept


@pytest.mark.parametrize(
    ("said", "limit"),
    [("at most 30", 30), ("no more than 30", 30), ("up to 30", 30), ("under 30", 29), ("fewer than ten", 9)],
)
def test_a_limit_of_words_is_read_as_people_write_it(ws: Path, said: str, limit: int) -> None:
    task = f"Summarise docs/guide.md in {said} words into out/guide.txt"
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/guide.txt"], kind="prose"))
    assert [check.criterion for check in expected.content] == [f"out/guide.txt has at most {limit} words"]


@pytest.mark.parametrize(
    ("said", "limit"), [("50 words max", 50), ("max 50 words", 50), ("50 words or less", 50), ("30 words tops", 30)]
)
def test_a_limit_of_words_written_after_its_number_is_read(ws: Path, said: str, limit: int) -> None:
    """The 0.5B model read "instagram post for the puppy party, info in notes/puppy_party.txt, 50 words max" as 50
    lines, and no rule read a limit."""
    task = f"instagram post about docs/guide.md, {said} -> out/post.txt"
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/post.txt"], kind="prose"))
    assert [check.criterion for check in expected.content] == [f"out/post.txt has at most {limit} words"]


def test_a_text_allowed_more_words_than_a_line_is_shortened_to_it_by_whole_sentences_its_lines_kept(ws: Path) -> None:
    """The 0.5B model wrote an email of 85 words where the task allowed 79. Asked for one string whose pattern ended
    after the 79th word, it wrote the email as one line; asked for an array of lines, one line twenty times. It is
    asked in prose, and the reply loses the last sentences of its longest lines until it is within the limit."""
    task = "Write an email to Kim (under 80 words) about the move. Save it as out/mail.txt"
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/mail.txt"], kind="prose"))
    assert [check.criterion for check in expected.content] == ["out/mail.txt has at most 79 words"]
    assert expected.shape is not None and expected.shape.what == "a text of at most 79 words"
    assert expected.shape.schema is None and expected.shape.from_prose is not None  # asked in prose
    body = " ".join(f"Sentence number {i} of the body is here." for i in range(12))  # 84 words
    email = f"Hi Kim,\n\n{body}\n\nBest,\nSam"
    written = expected.shape.from_prose(email)
    assert written is not None and len(written.split()) <= 79
    assert written.startswith("Hi Kim,\n\nSentence number 0") and written.endswith("is here.\n\nBest,\nSam")
    short = "Hi Kim,\n\nThe move is on Monday.\n\nBest, Sam"
    assert expected.shape.from_prose(short) == short  # within the limit: as written


def test_a_value_is_asked_where_either_reading_says_so(ws: Path) -> None:
    """Withholding "success" is no action on a reading: the model's "exact" alone is enough for it."""
    task = "Which line of data/log.txt says the disk is full first? Copy it to out/first.txt"
    assert not TaskExpectations.before(task, ws).value_asked
    assert TaskExpectations.before(task, ws, reading(outputs=["out/first.txt"], kind="exact")).value_asked
    assert not TaskExpectations.before(task, ws, reading(outputs=["out/first.txt"], kind="prose")).value_asked
    counted = "How many lines does data/log.txt have? Write just the number to out/n.txt"
    assert TaskExpectations.before(counted, ws, reading(outputs=["out/n.txt"], kind="prose")).value_asked


def plan_json(*steps: tuple[str, dict[str, Any]]) -> str:
    numbered = [{"id": i, "description": tool, "tool": tool, "inputs": inputs} for i, (tool, inputs) in
                enumerate(steps, 1)]  # fmt: skip
    return json.dumps({"version": 1, "goal": "the task", "risk_level": "LOW", "workspace_root": ".",
                       "steps": numbered, "success_criteria": []})  # fmt: skip


@pytest.mark.parametrize("read", [True, False])
def test_omx_acts_on_the_output_the_model_read_and_the_trace_shows_both_readings(
    ws: Path, script: Callable[..., ScriptedModel], read: bool
) -> None:
    """End to end: the reading is asked first; "PATH should hold", which the rules do not read, is the task's output
    once the model reads it: the plan that writes another file is given the task's path, and it is checked."""
    task = "out/people.md should hold the names from data/users.json, one per line"
    write = {"path": "out/other.md", "content": "ada\nbob\n"}
    wrong = plan_json(("read_text", {"path": "data/users.json"}), ("write_text", write))
    # a reading that names no input leaves the plan to the model (one that does is omx's: test_reading_plan.py)
    replies = [wrong, marked(inputs=[], outputs=["out/people.md"], shape="lines")]
    model = script(*replies[: 2 if read else 1])
    result = omx(task, "--yes", "--replans", "0")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "people.md").exists() is read
    assert ("[met, omx's reading] out/people.md is written by this run (from the task)" in result.output) is read
    (event,) = [e for e in trace_of(only_run(ws)) if e.get("event") == "task_reading"]
    if read:
        assert model.requests[0]["json_mode"]["title"] == READING_SCHEMA_TITLE  # asked before the plan
        assert event["data"]["model"]["outputs"] == ["out/people.md"]
        assert event["data"]["outputs"] == ["out/people.md"]
        assert event["data"]["outputs_of_the_rules_only"] == []
    else:
        assert event["data"]["model"] is None


def test_without_a_reading_omx_goes_on_with_its_rules_and_says_why(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    task = "Put the lines of data/log.txt that contain ERROR into out/errors.txt"
    steps = [("read_text", {"path": "data/log.txt"}),
             ("write_text", {"path": "out/errors.txt", "content": "09:01 ERROR disk full\n"})]  # fmt: skip
    model = script(plan_json(*steps))
    result = omx(task, "--yes", "--replans", "0")
    assert "[met, omx's reading] out/errors.txt is written by this run (from the task)" in result.output
    assert len(model.unscripted) == 1
    (event,) = [e for e in trace_of(only_run(ws)) if e.get("event") == "task_reading"]
    assert event["data"]["model"] is None
    assert "no reply for a TaskReading request" in event["data"]["why"]


def test_code_that_copies_its_input_makes_no_success_where_only_the_model_read_a_value(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The model read a summary as exact work and the python step's code copied the input: the check that code made
    the value was met, and it was the only check of content, so the run said success with the summary never made
    (a false success of the 1.5B model). Code making a value says nothing of what the file holds: done."""
    task = "Make a short digest of docs/guide.md in out/digest.md"
    script(marked(inputs=["docs/guide.md"], outputs=["out/digest.md"], kind="exact"), "print(INPUT)")
    result = omx(task, "--yes", "--replans", "0", input="y\n")  # python: MEDIUM, asked
    assert result.exit_code == 0, result.output
    assert "[met] out/digest.md holds what this run's code made of docs/guide.md" in result.output
    assert "Result: success" not in result.output
    assert "Result: done, only that the output was written is checked" in result.output


@pytest.mark.parametrize(
    ("shape", "count", "kept"),
    [("one_line", None, True), ("lines", 1, True), ("free", 1, True), ("lines", 2, False), ("lines", None, False)],
)
def test_one_line_is_checked_where_the_model_read_one_line_or_a_count_of_one(
    ws: Path, shape: str, count: int | None, kept: bool
) -> None:
    """The 0.5B model read "sum up CHANGELOG.md in a single line" as lines, one of them."""
    task = "sum up docs/guide.md in a single line -> out/guide.txt"
    expected = TaskExpectations.before(task, ws, reading(outputs=["out/guide.txt"], kind="prose", shape=shape,
                                                         count=count))  # fmt: skip
    assert bool([check for check in expected.content if "1 line" in check.criterion]) is kept
    assert (expected.shape is not None) is kept


@pytest.mark.parametrize(
    ("task", "kind"),
    [
        ("Can you draft a quick email to Priya asking her to cover for me? Details in docs/guide.md. Save it as "
         "out/e.txt", "prose"),  # 'Priya' is said, not quoted: no line to put in
        ("Add a title line 'Guide' at the top of docs/guide.md", "exact"),  # the line is quoted
    ],
)  # fmt: skip
def test_composed_wording_with_a_line_put_in_is_that_only_where_the_task_quotes_the_line(
    ws: Path, task: str, kind: str
) -> None:
    """The 0.5B model read "Can you draft a quick email to Priya ...? Save it as out/email_priya.txt" as exact work
    and picked a first line 'Priya'."""
    pick = {"for": TEXT_OPERATION, "content": json.dumps({"op": "add_first_line", "text": "Priya", "new_text": "",
                                                          "number": 0})}  # fmt: skip
    got, _ = read_task(ScriptedModel([marked(kind="exact"), pick]), task, ws)
    assert got is not None and got.kind == kind
