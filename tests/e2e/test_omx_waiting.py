"""The installed CLI against the local OpenAI-compatible stub (issue 17): --timeout / OMX_TIMEOUT / the agent YAML,
a retried 5xx shown on stderr and recorded in the trace, advice that fits a model failure, tokens at the end."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from agent.model.llm import Usage
from agent.model.pricing import cost_usd
from tests.e2e.helpers import PLAN_A, REPO, TASK_A, kinds, only_run, run_end, trace_of
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]


def omx(
    cwd: Path, stub: OpenAIStub, *args: str, model: str = "openai/test", **env: str
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    base |= {"PYTHONPATH": str(REPO), "NO_PROXY": "127.0.0.1", **env}
    command = [sys.executable, "-m", "cli.omx", *args, "--model", model, "--api-base", stub.base_url]
    return subprocess.run(command, cwd=cwd, env=base, capture_output=True, text=True, timeout=120, check=False)


def test_a_server_error_is_retried_shown_and_traced(tmp_path: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(status=503, error="overloaded")
    openai_stub.enqueue("42", usage={"prompt_tokens": 30, "completion_tokens": 2, "cached_tokens": 20})
    done = omx(tmp_path, openai_stub, "agent", "What is 6*7?", "--runs-dir", "runs")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "42\n"
    (retry,) = [line for line in done.stderr.splitlines() if "attempt 1 of 4 failed" in line]
    assert retry.startswith("omx: attempt 1 of 4 failed (LLM error: openai/test failed (HTTP 503): overloaded")
    assert "omx agent: Tokens: 30 in (20 cached), 2 out in 1 request; cost unknown" in done.stderr
    assert "\r" not in done.stderr  # no spinner when stderr is a pipe
    (model_call,) = kinds(trace_of(only_run(tmp_path)), "model")
    assert model_call["status"] == "success" and model_call["retries"] == [retry.removeprefix("omx: ")]


def test_a_model_litellm_prices_ends_the_run_with_its_cost(tmp_path: Path, openai_stub: OpenAIStub) -> None:
    """Issue 17: the cost at the end of every run when litellm knows the model's price (and in the trace)."""
    openai_stub.enqueue("42", usage={"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 600})
    done = omx(tmp_path, openai_stub, "agent", "What is 6*7?", "--runs-dir", "runs", model="openai/gpt-4o-mini")
    assert done.returncode == 0, done.stderr
    usage = Usage(prompt_tokens=1000, completion_tokens=100, cached_tokens=600)
    cost = cost_usd("openai/gpt-4o-mini", usage)
    assert cost is not None and cost > 0
    assert f"omx agent: Tokens: 1,000 in (600 cached), 100 out in 1 request; cost ${cost:.4f}" in done.stderr
    assert run_end(trace_of(only_run(tmp_path)))["usage"]["cost_usd"] == cost


def test_timeout_comes_from_the_flag_the_variable_and_the_yaml(tmp_path: Path, openai_stub: OpenAIStub) -> None:
    (tmp_path / "agent.yaml").write_text("timeout: 0.7\n", encoding="utf-8")
    for _ in range(3):
        openai_stub.enqueue("late", delay=3)
    flag = omx(tmp_path, openai_stub, "agent", "hi", "--timeout", "0.5", OMX_TIMEOUT="99")
    variable = omx(tmp_path, openai_stub, "agent", "hi", OMX_TIMEOUT="0.6")
    yaml = omx(tmp_path, openai_stub, "agent", "hi", "-c", "agent.yaml", OMX_TIMEOUT="99")
    for done, seconds in ((flag, "0.5"), (variable, "0.6"), (yaml, "0.7")):
        assert done.returncode == 1
        assert f"timed out after {seconds}s" in done.stderr and "raise the timeout" in done.stderr
        assert "Traceback" not in done.stderr
    bad = omx(tmp_path, openai_stub, "agent", "hi", "--timeout", "0")
    assert bad.returncode == 2 and "--timeout" in bad.stderr


def test_a_model_failure_in_a_step_says_run_again_not_fix_the_plan(tmp_path: Path, openai_stub: OpenAIStub) -> None:
    """Issue 17: after a transient model error the advice was to "fix step 2 in plan.json", which has nothing to fix."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("a\nb\nc\n", encoding="utf-8")
    openai_stub.enqueue(json.dumps(PLAN_A))
    openai_stub.enqueue(status=500, error="upstream crashed")
    done = omx(tmp_path, openai_stub, TASK_A, "--yes", OMX_RETRIES="0")
    assert done.returncode == 1
    assert "fix step" not in done.stdout + done.stderr
    (advice,) = [line for line in done.stdout.splitlines() if line.startswith("Next: ")]
    run_dir = only_run(tmp_path)
    assert advice == (
        "Next: the model's server failed, not the task: run it again when the server is back: "
        f"omx run {run_dir / 'plan.json'} --from-step 2"
    )
    assert run_end(trace_of(run_dir))["usage"]["requests"] == 1  # the failed call counted no tokens


def test_a_terminal_sees_a_spinner_while_the_model_works(tmp_path: Path, openai_stub: OpenAIStub) -> None:
    """Issue 17: nothing showed while waiting. On a terminal stderr shows the model and the seconds waited."""
    openai_stub.enqueue("done", delay=1.0)
    parent, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO), "NO_PROXY": "127.0.0.1", "TERM": "xterm"}
    command = [sys.executable, "-m", "cli.omx", "agent", "hi", "--model", "openai/test", "--api-base",
               openai_stub.base_url, "--runs-dir", "runs"]  # fmt: skip
    with subprocess.Popen(command, cwd=tmp_path, env=env, stdin=child, stdout=child, stderr=child) as process:
        os.close(child)
        shown = b""
        while True:
            try:
                chunk = os.read(parent, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        os.close(parent)
    assert process.returncode == 0
    text = shown.decode(errors="replace")
    assert "waiting for openai/test... 0s" in text and "\r\033[K" in text
    assert "done" in text
