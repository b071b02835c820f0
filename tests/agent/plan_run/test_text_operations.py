"""Exact work by an operation the model picks by name: each operation's code run by a real Python process on a
text, the picks that are no operation or whose arguments do not fit turned away, and, end to end through the real
``omx`` command with a scripted model, the real step sandbox and real files, a picked operation's code in the plan
the person sees, its value checked by a second program as any code's, and code asked of the model where no
operation fits."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.code_steps import TEMPLATE, code_problem
from agent.plan_run.code_templates import folder_template
from agent.plan_run.folder_files import folder_files
from agent.plan_run.operation_fitting import fitted, unsaid_arguments
from agent.plan_run.table_fitting import by_group
from agent.plan_run.task_reading import READING_SCHEMA_TITLE, named_paths
from agent.plan_run.text_operations import (
    FROM_LINES,
    IN_PLACE,
    NOT_TEXT,
    ON_FOLDER,
    OPERATIONS,
    SCHEMA_TITLE,
    TextOperation,
    offered_operations,
    operation_code,
)
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, run_end, trace_of

LOG = "09:00 INFO start\n09:01 ERROR disk full\n09:02 WARN slow\n09:03 INFO ok\n09:04 ERROR disk full\n"
TABLE = "name,team,points\nada,red,12\nbob,blue,7.5\ncy,red,3\n"
SALES = "day,n\n2024-01-05,10\n2024-01-20,30\n2024-02-02,35\n"
PROSE = "Mail ana@example.org or see https://example.org/docs. Order 12 came 3.5 days late, order 7 on time.\n"


def run(operation: TextOperation, text: str) -> str:
    """What ``operation``'s code prints when a real Python process runs it with INPUT holding ``text``."""
    code = "import sys\nINPUT = sys.stdin.read()\n" + operation_code(operation)
    done = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def op(name: str, text: str = "", new_text: str = "", number: int = 0) -> TextOperation:
    return TextOperation(op=name, text=text, new_text=new_text, number=number)


@pytest.mark.parametrize(
    ("operation", "text", "printed"),
    [
        (op("keep_containing", "ERROR|WARN"), LOG, "09:01 ERROR disk full\n09:02 WARN slow\n09:04 ERROR disk full\n"),
        (op("drop_containing", "INFO"), LOG, "09:01 ERROR disk full\n09:02 WARN slow\n09:04 ERROR disk full\n"),
        (op("keep_starting", "09:0"), "09:00 a\n 09:01 b\n10:00 c\n", "09:00 a\n 09:01 b\n"),
        (op("sort"), "pear\nApple\nbanana\n", "Apple\nbanana\npear\n"),
        (op("sort_numeric"), "b 10\nno number\na 9.5\n", "a 9.5\nb 10\nno number\n"),
        (op("sort_numeric_desc"), "b 10\nno number\na 9.5\nc 12\n", "c 12\nb 10\na 9.5\nno number\n"),
        (op("sort_desc"), "pear\nApple\nbanana\n", "pear\nbanana\nApple\n"),
        (op("reverse"), "a\nb\nc\n", "c\nb\na\n"),
        (op("unique"), "x\ny\nx\nz\ny\n", "x\ny\nz\n"),
        (op("sort_unique"), "pear\nApple\npear\nbanana\n", "Apple\nbanana\npear\n"),
        (op("sort_desc_unique"), "pear\nApple\npear\nbanana\n", "pear\nbanana\nApple\n"),
        (op("first", number=2), LOG, "09:00 INFO start\n09:01 ERROR disk full\n"),
        (op("last", number=2), LOG, "09:03 INFO ok\n09:04 ERROR disk full\n"),
        (op("number_lines"), "wash\ndry\n", "1. wash\n2. dry\n"),
        (op("upper"), "Hi there\n", "HI THERE\n"),
        (op("lower"), "Hi There\n", "hi there\n"),
        (op("replace", "colour", "color"), "a colour, two colours\n", "a color, two colors\n"),
        (op("replace", "teh|recieve", "the|receive"), "teh box will recieve\n", "the box will receive\n"),
        (op("replace", "a|b", "x"), "a|b and a\n", "x and a\n"),  # parts that do not pair: the whole text
        (op("replace_names", "total", "sum"), "total(x) + total_tax(x) + x.total\n", "sum(x) + total_tax(x) + x.sum\n"),
        (op("count_lines"), LOG, "5\n"),
        (op("count_lines", "ERROR"), LOG, "2\n"),
        (op("count_words"), "one two  three\nfour\n", "4\n"),
        (op("count_words", "Disk"), LOG, "2\n"),
        (op("add_up_numbers"), "3 apples and 4.5 pears\n", "7.5\n"),
        (op("extract_numbers"), PROSE, "12\n3.5\n7\n"),
        (op("largest_number"), "12.5\n-3\n7\n22.25 on 2026-01-05\n", "2026\n"),
        (op("largest_number"), "12.5\n-3\n7\n22.25\n", "22.25\n"),  # as written
        (op("smallest_number"), "12.5\n-3\n7\nrun 2026-01-05\n", "-3\n"),  # a date's dashes are no signs
        (op("extract_emails"), PROSE, "ana@example.org\n"),
        (op("extract_urls"), PROSE, "https://example.org/docs\n"),
        (op("top_words", number=2), "the cat and The dog and the end\n", "the 3\nand 2\n"),
        (op("json_field", "name"), json.dumps([{"name": "ada"}, {"id": 2}, {"name": "cy"}]), "ada\ncy\n"),
        (op("json_field", "name"), json.dumps({"users": [{"name": "ada"}]}), "ada\n"),
        (op("csv_column", "team"), TABLE, "red\nblue\nred\n"),
        (op("csv_where", "team", "red"), TABLE, "name,team,points\nada,red,12\ncy,red,3\n"),
        (op("csv_sum", "points"), TABLE, "22.5\n"),
        (op("csv_average", "points"), TABLE, "7.5\n"),
        (op("csv_count_rows"), TABLE + "\n", "3\n"),  # the header and an empty last line not counted
        (op("csv_count_where", "team", "red"), TABLE + "dee,Red,1\n", "3\n"),  # case aside
        (op("csv_group_largest", "points", "team"), TABLE, "red\n"),  # 15 against 7.5
        (op("csv_sort", "points"), TABLE, "name,team,points\ncy,red,3\nbob,blue,7.5\nada,red,12\n"),  # by value
        (op("csv_sort_desc", "name"), TABLE, "name,team,points\ncy,red,3\nbob,blue,7.5\nada,red,12\n"),
        (op("json_to_csv", "b|a"), json.dumps([{"a": 1, "b": "x", "c": [1]}]), "b,a\nx,1\n"),  # the columns said
        (op("json_to_csv"), json.dumps([{"a": 1, "c": [1, 2]}]), 'a,c\n1,"[1, 2]"\n'),  # a list as JSON
        (
            op("extract_phones"),
            "Call 01884 555210 or +44 7700 900118.\nAccount 448213, 2024-02-14.\n",
            "01884 555210\n+44 7700 900118\n",
        ),  # not an account number, nor a date
        (op("word_counts", new_text=": "), "b a b\nc b a\n", "b: 3\na: 2\nc: 1\n"),
        (op("csv_count_distinct", "team"), TABLE + "dee, blue ,1\n", "2\n"),  # spaces aside
        (op("earliest_date"), "2024-03-02 on\n2024-02-28 off\nid 12024-01-011\n", "2024-02-28\n"),  # not in a number
        (op("latest_date"), "2024-03-02 on\n2024-02-28 off\n", "2024-03-02\n"),
        (op("csv_group_smallest", "n", "day|month"), SALES, "February\n"),  # a month by its name
        (op("csv_group_largest", "n", "day|year"), SALES + "2025-01-01,1\n", "2024\n"),
        (
            op("open_items"),
            "# To do\n- [ ] call\n- [x] pay\n* [ ] post\n1. [X] wash\nnote [ ] x\n",
            "- [ ] call\n* [ ] post\n",
        ),
        (op("done_items"), "# To do\n- [ ] call\n- [x] pay\n* [ ] post\n1. [X] wash\n", "- [x] pay\n1. [X] wash\n"),
        (op("csv_group_largest", "", "team"), TABLE, "red\n"),  # 2 rows against 1
        (op("csv_group_smallest", "", "team"), TABLE, "blue\n"),
        (op("csv_group_largest", "n", "day|month"), SALES + "2025-01-01,90\n", "January 2025\n"),  # several years
        (op("csv_largest", "points", "name"), TABLE, "ada\n"),
        (op("csv_smallest", "points", "team"), TABLE + "dee,blue,n/a\n", "red\n"),  # a cell that is no number aside
        (op("csv_lookup", "BOB", "points"), TABLE, "7.5\n"),  # the row that holds the value, case aside
        (op("csv_largest", "born", "name"), "name,born\nrex,2019-05-02\nbo,2021-01-30\nmo,2020-12-31\n", "bo\n"),
        (op("csv_smallest", "born", "name"), "name,born\nrex,2019-05-02\nbo,2021-01-30\n", "rex\n"),  # by date
        (op("json_value", "port"), json.dumps({"name": "app", "port": 8080}), "8080\n"),
        (op("json_value", "server.tls"), json.dumps({"server": {"tls": True}}), "true\n"),  # a truth value as JSON
        (op("json_value", "debug"), "app:\n  log:\n    debug: false\n", "false\n"),  # YAML, the one key of its name
        (op("json_value", "hosts"), json.dumps({"hosts": ["a", "b"]}), '["a", "b"]\n'),
        (
            op("json_value", "conf.delivery.radius"),
            "delivery:\n  radius_km: 8\n  min_order: 25\n",
            "8\n",
        ),  # a word of it
        (op("json_value", "connections"), json.dumps({"maxConnections": 5, "port": 1}), "5\n"),
        (op("csv_to_table"), "a,b\n1,2\n", "| a | b |\n| --- | --- |\n| 1 | 2 |\n"),
        (op("csv_to_json"), "a,b\n1,2\n", json.dumps([{"a": "1", "b": "2"}], indent=2) + "\n"),
        (op("json_to_csv"), json.dumps([{"a": 1, "b": "x"}]), "a,b\n1,x\n"),
        (op("yaml_to_json"), "name: app\nport: 8080\n", json.dumps({"name": "app", "port": 8080}, indent=2) + "\n"),
        (op("json_to_yaml"), json.dumps({"name": "app", "port": 8080}), "name: app\nport: 8080\n"),
        (op("add_first_line", "# Title"), "body\n", "# Title\nbody\n"),
        (op("add_last_line", "bread"), "milk\neggs\n", "milk\neggs\nbread\n"),
    ],
    ids=lambda value: value.op if isinstance(value, TextOperation) else "",
)
def test_each_operation_s_code_prints_its_result(operation: TextOperation, text: str, printed: str) -> None:
    assert run(operation, text) == printed


@pytest.fixture
def media(tmp_path: Path) -> Path:
    """A folder of four files of known sizes and dates (one in a subfolder)."""
    sizes = {"b.mp3": 300, "a.png": 40, "c.mp3": 300, "old/z.png": 900}
    days = {"b.mp3": "2025-06-01", "a.png": "2026-02-01", "c.mp3": "2026-03-01", "old/z.png": "2025-12-31"}
    for name, size in sizes.items():
        path = tmp_path / "ws" / "media" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
        stamp = datetime.fromisoformat(days[name] + "T12:00:00").timestamp()
        os.utime(path, (stamp, stamp))
    return tmp_path / "ws"


@pytest.mark.parametrize(
    ("operation", "printed"),
    [
        (op("list_files"), "a.png\nb.mp3\nc.mp3\nz.png\n"),
        (op("list_files", "*.mp3"), "b.mp3\nc.mp3\n"),
        (op("count_files", "*.png"), "2\n"),
        (op("largest_files", number=2), "z.png\nb.mp3\n"),  # ties by name
        (op("smallest_files", number=2), "a.png\nb.mp3\n"),
        (op("newest_files", number=2), "c.mp3\na.png\n"),
        (op("oldest_files", number=1), "b.mp3\n"),
        (op("files_changed_before", "2026-01-01"), "b.mp3\nz.png\n"),
        (op("files_changed_after", "2026-02-01"), "c.mp3\n"),  # after the day, not on it
        (op("files_larger_than", "300"), "z.png\n"),
        (op("files_smaller_than", "301"), "a.png\nb.mp3\nc.mp3\n"),
        (op("join_files", "*.png"), "x" * 40 + "\n" + "x" * 900 + "\n"),  # by path: media/a.png, media/old/z.png
    ],
    ids=lambda value: value.op if isinstance(value, TextOperation) else "",
)
def test_each_operation_on_a_folder_prints_its_result_from_the_folder_s_files(
    media: Path, operation: TextOperation, printed: str
) -> None:
    listed = folder_files(media, "media/")
    assert listed is not None
    head = "\n".join(folder_template("media/", *listed, "2026-11-29").head)
    done = subprocess.run([sys.executable, "-c", head + "\n" + operation_code(operation)], cwd=media,
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed


@pytest.mark.parametrize("said", ["2026-01-01", "1 January 2026", "January 1, 2026", "2026/01/01"])
def test_a_date_is_read_in_the_forms_people_write_it(said: str) -> None:
    assert picked(reply("files_changed_before", said), "") == op("files_changed_before", "2026-01-01")
    assert picked(reply("files_changed_after", said), "") == op("files_changed_after", "2026-01-01")


@pytest.mark.parametrize(
    ("said", "size"), [("1 KB", 1024), ("2MB", 2 * 1024**2), ("500 bytes", 500), ("1.5k", 1536), ("300", 300)]
)
def test_a_size_is_read_in_the_forms_people_write_it(said: str, size: int) -> None:
    assert picked(reply("files_larger_than", said), "") == op("files_larger_than", str(size))
    assert picked(reply("files_smaller_than", "big"), "") is None  # no size: no fit
    assert picked(reply("files_larger_than", said), "", task=f"List the files of x/ over {said}") == op(
        "files_larger_than", str(size)
    )


def test_a_size_the_task_does_not_say_is_no_fit() -> None:
    """The 1.5B model picked the files smaller than '1 KB' for a question about the smallest file: where the task
    asks for the largest or the smallest, that is the first of them by size."""
    task = "Which file in photos/ is the smallest? Write its name to out/smallest.txt"
    assert picked(reply("files_smaller_than", "1 KB"), "", task=task) == op("smallest_files", number=1)
    assert picked(reply("files_larger_than", "2 KB"), "", task="the files of x/ bigger than 1 KB") is None
    assert picked(reply("files_larger_than", "2 KB"), "", task="Which files of x/ are big?") is None
    biggest = "Write the two biggest files in x/ to out/big.txt"
    assert picked(reply("files_larger_than", "1 MB"), "", task=biggest) is None  # no NUMBER picked: no fit
    assert picked(reply("smallest_files", number=2), "", task=biggest) == op("largest_files", number=2)


@pytest.mark.parametrize(
    ("task", "picked_op", "sorted_as"),
    [
        ("Sort data/s.txt by the number in each line, highest first, into out/r.txt", "sort_numeric",
         "sort_numeric_desc"),
        ("Order the names in data/s.txt in descending order into out/r.txt", "sort", "sort_desc"),
        ("Sort data/s.txt from Z to A into out/r.txt", "sort", "sort_desc"),
        ("Sort data/s.txt by the number in each line, lowest first, into out/r.txt", "sort_numeric", "sort_numeric"),
        ("Sort data/s.txt alphabetically into out/r.txt", "sort", "sort"),
    ],
)  # fmt: skip
def test_a_sort_picked_one_way_where_the_task_asks_the_other_is_that_sort_the_other_way(
    task: str, picked_op: str, sorted_as: str
) -> None:
    """The 0.5B model picked the sort by number, smallest first, for "highest first"."""
    fit = fitted(TextOperation.model_validate_json(reply(picked_op)), "b 2\na 1\n", [], task)
    assert fit is not None and fit.op == sorted_as


@pytest.mark.parametrize(
    ("picked_op", "sample", "sorted_as"),
    [
        ("sort_numeric", "Zoe\nadam\nMia\n", "sort"),
        ("sort_numeric_desc", "Zoe\nadam\nMia\n", "sort_desc"),
        ("sort_numeric", "b 2\na 10\n", "sort_numeric"),  # numbers there: as picked
        ("sort_numeric", "", "sort_numeric"),  # nothing to look at: as picked
    ],
)
def test_a_sort_by_number_picked_for_lines_that_hold_none_is_the_sort_by_letters(
    picked_op: str, sample: str, sorted_as: str
) -> None:
    """The 0.5B model picked the sort by number for "Sort the lines ... alphabetically, ignoring case"."""
    fit = fitted(TextOperation.model_validate_json(reply(picked_op)), sample, [], "Sort the names into out/s.txt")
    assert fit is not None and fit.op == sorted_as


@pytest.mark.parametrize(
    ("task", "picked_op", "found_as"),
    [
        ("What is the highest number in data/t.txt? Write it to out/m.txt", "smallest_number", "largest_number"),
        ("Find the lowest value in data/t.txt, into out/m.txt", "largest_number", "smallest_number"),
        ("Which city of data/t.csv is the coldest (the low column)? Into out/c.txt", "csv_largest", "csv_smallest"),
        ("Who scored most in data/t.csv? Into out/w.txt", "csv_smallest", "csv_largest"),
        ("The highest and the lowest number of data/t.txt, into out/m.txt", "smallest_number", "smallest_number"),
        ("The fastest lap in data/t.csv, into out/f.txt", "csv_smallest", "csv_smallest"),  # no word says which end
    ],
)  # fmt: skip
def test_the_largest_picked_where_the_task_asks_the_smallest_is_the_smallest(
    task: str, picked_op: str, found_as: str
) -> None:
    """The 0.5B model picked the smallest number for "What is the highest number in data/temps.txt?"."""
    answer = reply(picked_op, "low" if picked_op.startswith("csv") else "", "city" if "csv" in picked_op else "")
    fit = picked(answer, "city,low\nOslo,-3\nRome,9\n" if "csv" in picked_op else "12\n-3\n", [], task)
    assert fit is not None and fit.op == found_as


@pytest.mark.parametrize(
    ("task", "number"),
    [
        ("Which is the most recently changed file in logs/? Its name in out/n.txt", 1),
        ("Put the name of the largest file in logs/ in out/n.txt", 1),
        ("List the newest files in logs/ in out/n.txt", None),  # how many is not said
    ],
)
def test_a_ranking_of_files_that_asks_for_one_file_keeps_one(task: str, number: int | None) -> None:
    fit = picked(reply("newest_files"), "", ["logs/"], task)
    assert (fit.number if fit is not None else None) == number


def test_a_pattern_of_names_is_one_of_names_its_folder_left_out() -> None:
    assert picked(reply("count_files", "src/*.py"), "") == op("count_files", "*.py")


@pytest.mark.parametrize(
    ("text", "task", "days"),
    [
        ("30 days", "", 30),
        ("a year ago", "", 365),
        ("last week", "", 7),
        ("two months", "", 60),
        ("yesterday", "", 1),
        ("", "List the files in docs/ not modified for more than a year", 365),  # the task's span
        ("old", "Which files of docs/ changed in the last 7 days?", 7),
    ],
)
def test_a_span_before_today_is_the_day_it_names(text: str, task: str, days: int) -> None:
    fit = picked(reply("files_changed_before", text), "", task=task)
    assert fit is not None and fit.text == (date.today() - timedelta(days=days)).isoformat()


def test_a_date_that_is_none_does_not_fit() -> None:
    assert picked(reply("files_changed_before", "the old ones"), "") is None


def test_every_operation_on_the_text_has_code_and_is_tested_above() -> None:
    on_text = set(OPERATIONS) - NOT_TEXT - ON_FOLDER
    tested = {
        "keep_containing",
        "drop_containing",
        "keep_starting",
        "sort",
        "sort_numeric",
        "sort_numeric_desc",
        "sort_desc",
        "reverse",
        "unique",
        "first",
        "last",
        "number_lines",
        "upper",
        "lower",
        "replace",
        "count_lines",
        "count_words",
        "add_up_numbers",
        "largest_number",
        "smallest_number",
        "extract_numbers",
        "extract_emails",
        "extract_urls",
        "top_words",
        "json_field",
        "csv_column",
        "csv_where",
        "csv_sum",
        "csv_average",
        "csv_count_rows",
        "csv_largest",
        "csv_smallest",
        "csv_lookup",
        "json_value",
        "csv_to_table",
        "csv_to_json",
        "json_to_csv",
        "yaml_to_json",
        "json_to_yaml",
        "add_first_line",
        "add_last_line",
    }
    assert on_text == tested


@pytest.mark.parametrize("name", sorted(set(OPERATIONS) - NOT_TEXT))
def test_no_operation_s_code_is_turned_away_as_code_that_cannot_work(name: str) -> None:
    """omx's code for csv_where wrote through csv.writer and printed nothing: the step's code was taken for one that
    cannot work, and asked of the model instead."""
    code = operation_code(op(name, "x", "y", 2))
    if name in ON_FOLDER:
        assert code_problem("files = []\n" + code, must_print=True) is None
    else:
        assert code_problem(code, must_print=True, given_input=True) is None


def reply(name: str, text: str = "", new_text: str = "", number: int = 0) -> str:
    return json.dumps({"op": name, "text": text, "new_text": new_text, "number": number})


def picked(answer: str, sample: str, files: list[str] | None = None, task: str = "") -> TextOperation | None:
    """The operation of the model's ``answer``, fitted to ``sample`` (and to ``task``)."""
    return fitted(TextOperation.model_validate_json(answer), sample, files or [], task)


PETS = "pet_id,name,date_of_birth,weight_kg,unit_price_gbp\nP1,Rex,2019-05-02,31.5,4.10\nP2,Bo,2021-01-30,4.2,0.35\n"


@pytest.mark.parametrize(
    ("task", "picked_op", "found"),
    [
        ("which of our patients is the youngest? birth dates are in data/p.csv. pet's name into out/y.txt",
         reply("csv_lookup", "pet's name", "out/y.txt"), op("csv_largest", "date_of_birth", "name")),
        ("Which pet is the oldest (data/p.csv)? Its name in out/y.txt",
         reply("csv_lookup", "oldest", "name"), op("csv_smallest", "date_of_birth", "name")),
        ("whats the cheapest med per unit in data/p.csv? just the name in out/c.txt",
         reply("csv_lookup", "medicines", "cheapest_med"), op("csv_smallest", "unit_price_gbp", "name")),
        ("the heaviest pet in data/p.csv? its pet_id -> out/h.txt",
         reply("csv_lookup", "heaviest", "pet_id"), op("csv_largest", "weight_kg", "pet_id")),
    ],
)  # fmt: skip
def test_a_superlative_measures_the_column_its_meaning_names(task: str, picked_op: str, found: TextOperation) -> None:
    """The 0.5B model picked a lookup of a row named 'medicines' for "whats the cheapest med per unit", and of one
    named "pet's name" for "which of our patients is the youngest? birth dates are in ...": no column is said
    after the word, the column it measures is named by what the word means (a price, a birth date, a weight)."""
    assert picked(picked_op, PETS, ["data/p.csv", "out/y.txt"], task) == found


@pytest.mark.parametrize(
    ("key", "task", "found"),
    [
        ("lead_days", "what's reminders.lead_days set to in config/c.json? just the number in out/lead_days.txt",
         op("json_value", "reminders.lead_days")),
        ("port", "what port does config/c.json set? into out/port.txt", op("json_value", "port")),
    ],
)  # fmt: skip
def test_a_key_inside_another_the_task_writes_whole_is_the_key_looked_up(
    key: str, task: str, found: TextOperation
) -> None:
    """The 0.5B model picked 'lead_days' for "what's reminders.lead_days set to ...": the name of the output without
    its extension too, so taken for a file's name, and the code was asked of the model, which printed the whole
    reminders object."""
    sample = json.dumps({"reminders": {"lead_days": 3, "vaccine_lead_days": 14}, "port": 80})
    assert (
        picked(reply("json_field", key), sample, ["config/c.json", "out/lead_days.txt", "out/port.txt"], task) == found
    )


RESULTS = "name,minutes,speed_kmh\nAlex,31,11.6\nDana,27,13.3\nBo,35,10.3\n"


@pytest.mark.parametrize(
    ("task", "picked_op", "found"),
    [
        ("Who ran fastest according to data/r.csv (the minutes column)? The name only in out/w.txt",
         reply("csv_lookup", "fastest", "name"), op("csv_smallest", "minutes", "name")),
        ("Who ran fastest according to data/r.csv (the minutes column)? The name only in out/w.txt",
         reply("csv_largest", "minutes", "name"), op("csv_smallest", "minutes", "name")),
        ("Who was slowest in data/r.csv, by minutes? The name only in out/w.txt",
         reply("csv_smallest", "minutes", "name"), op("csv_largest", "minutes", "name")),
        ("Who was quickest in data/r.csv by speed_kmh? The name only in out/w.txt",
         reply("csv_smallest", "speed_kmh", "name"), op("csv_largest", "speed_kmh", "name")),
        ("Who was quickest in data/r.csv? The name only in out/w.txt",  # a speed and a time: no end said
         reply("csv_smallest", "speed_kmh", "name"), op("csv_smallest", "speed_kmh", "name")),
    ],
)  # fmt: skip
def test_the_fastest_is_the_least_time_taken_and_the_most_speed(
    task: str, picked_op: str, found: TextOperation
) -> None:
    """The 0.5B model wrote no code that works for "Who ran fastest according to data/results.csv (the minutes
    column)?": no word of the largest or the smallest said which end of the minutes is asked."""
    assert picked(picked_op, RESULTS, ["data/r.csv", "out/w.txt"], task) == found


@pytest.mark.parametrize(
    "answer",
    [
        reply("write_prose"),
        reply("file_operations"),
        reply("other"),
        reply("no_such_operation"),
        reply("first"),  # no number
        reply("keep_containing"),  # no text
        reply("csv_sum", "price"),  # no such column
        reply("csv_where", "team"),  # no value to keep
    ],
)
def test_a_pick_that_is_no_operation_or_does_not_fit_gives_none(answer: str) -> None:
    assert picked(answer, TABLE) is None


@pytest.mark.parametrize(
    ("task", "answer", "text", "new_text"),
    [
        ("Replace 'colour' with 'color' and 'favourite' with 'favorite' in a.txt, saving to b.txt",
         reply("replace", "colour", "color"), "colour|favourite", "color|favorite"),
        ('Change "teh" to "the", "recieve" to "receive" in notes/', reply("replace", "recieve", "receive"),
         "teh|recieve", "the|receive"),
        ("Replace 'colour' with 'color' in a.txt, saving to b.txt", reply("replace", "colour", "color"), "colour",
         "color"),  # one pair quoted: as picked
        ("Replace 'a' with 'b' and 'c' with 'd' in x.txt", reply("replace", "e", "f"), "e", "f"),  # not one quoted
    ],
)  # fmt: skip
def test_a_replacement_of_one_pair_the_task_quotes_is_all_the_pairs_it_quotes(
    task: str, answer: str, text: str, new_text: str
) -> None:
    """The 0.5B model picked 'colour' with 'color' for a task that quoted two replacements."""
    assert picked(answer, "", task=task) == op("replace", text, new_text)


@pytest.mark.parametrize(
    ("task", "answer", "fit"),
    [
        ("Append the line 'MIT licensed.' to README.md", reply("replace", "MIT licensed.", "MIT licensed."),
         op("add_last_line", "MIT licensed.")),
        ("Insert '# SPDX: MIT' as the first line of each Python file in src/", reply("replace", "# SPDX: MIT"),
         op("add_first_line", "# SPDX: MIT")),
        ("Put 'Draft' at the top of notes/a.txt", reply("replace", "x", "Draft"), op("add_first_line", "Draft")),
        ("Replace 'tea' with 'coffee' in notes/a.txt", reply("replace", "tea", "coffee"),
         op("replace", "tea", "coffee")),  # a replacement that changes something
        ("Append 'tea' at the end of the first line of notes/a.txt", reply("replace", "x", "tea"),
         op("replace", "x", "tea")),  # both ends said: as picked
        ("Put 'Draft' at the top of notes/a.txt", reply("replace", "x", "Final"), op("replace", "x", "Final")),
    ],
)  # fmt: skip
def test_a_replacement_that_changes_nothing_where_the_task_puts_a_line_at_one_end_is_that_line_added(
    task: str, answer: str, fit: TextOperation
) -> None:
    assert picked(answer, "tea for two\n", [], task) == fit


def test_a_file_the_task_names_given_as_text_is_no_text_to_look_for() -> None:
    files = ["data/a.txt", "out/n.txt"]
    assert picked(reply("count_lines", "data/a.txt"), "x", files) == op("count_lines")
    assert picked(reply("count_lines", "a.txt"), "x", files) == op("count_lines")
    assert picked(reply("count_lines", "a"), "x", files) == op("count_lines")
    assert picked(reply("count_lines", "ERROR"), "x", files) == op("count_lines", "ERROR")
    assert picked(reply("keep_containing", "data/a.txt"), "x", files) is None  # it needs a text


def test_a_word_looked_for_that_names_a_file_too_is_still_looked_for() -> None:
    """The 0.5B model's TEXT 'sea' for "How many times does the word 'sea' appear in essay/draft.txt? Save the count
    to out/sea.txt" was taken for the output's name, and every word counted."""
    files = ["essay/draft.txt", "out/sea.txt"]
    task = "How many times does the word 'sea' appear in essay/draft.txt? Save the count to out/sea.txt"
    assert picked(reply("count_words", "sea"), "The sea is wide.", files, task) == op("count_words", "sea")
    # said only in a path, or not in the input: a file's name
    assert picked(reply("count_words", "sea"), "The sea is wide.", files, "Count the words of essay/draft.txt into "
                  "out/sea.txt") == op("count_words")  # fmt: skip
    assert picked(reply("count_lines", "orders"), "a\nb\n", ["data/orders.txt"], "Count the orders in "
                  "data/orders.txt") == op("count_lines")  # fmt: skip


@pytest.mark.parametrize(
    ("task", "answer", "fit"),
    [
        ("Add up the qty column of shop/orders.csv into out/q.txt", reply("add_up_numbers", "qty"),
         op("csv_sum", "qty")),
        ("Count the orders in shop/orders.csv (one per row after the header) into out/n.txt", reply("count_lines"),
         op("csv_count_rows")),
        ("How many lines does shop/orders.csv have? Into out/n.txt", reply("count_lines"), op("count_lines")),
        ("Count the lamp orders in shop/orders.csv into out/n.txt", reply("count_lines", "lamp"),
         op("csv_count_where", "item", "lamp")),  # a value of one column: the rows that hold it
        ("Count the a orders in shop/orders.csv into out/n.txt", reply("count_lines", "a"),
         op("count_lines", "a")),  # a text looked for, no cell's value: the lines that hold it
        ("Add up the numbers of shop/orders.csv into out/q.txt", reply("add_up_numbers"), op("add_up_numbers")),
    ],
)  # fmt: skip
def test_a_sum_or_a_count_of_lines_picked_on_a_table_is_the_table_s_own(
    task: str, answer: str, fit: TextOperation
) -> None:
    """The 0.5B model summed every number of a CSV file for "Add up the qty column", and counted its header as an
    order."""
    table = "id,item,qty\n1,lamp,2\n2,desk,1\n"
    assert picked(answer, table, ["shop/orders.csv"], task) == fit
    assert picked(answer, "lamp 2\ndesk 1\n", ["shop/orders.csv"], task) == op(  # no table: as picked
        *json.loads(answer).values()
    )


@pytest.mark.parametrize(
    ("task", "sample", "answer", "fit"),
    [
        ("Convert data/pets.csv to JSON in out/pets.json", "name,age\nRex,4\n", reply("csv_column", "pet_name"),
         op("csv_to_json")),
        ("Turn config/app.json into YAML at out/app.yaml", '{"port": 8080}', reply("json_field", "config"),
         op("json_to_yaml")),
        ("Convert data/t.yaml to out/t.json", "name: app\nport: 1\n", reply("other"), op("yaml_to_json")),
        ("Turn data/t.json into a CSV file, out/t.csv", '[{"a": 1}]', reply("json_field", "a"), op("json_to_csv")),
        ("Convert data/pets.csv into a table in out/pets.md", "name,age\nRex,4\n", reply("csv_where", "age", "4"),
         op("csv_to_table")),
        ("Put the names of data/u.json into out/n.csv", '[{"name": "a"}]', reply("json_field", "name"),
         op("json_field", "name")),  # no conversion said: as picked
    ],
)  # fmt: skip
def test_a_conversion_the_task_asks_is_the_one_from_the_input_s_form_to_the_output_s(
    task: str, sample: str, answer: str, fit: TextOperation
) -> None:
    """The 0.5B model picked a CSV column that is not there for "Convert data/pets.csv to JSON in out/pets.json", and
    a JSON field for "Turn config/app.json into YAML at out/app.yaml"."""
    assert picked(answer, sample, named_paths(task), task) == fit


def test_a_column_op_with_no_column_of_the_header_takes_the_one_the_task_says() -> None:
    """The 0.5B model gave no column for "Compute the average age in data/people.csv"."""
    people = "name,city,age\nAna,Porto,31\nBen,Lyon,45\n"
    task = "Compute the average age in data/people.csv and save it to out/age.txt"
    assert picked(reply("csv_average"), people, [], task) == op("csv_average", "age")
    assert picked(reply("csv_average", "years"), people, [], task) == op("csv_average", "age")
    assert picked(reply("csv_average"), people, [], "The average age per city of data/people.csv") is None  # two
    assert picked(reply("csv_average"), people, [], "The average of data/people.csv") is None  # none said


def test_a_sum_or_average_of_no_column_of_the_header_takes_the_one_column_of_numbers_a_word_names() -> None:
    """The 0.5B model picked the average of 'invoice_total' for "average invoice total in data/invoices.csv, 2
    decimal places", whose column is total_gbp; its code then failed three times."""
    invoices = "invoice_no,owner,total_gbp,paid_gbp\nINV-1,Ana,64.50,64.50\nINV-2,Ben,212.00,0\n"
    task = "average invoice total in data/invoices.csv, 2 decimal places. save it as out/avg.txt"
    assert picked(reply("csv_average", "invoice_total"), invoices, [], task) == op("csv_average", "total_gbp")
    assert picked(reply("csv_sum", "amount"), invoices, [], "what was paid in all, data/invoices.csv?") == op(
        "csv_sum", "paid_gbp"
    )
    assert picked(reply("csv_sum", "gbp"), invoices, [], "the sum of data/invoices.csv") is None  # two share it


def test_a_column_is_taken_as_the_header_spells_it_and_column_equals_value_is_read() -> None:
    assert picked(reply("csv_sum", "Points"), TABLE) == op("csv_sum", "points")
    assert picked(reply("csv_where", "team = red"), TABLE) == op("csv_where", "team", "red")


def test_the_answer_of_a_row_found_by_a_column_is_a_column_of_the_header_or_the_first() -> None:
    assert picked(reply("csv_largest", "Points", "NAME"), TABLE) == op("csv_largest", "points", "name")
    assert picked(reply("csv_smallest", "points", "winner"), TABLE) == op("csv_smallest", "points", "name")
    assert picked(reply("csv_smallest", "speed", "name"), TABLE) is None  # no such column


def test_the_texts_of_a_pick_the_task_does_not_say_are_the_model_s_inference() -> None:
    task = "Keep the lines of data/log.txt that mention Disk  Full or WARN, and change 'colour' to 'color'"
    assert unsaid_arguments(op("keep_containing", "disk full|WARN"), task) == []  # case and spacing aside
    assert unsaid_arguments(op("keep_containing", "ERROR|WARN"), task) == ["ERROR"]
    assert unsaid_arguments(op("replace", "colour", "colour"), task) == []
    assert unsaid_arguments(op("replace", "colour", "hue"), task) == ["hue"]
    assert unsaid_arguments(op("first", "anything", "x", 2), task) == ["anything"]
    assert unsaid_arguments(op("keep_containing", "x", "not used"), "a task with x") == []  # NEW_TEXT unused
    assert unsaid_arguments(op("list_files", "*.py"), task) == unsaid_arguments(op("write_prose", "z"), task) == []


def test_a_whole_column_picked_where_the_task_names_one_of_its_values_is_the_rows_with_that_value() -> None:
    def fit(answer: str, task: str) -> TextOperation | None:
        return fitted(TextOperation.model_validate_json(answer), TABLE, ["data/t.csv"], task)

    rows = "Keep the rows of data/t.csv whose team is Red"
    assert fit(reply("csv_column", "team", "t.csv"), rows) == op("csv_where", "team", "red")
    assert fit(reply("csv_where", "team", "team"), rows) == op("csv_where", "team", "red")  # no value of it
    assert fit(reply("csv_where", "team", "blue"), rows) == op("csv_where", "team", "blue")  # a value: the model's
    assert fit(reply("csv_column", "team"), "The team column of data/t.csv") == op("csv_column", "team")
    assert fit(reply("csv_column", "team"), "The red and blue teams of data/t.csv") == op("csv_column", "team")
    assert fit(reply("csv_column", "team"), "The team column, reddish ones") == op("csv_column", "team")


def test_the_rows_with_a_word_in_a_column_of_numbers_are_no_pick() -> None:
    """The 1.5B model picked the rows whose reorder_level is 'stock' for "list the parts whose stock is below the
    reorder level": no row holds it."""
    parts = "sku,name,qty,reorder_level\nA1,pads,2,5\nA2,chain,9,3\n"
    task = "list the parts whose stock is below the reorder level in parts.csv"
    assert fitted(op("csv_where", "reorder_level", "stock"), parts, ["parts.csv"], task) is None
    assert fitted(op("csv_where", "qty", "2"), parts, ["parts.csv"], "rows of parts.csv with qty 2") is not None


def test_the_operations_offered_are_those_the_files_the_task_names_can_take(tmp_path: Path) -> None:
    (tmp_path / "media").mkdir()
    files = {"log.txt": LOG, "t.csv": TABLE, "u.json": "[]", "c.yaml": "a: 1\n", "plain": TABLE, "listed": "[1]\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "link.csv").symlink_to(tmp_path / "t.csv")

    def offered(*named: str) -> set[str]:
        return set(offered_operations(tmp_path, named))

    assert offered() == offered("out/new.txt", "gone/") == offered("link.csv") == set(NOT_TEXT)
    text_only = set(NOT_TEXT) | FROM_LINES | {"count_lines", "count_words", "add_up_numbers", "top_words"}
    text_only |= {"largest_number", "smallest_number"}
    text_only -= {"csv_column", "csv_where", "csv_to_table", "csv_to_json", "json_field", "json_to_csv"}
    text_only -= {"yaml_to_json", "json_to_yaml"}
    assert offered("log.txt", "out/x.txt") == text_only | set()  # no CSV, JSON, YAML or folder operation
    assert {"csv_sum", "csv_where", "csv_to_table"} <= offered("t.csv") and "json_field" not in offered("t.csv")
    assert {"csv_sum", "csv_to_json"} <= offered("plain")  # a header and rows: CSV by its lines
    assert {"json_field", "json_to_csv"} <= offered("u.json") and {"json_field"} <= offered("listed")
    assert "yaml_to_json" in offered("c.yaml") and "csv_sum" not in offered("c.yaml")
    assert "json_value" in offered("c.yaml") & offered("u.json") and "csv_lookup" in offered("t.csv")
    assert not {"json_value", "csv_lookup"} & offered("log.txt")
    in_place = IN_PLACE & set(OPERATIONS)  # a sort that drops duplicates is no pick: what a fit makes of one
    assert offered("media/") == set(NOT_TEXT) | ON_FOLDER | in_place  # each file of a folder edited in place
    assert offered("media/", "log.txt") == text_only | ON_FOLDER | in_place


# -- end to end ----------------------------------------------------------------------------------------------------

TASK = "Put the lines of data/log.txt that mention ERROR into out/errors.txt"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "log.txt").write_text(LOG, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def read_exact(kind: str = "exact", count: int | None = None) -> dict[str, Any]:
    read = {"inputs": ["data/log.txt"], "outputs": ["out/errors.txt"], "kind": kind, "shape": "lines",
            "count": count, "max_words": None}  # fmt: skip
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}


def model_calls(ws: Path) -> list[str]:
    return [c["purpose"] for c in kinds(trace_of(only_run(ws)), "model") if c["purpose"] != "reading"]


def test_a_picked_operation_is_omx_s_code_in_the_plan_and_its_value_is_checked(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    second = "print('\\n'.join(line for line in INPUT.splitlines() if 'ERROR' in line))"
    model = script(read_exact(), {"for": SCHEMA_TITLE, "content": reply("keep_containing", "ERROR")}, second)
    result = omx(TASK, "--yes", input="y\n")  # code runs: MEDIUM, asked
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == "09:01 ERROR disk full\n09:04 ERROR disk full\n"
    assert "(code by omx for the operation 'keep_containing' the model picked)" in result.output
    assert "'ERROR' in line" in result.output  # the code itself is in the plan the person confirms
    assert model_calls(ws) == ["second_program"]  # no plan, no code asked of the model (the pick is the reading's)
    asked = next(r for r in model.requests if r["json_mode"] and r["json_mode"].get("title") == SCHEMA_TITLE)
    assert asked["messages"][-1]["content"] == f"Task: {TASK}"
    assert run_end(trace_of(only_run(ws)))["status"] == "success"  # a second program, written apart, agreed


def test_a_picked_operation_whose_value_a_second_program_disputes_is_no_success(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    # the model picked the wrong operation (the first 2 lines); a second program written apart printed the errors
    second = "print('\\n'.join(line for line in INPUT.splitlines() if 'ERROR' in line))"
    script(read_exact(), {"for": SCHEMA_TITLE, "content": reply("first", number=2)}, second, "print(1)", "")
    result = omx(TASK, "--yes", input="y\n")
    assert "[not met] a second program, written apart, printed the same value" in result.output, result.output
    assert "Result: success" not in result.output
    assert run_end(trace_of(only_run(ws)))["status"] != "success"


def test_programs_that_agree_after_two_disagreed_in_the_same_run_do_not_make_a_success(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Two programs written apart by the same small model can share a mistake: where two disagreed in a run, the new
    code and a new second program agreeing does not settle the value (the run is done, the value not checked)."""
    errors = "print('\\n'.join(line for line in INPUT.splitlines() if 'ERROR' in line))"
    first_two = TEMPLATE.replace(
        "result = ...  # computed from text or lines: a str, a number, or a list of lines", "result = lines[:2]"
    )
    fixed = TEMPLATE.replace(
        "result = ...  # computed from text or lines: a str, a number, or a list of lines",
        "result = [line for line in lines if 'ERROR' in line]",
    )
    script(read_exact(), {"for": SCHEMA_TITLE, "content": reply("other")}, first_two, errors, fixed, errors)
    result = omx(TASK, "--yes", input="y\ny\n")
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == "09:01 ERROR disk full\n09:04 ERROR disk full\n"
    assert "Two programs written apart printed different values" in result.output, result.output
    assert "but two programs printed different values earlier in this run" in result.output
    assert "Result: success" not in result.output and run_end(trace_of(only_run(ws)))["status"] != "success"


def test_omx_s_code_of_the_pick_a_second_program_disputes_is_kept_and_the_value_left_unchecked(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """Asked again after a second program disagreed, the 0.5B model replaced omx's code that kept a checklist's open
    items by code that printed its heading alone: omx's code does what the pick names, so it is kept."""
    wrong_second = "print(INPUT.splitlines()[0])"
    model = script(read_exact(), {"for": SCHEMA_TITLE, "content": reply("keep_containing", "ERROR")}, wrong_second)
    result = omx(TASK, "--yes", input="y\n")
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == "09:01 ERROR disk full\n09:04 ERROR disk full\n"
    assert "[not met] a second program, written apart, printed the same value" in result.output, result.output
    assert model_calls(ws) == ["second_program"] and len(model.requests) == 3  # no code asked again, no re-plan
    assert run_end(trace_of(only_run(ws)))["status"] != "success"


def test_a_pick_of_prose_leaves_the_code_to_the_model(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    code = TEMPLATE.replace(
        "result = ...  # computed from text or lines: a str, a number, or a list of lines",
        "result = [line for line in lines if 'ERROR' in line]",
    )
    second = "print('\\n'.join(line for line in INPUT.splitlines() if 'ERROR' in line))"
    script(read_exact(), {"for": SCHEMA_TITLE, "content": reply("write_prose")}, code, second)
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == "09:01 ERROR disk full\n09:04 ERROR disk full\n"
    assert "the model picked" not in result.output
    assert model_calls(ws) == ["code", "second_program"]


def test_a_pick_of_an_operation_on_the_lines_makes_a_task_read_as_prose_exact_work(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model read sorts, reversals and first lines as prose, which a model then wrote from memory."""
    task = "Put the lines of data/log.txt in reverse order into out/errors.txt"
    second = "print('\\n'.join(reversed(INPUT.splitlines())))"
    script(read_exact("prose"), {"for": SCHEMA_TITLE, "content": reply("reverse")}, second)
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8").splitlines() == LOG.splitlines()[::-1]
    assert "(code by omx for the operation 'reverse' the model picked)" in result.output
    assert model_calls(ws) == ["second_program"]  # no llm step wrote it


def test_a_pick_of_a_value_leaves_a_task_read_as_prose_to_a_model(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The same model picked ``sum_numbers`` (now ``add_up_numbers``) for "Summarise ...": a value computed is no
    sign of exact work."""
    task = "Summarise data/log.txt in one line into out/errors.txt"
    script(read_exact("prose"), {"for": SCHEMA_TITLE, "content": reply("add_up_numbers")}, "The disk filled up twice.")
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == "The disk filled up twice.\n"
    assert model_calls(ws) == ["step"]  # the model wrote it, in an llm step


@pytest.mark.parametrize("from_input", [True, False])  # a listing is not made of the input's lines: either way
def test_a_pick_on_a_folder_s_files_plans_code_given_the_folder_the_task_names(
    media: Path, monkeypatch: pytest.MonkeyPatch, script: Callable[..., ScriptedModel], from_input: bool
) -> None:
    """The 0.5B model lists a file of the folder as the input, not the folder: the pick says the work is on a
    folder's files, and the task names one folder that is there."""
    monkeypatch.chdir(media)
    task = "Put the name of the biggest file in media/ into out/big.txt"
    read = {"inputs": ["media/a.png"], "outputs": ["out/big.txt"], "from_input": from_input, "kind": "exact",
            "shape": "one_line", "count": None, "max_words": None}  # fmt: skip
    second = (  # it lists the folder itself
        "import os\nsizes = {n: os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk('media') for n in ns}\n"
        "print(max(sorted(sizes), key=sizes.get))"
    )
    script({"for": READING_SCHEMA_TITLE, "content": json.dumps(read)},
           {"for": SCHEMA_TITLE, "content": reply("largest_files", number=1)}, second)  # fmt: skip
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (media / "out" / "big.txt").read_text(encoding="utf-8") == "z.png\n"
    assert "(code by omx for the operation 'largest_files' the model picked)" in result.output
    assert model_calls(media) == (["second_program"] if from_input else [])  # a value is checked where asked
    assert (run_end(trace_of(only_run(media)))["status"] == "success") is from_input


def test_a_pick_on_a_folder_s_files_is_fitted_to_the_task_s_words(
    media: Path, monkeypatch: pytest.MonkeyPatch, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model picked the newest files with no number for "the most recently changed file": the task's
    words ("file", one) fit it, as they fit an operation on a text."""
    monkeypatch.chdir(media)
    task = "Put the name of the most recently changed file in media/ into out/new.txt"
    read = {"inputs": ["media/"], "outputs": ["out/new.txt"], "from_input": False, "kind": "exact",
            "shape": "one_line", "count": None, "max_words": None}  # fmt: skip
    script({"for": READING_SCHEMA_TITLE, "content": json.dumps(read)},
           {"for": SCHEMA_TITLE, "content": reply("newest_files")})  # fmt: skip
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (media / "out" / "new.txt").read_text(encoding="utf-8") == "c.mp3\n"
    assert "(code by omx for the operation 'newest_files' the model picked)" in result.output


def test_a_pick_of_an_operation_on_a_text_makes_a_task_read_as_files_acted_on_exact_work(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model read "use head to get the first 2 lines" as files acted on, and then copied the file whole."""
    task = "Use head to get the first 2 lines of data/log.txt and write them to out/errors.txt"
    second = "print('\\n'.join(INPUT.splitlines()[:2]))"
    model = script(read_exact("command"), {"for": SCHEMA_TITLE, "content": reply("first", number=2)}, second)
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8").splitlines() == LOG.splitlines()[:2]
    assert "(code by omx for the operation 'first' the model picked)" in result.output
    assert model_calls(ws) == ["second_program"]  # no file operations asked, no plan
    asked = next(r for r in model.requests if r["json_mode"] and r["json_mode"].get("title") == SCHEMA_TITLE)
    offered = set(asked["json_mode"]["properties"]["op"]["enum"])
    assert "first" in offered and not offered & (ON_FOLDER | {"csv_sum", "json_field"})  # what data/log.txt can take


def test_files_of_a_folder_picked_without_a_pattern_are_those_the_task_names_by_extension(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model picked ``join_files`` with no pattern for "the .txt files": the folder's notes were joined in."""
    for name, body in {"b.txt": "two\n", "a.txt": "one\n", "notes.md": "not a part\n"}.items():
        (tmp_path / "parts" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "parts" / name).write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    read = {"inputs": ["parts/a.txt"], "outputs": ["out/all.txt"], "from_input": False, "kind": "exact",
            "shape": "lines", "count": None, "max_words": None}  # fmt: skip
    script(
        {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)},
        {"for": SCHEMA_TITLE, "content": reply("join_files")},
    )
    result = omx("Join the .txt files in parts/ into out/all.txt, in name order", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "all.txt").read_text(encoding="utf-8") == "one\ntwo\n"
    plan = next(e for e in trace_of(only_run(tmp_path)) if e.get("event") == "plan")["data"]["plan"]
    assert "patterns = '*.txt'.split('|')" in plan["steps"][0]["inputs"]["code"]  # in the plan the person confirms


def test_lines_a_filter_keeps_are_counted_where_the_task_asks_how_many(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model picked the filter, not the count, for "count the lines ... that start with 'import'"."""
    task = "Count the lines of data/log.txt that mention ERROR and write just the number to out/errors.txt"
    second = "print(sum('ERROR' in line for line in INPUT.splitlines()))"
    script(read_exact(), {"for": SCHEMA_TITLE, "content": reply("keep_containing", "ERROR")}, second)
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == "2\n"
    assert run(op("keep_starting", "09:0"), LOG) == LOG  # a filter's lines where the task does not count them


@pytest.mark.parametrize("limit", ["in at most 12 words", "in no more than twelve words", "in under 12 words"])
def test_a_task_that_limits_its_words_is_prose_whatever_kind_was_read(
    ws: Path, script: Callable[..., ScriptedModel], limit: str
) -> None:
    """The 0.5B model read "the most important decision ... as one line (at most 20 words)" as exact work, picked a
    value that did not fit, and code copied the input whole: a limit on words is a limit on prose."""
    task = f"Write the main problem in data/log.txt {limit} into out/errors.txt"
    script(read_exact("exact"), {"for": SCHEMA_TITLE, "content": reply("top_words", "problem")}, "The disk is full.")
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == "The disk is full.\n"
    assert model_calls(ws) == ["step"]  # a model wrote it, in an llm step: no code


@pytest.mark.parametrize(
    ("said", "pick", "written"),
    [
        ("Give me the three key points of data/log.txt in out/errors.txt", reply("count_words", "data", number=3),
         "- disk full\n- retry\n- slow\n"),
        ("Write a numbered list of 3 takeaways from data/log.txt to out/errors.txt", reply("number_lines"),
         "1. disk full\n2. retry\n3. slow\n"),
        ("Summarise data/log.txt in three sentences, saved as out/errors.txt", reply("first", number=3),
         "disk full. retry. slow.\n"),
    ],
)  # fmt: skip
def test_a_task_that_asks_for_composed_wording_is_prose_whatever_kind_was_read(
    ws: Path, script: Callable[..., ScriptedModel], said: str, pick: str, written: str
) -> None:
    """The 0.5B model read "the three key points of ..." as exact work and picked a word count (code wrote "0"), and
    "a numbered list of 4 takeaways" as the input's lines numbered: key points, takeaways and a summary are wording
    someone composes, written by a model in an llm step asked for that many items."""
    model = script(
        read_exact("exact", 3),
        {"for": SCHEMA_TITLE, "content": pick},
        '{"items": ["disk full", "retry", '
        '"slow"], "bullets": ["disk full", "retry", "slow"], "sentences": ["disk full", "retry", "slow"]}',
    )
    result = omx(said, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == written
    assert model_calls(ws) == ["step"]  # a model wrote it, in an llm step: no code
    asked = model.requests[-1]["json_mode"]
    assert asked and next(iter(asked["properties"].values()))["minItems"] == 3  # asked for three items
    assert "Result: done, form checked, content not checked" in result.output


def test_a_pick_of_prose_makes_a_task_read_as_files_acted_on_prose(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model read "write a short email ... save it as out/email.txt" as a command, and planned a read of the
    email it was to write."""
    read = {"inputs": [], "outputs": ["out/note.txt"], "from_input": False, "kind": "command", "shape": "free",
            "count": None, "max_words": None}  # fmt: skip
    note = "Kim, the parts arrive Monday."
    pick = {"for": SCHEMA_TITLE, "content": reply("write_prose")}
    script({"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}, pick, note)
    result = omx("Write a short note to Kim saying the parts arrive Monday. Save it as out/note.txt", "--yes")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "note.txt").read_text(encoding="utf-8") == note + "\n"
    assert model_calls(ws) == ["step"]  # omx planned it from the reading: no plan asked, no file operations


def test_a_value_picked_for_a_file_changed_in_place_is_not_written_over_it(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model picked a count for "add the line 'bread' to data/list.txt": omx's code of it would have written
    '0' over the list. An operation that is no edit of the text is not the code of a file changed in place."""
    read = {"inputs": ["data/log.txt"], "outputs": ["data/log.txt"], "kind": "exact", "shape": "lines",
            "count": None, "max_words": None}  # fmt: skip
    code = TEMPLATE.replace(
        "result = ...  # computed from text or lines: a str, a number, or a list of lines", "result = lines + ['done']"
    )
    second = "print(INPUT.rstrip(chr(10)) + chr(10) + 'done')"
    pick = {"for": SCHEMA_TITLE, "content": reply("count_words", "done")}
    script({"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}, pick, code, second)
    result = omx("Append the line 'done' to data/log.txt", "--yes", input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert (ws / "data" / "log.txt").read_text(encoding="utf-8") == LOG + "done\n"
    assert "the model picked" not in result.output and model_calls(ws) == ["code", "second_program"]


def test_a_pick_whose_text_the_task_does_not_say_is_done_never_a_success(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """A second program reads the task as the model does: where the model inferred which lines the task means (a
    word the task never says), two programs agreeing checks the code, not the meaning."""
    task = "Put the lines of data/log.txt that report a problem into out/errors.txt"
    second = "print('\\n'.join(line for line in INPUT.splitlines() if 'ERROR' in line))"
    script(read_exact(), {"for": SCHEMA_TITLE, "content": reply("keep_containing", "ERROR")}, second)
    result = omx(task, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "errors.txt").read_text(encoding="utf-8") == "09:01 ERROR disk full\n09:04 ERROR disk full\n"
    assert "[not checked, omx's reading] the operation picked is the one the task means (from the task) (the model " \
           "picked keep_containing with 'ERROR', which the task does not say" in result.output  # fmt: skip
    assert "Result: success" not in result.output and run_end(trace_of(only_run(ws)))["status"] == "done"


@pytest.mark.parametrize(
    ("task", "answer", "found"),
    [
        ("How old is Ben according to data/p.csv? Just the number in out/b.txt", reply("csv_lookup", "Ben", "Age"),
         op("csv_lookup", "Ben", "age")),  # the header's spelling
        ("How old is Ben according to data/p.csv?", reply("csv_lookup", "", "age"), op("csv_lookup", "Ben", "age")),
        ("What is Ben's city in data/p.csv?", reply("csv_lookup", "Ben", "town"), op("csv_lookup", "Ben", "city")),
        ("What age has Zoe in data/p.csv?", reply("csv_lookup", "Zoe", "age"), op("csv_lookup", "Zoe", "age")),
        ("How old is Ben according to data/p.csv?", reply("csv_lookup", "Ben", "old"), None),  # no column
        ("How old is someone in data/p.csv?", reply("csv_lookup", "", "age"), None),  # no row
        ("Who has the highest age in data/p.csv?", reply("csv_lookup", "data", "p"),
         op("csv_largest", "age", "name")),  # no row named: the row of the largest
        ("Which city has the lowest age in data/p.csv?", reply("csv_lookup", "", "city"),
         op("csv_smallest", "age", "city")),
        ("Who has the highest age in data/p.csv? Write the name in out/top.txt", reply("csv_lookup", "data", "p"),
         op("csv_largest", "age", "name")),  # the column measured is the one after "highest"
        ("Who got the lowest age in data/p.csv? Name only, in out/low.txt", reply("csv_lookup", "data", "p"),
         op("csv_smallest", "age", "name")),  # not the name two words after it
        ("who got the highest age in data/p.csv? just write the name", reply("csv_lookup", "highest", "name"),
         op("csv_largest", "age", "name")),  # the word for the most is no row's value
    ],
)  # fmt: skip
def test_a_lookup_takes_the_row_the_task_names_and_a_column_the_header_has(
    task: str, answer: str, found: TextOperation | None
) -> None:
    """A row below the input's first lines is looked up where the task names its value (Zoe)."""
    assert picked(answer, "name,city,age\nAna,Porto,31\nBen,Lyon,45\n", ["data/p.csv"], task) == found


@pytest.mark.parametrize(
    ("task", "counted"),
    [
        ("How old is Ben according to data/p.txt? Just the number in out/b.txt", False),
        ("What is the top score in data/p.txt?", False),
        ("How many lines does data/p.txt have?", True),
        ("Count the words of data/p.txt", True),
        ("Put the number of lines of data/p.txt in out/n.txt", True),
        ("Word count of data/p.txt, into out/n.txt", True),
    ],
)
def test_a_count_is_taken_only_where_the_task_asks_for_one(task: str, counted: bool) -> None:
    """The 0.5B model picked a count of lines for "How old is Ben according to data/people.csv?"."""
    fit = picked(reply("count_lines"), "a b\nc\n", ["data/p.txt"], task)
    assert (fit == op("count_lines")) is counted


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("chair", op("csv_where", "item", "chair")),  # a value of one column: its rows, under the header
        ("Chair", op("csv_where", "item", "chair")),  # as the table spells it
        ("cha", op("keep_containing", "cha")),  # part of a cell: lines that contain it
        ("4", op("keep_containing", "4")),  # a value of two columns
    ],
)
def test_lines_kept_that_hold_a_value_of_one_column_of_a_table_are_its_rows(text: str, found: TextOperation) -> None:
    """The 0.5B model kept the lines that contain 'chair' for "Keep only the chair orders from shop/orders.csv, with
    the header": the header was lost."""
    table = "id,item,qty\n1,lamp,2\n4,chair,4\n"
    assert picked(reply("keep_containing", text), table, ["shop/orders.csv"], "Keep the chair orders") == found


def test_a_field_of_the_items_of_a_json_list_picked_for_one_object_is_its_key_s_value() -> None:
    """The 0.5B model picked json_field 'port' for "What port does config/dev.json set?"."""
    assert picked(reply("json_field", "port"), '{"debug": true, "port": 8000}\n') == op("json_value", "port")
    assert picked(reply("json_field", "id"), '[{"id": 1}]\n') == op("json_field", "id")


def test_a_pick_on_a_text_takes_the_file_the_task_names_where_the_model_listed_no_input(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """The 0.5B model listed no input for "What port does config/dev.json set? ...", picked the field 'port', and
    its own plan copied the file: an operation on a text is offered only where the task names a file that is
    there, so that file is its input."""
    (ws / "config").mkdir()
    (ws / "config" / "dev.json").write_text('{"debug": true, "port": 8000}\n', encoding="utf-8")
    read = {"inputs": [], "outputs": ["out/port.txt"], "from_input": False, "kind": "exact", "shape": "one_line",
            "count": None, "max_words": None}  # fmt: skip
    script({"for": READING_SCHEMA_TITLE, "content": json.dumps(read)},
           {"for": SCHEMA_TITLE, "content": reply("json_field", "port")})  # fmt: skip
    result = omx("What port does config/dev.json set? Write just the port to out/port.txt", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "port.txt").read_text(encoding="utf-8") == "8000\n"
    assert "(code by omx for the operation 'json_field' the model picked)" in result.output
    assert model_calls(ws) == []  # no plan or code asked of the model (no value asked to be checked: no input read)


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        (reply("csv_sum", "status", "orders"), op("csv_where", "status", "shipped")),  # words added up: no sum
        (reply("csv_average", "status"), op("csv_where", "status", "shipped")),
        (reply("csv_sum", "total"), op("csv_sum", "total")),  # numbers: as picked
    ],
)
def test_a_column_of_words_added_up_where_the_task_names_one_of_them_is_its_rows(
    answer: str, found: TextOperation
) -> None:
    table = "id,status,total\n1,shipped,3.5\n2,open,4\n"
    task = "out/s.csv should hold only the rows of data/o.csv whose status is shipped"
    assert picked(answer, table, ["data/o.csv", "out/s.csv"], task) == found


@pytest.mark.parametrize(
    ("task", "answer", "kept"),
    [
        ("Write the name of every user in data/u.json to out/n.txt", reply("extract_emails", "user.email"), False),
        ("Collect the email addresses in data/u.txt into out/e.txt", reply("extract_emails"), True),
        ("List every link of data/u.txt in out/l.txt", reply("extract_urls"), True),
        ("Pull the numbers out of data/u.txt into out/n.txt", reply("extract_numbers"), True),
        ("Put the words of data/numbers.txt in out/w.txt", reply("extract_numbers"), False),  # a path says it only
    ],
)
def test_things_of_a_kind_are_drawn_out_only_where_the_task_asks_for_that_kind(
    task: str, answer: str, kept: bool
) -> None:
    assert (picked(answer, "ada a@b.io https://x.org 3\n", [], task) is not None) is kept


@pytest.mark.parametrize(
    ("task", "picked_op", "found_as"),
    [
        ("List the files in docs/ that have not been modified for more than a year", "files_changed_after",
         "files_changed_before"),
        ("Which files of docs/ are older than 30 days?", "files_changed_after", "files_changed_before"),
        ("Which files of docs/ changed in the last 7 days?", "files_changed_before", "files_changed_after"),
        ("Which files of docs/ changed since 2026-01-01?", "files_changed_before", "files_changed_after"),
        ("Files of docs/ by 2026-01-01", "files_changed_before", "files_changed_before"),  # no word says: as picked
    ],
)  # fmt: skip
def test_files_changed_before_or_after_a_day_are_those_the_task_s_words_ask_for(
    task: str, picked_op: str, found_as: str
) -> None:
    fit = picked(reply(picked_op, "2026-01-01"), "", ["docs/"], task)
    assert fit is not None and fit.op == found_as


@pytest.mark.parametrize(
    ("task", "answer", "found"),
    [
        ("groceries.txt has repeats. dedupe it, sort it A-Z, and save as out/g.txt", reply("unique"),
         op("sort_unique")),
        ("Sort data/g.txt alphabetically without duplicates into out/g.txt", reply("sort"), op("sort_unique")),
        ("Remove the duplicate lines of data/g.txt and sort them Z to A into out/g.txt", reply("unique"),
         op("sort_desc_unique")),
        ("Remove the duplicate lines of data/g.txt into out/g.txt", reply("unique"), op("unique")),  # no sort asked
        ("Sort data/g.txt into out/g.txt", reply("sort"), op("sort")),  # no dedupe asked
    ],
)  # fmt: skip
def test_a_sort_and_a_dedupe_asked_together_are_one_operation(task: str, answer: str, found: TextOperation) -> None:
    """The 0.5B model picked the dedupe alone for "dedupe it, sort it A-Z": the lines came back unsorted."""
    assert picked(answer, "pear\nApple\npear\n", ["data/g.txt"], task) == found


@pytest.mark.parametrize(
    ("task", "answer", "found"),
    [
        ("Rename the function calc_total to compute_total in src/billing.py", reply("replace", "calc_total",
         "compute_total"), op("replace_names", "calc_total", "compute_total")),
        ("rename the variable n to count and the class Box to Crate in a.py", reply("replace", "n|Box", "count|Crate"),
         op("replace_names", "n|Box", "count|Crate")),
        ("Replace every 'calc_total' with 'compute_total' in a.txt", reply("replace", "calc_total", "compute_total"),
         op("replace", "calc_total", "compute_total")),  # no name in code said: the text wherever it stands
        ("Rename the function in a.py: 'get data' becomes 'fetch'", reply("replace", "get data", "fetch"),
         op("replace", "get data", "fetch")),  # no identifier
    ],
)  # fmt: skip
def test_a_name_renamed_in_code_is_replaced_where_it_stands_whole(task: str, answer: str, found: TextOperation) -> None:
    """Renamed as text, calc_total to compute_total also made calc_total_tax compute_total_tax."""
    assert picked(answer, "def calc_total(items):\n", ["src/billing.py"], task) == found


@pytest.mark.parametrize(
    ("answer", "task", "found"),
    [
        (reply("count_lines", "team", "red"), "How many players of table.csv are in team red?",
         op("csv_count_where", "team", "red")),  # the column, and the value as NEW_TEXT
        (reply("count_lines", "RED"), "how many red players are there in table.csv",
         op("csv_count_where", "team", "red")),
        (reply("count_lines", "e"), "How many lines of table.csv hold an e?",
         op("count_lines", "e")),  # no cell's value
        (reply("count_lines", "team", "red"), "Show the red players of table.csv", None),  # no count asked
    ],
)  # fmt: skip
def test_a_count_of_the_lines_with_a_value_of_one_column_of_a_table_counts_its_rows(
    answer: str, task: str, found: TextOperation | None
) -> None:
    """The 0.5B model counted the lines that hold a column's name, with the value as NEW_TEXT, for a count of the
    rows with that value: the header alone was counted."""
    assert picked(answer, TABLE, ["table.csv"], task) == found


def test_the_rows_with_a_value_counted_where_the_task_asks_how_many_print_how_many() -> None:
    code = "import sys\nINPUT = sys.stdin.read()\n" + operation_code(op("csv_where", "team", "red"), counted=True)
    done = subprocess.run([sys.executable, "-c", code], input=TABLE, capture_output=True, text=True, check=True)
    assert done.stdout == "2\n"


@pytest.mark.parametrize(
    ("answer", "task", "found"),
    [
        (reply("csv_sum", "total"), "which month had the highest total in s.csv? just the month name",
         op("csv_group_largest", "n", "day|month")),
        (reply("other"), "Looking at s.csv, which date had the most sales?", op("csv_group_largest", "n", "day|date")),
        (reply("other"), "Looking at s.csv, which day had the most sales?", op("csv_group_largest", "n", "day")),
        (reply("csv_largest", "n"), "what year had the fewest sales in total? s.csv",
         op("csv_group_smallest", "n", "day|year")),
        (reply("csv_largest", "points"), "Which team scored the most points in t.csv?",
         op("csv_group_largest", "points", "team")),  # a column the word names
        (reply("csv_largest", "points"), "who scored the most points in t.csv?",
         op("csv_group_largest", "points", "name")),
        (reply("csv_largest", "points", "name"), "Who has the highest points in t.csv?",
         op("csv_largest", "points", "name")),  # no total: the one row
        (reply("csv_sum", "points"), "What is the total of the points column of t.csv?", op("csv_sum", "points")),
        (reply("csv_largest", "day", "busiest_day"), "busiest day in s.csv (most appointments booked)? the date",
         op("csv_group_largest", "", "day")),  # how many rows: no column of numbers is said
        (reply("other"), "the quietest team in t.csv?", op("csv_group_smallest", "", "team")),
    ],
)  # fmt: skip
def test_which_group_of_rows_adds_up_to_the_most_or_the_least_is_asked_of_the_table(
    answer: str, task: str, found: TextOperation
) -> None:
    """The 0.5B model summed a column for "which month had the highest total in sales.csv?", and its own code
    took the row with the largest item name."""
    sample = SALES if "s.csv" in task else TABLE
    assert picked(answer, sample, ["s.csv", "t.csv"], task) == found


def test_no_group_of_all_rows_answers_a_question_about_the_rows_with_a_value() -> None:
    """ "Who ordered the most croissants?": the 1.5B model's pick became the customer with the most rows (Ana), not
    the most croissants (Bo)."""
    orders = "customer,item,qty\nAna,bread,2\nBo,croissant,6\nAna,cake,1\n"
    task = "Who ordered the most croissants according to data/orders.csv? Name only, in out/who.txt"
    assert by_group(op("csv_lookup", "croissants", "name"), orders, task) is None
    assert by_group(op("other"), orders, "Who ordered the most in total per data/orders.csv?") == op(
        "csv_group_largest", "qty", "customer"
    )


@pytest.mark.parametrize(
    ("task", "found"),
    [
        ("copy the open items from todo/r.md into out/o.md, keep the lines as they are", "open_items"),
        ("whats not ticked off yet on todo/r.md? -> out/left.txt", "open_items"),
        ("which jobs in todo/r.md are done? list them in out/done.txt", "done_items"),
        ("how many items of todo/r.md are still open? -> out/n.txt", None),  # a count: the pick's, if it fits
    ],
)
def test_the_items_of_a_checklist_left_open_or_ticked_off_are_its_lines_with_that_box(
    task: str, found: str | None
) -> None:
    """The 0.5B model's code kept the checklist's heading alone for "copy the open items from todo/reception.md
    ..., keep the lines as they are", and the whole list for "whats not ticked off yet on todo/stocktake.md?"."""
    sample = "# Reception\n- [x] order cards\n- [ ] chase INV-2044\n"
    fit = picked(reply("keep_containing", "open"), sample, ["todo/r.md"], task)
    assert (fit.op if fit is not None else None) == (found or "keep_containing")
    assert picked(reply("keep_containing", "open"), "open a\nb\n", ["todo/r.md"], task) != op(found or "x")


def test_the_group_with_the_most_of_a_thing_no_column_counts_has_the_most_rows() -> None:
    """The 0.5B model picked the largest date for "busiest day in data/appointments.csv (most appointments
    booked)?"; a table with a column of numbers has it added up instead ("which month had the most sales")."""
    visits = "day,pet,vet\n2024-06-10,rex,Dr Patel\n2024-06-11,bo,Dr Reyes\n2024-06-11,mo,Dr Patel\n"
    task = "which vet has the most appointments in v.csv? -> out/v.txt"
    assert picked(reply("other"), visits, ["v.csv"], task) == op("csv_group_largest", "", "vet")
    assert picked(reply("other"), TABLE, ["t.csv"], "which team has the most members in t.csv?") == op(
        "csv_group_largest", "points", "team"
    )


@pytest.mark.parametrize(
    ("task", "sample", "found"),
    [
        ("find the earliest date in log.txt and write it at out/d.txt", "2024-03-02 on\n2024-02-28 off\n",
         op("earliest_date")),
        ("What is the most recent day in log.txt?", "2024-03-02 on\n", op("latest_date")),
        ("find the earliest date in log.txt", "2 March on\n", op("first", number=1)),  # no date written YYYY-MM-DD
        ("the first 1 lines of log.txt", "2024-03-02 on\n", op("first", number=1)),  # no date asked
    ],
)  # fmt: skip
def test_the_earliest_or_latest_date_asked_of_a_text_is_its_smallest_or_largest_date(
    task: str, sample: str, found: TextOperation
) -> None:
    """For "find the earliest date in oven.log", the 0.5B model picked the first lines, and its code took the line
    with the smallest second word."""
    assert picked(reply("first", number=1), sample, ["log.txt"], task) == found


@pytest.mark.parametrize(
    ("answer", "task", "found"),
    [
        (reply("sort_numeric", "points"), "sort t.csv by points, most points first -> out/t.csv",
         op("csv_sort_desc", "points")),
        (reply("sort"), "Sort t.csv by team into out/t.csv", op("csv_sort", "team")),  # the column the task says
        (reply("sort"), "Sort t.csv into out/t.csv", op("csv_sort", "name")),  # none said: the first
        (reply("sort"), "Sort t.csv by team, then name into out/t.csv", None),  # several: none picked
        (reply("sort"), "Sort names.txt into out/n.txt", op("sort")),  # lines that read as a table, no .csv file
        (reply("sort"), "Sort names.txt A-Z without duplicates into out/n.txt",
         op("sort_unique")),  # and the other fits of a sort still made
    ],
)  # fmt: skip
def test_a_sort_of_the_lines_of_a_table_sorts_its_rows_under_its_header(
    answer: str, task: str, found: TextOperation | None
) -> None:
    """The 0.5B model picked a sort by number, TEXT 'price', for "sort products.csv by price, most expensive
    first", and the header went with the rows."""
    assert picked(answer, TABLE, [path for path in ("t.csv", "names.txt") if path in task], task) == found


@pytest.mark.parametrize(
    ("text", "task", "kept"),
    [
        ("name,city", "convert s.json to a CSV with columns name, city", "name,city"),
        ("name", "convert s.json to a CSV", ""),  # a column the task does not say: every column
    ],
)
def test_the_columns_of_a_json_list_made_csv_are_those_the_task_says(text: str, task: str, kept: str) -> None:
    fit = picked(reply("json_to_csv", text), '[{"name": "a", "city": "b", "x": 1}]\n', ["s.json"], task)
    assert fit == op("json_to_csv", kept)


@pytest.mark.parametrize(
    ("answer", "task", "found"),
    [
        (reply("extract_numbers"), "pull all the phone numbers out of c.txt", op("extract_phones")),
        (reply("extract_numbers"), "pull all the numbers out of c.txt", op("extract_numbers")),
        (reply("count_words"), "count how often each word appears in r.txt, one 'word: count' per line",
         op("word_counts", new_text=": ")),
        (reply("top_words", number=3), "the word frequencies of r.txt, as word - count lines",
         op("word_counts", new_text=" - ")),
        (reply("count_words"), "How many words does r.txt have?", op("count_words")),
        (reply("top_words", number=3), "the 3 most frequent words of r.txt? count every word, one per line",
         op("top_words", number=3)),  # "every word" is what is counted: the top 3 stay
    ],
)  # fmt: skip
def test_phone_numbers_and_the_count_of_each_word_are_what_the_task_asks(
    answer: str, task: str, found: TextOperation
) -> None:
    """The 0.5B model extracted every number for "pull all the phone numbers out of contacts.txt", and counted
    the words for "count how often each word appears in requests.txt, most common first"."""
    assert picked(answer, "a b 01884 555210\n", ["c.txt", "r.txt"], task) == found


@pytest.mark.parametrize(
    ("answer", "task", "found"),
    [
        (reply("count_words", "team"), "How many different teams are in t.csv?", op("csv_count_distinct", "team")),
        (reply("csv_count_rows"), "the number of unique names in t.csv", op("csv_count_distinct", "name")),
        (reply("csv_count_rows"), "How many rows does t.csv have?", op("csv_count_rows")),  # nothing different asked
        (reply("csv_count_rows"), "How many different colours are in t.csv?", op("csv_count_rows")),  # no such column
    ],
)  # fmt: skip
def test_a_count_of_the_different_values_of_a_column_counts_each_value_once(
    answer: str, task: str, found: TextOperation
) -> None:
    """The 0.5B model counted the word 'customer' for "How many different customers are there in
    wholesale_orders.csv?"."""
    assert picked(answer, TABLE, ["t.csv"], task) == found


@pytest.mark.parametrize(
    ("files", "task", "line"),
    [
        (["b/stock.py"], "Add a comment at the very top of b/stock.py that says: Stock helpers", "# Stock helpers"),
        (["web/app.js"], "put a comment 'Stock helpers' at the end of web/app.js", "// Stock helpers"),
        (["a.py"], "Add the comment '# Stock helpers' at the top of a.py", "# Stock helpers"),  # one already
        (["notes.txt"], "Add a comment at the top of notes.txt: Stock helpers", "Stock helpers"),  # no code
        (["a.py", "b.js"], "Add a comment at the top of a.py and b.js: Stock helpers", "Stock helpers"),  # two marks
        (["a.py"], "Add the line 'Stock helpers' at the top of a.py", "Stock helpers"),  # no comment asked
    ],
)  # fmt: skip
def test_a_line_added_as_a_comment_to_code_is_written_as_one(files: list[str], task: str, line: str) -> None:
    """For "Add a comment at the very top of bakery/stock.py that says: Stock helpers for Larkspur Bakery", the
    line as the task says it would have been neither a comment nor Python."""
    said = "# Stock helpers" if "'# " in task else "Stock helpers"
    fit = picked(reply("add_first_line", said), "LOW = 1\n", files, task)
    assert fit == op("add_first_line", line)
