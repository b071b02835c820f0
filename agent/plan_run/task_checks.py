"""Checks omx derives from the task itself, whatever criteria the plan wrote (success means checked).

A small model copies the planner's example criteria into unrelated tasks ("has 3 bullet lines" for a line count)
or writes criteria a wrong result meets ("has 1 line"). What the person asked for is in the task, so where the
task says it in a form that can be read without guessing, omx checks it on its own. These rules are one of two
readings: the model reads the task too (``agent.plan_run.task_reading``), and with its reading omx keeps only what
both say (the outputs, each check below); without one (its request failed), the rules' reading alone:

- the **output files**: a path the task names after "to" or "into" (``... write just the number to out/n.txt``,
  ``Append the line 'bread' to data/list.txt``), or after "in" when it did not exist before the run (``... in
  out/changes.md``; ``the TODO comments in src/app.py`` names an input). Each must have been written by this run:
  it exists after it, and did not before or changed;
- with exactly one output file, what the task says of its content: ``N bullets`` / ``N bullet points`` (one N in
  the task, or the one in brackets that sums up others: "one bullet each (2 bullets)"), ``just the number`` (also
  "the sum", "the result"), ``at most N words``, ``one line``, ``a markdown table``; and where the task names the
  input it is about (read before the run, while it is as the person meant it): ``count the lines of X`` /
  ``count the words in X`` with "just the number" (the number must be X's count: its lines, or its non-empty lines
  where X has blank ones), ``count the lines of X that start with 'import'`` / ``count the TODO comments in X``
  (the lines that match), ``count the .py files in DIR/`` (DIR's own, or all below it), ``the first N lines of X``
  (X's first N lines, in order);
- what the task says to do to its input (upper case, sort, unique, reverse, the lines with a word, every TODO
  comment, replace, append, the first line, concatenate, a JSON key, a CSV file as a table, a directory's files
  one per line): ``agent.plan_run.task_transforms``.

Each check is labelled "(from the task)" beside the plan's own criteria; the result is "success" only when all of
them, and the plan's, were checked and met. What the task says of the output's shape (N bullets, just the number,
at most N words, one line) is also how the llm step that writes it is asked (``agent.plan_run.output_shape``).

A plan's criterion that names a number the task never said, or quotes a text neither the task nor its files say
(``FILE contains 'Summary'``), is the plan's own claim: ``TaskExpectations.vet`` leaves it not checked.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.plan_run.criteria import (
    BULLET_MARKS,
    MAX_READ,
    CheckKind,
    CriterionCheck,
    CriterionStatus,
    markdown_table,
    quoted_texts,
)
from agent.plan_run.output_shape import OutputShape, shape_of
from agent.plan_run.task_reading import FILE_PATH, Says, TaskReading, agree
from agent.plan_run.task_transforms import (
    Listing,
    changes_case,
    counted_files,
    counted_matches,
    named_dirs,
    these_lines,
    transform_checks,
)

__all__ = ["FROM_THE_TASK", "ContentCheck", "TaskExpectations", "told"]

#: the label of a check omx derived from the task's own words, beside the plan's criteria
FROM_THE_TASK = " (from the task)"

_PATH = rf"(?P<path>{FILE_PATH})"
_AFTER_TO = re.compile(rf"\b(?:to|into)\s+(?:the\s+file\s+)?`?{_PATH}")
_AFTER_IN = re.compile(rf"\bin\s+`?{_PATH}")
_NUMBER = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_BULLETS = re.compile(rf"\b{_NUMBER}\s+bullet(?:s|\s+points?|ed\s+lines?)?\b", re.IGNORECASE)
_JUST_NUMBER = re.compile(r"\b(?:just|only)\s+the\s+(?:number|sum|result|count|total)\b", re.IGNORECASE)
_AT_MOST_WORDS = re.compile(rf"\bat\s+most\s+{_NUMBER}\s+words\b", re.IGNORECASE)
_ONE_LINE = re.compile(r"\b(?:as\s+one|a\s+one-line|a\s+single)\s+line\b|\bone-line\b", re.IGNORECASE)
_TABLE = re.compile(r"\bmarkdown\s+table\b", re.IGNORECASE)
# a question whose answer is the output: a value, not prose of a shape
_ASKS_VALUE = re.compile(
    r"\bhow\s+many\b|\bthe\s+answer\b|\bwhat\s+is\s+the\s+(?:total|sum|average|mean|count|number|product)\b",
    re.IGNORECASE,
)
_INPUT = r"`?(?P<input>(?:[\w.-]+/)*[\w-][\w.-]*\.\w{1,8})(?![\w/])"
_COUNT_OF = re.compile(
    rf"\bcount\s+(?:the\s+)?(?:number\s+of\s+)?(?P<what>lines|words)\s+(?:of|in)\s+(?:the\s+file\s+)?{_INPUT}",
    re.IGNORECASE,
)
# "count the lines of X that ..." / "... with ERROR": some of X's lines, not all of them
_FILTERED = re.compile(
    r"`?\s*(?:that|which|with|containing|starting|ending|where|matching|having|in\s+which|whose)\b", re.IGNORECASE
)
_TOTAL_BULLETS = re.compile(rf"\(\s*{_NUMBER}\s+bullet(?:s|\s+points?)\s*(?:in\s+all\s*)?\)", re.IGNORECASE)
_NAMED = re.compile(rf"`?{_PATH}")
_FIRST_LINES = re.compile(rf"\bfirst\s+{_NUMBER}\s+lines\s+of\s+(?:the\s+file\s+)?{_INPUT}", re.IGNORECASE)

Verdict = tuple[CriterionStatus, str]


@dataclass(frozen=True)
class ContentCheck:
    """One thing the task says of its output's content: ``criterion`` in words, ``judge`` on the file's text;
    ``exact``: only one text meets it (a count, the input's lines picked or changed), not only a shape (N bullets, at
    most N words, one line, a table, a first line), so the work is code's, not a model's prose."""

    criterion: str
    judge: Callable[[str], Verdict]
    exact: bool = True
    says: Says = "input"  # what of the task it reads: how the output follows from the input, or one shape
    number: int | None = None  # the N of N bullets or at most N words

    def agrees_with(self, reading: TaskReading) -> bool:
        """Whether the model read the task the same way (``agent.plan_run.task_reading``)."""
        return agree(self.says, self.number, reading)

    def on(self, target: Path) -> Verdict:
        if not target.is_file():
            return "not met", f"{target.name} is missing"
        if target.stat().st_size > MAX_READ:
            return "not checked", f"{target.name} is too big to check"
        return self.judge(target.read_text(encoding="utf-8", errors="replace"))


def _number(word: str) -> int:
    return _WORDS[word.lower()] if word.lower() in _WORDS else int(word)


def _numbers_in(criterion: str) -> list[int]:
    """The numbers a criterion counts or compares, leaving out those inside a file name (``out/v2.txt``)."""
    text = re.sub(r"\S*[/.]\S*", " ", criterion)  # paths and file names
    return [_number(m.group(1)) for m in re.finditer(rf"(?<![\w.]){_NUMBER}(?![\w.])", text, re.IGNORECASE)]


def _state(path: Path) -> str | None:
    """What the file holds before the run (its sha256), or None where it is not a file."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_READ:
            return None if not path.exists() else "(too big or not a file)"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _read(path: Path) -> str | None:
    """An input's text before the run, or None where there is no such file omx can read whole."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_READ:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _shown(text: str) -> str:
    held = text.strip()
    return repr(held if len(held) <= 40 else held[:37] + "...")


def _just_a_number(text: str) -> Verdict:
    ok = re.fullmatch(r"-?\d+(?:\.\d+)?", text.strip()) is not None
    return ("met" if ok else "not met"), f"it holds {_shown(text)}"


def _the_number(*allowed: int) -> Callable[[str], Verdict]:
    """The file holds just one number, and it is one of ``allowed`` (the ways an input's count may be read)."""

    def judge(text: str) -> Verdict:
        held = text.strip()
        if re.fullmatch(r"-?\d+(?:\.0+)?", held) is None:
            return "not met", f"it holds {_shown(text)}, not just a number"
        return ("met" if int(float(held)) in allowed else "not met"), f"it holds {held}"

    return judge


def _at_most_words(limit: int) -> Callable[[str], Verdict]:
    def judge(text: str) -> Verdict:
        count = len(text.split())
        return ("met" if count <= limit else "not met"), f"{count} words"

    return judge


def _bullets(wanted: int) -> Callable[[str], Verdict]:
    def judge(text: str) -> Verdict:
        count = sum(1 for line in text.splitlines() if line.lstrip().startswith(BULLET_MARKS))
        return ("met" if count == wanted else "not met"), f"{count} bullet line{'s' if count != 1 else ''}"

    return judge


def _one_line(text: str) -> Verdict:
    count = sum(1 for line in text.splitlines() if line.strip())
    return ("met" if count == 1 else "not met"), f"{count} non-empty line{'s' if count != 1 else ''}"


def _table(text: str) -> Verdict:
    found = markdown_table(text)
    return ("met", found) if found else ("not met", "no markdown table (a header row, a |---| row, then rows) in it")


def _shape(task: str, reading: TaskReading | None) -> OutputShape | None:
    """The shape the task gives its one output, read as the checks below read it (with the model's ``reading``:
    each part of it the model read too)."""
    words = _AT_MOST_WORDS.search(task)
    bullets, max_words = _bullet_count(task), _number(words.group(1)) if words else None
    number, one_line = _JUST_NUMBER.search(task) is not None, _ONE_LINE.search(task) is not None
    if reading is not None:
        bullets = bullets if bullets is not None and agree("bullets", bullets, reading) else None
        max_words = max_words if max_words is not None and agree("words", max_words, reading) else None
        number, one_line = number and agree("number", None, reading), one_line and agree("one_line", None, reading)
    return shape_of(bullets=bullets, number=number, max_words=max_words, one_line=one_line)


def _content_checks(task: str, path: str, workspace: Path) -> tuple[list[ContentCheck], set[int]]:
    """What ``task`` says of its one output ``path``'s content, read before the run; and the numbers omx counted
    for it (a count the task asks for is the task's number as much as one it spells out)."""
    checks: list[ContentCheck] = []
    counts: set[int] = set()
    read = _reader(task, workspace)
    if (bullets := _bullet_count(task)) is not None:
        checks.append(ContentCheck(f"{path} has {bullets} bullet lines", _bullets(bullets), False, "bullets", bullets))
    counted = _COUNT_OF.search(task)
    source = read(counted.group("input")) if counted else None
    inputs = [name for name in _named(task) if name != path and read(name) is not None]
    matches = counted_matches(task, read(inputs[0]) or "") if len(inputs) == 1 else None
    listing = _lister(task, workspace)
    files = counted_files(task, listing)
    if _JUST_NUMBER.search(task) and files is not None:  # "count the .py files in src/"
        what, counts = files
        checks.append(ContentCheck(f"{path} holds just the number of {what}", _the_number(*counts)))
    elif _JUST_NUMBER.search(task) and matches is not None:  # "count the lines of X that start with 'import'"
        what, count = matches
        counts = {count}
        checks.append(ContentCheck(f"{path} holds just the number of {what} in {inputs[0]}", _the_number(count)))
    elif _JUST_NUMBER.search(task) and counted and source is not None and not _FILTERED.match(task, counted.end()):
        what, name = counted.group("what").lower(), counted.group("input")
        if what == "words":
            counts = {len(source.split())}
            checks.append(ContentCheck(f"{path} holds just the number of words in {name}", _the_number(*counts)))
        else:
            lines = source.splitlines()
            counts = {len(lines), sum(1 for line in lines if line.strip())}
            checks.append(ContentCheck(f"{path} holds just the number of lines of {name}", _the_number(*counts)))
    elif _JUST_NUMBER.search(task):
        checks.append(ContentCheck(f"{path} holds just a number", _just_a_number, False, "number"))  # which, unknown
    first = _FIRST_LINES.search(task)
    source = read(first.group("input")) if first else None
    if first and source is not None and not changes_case(task):  # "... in upper case": not as X has them
        n, name = _number(first.group(1)), first.group("input")
        wanted = [line.strip() for line in source.splitlines()[:n] if line.strip()]
        checks.append(ContentCheck(f"{path} holds the first {n} lines of {name}", these_lines(wanted)))
    words = _AT_MOST_WORDS.search(task)
    if words:
        limit = _number(words.group(1))
        checks.append(ContentCheck(f"{path} has at most {limit} words", _at_most_words(limit), False, "words", limit))
    if _ONE_LINE.search(task):
        checks.append(ContentCheck(f"{path} has 1 line", _one_line, False, "one_line"))
    # the lines are read from X, or the output has a shape of its own (bullets, a number, N words, one line): what
    # is done to the input's lines is not all that makes the output (a table is the CSV's own rows, checked as such)
    picked = (first is not None and source is not None) or bool(checks)
    if _TABLE.search(task):
        checks.append(ContentCheck(f"{path} is a markdown table", _table, False, "table"))
    rules = transform_checks(task, inputs[0] if len(inputs) == 1 else None, read, read(path), listing, picked)
    checks += [ContentCheck(f"{path} {rule.criterion}", rule.judge, rule.exact) for rule in rules]
    return checks, counts


def _named(task: str) -> list[str]:
    """Every file the task names, in order, once."""
    return list(dict.fromkeys(m.group("path") for m in _NAMED.finditer(task)))


def _reader(task: str, workspace: Path) -> Callable[[str], str | None]:
    """The text of each file the task names, read now (before the run, while it is as the person meant it)."""
    texts = {name: _read(workspace / name) for name in _named(task)}
    return lambda name: texts[name] if name in texts else _read(workspace / name)


def _lister(task: str, workspace: Path) -> Listing:
    """The files of each directory the task lists or counts the files of, read now (before the run)."""
    listed = {folder: _files_of(workspace / folder) for folder in named_dirs(task)}
    return lambda folder: listed.get(folder)


def _files_of(root: Path, most: int = 10_000) -> tuple[list[str], list[str]] | None:
    """``root``'s own files' names, and everything below it (relative; a directory with its final slash); None
    where it is no directory, or too big to count."""
    try:
        if not root.is_dir():
            return None
        own = sorted(p.name for p in root.iterdir() if p.is_file())
        below: list[str] = []
        for p in root.rglob("*"):
            below.append(p.relative_to(root).as_posix() + ("/" if p.is_dir() else ""))
            if len(below) > most:
                return None
    except OSError:
        return None
    return own, sorted(below)


def _bullet_count(task: str) -> int | None:
    """The number of bullets the task asks for: its one count, or the one in brackets that sums up the others
    ("one bullet point each (2 bullets)"); None where it gives two and neither is the total."""
    said = {_number(m.group(1)) for m in _BULLETS.finditer(task)}
    if len(said) == 1:
        return said.pop()
    total = {_number(m.group(1)) for m in _TOTAL_BULLETS.finditer(task)}
    return total.pop() if len(said) > 1 and len(total) == 1 else None


def _rules_outputs(task: str, workspace: Path) -> dict[str, str | None]:
    """The outputs the rules read: a path after "to"/"into", or after "in" where it is not there yet; each with its
    sha256 before the run (None: not there)."""
    outputs: dict[str, str | None] = {}
    for match in _AFTER_TO.finditer(task):
        outputs[match.group("path")] = _state(workspace / match.group("path"))
    for match in _AFTER_IN.finditer(task):
        path = match.group("path")
        if path not in outputs and not (workspace / path).exists():
            outputs[path] = None
    return outputs


def _agreement(
    reading: TaskReading,
    rules: dict[str, str | None],
    outputs: dict[str, str | None],
    content: list[ContentCheck],
    kept: list[ContentCheck],
) -> dict[str, Any]:
    """What the trace says of the two readings: the model's, and what omx left out where they differ."""
    return {
        "model": reading.model_dump(),
        "outputs": sorted(outputs),
        "outputs_of_the_rules_only": sorted(set(rules) - set(outputs)),
        "outputs_of_the_model_only": sorted(set(reading.outputs) - set(outputs)),
        "checks_left_out": [check.criterion for check in content if check not in kept],
    }


@dataclass(frozen=True)
class TaskExpectations:
    """The output files a task names, with their state before the run, and what it says of their content."""

    workspace: Path
    outputs: dict[str, str | None] = field(default_factory=dict)  # path (as in the task) -> sha256 before, or None
    content: tuple[ContentCheck, ...] = ()  # about the one output
    numbers: frozenset[int] = frozenset()  # every number the task says (digits or words), or that omx counted for it
    shape: OutputShape | None = None  # the one output's shape, asked of the llm step that writes it
    said: tuple[str, ...] = ()  # the task's words and its files' text before the run: where a quoted text may be from
    inputs: tuple[str, ...] = ()  # the files the task names that are there before the run, its outputs aside
    value_asked: bool = False  # the one output is a value (a count, a total, an answer, an exact result), not prose
    dirs: tuple[str, ...] = ()  # the directories the task lists or counts the files of
    reading: dict[str, Any] | None = None  # the model's reading and where it and the rules differ (for the trace)

    @property
    def sources(self) -> tuple[str, ...]:
        """What the task's value is computed from: its input files and the directories it lists or counts."""
        return self.inputs + self.dirs

    @property
    def output(self) -> str | None:
        """The task's one output file, when it names exactly one."""
        return next(iter(self.outputs)) if len(self.outputs) == 1 else None

    @property
    def exact(self) -> bool:
        """Whether the task wants its one output to be one exact text (``ContentCheck.exact``)."""
        return any(check.exact for check in self.content)

    @classmethod
    def before(cls, task: str, workspace: Path, reading: TaskReading | None = None) -> TaskExpectations:
        """Read ``task`` before the run, while the files it names are as they were; with the model's ``reading``
        of it, act only on what both readings say (``agent.plan_run.task_reading``)."""
        rules = _rules_outputs(task, workspace)
        if reading is None:
            outputs = rules
        else:
            listed = [name for name in _named(task) if reading.lists_output(name)]
            # a file that is there is changed in place only where the rules read it so too: a small model lists
            # the file a summary is made of as its output
            agreed = [name for name in listed if name in rules or not (workspace / name).exists()]
            outputs = {name: _state(workspace / name) for name in agreed}
        content, counts = _content_checks(task, next(iter(outputs)), workspace) if len(outputs) == 1 else ([], set())
        kept = content if reading is None else [check for check in content if check.agrees_with(reading)]
        said = {_number(m.group(1)) for m in re.finditer(rf"(?<![\w.]){_NUMBER}(?![\w.])", task, re.IGNORECASE)}
        shape = _shape(task, reading) if len(outputs) == 1 else None
        read = _reader(task, workspace)
        texts = (task, *(text for name in _named(task) if (text := read(name)) is not None))
        inputs = tuple(name for name in _named(task) if name not in outputs and (workspace / name).is_file())
        value = len(outputs) == 1 and (
            any(check.exact for check in content)
            or bool(_JUST_NUMBER.search(task) or _ASKS_VALUE.search(task))
            or (reading is not None and reading.kind == "exact")
        )
        dirs = tuple(named_dirs(task))
        note = None if reading is None else _agreement(reading, rules, outputs, content, kept)
        return cls(workspace, outputs, tuple(kept), frozenset(said | counts), shape, texts, inputs, value, dirs, note)

    def vet(self, check: CriterionCheck) -> CriterionCheck:
        """A plan's criterion that counts something the task never counted ("has 3 bullet lines" for a line
        count: the planner's example, copied) is the plan's own guess: not checked, neither met nor not met, and
        not for the model to judge either."""
        if check.status == "not checked" and not check.judgeable:
            return check
        guessed = [n for n in _numbers_in(check.criterion) if n not in self.numbers]
        if guessed:
            detail = f"{guessed[0]} is the plan's own number, not the task's: look at the file yourself"
        elif invented := [text for text in quoted_texts(check.criterion) if not self._said(text)]:
            # 'out/s.md contains "Summary"' where the task and its input never say Summary: the plan's own claim,
            # which an llm step told the same plan writes in, and which says nothing of the task being done
            detail = (
                f"{invented[0]!r} is the plan's own text, not the task's nor its input's: look at the file yourself"
            )
        else:
            return check
        return check.model_copy(update={"status": "not checked", "detail": detail, "judgeable": False, "file": None})

    def _said(self, text: str) -> bool:
        """Whether the task or one of its files (as it was before the run) says ``text`` (case aside)."""
        wanted = text.strip().casefold()
        return any(wanted in said.casefold() for said in self.said)

    def check(self) -> list[CriterionCheck]:
        """After the run: each output written by it, and what the task says of its content."""
        checks = [self._written(path, before) for path, before in self.outputs.items()]
        output = next(iter(self.outputs), None)
        for content in self.content:
            status, detail = content.on(self.workspace / next(iter(self.outputs)))
            kind: CheckKind = "value" if content.exact else "form"
            criterion = f"{content.criterion}{FROM_THE_TASK}"
            check = CriterionCheck(criterion=criterion, status=status, detail=detail, kind=kind, source="reading")
            checks.append(check.model_copy(update={"file": output}))
        return checks

    def _written(self, path: str, before: str | None) -> CriterionCheck:
        criterion = f"{path} is written by this run{FROM_THE_TASK}"
        after = _state(self.workspace / path)
        status: CriterionStatus
        if after is None:
            status, detail = "not met", "the task names it as the output, and it is not there"
        elif after == before:
            status, detail = "not met", "the run did not change it"
        else:
            status, detail = "met", "written" if before is None else "changed"
        return CriterionCheck(
            criterion=criterion, status=status, detail=detail, about_content=False, source="reading", file=path
        )


def told(check: CriterionCheck, workspace: Path) -> str:
    """What the model is told of a check of omx's reading that is not met: what the task asks, in its words, and
    what the file holds (or, of a form, what omx counted of the file), never the value omx computed the answer to
    be: omx's reading may be wrong, and a model told the answer copies it, which verifies nothing."""
    asked = check.criterion.removesuffix(FROM_THE_TASK)
    if check.kind == "form":  # its shape: what omx found of the file (4 bullet lines), no answer of its own
        return f"{asked}: not met ({check.detail})"
    if check.file is None:
        return f"{asked}: not met"
    target = workspace / check.file
    try:
        if not target.is_file():
            return f"{asked}: not met ({check.file} is not there)"
        held = target.read_text(encoding="utf-8", errors="replace")[:400]
    except OSError as exc:
        return f"{asked}: not met ({check.file} cannot be read: {exc.strerror or exc})"
    shown = held.strip() if len(held.strip()) <= 200 else held.strip()[:197] + "..."
    return f"{asked}: not met (the file holds {shown!r})"
