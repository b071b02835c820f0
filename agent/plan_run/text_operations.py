"""Exact work on one file's text done by an operation the model picks by name, in code omx writes.

Asked to write the code of exact work, the 0.5B model often wrote code that ran and printed the wrong thing (every
line where the first three were asked, the JSON file's lines where its names were asked). Asked instead to pick one
of a list of named operations (``first`` with its number, ``json_field`` with its field, ``csv_sum`` with its
column), with a JSON schema and a few worked examples of tasks of their own, the same model picked the right one for
most of the benchmark's tuning tasks of that kind: picking a word the task says is what a small model does well,
and code for the word picked is then exact. The pick is part of the task's reading (``task_reading.read_task``):

- where a python step of exact work gets its code from one file's text (INPUT) and the pick is an operation on the
  text whose arguments fit the file (``operation_fitting.fitted``: a number above 0 where it needs one, a CSV
  column the header holds, a date that is one), or from the files of the one folder the task names and the pick is
  an operation on a folder's files (``ON_FOLDER``), the step's code is omx's code of that operation
  (``operation_code``), shown in the plan like any code (``code_steps.with_operation_code``); otherwise the code is
  asked of the model, as without a pick;
- a pick of an operation on the input's own lines (``FROM_LINES``: sort, reverse, the first N, a filter, ...)
  where the reading said prose makes the task exact work: the 0.5B model read sorts, reversals and first lines as
  prose, and a model then wrote them from memory;
- a pick of ``file_operations`` has the task's file operations asked for, as a reading of kind command does (no
  delete is taken on the pick alone).

That the model picked the right operation is its reading, nothing more: the value is checked as any code's (a
second program written apart by the model, ``second_program``), and code that fails when it runs is asked of the
model (``code_fix``).

This module keeps what the operations are (``OPERATIONS``, the sets of them, ``TextOperation``, the worked
``EXAMPLES``), what is asked of the model (``offered_operations``, ``operation_request``, ``ask_operation``) and the
code omx writes for an operation (``operation_code``). Whether a pick fits the task and its input, and what it
becomes where the task's words or the file say more, is ``operation_fitting`` (on a CSV table, ``table_fitting``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.model.llm import LLMError, Model
from agent.model.schema_request import complete_with_schema

__all__ = [
    "CODE_BY_OMX",
    "DONE_BOX",
    "EXAMPLES",
    "FROM_LINES",
    "ON_FOLDER",
    "ON_TEXT",
    "OPEN_BOX",
    "OPERATIONS",
    "SCHEMA_TITLE",
    "TextOperation",
]
__all__ += [
    "COUNTED",
    "DATE_PARTS",
    "FILTERS",
    "IN_PLACE",
    "LOOKUPS",
    "PATTERNED",
    "ask_operation",
    "keys",
    "size_in_bytes",
    "sizes_said",
]
__all__ += [
    "offered_operations",
    "operation_code",
    "operation_note",
    "operation_request",
    "operation_schema",
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
    "largest number (or latest date)",
    "csv_smallest": "the value of the CSV column NEW_TEXT ('': the first column) in the row whose column TEXT is the "
    "smallest number (or earliest date)",
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
    "smallest_files": "the names of the NUMBER smallest files in the folder, smallest first, one per line",
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
ON_FOLDER |= {"smallest_files"}
#: the operations on a folder's files whose TEXT is a date, or a size
DATED = frozenset({"files_changed_before", "files_changed_after"})
SIZED = frozenset({"files_larger_than", "files_smaller_than"})
#: the operations on those of a folder's files whose names match TEXT, a pattern
PATTERNED = frozenset({"list_files", "count_files", "join_files"})
#: the operations that need NUMBER above 0, and those that need TEXT
NEEDS_NUMBER = frozenset(
    {"first", "last", "top_words", "largest_files", "smallest_files", "newest_files", "oldest_files"}
)
NEEDS_TEXT = frozenset({"keep_containing", "drop_containing", "keep_starting", "replace", "json_field", "json_value"})
NEEDS_TEXT |= {"add_first_line", "add_last_line"} | DATED | SIZED
#: the operations whose output is the input's own lines or items, picked, ordered, changed or converted by a rule,
#: not a value computed from them (``VALUES``): a pick of one where the reading said prose is taken as exact work
VALUES = frozenset({"count_lines", "count_words", "add_up_numbers", "top_words", "csv_sum", "csv_average"})
VALUES |= {"largest_number", "smallest_number"}
VALUES |= {"csv_largest", "csv_smallest", "csv_count_rows", "csv_lookup", "json_value"}
#: the sorts that also drop duplicate lines: no pick of the model's, what a sort or a dedupe becomes where the task
#: asks for both ("dedupe it, sort it A-Z"; ``operation_fitting.fitted``)
SORTED_UNIQUE = {"sort": "sort_unique", "sort_desc": "sort_desc_unique"}
#: the operations omx fits a pick to and never offers: those sorts, a replacement of names in code, a count of the
#: CSV rows with a value (``operation_fitting.fitted``)
FITTED_ONLY = frozenset({*SORTED_UNIQUE.values(), "replace_names", "csv_count_where"})
#: names renamed in Python code: its names, and those in an f-string's braces, not its strings or comments
#: (``code_renames``)
FITTED_ONLY |= {"rename_in_python"}
#: the groups of a CSV table's rows (those with one value of a column, or one day, month or year of a date) whose
#: rows add up to the most or the least (``operation_fitting.fitted``: "which month had the highest total")
FITTED_ONLY |= {"csv_group_largest", "csv_group_smallest"}
#: the earliest and the latest date (YYYY-MM-DD) a text holds (``operation_fitting.fitted``: "the earliest date in
#: oven.log")
FITTED_ONLY |= {"earliest_date", "latest_date"}
#: a CSV table's rows sorted by a column, its header first (``operation_fitting.fitted``: a sort of the lines of a
#: table)
FITTED_ONLY |= {"csv_sort", "csv_sort_desc"}
#: the phone numbers of a text; every word with its count, most frequent first (``operation_fitting.fitted``)
FITTED_ONLY |= {"extract_phones", "word_counts"}
#: how many different values a CSV column holds (``operation_fitting.fitted``: "How many different customers are
#: there in x.csv?")
FITTED_ONLY |= {"csv_count_distinct"}
#: the items of a checklist left open ("- [ ] call the vet") and those ticked off ("- [x] ..."), as they are
#: (``operation_fitting.fitted``: "copy the open items from todo.md", "whats not ticked off yet on stocktake.md?")
FITTED_ONLY |= {"open_items", "done_items"}
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
#: the operations whose code prints how many lines or rows it keeps where the task asks how many (``operation_code``)
COUNTED = FILTERS | {"csv_where"}
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


#: how the description of a step whose code omx wrote begins its note (``operation_note``; a join's, in
#: ``reading_plan``)
CODE_BY_OMX = "(code by omx"


def operation_note(operation: TextOperation) -> str:
    """What a step whose code is omx's code of ``operation`` says of it, for the person who confirms the plan."""
    return f"{CODE_BY_OMX} for the operation {operation.op!r} the model picked)"


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


def _renamed_in_python(renamed: dict[str, str]) -> str:
    """The code that renames each name of ``renamed`` in INPUT, Python code: where it is a name (a token of Python's
    own), or a word inside an f-string's braces; never inside another string or a comment (row["price"] stays)."""
    pattern = (
        _whole("|".join(renamed)) if len(renamed) == 1 else rf"(?<!\w)(?:{'|'.join(map(re.escape, renamed))})(?!\w)"
    )
    return "\n".join(
        [
            "import io, re, tokenize",
            f"renamed = {renamed!r}",
            f"word = {pattern!r}",
            "def in_braces(text):",
            "    return re.sub(r'\\{[^{}]*\\}', lambda b: re.sub(word, lambda w: renamed[w.group()], b.group()), text)",
            "lines = INPUT.splitlines(keepends=True)",
            "edits = []",
            "for token in tokenize.generate_tokens(io.StringIO(INPUT).readline):",
            "    if token.type == tokenize.NAME and token.string in renamed:",
            "        edits.append((token.start, token.end, renamed[token.string]))",
            "    elif token.type == tokenize.STRING and re.match(r'(?i)[rb]*f', token.string):",
            "        edits.append((token.start, token.end, in_braces(token.string)))",
            "for (first, start), (last, end), new in reversed(edits):",
            "    lines[first - 1 : last] = [lines[first - 1][:start] + new + lines[last - 1][end:]]",
            "print(''.join(lines).rstrip('\\n'))",
        ]
    )


def _whole(name: str) -> str:
    """The pattern of ``name`` standing whole: no letter, digit or underscore just before or after it."""
    return rf"(?<!\w){re.escape(name)}(?!\w)"


def keys(text: str) -> list[str]:
    """The keys or columns ``text`` lists, split at commas or '|'."""
    return [key.strip() for key in re.split(r"[,|]", text) if key.strip()]


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(bytes?|b|kb|kib|k|mb|mib|m|gb|gib|g)?", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2}
_UNITS |= {"mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3}


def size_in_bytes(text: str) -> int | None:
    """The size ``text`` names in bytes, or None."""
    size = _SIZE.fullmatch(text.strip())
    return None if size is None else int(float(size[1]) * _UNITS[(size[2] or "").lower()])


#: a size said among other words: at the start of a word ("2.5 MB", not the 5 of "v1.5" or "data2")
_SIZE_SAID = re.compile(rf"(?<![\w.]){_SIZE.pattern}\b", re.IGNORECASE)


def sizes_said(text: str) -> set[int]:
    """Every size ``text`` says, in bytes ("500 bytes", "1 KB", "2MB", a number alone)."""
    return {size for match in _SIZE_SAID.finditer(text) if (size := size_in_bytes(match.group(0))) is not None}


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
    """Code that prints ``answer``'s value in the row whose ``column`` holds the number ``pick`` (max, min) finds,
    or the date (YYYY-MM-DD), where each of the column's cells is one."""
    return (
        f"import csv, io, re\n{_ROWS}\ncolumn, answer = header.index({column!r}), header.index({answer!r})\n"
        "cells = [row[column].strip() for row in body if len(row) > column and row[column].strip()]\n"
        f"dated = bool(cells) and all(re.fullmatch({_DAYS_WRITTEN}, cell) for cell in cells)\n"
        "numbers = []\nfor row in body:\n    try:\n"
        "        numbers.append((row[column].strip() if dated else float(row[column]), row))\n"
        "    except (ValueError, IndexError):\n        pass\n"
        f"print({pick}(numbers, key=lambda pair: pair[0])[1][answer])"
    )


#: the part of a date (YYYY-MM-DD) a group is: its first 10, 7 or 4 characters
DATE_PARTS = {"day": 10, "date": 10, "month": 7, "year": 4}


def _group_code(value: str, group: str, pick: str) -> str:
    """Code that prints the group ``pick`` (max, min) finds of the totals of ``value`` (see
    ``table_fitting.by_group``; '': how many rows each group has); a month by its name, with its year where the
    table spans several."""
    column, _, part = group.partition("|")
    key = f"row[group].strip()[:{DATE_PARTS[part]}]" if part else "row[group].strip()"
    code = [
        f"import csv, io\n{_ROWS}",
        f"value, group = {f'header.index({value!r})' if value else None}, header.index({column!r})",
        "totals = {}",
        "for row in body:",
        "    try:",
        "        amount = float(row[value]) if value is not None else 1.0",
        "    except (ValueError, IndexError):",
        "        continue",
        f"    totals[{key}] = totals.get({key}, 0.0) + amount",
        f"best = {pick}(totals, key=lambda name: totals[name])",
    ]
    if part != "month":
        return "\n".join([*code, "print(best)"])
    named = "print(datetime.strptime(best, '%Y-%m').strftime('%B' if len({k[:4] for k in totals}) == 1 else '%B %Y'))"
    return "\n".join(["from datetime import datetime", *code, named])


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
#: a checklist's item left open ("- [ ] call the vet", "* [ ]", "1. [ ]") and one ticked off ("- [x] ..."), up to
#: its box's end, and the two in code
_ITEM_START = r"\s*(?:[-*+]|\d+[.)])?\s*"
OPEN_BOX, DONE_BOX = rf"{_ITEM_START}\[[ _]\]", rf"{_ITEM_START}\[[xX✓✔]\]"
_OPEN, _DONE = f"r'{OPEN_BOX}'", f"r'{DONE_BOX}'"
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
    "rename_in_python": lambda t, n, k: _renamed_in_python(dict(_pairs(t, n))),
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
    "open_items": lambda t, n, k: _lines("import re", f"lines = [line for line in lines if re.match({_OPEN}, line)]"),
    "done_items": lambda t, n, k: _lines("import re", f"lines = [line for line in lines if re.match({_DONE}, line)]"),
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
        f"import csv, io, json\ndata = json.loads(INPUT)\nwanted = {keys(t)!r}\n"
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
    "smallest_files": lambda t, n, k: (
        f"smallest = sorted(files, key=lambda f: (f['size'], f['name']))[:{k}]\n"
        "print('\\n'.join(f['name'] for f in smallest))"
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
        f"print('\\n'.join(sorted(f['name'] for f in files if f['size'] > {size_in_bytes(t) or 0})))"
    ),
    "files_smaller_than": lambda t, n, k: (
        f"print('\\n'.join(sorted(f['name'] for f in files if f['size'] < {size_in_bytes(t) or 0})))"
    ),
    "join_files": lambda t, n, k: (
        f"{_CHOSEN.format(t)}\nchosen.sort(key=lambda f: f['path'])\n"
        "print('\\n'.join(open(f['path'], encoding='utf-8').read().rstrip('\\n') for f in chosen))"
    ),
    "add_first_line": lambda t, n, k: f"print({t!r})\nprint(INPUT.rstrip('\\n'))",
    "add_last_line": lambda t, n, k: f"print(INPUT.rstrip('\\n'))\nprint({t!r})",
}
