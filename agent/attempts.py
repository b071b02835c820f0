"""``omx --as NAME --attempts N "TASK"``: N runs of one task, each held apart as a branch of NAME's zone, then a
table of how each went, to compare them and accept one.

Each attempt is omx run again in NAME's view as a branch ``attempt-K`` (``omxfs run --branch``, ``agent.view``),
with ``OMX_ATTEMPT`` in its environment (its place among the command's attempts): the omx in the view runs the task
once, with its own plan, confirmation, checks and trace (``runs/<ts>/``, in the branch). Numbers go on from the
zone's pending ``attempt-K`` branches, so an attempt never continues an earlier one. What the table says of an
attempt is read from the store once it ended: its trace's last entry (the outcome, the checks) and the branch's
change (the diff stat).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agent.view import in_view
from omxfs.view.env import ATTEMPT_ENV

if TYPE_CHECKING:
    from agent.model.llm import ScriptedModel
    from omxfs.store.workspace import Workspace

__all__ = ["ATTEMPT_ENV", "Attempt", "exit_status", "first_free", "run_attempts", "scripted_for_attempt", "table"]
__all__ += ["this_attempt"]

PREFIX = "attempt-"
NUMBERED = re.compile(rf"{PREFIX}([1-9][0-9]{{0,8}})")
#: the trace's end statuses, as the table words them
OUTCOMES = {
    "success": "success",
    "done_unverified": "done unverified",
    "done": "done",
    "failed": "failed",
    "planning_failed": "planning failed",
    "refused": "refused",
    "declined": "not confirmed",
    "interrupted": "interrupted",
}
#: how a run ended by omx's exit status, where its trace cannot be told (``agent.plan_run.workflow``): 0 is any
#: done, and says the least of them
BY_EXIT = {0: "done", 1: "failed", 3: "refused", 4: "declined"}


def this_attempt() -> int | None:
    """Which attempt this omx runs (1 for the first of its command's, whatever its branch's number), in the view
    ``run_attempts`` started it in; None elsewhere (the variable alone, outside a view, makes nothing an attempt)."""
    text = os.environ.get(ATTEMPT_ENV, "")
    return int(text) if in_view() is not None and text.isdigit() and int(text) > 0 else None


def scripted_for_attempt(name: str | None) -> ScriptedModel | None:
    """``--model scripted:FILE`` in the K-th attempt where FILE holds ``{"attempts": [REPLIES, ...]}``: a scripted
    model with the K-th list of replies, so that attempts differ; None for any other model or file (which every attempt
    then reads alike)."""
    from agent.model.llm import LLMError, ScriptedModel

    number = this_attempt()
    if number is None or not name or not name.startswith("scripted:"):
        return None
    path = name.removeprefix("scripted:")
    try:
        with open(path, encoding="utf-8") as f:
            script = json.load(f)
    except (OSError, ValueError):
        return None  # the scripted model's own reading says what is wrong
    if not isinstance(script, dict) or not isinstance(script.get("attempts"), list):
        return None
    lists = script["attempts"]
    if number > len(lists) or not isinstance(lists[number - 1], list):
        raise LLMError(f"LLM error: {path} holds the replies of {len(lists)} attempt(s), none for attempt {number}")
    return ScriptedModel(lists[number - 1])


@dataclass(frozen=True)
class Attempt:
    """How one attempt ended: omx's exit status in the view, its trace's end entry, and its branch's change."""

    number: int
    exit_code: int
    status: str | None  # the trace's end status, else what the exit status says (``BY_EXIT``), else None
    checks: tuple[int, int] | None  # (met by omx's own check, all) of the last plan's criteria
    change: tuple[int, int, int] | None  # (added, modified, deleted) but the run's record; None: nothing held

    @property
    def branch(self) -> str:
        return f"{PREFIX}{self.number}"

    @property
    def outcome(self) -> str:
        if self.status is None:
            return f"failed (exit {self.exit_code})"
        return OUTCOMES.get(self.status, self.status.replace("_", " "))

    @property
    def done(self) -> bool:
        return self.status in ("success", "done_unverified", "done")

    def checks_text(self) -> str:
        return "-" if not self.checks else f"{self.checks[0]}/{self.checks[1]}"

    def change_text(self) -> str:
        return "nothing held" if self.change is None else "+{} ~{} -{}".format(*self.change)


def first_free(ws: Workspace, agent: str) -> int:
    """The number after every pending ``attempt-K`` branch of ``agent``'s zone (1 without one)."""
    from omxfs.checkpoints.review import pending_branches

    taken = [int(m.group(1)) for b in pending_branches(ws, agent) if (m := NUMBERED.fullmatch(b.branch))]
    return max(taken, default=0) + 1


def run_attempts(
    workspace: Path,
    agent: str,
    count: int,
    argv: list[str],
    *,
    parallel: bool,
    stdin_open: bool,
    say: Callable[[str], None],
) -> list[Attempt]:
    """Run omx's own ``argv`` (``[python, omx, ARGS...]``) ``count`` times, each in ``agent``'s view of
    ``workspace`` as a branch ``attempt-K`` numbered on from the pending ones; how each ended, in order.

    One after another, or all at once with ``parallel`` (each line of their output then starts with
    ``[attempt-K]``). Only an attempt run alone with ``stdin_open`` reads the caller's input (a plan asked on the
    terminal); any other is asked nothing (an answer is a no). A Ctrl-C stops the attempts once the running ones
    have ended (the view forwards it to each), with those that ended. NotFound for no agent of the workspace,
    RunsError where no view can be started."""
    from agent.record.runs_dir import RunsError
    from agent.view import view_command
    from omxfs.checkpoints.review import Review
    from omxfs.store.workspace import Workspace
    from omxfs.view.locate import store_path

    with store_path(workspace) as path:
        ws = Workspace(path)
        first = first_free(ws, ws.require_known(agent))
        numbers = list(range(first, first + count))
        commands: dict[int, list[str]] = {}
        for k in numbers:
            view = view_command(workspace, agent, argv)
            if view is None:
                raise RunsError(f"{workspace} is no omxfs workspace: an attempt is a branch of an agent's zone")
            view[view.index("--") : view.index("--")] = ["--branch", f"{PREFIX}{k}"]  # omxfs run --branch
            commands[k] = view
        zone, ended = Review(ws, agent).zone_dir, dict[int, Attempt]()
        try:
            if parallel:
                before = _run_dirs(zone)
                for k, status in _all_at_once(commands).items():
                    ended[k] = _read(ws, agent, k, status, before)
            else:
                for k in numbers:
                    say(f"omx: attempt {k - first + 1} of {count}: branch {PREFIX}{k}")
                    before, stdin = _run_dirs(zone), None if stdin_open else subprocess.DEVNULL
                    process = subprocess.Popen(commands[k], stdin=stdin, env=_env(k - first + 1))
                    try:
                        process.wait()
                    finally:  # after a Ctrl-C too: the attempt ends by itself first, then no other starts
                        ended[k] = _read(ws, agent, k, _wait_out(process), before)
        except KeyboardInterrupt:
            say("omx: interrupted: the attempts that ended are below")
        return [ended[k] for k in numbers if k in ended]


def table(attempts: list[Attempt], workspace: str, agent: str) -> list[str]:
    """The lines omx prints once its attempts ended: a row per attempt, then the commands that compare and accept
    each one that holds a change, naming ``workspace`` as the person did (``omxfs.shell_line``)."""
    from omxfs.shell_line import shell_line

    rows = [("ATTEMPT", "OUTCOME", "CHECKS", "CHANGES")]
    rows += [(a.branch, a.outcome, a.checks_text(), a.change_text()) for a in attempts]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[3]]) for row in rows
    ]
    held = [a for a in attempts if a.change is not None]
    if held:
        lines.append("Compare, then accept one (the others stay pending until discarded: `omxfs branches` lists them):")
    for a in held:
        named = ("--branch", a.branch)
        accept = shell_line("omxfs", "accept", workspace, agent, *named, "--as", agent)
        lines.append(f"  {a.branch}  compare: {shell_line('omxfs', 'diff', workspace, agent, *named)}")
        lines.append(f"  {' ' * len(a.branch)}  accept:  {accept}")
    if held:
        lines.append(f"  list: {shell_line('omxfs', 'branches', workspace, agent)}")
    return lines


def exit_status(attempts: list[Attempt]) -> int:
    """0 when an attempt is done (success, done unverified or done); else the status the attempts share (3 all
    refused, 4 none confirmed); else 1."""
    if any(a.done for a in attempts):
        return 0
    codes = {a.exit_code for a in attempts}
    return codes.pop() if len(codes) == 1 and codes != {0} else 1


def _env(number: int) -> dict[str, str]:
    return {**os.environ, ATTEMPT_ENV: str(number)}


def _all_at_once(commands: dict[int, list[str]]) -> dict[int, int]:
    """Each command started at once, its output copied line by line, each line marked with its attempt; their exit
    statuses once all have ended."""
    lock, pipe = threading.Lock(), subprocess.PIPE
    started = [
        (k, subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, env=_env(n)))
        for n, (k, command) in enumerate(commands.items(), 1)
    ]
    copies = [
        threading.Thread(target=_copy, args=(stream, sink, f"[{PREFIX}{k}] ", lock), daemon=True)
        for k, process in started
        for stream, sink in ((process.stdout, sys.stdout), (process.stderr, sys.stderr))
    ]
    for thread in copies:
        thread.start()
    try:
        for _, process in started:
            process.wait()
    finally:  # after a Ctrl-C too: each attempt ends by itself
        statuses = {k: _wait_out(process) for k, process in started}
        for thread in copies:
            thread.join()
    return statuses


def _wait_out(process: subprocess.Popen[bytes]) -> int:
    """The exit status of ``process``, waited for through any Ctrl-C: it ends its run and its view by itself (its
    terminal sent it the same Ctrl-C), where a kill would leave the branch's run cut short."""
    while True:
        with contextlib.suppress(KeyboardInterrupt):
            return process.wait()


def _copy(stream: IO[bytes] | None, sink: IO[str], prefix: str, lock: threading.Lock) -> None:
    assert stream is not None
    with stream:
        for raw in stream:
            with lock:
                sink.write(prefix + raw.decode("utf-8", "replace"))
                sink.flush()


def _run_dirs(zone: Path) -> set[str]:
    """The names of the run records in ``zone`` now."""
    from omxfs.checkpoints.review import RUN_RECORDS

    with contextlib.suppress(OSError):
        return set(os.listdir(zone / RUN_RECORDS))
    return set()


def _read(ws: Workspace, agent: str, number: int, exit_code: int, before: set[str]) -> Attempt:
    """What attempt ``number`` left: its branch's change, and its trace, in the branch; or in the zone, where a run
    that changed nothing but its record left it (``review.settle``), if it is the one record new there since
    ``before``; else what its exit status says (``BY_EXIT``)."""
    from omxfs.checkpoints.review import RUN_RECORD, RUN_RECORDS, Review, pending_diff

    branch = Review(ws, agent, f"{PREFIX}{number}")
    change, end = None, None
    if branch.pending:
        diff = pending_diff(branch)
        added, modified = ([p for p in paths if not RUN_RECORD.fullmatch(p)] for paths in (diff.added, diff.modified))
        change = (len(added), len(modified), len(diff.deleted))
        traces = sorted((branch.upper / RUN_RECORDS).glob("*/trace.jsonl"))
        end = _end(traces[-1]) if traces else None
    else:
        traces = [t for t in (branch.zone_dir / RUN_RECORDS).glob("*/trace.jsonl") if t.parent.name not in before]
        end = _end(traces[0]) if len(traces) == 1 else None
    if end is None:
        return Attempt(number, exit_code, BY_EXIT.get(exit_code), None, change)
    criteria = [c for c in end.get("criteria") or [] if isinstance(c, dict)]
    met = sum(1 for c in criteria if c.get("status") == "met" and c.get("by", "omx") == "omx")
    checks = (met, len(criteria)) if criteria else None
    return Attempt(number, exit_code, str(end.get("status")), checks, change)


def _end(trace: Path) -> dict[str, Any] | None:
    """The data of the trace's last ``end`` entry."""
    found = None
    for entry in _entries(trace):
        if entry.get("event") == "end" and isinstance(entry.get("data"), dict):
            found = entry["data"]
    return found


def _entries(trace: Path) -> Iterator[dict[str, Any]]:
    with contextlib.suppress(OSError), open(trace, encoding="utf-8") as f:
        for line in f:
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict):
                    yield entry
