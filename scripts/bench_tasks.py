"""Run omx on a suite of everyday tasks with a real model, and judge each by the files it produced.

    .venv/bin/python scripts/bench_tasks.py --model openai/local-model --api-base http://127.0.0.1:8080/v1
        [--part tuning|held-out|all] [--tasks N] [--only NAME ...] [--timeout S] [--json FILE] [--replans N]
        [--response-format MODE] [--loop]

The tasks (scripts/bench_suite/) are of three scenarios: file summaries, batch text work and controlled
commands, over some twenty kinds (moves, CSV sums, conversions, a haiku...), each phrased three ways or more. They
are in two parts: ``tuning``, the 35 tasks omx's rules were written from and some added ones, and ``held-out``,
drawn once by seed from the added ones (scripts/bench_split.json): run, scored and reported, never studied to write
a rule, so its score is the one that tells skill from tuning. Each runs in a fresh temporary workspace holding its
input files, as a real ``omx "TASK" --yes`` process that answers "y" to the prompt a MEDIUM risk plan asks (what a
person at the terminal would do; a HIGH one is refused whatever the answer). Each is then judged by its own checker
of the files in the workspace, never by omx's success criteria: the number that matters is how often omx says
"success" and the files are wrong ("false success").

Per task it prints: its part and kind, done right or not (and why), omx's exit code and result line, whether omx
reported success but the result is wrong, plan requests (more than one: a retry or a re-plan), re-plans, invalid
plan replies, tokens and time. Then the summary of each part, held-out first: success rate (by scenario and by
kind), false successes, invalid plans that reached the person, re-plans and invalid plan replies in all, and how
the plan was asked (``response_format``: json_schema, json_object or none; ``--response-format`` pins one, to
measure what each costs). ``--loop`` runs ``omx --loop "TASK"`` instead (the task as a tool loop, each call
confirmed as a plan step is, prompts answered the same way); each outcome records its ``mode`` (plan or loop), so
the two modes' --json files can be reported side by side (``--report A.json B.json``). A loop run ends done or
failed, never success, so its false successes are 0 by construction: its "done and wrong" is the number to read.
scripts/local_model.sh serves the reference model. Not in CI:
tests/test_bench_tasks_smoke.py runs it against the OpenAI-compatible stub.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_suite import PARTS, SCENARIOS, SUITE, TASKS, Task, prepare  # noqa: E402  # a package beside this script

__all__ = ["SUITE", "TASKS", "Outcome", "Task", "main", "run_task", "summary"]


@dataclass
class Outcome:
    name: str
    kind: str  # what the task asks for (move, csv_math...); in a --json file of the first 35 tasks, their scenario
    right: bool
    why: str
    exit_code: int
    status: str  # the trace's end status: success, done_unverified, done, failed, planning_failed, refused, ...
    result_line: str
    false_success: bool
    plan_requests: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    # defaults: a --json file of an earlier run, without them, still prints with --report
    replans: int = 0  # new plans asked for after a failed step, an invalid plan or a result short of the task
    invalid_plans: int = 0  # replies the planner rejected (each retried or re-planned, or the run ended)
    response_format: str = ""  # how the plan that answered was asked: json_schema, json_object or none
    part: str = "tuning"  # tuning or held-out
    scenario: str = ""  # summary, text or command
    mode: str = "plan"  # plan: omx "TASK"; loop: omx --loop "TASK"


def _saved(record: dict[str, Any]) -> Outcome:
    """An outcome of a --json file; one written before the suite had parts and kinds gets its task's."""
    task = TASKS.get(str(record.get("name")))
    if "scenario" not in record:
        record = record | {"scenario": record.get("kind", ""), "kind": task.kind if task else record.get("kind", "")}
        record |= {"part": task.part} if task else {}
    return Outcome(**record)


# -- running one task ----------------------------------------------------------------------------------------------


def _omx_env(response_format: str | None = None) -> dict[str, str]:
    """No OMX_* / OPENAI_* settings of whoever runs the suite: the model is the one given on the command line, and
    the response format the one given with --response-format (else omx's own choice)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"OMX_RESPONSE_FORMAT": response_format} if response_format else {}
    return env | {"PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1"}


def _trace(ws: Path) -> list[dict[str, Any]]:
    """The run's trace entries (none when omx left no trace)."""
    traces = sorted((ws / "runs").glob("*/trace.jsonl")) if (ws / "runs").is_dir() else []
    if not traces:
        return []
    return [json.loads(line) for line in traces[-1].read_text(encoding="utf-8").splitlines() if line.strip()]


def _run_end(ws: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's end entry and its model calls, from its trace (empty when omx left none)."""
    entries = _trace(ws)
    ends = [e for e in entries if e.get("kind") == "run" and e.get("event") == "end"]
    models = [e for e in entries if e.get("kind") == "model"]
    return (ends[-1].get("data", {}) if ends else {}), models


def _result_line(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("Result:", "omx:", "Error:", "Refused", "Not confirmed")):
            return line.strip()
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _plan_format(models: list[dict[str, Any]]) -> str:
    """How the first plan the server answered was asked (none: neither a schema nor JSON mode)."""
    answered = [m for m in models if m.get("purpose") in ("plan", "replan") and m.get("status") == "success"]
    return str(answered[0].get("response_format") or "none") if answered else ""


_TYPE_COUNT = re.compile(r"To run it, type (\d+): $")
_PROMPT = re.compile(r"(?:\[y/N\]|\[Y/n\]|\?|:) $")


def _converse(command: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str]:
    """Run omx and answer its questions as the person at the terminal would: "y" to each (a MEDIUM plan asks once,
    a re-plan may ask again; a HIGH one is refused whatever the answer), and the number a plan that moves or deletes
    asks to be typed. A question is what stdout ends with, without a newline, once it has been quiet for a moment.
    Its exit code and output (stdout, then stderr); TimeoutExpired after ``timeout`` s."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdin and proc.stdout and proc.stderr
    deadline = time.monotonic() + timeout
    out, err = bytearray(), bytearray()
    asked_from = 0  # where in stdout the next question starts
    last_out = time.monotonic()
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, out)
        selector.register(proc.stderr, selectors.EVENT_READ, err)
        while selector.get_map():
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise subprocess.TimeoutExpired(command, timeout)
            for key, _ in selector.select(timeout=0.1):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                key.data.extend(chunk)
                last_out = time.monotonic() if key.data is out else last_out
            if time.monotonic() - last_out < 0.5:
                continue
            question = out[asked_from:].decode("utf-8", errors="replace")
            typed = _TYPE_COUNT.search(question)
            if typed or _PROMPT.search(question):
                asked_from = len(out)
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.write(f"{typed[1] if typed else 'y'}\n".encode())
                    proc.stdin.flush()
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()
    return proc.wait(), (out + err).decode("utf-8", errors="replace")


def run_task(
    task: Task,
    *,
    model: str,
    api_base: str,
    timeout: float,
    replans: int | None = None,
    response_format: str | None = None,
    keep: Path | None = None,
    loop: bool = False,
) -> Outcome:
    with tempfile.TemporaryDirectory(prefix=f"omx-bench-{task.name}-") as tmp:
        ws = Path(tmp)
        prepare(task, ws)
        command = [sys.executable, "-m", "cli.omx", *(["--loop"] if loop else []), task.prompt, "--yes", "--model",
                   model, "--api-base", api_base, "--timeout", str(timeout)]  # fmt: skip
        command += ["--replans", str(replans)] if replans is not None else []
        began = time.monotonic()
        try:
            # a run that re-plans makes a few plan requests more, each up to the timeout
            exit_code, output = _converse(command, cwd=ws, env=_omx_env(response_format), timeout=timeout * 8)
        except subprocess.TimeoutExpired as exc:
            exit_code, output = -1, f"timed out after {exc.timeout:.0f} s"
        seconds = time.monotonic() - began
        right, why = task.check(ws)
        end, models = _run_end(ws)
        entries = _trace(ws)  # while the workspace is still there
        if keep:  # the plans and trace of a run, for reading why it went as it did
            shutil.copytree(ws, keep / task.name, symlinks=True, dirs_exist_ok=True)
    replanned = sum(1 for e in entries if e.get("kind") == "run" and e.get("event") == "replan")
    invalid = sum(1 for e in entries if e.get("kind") == "run" and e.get("event") == "plan_invalid")
    status = str(end.get("status", "no trace"))
    usage = end.get("usage") or {}
    plans = sum(1 for m in models if str(m.get("purpose", "")).startswith(("plan", "replan")))
    return Outcome(
        name=task.name,
        kind=task.kind,
        part=task.part,
        scenario=task.scenario,
        right=right,
        why=why,
        exit_code=exit_code,
        status=status,
        result_line=_result_line(output),
        false_success=status == "success" and not right,
        plan_requests=plans,
        replans=replanned,
        invalid_plans=invalid,
        response_format=_plan_format(models),
        prompt_tokens=int(usage.get("prompt_tokens", 0) or 0),
        completion_tokens=int(usage.get("completion_tokens", 0) or 0),
        seconds=seconds,
        extra={"output_tail": output[-2000:], "model_calls": len(models)},
        mode="loop" if loop else "plan",
    )


# -- the report ----------------------------------------------------------------------------------------------------


def _row(o: Outcome) -> str:
    verdict = "RIGHT" if o.right else "wrong"
    flag = "  FALSE SUCCESS" if o.false_success else ""
    tokens = f"{o.prompt_tokens}+{o.completion_tokens}"
    return (
        f"{o.name:<24} {o.part:<8} {o.kind:<15} {verdict:<5} {o.mode:<4} exit {o.exit_code:>2} {o.status:<16} "
        f"plans {o.plan_requests} replans {o.replans} invalid {o.invalid_plans} tokens {tokens:<11} "
        f"{o.seconds:6.1f}s{flag}\n    {o.why}\n    {o.result_line[:160]}"
    )


def _scores(outcomes: list[Outcome], attribute: str, order: list[str]) -> str:
    """``right/n`` for each value of ``attribute`` among ``outcomes``, in ``order`` (then any other, sorted)."""
    values = [v for v in order if any(getattr(o, attribute) == v for o in outcomes)]
    values += sorted({getattr(o, attribute) for o in outcomes} - set(values))
    counts = []
    for value in values:
        of_value = [o for o in outcomes if getattr(o, attribute) == value]
        counts.append(f"{value} {sum(o.right for o in of_value)}/{len(of_value)}")
    return ", ".join(counts)


def _part_summary(outcomes: list[Outcome]) -> list[str]:
    n = len(outcomes)
    right = sum(o.right for o in outcomes)
    false_success = sum(o.false_success for o in outcomes)
    unchecked_wrong = sum(1 for o in outcomes if o.status in ("done", "done_unverified") and not o.right)
    false_failure = sum(1 for o in outcomes if o.status == "failed" and o.right)
    # planning fails for an invalid plan or for a model server that failed (a timeout): only the first is omx's
    server_failed = sum(1 for o in outcomes if o.status == "planning_failed" and "LLM error" in o.result_line)
    invalid = sum(1 for o in outcomes if o.status == "planning_failed") - server_failed
    retried = sum(1 for o in outcomes if o.plan_requests > 1)
    replanned = [o for o in outcomes if o.replans]
    formats = sorted({o.response_format for o in outcomes if o.response_format})
    tokens = sum(o.prompt_tokens + o.completion_tokens for o in outcomes)
    seconds = sum(o.seconds for o in outcomes)
    return [
        f"Done right: {right}/{n} ({100 * right / n:.0f} %)  by scenario: "
        + _scores(outcomes, "scenario", list(SCENARIOS)),
        f"By kind: {_scores(outcomes, 'kind', [])}",
        f"Reported success but wrong: {false_success}",
        f"Done (criteria not checked) and wrong: {unchecked_wrong}",
        f"Right but reported failed (a criterion of the model's own was wrong): {false_failure}",
        f"Invalid plans reaching the person: {invalid}; plans the model server failed to give: {server_failed}; "
        f"runs with more than one plan request: {retried}",
        f"Re-plans: {sum(o.replans for o in outcomes)} in {len(replanned)} runs ({sum(o.right for o in replanned)} "
        f"of them right); invalid plan replies caught: {sum(o.invalid_plans for o in outcomes)}; plan asked as: "
        f"{', '.join(formats) or 'unknown'}",
        f"Tokens: {tokens:,} in all; time: {seconds:.0f} s in all, {seconds / n:.1f} s a task",
    ]  # fmt: skip


_PART_TITLES = {
    "held-out": "Held-out part (drawn before any tuning, never studied to write a rule): the score that counts",
    "tuning": "Tuning part (the tasks omx's rules may be written from)",
}


_MODE_COMMANDS = {"plan": 'omx "TASK"', "loop": 'omx --loop "TASK"'}


def summary(outcomes: list[Outcome]) -> str:
    """Each part's scores, held-out first, then the whole run's; outcomes of both modes (``--report`` of a plan
    run's file and a loop run's), each mode's apart, then the two side by side."""
    modes = sorted({o.mode for o in outcomes}, key=("plan", "loop").index)
    if len(modes) > 1:
        blocks = [f"Mode {mode} ({_MODE_COMMANDS[mode]}):\n\n" + _mode_summary([o for o in outcomes if o.mode == mode])
                  for mode in modes]  # fmt: skip
        side = ", ".join(f"{mode} {_right(o for o in outcomes if o.mode == mode)}" for mode in modes)
        return "\n\n".join([*blocks, f"Side by side, done right: {side}"])
    return _mode_summary(outcomes)


def _right(outcomes: Iterable[Outcome]) -> str:
    """``right/n (p %)``, and of each part."""
    chosen = list(outcomes)
    n, right = len(chosen), sum(o.right for o in chosen)
    parts = ", ".join(f"{part} {sum(o.right for o in chosen if o.part == part)}/{sum(o.part == part for o in chosen)}"
                      for part in PARTS if any(o.part == part for o in chosen))  # fmt: skip
    return f"{right}/{n} ({100 * right / n:.0f} %: {parts})"


def _mode_summary(outcomes: list[Outcome]) -> str:
    """The summary of one mode's outcomes: each part's, held-out first, then the whole run's."""
    blocks = []
    for part in PARTS:
        of_part = [o for o in outcomes if o.part == part]
        lines = [f"  {line}" for line in _part_summary(of_part)] if of_part else ["  no task of this part was run"]
        blocks.append("\n".join([f"{_PART_TITLES[part]}, {len(of_part)} tasks:", *lines]))
    n, right = len(outcomes), sum(o.right for o in outcomes)
    whole = (
        f"All {n} tasks: done right {right}/{n} ({100 * right / n:.0f} %), reported success but wrong "
        f"{sum(o.false_success for o in outcomes)}"
    )
    return "\n\n".join([*blocks, whole])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--model", help="litellm model name, e.g. openai/local-model")
    parser.add_argument("--api-base", help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument(
        "--part", choices=[*PARTS, "all"], default="all", help="run the tasks of this part of the suite (default: all)"
    )
    parser.add_argument("--tasks", type=int, default=None, help="run only the first N tasks (of the part)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run this task (repeatable)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one model request may take")
    parser.add_argument("--json", type=Path, default=None, help="also write the outcomes to this file")
    parser.add_argument("--replans", type=int, default=None, help="omx --replans N (default: omx's own, 2)")
    parser.add_argument(
        "--loop", action="store_true", help='run omx --loop "TASK" (the tool loop) instead of omx "TASK" (a plan)'
    )
    parser.add_argument(
        "--response-format",
        choices=["auto", "json_schema", "json_object", "none"],
        default=None,
        help="how omx asks for the plan (OMX_RESPONSE_FORMAT; default: auto, the schema where the server takes it)",
    )
    parser.add_argument("--keep", type=Path, default=None, help="copy each task's workspace (its runs/) into DIR/NAME")
    parser.add_argument("--list", action="store_true", help="list the tasks (of --part) and exit")
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        default=None,
        metavar="JSON",
        help="print the table of --json files and exit (a plan run's and a loop run's: side by side)",
    )
    args = parser.parse_args(argv)
    if args.report:
        saved = [_saved(o) for report in args.report for o in json.loads(report.read_text(encoding="utf-8"))]
        print("\n".join(_row(o) for o in saved) + "\n\n" + summary(saved))
        return 0
    unknown = [name for name in args.only if name not in TASKS]
    if unknown:
        parser.error(f"no such task: {', '.join(unknown)} (--list shows them)")
    chosen = [TASKS[name] for name in args.only] if args.only else SUITE
    tasks = [task for task in chosen if args.part in ("all", task.part)][: args.tasks]
    if args.list:
        for task in tasks:
            print(f"{task.name:<24} {task.part:<8} {task.kind:<15} {task.prompt}")
        return 0
    if args.loop and args.replans is not None:
        parser.error("--loop runs no plan to re-plan: leave out --replans")
    if not (args.model and args.api_base):
        parser.error("--model and --api-base are needed to run the tasks")
    if not tasks:
        parser.error(f"no task of the {args.part} part among --only")
    outcomes = []
    for task in tasks:
        outcome = run_task(task, model=args.model, api_base=args.api_base, timeout=args.timeout,
                           replans=args.replans, response_format=args.response_format, keep=args.keep,
                           loop=args.loop)  # fmt: skip
        outcomes.append(outcome)
        print(_row(outcome), flush=True)
        if args.json:  # after every task: a long run stopped half way still leaves what it measured
            args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2), encoding="utf-8")
    print()
    print(summary(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
