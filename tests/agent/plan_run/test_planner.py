"""The planner (seed 004 FR-P1): schema-validated plan, one retry that shows the model its errors, then a clear
failure; never a loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import LiteLLMModel, ScriptedModel
from agent.plan_run.planner import SCHEMA_REFUSED, Planner, PlanningError, system_prompt
from agent.plan_run.run_schema import run_plan_schema
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]

GOOD = {
    "version": 1,
    "goal": "list the data",
    "risk_level": "LOW",
    "workspace_root": ".",
    "steps": [{"id": 1, "description": "list", "tool": "list_dir", "inputs": {"path": "data"}}],
    "success_criteria": [],
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("n", encoding="utf-8")
    (tmp_path / "runs").mkdir()
    return tmp_path


def test_a_valid_plan_on_the_first_try(ws: Path) -> None:
    model = ScriptedModel([json.dumps(GOOD)])
    plan = Planner(model).plan("list the data", ws)
    assert plan.steps[0].tool == "list_dir" and plan.workspace_root == str(ws.resolve())
    (request,) = model.requests
    assert request["json_mode"] == run_plan_schema(ws.resolve()).schema  # for decoding that cannot leave it
    system, user = request["messages"]
    assert system["role"] == "system" and "ls, cat, grep, wc, head, tail, python3 -c" in system["content"]
    assert "- write_text {path, content, mode?}" in system["content"]
    assert user["content"].startswith("Task: list the data")
    assert "data/notes.txt" in user["content"] and "runs" not in user["content"]


def test_the_model_cannot_choose_the_workspace(ws: Path) -> None:
    plan = Planner(ScriptedModel([json.dumps({**GOOD, "workspace_root": "/"})])).plan("t", ws)
    assert plan.workspace_root == str(ws.resolve())


@pytest.mark.parametrize("wrap", ["```json\n{}\n```", "Here is the plan:\n{}\nGood luck."])
def test_json_in_a_fence_or_in_prose_is_accepted(ws: Path, wrap: str) -> None:
    model = ScriptedModel([wrap.replace("{}", json.dumps(GOOD))])
    assert Planner(model).plan("t", ws).goal == "list the data"


def test_an_invalid_plan_is_retried_once_with_the_errors_shown(ws: Path) -> None:
    bad = json.dumps({**GOOD, "version": None, "steps": [{"id": 1, "description": "d", "tool": "rm", "inputs": {}}]})
    model = ScriptedModel([bad, json.dumps(GOOD)])
    seen: list[tuple[int, str, str]] = []
    plan = Planner(model, on_invalid=lambda *args: seen.append(args)).plan("t", ws)
    assert plan.goal == "list the data" and len(model.requests) == 2
    retry = model.requests[1]["messages"]
    assert retry[2] == {"role": "assistant", "content": bad}
    assert retry[3]["role"] == "user" and retry[3]["content"].startswith(
        "That plan is invalid:\nversion: Input should be 1"
    )
    assert "Input tag 'rm' found using 'tool'" in retry[3]["content"]
    assert [(attempt, reply) for attempt, reply, _ in seen] == [(1, bad)]


def test_two_invalid_plans_are_a_clear_failure_not_a_loop(ws: Path) -> None:
    model = ScriptedModel(["not json at all", json.dumps({"goal": "x"})])
    with pytest.raises(PlanningError) as failure:
        Planner(model).plan("t", ws)
    assert str(failure.value) == "the model did not return a valid plan, also after one retry: version: Field required"
    assert failure.value.replies == ["not json at all", '{"goal": "x"}'] and len(model.requests) == 2


def test_an_empty_reply_counts_as_invalid(ws: Path) -> None:
    with pytest.raises(PlanningError, match="the reply is empty"):
        Planner(ScriptedModel(["", "  "])).plan("t", ws)


def test_a_model_error_is_a_planning_failure(ws: Path) -> None:
    with pytest.raises(PlanningError, match=r"^planning failed: LLM error: the scripted model has no reply left"):
        Planner(ScriptedModel()).plan("t", ws)


def test_an_empty_task_is_refused_before_asking_the_model(ws: Path) -> None:
    model = ScriptedModel()
    with pytest.raises(PlanningError, match="the task is empty"):
        Planner(model).plan("  ", ws)
    assert model.requests == []


def test_the_prompt_is_the_same_for_every_task() -> None:
    """The system prompt carries no timestamps or ids, so providers can cache it across runs."""
    assert system_prompt() == system_prompt()


def test_planning_through_litellm_asks_for_json(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(content="oops", usage={"prompt_tokens": 900, "completion_tokens": 3})
    openai_stub.enqueue(content=json.dumps(GOOD), usage={"prompt_tokens": 950, "cached_tokens": 896})
    model = LiteLLMModel("openai/test", api_base=openai_stub.base_url, api_key="sk-test")
    plan = Planner(model).plan("list the data", ws)
    assert plan.steps[0].tool == "list_dir"
    first, second = openai_stub.requests
    assert first["response_format"]["type"] == "json_schema" and first["model"] == "test"
    assert first["response_format"]["json_schema"]["schema"] == run_plan_schema(ws.resolve()).schema
    assert second["messages"][:2] == first["messages"]  # the retry appends; the prefix stays cacheable
    body: dict[str, Any] = second["messages"][3]
    assert "not JSON" in body["content"]


def test_a_server_that_refuses_the_schema_gets_json_mode_and_is_remembered(ws: Path, openai_stub: OpenAIStub) -> None:
    """Issue 28: the schema where the server takes it; a 400 (a server without json_schema) falls back to JSON mode
    at once, and later plans of the same model in this process go straight to JSON mode."""
    openai_stub.enqueue(status=400, error="response_format type json_schema is not supported")
    openai_stub.enqueue(content=json.dumps(GOOD))
    openai_stub.enqueue(content=json.dumps(GOOD))
    model = LiteLLMModel("openai/no-schema", api_base=openai_stub.base_url, api_key="sk-test")
    refused: list[str] = []
    planner = Planner(model, on_schema_refused=refused.append)
    assert planner.plan("list the data", ws).steps[0].tool == "list_dir"
    assert planner.plan("list the data again", ws).steps[0].tool == "list_dir"
    formats = [r["response_format"]["type"] for r in openai_stub.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert len(refused) == 1 and "not supported" in refused[0]


def test_a_server_down_is_not_taken_for_a_schema_refusal(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(status=503, error="overloaded")
    model = LiteLLMModel("openai/busy", api_base=openai_stub.base_url, api_key="sk-test")
    with pytest.raises(PlanningError, match="planning failed"):
        Planner(model).plan("list the data", ws)
    assert repr(model) not in SCHEMA_REFUSED


def test_a_failure_without_a_refusing_status_is_not_taken_for_a_schema_refusal(ws: Path) -> None:
    """A scripted model with no reply left fails with a plain LLM error (no HTTP status): taken for a refusal, it
    switched the plan and every shaped llm step of the process to JSON mode."""
    model = ScriptedModel()
    refused: list[str] = []
    with pytest.raises(PlanningError, match="no reply left"):
        Planner(model, on_schema_refused=refused.append).plan("t", ws)
    assert refused == [] and repr(model) not in SCHEMA_REFUSED


def test_an_unprocessable_schema_is_a_refusal_too(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(status=422, error="unknown response_format json_schema")
    openai_stub.enqueue(content=json.dumps(GOOD))
    model = LiteLLMModel("openai/unprocessable", api_base=openai_stub.base_url, api_key="sk-test")
    assert Planner(model).plan("list the data", ws).steps[0].tool == "list_dir"
    assert [r["response_format"]["type"] for r in openai_stub.requests] == ["json_schema", "json_object"]
