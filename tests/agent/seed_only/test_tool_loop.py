"""Seed 002 §3 ToolExtension: tools planned and run first, then a second request with the action results injected."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
import trio

from agent.model.llm import ModelReply, ScriptedModel, ToolCall
from agent.prompting import LayeredSettings, Prompt
from agent.seed_only.tool_loop import ToolLoop


class ReadsActionResults:
    """A model that answers the final request from the [ACTION RESULTS] it was sent, so the answer can only be the
    tool's value if the loop really ran the tool and really injected its result."""

    def __init__(self, plans: list[list[ToolCall]]) -> None:
        self.plans = plans
        self.requests: list[dict[str, Any]] = []

    def complete(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                 json_mode: bool = False, **_: Any) -> ModelReply:  # fmt: skip
        self.requests.append({"messages": copy.deepcopy(messages), "tools": tools, "json_mode": json_mode})
        if tools:
            calls = self.plans.pop(0) if self.plans else []
            return ModelReply(content=None, tool_calls=calls, request_id="plan", model="reads")
        match = re.search(r"\[ACTION RESULTS\]:\n(.*?)\n\n\[", messages[-1]["content"], re.DOTALL)
        results = json.loads(match.group(1)) if match else {}
        sums = [value for key, value in results.items() if key.startswith("add") and isinstance(value, int)]
        return ModelReply(content=json.dumps({"result": sums[-1] if sums else None}), request_id="final", model="reads")


def add_call(a: Any = 34643523, b: Any = 52131231, call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name="add", arguments=json.dumps({"a": a, "b": b}))


async def add(a: int, b: int) -> int:
    """Get result of `a(int)` add `b(int)`.

    Longer notes are not part of the tool's description.
    """
    await trio.sleep(0)
    assert a == 34643523
    return a + b


def calculation() -> Prompt:
    return Prompt().set("input", "34643523+52131231=? Use tool to calculate!").set("output", {"result": (int,)})


@pytest.mark.trio
async def test_use_tool_then_the_structured_result_is_the_tools_value() -> None:
    """Seed 002 §3: an async tool registered with use_tool is chosen by the planning request; the final structured
    output's result equals the tool's computed value (86774754)."""
    model = ReadsActionResults([[add_call()]])
    outcome = await ToolLoop(model).use_tool(add).run(calculation())
    assert outcome.data == {"result": 86774754}
    assert [(r.tool_name, r.arguments, r.success, r.result) for r in outcome.action_results] == [
        ("add", {"a": 34643523, "b": 52131231}, True, 86774754)
    ]
    planning, follow_up, final = model.requests
    assert planning["tools"] == follow_up["tools"] == [
        {"type": "function", "function": {"name": "add", "description": "Get result of `a(int)` add `b(int)`.",
         "parameters": {"type": "object", "properties": {"a": {"title": "A", "type": "integer"},
                        "b": {"title": "B", "type": "integer"}}, "required": ["a", "b"],
                        "additionalProperties": False}}}
    ]  # fmt: skip
    assert follow_up["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "86774754"}
    assert final["tools"] is None and final["json_mode"] is True


@pytest.mark.trio
async def test_the_second_request_is_the_original_prompt_with_action_results_injected() -> None:
    """Seed 002 §3: "second request + action_results injection": the final prompt is exactly the original one
    plus an [ACTION RESULTS] section; the planning instruction and the tool turns are not in it."""
    model = ReadsActionResults([[add_call()]])
    prompt = calculation()
    await ToolLoop(model).use_tool(add).run(prompt)
    final = model.requests[-1]["messages"]
    assert final == [
        {
            "role": "user",
            "content": '[ACTION RESULTS]:\n{\n  "add": 86774754\n}\n\n'
            "[INPUT]:\n34643523+52131231=? Use tool to calculate!\n\n"
            '[OUTPUT REQUIREMENT]:\nData Format: JSON\nData Structure:\n{\n  "result": <int>\n}\n\n[OUTPUT]:',
        }
    ]
    assert "action_results" not in prompt  # the caller's prompt is not changed


@pytest.mark.trio
async def test_mistakes_go_back_to_the_model_and_the_loop_goes_on() -> None:
    """Seed 002 §3: bad arguments, an unknown tool or a failing tool become results the model reads, not crashes."""

    def broken(text: str) -> str:
        raise OSError("disk on fire")

    plans = [[add_call(a="not a number", call_id="c1"), ToolCall(id="c2", name="nope", arguments="{}"),
              ToolCall(id="c3", name="broken", arguments='{"text": "x"}')], [add_call(call_id="c4")]]  # fmt: skip
    model = ReadsActionResults(plans)
    outcome = await ToolLoop(model).use_tool(add).use_tool(broken).run(calculation())
    errors = [r.error for r in outcome.action_results[:3]]
    assert errors[0].startswith("bad call to add:") and "valid integer" in errors[0]
    assert errors[1].startswith("bad call to nope: unknown tool nope; available tools: add, broken")
    assert errors[2] == "tool broken failed: OSError: disk on fire"
    tool_messages = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [f"error: {e}" for e in errors]
    assert [r.purpose for r in outcome.action_results] == ["add", "nope", "broken", "add (4)"]
    assert outcome.data == {"result": 86774754}  # from "add (4)": the first "add" failed
    final = model.requests[-1]["messages"][-1]["content"]
    assert '"add": {\n    "error": "bad call to add:' in final  # failures are injected too, as errors


@pytest.mark.trio
async def test_the_loop_is_bounded_by_max_rounds_and_timed_tools_are_stopped() -> None:
    """Seed 002 §3 (tool.loop.max_rounds, tool.loop.timeout): a model that always calls tools costs a known amount."""

    async def slow() -> str:
        await trio.sleep(60)
        return "never"

    settings = LayeredSettings.defaults().set("tool.loop", {"max_rounds": 2, "timeout": 0.05})
    prompt = Prompt(settings).set("input", "go")
    calls = [[ToolCall(id=f"c{n}", name="slow", arguments="{}")] for n in range(5)]
    model = ReadsActionResults(calls)
    outcome = await ToolLoop(model).use_tool(slow).run(prompt)
    assert len(model.requests) == 3  # two planning rounds and the final request
    assert [r.error for r in outcome.action_results] == ["tool slow timed out after 0.05s; try a smaller request"] * 2


@pytest.mark.trio
async def test_with_the_loop_off_or_no_tools_there_is_one_plain_request() -> None:
    """Seed 002 §3 (tool.loop.enabled): off, the tools are not offered and the prompt goes out once, unchanged."""
    settings = LayeredSettings.defaults().set("tool.loop.enabled", False)
    model = ScriptedModel(["just text"])
    outcome = await ToolLoop(model).use_tool(add).run(Prompt(settings).set("input", "hi"))
    assert outcome.data == outcome.text == "just text"
    assert model.requests == [{"messages": [{"role": "user", "content": "hi"}], "tools": None, "json_mode": False}]
    model.enqueue("again")
    assert (await ToolLoop(model).run(Prompt().set("input", "hi"))).action_results == []
    assert len(model.requests) == 2


@pytest.mark.trio
async def test_a_sync_tool_runs_in_a_worker_thread() -> None:
    """Seed 002 §3: sync tools work too, off the event loop."""
    import threading

    threads: list[str] = []

    def where(label: str) -> str:
        """Say which thread ran."""
        threads.append(threading.current_thread().name)
        return label

    model = ReadsActionResults([[ToolCall(id="c1", name="where", arguments='{"label": "ok"}')]])
    outcome = await ToolLoop(model).use_tool(where).run(Prompt().set("input", "x"))
    assert outcome.action_results[0].result == "ok"
    assert threads and threads[0] != threading.main_thread().name
