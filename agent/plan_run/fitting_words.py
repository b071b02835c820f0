"""The words of a task that the fitting of an operation the model picked reads (``operation_fitting``,
``table_fitting``): the task's words without its paths (``words_of``), whether it says a value (``says``), and the
words that ask for a count, for the largest of something and for the smallest.
"""

from __future__ import annotations

import re

__all__ = ["ASKS_A_COUNT", "LEAST", "MOST", "says", "words_of"]

#: the words that ask for a count
ASKS_A_COUNT = re.compile(
    r"\bhow\s+(?:many|often)\b|\bcount|\bnumber\s+of\b|\btally\b|\btotal\s+(?:lines|words|rows|files)\b", re.IGNORECASE
)


#: the words that ask for the largest of something, and those that ask for the smallest
MOST = re.compile(r"\b(?:highest|largest|biggest|greatest|maximum|max|most|warmest|hottest|heaviest|longest|"
                   r"tallest|richest)\b", re.IGNORECASE)  # fmt: skip
LEAST = re.compile(r"\b(?:lowest|smallest|least|minimum|min|fewest|coldest|coolest|lightest|shortest|cheapest)\b",
                    re.IGNORECASE)  # fmt: skip


def says(task: str, value: str) -> bool:
    """Whether ``task`` says ``value`` as a whole word or words (case aside)."""
    return bool(re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", task, re.IGNORECASE))


#: a path or file name in a task's words (``out/errors.txt``, ``notes.md``)
_PATH_LIKE = re.compile(r"\S*/\S*|\S+\.\w{1,8}\b")


def words_of(task: str) -> str:
    """``task``'s words without its paths and file names, spaced once: what it says, not where things are."""
    return " ".join(_PATH_LIKE.sub(" ", task).split())
