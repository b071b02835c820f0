"""A plan step whose input names its own output: through the real ``omx`` command with a scripted model, the real
step sandbox and real files, the reference is read as the step before it's, shown so in the plan, and the plan
runs; a first python or llm step whose input is its own output is given none; any other reference of a first
step to itself leaves the plan invalid."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.self_refs import with_self_refs_mended
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import omx

TASK = "Write the lines of data/a.txt in upper case to out/upper.txt"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("pears\nplums\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def plan(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "goal": TASK, "risk_level": "LOW", "steps": list(steps)}


READ = {"id": 1, "description": "read", "tool": "read_text", "inputs": {"path": "data/a.txt"}}
UPPER = {"id": 2, "description": "upper", "tool": "python",
         "inputs": {"code": "print(INPUT.upper(), end='')", "input": {"ref": "step:2.output"}}}  # fmt: skip
WRITE = {"id": 3, "description": "write", "tool": "write_text",
         "inputs": {"path": "out/upper.txt", "content": {"ref": "step:2.output"}}}  # fmt: skip


def test_a_step_that_names_its_own_output_gets_the_step_before_it_s(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    script(json.dumps(plan(READ, UPPER, WRITE)))
    result = omx(TASK, "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "upper.txt").read_text(encoding="utf-8") == "PEARS\nPLUMS\n"
    assert "upper (its input is the output of step 1, by omx: the plan named this step's own output)" in result.output


def test_only_a_reference_to_the_step_itself_is_mended() -> None:
    mended = with_self_refs_mended(plan(READ, UPPER, WRITE))
    assert mended["steps"][1]["inputs"]["input"] == {"ref": "step:1.output"}
    assert mended["steps"][2] == WRITE  # a reference to an earlier step is the plan's own
    first = {**READ, "tool": "llm", "inputs": {"prompt": "x", "input": {"ref": "step:1.output"}}}
    (alone,) = with_self_refs_mended(plan(first))["steps"]  # nothing before it: no input
    assert alone["inputs"] == {"prompt": "x"} and alone["description"].endswith("and no step is before it)")
    writes = {**WRITE, "id": 1, "inputs": {"path": "out/upper.txt", "content": {"ref": "step:1.output"}}}
    assert with_self_refs_mended(plan(writes))["steps"] == [writes]  # no input to drop: still invalid
    later = {**UPPER, "inputs": {"code": "print(INPUT)", "input": {"ref": "step:3.output"}}}
    assert with_self_refs_mended(plan(READ, later, WRITE))["steps"][1] == later  # which step was meant is not known
    assert with_self_refs_mended(["not", "a plan"]) == ["not", "a plan"]


def test_a_first_step_that_names_itself_as_its_input_runs_without_one(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    power = {"id": 1, "description": "power", "tool": "python",
             "inputs": {"code": "print(2 ** 20)", "input": {"ref": "step:1.output"}}}  # fmt: skip
    written = {**WRITE, "inputs": {"path": "out/pow.txt", "content": {"ref": "step:1.output"}}}
    script(json.dumps(plan(power, {**written, "id": 2})))
    result = omx("Compute 2 to the power 20 with python into out/pow.txt", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "pow.txt").read_text(encoding="utf-8") == "1048576\n"
    assert "power (no input, by omx: the plan named this step's own output, and no step is before it)" in result.output


def test_a_first_step_that_names_itself_otherwise_leaves_the_plan_invalid(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    first = {**WRITE, "id": 1, "inputs": {"path": "out/upper.txt", "content": {"ref": "step:1.output"}}}
    script(json.dumps(plan(first)), json.dumps(plan(first)))
    result = omx(TASK, "--yes", "--replans", "0")
    assert result.exit_code != 0
    assert "step 1 refers to 'step:1.output', which is not an earlier step" in result.output
