"""Named tools that take a string and return a string, each run under a time limit.

Every outcome is a string the model can read and act on: an unknown tool lists the ones that
exist, a timeout or a failure says what happened. A tool that accepts a ``timeout`` keyword enforces the limit
itself and can be killed (``python_execute`` kills its sandboxed session); any other tool runs in a worker thread
that is abandoned, not killed, when the limit passes. A tool registered with ``parameters`` (a JSON schema of its
arguments object) gets those arguments whole, as JSON text, and one registered with ``threaded=False`` runs in the
caller's thread, bounding its own time: it may wait for a person's answer, and is never abandoned half way.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.sandbox.confine import Sandbox, SandboxError, SandboxUnavailable

ToolFn = Callable[..., str]

#: what runs the model's code (given as the argument after it) as a REPL does: the module's last statement, if it
#: is an expression, is evaluated after the rest and its value shown by ``sys.displayhook`` (its repr; None is not
#: shown), so ``6 * 7`` answers 42 instead of printing nothing. Code that does not parse is compiled whole, so its
#: SyntaxError is the one ``python -c`` gives; every part is compiled as ``<code>``, so a traceback names the
#: model's own line numbers. Plan steps do not use it: their output is written into files.
REPL = """\
import ast, sys, types
source = sys.argv.pop(1)
main = types.ModuleType('__main__')
sys.modules['__main__'] = main
try:
    tree = ast.parse(source, '<code>')
except Exception:  # compiled whole below, which raises what python -c would
    tree = None
if tree is not None and tree.body and isinstance(tree.body[-1], ast.Expr):
    last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, '<code>', 'exec'), main.__dict__)
    sys.displayhook(eval(compile(last, '<code>', 'eval'), main.__dict__))
else:
    exec(compile(source, '<code>', 'exec'), main.__dict__)
"""


def python_execute(code: str, timeout: float = 30, *, sandbox: Sandbox | None = None) -> str:
    """Run ``code`` in a fresh Python process under the OS sandbox; stdout on success (with the value of a final
    expression, as a REPL shows it: ``REPL``), else the error line a programmer would read.

    The sandbox (``agent.sandbox.confine``: bubblewrap with Landlock and seccomp inside, or in an agent view Landlock
    and seccomp) lets the code read only its workspace (by default the current directory) and the system, write only
    inside the workspace, reach no network and no host socket, and start no program; the whole process session is
    killed on timeout, so code that forked children leaves none behind.
    """
    box = sandbox or Sandbox(Path.cwd())
    try:
        result = box.run_python(REPL, timeout=timeout, args=[code])
    except (SandboxUnavailable, SandboxError) as exc:
        return f"error: python cannot run here: {exc}"
    if result.timed_out:
        return f"error: python timed out after {timeout:g}s and was stopped; make the code faster or do less per call"
    if result.returncode != 0:
        err, out = result.stderr, result.stdout
        last = err.strip().splitlines()[-1] if err.strip() else f"exit status {result.returncode}"
        return f"error: {last}\n{out}".rstrip("\n") + "\n(the code raised; fix it and call the tool again)"
    return result.stdout


@dataclass(frozen=True)
class Tool:
    fn: ToolFn
    description: str
    parameter: str  # the name of the one string argument the model fills in (``code`` for python)
    parameters: dict[str, Any] | None = None  # a JSON schema of the whole arguments object, given to fn as JSON text
    threaded: bool = True  # False: run in the caller's thread, without the manager's time limit


class ToolManager:
    """The tools an agent may call, by name; ``python`` is always there, registered or not."""

    def __init__(self, timeout: float = 30, *, workspace: Path | None = None) -> None:
        self.timeout = timeout
        self._tools: dict[str, Tool] = {}
        sandbox = Sandbox(workspace or Path.cwd())

        def python(code: str, timeout: float = timeout) -> str:
            return python_execute(code, timeout, sandbox=sandbox)

        self.register("python", python, description="Run Python 3 code; returns what it prints.", parameter="code")

    def register(
        self,
        name: str,
        fn: ToolFn,
        *,
        description: str = "",
        parameter: str = "input",
        parameters: dict[str, Any] | None = None,
        threaded: bool = True,
    ) -> None:
        described = description or (inspect.getdoc(fn) or name).splitlines()[0]
        self._tools[name] = Tool(fn, described, parameter, parameters, threaded)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def tools(self) -> dict[str, Tool]:
        """A copy, by name in sorted order: the registry itself changes only through ``register``."""
        return dict(sorted(self._tools.items()))

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def execute_tool(self, name: str, input: str) -> str:
        """The tool's output, or an error text for the model (unknown tool, failure, timeout); raises nothing."""
        tool = self._tools.get(name)
        if tool is None:
            return f"error: unknown tool: {name}; available tools: {', '.join(self.names) or 'none'}"
        kills_itself = tool.threaded and "timeout" in inspect.signature(tool.fn).parameters
        result: list[str] = []

        def run() -> None:
            try:
                result.append(tool.fn(input, timeout=self.timeout) if kills_itself else tool.fn(input))
            except Exception as exc:  # a tool's failure is news for the model, not a crash of the agent
                result.append(f"error: tool {name} failed: {type(exc).__name__}: {exc}")

        if not tool.threaded:  # it bounds its own time, and may wait for a person
            run()
            return result[0]
        worker = threading.Thread(target=run, name=f"tool-{name}", daemon=True)
        worker.start()
        worker.join(self.timeout + (5 if kills_itself else 0))  # a self-limiting tool gets time to clean up
        if not result:
            return f"error: tool {name} timed out after {self.timeout:g}s; try a smaller or faster request"
        return result[0]
