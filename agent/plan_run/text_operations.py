"""Exact work on one file's text done by an operation the model picks by name, in code omx writes.

Asked to write the code of exact work, the 0.5B model often wrote code that ran and printed the wrong thing (every
line where the first three were asked, the JSON file's lines where its names were asked). Asked instead to pick one
of a list of named operations (``first`` with its number, ``json_field`` with its field, ``csv_sum`` with its
column), with a JSON schema and a few worked examples of tasks of their own, the same model picked the right one for
most of the benchmark's tuning tasks of that kind: picking a word the task says is what a small model does well,
and code for the word picked is then exact. The pick is part of the task's reading (``task_reading.read_task``):

- where a python step of exact work gets its code from one file's text (INPUT) and the pick is an operation on the
  text whose arguments fit the file (``fitted``: a number above 0 where it needs one, a CSV column the header
  holds, a date that is one), or from the files of the one folder the task names and the pick is an operation on
  a folder's files (``ON_FOLDER``), the step's code is omx's code of that operation (``operation_code``), shown in
  the plan like any code (``code_steps.with_operation_code``); otherwise the code is asked of the model, as
  without a pick;
- a pick of an operation on the input's own lines (``FROM_LINES``: sort, reverse, the first N, a filter, ...)
  where the reading said prose makes the task exact work: the 0.5B model read sorts, reversals and first lines as
  prose, and a model then wrote them from memory;
- a pick of ``file_operations`` has the task's file operations asked for, as a reading of kind command does (no
  delete is taken on the pick alone).

That the model picked the right operation is its reading, nothing more: the value is checked as any code's (a
second program written apart by the model, ``second_program``), and code that fails when it runs is asked of the
model (``code_fix``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Callable, Collection
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.model.llm import LLMError, Model
from agent.model.schema_request import complete_with_schema

__all__ = ["EXAMPLES", "FROM_LINES", "ON_FOLDER", "ON_TEXT", "OPERATIONS", "SCHEMA_TITLE", "TextOperation"]
__all__ += ["FILTERS", "IN_PLACE", "LOOKUPS", "PATTERNED", "ask_operation", "earlier_day"]
__all__ += [
    "fitted",
    "offered_operations",
    "operation_code",
    "operation_note",
    "operation_request",
    "operation_schema",
    "unsaid_arguments",
]

#: the title of the request's schema, by which a scripted model tells it from the other requests
SCHEMA_TITLE = "TextOperation"

#: each operation, and what it does to the input's text (TEXT, NEW_TEXT, NUMBER: its arguments)
OPERATIONS: dict[str, str] = {
    "keep_containing": "keep the lines that contain TEXT (several: 'A|B' keeps the lines with A or with B)",
    "drop_containing": "remove the lines that contain TEXT (several: 'A|B')",
    "keep_starting": "keep the lines that start with TEXT",
    "sort": "sort the lines alphabetically, ignoring case",
    "sort_numeric": "sort the lines by the first number in each, smallest first",
    "sort_numeric_desc": "sort the lines by the first number in each, largest first",
    "sort_desc": "sort the lines in reverse alphabetical order (Z to A), ignoring case",
    "reverse": "reverse the order of the lines",
    "unique": "remove duplicate lines, keeping the first of each",
    "first": "keep the first NUMBER lines",
    "last": "keep the last NUMBER lines",
    "number_lines": "number the lines '1. ', '2. ', ...",
    "upper": "the text in upper case",
    "lower": "the text in lower case",
    "replace": "replace every TEXT with NEW_TEXT (several: 'a|b' with 'x|y' replaces a with x and b with y)",
    "count_lines": "the number of lines (with TEXT: of the lines that contain TEXT)",
    "count_words": "the number of words (with TEXT: how many times the word TEXT occurs)",
    "add_up_numbers": "the sum of all the numbers in the text",
    "largest_number": "the largest number in the text",
    "smallest_number": "the smallest number in the text",
    "extract_numbers": "each number in the text, one per line, in order",
    "extract_emails": "each email address in the text, one per line, in order",
    "extract_urls": "each URL in the text, one per line, in order",
    "top_words": "the NUMBER most frequent words, ignoring case, as 'word count' lines, most frequent first",
    "json_field": "the value of field TEXT of each item of a JSON list, one per line",
    "csv_column": "the values of the CSV column TEXT, one per line",
    "csv_where": "the CSV rows whose column TEXT is NEW_TEXT, the header row first",
    "csv_sum": "the sum of the CSV column TEXT",
    "csv_average": "the average of the CSV column TEXT",
    "csv_count_rows": "the number of rows of the CSV file, the header row not counted",
    "csv_largest": "the value of the CSV column NEW_TEXT ('': the first column) in the row whose column TEXT is the "
    "largest number",
    "csv_smallest": "the value of the CSV column NEW_TEXT ('': the first column) in the row whose column TEXT is the "
    "smallest number",
    "csv_lookup": "the value of the CSV column NEW_TEXT in the row that holds TEXT (a name, an id)",
    "json_value": "the value of the key TEXT of a JSON or YAML file (a key inside another: 'outer.inner')",
    "csv_to_table": "the CSV file as a markdown table",
    "csv_to_json": "the CSV file as a JSON list of objects",
    "json_to_csv": "a JSON list of objects as CSV",
    "yaml_to_json": "the YAML file as JSON",
    "json_to_yaml": "the JSON file as YAML",
    "add_first_line": "the text with the line TEXT added at the start",
    "add_last_line": "the text with the line TEXT added at the end",
    "list_files": "the names of the files in the folder (TEXT: only those matching a pattern such as '*.py', "
    "several: '*.py|*.md'), one per line, in name order",
    "count_files": "the number of files in the folder (TEXT: only those matching a pattern such as '*.py')",
    "largest_files": "the names of the NUMBER largest files in the folder, largest first, one per line",
    "newest_files": "the names of the NUMBER most recently changed files in the folder, newest first, one per line",
    "oldest_files": "the names of the NUMBER least recently changed files in the folder, oldest first, one per line",
    "files_changed_before": "the names of the files in the folder last changed before the date TEXT (YYYY-MM-DD)",
    "files_changed_after": "the names of the files in the folder last changed after the date TEXT (YYYY-MM-DD)",
    "files_larger_than": "the names of the files in the folder larger than the size TEXT ('1 KB', '2 MB', '500 bytes')",
    "files_smaller_than": "the names of the files in the folder smaller than the size TEXT ('1 KB', '500 bytes')",
    "join_files": "the texts of the files in the folder one after the other, in name order (TEXT: only those "
    "matching a pattern such as '*.txt')",
    "write_prose": "new text someone composes: a summary, an email, a title, a description, an answer in words",
    "file_operations": "files moved, renamed, copied or deleted, or folders made",
    "other": "none of these",
}
#: the picks that are no operation on the text: omx asks the model for code, as without a pick
NOT_TEXT = frozenset({"write_prose", "file_operations", "other"})
#: the operations on a folder's files (``files``: each one's path, name, size and date, given as data)
ON_FOLDER = frozenset({"list_files", "count_files", "largest_files", "files_changed_before", "join_files"})
ON_FOLDER |= {"files_changed_after", "files_larger_than", "files_smaller_than", "newest_files", "oldest_files"}
#: the operations on a folder's files whose TEXT is a date, or a size
DATED = frozenset({"files_changed_before", "files_changed_after"})
SIZED = frozenset({"files_larger_than", "files_smaller_than"})
#: the operations on those of a folder's files whose names match TEXT, a pattern
PATTERNED = frozenset({"list_files", "count_files", "join_files"})
#: the operations that need NUMBER above 0, and those that need TEXT
NEEDS_NUMBER = frozenset({"first", "last", "top_words", "largest_files", "newest_files", "oldest_files"})
NEEDS_TEXT = frozenset({"keep_containing", "drop_containing", "keep_starting", "replace", "json_field", "json_value"})
NEEDS_TEXT |= {"add_first_line", "add_last_line"} | DATED | SIZED
#: the operations whose output is the input's own lines or items, picked, ordered, changed or converted by a rule,
#: not a value computed from them (``VALUES``): a pick of one where the reading said prose is taken as exact work
VALUES = frozenset({"count_lines", "count_words", "add_up_numbers", "top_words", "csv_sum", "csv_average"})
VALUES |= {"largest_number", "smallest_number"}
VALUES |= {"csv_largest", "csv_smallest", "csv_count_rows", "csv_lookup", "json_value"}
#: the sorts that also drop duplicate lines: no pick of the model's, what a sort or a dedupe becomes where the task
#: asks for both ("dedupe it, sort it A-Z"; ``fitted``)
SORTED_UNIQUE = {"sort": "sort_unique", "sort_desc": "sort_desc_unique"}
#: the operations omx fits a pick to and never offers: those sorts, a replacement of names in code, a count of the
#: CSV rows with a value (``fitted``)
FITTED_ONLY = frozenset({*SORTED_UNIQUE.values(), "replace_names", "csv_count_where"})
#: the groups of a CSV table's rows (those with one value of a column, or one day, month or year of a date) whose
#: rows add up to the most or the least (``fitted``: "which month had the highest total")
FITTED_ONLY |= {"csv_group_largest", "csv_group_smallest"}
#: the earliest and the latest date (YYYY-MM-DD) a text holds (``fitted``: "the earliest date in oven.log")
FITTED_ONLY |= {"earliest_date", "latest_date"}
#: a CSV table's rows sorted by a column, its header first (``fitted``: a sort of the lines of a table)
FITTED_ONLY |= {"csv_sort", "csv_sort_desc"}
#: the phone numbers of a text; every word with its count, most frequent first (``fitted``)
FITTED_ONLY |= {"extract_phones", "word_counts"}
#: how many different values a CSV column holds (``fitted``: "How many different customers are there in x.csv?")
FITTED_ONLY |= {"csv_count_distinct"}
VALUES |= {"csv_count_where", "csv_group_largest", "csv_group_smallest", "earliest_date", "latest_date"}
VALUES |= {"word_counts", "csv_count_distinct"}
FROM_LINES = frozenset(OPERATIONS) - NOT_TEXT - ON_FOLDER - VALUES
#: the operations that edit a file's text, its other lines kept as they are or in another order; not those whose
#: result is other text (numbers, emails or a column extracted, a CSV made JSON): run over each file in place, they
#: would leave only that in it, where the person most likely wanted it apart
IN_PLACE = FROM_LINES & frozenset(
    {
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
        "csv_where",
        "add_first_line",
        "add_last_line",
    }
) | (FITTED_ONLY - VALUES)

#: the operations that keep some of the input's lines (what a task counts, where it asks how many)
FILTERS = frozenset({"keep_containing", "drop_containing", "keep_starting"})
#: the operations on a text, whether they pick its lines or compute a value
ON_TEXT = FROM_LINES | VALUES | FITTED_ONLY
#: the operations on a CSV file's column named by TEXT
CSV_COLUMN = frozenset({"csv_column", "csv_where", "csv_sum", "csv_average", "csv_largest", "csv_smallest"})
#: the operations that answer with another column of the row they find (NEW_TEXT: that column)
CSV_ROW = frozenset({"csv_largest", "csv_smallest"})
#: the operations that look one value up in a table or a document: the answer to a question about a file
LOOKUPS = CSV_ROW | {"csv_lookup", "json_value"}


def _system(offered: Collection[str]) -> str:
    """The request's instructions: the operations ``offered``, each with what it does."""
    return (
        "You pick the one operation that does a task given to a file assistant, applied to the text of the task's "
        "input file, or to the files of the folder it names. Operations:\n"
        + "\n".join(f"- {name}: {OPERATIONS[name]}" for name in offered)
        + "\nReply: op, text (TEXT, '' if unused), new_text (NEW_TEXT, '' if unused), number (NUMBER, 0 if unused). "
        "Reply with the JSON object only."
    )


class TextOperation(BaseModel):
    """The operation the model picked, with its arguments."""

    model_config = ConfigDict(extra="ignore")

    op: str
    text: str = ""
    new_text: str = ""
    number: int = 0


#: worked examples of tasks of their own (none shares a file or wording with the benchmark suite), as chat turns
EXAMPLES: list[tuple[str, TextOperation]] = [
    ("Copy into summary_dir/slow_calls.txt every line of logs/api.log that mentions timeout",
     TextOperation(op="keep_containing", text="timeout")),
    ("Describe what inventory/parts.txt is about in two sentences, saved as summary_dir/about_parts.txt",
     TextOperation(op="write_prose")),
    ("How many lines does planning/chores.md have? Save only the count in summary_dir/todo_count.txt",
     TextOperation(op="count_lines")),
    ("Put the last 5 lines of build/out.log in summary_dir/build_tail.txt",
     TextOperation(op="last", number=5)),
    ("Throw away scratch/old_build.tar, it is no longer needed",
     TextOperation(op="file_operations")),
    ("Drop the repeated entries of lists/guests.txt and save the list as summary_dir/guest_list.txt",
     TextOperation(op="unique")),
    ("What is the total of the price column of shop/items.csv? Only the number, in summary_dir/shop_total.txt",
     TextOperation(op="csv_sum", text="price")),
    ("Change every 'grey' into 'gray' in docs/style.txt, saved to summary_dir/style_us.txt",
     TextOperation(op="replace", text="grey", new_text="gray")),
    ("What files are kept in wiki/? Their names only, one a line, in summary_dir/pages.txt",
     TextOperation(op="list_files")),
    ("Write each line of journal/days.txt that has the word rain into summary_dir/rainy.txt",
     TextOperation(op="keep_containing", text="rain")),
    ("With head, show only the opening 3 lines of chores/week.txt in summary_dir/top.txt",
     TextOperation(op="first", number=3)),
    ("How many lines of service/run.log say WARN? Just that count, in summary_dir/warns.txt",
     TextOperation(op="count_lines", text="WARN")),
    ("Lines of firmware/main.c beginning with '#include' go to summary_dir/includes.txt",
     TextOperation(op="keep_starting", text="#include")),
    ("summary_dir/north.csv must have only the leads of crm/leads.csv whose region is north, header included",
     TextOperation(op="csv_where", text="region", new_text="north")),
    ("Put 'Draft' as the first line of every .md file in wiki/",
     TextOperation(op="add_first_line", text="Draft")),
    ("In drafts/, turn 'cancelled' into 'canceled' and 'travelled' into 'traveled'",
     TextOperation(op="replace", text="cancelled|travelled", new_text="canceled|traveled")),
    ("Combine the .log files of nightly/ into summary_dir/all.log, sorted by name",
     TextOperation(op="join_files", text="*.log")),
    ("Which city in weather/temps.csv was warmest (the high column)? Just the city, in summary_dir/warm.txt",
     TextOperation(op="csv_largest", text="high", new_text="city")),
    ("What is Lena's phone number in contacts/book.csv? Only the number, in summary_dir/lena.txt",
     TextOperation(op="csv_lookup", text="Lena", new_text="phone")),
    ("Which timeout does deploy/site.yaml set for the database? Just it, in summary_dir/db_timeout.txt",
     TextOperation(op="json_value", text="database.timeout")),
    ("Turn stock/levels.csv into a markdown table saved as summary_dir/levels.md",
     TextOperation(op="csv_to_table")),
    ("List the id of every entry in feeds/items.json, one per line, in summary_dir/ids.txt",
     TextOperation(op="json_field", text="id")),
    ("Order the lines of stats/visits.txt by their number, biggest first, into summary_dir/busiest.txt",
     TextOperation(op="sort_numeric_desc")),
    ("How many entries, below the header, does crm/leads.csv hold? Only the number, in summary_dir/lead_count.txt",
     TextOperation(op="csv_count_rows")),
    ("Which files in media/ are over 2 MB? Their names, one a line, in summary_dir/heavy.txt",
     TextOperation(op="files_larger_than", text="2 MB")),
    ("Find the lowest reading in sensors/levels.txt and note just it in summary_dir/low.txt",
     TextOperation(op="smallest_number")),
]  # fmt: skip


def offered_operations(workspace: Path, named: Collection[str]) -> list[str]:
    """The operations a task that names the paths ``named`` can be done by in ``workspace``, in ``OPERATIONS``'
    order: those on a text where it names a plain file that is there (those on a CSV file, a JSON list or a YAML
    file only where one is that: its extension, or its first lines read as one), those on a folder's files where it
    names a directory that is there, and always prose, files acted on and other. Asked to pick among every
    operation, the 0.5B model counted "the files" with TODO in a file's lines; the choices of a grammar-constrained
    reply are the ones that can be."""
    root = workspace.resolve()
    there = [root / os.path.normpath(path) for path in named if not os.path.isabs(path)]
    texts = [path for path in there if path.is_file() and not path.is_symlink()]
    has_folder = any(path.is_dir() and not path.is_symlink() for path in there)
    forms = {_form(path) for path in texts}
    return [
        op
        for op in OPERATIONS
        if op in NOT_TEXT
        or (op in ON_FOLDER | IN_PLACE and has_folder)
        or (op not in ON_FOLDER and texts and _FORM_OF.get(op, {"text"}) & (forms | {"text"}))
    ]


#: the operations that need their input in one form (every other one takes any text)
_FORM_OF = {op: {"csv"} for op in CSV_COLUMN | {"csv_to_table", "csv_to_json", "csv_count_rows", "csv_lookup"}}
_FORM_OF |= {"json_field": {"json"}, "json_to_csv": {"json"}, "yaml_to_json": {"yaml"}, "json_to_yaml": {"json"}}
_FORM_OF |= {"json_value": {"json", "yaml"}}


def _form(path: Path) -> str:
    """The form of the file at ``path``: csv, json or yaml by its extension, else by its first lines (a JSON
    document's opening bracket, a header and a row with as many commas), else text."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    try:
        with path.open(encoding="utf-8", errors="replace") as file:
            head = [file.readline() for _ in range(2)]
    except OSError:
        return "text"
    if head[0].lstrip().startswith(("[", "{")):
        return "json"
    return "csv" if head[0].count(",") > 0 and head[0].count(",") == head[1].count(",") else "text"


def operation_schema(offered: Collection[str] = tuple(OPERATIONS)) -> dict[str, Any]:
    """The request's JSON schema: one operation of ``offered`` and its three arguments, in that order."""
    return {
        "title": SCHEMA_TITLE,
        "type": "object",
        "properties": {
            "op": {"enum": list(offered)},
            "text": {"type": "string"},
            "new_text": {"type": "string"},
            "number": {"type": "integer"},
        },
        "required": ["op", "text", "new_text", "number"],
    }


def operation_request(task: str, offered: Collection[str] = tuple(OPERATIONS)) -> list[dict[str, str]]:
    """The messages that ask which operation of ``offered`` does ``task``: the list, the worked examples of those
    operations, the task."""
    messages = [{"role": "system", "content": _system(offered)}]
    for example, answer in EXAMPLES:
        if answer.op in offered:
            messages.append({"role": "user", "content": f"Task: {example}"})
            messages.append({"role": "assistant", "content": json.dumps(answer.model_dump())})
    return [*messages, {"role": "user", "content": f"Task: {task}"}]


def ask_operation(
    model: Model, task: str, offered: Collection[str], *, on_refused: Callable[[str], None] | None = None
) -> TextOperation | None:
    """The operation ``model`` picks for ``task`` among those ``offered`` (``offered_operations``), asked with its
    schema only; None where the server takes no schema, the request failed, or the reply is none of them."""
    try:
        reply = complete_with_schema(
            model, operation_request(task, offered), operation_schema(offered), on_refused=on_refused,
            schema_only=True,
        )  # fmt: skip
        operation = TextOperation.model_validate(json.loads(reply.content or ""))
    except (LLMError, ValueError, ValidationError):
        return None
    return operation if operation.op in offered else None


def fitted(operation: TextOperation, sample: str, files: Collection[str] = (), task: str = "") -> TextOperation | None:
    """``operation`` where it is one on the text and its arguments fit ``sample`` (the input's first lines): None
    for a pick of prose, files or other, a NUMBER or TEXT missing where the operation needs one, a CSV column the
    header lacks (TEXT "column = value" is read as the column and NEW_TEXT where NEW_TEXT is empty). Where ``task``
    converts a file, any pick but prose or files acted on is the conversion from the input's form to the form of the
    output's extension, where there is one (``_converted``). A TEXT that is
    one of ``files`` (the paths the task names), a file's name, or that name without its extension, is a file the
    model copied from the task, not text to look for: no TEXT; a pattern of file names is one of names, its folder
    left out. A CSV column picked whole where ``task`` names one value of that column (its rows in ``sample``) is
    the rows with that value: the 0.5B model picked the column for "the rows whose status is shipped". A sort picked
    where ``task`` asks for the largest first, descending or Z to A is that sort the other way round: the same model
    picked the sort by number, smallest first, for "highest first"; the largest picked where the task asks only for
    the smallest, or the other way round, is the other end (it picked the smallest for "What is the highest number
    in data/temps.txt?"); a sort by number picked for lines that hold no
    number (in ``sample``) is the sort by letters: it picked one for "alphabetically, ignoring case". A replacement
    of one pair the task quotes, where it quotes more, is all of them (``_with_every_pair``). The field of each
    item of a JSON list, picked for a JSON object, is its key's value (``json_value``): "What port does
    config/dev.json set?"."""
    if _CONVERTS.search(task) and operation.op not in {*_CONVERSIONS.values(), "write_prose", "file_operations"}:
        operation = _converted(operation, sample, files)
    if operation.op not in ("write_prose", "file_operations"):  # a question the task asks of the text itself
        asked = _by_group(operation, sample, task) or _date_asked(sample, task) or _distinct_count(sample, task)
        if asked is not None:
            return asked
    if operation.op in NOT_TEXT or operation.op not in OPERATIONS:
        return None
    if operation.op == "json_field" and sample.lstrip().startswith("{") and operation.text:
        operation = operation.model_copy(update={"op": "json_value"})  # a field of one object: its key's value
    if _names_a_file(operation.text, files) and not _looked_for(operation.text, task, sample):
        operation = operation.model_copy(update={"text": ""})
    if operation.op in _IN_A_TABLE and (header := _csv_header(sample)) is not None:
        operation = _in_a_table(operation, header, task, list(csv.reader(io.StringIO(sample)))[1:])
    if operation.op in _FILES_RANKED and operation.number <= 0 and re.search(r"\bfile\b(?!s)", task):
        operation = operation.model_copy(update={"number": 1})  # "the newest file": one
    if operation.op in NEEDS_NUMBER and operation.number <= 0:
        return None
    if operation.op in NEEDS_TEXT - DATED and not operation.text:  # a date may be the task's (``_with_date``)
        return None
    if operation.op in _BY_NUMBER and sample.strip() and not re.search(r"\d", sample):
        operation = operation.model_copy(update={"op": _BY_NUMBER[operation.op]})
    if operation.op in _DESCENDING and _DOWNWARD.search(task):
        operation = operation.model_copy(update={"op": _DESCENDING[operation.op]})
    if (
        operation.op in _OTHER_END
        and _ASKS[_OTHER_END[operation.op]].search(task)
        and not _ASKS[operation.op].search(task)
    ):
        operation = operation.model_copy(update={"op": _OTHER_END[operation.op]})
    if operation.op in _ROW_SORTS and (header := _csv_header(sample)) is not None:
        rows_sorted = _rows_sorted(operation, header, task, files)
        if rows_sorted is None:
            return None
        operation = rows_sorted
    if operation.op == "json_to_csv" and not all(_says(_words(task), key) for key in _keys(operation.text)):
        operation = operation.model_copy(update={"text": ""})  # columns the task does not say: every one
    if operation.op in ("unique", *SORTED_UNIQUE) and _DEDUPED.search(task) and _SORTED.search(task):
        down = operation.op == "sort_desc" or _DOWNWARD.search(task) is not None
        operation = operation.model_copy(update={"op": SORTED_UNIQUE["sort_desc" if down else "sort"]})
    if operation.op in ("add_first_line", "add_last_line"):
        operation = _as_a_comment(operation, files, task)
    if operation.op == "replace":
        operation = _as_names(_as_a_line_added(_with_every_pair(operation, task), sample, task), task)
    if operation.op in _COUNTING and task and not _ASKS_A_COUNT.search(task):
        return None
    if operation.op in {*_EXTRACTED, "other"} and _PHONES.search(_words(task)):
        return TextOperation(op="extract_phones")  # the 0.5B model extracted every number for the phone numbers
    if operation.op in ("count_words", "top_words") and _EACH_WORD.search(task):
        return TextOperation(op="word_counts", new_text=_word_count_form(task))
    if operation.op in _EXTRACTED and task and not _EXTRACTED[operation.op].search(_words(task)):
        return None  # the 0.5B model extracted emails for "Write the name of every user in data/users.json"
    if operation.op in CSV_COLUMN:
        return _with_column(operation, sample, task)
    if operation.op == "csv_lookup":
        return _with_key_and_column(operation, sample, task)
    if operation.op in DATED:
        return _with_date(operation, task)
    if operation.op in SIZED:
        return _with_size(operation)
    if operation.op in PATTERNED:  # a pattern: 'src/*.py' is '*.py' of the folder
        names = (os.path.basename(part.strip().rstrip("/")) for part in operation.text.split("|"))
        return operation.model_copy(update={"text": "|".join(name for name in names if name)})
    return operation


#: the operations that draw things of one kind out of a text, and the words that ask for that kind
_EXTRACTED = {
    "extract_emails": re.compile(r"\be-?mails?\b|\baddress(?:es)?\b", re.IGNORECASE),
    "extract_urls": re.compile(r"\burls?\b|\blinks?\b|\baddress(?:es)?\b|\bweb\s*sites?\b|\bhttps?\b", re.IGNORECASE),
    "extract_numbers": re.compile(r"\bnumbers?\b|\bdigits?\b|\bfigures?\b|\bamounts?\b|\bvalues?\b", re.IGNORECASE),
}
#: the words that ask for phone numbers
_PHONES = re.compile(r"\b(?:phone|telephone|mobile|cell|tel)\s*(?:numbers?|nos?\.?)?\b|\bphones\b", re.IGNORECASE)
#: the words that ask how often each word occurs (the 0.5B model counted the words for "count how often each word
#: appears ..., most common first, one 'word: count' per line")
_EACH_WORD = re.compile(
    r"\b(?:each|every)\s+(?:single\s+|distinct\s+|unique\s+)?word\b|\bword\s+(?:frequenc\w+|counts)\b|"
    r"\bfrequency\s+of\s+(?:each|every|the)\s+words?\b",
    re.IGNORECASE,
)
#: a line's form the task shows: 'word: count', "word - count", word,count
_WORD_COUNT_FORM = re.compile(r"\bword\s*([:=,;|-]|->)\s*count\b", re.IGNORECASE)


def _word_count_form(task: str) -> str:
    """What goes between a word and its count on a line: what the task shows (': ' for 'word: count'), else a
    space."""
    shown = _WORD_COUNT_FORM.search(task)
    if shown is None:
        return " "
    mark = shown.group(1)
    return mark if mark == "," else f"{mark} " if mark in ":;" else f" {mark} "


#: the operations that rank a folder's files and keep the first NUMBER of them
_FILES_RANKED = frozenset({"largest_files", "newest_files", "oldest_files"})
#: the operations that count, and the words that ask for a count: a count picked where none is asked is no pick
#: (the 0.5B model counted lines for "How old is Ben according to data/people.csv?")
_COUNTING = frozenset({"count_lines", "count_words", "count_files", "csv_count_rows", "csv_count_where"})
_ASKS_A_COUNT = re.compile(
    r"\bhow\s+(?:many|often)\b|\bcount|\bnumber\s+of\b|\btally\b|\btotal\s+(?:lines|words|rows|files)\b", re.IGNORECASE
)
#: a sort the task asks the other way round: largest or last first
_DOWNWARD = re.compile(
    r"\b(?:highest|largest|biggest|greatest|most|best|newest|latest|z)[\s-]+(?:[\w-]+\s+)?"
    r"(?:first|to\s+(?:lowest|smallest|least|a))\b|"
    r"\b(?:descending|decreasing|reverse\s+alphabetical)\b",
    re.IGNORECASE,
)
#: the words that ask for the largest of something, and those that ask for the smallest
_MOST = re.compile(r"\b(?:highest|largest|biggest|greatest|maximum|max|most|warmest|hottest|heaviest|longest|"
                   r"tallest|richest)\b", re.IGNORECASE)  # fmt: skip
_LEAST = re.compile(r"\b(?:lowest|smallest|least|minimum|min|fewest|coldest|coolest|lightest|shortest|cheapest)\b",
                    re.IGNORECASE)  # fmt: skip
#: the words that ask for files last changed before a day, and those that ask for files changed since one
_EARLIER = re.compile(
    r"(?:\bnot|n't)\s+(?:been\s+)?(?:modified|changed|touched|updated|edited)\s+(?:for|in|since)\b|"
    r"\b(?:older\s+than|before|(?:more|over)\s+than\s+[\w\s]{1,20}?\s+ago|stale)\b",
    re.IGNORECASE,
)
_LATER = re.compile(
    r"\b(?:newer\s+than|after|since|(?:in|within|during)\s+the\s+(?:last|past)|recently|"
    r"(?:less|fewer)\s+than\s+[\w\s]{1,20}?\s+ago)\b",
    re.IGNORECASE,
)
#: each pick of the largest or the smallest, or of files changed before or after a day, and the other end; which
#: words ask for it (the 0.5B model picked the files changed after a year ago for "List the files in docs/ that
#: have not been modified for more than a year")
_OTHER_END = {"largest_number": "smallest_number", "smallest_number": "largest_number", "csv_largest": "csv_smallest",
              "csv_smallest": "csv_largest", "files_changed_before": "files_changed_after",
              "files_changed_after": "files_changed_before"}  # fmt: skip
_ASKS = {"largest_number": _MOST, "csv_largest": _MOST, "smallest_number": _LEAST, "csv_smallest": _LEAST,
         "files_changed_before": _EARLIER, "files_changed_after": _LATER}  # fmt: skip
#: the words that ask for duplicate lines dropped, and those that ask for the lines sorted by their letters
_DEDUPED = re.compile(r"\bde-?dup\w*|\bduplicat\w*|\brepeat(?:s|ed)\b|\bunique\b|\bdistinct\b", re.IGNORECASE)
_SORTED = re.compile(r"\bsort\w*|\balphabetic\w*|\b[aA]\s*(?:-|to)\s*[zZ]\b|\b[zZ]\s*(?:-|to)\s*[aA]\b", re.IGNORECASE)
#: each sort, and its other way round
_DESCENDING = {"sort_numeric": "sort_numeric_desc", "sort": "sort_desc"}
#: each sort by number, and the sort by letters the same way round
_BY_NUMBER = {"sort_numeric": "sort", "sort_numeric_desc": "sort_desc"}


#: a replacement the task quotes: 'colour' with 'color', "a" to "b", 'x' -> 'y'
_QUOTED_PAIR = re.compile(
    r"""(?P<q>['"])(?P<old>[^'"\n]+)(?P=q)\s+(?:with|to|into|by|for|->|→)\s+(?P<r>['"])(?P<new>[^'"\n]*)(?P=r)"""
)


def _with_every_pair(operation: TextOperation, task: str) -> TextOperation:
    """A replacement picked as one of the pairs ``task`` quotes, where it quotes more: all of them ('a|b' with
    'x|y'). The 0.5B model picked 'colour' with 'color' for "Replace 'colour' with 'color' and 'favourite' with
    'favorite'"."""
    pairs = list(dict.fromkeys((m["old"], m["new"]) for m in _QUOTED_PAIR.finditer(task)))
    picked = list(zip(operation.text.split("|"), operation.new_text.split("|"), strict=False))
    if len(pairs) < 2 or not picked or not set(picked) <= set(pairs) or any("|" in a + b for a, b in pairs):
        return operation
    olds, news = "|".join(a for a, _ in pairs), "|".join(b for _, b in pairs)
    return operation.model_copy(update={"text": olds, "new_text": news})


#: where a task puts a line: at the start of the text, or at its end
_AT_START = re.compile(r"\b(?:prepend|at\s+the\s+(?:top|start|beginning)|(?:as\s+)?(?:the\s+)?first\s+line)\b",
                       re.IGNORECASE)  # fmt: skip
_AT_END = re.compile(r"\b(?:append|at\s+the\s+(?:end|bottom)|(?:as\s+)?(?:the\s+)?last\s+line)\b", re.IGNORECASE)


def _as_a_line_added(operation: TextOperation, sample: str, task: str) -> TextOperation:
    """A replacement that changes nothing (its TEXT is not in the input's first lines, ``sample``, or is its own
    NEW_TEXT) where ``task`` puts a line at the start or the end of the text, and at only one of them: that line
    added there. The 0.5B model picked a replacement of 'MIT licensed.' with itself for "Append the line 'MIT
    licensed.' to README.md", and of a header line with nothing for "Insert '# SPDX...' as the first line of each
    Python file"."""
    line = operation.new_text or operation.text
    if not sample.strip() or (operation.text in sample and operation.text != operation.new_text) or "|" in line:
        return operation
    start, end = _AT_START.search(task), _AT_END.search(task)
    if bool(start) == bool(end) or not _says(task, line.strip()):
        return operation
    return TextOperation(op="add_first_line" if start else "add_last_line", text=line.strip())


#: the mark that starts a comment line in a file of each extension
_COMMENT_MARKS = {ext: "#" for ext in (".py", ".sh", ".bash", ".rb", ".pl", ".r", ".yaml", ".yml", ".toml", ".cfg",
                                       ".conf", ".ini", ".ps1", ".mk")}  # fmt: skip
_COMMENT_MARKS |= {ext: "//" for ext in (".js", ".ts", ".jsx", ".tsx", ".java", ".c", ".h", ".cc", ".cpp", ".hpp",
                                         ".cs", ".go", ".rs", ".swift", ".kt", ".scala", ".php")}  # fmt: skip
_COMMENT_MARKS |= {".sql": "--", ".lua": "--", ".hs": "--"}


def _as_a_comment(operation: TextOperation, files: Collection[str], task: str) -> TextOperation:
    """A line added where ``task`` asks for a comment, in files of code (``files``: the paths it names) that all
    write comments with one mark: that line as a comment ("# Stock helpers ..." in a Python file), unless it is one
    already. The line as the task says it would not have been a comment, nor, in Python, code."""
    marks = {_COMMENT_MARKS.get(ext) for path in files if (ext := os.path.splitext(path)[1].lower())}
    if not re.search(r"\bcomment\b", task, re.IGNORECASE) or len(marks) != 1 or None in marks:
        return operation
    mark = marks.pop()
    assert mark is not None
    line = operation.text.strip()
    return operation if line.startswith(mark) else operation.model_copy(update={"text": f"{mark} {line}"})


#: the words that make a replacement one of names in code: a function, a variable, a class renamed
_NAMES_IN_CODE = re.compile(
    r"\b(?:functions?|methods?|variables?|class(?:es)?|constants?|identifiers?|symbols?)\b", re.IGNORECASE
)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _as_names(operation: TextOperation, task: str) -> TextOperation:
    """A replacement of names (each TEXT an identifier) where ``task`` renames a function, a variable or a class:
    each name replaced where it stands whole (``replace_names``), not inside a longer one. Renamed as text,
    calc_total to compute_total also made calc_total_tax compute_total_tax."""
    if operation.op != "replace" or not _NAMES_IN_CODE.search(task):
        return operation
    if not all(_IDENTIFIER.fullmatch(part) for part in operation.text.split("|")):
        return operation
    return operation.model_copy(update={"op": "replace_names"})


#: the words that ask for the earliest or the latest date a text holds
_EARLIEST = re.compile(r"\b(?:earliest|oldest|first)\s+(?:date|day)\b", re.IGNORECASE)
_LATEST = re.compile(r"\b(?:latest|newest|most\s+recent|last)\s+(?:date|day)\b", re.IGNORECASE)


def _date_asked(sample: str, task: str) -> TextOperation | None:
    """The earliest or the latest date of the text (``earliest_date``, ``latest_date``) where ``task`` asks for one
    of them and not the other (``_EARLIEST``, ``_LATEST``), and ``sample``, the input's first lines, holds dates
    written YYYY-MM-DD; else None. For "find the earliest date in oven.log", the 0.5B model picked the first lines,
    and its code took the line with the smallest second word."""
    earliest, latest = _EARLIEST.search(task), _LATEST.search(task)
    if bool(earliest) == bool(latest) or not _ISO_DAY.search(sample):
        return None
    return TextOperation(op="earliest_date" if earliest else "latest_date")


def _with_date(operation: TextOperation, task: str = "") -> TextOperation | None:
    """``operation`` with TEXT the date it names as YYYY-MM-DD (``2026-01-01``, ``1 January 2026``, ``January 1,
    2026``), or the day a span before today names (``30 days``, ``a year ago``, ``last week``: today less 30, 365
    or 7 days); where TEXT is none of those, the one such span ``task`` says ("not modified for more than a year");
    None where there is no date."""
    day = _date(operation.text) or _day_said(task)
    return None if day is None else operation.model_copy(update={"text": day.isoformat()})


def _day_said(task: str) -> date | None:
    """The one day ``task`` names, as a date (``_DAY``: "1 Jan 2023", "2023-01-01") or a span before today
    (``_SPAN``); None where it names none or several."""
    said = [match.group(0) for pattern in (_SPAN, _DAY) for match in pattern.finditer(task)]
    days = {found for text in said if (found := _date(text)) is not None}
    return days.pop() if len(days) == 1 else None


def earlier_day(task: str) -> date | None:
    """The day before which ``task`` asks for files last changed ("older than 30 days", "not modified for more than
    a year", "hasn't been modified in the last 60 days": today less the span; "last modified before 1 Jan 2023"),
    where it says one such day; else None."""
    return _day_said(task) if _EARLIER.search(task) else None


#: a day written as a date: 2023-01-01, 2023/01/01, 1 Jan 2023, 1 January 2023, January 1, 2023
_DAY = re.compile(
    r"\b\d{4}[-/]\d{2}[-/]\d{2}\b|\b\d{1,2}\s+[A-Za-z]{3,9}\s+\d{4}\b|\b[A-Za-z]{3,9}\s+\d{1,2},?\s+\d{4}\b"
)


#: a span of time before today, as people write it: "30 days", "a year ago", "two weeks", "last month"
_SPAN = re.compile(
    r"\b(?:(?P<n>\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve)\s+|(?P<last>last|past)\s+)"
    r"(?P<unit>day|week|month|year)s?\b(?:\s+ago)?|\byesterday\b",
    re.IGNORECASE,
)
_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
_COUNTS |= {"nine": 9, "ten": 10, "twelve": 12}


def _date(text: str) -> date | None:
    """The day ``text`` names (see ``_with_date``), or None."""
    text = " ".join(text.replace(",", " ").split())
    for form in ("%Y-%m-%d", "%d %B %Y", "%B %d %Y", "%d %b %Y", "%b %d %Y", "%Y/%m/%d"):
        try:
            return datetime.strptime(text, form).date()
        except ValueError:
            continue
    span = _SPAN.fullmatch(text)
    if span is None:
        return None
    if span.group("unit") is None:  # yesterday
        return date.today() - timedelta(days=1)
    count = 1 if span.group("last") else int(n) if (n := span.group("n").lower()).isdigit() else _COUNTS[n]
    return date.today() - timedelta(days=count * _DAYS[span.group("unit").lower()])


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(bytes?|b|kb|kib|k|mb|mib|m|gb|gib|g)?", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2}
_UNITS |= {"mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3}


def _with_size(operation: TextOperation) -> TextOperation | None:
    """``operation`` with TEXT the size it names in bytes (``1 KB``: 1024, ``2MB``, ``500 bytes``); None where TEXT
    is no size."""
    size = _bytes(operation.text)
    return None if size is None else operation.model_copy(update={"text": str(size)})


def _bytes(text: str) -> int | None:
    """The size ``text`` names in bytes, or None."""
    size = _SIZE.fullmatch(text.strip())
    return None if size is None else int(float(size[1]) * _UNITS[(size[2] or "").lower()])


#: a task that converts a file into another form
_CONVERTS = re.compile(r"\b(?:convert|turn|transform|export|rewrite|reformat)\w*\b", re.IGNORECASE)
#: each conversion, by the input's form and the output's extension
_CONVERSIONS = {("csv", ".json"): "csv_to_json", ("csv", ".md"): "csv_to_table", ("json", ".csv"): "json_to_csv",
                ("yaml", ".json"): "yaml_to_json", ("json", ".yaml"): "json_to_yaml",
                ("json", ".yml"): "json_to_yaml"}  # fmt: skip


def _converted(operation: TextOperation, sample: str, files: Collection[str]) -> TextOperation:
    """The conversion from the input's form (``sample``: its first lines, read as CSV, JSON or YAML) to the form of
    the last path the task names with another extension, where there is one; else ``operation``. The 0.5B model
    picked a CSV column that is not there for "Convert data/pets.csv to JSON in out/pets.json", and a JSON field for
    "Turn config/app.json into YAML at out/app.yaml"."""
    form = _text_form(sample)
    for path in reversed(list(files)):
        op = _CONVERSIONS.get((form, os.path.splitext(path)[1].lower()))
        if op is not None:
            return TextOperation(op=op)
    return operation


def _text_form(sample: str) -> str:
    """csv, json or yaml as ``sample`` reads (a table, an opening bracket, "key: value" or "- item" lines), else
    text."""
    head = sample.lstrip()
    if head.startswith(("[", "{")):
        return "json"
    if _csv_header(sample) is not None:
        return "csv"
    return "yaml" if re.match(r"(?:-\s+)?[\w-]+:(?:\s|$)", head) else "text"


#: the operations on any text that a CSV file's own asks for where the input is one: the numbers of a column the
#: task names added up are that column's sum; its lines counted, where the task does not say lines, its rows
_IN_A_TABLE = frozenset({"add_up_numbers", "count_lines", "keep_containing"})


def _in_a_table(operation: TextOperation, header: list[str], task: str, rows: list[list[str]]) -> TextOperation:
    """``operation`` (one of ``_IN_A_TABLE``) as the CSV operation it means on a table whose first row is
    ``header`` (``rows``: the rows after it in the input's first lines): the 0.5B model picked the sum of
    every number in the text, TEXT 'qty', for "Add up the qty column of shop/orders.csv" (the ids and prices summed
    too), the count of lines for "Count the orders in shop/orders.csv (one per row after the header)" (the header
    counted too), and the lines that contain 'chair' for "Keep only the chair orders from shop/orders.csv, with the
    header" (a value of one column: the rows with it, the header first). A count of the lines that hold a column's
    name, with a value as NEW_TEXT, or that hold one column's value, is the count of the rows with that value
    (``csv_count_where``: the lines with the name counted the header alone)."""
    column = _column_named(header, operation.text)
    if operation.op == "add_up_numbers" and column is not None:
        return operation.model_copy(update={"op": "csv_sum", "text": column})
    if operation.op == "count_lines" and not operation.text and not re.search(r"\blines?\b", task, re.IGNORECASE):
        return operation.model_copy(update={"op": "csv_count_rows"})
    if operation.op == "count_lines" and column is not None and operation.new_text.strip():
        return TextOperation(op="csv_count_where", text=column, new_text=operation.new_text.strip())
    if operation.op == "count_lines" and "|" not in operation.text and (held := _held(operation.text, header, rows)):
        return TextOperation(op="csv_count_where", text=held[0], new_text=held[1])
    if (
        operation.op == "keep_containing"
        and "|" not in operation.text
        and (held := _held(operation.text, header, rows))
    ):
        return TextOperation(op="csv_where", text=held[0], new_text=held[1])  # "Keep only the chair orders"
    return operation


#: the sorts of lines that are a sort of a CSV table's rows by a column, and which way each goes
_ROW_SORTS = {"sort": "csv_sort", "sort_numeric": "csv_sort", "sort_desc": "csv_sort_desc",
              "sort_numeric_desc": "csv_sort_desc"}  # fmt: skip


def _rows_sorted(
    operation: TextOperation, header: list[str], task: str, files: Collection[str]
) -> TextOperation | None:
    """A sort of the lines of a CSV table (``header``: its first row) as a sort of its rows, under the header, by
    the column TEXT names, else the one ``task`` says, else, where a file the task names is a .csv one, the first
    (``csv_sort``, ``csv_sort_desc``); None where the task says several and TEXT none of them; the sort of lines as
    picked where no column is named and no file is a .csv one (lines such as "Doe, Jane" read as a table too). The
    0.5B model picked a sort by number, TEXT 'price', for "sort products.csv by price, most expensive first", and the
    header went with the rows."""
    said = _columns_said(header, _words(task))
    column = _column_named(header, operation.text) or (said[0] if len(said) == 1 else None)
    if column is None and not said and any(path.lower().endswith((".csv", ".tsv")) for path in files):
        column = header[0]
    if column is None:
        return None if said else operation
    return TextOperation(op=_ROW_SORTS[operation.op], text=column)


def _keys(text: str) -> list[str]:
    """The keys or columns ``text`` lists, split at commas or '|'."""
    return [key.strip() for key in re.split(r"[,|]", text) if key.strip()]


def _held(value: str, header: list[str], rows: list[list[str]]) -> tuple[str, str] | None:
    """The column of ``header`` whose cells in ``rows`` are ``value`` (case aside), and the value as the first of
    them writes it, where that is one column; else None."""
    cells = {header[i]: cell.strip() for row in reversed(rows) for i, cell in enumerate(row[: len(header)])
             if value.strip() and cell.strip().lower() == value.strip().lower()}  # fmt: skip
    return next(iter(cells.items())) if len(cells) == 1 else None


def _csv_header(sample: str) -> list[str] | None:
    """The header of ``sample`` where it reads as a CSV table (a first row of two or more names, and a second row
    of as many cells), else None."""
    rows = [row for row in csv.reader(io.StringIO(sample)) if row][:2]
    if len(rows) < 2 or len(rows[0]) < 2 or len(rows[0]) != len(rows[1]):
        return None
    return rows[0]


def _looked_for(text: str, task: str, sample: str) -> bool:
    """Whether ``text``, which names a file, is also a text the task looks for: the task says it outside its paths
    and the input's first lines (``sample``) hold it ("How many times does 'sea' appear in essay/draft.txt? Save
    the count to out/sea.txt")."""
    words = _words(task)
    return _says(words, text.strip()) and text.strip().lower() in sample.lower()


def _names_a_file(text: str, files: Collection[str]) -> bool:
    """Whether ``text`` is one of ``files``, its name, or its name without the extension."""
    names = {os.path.normpath(path) for path in files}
    base = {os.path.basename(name) for name in names}
    names |= base | {os.path.splitext(name)[0] for name in base}
    return bool(text.strip()) and os.path.normpath(text.strip()) in names


def _with_column(operation: TextOperation, sample: str, task: str) -> TextOperation | None:
    """``operation`` with TEXT the CSV header's own spelling of its column (a whole column is the rows where it
    holds the one value of it that ``task`` names, see ``fitted``), or, where the header has no such column, the one
    column of it the task says (the 0.5B model gave no column for "Compute the average age in data/people.csv");
    None where there is none. A column of no numbers added up or averaged, where the task names one of its
    values, is the rows with that value: the model picked the sum of the status column for "... only the rows of
    data/orders.csv whose status is shipped"."""
    text, new_text, op = operation.text, operation.new_text, operation.op
    if "=" in text and not new_text:
        text, new_text = (part.strip() for part in text.split("=", 1))
    rows = list(csv.reader(io.StringIO(sample)))
    header = rows[0] if rows else []
    column, said = _column_named(header, text), _columns_said(header, _words(task))
    if column is None and len(said) == 1 and op not in CSV_ROW:  # the one column the task says: "the average age"
        column = said[0]
    if column is None:
        return None
    values = _values(rows, header.index(column))
    no_numbers = op in ("csv_sum", "csv_average") and values and not any(_is_number(value) for value in values)
    if op == "csv_column" or no_numbers or (op == "csv_where" and new_text not in values):
        named = [value for value in values if _says(task, value)]
        if len(named) == 1:
            op, new_text = "csv_where", named[0]
    if op == "csv_where" and not new_text:
        return None
    if op in CSV_ROW:  # the answer's column as the header spells it, the first where none is named
        new_text = spelled if (spelled := _column_named(header, new_text)) is not None else header[0]
    return operation.model_copy(update={"op": op, "text": column, "new_text": new_text})


def _with_key_and_column(operation: TextOperation, sample: str, task: str) -> TextOperation | None:
    """A lookup (``csv_lookup``) with NEW_TEXT the header's own spelling of the column it answers with (where the
    header has no such column, the one column ``task`` says) and TEXT the value its row holds: one the task says
    (the row may lie below ``sample``, the input's first lines), else the one cell of ``sample`` the task says.
    With no row named (a word for the most or the least, "highest", names none), where the task asks for the
    largest or the smallest of something, the row that holds it (``csv_largest``, ``csv_smallest``): the 0.5B model
    picked a lookup for "Who has the highest score in data/scores.csv?". None where the column or the row is
    missing."""
    rows = list(csv.reader(io.StringIO(sample)))
    header = rows[0] if rows else []
    words = _words(task)
    answer, said = _column_named(header, operation.new_text), _columns_said(header, words)
    key = operation.text.strip()
    most, least = _MOST.search(words), _LEAST.search(words)
    if not key or not _says(words, key) or _MOST.fullmatch(key) or _LEAST.fullmatch(key):  # "highest" is no row
        cells = {cell.strip() for row in rows[1:] for cell in row if cell.strip() and _says(words, cell.strip())}
        key = cells.pop() if len(cells) == 1 else ""
    if not key and bool(most) != bool(least):  # "Who has the highest score?": the row of the largest score
        measured = [name for name in said if name != answer and _measured(words, name.strip(), most or least)]
        others = [name for name in said if name not in measured]
        if len(measured) == 1:
            answer = answer or (others[0] if len(others) == 1 else "")
            end = "csv_largest" if most else "csv_smallest"
            return _with_column(TextOperation(op=end, text=measured[0], new_text=answer), sample, task)
    column = answer if answer is not None or len(said) != 1 else said[0]
    if column is None or not key:
        return None
    return operation.model_copy(update={"text": key, "new_text": column})


#: a question of which group of a table's rows adds up to the most or the least: "which month had the highest
#: total", "which day had the most sales", "who worked the most hours"
_WHICH = re.compile(r"\b(?:which|what)\s+([a-z]+)\b|\b(who)\b", re.IGNORECASE)
_IN_TOTAL = re.compile(
    r"\b(?:total|in\s+all|altogether|combined|overall|sum|most\s+(?!expensive|recent|common|frequent|popular|in\b|of\b|on\b|at\b|for\b|to\b|by\b)[a-z]+)\b",
    re.IGNORECASE,
)
#: the part of a date (YYYY-MM-DD) a group is: its first 10, 7 or 4 characters
_DATE_PARTS = {"day": 10, "date": 10, "month": 7, "year": 4}
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _by_group(operation: TextOperation, sample: str, task: str) -> TextOperation | None:
    """Where ``task`` asks which group of a CSV table's rows (``sample``: its first lines) adds up to the most or
    the least (``_WHICH``, a word for the most or the least, and one for a total, ``_IN_TOTAL``), that group
    (``csv_group_largest``, ``csv_group_smallest``): TEXT the column added up (the one the pick or the task names
    among the columns of numbers, else the only one), NEW_TEXT the column the group is (the one the question's word
    names; for a day, a month or a year, the one column of dates, with the part after a '|'; for "who", the first
    column of words). The 0.5B model summed a column for "which month had the highest total in sales.csv?", and its
    own code took the row with the largest item name. None where anything is missing."""
    header, words = _csv_header(sample), _words(task)
    which = _WHICH.search(words)
    most, least = _MOST.search(words), _LEAST.search(words)
    if header is None or which is None or bool(most) == bool(least) or not _IN_TOTAL.search(words):
        return None
    rows = list(csv.reader(io.StringIO(sample)))[1:]
    cells = [[row[i].strip() for row in rows if len(row) > i and row[i].strip()] for i in range(len(header))]
    numbers = [name for name, column in zip(header, cells, strict=True) if column and all(map(_is_number, column))]
    dates = [name for name, column in zip(header, cells, strict=True) if column and all(map(_ISO_DAY.match, column))]
    word = (which.group(1) or which.group(2)).lower()
    group = next((name for name in header if name.strip().lower() in {word, f"{word}s", word.rstrip("s")}), None)
    if group is None and word in _DATE_PARTS and len(dates) == 1:
        group = f"{dates[0]}|{word}"
    if group is None and word == "who":
        group = next((name for name in header if name not in numbers and name not in dates), None)
    added = [name for name in numbers if name != group.split("|")[0]] if group else []
    said = [name for name in added if _says(words, name.strip())]
    named = _column_named(added, operation.text)
    value = named or (said[0] if len(said) == 1 else added[0] if len(added) == 1 else None)
    if group is None or value is None:
        return None
    return TextOperation(op="csv_group_largest" if most else "csv_group_smallest", text=value, new_text=group)


#: a count of different values: "how many different customers", "the number of unique cities"
_DIFFERENT = re.compile(r"\b(?:different|distinct|unique|separate)\s+([a-z]+)", re.IGNORECASE)


def _distinct_count(sample: str, task: str) -> TextOperation | None:
    """How many different values the column of a CSV table (``sample``: its first lines) that ``task`` asks about
    holds (``csv_count_distinct``), where it asks how many different, distinct or unique things there are and names
    one column by that word (singular or plural) or says only one; else None. The 0.5B model counted the word
    'customer' for "How many different customers are there in wholesale_orders.csv?"."""
    header, words = _csv_header(sample), _words(task)
    different = _DIFFERENT.search(words)
    if header is None or different is None or not _ASKS_A_COUNT.search(words):
        return None
    word = different.group(1).lower()
    named = [name for name in header if name.strip().lower() in {word, word.rstrip("s"), word.removesuffix("es")}]
    said = _columns_said(header, words)
    column = named[0] if len(named) == 1 else said[0] if len(said) == 1 else None
    return None if column is None else TextOperation(op="csv_count_distinct", text=column)


def _group_code(value: str, group: str, pick: str) -> str:
    """Code that prints the group ``pick`` (max, min) finds of the totals of ``value`` (see ``_by_group``); a month
    by its name, with its year where the table spans several."""
    column, _, part = group.partition("|")
    key = f"row[group].strip()[:{_DATE_PARTS[part]}]" if part else "row[group].strip()"
    code = [
        f"import csv, io\n{_ROWS}",
        f"value, group = header.index({value!r}), header.index({column!r})",
        "totals = {}",
        "for row in body:",
        "    try:",
        "        amount = float(row[value])",
        "    except (ValueError, IndexError):",
        "        continue",
        f"    totals[{key}] = totals.get({key}, 0.0) + amount",
        f"best = {pick}(totals, key=lambda name: totals[name])",
    ]
    if part != "month":
        return "\n".join([*code, "print(best)"])
    named = "print(datetime.strptime(best, '%Y-%m').strftime('%B' if len({k[:4] for k in totals}) == 1 else '%B %Y'))"
    return "\n".join(["from datetime import datetime", *code, named])


def _column_named(header: list[str], text: str) -> str | None:
    """The column of ``header`` that ``text`` names, as the header spells it (case and outer spaces aside)."""
    return next((name for name in header if name.strip().lower() == text.strip().lower()), None)


def _columns_said(header: list[str], words: str) -> list[str]:
    """The columns of ``header`` that ``words`` (a task's, without its paths) say, in the header's order."""
    return [name for name in header if name.strip() and _says(words, name.strip())]


def _measured(words: str, column: str, superlative: re.Match[str] | None) -> bool:
    """Whether ``words`` measure by ``column``: it follows their word for the most or the least ("the highest
    score", "the largest total amount") or they say it is the column ("the minutes column", "by age")."""
    after = words[superlative.end() :] if superlative is not None else ""
    name = re.escape(column)
    return bool(
        re.match(rf"\s+(?:[\w-]+\s+)?{name}\b", after, re.IGNORECASE)
        or re.search(rf"\bthe\s+{name}\s+column\b|\bby\s+{name}\b", words, re.IGNORECASE)
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _values(rows: list[list[str]], column: int) -> list[str]:
    """The distinct values of ``column`` in the rows after the header, as written (stripped)."""
    return list(dict.fromkeys(row[column].strip() for row in rows[1:] if len(row) > column and row[column].strip()))


def _says(task: str, value: str) -> bool:
    """Whether ``task`` says ``value`` as a whole word or words (case aside)."""
    return bool(re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", task, re.IGNORECASE))


#: a path or file name in a task's words (``out/errors.txt``, ``notes.md``)
_PATH_LIKE = re.compile(r"\S*/\S*|\S+\.\w{1,8}\b")


def _words(task: str) -> str:
    """``task``'s words without its paths and file names, spaced once: what it says, not where things are."""
    return " ".join(_PATH_LIKE.sub(" ", task).split())


#: the operations whose NEW_TEXT is an argument (elsewhere the model fills it with anything)
_USES_NEW_TEXT = frozenset(
    {"replace", "replace_names", "csv_where", "csv_count_where", "csv_largest", "csv_smallest", "csv_lookup"}
)


def unsaid_arguments(operation: TextOperation, task: str) -> list[str]:
    """The texts the model gave ``operation`` (a word to look for, a replacement, a CSV column or value) that
    ``task`` does not say (case and spacing aside), each part of a '|'-separated one apart: what the model inferred
    the task means, which no second program can check (it reads the task the same way). None for an operation
    that is no operation on a text."""
    if operation.op not in ON_TEXT:
        return []
    words = _words(task)  # out/errors.txt does not say "error"
    texts = [operation.text, operation.new_text if operation.op in _USES_NEW_TEXT else ""]
    parts = [part for text in texts for part in text.split("|") if part.strip()]
    return [part for part in parts if not _says(words, " ".join(part.split()))]


def operation_note(operation: TextOperation) -> str:
    """What a step whose code is omx's code of ``operation`` says of it, for the person who confirms the plan."""
    return f"(code by omx for the operation {operation.op!r} the model picked)"


def operation_code(operation: TextOperation, *, counted: bool = False) -> str:
    """The Python code of ``operation``: it reads the input's text from INPUT (an operation ``ON_FOLDER``: the
    folder's files from ``files``, which the code is given before it) and prints the result; ``counted`` (where the
    task asks how many): a filter of lines (``FILTERS``) prints how many lines it keeps, not the lines, and the
    CSV rows with a value how many rows there are."""
    if counted and operation.op == "csv_where":
        operation = operation.model_copy(update={"op": "csv_count_where"})
    code = _CODE[operation.op](operation.text, operation.new_text, operation.number)
    if counted and operation.op in FILTERS:
        return code.replace(_PRINT_LINES, "print(len(lines))")
    return code


_PRINT_LINES = "print('\\n'.join(lines))"


def _lines(*body: str) -> str:
    """Code that works on ``lines`` (INPUT's lines) and prints them, one per line."""
    return "\n".join(["lines = INPUT.splitlines()", *body, _PRINT_LINES])


def _value(*body: str) -> str:
    """Code that computes ``value`` and prints it (a whole number without its '.0')."""
    return "\n".join([*body, "print(int(value) if isinstance(value, float) and value.is_integer() else value)"])


def _any_of(text: str) -> str:
    """A condition on ``line``: it holds one of the '|'-separated parts of ``text``."""
    parts = [part for part in text.split("|") if part] or [text]
    return " or ".join(f"{part!r} in line" for part in parts)


def _pairs(text: str, new_text: str) -> list[tuple[str, str]]:
    """What ``replace`` replaces: each '|'-separated part of ``text`` with the part of ``new_text`` in its place,
    where both have as many parts; else ``text`` whole with ``new_text`` whole."""
    old, new = text.split("|"), new_text.split("|")
    return list(zip(old, new, strict=True)) if len(old) == len(new) > 1 and all(old) else [(text, new_text)]


def _whole(name: str) -> str:
    """The pattern of ``name`` standing whole: no letter, digit or underscore just before or after it."""
    return rf"(?<!\w){re.escape(name)}(?!\w)"


#: code that keeps ``chosen``, the folder's files whose name matches a '|'-separated pattern ({} : every file)
_CHOSEN = (
    "from fnmatch import fnmatch\npatterns = {0!r}.split('|') if {0!r} else ['*']\n"
    "chosen = [f for f in files if any(fnmatch(f['name'], pattern) for pattern in patterns)]"
)


def _sorted_rows(column: str, *, reverse: bool) -> str:
    """Code that prints the CSV table with its rows sorted by ``column`` (numbers by value before words, words
    case aside), under its header."""
    return (
        f"import csv, io\n{_ROWS}\ncolumn = header.index({column!r})\n"
        "def key(row):\n    cell = row[column].strip() if len(row) > column else ''\n    try:\n"
        "        return (0, float(cell), '')\n    except ValueError:\n        return (1, 0.0, cell.lower())\n"
        f"body.sort(key=key, reverse={reverse})\n"
        "text = io.StringIO()\nout = csv.writer(text, lineterminator='\\n')\nout.writerow(header)\n"
        "out.writerows(body)\nprint(text.getvalue(), end='')"
    )


def _row_value(column: str, answer: str, pick: str) -> str:
    """Code that prints ``answer``'s value in the row whose ``column`` holds the number ``pick`` (max, min) finds."""
    return (
        f"import csv, io\n{_ROWS}\ncolumn, answer = header.index({column!r}), header.index({answer!r})\n"
        "numbers = []\nfor row in body:\n    try:\n        numbers.append((float(row[column]), row))\n"
        "    except (ValueError, IndexError):\n        pass\n"
        f"print({pick}(numbers, key=lambda pair: pair[0])[1][answer])"
    )


#: code that prints the value of the key KEY of a JSON or YAML document ('a.b': b inside a; a key not found on
#: that path is the one key of its last name at any depth, else the one key that name is a word of: 'radius' is
#: radius_km), a mapping, list or truth value as JSON
_KEY_VALUE = """import json, re, yaml
data, wanted = yaml.safe_load(INPUT), KEY
def found(node, same):
    if isinstance(node, dict):
        for key, value in node.items():
            if same(str(key)):
                yield value
            yield from found(value, same)
    elif isinstance(node, list):
        for value in node:
            yield from found(value, same)
def words(key):
    return re.sub(r'([a-z])([A-Z])', r'\\1 \\2', key).lower().replace('_', ' ').replace('-', ' ').split()
try:
    value = data
    for key in wanted.split('.'):
        value = value[int(key)] if isinstance(value, list) else value[key]
except (KeyError, IndexError, TypeError, ValueError):
    name = wanted.split('.')[-1].lower()
    values = list(found(data, lambda key: key.lower() == name))
    if not values:
        values = list(found(data, lambda key: name in words(key)))
    if len(values) != 1:
        raise SystemExit(f'{len(values)} keys named {wanted!r}')
    value = values[0]
print(json.dumps(value) if value is None or isinstance(value, (dict, list, bool)) else value)"""
_ROWS = "rows = list(csv.reader(io.StringIO(INPUT)))\nheader, body = rows[0], [row for row in rows[1:] if row]"
_NUMBER = r"r'\d+(?:\.\d+)?'"
#: a date written YYYY-MM-DD, not inside a longer number
_DAYS_WRITTEN = r"r'(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)'"
#: a number with its sign, where the largest or smallest is asked (-3 is smaller than 2)
_SIGNED = r"r'(?:(?<![\w.])-)?\d+(?:\.\d+)?'"

_CODE: dict[str, Callable[[str, str, int], str]] = {
    "keep_containing": lambda t, n, k: _lines(f"lines = [line for line in lines if {_any_of(t)}]"),
    "drop_containing": lambda t, n, k: _lines(f"lines = [line for line in lines if not ({_any_of(t)})]"),
    "keep_starting": lambda t, n, k: _lines(f"lines = [line for line in lines if line.lstrip().startswith({t!r})]"),
    "sort": lambda t, n, k: _lines("lines = sorted(lines, key=str.lower)"),
    "sort_numeric": lambda t, n, k: _lines(
        "import re",
        f"numbers = [re.search({_NUMBER}, line) for line in lines]",
        "lines = [line for _, line in sorted(zip(numbers, lines), key=lambda pair: (pair[0] is None, "
        "float(pair[0].group()) if pair[0] else 0.0))]",
    ),
    "sort_numeric_desc": lambda t, n, k: _lines(
        "import re",
        f"numbers = [re.search({_NUMBER}, line) for line in lines]",
        "lines = [line for _, line in sorted(zip(numbers, lines), key=lambda pair: (pair[0] is None, "
        "-float(pair[0].group()) if pair[0] else 0.0))]",
    ),
    "sort_desc": lambda t, n, k: _lines("lines = sorted(lines, key=str.lower, reverse=True)"),
    "reverse": lambda t, n, k: _lines("lines = lines[::-1]"),
    "unique": lambda t, n, k: _lines("lines = list(dict.fromkeys(lines))"),
    "sort_unique": lambda t, n, k: _lines("lines = sorted(dict.fromkeys(lines), key=str.lower)"),
    "sort_desc_unique": lambda t, n, k: _lines("lines = sorted(dict.fromkeys(lines), key=str.lower, reverse=True)"),
    "first": lambda t, n, k: _lines(f"lines = lines[:{k}]"),
    "last": lambda t, n, k: _lines(f"lines = lines[-{k}:]"),
    "number_lines": lambda t, n, k: _lines("lines = [f'{i}. {line}' for i, line in enumerate(lines, 1)]"),
    "upper": lambda t, n, k: "print(INPUT.upper().rstrip('\\n'))",
    "lower": lambda t, n, k: "print(INPUT.lower().rstrip('\\n'))",
    "replace": lambda t, n, k: "\n".join(
        ["text = INPUT", *(f"text = text.replace({a!r}, {b!r})" for a, b in _pairs(t, n)), "print(text.rstrip('\\n'))"]
    ),
    "replace_names": lambda t, n, k: "\n".join(
        [
            "import re",
            "text = INPUT",
            *(f"text = re.sub({_whole(a)!r}, {b!r}, text)" for a, b in _pairs(t, n)),
            "print(text.rstrip('\\n'))",
        ]
    ),
    "count_lines": lambda t, n, k: (
        _value(f"value = sum(1 for line in INPUT.splitlines() if {_any_of(t)})")
        if t
        else _value("value = len(INPUT.splitlines())")
    ),
    "count_words": lambda t, n, k: (
        _value("import re", f"value = len(re.findall(r'\\b' + re.escape({t.lower()!r}) + r'\\b', INPUT.lower()))")
        if t
        else _value("value = len(INPUT.split())")
    ),
    "add_up_numbers": lambda t, n, k: _value(
        "import re", f"value = sum(float(x) for x in re.findall({_NUMBER}, INPUT))"
    ),
    "extract_numbers": lambda t, n, k: f"import re\nprint('\\n'.join(re.findall({_NUMBER}, INPUT)))",
    "largest_number": lambda t, n, k: f"import re\nprint(max(re.findall({_SIGNED}, INPUT), key=float))",
    "smallest_number": lambda t, n, k: f"import re\nprint(min(re.findall({_SIGNED}, INPUT), key=float))",
    "extract_emails": lambda t, n, k: (
        "import re\nprint('\\n'.join(re.findall(r'[\\w.+-]+@[\\w-]+(?:\\.[\\w-]+)+', INPUT)))"
    ),
    "extract_urls": lambda t, n, k: (
        "import re\nprint('\\n'.join(url.rstrip('.,;:') for url in re.findall(r'https?://[^\\s<>()\"\\']+', INPUT)))"
    ),
    "top_words": lambda t, n, k: (
        "import re\nfrom collections import Counter\n"
        'counts = Counter(re.findall(r"[a-z0-9\']+", INPUT.lower()))\n'
        f"print('\\n'.join(f'{{word}} {{count}}' for word, count in counts.most_common({k})))"
    ),
    "json_field": lambda t, n, k: (
        "import json\ndata = json.loads(INPUT)\n"
        "items = data if isinstance(data, list) else next((v for v in data.values() if isinstance(v, list)), [data])\n"
        f"print('\\n'.join(str(item[{t!r}]) for item in items if isinstance(item, dict) and {t!r} in item))"
    ),
    "csv_column": lambda t, n, k: (
        f"import csv, io\n{_ROWS}\ncolumn = header.index({t!r})\nprint('\\n'.join(row[column] for row in body))"
    ),
    "csv_where": lambda t, n, k: (
        f"import csv, io\n{_ROWS}\ncolumn = header.index({t!r})\n"
        "text = io.StringIO()\nout = csv.writer(text, lineterminator='\\n')\nout.writerow(header)\n"
        f"out.writerows(row for row in body if row[column].strip() == {n.strip()!r})\nprint(text.getvalue(), end='')"
    ),
    "csv_sum": lambda t, n, k: _value(
        f"import csv, io\n{_ROWS}\ncolumn = header.index({t!r})",
        "value = round(sum(float(row[column]) for row in body if row[column].strip()), 10)",
    ),
    "csv_average": lambda t, n, k: _value(
        f"import csv, io\n{_ROWS}\ncolumn = header.index({t!r})",
        "cells = [float(row[column]) for row in body if row[column].strip()]",
        "value = round(sum(cells) / len(cells), 10)",
    ),
    "csv_count_rows": lambda t, n, k: f"import csv, io\n{_ROWS}\nprint(len(body))",
    "csv_count_distinct": lambda t, n, k: (
        f"import csv, io\n{_ROWS}\ncolumn = header.index({t!r})\n"
        "print(len({row[column].strip() for row in body if len(row) > column and row[column].strip()}))"
    ),
    "csv_count_where": lambda t, n, k: (
        f"import csv, io\n{_ROWS}\ncolumn = header.index({t!r})\n"
        f"print(sum(1 for row in body if row[column].strip().lower() == {n.strip().lower()!r}))"
    ),
    "extract_phones": lambda t, n, k: (
        "import re\nfound = re.findall(r'(?<![\\w/.-])(?:\\+\\d{1,3}[ -]?)?(?:\\(\\d{2,5}\\)[ -]?)?\\d[\\d -]{4,}\\d"
        "(?![\\w/-])(?!\\.\\d)', INPUT)\nprint('\\n'.join(number.strip() for number in found "
        "if 7 <= len(re.sub(r'\\D', '', number)) <= 15 and not re.fullmatch(r'\\d{4}-\\d\\d-\\d\\d', number.strip())))"
    ),
    "word_counts": lambda t, n, k: (
        "import re\nfrom collections import Counter\n"
        'counts = Counter(re.findall(r"[a-z0-9\']+", INPUT.lower()))\n'
        f"between = {n or ' '!r}\n"
        "print('\\n'.join(f'{word}{between}{count}' for word, count in counts.most_common()))"
    ),
    "earliest_date": lambda t, n, k: f"import re\nprint(min(re.findall({_DAYS_WRITTEN}, INPUT)))",
    "latest_date": lambda t, n, k: f"import re\nprint(max(re.findall({_DAYS_WRITTEN}, INPUT)))",
    "csv_group_largest": lambda t, n, k: _group_code(t, n, "max"),
    "csv_group_smallest": lambda t, n, k: _group_code(t, n, "min"),
    "csv_largest": lambda t, n, k: _row_value(t, n, "max"),
    "csv_smallest": lambda t, n, k: _row_value(t, n, "min"),
    "csv_lookup": lambda t, n, k: (
        f"import csv, io\n{_ROWS}\nanswer = header.index({n!r})\n"
        f"print(next(row[answer] for row in body if {t.strip().lower()!r} in (cell.strip().lower() for cell in row)))"
    ),
    "json_value": lambda t, n, k: _KEY_VALUE.replace("KEY", repr(t)),
    "csv_to_table": lambda t, n, k: (
        f"import csv, io\n{_ROWS}\n"
        "print('| ' + ' | '.join(header) + ' |')\nprint('|' + ' --- |' * len(header))\n"
        "for row in body:\n    print('| ' + ' | '.join(row) + ' |')"
    ),
    "csv_to_json": lambda t, n, k: (
        "import csv, io, json\nprint(json.dumps(list(csv.DictReader(io.StringIO(INPUT))), indent=2))"
    ),
    "json_to_csv": lambda t, n, k: (
        f"import csv, io, json\ndata = json.loads(INPUT)\nwanted = {_keys(t)!r}\n"
        "fields = [key for key in wanted if key in data[0]] or list(data[0])\ntext = io.StringIO()\n"
        "out = csv.DictWriter(text, fieldnames=fields, extrasaction='ignore', lineterminator='\\n')\n"
        "out.writeheader()\nfor item in data:\n"
        "    out.writerow({key: json.dumps(value) if isinstance(value, (dict, list)) else value "
        "for key, value in item.items()})\nprint(text.getvalue(), end='')"
    ),
    "csv_sort": lambda t, n, k: _sorted_rows(t, reverse=False),
    "csv_sort_desc": lambda t, n, k: _sorted_rows(t, reverse=True),
    "yaml_to_json": lambda t, n, k: "import json, yaml\nprint(json.dumps(yaml.safe_load(INPUT), indent=2))",
    "json_to_yaml": lambda t, n, k: (
        "import json, yaml\nprint(yaml.safe_dump(json.loads(INPUT), sort_keys=False, allow_unicode=True).rstrip())"
    ),
    "list_files": lambda t, n, k: f"{_CHOSEN.format(t)}\nprint('\\n'.join(sorted(f['name'] for f in chosen)))",
    "count_files": lambda t, n, k: f"{_CHOSEN.format(t)}\nprint(len(chosen))",
    "largest_files": lambda t, n, k: (
        f"biggest = sorted(files, key=lambda f: (-f['size'], f['name']))[:{k}]\n"
        "print('\\n'.join(f['name'] for f in biggest))"
    ),
    "newest_files": lambda t, n, k: (
        f"import os\nnewest = sorted(files, key=lambda f: os.stat(f['path']).st_mtime, reverse=True)[:{k}]\n"
        "print('\\n'.join(f['name'] for f in newest))"
    ),
    "oldest_files": lambda t, n, k: (
        f"import os\noldest = sorted(files, key=lambda f: os.stat(f['path']).st_mtime)[:{k}]\n"
        "print('\\n'.join(f['name'] for f in oldest))"
    ),
    "files_changed_before": lambda t, n, k: (
        f"print('\\n'.join(sorted(f['name'] for f in files if f['modified'] < {t!r})))"
    ),
    "files_changed_after": lambda t, n, k: (
        f"print('\\n'.join(sorted(f['name'] for f in files if f['modified'] > {t!r})))"
    ),
    "files_larger_than": lambda t, n, k: (
        f"print('\\n'.join(sorted(f['name'] for f in files if f['size'] > {_bytes(t) or 0})))"
    ),
    "files_smaller_than": lambda t, n, k: (
        f"print('\\n'.join(sorted(f['name'] for f in files if f['size'] < {_bytes(t) or 0})))"
    ),
    "join_files": lambda t, n, k: (
        f"{_CHOSEN.format(t)}\nchosen.sort(key=lambda f: f['path'])\n"
        "print('\\n'.join(open(f['path'], encoding='utf-8').read().rstrip('\\n') for f in chosen))"
    ),
    "add_first_line": lambda t, n, k: f"print({t!r})\nprint(INPUT.rstrip('\\n'))",
    "add_last_line": lambda t, n, k: f"print(INPUT.rstrip('\\n'))\nprint({t!r})",
}
