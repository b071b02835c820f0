"""What every plan tool returns and receives (STYLE lesson 11: errors the model and the user can act on).

A tool never raises for a mistake in its inputs or a refusal: it returns ``ToolResult(ok=False, error, hint,
error_type)``, which the executor records and shows with a next step. Exceptions escaping a tool are our bugs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent.model.llm import Model
from agent.sandbox.confine import Sandbox

__all__ = ["ToolContext", "ToolFailure", "ToolResult"]

DEFAULT_TIMEOUT = 30.0


class ToolResult(BaseModel):
    """``{"ok", "output", "error", "hint"}`` plus the error's type and details (exit code, stderr, sandbox...)."""

    ok: bool
    output: str = ""
    error: str | None = None
    hint: str | None = None
    error_type: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def failure(cls, error: str, hint: str, error_type: str, **details: Any) -> ToolResult:
        return cls(ok=False, error=error, hint=hint, error_type=error_type, details=details)


class ToolFailure(Exception):
    """Raised inside a tool to return a failure from deep in a helper; the tool turns it into a ToolResult."""

    def __init__(self, error: str, hint: str, error_type: str) -> None:
        super().__init__(error)
        self.error, self.hint, self.error_type = error, hint, error_type

    def result(self, **details: Any) -> ToolResult:
        return ToolResult.failure(self.error, self.hint, self.error_type, **details)


@dataclass
class ToolContext:
    """What the tools of one run share: the workspace root (resolved), its sandbox and the model.

    ``atomic_writes`` (temp file + rename) is right on a plain directory and wrong on an omxfs mount, where the
    file system makes each write atomic itself and a temporary file would become a delivery or a version.
    ``team`` is set when the workspace is an omxfs mount: its agents, and the shared-workspace tools run as
    ``agent``, with ``run_id`` (the run directory, relative to the workspace) as the provenance of their writes.
    """

    workspace: Path
    sandbox: Sandbox
    model: Model | None = None
    default_timeout: float = DEFAULT_TIMEOUT
    atomic_writes: bool = True
    agent: str | None = None
    run_id: str | None = None
    team: tuple[str, ...] = ()
