"""What ``omxfs fsck`` finds (``fsck.py``), and how it is told to a person: corruption one line per item, debris
one line per kind and state, with what leaves such debris and what ``--repair`` does about it, and when.

Debris that a write still running may own (a temp file, a blob of a checkpoint not yet written, a restore's work)
is removed only once older than a grace period: younger, it is *waiting*. Waiting debris is a notice, not a
problem: a checkpoint killed a minute ago leaves nothing wrong, and nothing anyone can do before the grace period
ends. A finding is

    corrupt     a broken invariant: reported, never guessed at
    repaired    debris this run repaired
    waiting     debris --repair removes once older than the grace period (``wait``: seconds until then)
    kept        debris --repair never removes, for a reason (``left``)
    due         debris --repair repairs now
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Protocol

#: every kind of debris: (what leaves it, what --repair does); the other kinds are corruption
DEBRIS_KINDS = {
    "orphan-version": ("a commit killed before its history (a store older than entry files)", "removed"),
    "unfinished-version": ("a commit killed after its commit point, before its rename", "renamed into place"),
    "stale-history": ("a commit killed before history.json was rewritten", "rewritten from the entry files"),
    "stale-current": ("a commit killed before its current/ copy", "rewritten from the last version"),
    "missing-meta": ("a delivery killed between its file and its metadata", "derived from the delivered file"),
    "stale-meta": ("a re-delivery killed before its metadata", "rewritten from the delivered file"),
    "dangling-meta": ("a retraction killed between its file and its metadata", "removed"),
    "untracked-current": ("a file written in current/ on the store by hand", "left"),
    "missing-zone": ("a store made by hand, or a directory removed", "made again, empty"),
    "stale-state": ("a realtime writer killed before the merged state", "rewritten from its writers' files"),
    "temp-file": ("an interrupted write or commit", "removed"),
    "stray-scratch": ("an agent that left the config (editors' temp files)", "removed with its files"),
    "torn-audit": ("an audit writer killed mid-line (before record files)", "cut off at its last whole line"),
    "interrupted-accept": ("an `omxfs accept` killed half-way", "finished, as `omxfs accept` does"),
    "unreferenced-blob": ("an interrupted checkpoint (killed before its manifest), or a prune", "removed"),
    "stale-restore": ("a restore that was killed (the zone is whole)", "removed"),
    "unfinished-restore": ("a restore killed between its two renames", "moved into place"),
    "stale-view": ("a view whose process is gone", "removed"),
    "stray-snapshot": ("a snapshot torn where the filesystem has no hard links, or a file made by hand", "removed"),
    "unreferenced-delivery-blob": ("a delivery killed before its record", "removed"),
}
DEBRIS = frozenset(DEBRIS_KINDS)
#: debris a write may own (a temp file, a blob of a checkpoint in progress) younger than this is left alone
TEMP_GRACE_SECONDS = 300.0


class Found(Protocol):
    """How a check reports a finding: ``age`` is given for debris ``--repair`` removes only once older than the
    grace period (seconds since it was last changed), ``left`` for debris it never removes (why)."""

    def __call__(
        self, kind: str, path: str, detail: str, repaired: bool = False, *, age: float | None = None, left: str = ""
    ) -> None: ...


@dataclass(frozen=True)
class Finding:
    kind: str
    path: str
    detail: str
    repaired: bool = False
    #: seconds until ``--repair`` may remove it (debris younger than the grace period), else None
    wait: float | None = None
    #: why ``--repair`` leaves it whatever its age ("" when it repairs it)
    left: str = ""

    @property
    def is_corruption(self) -> bool:
        return self.kind not in DEBRIS

    @property
    def state(self) -> str:
        """corrupt, repaired, waiting, kept or due (the module's docstring)."""
        if self.is_corruption:
            return "corrupt"
        if self.repaired:
            return "repaired"
        if self.wait is not None:
            return "waiting"
        return "kept" if self.left else "due"

    def line(self) -> str:
        state = "repaired" if self.repaired else "CORRUPT" if self.is_corruption else "debris"
        why = f" ({self.left})" if self.left else f" (removable in {duration(self.wait)})" if self.wait else ""
        return f"{state:8} {self.kind:17} {self.path}: {self.detail}{why}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    #: whether this run repaired what it could, and after how many seconds it removes debris a write may own
    repair: bool = False
    grace: float = TEMP_GRACE_SECONDS

    @property
    def corrupt(self) -> list[Finding]:
        return [f for f in self.findings if f.is_corruption]

    @property
    def unrepaired(self) -> list[Finding]:
        return [f for f in self.findings if not f.repaired]

    @property
    def waiting(self) -> list[Finding]:
        return [f for f in self.findings if f.state == "waiting"]

    @property
    def unresolved(self) -> list[Finding]:
        """What needs someone now: corruption, and debris that ``--repair`` repairs now or never."""
        return [f for f in self.findings if f.state in ("corrupt", "kept", "due")]

    @property
    def clean(self) -> bool:
        """Nothing left to repair and nothing corrupt."""
        return not self.unrepaired

    def count(self, what: str) -> None:
        self.checked[what] = self.checked.get(what, 0) + 1

    def summary(self) -> list[str]:
        """Each corrupt finding, then one line per kind of debris and state (``debris_line``), then the totals."""
        lines = [f.line() for f in self.findings if f.is_corruption]
        groups: dict[tuple[str, str, str], list[Finding]] = {}
        for f in self.findings:
            if not f.is_corruption:
                groups.setdefault((f.kind, f.state, f.left), []).append(f)
        lines += [self.debris_line(found) for _, found in sorted(groups.items(), key=lambda kv: kv[0])]
        counts = ", ".join(f"{n} {what}" for what, n in sorted(self.checked.items())) or "an empty workspace"
        total = f"checked {counts}: {len(self.corrupt)} corrupt, {len(self.unresolved)} unresolved"
        if self.waiting:
            total += f", {len(self.waiting)} too young to remove yet (removable in {self.longest_wait()})"
        return [*lines, total]

    def debris_line(self, found: list[Finding]) -> str:
        """One kind of debris in one state: how many, where, what leaves it, what ``--repair`` does (or did) and
        when."""
        first = found[0]
        cause, fix = DEBRIS_KINDS[first.kind]
        where = first.path if len(found) == 1 else f"under {_common(found)}"
        said = f"{len(found):>6} {first.kind:17} {where}: left by {cause}"
        if first.state == "repaired":
            return f"repaired {said}; {fix}"
        word = "left" if self.repair else "debris"
        if first.state == "kept":
            return f"{word:8} {said}; --repair leaves {'it' if len(found) == 1 else 'them'}: {first.left}"
        if first.state == "due":
            return f"{word:8} {said}; --repair: {fix}"
        it = "it" if len(found) == 1 else "them"
        young = f"younger than {duration(self.grace)} (a write may still own {it})"
        when = duration(max(f.wait or 0.0 for f in found))
        if self.repair:
            return f"{word:8} {said}; {young}: removable in {when} (run --repair again then)"
        return f"{word:8} {said}; {young}: removable in {when} (--repair then)"

    def longest_wait(self) -> str:
        return duration(max(f.wait or 0.0 for f in self.waiting))


def duration(seconds: float | None) -> str:
    """``288 s``, ``1 h 12 min``: a wait told to a person (rounded up to a whole second, then minute)."""
    whole = -int(-(seconds or 0.0) // 1)
    if whole < 600:
        return f"{whole} s"
    minutes = -(-whole // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"


def _common(found: list[Finding]) -> str:
    parent = os.path.commonpath([f.path for f in found])
    return parent if parent not in ("", ".") else "the store"
