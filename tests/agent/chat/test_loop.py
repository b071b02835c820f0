"""Seed 000 Agent.process: TC-Agent-001...004 with a scripted model, and one run through litellm and the stub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.chat.loop import MAX_STEPS_REACHED, Agent, AgentConfig
from agent.chat.tool_manager import ToolManager
from agent.model.llm import LiteLLMModel, LLMError, ScriptedModel
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]


def python_call(code: str, call_id: str = "call_1") -> dict[str, object]:
    return {"tool_calls": [{"id": call_id, "name": "python", "arguments": {"code": code}}]}


def test_TC_Agent_001_simple_text_answer_calls_no_tool(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("max_steps: 5\n")
    model = ScriptedModel(["Python is a high-level, general-purpose programming language."])
    agent = Agent(config, model=model)
    run = agent.run("What is Python?")
    assert run.answer and "Python" in run.answer
    assert run.tool_calls == []
    assert run.steps == 1
    assert len(model.requests) == 1


def test_TC_Agent_002_tool_call_computes_2_plus_2() -> None:
    model = ScriptedModel([python_call("print(2+2)"), "2+2 = 4"])
    agent = Agent(AgentConfig(), model=model)
    run = agent.run("Compute 2+2")
    assert "4" in run.answer
    assert [c.name for c in run.tool_calls] == ["python"]
    assert run.steps <= 2
    tool_message = model.requests[1]["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_1", "content": "4\n"}  # the real tool ran


def test_TC_Agent_003_max_steps_reached() -> None:
    model = ScriptedModel([python_call("print(1)"), python_call("print(2)")])
    agent = Agent(AgentConfig(max_steps=1), model=model)
    run = agent.run("Do a complex multi-step task")
    assert run.answer == MAX_STEPS_REACHED == "max steps reached"
    assert run.steps == 1
    assert len(model.requests) == 1
    assert agent.process("again") == "max steps reached"  # process() is run().answer
    assert len(model.requests) == 2


def test_TC_Agent_004_empty_prompt_is_a_value_error() -> None:
    model = ScriptedModel(["unused"])
    agent = Agent(AgentConfig(), model=model)
    for prompt in ("", "   "):
        with pytest.raises(ValueError, match="prompt must not be empty"):
            agent.process(prompt)
    assert model.requests == []


def test_model_mistakes_go_back_to_the_model() -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "a", "name": "shell", "arguments": {"cmd": "ls"}}]},
            {"tool_calls": [{"id": "b", "name": "python", "arguments": "{not json"}]},
            {"tool_calls": [{"id": "c", "name": "python", "arguments": {"source": "print(1)"}}]},
            "I give up on tools.",
        ]
    )
    run = Agent(AgentConfig(), model=model).run("try things")
    assert run.answer == "I give up on tools."
    results = [m["content"] for m in model.requests[3]["messages"] if m["role"] == "tool"]
    assert "unknown tool: shell; available tools: python" in results[0]
    assert "not valid JSON" in results[1] and 'send {"code": "..."}' in results[1]
    assert 'takes one string argument, "code"' in results[2]


def test_tools_are_offered_as_function_schemas_and_usage_adds_up() -> None:
    model = ScriptedModel(
        [
            {**python_call("print(3)"), "usage": {"prompt_tokens": 100, "completion_tokens": 5, "cached_tokens": 0}},
            {"content": "3", "usage": {"prompt_tokens": 130, "completion_tokens": 2, "cached_tokens": 100}},
        ]
    )
    tools = ToolManager()
    tools.register("shout", str.upper, description="Upper-case a text.")
    run = Agent(AgentConfig(), model=model, tools=tools).run("three")
    offered = model.requests[0]["tools"]
    assert [t["function"]["name"] for t in offered] == ["python", "shout"]
    assert offered[0]["function"]["parameters"]["required"] == ["code"]
    assert (run.usage.prompt_tokens, run.usage.completion_tokens, run.usage.cached_tokens) == (230, 7, 100)


def test_config_is_unchanged_by_a_run(tmp_path: Path) -> None:
    config = AgentConfig(max_steps=2)
    agent = Agent(config, model=ScriptedModel([python_call("print(1)"), "done"]))
    agent.process("go")
    assert agent.config is config and config.max_steps == 2
    with pytest.raises(ValueError):
        AgentConfig.model_validate({"max_steps": 0})
    bad = tmp_path / "bad.yaml"
    bad.write_text("- not a mapping\n")
    with pytest.raises(ValueError, match="a YAML mapping"):
        AgentConfig.from_yaml(bad)


def test_an_unreachable_model_is_raised_for_the_user() -> None:
    with pytest.raises(LLMError):
        Agent(AgentConfig(), model=ScriptedModel()).process("hello")


def test_agent_through_litellm_and_the_stub(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(tool_calls=[{"id": "call_9", "name": "python", "arguments": {"code": "print(6*7)"}}])
    openai_stub.enqueue("The answer is 42.", usage={"prompt_tokens": 50, "completion_tokens": 6, "cached_tokens": 32})
    model = LiteLLMModel("openai/test-model", api_base=openai_stub.base_url, api_key="sk-test")
    run = Agent(AgentConfig(), model=model).run("What is 6*7?")
    assert run.answer == "The answer is 42."
    assert run.usage.cached_tokens == 32
    second = openai_stub.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"] == {
        "name": "python",
        "arguments": json.dumps({"code": "print(6*7)"}),
    }
    assert second[-1] == {"role": "tool", "tool_call_id": "call_9", "content": "42\n"}


def test_a_tool_call_tag_without_a_call_in_it_goes_back_to_the_model(tmp_path: Path) -> None:
    """Issue 28: a Qwen-style <tool_call> tag whose body is not a call is the model's mistake to correct."""
    model = ScriptedModel(["<tool_call>\n{name: python, code: print(1)}\n</tool_call>", "I could not call it."])
    run = Agent(AgentConfig(runs_dir=tmp_path / "runs"), model=model).run("Print 1 with python.")
    assert run.answer == "I could not call it." and run.steps == 2
    told = model.requests[1]["messages"][-1]
    assert (
        told["role"] == "user"
        and "Result of your tool call (unreadable):\nerror: the <tool_call> tag" in told["content"]
    )
    assert [(c.name, c.source) for c in run.tool_calls] == [("", "text")]
    assert run.run_dir is not None
    entries = [json.loads(line) for line in (run.run_dir / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    (tool,) = [e for e in entries if e["kind"] == "tool"]
    assert (tool["status"], tool["source"]) == ("failed", "text") and "does not hold valid JSON" in tool["error"]


def test_a_text_call_that_prints_nothing_is_said_to_the_model() -> None:
    """Code that prints nothing and ends in no expression: an empty result told the model nothing."""
    model = ScriptedModel(['{"name": "python", "arguments": {"code": "x = 6 * 7"}}', "42"])
    run = Agent(AgentConfig(), model=model).run("What is 6*7? Use python.")
    assert run.answer == "42" and [(c.name, c.source) for c in run.tool_calls] == [("python", "text")]
    told = model.requests[1]["messages"][-1]["content"]
    assert told.startswith("Result of your tool call python:\n(no output: nothing was printed)")
