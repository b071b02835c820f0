"""What each omx run's record says in one row: its task, agent, outcome and why, duration, tokens and cost, and the
checkpoint it started from (``agents/<a>/runs/<ts>/trace.jsonl``, written by ``agent.record.trace``: its ``run``
``start`` line first, its ``run`` ``end`` line last, with the status and usage).

A run's first and last bytes are read (never the whole trace), and kept while the trace's size and mtime stay the
same: the list and the Needs-you page read every run at each event.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import dataclass
from typing import Any

from omxfs.store.layout import AGENTS
from omxfs.store.workspace import Workspace
from omxfs.ui.feed import RUNS, TRACE, epoch_of
from omxfs.ui.files import read_part
from omxfs.ui.kept import Kept

#: bytes read of a trace's start (its first line: the task) and of its end (its last line: status and usage)
HEAD = 16_384
TAIL = 16_384
#: the end's status → the outcome shown (a status not named here is shown as it is)
OUTCOMES = {
    "success": "success",
    "answered": "success",
    "done": "done",
    "failed": "failed",
    "planning_failed": "failed",
    "error": "failed",
    "max_steps": "failed",
    "stuck": "failed",
    "refused": "refused",
    "declined": "not confirmed",
    "interrupted": "interrupted",
    "dry_run": "dry run",
}
#: the outcomes that wait for the person (the Needs-you page lists those runs)
NEEDING = frozenset({"failed", "refused", "not confirmed", "timed out"})


@dataclass(frozen=True)
class RunRow:
    agent: str
    stamp: str
    task: str
    outcome: str  # one of OUTCOMES' values, "timed out", or "no end" (running, or killed before its end line)
    reason: str  # why it ended so ("" for a success)
    started: float  # Unix time (0: unknown)
    ended: float
    usage: dict[str, str]  # tokens and cost, as ``usage`` says them
    checkpoint: int | None  # the checkpoint of the agent's zone the run started from
    size: int  # bytes of the trace

    @property
    def duration(self) -> str:
        if not self.started or not self.ended or self.ended < self.started:
            return ""
        seconds = self.ended - self.started
        return f"{seconds:.1f} s" if seconds < 120 else f"{int(seconds // 60)} min {int(seconds % 60)} s"

    @property
    def path(self) -> str:
        return f"{AGENTS}/{self.agent}/{RUNS}/{self.stamp}"


class RunRecords:
    """Every run of every agent (and supervisor) of ``ws``, read as ``RunRow``s and kept by trace stamp."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._kept = Kept(ws.root, self._read)

    def all(self) -> list[RunRow]:
        """Every run, newest first (by its stamp, then its agent)."""
        found: list[RunRow] = []
        config = self.ws.config
        root = str(self.ws.root)
        for agent in sorted({*self.ws.agents(), *config.supervisors}):
            where = os.path.join(root, AGENTS, agent, RUNS)
            with contextlib.suppress(OSError):
                if not stat.S_ISDIR(os.lstat(where).st_mode):  # a symlink an agent made is not followed
                    continue
                for stamp in os.listdir(where):
                    row = self._row(agent, stamp)
                    if row is not None:
                        found.append(row)
        return sorted(found, key=lambda r: (r.stamp, r.agent), reverse=True)

    def _row(self, agent: str, stamp: str) -> RunRow | None:
        return self._kept.get(f"{AGENTS}/{agent}/{RUNS}/{stamp}/{TRACE}")

    def _read(self, trace: str, size: int) -> RunRow:
        """The row of ``trace`` (``agents/<agent>/runs/<stamp>/trace.jsonl``), from its first and last bytes."""
        _, agent, _, stamp, _ = trace.split("/")
        head, size = read_part(self.ws.root, trace, 0, HEAD)
        tail, _ = read_part(self.ws.root, trace, max(size - TAIL, 0), TAIL)
        return summarised(agent, stamp, first_line(head), last_end(tail), size)


def first_line(raw: bytes) -> dict[str, Any] | None:
    """The run's start line (``{"kind": "run", "event": "start", ...}``), if ``raw`` begins with it."""
    with contextlib.suppress(ValueError):
        entry = json.loads(raw.split(b"\n", 1)[0])
        if isinstance(entry, dict) and entry.get("kind") == "run" and entry.get("event") == "start":
            return entry
    return None


def last_end(raw: bytes) -> dict[str, Any] | None:
    """The run's end line (``{"kind": "run", "event": "end", ...}``) among the lines of ``raw``, the last one."""
    for text in reversed(raw.splitlines()):
        with contextlib.suppress(ValueError):
            entry = json.loads(text)
            if isinstance(entry, dict) and entry.get("kind") == "run" and entry.get("event") == "end":
                return entry
    return None


def _data(entry: dict[str, Any] | None) -> dict[str, Any]:
    data = entry.get("data") if entry is not None else None
    return data if isinstance(data, dict) else {}


def summarised(agent: str, stamp: str, start: dict[str, Any] | None, end: dict[str, Any] | None, size: int) -> RunRow:
    begun = _data(start)
    task = begun.get("task") or begun.get("prompt") or ""
    checkpoint = begun.get("checkpoint")
    number = checkpoint.get("id") if isinstance(checkpoint, dict) else None
    outcome, reason = outcome_of(end)
    return RunRow(
        agent,
        stamp,
        str(task),
        outcome,
        reason,
        epoch_of(start.get("time") if start else None, 0.0),
        epoch_of(end.get("time") if end else None, 0.0),
        usage(end),
        number if isinstance(number, int) and not isinstance(number, bool) else None,
        size,
    )


def outcome_of(end: dict[str, Any] | None) -> tuple[str, str]:
    """(outcome, why) of a run by its end line: "timed out" where its error says a step or the model timed out."""
    if end is None:
        return "no end", "no end line: still running, or stopped before it could write one"
    data = _data(end)
    status = str(data.get("status") or "")
    error = data.get("error")
    reason = str(error) if error else ""
    if status == "refused":
        reasons = data.get("reasons")
        reason = "; ".join(map(str, reasons)) if isinstance(reasons, list) and reasons else "the plan is HIGH risk"
    elif status == "declined":
        reason = "the plan was not confirmed at the prompt"
    elif status == "max_steps" and not reason:
        reason = "stopped at its most model calls without an answer"
    elif status == "stuck" and not reason:
        reason = "stopped: it repeated the same calls"
    elif status in ("failed", "done") and not reason:
        unmet = [c for c in data.get("criteria") or [] if isinstance(c, dict) and c.get("status") == "not met"]
        if unmet:
            reason = f"not met: {unmet[0].get('criterion')}"
    outcome = OUTCOMES.get(status, status or "unknown")
    if outcome == "failed" and "timed out" in reason:
        outcome = "timed out"
    return outcome, reason


def usage(end: dict[str, Any] | None) -> dict[str, str]:
    """A run's tokens and cost as its end line records them (``agent.model.pricing.Tally.record``): the cost in
    dollars, or "unknown" where it has none (a local model has no price: never shown as $0), or no end line."""
    recorded = _data(end).get("usage")
    if not isinstance(recorded, dict):
        reason = "the run has not ended" if end is None else "no model use recorded"
        return {"tokens": "", "cost": f"unknown ({reason})"}
    tokens = []
    for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        value = recorded.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            tokens.append(f"{value:,} {key.split('_')[0]}")
    cost = recorded.get("cost_usd")
    known = isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0
    if known:
        price = f"${cost:.4f}"
    else:
        price = "unknown (no price for the model)" if recorded.get("requests") else "unknown (no reply from the model)"
    return {"tokens": ", ".join(tokens), "cost": price}
