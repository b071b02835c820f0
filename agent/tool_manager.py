"""Seed 000 ToolManager: named tools that take a string and return a string, each run under a time limit.

Every outcome is a string the model can read and act on (STYLE lesson 11): an unknown tool lists the ones that
exist, a timeout or a failure says what happened. A tool that accepts a ``timeout`` keyword enforces the limit
itself and can be killed (``python_execute`` kills its process group); any other tool runs in a worker thread
that is abandoned, not killed, when the limit passes.
"""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

ToolFn = Callable[..., str]


def python_execute(code: str, timeout: float = 30) -> str:
    """Run ``code`` in a fresh Python process; stdout on success, else the error line a programmer would read.

    The process is isolated from the agent, not sandboxed: it runs as the user, in the current directory.
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: code that started children leaves none behind
        proc.communicate()
        return f"error: python timed out after {timeout:g}s and was stopped; make the code faster or do less per call"
    if proc.returncode != 0:
        last = err.strip().splitlines()[-1] if err.strip() else f"exit status {proc.returncode}"
        return f"error: {last}\n{out}".rstrip("\n") + "\n(the code raised; fix it and call the tool again)"
    return out


@dataclass(frozen=True)
class Tool:
    fn: ToolFn
    description: str
    parameter: str  # the name of the one string argument the model fills in (``code`` for python)


class ToolManager:
    """The tools an agent may call, by name; ``python`` is always there (seed TC-Tool-003 uses it unregistered)."""

    def __init__(self, timeout: float = 30) -> None:
        self.timeout = timeout
        self._tools: dict[str, Tool] = {}
        self.register(
            "python", python_execute, description="Run Python 3 code; returns what it prints.", parameter="code"
        )

    def register(self, name: str, fn: ToolFn, *, description: str = "", parameter: str = "input") -> None:
        self._tools[name] = Tool(fn, description or (inspect.getdoc(fn) or name).splitlines()[0], parameter)

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
        """The tool's output, or an error text for the model; raises nothing (seed TC-Tool-002...004)."""
        tool = self._tools.get(name)
        if tool is None:
            return f"error: unknown tool: {name}; available tools: {', '.join(self.names) or 'none'}"
        kills_itself = "timeout" in inspect.signature(tool.fn).parameters
        result: list[str] = []

        def run() -> None:
            try:
                result.append(tool.fn(input, timeout=self.timeout) if kills_itself else tool.fn(input))
            except Exception as exc:  # a tool's failure is news for the model, not a crash of the agent
                result.append(f"error: tool {name} failed: {type(exc).__name__}: {exc}")

        worker = threading.Thread(target=run, name=f"tool-{name}", daemon=True)
        worker.start()
        worker.join(self.timeout + (5 if kills_itself else 0))  # a self-limiting tool gets time to clean up
        if not result:
            return f"error: tool {name} timed out after {self.timeout:g}s; try a smaller or faster request"
        return result[0]
