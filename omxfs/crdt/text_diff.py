"""The difference between two texts as a few replaced spans, for turning a rewritten file into RGA edits.

A writer hands back the whole file, and every character the diff calls "deleted and reinserted" loses its
identity: a concurrent edit anchored on it would then land somewhere odd. So the spans are few and tight:
common prefix and suffix are cut first (most writes touch one spot), the middle is diffed line by line (an
edit on line 1 and one on line 100 must not rewrite lines 2-99), each replaced block of lines word by word
(changing one word rewrites that word, not the line), and each replaced run of words is trimmed again
character by character ("colour" → "color" deletes the "u").

And the cost follows the size of the change, not of the text, even for thousands of scattered edits. Myers'
diff costs about D² steps for D differences, which pure Python pays dearly past a few hundred, so it only
runs on small pieces: a level is first split at *anchors*, tokens (or, in repetitive text, runs of 4 or 16
tokens) that occur once in each side, kept in the longest order both agree on (patience diff), then the gaps
between anchors are split again the same way. A small gap goes to Myers, which finds a shortest edit; a big
one with no anchor left goes to Myers a bounded D at a time, each time from the furthest point the last one
reached, for as long as that keeps more tokens than it changes (repetitive text with many small edits); the
rest stays one replaced block, coarser but still exact. A long token with no word breaks ("aaaa…", a blob) is
diffed again by character the same way, when that keeps more than it changes.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from itertools import accumulate

#: ``(old_start, old_end, new_start, new_end)``: ``old[old_start:old_end]`` becomes ``new[new_start:new_end]``
Span = tuple[int, int, int, int]
#: ``(i, j, n)``: tokens ``a[i:i+n]`` equal ``b[j:j+n]``
_Match = tuple[int, int, int]

#: a word or a punctuation mark with the blanks after it, or leading blanks (blanks alone would match anywhere)
_WORD = re.compile(r"\w+\s*|[^\w\s]\s*|\s+")
#: a gap of at most this many tokens (both sides together) goes straight to Myers, which then always finishes
_SMALL = 48
#: otherwise Myers goes this many differences at a time: its cost grows as the square of it
_MYERS_CAP = 64
#: and goes on from where it got furthest, less this much for each diagonal it strayed from the far corner's
_STRAY = 2
#: a long token (no word breaks: "aaaa…", a blob) replaced by something longer than this on both sides is
#: diffed again character by character
_LONG = 32
#: anchor keys: single tokens first, then runs of tokens, which are unique where single ones repeat
_GRAMS = (1, 4, 16)
#: splitting at anchors stops this deep (a guard: each level usually splits a gap into many small ones)
_MAX_DEPTH = 40


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix, by bisection on C-speed slice compares (texts can be 100k chars)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit`` (so it never overlaps a prefix already cut)."""
    lo, hi = 0, min(len(a), len(b), limit)
    la, lb = len(a), len(b)
    if a[la - hi :] == b[lb - hi :]:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def diff_spans(old: str, new: str) -> list[Span]:
    """Spans, in increasing order and not overlapping (not even touching), that turn ``old`` into ``new``."""
    if old == new:
        return []
    pre = common_prefix(old, new)
    suf = common_suffix(old, new, min(len(old), len(new)) - pre)
    a, b = old[pre : len(old) - suf], new[pre : len(new) - suf]
    if not a or not b:
        return [(pre, pre + len(a), pre, pre + len(b))]
    spans: list[Span] = []
    if "\n" not in a and "\n" not in b:
        _diff_words(a, b, pre, pre, spans)
        return spans
    # widen the middle to whole lines, or a "\n" left in the suffix would make its last line differ from its
    # twin ("omega" / "omega\n") and the whole block would be rewritten
    pre = old.rfind("\n", 0, pre) + 1
    tail = len(old) - suf
    if tail and old[tail - 1] != "\n":
        eol = old.find("\n", tail)
        suf = len(old) - eol - 1 if eol >= 0 else 0
    a, b = old[pre : len(old) - suf], new[pre : len(new) - suf]
    a_lines, b_lines = _lines(a), _lines(b)
    a_at, b_at = _offsets(a_lines), _offsets(b_lines)
    for i1, i2, j1, j2 in _gaps(a_lines, b_lines):
        x1, x2, y1, y2 = a_at[i1], a_at[i2], b_at[j1], b_at[j2]
        if x1 < x2 and y1 < y2:
            _diff_words(a[x1:x2], b[y1:y2], pre + x1, pre + y1, spans)
        else:
            spans.append((pre + x1, pre + x2, pre + y1, pre + y2))
    return spans


# -- the three levels ----------------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept, so they join back to ``text`` (only ``\\n`` splits: files are Unix text)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _offsets(tokens: list[str]) -> list[int]:
    return list(accumulate(map(len, tokens), initial=0))


def _diff_words(a: str, b: str, at_a: int, at_b: int, out: list[Span]) -> None:
    """Append the spans turning ``a`` into ``b`` (placed at ``at_a`` / ``at_b``), diffed word by word."""
    a_words, b_words = _WORD.findall(a), _WORD.findall(b)
    a_at, b_at = _offsets(a_words), _offsets(b_words)
    for i1, i2, j1, j2 in _gaps(a_words, b_words):
        x1, x2, y1, y2 = a_at[i1], a_at[i2], b_at[j1], b_at[j2]
        span = _trimmed(a[x1:x2], b[y1:y2], x1, y1)
        if span is None:
            continue
        x1, x2, y1, y2 = span
        one_token = i2 - i1 == 1 or j2 - j1 == 1  # a run of words is rewritten, a long token may be edited
        if one_token and min(x2 - x1, y2 - y1) > _LONG and _diff_chars(a[x1:x2], b[y1:y2], at_a + x1, at_b + y1, out):
            continue
        out.append((at_a + x1, at_a + x2, at_b + y1, at_b + y2))


def _diff_chars(a: str, b: str, at_a: int, at_b: int, out: list[Span]) -> bool:
    """Append the spans turning ``a`` into ``b`` char by char, if that keeps more characters than it changes.

    Only for long runs: in short ones a few letters in common are chance, and rewriting the word is better.
    """
    gaps = list(_gaps(a, b))
    changed = sum(i2 - i1 + j2 - j1 for i1, i2, j1, j2 in gaps)
    if len(a) + len(b) - changed <= 2 * changed:
        return False
    out.extend((at_a + i1, at_a + i2, at_b + j1, at_b + j2) for i1, i2, j1, j2 in gaps)
    return True


def _trimmed(old: str, new: str, at_old: int, at_new: int) -> Span | None:
    """``old`` → ``new`` as one span with their common ends cut, placed at ``at_old`` / ``at_new``."""
    pre = common_prefix(old, new)
    suf = common_suffix(old, new, min(len(old), len(new)) - pre)
    if pre + suf == len(old) == len(new):
        return None
    return (at_old + pre, at_old + len(old) - suf, at_new + pre, at_new + len(new) - suf)


# -- token sequences: anchors, then Myers ------------------------------------------------------------------


def _gaps(a: Sequence[Hashable], b: Sequence[Hashable]) -> Iterator[tuple[int, int, int, int]]:
    """The unmatched stretches ``(i1, i2, j1, j2)`` between the matches of ``a`` and ``b``, in order."""
    matches: list[_Match] = []
    _align(a, 0, len(a), b, 0, len(b), 0, matches)
    i = j = 0
    for mi, mj, n in matches:
        if mi > i or mj > j:
            yield i, mi, j, mj
        i, j = mi + n, mj + n
    if i < len(a) or j < len(b):
        yield i, len(a), j, len(b)


def _align(
    a: Sequence[Hashable], alo: int, ahi: int, b: Sequence[Hashable], blo: int, bhi: int, depth: int, out: list[_Match]
) -> None:
    """Append to ``out``, in order, matches between ``a[alo:ahi]`` and ``b[blo:bhi]``."""
    n = _run(a, alo, b, blo, min(ahi - alo, bhi - blo))
    if n:
        out.append((alo, blo, n))
        alo, blo = alo + n, blo + n
    s = _run_back(a, ahi, b, bhi, min(ahi - alo, bhi - blo))
    ahi, bhi = ahi - s, bhi - s
    if alo < ahi and blo < bhi:
        size = ahi - alo + bhi - blo
        if size <= _SMALL:
            out.extend(_myers(a, alo, ahi, b, blo, bhi, size)[0])
        elif anchors := (_anchors(a, alo, ahi, b, blo, bhi) if depth < _MAX_DEPTH else []):
            for i, j in anchors:
                if i > alo or j > blo:
                    _align(a, alo, i, b, blo, j, depth + 1, out)
                out.append((i, j, 1))
                alo, blo = i + 1, j + 1
            _align(a, alo, ahi, b, blo, bhi, depth + 1, out)
        else:
            _greedy(a, alo, ahi, b, blo, bhi, out)
    if s:
        out.append((ahi, bhi, s))


def _greedy(
    a: Sequence[Hashable], alo: int, ahi: int, b: Sequence[Hashable], blo: int, bhi: int, out: list[_Match]
) -> None:
    """Match a stretch with no anchor by Myers, ``_MYERS_CAP`` edits at a time from the furthest point reached,
    while that keeps matching more tokens than it edits (repetitive text with many small edits). What is left
    after that stays one replaced block."""
    while True:
        path, x, y = _myers(a, alo, ahi, b, blo, bhi, _MYERS_CAP)
        out.extend(path)
        if (x, y) == (ahi - alo, bhi - blo) or sum(n for _, _, n in path) < _MYERS_CAP:
            return
        alo, blo = alo + x, blo + y


def _anchors(
    a: Sequence[Hashable], alo: int, ahi: int, b: Sequence[Hashable], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """Positions ``(i, j)``, increasing in both, where ``a[i] == b[j]`` starts a key found once in each side.

    Keys are single tokens, or if none is unique, runs of 4 then 16 tokens; of the pairs, the longest chain
    increasing in both sides is kept (what patience diff does).
    """
    for k in _GRAMS:
        if k > min(ahi - alo, bhi - blo):
            break
        keys_a: Sequence[Hashable]
        keys_b: Sequence[Hashable]
        if k == 1:
            keys_a, keys_b = a[alo:ahi], b[blo:bhi]
        else:
            keys_a = list(zip(*(a[alo + s : ahi - k + 1 + s] for s in range(k)), strict=True))
            keys_b = list(zip(*(b[blo + s : bhi - k + 1 + s] for s in range(k)), strict=True))
        count_a = Counter(keys_a)
        if 1 not in count_a.values():
            continue
        count_b = Counter(keys_b)
        where = {key: i for i, key in enumerate(keys_a)}
        pairs = [(where[key], j) for j, key in enumerate(keys_b) if count_b[key] == 1 and count_a.get(key) == 1]
        if pairs:
            return [(alo + i, blo + j) for i, j in _increasing(pairs)]
    return []


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``pairs`` (increasing in their second item) increasing in the first too."""
    tails: list[int] = []  # the smallest last first-item of an increasing chain of each length
    ends: list[int] = []  # the index in pairs of that chain's last pair
    before = [-1] * len(pairs)
    for at, (i, _) in enumerate(pairs):
        p = bisect_left(tails, i)
        if p:
            before[at] = ends[p - 1]
        if p == len(tails):
            tails.append(i)
            ends.append(at)
        else:
            tails[p] = i
            ends[p] = at
    chain: list[tuple[int, int]] = []
    at = ends[-1]
    while at >= 0:
        chain.append(pairs[at])
        at = before[at]
    chain.reverse()
    return chain


def _myers(
    a: Sequence[Hashable], alo: int, ahi: int, b: Sequence[Hashable], blo: int, bhi: int, cap: int
) -> tuple[list[_Match], int, int]:
    """Matches of a shortest edit script from ``a[alo:ahi]`` to ``b[blo:bhi]``, and the point it reached.

    Myers' greedy algorithm: for d = 0, 1, … the furthest point each diagonal reaches with d edits, then
    back through the saved fronts. Space is O(cap²), which the cap keeps small. Past ``cap`` edits, the path
    stops at the point it got furthest to (see ``_STRAY``), ``(x, y)`` short of ``(ahi - alo, bhi - blo)``.
    """
    n, m = ahi - alo, bhi - blo
    cap = min(cap, n + m)
    off = cap + 1
    v = [0] * (2 * cap + 3)  # v[off + k]: the furthest x on diagonal k = x - y
    fronts: list[list[int]] = []
    for d in range(cap + 1):
        fronts.append(v[:])
        for k in range(-d, d + 1, 2):
            # step down (one inserted token) from diagonal k + 1, or right (one deleted) from k - 1
            down = k == -d or (k != d and v[off + k - 1] < v[off + k + 1])
            x = v[off + k + 1] if down else v[off + k - 1] + 1
            y = x - k
            if x < n and y < m and a[alo + x] == b[blo + y]:
                x += _run(a, alo + x, b, blo + y, min(n - x, m - y))
            v[off + k] = x
            if x >= n and x - k >= m:  # reached the far corner: nothing off the grid gets here first
                return _myers_path(fronts, off, d, n, m, alo, blo), n, m
    # stopped after cap edits: go on from the point on the grid (some diagonals run off its edges) that got
    # furthest, less how far it strayed from the far corner's diagonal, which later steps have to pay back (in
    # repetitive text many diagonals get about as far, and picking among them by reach alone drifts)
    end = n - m
    best = max(
        (
            (2 * x - k - _STRAY * abs(k - end), k)
            for k in range(-cap, cap + 1, 2)
            if (x := v[off + k]) <= n and x - k <= m
        ),
        default=None,
    )
    if best is None:
        return [], 0, 0
    k = best[1]
    x = v[off + k]
    return _myers_path(fronts, off, cap, x, x - k, alo, blo), x, x - k


def _myers_path(fronts: list[list[int]], off: int, d: int, x: int, y: int, alo: int, blo: int) -> list[_Match]:
    """The diagonal runs of the path that ends at ``(x, y)`` after ``d`` edits, in order."""
    path: list[_Match] = []
    for e in range(d, 0, -1):
        v, k = fronts[e], x - y
        if k == -e or (k != e and v[off + k - 1] < v[off + k + 1]):
            pk = k + 1  # came down from diagonal k + 1
            px = v[off + pk]
            sx, sy = px, px - pk + 1
        else:
            pk = k - 1  # came right from diagonal k - 1
            px = v[off + pk]
            sx, sy = px + 1, px - pk
        if x > sx:
            path.append((alo + sx, blo + sy, x - sx))
        x, y = px, px - pk
    if x:
        path.append((alo, blo, x))
    path.reverse()
    return path


def _run(a: Sequence[Hashable], i: int, b: Sequence[Hashable], j: int, limit: int) -> int:
    """How many tokens from ``a[i]`` and ``b[j]`` on are equal, at most ``limit``: by growing slice compares."""
    n = 0
    while n < limit and a[i + n] == b[j + n]:  # most runs are short
        n += 1
        if n == 8:
            break
    else:
        return n
    step, growing = 8, True
    while n < limit:
        step = min(step, limit - n)
        if a[i + n : i + n + step] == b[j + n : j + n + step]:
            n += step
            if growing:
                step *= 2
        elif step == 1:
            break
        else:
            step //= 2
            growing = False
    return n


def _run_back(a: Sequence[Hashable], i: int, b: Sequence[Hashable], j: int, limit: int) -> int:
    """How many tokens up to ``a[i - 1]`` and ``b[j - 1]`` are equal, at most ``limit``."""
    n = 0
    while n < limit and a[i - n - 1] == b[j - n - 1]:
        n += 1
        if n == 8:
            break
    else:
        return n
    step, growing = 8, True
    while n < limit:
        step = min(step, limit - n)
        if a[i - n - step : i - n] == b[j - n - step : j - n]:
            n += step
            if growing:
                step *= 2
        elif step == 1:
            break
        else:
            step //= 2
            growing = False
    return n
