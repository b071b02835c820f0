"""Plans valid by construction, down to the file names: the schema sent with a planning request is made for the run,
its tools the run's tools and its read paths the workspace's files, so a grammar-constrained server cannot decode a
plan that reads a file that is not there. A workspace too large to list keeps plain strings (and the trace says so);
JSON mode gets no schema, and the plan's checks still catch a missing file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agent.model.llm import LiteLLMModel, ScriptedModel
from agent.plan_run.planner import Planner
from agent.plan_run.run_schema import MAX_STEPS, PATH_CAP, run_plan_schema
from agent.plan_run.tools.inputs import TOOL_INPUTS
from agent.record.trace import RecordingModel, RunRecorder
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]

TASK = "Copy the first line of data/notes.txt to out/first-line.txt"


def plan_of(*steps: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    numbered = [
        {"id": n, "description": tool, "tool": tool, "inputs": inputs} for n, (tool, inputs) in enumerate(steps, 1)
    ]
    return {"version": 1, "goal": "g", "risk_level": "LOW", "workspace_root": ".", "steps": numbered}


READ_NOTES = plan_of(("read_text", {"path": "data/notes.txt"}), ("write_text", {"path": "out/first-line.txt",
                     "content": {"ref": "step:1.output"}}))  # fmt: skip


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    for path in ("data/notes.txt", "data/deep/more.txt", "top.md", ".env", "runs/old/trace.jsonl", ".git/config"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("line one\nline two\n", encoding="utf-8")
    return tmp_path


def read_paths(schema: dict[str, Any]) -> Any:
    return schema["$defs"]["ReadTextInput"]["properties"]["path"].get("enum")


def list_paths(schema: dict[str, Any]) -> Any:
    return schema["$defs"]["ListDirInput"]["properties"]["path"].get("enum")


def tools(schema: dict[str, Any]) -> set[str]:
    """Every value the schema lets a step's ``tool`` take."""
    names: set[str] = set()
    for choice in schema["properties"]["steps"]["items"]["oneOf"]:
        tool = schema["$defs"][choice["$ref"].rsplit("/", 1)[-1]]["properties"]["tool"]
        names |= {tool["const"]} if "const" in tool else set(tool["enum"])
    return names


def test_the_schema_sent_lists_the_workspaces_files_and_the_runs_tools(ws: Path) -> None:
    model = ScriptedModel([json.dumps(READ_NOTES)])
    Planner(model).plan(TASK, ws)
    (request,) = model.requests
    schema = request["json_mode"]
    assert read_paths(schema) == [".env", "data/deep/more.txt", "data/notes.txt", "out/first-line.txt", "top.md"]
    assert list_paths(schema) == [".", "data", "data/deep"]  # runs/ and hidden directories are not offered
    assert tools(schema) == set(TOOL_INPUTS)  # no shared-workspace tool off an omxfs mount
    jsonschema.validate(READ_NOTES, schema)
    missing = plan_of(("read_text", {"path": "data/gone.txt"}))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(missing, schema)  # what a grammar built from it cannot decode
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(plan_of(("fetch_url", {"url": "x"})), schema)


def test_a_plan_sent_with_the_schema_has_at_most_max_steps_steps(ws: Path) -> None:
    """A small model repeating its steps is made to close the plan: a grammar built from the schema cannot decode
    step MAX_STEPS + 1 (before, one plan decoded for minutes until the server's context was full)."""
    schema = run_plan_schema(ws).schema
    read = ("read_text", {"path": "data/notes.txt"})
    jsonschema.validate(plan_of(*[read] * MAX_STEPS), schema)
    with pytest.raises(jsonschema.ValidationError, match="is too long"):
        jsonschema.validate(plan_of(*[read] * (MAX_STEPS + 1)), schema)


def test_through_an_openai_compatible_server_the_enum_is_in_the_response_format(
    ws: Path, openai_stub: OpenAIStub
) -> None:
    openai_stub.enqueue(content=json.dumps(READ_NOTES))
    model = LiteLLMModel("openai/test", api_base=openai_stub.base_url, api_key="sk-test")
    Planner(model).plan(TASK, ws)
    (request,) = openai_stub.requests
    schema = request["response_format"]["json_schema"]["schema"]
    assert "data/notes.txt" in read_paths(schema) and "data/gone.txt" not in read_paths(schema)
    assert tools(schema) == set(TOOL_INPUTS)


def test_on_an_omxfs_mount_the_shared_workspace_tools_are_choices_too(ws: Path) -> None:
    model = ScriptedModel([json.dumps(READ_NOTES)])
    Planner(model, workspace_agent="alice").plan(TASK, ws)
    offered = tools(model.requests[0]["json_mode"])
    assert set(TOOL_INPUTS) < offered and {"collab_write", "handoff_file"} <= offered


def test_a_workspace_of_300_files_falls_back_to_strings_and_the_trace_says_so(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "many").mkdir(parents=True)
    for n in range(300):
        (ws / "many" / f"f{n:03}.txt").write_text("x", encoding="utf-8")
    recorder = RunRecorder.create(tmp_path / "runs")
    model = ScriptedModel([json.dumps(plan_of(("read_text", {"path": "many/f007.txt"})))])
    Planner(RecordingModel(model, recorder)).plan("Show many/f007.txt", ws)
    schema = model.requests[0]["json_mode"]
    assert read_paths(schema) is None and list_paths(schema) is None
    assert schema["$defs"]["ReadTextInput"]["properties"]["path"]["type"] == "string"
    assert tools(schema) == set(TOOL_INPUTS)  # the tools are still the run's
    entries = [json.loads(line) for line in recorder.trace_path.read_text(encoding="utf-8").splitlines()]
    (note,) = [e for e in entries if e.get("event") == "plan_schema"]
    assert f"more than {PATH_CAP}" in note["data"]["open_paths"]


def test_the_cap_counts_what_is_offered_not_what_is_skipped(tmp_path: Path) -> None:
    for n in range(PATH_CAP + 50):
        (tmp_path / "runs" / f"r{n}").mkdir(parents=True)
    (tmp_path / "a.txt").write_text("a", encoding="utf-8")
    assert read_paths(run_plan_schema(tmp_path).schema) == ["a.txt"]


def test_an_empty_workspace_offers_no_read_step_rather_than_an_empty_choice(tmp_path: Path) -> None:
    schema = run_plan_schema(tmp_path).schema
    assert tools(schema) == set(TOOL_INPUTS) - {"read_text"}
    assert "ReadTextInput" not in schema["$defs"]
    jsonschema.Draft202012Validator.check_schema(schema)


def test_a_replan_sends_the_schema_of_the_files_the_run_left(ws: Path) -> None:
    model = ScriptedModel([json.dumps(READ_NOTES)])
    planner = Planner(model)
    (ws / "out").mkdir()
    (ws / "out" / "partial.txt").write_text("half", encoding="utf-8")
    planner.replan(TASK, ws, "step 2 failed: disk full")
    schema = model.requests[0]["json_mode"]
    assert "out/partial.txt" in read_paths(schema) and tools(schema) == set(TOOL_INPUTS)


def test_in_json_mode_a_plan_reading_a_missing_file_is_still_caught(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No schema goes with a json_object request; the plan's own checks find the file that is not there and ask
    again, as they did before the schema had the file names."""
    monkeypatch.setenv("OMX_RESPONSE_FORMAT", "json_object")
    task = "Copy the first line of data/gone.txt to out/first-line.txt"
    gone = plan_of(("read_text", {"path": "data/gone.txt"}), ("write_text", {"path": "out/first-line.txt",
                   "content": {"ref": "step:1.output"}}))  # fmt: skip
    model = ScriptedModel([json.dumps(gone), json.dumps(READ_NOTES)])
    unfit: list[list[str]] = []
    Planner(model, on_unfit=unfit.append).plan(task, ws)
    assert [r["json_mode"] for r in model.requests] == [True, True]
    assert unfit and "reads data/gone.txt, which is not in the workspace" in unfit[0][0]
    assert "data/gone.txt, which is not in the workspace" in model.requests[1]["messages"][-1]["content"]


def write_paths(schema: dict[str, Any]) -> Any:
    return schema["$defs"]["WriteTextInput"]["properties"]["path"].get("enum")


def test_a_plan_can_write_only_the_files_the_task_asks_for(ws: Path) -> None:
    """Where the task names its output, write_text's path is that output (or another file the task names that is not
    there yet): a small model wrote a summary over the file it summarised, the one path it had just read."""
    model = ScriptedModel([json.dumps(READ_NOTES)])
    Planner(model).plan(TASK, ws)
    schema = model.requests[0]["json_mode"]
    assert write_paths(schema) == ["out/first-line.txt"]  # data/notes.txt is there: the task reads it
    jsonschema.validate(READ_NOTES, schema)
    over_input = plan_of(("read_text", {"path": "data/notes.txt"}),
                         ("write_text", {"path": "data/notes.txt", "content": {"ref": "step:1.output"}}))  # fmt: skip
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(over_input, schema)


def test_the_files_of_a_directory_the_task_names_may_be_written(ws: Path) -> None:
    task = "Add a title line to each file in data/deep/ and list them in out/titled.txt"
    model = ScriptedModel([json.dumps(READ_NOTES)])
    Planner(model).plan(task, ws)
    assert write_paths(model.requests[0]["json_mode"]) == ["data/deep/more.txt", "out/titled.txt"]


def test_a_task_that_names_no_output_leaves_write_paths_open(ws: Path) -> None:
    """Nothing tells the file the task wants from the rest: a write is judged when it runs, as before."""
    model = ScriptedModel([json.dumps(READ_NOTES)])
    Planner(model).plan("Write a haiku about data/notes.txt", ws)
    assert write_paths(model.requests[0]["json_mode"]) is None


def test_without_a_schema_a_write_elsewhere_is_sent_back(ws: Path) -> None:
    """A server that takes no schema decodes any path: the plan's check tells the model which file the task asks
    for, and the second plan is the one that runs."""
    over_input = plan_of(("read_text", {"path": "data/notes.txt"}),
                         ("write_text", {"path": "data/notes.txt", "content": {"ref": "step:1.output"}}))  # fmt: skip
    model = ScriptedModel([json.dumps(over_input), json.dumps(READ_NOTES)])
    plan = Planner(model).plan(TASK, ws)
    assert [s.inputs.path for s in plan.steps if s.tool == "write_text"] == ["out/first-line.txt"]
    told = model.requests[1]["messages"][-1]["content"]
    assert "step 2 writes data/notes.txt, which the task does not ask for: write to out/first-line.txt" in told
