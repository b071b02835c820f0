"""Risk is computed from the steps (seed 004 §4.2); the model's label can raise it, never lower it. Plus the
confirmation policy that acts on it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agent.plan_run.confirm import Decision, Declined, Refused, confirm, decide, render_plan
from agent.plan_run.plan import Plan, RiskLevel
from agent.plan_run.risk import MANY_WRITES, assess


def make_plan(*steps: tuple[str, dict[str, Any]], label: str = "LOW") -> Plan:
    numbered = [{"id": i, "description": f"step {i}", "tool": t, "inputs": inp} for i, (t, inp) in enumerate(steps, 1)]
    return Plan.model_validate({"version": 1, "goal": "g", "risk_level": label, "steps": numbered})


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "notes.txt").write_text("notes\n", encoding="utf-8")
    return workspace


def test_reads_new_files_listings_and_model_calls_are_LOW(ws: Path) -> None:
    plan = make_plan(
        ("read_text", {"path": "data/notes.txt"}),
        ("list_dir", {"path": "data", "pattern": "*.txt"}),
        ("llm", {"prompt": "p", "input": {"ref": "step:1.output"}}),
        ("write_text", {"path": "out/new.md", "content": {"ref": "step:3.output"}}),
        ("shell", {"cmd": "wc -l data/notes.txt"}),
    )
    result = assess(plan, ws)
    assert result.level is RiskLevel.LOW and result.findings == ()


def test_overwriting_or_appending_to_an_existing_file_is_MEDIUM(ws: Path) -> None:
    for mode, verb in (("overwrite", "overwrites"), ("append", "appends to")):
        result = assess(make_plan(("write_text", {"path": "data/notes.txt", "content": "x", "mode": mode})), ws)
        assert result.level is RiskLevel.MEDIUM
        assert result.reasons == [f"step 1: {verb} the existing file data/notes.txt"]


def test_rewriting_a_file_the_plan_itself_created_is_not_an_overwrite(ws: Path) -> None:
    plan = make_plan(
        ("write_text", {"path": "out/a.md", "content": "1"}),
        ("write_text", {"path": "out/a.md", "content": "2", "mode": "append"}),
    )
    assert assess(plan, ws).level is RiskLevel.LOW


def test_many_writes_are_MEDIUM(ws: Path) -> None:
    writes = [("write_text", {"path": f"out/{i}.md", "content": "x"}) for i in range(MANY_WRITES + 1)]
    result = assess(make_plan(*writes), ws)
    assert result.level is RiskLevel.MEDIUM and result.reasons == [f"writes {MANY_WRITES + 1} files"]


def test_running_code_is_MEDIUM(ws: Path) -> None:
    assert assess(make_plan(("python", {"code": "print(1)"})), ws).reasons == ["step 1: runs Python code"]
    shell = assess(make_plan(("shell", {"cmd": "python3 -c 'print(1)'"})), ws)
    assert shell.level is RiskLevel.MEDIUM and "arbitrary code" in shell.reasons[0]


def test_shell_and_python_without_a_sandbox_are_at_least_MEDIUM(ws: Path) -> None:
    result = assess(make_plan(("shell", {"cmd": "ls"})), ws, sandboxed=False)
    assert result.level is RiskLevel.MEDIUM and "without an OS sandbox" in result.reasons[0]


@pytest.mark.parametrize(
    ("tool", "inputs", "reason"),
    [
        ("shell", {"cmd": "rm -rf ."}, "'rm' is forbidden and not in the allow-list"),
        ("shell", {"cmd": "ls; rm -rf ."}, "shell operator ';'"),
        ("shell", {"cmd": "curl http://example.com"}, "'curl' is forbidden"),
        ("shell", {"cmd": "cat /etc/passwd"}, "absolute"),
        ("read_text", {"path": "/etc/passwd"}, "absolute"),
        ("read_text", {"path": "../outside.txt"}, "'..'"),
        ("write_text", {"path": "../../etc/cron.d/x", "content": "x"}, "'..'"),
        ("list_dir", {"path": "/"}, "absolute"),
        ("python", {"code": "import shutil; shutil.rmtree('data')"}, "deletes or moves files"),
        ("python", {"code": "import socket"}, "uses the network"),
    ],
)
def test_destructive_commands_and_paths_outside_are_HIGH(
    ws: Path, tool: str, inputs: dict[str, Any], reason: str
) -> None:
    result = assess(make_plan((tool, inputs)), ws)
    assert result.level is RiskLevel.HIGH
    assert any(reason in r for r in result.reasons), result.reasons


def test_a_symlink_out_of_the_workspace_is_HIGH(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", ws / "link.txt")
    os.symlink(tmp_path, ws / "up")
    assert "through a symlink" in assess(make_plan(("read_text", {"path": "link.txt"})), ws).reasons[0]
    write = assess(make_plan(("write_text", {"path": "up/new.txt", "content": "x"})), ws)
    assert write.level is RiskLevel.HIGH


def test_the_model_label_can_raise_the_level(ws: Path) -> None:
    result = assess(make_plan(("list_dir", {}), label="HIGH"), ws)
    assert (result.level, result.computed, result.model_label) == (RiskLevel.HIGH, RiskLevel.LOW, RiskLevel.HIGH)
    assert result.reasons == ["the model rated the plan HIGH"]


def test_the_model_label_cannot_lower_the_level(ws: Path) -> None:
    result = assess(make_plan(("shell", {"cmd": "rm -rf ."}), label="LOW"), ws)
    assert result.level is RiskLevel.HIGH and result.model_label is RiskLevel.LOW


def test_every_finding_is_kept_and_the_deciding_ones_come_first_to_read(ws: Path) -> None:
    plan = make_plan(("write_text", {"path": "data/notes.txt", "content": "x"}), ("shell", {"cmd": "sudo ls"}))
    result = assess(plan, ws)
    assert result.level is RiskLevel.HIGH
    assert len(result.findings) == 2 and result.reasons == [str(result.findings[1])]


# -- the confirmation policy -----------------------------------------------------------------------------------


def test_decisions_per_level() -> None:
    assert decide(RiskLevel.LOW, yes=True) is Decision.RUN
    assert decide(RiskLevel.LOW, yes=False) is Decision.ASK
    assert decide(RiskLevel.MEDIUM, yes=True) is Decision.ASK
    assert decide(RiskLevel.MEDIUM, yes=False) is Decision.ASK
    assert decide(RiskLevel.HIGH, yes=True) is Decision.REFUSE


def test_medium_asks_even_with_yes_and_says_why(ws: Path) -> None:
    questions: list[str] = []
    medium = assess(make_plan(("python", {"code": "print(1)"})), ws)

    def ask(question: str) -> bool:
        questions.append(question)
        return True

    assert confirm(medium, yes=True, ask=ask) == "confirmed at the prompt"
    assert questions == ["Run this MEDIUM risk plan? (--yes does not answer for MEDIUM risk plans)"]
    with pytest.raises(Declined, match="not confirmed"):
        confirm(medium, yes=True, ask=lambda q: False)


def test_high_is_refused_without_asking(ws: Path) -> None:
    high = assess(make_plan(("shell", {"cmd": "rm -rf ."})), ws)

    def ask(question: str) -> bool:
        raise AssertionError("a HIGH risk plan must not be offered")

    with pytest.raises(Refused) as refused:
        confirm(high, yes=True, ask=ask)
    assert "not in the allow-list" in refused.value.reasons[0]


def test_the_rendered_plan_shows_risk_reasons_steps_and_references(ws: Path) -> None:
    plan = make_plan(
        ("read_text", {"path": "data/notes.txt"}),
        ("write_text", {"path": "data/notes.txt", "content": {"ref": "step:1.output"}}),
    )
    text = render_plan(plan, assess(plan, ws))
    assert "Risk: MEDIUM (the model said LOW)" in text
    assert "  - step 2: overwrites the existing file data/notes.txt" in text
    assert "  2. [write_text] step 2" in text and "content: <output of step 1>" in text
