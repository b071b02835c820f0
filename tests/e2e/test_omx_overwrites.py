"""Approval like Codex and Claude Code (issue 17): before a MEDIUM plan runs, an overwrite shows what it changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from agent.model.llm import ScriptedModel
from tests.e2e.helpers import PLAN_A, TASK_A, omx

OVERWRITE = {
    "version": 1,
    "goal": "Update the title",
    "risk_level": "MEDIUM",
    "workspace_root": ".",
    "steps": [
        {
            "id": 1,
            "description": "Rewrite the notes",
            "tool": "write_text",
            "inputs": {"path": "data/notes.txt", "content": "omx plans first.\nEvery run leaves a trace.\n"},
        }
    ],
    "success_criteria": ["data/notes.txt is rewritten"],
}


def test_an_overwrite_shows_its_diff_before_the_question(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    before = (ws / "data" / "notes.txt").read_text(encoding="utf-8")
    script(json.dumps(OVERWRITE))
    result = omx("Update the title", input="n\n")
    assert result.exit_code == 4  # declined: nothing ran
    assert (ws / "data" / "notes.txt").read_text(encoding="utf-8") == before
    out = result.output
    shown = out.index("Changes to existing files:")
    assert shown < out.index("Run this MEDIUM risk plan?")
    lines = out[shown:].splitlines()
    assert "Step 1 changes data/notes.txt:" in lines
    assert "  --- a/data/notes.txt" in lines and "  +++ b/data/notes.txt" in lines
    assert "  -omx plans before it acts." in lines and "  +omx plans first." in lines
    assert "  -Every tool runs in a sandbox." in lines
    assert "   Every run leaves a trace." in lines  # context: kept as it is


def test_an_overwrite_from_a_step_output_names_the_file_it_replaces(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    (ws / "out").mkdir()
    (ws / "out" / "summary.md").write_text("- an older summary\n- of two lines\n", encoding="utf-8")
    script(json.dumps(PLAN_A))
    result = omx(TASK_A, input="n\n")
    assert result.exit_code == 4
    assert (
        "Step 3 replaces out/summary.md (2 lines now) with the output of step 2, known only when that step has run"
        in result.output
    )


def test_a_medium_plan_that_only_creates_files_shows_no_changes(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    new_file = json.loads(json.dumps(OVERWRITE))
    new_file["steps"][0]["inputs"]["path"] = "data/new.txt"  # the model's MEDIUM label keeps it MEDIUM
    script(json.dumps(new_file))
    result = omx("Write a new file", input="n\n")
    assert "Run this MEDIUM risk plan?" in result.output
    assert "Changes to existing files" not in result.output
