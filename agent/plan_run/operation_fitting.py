"""The fitting of the operation the model picked (``text_operations``) to the task and its input: ``fitted``.

A python step of exact work gets omx's code of the pick (``text_operations.operation_code``) only where the pick is
an operation on the text, or on a folder's files, whose arguments fit the input: a number above 0 where it needs one,
a CSV column the header holds, a date that is one. Where the task's words say more than the pick, the pick becomes
what they say: a sort the other way round, the other end of a largest or a smallest, every pair of a replacement the
task quotes, a line added, a comment, names in code renamed, the conversion to the output's form, a span before today
read as a day, a size in bytes, the phone numbers, every word with its count; on a CSV table, what the pick means on
its rows (``table_fitting``). Also here: the day before which a task asks for files last changed (``earlier_day``,
for ``file_ops``), and the texts of a pick that the task does not say (``unsaid_arguments``, for ``task_checks``).
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Collection
from datetime import date, datetime, timedelta

from agent.plan_run.fitting_words import ASKS_A_COUNT, most_and_least, says, words_of
from agent.plan_run.table_fitting import (
    IN_A_TABLE,
    ISO_DAY,
    ROW_SORTS,
    as_rows_sorted,
    by_group,
    csv_header,
    distinct_count,
    in_a_table,
    with_column,
    with_key_and_column,
)
from agent.plan_run.text_operations import (
    COUNTED,
    CSV_COLUMN,
    DATED,
    DONE_BOX,
    FROM_LINES,
    NEEDS_NUMBER,
    NEEDS_TEXT,
    NOT_TEXT,
    ON_TEXT,
    OPEN_BOX,
    OPERATIONS,
    PATTERNED,
    SIZED,
    SORTED_UNIQUE,
    TextOperation,
    keys,
    size_in_bytes,
    sizes_said,
)
from agent.plan_run.yes_or_no import asks_yes_or_no

__all__ = ["answers_one_value", "earlier_day", "fitted", "unsaid_arguments"]


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
    config/dev.json set?". No operation answers a question asked yes or no (``yes_or_no``): None for any."""
    if asks_yes_or_no(task):
        return None
    if _CONVERTS.search(task) and operation.op not in {*_CONVERSIONS.values(), "write_prose", "file_operations"}:
        operation = _converted(operation, sample, files)
    if operation.op not in ("write_prose", "file_operations"):  # a question the task asks of the text itself
        asked = by_group(operation, sample, task) or _date_asked(sample, task) or distinct_count(sample, task)
        if asked is not None:
            return asked
        if (ticked := _checklist_items(sample, task)) is not None:
            return ticked
    if operation.op in NOT_TEXT or operation.op not in OPERATIONS:
        return None
    if operation.op == "json_field" and sample.lstrip().startswith("{") and operation.text:
        operation = operation.model_copy(update={"op": "json_value"})  # a field of one object: its key's value
    if operation.op == "json_value" and (dotted := _dotted_key(operation.text, task)):
        operation = operation.model_copy(update={"text": dotted})
    if _names_a_file(operation.text, files) and not _looked_for(operation.text, task, sample):
        operation = operation.model_copy(update={"text": ""})
    if operation.op in IN_A_TABLE and (header := csv_header(sample)) is not None:
        operation = in_a_table(operation, header, task, list(csv.reader(io.StringIO(sample)))[1:])
    if operation.op in SIZED and not sizes_said(task) and (ranked := _ranked_by_size(task)) is not None:
        operation = TextOperation(op=ranked)  # "Which file is the smallest?": no size said, the first of a ranking
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
        and _asks(_OTHER_END[operation.op], task, sample)
        and not _asks(operation.op, task, sample)
    ):
        operation = operation.model_copy(update={"op": _OTHER_END[operation.op]})
    if operation.op in ROW_SORTS and (header := csv_header(sample)) is not None:
        rows_sorted = as_rows_sorted(operation, header, task, files)
        if rows_sorted is None:
            return None
        operation = rows_sorted
    if operation.op == "json_to_csv" and not all(says(words_of(task), key) for key in keys(operation.text)):
        operation = operation.model_copy(update={"text": ""})  # columns the task does not say: every one
    if operation.op in ("unique", *SORTED_UNIQUE) and _DEDUPED.search(task) and _SORTED.search(task):
        down = operation.op == "sort_desc" or _DOWNWARD.search(task) is not None
        operation = operation.model_copy(update={"op": SORTED_UNIQUE["sort_desc" if down else "sort"]})
    if operation.op in ("add_first_line", "add_last_line"):
        operation = _as_a_comment(operation, files, task)
    if operation.op == "replace":
        operation = _as_names(_as_a_line_added(_with_every_pair(operation, task), sample, task), task)
    if operation.op in _COUNTING and task and not ASKS_A_COUNT.search(task):
        return None
    if operation.op in {*_EXTRACTED, "other"} and _PHONES.search(words_of(task)):
        return TextOperation(op="extract_phones")  # the 0.5B model extracted every number for the phone numbers
    if operation.op in ("count_words", "top_words") and _EACH_WORD.search(task) and not _most_said(operation, task):
        return TextOperation(op="word_counts", new_text=_word_count_form(task))
    if operation.op in _EXTRACTED and task and not _EXTRACTED[operation.op].search(words_of(task)):
        return None  # the 0.5B model extracted emails for "Write the name of every user in data/users.json"
    if operation.op in CSV_COLUMN:
        return with_column(operation, sample, task)
    if operation.op == "csv_lookup":
        return with_key_and_column(operation, sample, task)
    if operation.op in DATED:
        return _with_date(operation, task)
    if operation.op in SIZED:
        return _with_size(operation, task)
    if operation.op in PATTERNED:  # a pattern: 'src/*.py' is '*.py' of the folder
        names = (os.path.basename(part.strip().rstrip("/")) for part in operation.text.split("|"))
        return operation.model_copy(update={"text": "|".join(name for name in names if name)})
    return operation


#: the shapes of an output that is one value, as the model read them
_ONE_VALUE = frozenset({"number", "one_line"})
#: a task that asks a question: it starts with the question's word, or has one in a sentence that ends in "?"
_QUESTION = re.compile(
    r"^\W*(?:which|who|whom|whose|what|when|where|how)\b|\b(?:which|who|whose|what|when|where)\b[^.?!]*\?",
    re.IGNORECASE,
)


def answers_one_value(operation: TextOperation, task: str, shape: str, counted: bool) -> bool:
    """Whether ``operation`` (fitted) can make an output the model read as one value (``shape``: just a number, one
    line): not an operation whose output is the input's lines or rows, picked, ordered or changed (``FROM_LINES``),
    where the output is just a number and they are not counted (``counted``: a filter, or the CSV rows with a value,
    prints how many: ``COUNTED``; the 1.5B model extracted every number of a config for "What port ...? Just the
    number"), nor where it is one line and the task asks a question; the first line, or the last, is one. For "pls
    check config/notify.ini and write the SMS timeout (seconds, number only)" the 1.5B model picked a replacement of
    'SMS timeout' (omx's code of it printed the whole file), and for "Which customer had the most expensive repair
    in October?" the rows of October."""
    if shape not in _ONE_VALUE or operation.op not in FROM_LINES or (counted and operation.op in COUNTED):
        return True
    if operation.op in ("first", "last") and operation.number == 1:
        return True
    return shape == "one_line" and _QUESTION.search(task) is None


#: the words that ask for a checklist's items left open, and those that ask for the ones ticked off
_OPEN_ITEMS = re.compile(
    r"\b(?:open|unchecked|unticked|not\s+(?:yet\s+)?(?:been\s+)?(?:done|ticked|checked|completed|finished|crossed)|"
    r"undone|outstanding|remaining|left|pending|incomplete|unfinished|still\s+to\s+(?:do|be\s+done))\b",
    re.IGNORECASE,
)
_DONE_ITEMS = re.compile(r"\b(?:done|ticked|checked|completed|finished|crossed\s+off|closed)\b", re.IGNORECASE)


def _checklist_items(sample: str, task: str) -> TextOperation | None:
    """Where ``sample`` (the input's first lines) is a checklist ("- [ ] item", "- [x] item") and ``task`` asks for
    the items left open or those ticked off, not how many, those lines as they are (``open_items``,
    ``done_items``); else None. The 0.5B model's code kept the checklist's heading alone for "copy the open items
    from todo/reception.md into out/reception_open.md, keep the lines as they are", and the whole list for "whats
    not ticked off yet on todo/stocktake.md?"."""
    words = words_of(task)
    if not re.search(rf"(?m)^(?:{OPEN_BOX}|{DONE_BOX})", sample) or ASKS_A_COUNT.search(words):
        return None
    if _OPEN_ITEMS.search(words):
        return TextOperation(op="open_items")
    return TextOperation(op="done_items") if _DONE_ITEMS.search(words) else None


def _dotted_key(key: str, task: str) -> str | None:
    """The key inside others that ``task`` writes whole and ``key`` ends ("what's reminders.lead_days set to in
    config/clinic.json?": the 0.5B model picked 'lead_days', which is also the name of out/lead_days.txt), else
    None; no file name (a word after a '/', or an extension after the last dot, is one)."""
    if not key.strip() or "." in key:
        return None
    found = re.search(rf"(?<![\w./-])((?:[A-Za-z_][\w-]*\.)+{re.escape(key.strip())})(?![\w/-])", task)
    return found.group(1) if found is not None else None


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


def _most_said(operation: TextOperation, task: str) -> bool:
    """Whether ``operation`` is the NUMBER most frequent words and ``task`` says that number ("what are the 3 most
    frequent words? count every word": the top 3, not every word with its count)."""
    number = operation.number
    return operation.op == "top_words" and number > 0 and re.search(rf"\b{number}\b", words_of(task)) is not None


def _word_count_form(task: str) -> str:
    """What goes between a word and its count on a line: what the task shows (': ' for 'word: count'), else a
    space."""
    shown = _WORD_COUNT_FORM.search(task)
    if shown is None:
        return " "
    mark = shown.group(1)
    return mark if mark == "," else f"{mark} " if mark in ":;" else f" {mark} "


#: the operations that rank a folder's files and keep the first NUMBER of them
_FILES_RANKED = frozenset({"largest_files", "smallest_files", "newest_files", "oldest_files"})
#: the operations that count, and the words that ask for a count (``ASKS_A_COUNT``): a count picked where none is
#: asked is no pick (the 0.5B model counted lines for "How old is Ben according to data/people.csv?")
_COUNTING = frozenset({"count_lines", "count_words", "count_files", "csv_count_rows", "csv_count_where"})


#: a sort the task asks the other way round: largest or last first
_DOWNWARD = re.compile(
    r"\b(?:highest|largest|biggest|greatest|most|best|newest|latest|z)[\s-]+(?:[\w-]+\s+)?"
    r"(?:first|to\s+(?:lowest|smallest|least|a))\b|"
    r"\b(?:descending|decreasing|reverse\s+alphabetical)\b",
    re.IGNORECASE,
)


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
              "files_changed_after": "files_changed_before", "largest_files": "smallest_files",
              "smallest_files": "largest_files"}  # fmt: skip
_ASKS = {"files_changed_before": _EARLIER, "files_changed_after": _LATER}
_LARGEST = frozenset({"largest_number", "csv_largest", "largest_files"})


def _asks(op: str, task: str, sample: str) -> bool:
    """Whether ``task`` asks for what ``op`` (one of ``_OTHER_END``) gives: the largest, the smallest (also as the
    fastest or the slowest of a time or a speed, read with the columns of ``sample`` where it is a table:
    ``most_and_least``), a day before or after."""
    if op in _ASKS:
        return _ASKS[op].search(task) is not None
    most, least = most_and_least(words_of(task), csv_header(sample) or [])
    return (most if op in _LARGEST else least) is not None


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
    if bool(start) == bool(end) or not says(task, line.strip()):
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
    if bool(earliest) == bool(latest) or not ISO_DAY.search(sample):
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


def _ranked_by_size(task: str) -> str | None:
    """``largest_files`` or ``smallest_files`` where ``task`` asks for the largest or the smallest (one of them);
    else None."""
    most, least = most_and_least(words_of(task), [])
    return None if bool(most) == bool(least) else "largest_files" if most else "smallest_files"


def _with_size(operation: TextOperation, task: str) -> TextOperation | None:
    """``operation`` with TEXT the size it names in bytes (``1 KB``: 1024, ``2MB``, ``500 bytes``); None where TEXT
    is no size, or (``task`` given) none ``task`` says: the 1.5B model picked the files smaller than '1 KB' for
    "Which file in photos/ is the smallest?"."""
    size = size_in_bytes(operation.text)
    if task and size not in sizes_said(task):
        return None
    return None if size is None else operation.model_copy(update={"text": str(size)})


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
    if csv_header(sample) is not None:
        return "csv"
    return "yaml" if re.match(r"(?:-\s+)?[\w-]+:(?:\s|$)", head) else "text"


def _looked_for(text: str, task: str, sample: str) -> bool:
    """Whether ``text``, which names a file, is also a text the task looks for: the task says it outside its paths
    and the input's first lines (``sample``) hold it ("How many times does 'sea' appear in essay/draft.txt? Save
    the count to out/sea.txt")."""
    words = words_of(task)
    return says(words, text.strip()) and text.strip().lower() in sample.lower()


def _names_a_file(text: str, files: Collection[str]) -> bool:
    """Whether ``text`` is one of ``files``, its name, or its name without the extension."""
    names = {os.path.normpath(path) for path in files}
    base = {os.path.basename(name) for name in names}
    names |= base | {os.path.splitext(name)[0] for name in base}
    return bool(text.strip()) and os.path.normpath(text.strip()) in names


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
    words = words_of(task)  # out/errors.txt does not say "error"
    texts = [operation.text, operation.new_text if operation.op in _USES_NEW_TEXT else ""]
    parts = [part for text in texts for part in text.split("|") if part.strip()]
    return [part for part in parts if not says(words, " ".join(part.split()))]
