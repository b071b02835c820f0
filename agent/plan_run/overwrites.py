"""What a plan's writes will do to files that exist, shown before a MEDIUM plan is confirmed (issue 17).

Like Codex and Claude Code, which show the edit they are about to make: an overwrite whose text is in the plan
is shown as the unified diff it makes; an append as the lines it adds; a write whose text comes from an earlier
step (not known until that step runs) says which file it replaces and how long that file is now. New files are
not listed: creating one loses nothing.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from agent.plan_run.plan import Plan
from agent.plan_run.tools.inputs import Ref, WriteTextInput

__all__ = ["overwrite_previews"]

MAX_DIFF_LINES = 60


def overwrite_previews(plan: Plan, workspace: Path) -> list[str]:
    """Lines to show: for each write_text step that changes an existing file, what it changes."""
    lines: list[str] = []
    for step in plan.steps:
        inputs = step.inputs
        if not isinstance(inputs, WriteTextInput):
            continue
        target = workspace / inputs.path
        if not target.is_file():
            continue
        try:
            before = target.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            lines.append(f"Step {step.id} writes {inputs.path}, which cannot be read now: {exc.strerror or exc}")
            continue
        if isinstance(inputs.content, Ref):
            verb = "replaces" if inputs.mode == "overwrite" else "appends to"
            lines.append(
                f"Step {step.id} {verb} {inputs.path} ({len(before.splitlines())} lines now) with the output of "
                f"step {inputs.content.step_id}, known only when that step has run"
            )
            continue
        after = inputs.content if inputs.mode == "overwrite" else before + inputs.content
        diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{inputs.path}",
                                         f"b/{inputs.path}", lineterm=""))  # fmt: skip
        if not diff:
            lines.append(f"Step {step.id} writes {inputs.path} with the text it already has: no change")
            continue
        lines.append(f"Step {step.id} changes {inputs.path}:")
        shown = diff[:MAX_DIFF_LINES]
        lines += [f"  {line}" for line in shown]
        if len(diff) > len(shown):
            lines.append(f"  ... {len(diff) - len(shown)} more diff lines")
    return lines
