"""Plan format v1 (SPEC §6): strict, versioned, references only backwards; schema generated from the models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest

from agent.plan_run.plan import Plan, PlanError, RiskLevel, load_plan, parse_plan, plan_json_schema
from agent.plan_run.tools.inputs import Ref, WorkspaceToolName

SPEC_EXAMPLE = {
    "version": 1,
    "goal": "...",
    "risk_level": "LOW",
    "workspace_root": ".",
    "steps": [
        {"id": 1, "description": "...", "tool": "read_text", "inputs": {"path": "data/notes.txt"}, "produces": "notes"},
        {
            "id": 2,
            "description": "...",
            "tool": "llm",
            "inputs": {"prompt": "Summarise in 3 bullets", "input": {"ref": "step:1.output"}},
            "produces": "summary",
        },
        {
            "id": 3,
            "description": "...",
            "tool": "write_text",
            "inputs": {"path": "out/summary.md", "content": {"ref": "step:2.output"}, "mode": "overwrite"},
            "produces": "out/summary.md",
        },
    ],
    "success_criteria": ["out/summary.md has 3 bullet lines"],
}


def plan_with(*steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    numbered = [{"id": i, "description": f"step {i}", **step} for i, step in enumerate(steps, 1)]
    return {"version": 1, "goal": "g", "risk_level": "LOW", "steps": numbered, **fields}


def invalid(data: Any) -> str:
    with pytest.raises(PlanError) as caught:
        parse_plan(json.dumps(data))
    return str(caught.value)


def test_the_spec_example_is_a_valid_plan() -> None:
    plan = parse_plan(json.dumps(SPEC_EXAMPLE))
    assert [step.tool for step in plan.steps] == ["read_text", "llm", "write_text"]
    assert plan.risk_level is RiskLevel.LOW
    content = plan.steps[2].inputs.model_dump()["content"]
    assert content == {"ref": "step:2.output"}


def test_a_plan_round_trips_through_json_unchanged() -> None:
    plan = parse_plan(json.dumps(SPEC_EXAMPLE))
    assert parse_plan(plan.model_dump_json()) == plan
    assert json.loads(plan.model_dump_json(exclude_none=True)) == SPEC_EXAMPLE


def test_missing_version_makes_the_plan_invalid() -> None:
    data = {k: v for k, v in SPEC_EXAMPLE.items() if k != "version"}
    assert "version: Field required" in invalid(data)


def test_another_version_is_refused() -> None:
    assert "version" in invalid({**SPEC_EXAMPLE, "version": 2})


def test_an_unknown_tool_makes_the_plan_invalid() -> None:
    message = invalid(plan_with({"tool": "delete_file", "inputs": {"path": "x"}}))
    assert "delete_file" in message and "read_text" in message


def test_an_unknown_input_makes_the_plan_invalid() -> None:
    message = invalid(plan_with({"tool": "read_text", "inputs": {"path": "x", "encoding": "latin-1"}}))
    assert "steps[0].read_text.inputs.encoding: Extra inputs are not permitted" in message


def test_an_unknown_top_level_field_makes_the_plan_invalid() -> None:
    assert "Extra inputs" in invalid({**SPEC_EXAMPLE, "priority": 1})


def test_a_missing_required_input_is_reported_with_its_place() -> None:
    assert "steps[0].write_text.inputs.content: Field required" in invalid(
        plan_with({"tool": "write_text", "inputs": {"path": "a.txt"}})
    )


def test_references_must_point_to_an_earlier_step() -> None:
    forward = plan_with(
        {"tool": "llm", "inputs": {"prompt": "p", "input": {"ref": "step:2.output"}}},
        {"tool": "read_text", "inputs": {"path": "a"}},
    )
    assert "not an earlier step" in invalid(forward)
    assert "not an earlier step" in invalid(plan_with({"tool": "llm", "inputs": {"prompt": {"ref": "step:1.output"}}}))


def test_a_malformed_reference_is_invalid() -> None:
    message = invalid(
        plan_with(
            {"tool": "read_text", "inputs": {"path": "a"}},
            {"tool": "llm", "inputs": {"prompt": "p", "input": {"ref": "step1"}}},
        )
    )
    assert "ref" in message


def test_paths_commands_and_code_cannot_be_references() -> None:
    first = {"tool": "read_text", "inputs": {"path": "a"}}
    ref = {"ref": "step:1.output"}
    for tool, inputs in [
        ("read_text", {"path": ref}),
        ("shell", {"cmd": ref}),
        ("python", {"code": ref}),
        ("write_text", {"path": ref, "content": "x"}),
    ]:
        assert "valid string" in invalid(plan_with(first, {"tool": tool, "inputs": inputs}))


def test_step_ids_must_increase() -> None:
    data = plan_with({"tool": "list_dir", "inputs": {}}, {"tool": "list_dir", "inputs": {}})
    data["steps"][1]["id"] = 1
    assert "step ids must increase" in invalid(data)


def test_a_plan_needs_at_least_one_step_and_a_goal() -> None:
    assert "steps" in invalid({**SPEC_EXAMPLE, "steps": []})
    assert "goal" in invalid({**SPEC_EXAMPLE, "goal": ""})


def test_timeouts_are_positive_and_bounded() -> None:
    assert "greater than 0" in invalid(plan_with({"tool": "shell", "inputs": {"cmd": "ls", "timeout": 0}}))
    assert "less than or equal" in invalid(plan_with({"tool": "python", "inputs": {"code": "1", "timeout": 9999}}))


def test_code_is_bounded_by_what_one_argument_can_carry() -> None:
    assert "at most 100000 characters" in invalid(plan_with({"tool": "python", "inputs": {"code": "x" * 100_001}}))


def test_risk_labels_are_read_in_any_case_and_ordered() -> None:
    plan = Plan.model_validate(plan_with({"tool": "list_dir", "inputs": {}}, risk_level="medium"))
    assert plan.risk_level is RiskLevel.MEDIUM
    assert RiskLevel.highest(RiskLevel.LOW, RiskLevel.HIGH, RiskLevel.MEDIUM) is RiskLevel.HIGH
    assert RiskLevel.highest() is RiskLevel.LOW


def test_not_json_is_a_clear_error() -> None:
    with pytest.raises(PlanError, match="not JSON: Expecting value at line 1 column 1"):
        parse_plan("Sure! Here is the plan")


def test_load_plan_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(PlanError, match=f"^{path}: not a valid plan"):
        load_plan(path)
    with pytest.raises(PlanError, match="cannot read plan"):
        load_plan(tmp_path / "missing.json")


def test_the_json_schema_comes_from_the_models() -> None:
    schema = plan_json_schema()
    assert schema["required"] == ["version", "goal", "risk_level", "steps"]
    assert schema["additionalProperties"] is False
    tools = set()
    for name, d in schema["$defs"].items():
        if name.endswith("Step"):
            tool = d["properties"]["tool"]
            tools |= set(tool["enum"]) if "enum" in tool else {tool["const"]}
    workspace_tools = set(get_args(WorkspaceToolName))  # the shared-workspace tools, on an omxfs mount
    path_tools = {"move", "copy", "make_dir", "delete"}
    assert tools == {"read_text", "write_text", "list_dir", "shell", "python", "llm"} | path_tools | workspace_tools
    assert schema["$defs"]["WriteTextInput"]["additionalProperties"] is False
    assert schema["$defs"]["Ref"]["properties"]["ref"]["pattern"] == r"^step:([1-9][0-9]*)\.output$"


def test_ref_knows_its_step() -> None:
    assert Ref(ref="step:12.output").step_id == 12
