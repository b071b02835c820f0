"""Files acted on, planned by omx from the model's reading of the task: through the real ``omx`` command with a
scripted model, on real files. Where the reading's operations hold (every source there, every target a new path
inside the workspace, the task's own paths used), omx plans them with the path tools and asks the model no plan;
moves and deletes are HIGH as any others (asked, the number typed, never run by ``--yes`` alone); each operation
is checked on the files after the run, and the run is done, never a success: which operations the task asks for
is the model's reading. Anything else is planned by the model as before."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run import workflow
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.task_reading import OPERATIONS_SCHEMA_TITLE, READING_SCHEMA_TITLE, TaskReading
from agent.plan_run.text_operations import SCHEMA_TITLE as TEXT_OPERATION
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, run_end, trace_of

TODO = "- buy stamps\n- call the garage\n"
SETTINGS = "[app]\ncolour = blue\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Notes, a settings file, a cache, an inbox of mixed files; beside the workspace, a folder outside it."""
    root = tmp_path / "ws"
    files = {
        "notes/todo.md": TODO,
        "notes/ideas.md": "a bridge of kites\n",
        "config/app.ini": SETTINGS,
        "cache/stale.tmp": "x" * 40,
        "inbox/letter.txt": "Dear Ana,\n",
        "inbox/poem.txt": "Rain on tin.\n",
        "inbox/prices.csv": "item,price\ntea,3\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (tmp_path / "outside").mkdir()
    monkeypatch.chdir(root)
    return root.resolve()


def operations(*ops: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"action": action, "source": source, "target": target} for action, source, target in ops]


def reading(
    ops: list[dict[str, str]], inputs: list[str] | None = None, outputs: list[str] | None = None, kind: str = "command"
) -> list[dict[str, Any]]:
    """The model's two answers: its reading of the task, then the operations, asked apart where it read files acted
    on."""
    read = {"inputs": inputs or [], "outputs": outputs or [], "from_input": False, "kind": kind,
            "shape": "free", "count": None, "max_words": None}  # fmt: skip
    return [{"for": READING_SCHEMA_TITLE, "content": json.dumps(read)},
            {"for": OPERATIONS_SCHEMA_TITLE, "content": json.dumps({"operations": ops})}]  # fmt: skip


def model_calls(ws: Path) -> list[str]:
    return [c["purpose"] for c in kinds(trace_of(only_run(ws)), "model") if c["purpose"] != "reading"]


def events(ws: Path, event: str) -> list[dict[str, Any]]:
    return [e["data"] for e in trace_of(only_run(ws)) if e["kind"] == "run" and e["event"] == event]


def tree(root: Path) -> dict[str, str]:
    """Every file below ``root`` (runs/ aside) and its text."""
    found = {}
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not (top == str(root) and d == "runs")]
        found |= {Path(top, n).relative_to(root).as_posix(): Path(top, n).read_text(encoding="utf-8") for n in names}
    return found


def test_a_rename_is_planned_by_omx_as_one_move_and_checked_on_the_files(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    script(*reading(operations(("move", "notes/todo.md", "notes/done.md")), ["notes/todo.md"], ["notes/done.md"]))
    result = omx("Rename notes/todo.md to notes/done.md", input="y\n1\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert "notes/todo.md" not in tree(ws) and tree(ws)["notes/done.md"] == TODO
    assert model_calls(ws) == []  # no plan asked: omx planned the move from the reading
    assert events(ws, "plan_from_reading") == [{"tools": ["move"]}]
    assert "Move notes/todo.md to notes/done.md (planned by omx from the task's reading)" in result.output
    assert "It moves or deletes 1 path. To run it, type 1" in result.output  # HIGH, asked as any move
    assert "notes/todo.md moved to notes/done.md (from the task) (notes/done.md holds what notes/todo.md held, " \
           "and notes/todo.md is gone)" in result.output  # fmt: skip
    assert "Result: done, operations checked, not that the task asks for them (1/1 steps)" in result.output
    assert run_end(trace_of(only_run(ws)))["status"] == "done_unverified"


@pytest.mark.parametrize("target", ["archive/", "archive"])  # the task writes it as a folder: into it, either way
def test_a_move_into_a_new_folder_makes_the_folder_first_and_keeps_the_name(
    ws: Path, script: Callable[..., ScriptedModel], target: str
) -> None:
    script(*reading(operations(("move", "notes/ideas.md", target))))
    result = omx("Move notes/ideas.md into archive/", input="y\n1\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert tree(ws)["archive/ideas.md"] == "a bridge of kites\n" and "notes/ideas.md" not in tree(ws)
    assert events(ws, "plan_from_reading") == [{"tools": ["make_dir", "move"]}]
    assert "Result: done, operations checked, not that the task asks for them" in result.output


@pytest.mark.parametrize("target", ["letters/", "letters"])
def test_a_folder_given_a_new_path_is_renamed_to_it_as_mv_does(
    ws: Path, script: Callable[..., ScriptedModel], target: str
) -> None:
    """ "Rename the folder inbox/ to letters/": the folder's files end up in letters/, not in letters/inbox/."""
    script(*reading(operations(("move", "inbox", target))))
    result = omx("Rename the folder inbox/ to letters/", input="y\n1\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert tree(ws)["letters/letter.txt"] == "Dear Ana,\n" and not (ws / "inbox").exists()
    assert events(ws, "plan_from_reading") == [{"tools": ["move"]}]


def test_a_folder_copied_to_a_new_path_the_task_names_is_copied_there(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The operation was dropped as one into a new folder the task does not name (backup/ is not named)."""
    script(*reading(operations(("copy", "notes", "backup/notes"))))
    result = omx("Copy the whole notes/ folder to backup/notes/", "--yes")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert tree(ws)["backup/notes/todo.md"] == TODO == tree(ws)["notes/todo.md"]
    assert events(ws, "plan_from_reading") == [{"tools": ["make_dir", "copy"]}]


def test_a_folder_moved_to_a_folder_that_is_there_goes_into_it(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(*reading(operations(("move", "inbox", "notes/"))))
    result = omx("Move the folder inbox/ into notes/", input="y\n1\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert tree(ws)["notes/inbox/letter.txt"] == "Dear Ana,\n" and not (ws / "inbox").exists()


def test_files_organised_into_folders_by_the_models_choice_are_done_never_a_success(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The task names the folders, not the files: which files it means is the model's reading, which omx does not
    check; each move is checked, and the run is done, not a success."""
    ops = operations(("move", "inbox/letter.txt", "inbox/text/letter.txt"), ("move", "inbox/poem.txt", "inbox/text/"),
                     ("move", "inbox/prices.csv", "inbox/tables/prices.csv"))  # fmt: skip
    script(*reading(ops))
    task = "Sort inbox/ by type: the text files into inbox/text/ and the spreadsheets into inbox/tables/"
    result = omx(task, input="y\n3\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert {k: v for k, v in tree(ws).items() if k.startswith("inbox/")} == {
        "inbox/text/letter.txt": "Dear Ana,\n",
        "inbox/text/poem.txt": "Rain on tin.\n",
        "inbox/tables/prices.csv": "item,price\ntea,3\n",
    }
    assert events(ws, "plan_from_reading") == [{"tools": ["make_dir", "move", "move", "make_dir", "move"]}]
    assert "[met, omx's reading] inbox/poem.txt moved to inbox/text/poem.txt (from the task)" in result.output
    assert "[not checked, omx's reading] the paths acted on are the ones the task means (from the task) (the " \
           "model's reading chose inbox/letter.txt, inbox/poem.txt, inbox/prices.csv; nothing checks which ones the " \
           "task means)" in result.output  # fmt: skip
    assert "Result: done, 1 criterion not checked (3 met)" in result.output, result.output
    assert run_end(trace_of(only_run(ws)))["status"] == "done"


def test_a_copy_is_low_risk_and_runs_on_yes(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(*reading(operations(("copy", "config/app.ini", "backup/app.ini"))))
    result = omx("Copy config/app.ini to backup/app.ini", "--yes")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert tree(ws)["backup/app.ini"] == SETTINGS == tree(ws)["config/app.ini"]
    assert events(ws, "plan_from_reading") == [{"tools": ["make_dir", "copy"]}]
    assert "Result: done, operations checked, not that the task asks for them" in result.output


def test_a_delete_is_never_run_by_yes_alone_and_runs_once_its_count_is_typed(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    script(*reading(operations(("delete", "cache/stale.tmp", ""))))
    refused = omx("Delete cache/stale.tmp", "--yes")
    assert refused.exit_code == workflow.EXIT_DECLINED, refused.output
    assert "--yes does not answer for HIGH risk plans" in refused.output
    assert (ws / "cache/stale.tmp").exists() and model_calls(ws) == []
    for run in (ws / "runs").iterdir():  # one run at a time: the next is read as the only one
        os.rename(run, ws.parent / run.name)
    script(*reading(operations(("delete", "cache/stale.tmp", ""))))
    done = omx("Delete cache/stale.tmp", "--yes", input="y\n1\n")
    assert done.exit_code == workflow.EXIT_OK, done.output
    assert not (ws / "cache/stale.tmp").exists()
    assert (
        "Step 1 deletes cache/stale.tmp" in done.output
        and "Result: done, operations checked, not that the task asks for them" in done.output
    )


@pytest.mark.parametrize(
    ("task", "ops"),
    [
        ("Rename notes/todo.md to notes/done.md", (("move", "notes/gone.md", "notes/done.md"),)),  # no such source
        ("Move notes/todo.md out of the workspace", (("move", "notes/todo.md", "../outside/todo.md"),)),
        ("Move notes/todo.md out of the workspace", (("move", "notes/todo.md", "/tmp/todo.md"),)),
        ("Rename notes/todo.md to notes/done.md", (("move", "notes/ideas.md", "notes/done.md"),)),  # another file
        ("Rename notes/todo.md to notes/done.md", (("move", "notes/todo.md", "notes/todo.md"),)),  # onto itself
        ("Rename notes/todo.md to notes/done.md", (("move", "notes/todo.md", "notes/ideas.md"),)),  # over a file
        ("Move notes/todo.md into archive/", (("move", "notes/todo.md", "old/todo.md"),)),  # not where the task says
        ("Move notes/todo.md and notes/ideas.md into archive/", (("move", "notes/todo.md", "archive/"),)),  # one left
        ("Put the names of the files in notes/ in out/names.txt", (("move", "notes", "out/names.txt"),)),
    ],
    ids=[
        "source-missing",
        "target-climbs-out",
        "target-absolute",
        "other-source",
        "onto-itself",
        "over-a-file",
        "other-target",
        "a-named-file-left-out",
        "a-folder-to-a-files-name",
    ],
)
def test_operations_that_do_not_hold_leave_the_plan_to_the_model(
    ws: Path, script: Callable[..., ScriptedModel], task: str, ops: tuple[tuple[str, str, str], ...]
) -> None:
    before = tree(ws)
    script(*reading(operations(*ops)))  # no plan scripted: the request fails, and says the model was asked for one
    omx(task, input="y\n1\n")
    assert "plan" in model_calls(ws) and events(ws, "plan_from_reading") == []
    (read,) = events(ws, "task_reading")
    assert read["model"]["operations"] == operations(*ops) and read["operations"] == []  # read, not acted on
    assert tree(ws) == before


def test_a_move_whose_target_lost_the_content_is_not_met(ws: Path) -> None:
    """The check is of the files themselves: the target must hold what the source held before the run."""
    task = "Rename notes/todo.md to notes/done.md"
    ops = operations(("move", "notes/todo.md", "notes/done.md"))
    read = TaskReading.model_validate({"kind": "command", "operations": ops})
    expected = TaskExpectations.before(task, ws, read)
    (ws / "notes/done.md").write_text("- buy stamps\n", encoding="utf-8")  # written anew, one line lost
    (ws / "notes/todo.md").unlink()
    moved = [c for c in expected.check() if c.criterion.startswith("notes/todo.md moved")]
    assert [(c.status, c.detail) for c in moved] == [("not met", "notes/done.md does not hold what notes/todo.md held")]


@pytest.mark.parametrize("kind", ["prose", "exact"])
def test_a_task_read_as_another_kind_is_asked_no_operations(
    ws: Path, script: Callable[..., ScriptedModel], kind: str
) -> None:
    """Asked whether a task only acts on files, the 0.5B model said yes to summaries and filters too, with a move of
    the input to the output: operations are asked for, and acted on, only where the reading's kind is command (or
    the operation it picked is files acted on, below)."""
    task = "Write the open items of notes/todo.md to out/open.md"
    model = script(*reading(operations(("move", "notes/todo.md", "out/open.md")), kind=kind))
    omx(task, input="y\n1\n")
    titles = [r["json_mode"]["title"] for r in model.requests if isinstance(r["json_mode"], dict)]
    assert OPERATIONS_SCHEMA_TITLE not in titles and (ws / "notes/todo.md").read_text(encoding="utf-8") == TODO
    assert events(ws, "plan_from_reading") in ([], [{"tools": ["read_text", "llm", "write_text"]}],
                                               [{"tools": ["read_text", "python", "write_text"]}])  # fmt: skip


def picks(op: str, text: str = "") -> dict[str, str]:
    """The model's pick of an operation (``text_operations``), scripted."""
    return {"for": TEXT_OPERATION, "content": json.dumps({"op": op, "text": text, "new_text": "", "number": 0})}


def test_a_pick_of_files_acted_on_has_the_operations_asked_where_the_kind_read_was_another(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model read the kind of 1 of 54 tasks as command, and picked ``file_operations`` for the renames and
    the organising among them: that pick has the operations asked for, as the kind command does."""
    ops = operations(("move", "notes/todo.md", "notes/done.md"))
    script(*reading(ops, ["notes/todo.md"], ["notes/done.md"], kind="prose"), picks("file_operations"))
    result = omx("Rename notes/todo.md to notes/done.md", input="y\n1\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert "notes/todo.md" not in tree(ws) and tree(ws)["notes/done.md"] == TODO
    assert events(ws, "plan_from_reading") == [{"tools": ["move"]}]


def test_a_pick_of_files_acted_on_is_no_pick_where_the_task_says_no_file_is_acted_on(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model read "whats not ticked off yet on todo/stocktake.md? -> out/stocktake_left.txt" as exact work,
    picked files acted on, listed a move of the checklist to the output, and omx moved it."""
    ops = operations(("move", "notes/todo.md", "out/left.txt"))
    script(*reading(ops, ["notes/todo.md"], ["out/left.txt"], kind="exact"), picks("file_operations"))
    omx("whats not done yet on notes/todo.md? -> out/left.txt", input="y\n1\n")  # no plan is scripted
    assert tree(ws)["notes/todo.md"] == TODO and "out/left.txt" not in tree(ws)
    assert events(ws, "plan_from_reading") != [{"tools": ["make_dir", "move"]}]


@pytest.mark.parametrize(
    ("task", "deleted"),
    [
        ("Put cache/stale.tmp away", False),
        ("Delete cache/stale.tmp", True),
        ("Get rid of the .tmp files in cache/", True),
        ("Remove the stale .tmp files from cache/", True),
        ("Remove the duplicate lines of cache/stale.tmp", False),  # lines, not files
    ],
)
def test_on_the_pick_alone_a_delete_is_taken_only_where_the_task_says_one(
    ws: Path, script: Callable[..., ScriptedModel], task: str, deleted: bool
) -> None:
    """Read as another kind than command, the model's delete is planned only where the task's own words say one
    (the 0.5B model read "Delete the .tmp files in tmp/" as exact work, picked files acted on, and a plan of its own
    ran rm, refused); elsewhere it is not planned even where its count is typed (the model is asked for a plan
    instead, and gives none here)."""
    ops = operations(("delete", "cache/stale.tmp", ""))
    script(*reading(ops, ["cache/stale.tmp"], [], kind="exact"), picks("file_operations"))
    omx(task, input="y\n1\n")
    assert ("cache/stale.tmp" not in tree(ws)) is deleted
    assert events(ws, "plan_from_reading") == ([{"tools": ["delete"]}] if deleted else [])


def test_a_path_not_of_the_kind_of_file_the_task_names_is_not_acted_on(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model deleted tmp/keep.txt too for "Delete the .tmp files in tmp/"."""
    (ws / "cache/keep.txt").write_text("keep\n", encoding="utf-8")
    script(*reading(operations(("delete", "cache/stale.tmp", ""), ("delete", "cache/keep.txt", ""))))
    result = omx("Delete the .tmp files in cache/", input="y\n1\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert "cache/stale.tmp" not in tree(ws) and tree(ws)["cache/keep.txt"] == "keep\n"
    assert events(ws, "plan_from_reading") == [{"tools": ["delete"]}]


@pytest.mark.parametrize("pick", ["list_files", "sort"])
@pytest.mark.parametrize("outputs", [["inbox/text/"], ["inbox/text/", "out/list.txt"]])
def test_a_pick_of_a_text_with_only_folders_to_write_has_the_operations_asked(
    ws: Path, script: Callable[..., ScriptedModel], outputs: list[str], pick: str
) -> None:
    """The 0.5B model read "files whose names ... go in docs/x/" as exact work and picked a listing of the files, and
    a sort for "Sort the files in inbox/ into folders by type": a text with no file to write it to is files acted
    on; with a file to write it, it is not."""
    ops = operations(("move", "inbox/letter.txt", "inbox/text/"), ("move", "inbox/poem.txt", "inbox/text/"))
    model = script(*reading(ops, ["inbox/"], outputs, kind="exact"), picks(pick))
    omx("Move the .txt files of inbox/ into inbox/text/" + (", listed in out/list.txt" if len(outputs) > 1 else ""),
        input="y\n2\n")  # fmt: skip
    titles = [r["json_mode"]["title"] for r in model.requests if isinstance(r["json_mode"], dict)]
    if len(outputs) > 1:
        assert OPERATIONS_SCHEMA_TITLE not in titles and "inbox/letter.txt" in tree(ws)
        return
    assert OPERATIONS_SCHEMA_TITLE in titles
    assert tree(ws)["inbox/text/letter.txt"] == "Dear Ana,\n" and tree(ws)["inbox/text/poem.txt"] == "Rain on tin.\n"
    assert events(ws, "plan_from_reading") == [{"tools": ["make_dir", "move", "move"]}]


@pytest.mark.parametrize(
    ("task", "readme_moved"),
    [
        ("The files of docs/ whose names start with acme_ go in docs/acme/. Leave everything else where it is.", False),
        ("Move docs/acme_1.txt, docs/acme_2.txt and docs/readme.txt into docs/acme/", True),  # named: moved
    ],
)
def test_a_file_whose_name_is_not_what_a_folder_gathers_is_left_where_it_is(
    ws: Path, script: Callable[..., ScriptedModel], task: str, readme_moved: bool
) -> None:
    """The 0.5B model moved docs/readme.txt into docs/acme/ with the two acme_ files."""
    (ws / "docs").mkdir()
    for name in ("acme_1.txt", "acme_2.txt", "readme.txt"):
        (ws / "docs" / name).write_text(name, encoding="utf-8")
    ops = operations(("move", "docs/acme_1.txt", "docs/acme/"), ("move", "docs/acme_2.txt", "docs/acme/"),
                     ("move", "docs/readme.txt", "docs/acme/"))  # fmt: skip
    script(*reading(ops))
    result = omx(task, input=f"y\n{3 if readme_moved else 2}\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert (ws / "docs" / "acme" / "acme_1.txt").is_file() and (ws / "docs" / "acme" / "acme_2.txt").is_file()
    assert (ws / "docs" / "acme" / "readme.txt").is_file() is readme_moved
    assert (ws / "docs" / "readme.txt").is_file() is not readme_moved


@pytest.mark.parametrize(
    "task",
    [
        "Group the notes in inbox/ by kind: files whose names start with acme_ go in inbox/acme/, the globex_ ones "
        "in inbox/globex/. Leave everything else where it is.",
        "put the acme_ files in inbox/acme/ and the globex_ files in inbox/globex/",
        "Move the files of inbox/ beginning with 'ACME' into inbox/acme/ and those starting with globex into "
        "inbox/globex/",
    ],
)
def test_files_gathered_by_how_their_names_start_go_where_the_task_says_whatever_the_model_read(
    ws: Path, script: Callable[..., ScriptedModel], task: str
) -> None:
    """The 0.5B model read "Group the invoices in docs/ by client: files whose names start with acme_ go in
    docs/acme/, the globex_ ones in docs/globex/" as a text to write (a pick of CSV rows, an output of its own) and
    listed no moves: the rule the task states over the files there is planned, each move from the folder's files."""
    for name in ("acme_1.txt", "ACME_2.txt", "globex_1.txt"):
        (ws / "inbox" / name).write_text(name, encoding="utf-8")
    script(*reading([], ["inbox/prices.csv"], ["inbox/invoices.txt"], kind="exact")[:1], picks("csv_where", "item"))
    result = omx(task, input="y\n3\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert {k: v for k, v in tree(ws).items() if k.startswith("inbox/")} == {
        "inbox/acme/acme_1.txt": "acme_1.txt", "inbox/acme/ACME_2.txt": "ACME_2.txt",
        "inbox/globex/globex_1.txt": "globex_1.txt", "inbox/letter.txt": "Dear Ana,\n",
        "inbox/poem.txt": "Rain on tin.\n", "inbox/prices.csv": "item,price\ntea,3\n"}  # fmt: skip
    assert events(ws, "plan_from_reading") == [{"tools": ["make_dir", "move", "move", "make_dir", "move"]}]


def test_where_the_task_names_the_new_folders_no_other_is_made_or_moved_into(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model moved the two clients' files as asked, and the folder's readme into a folder of its own too."""
    ops = operations(("make_dir", "", "inbox/text"), ("move", "inbox/letter.txt", "inbox/text/"),
                     ("move", "inbox/poem.txt", "inbox/text/"), ("make_dir", "", "inbox/prices"),
                     ("move", "inbox/prices.csv", "inbox/prices/"))  # fmt: skip
    script(*reading(ops))
    result = omx("Put the .txt files of inbox/ in inbox/text/ and leave the rest where it is", input="y\n2\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert {k for k in tree(ws) if k.startswith("inbox/")} == {"inbox/text/letter.txt", "inbox/text/poem.txt",
                                                                "inbox/prices.csv"}  # fmt: skip
    assert not (ws / "inbox" / "prices").exists()


@pytest.mark.parametrize(
    ("task", "moved"),
    [
        ("there are some pictures mixed in with the other things in inbox/ - move them into a folder images/",
         ["cat.jpg", "dog.png", "logo.gif"]),
        ("Move the PNG images of inbox/ to images/", ["dog.png"]),  # a format named: its images only
        ("Move the largest picture of inbox/ to images/", ["cat.jpg"]),  # some of them picked: the model's choice
    ],
)  # fmt: skip
def test_every_file_of_the_kind_the_task_names_goes_where_the_model_moved_one(
    ws: Path, script: Callable[..., ScriptedModel], task: str, moved: list[str]
) -> None:
    """Asked to move "the pictures mixed in with the other things in stuff/" into images/, the 0.5B model listed one
    move of three."""
    for name in ("cat.jpg", "dog.png", "logo.gif"):
        (ws / "inbox" / name).write_text(name, encoding="utf-8")
    first = "dog.png" if "PNG" in task else "cat.jpg"
    script(*reading(operations(("make_dir", "", "images"), ("move", f"inbox/{first}", f"images/{first}"))))
    result = omx(task, input=f"y\n{len(moved)}\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert sorted(path for path in tree(ws) if path.startswith("images/")) == [f"images/{n}" for n in moved]
    assert all(tree(ws)[f"images/{name}"] == name for name in moved)
    assert {"inbox/letter.txt", "inbox/poem.txt", "inbox/prices.csv"} <= set(tree(ws))  # the rest stays


@pytest.mark.parametrize(
    "task",
    [
        "Sort the files in inbox/ into folders by type",
        "my inbox folder is a mess. make a subfolder in it for each file type and move every file into its one",
        "put every file in inbox/ into a subfolder named after its extension (so csv files go in inbox/csv/)",
        "the inbox folder is a mess: each file into a subfolder named after its extension (e.g. inbox/csv/)",
    ],
)
def test_files_sorted_by_type_go_into_a_folder_named_by_their_extension(
    ws: Path, script: Callable[..., ScriptedModel], task: str
) -> None:
    """Asked for "a subfolder in it for each file type (pdf, jpg, txt, zip...)", the 0.5B model listed folders to
    make named as the files themselves."""
    (ws / "inbox" / "scan.PDF").write_text("pdf", encoding="utf-8")
    script(*reading(operations(("make_dir", "", "inbox/letter.txt"), ("make_dir", "", "inbox/poem.txt"))))
    result = omx(task, input="y\n4\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert {k: v for k, v in tree(ws).items() if k.startswith("inbox/")} == {
        "inbox/txt/letter.txt": "Dear Ana,\n", "inbox/txt/poem.txt": "Rain on tin.\n",
        "inbox/csv/prices.csv": "item,price\ntea,3\n", "inbox/pdf/scan.PDF": "pdf"}  # fmt: skip
    assert "Result: success" not in result.output  # which folders: omx's reading of the task, not checked


@pytest.mark.parametrize(
    "task", ["add old_ to the front of every filename in notes/", "Prefix every file in notes/ with old_"]
)
def test_a_prefix_put_before_the_names_of_a_folder_s_files_renames_each_and_edits_no_text(
    ws: Path, script: Callable[..., ScriptedModel], task: str
) -> None:
    """The 0.5B model listed the moves with no target, and picked a first line 'old_', which omx then put at the
    top of each file."""
    ops = operations(("move", "notes/todo.md", ""), ("move", "notes/ideas.md", ""))
    model = script(*reading(ops, outputs=["notes/"], kind="exact"), picks("add_first_line", "old_"))
    result = omx(task, input="y\n2\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert {k: v for k, v in tree(ws).items() if k.startswith("notes/")} == {
        "notes/old_todo.md": TODO, "notes/old_ideas.md": "a bridge of kites\n"}  # fmt: skip
    assert len(model.requests) == 3  # the reading, the pick, the operations: no plan asked


def test_a_task_about_file_names_is_no_edit_of_each_file_s_text(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Read as exact work on no output, "add old_ to the front of every filename in drafts/" had omx put a first
    line 'old_' in each file of drafts/: the rule the task states is planned, its renames asked for explicitly."""
    script(*reading([], kind="exact"), picks("add_first_line", "old_"))
    omx("add old_ to the front of every filename in notes/", input="y\n")  # the moves' count is not typed
    assert tree(ws)["notes/todo.md"] == TODO and tree(ws)["notes/ideas.md"] == "a bridge of kites\n"
    assert events(ws, "plan_from_reading") == [{"tools": ["move", "move"]}]


@pytest.mark.parametrize(
    "task", ["make all the filenames in inbox/ lowercase", "rename the files in inbox/ so their names are lower case"]
)
def test_the_names_of_a_folder_s_files_made_lower_case_are_each_renamed(
    ws: Path, script: Callable[..., ScriptedModel], task: str
) -> None:
    (ws / "inbox" / "Notes.TXT").write_text("n\n", encoding="utf-8")
    script(*reading(operations(("move", "inbox/Notes.TXT", "")), outputs=["inbox/"]))
    result = omx(task, input="y\n1\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert tree(ws)["inbox/notes.txt"] == "n\n" and "inbox/Notes.TXT" not in tree(ws)
    assert {"inbox/letter.txt", "inbox/poem.txt", "inbox/prices.csv"} <= set(tree(ws))  # lower case already


@pytest.mark.parametrize(
    "task",
    [
        "Anything in inbox/ that hasn't been modified in over a year should go into inbox/archive/ please",
        "Move the files of inbox/ older than 30 days to old/",
        "whatever in inbox/ was last changed before 3 March 2021 goes into old/",
    ],
)
def test_files_older_than_a_span_the_task_says_are_moved_where_it_says(
    ws: Path, script: Callable[..., ScriptedModel], task: str
) -> None:
    """The 0.5B model listed reads of one file over and over for "Anything in reports/ that hasn't been modified in
    over a year should go into reports/archive/"."""
    old = datetime(2020, 5, 1).timestamp()
    for name in ("letter.txt", "prices.csv"):
        os.utime(ws / "inbox" / name, (old, old))
    script(*reading(operations(("move", "inbox/poem.txt", "inbox/poem.txt")), outputs=["inbox/"]))
    result = omx(task, input="y\n2\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    into = "inbox/archive" if "archive" in task else "old"
    assert {k for k in tree(ws) if k.startswith(("inbox/", "old/"))} == {
        f"{into}/letter.txt", f"{into}/prices.csv", "inbox/poem.txt"}  # fmt: skip


def test_files_whose_names_hold_a_word_the_task_quotes_go_together_under_their_own_names(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model moved receipts/uber_march.txt to receipts/amazon/amazon_march.txt for "Move every file in
    receipts/ that has 'amazon' in its name into a new folder, receipts/amazon/", and left amazon_march.txt."""
    for name in ("amazon_april.txt", "amazon_march.txt", "uber_march.txt"):
        (ws / "inbox" / name).write_text(name, encoding="utf-8")
    ops = operations(("make_dir", "", "inbox/amazon"),
                     ("move", "inbox/amazon_april.txt", "inbox/amazon/amazon_april.txt"),
                     ("move", "inbox/uber_march.txt", "inbox/amazon/amazon_march.txt"))  # fmt: skip
    script(*reading(ops))
    task = "Move every file in inbox/ that has 'amazon' in its name into a new folder, inbox/amazon/."
    result = omx(task, input="y\n2\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    moved = {k: v for k, v in tree(ws).items() if k.startswith("inbox/amazon/")}
    assert moved == {
        "inbox/amazon/amazon_april.txt": "amazon_april.txt",
        "inbox/amazon/amazon_march.txt": "amazon_march.txt",
    }
    assert tree(ws)["inbox/uber_march.txt"] == "uber_march.txt"


def test_files_of_a_kind_scattered_over_the_folders_the_task_names_are_gathered(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    (ws / "app").mkdir()
    (ws / "app" / "server.log").write_text("s\n", encoding="utf-8")
    (ws / "app" / "main.py").write_text("m\n", encoding="utf-8")
    (ws / "worker").mkdir()
    (ws / "worker" / "jobs.log").write_text("j\n", encoding="utf-8")
    script(*reading(operations(("move", "app/server.log", "logs/server.log"))))
    task = "there are .log files scattered around app/ and worker/ - gather them all into a logs/ folder please"
    result = omx(task, input="y\n2\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert tree(ws)["logs/server.log"] == "s\n" and tree(ws)["logs/jobs.log"] == "j\n"
    assert tree(ws)["app/main.py"] == "m\n"


@pytest.mark.parametrize(
    ("named", "task"),
    [
        (True, "Sort the files in q/ into subfolders by the year in their name, e.g. q/2023/report_2023_q1.txt"),
        (True, "move the files of q/ into one folder per year, like q/2024/"),
        (False, "Sort the files in q/ into subfolders by year"),
    ],
)
def test_files_sorted_by_year_go_into_a_folder_for_the_year_their_name_holds_or_they_were_changed(
    ws: Path, script: Callable[..., ScriptedModel], named: bool, task: str
) -> None:
    (ws / "q").mkdir()
    for name, year in (("report_2023_q1.txt", 2023), ("report_2024_q1.txt", 2024)):
        path = ws / "q" / (name if named else f"{year % 2}.txt")
        path.write_text(name, encoding="utf-8")
        stamp = datetime(2021 if named else year, 6, 1).timestamp()
        os.utime(path, (stamp, stamp))
    script(*reading(operations(("make_dir", "", "q/report_2023_q1.txt"))))
    result = omx(task, input="y\n2\n")
    assert result.exit_code == workflow.EXIT_OK, result.output
    found = {k for k in tree(ws) if k.startswith("q/")}
    if named:
        assert found == {"q/2023/report_2023_q1.txt", "q/2024/report_2024_q1.txt"}
    else:
        assert found == {"q/2023/1.txt", "q/2024/0.txt"}  # no year in the names: the year each was changed
