"""Checks omx derives from the task itself, whatever criteria the plan wrote (issue 28: success means checked).

A small model copies the planner's example criteria into unrelated tasks ("has 3 bullet lines" for a line count)
or writes criteria a wrong result meets ("has 1 line"). What the person asked for is in the task, so where the
task says it in a form that can be read without guessing, omx checks it on its own:

- the **output files**: a path the task names after "to" or "into" (``... write just the number to out/n.txt``,
  ``Append the line 'bread' to data/list.txt``), or after "in" when it did not exist before the run (``... in
  out/changes.md``; ``the TODO comments in src/app.py`` names an input). Each must have been written by this run:
  it exists after it, and did not before or changed;
- with exactly one output file, what the task says of its content: ``N bullets`` / ``N bullet points`` (one N in
  the task: "one bullet each (2 bullets)" is not read), ``just the number`` (also "the sum", "the result"),
  ``at most N words``, ``one line``, ``a markdown table``.

Each check is labelled "(from the task)" beside the plan's own criteria; the result is "success" only when all of
them, and the plan's, were checked and met.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from agent.plan_run.criteria import MAX_READ, CriterionCheck, CriterionStatus, check_criterion

__all__ = ["TaskExpectations"]

_PATH = r"(?P<path>(?:[\w.-]+/)*[\w-][\w.-]*\.\w{1,8})(?![\w/])"
_AFTER_TO = re.compile(rf"\b(?:to|into)\s+(?:the\s+file\s+)?`?{_PATH}")
_AFTER_IN = re.compile(rf"\bin\s+`?{_PATH}")
_NUMBER = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_BULLETS = re.compile(rf"\b{_NUMBER}\s+bullet(?:s|\s+points?|ed\s+lines?)?\b", re.IGNORECASE)
_JUST_NUMBER = re.compile(r"\b(?:just|only)\s+the\s+(?:number|sum|result|count|total)\b", re.IGNORECASE)
_AT_MOST_WORDS = re.compile(rf"\bat\s+most\s+{_NUMBER}\s+words\b", re.IGNORECASE)
_ONE_LINE = re.compile(r"\b(?:as\s+one|a\s+one-line|a\s+single)\s+line\b|\bone-line\b", re.IGNORECASE)
_TABLE = re.compile(r"\bmarkdown\s+table\b", re.IGNORECASE)


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


@dataclass(frozen=True)
class TaskExpectations:
    """The output files a task names, with their state before the run, and what it says of their content."""

    workspace: Path
    outputs: dict[str, str | None] = field(default_factory=dict)  # path (as in the task) -> sha256 before, or None
    content: tuple[str, ...] = ()  # criteria in the form ``agent.plan_run.criteria`` checks, about the one output
    numbers: frozenset[int] = frozenset()  # every number the task says, in digits or words

    @classmethod
    def before(cls, task: str, workspace: Path) -> TaskExpectations:
        """Read ``task`` before the run, while the files it names are as they were."""
        outputs: dict[str, str | None] = {}
        for match in _AFTER_TO.finditer(task):
            outputs[match.group("path")] = _state(workspace / match.group("path"))
        for match in _AFTER_IN.finditer(task):
            path = match.group("path")
            if path not in outputs and not (workspace / path).exists():
                outputs[path] = None
        content: list[str] = []
        if len(outputs) == 1:
            (path,) = outputs
            bullets = {_number(m.group(1)) for m in _BULLETS.finditer(task)}
            if len(bullets) == 1:
                content.append(f"{path} has {bullets.pop()} bullet lines")
            if _JUST_NUMBER.search(task):
                content.append(f"{path} holds just a number")
            words = _AT_MOST_WORDS.search(task)
            if words:
                content.append(f"{path} has at most {_number(words.group(1))} words")
            if _ONE_LINE.search(task):
                content.append(f"{path} has 1 line")
            if _TABLE.search(task):
                content.append(f"{path} is a markdown table")
        said = {_number(m.group(1)) for m in re.finditer(rf"(?<![\w.]){_NUMBER}(?![\w.])", task, re.IGNORECASE)}
        return cls(workspace, outputs, tuple(content), frozenset(said))

    def vet(self, check: CriterionCheck) -> CriterionCheck:
        """A plan's criterion that counts something the task never counted ("has 3 bullet lines" for a line
        count: the planner's example, copied) is the plan's own guess: not checked, neither met nor not met."""
        if check.status == "not checked":
            return check
        guessed = [n for n in _numbers_in(check.criterion) if n not in self.numbers]
        if not guessed:
            return check
        detail = f"{guessed[0]} is the plan's own number, not the task's: look at the file yourself"
        return check.model_copy(update={"status": "not checked", "detail": detail})

    def check(self) -> list[CriterionCheck]:
        """After the run: each output written by it, and what the task says of its content."""
        checks = [self._written(path, before) for path, before in self.outputs.items()]
        for criterion in self.content:
            checks.append(self._content(criterion))
        return checks

    def _written(self, path: str, before: str | None) -> CriterionCheck:
        criterion = f"{path} is written by this run (from the task)"
        after = _state(self.workspace / path)
        status: CriterionStatus
        if after is None:
            status, detail = "not met", "the task names it as the output, and it is not there"
        elif after == before:
            status, detail = "not met", "the run did not change it"
        else:
            status, detail = "met", "written" if before is None else "changed"
        return CriterionCheck(criterion=criterion, status=status, detail=detail, about_content=False)

    def _content(self, criterion: str) -> CriterionCheck:
        path = next(iter(self.outputs))
        target = self.workspace / path
        labelled = f"{criterion} (from the task)"
        if not target.is_file():
            return CriterionCheck(criterion=labelled, status="not met", detail=f"{path} is missing")
        if criterion.endswith("holds just a number"):
            held = target.read_text(encoding="utf-8", errors="replace").strip()
            shown = held if len(held) <= 40 else held[:37] + "..."
            ok = re.fullmatch(r"-?\d+(?:\.\d+)?", held) is not None
            return CriterionCheck(criterion=labelled, status="met" if ok else "not met", detail=f"it holds {shown!r}")
        if " words" in criterion:
            limit = int(criterion.split("at most ")[1].split()[0])
            count = len(target.read_text(encoding="utf-8", errors="replace").split())
            return CriterionCheck(
                criterion=labelled, status="met" if count <= limit else "not met", detail=f"{count} words"
            )
        found = check_criterion(criterion, [target], self.workspace)
        return found.model_copy(update={"criterion": labelled})
