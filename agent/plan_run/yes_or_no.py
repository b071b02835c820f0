"""A question answered yes or no: whether a task asks for such an answer (``asks_yes_or_no``), and what a text
answers (``answer_in``).

Asked "is the booking server running with debug on? yes or no into out/debug.txt", the 1.5B model picked a
replacement of 'debug' with 'yes' (omx's code of it wrote the whole config out), a key's value ('closed' for "Is the
shop open on Sundays? answer yes or no") or a filter of rows (which printed nothing): no operation of
``text_operations`` answers yes or no, so none is taken for such a task (``operation_fitting.fitted``), and the code
asked for completes a template whose ``result`` is True or False, printed as yes or no
(``code_templates.Template.answering_yes_or_no``). A second program's "True" is the same answer as "yes"
(``second_program.same_value``); the output is checked to start with yes or no (``task_checks``).
"""

from __future__ import annotations

import re

__all__ = ["answer_in", "asks_yes_or_no", "first_answer"]

#: the words that ask for a yes or a no: "yes or no", "yes/no", "Y/N", "true or false"
_ASKS = re.compile(r"\byes\s*(?:or|/)\s*no\b|\by/n\b|\btrue\s*(?:or|/)\s*false\b", re.IGNORECASE)
#: each word of a yes or a no, and the answer it gives
_ANSWERS = {"yes": True, "true": True, "no": False, "false": False}


def asks_yes_or_no(task: str) -> bool:
    """Whether ``task`` asks for its answer as a yes or a no (``_ASKS``)."""
    return _ASKS.search(task) is not None


def answer_in(text: str) -> bool | None:
    """What ``text`` answers where it is one word of yes or no, in any case, a full stop or an exclamation mark after
    it ("No.", "True"); else None."""
    return _ANSWERS.get(text.strip().rstrip(".!").lower())


def first_answer(text: str) -> bool | None:
    """What the first word of ``text`` answers ("Yes, the shop opens at 10": True); None where it is no yes or no."""
    words = text.split(maxsplit=1)
    return answer_in(words[0].strip(",;:")) if words else None
