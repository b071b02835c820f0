"""The model's judgement of the criteria omx cannot check itself (issue 28): asked once per criterion with the
file's content, shown as the model's judgement and never as a plain [met], counted apart in the result line; a
judgement of "met" does not make a success, one of "not met" fails the run; ``--no-judge`` asks nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.criteria import check_criteria
from agent.plan_run.judge import MAX_JUDGED, MAX_JUDGED_CHARS, judge_criteria
from tests.e2e.helpers import only_run, run_end, trace_of
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]

REPO = Path(__file__).resolve().parents[3]
APP_PY = "import os\n# TODO: parse the arguments\nprint(os.getcwd())\n# TODO: handle a missing file\n"
# without "one per line" the task does not say how the comments are laid out: omx checks nothing of it itself
TASK = "Write every TODO comment of src/app.py into out/todo.md"
CRITERION = "out/todo.md lists only the TODO comments of src/app.py"
# the 0.5B model's plan: the whole source copied, with a criterion omx cannot read
COPY_PLAN = {
    "version": 1, "goal": "Collect the TODO comments", "risk_level": "LOW", "workspace_root": ".",
    "steps": [{"id": 1, "description": "read", "tool": "read_text", "inputs": {"path": "src/app.py"}},
              {"id": 2, "description": "write", "tool": "write_text",
               "inputs": {"path": "out/todo.md", "content": {"ref": "step:1.output"}}}],
    "success_criteria": [CRITERION],
}  # fmt: skip


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(APP_PY, encoding="utf-8")
    return tmp_path


def omx(ws: Path, stub: OpenAIStub, *args: str) -> subprocess.CompletedProcess[str]:
    """The real omx in a child process, its model litellm talking to the stub."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1"}
    command = [sys.executable, "-m", "cli.omx", *args, "--model", "openai/test", "--api-base", stub.base_url]
    return subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=False)


def result_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("Result:"))


def test_the_models_not_met_fails_the_run_and_says_whose_judgement_it_is(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(content=json.dumps(COPY_PLAN))
    openai_stub.enqueue(content='{"met": false, "reason": "it holds the whole source, not only the TODO lines"}')
    done = omx(ws, openai_stub, TASK, "--yes")
    assert done.returncode == 1, done.stdout + done.stderr
    assert result_line(done.stdout) == (
        "Result: failed: success criterion not met (the model's judgement): "
        f"{CRITERION} (it holds the whole source, not only the TODO lines)"
    )
    assert f"[not met, model's judgement] {CRITERION} (it holds the whole source" in done.stdout
    judge = openai_stub.requests[1]  # the second request: the judgement, with the task, criterion and content
    question = judge["messages"][-1]["content"]
    assert TASK in question and CRITERION in question and APP_PY in question
    assert judge["response_format"]["type"] in ("json_object", "json_schema")
    end = run_end(trace_of(only_run(ws)))
    assert end["status"] == "failed" and end["criteria"][-1]["by"] == "model"
    purposes = [e["purpose"] for e in trace_of(only_run(ws)) if e.get("kind") == "model"]
    assert purposes == ["reading", "plan", "judge"]  # the reading failed: the stub has none scripted


def test_the_models_met_is_shown_apart_and_is_no_success(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(content=json.dumps(COPY_PLAN))
    openai_stub.enqueue(content='```json\n{"met": true, "reason": "two TODO comments"}\n```')
    done = omx(ws, openai_stub, TASK, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert result_line(done.stdout) == "Result: done, 1 criterion met only by the model's judgement (1 met) (2/2 steps)"
    assert f"[met, model's judgement] {CRITERION} (two TODO comments)" in done.stdout
    assert f"[met] {CRITERION}" not in done.stdout
    replay = [sys.executable, "-m", "cli.omx", "replay", str(only_run(ws))]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    replayed = subprocess.run(replay, cwd=ws, capture_output=True, text=True, timeout=60, check=True, env=env)
    assert f"[met, model's judgement] {CRITERION}" in replayed.stdout


def test_no_judge_asks_the_model_nothing(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(content=json.dumps(COPY_PLAN))
    done = omx(ws, openai_stub, TASK, "--yes", "--no-judge")
    assert done.returncode == 0, done.stdout + done.stderr
    assert result_line(done.stdout) == "Result: done, 1 criterion not checked (1 met) (2/2 steps)"
    assert f"[not checked] {CRITERION} (not a check omx can make" in done.stdout
    assert len(openai_stub.requests) == 1


# -- judge_criteria on its own, with the scripted model --------------------------------------------------------


def checks_of(ws: Path, criteria: list[str], files: dict[str, str]) -> list[Any]:
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text, encoding="utf-8")
    return check_criteria(criteria, [ws / name for name in files], ws)


@pytest.mark.parametrize(
    "reply", ["I think it is fine", '{"met": "maybe"}', '["met"]', ""], ids=["prose", "maybe", "list", "empty"]
)
def test_an_answer_that_is_neither_met_nor_not_met_leaves_it_not_checked(ws: Path, reply: str) -> None:
    checks = checks_of(ws, ["out/a.md is friendly"], {"out/a.md": "hello\n"})
    (judged,) = judge_criteria(checks, "Greet", ws, ScriptedModel([reply]))
    assert (judged.status, judged.by) == ("not checked", "omx")
    assert judged.detail.endswith("not judged: the model's answer was not met or not met")


def test_a_failed_request_leaves_it_not_checked(ws: Path) -> None:
    checks = checks_of(ws, ["out/a.md is friendly"], {"out/a.md": "hello\n"})
    (judged,) = judge_criteria(checks, "Greet", ws, ScriptedModel([]))  # no reply left: an LLMError
    assert judged.status == "not checked" and "not judged: the model's request failed" in judged.detail


def test_what_is_not_judged(ws: Path) -> None:
    """Checked criteria, criteria about no file the run wrote, and a file too big to show whole: no request."""
    model = ScriptedModel([])
    checks = checks_of(ws, ["out/a.md has 1 line", "data/in.txt is friendly", "out/big.md is friendly"],
                       {"out/a.md": "hello\n", "out/big.md": "x" * (MAX_JUDGED_CHARS + 1)})  # fmt: skip
    judged = judge_criteria(checks, None, ws, model)
    assert [c.status for c in judged] == ["met", "not checked", "not checked"]
    assert "too big to show the model" in judged[2].detail
    assert model.requests == []


def test_at_most_a_few_requests_per_run(ws: Path) -> None:
    criteria = [f"out/a.md is friendly ({i})" for i in range(MAX_JUDGED + 2)]
    model = ScriptedModel(['{"met": true, "reason": "ok"}'] * (MAX_JUDGED + 2))
    judged = judge_criteria(checks_of(ws, criteria, {"out/a.md": "hi\n"}), None, ws, model)
    assert [c.by for c in judged] == ["model"] * MAX_JUDGED + ["omx"] * 2
    assert len(model.requests) == MAX_JUDGED


def test_the_only_output_is_judged_for_a_criterion_that_names_no_file(ws: Path) -> None:
    model = ScriptedModel(['{"met": false, "reason": "it is rude"}'])
    (judged,) = judge_criteria(checks_of(ws, ["the tone is friendly"], {"out/a.md": "go away\n"}), None, ws, model)
    assert (judged.status, judged.by, judged.label, judged.file) == ("not met", "model", "not met, model's judgement",
                                                                       "out/a.md")  # fmt: skip
    assert "go away" in model.requests[0]["messages"][-1]["content"]
