"""The planner asks for criteria about *this* task (issue 28): the 0.5B model copied the example's "out/summary.md
has 3 bullet lines" into a line count, a table and a sorted list. The prompt now shows the forms omx checks and
several tasks with criteria of their own; copied verbatim into another task, none of them decides its result."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.criteria import check_criterion
from agent.plan_run.criteria_prompt import CRITERIA_RULES
from agent.plan_run.planner import EXAMPLES, system_prompt
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import omx, only_run, run_end, trace_of


def example_criteria() -> dict[str, list[str]]:
    """Each example task of the prompt with its criteria, the example plan's included."""
    shown = {task: json.loads(criteria) for task, criteria in re.findall(r'"([^"]+)" -> (\[.*\])', system_prompt())}
    return shown | {str(example["goal"]): list(example["success_criteria"]) for example in EXAMPLES}


def test_the_prompt_has_no_criterion_of_the_old_example_and_asks_for_this_tasks() -> None:
    prompt = system_prompt()
    assert "has 3 bullet lines" not in prompt
    assert CRITERIA_RULES in prompt and "THIS task" in prompt
    examples = example_criteria()
    assert len(examples) >= 4
    assert len({c for criteria in examples.values() for c in criteria}) == sum(map(len, examples.values()))


def test_each_example_criterion_is_about_its_own_tasks_file() -> None:
    """A criterion copied verbatim then names a file of another task: one this run was not meant to write."""
    for task, criteria in example_criteria().items():
        for criterion in criteria:
            (path,) = re.findall(r"out/[\w.]+", criterion)
            assert path in task, (task, criterion)


@pytest.mark.parametrize(
    ("form", "content"),
    [
        ("FILE exists", "x\n"),
        ("FILE has N lines", "a\nb\n"),
        ("FILE has N bullet lines", "- a\n- b\n"),
        ("FILE has just the number N", "2\n"),
        ("FILE has just a number", "17\n"),
        ("FILE contains 'TEXT'", "a TEXT here\n"),
        ("FILE is a markdown table", "| a | b |\n|---|---|\n| 1 | 2 |\n"),
    ],
)
def test_every_form_the_prompt_teaches_is_one_omx_checks(tmp_path: Path, form: str, content: str) -> None:
    assert form in CRITERIA_RULES
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "f.md").write_text(content, encoding="utf-8")
    criterion = form.replace("FILE", "out/f.md").replace(" N ", " 2 ").replace(" N", " 2")
    assert check_criterion(criterion, [tmp_path / "out" / "f.md"], tmp_path).status == "met", criterion
    (tmp_path / "out" / "f.md").write_text("", encoding="utf-8")
    if form != "FILE exists":
        assert check_criterion(criterion, [tmp_path / "out" / "f.md"], tmp_path).status == "not met", criterion


# -- behaviour: the prompt's criteria copied into another task ----------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("apples\npears\nplums\ncherries\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def copied_plan(count: str) -> str:
    """A line count whose plan copied every criterion of the prompt's examples, as the 0.5B model did."""
    copied = [criterion for criteria in example_criteria().values() for criterion in criteria]
    return json.dumps({
        "version": 1, "goal": "Count the lines", "risk_level": "LOW", "workspace_root": ".",
        "steps": [{"id": 1, "description": "write", "tool": "write_text",
                   "inputs": {"path": "out/count.txt", "content": count}}],
        "success_criteria": copied,
    })  # fmt: skip


TASK = "Count the lines of data/a.txt and write just the number into out/count.txt"


@pytest.mark.parametrize(("count", "exit_code", "status"), [("4\n", 0, "done"), ("4 lines\n", 1, "failed")])
def test_copied_example_criteria_decide_nothing_the_tasks_own_checks_do(
    ws: Path, script: Callable[..., ScriptedModel], count: str, exit_code: int, status: str
) -> None:
    model = script(copied_plan(count))
    result = omx(TASK, "--yes", "--replans", "0")  # a wrong count is re-planned otherwise (test_omx_replan.py)
    assert result.exit_code == exit_code, result.output
    end = run_end(trace_of(only_run(ws)))
    assert end["status"] == status
    copied = [c for c in end["criteria"] if "(from the task)" not in c["criterion"]]
    assert copied and {c["status"] for c in copied} == {"not checked"}  # neither met nor not met: not this run's
    assert len(model.requests) == 1  # the plan only: no copied criterion is given to the model to judge
    assert CRITERIA_RULES in model.requests[0]["messages"][0]["content"]


def test_the_examples_are_json_a_model_can_imitate() -> None:
    """Each example's criteria, as the prompt shows them, are a JSON list (no quote left unescaped)."""
    shown = re.findall(r" -> (\[.*\])", system_prompt())
    assert len(shown) >= 4
    for criteria in shown:
        assert isinstance(json.loads(criteria), list), criteria
