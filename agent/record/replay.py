"""``omx replay runs/<ts>``: a recorded run as a readable timeline, from its plan.json and trace.jsonl alone.

It reads the files as data (no tool runs again) and tolerates a trace cut short by a crash: unreadable lines are
reported, not fatal.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from omxfs.store.layout import AGENTS, META_DIR, REVIEW_UPPER, REVIEWS

#: a run's record, as ``agent.record.trace`` writes it (not imported: it loads the model's client)
PLAN, TRACE = "plan.json", "trace.jsonl"

__all__ = ["ReplayError", "load_run", "render_run"]


class ReplayError(Exception):
    """Not a run directory, or its trace cannot be read."""


def held_run(run_dir: Path) -> Path | None:
    """Where the run ``agents/NAME/runs/<ts>`` of an omxfs workspace is while a branch of NAME's zone holds it: a run
    in a review (``omx --review``) or another branch (``omx --attempts``) recorded itself in the branch's upper layer,
    which lands in the zone only when a person accepts it. None: no pending branch of the zone holds that run."""
    from omxfs.checkpoints.branches import BRANCHES
    from omxfs.checkpoints.review import RUN_RECORDS

    runs = run_dir.absolute().parent
    zone_dir = runs.parent
    if runs.name != RUN_RECORDS or zone_dir.parent.name != AGENTS:
        return None
    meta, zone = zone_dir.parent.parent / META_DIR, zone_dir.name
    found = [meta / REVIEWS / zone / REVIEW_UPPER, *sorted((meta / BRANCHES / zone).glob(f"*/{REVIEW_UPPER}"))]
    held = [top / RUN_RECORDS / run_dir.name for top in found]
    return next((run for run in held if (run / TRACE).is_file()), None)


def _run_dir(path: Path) -> Path:
    run_dir = path.parent if path.is_file() else path
    return run_dir if run_dir.exists() else held_run(run_dir) or run_dir


def load_run(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]], int]:
    """(plan or None, trace entries, number of unreadable lines) of the run in ``path`` (or of the file's run), or
    where a pending branch of its zone holds it (``held_run``)."""
    run_dir = _run_dir(path)
    trace = run_dir / TRACE
    if not trace.is_file():
        raise ReplayError(f"{run_dir} is not a run directory: it has no trace.jsonl")
    entries: list[dict[str, Any]] = []
    bad = 0
    try:
        for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(entry, dict):
                entries.append(entry)
            else:
                bad += 1
        plan_file = run_dir / PLAN
        plan = json.loads(plan_file.read_text(encoding="utf-8")) if plan_file.is_file() else None
    except (OSError, json.JSONDecodeError) as exc:
        raise ReplayError(f"cannot read the run in {run_dir}: {exc}") from None
    return plan if isinstance(plan, dict) else None, entries, bad


def _clock(stamp: str | None) -> str:
    if not stamp:
        return " " * 12
    try:
        return _dt.datetime.fromisoformat(stamp).strftime("%H:%M:%S.%f")[:12]
    except ValueError:
        return stamp[:12].ljust(12)


def _seconds(start: str | None, end: str | None) -> str:
    try:
        delta = _dt.datetime.fromisoformat(end or "") - _dt.datetime.fromisoformat(start or "")
    except ValueError:
        return ""
    return f"{delta.total_seconds():.2f}s"


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _run_line(entry: dict[str, Any]) -> list[str]:
    data = entry.get("data", {})
    event = entry.get("event")
    agent_events = ("compress", "resize", "repeat_refused")
    if data.get("command") == "agent" or event in agent_events or (event == "end" and "steps" in data):
        return _agent_run_line(event, data)  # an omx agent run's end counts model calls ("steps"), a plan's steps
    if event == "start":
        what = f"task {data.get('task')!r}" if data.get("command") == "task" else f"plan {data.get('plan')}"
        sandbox = data.get("sandbox", {})
        dry = " (dry run)" if data.get("dry_run") else ""
        return [
            f"run started{dry}: {what}",
            f"workspace {data.get('workspace')}",
            f"sandbox: {sandbox.get('mechanism')} ({sandbox.get('network') or sandbox.get('error', '')})",
            *_checkpoint_lines(data),
        ]
    if event == "plan_invalid":
        first = str(data.get("problems", "")).splitlines()[:1]
        return [f"plan attempt {data.get('attempt')} rejected: {first[0] if first else ''}"]
    if event == "plan_unfit":
        return ["plan asked for again:", *(f"  - {p}" for p in data.get("problems", []))]
    if event == "plan":
        return [
            f"plan risk {data.get('risk_level')} (computed {data.get('computed')}, model said "
            f"{data.get('model_label')})",
            *(f"  - {r}" for r in data.get("reasons", [])),
            *_plan_lines(data),
        ]
    if event == "replan":
        if data.get("reason") == "invalid plan":
            return [f"re-plan {data.get('number')}: the plan was invalid, also after a retry: {data.get('error')}"]
        steps = [f"{s.get('id')}. {s.get('tool')}" for s in (data.get("plan") or {}).get("steps", [])]
        why = f"step {data.get('failed_step')} failed" if data.get("failed_step") else "the result is wrong"
        return [
            f"re-plan {data.get('number')}: {why}: {_short(data.get('error'), 160)}",
            f"  the failed plan: {', '.join(steps)}",
        ]
    if event == "code_fixed":
        return [f"  the re-plan is the same plan with new code for step {data.get('step')}, the model told: "
                f"{_short(data.get('failure'), 160)}"]  # fmt: skip
    if event == "plan_from_reading":
        return [
            f"plan made by omx from the task's reading, no plan asked of the model: {', '.join(data.get('tools', []))}"
        ]
    if event == "schema_refused":
        return [f"the server took no JSON schema for the plan; JSON mode instead ({_short(data.get('error'))})"]
    if event == "confirmation":
        reasons = [f"  - {r}" for r in data.get("reasons", [])]
        return [f"confirmation: {data.get('decision')}" + (f" ({data['how']})" if data.get("how") else ""), *reasons]
    if event == "end":
        replans = f", after {data['replans']} re-plan(s)" if data.get("replans") else ""
        lines = [f"run ended: {data.get('status')}, {data.get('steps_executed', 0)} step(s) executed{replans}"]
        lines += [f"  error: {data['error']}"] if data.get("error") else []
        lines += [f"  produced {path}" for path in data.get("produced_files", [])]
        lines += _change_lines(data)
        for check in data.get("criteria") or []:  # what omx checked of the plan's success criteria
            detail = f" ({check.get('detail')})" if check.get("detail") else ""
            judged = ", model's judgement" if check.get("by") == "model" else ""  # never shown as a plain [met]
            judged = ", omx's reading" if check.get("source") == "reading" and not judged else judged
            lines.append(f"  [{check.get('status')}{judged}] {check.get('criterion')}{detail}")
        return lines
    return [f"{event}: {_short(data)}"]


def _plan_lines(data: dict[str, Any]) -> list[str]:
    """The whole plan a plan entry carries (a run that may re-plan records every plan), step by step."""
    plan = data.get("plan")
    if not isinstance(plan, dict):
        return []
    lines = [f"  plan {data.get('number')}: {plan.get('goal')}"]
    for step in plan.get("steps") or []:
        if isinstance(step, dict):
            inputs = step.get("inputs")
            inputs = inputs if isinstance(inputs, dict) else {}
            shown = ", ".join(f"{name}: {_short(value, 60)}" for name, value in inputs.items())
            lines.append(f"    {step.get('id')}. [{step.get('tool')}] {step.get('description')} ({shown})")
    return lines


def _checkpoint_lines(start: dict[str, Any]) -> list[str]:
    """The checkpoint of the agent's zone the run started from, or why it had none."""
    made = start.get("checkpoint")
    if isinstance(made, dict):
        how = "made for this run" if made.get("made") else "the zone's latest, unchanged since"
        return [f"checkpoint {made.get('id')} of {made.get('zone')}'s zone ({how})"]
    return [f"no checkpoint of the zone: {start['checkpoint_error']}"] if start.get("checkpoint_error") else []


def _change_lines(end: dict[str, Any]) -> list[str]:
    """The run's diff stat: what changed in the zone from its checkpoint to the run's end."""
    stat = end.get("changes")
    if isinstance(stat, dict):
        counts = ", ".join(f"{stat.get(kind, 0)} {kind}" for kind in ("added", "modified", "deleted"))
        return [f"  zone changes since its checkpoint: {counts}"]
    return [f"  zone changes unknown: {end['changes_error']}"] if end.get("changes_error") else []


def _agent_run_line(event: Any, data: dict[str, Any]) -> list[str]:
    """The milestones of an ``omx agent`` run: its prompt, context folds, and how it ended."""
    if event == "start":
        tools = ", ".join(data.get("tools") or []) or "none"
        mode = f", mode {data['mode']}" if data.get("mode") else ""
        model = data.get("model") or "(unnamed)"
        return [
            f"agent run started: prompt {_short(data.get('prompt'), 200)}",
            f"model {model}, at most {data.get('max_steps')} model calls{mode}; tools: {tools}",
        ]
    if event in ("compress", "resize"):
        what = f"{data.get('type')} resize ({data.get('reason')})" if event == "resize" else "compression"
        return [
            f"context {what} before model call {data.get('step')}: "
            f"{data.get('chars_before')} -> {data.get('chars_after')} characters"
        ]
    if event == "repeat_refused":
        why = "it failed before" if data.get("reason") == "failed_before" else "it repeats a message omx sent"
        written = ", written as text" if data.get("source") == "text" else ""
        lines = [f"tool {data.get('tool') or '(unreadable)'} (model call {data.get('step')}{written}): "
                 f"not run, {why} [{data.get('call_id')}]"]  # fmt: skip
        arguments = data.get("arguments")
        if isinstance(arguments, dict):
            lines += [f"  {name}: {_short(value)}" for name, value in arguments.items()]
        else:
            lines.append(f"  arguments (not JSON): {_short(arguments)}")
        return [*lines, f"  told the model: {_short(data.get('told'), 200)}"]
    if event == "end":
        usage = data.get("usage") or {}
        cost = usage.get("cost_usd")
        lines = [
            f"run ended: {data.get('status')} after {data.get('steps', 0)} model call(s); "
            f"{usage.get('prompt_tokens', 0)} tokens in ({usage.get('cached_tokens', 0)} cached), "
            f"{usage.get('completion_tokens', 0)} out, " + (f"${cost:.4f}" if cost is not None else "cost unknown")
        ]
        lines += [f"  answer: {_short(data['answer'], 200)}"] if data.get("answer") is not None else []
        lines += [f"  error: {data['error']}"] if data.get("error") else []
        return lines
    return [f"{event}: {_short(data)}"]


def _tool_lines(entry: dict[str, Any]) -> list[str]:
    """One tool call of an ``omx agent`` run: the call, its arguments, its result or error."""
    written = ", written as text" if entry.get("source") == "text" else ""  # a local model's call in its reply
    tool = entry.get("tool") or "(unreadable)"
    head = f"tool {tool} (model call {entry.get('step')}{written}): {entry.get('status')} "
    lines = [head + f"{entry.get('duration_s', 0):.2f}s [{entry.get('call_id')}]"]
    arguments = entry.get("arguments")
    if isinstance(arguments, dict):
        lines += [f"  {name}: {_short(value)}" for name, value in arguments.items()]
    else:
        lines.append(f"  arguments (not JSON): {_short(arguments)}")
    if entry.get("error"):
        lines.append(f"  error: {_short(entry['error'], 200)}")
    else:
        lines.append(f"  -> {_short(entry.get('output'))}  ({str(entry.get('output_digest'))[:19]})")
    return lines


def _entry_lines(entry: dict[str, Any]) -> tuple[str | None, list[str]]:
    kind = entry.get("kind")
    if kind == "run":
        return entry.get("time"), _run_line(entry)
    if kind == "model":
        step = f" for step {entry['step_id']}" if entry.get("step_id") else ""
        usage = (
            f"{entry.get('prompt_tokens', 0)} prompt ({entry.get('cached_tokens', 0)} cached) + "
            f"{entry.get('completion_tokens', 0)} completion tokens"
        )
        head = f"model {entry.get('purpose')}{step}: {entry.get('status')} {entry.get('duration_s', 0):.2f}s, {usage}"
        lines = [head + (f" [{entry['request_id']}]" if entry.get("request_id") else "")]  # none: interrupted
        lines += [f"  retried: {retry}" for retry in entry.get("retries") or []]
        return entry.get("start_time"), lines + ([f"  error: {entry['error']}"] if entry.get("error") else [])
    if kind == "tool":
        return entry.get("start_time"), _tool_lines(entry)
    if kind == "step":
        took = _seconds(entry.get("start_time"), entry.get("end_time"))
        lines = [f"step {entry.get('step_id')} {entry.get('tool')}: {entry.get('status')} {took}".rstrip()]
        lines += [f"  {name}: {_short(value)}" for name, value in entry.get("inputs", {}).items()]
        if entry.get("output") is not None:
            lines.append(f"  -> {_short(entry['output'])}")
        if entry.get("error"):
            lines.append(f"  error ({entry.get('error_type')}): {entry['error']}")
            stderr = (entry.get("details") or {}).get("stderr")
            lines += [f"  stderr: {_short(stderr, 200)}"] if stderr else []
            lines += [f"  hint: {entry['hint']}"] if entry.get("hint") else []
        return entry.get("start_time"), lines
    return None, [f"unknown entry: {_short(entry)}"]


def render_run(path: Path) -> str:
    run_dir = path.parent if path.is_file() else path
    held = _run_dir(path)  # where it is read from: run_dir, or the branch that holds it
    plan, entries, bad = load_run(held)
    lines = [f"Run {run_dir}"]
    if held != run_dir:
        lines.append(f"Held apart until a person accepts its branch: read from {held}")
    start: dict[str, Any] = next((e.get("data", {}) for e in entries if e.get("event") == "start"), {})
    plans = sum(1 for e in entries if e.get("event") == "plan")
    if plan and plans > 1:
        lines.append(f"Goal: {plan.get('goal')}  ({plans} plans; the last, in plan.json, has "
                     f"{len(plan.get('steps', []))} step(s); the others in plans/)")  # fmt: skip
    elif plan:
        lines.append(f"Goal: {plan.get('goal')}  ({len(plan.get('steps', []))} step(s), plan.json)")
    elif start.get("mode") == "loop":
        lines.append("An omx --loop run: no plan, each tool call the model made ran as a one-step plan")
    elif start.get("command") == "agent" or "prompt" in start:
        lines.append("An omx agent run: no plan, the model called tools turn by turn")
    else:
        lines.append("No plan.json: the run ended before a valid plan existed")
    for entry in entries:
        stamp, text = _entry_lines(entry)
        lines.append(f"{_clock(stamp)}  {text[0]}")
        lines += [f"{'':12}  {more}" for more in text[1:]]
    if bad:
        lines.append(f"({bad} trace line(s) could not be read: the run may have been interrupted)")
    return "\n".join(lines)
