"""The agent loop's python tool shows a final expression's value as a REPL does; a plan's python step does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.chat.loop import Agent, AgentConfig
from agent.chat.tool_manager import ToolManager
from agent.model.llm import ScriptedModel
from agent.plan_run.executor import Executor
from agent.plan_run.plan import Plan
from agent.plan_run.tools.base import ToolContext
from agent.record.trace import RunRecorder
from tests.support.sandbox import sandbox_or_skip


def told(code: str, workspace: Path) -> str:
    """What the model is sent back for one native python call of ``code``, run in the real sandbox."""
    sandbox_or_skip(workspace)
    reply = {"tool_calls": [{"id": "c1", "name": "python", "arguments": {"code": code}}]}
    model = ScriptedModel([reply, "done"])
    run = Agent(AgentConfig(), model=model, tools=ToolManager(workspace=workspace)).run("Use python.")
    assert run.answer == "done"
    (result,) = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    return str(result["content"])


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("6 * 7", "42\n"),  # the 0.5B model's own call, which printed nothing
        ("x = 1\nx + 1", "2\n"),  # the rest runs first
        ("print(1)", "1\n"),  # print returns None: None is not shown
        ("'a' + 'b'", "'ab'\n"),  # the repr, as a REPL shows it
        ("x = 1", ""),  # the last statement is no expression: nothing added
        ("for i in range(2):\n    i", ""),  # nor here: the loop is the last statement
    ],
)
def test_a_final_expression_is_shown_as_a_repl_shows_it(code: str, expected: str, tmp_path: Path) -> None:
    assert told(code, tmp_path) == expected


def test_a_syntax_error_and_a_traceback_are_the_models_own(tmp_path: Path) -> None:
    """A SyntaxError is the one python gives the whole code; the line of a failure is the line the model wrote."""
    assert told("def f(:", tmp_path).startswith("error: SyntaxError: invalid syntax")
    marker = tmp_path / "ran.txt"
    code = f"open({str(marker)!r}, 'w').write('x')\n\n1/0"
    assert told(code, tmp_path).startswith("error: ZeroDivisionError: division by zero")
    assert marker.read_text() == "x"  # the statements before the last ran, once
    caught = "import sys\ntry:\n    1/0\nexcept ZeroDivisionError as e:\n    print(e.__traceback__.tb_lineno)"
    assert told(caught, tmp_path) == "3\n"  # a traceback names line 3 of the model's code, under <code>
    assert told("import sys\nsys._getframe().f_code.co_filename", tmp_path) == "'<code>'\n"


def test_a_plan_python_step_with_a_final_expression_writes_nothing_extra(tmp_path: Path) -> None:
    """A plan step's output goes into files: a stray repr there would corrupt them."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = sandbox_or_skip(workspace)
    steps: list[dict[str, Any]] = [
        {"id": 1, "description": "compute", "tool": "python", "inputs": {"code": "print('a')\nx = 41\nx + 1"}},
        {"id": 2, "description": "write", "tool": "write_text",
         "inputs": {"path": "out.txt", "content": {"ref": "step:1.output"}}},
    ]  # fmt: skip
    plan = Plan.model_validate({"version": 1, "goal": "g", "risk_level": "LOW", "steps": steps})
    recorder = RunRecorder.create(workspace / "runs")
    result = Executor(ToolContext(workspace=workspace, sandbox=box), recorder).execute(plan)
    assert result.status != "failed" and result.steps_executed == 2
    assert (workspace / "out.txt").read_text(encoding="utf-8") == "a\n"
