"""The shape the task gives its output is how the llm step that writes it is asked (issue 28): the 0.5B model wrote
4-7 bullets when the task said 3, a sentence around "just the number", a paragraph for one line of at most N
words. That step is asked for a JSON object of a schema that holds the shape, rendered as the text the task asked
for; a server without JSON schemas is asked in JSON mode, and a reply that is not the object is kept as written,
for the task's checks to judge as before. Through omx in process with the scripted model, and as a real process
against the OpenAI-compatible stub."""

# ruff: noqa: F811  (the ``script`` and ``ws`` fixtures are imported and requested by name)

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import LLMError, ScriptedModel
from agent.plan_run.output_shape import shaped_step
from agent.plan_run.plan import Plan
from agent.plan_run.task_checks import TaskExpectations
from tests.e2e.conftest import script, ws  # noqa: F401  (the scripted model in the CLI, the workspace)
from tests.e2e.helpers import REPO, kinds, omx, only_run, run_end, trace_of
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]


def plan(output: str, *, content: Any = None, mode: str = "overwrite") -> str:
    """Read the notes, ask the model, write its reply to ``output`` (or ``content`` instead of the reply)."""
    steps = [
        {"id": 1, "description": "read", "tool": "read_text", "inputs": {"path": "data/notes.txt"}},
        {"id": 2, "description": "ask", "tool": "llm",
         "inputs": {"prompt": "do it", "input": {"ref": "step:1.output"}}},
        {"id": 3, "description": "write", "tool": "write_text",
         "inputs": {"path": output, "content": content or {"ref": "step:2.output"}, "mode": mode}},
    ]  # fmt: skip
    return json.dumps({"version": 1, "goal": "g", "risk_level": "LOW", "steps": steps, "success_criteria": []})


@pytest.mark.parametrize(
    ("task", "reply", "written", "asked"),
    [
        ("Summarise data/notes.txt in 3 bullets into out/summary.md", {"bullets": ["plans", "- sandbox", "trace"]},
         "- plans\n- sandbox\n- trace\n", ("bullets", {"minItems": 3, "maxItems": 3})),
        ("How many topics does data/notes.txt name? Write just the number to out/summary.md", {"number": 3.0}, "3\n",
         ("number", {"type": "number"})),
        ("Write a one-line title (at most 4 words) for data/notes.txt into out/summary.md",
         {"words": ["omx", "plans", "first"]}, "omx plans first\n", ("words", {"maxItems": 4})),
        ("Suggest a title for data/notes.txt and put it in out/summary.md", {"text": "omx plans first"},
         "omx plans first\n", ("text", {"type": "string"})),  # a title is one line: the 0.5B model wrote three
    ],
)  # fmt: skip
def test_the_step_that_writes_the_output_is_asked_for_the_task_s_shape(
    ws: Path, script: Callable[..., ScriptedModel], task: str, reply: dict[str, Any], written: str,
    asked: tuple[str, dict[str, Any]],
) -> None:  # fmt: skip
    model = script(plan("out/summary.md"), json.dumps(reply))
    result = omx(task, "--yes", "--replans", "0")
    assert result.exit_code == 0, result.output
    # a number the model gave, not code run on the notes, is a form checked, a value not; prose's shape met is a
    # form checked, its content not
    number = asked[0] == "number"
    assert f"Result: done, form checked, {'value' if number else 'content'} not checked" in result.output
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8") == written
    schema = model.requests[1]["json_mode"]
    field, constraints = asked
    assert list(schema["properties"]) == [field] and constraints.items() <= schema["properties"][field].items()
    assert "Reply with one JSON object of this JSON schema" in model.requests[1]["messages"][1]["content"]
    (step,) = [s for s in kinds(trace_of(only_run(ws)), "step") if s["tool"] == "llm"]
    assert "(JSON schema), rendered as text" in step["details"]["shape"]


def test_a_text_of_more_words_than_a_line_is_asked_in_prose_and_shortened_by_whole_sentences(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    body = " ".join(f"Point {i} of the notes is here." for i in range(8))  # 56 words
    model = script(plan("out/summary.md"), f"Notes\n\n{body}\n\nThat is all.")
    result = omx("Summarise data/notes.txt in at most 40 words into out/summary.md", "--yes", "--replans", "0")
    assert result.exit_code == 0, result.output
    written = (ws / "out" / "summary.md").read_text(encoding="utf-8")
    assert len(written.split()) <= 40 and written.startswith("Notes\n\nPoint 0") and written.endswith("all.\n")
    assert model.requests[1]["json_mode"] is False  # asked in prose
    (step,) = [s for s in kinds(trace_of(only_run(ws)), "step") if s["tool"] == "llm"]
    assert step["details"]["shape"] == "a text of at most 40 words, asked in prose: the reply was fitted to it"


def test_a_reply_the_server_cannot_read_as_the_schema_is_asked_for_again_without_it(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    """llama.cpp fails a request held to a schema when it cannot read its own reply as one (HTTP 500 "does not match
    the expected ... format"); that is no transient error, and the step asks once more without the schema."""
    unreadable = LLMError("openai/local-model failed (HTTP 500): The model produced output that does not match the "
                          "expected peg-native format", kind="server", status=500)  # fmt: skip
    model = script(plan("out/summary.md"), unreadable, '{"words": ["omx", "plans", "first"]}')
    task = "Write a one-line title (at most 4 words) for data/notes.txt into out/summary.md"
    result = omx(task, "--yes", "--replans", "0")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8") == "omx plans first\n"
    assert model.requests[1]["json_mode"] and model.requests[2]["json_mode"] is False
    assert "Reply with one JSON object of this JSON schema" in model.requests[2]["messages"][1]["content"]
    (step,) = [s for s in kinds(trace_of(only_run(ws)), "step") if s["tool"] == "llm"]
    assert "asked again without the schema" in step["details"]["shape"]


def test_a_reply_not_of_the_schema_is_kept_and_judged_by_the_task_s_checks(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    model = script(plan("out/summary.md"), "- a\n- b\n- c\n- d")
    result = omx("Summarise data/notes.txt in 3 bullets into out/summary.md", "--yes", "--replans", "0")
    assert result.exit_code == 1, result.output
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8") == "- a\n- b\n- c\n- d\n"
    assert (
        "[not met, omx's reading] out/summary.md has 3 bullet lines (from the task) (4 bullet lines)" in result.output
    )
    assert isinstance(model.requests[1]["json_mode"], dict)


@pytest.mark.parametrize(
    ("task", "content", "mode"),
    [
        ("Summarise data/notes.txt in 3 bullets into out/summary.md", None, "append"),  # not written whole
        ("Summarise data/notes.txt in 3 bullets into out/summary.md", "# Summary\n", "overwrite"),  # not the reply
        ("Summarise data/notes.txt into out/summary.md", None, "overwrite"),  # no shape said
    ],
)
def test_no_shape_is_asked_where_the_task_gives_none_or_no_step_writes_the_reply_whole(
    ws: Path, script: Callable[..., ScriptedModel], task: str, content: str | None, mode: str
) -> None:
    model = script(plan("out/summary.md", content=content, mode=mode), "- a\n- b\n- c")
    omx(task, "--yes", "--replans", "0")
    assert model.requests[1]["json_mode"] is False


def test_the_shaped_step_is_the_llm_step_written_whole_to_the_task_s_output(ws: Path) -> None:
    shaped = Plan.model_validate_json(plan("./out/summary.md"))
    assert shaped_step(shaped, "out/summary.md") == 2
    assert shaped_step(shaped, "out/other.md") is None
    expected = TaskExpectations.before("Summarise data/notes.txt in two bullets into out/s.md", ws)
    assert expected.shape is not None and expected.shape.what == "exactly 2 bullet points"
    two_outputs = TaskExpectations.before("Write 3 bullets into out/a.md and copy it to out/b.md", ws)
    assert two_outputs.shape is None  # which output it is about is not said


def test_a_server_without_json_schema_is_asked_the_shape_in_json_mode(ws: Path, openai_stub: OpenAIStub) -> None:
    """A real omx process against a server that refuses json_schema: the plan and the step both in JSON mode."""
    openai_stub.unsupported_response_formats = {"json_schema"}
    openai_stub.enqueue(content=plan("out/summary.md"))
    openai_stub.enqueue(content=json.dumps({"bullets": ["plans", "sandbox", "trace"]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO), "NO_PROXY": "127.0.0.1"}
    command = [sys.executable, "-m", "cli.omx", "Summarise data/notes.txt in 3 bullets into out/summary.md", "--yes",
               "--model", "openai/test", "--api-base", openai_stub.base_url]  # fmt: skip
    done = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8") == "- plans\n- sandbox\n- trace\n"
    assert openai_stub.response_formats == ["json_schema", "json_object", "json_object"]  # refused once a process
    assert '"minItems": 3' in openai_stub.requests[2]["messages"][1]["content"]  # the shape, said in the prompt
    assert run_end(trace_of(only_run(ws)))["status"] == "done_unverified"  # 3 bullets: its form, not its content
