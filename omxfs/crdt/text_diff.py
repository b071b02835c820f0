"""The difference between two texts as a few replaced spans, for turning a rewritten file into RGA edits.

A writer hands back the whole file, and every character the diff calls "deleted and reinserted" loses its
identity: a concurrent edit anchored on it would then land somewhere odd. So the diff aims for few, tight
spans rather than speed: common prefix and suffix are cut first (most writes touch one spot), the middle is
diffed line by line (an edit on line 1 and one on line 100 must not rewrite lines 2-99), and each replaced
block of lines is trimmed again character by character (changing one word rewrites that word, not the line).
"""

from __future__ import annotations

from difflib import SequenceMatcher

#: ``(old_start, old_end, new_start, new_end)``: ``old[old_start:old_end]`` becomes ``new[new_start:new_end]``
Span = tuple[int, int, int, int]


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


def _lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept, so they join back to ``text`` (only ``\\n`` splits: files are Unix text)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _offsets(lines: list[str]) -> list[int]:
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return offsets


def _trimmed(old: str, new: str, at_old: int, at_new: int) -> Span | None:
    """``old`` → ``new`` as one span with their common ends cut, placed at ``at_old`` / ``at_new``."""
    pre = common_prefix(old, new)
    suf = common_suffix(old, new, min(len(old), len(new)) - pre)
    if pre + suf == len(old) == len(new):
        return None
    return (at_old + pre, at_old + len(old) - suf, at_new + pre, at_new + len(new) - suf)


def diff_spans(old: str, new: str) -> list[Span]:
    """Spans, in increasing order and not overlapping, that turn ``old`` into ``new``."""
    if old == new:
        return []
    pre = common_prefix(old, new)
    suf = common_suffix(old, new, min(len(old), len(new)) - pre)
    a, b = old[pre : len(old) - suf], new[pre : len(new) - suf]
    if not a or not b or ("\n" not in a and "\n" not in b):
        return [(pre, pre + len(a), pre, pre + len(b))]
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
    spans: list[Span] = []
    matcher = SequenceMatcher(None, a_lines, b_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        x1, x2, y1, y2 = a_at[i1], a_at[i2], b_at[j1], b_at[j2]
        span = _trimmed(a[x1:x2], b[y1:y2], pre + x1, pre + y1)
        if span is not None:
            spans.append(span)
    return spans
