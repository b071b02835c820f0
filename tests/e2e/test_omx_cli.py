"""``omx`` end to end (seed 004 §8, cases A, B and C), each twice: with a scripted model injected into the CLI, and
through the real litellm client in a subprocess against an OpenAI-compatible stub on 127.0.0.1. Plus re-running,
replaying, the confirmation policy, clear failures."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cli.omx
from agent.model.llm import LLMError, ScriptedModel
from agent.plan_run import workflow
from tests.e2e.helpers import (
    NOTES,
    PLAN_A,
    PLAN_C,
    REPO,
    SEND_UDP,
    SUMMARY,
    TASK_A,
    TASK_C,
    kinds,
    omx,
    only_run,
    run_end,
    trace_of,
)
from tests.fuse.conftest import poll
from tests.support.openai_stub import OpenAIStub
from tests.support.scripts import with_ctrl_c

pytest_plugins = ["tests.support.fixtures"]


def omx_subprocess(
    ws: Path, stub: OpenAIStub, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process, with litellm talking to the stub (no OMX_* settings inherited); ``input``
    is piped to its stdin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1"}
    command = [sys.executable, "-m", "cli.omx", *args, "--model", "openai/test", "--api-base", stub.base_url]
    return subprocess.run(
        command, cwd=ws, env=env, input=input, capture_output=True, text=True, timeout=120, check=False
    )


# -- case A: a file summary is written ---------------------------------------------------------------------------


def check_case_A(ws: Path, output: str) -> Path:
    summary = ws / "out" / "summary.md"
    assert summary.is_file()
    bullets = [line for line in summary.read_text(encoding="utf-8").splitlines() if line.startswith("- ")]
    assert len(bullets) >= 3
    run_dir = only_run(ws)
    entries = trace_of(run_dir)
    steps = kinds(entries, "step")
    assert [s["status"] for s in steps] == ["success"] * 3
    assert run_end(entries)["status"] == "done_unverified"  # 3 bullets: a form checked, what they say not
    assert (run_dir / "plan.json").is_file()
    assert str(summary) in output and str(run_dir / "trace.jsonl") in output
    return run_dir


#: what the plan's schema lets a step of case A read: the workspace's one file (runs/ is never offered)
READ_CHOICES_A = ["data/notes.txt"]


def read_choices(schema: dict[str, Any]) -> Any:
    """The paths the run's plan schema lets a read_text step read (``agent.plan_run.run_schema``)."""
    return schema["$defs"]["ReadTextInput"]["properties"]["path"]["enum"]


def test_case_A_summary_written_scripted_model(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    model = script(json.dumps(PLAN_A), SUMMARY)
    result = omx(TASK_A, "--yes")
    assert result.exit_code == 0, result.output
    run_dir = check_case_A(ws, result.output)
    assert "[met] out/summary.md has 3 bullet lines (3 bullet lines)" in result.output
    assert len(model.requests) == 2 and read_choices(model.requests[0]["json_mode"]) == READ_CHOICES_A
    assert TASK_A in model.requests[0]["messages"][1]["content"]
    saved = json.loads((run_dir / "plan.json").read_text(encoding="utf-8"))
    assert saved["version"] == 1 and saved["workspace_root"] == str(ws)


def test_case_A_summary_written_litellm_stub(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(content=json.dumps(PLAN_A), usage={"prompt_tokens": 1200, "completion_tokens": 180})
    openai_stub.enqueue(content=SUMMARY, usage={"prompt_tokens": 90, "completion_tokens": 20, "cached_tokens": 64})
    done = omx_subprocess(ws, openai_stub, TASK_A, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = check_case_A(ws, done.stdout)
    assert "Traceback" not in done.stderr
    assert read_choices(openai_stub.requests[0]["response_format"]["json_schema"]["schema"]) == READ_CHOICES_A
    calls = kinds(trace_of(run_dir), "model")
    assert [(c["purpose"], c["prompt_tokens"], c["cached_tokens"]) for c in calls] == [
        ("reading", 0, 0),  # asked first; the stub has none scripted
        ("plan", 1200, 0),
        ("step", 90, 64),
    ]
    assert all(c["request_id"].startswith("omx-") for c in calls)
    answered = [c["request_id"] for c in calls if c["purpose"] != "reading"]  # the stub answered the rest
    assert [h["x-request-id"] for h in openai_stub.headers] == answered


# -- case B: a dry run executes nothing ----------------------------------------------------------------------------


def check_case_B(ws: Path, output: str) -> None:
    assert not (ws / "out" / "summary.md").exists()
    run_dir = only_run(ws)
    assert (run_dir / "plan.json").is_file()
    entries = trace_of(run_dir)
    assert kinds(entries, "step") == []
    end = run_end(entries)
    assert (end["status"], end["steps_executed"]) == ("dry_run", 0)
    assert (end["usage"]["requests"], end["usage"]["cost_usd"]) == (1, None)  # issue 17: tokens at the end
    assert "Tokens: " in output and "in 1 request; cost unknown" in output
    assert entries[0]["data"]["dry_run"] is True
    assert "Dry run: nothing was executed" in output and f"omx run {run_dir / 'plan.json'}" in output


def test_case_B_dry_run_scripted_model(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    model = script(json.dumps(PLAN_A))
    result = omx(TASK_A, "--dry-run")
    assert result.exit_code == 0, result.output
    check_case_B(ws, result.output)
    assert len(model.requests) == 1


def test_case_B_dry_run_litellm_stub(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(content=json.dumps(PLAN_A))
    done = omx_subprocess(ws, openai_stub, TASK_A, "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    check_case_B(ws, done.stdout)
    assert len(openai_stub.requests) == 1


# -- case C: a dangerous command is refused ------------------------------------------------------------------------


def check_case_C(ws: Path, code: int, stderr: str) -> None:
    assert code == workflow.EXIT_REFUSED != 0
    assert (ws / "data" / "notes.txt").read_text(encoding="utf-8") == NOTES
    entries = trace_of(only_run(ws))
    assert kinds(entries, "step") == []
    end = run_end(entries)
    assert end["status"] == "refused" and end["steps_executed"] == 0
    assert any("'rm' is forbidden and not in the allow-list" in reason for reason in end["reasons"])
    (plan_event,) = [e for e in entries if e["kind"] == "run" and e["event"] == "plan"]
    assert (plan_event["data"]["risk_level"], plan_event["data"]["model_label"]) == ("HIGH", "LOW")
    assert "refused: the plan is HIGH risk" in stderr and "not in the allow-list" in stderr
    assert "Traceback" not in stderr


def test_case_C_rm_rf_refused_scripted_model(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(json.dumps(PLAN_C))
    result = omx(TASK_C, "--yes")
    check_case_C(ws, result.exit_code, result.stderr)


def test_case_C_rm_rf_refused_litellm_stub(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(content=json.dumps(PLAN_C), usage={"prompt_tokens": 900, "completion_tokens": 40})
    done = omx_subprocess(ws, openai_stub, TASK_C, "--yes")
    check_case_C(ws, done.returncode, done.stderr)
    # issue 17: a refused run still ends with what its planning cost, on screen and in the trace
    assert "Tokens: 900 in (0 cached), 40 out in 1 request; cost unknown" in done.stdout
    assert run_end(trace_of(only_run(ws)))["usage"]["prompt_tokens"] == 900


# -- omx run, omx replay ---------------------------------------------------------------------------------------


def test_omx_run_re_executes_a_saved_plan(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(json.dumps(PLAN_A))
    assert omx(TASK_A, "--dry-run").exit_code == 0
    plan_path = only_run(ws) / "plan.json"
    model = script(SUMMARY)
    result = omx("run", str(plan_path), "--yes")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "summary.md").is_file() and len(model.requests) == 1  # no planning: only the llm step
    runs = sorted((ws / "runs").iterdir())
    assert len(runs) == 2 and trace_of(runs[1])[0]["data"]["plan"] == str(plan_path)


def test_omx_run_from_elsewhere_uses_the_plans_workspace(
    ws: Path, script: Callable[..., ScriptedModel], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = {**PLAN_A, "workspace_root": str(ws), "steps": PLAN_A["steps"][:1]}
    plan_path = tmp_path / "kept-plan.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = omx("run", str(plan_path), "--yes")
    assert result.exit_code == 0, result.output
    assert kinds(trace_of(only_run(ws)), "step")[0]["output"] == NOTES


def test_omx_run_refuses_an_invalid_plan_clearly(ws: Path) -> None:
    (ws / "bad.json").write_text(json.dumps({**PLAN_A, "version": 2}), encoding="utf-8")
    result = omx("run", "bad.json")
    assert (
        result.exit_code == 1 and "bad.json: not a valid plan (format v1):\nversion: Input should be 1" in result.stderr
    )
    assert not (ws / "runs").exists()


def test_omx_replay_renders_the_timeline(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(json.dumps(PLAN_A), {"content": SUMMARY, "usage": {"prompt_tokens": 80, "cached_tokens": 64}})
    assert omx(TASK_A, "--yes").exit_code == 0
    run_dir = only_run(ws)
    result = omx("replay", str(run_dir))
    assert result.exit_code == 0, result.output
    text = result.output
    for expected in (
        f"Run {run_dir}",
        "Goal: Summarise data/notes.txt",
        f"run started: task {TASK_A!r}",
        "model plan: success",
        "plan risk LOW",
        "confirmation: approved (--yes (LOW risk))",
        "step 1 read_text: success",
        "path: data/notes.txt",
        "model step for step 2",
        "80 prompt (64 cached)",
        "step 3 write_text: success",
        "run ended: done_unverified, 3 step(s) executed",
        f"produced {ws / 'out' / 'summary.md'}",
    ):
        assert expected in text, expected
    order = [text.index(s) for s in ("run started", "model plan", "step 1", "step 2", "step 3", "run ended")]
    assert order == sorted(order)


def test_omx_replay_of_a_failed_run_shows_the_error(ws: Path) -> None:
    plan = {**PLAN_A, "steps": [{**PLAN_A["steps"][0], "inputs": {"path": "data/missing.txt"}}]}
    saved = ws / "missing.json"  # a saved plan runs as written (for a task, omx reads the task's file instead)
    saved.write_text(json.dumps(plan), encoding="utf-8")
    result = omx("run", str(saved), "--yes")
    assert result.exit_code == workflow.EXIT_FAILED
    assert "Result: failed at step 1 of 1: data/missing.txt does not exist" in result.output
    assert "Next: check the path with list_dir; then fix step 1" in result.output
    replay = omx("replay", str(only_run(ws)))
    assert "error (NotFound): data/missing.txt does not exist" in replay.output and "hint: " in replay.output


def test_omx_replay_of_something_else_is_one_clear_line(ws: Path) -> None:
    result = omx("replay", str(ws))
    assert result.exit_code == 1 and "is not a run directory: it has no trace.jsonl" in result.output
    assert "Traceback" not in result.output


# -- confirmation --------------------------------------------------------------------------------------------


def test_low_risk_without_yes_asks(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script(json.dumps(PLAN_A))
    declined = omx(TASK_A, input="n\n")
    assert declined.exit_code == workflow.EXIT_DECLINED and "Run this LOW risk plan? [y/N]" in declined.output
    assert run_end(trace_of(only_run(ws)))["status"] == "declined" and not (ws / "out").exists()


def test_a_piped_answer_ends_the_prompt_s_line(ws: Path, openai_stub: OpenAIStub) -> None:
    """With stdin piped the answer is not echoed, and the output ran on after the prompt:
    ``Run this LOW risk plan? [y/N]: Result: ...``."""
    openai_stub.enqueue(content=json.dumps(PLAN_A))
    done = omx_subprocess(ws, openai_stub, TASK_A, input="n\n")
    assert done.returncode == workflow.EXIT_DECLINED, done.stdout + done.stderr
    assert "Run this LOW risk plan? [y/N]: \n" in done.stdout, done.stdout


def test_ctrl_c_while_the_model_plans_ends_the_trace(ws: Path, openai_stub: OpenAIStub) -> None:
    """^C while waiting for the model left a trace of ``run start`` alone: no request, no end, a run that just stops
    in ``omx replay``. Now the request and the run both end as interrupted."""
    openai_stub.enqueue(content=json.dumps(PLAN_A), delay=60)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO), "NO_PROXY": "127.0.0.1"}
    command = [sys.executable, "-m", "cli.omx", TASK_A, "--model", "openai/test", "--api-base", openai_stub.base_url]
    with subprocess.Popen(
        with_ctrl_c(command), cwd=ws, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            poll(lambda: bool(openai_stub.requests), what="omx's planning request")
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode != 0
    entries = trace_of(only_run(ws))
    assert [m["status"] for m in kinds(entries, "model")] == ["failed", "interrupted"]  # no reading scripted
    end = run_end(entries)
    assert (end["status"], end["steps_executed"]) == ("interrupted", 0)
    replayed = omx("replay", str(only_run(ws)))
    assert replayed.exit_code == 0 and "model plan: interrupted" in replayed.output, replayed.output
    assert "run ended: interrupted, 0 step(s) executed" in replayed.output and "[None]" not in replayed.output


def test_medium_always_asks_and_yes_is_not_an_answer(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    (ws / "out").mkdir()
    (ws / "out" / "summary.md").write_text("old\n", encoding="utf-8")  # the plan now overwrites: MEDIUM
    script(json.dumps(PLAN_A))
    refused = omx(TASK_A, "--yes")
    assert refused.exit_code == workflow.EXIT_DECLINED
    assert "(--yes does not answer for MEDIUM risk plans)" in refused.output
    assert "step 3: overwrites the existing file out/summary.md" in refused.output
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8") == "old\n"
    script(json.dumps(PLAN_A), SUMMARY)
    confirmed = omx(TASK_A, "--yes", input="y\n")
    assert confirmed.exit_code == 0, confirmed.output
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8").startswith("- omx plans first")


def test_high_is_refused_with_its_reasons_even_from_a_saved_plan(ws: Path) -> None:
    plan = {
        **PLAN_A,
        "workspace_root": str(ws),
        "steps": [{"id": 1, "description": "peek", "tool": "read_text", "inputs": {"path": "/etc/passwd"}}],
    }
    (ws / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    result = omx("run", "plan.json", "--yes", input="y\n")
    assert result.exit_code == workflow.EXIT_REFUSED
    assert "  - step 1: path '/etc/passwd' is absolute" in result.stderr
    assert "Run this" not in result.output


def test_no_sandbox_is_recorded(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    plan = {
        **PLAN_A,
        "steps": [{"id": 1, "description": "count", "tool": "shell", "inputs": {"cmd": "wc -l data/notes.txt"}}],
    }
    script(json.dumps(plan))
    result = omx(TASK_A, "--yes", "--no-sandbox", input="y\n")
    assert result.exit_code == 0, result.output
    assert "runs without an OS sandbox" in result.output and "Sandbox: none; files: unconfined" in result.output
    entries = trace_of(only_run(ws))
    assert entries[0]["data"]["sandbox"]["mechanism"] == "none"
    assert kinds(entries, "step")[0]["details"]["sandbox"] == "none"


def test_a_python_step_sends_no_udp_to_the_host(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """In a plain directory the step's empty network namespace stops UDP too, not only Landlock's TCP rules."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.setblocking(False)
    code = SEND_UDP.format(port=listener.getsockname()[1])
    script(
        json.dumps({**PLAN_A, "steps": [{"id": 1, "description": "send", "tool": "python", "inputs": {"code": code}}]})
    )
    with listener:
        result = omx(TASK_A, input="y\n")
        assert result.exit_code == workflow.EXIT_FAILED and "sent" not in result.output, result.output
        assert "Network is unreachable" in result.output or "Operation not permitted" in result.output, result.output
        with pytest.raises(BlockingIOError):  # sendto on loopback queues the datagram before it returns
            listener.recv(100)


# -- failures are one clear line ---------------------------------------------------------------------------------


def test_an_invalid_plan_twice_fails_clearly_and_is_traced(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script("I will delete things", json.dumps({"goal": "x"}))
    result = omx(TASK_A, "--yes", "--replans", "0")  # issue 28's re-plans of invalid plans: test_omx_replan.py
    assert result.exit_code == workflow.EXIT_FAILED
    assert "omx: the model did not return a valid plan, also after one retry" in result.stderr
    run_dir = only_run(ws)
    entries = trace_of(run_dir)
    assert not (run_dir / "plan.json").exists() and run_end(entries)["status"] == "planning_failed"
    assert [e["data"]["attempt"] for e in entries if e.get("event") == "plan_invalid"] == [1, 2]
    assert [m["purpose"] for m in kinds(entries, "model")] == ["reading", "plan", "plan"]


def test_no_model_configured_says_what_to_do_and_is_recorded(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25: no model was labelled an "LLM error" (no model was asked anything) and left no run record, though
    every run, failed ones included, leaves one. It says how to choose a model, and the run's record ends."""
    monkeypatch.delenv("OMX_MODEL", raising=False)
    result = omx(TASK_A)
    message, trace = result.stderr.splitlines()
    assert result.exit_code == 1 and message.startswith("omx: no model configured; pass --model or set OMX_MODEL")
    assert "export OMX_MODEL=openai/gpt-4o-mini" in message and "--model scripted:FILE" in message
    assert "LLM error" not in result.stderr and "Traceback" not in result.output
    run_dir = only_run(ws)
    assert trace == f"omx: trace: {run_dir / 'trace.jsonl'}"
    entries = trace_of(run_dir)
    assert [e["event"] for e in entries] == ["start", "end"] and entries[0]["data"]["task"] == TASK_A
    assert run_end(entries) == {"status": "error", "error": message.removeprefix("omx: "), "steps_executed": 0}
    assert "No plan.json: the run ended before a valid plan existed" in omx("replay", str(run_dir)).output
    # a saved plan with an llm step: its record has the plan too
    (ws / "plan.json").write_text(json.dumps(PLAN_A), encoding="utf-8")
    rerun = omx("run", "plan.json", "--yes")
    assert rerun.exit_code == 1 and rerun.stderr.startswith("omx: no model configured")
    (_, again) = sorted((ws / "runs").iterdir())
    assert json.loads((again / "plan.json").read_text())["goal"] == PLAN_A["goal"]
    assert run_end(trace_of(again))["status"] == "error" and not (ws / "out").exists()


def test_an_unreachable_server_is_one_line(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(name: str | None, base: str | None, timeout: float | None = None) -> Any:
        class Down:
            def complete(self, *args: Any, **kwargs: Any) -> Any:
                raise LLMError("LLM error: cannot reach openai/x at http://127.0.0.1:9/v1: refused")

        return Down()

    monkeypatch.setattr(cli.omx, "build_model", failing)
    result = omx(TASK_A)
    assert result.exit_code == 1 and "omx: planning failed: LLM error: cannot reach" in result.stderr
    assert run_end(trace_of(only_run(ws)))["status"] == "planning_failed"


def test_an_internal_error_is_one_line(
    ws: Path, script: Callable[..., ScriptedModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    script(json.dumps(PLAN_A))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(workflow, "assess", broken)
    result = omx(TASK_A, "--yes")
    assert result.exit_code == 1 and "internal error (RuntimeError: boom)" in result.output
    assert "Traceback" not in result.output


def test_a_missing_workspace_is_one_line(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    script()
    result = omx(TASK_A, "--workspace", str(ws / "nope"))
    assert result.exit_code == 1 and f"workspace {ws / 'nope'} is not a directory" in result.output
    assert "Traceback" not in result.output
    bad_name = omx(TASK_A, "--as", "Bad_Name")
    assert bad_name.exit_code == 1 and "invalid agent name 'Bad_Name'" in bad_name.output
    root = omx(TASK_A, "--workspace", "/")
    assert root.exit_code == 1 and "the workspace cannot be /" in root.output


# -- the command itself ----------------------------------------------------------------------------------------


def test_help_does_not_import_litellm_or_pydantic(record_property: Callable[[str, object], None]) -> None:
    """``omx --help`` must answer at once: litellm (seconds) and pydantic load only when a command runs.
    The wall time is measured and reported (junit property ``omx_help_seconds``), not asserted."""
    code = (
        "import sys, runpy; sys.argv = ['omx', '--help']\ntry:\n    runpy.run_module('cli.omx', run_name='__main__')\n"
    )
    code += "except SystemExit:\n    pass\n"
    code += "print(sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'pydantic', 'agent')))"
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    record_property("omx_help_seconds", round(time.perf_counter() - began, 3))
    assert "Usage: omx" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_help_shows_the_commands_and_exit_codes() -> None:
    result = omx("--help")
    assert result.exit_code == 0
    for text in ('omx "TASK"', "run", "replay", "3 refused (HIGH risk)", "--api-base"):
        assert text in result.output
    assert "--dry-run" in omx("task", "--help").output


def test_help_shows_the_task_options_and_what_scripted_file_is() -> None:
    """Issue 25: ``omx --help`` hid the options of ``omx "TASK"`` behind ``omx task --help``, and ``--model
    scripted:FILE`` was documented nowhere a user looks."""
    lines = omx("--help").output.splitlines()
    section = lines.index('Task options (omx "TASK" [OPTIONS]; omx run PLAN takes them too):')
    commands = lines.index("Commands:")
    options = " ".join(lines[section:commands])
    for option in ("-y, --yes", "--dry-run", "--as AGENT", "-w, --workspace PATH", "-m, --model M", "--no-sandbox"):
        assert option in options
    assert "scripted:FILE" in options and "--help" not in options
    text = " ".join(line.strip() for line in lines[commands:])
    assert "--model scripted:FILE runs without a model (demos, tests): FILE is a JSON list of the model's" in text
    assert "the first is the plan as JSON text (the format omx schema prints), then one answer per llm step" in text


def test_a_scripted_file_as_the_help_describes_it_runs_a_task(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the help says of scripted:FILE is true: a JSON list, the plan as JSON text, then the llm step's answer."""
    monkeypatch.delenv("OMX_MODEL", raising=False)
    answers = ws.parent / "answers.json"
    answers.write_text(json.dumps([json.dumps(PLAN_A), {"content": SUMMARY}]), encoding="utf-8")
    result = omx(TASK_A, "--yes", "--model", f"scripted:{answers}")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8").strip() == SUMMARY


def test_schema_prints_the_plan_schema() -> None:
    result = omx("schema")
    assert result.exit_code == 0 and json.loads(result.output)["title"] == "Plan"
