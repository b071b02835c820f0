"""Seeds 003 and 002 in ``Agent.run``: a full task with every feature on, and the loop unchanged with all off."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from agent.chat.loop import NO_ANSWER, Agent, AgentConfig
from agent.chat.session_resize import SessionSettings
from agent.chat.tool_manager import ToolManager
from agent.context import (
    ContextSettings,
    is_prefix,
    is_reference,
    request_text,
    restore_all,
    restore_messages,
)
from agent.model.llm import LiteLLMModel, ScriptedModel
from agent.record.replay import render_run
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]

SYSTEM = "You are a careful agent. " * 80  # a stable prefix of realistic size


def call(name: str, argument: str, value: str, content: str | None = None, id: str = "") -> dict[str, Any]:
    arguments = {argument: value}
    return {"content": content, "tool_calls": [{"id": id or f"id_{name}_{value[:8]}", "name": name,
                                                 "arguments": arguments}]}  # fmt: skip


def tools_for(files: dict[str, str], ran: list[str]) -> ToolManager:
    tools = ToolManager()

    def read(path: str) -> str:
        ran.append(f"read {path}")
        return files.get(path, f"error: no file {path!r}")

    tools.register("read", read, description="Read a file.", parameter="path")
    return tools


def all_on(tmp_path: Path, session: SessionSettings | None = None, **more: Any) -> AgentConfig:
    settings = ContextSettings(append_only=True, todo_recitation=True, error_preservation=True, tool_masking=True,
                               tool_modes={"look": ["read", "memory_load", "memory_save"]}, template_noise=True,
                               memory_dir=tmp_path / "agents" / "alice", **more)  # fmt: skip
    return AgentConfig(system_prompt=SYSTEM, runs_dir=tmp_path / "runs", context=settings, session=session)


#: seed 002 session resize in the all-on run: after four model turns, fold all but the newest eight messages
SESSION = SessionSettings(every_n_turns=4, keep_last=8)
#: seed 002 structured output in the all-on run
OUTPUT = {"a": (int, "the value in a.txt"), "b": (int, "the value in b.txt"), "missing": ([str], "files not found")}


SCRIPT: list[Any] = [
    call("read", "path", "a.txt", "- [ ] read a\n- [ ] read b\n- [ ] answer"),
    call("read", "path", "missing.txt"),  # a tool error: it must stay in view
    call("python", "code", "print(1)"),  # not allowed in mode "look": refused, never run
    call("read", "path", "b.txt", "- [x] read a\n- [ ] read b\n- [ ] answer"),
    call("memory_save", "text", "facts.md\na=1 b=2"),
    "",  # a failed (empty) answer: kept, and the retry prompt cites it
    '- [x] read a\n- [x] read b\n- [x] answer\n{"a": 1, "b": "2", "missing": "missing.txt"}',
]


def test_full_context_engineering_pipeline(tmp_path: Path) -> None:
    """Seed 003 §5.2 with seed 002: append-only, recitation last, errors preserved, masking, stable prefix,
    measured; and a session resize (a reversible fold) and a structured answer in the same run."""
    ran: list[str] = []
    model = ScriptedModel(SCRIPT)
    agent = Agent(all_on(tmp_path, SESSION), model=model, tools=tools_for({"a.txt": "a=1", "b.txt": "b=2"}, ran))
    run = agent.run("Read a.txt and b.txt and tell me what they say.", mode="look", output=OUTPUT)
    assert run.output == {"a": 1, "b": 2, "missing": ["missing.txt"]}
    assert run.steps == len(SCRIPT) == len(model.requests)
    requests = [r["messages"] for r in model.requests]
    assert "[OUTPUT REQUIREMENT]:\nData Format: JSON" in requests[0][1]["content"]  # the task, as generated

    # session resize: one fold, at the fifth request (four turns done), of whole turns into one reference
    assert run.resizes == [{"step": 5, "type": "lite", "reason": "every_n_turns", "folded": 4}]
    directory = tmp_path / "agents" / "alice" / "context"
    assert is_reference(requests[4][2]) and not any(is_reference(m) for m in requests[3])
    assert restore_all(requests[4], directory) == requests[3] + requests[4][-3:]  # + step 4's call, result, plan

    # append-only: each request is the previous one plus new messages, never an edit; the fold is reversible
    for earlier, later in itertools.pairwise(requests):
        if is_prefix(earlier, later):
            assert len(later) > len(earlier)
        else:
            assert later is requests[4] and is_prefix(restore_all(earlier, directory), restore_all(later, directory))
    assert is_prefix(requests[-1], run.messages)
    called = {c["id"] for m in requests[4] if m.get("tool_calls") for c in m["tool_calls"]}
    assert all(m["tool_call_id"] in called for m in requests[4] if m["role"] == "tool")  # no orphan after the fold

    # recitation: the plan's checklist is the last message of every request, updated from the model's output
    for messages in requests:
        assert messages[-1]["role"] == "user" and messages[-1]["content"].startswith("[CURRENT_PLAN]")
    assert "## Task: Read a.txt" in requests[0][-1]["content"]
    assert "- [x] read a\n- [ ] read b" in requests[4][-1]["content"]
    assert len({m[-1]["content"].rsplit("\n\n", 1)[1] for m in requests}) > 1  # template noise varies the wording
    assert requests[0][0]["content"].startswith(SYSTEM) and "checklist" in requests[0][0]["content"]

    # errors preserved: the tool error and the failed answer stay; the retry prompt cites both
    last = requests[-1]
    tool_results = [m["content"] for m in last if m["role"] == "tool"]
    assert "error: no file 'missing.txt'" in tool_results
    failed = [i for i, m in enumerate(last) if m["role"] == "assistant" and m["content"] == ""]
    assert len(failed) == 1
    retry = last[failed[0] + 1]["content"]
    assert "My previous attempt" in retry and "missing.txt" in retry and "Read a.txt" in retry

    # masking: every definition in every request, same order; the mode goes out as allowed_tools; refusal
    names = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert names == ["memory_list", "memory_load", "memory_save", "python", "read"]
    assert all(r["tools"] == model.requests[0]["tools"] for r in model.requests)
    allowed = model.requests[0]["tool_choice"]["allowed_tools"]["tools"]
    assert [t["function"]["name"] for t in allowed] == ["memory_load", "memory_save", "read"]
    assert "error: tool python is not allowed in mode look; tools you may call now: read, memory_load, " \
           "memory_save" in tool_results  # fmt: skip
    assert ran == ["read a.txt", "read missing.txt", "read b.txt"]

    # memory: the model's note and the run's history line are files in the agent's own zone
    zone = tmp_path / "agents" / "alice"
    assert (zone / "facts.md").read_text() == "a=1 b=2"
    assert json.loads((zone / "history.jsonl").read_text())["answer"] == run.answer

    # measurement: every warm request repeats the whole previous request, but the one after the fold keeps the
    # system prompt and task; the trace records it
    assert [m.previous_request for m in run.requests] == [False] + [True] * (len(SCRIPT) - 1)
    for before, after in itertools.pairwise(run.requests):
        if after.step == 5:
            assert len(SYSTEM) < after.prefix_chars < before.prompt_chars
        else:
            assert after.prefix_chars == before.prompt_chars
    warm = run.requests[1:]
    assert sum(m.prefix_chars for m in warm) / sum(m.prompt_chars for m in warm) >= 0.85
    assert run.run_dir is not None
    lines = [json.loads(x) for x in (run.run_dir / "trace.jsonl").read_text().splitlines()]
    model_lines = [x for x in lines if x["kind"] == "model"]
    assert [x["prefix_chars"] for x in model_lines] == [m.prefix_chars for m in run.requests]
    assert [x["event"] for x in lines if x["kind"] == "run"] == ["start", "resize", "end"]
    (resize,) = [x["data"] for x in lines if x.get("event") == "resize"]  # issue 17: the trace shows the fold
    assert resize["step"] == 5 and resize["chars_after"] < resize["chars_before"]
    (shown,) = [line for line in render_run(run.run_dir).splitlines() if " resize (" in line]
    assert f"resize ({resize['reason']}) before model call 5: " in shown
    assert shown.endswith(f"{resize['chars_before']} -> {resize['chars_after']} characters")


def test_all_features_off_behaves_as_before() -> None:
    """Seed 003 test_graceful_degradation_when_disabled: the old loop's requests, byte for byte."""
    model = ScriptedModel([call("python", "code", "print(2+2)", id="c1"), ""])
    run = Agent(AgentConfig(), model=model).run("Compute 2+2")
    system = {"role": "system", "content": AgentConfig().system_prompt}
    user = {"role": "user", "content": "Compute 2+2"}
    function = {"name": "python", "arguments": '{"code": "print(2+2)"}'}
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": function}],
    }
    tool = {"role": "tool", "tool_call_id": "c1", "content": "4\n"}
    assert [r["messages"] for r in model.requests] == [[system, user], [system, user, assistant, tool]]
    assert all("tool_choice" not in r for r in model.requests)
    assert run.answer == NO_ANSWER  # no retry: error preservation is off
    assert run.messages == [system, user, assistant, tool, {"role": "assistant", "content": ""}]
    assert run.run_dir is None and len(run.requests) == 2


def test_kv_cache_stability_across_runs(tmp_path: Path) -> None:
    """Seed 003 test_kv_cache_stability: system prompt and tool definitions are byte-identical between runs."""
    model = ScriptedModel(["one answer here", "another answer"])
    agent = Agent(all_on(tmp_path), model=model, tools=tools_for({}, []))
    first, second = agent.run("Query 1"), agent.run("Query 2")
    a, b = model.requests
    assert json.dumps(a["tools"]) == json.dumps(b["tools"])
    assert a["messages"][0] == b["messages"][0]
    stable = len(request_text(a["messages"][:1], a["tools"]))  # tool definitions, then the system prompt
    assert second.requests[0].previous_request and second.requests[0].prefix_chars >= stable
    assert not first.requests[0].previous_request


def test_compression_in_the_loop_is_reversible_and_readable_by_the_agent(tmp_path: Path) -> None:
    config = all_on(tmp_path, compress_at_chars=len(SYSTEM) + 1500, compress_keep_last=2)
    files = {f"{i}.txt": f"content {i} " * 40 for i in range(4)}
    script: list[Any] = [call("read", "path", f"{i}.txt") for i in range(4)]
    model = ScriptedModel([*script, "- [x] all read\nDone reading four files."])
    run = Agent(config, model=model, tools=tools_for(files, [])).run("Read 0..3", mode="look")
    assert run.answer.endswith("Done reading four files.")
    references = [m for m in run.messages if is_reference(m)]
    assert references, "the context grew past compress_at_chars, so older turns were moved to a file"
    directory = tmp_path / "agents" / "alice" / "context"
    moved = [m for r in references for m in restore_messages(r, directory)]
    assert any(m.get("content") == files["0.txt"] for m in moved)
    assert not any(is_reference(m) for m in moved)  # earlier references are not compressed again
    called = {c["id"] for m in run.messages if m.get("tool_calls") for c in m["tool_calls"]}
    assert all(m["tool_call_id"] in called for m in run.messages if m["role"] == "tool")  # never orphaned
    assert run.messages[:2] == model.requests[0]["messages"][:2]  # system and task stay at the front
    # issue 17: the trace records each compression (at which request, the sizes), and replay shows it
    assert run.run_dir is not None
    entries = [json.loads(x) for x in (run.run_dir / "trace.jsonl").read_text().splitlines()]
    folds = [x["data"] for x in entries if x.get("event") == "compress"]
    assert len(folds) == len(references) and all(f["chars_after"] < f["chars_before"] for f in folds)
    shown = [line for line in render_run(run.run_dir).splitlines() if "context compression before" in line]
    assert [line.split("  ", 1)[1] for line in shown] == [
        f"context compression before model call {f['step']}: {f['chars_before']} -> {f['chars_after']} characters"
        for f in folds
    ]
    path = references[0]["content"].rsplit("file: ", 1)[1]
    readback = Agent(config, model=ScriptedModel([call("memory_load", "name", path), "ok, read it"]),
                     tools=tools_for({}, [])).run("read back", mode="look")  # fmt: skip
    loaded = json.loads(next(m["content"] for m in readback.messages if m["role"] == "tool"))
    assert loaded == restore_messages(references[0], directory)


def test_masking_refuses_when_the_model_has_no_allowed_tools() -> None:
    config = AgentConfig(context=ContextSettings(tool_masking=True, tool_modes={"chat": []}))
    model = ScriptedModel([call("python", "code", "print(1)"), "fine"], supports_allowed_tools=False)
    run = Agent(config, model=model).run("hi", mode="chat")
    assert "tool_choice" not in model.requests[0] and model.requests[0]["tools"]  # definitions still sent
    assert model.requests[1]["messages"][-1]["content"].startswith("error: tool python is not allowed in mode chat")
    with pytest.raises(ValueError, match="unknown mode"):
        Agent(config, model=ScriptedModel()).run("hi", mode="write")
    with pytest.raises(ValueError, match=r"needs context\.tool_masking"):
        Agent(AgentConfig(), model=ScriptedModel()).run("hi", mode="chat")
    with pytest.raises(ValueError, match="do not exist"):
        Agent(AgentConfig(context=ContextSettings(tool_masking=True, tool_modes={"x": ["nope"]})), model=model)
    assert run.answer == "fine"


def test_settings_refuse_compression_without_append_only_or_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs append_only"):
        ContextSettings(compress_at_chars=10, memory_dir=tmp_path)
    with pytest.raises(ValueError, match="needs context_dir or memory_dir"):
        ContextSettings(append_only=True, compress_at_chars=10)


def test_tool_choice_and_provider_cached_tokens_through_litellm(openai_stub: OpenAIStub, tmp_path: Path) -> None:
    openai_stub.enqueue(tool_calls=[{"id": "c1", "name": "python", "arguments": {"code": "print(1)"}}],
                        usage={"prompt_tokens": 900, "completion_tokens": 5, "cached_tokens": 0})  # fmt: skip
    openai_stub.enqueue("done", usage={"prompt_tokens": 950, "completion_tokens": 2, "cached_tokens": 896})
    model = LiteLLMModel("openai/test-model", api_base=openai_stub.base_url, api_key="sk-test", allowed_tools=True)
    config = AgentConfig(runs_dir=tmp_path, context=ContextSettings(tool_masking=True, tool_modes={"chat": []}))
    run = Agent(config, model=model).run("hi", mode="chat")
    assert [r.get("tool_choice") for r in openai_stub.requests] == ["none", "none"]
    assert openai_stub.requests[1]["messages"][-1]["content"].startswith("error: tool python is not allowed")
    assert [(m.prompt_tokens, m.cached_tokens) for m in run.requests] == [(900, 0), (950, 896)]
    assert run.run_dir is not None
    lines = [json.loads(x) for x in (run.run_dir / "trace.jsonl").read_text().splitlines()]
    assert [x["cached_tokens"] for x in lines if x["kind"] == "model"] == [0, 896]
