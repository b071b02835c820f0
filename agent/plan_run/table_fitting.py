"""The fitting of an operation the model picked (``text_operations``) to a CSV table: what the pick means on the
table's rows, where the input reads as one (``csv_header``: a first row of two or more names, a second of as many
cells).

``operation_fitting.fitted`` asks each of these of a pick: a pick on any text as the CSV operation it means
(``in_a_table``: a column's numbers added up are its sum, its lines counted its rows, the lines that hold one
column's value the rows with it), a sort of its lines as a sort of its rows under the header (``as_rows_sorted``),
a CSV column or a lookup with the header's own spelling of its column and the value the task names
(``with_column``, ``with_key_and_column``), and the questions a task asks of the table itself: which group of its
rows adds up to the most or the least (``by_group``), how many different values a column holds
(``distinct_count``). Each reads the task's words (``fitting_words``) against the table's header and first rows.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection

from agent.plan_run.fitting_words import (
    ASKS_A_COUNT,
    is_superlative,
    measured_by_meaning,
    most_and_least,
    says,
    words_of,
)
from agent.plan_run.text_operations import CSV_ROW, DATE_PARTS, TextOperation

__all__ = ["IN_A_TABLE", "ISO_DAY", "ROW_SORTS", "as_rows_sorted", "by_group", "csv_header", "distinct_count"]
__all__ += ["in_a_table", "with_column", "with_key_and_column"]

#: the operations on any text that a CSV file's own asks for where the input is one: the numbers of a column the
#: task names added up are that column's sum; its lines counted, where the task does not say lines, its rows
IN_A_TABLE = frozenset({"add_up_numbers", "count_lines", "keep_containing"})


def in_a_table(operation: TextOperation, header: list[str], task: str, rows: list[list[str]]) -> TextOperation:
    """``operation`` (one of ``IN_A_TABLE``) as the CSV operation it means on a table whose first row is
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
ROW_SORTS = {"sort": "csv_sort", "sort_numeric": "csv_sort", "sort_desc": "csv_sort_desc",
              "sort_numeric_desc": "csv_sort_desc"}  # fmt: skip


def as_rows_sorted(
    operation: TextOperation, header: list[str], task: str, files: Collection[str]
) -> TextOperation | None:
    """A sort of the lines of a CSV table (``header``: its first row) as a sort of its rows, under the header, by
    the column TEXT names, else the one ``task`` says, else, where a file the task names is a .csv one, the first
    (``csv_sort``, ``csv_sort_desc``); None where the task says several and TEXT none of them; the sort of lines as
    picked where no column is named and no file is a .csv one (lines such as "Doe, Jane" read as a table too). The
    0.5B model picked a sort by number, TEXT 'price', for "sort products.csv by price, most expensive first", and the
    header went with the rows."""
    said = _columns_said(header, words_of(task))
    column = _column_named(header, operation.text) or (said[0] if len(said) == 1 else None)
    if column is None and not said and any(path.lower().endswith((".csv", ".tsv")) for path in files):
        column = header[0]
    if column is None:
        return None if said else operation
    return TextOperation(op=ROW_SORTS[operation.op], text=column)


def _held(value: str, header: list[str], rows: list[list[str]]) -> tuple[str, str] | None:
    """The column of ``header`` whose cells in ``rows`` are ``value`` (case aside), and the value as the first of
    them writes it, where that is one column; else None."""
    cells = {header[i]: cell.strip() for row in reversed(rows) for i, cell in enumerate(row[: len(header)])
             if value.strip() and cell.strip().lower() == value.strip().lower()}  # fmt: skip
    return next(iter(cells.items())) if len(cells) == 1 else None


def csv_header(sample: str) -> list[str] | None:
    """The header of ``sample`` where it reads as a CSV table (a first row of two or more names, and a second row
    of as many cells), else None."""
    rows = [row for row in csv.reader(io.StringIO(sample)) if row][:2]
    if len(rows) < 2 or len(rows[0]) < 2 or len(rows[0]) != len(rows[1]):
        return None
    return rows[0]


def with_column(operation: TextOperation, sample: str, task: str) -> TextOperation | None:
    """``operation`` with TEXT the CSV header's own spelling of its column (a whole column is the rows where it
    holds the one value of it that ``task`` names, see ``operation_fitting.fitted``), or, where the header has no
    such column, the one column of it the task says (the 0.5B model gave no column for "Compute the average age in
    data/people.csv"), or, for a sum or an average where it says none, the one column of numbers a word of TEXT or
    the task names (``_numbers_sharing_a_word``); None where there is none. A column of no numbers added up or
    averaged, where the task names one of its values, is the rows with that value: the model picked the sum of the
    status column for "... only the rows of data/orders.csv whose status is shipped". None for the rows with a value
    that is no number in a column of numbers (the 1.5B model picked the rows whose reorder_level is 'stock' for "the
    parts whose stock is below the reorder level"): no row holds it."""
    text, new_text, op = operation.text, operation.new_text, operation.op
    if "=" in text and not new_text:
        text, new_text = (part.strip() for part in text.split("=", 1))
    rows = list(csv.reader(io.StringIO(sample)))
    header = rows[0] if rows else []
    column, said = _column_named(header, text), _columns_said(header, words_of(task))
    if column is None and len(said) == 1 and op not in CSV_ROW:  # the one column the task says: "the average age"
        column = said[0]
    if column is None and not said and op in ("csv_sum", "csv_average"):  # a word of one: "invoice total"
        column = _numbers_sharing_a_word(rows, f"{text} {words_of(task)}")
    if column is None:
        return None
    values = _values(rows, header.index(column))
    no_numbers = op in ("csv_sum", "csv_average") and values and not any(_is_number(value) for value in values)
    if op == "csv_column" or no_numbers or (op == "csv_where" and new_text not in values):
        named = [value for value in values if says(task, value)]
        if len(named) == 1:
            op, new_text = "csv_where", named[0]
    if op == "csv_where" and (not new_text or (values and all(map(_is_number, values)) and not _is_number(new_text))):
        return None  # no value, or a word in a column of numbers: no row holds it
    if op in CSV_ROW:  # the answer's column as the header spells it, the first where none is named
        new_text = spelled if (spelled := _column_named(header, new_text)) is not None else header[0]
    return operation.model_copy(update={"op": op, "text": column, "new_text": new_text})


def _numbers_sharing_a_word(rows: list[list[str]], words: str) -> str | None:
    """The one column of numbers of a table (``rows``: the header first) whose name shares a word with ``words``
    (a name's words are split at '_', '-' and spaces: total_gbp is total and gbp), else None. The 0.5B model picked
    the average of 'invoice_total' for "average invoice total in data/invoices.csv", whose column is total_gbp."""
    said = {word.lower() for word in re.findall(r"[A-Za-z]+", words.replace("_", " "))}
    header = rows[0] if rows else []
    shared = [
        name
        for i, name in enumerate(header)
        if (values := _values(rows, i))
        and all(map(_is_number, values))
        and {part.lower() for part in re.split(r"[\s_-]+", name) if part} & said
    ]
    return shared[0] if len(shared) == 1 else None


def with_key_and_column(operation: TextOperation, sample: str, task: str) -> TextOperation | None:
    """A lookup (``csv_lookup``) with NEW_TEXT the header's own spelling of the column it answers with (where the
    header has no such column, the one column ``task`` says) and TEXT the value its row holds: one the task says
    (the row may lie below ``sample``, the input's first lines), else the one cell of ``sample`` the task says.
    With no row named (a word for the most or the least, "highest", names none), where the task asks for the
    largest or the smallest of something, the row that holds it (``csv_largest``, ``csv_smallest``): the 0.5B model
    picked a lookup for "Who has the highest score in data/scores.csv?". None where the column or the row is
    missing."""
    rows = list(csv.reader(io.StringIO(sample)))
    header = rows[0] if rows else []
    words = words_of(task)
    answer, said = _column_named(header, operation.new_text), _columns_said(header, words)
    key = operation.text.strip()
    most, least = most_and_least(words, header)
    in_cells = any(cell.strip().lower() == key.lower() for row in rows[1:] for cell in row)
    named_column = not in_cells and any(name.strip() and says(key, name.strip()) for name in header)
    if not key or not says(words, key) or is_superlative(key) or named_column:  # "highest", "pet's name": no row
        cells = {cell.strip() for row in rows[1:] for cell in row if cell.strip() and says(words, cell.strip())}
        key = cells.pop() if len(cells) == 1 else ""
    if not key and bool(most) != bool(least):  # "Who has the highest score?": the row of the largest score
        measured = [name for name in said if name != answer and _measured(words, name.strip(), most or least)]
        measured = measured or [name for name in measured_by_meaning(words, header) if name != answer]
        others = [name for name in said if name not in measured]
        if len(measured) == 1:
            answer = answer or (others[0] if len(others) == 1 else "")
            end = "csv_largest" if most else "csv_smallest"
            return with_column(TextOperation(op=end, text=measured[0], new_text=answer), sample, task)
    column = answer if answer is not None or len(said) != 1 else said[0]
    if column is None or not key:
        return None
    return operation.model_copy(update={"text": key, "new_text": column})


#: a question of which group of a table's rows adds up to the most or the least: "which month had the highest
#: total", "which day had the most sales", "who worked the most hours"
_WHICH = re.compile(r"\b(?:which|what)\s+([a-z]+)\b|\b(who)\b", re.IGNORECASE)
#: the group with the most rows: "the busiest day"
_BUSIEST = re.compile(r"\b(busiest|quietest)\s+([a-z]+)\b", re.IGNORECASE)
_IN_TOTAL = re.compile(
    r"\b(?:total|in\s+all|altogether|combined|overall|sum|most\s+(?!expensive|recent|common|frequent|popular|in\b|of\b|on\b|at\b|for\b|to\b|by\b)[a-z]+)\b",
    re.IGNORECASE,
)


ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def by_group(operation: TextOperation, sample: str, task: str) -> TextOperation | None:
    """Where ``task`` asks which group of a CSV table's rows (``sample``: its first lines) adds up to the most or
    the least (``_WHICH``, a word for the most or the least, and one for a total, ``_IN_TOTAL``), that group
    (``csv_group_largest``, ``csv_group_smallest``): TEXT the column added up (the one the pick or the task names
    among the columns of numbers, else the only one), NEW_TEXT the column the group is (the one the question's word
    names; for a day, a month or a year, the one column of dates, with the part after a '|'; for "who", the first
    column of words). The 0.5B model summed a column for "which month had the highest total in sales.csv?", and its
    own code took the row with the largest item name. The busiest (quietest) group is the one with the most (fewest)
    rows (where no column is said), and so is the one with the most of a thing where the table has no column of
    numbers ("the busiest day", "which vet has the most appointments": TEXT ''). None where anything is missing."""
    header, words = csv_header(sample), words_of(task)
    which, busiest = _WHICH.search(words), _BUSIEST.search(words)
    most, least = most_and_least(words, header or [])
    if busiest is not None and not (most or least):
        most, least = (busiest, None) if busiest.group(1).lower() == "busiest" else (None, busiest)
    in_total = _IN_TOTAL.search(words)
    if header is None or (which or busiest) is None or bool(most) == bool(least) or not (in_total or busiest):
        return None
    rows = list(csv.reader(io.StringIO(sample)))[1:]
    cells = [[row[i].strip() for row in rows if len(row) > i and row[i].strip()] for i in range(len(header))]
    numbers = [name for name, column in zip(header, cells, strict=True) if column and all(map(_is_number, column))]
    dates = [name for name, column in zip(header, cells, strict=True) if column and all(map(ISO_DAY.match, column))]
    word = (which.group(1) or which.group(2) if which is not None else busiest.group(2) if busiest else "").lower()
    group = next((name for name in header if name.strip().lower() in {word, f"{word}s", word.rstrip("s")}), None)
    if group is None and word in DATE_PARTS and len(dates) == 1:
        group = f"{dates[0]}|{word}"
    if group is None and word == "who":
        group = next((name for name in header if name not in numbers and name not in dates), None)
    added = [name for name in numbers if name != group.split("|")[0]] if group else []
    said = [name for name in added if says(words, name.strip())]
    named = _column_named(added, operation.text)
    value = named or (said[0] if len(said) == 1 else added[0] if len(added) == 1 else None)
    most_of = in_total is not None and in_total.group().lower().startswith("most ")
    if (busiest and not said) or (value is None and not said and most_of):
        value = ""  # "the busiest day", "which vet has the most appointments": how many rows each group has
    if group is None or value is None:
        return None
    apart = {*numbers, group.split("|")[0]}  # a value of another column: rows kept ("the most croissants")
    if _a_cell_said(words, [column for name, column in zip(header, cells, strict=True) if name not in apart]):
        return None
    return TextOperation(op="csv_group_largest" if most else "csv_group_smallest", text=value, new_text=group)


def _a_cell_said(words: str, columns: list[list[str]]) -> bool:
    """Whether ``words`` say a value (of three letters or more; plural too) of one of ``columns`` (each its cells):
    rows the task keeps, which no group of all of them answers ("Who ordered the most croissants?": the 1.5B model's
    pick became the customer with the most rows, whatever they ordered)."""
    cells = {cell for column in columns for cell in column if len(cell) > 2}
    return any(says(words, cell) or says(words, f"{cell}s") or says(words, f"{cell}es") for cell in cells)


#: a count of different values: "how many different customers", "the number of unique cities"
_DIFFERENT = re.compile(r"\b(?:different|distinct|unique|separate)\s+([a-z]+)", re.IGNORECASE)


def distinct_count(sample: str, task: str) -> TextOperation | None:
    """How many different values the column of a CSV table (``sample``: its first lines) that ``task`` asks about
    holds (``csv_count_distinct``), where it asks how many different, distinct or unique things there are and names
    one column by that word (singular or plural) or says only one; else None. The 0.5B model counted the word
    'customer' for "How many different customers are there in wholesale_orders.csv?"."""
    header, words = csv_header(sample), words_of(task)
    different = _DIFFERENT.search(words)
    if header is None or different is None or not ASKS_A_COUNT.search(words):
        return None
    word = different.group(1).lower()
    named = [name for name in header if name.strip().lower() in {word, word.rstrip("s"), word.removesuffix("es")}]
    said = _columns_said(header, words)
    column = named[0] if len(named) == 1 else said[0] if len(said) == 1 else None
    return None if column is None else TextOperation(op="csv_count_distinct", text=column)


def _column_named(header: list[str], text: str) -> str | None:
    """The column of ``header`` that ``text`` names, as the header spells it (case and outer spaces aside)."""
    return next((name for name in header if name.strip().lower() == text.strip().lower()), None)


def _columns_said(header: list[str], words: str) -> list[str]:
    """The columns of ``header`` that ``words`` (a task's, without its paths) say, in the header's order."""
    return [name for name in header if name.strip() and says(words, name.strip())]


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
