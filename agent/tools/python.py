"""The python tool (seed 000 ToolManager "python"): run code in the sandbox with a timeout; output is what it prints."""

from __future__ import annotations

import sys

from agent.tools.base import ToolContext, ToolResult
from agent.tools.inputs import PythonInput
from agent.tools.shell import run_sandboxed

__all__ = ["python"]


def python(inputs: PythonInput, ctx: ToolContext) -> ToolResult:
    return run_sandboxed(ctx, [sys.executable, "-c", inputs.code], inputs.timeout or ctx.default_timeout, "python")
