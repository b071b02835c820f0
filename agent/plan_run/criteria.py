"""A plan's success criteria, checked by omx itself on the files the run wrote, or honestly reported as not checked.

A criterion is written by the model in English, so omx checks only the ones it can read without guessing: the
whole criterion (lower case, a final full stop dropped) must be one of the patterns below, about one file the run
wrote with ``write_text`` (named by its path in the workspace, e.g. ``out/summary.md``, or by its absolute path).
Anything else is "not checked", never "met": a criterion judged by the file merely existing is how a wrong result
was called a success. Numbers mean exactly that number unless "at least" / "at most" (or "no more than",
"no fewer than") says otherwise; "3" and "three" are the same. Text in quotes ("...", '...', `...`, “...”) is
matched exactly, case included.

Patterns (FILE the file's path, N a number, TEXT quoted text; "has" may also be "contains", "holds", "includes"):

- ``FILE exists`` (or "is created", "is written", "was written", "is present")
- ``FILE has N lines`` (non-empty lines; also "N non-empty lines")
- ``FILE has N bullet lines`` (also "N bullets", "N bullet points"; lines that start with "- ", "* ", "+ " or "• ")
- ``FILE has "TEXT"`` (also "the text/word/string "TEXT"")
- ``FILE has just the number N`` ("only", "exactly"; also ``FILE is N``, ``FILE equals N``): the whole content
- ``FILE has just a number`` (also "only one number"): the whole content is one number, whichever
- ``FILE is a markdown table`` (also "has a markdown table"): a header row, a ``|---|`` row, and rows
- several of these joined by "and" or ";", each part about FILE unless it names another file the run wrote

A part that is checked and not met makes the whole criterion not met; otherwise one part not checked leaves the
whole not checked. A file the plan or the task says the run writes (``meant``) that is nowhere in the workspace
after it (``out/sales.md has 2 bullet lines`` when nothing wrote it) fails every one of these patterns: a claim
about a missing file is false. A missing file no one meant to write is not checked: a criterion copied from the
planner's example names the example's file, and says nothing about this run.

A criterion left "not checked" because omx cannot read its sentence, about one file the run wrote (named, or the
run's only output), is ``judgeable``: ``agent.plan_run.judge`` may ask the model for its judgement of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from agent.plan_run.plan import Plan
from agent.plan_run.tools.inputs import WriteTextInput

__all__ = [
    "BULLET_MARKS",
    "CheckKind",
    "CheckSource",
    "CriterionCheck",
    "CriterionStatus",
    "Judge",
    "check_criteria",
    "check_criterion",
    "markdown_table",
    "planned_outputs",
    "quoted_texts",
]

CriterionStatus = Literal["met", "not met", "not checked"]
Judge = Literal["omx", "model"]  # who decided met / not met: omx's own check, or the model's judgement
# form: the output's shape (it exists, N lines, N bullets, just a number, a table, at most N words); value: the
# content the task asked for (a count, a total, an answer, a transformation's exact result)
CheckKind = Literal["form", "value"]
# where the expectation comes from: the plan's own criterion, omx's reading of the task's words
# (``agent.plan_run.task_checks``), or code this run ran on the task's input (``agent.plan_run.value_checks``)
CheckSource = Literal["plan", "reading", "code"]

MAX_READ = 5_000_000  # a bigger file is not read to check a criterion: not checked

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                 "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}  # fmt: skip
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’|`([^`]+)`|(?<!\w)'([^']+)'(?!\w)")
_HAS = r"(?:has|have|contains|holds|includes|should (?:have|contain)|must (?:have|contain))"
_COUNT = (
    r"(?:(?P<op>exactly|only|just|at least|at most|no more than|no fewer than|no less than) )?"
    rf"(?P<n>\d+|{'|'.join(_NUMBER_WORDS)})"
)
_FILE = "@file@"  # stands for the file's path in a criterion being matched
_SUBJECT = rf"(?:the )?(?:file |output file )?{_FILE}(?: file)?"
BULLET_MARKS = ("- ", "* ", "+ ", "• ")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
# a relative path with a file extension (out/a.md, notes.txt): what a criterion names as a file
_PATH_LIKE = re.compile(r"(?<![\w./-])(?:[\w-]+/)*[\w-]+\.[A-Za-z]\w{0,7}(?![\w/-]|\.\w)")


class CriterionCheck(BaseModel):
    """A success criterion and what omx found: met, not met, or not checked (with what it saw, in ``detail``)."""

    criterion: str
    status: CriterionStatus
    detail: str = ""
    about_content: bool = True  # False: only that a file was written, which alone verifies nothing it holds
    by: Judge = "omx"
    judgeable: bool = False  # not checked, yet about one file the run wrote: the model may judge it
    file: str | None = None  # that file, relative to the workspace, when judgeable
    kind: CheckKind = "form"
    source: CheckSource = "plan"

    @property
    def label(self) -> str:
        """What the summary shows in brackets: a model's judgement never reads as a plain [met], nor omx's reading
        of the task as a check of what the task asked for."""
        if self.by == "model":
            return f"{self.status}, model's judgement"
        return f"{self.status}, omx's reading" if self.source == "reading" else self.status


def check_criteria(
    criteria: list[str], produced: list[Path], workspace: Path, meant: Collection[str] = ()
) -> list[CriterionCheck]:
    """Each criterion checked against the files the run wrote (absolute paths inside ``workspace``); ``meant``: the
    files (relative paths) the plan or the task says the run writes, which a criterion may find missing."""
    return [check_criterion(criterion, produced, workspace, meant) for criterion in criteria]


def quoted_texts(criterion: str) -> list[str]:
    """The texts a criterion quotes to look for (``FILE contains 'TEXT'``), leaving out quoted file names."""
    texts = [next(group for group in match.groups() if group is not None) for match in _QUOTED.finditer(criterion)]
    return [text for text in texts if not _PATH_LIKE.fullmatch(text.strip().removeprefix("./"))]


def planned_outputs(plan: Plan) -> set[str]:
    """The files a plan says it writes: its write_text paths, and each step's ``produces`` that is a path."""
    paths = {step.inputs.path for step in plan.steps if isinstance(step.inputs, WriteTextInput)}
    return paths | {step.produces for step in plan.steps if step.produces and _PATH_LIKE.fullmatch(step.produces)}


def check_criterion(
    criterion: str, produced: list[Path], workspace: Path, meant: Collection[str] = ()
) -> CriterionCheck:
    texts: list[str] = []

    def placeholder(match: re.Match[str]) -> str:
        texts.append(next(group for group in match.groups() if group is not None))
        return f" @text{len(texts) - 1}@ "

    names = {p.relative_to(workspace).as_posix(): p for p in produced} | {str(p): p for p in produced}
    names |= _bare_names(produced, workspace)
    names |= _missing_paths(criterion, workspace, names, meant)
    unquoted = _unquote_paths(re.sub(r"(?<![\w./-])\./", "", criterion.strip()), names)  # ./out/a.md is out/a.md
    sentence = " ".join(_QUOTED.sub(placeholder, unquoted).split()).rstrip(".").strip()
    parts = [part.strip() for part in re.split(r";|,? and (?=\S)", sentence) if part.strip()]
    checks: list[tuple[CriterionStatus, str]] = []
    values = False
    current: Path | None = None
    for part in parts:
        named = {name: path for name, path in names.items() if _names(part, name)}
        if len(set(named.values())) > 1:
            return CriterionCheck(criterion=criterion, status="not checked", detail="it names more than one file")
        if named:
            name, current = next(iter(named.items()))
            part = _replace_name(part, name)
        elif current is not None and not part.startswith(_FILE):
            part = f"{_FILE} {part}"  # "out/a.md exists and has 3 lines": the second part is about out/a.md too
        checks.append(_check_part(part.lower(), current, texts))
        values |= _is_value(part.lower())
    combined = _combine(criterion, checks)
    combined = combined.model_copy(update={"kind": "value"}) if values else combined
    return _judgeable(combined, current, produced, workspace)


def _is_value(part: str) -> bool:
    """Whether a clause states the value a file holds (``FILE is 18``), not its shape: a value of the plan's own,
    which the model wrote, so it verifies nothing the model did not already believe (``agent.plan_run.verdict``)."""
    return any(re.fullmatch(pattern, part) for pattern, check in _PATTERNS if check is _just_number)


def _bare_names(produced: list[Path], workspace: Path) -> dict[str, Path]:
    """A written file by its name alone, where no other written file has that name and the workspace's root holds
    none: the 0.5B model wrote out/upper.txt and claimed "upper.txt exists", which was not met for a missing
    ./upper.txt, and a run done right was reported failed."""
    by_name: dict[str, set[Path]] = {}
    for path in produced:
        by_name.setdefault(path.name, set()).add(path)
    return {
        name: next(iter(paths))
        for name, paths in by_name.items()
        if len(paths) == 1 and not (workspace / name).exists()
    }


def _missing_paths(criterion: str, workspace: Path, names: dict[str, Path], meant: Collection[str]) -> dict[str, Path]:
    """The files a criterion names that the run was meant to write and are not in the workspace at all. A file no
    one meant to write is left alone: a criterion copied from the planner's example names the example's file."""
    missing = {}
    for token in _PATH_LIKE.findall(criterion):
        if token in meant and token not in names and not (workspace / token).exists():
            missing[token] = workspace / token
    return missing


def _judgeable(check: CriterionCheck, named: Path | None, produced: list[Path], workspace: Path) -> CriterionCheck:
    """A criterion omx cannot read, about a file the run wrote (the one it names, or the run's only output)."""
    if check.status != "not checked" or check.detail not in (_NOT_CHECKED[1], _NO_FILE[1]):
        return check
    if named is None and _PATH_LIKE.search(check.criterion):
        return check  # it is about another file (an input the run read, say), not the run's output
    about = named if named is not None else produced[0] if len(set(produced)) == 1 else None
    if about is None or about not in produced or not about.is_file():
        return check
    return check.model_copy(update={"judgeable": True, "file": about.relative_to(workspace).as_posix()})


def _unquote_paths(text: str, names: dict[str, Path]) -> str:
    """`out/a.md` or "out/a.md" is the file's name, not quoted text to look for."""
    for name in names:
        for left, right in (("`", "`"), ('"', '"'), ("'", "'"), ("“", "”")):
            text = text.replace(f"{left}{name}{right}", name)
    return text


def _names(part: str, name: str) -> bool:
    return re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w/-]|\.\w)", part) is not None


def _replace_name(part: str, name: str) -> str:
    return re.sub(rf"(?<![\w./-]){re.escape(name)}(?![\w/-]|\.\w)", _FILE, part)


def _combine(criterion: str, checks: list[tuple[CriterionStatus, str]]) -> CriterionCheck:
    failed = [detail for status, detail in checks if status == "not met"]
    if failed:
        return CriterionCheck(criterion=criterion, status="not met", detail="; ".join(failed))
    if not checks or any(status == "not checked" for status, _ in checks):
        unknown = [d for s, d in checks if s == "not checked"]
        return CriterionCheck(criterion=criterion, status="not checked", detail=unknown[0] if unknown else "")
    # "out/a.md exists" met says nothing of what out/a.md holds: alone it verifies no content (a copied source met
    # it for "write every TODO comment"), so it cannot make a run a success on its own
    about_content = any(detail != _EXISTS for _, detail in checks)
    return CriterionCheck(
        criterion=criterion, status="met", detail="; ".join(d for _, d in checks), about_content=about_content
    )


_EXISTS = "the file exists"
_NOT_CHECKED: tuple[CriterionStatus, str] = ("not checked", "not a check omx can make; look at the file yourself")
_NO_FILE: tuple[CriterionStatus, str] = ("not checked", "it names no file this run wrote")


def _check_part(part: str, path: Path | None, texts: list[str]) -> tuple[CriterionStatus, str]:
    """One clause, ``@file@`` standing for ``path``: the first pattern that matches the whole clause decides."""
    if path is None:
        return _NO_FILE
    for pattern, check in _PATTERNS:
        match = re.fullmatch(pattern, part)
        if match is None:
            continue
        if not path.is_file():
            return "not met", f"{path.name} is missing"
        if check is _exists:
            return "met", _EXISTS
        if path.stat().st_size > MAX_READ:
            return "not checked", f"{path.name} is too big to check"
        content = path.read_text(encoding="utf-8", errors="replace")
        return check(match, content, texts)
    return _NOT_CHECKED


def _number(word: str) -> int:
    return _NUMBER_WORDS[word] if word in _NUMBER_WORDS else int(word)


def _compare(match: re.Match[str], count: int, what: str) -> tuple[CriterionStatus, str]:
    wanted, op = _number(match.group("n")), match.group("op") or "exactly"
    if op in ("at least", "no fewer than", "no less than"):
        ok = count >= wanted
    elif op in ("at most", "no more than"):
        ok = count <= wanted
    else:  # exactly, only, just, or a bare number
        ok = count == wanted
    return ("met" if ok else "not met"), f"{count} {what}"


def _lines(match: re.Match[str], content: str, texts: list[str]) -> tuple[CriterionStatus, str]:
    count = sum(1 for line in content.splitlines() if line.strip())
    return _compare(match, count, "non-empty lines" if count != 1 else "non-empty line")


def _bullets(match: re.Match[str], content: str, texts: list[str]) -> tuple[CriterionStatus, str]:
    count = sum(1 for line in content.splitlines() if line.lstrip().startswith(BULLET_MARKS))
    return _compare(match, count, "bullet lines" if count != 1 else "bullet line")


def _exists(match: re.Match[str], content: str, texts: list[str]) -> tuple[CriterionStatus, str]:
    return "met", _EXISTS


def _a_number(match: re.Match[str], content: str, texts: list[str]) -> tuple[CriterionStatus, str]:
    held = content.strip()
    shown = held if len(held) <= 40 else held[:37] + "..."
    ok = re.fullmatch(r"-?\d+(?:\.\d+)?", held) is not None
    return ("met" if ok else "not met"), f"it holds {shown!r}"


def _contains(match: re.Match[str], content: str, texts: list[str]) -> tuple[CriterionStatus, str]:
    wanted = texts[int(match.group("t"))]
    return ("met", f"it contains {wanted!r}") if wanted in content else ("not met", f"{wanted!r} is not in it")


def _just_number(match: re.Match[str], content: str, texts: list[str]) -> tuple[CriterionStatus, str]:
    wanted, held = float(match.group("num")), content.strip()
    shown = held if len(held) <= 40 else held[:37] + "..."
    try:
        ok = float(held) == wanted
    except ValueError:
        return "not met", f"it holds {shown!r}, not a number"
    return ("met" if ok else "not met"), f"it holds {shown}"


def _table(match: re.Match[str], content: str, texts: list[str]) -> tuple[CriterionStatus, str]:
    found = markdown_table(content)
    return ("met", found) if found else ("not met", "no markdown table (a header row, a |---| row, then rows) in it")


def markdown_table(content: str) -> str | None:
    """The first markdown table in ``content`` (a header row, a ``|---|`` row, then rows), described; else None."""
    lines = [line.strip() for line in content.splitlines()]
    for i in range(len(lines) - 2):
        header, separator = lines[i], lines[i + 1]
        columns = _cells(header)
        if columns > 1 and _TABLE_SEPARATOR.match(separator) and _cells(separator) == columns:
            rows = 0
            for line in lines[i + 2 :]:
                if "|" not in line or not line:
                    break
                rows += 1
            if rows:
                return f"a table of {columns} columns and {rows} row{'s' if rows != 1 else ''}"
    return None


def _cells(line: str) -> int:
    return len(line.strip().strip("|").split("|")) if "|" in line else 0


_PATTERNS: list[tuple[str, Callable[[re.Match[str], str, list[str]], tuple[CriterionStatus, str]]]] = [
    (rf"{_SUBJECT} (?:exists|is (?:created|written|present|produced)|was (?:created|written|produced))", _exists),
    (rf"{_SUBJECT} {_HAS} {_COUNT} (?:non-empty |nonempty )?lines?(?: of text)?", _lines),
    (rf"{_SUBJECT} {_HAS} {_COUNT} (?:bullets?|bullet(?:ed)?[ -](?:lines?|points?|items?))", _bullets),
    (rf"{_SUBJECT} (?:{_HAS}|is) (?:just|only|exactly) (?:the )?(?:number )?(?P<num>-?\d+(?:\.\d+)?)", _just_number),
    (rf"{_SUBJECT} (?:equals|is equal to|is) (?P<num>-?\d+(?:\.\d+)?)", _just_number),
    (rf"{_SUBJECT} (?:{_HAS}|is) (?:just|only|exactly) (?:a|one) (?:single )?number", _a_number),
    (rf"{_SUBJECT} {_HAS} (?:the (?:text|word|string|line|phrase) )?@text(?P<t>\d+)@", _contains),
    (rf"{_SUBJECT} (?:is|{_HAS}) (?:formatted as )?(?:a |one )?(?:valid )?(?:markdown|md) table", _table),
]
