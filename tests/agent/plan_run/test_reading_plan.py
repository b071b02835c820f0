"""The plan omx writes from the model's reading of a task, end to end through the real ``omx`` command with a
scripted model, the real step sandbox and real files: where the reading and the rules agree on one output made from
files the task names, the model is asked no plan, only for what it makes (a text, or one step's code); every other
task is planned by the model as before."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.code_steps import TEMPLATE
from agent.plan_run.reading_plan import JOIN_ORDER
from agent.plan_run.task_prompt import task_words
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, trace_of

STORY = (
    "Mara found an old radio in the attic.\nIts signal led her to a tower by the sea.\nThe keeper had waited years.\n"
)
SALES = "region,amount\nnorth,12.5\nsouth,7.25\nnorth,30\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "story.txt").write_text(STORY, encoding="utf-8")
    (tmp_path / "data" / "sales.csv").write_text(SALES, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def reading(
    kind: str, inputs: list[str], outputs: list[str], shape: str = "free", from_input: bool = True
) -> dict[str, Any]:
    read = {"inputs": inputs, "outputs": outputs, "kind": kind, "shape": shape, "count": None, "max_words": None,
            "from_input": from_input}  # fmt: skip
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}


def model_calls(ws: Path) -> list[str]:
    return [c["purpose"] for c in kinds(trace_of(only_run(ws)), "model") if c["purpose"] != "reading"]


def events(ws: Path, event: str) -> list[dict[str, Any]]:
    return [e["data"] for e in trace_of(only_run(ws)) if e["kind"] == "run" and e["event"] == event]


@pytest.mark.parametrize(
    ("task", "words"),
    [
        ("Suggest a title for reports/q3.txt and put it in out/t.txt", "Suggest a title for reports/q3.txt"),
        ("By when must the engineers be hired, according to notes/m.txt? Answer in out/t.txt",
         "By when must the engineers be hired, according to notes/m.txt?"),
        ("Write a reply to mail/c.txt offering a refund, saved as out/t.txt",
         "Write a reply to mail/c.txt offering a refund"),
        ("Summarise notes/m.txt in 3 bullets into `out/t.txt`", "Summarise notes/m.txt in 3 bullets"),
        ("Write a haiku about the sea to out/t.txt. Keep it gentle.", "Write a haiku about the sea. Keep it gentle."),
        ("sum up notes/m.txt in a single line -> out/t.txt", "sum up notes/m.txt in a single line"),
        ("Summarise notes/m.txt => out/t.txt, briefly", "Summarise notes/m.txt, briefly"),
        ("out/t.txt should be a summary of notes/m.txt", "out/t.txt should be a summary of notes/m.txt"),  # no "in/to"
        ("Write it to out/t.txt", "Write it to out/t.txt"),  # too little left
        ("Copy out/t.txt.bak to out/t.txt.old", "Copy out/t.txt.bak to out/t.txt.old"),  # another path
    ],
)  # fmt: skip
def test_the_words_that_say_where_the_output_goes_are_left_out_of_the_model_s_step(task: str, words: str) -> None:
    """Asked "By when must the engineers be hired? Answer in out/when.txt", the 0.5B model answered "out/when.txt";
    asked for a title "and put it in out/title.txt", it wrote the report back."""
    assert task_words(task, "out/t.txt") == words


def test_prose_from_one_file_is_asked_in_the_persons_words_without_a_plan_request(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    task = "Write a two-sentence blurb of data/story.txt that starts with 'Listen:' to out/blurb.txt"
    blurb = "Listen: a radio calls Mara to a tower. Its keeper has waited for years."
    model = script(reading("prose", ["data/story.txt"], ["out/blurb.txt"]), blurb)
    result = omx(task, "--yes")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "blurb.txt").read_text(encoding="utf-8") == blurb + "\n"
    assert model_calls(ws) == ["step"]  # no plan asked: the model wrote the text only
    assert events(ws, "plan_from_reading") == [{"tools": ["read_text", "llm", "write_text"]}]
    asked = model.requests[-1]["messages"][-1]["content"]
    # the task itself, in the person's words but where the output goes, the shape it says (two sentences), the story
    words = "Write a two-sentence blurb of data/story.txt that starts with 'Listen:'"
    assert asked.startswith(f"{words}\nReply with one JSON object") and asked.endswith(f"\n\n---\n{STORY}")
    assert "planned by omx from the task's reading" in result.output  # the person sees who planned it


def test_an_exact_result_from_one_file_is_code_asked_for_with_the_files_first_lines(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    task = "Add up the amount column of data/sales.csv and write just the total to out/total.txt"
    code = TEMPLATE.replace(
        "result = ...  # computed from text or lines: a str, a number, or a list of lines",
        "result = sum(float(line.split(',')[1]) for line in lines[1:])",
    )
    second = "import csv, io\nprint(sum(float(r['amount']) for r in csv.DictReader(io.StringIO(INPUT))))"
    model = script(reading("exact", ["data/sales.csv"], ["out/total.txt"], "number"), code, second)
    result = omx(task, "--yes", input="y\n")  # code runs: MEDIUM, asked
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "total.txt").read_text(encoding="utf-8").strip() == "49.75"
    assert model_calls(ws) == ["code", "second_program"]
    asked = model.requests[-2]["messages"][-1]["content"]
    assert f"data/sales.csv begins:\n```\n{SALES.strip()}\n```" in asked
    assert "Result: success" in result.output, result.output  # its value came from code run on the input


@pytest.mark.parametrize(
    "task",
    [
        *(f"{verb} data/notes.txt and data/story.txt into out/both.txt" for verb in ("Merge", "Combine", "Join")),
        "Concatenate data/notes.txt and data/story.txt into out/both.txt",
        "stitch data/notes.txt and data/story.txt together (in that order) into out/both.txt",
        "Merge data/notes.txt and data/story.txt, in the order given, into out/both.txt",
        "data/notes.txt + data/story.txt -> out/both.txt",
    ],
)
def test_files_a_task_joins_are_joined_by_omx_s_code_in_the_order_it_names_them(
    ws: Path, script: Callable[..., ScriptedModel], task: str
) -> None:
    """The 0.5B model's code for "Merge notes/a.md and notes/b.md into a single file out/all.md" failed, and for
    "Combine data/part1.txt and data/part2.txt into out/full.txt" kept the lines that contain 'part1'."""
    (ws / "data" / "notes.txt").write_text("A note.\n", encoding="utf-8")
    second = "for name in ('data/notes.txt', 'data/story.txt'):\n    print(open(name).read().rstrip())"
    model = script(reading("exact", ["data/notes.txt", "data/story.txt"], ["out/both.txt"]), second)
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "both.txt").read_text(encoding="utf-8") == "A note.\n" + STORY
    assert "code" not in model_calls(ws) and "plan" not in model_calls(ws)  # no code or plan asked of the model
    assert "(code by omx: one file after the other)" in result.output
    # the order is omx's reading: never checked, so never a success
    assert JOIN_ORDER in result.output and "Result: success" not in result.output, result.output
    assert len(model.requests) >= 2


def test_json_lists_joined_are_one_list(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    (ws / "data" / "a.json").write_text('[{"name": "Ana"}]', encoding="utf-8")
    (ws / "data" / "b.json").write_text('[{"name": "Bo"}, {"name": "Cy"}]\n', encoding="utf-8")
    task = "Combine data/a.json and data/b.json into out/all.json"
    script(reading("exact", ["data/a.json", "data/b.json"], ["out/all.json"]), "print(1)")
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    written = json.loads((ws / "out" / "all.json").read_text(encoding="utf-8"))
    assert written == [{"name": "Ana"}, {"name": "Bo"}, {"name": "Cy"}]


@pytest.mark.parametrize(
    ("between", "line"),
    [
        ("with a line containing just --- between them", "---"),
        ("separated by '* * *'", "* * *"),
        ("with ==== in between", "===="),
        ("with a blank line between them", ""),
    ],
)
def test_files_joined_with_a_line_between_them_have_that_line_between_them(
    ws: Path, script: Callable[..., ScriptedModel], between: str, line: str
) -> None:
    """The 0.5B model picked a last line '---' for "combine morning_shift.txt and afternoon_shift.txt into
    out/full_day.txt with a line containing just --- between them", and omx joined the two files with none."""
    (ws / "data" / "notes.txt").write_text("A note.\n", encoding="utf-8")
    script(reading("exact", ["data/notes.txt", "data/story.txt"], ["out/both.txt"]), "print(1)")
    result = omx(f"Merge data/notes.txt and data/story.txt into out/both.txt {between}", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "both.txt").read_text(encoding="utf-8") == f"A note.\n{line}\n{STORY}"


def test_csv_files_joined_keep_their_header_once(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    (ws / "data" / "june.csv").write_text("day,amount\n1,5\n", encoding="utf-8")
    (ws / "data" / "july.csv").write_text("day,amount\n2,7\n3,1\n", encoding="utf-8")
    task = "Combine data/june.csv and data/july.csv into out/summer.csv"
    script(reading("exact", ["data/june.csv", "data/july.csv"], ["out/summer.csv"]), "print(1)")
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "summer.csv").read_text(encoding="utf-8") == "day,amount\n1,5\n2,7\n3,1\n"


@pytest.mark.parametrize(
    "order", ["notes after story", "onto the end of story", "the last one first", "January's rows first"]
)
def test_files_joined_in_an_order_the_task_says_are_left_to_the_model_s_code(
    ws: Path, script: Callable[..., ScriptedModel], order: str
) -> None:
    """Joined in the order named, "Merge data/a.txt and data/b.txt ... (b first, then a)" was a then b, and a second
    program that read it so too made that a success."""
    (ws / "data" / "notes.txt").write_text("A note.\n", encoding="utf-8")
    task = f"Merge data/notes.txt and data/story.txt into out/both.txt {order}"
    script(reading("exact", ["data/notes.txt", "data/story.txt"], ["out/both.txt"]), "print(1)", "print(1)")
    result = omx(task, "--yes", input="y\n")
    assert "(code by omx: one file after the other)" not in result.output
    assert model_calls(ws)[0] == "code"  # the model's code, asked with the files' paths


def test_prose_from_the_task_s_own_words_is_asked_without_a_plan_request(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    task = "Write a short note to Ana (under 30 words) saying the tower trip moves to Sunday. Save it as out/note.txt"
    note = "Hi Ana, the tower trip moves to Sunday. See you then!"
    model = script(reading("prose", [], ["out/note.txt"]), note)
    result = omx(task, "--yes")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "note.txt").read_text(encoding="utf-8") == note + "\n"
    assert model_calls(ws) == ["step"]  # no plan asked: the model wrote the note only
    assert events(ws, "plan_from_reading") == [{"tools": ["llm", "write_text"]}]
    asked = model.requests[-1]["messages"][-1]["content"]
    words = "Write a short note to Ana (under 30 words) saying the tower trip moves to Sunday."
    assert asked.startswith(words) and "---" not in asked  # the person's words (then the shape), and no material
    assert "out/note.txt" not in asked  # where the note goes is the write step's


@pytest.mark.parametrize(
    ("task", "read"),
    [
        ("Move data/story.txt to archive/story.txt", reading("command", ["data/story.txt"], ["archive/story.txt"])),
        (  # the model reads an input the task never names
            "Summarise the story in out/s.md",
            reading("prose", ["data/story.txt"], ["out/s.md"]),
        ),
    ],
    ids=["files-acted-on", "input-not-named"],
)
def test_other_tasks_are_planned_by_the_model(
    ws: Path, script: Callable[..., ScriptedModel], task: str, read: dict[str, Any]
) -> None:
    script(read)  # no plan scripted: the request fails, and says the model was asked for one
    omx(task, "--yes")
    assert "plan" in model_calls(ws)
    assert events(ws, "plan_from_reading") == []


@pytest.mark.parametrize("from_input", [True, False])
def test_prose_made_from_an_input_the_model_did_not_list_is_made_from_the_file_the_task_names(
    ws: Path, script: Callable[..., ScriptedModel], from_input: bool
) -> None:
    """The 0.5B model listed no input for "a summary of data/README.md" and read it as made from an input; it listed
    none and read it as made from none for "Write a polite reply to the customer in mail/complaint.txt ...", and
    its own plan copied the complaint: a file the task names that is there is the text's material."""
    task = "Write a poem in the mood of data/story.txt to out/poem.txt"
    model = script(reading("prose", [], ["out/poem.txt"], from_input=from_input), "A radio hums; the tower waits.")
    result = omx(task, "--yes")
    assert result.exit_code == 0, result.output
    assert events(ws, "plan_from_reading") == [{"tools": ["read_text", "llm", "write_text"]}]
    assert STORY in model.requests[-1]["messages"][-1]["content"]  # the model wrote it from the story
    assert (ws / "out" / "poem.txt").read_text(encoding="utf-8") == "A radio hums; the tower waits.\n"


def test_an_input_reached_through_a_symlink_is_planned_by_the_model(
    ws: Path, script: Callable[..., ScriptedModel], tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("home") / "story.txt"
    outside.write_text(STORY, encoding="utf-8")
    (ws / "data" / "story.txt").unlink()
    (ws / "data" / "story.txt").symlink_to(outside)
    script(reading("prose", ["data/story.txt"], ["out/s.md"]))
    omx("Summarise data/story.txt in out/s.md", "--yes")
    assert "plan" in model_calls(ws) and events(ws, "plan_from_reading") == []


def test_a_model_step_that_writes_the_output_is_asked_the_task_in_the_persons_words(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """A plan of the model's (the task names no input) paraphrases the task for its llm step, and the heading the
    task asks for is lost; the step is asked the task itself."""
    task = "Write a summary of the story to out/s.md: the first line is '# Story', then 2 sentences"
    plan = {
        "version": 1,
        "goal": task,
        "risk_level": "LOW",
        "steps": [
            {"id": 1, "description": "read", "tool": "read_text", "inputs": {"path": "data/story.txt"}},
            {
                "id": 2,
                "description": "sum up",
                "tool": "llm",
                "inputs": {"prompt": "Summarise it", "input": {"ref": "step:1.output"}},
            },
            {
                "id": 3,
                "description": "save",
                "tool": "write_text",
                "inputs": {"path": "out/s.md", "content": {"ref": "step:2.output"}},
            },
        ],
    }
    read = reading("prose", ["data/story.txt"], ["out/s.md"])  # an input the task does not name: the model plans
    model = script(read, json.dumps(plan), "# Story\nA radio. A tower.")
    result = omx(task, "--yes")
    assert result.exit_code == 0, result.output
    assert model_calls(ws) == ["plan", "step"]
    asked = model.requests[-1]["messages"][-1]["content"]
    words = "Write a summary of the story: the first line is '# Story', then 2 sentences"
    assert asked.startswith(f"{words}\nReply with one JSON object") and asked.endswith(f"\n\n---\n{STORY}")
    assert "exactly 2 sentences, after the line '# Story'" in asked  # the shape the task says, asked
    assert f"prompt: {words}\n" in result.output  # the person confirms the plan with the prompt it runs


@pytest.mark.parametrize(
    ("task", "inputs"),
    [
        ("hey, could you read through everything in my journal folder and sum it up? into out/s.txt", ["journal"]),
        ("Summarise journal/ into out/s.txt", ["journal/"]),
        ("Summarise journal/day1.txt and journal/day2.txt into out/s.txt", ["journal/day1.txt", "journal/day2.txt"]),
    ],
)
def test_prose_from_several_files_or_a_small_folder_is_asked_of_them_shown_under_their_names(
    ws: Path, script: Callable[..., ScriptedModel], task: str, inputs: list[str]
) -> None:
    """Asked for "the 5 key takeaways" of "everything in my journal folder", the 0.5B model's own plan had 17 steps
    and wrote none."""
    (ws / "journal").mkdir()
    (ws / "journal" / "day1.txt").write_text("Flew to Lisbon.\n", encoding="utf-8")
    (ws / "journal" / "day2.txt").write_text("Gave the talk.\n", encoding="utf-8")
    model = script(reading("prose", inputs, ["out/s.txt"]), "A trip to Lisbon and a talk.")
    result = omx(task, "--yes")  # a LOW risk plan: head shows the files, the model writes, the text is written
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "s.txt").read_text(encoding="utf-8") == "A trip to Lisbon and a talk.\n"
    assert model_calls(ws) == ["step"]
    assert events(ws, "plan_from_reading") == [{"tools": ["shell", "llm", "write_text"]}]
    asked = model.requests[-1]["messages"][-1]["content"]
    shown = "==> journal/day1.txt <==\nFlew to Lisbon.\n\n==> journal/day2.txt <==\nGave the talk.\n"
    assert asked.startswith(task_words(task, "out/s.txt")) and asked.endswith(shown)


@pytest.mark.parametrize(("task", "read"), [("can u give me a summary of the README? put it in out/t.txt", True),
                                            ("Write a poem about my readme into out/t.txt", True),
                                            ("Write a haiku about the sea into out/t.txt", False)])  # fmt: skip
def test_a_file_of_the_top_folder_named_by_its_name_without_extension_is_the_material(
    ws: Path, script: Callable[..., ScriptedModel], task: str, read: bool
) -> None:
    """Asked for "a two sentence summary of the README", the 0.5B model listed no input and wrote of a README it
    had not read."""
    (ws / "README.md").write_text("Tide charts for sailors.\n", encoding="utf-8")
    script(reading("prose", [], ["out/t.txt"]), "A tool for tide charts.")
    omx(task, "--yes")  # a haiku of one line fails its check: the plan is what is asserted
    tools = ["read_text", "llm", "write_text"] if read else ["llm", "write_text"]
    assert events(ws, "plan_from_reading") == [{"tools": tools}]


@pytest.mark.parametrize("listed", [["out/note.txt"], ["data/invented.txt"]])
def test_prose_from_the_task_s_words_where_the_model_listed_an_input_that_is_not_there(
    ws: Path, script: Callable[..., ScriptedModel], listed: list[str]
) -> None:
    """The 1.5B model listed the output itself as the input of "Write a short email to Sam ... Save it as
    out/email.txt", and its own plan read that file, which was not there, three plans in a row."""
    task = "Write a short note to Ana asking to move Friday's call to Monday. Save it as out/note.txt"
    script(reading("prose", listed, ["out/note.txt"], from_input=False), "Hi Ana, could we move Friday's call?")
    result = omx(task, "--yes")
    assert result.exit_code == 0, result.output
    assert events(ws, "plan_from_reading") == [{"tools": ["llm", "write_text"]}]
    assert (ws / "out" / "note.txt").read_text(encoding="utf-8") == "Hi Ana, could we move Friday's call?\n"


@pytest.mark.parametrize(
    "task",
    [
        "glue data/notes.txt onto the end of data/story.txt and save the result as out/both.txt",
        "Merge data/notes.txt and data/story.txt into out/both.txt (data/story.txt first, then data/notes.txt)",
        "combine the story (data/story.txt) first, then the note (data/notes.txt), into out/both.txt",
        "Merge data/notes.txt after data/story.txt into out/both.txt",
        "Concatenate data/notes.txt and data/story.txt in reverse order into out/both.txt",
        "Can you join data/notes.txt and data/story.txt into out/both.txt? Story goes first, then notes.",
        "append data/notes.txt to the end of data/story.txt, into out/both.txt",
        "Merge data/notes.txt and data/story.txt into out/both.txt (story first, then notes)",
    ],
)
def test_files_joined_in_an_order_the_task_says_are_joined_by_omx_in_that_order(
    ws: Path, script: Callable[..., ScriptedModel], task: str
) -> None:
    """The 0.5B model read "glue intro.md onto the end of body.md" as prose, and its plan wrote another file."""
    (ws / "data" / "notes.txt").write_text("A note.\n", encoding="utf-8")
    kind = "prose" if task.startswith("glue") else "exact"  # files joined whatever kind the model read
    script(reading(kind, ["data/notes.txt", "data/story.txt"], ["out/both.txt"]), "print(1)")
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "both.txt").read_text(encoding="utf-8") == STORY + "A note.\n"
    assert "Join data/story.txt, data/notes.txt, in that order" in result.output
    assert JOIN_ORDER in result.output and "Result: success" not in result.output  # omx's reading: never a success


def test_a_file_appended_to_another_in_place_is_joined_into_it(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    (ws / "data" / "notes.txt").write_text("A note.\n", encoding="utf-8")
    task = "append data/notes.txt to the end of data/story.txt (edit story.txt itself, no new file)"
    script(reading("exact", ["data/notes.txt", "data/story.txt"], ["data/story.txt"]), "print(1)")
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "data" / "story.txt").read_text(encoding="utf-8") == STORY + "A note.\n"
    assert (ws / "data" / "notes.txt").read_text(encoding="utf-8") == "A note.\n"
