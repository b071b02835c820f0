"""The python plan tool (SPEC §6): run code in the sandbox with a timeout; output is what it prints.

``omx agent`` has its own python tool, ``agent.chat.tool_manager.python_execute`` (seed 000 ToolManager "python"):
the same sandbox, but a string in and a string out for the chat loop, where this returns a ``ToolResult``.
"""

from __future__ import annotations

from agent.plan_run.tools.base import ToolContext, ToolResult
from agent.plan_run.tools.inputs import PythonInput
from agent.plan_run.tools.shell import run_sandboxed

__all__ = ["python"]


def python(inputs: PythonInput, ctx: ToolContext) -> ToolResult:
    """The code runs in the sandbox's interpreter after its seccomp filter is in place: it cannot start programs."""
    return run_sandboxed(ctx, ["python", "-c", inputs.code], inputs.timeout or ctx.default_timeout, "python")
