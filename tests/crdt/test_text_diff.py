"""``diff_spans``: exact (the spans turn old into new), ordered, and tight; and Myers' shortest edits."""

from __future__ import annotations

import random
from collections.abc import Iterator
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omxfs.crdt import text_diff
from omxfs.crdt.text_diff import Span, diff_spans


def applied(old: str, new: str, spans: list[Span]) -> str:
    """``old`` with the spans applied, after checking they are ordered, apart, non-empty and in range."""
    out, at = [], 0
    for i1, i2, j1, j2 in spans:
        assert at <= i1 <= i2 <= len(old) and 0 <= j1 <= j2 <= len(new)
        assert (i1, j1) != (i2, j2)  # never an empty span
        assert at == 0 or i1 > at  # never touching the previous one: each insert keeps its own anchor
        out.append(old[at:i1] + new[j1:j2])
        at = i2
    return "".join(out) + old[at:]


def check(old: str, new: str) -> list[Span]:
    spans = diff_spans(old, new)
    assert applied(old, new, spans) == new
    assert (spans == []) == (old == new)
    return spans


def edited(text: str, edits: list[tuple[float, int, str]]) -> str:
    """``text`` with each ``(where, deleted, inserted)`` applied, ``where`` a fraction of the length."""
    for where, deleted, inserted in edits:
        at = int(where * len(text))
        text = text[:at] + inserted + text[at + deleted :]
    return text


def rewritten(old: str, spans: list[Span]) -> int:
    return sum(i2 - i1 for i1, i2, _, _ in spans)


# -- exact and ordered ------------------------------------------------------------------------------------------

EDITS = st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 6), st.text("xy \n", max_size=6)),
    max_size=12,
)
# tiny thresholds, so that small texts take every path: anchors, runs of tokens, Myers by steps, long tokens
TINY = {"_SMALL": 2, "_MYERS_CAP": 2, "_MAX_DEPTH": 2, "_LONG": 2}


@settings(max_examples=300, deadline=None)
@given(st.text("ab \n.", max_size=300), EDITS)
def test_spans_turn_old_into_new_after_scattered_edits(old: str, edits: list[tuple[float, int, str]]) -> None:
    check(old, edited(old, edits))


@settings(max_examples=300, deadline=None)
@given(st.text("ab \n.", max_size=200), EDITS, st.sampled_from(sorted(TINY)))
def test_spans_are_exact_on_every_path(old: str, edits: list[tuple[float, int, str]], knob: str) -> None:
    with patch.object(text_diff, knob, TINY[knob]):
        check(old, edited(old, edits))
    with patch.multiple(text_diff, **TINY):
        check(old, edited(old, edits))


@settings(max_examples=200, deadline=None)
@given(st.text("ab \n", max_size=60), st.text("ab \n", max_size=60))
def test_spans_are_exact_between_unrelated_texts(old: str, new: str) -> None:
    check(old, new)
    with patch.multiple(text_diff, **TINY):
        check(old, new)


def lcs(a: str, b: str) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        nxt = [0]
        for j, y in enumerate(b):
            nxt.append(row[j] + 1 if x == y else max(row[j + 1], nxt[j]))
        row = nxt
    return row[-1]


def matched(a: str, b: str, path: list[tuple[int, int, int]]) -> Iterator[int]:
    at_a = at_b = 0
    for i, j, n in path:
        assert i >= at_a and j >= at_b and n > 0 and a[i : i + n] == b[j : j + n]
        at_a, at_b = i + n, j + n
        yield n


@settings(max_examples=300, deadline=None)
@given(st.text("abc", max_size=14), st.text("abc", max_size=14), st.integers(1, 6))
def test_myers_finds_a_shortest_edit_or_the_best_start_within_its_cap(a: str, b: str, cap: int) -> None:
    path, x, y = text_diff._myers(a, 0, len(a), b, 0, len(b), len(a) + len(b))
    assert (x, y) == (len(a), len(b))
    assert sum(matched(a, b, path)) == lcs(a, b)
    path, x, y = text_diff._myers(a, 0, len(a), b, 0, len(b), cap)
    kept = sum(matched(a, b, path))
    if (x, y) == (len(a), len(b)):
        assert kept == lcs(a, b)
    elif (x, y) != (0, 0):  # stopped after exactly ``cap`` edits, on a shortest path to where it stopped
        assert x + y - 2 * kept == cap
        assert kept == lcs(a[:x], b[:y])
        assert all(i + n <= x and j + n <= y for i, j, n in path)


@settings(max_examples=200, deadline=None)
@given(st.text("ab", max_size=5), st.integers(0, 40), st.text("ab", max_size=5), st.integers(0, 60))
def test_equal_runs_are_measured_both_ways(head: str, n: int, tail: str, limit: int) -> None:
    a, b = f"x{head}{'c' * n}{tail}y", f"z{head}{'c' * n}{tail[::-1]}w"
    limit = min(limit, len(a) - 1, len(b) - 1)  # callers keep runs inside the stretch they align
    forward = next(k for k in range(len(a)) if a[1 + k] != b[1 + k])
    assert text_diff._run(a, 1, b, 1, limit) == min(forward, limit)
    a, b = a[::-1], b[::-1]
    assert text_diff._run_back(a, len(a) - 1, b, len(b) - 1, limit) == min(forward, limit)


# -- tight ------------------------------------------------------------------------------------------------------


def test_one_changed_word_rewrites_that_word() -> None:
    old = "alpha\nthe quick brown fox jumps\nomega\n"
    new = old.replace("brown", "red")
    at = old.index("brown")
    assert check(old, new) == [(at, at + len("brown"), at, at + len("red"))]


def test_a_changed_letter_rewrites_that_letter() -> None:
    assert check("the colour of it", "the color of it") == [(8, 9, 8, 8)]  # the "u"


def test_edits_on_lines_1_and_100_leave_lines_2_to_99_alone() -> None:
    lines = [f"line {i} of the file\n" for i in range(1, 101)]
    new = "".join(["LINE 1 of the file\n", *lines[1:99], "line 100 of the file, edited\n"])
    spans = check("".join(lines), new)
    assert len(spans) == 2
    assert spans[0][:2] == (0, 4)
    assert spans[1][0] == len("".join(lines)) - 1  # just the ", edited" inserted before the last "\n"


def test_scattered_edits_each_get_their_own_span() -> None:
    rng = random.Random(11)
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"]
    lines = [" ".join(rng.choice(words) for _ in range(8)) + "\n" for _ in range(400)]
    old = "".join(lines)
    for at in range(3, 400, 10):  # one word changed in every tenth line: 40 spans of that word
        lines[at] = lines[at].replace(" ", " XY", 1)
    spans = check(old, "".join(lines))
    assert len(spans) == 40
    assert rewritten(old, spans) == 0  # each "XY" is inserted, nothing of the old text rewritten


def test_repeated_lines_with_scattered_edits() -> None:
    rng = random.Random(5)
    pool = ["    return x\n", "}\n", "\n", "    x += 1\n"]
    old_lines = [rng.choice(pool) for _ in range(3000)]
    new_lines = list(old_lines)
    for at in rng.sample(range(3000), 30):
        new_lines[at] = new_lines[at].replace("x", "y")
    old, new = "".join(old_lines), "".join(new_lines)
    spans = check(old, new)
    assert len(spans) <= 30
    assert rewritten(old, spans) <= 2 * 30


def test_a_long_text_without_newlines() -> None:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    old = " ".join(rng.choice(words) for _ in range(20_000))  # ~120k characters, one line
    new = edited(old, [(i / 50 + rng.random() / 100, 2, "ZZ") for i in range(50)])
    spans = check(old, new)
    assert 40 <= len(spans) <= 50
    assert rewritten(old, spans) <= 50 * 4


def test_a_long_token_is_diffed_by_character() -> None:
    old = "a" * 50_000
    new = edited(old, [(0.2, 1, "b"), (0.5, 0, "cc"), (0.8, 0, "d")])
    spans = check(old, new)
    assert len(spans) == 3
    assert rewritten(old, spans) == 1


def test_a_rewrite_stays_exact() -> None:
    rng = random.Random(9)
    words = ["one", "two", "three", "four", "five", "six"]
    old = "\n".join(" ".join(rng.choice(words) for _ in range(6)) for _ in range(2000))
    new = "\n".join(" ".join(rng.choice(words) for _ in range(6)) for _ in range(2000))
    check(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [("", "abc"), ("abc", ""), ("same", "same"), ("a\nb\n", "a\nb"), ("x", "x\n"), ("\n\n\n", "\n\n")],
)
def test_edges(old: str, new: str) -> None:
    check(old, new)
