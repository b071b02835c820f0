"""What each page shows, read from the store through its own zone objects (and ``feed`` for what happened).

Everything here is data for a template: plain dicts and lists, untrusted strings left as they are (the templates
escape them, ``shown`` cuts them and makes control characters visible).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from omxfs.cgroups import observe, view_name
from omxfs.checkpoints import ZoneHistory, diff
from omxfs.checkpoints.review import Review, pending_diff
from omxfs.checkpoints.views import running_views
from omxfs.errors import InvalidInput, NotFound, OmxError
from omxfs.store.layout import AGENTS, COLLABORATIVE, CONFLICTS, REJECTED, VIEWS, WRITERS
from omxfs.store.mount_records import read_records
from omxfs.store.names import relative_path
from omxfs.store.replicas import agent_of, parse_writer_file
from omxfs.store.workspace import Workspace
from omxfs.ui import shown
from omxfs.ui.feed import RUNS, TRACE, Event, describe, epoch_of
from omxfs.ui.files import read_part
from omxfs.ui.refusals import Group
from omxfs.ui.run_records import RunRow, usage

#: lines of a diff shown at most
DIFF_LINES = 2_000


@dataclass(frozen=True)
class Diffed:
    lines: list[tuple[str, str]]  # (css class, text)
    cut: bool


def classed(found: list[str], limit: int = DIFF_LINES) -> Diffed:
    """The first ``limit`` lines of a unified diff, each with its css class, made visible and cut to a page's size."""
    lines = [
        ("add" if t.startswith("+") else "del" if t.startswith("-") else "hunk" if t.startswith("@@") else "", t)
        for t in found[:limit]
    ]
    return Diffed([(c, shown.line(t, 2_000)) for c, t in lines], len(found) > limit)


# -- team ------------------------------------------------------------------------------------------------------


def team(ws: Workspace, events: list[Event], conflicts: dict[str, int], refusals: list[Group]) -> dict[str, Any]:
    """``conflicts``: agent → how many of its conflicts wait (the resolved ones are not counted); ``refusals``: the
    daemons' refusals, grouped by agent and reason."""
    last: dict[str, Event] = {}
    for event in events:
        last[event.agent] = event
    mounts = read_records(ws.meta)
    config = ws.config
    agents = []
    for name in sorted({*config.agents, *config.supervisors}):
        views = []
        for pid in running_views(ws.meta, name):
            started = ""
            with contextlib.suppress(OSError, ValueError, OmxError):
                started = json.loads(read_part(ws.meta, f"{VIEWS}/{name}/{pid}.json", 0, 4096)[0]).get("started", "")
            seen = observe(pid, view_name(pid))  # its limits, and what it uses of them now
            views.append({"pid": pid, "started": started, "limits": seen.line() if seen is not None else ""})
        try:
            checkpoints = len(ZoneHistory(ws, name).numbers())
        except OmxError:
            checkpoints = 0
        agents.append(
            {
                "name": name,
                "review": pending_review(ws, name),
                "supervisor": name in config.supervisors,
                "views": views,
                "mounts": [m for m in mounts if m.default_agent == name],
                "last": last.get(name),
                "refusals": [g for g in refusals if g.agent == name],
                "conflicts": conflicts.get(name, 0),
                "checkpoints": checkpoints,
            }
        )
    return {"agents": agents, "mounts": mounts}


# -- collaborative ---------------------------------------------------------------------------------------------


def version_text(ws: Workspace, path: str, version: int) -> tuple[bytes, int]:
    """The first bytes of a version's content that a page shows, and its size."""
    rel = ws.collab.version_file(path, version)
    return read_part(ws.collab.versions_dir, str(rel), 0, shown.READ_LIMIT)


def version_diff(ws: Workspace, path: str, a: int, b: int) -> Diffed:
    before, after = version_text(ws, path, a), version_text(ws, path, b)
    old = shown.content(*before).splitlines()
    new = shown.content(*after).splitlines()
    return classed(list(difflib.unified_diff(old, new, f"{path} v{a}", f"{path} v{b}", lineterm="", n=3)))


def conflict(ws: Workspace, record: str) -> dict[str, Any]:
    """One rejected write (``record``: its ``.json`` under ``.conflicts/``), with the file as it is now."""
    rel = relative_path(record)
    if not rel.name.endswith(".json") or REJECTED not in rel.name:
        raise InvalidInput(f"{record}: no conflict record")
    top = ws.root / COLLABORATIVE / CONFLICTS
    info = json.loads(read_part(top, str(rel), 0, 16 << 20)[0])
    if not isinstance(info, dict):
        raise InvalidInput(f"{record}: no conflict record")
    content_rel = str(rel)[: -len(".json")]
    rejected, size = read_part(top, content_rel, 0, shown.READ_LIMIT)
    path = str(info.get("path", ""))
    history = ws.collab.history(path)
    now = version_text(ws, path, history[-1].version) if history else (b"", 0)
    return {
        "record": record,
        "agent": rel.parts[0],
        "info": info,
        "rejected": shown.content(rejected, size),
        "current": shown.content(*now),
        "path": path,
        "history": history,
    }


# -- realtime --------------------------------------------------------------------------------------------------


def realtime(ws: Workspace) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for doc_id in ws.realtime.list():
        try:
            doc = ws.realtime.load(doc_id)
        except OmxError as exc:
            docs.append({"id": doc_id, "error": exc.message, "fields": [], "writers": []})
            continue
        fields = []
        for name, kind in doc.schema.items():
            crdt = doc.field(name)
            by = getattr(crdt, "replica", None)
            fields.append(
                {
                    "name": name,
                    "type": kind,
                    "value": shown.content(crdt.render()),  # what `cat realtime/<doc>/<field>` prints
                    "state": shown.content(json.dumps(doc.field_json(name), ensure_ascii=False, indent=1)),
                    "by": agent_of(by) if isinstance(by, str) and by else "",
                }
            )
        writers: dict[str, dict[str, Any]] = {}
        with contextlib.suppress(OSError):
            for entry in os.scandir(ws.realtime.state_dir / WRITERS / doc_id):
                parsed = parse_writer_file(entry.name)
                if parsed is not None:
                    replica, seq = parsed
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                    mine = writers.setdefault(replica, {"replica": replica, "agent": agent_of(replica), "writes": 0})
                    mine["writes"] = max(mine["writes"], seq)
                    mine["last"] = max(mine.get("last", 0.0), mtime)
        ordered = sorted(writers.values(), key=lambda w: -float(w["last"]))
        docs.append({"id": doc_id, "fields": fields, "writers": ordered})
    return docs


# -- checkpoints -----------------------------------------------------------------------------------------------


def checkpoints(ws: Workspace, agent: str) -> list[dict[str, Any]]:
    history = ZoneHistory(ws, ws.require_known(agent))
    return [m.summary() for m in reversed(history.all())]


def checkpoint_diff(ws: Workspace, agent: str, source: str, target: str | None) -> Diffed:
    result = diff(ZoneHistory(ws, ws.require_known(agent)), source, target)
    return classed([part for line in result.lines() for part in line.splitlines()])


# -- reviews (``omxfs run --review``) --------------------------------------------------------------------------


def pending_review(ws: Workspace, agent: str) -> dict[str, Any] | None:
    """What the Team page says of ``agent``'s pending review, without reading it: a diff hashes the whole zone,
    too much for a page that reloads at every event (the zone's page shows it)."""
    review = Review(ws, agent)
    if not review.pending:
        return None
    return {"where": review.shown(), "views": running_views(ws.meta, agent), "accepting": review.accepting}


def review_diff(ws: Workspace, agent: str) -> dict[str, Any] | None:
    """``agent``'s pending review with its diff (as ``omxfs diff --review``), or None when none is pending."""
    found = pending_review(ws, ws.require_known(agent))
    if found is None:
        return None
    try:
        result = pending_diff(Review(ws, agent))
    except (OmxError, OSError) as exc:  # a layer a running view is changing, a file gone mid-read: said, not raised
        return {**found, "diff": None, "error": exc.message if isinstance(exc, OmxError) else str(exc)}
    lines = [part for line in result.lines() for part in line.splitlines()]
    stat = f"{len(result.added)} added, {len(result.modified)} modified, {len(result.deleted)} deleted"
    return {**found, "diff": classed(lines), "stat": stat, "error": ""}


# -- runs ------------------------------------------------------------------------------------------------------


def run_rows(ws: Workspace, rows: list[RunRow]) -> list[dict[str, Any]]:
    """The Runs page's rows: each run with the diff of what it changed, from the checkpoint it started from to the
    zone's next one (the next run's, or any made since), or to the zone now where none was made since."""
    numbers: dict[str, list[int]] = {}
    found = []
    for row in rows:
        diff = ""
        if row.checkpoint is not None:
            if row.agent not in numbers:
                try:
                    numbers[row.agent] = ZoneHistory(ws, row.agent).numbers()
                except OmxError:
                    numbers[row.agent] = []
            later = [n for n in numbers[row.agent] if n > row.checkpoint]
            query = {"from": row.checkpoint, **({"to": later[0]} if later else {})}
            diff = f"/checkpoints/{row.agent}?" + "&".join(f"{k}={v}" for k, v in query.items())
        found.append({"row": row, "diff": diff, "to": "the next checkpoint" if "to=" in diff else "now"})
    return found


def run(ws: Workspace, agent: str, stamp: str) -> dict[str, Any]:
    ws.require_known(agent)
    rel = PurePosixPath(AGENTS, agent, RUNS, relative_path(stamp))
    if len(rel.parts) != 4:
        raise NotFound(f"no run {stamp} of {agent}")
    raw, size = read_part(ws.root, str(rel / TRACE), 0, 16 << 20)
    plan: Any = None
    with contextlib.suppress(OSError, ValueError, OmxError):
        plan = json.loads(read_part(ws.root, str(rel / "plan.json"), 0, 4 << 20)[0])
    rows: list[dict[str, Any]] = []
    tokens = Counter[str]()
    end: dict[str, Any] | None = None
    for number, text in enumerate(raw.splitlines(), 1):
        try:
            entry = json.loads(text)
        except ValueError:
            rows.append({"time": "", "kind": "?", "what": f"line {number} is no JSON", "tokens": ""})
            continue
        if not isinstance(entry, dict):
            continue
        if entry.get("kind") == "run" and entry.get("event") == "end":
            end = entry
        if entry.get("kind") == "model":
            for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
                with contextlib.suppress(TypeError, ValueError):
                    tokens[key] += int(entry.get(key) or 0)
        when = entry.get("time") or entry.get("start_time")
        rows.append(
            {
                "time": when if isinstance(when, str) else "",
                "epoch": epoch_of(when, 0.0),
                "kind": str(entry.get("kind")),
                "what": describe(entry),
                "detail": shown.content(json.dumps(entry, ensure_ascii=False, indent=1), limit=4_000),
            }
        )
    steps = plan.get("steps") if isinstance(plan, dict) else None
    return {
        "agent": agent,
        "stamp": stamp,
        "rows": rows,
        "cut": size > len(raw),
        "plan": plan if isinstance(plan, dict) else None,
        "steps": steps if isinstance(steps, list) else [],
        "tokens": dict(tokens),
        "model_calls": sum(1 for r in rows if r["kind"] == "model"),
        "usage": usage(end),
    }
