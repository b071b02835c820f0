"""``omx --as NAME`` on a real omxfs mount: the workspace tools as plan steps, conflict recovery, provenance.

Every agent is a real ``omx`` process (the installed command, started without ``OMX_AGENT``: ``--as`` must make
the mount see it as that agent); only the model is scripted, from a file (``--model scripted:FILE``).
"""

# ruff: noqa: F811  (the ``mount`` fixture is imported from tests/fuse/conftest.py and requested by name)
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.plan_run.tools.workspace import MAX_RETRIES
from tests.fuse.conftest import Mount, mount  # noqa: F401

OMX = str(Path(sys.executable).parent / "omx")
DRAFT, POLISHED = "draft\n", "polished draft\n"
MERGED = "polished draft\nfigures\n"


def plan(*steps: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    numbered = [{"id": i, "description": t, "tool": t, "inputs": a} for i, (t, a) in enumerate(steps, 1)]
    body = {"version": 1, "goal": "test", "risk_level": "LOW", "workspace_root": ".", "steps": numbered}
    return {"content": json.dumps(body)}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def omx(m: Mount, tmp_path: Path, agent: str, replies: list[Any]) -> subprocess.CompletedProcess[bytes]:
    script = tmp_path / f"{agent}-{len(list(tmp_path.glob('*.json')))}.json"
    script.write_text(json.dumps(replies), encoding="utf-8")
    # no OMX_AGENT: the mount's default is someone else, so only --as can make this process `agent`
    return m.run([OMX, "--as", agent, "--model", f"scripted:{script}", "--yes", "do the task"], timeout=120)


def history(m: Mount) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads((m.root / "collaborative/.versions/report.md/history.json").read_text())
    return entries


def trace(m: Mount, run: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (m.root / run / "trace.jsonl").read_text().splitlines()]


@pytest.fixture
def m(mount: Any, tmp_path: Path) -> Mount:
    """A report at version 2: drafted by the analyst (v1), polished by the writer (v2)."""
    mounted: Mount = mount(agents=["researcher", "analyst", "writer"], default="researcher")
    write = {"filepath": "report.md", "message": "draft", "expected_version": 0, "content": DRAFT}
    assert omx(mounted, tmp_path, "analyst", [plan(("collab_write", write))]).returncode == 0
    polish = {**write, "content": POLISHED, "message": "polish", "expected_version": 1}
    assert omx(mounted, tmp_path, "writer", [plan(("collab_write", polish))]).returncode == 0
    return mounted


def stale_write() -> dict[str, Any]:
    return plan(
        (
            "collab_write",
            {"filepath": "report.md", "content": "draft\nfigures\n", "message": "add figures", "expected_version": 1},
        )
    )


def test_conflict_recovery_reads_merges_and_commits_within_two_retries(m: Mount, tmp_path: Path) -> None:
    replies = [
        stale_write(),
        call("collab_write", filepath="report.md", content=MERGED, message="retry blind", expected_version=1),
        call("collab_read", filepath="report.md"),
        call(
            "collab_write", filepath="report.md", content=MERGED, message="merge polish + figures", expected_version=2
        ),
        "Merged.",
    ]
    done = omx(m, tmp_path, "analyst", replies)
    output = done.stdout.decode()
    assert done.returncode == 0, output + done.stderr.decode()
    assert "conflict: report.md was at version 2 (by writer); merged and committed version 3 in 2" in output
    entries = history(m)
    assert [(e["version"], e["author"], e["message"]) for e in entries][2] == (3, "analyst", "merge polish + figures")
    assert (m.root / "collaborative/current/report.md").read_text() == MERGED  # both the polish and the figures
    # the model saw the conflict result first: current version, content, author and a suggestion to follow
    v3 = entries[2]["provenance"]
    records = trace(m, v3["run"])
    recovery = [e for e in records if e["kind"] == "model" and e["purpose"] == "recovery"]
    assert len(recovery) == 3 and all(e["step_id"] == 1 for e in recovery)
    # from version 3 to the step and to the model request that wrote it
    assert v3["step"] == "1" and v3["request"] == recovery[2]["request_id"]
    calls = [e for e in records if e["kind"] == "step" and e["details"].get("recovery")]
    assert [(e["tool"], e["status"]) for e in calls] == [
        ("collab_write", "failed"),
        ("collab_read", "success"),
        ("collab_write", "success"),
    ]
    assert entries[1]["provenance"]["run"].startswith("agents/writer/runs/")


def test_conflict_recovery_gives_up_after_two_retries(m: Mount, tmp_path: Path) -> None:
    blind = call("collab_write", filepath="report.md", content=MERGED, message="blind", expected_version=1)
    done = omx(m, tmp_path, "analyst", [stale_write(), *([blind] * (MAX_RETRIES + 1)), "gave up"])
    assert done.returncode == 1
    assert "recovery failed after 2 write(s)" in done.stdout.decode() + done.stderr.decode()
    assert len(history(m)) == 2 and (m.root / "collaborative/current/report.md").read_text() == POLISHED


def test_a_handoff_records_the_run_and_step_that_delivered_it(m: Mount, tmp_path: Path) -> None:
    delivery = {"to_agent": "writer", "filename": "data.md", "content": "data", "message": "for the report"}
    replies = [plan(("save_to_my_workspace", {"filename": "data.md", "content": "data"}), ("handoff_file", delivery))]
    done = omx(m, tmp_path, "researcher", replies)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    meta = json.loads((m.root / "handoff/researcher_to_writer/data.md.meta.json").read_text())
    assert meta["from"] == "researcher" and meta["provenance"]["step"] == "2"
    run = meta["provenance"]["run"]
    assert run.startswith("agents/researcher/runs/") and (m.root / run / "plan.json").is_file()
    steps = [e for e in trace(m, run) if e["kind"] == "step"]
    assert [(e["step_id"], e["tool"], e["status"]) for e in steps] == [
        (1, "save_to_my_workspace", "success"),
        (2, "handoff_file", "success"),
    ]
    log = m.run([str(Path(sys.executable).parent / "omxfs"), "log", "collaborative/current/report.md"], check=True)
    assert "by omx run agents/writer/runs/" in log.stdout.decode()


def test_workspace_tools_are_offered_only_on_a_mount(tmp_path: Path) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    script = tmp_path / "plain.json"
    script.write_text(json.dumps([plan(("save_to_my_workspace", {"filename": "a.md", "content": "x"}))]))
    done = subprocess.run(
        [OMX, "--model", f"scripted:{script}", "--yes", "save a"], cwd=work, capture_output=True, timeout=60
    )
    assert done.returncode == 1
    assert "works only on an omxfs mount" in done.stdout.decode() + done.stderr.decode()


def test_a_write_text_step_records_its_run_and_step_too(m: Mount, tmp_path: Path) -> None:
    """omx's own file tool writes from a child started with the step's OMX_RUN/OMX_STEP, so its version says so."""
    note = {"path": "collaborative/current/notes.md", "content": "first notes\n", "mode": "overwrite"}
    done = omx(m, tmp_path, "writer", [plan(("list_dir", {"path": "."}), ("write_text", note))])
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    entries = json.loads((m.root / "collaborative/.versions/notes.md/history.json").read_text())
    assert [(e["version"], e["author"]) for e in entries] == [(1, "writer")]
    provenance = entries[0]["provenance"]
    assert provenance["step"] == "2" and provenance["run"].startswith("agents/writer/runs/")
    assert (m.root / "collaborative/current/notes.md").read_text() == "first notes\n"
