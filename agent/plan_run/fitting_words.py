"""The words of a task that the fitting of an operation the model picked reads (``operation_fitting``,
``table_fitting``): the task's words without its paths (``words_of``), whether it says a value (``says``), the
words that ask for a count, and those that ask for the largest of something or the smallest, also where the word
says it by what it means (the fastest, the youngest, the cheapest: ``most_and_least``, ``measured_by_meaning``).
"""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = [
    "ASKS_A_COUNT",
    "LEAST",
    "MOST",
    "is_superlative",
    "measured_by_meaning",
    "most_and_least",
    "says",
    "words_of",
]

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


#: the words that ask for the youngest or the oldest: the latest or the earliest of a birth date, the least or the
#: most of an age
_YOUNGEST = re.compile(r"\byoungest\b", re.IGNORECASE)
_OLDEST = re.compile(r"\b(?:oldest|eldest)\b", re.IGNORECASE)
_BORN = re.compile(r"\b(?:birth\w*|born|dob|d\.o\.b\.?)\b", re.IGNORECASE)
_AGE = re.compile(r"\bages?\b|\bage\s+(?:in\s+)?(?:years|months)\b", re.IGNORECASE)


def most_and_least(words: str, columns: Collection[str] = ()) -> tuple[re.Match[str] | None, re.Match[str] | None]:
    """Where ``words`` (a task's, without its paths) ask for the largest of something, the match of the word that
    asks, and where they ask for the smallest, that one's (``MOST``, ``LEAST``). Where they ask for neither but for
    the fastest or the slowest, those words are the smallest and the largest of a time taken (the words, or the
    columns of a table they say, else all its ``columns``, name a time: "Who ran fastest (the minutes column)?"), the
    largest and the smallest of a speed (they name a speed); the youngest and the oldest the largest and the
    smallest of a birth date, the other way round of an age; neither where they name both or neither."""
    most, least = MOST.search(words), LEAST.search(words)
    quick, slow = _QUICKEST.search(words), _SLOWEST.search(words)
    young, old = _YOUNGEST.search(words), _OLDEST.search(words)
    if most or least or not (quick or slow or young or old):
        return most, least
    said = [name for name in columns if name.strip() and says(words, name.strip())] or list(columns)
    named = f"{words} {' '.join(said)}".replace("_", " ")  # speed_kmh: speed, kmh
    if quick or slow:  # the least or the most of a time taken; the most or the least of a speed
        timed, sped = _TIME_TAKEN.search(named), _SPEED.search(named)
        return (slow, quick) if timed and not sped else (quick, slow) if sped and not timed else (None, None)
    born, aged = _BORN.search(named), _AGE.search(named)
    if not (born or aged):  # the words say neither: the table's columns
        every = " ".join(columns).replace("_", " ")
        born, aged = _BORN.search(every), _AGE.search(every)
    return (young, old) if born and not aged else (old, young) if aged and not born else (None, None)


#: what a word for the most or the least measures, and the words a column that measures it is named by
_MEANINGS = [
    (re.compile(r"\b(?:cheapest|(?:most|least)\s+expensive|priciest|dearest|costliest)\b", re.IGNORECASE),
     re.compile(r"\b(?:price|prices|cost|costs|fee|fees|charge|amount|gbp|usd|eur)\b", re.IGNORECASE)),
    (re.compile(rf"{_YOUNGEST.pattern}|{_OLDEST.pattern}", re.IGNORECASE),
     re.compile(rf"{_BORN.pattern}|{_AGE.pattern}", re.IGNORECASE)),
    (re.compile(rf"{_QUICKEST.pattern}|{_SLOWEST.pattern}", re.IGNORECASE),
     re.compile(rf"{_TIME_TAKEN.pattern}|{_SPEED.pattern}", re.IGNORECASE)),
    (re.compile(r"\b(?:heaviest|lightest)\b", re.IGNORECASE),
     re.compile(r"\b(?:weight|kg|kgs|lbs?|grams?)\b", re.IGNORECASE)),
    (re.compile(r"\btallest\b", re.IGNORECASE), re.compile(r"\b(?:height|cm|tall)\b", re.IGNORECASE)),
]  # fmt: skip


def measured_by_meaning(words: str, columns: Collection[str]) -> list[str]:
    """The ``columns`` of a table that measure what the word for the most or the least in ``words`` means, by their
    names: a price for the cheapest ("whats the cheapest med per unit": unit_price_gbp), a birth date or an age for
    the youngest, a time or a speed for the fastest, a weight for the heaviest, a height for the tallest."""
    meant = [names for asks, names in _MEANINGS if asks.search(words)]
    return [column for column in columns if any(names.search(column.replace("_", " ")) for names in meant)]


def is_superlative(text: str) -> bool:
    """Whether ``text`` is only a word for the most, the least, the fastest, the slowest, the youngest or the oldest
    ("highest")."""
    return any(pattern.fullmatch(text.strip()) for pattern in (MOST, LEAST, _QUICKEST, _SLOWEST, _YOUNGEST, _OLDEST))


def says(task: str, value: str) -> bool:
    """Whether ``task`` says ``value`` as a whole word or words (case aside)."""
    return bool(re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", task, re.IGNORECASE))


#: a path or file name in a task's words (``out/errors.txt``, ``notes.md``)
_PATH_LIKE = re.compile(r"\S*/\S*|\S+\.\w{1,8}\b")


def words_of(task: str) -> str:
    """``task``'s words without its paths and file names, spaced once: what it says, not where things are."""
    return " ".join(_PATH_LIKE.sub(" ", task).split())
