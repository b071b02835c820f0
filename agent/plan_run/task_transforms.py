"""What a task says to do to its input's text, read as a check of the output (issue 28: fewer results nobody checks).

``agent.plan_run.task_checks`` finds the task's one output and its inputs (read before the run); this module reads
the task's words for what the output must then hold. Each rule is small and named, and conservative: it reads only
wording whose expectation is unambiguous, and makes no check where a reading would be a guess ("sort by age",
"lines with errors", "merge" without an order, "upper-case words"). Lines are compared stripped, blank lines aside,
as a person reading the file would. The rules:

- ``in upper case`` / ``in lower case`` (also "to uppercase", "in capital letters", "Uppercase the text of X"):
  the output is the input's lines, case changed; with no input, or with another rule too, it has no letter of the
  other case;
- ``the lines of X that contain WORD`` (also "lines with WORD", "containing", "that start with", "that end with";
  WORD quoted, or a word in capitals such as ERROR): like grep, X's lines that match, in order; "count the lines
  of X that ..." with just the number: how many there are;
- ``write every TODO comment of X ..., one per line`` (a word in capitals before "comment(s)"): each line of the
  output is one of them, from its comment mark or from the word on; "count the TODO comments in X": how many
  lines hold the word;
- ``sort ... alphabetically`` / ``in alphabetical order`` (also "sort the lines of X"; "ignoring case", "in reverse"):
  the output's lines in that order, and X's lines, no more and no fewer;
- ``remove the duplicate lines of X`` / ``the unique lines of X`` / ``without duplicates``: no line twice; X's lines
  (each once; "keeping the first ... in order": in X's order);
- ``reverse the order of the lines of X`` / ``the lines of X in reverse order``: X's lines, last first;
- ``replace 'A' with 'B' in X``: X's text with every A made B;
- ``append the line 'L' to X``: X's lines as they were, then L;
- ``the first line is 'L'`` (also "starts with the line 'L'"): the output's first non-empty line;
- ``concatenate X and Y`` / ``merge X and Y (X first, then Y)``: X's lines, then Y's;
- ``the KEY of every ITEM in X.json`` (KEY a key of every object of X's list): those values, one per line;
- ``convert X.csv to a markdown table`` (also "X.csv as a markdown table"): X's header (case aside) and rows;
- ``list the files in DIR/ ... one per line`` (DIR with no directory in it): their names, in any order.

A filter said in the negative ("not", "except", "without") or "ignoring case" is not read.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from agent.plan_run.criteria import CriterionStatus

__all__ = [
    "Listing",
    "TextRule",
    "changes_case",
    "counted_files",
    "counted_matches",
    "named_dirs",
    "these_lines",
    "transform_checks",
]

Verdict = tuple[CriterionStatus, str]  # met / not met, and what omx saw

_IGNORING_CASE = re.compile(r"\b(?:ignoring|regardless\s+of)\s+(?:the\s+)?case\b|\bcase[\s-]insensitive", re.I)
_WORD = (
    r"(?:the\s+(?:word|text|string)\s+)?(?:'(?P<q1>[^']+)'|\"(?P<q2>[^\"]+)\"|`(?P<q3>[^`]+)`|(?P<caps>[A-Z][A-Z_]+\b))"
)
_CLAUSE = r"(?:[^;.]|\.(?=\w))*?"  # within one sentence: a file name's dot is no full stop
_P = r"(?:[\w.-]+/)*[\w-][\w.-]*\.\w{1,8}"  # a file's path
_MATCHING = re.compile(
    rf"\blines\b{_CLAUSE}\b(?:that|which)?\s*(?P<how>contain|contains|containing|with|start\s+with|starts\s+with|"
    rf"starting\s+with|begin\s+with|begins\s+with|beginning\s+with|end\s+with|ends\s+with|ending\s+with)\s+{_WORD}"
)
# "the lines that do not contain X", "except", "without": the other lines; not read
_NEGATED = re.compile(r"\b(?:not|never|except|without|excluding)\b|n't\b", re.I)
_TAKES_WITH = re.compile(
    r"\b(?:prefix|suffix|number|replace|pad|indent|wrap|surround|join|annotate|tag|mark|fill|label|precede|follow|"
    rf"separate|end|start|begin|combine|merge|concatenate)\w*\b{_CLAUSE}\blines\b",
    re.I,
)
# the input's own text changed in case ("the text of X", "copy X", "uppercase the lines of X"); not a summary of it
_WHOLE_TEXT = re.compile(
    r"\b(?:(?:the\s+(?:whole\s+)?(?:text|lines|contents?)\s+of)|convert|copy|turn|rewrite|upper-?case|lower-?case|"
    rf"capitali[sz]e)\s+(?:the\s+(?:whole\s+)?(?:text|lines|contents?)\s+of\s+)?`?{_P}",
    re.I,
)
_COMMENTS = re.compile(r"\b(?P<word>[A-Z]{2,})\s+comments?\b")
# the comments written out as they are ("describe the TODO comments" is not), one to a line (not grouped under
# headings of the model's own)
_WRITE_COMMENTS = re.compile(
    r"\b(?:write|collect|list|copy|extract|gather|find|put)\s+(?:out\s+)?(?:every|each|all(?:\s+the)?|the)\s+"
    r"[A-Z]{2,}\s+comments?\b",
    re.I,
)
_ONE_PER_LINE = re.compile(r"\bone\s+(?:per|a|to\s+a|on\s+each)\s+line\b|\beach\s+on\s+(?:its\s+own|a)\s+line\b", re.I)
_UPPER = re.compile(
    r"\b(?:in|to|into)\s+(?:all\s+)?(?:upper[\s-]?case|capital\s+letters|capitals|all\s+caps)\b|"
    r"^\s*(?:upper[\s-]?case|capitali[sz]e)\s+(?:the|all|every)\b",
    re.I,
)
_LOWER = re.compile(r"\b(?:in|to|into)\s+(?:all\s+)?lower[\s-]?case\b|^\s*lower[\s-]?case\s+(?:the|all|every)\b", re.I)
_SORT = re.compile(
    rf"\b(?:sort|sorted|sorting)\b{_CLAUSE}\balphabetical(?:ly)?\b|\bin\s+(?:reverse\s+)?alphabetical\s+order\b|"
    rf"\balphabetically\b{_CLAUSE}\bsort|\bsort\s+(?:the\s+lines\s+(?:of|in)\s+)?`?{_P}`?(?!\s+by\b)",
    re.I,
)
_SORT_BY = re.compile(rf"\bsort(?:ed)?\b{_CLAUSE}\bby\s+(?!name\b|alphabet)", re.I)  # by age, by size: not checked
# what is sorted (or made unique) is the input's lines: "sort data/names.txt", "the duplicate lines of X"
_OF_LINES = re.compile(
    rf"\bsort\s+(?:the\s+lines\s+(?:of|in)\s+)?`?{_P}|\b(?:duplicate|unique)\s+lines\b|\bde-?dup", re.I
)
_DESCENDING = re.compile(r"\b(?:reverse|descending|z\s+to\s+a)\b", re.I)
_UNIQUE = re.compile(
    r"\b(?:remove|drop|delete)\s+(?:the\s+|all\s+|any\s+)?duplicate(?:d)?\s+lines\b|\bunique\s+lines\b|"
    r"\bwithout\s+(?:any\s+)?duplicates?\b|\bde-?dup(?:e|licate)\b",
    re.I,
)
_IN_ORDER = re.compile(r"\b(?:in\s+(?:their|the\s+same|the\s+original|order)|keeping\s+the\s+first)\b", re.I)
_REVERSE = re.compile(
    rf"\breverse\s+(?:the\s+)?(?:order\s+of\s+(?:the\s+)?)?lines\b|\blines\b{_CLAUSE}\bin\s+reverse(?:d)?\s+order\b",
    re.I,
)
_QUOTED = r"(?:'([^']+)'|\"([^\"]+)\"|`([^`]+)`)"
_REPLACE = re.compile(rf"\breplace\s+(?:every|each|all|all\s+the)?\s*{_QUOTED}\s+(?:with|by)\s+{_QUOTED}", re.I)
_APPEND = re.compile(rf"\b(?:append|add)\s+(?:the\s+|a\s+)?line\s+{_QUOTED}\s+(?:to|at\s+the\s+end\s+of)\b", re.I)
# "starts with 'x'" alone may be said of lines to pick ("the lines that start with 'import'"): the line is named
_FIRST_LINE = re.compile(
    rf"\b(?:the\s+first\s+line\s+(?:is|reads|must\s+be|should\s+be)|(?:starts|begins|starting)\s+with\s+the\s+line)"
    rf"\s+{_QUOTED}",
    re.I,
)
_CONCAT = re.compile(rf"\b(?:concatenate|join)\s+`?(?P<a>{_P})`?\s+and\s+`?(?P<b>{_P})`?(?![\w/])", re.I)
_MERGE = re.compile(rf"\bmerge\s+`?(?P<a>{_P})`?\s+and\s+`?(?P<b>{_P})`?{_CLAUSE}\bfirst\b{_CLAUSE}\bthen\b", re.I)
# the input itself as a table: "convert X.csv to a markdown table", "X.csv as a markdown table" (not "a markdown
# table of the totals in X.csv": its rows are the model's own)
_CSV_TABLE = re.compile(
    rf"\b(?:(?:convert|turn|render|format|rewrite|write)\s+`?(?P<a>{_P})`?\s+(?:in)?to|`?(?P<b>{_P})`?\s+as)\s+"
    r"(?:a\s+)?markdown\s+table\b",
    re.I,
)
_JSON_KEY = re.compile(
    r"\bthe\s+(?P<key>\w+)\s+of\s+(?:every|each|all(?:\s+the)?)\s+\w+?\s+in\s+`?(?P<input>\S+\.json)`?"
)


@dataclass(frozen=True)
class TextRule:
    """One thing the task says the output holds: ``criterion`` in words (without the output's name), ``judge``;
    ``exact``: only one text meets it (``task_checks.ContentCheck.exact``)."""

    criterion: str
    judge: Callable[[str], Verdict]
    exact: bool = True


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _quoted(match: re.Match[str], first: int) -> str:
    return next(g for g in match.groups()[first : first + 3] if g is not None)


def _shown(lines: list[str]) -> str:
    return repr(lines[:4])[:-1] + (", ...]" if len(lines) > 4 else "]")


def these_lines(wanted: list[str]) -> Callable[[str], Verdict]:
    """The output's lines are ``wanted``, in order; what differs first is what it says."""

    def judge(text: str) -> Verdict:
        held = _lines(text)
        if held == wanted:
            return "met", f"the {len(wanted)} line{'s' if len(wanted) != 1 else ''} expected"
        if len(held) != len(wanted):
            return "not met", f"{len(held)} non-empty lines {_shown(held)}, not {len(wanted)}"
        first = next(i for i, (a, b) in enumerate(zip(held, wanted, strict=True)) if a != b)
        return "not met", f"line {first + 1} is {held[first]!r}, not {wanted[first]!r}"

    return judge


def _same_lines(wanted: list[str]) -> Callable[[str], Verdict]:
    """The output's lines are ``wanted`` in any order (each as often)."""

    def judge(text: str) -> Verdict:
        held = _lines(text)
        if sorted(held) == sorted(wanted):
            return "met", f"the {len(wanted)} lines expected"
        extra = [line for line in held if line not in wanted]
        if extra:
            return "not met", f"{extra[0]!r} is not one of them"
        missing = [line for line in wanted if line not in held]
        if missing:
            return "not met", f"{missing[0]!r} is missing"
        return "not met", f"{len(held)} lines, not {len(wanted)}"

    return judge


def _no_letters(lower: bool) -> Callable[[str], Verdict]:
    def judge(text: str) -> Verdict:
        wrong = [c for c in text if (c.isupper() if lower else c.islower())]
        case = "upper" if lower else "lower"
        return ("not met", f"it has {case}-case letters ({''.join(wrong[:10])!r})") if wrong else ("met", "no " + case)

    return judge


def _in_order(key: Callable[[str], str], descending: bool, against: list[str] | None) -> Callable[[str], Verdict]:
    def judge(text: str) -> Verdict:
        held = _lines(text)
        if against is not None and sorted(held) != sorted(against):
            return _same_lines(against)(text)
        ordered = sorted(held, key=key, reverse=descending)
        if [key(line) for line in held] != [key(line) for line in ordered]:
            first = next(i for i, (a, b) in enumerate(zip(held, ordered, strict=True)) if key(a) != key(b))
            return "not met", f"line {first + 1} is {held[first]!r}, out of order"
        return "met", f"{len(held)} lines in order"

    return judge


def _sort_checks(task: str, source: list[str] | None) -> list[TextRule]:
    if not _SORT.search(task) or _SORT_BY.search(task):
        return []
    source = source if _OF_LINES.search(task) else None  # "sort the names in X.json": not X's lines
    descending = _DESCENDING.search(task) is not None
    how = " in reverse" if descending else ""
    if _IGNORING_CASE.search(task):
        key, said = str.casefold, f"sorted alphabetically ignoring case{how}"
    else:  # "alphabetically" alone: either order of capitals is how a person sorts; both are taken
        key, said = str.casefold, f"sorted alphabetically{how}"
        plain = _in_order(str, descending, source)
        folded = _in_order(str.casefold, descending, source)

        def either(text: str) -> Verdict:
            verdict = plain(text)
            return verdict if verdict[0] == "met" else folded(text)

        return [TextRule(f"holds {'the lines of the input' if source else 'lines'} {said}", either)]
    return [
        TextRule(f"holds {'the lines of the input' if source else 'lines'} {said}", _in_order(key, descending, source))
    ]


def _unique_checks(task: str, source: list[str] | None) -> list[TextRule]:
    if not _UNIQUE.search(task):
        return []
    source = source if _OF_LINES.search(task) else None  # "the names in X.json without duplicates": not X's lines
    if source is None:

        def no_twice(text: str) -> Verdict:
            held = _lines(text)
            twice = [line for i, line in enumerate(held) if line in held[:i]]
            return ("not met", f"{twice[0]!r} is there twice") if twice else ("met", f"{len(held)} distinct lines")

        return [TextRule("has no line twice", no_twice)]
    once = list(dict.fromkeys(source))
    if _IN_ORDER.search(task):
        return [TextRule("holds the input's lines, each once, in order", these_lines(once))]
    return [TextRule("holds the input's lines, each once", _same_lines(once))]


def _matches(how: str, word: str, line: str) -> bool:
    if how.startswith(("start", "begin")):
        return line.strip().startswith(word)
    if how.startswith("end"):
        return line.strip().endswith(word)
    return word in line


def counted_matches(task: str, source: str) -> tuple[str, int] | None:
    """Of a count the task asks for of ``source``'s lines that match a word (``count the lines of X that start with
    'import'``, ``count the TODO comments in X``): what is counted, and how many; None where it says no such word."""
    if _NEGATED.search(task):
        return None
    matching = _matching(task) if not _IGNORING_CASE.search(task) else None
    if matching is not None:
        word, how = matching
        count = sum(1 for line in source.splitlines() if _matches(how, word, line))
        return f"lines that {_verb(how)} {word!r}", count
    comments = _COMMENTS.search(task)
    if comments:
        word = comments.group("word")
        return f"{word} comments", sum(1 for line in source.splitlines() if word in line)
    return None


def _matching(task: str) -> tuple[str, str] | None:
    """The word the lines the task picks hold, and how ("contain", "start with", ...); None where it picks none, or
    "with" follows a verb that takes it ("prefix the lines of X with '> '", "number the lines with '1. '")."""
    match = _MATCHING.search(task)
    if match is None:
        return None
    how = " ".join(match.group("how").split())
    if how == "with" and _TAKES_WITH.search(task):
        return None
    return match.group("q1") or match.group("q2") or match.group("q3") or match.group("caps"), how


def _verb(how: str) -> str:
    if how.startswith(("start", "begin")):
        return "start with"
    if how.startswith("end"):
        return "end with"
    return "contain"


def _comment_forms(line: str, word: str) -> set[str]:
    """How a comment of ``line`` holding ``word`` may be written out: from its comment mark (``# TODO: x``) or from
    the word (``TODO: x``); the code before it is not the comment."""
    at = line.index(word)
    marks = [line.rfind(mark, 0, at) for mark in ("#", "//", "--", "/*", ";", "<!--")]
    forms = {line[at:].strip()}
    if max(marks) >= 0:
        forms.add(line[max(marks) :].strip())
    return forms


def _grep_checks(task: str, source: str | None) -> list[TextRule]:
    if _IGNORING_CASE.search(task) or _NEGATED.search(task) or re.search(r"\bcount\b", task, re.I):
        return []
    matching = _matching(task)
    if matching is not None:
        word, how = matching
        if source is None:

            def every_line(text: str) -> Verdict:
                other = [line for line in _lines(text) if not _matches(how, word, line)]
                return ("not met", f"{other[0]!r} does not {_verb(how)} {word!r}") if other else ("met", "every one")

            return [TextRule(f"has only lines that {_verb(how)} {word!r}", every_line)]
        wanted = [line for line in _lines(source) if _matches(how, word, line)]
        return [TextRule(f"holds the input's lines that {_verb(how)} {word!r}", these_lines(wanted))]
    comments = _COMMENTS.search(task)
    if comments and source is not None and _WRITE_COMMENTS.search(task) and _ONE_PER_LINE.search(task):
        word = comments.group("word")
        forms = [_comment_forms(line, word) for line in _lines(source) if word in line]

        def each_comment(text: str) -> Verdict:
            held, left = _lines(text), list(forms)
            for line in held:
                found = next((i for i, accepted in enumerate(left) if line in accepted), None)
                if found is None:
                    return "not met", f"{line!r} is not one of the {word} comments ({len(held)} lines)"
                del left[found]
            if left:
                return "not met", f"{sorted(left[0])[0]!r} is missing"
            return "met", f"the {len(forms)} {word} comments"

        return [TextRule(f"holds each {word} comment of the input on its own line", each_comment)]
    return []


def _case_checks(task: str, source: list[str] | None) -> list[TextRule]:
    """The input's lines in the case the task says; with no input (or another rule picking the lines), no letter of
    the other case."""
    for pattern, lower in ((_UPPER, False), (_LOWER, True)):
        if pattern.search(task):
            case = "lower" if lower else "upper"
            if source is not None:
                changed = [line.lower() if lower else line.upper() for line in source]
                return [TextRule(f"holds the input's lines in {case} case", these_lines(changed))]
            return [TextRule(f"has no {'upper' if lower else 'lower'}-case letter", _no_letters(lower))]
    return []


def _json_values(task: str, read: Callable[[str], str | None]) -> list[TextRule]:
    match = _JSON_KEY.search(task)
    text = read(match.group("input")) if match else None
    if match is None or text is None:
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    key = match.group("key")
    if isinstance(data, dict) and len(data) == 1:  # {"users": [...]}
        data = next(iter(data.values()))
    if not isinstance(data, list) or not data or not all(isinstance(item, dict) and key in item for item in data):
        return []  # the word after "the" is not a key of every item: no reading without a guess
    values = [item[key] for item in data]
    if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values):
        return []
    wanted = [str(v).strip() for v in values]
    return [TextRule(f"holds the {key} of each item of {match.group('input')}, one per line", _same_lines(wanted))]


def _table_rows(text: str) -> list[list[str]]:
    """The rows of the markdown table in ``text``, each a list of its cells (stripped), the |---| row left out."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in _lines(text) if "|" in line]
    return [row for row in rows if not all(re.fullmatch(r":?-{3,}:?", cell) for cell in row)]


def _csv_table(task: str, read: Callable[[str], str | None]) -> list[TextRule]:
    match = _CSV_TABLE.search(task)
    name = (match.group("a") or match.group("b")) if match else None
    text = read(name) if name and name.lower().endswith(".csv") else None
    if name is None or text is None:
        return []
    wanted = [[cell.strip() for cell in row] for row in csv.reader(io.StringIO(text)) if any(c.strip() for c in row)]
    if not wanted:
        return []

    def judge(text: str) -> Verdict:
        held = _table_rows(text)
        if not held:
            return "not met", "no table rows in it"
        if [cell.casefold() for cell in held[0]] != [cell.casefold() for cell in wanted[0]]:  # "Name" for "name"
            return "not met", f"its header is {held[0]!r}, not {wanted[0]!r}"
        if held[1:] != wanted[1:]:
            return "not met", f"its rows are {held[1:4]!r}, not {wanted[1:4]!r}" + ("..." if len(wanted) > 4 else "")
        return "met", f"the header and the {len(wanted) - 1} rows of {name}"

    return [TextRule(f"holds the header and the rows of {name}", judge, exact=False)]  # a model's table is as good


_DIR = r"`?(?P<dir>(?:[\w.-]+/)+)`?"  # a directory, named with its final slash: data/, src/lib/
_LIST_FILES = re.compile(rf"\b(?:list|names?\s+of)\s+(?:all\s+|every\s+)?(?:the\s+)?files\s+in\s+{_DIR}", re.I)
_COUNT_FILES = re.compile(
    rf"\bcount\s+(?:the\s+)?(?:number\s+of\s+)?(?:(?P<ext>\.\w{{1,8}})\s+)?files\s+in\s+{_DIR}", re.I
)

#: a directory before the run: its own files' names, and everything below it (relative; a directory as "sub/")
Listing = Callable[[str], tuple[list[str], list[str]] | None]


def named_dirs(task: str) -> list[str]:
    """The directories a task lists or counts the files of."""
    return [m.group("dir") for pattern in (_LIST_FILES, _COUNT_FILES) for m in pattern.finditer(task)]


def counted_files(task: str, listing: Listing) -> tuple[str, set[int]] | None:
    """Of "count the .py files in src/": what is counted, and how many there are (its own, or all below it: the
    task says not which); None where it counts no directory's files, or the directory is not there."""
    match = _COUNT_FILES.search(task)
    files = listing(match.group("dir")) if match else None
    if match is None or files is None:
        return None
    ext = match.group("ext")
    own, below = ([name for name in names if name.endswith(ext or "") and not name.endswith("/")] for names in files)
    return f"{ext + ' ' if ext else ''}files in {match.group('dir')}", {len(own), len(below)}


def _listed_files(task: str, listing: Listing) -> list[TextRule]:
    match = _LIST_FILES.search(task)
    files = listing(match.group("dir")) if match and _ONE_PER_LINE.search(task) else None
    if match is None or files is None or files[0] != files[1]:
        return []  # a directory with directories in it: its files, or everything below it, or its entries?
    folder, names = match.group("dir"), files[0]

    def judge(text: str) -> Verdict:
        held = [line.removeprefix(folder) for line in _lines(text)]  # "data/a.txt" names a.txt as well
        return _same_lines(names)("\n".join(held))

    return [TextRule(f"holds the names of the files in {folder}, one per line", judge)]


def transform_checks(
    task: str,
    source_name: str | None,
    read: Callable[[str], str | None],
    output_before: str | None,
    listing: Listing = lambda _: None,
    picked: bool = False,
) -> list[TextRule]:
    """What ``task`` says its one output holds, from what it says to do to its input ``source_name`` (the one file
    it names besides the output, read before the run by ``read``) or to the output itself (``output_before``: the
    output's text before the run, where the task changes a file in place). ``picked``: the caller checks the lines
    the output holds already (``the first N lines of X``).

    Two things done to the input ("the lines with ERROR, sorted", "the first 3 lines in upper case") make an output
    no rule alone foresees: then each rule checks only what holds whatever else was done (no line twice, lines in
    order, no lower-case letter, every line with the word), not the input's lines themselves."""
    source_text = read(source_name) if source_name else None
    rules = _input_rules(task, source_text, read, output_before, listing)
    alone = not rules and not picked and _WHOLE_TEXT.search(task) is not None  # the case is all that is done to it
    if len(rules) + picked > 1 or (not alone and changes_case(task)):
        rules = _input_rules(task, None, lambda _: None, None, lambda _: None)
    rules += _case_checks(task, _lines(source_text) if source_text is not None and alone else None)
    first_line = _FIRST_LINE.search(task)
    if first_line:
        wanted = _quoted(first_line, 0).strip()

        def starts(text: str) -> Verdict:
            held = _lines(text)
            if held and held[0] == wanted:
                return "met", f"it starts with {wanted!r}"
            return "not met", f"it starts with {held[0][:40]!r}" if held else "it is empty"

        rules.append(TextRule(f"starts with the line {wanted!r}", starts, exact=False))  # the rest may be prose
    return rules


def changes_case(task: str) -> bool:
    """Whether the task says to write its output in upper or lower case."""
    return _UPPER.search(task) is not None or _LOWER.search(task) is not None


def _input_rules(
    task: str, source_text: str | None, read: Callable[[str], str | None], output_before: str | None, listing: Listing
) -> list[TextRule]:
    """The rules of what is done to the input's lines; with no input (``source_text`` None, nothing to ``read``),
    only what holds of the output whatever the input was."""
    source = _lines(source_text) if source_text is not None else None
    rules: list[TextRule] = []
    rules += _grep_checks(task, source_text)
    rules += _sort_checks(task, source)
    rules += _unique_checks(task, source)
    reverse = _REVERSE.search(task)
    if reverse and source is not None and not _SORT.search(task):
        rules.append(TextRule("holds the input's lines in reverse order", these_lines(source[::-1])))
    replace = _REPLACE.search(task)
    if replace and source_text is not None:
        old, new = _quoted(replace, 0), _quoted(replace, 3)
        rules.append(TextRule(f"holds the input with every {old!r} made {new!r}",
                              these_lines(_lines(source_text.replace(old, new)))))  # fmt: skip
    append = _APPEND.search(task)
    if append and output_before is not None:
        line = _quoted(append, 0)
        rules.append(
            TextRule(f"holds its lines as they were, then {line!r}", these_lines([*_lines(output_before), line]))
        )
    joined = _CONCAT.search(task) or _MERGE.search(task)
    if joined:
        first, second = read(joined.group("a")), read(joined.group("b"))
        if first is not None and second is not None:
            both = f"{joined.group('a')}'s lines, then {joined.group('b')}'s"
            rules.append(TextRule(f"holds {both}", these_lines(_lines(first) + _lines(second))))
    rules += _json_values(task, read)
    rules += _csv_table(task, read)
    rules += _listed_files(task, listing)
    return rules
