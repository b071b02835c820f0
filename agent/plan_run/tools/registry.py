"""Tool name → implementation; ``run_tool`` is the one door the executor uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.plan_run.tools.base import ToolContext, ToolResult
from agent.plan_run.tools.files import list_dir, read_text, write_text
from agent.plan_run.tools.inputs import ToolInput
from agent.plan_run.tools.llm import llm
from agent.plan_run.tools.path_tools import copy, delete, make_dir, move
from agent.plan_run.tools.python import python
from agent.plan_run.tools.shell import shell

__all__ = ["TOOLS", "run_tool"]

TOOLS: dict[str, Callable[[Any, ToolContext], ToolResult]] = {
    "read_text": read_text,
    "write_text": write_text,
    "list_dir": list_dir,
    "shell": shell,
    "python": python,
    "llm": llm,
    "move": move,
    "copy": copy,
    "make_dir": make_dir,
    "delete": delete,
}


def run_tool(inputs: ToolInput, ctx: ToolContext) -> ToolResult:
    return TOOLS[inputs.tool_name](inputs, ctx)
