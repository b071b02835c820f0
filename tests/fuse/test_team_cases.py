"""Seed 001 cases J-1…J-4 and K-1…K-3 through a real mount, one real process per agent.

Each agent is one ``python -m agent.workspace_tools.call`` process started with its ``OMX_AGENT`` (the way ``omx``
runs the tools), kept for the whole test and sent tool calls as JSON lines: the mount, not the test, decides who
each agent is, and the tools reach the workspace only by file operations and xattrs.
"""

# ruff: noqa: F811  (the ``mount`` fixture is imported from tests/fuse/conftest.py and requested by name)
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from agent.workspace_tools import get_tool_definitions
from tests.fuse.conftest import Mount, clean_env, mount  # noqa: F401

TEAM = ("researcher", "analyst", "writer")


class AgentProcess:
    """One agent: a tool-call process on the mount, as the mount sees it (its OMX_AGENT)."""

    def __init__(self, m: Mount, agent: str) -> None:
        self.agent = agent
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agent.workspace_tools.call", str(m.root), agent],
            cwd=m.root,
            env=clean_env(agent),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def send(self, name: str, arguments: Any = None) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"name": name, "arguments": arguments}) + "\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            stderr = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"{self.agent}'s process ended: {stderr}")
        result: dict[str, Any] = json.loads(line)
        return result

    def call(self, name: str, arguments: Any = None) -> dict[str, Any]:
        self.send(name, arguments)
        return self.receive()

    def ok(self, name: str, arguments: Any = None) -> dict[str, Any]:
        result = self.call(name, arguments)
        assert result["success"] is True, result
        return result

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        assert self.proc.wait(timeout=10) == 0, self.proc.stderr.read() if self.proc.stderr else ""
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()


@pytest.fixture
def team(mount: Any) -> Iterator[tuple[Mount, dict[str, AgentProcess]]]:
    m = mount(agents=[*TEAM, "alice", "bob", "charlie"], default="writer")
    agents = {name: AgentProcess(m, name) for name in (*TEAM, "alice", "bob", "charlie")}
    try:
        yield m, agents
    finally:
        for agent in agents.values():
            agent.close()


# -- module J: the dispatcher -----------------------------------------------------------------------------------


def test_J_1_dispatch_routes_to_save_on_the_mount(team: tuple[Mount, dict[str, AgentProcess]]) -> None:
    m, agents = team
    result = agents["researcher"].call("save_to_my_workspace", {"filename": "test.md", "content": "hello"})
    assert result["success"] is True and result["path"] == "agents/researcher/test.md"
    assert (m.root / "agents/researcher/test.md").read_text() == "hello"
    assert m.store.joinpath("agents/researcher/test.md").read_text() == "hello"


def test_J_2_unknown_tool_name(team: tuple[Mount, dict[str, AgentProcess]]) -> None:
    result = team[1]["analyst"].call("nonexistent_tool", {})
    assert result["success"] is False
    assert "unknown tool" in result["error"] and "save_to_my_workspace" in result["available_tools"]


def test_J_3_missing_arguments_do_not_crash(team: tuple[Mount, dict[str, AgentProcess]]) -> None:
    m, agents = team
    writer = agents["writer"]
    result = writer.call("save_to_my_workspace", {})
    assert result["success"] is False and result["error_type"] == "invalid_arguments"
    assert "filename: missing" in result["error"] and "content: missing" in result["error"]
    for arguments in (None, "", "not json", [1], {"filepath": 3}):
        assert writer.call("collab_write", arguments)["success"] is False
    assert writer.ok("list_workspace_files")["files"] == []  # the process is alive and still answers
    assert not any((m.root / "agents/writer").iterdir())


def test_J_4_tool_definitions_are_well_formed() -> None:
    definitions = get_tool_definitions()
    names = [d["name"] for d in definitions]
    assert len(names) == len(set(names)) == 22
    for d in definitions:
        assert set(d) == {"name", "description", "parameters"} and d["description"]
        assert d["parameters"]["type"] == "object" and isinstance(d["parameters"]["properties"], dict)
        assert set(d["parameters"].get("required", [])) <= set(d["parameters"]["properties"])


# -- module K: the three agents together ------------------------------------------------------------------------


def test_K_1_research_analysis_writing_workflow(team: tuple[Mount, dict[str, AgentProcess]]) -> None:
    m, agents = team
    researcher, analyst, writer = (agents[name] for name in TEAM)
    researcher.ok("save_to_my_workspace", {"filename": "data.md", "content": "research data..."})
    researcher.ok(
        "handoff_file",
        {"to_agent": "analyst", "filename": "data.md", "content": "research data...", "message": "please analyse"},
    )
    inbox = analyst.ok("check_my_handoffs")
    assert inbox["count"] == 1 and inbox["handoffs"][0]["from"] == "researcher"
    assert analyst.ok("read_handoff", {"from_agent": "researcher", "filename": "data.md"})["content"] == (
        "research data..."
    )
    created = analyst.ok(
        "collab_write", {"filepath": "report.md", "content": "analysis...", "message": "draft", "expected_version": -1}
    )
    assert created["version"] == 1
    read = writer.ok("collab_read", {"filepath": "report.md"})
    assert (read["version"], read["content"], read["author"]) == (1, "analysis...", "analyst")
    polished = "polished report..."
    writer.ok(
        "collab_write", {"filepath": "report.md", "content": polished, "message": "polish", "expected_version": 1}
    )
    conflict = analyst.call(
        "collab_write", {"filepath": "report.md", "content": "more data...", "message": "add", "expected_version": 1}
    )
    assert conflict["success"] is False and conflict["is_conflict"] is True
    info = conflict["conflict"]
    assert (info["current_version"], info["current_content"], info["current_author"]) == (2, polished, "writer")
    assert info["your_content"] == "more data..." and conflict["suggestion"]
    assert (m.root / "collaborative/current/report.md").read_text() == polished  # refused: nothing changed
    latest = analyst.ok("collab_read", {"filepath": "report.md"})
    merged = latest["content"] + "\nmore data..."
    analyst.ok(
        "collab_write",
        {"filepath": "report.md", "content": merged, "message": "merge", "expected_version": latest["version"]},
    )
    history = writer.ok("collab_history", {"filepath": "report.md"})
    assert [(v["version"], v["author"]) for v in history["history"]] == [(1, "analyst"), (2, "writer"), (3, "analyst")]
    final = (m.root / "collaborative/current/report.md").read_text()
    assert polished in final and "more data..." in final
    kept = json.loads((m.root / "collaborative/.conflicts/analyst/report.md.json").read_text())
    assert kept["current_version"] == 2  # nothing is lost: the rejected write is kept


def test_K_2_realtime_kanban_and_private_drafts(team: tuple[Mount, dict[str, AgentProcess]]) -> None:
    m, agents = team
    alice, bob, charlie = agents["alice"], agents["bob"], agents["charlie"]
    schema = {"title": "lww_register", "tasks": "or_set", "done_count": "pn_counter"}
    alice.ok("realtime_create_document", {"doc_id": "kanban", "schema": schema})
    alice.ok("realtime_set_field", {"doc_id": "kanban", "field_name": "title", "value": "Sprint 1"})
    for agent in (alice, bob, charlie):
        agent.ok("save_to_my_workspace", {"filename": "draft.md", "content": f"{agent.agent}'s draft"})
    for agent in (alice, bob, charlie):  # at the same time: all three calls are in flight before any answer is read
        agent.send("realtime_set_add", {"doc_id": "kanban", "field_name": "tasks", "element": f"task of {agent.agent}"})
    assert all(agent.receive()["success"] for agent in (alice, bob, charlie))
    alice.send("realtime_counter_increment", {"doc_id": "kanban", "field_name": "done_count"})
    bob.send("realtime_counter_increment", {"doc_id": "kanban", "field_name": "done_count"})
    assert alice.receive()["success"] and bob.receive()["success"]
    snapshot = charlie.ok("realtime_get_document_snapshot", {"doc_id": "kanban"})["snapshot"]
    assert snapshot["fields"]["title"] == "Sprint 1"
    assert sorted(snapshot["fields"]["tasks"]) == ["task of alice", "task of bob", "task of charlie"]
    assert snapshot["fields"]["done_count"] == 2
    for name in ("alice", "bob", "charlie"):
        assert (m.root / "agents" / name / "draft.md").read_text() == f"{name}'s draft"


def test_K_3_writer_reads_other_zones_as_reference(team: tuple[Mount, dict[str, AgentProcess]]) -> None:
    m, agents = team
    researcher, analyst, writer = (agents[name] for name in TEAM)
    researcher.ok("save_to_my_workspace", {"filename": "notes.md", "content": "notes of the research"})
    analyst.ok("save_to_my_workspace", {"filename": "model.md", "content": "the model"})
    assert writer.ok("list_workspace_files", {"agent_id": "researcher"})["files"] == ["notes.md"]
    notes = writer.ok("read_from_workspace", {"agent_id": "researcher", "filename": "notes.md"})["content"]
    assert writer.ok("list_workspace_files", {"agent_id": "analyst"})["files"] == ["model.md"]
    model = writer.ok("read_from_workspace", {"agent_id": "analyst", "filename": "model.md"})["content"]
    writer.ok("save_to_my_workspace", {"filename": "final_report.md", "content": f"{notes}\n{model}"})
    refused = writer.call("save_to_my_workspace", {"filename": "../researcher/notes.md", "content": "x"})
    assert refused["success"] is False
    assert (m.root / "agents/researcher/notes.md").read_text() == "notes of the research"
    assert (m.root / "agents/analyst/model.md").read_text() == "the model"
    assert (m.root / "agents/writer/final_report.md").read_text() == "notes of the research\nthe model"
