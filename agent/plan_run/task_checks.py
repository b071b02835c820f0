"""Checks omx derives from the task itself, whatever criteria the plan wrote (success means checked).

A small model copies the planner's example criteria into unrelated tasks ("has 3 bullet lines" for a line count)
or writes criteria a wrong result meets ("has 1 line"). What the person asked for is in the task, so where the
task says it in a form that can be read without guessing, omx checks it on its own. These rules are one of two
readings: the model reads the task too (``agent.plan_run.task_reading``), and with its reading omx keeps only what
both say (the outputs, each check below); without one (its request failed), the rules' reading alone:

- the **output files**: a path the task names after "to", "into" or an arrow (``... write just the number to
  out/n.txt``, ``Append the line 'bread' to data/list.txt``, ``last 5 lines of a.log -> out/t.txt``), or after "in"
  or "as" when it did not exist before the run (``... in out/changes.md``, ``save it as out/s.md``; ``the TODO
  comments in src/app.py`` names an input). Each must have been written by this run:
  it exists after it, and did not before or changed;
- with exactly one output file, the **form** the task gives it: ``N bullets`` / ``N bullet points`` (one N in the
  task, or the one in brackets that sums up others: "one bullet each (2 bullets)"), ``just the number`` (also "the
  sum", "the result"), ``at most N words``, ``one line``, ``a markdown table``;
- the **file operations** of a task that acts on files, as the model read them where they hold
  (``agent.plan_run.file_ops``): each checked on the files after the run (a move's source gone, its target holding
  what the source held).

A form says nothing of whether the output is right. The rules compute no expected value from the input (a count,
the input's lines picked or changed): written from the tuning tasks' wording, such rules reached no held-out task
(docs/omx.md). Whether a value is right is checked by the code that made it (``agent.plan_run.value_checks``), and
whether the task wants an exact result at all is the model's reading (``TaskExpectations.exact``).

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
    MAX_READ,
    CriterionCheck,
    CriterionStatus,
    markdown_table,
    quoted_texts,
)
from agent.plan_run.file_ops import Operation, agreed_operations, operation_checks
from agent.plan_run.list_form import NUMBER as _NUMBER
from agent.plan_run.list_form import (
    NUMBER_WORDS,
    WORDS_AT_MOST_AFTER,
    WORDS_AT_MOST_BEFORE,
    ListForm,
    first_line,
    list_form,
    said_number,
)
from agent.plan_run.operation_fitting import unsaid_arguments
from agent.plan_run.output_shape import OutputShape, shape_of
from agent.plan_run.plan import Plan
from agent.plan_run.task_reading import FILE_PATH, Says, TaskReading, agree, named_paths
from agent.plan_run.text_operations import CODE_BY_OMX
from agent.plan_run.yes_or_no import asks_yes_or_no, first_answer

__all__ = ["FROM_THE_TASK", "ContentCheck", "TaskExpectations", "rules_outputs", "told"]

#: the label of a check omx derived from the task's own words, beside the plan's criteria
FROM_THE_TASK = " (from the task)"

_PATH = rf"(?P<path>{FILE_PATH})"
_AFTER_TO = re.compile(
    rf"(?:\b(?:on)?to\s+(?:the\s+file\s+|the\s+(?:very\s+)?(?:end|bottom|top|start|beginning)\s+of\s+)?|"
    rf"\bat\s+the\s+(?:very\s+)?(?:end|bottom|top|start|beginning)\s+of\s+|\binto\s+(?:the\s+file\s+)?|"
    rf"(?:->|=>|\u2192)\s*)`?{_PATH}"
)
_AFTER_IN = re.compile(rf"\b(?:in|as)\s+`?{_PATH}")
_JUST_NUMBER = re.compile(
    r"\b(?:just|only)\s+(?:the|a)\s+(?:number|sum|result|count|total)\b|"
    r"\b(?:the\s+)?(?:number|sum|count|total)\s+only\b|\bnothing\s+but\s+the\s+(?:number|sum|count|total)\b",
    re.IGNORECASE,
)
#: a limit on the output's words; "under N words" allows N - 1
_AT_MOST_WORDS = re.compile(
    rf"\b{WORDS_AT_MOST_BEFORE}\s+{_NUMBER}\s+words\b|"
    rf"\b(?P<after>\d+|{'|'.join(NUMBER_WORDS)})\s+words\s+{WORDS_AT_MOST_AFTER}\b",
    re.IGNORECASE,
)
_ONE_LINE = re.compile(r"\b(?:as\s+one|a\s+one-line|a\s+single)\s+line\b|\bone-line\b", re.IGNORECASE)
_TABLE = re.compile(r"\bmarkdown\s+table\b", re.IGNORECASE)
#: one line by what it is: "a title for ...", "a good subject line for ...", "a headline of ..." (one thing asked)
_A_TITLE = re.compile(
    r"\b(?:a|an|one)\s+(?:[\w-]+\s+){0,2}?(?:title|headline|subject\s+line|tagline|caption)\s+(?:for|of|to)\b",
    re.IGNORECASE,
)
_MORE_THAN_ONE = re.compile(r"\b(?:and|with|plus|then)\s+(?:a|an|the|some|\d+|two|three|four|five)\b", re.IGNORECASE)
# a question whose answer is the output: a value, not prose of a shape
_ASKS_VALUE = re.compile(
    r"\bhow\s+many\b|\bthe\s+answer\b|\bwhat\s+is\s+the\s+(?:total|sum|average|mean|count|number|product)\b",
    re.IGNORECASE,
)
#: a task that counts: how many, count ..., the number of ...
_COUNT = re.compile(r"\bhow\s+many\b|\bcount\b|\bthe\s+number\s+of\b", re.IGNORECASE)
_NAMED = re.compile(rf"`?{_PATH}")

Verdict = tuple[CriterionStatus, str]


@dataclass(frozen=True)
class ContentCheck:
    """One form the task gives its output (N bullets, just a number, at most N words, one line, a table):
    ``criterion`` in words, ``judge`` on the file's text. A form is met by many texts, right and wrong: it is no
    check of the output's value."""

    criterion: str
    judge: Callable[[str], Verdict]
    says: Says  # the shape of the task it reads
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


def _word_limit(task: str) -> int | None:
    """The most words the task allows its output ("at most 20 words": 20, "under 80 words": 79, "50 words max":
    50), or None."""
    words = _AT_MOST_WORDS.search(task)
    if words is None:
        return None
    return said_number(words.group(2) or words.group("after")) - (1 if words.group("below") else 0)


def _numbers_in(criterion: str) -> list[int]:
    """The numbers a criterion counts or compares, leaving out those inside a file name (``out/v2.txt``)."""
    text = re.sub(r"\S*[/.]\S*", " ", criterion)  # paths and file names
    return [said_number(m.group(1)) for m in re.finditer(rf"(?<![\w.]){_NUMBER}(?![\w.])", text, re.IGNORECASE)]


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


def _there(workspace: Path, path: str) -> bool:
    """Whether ``path`` (as a reading names it) is in ``workspace`` before the run."""
    try:
        return bool(path.strip()) and (workspace / path).exists()
    except (OSError, ValueError):
        return False


def _shown(text: str) -> str:
    held = text.strip()
    return repr(held if len(held) <= 40 else held[:37] + "...")


def _just_a_number(text: str) -> Verdict:
    ok = re.fullmatch(r"-?\d+(?:\.\d+)?", text.strip()) is not None
    return ("met" if ok else "not met"), f"it holds {_shown(text)}"


def _yes_or_no(text: str) -> Verdict:
    return ("met" if first_answer(text) is not None else "not met"), f"it holds {_shown(text)}"


def _at_most_words(limit: int) -> Callable[[str], Verdict]:
    def judge(text: str) -> Verdict:
        count = len(text.split())
        return ("met" if count <= limit else "not met"), f"{count} words"

    return judge


def _listed(form: ListForm) -> Callable[[str], Verdict]:
    def judge(text: str) -> Verdict:
        count = form.counted(text)
        return ("met" if form.met_by(count) else "not met"), form.found(count)

    return judge


def _starts_with(line: str) -> Callable[[str], Verdict]:
    def judge(text: str) -> Verdict:
        first = next((held.strip() for held in text.splitlines() if held.strip()), "")
        return ("met" if first == line.strip() else "not met"), f"its first line is {_shown(first)}"

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
    items, max_words = list_form(task), _word_limit(task)
    number, one_line = _JUST_NUMBER.search(task) is not None, _ONE_LINE.search(task) is not None
    if reading is not None:
        items = items if items is not None and agree(_says(items), items.count, reading) else None
        max_words = max_words if max_words is not None and agree("words", max_words, reading) else None
        number, one_line = number and agree("number", None, reading), one_line and agree("one_line", None, reading)
    one_line = one_line or _a_title(task)
    return shape_of(items=items, number=number, max_words=max_words, one_line=one_line, first_line=first_line(task))


def _a_title(task: str) -> bool:
    """Whether ``task`` asks for one title, headline or subject line alone: one line by what it is (the 0.5B model
    wrote a title of three lines), the task's own words, not a reading."""
    return bool(_A_TITLE.search(task)) and list_form(task) is None and not _MORE_THAN_ONE.search(task)


def _says(form: ListForm) -> Says:
    return "sentences" if form.style == "sentences" else "lines" if form.said_lines else "bullets"


def _content_checks(task: str, path: str) -> list[ContentCheck]:
    """The forms ``task`` gives its one output ``path``."""
    checks: list[ContentCheck] = []
    if (line := first_line(task)) is not None:
        checks.append(ContentCheck(f"{path} starts with the line {line!r}", _starts_with(line), "first_line"))
    if (form := list_form(task)) is not None:
        checks.append(ContentCheck(form.criterion(path), _listed(form), _says(form), form.count))
    if _JUST_NUMBER.search(task):
        checks.append(ContentCheck(f"{path} holds just a number", _just_a_number, "number"))
    if asks_yes_or_no(task):
        checks.append(ContentCheck(f"{path} starts with yes or no", _yes_or_no, "yes_or_no"))
    if (limit := _word_limit(task)) is not None:
        checks.append(ContentCheck(f"{path} has at most {limit} words", _at_most_words(limit), "words", limit))
    if _ONE_LINE.search(task):
        checks.append(ContentCheck(f"{path} has 1 line", _one_line, "one_line"))
    elif _a_title(task):
        checks.append(ContentCheck(f"{path} has 1 line", _one_line, "title"))
    if _TABLE.search(task):
        checks.append(ContentCheck(f"{path} is a markdown table", _table, "table"))
    return checks


def _named(task: str) -> list[str]:
    """Every file the task names, in order, once."""
    return list(dict.fromkeys(m.group("path") for m in _NAMED.finditer(task)))


def _named_dirs(task: str, workspace: Path) -> tuple[str, ...]:
    """The directories the task names (with their final slash: ``data/``) that are there before the run."""
    return tuple(path for path in named_paths(task) if path.endswith("/") and (workspace / path).is_dir())


def rules_outputs(task: str, workspace: Path) -> dict[str, str | None]:
    """The outputs the rules read: a path after "to"/"into"/"->", or after "in"/"as" where it is not there yet; each
    with its sha256 before the run (None: not there)."""
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
    exact: bool,
    operations: tuple[Operation, ...],
) -> dict[str, Any]:
    """What the trace says of the two readings: the model's, what omx acts on, and what it left out where they
    differ."""
    return {
        "model": reading.model_dump(),
        "outputs": sorted(outputs),
        "exact": exact,
        "operations": [op.record() for op in operations],
        "outputs_of_the_rules_only": sorted(set(rules) - set(outputs)),
        "outputs_of_the_model_only": sorted(set(reading.outputs) - set(outputs)),
        "checks_left_out": [check.criterion for check in content if check not in kept],
    }


@dataclass(frozen=True)
class TaskExpectations:
    """The output files a task names, with their state before the run, and the forms it gives their content.

    ``exact``: the task wants its one output to be one exact text, computed from an input (an llm step that writes
    it is made a python step: ``agent.plan_run.output_maker``; code that got it wrong is asked for again:
    ``agent.plan_run.code_fix``). It is the model's reading, kind "exact", held against one general fact: there is
    something to compute from, an input that is there before the run (a file or directory the task names, or one
    the reading names, which its schema lets it pick only among the workspace's). No reading, no exact work: the
    rules read only forms, and a form (N bullets, just a number) is prose's as much as code's."""

    workspace: Path
    outputs: dict[str, str | None] = field(default_factory=dict)  # path (as in the task) -> sha256 before, or None
    content: tuple[ContentCheck, ...] = ()  # the forms of the one output
    numbers: frozenset[int] = frozenset()  # every number the task says (digits or words)
    shape: OutputShape | None = None  # the one output's shape, asked of the llm step that writes it
    said: tuple[str, ...] = ()  # the task's words and its files' text before the run: where a quoted text may be from
    inputs: tuple[str, ...] = ()  # the files the task names that are there before the run, its outputs aside
    value_asked: bool = False  # the one output is a value (a count, a total, an answer, an exact result), not prose
    count_asked: bool = False  # the task asks how many, or just the number, count or total: lines picked are counted
    exact: bool = False  # the one output is one exact text, computed from an input (see the class)
    dirs: tuple[str, ...] = ()  # the directories the task names that are there before the run
    reading: dict[str, Any] | None = None  # the model's reading and where it and the rules differ (for the trace)
    model_reading: TaskReading | None = None  # the model's reading itself, which omx may plan from (``reading_plan``)
    operations: tuple[Operation, ...] = ()  # the files the task acts on, as the model read them (``file_ops``)

    @property
    def sources(self) -> tuple[str, ...]:
        """What the task's value is computed from: the files and directories it names that are there."""
        return self.inputs + self.dirs

    @property
    def output(self) -> str | None:
        """The task's one output file, when it names exactly one."""
        return next(iter(self.outputs)) if len(self.outputs) == 1 else None

    @classmethod
    def before(cls, task: str, workspace: Path, reading: TaskReading | None = None) -> TaskExpectations:
        """Read ``task`` before the run, while the files it names are as they were; with the model's ``reading``
        of it, act only on what both readings say (``agent.plan_run.task_reading``)."""
        rules = rules_outputs(task, workspace)
        if reading is None:
            outputs = rules
        else:
            listed = [name for name in _named(task) if reading.lists_output(name)]
            # a file that is there is changed in place only where the rules read it so too: a small model lists
            # the file a summary is made of as its output
            agreed = [name for name in listed if name in rules or not (workspace / name).exists()]
            there = [name for name in reading.outputs if (workspace / name).exists()]
            if not agreed and (listed or there) and len(there) == len(reading.outputs):
                # the model listed only files or folders that are there, and the rules read none of them as an
                # output (the files a summary is made of, the folder of reviews summed up): the rules' outputs not
                # there yet stand
                agreed = [name for name in rules if not (workspace / name).exists()]
            outputs = {name: _state(workspace / name) for name in agreed}
        one = len(outputs) == 1
        content = _content_checks(task, next(iter(outputs))) if one else []
        kept = content if reading is None else [check for check in content if check.agrees_with(reading)]
        said = {said_number(m.group(1)) for m in re.finditer(rf"(?<![\w.]){_NUMBER}(?![\w.])", task, re.IGNORECASE)}
        shape = _shape(task, reading) if one else None
        texts = (task, *(text for name in _named(task) if (text := _read(workspace / name)) is not None))
        inputs = tuple(name for name in _named(task) if name not in outputs and (workspace / name).is_file())
        dirs = _named_dirs(task, workspace)
        read_exact = reading is not None and reading.kind == "exact" and reading.from_input
        read_inputs = reading.inputs if reading is not None else []
        has_input = bool(inputs or dirs) or any(_there(workspace, path) for path in read_inputs)
        exact = one and read_exact and has_input
        operations = agreed_operations(task, workspace, reading)
        return cls(
            workspace,
            outputs,
            content=tuple(kept),
            numbers=frozenset(said),
            shape=shape,
            said=texts,
            inputs=inputs,
            value_asked=one and (read_exact or bool(_JUST_NUMBER.search(task) or _ASKS_VALUE.search(task))),
            count_asked=one and bool(_JUST_NUMBER.search(task) or _COUNT.search(task)),
            exact=exact,
            dirs=dirs,
            reading=None if reading is None else _agreement(reading, rules, outputs, content, kept, exact, operations),
            model_reading=reading,
            operations=operations,
        )

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

    def check(self, plan: Plan | None = None) -> list[CriterionCheck]:
        """After the run of ``plan``: each output written by it, what the task says of its content, each file
        operation the task asks for (``file_ops``), and, where the operation the model picked and omx acted on (a
        step of ``plan`` runs omx's code of it: ``CODE_BY_OMX``; no plan: taken as acted on) has a text the task does
        not say (``operation_fitting.unsaid_arguments``: a word to keep lines by that the model inferred from the
        task's meaning), that the pick is what the task means, not checked: never a success on a meaning only the
        model read."""
        checks = [self._written(path, before) for path, before in self.outputs.items()]
        output = next(iter(self.outputs), None)
        for content in self.content:
            status, detail = content.on(self.workspace / next(iter(self.outputs)))
            criterion = f"{content.criterion}{FROM_THE_TASK}"
            check = CriterionCheck(criterion=criterion, status=status, detail=detail, kind="form", source="reading")
            checks.append(check.model_copy(update={"file": output}))
        for done in operation_checks(self.operations, self.workspace):  # the files acted on, seen on the files
            checks.append(done.model_copy(update={"criterion": f"{done.criterion}{FROM_THE_TASK}"}))
        reading = self.model_reading
        # a pick acted on: prose is written by a model whatever the pick (``task_reading``)
        picked = reading.operation if reading is not None and reading.kind != "prose" else None
        acted_on = plan is None or any(CODE_BY_OMX in step.description for step in plan.steps)
        if picked is not None and acted_on and self.said and (unsaid := unsaid_arguments(picked, self.said[0])):
            detail = (f"the model picked {picked.op} with {', '.join(map(repr, unsaid))}, which the task does not say; "
                      "a second program reads the task as the model does, so nothing checks that it is what the task "
                      "means")  # fmt: skip
            checks.append(CriterionCheck(criterion=f"the operation picked is the one the task means{FROM_THE_TASK}",
                                         status="not checked", detail=detail, source="reading"))  # fmt: skip
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
    what omx found of the file (of a form: what it counted, 4 bullet lines) or, of any other check, what the file
    holds; never an answer of omx's own: its reading may be wrong, and a model told an answer copies it, which
    verifies nothing."""
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
