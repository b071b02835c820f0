"""The python plan tool (SPEC §6): run code in the sandbox with a timeout; output is what it prints.

``omx agent`` has its own python tool, ``agent.chat.tool_manager.python_execute`` (seed 000 ToolManager "python"):
the same sandbox, but a string in and a string out for the chat loop, where this returns a ``ToolResult``.
"""

from __future__ import annotations

import re

from agent.plan_run.tools.base import ToolContext, ToolResult
from agent.plan_run.tools.inputs import PythonInput, Ref
from agent.plan_run.tools.shell import run_sandboxed

__all__ = ["python"]

#: the error of code that takes an earlier step's output for a variable of its own
_UNDEFINED = re.compile(r"NameError: name '[^']+' is not defined")
#: what the model is told then (it reaches the model in a re-plan): the 1.5B model wrote sorted(names) after a
#: read_text step in 9 of 15 text tasks and, told only the NameError, wrote the same twice more
NO_SHARED_NAMES = (
    "a python step sees no variable of another step: give it that step's output as its input "
    "({'ref': 'step:N.output'}) and use INPUT, the text, in its code; or let the code read its files itself"
)


#: what runs a step's code (given as the argument after it) with ``INPUT`` defined: the input is read from standard
#: input, so that an earlier step's output of any size travels as data (a file descriptor), never as code or an
#: argument. The code is compiled on its own, so a traceback names its lines as the model wrote them (a line put
#: before the code shifted every number by one, and the model was shown those when asked to fix its code).
BOOT = (
    "import sys; exec(compile(sys.argv.pop(1), '<code>', 'exec'), "
    "{'__name__': '__main__', '__builtins__': __builtins__, 'INPUT': sys.stdin.read()})"
)


def python(inputs: PythonInput, ctx: ToolContext) -> ToolResult:
    """The code runs in the sandbox's interpreter after its seccomp filter is in place: it cannot start programs.
    ``INPUT`` is the step's input, or "" without one (code that names it still runs)."""
    assert not isinstance(inputs.input, Ref), "references are resolved first"
    result = run_sandboxed(
        ctx,
        ["python", "-c", BOOT, inputs.code],
        inputs.timeout or ctx.default_timeout,
        "python",
        stdin=inputs.input or "",
    )
    if not result.ok and result.error_type == "NonZeroExit" and _UNDEFINED.search(result.error or ""):
        result.hint = NO_SHARED_NAMES
    return result
