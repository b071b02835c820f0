"""What waits for the person, newest first: the Needs-you page and the count in every page's header.

- a **review** pending (``omxfs run --review`` held a change apart): it leaves when accepted or discarded;
- a **branch** pending (``omxfs run --branch NAME``), or conflicted: it leaves when accepted or discarded, on its
  zone's branches page;
- a **conflict** not resolved (``resolution``);
- an omx **run** that failed, was refused, timed out or was not confirmed (``run_records.NEEDING``);
- a **view that reached a limit** (processes, memory, file size): its daemon's log says so
  (``.omxfs/logs/mount-<pid>.log``, a WARNING ``the view reached its limit of ...``).

A conflict, a run and a view's limit leave when the person marks them resolved (an audit record, ``feed.MARK``);
a conflict also leaves by itself once resolved in the store. Each is still in its own page's history.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omxfs.checkpoints.review import BranchState, Review, branch_states, pending_branches
from omxfs.checkpoints.views import running_views
from omxfs.errors import OmxError
from omxfs.store.records import VersionEntry
from omxfs.store.workspace import Workspace
from omxfs.ui.feed import epoch_of, link
from omxfs.ui.lists import Lists
from omxfs.ui.pages import review_diff
from omxfs.ui.resolution import record_path, resolution
from omxfs.ui.run_records import NEEDING, RunRecords
from omxfs.ui.view_limits import ViewLimits, what_of, when_of


@dataclass(frozen=True)
class Need:
    kind: str  # "review", "branch", "conflict", "run", "limit"
    epoch: float  # when it came to wait
    agent: str
    title: str  # one line
    reason: str  # why it waits ("" where the title says it)
    link: str  # the page that shows it whole
    mark: str = ""  # the path a "mark resolved" names ("" for a review or a branch: Accept or Discard decide it)
    review: dict[str, Any] | None = field(default=None, compare=False)  # a review's where, views, stat


class Needs:
    """The queue of ``ws``, read from the store (through ``lists``' cached conflicts, ``runs``' cached run rows)
    and ``marks`` (path → the audit record that marked it resolved: the feed's)."""

    def __init__(
        self,
        ws: Workspace,
        lists: Lists,
        runs: RunRecords,
        marks: Mapping[str, dict[str, Any]],
        limits: ViewLimits | None = None,
    ) -> None:
        """``limits``: the daemon logs' limit lines as the feed reads them (by default, read here)."""
        self.ws = ws
        self.lists = lists
        self.runs = runs
        self.marks = marks
        self.limits = limits or ViewLimits(ws.meta)

    def conflicts(self) -> list[dict[str, Any]]:
        """Every rejected write, newest first, each with ``resolved``: why it is resolved, or "" (it waits)."""
        found = []
        histories: dict[str, list[VersionEntry]] = {}  # a file's, once per call: many conflicts share a file
        for c in self.lists.conflicts():
            path = str(c["info"].get("path", ""))
            if path not in histories:
                try:
                    histories[path] = self.ws.collab.history(path)
                except (OmxError, ValueError):
                    histories[path] = []
            history = histories[path]
            mark = self.marks.get(record_path(c["record"]))
            found.append({**c, "resolved": resolution(c["agent"], c["info"], history, mark)})
        return found

    def open_conflicts(self) -> dict[str, int]:
        """agent → how many of its conflicts wait."""
        counts: dict[str, int] = {}
        for c in self.conflicts():
            if not c["resolved"]:
                counts[c["agent"]] = counts.get(c["agent"], 0) + 1
        return counts

    def items(self, *, stat: bool = False) -> list[Need]:
        """Everything that waits, newest first; with ``stat``, each review's and branch's diff stat (it hashes the
        zone)."""
        found = self._reviews(stat) + self._branches(stat) + self._conflicts() + self._runs() + self._limits()
        return sorted(found, key=lambda n: n.epoch, reverse=True)

    def count(self) -> int:
        return len(self.items())

    def marks_of(self) -> set[str]:
        """The paths that may be marked resolved now (the form's value is checked against them)."""
        return {n.mark for n in self.items() if n.mark}

    # -- each kind --------------------------------------------------------------------------------------------

    def _reviews(self, stat: bool) -> list[Need]:
        found = []
        for agent in self.ws.agents():
            review = Review(self.ws, agent)
            try:
                held = os.stat(review.dir, follow_symlinks=False).st_mtime
            except OSError:
                continue
            shown: dict[str, Any] | None = None
            if stat:
                with contextlib.suppress(OmxError, OSError):
                    shown = review_diff(self.ws, agent)
            if shown is None:
                shown = {"where": review.shown(), "views": running_views(self.ws.meta, agent), "stat": ""}
            found.append(
                Need(
                    "review",
                    held,
                    agent,
                    f"review of {agent}'s zone pending",
                    shown.get("stat") or "",
                    link(f"/checkpoints/{agent}") + "#reviews",
                    review=shown,
                )
            )
        return found

    def _branches(self, stat: bool) -> list[Need]:
        """The pending branches but the review (which ``_reviews`` shows), each with its changes and state with
        ``stat``."""
        found = []
        for agent in self.ws.agents():
            held = {b.branch: b for b in pending_branches(self.ws, agent) if not b.is_review}
            if not held:
                continue
            rows: dict[str, BranchState] = {}
            if stat:
                with contextlib.suppress(OmxError, OSError):
                    rows = {row.name: row for row in branch_states(self.ws, agent) if row.name in held}
            for name, branch in held.items():
                try:
                    made = os.stat(branch.dir, follow_symlinks=False).st_mtime
                except OSError:
                    continue
                row = rows.get(name)
                why = f"{row.state}: {row.stat}{f'; {row.detail}' if row.detail else ''}" if row else ""
                title = f"branch {name} of {agent}'s zone pending"
                found.append(Need("branch", made, agent, title, why, link(f"/checkpoints/{agent}/branches")))
        return found

    def _conflicts(self) -> list[Need]:
        return [
            Need(
                "conflict",
                epoch_of(c["info"].get("timestamp"), 0.0),
                c["agent"],
                f"conflict on collaborative/{c['info'].get('path')}",
                f"wrote on version {c['info'].get('your_base')}, the file was at {c['info'].get('current_version')}",
                link("/collab/conflict", record=c["record"]),
                record_path(c["record"]),
            )
            for c in self.conflicts()
            if not c["resolved"]
        ]

    def _runs(self) -> list[Need]:
        return [
            Need(
                "run",
                row.ended or row.started,
                row.agent,
                f"omx run {row.stamp} {row.outcome}: {row.task}",
                row.reason,
                f"/runs/{row.agent}/{row.stamp}",
                row.path,
            )
            for row in self.runs.all()
            if row.outcome in NEEDING and row.path not in self.marks
        ]

    def _limits(self) -> list[Need]:
        found = []
        for rel in self.limits.logs():
            if rel in self.marks:
                continue
            agent, lines = self.limits.of(rel)
            if not lines:
                continue
            when = when_of(lines[-1], 0.0)
            title = f"a view of {agent} reached its limit of {'; '.join(map(what_of, lines))}"
            found.append(Need("limit", when, agent, title, f"its daemon's log: {rel}", "/team", rel))
        return found
