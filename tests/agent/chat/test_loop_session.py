"""Seed 002 in ``Agent.run``: session resize as a reversible fold of the run's context, and structured output."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import trio

from agent.chat.loop import OUTPUT_MISMATCH, Agent, AgentConfig, AgentRun
from agent.chat.session_resize import SessionSettings
from agent.chat.tool_manager import ToolManager
from agent.context import ContextSettings, is_prefix, is_reference, restore_all
from agent.model.llm import ScriptedModel
from agent.prompting import LayeredSettings, ResizeDecision, ResizePolicy, Session

FILES = {f"{i}.txt": f"content of file {i}. " * 10 for i in range(6)}  # 210 characters each


def read_tools() -> ToolManager:
    tools = ToolManager()
    tools.register("read", lambda path: FILES.get(path, f"error: no file {path!r}"), description="Read a file.",
                   parameter="path")  # fmt: skip
    return tools


def script() -> list[Any]:
    """Six steps, each one tool call (two in the third), then the answer."""
    calls: list[Any] = [
        {"tool_calls": [{"id": f"c{i}", "name": "read", "arguments": {"path": f"{i}.txt"}}]} for i in range(5)
    ]
    calls[2] = {"tool_calls": [{"id": "c2", "name": "read", "arguments": {"path": "2.txt"}},
                               {"id": "c2b", "name": "read", "arguments": {"path": "nope.txt"}}]}  # fmt: skip
    return [*calls, "Read all five files."]


def config(tmp_path: Path, session: SessionSettings | None) -> AgentConfig:
    context = ContextSettings(append_only=True, memory_dir=tmp_path / "agents" / "alice")
    return AgentConfig(context=context, session=session)


def run_with(tmp_path: Path, session: SessionSettings | None) -> tuple[AgentRun, ScriptedModel]:
    model = ScriptedModel(script())
    return Agent(config(tmp_path, session), model=model, tools=read_tools()).run("Read files 0 to 4."), model


def no_orphans(messages: list[dict[str, Any]]) -> bool:
    """Every tool result in view has the assistant call it answers in view too."""
    called = {c["id"] for m in messages if m.get("tool_calls") for c in m["tool_calls"]}
    return all(m["tool_call_id"] in called for m in messages if m["role"] == "tool")


@pytest.mark.parametrize(
    ("kind", "session"),
    [
        ("lite", SessionSettings(max_keep_messages_count=4)),
        ("deep", SessionSettings(max_messages_text_length=500)),
    ],
)
def test_session_resize_in_the_loop_never_loses_a_message(tmp_path: Path, kind: str, session: SessionSettings) -> None:
    """Seed 002 resize + seed 003 append-only: folded at turn boundaries, readable back, nothing lost, measured."""
    baseline, _ = run_with(tmp_path / "off", None)
    run, model = run_with(tmp_path, session)
    assert run.answer == baseline.answer == "Read all five files."
    assert run.resizes and {r["type"] for r in run.resizes} == {kind}
    directory = tmp_path / "agents" / "alice" / "context"  # the default: context.compress_dir

    # never lost: the folded context, restored, is exactly the history of the same run without resize
    assert restore_all(run.messages, directory) == baseline.messages
    requests = [r["messages"] for r in model.requests]
    for earlier, later in itertools.pairwise(requests):
        assert is_prefix(restore_all(earlier, directory), restore_all(later, directory))
    # folded at turn boundaries: no tool result without its call; the system prompt and task stay first
    assert all(no_orphans(m) for m in requests)
    assert all(m[:2] == requests[0][:2] for m in requests)
    # bounded: each fold left the window after the pinned head within the limit
    folded_at = {r["step"] for r in run.resizes}
    if kind == "lite":
        assert all(len(requests[s - 1][2:]) <= 4 for s in folded_at)
    else:
        kept = [[m for m in requests[s - 1][2:] if not is_reference(m)] for s in folded_at]  # after the reference
        assert all(sum(len(m.get("content") or "") for m in window) <= 500 for window in kept)
    # references nest: the last window holds one reference, which restores through the earlier ones
    references = [m for m in run.messages if is_reference(m)]
    assert len(references) == 1 and len(run.resizes) >= 2
    # readable back by the agent itself, with its memory tool
    path = references[0]["content"].rsplit("file: ", 1)[1]
    readback = Agent(config(tmp_path, None), model=ScriptedModel([
        {"tool_calls": [{"id": "m", "name": "memory_load", "arguments": {"name": path}}]}, "ok"]),
        tools=read_tools()).run("read back")  # fmt: skip
    loaded = json.loads(next(m["content"] for m in readback.messages if m["role"] == "tool"))
    assert restore_all(loaded, directory) == baseline.messages[2 : 2 + len(restore_all(loaded, directory))]
    # measured: a request after a fold shares the pinned prefix; every other one repeats the whole previous one
    for before, after in itertools.pairwise(run.requests):
        if after.step in folded_at:
            assert len(json.dumps(requests[0][:2])) // 2 < after.prefix_chars < before.prompt_chars
        else:
            assert after.prefix_chars == before.prompt_chars
    warm = run.requests[1:]
    reuse = sum(m.prefix_chars for m in warm) / sum(m.prompt_chars for m in warm)
    assert 0.3 < reuse < 1


def test_custom_sync_and_async_handlers_take_effect_through_the_loop(tmp_path: Path) -> None:
    """Seed 002 §2 overrides used by the loop: sync ones on a Session given to Agent, async ones on agent.session."""
    seen: list[tuple[int, int]] = []

    def every_third_turn(window: list[dict[str, Any]], policy: ResizePolicy, turns: int) -> ResizeDecision | None:
        seen.append((len(window), turns))
        return ResizeDecision(type="lite", reason="custom sync") if turns == 3 else None

    def fold_two(window: list[dict[str, Any]], decision: ResizeDecision, policy: ResizePolicy) -> int:
        return 2

    session = Session(
        LayeredSettings.defaults(), context_dir=tmp_path / "ctx"
    )  # no thresholds: only the handler decides
    session.register_policy_handler(every_third_turn)
    session.register_resize_handler("lite", fold_two)
    model = ScriptedModel(script())
    run = Agent(config(tmp_path, None), model=model, tools=read_tools(), session=session).run("Read files.")
    assert seen == [(0, 0), (2, 1), (4, 2), (7, 3), (8, 1), (10, 2)]  # the loop's window after the pinned head
    assert run.resizes == [{"step": 4, "type": "lite", "reason": "custom sync", "folded": 2}]
    assert is_reference(model.requests[3]["messages"][2]) and not is_reference(model.requests[2]["messages"][2])
    last = restore_all(model.requests[-1]["messages"], tmp_path / "ctx")
    assert restore_all(run.messages, tmp_path / "ctx") == [*last, run.messages[-1]]  # the answer appended, nothing lost

    async def deep_at_second(window: list[dict[str, Any]], policy: ResizePolicy, turns: int) -> ResizeDecision | None:
        await trio.sleep(0)
        return ResizeDecision(type="deep", reason="custom async") if turns == 2 else None

    async def fold_all_but_last(window: list[dict[str, Any]], decision: ResizeDecision, policy: ResizePolicy) -> int:
        await trio.sleep(0)
        return len(window) - 1

    agent = Agent(config(tmp_path / "b", SessionSettings()), model=ScriptedModel(script()), tools=read_tools())
    assert agent.session is not None
    agent.session.register_policy_handler(deep_at_second)
    agent.session.register_resize_handler("deep", fold_all_but_last)
    run = agent.run("Read files.")
    assert [(r["step"], r["type"], r["reason"]) for r in run.resizes] == [(3, "deep", "custom async"),
                                                                           (5, "deep", "custom async")]  # fmt: skip
    directory = tmp_path / "b" / "agents" / "alice" / "context"
    baseline, _ = run_with(tmp_path / "off", None)
    assert restore_all(run.messages, directory)[2:] == baseline.messages[2:]
    assert all(no_orphans(r["messages"]) for r in agent.model.requests)  # type: ignore[attr-defined]


def test_session_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not both"):
        AgentConfig(context=ContextSettings(append_only=True, compress_at_chars=100, memory_dir=tmp_path),
                    session=SessionSettings(every_n_turns=2))  # fmt: skip
    with pytest.raises(ValueError, match="session needs context_dir"):
        AgentConfig(session=SessionSettings(every_n_turns=2))
    with pytest.raises(ValueError, match="needs a directory"):
        Agent(AgentConfig(), model=ScriptedModel(), session=Session())
    assert AgentConfig().session is None  # off by default
    on = AgentConfig.model_validate({"session": {"every_n_turns": 2, "context_dir": str(tmp_path)}})
    assert on.session == SessionSettings(every_n_turns=2, context_dir=tmp_path)


def test_structured_output_uses_the_prompt_generator_and_checks_the_answer() -> None:
    """Seed 002 §6 in the loop: the task carries an OUTPUT REQUIREMENT; a reply that does not fit goes back."""
    schema = {"total": (int, "the sum"), "terms": ([int], "what was added")}
    model = ScriptedModel(["It is 4.", 'Here: {"total": "4", "terms": [2, 2]}'])
    run = Agent(AgentConfig(), model=model).run("Add 2 and 2.", output=schema)
    task = model.requests[0]["messages"][1]
    assert task["role"] == "user" and task["content"].startswith("[INPUT]:\nAdd 2 and 2.")
    assert "[OUTPUT REQUIREMENT]:\nData Format: JSON" in task["content"] and "// the sum" in task["content"]
    retry = model.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "It is 4."}
    assert retry[-1]["role"] == "user" and retry[-1]["content"].startswith(OUTPUT_MISMATCH)
    assert run.output == {"total": 4, "terms": [2, 2]} and run.steps == 2
    plain = Agent(AgentConfig(), model=ScriptedModel(["It is 4."])).run("Add 2 and 2.")
    assert plain.output is None and plain.answer == "It is 4."
