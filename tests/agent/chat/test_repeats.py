"""A call that failed is not run again with the same arguments, nor is one that sends omx's own words back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import cli.omx
from agent.chat.loop import REFUSED_IN_A_ROW, STUCK, TEXT_CALLS_FOLLOW_UP, Agent, AgentConfig
from agent.chat.tool_manager import ToolManager
from agent.model.llm import ScriptedModel
from tests.support.sandbox import sandbox_or_skip

#: code that leaves a line in ran.log each time it runs, then fails
FAILING = "open('ran.log', 'a').write('ran\\n')\n1/0"


def call(code: str, call_id: str, arguments: Any = None) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "python", "arguments": arguments or {"code": code}}]}


def trace(run_dir: Path | None) -> list[dict[str, Any]]:
    assert run_dir is not None
    return [json.loads(line) for line in (run_dir / "trace.jsonl").read_text(encoding="utf-8").splitlines()]


def tool_results(model: ScriptedModel) -> list[str]:
    return [str(m["content"]) for m in model.requests[-1]["messages"] if m["role"] == "tool"]


def test_a_failed_call_sent_again_is_not_run_and_the_model_is_told(tmp_path: Path) -> None:
    sandbox_or_skip(tmp_path)
    spaced = json.dumps({"code": FAILING}, indent=2)  # the same arguments, written otherwise
    replies = [call(FAILING, "a"), call(FAILING, "b"), call("", "c", spaced), "I cannot compute it."]
    model = ScriptedModel(replies)
    config = AgentConfig(runs_dir=tmp_path / "runs")
    run = Agent(config, model=model, tools=ToolManager(workspace=tmp_path)).run("Divide by zero.")
    assert run.answer == "I cannot compute it." and run.steps == 4
    assert (tmp_path / "ran.log").read_text() == "ran\n"  # run once, not three times
    first, second, third = tool_results(model)
    assert first.startswith("error: ZeroDivisionError: division by zero")
    refused = "error: this exact call failed before with: ZeroDivisionError: division by zero; it was not run again."
    assert second.startswith(refused) and "answer in plain text" in second
    assert third == second

    entries = trace(run.run_dir)
    assert [e["call_id"] for e in entries if e["kind"] == "tool"] == ["a"]  # the one call that ran
    events = [e["data"] for e in entries if e.get("event") == "repeat_refused"]
    assert [(e["call_id"], e["step"], e["reason"], e["tool"]) for e in events] == [
        ("b", 2, "failed_before", "python"),
        ("c", 3, "failed_before", "python"),
    ]
    assert events[0]["arguments"] == {"code": FAILING} and events[0]["told"] == second
    assert events[0]["earlier_error"].startswith("error: ZeroDivisionError")

    shown = CliRunner().invoke(cli.omx.main, ["replay", str(run.run_dir)])
    assert shown.exit_code == 0, shown.output
    lines = [line.strip() for line in shown.output.splitlines()]
    assert any(line.endswith("tool python (model call 2): not run, it failed before [b]") for line in lines)
    assert f"told the model: {second}"[:60] in shown.output


def test_other_arguments_and_a_call_that_succeeded_run_again(tmp_path: Path) -> None:
    sandbox_or_skip(tmp_path)
    succeeding = "open('ran.log', 'a').write('ok\\n')"
    replies = [call(FAILING, "a"), call(FAILING + "\n", "b"), call(succeeding, "c"), call(succeeding, "d"), "done"]
    model = ScriptedModel(replies)
    run = Agent(AgentConfig(), model=model, tools=ToolManager(workspace=tmp_path)).run("Try.")
    assert run.answer == "done"
    assert (tmp_path / "ran.log").read_text() == "ran\nran\nok\nok\n"
    assert all("not run" not in result for result in tool_results(model))


def test_a_call_that_echoes_omxs_words_is_not_run(tmp_path: Path) -> None:
    """The 0.5B model sent omx's nudge, then an error message omx had sent it, as the code of its next calls."""
    seen: list[str] = []

    def note(text: str) -> str:
        seen.append(text)
        return "noted"

    tools = ToolManager(workspace=tmp_path)
    tools.register("note", note, description="Keep a note.", parameter="text")
    nudge = TEXT_CALLS_FOLLOW_UP.split(": ", 1)[1]  # "call a tool again, or answer in plain text."
    replies = [
        '{"name": "note", "arguments": {"text": "first"}}',
        json.dumps({"name": "note", "arguments": {"text": nudge}}),
        {"tool_calls": [{"id": "u", "name": "nosuch", "arguments": {"x": "1"}}]},
        {"tool_calls": [{"id": "e", "name": "note", "arguments": {"text": "error: unknown tool: nosuch"}}]},
        {"tool_calls": [{"id": "s", "name": "note", "arguments": {"text": "plain text"}}]},  # short: not an echo
        "done",
    ]
    model = ScriptedModel(replies)
    run = Agent(AgentConfig(runs_dir=tmp_path / "runs"), model=model, tools=tools).run("Take notes.")
    assert run.answer == "done"
    assert seen == ["first", "plain text"]
    echoed = "error: the arguments of this call repeat a message omx sent you; it was not run."
    told_as_text = model.requests[2]["messages"][-1]["content"]
    assert told_as_text.startswith(f"Result of your tool call note:\n{echoed}")
    assert tool_results(model)[1].startswith(echoed)
    events = [e["data"] for e in trace(run.run_dir) if e.get("event") == "repeat_refused"]
    assert [(e["reason"], e["source"], e["arguments"]) for e in events] == [
        ("echo", "text", {"text": nudge}),
        ("echo", "native", {"text": "error: unknown tool: nosuch"}),
    ]
    shown = CliRunner().invoke(cli.omx.main, ["replay", str(run.run_dir)])
    assert "(model call 2, written as text): not run, it repeats a message omx sent" in shown.output


def test_three_refused_calls_in_a_row_end_the_loop_not_max_steps(tmp_path: Path) -> None:
    """The 0.5B model in omx --loop called a tool that does not exist 20 times, each repeat refused, until max
    steps, 244 s; told three times in a row, it is stopped, and the run says why."""
    sandbox_or_skip(tmp_path)
    replies = [call(FAILING, "a"), *(call(FAILING, f"r{i}") for i in range(5)), "never asked"]
    model = ScriptedModel(replies)
    run = Agent(AgentConfig(runs_dir=tmp_path / "runs", max_steps=10), model=model,
                tools=ToolManager(workspace=tmp_path)).run("Divide by zero.")  # fmt: skip
    assert run.answer == STUCK
    assert run.steps == 1 + REFUSED_IN_A_ROW  # the failed call, then three refused repeats
    assert len(model.requests) == 1 + REFUSED_IN_A_ROW
    (end,) = [e["data"] for e in trace(run.run_dir) if e.get("event") == "end"]
    assert end["status"] == "stuck"


def test_a_call_that_runs_between_refusals_starts_the_count_again(tmp_path: Path) -> None:
    sandbox_or_skip(tmp_path)
    fine = "print('ok')"
    replies = [call(FAILING, "a"), call(FAILING, "b"), call(FAILING, "c"), call(fine, "d"), call(FAILING, "e"),
               call(FAILING, "f"), "done"]  # fmt: skip
    run = Agent(AgentConfig(max_steps=10), model=ScriptedModel(replies), tools=ToolManager(workspace=tmp_path)).run(
        "Try."
    )
    assert run.answer == "done"
