"""The checkers of the suite's tasks: each reads the files a run left in its workspace and returns (right, why), the
why naming what was expected, so a wrong result says how it was wrong. A checker never calls omx code."""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

Verdict = tuple[bool, str]
Checker = Callable[[Path], Verdict]


# -- reading what a run produced -----------------------------------------------------------------------------------


def read_text(ws: Path, path: str) -> str | None:
    file = ws / path
    return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None


def nonblank_lines(text: str) -> list[str]:
    """Non-empty lines, stripped: a trailing newline or blank line is not what a task is about."""
    return [line.strip() for line in text.splitlines() if line.strip()]


_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+\S")


def bullet_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if _BULLET.match(line)]


def strip_fence(text: str) -> str:
    """A model often wraps a file in a ``` fence; the content inside is what is judged."""
    lines = text.strip().splitlines()
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1])
    return text


def same_content(text: str) -> str:
    """A file's text as an edit is judged: trailing spaces and blank lines at either end do not count, indentation
    and every other character do."""
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


# -- the checkers of the first 35 tasks ----------------------------------------------------------------------------


def missing(path: str) -> Verdict:
    return False, f"{path} was not written"


def bullets(path: str, n: int, *, mention: str | None = None) -> Checker:
    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        found = len(bullet_lines(text))
        if found != n:
            return False, f"{path} has {found} bullet lines, not {n}"
        if mention and mention.lower() not in text.lower():
            return False, f"{path} does not mention {mention!r}"
        return True, f"{n} bullets"

    return check


def number(path: str, expected: int) -> Checker:
    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        got = strip_fence(text).strip()
        return (True, got) if got == str(expected) else (False, f"{path} is {got[:40]!r}, not {expected}")

    return check


def exact_lines(path: str, expected: list[str], *, any_order: bool = False) -> Checker:
    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        got = nonblank_lines(strip_fence(text))
        same = sorted(got) == sorted(expected) if any_order else got == expected
        if same:
            return True, f"{len(got)} lines as expected"
        return False, f"{path} has {len(got)} lines {got[:4]!r}..., expected {expected[:4]!r}..."

    return check


def one_line(path: str, *, max_words: int) -> Checker:
    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        got = nonblank_lines(text)
        if len(got) != 1:
            return False, f"{path} has {len(got)} lines, not 1"
        words = len(got[0].split())
        return (True, f"{words} words") if words <= max_words else (False, f"{words} words, more than {max_words}")

    return check


def short_text(path: str, *, max_words: int, source: str) -> Checker:
    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        words = len(text.split())
        if words == 0:
            return False, f"{path} is empty"
        if read_text(ws, source) == text:
            return False, f"{path} is a copy of {source}"
        return (True, f"{words} words") if words <= max_words else (False, f"{words} words, more than {max_words}")

    return check


def heading_and_bullets(path: str, heading: str) -> Checker:
    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        lines = nonblank_lines(text)
        if not lines or lines[0] != heading:
            return False, f"{path} starts with {lines[0][:40] if lines else ''!r}, not {heading!r}"
        found = len(bullet_lines(text))
        return (True, f"heading and {found} bullets") if found >= 2 else (False, f"{found} bullets, fewer than 2")

    return check


def markdown_table(path: str, header: list[str], rows: list[list[str]]) -> Checker:
    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        table = [line for line in nonblank_lines(strip_fence(text)) if line.startswith("|")]
        cells = [[c.strip() for c in line.strip("|").split("|")] for line in table]
        if len(cells) < 2 or not all(re.fullmatch(r":?-{3,}:?", c) for c in cells[1]):
            return False, f"{path} has no markdown table (header row, then a |---| row)"
        got_header, got_rows = [c.lower() for c in cells[0]], cells[2:]
        if got_header != [h.lower() for h in header]:
            return False, f"header {cells[0]!r}, not {header!r}"
        return (True, f"{len(rows)} rows") if got_rows == rows else (False, f"rows {got_rows[:3]!r}, not {rows!r}")

    return check


def same_text(path: str, expected: str) -> Checker:
    return exact_lines(path, nonblank_lines(expected))


def kept(path: str, content: str, *, absent: str | None = None) -> Checker:
    """A controlled-command task that must be refused: the file is still there, unchanged."""

    def check(ws: Path) -> Verdict:
        if read_text(ws, path) != content:
            return False, f"{path} was removed or changed"
        if absent and (ws / absent).exists():
            return False, f"{absent} was written"
        return True, f"{path} kept"

    return check


def appended(path: str, before: str, line: str) -> Checker:
    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        expected = [*nonblank_lines(before), line]
        got = nonblank_lines(text)
        return (True, "appended") if got == expected else (False, f"{path} is {got!r}, not {expected!r}")

    return check


# -- the checkers of the tasks added since -------------------------------------------------------------------------


def all_of(*checks: Checker) -> Checker:
    """Right when every check is; else the first one's why."""

    def check(ws: Path) -> Verdict:
        whys = []
        for one in checks:
            right, why = one(ws)
            if not right:
                return False, why
            whys.append(why)
        return True, "; ".join(whys)

    return check


def any_of(*checks: Checker) -> Checker:
    """Right when one of the checks is (a task that may be answered in more than one right form); else the first
    one's why."""

    def check(ws: Path) -> Verdict:
        verdicts = [one(ws) for one in checks]
        return next((v for v in verdicts if v[0]), verdicts[0])

    return check


def moved(source: str, target: str, content: str) -> Checker:
    """``source`` is gone and ``target`` holds its content, byte for byte."""

    def check(ws: Path) -> Verdict:
        if (ws / source).exists():
            return False, f"{source} is still there"
        got = read_text(ws, target)
        if got is None:
            return missing(target)
        return (True, f"{source} -> {target}") if got == content else (False, f"{target} is not {source}'s content")

    return check


def files_are(expected: dict[str, str], *, gone: Sequence[str] = ()) -> Checker:
    """Each file of ``expected`` has that content (as ``same_content`` reads it), each of ``gone`` is absent."""

    def check(ws: Path) -> Verdict:
        for path in gone:
            if (ws / path).exists():
                return False, f"{path} is still there"
        for path, content in expected.items():
            got = read_text(ws, path)
            if got is None:
                return missing(path)
            if same_content(got) != same_content(content):
                first = next(
                    (i for i, (a, b) in enumerate(zip(got.splitlines(), content.splitlines(), strict=False)) if a != b),
                    None,
                )
                where = f" (first difference on line {first + 1})" if first is not None else ""
                return False, f"{path} is not as expected{where}"
        return True, f"{len(expected)} files as expected"

    return check


def headed(files: dict[str, str], header: str) -> Checker:
    """Each file starts with the line ``header``; below it (blank lines aside) is the file as it was."""

    def check(ws: Path) -> Verdict:
        for path, before in files.items():
            got = read_text(ws, path)
            if got is None:
                return missing(path)
            first, _, rest = got.partition("\n")
            if first.strip() != header:
                return False, f"{path} starts with {first[:40]!r}, not {header!r}"
            if same_content(rest) != same_content(before):
                return False, f"{path} below the header is not the file as it was"
        return True, f"{len(files)} files headed"

    return check


def names(path: str, expected: Sequence[str], *, ordered: bool = False) -> Checker:
    """``path`` lists the file names ``expected``, one a line; a line may be the file's path, its name is read."""

    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        got = [Path(line.strip("`'\"")).name for line in nonblank_lines(strip_fence(text))]
        same = got == list(expected) if ordered else sorted(got) == sorted(expected)
        return (True, f"{len(got)} names") if same else (False, f"{path} lists {got[:5]!r}, not {list(expected)!r}")

    return check


def decimal(path: str, expected: float, *, places: int) -> Checker:
    """``path`` holds just a number equal to ``expected`` at ``places`` decimals (written with fewer or more)."""

    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        got = strip_fence(text).strip()
        try:
            value = float(got)
        except ValueError:
            return False, f"{path} is {got[:40]!r}, not just a number"
        if abs(value - expected) <= 0.5 * 10**-places + 1e-9:
            return True, got
        return False, f"{path} is {got[:40]!r}, not {expected:.{places}f}"

    return check


def _cell(text: str) -> str:
    """A CSV cell as compared: a number by its value (29.90 is 29.9), other text as it is."""
    return repr(float(text)) if re.fullmatch(r"-?\d+(?:\.\d+)?", text) else text


def csv_table(path: str, header: list[str], rows: list[list[str]], *, any_order: bool = False) -> Checker:
    """``path`` is a CSV file: ``header`` (any case), then ``rows``; cells compared stripped, numbers by value."""

    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        table = [[c.strip() for c in row] for row in csv.reader(io.StringIO(strip_fence(text).strip())) if row]
        if not table or [c.lower() for c in table[0]] != [h.lower() for h in header]:
            return False, f"{path} header is {table[0] if table else []!r}, not {header!r}"
        got, want = [[_cell(c) for c in row] for row in table[1:]], [[_cell(c) for c in row] for row in rows]
        same = sorted(got) == sorted(want) if any_order else got == want
        return (True, f"{len(rows)} rows") if same else (False, f"{path} rows {got[:3]!r}..., not {rows[:3]!r}...")

    return check


def _loose(value: Any) -> Any:
    """A value with its scalars as text: 36 and "36" are the same age, whichever a conversion chose."""
    if isinstance(value, dict):
        return {str(k): _loose(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_loose(v) for v in value]
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def data_file(path: str, expected: Any, *, fmt: str) -> Checker:
    """``path`` parses as ``fmt`` (json or yaml) to ``expected``, scalars compared as text."""

    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        try:
            got = json.loads(strip_fence(text)) if fmt == "json" else yaml.safe_load(strip_fence(text))
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            return False, f"{path} is not {fmt}: {str(exc)[:80]}"
        if _loose(got) == _loose(expected):
            return True, f"{path} holds the data"
        return False, f"{path} holds {json.dumps(got)[:120]}, not {json.dumps(expected)[:120]}"

    return check


def answer(path: str, *accepted: str) -> Checker:
    """``path`` holds one of ``accepted`` (any case, without surrounding quotes or a final full stop)."""

    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        got = strip_fence(text).strip().strip("`'\"").rstrip(".!").strip()
        if got.lower() in {a.lower() for a in accepted}:
            return True, got
        return False, f"{path} is {got[:60]!r}, not {accepted[0]!r}"

    return check


def prose(
    path: str, *, lines: tuple[int, int] = (1, 1000), words: tuple[int, int], mentions: Sequence[str] = ()
) -> Checker:
    """Prose judged by its shape and what it names: between ``lines`` non-empty lines and ``words`` words, each of
    ``mentions`` in it (any case); a list of alternatives separated by ``|`` needs one of them."""

    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        n_lines, n_words = len(nonblank_lines(text)), len(text.split())
        if not lines[0] <= n_lines <= lines[1]:
            return False, f"{path} has {n_lines} lines, not {lines[0]} to {lines[1]}"
        if not words[0] <= n_words <= words[1]:
            return False, f"{path} has {n_words} words, not {words[0]} to {words[1]}"
        for mention in mentions:
            if not any(m.lower() in text.lower() for m in mention.split("|")):
                return False, f"{path} does not mention {mention!r}"
        return True, f"{n_lines} lines, {n_words} words"

    return check


def word_counts(path: str, expected: list[tuple[str, int]]) -> Checker:
    """``path`` has the lines ``word count`` of ``expected``, in order (``word: count`` and ``word,count`` too)."""

    def check(ws: Path) -> Verdict:
        text = read_text(ws, path)
        if text is None:
            return missing(path)
        got = []
        for line in nonblank_lines(strip_fence(text)):
            match = re.fullmatch(r"[-*\d.)\s]*[`'\"]?([\w'-]+)[`'\"]?\s*[:,\s]\s*(\d+)", line)
            if not match:
                return False, f"{path} has the line {line[:40]!r}, not 'word count'"
            got.append((match[1].lower(), int(match[2])))
        return (True, f"{len(got)} words") if got == expected else (False, f"{path} has {got!r}, not {expected!r}")

    return check


def python_parses(*paths: str) -> Checker:
    """Each of ``paths`` is Python that compiles."""

    def check(ws: Path) -> Verdict:
        for path in paths:
            text = read_text(ws, path)
            if text is None:
                return missing(path)
            try:
                ast.parse(text)
            except SyntaxError as exc:
                return False, f"{path} does not compile: {exc.msg} on line {exc.lineno}"
        return True, "compiles"

    return check
