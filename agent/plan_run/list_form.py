"""What a task says of the list or the sentences its output is: how many items, how they are marked, a first line.

People ask for a list in many words: "3 bullet points", "the three key points", "a numbered list of 4 takeaways",
"5 keywords, one per line", "in two sentences", "a one-sentence summary", "a '# Report' heading followed by bullet
points". Each is read here as a ``ListForm`` (``count`` items, marked as ``style`` says) and a quoted ``first_line``;
``agent.plan_run.task_checks`` checks the output's form by it, and ``agent.plan_run.output_shape`` asks the llm
step that writes the output for that many items, rendered in that style. A form says nothing of the content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from agent.plan_run.criteria import BULLET_MARKS

__all__ = ["ListForm", "Style", "count_items", "count_sentences", "first_line", "first_sentence", "list_form"]
__all__ += ["NUMBER", "NUMBER_WORDS", "said_number", "sentences_of"]

#: how the items are written: "- " bullets, "1. " numbers, plain lines, or sentences one after the other
Style = Literal["bullets", "numbered", "lines", "sentences"]

#: the numbers a task writes out, and a number as it writes one (digits or a word)
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
NUMBER_WORDS |= {"ten": 10}
NUMBER = rf"(\d+|{'|'.join(NUMBER_WORDS)})"
#: the words that put a limit on an output's words, before its number ("at most", "under": below it, ``below``)
#: and after it ("50 words max", "20 words or less")
WORDS_AT_MOST_BEFORE = (
    r"(?:(?P<below>under|fewer\s+than|less\s+than)|at\s+most|no\s+more\s+than|not\s+more\s+than|up\s+to|"
    r"max(?:imum)?(?:\s+of)?)"
)
WORDS_AT_MOST_AFTER = r"(?:max(?:imum)?|or\s+(?:less|fewer)|at\s+most|tops)"
#: a count of items: a number, or "a single" one
_NUMBER = rf"(\d+|{'|'.join(NUMBER_WORDS)}|a\s+single|single)"
#: words between the number and what is counted: "3 short key points", "2 main takeaways"
_QUALIFIERS = (
    r"(?:(?:key|main|short|brief|concise|important|most\s+important|biggest|major|top|clear|separate|quick|simple|"
    r"numbered|bulleted|bullet)\s+){0,3}"
)
#: what a list of composed items is made of, besides bullets (a line of the input is counted as lines elsewhere)
_ITEM_NOUNS = (
    r"points?|takeaways?|highlights?|items?|keywords?|key\s+words?|ideas?|reasons?|tips?|lessons?|risks?|facts?|"
    r"suggestions?|recommendations?|action\s+items?"
)
_BULLETS = re.compile(rf"\b{_NUMBER}[\s-]+{_QUALIFIERS}bullet(?:s|\s+points?|ed\s+lines?)?\b", re.IGNORECASE)
_TOTAL_BULLETS = re.compile(rf"\(\s*{_NUMBER}\s+bullet(?:s|\s+points?)\s*(?:in\s+all\s*)?\)", re.IGNORECASE)
_ITEMS = re.compile(rf"\b{_NUMBER}[\s-]+{_QUALIFIERS}(?:{_ITEM_NOUNS})\b", re.IGNORECASE)
_SENTENCES = re.compile(rf"\b{_NUMBER}[\s-]+{_QUALIFIERS}sentences?\b", re.IGNORECASE)
#: composed wording of a said number of lines: "a two-line slogan", "a 4 line poem", "a three-line advert" (any
#: thing written "a N-line"; not "the first 2 lines of")
_LINES_OF = re.compile(
    rf"(?:(?<=\ba )|(?<=\ban ))(\d+|{'|'.join(NUMBER_WORDS)})-line\s+(?=[A-Za-z])|"
    rf"\b{_NUMBER}[\s-]+line\s+(?:[\w-]+\s+){{0,2}}?(?:slogans?|taglines?|mottos?|poems?|verses?|rhymes?|songs?|"
    r"summar(?:y|ies)|descriptions?|notes?|messages?|bios?|greetings?|intros?|introductions?|replies|reply|answers?|"
    r"stor(?:y|ies)|jokes?|toasts?|blurbs?|pitch(?:es)?|abstracts?|captions?|titles?)\b",
    re.IGNORECASE,
)
#: a poem of a fixed form, one of them ("a haiku about rain", "an autumn haiku"), and its number of lines
_POEM = re.compile(
    r"\b(?:a|an|one)\s+(?:[\w-]+\s+){0,2}?(haiku|limerick|couplet|quatrain|tercet|sonnet)\b", re.IGNORECASE
)
_POEM_LINES = {"haiku": 3, "limerick": 5, "couplet": 2, "quatrain": 4, "tercet": 3, "sonnet": 14}
#: bullets asked for with no number: "then bullet points", "as a bulleted list", "in bullets"
_SOME_BULLETS = re.compile(r"\bbullet(?:s|\s+points?|ed\s+(?:list|lines?|points?))\b", re.IGNORECASE)
_NUMBERED = re.compile(r"\bnumbered\b", re.IGNORECASE)
_ONE_PER_LINE = re.compile(r"\b(?:one|each)\s+(?:per|a|on\s+(?:its|a)\s+own)\s+line\b", re.IGNORECASE)
#: a line the output starts with, quoted: "the first line is '# Summary'", "a '# Report' heading", "titled 'Q3'"
_QUOTED = r"""(?P<q>['"`])(?P<line>[^'"`\n]{1,120})(?P=q)"""
_FIRST_LINE = (
    re.compile(rf"\bfirst\s+line\s+(?:is|should\s+be|must\s+be|reads?|says?)\s*:?\s*{_QUOTED}", re.IGNORECASE),
    # "should start with the line 'X'", "Start it with 'X'": not "the lines that start with 'import'"
    re.compile(
        rf"(?:\b(?:should|must|shall|to|will)\s+|(?:^|[.;:,]\s+))(?:start|begin)\s+(?:it\s+)?with\s+"
        rf"(?:the\s+(?:line|heading|title)\s+)?{_QUOTED}",
        re.IGNORECASE,
    ),
    re.compile(rf"{_QUOTED}\s+(?:as\s+(?:a|the|its)\s+)?heading\b", re.IGNORECASE),
    re.compile(rf"\b(?:heading|headed)\s*:?\s*{_QUOTED}", re.IGNORECASE),
)
_MARKED = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+\S")
_NUMBERED_LINE = re.compile(r"^\s*\d{1,3}[.)]\s+\S")
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=\S)")


@dataclass(frozen=True)
class ListForm:
    """``count`` items (None: a list of no said length), written as ``style`` says; ``said_bullets``: the task says
    bullets (a check counts bullet marks only), not points, takeaways or keywords (any list marks, or lines);
    ``said_lines``: the task says its number of lines ("a two-line slogan") or names a poem of fixed form (a haiku:
    3 lines)."""

    count: int | None
    style: Style
    said_bullets: bool = False
    said_lines: bool = False

    def criterion(self, path: str) -> str:
        """The check of this form in words, about the output ``path``."""
        return f"{path} has {self.found(self.count)}" if self.count is not None else f"{path} has bullet lines"

    def found(self, count: int | None) -> str:
        """``count`` of this form's items in words: "3 bullet lines", "1 sentence"."""
        if self.style == "sentences":
            return f"{count} sentence{'s' if count != 1 else ''}"
        if self.said_bullets or self.count is None:
            return f"{count} bullet line{'s' if count != 1 else ''}"
        what = {"numbered": "numbered lines", "lines": "lines", "bullets": "items (one a line)"}[self.style]
        return f"{count} {what}"

    def counted(self, text: str) -> int:
        """How many of this form's items ``text`` holds."""
        if self.style == "sentences":
            return count_sentences(text)
        lines = [line for line in text.splitlines() if line.strip()]
        if self.style == "numbered":
            return sum(1 for line in lines if _NUMBERED_LINE.match(line))
        if self.said_bullets or self.count is None:
            return sum(1 for line in lines if line.lstrip().startswith(BULLET_MARKS))
        return count_items(text) if self.style == "bullets" else len(lines)

    def met_by(self, count: int) -> bool:
        return count >= 1 if self.count is None else count == self.count


def said_number(word: str) -> int:
    """The number ``word`` writes: digits, a number word ("three"), or "a single" (1)."""
    said = " ".join(word.lower().split())
    return 1 if said in ("a single", "single") else NUMBER_WORDS[said] if said in NUMBER_WORDS else int(said)


def _one(found: set[int]) -> int | None:
    return next(iter(found)) if len(found) == 1 else None


def list_form(task: str) -> ListForm | None:
    """The list ``task`` asks its output to be (see the module), or None where it says none, or two counts of the
    same thing and neither is the total ("one bullet each (2 bullets)": 2)."""
    numbered = _NUMBERED.search(task) is not None
    bullets = {said_number(m.group(1)) for m in _BULLETS.finditer(task)}
    if bullets:
        total = {said_number(m.group(1)) for m in _TOTAL_BULLETS.finditer(task)}
        count = _one(bullets) if len(bullets) == 1 else _one(total)
        return None if count is None else ListForm(count, "numbered" if numbered else "bullets", said_bullets=True)
    if (items := {said_number(m.group(1)) for m in _ITEMS.finditer(task)}) and (count := _one(items)):
        style: Style = "numbered" if numbered else "lines" if _ONE_PER_LINE.search(task) else "bullets"
        return ListForm(count, style)
    if sentences := {said_number(m.group(1)) for m in _SENTENCES.finditer(task)}:
        count = _one(sentences)
        return None if count is None else ListForm(count, "sentences")
    lines = {n for m in _LINES_OF.finditer(task) if (n := said_number(m.group(1) or m.group(2))) > 1}
    if lines := lines | {_POEM_LINES[m.group(1).lower()] for m in _POEM.finditer(task)}:
        count = _one(lines)
        return None if count is None else ListForm(count, "lines", said_lines=True)
    if _SOME_BULLETS.search(task):
        return ListForm(None, "bullets", said_bullets=True)
    return None


def first_line(task: str) -> str | None:
    """The line the task quotes for its output to start with ("the first line is '# Summary'"), or None."""
    for pattern in _FIRST_LINE:
        if found := pattern.search(task):
            return found.group("line").strip() or None
    return None


def count_items(text: str) -> int:
    """The items of a list in ``text``: its lines marked as bullets or numbers, or, where none is, its lines."""
    lines = [line for line in text.splitlines() if line.strip()]
    marked = sum(1 for line in lines if _MARKED.match(line))
    return marked or len(lines)


def sentences_of(text: str) -> list[str]:
    """The sentences of ``text``: pieces ending in '.', '!' or '?' (the last one whatever it ends in)."""
    return [piece for piece in _SENTENCE_END.split(text.strip()) if piece.strip()]


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (all of it where it has one)."""
    return next(iter(sentences_of(text)), text.strip())


def count_sentences(text: str) -> int:
    return len(sentences_of(text))
