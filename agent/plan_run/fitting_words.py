"""The words of a task that the fitting of an operation the model picked reads (``operation_fitting``,
``table_fitting``): the task's words without its paths (``words_of``), whether it says a value (``says``), and the
words that ask for a count, for the largest of something and for the smallest.
"""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = ["ASKS_A_COUNT", "LEAST", "MOST", "is_superlative", "most_and_least", "says", "words_of"]

#: the words that ask for a count
ASKS_A_COUNT = re.compile(
    r"\bhow\s+(?:many|often)\b|\bcount|\bnumber\s+of\b|\btally\b|\btotal\s+(?:lines|words|rows|files)\b", re.IGNORECASE
)


#: the words that ask for the largest of something, and those that ask for the smallest
MOST = re.compile(r"\b(?:highest|largest|biggest|greatest|maximum|max|most|warmest|hottest|heaviest|longest|"
                   r"tallest|richest)\b", re.IGNORECASE)  # fmt: skip
LEAST = re.compile(r"\b(?:lowest|smallest|least|minimum|min|fewest|coldest|coolest|lightest|shortest|cheapest)\b",
                    re.IGNORECASE)  # fmt: skip


#: the words that ask for the quickest or the slowest: the least or the most of a time taken, the other way round
#: for a speed
_QUICKEST = re.compile(r"\b(?:fastest|quickest|speediest)\b", re.IGNORECASE)
_SLOWEST = re.compile(r"\bslowest\b", re.IGNORECASE)
_TIME_TAKEN = re.compile(
    r"\b(?:times?|durations?|minutes?|mins?|seconds?|secs?|hours?|hrs?|ms|elapsed|took|laps?)\b", re.IGNORECASE
)
_SPEED = re.compile(r"\b(?:speeds?|mph|kph|km/?h|velocity|per\s+(?:hour|second|minute)|rate)\b", re.IGNORECASE)


def most_and_least(words: str, columns: Collection[str] = ()) -> tuple[re.Match[str] | None, re.Match[str] | None]:
    """Where ``words`` (a task's, without its paths) ask for the largest of something, the match of the word that
    asks, and where they ask for the smallest, that one's (``MOST``, ``LEAST``). Where they ask for neither but for
    the fastest or the slowest, those words are the smallest and the largest of a time taken (the words, or the
    columns of a table they say, else all its ``columns``, name a time: "Who ran fastest (the minutes column)?"), the
    largest and the smallest of a speed (they name a speed); neither where they name both or neither."""
    most, least = MOST.search(words), LEAST.search(words)
    quick, slow = _QUICKEST.search(words), _SLOWEST.search(words)
    if most or least or not (quick or slow):
        return most, least
    said = [name for name in columns if name.strip() and says(words, name.strip())] or list(columns)
    spaced, named = words.replace("_", " "), " ".join(said).replace("_", " ")  # speed_kmh: speed, kmh
    timed, sped = _TIME_TAKEN.search(spaced) or _TIME_TAKEN.search(named), _SPEED.search(spaced) or _SPEED.search(named)
    if timed and not sped:
        return slow, quick
    if sped and not timed:
        return quick, slow
    return None, None


def is_superlative(text: str) -> bool:
    """Whether ``text`` is only a word for the most, the least, the fastest or the slowest ("highest")."""
    return any(pattern.fullmatch(text.strip()) for pattern in (MOST, LEAST, _QUICKEST, _SLOWEST))


def says(task: str, value: str) -> bool:
    """Whether ``task`` says ``value`` as a whole word or words (case aside)."""
    return bool(re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", task, re.IGNORECASE))


#: a path or file name in a task's words (``out/errors.txt``, ``notes.md``)
_PATH_LIKE = re.compile(r"\S*/\S*|\S+\.\w{1,8}\b")


def words_of(task: str) -> str:
    """``task``'s words without its paths and file names, spaced once: what it says, not where things are."""
    return " ".join(_PATH_LIKE.sub(" ", task).split())
