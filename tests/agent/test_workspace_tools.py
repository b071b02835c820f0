"""Seed 001 FR-5: the shared-workspace tools, driven as a model drives them, through ``dispatch_tool_call``.

Every call goes through ``call``, which also checks what any tool result must be: a JSON-serialisable dict with
a boolean ``success``, since it goes back to the model as is.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from agent.workspace_tools import (
    TOOLS_BY_NAME,
    StoreBackend,
    WorkspaceTools,
    anthropic_tool_definitions,
    get_tool_definitions,
    openai_tool_definitions,
    system_prompt,
)
from agent.workspace_tools.models import SaveToMyWorkspace
from omxfs.errors import AlreadyExists, InvalidInput, NameTooLong, NotFound, OmxError, StoreCorrupt, ZoneDenied
from omxfs.store import Workspace

Team = Callable[..., dict[str, WorkspaceTools]]
NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # what both OpenAI and Anthropic accept as a tool name


def call(tools: WorkspaceTools, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
    result = tools.dispatch_tool_call(name, arguments)
    assert isinstance(result, dict) and isinstance(result["success"], bool)
    assert json.loads(json.dumps(result)) == result
    if not result["success"]:
        assert result["error"] and isinstance(result["error"], str)
    return result


def ok(tools: WorkspaceTools, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
    result = call(tools, name, arguments)
    assert result["success"], result
    return result


@pytest.fixture
def team(tmp_path: Path) -> Team:
    """One ``WorkspaceTools`` per agent, all on one workspace in ``tmp_path``."""

    def make(*agents: str) -> dict[str, WorkspaceTools]:
        ws = Workspace.init(tmp_path / "ws", agents=list(agents))
        return {agent: WorkspaceTools(StoreBackend(ws, agent)) for agent in agents}

    return make


@pytest.fixture
def abc(team: Team) -> dict[str, WorkspaceTools]:
    return team("alice", "bob", "charlie")


def root_of(tools: WorkspaceTools) -> Path:
    backend = tools.backend
    assert isinstance(backend, StoreBackend)
    return backend.ws.root


def zone_snapshot(root: Path, agent: str) -> dict[str, bytes]:
    zone = root / "agents" / agent
    return {str(p.relative_to(zone)): p.read_bytes() for p in sorted(zone.rglob("*")) if p.is_file()}


# -- module J: the dispatcher --------------------------------------------------------------------------------


def test_J_1_dispatch_routes_save(abc: dict[str, WorkspaceTools]) -> None:
    alice = abc["alice"]
    with mock.patch.object(alice, "tool_save_to_my_workspace", wraps=alice.tool_save_to_my_workspace) as handler:
        result = call(alice, "save_to_my_workspace", {"filename": "test.md", "content": "hello"})
    assert result["success"] is True
    (args,), _ = handler.call_args
    assert isinstance(args, SaveToMyWorkspace) and args.filename == "test.md"
    assert (root_of(alice) / "agents/alice/test.md").read_text() == "hello"


def test_J_1_dispatch_takes_json_string_arguments(abc: dict[str, WorkspaceTools]) -> None:
    ok(abc["alice"], "save_to_my_workspace", '{"filename": "test.md", "content": "héllo"}')
    assert ok(abc["bob"], "read_from_workspace", '{"agent_id": "alice", "filename": "test.md"}')["content"] == "héllo"
    assert ok(abc["bob"], "check_my_handoffs", "")["count"] == 0  # some APIs send "" for no arguments


def test_J_2_unknown_tool(abc: dict[str, WorkspaceTools]) -> None:
    result = call(abc["alice"], "nonexistent_tool", {})
    assert result["success"] is False
    assert "unknown tool" in result["error"]
    assert result["available_tools"] == list(TOOLS_BY_NAME)
    assert "collab_read" in call(abc["alice"], "collab_reed", {})["hint"]  # a near miss is named


def test_J_3_missing_arguments_do_not_crash(abc: dict[str, WorkspaceTools]) -> None:
    result = call(abc["alice"], "save_to_my_workspace", {})
    assert result["success"] is False
    assert result["error_type"] == "invalid_arguments"
    assert "filename" in result["error"] and "content" in result["error"]
    assert '"filename" (string, required)' in result["hint"]
    assert zone_snapshot(root_of(abc["alice"]), "alice") == {}


@pytest.mark.parametrize(
    "arguments",
    [
        "{not json",
        "[1, 2]",
        "42",
        {"filename": 5, "content": "x"},
        {"filename": "a.md", "content": None},
        {"filename": "a.md", "content": "x", "agent_id": "bob"},
    ],
)
def test_J_3_bad_arguments_get_a_hint(abc: dict[str, WorkspaceTools], arguments: dict[str, Any] | str) -> None:
    result = call(abc["alice"], "save_to_my_workspace", arguments)
    assert result["success"] is False
    assert result["error_type"] == "invalid_arguments"
    assert result["hint"].startswith("save_to_my_workspace takes")
    assert zone_snapshot(root_of(abc["alice"]), "alice") == {}


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("save_to_my_workspace", {"filename": "dir/", "content": "x"}),
        ("handoff_file", {"to_agent": "bob", "filename": "dir/", "content": "x", "message": "m"}),
        ("collab_write", {"filepath": "dir/", "content": "x", "message": "m", "expected_version": 0}),
    ],
)
def test_J_3_a_filename_ending_in_a_slash_is_refused(
    abc: dict[str, WorkspaceTools], name: str, arguments: dict[str, Any]
) -> None:
    """``save_to_my_workspace`` of "dir/" made a regular file ``dir``: the slash was dropped without a word."""
    result = call(abc["alice"], name, arguments)
    assert result["error_type"] == "invalid_arguments", result
    assert "'dir/' ends in '/': give a file's name, not a directory's" in result["error"], result
    root = root_of(abc["alice"])
    assert not [p for p in root.rglob("dir") if p.is_file()]


def test_J_3_booleans_and_lone_surrogates_are_refused(abc: dict[str, WorkspaceTools]) -> None:
    alice = abc["alice"]
    ok(alice, "collab_write", {"filepath": "p.md", "content": "v1", "message": "m", "expected_version": 0})
    as_bool = call(
        alice, "collab_write", {"filepath": "p.md", "content": "v2", "message": "m", "expected_version": True}
    )
    assert as_bool["error_type"] == "invalid_arguments" and "expected_version" in as_bool["error"]
    as_text = ok(alice, "collab_write", {"filepath": "p.md", "content": "v2", "message": "m", "expected_version": "1"})
    assert as_text["version"] == 2
    surrogate = call(alice, "save_to_my_workspace", '{"filename": "a.md", "content": "\\ud800"}')
    assert surrogate["error_type"] == "invalid_arguments" and "content" in surrogate["error"]
    assert zone_snapshot(root_of(alice), "alice") == {}


@pytest.mark.parametrize("name", list(TOOLS_BY_NAME))
def test_J_3_every_tool_survives_empty_arguments(abc: dict[str, WorkspaceTools], name: str) -> None:
    result = call(abc["alice"], name, {})
    required = TOOLS_BY_NAME[name].model_json_schema().get("required", [])
    assert result["success"] is not bool(required)


def test_J_4_tool_definitions_are_well_formed() -> None:
    definitions = get_tool_definitions()
    assert len(definitions) == 22
    names = [d["name"] for d in definitions]
    assert len(set(names)) == len(names)
    for definition in definitions:
        assert isinstance(definition, dict)
        assert {"name", "description", "parameters"} <= set(definition)
        parameters = definition["parameters"]
        assert parameters["type"] == "object"
        assert isinstance(parameters["properties"], dict)
        for required in parameters.get("required", []):
            assert required in parameters["properties"]
    assert set(names) == set(WorkspaceTools.tool_names())


def test_J_4_definitions_are_generated_from_the_input_models() -> None:
    for definition in get_tool_definitions():
        model = TOOLS_BY_NAME[definition["name"]]
        assert set(definition["parameters"]["properties"]) == {f.alias or n for n, f in model.model_fields.items()}
        assert set(definition["parameters"].get("required", [])) == set(model.model_json_schema().get("required", []))
        assert definition["description"].split()[:3] == (model.__doc__ or "").split()[:3]
    copy = get_tool_definitions()
    copy[0]["parameters"]["properties"].clear()
    assert get_tool_definitions()[0]["parameters"]["properties"]  # callers get copies


def _schema_nodes(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every subschema (not the property names, not literal values)."""
    yield schema
    for name in ("items", "additionalProperties"):
        if isinstance(schema.get(name), dict):
            yield from _schema_nodes(schema[name])
    for sub in schema.get("properties", {}).values():
        yield from _schema_nodes(sub)
    for branch in schema.get("anyOf", []):
        yield from _schema_nodes(branch)


# the JSON Schema keywords the generated schemas may use: ones every provider documents
KEYWORDS = {"type", "properties", "required", "additionalProperties", "description", "enum", "minimum", "default"}


def _check_plain_object_schema(schema: dict[str, Any]) -> None:
    json.dumps(schema)
    assert schema["type"] == "object" and isinstance(schema["properties"], dict)
    for node in _schema_nodes(schema):
        assert set(node) <= KEYWORDS, node
    for name, prop in schema["properties"].items():
        assert prop.get("description"), f"{name} has no description"
        if prop.get("type") == "object" and "properties" in prop:
            _check_plain_object_schema(prop)


def test_every_schema_is_an_openai_function_and_an_anthropic_tool() -> None:
    openai = openai_tool_definitions()
    anthropic = anthropic_tool_definitions()
    assert len(openai) == len(anthropic) == len(TOOLS_BY_NAME)
    for tool in openai:
        assert set(tool) == {"type", "function"} and tool["type"] == "function"
        function = tool["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert NAME.fullmatch(function["name"]) and function["description"].strip()
        _check_plain_object_schema(function["parameters"])
    for tool in anthropic:
        assert set(tool) == {"name", "description", "input_schema"}
        assert NAME.fullmatch(tool["name"]) and tool["description"].strip()
        _check_plain_object_schema(tool["input_schema"])
    assert [t["function"]["parameters"] for t in openai] == [t["input_schema"] for t in anthropic]


def test_optional_arguments_are_plain_and_not_required() -> None:
    definitions = {d["name"]: d["parameters"] for d in get_tool_definitions()}
    assert definitions["list_workspace_files"]["properties"]["agent_id"]["type"] == "string"
    assert "required" not in definitions["list_workspace_files"]
    args = definitions["realtime_edit_text"]["properties"]["args"]
    assert set(args["properties"]) == {"position", "from", "to", "text"}
    assert definitions["realtime_counter_increment"]["properties"]["amount"]["default"] == 1


# -- module A: private zones ---------------------------------------------------------------------------------


def test_A_1_tool_save_to_my_workspace(abc: dict[str, WorkspaceTools]) -> None:
    result = ok(abc["alice"], "save_to_my_workspace", {"filename": "notes.md", "content": "Hello World"})
    assert result["path"] == "agents/alice/notes.md"
    assert (root_of(abc["alice"]) / "agents/alice/notes.md").read_text() == "Hello World"


def test_A_2_to_A_4_tool_overwrite_and_read_any_zone(abc: dict[str, WorkspaceTools]) -> None:
    alice, bob = abc["alice"], abc["bob"]
    ok(alice, "save_to_my_workspace", {"filename": "notes.md", "content": "旧内容"})
    ok(alice, "save_to_my_workspace", {"filename": "notes.md", "content": "新内容"})
    assert ok(alice, "read_from_workspace", {"agent_id": "alice", "filename": "notes.md"})["content"] == "新内容"
    ok(bob, "save_to_my_workspace", {"filename": "report.md", "content": "Bob的报告"})
    assert ok(alice, "read_from_workspace", {"agent_id": "bob", "filename": "report.md"})["content"] == "Bob的报告"


class ImpersonatingBackend(StoreBackend):
    """Seed A-5 literally: the write underneath the tool names bob's zone while acting as alice."""

    def write_private(self, filename: str, content: str) -> str:
        self.ws.private.write(self.agent, "bob", filename, content.encode())
        return f"agents/bob/{filename}"


def test_A_5_tool_write_into_another_zone_is_refused(abc: dict[str, WorkspaceTools]) -> None:
    alice, bob = abc["alice"], abc["bob"]
    ok(bob, "save_to_my_workspace", {"filename": "report.md", "content": "bob's"})
    root = root_of(bob)
    before = zone_snapshot(root, "bob")
    attempts = [
        {"filename": "report.md", "content": "alice was here", "agent_id": "bob"},
        {"filename": "../bob/report.md", "content": "alice was here"},
        {"filename": "/agents/bob/report.md", "content": "alice was here"},
        {"filename": f"{root}/agents/bob/report.md", "content": "alice was here"},
    ]
    for arguments in attempts:
        result = call(alice, "save_to_my_workspace", arguments)
        assert result["success"] is False and result["hint"], arguments
    assert isinstance(alice.backend, StoreBackend)
    impostor = WorkspaceTools(ImpersonatingBackend(alice.backend.ws, "alice"))
    result = call(impostor, "save_to_my_workspace", {"filename": "report.md", "content": "alice was here"})
    assert result["success"] is False
    assert result["error_type"] == "zone_denied"
    assert "handoff_file" in result["hint"]
    assert zone_snapshot(root, "bob") == before


def test_A_6_to_A_8_tool_missing_file_and_listings(abc: dict[str, WorkspaceTools]) -> None:
    alice = abc["alice"]
    missing = call(alice, "read_from_workspace", {"agent_id": "alice", "filename": "nonexistent.md"})
    assert missing["success"] is False and missing["error_type"] == "not_found"
    assert "list_workspace_files" in missing["hint"]
    for name in ("a.md", "b.txt", "c.json"):
        ok(alice, "save_to_my_workspace", {"filename": name, "content": name})
    assert sorted(ok(alice, "list_workspace_files", {"agent_id": "alice"})["files"]) == ["a.md", "b.txt", "c.json"]
    assert ok(alice, "list_workspace_files", {})["files"] == ["a.md", "b.txt", "c.json"]  # default: yourself
    assert ok(alice, "list_workspace_files", {"agent_id": "bob"})["files"] == []
    nobody = call(alice, "list_workspace_files", {"agent_id": "nobody"})
    assert nobody["success"] is False and nobody["error_type"] == "not_found"


# -- module B: handoffs --------------------------------------------------------------------------------------


def test_B_1_tool_handoff_file(abc: dict[str, WorkspaceTools]) -> None:
    arguments = {"to_agent": "bob", "filename": "data.csv", "content": "1,2,3", "message": "请分析这份数据"}
    result = ok(abc["alice"], "handoff_file", arguments)
    assert result["path"] == "handoff/alice_to_bob/data.csv"
    box = root_of(abc["alice"]) / "handoff/alice_to_bob"
    assert (box / "data.csv").read_text() == "1,2,3"
    meta = json.loads((box / "data.csv.meta.json").read_text("utf-8"))
    assert {"from", "to", "timestamp", "message"} <= set(meta)
    assert (meta["from"], meta["to"], meta["message"]) == ("alice", "bob", "请分析这份数据")


def test_B_2_tool_check_my_handoffs(abc: dict[str, WorkspaceTools]) -> None:
    deliver = {"to_agent": "bob", "filename": "data.csv", "content": "1,2,3", "message": "请分析"}
    ok(abc["alice"], "handoff_file", deliver)
    deliver = {"to_agent": "bob", "filename": "config.json", "content": "{}", "message": "新配置"}
    ok(abc["charlie"], "handoff_file", deliver)
    result = ok(abc["bob"], "check_my_handoffs", {})
    assert result["count"] == 2
    seen = {(h["from"], h["filename"], h["message"]) for h in result["handoffs"]}
    assert seen == {("alice", "data.csv", "请分析"), ("charlie", "config.json", "新配置")}
    assert all(h["timestamp"] for h in result["handoffs"])


def test_B_3_to_B_5_tool_read_and_redeliver(abc: dict[str, WorkspaceTools]) -> None:
    alice, bob = abc["alice"], abc["bob"]
    assert ok(bob, "check_my_handoffs", {}) == {"success": True, "count": 0, "handoffs": []}
    ok(alice, "handoff_file", {"to_agent": "bob", "filename": "data.csv", "content": "旧数据", "message": "m"})
    ok(alice, "handoff_file", {"to_agent": "bob", "filename": "data.csv", "content": "新数据", "message": "更新了"})
    read = ok(bob, "read_handoff", {"from_agent": "alice", "filename": "data.csv"})
    assert (read["content"], read["from"], read["message"]) == ("新数据", "alice", "更新了")
    missing = call(bob, "read_handoff", {"from_agent": "charlie", "filename": "data.csv"})
    assert missing["error_type"] == "not_found" and "check_my_handoffs" in missing["hint"]
    to_self = call(alice, "handoff_file", {"to_agent": "alice", "filename": "x", "content": "", "message": ""})
    assert to_self["error_type"] == "invalid_input"


# -- module C: collaborative files ---------------------------------------------------------------------------


def test_C_1_C_2_tool_create_and_edit_in_turn(abc: dict[str, WorkspaceTools]) -> None:
    alice, bob = abc["alice"], abc["bob"]
    write = {"filepath": "plan.md", "content": "初稿", "message": "创建文档", "expected_version": -1}
    assert ok(alice, "collab_write", write)["version"] == 1
    read = ok(bob, "collab_read", {"filepath": "plan.md"})
    assert (read["version"], read["content"], read["author"]) == (1, "初稿", "alice")
    write = {"filepath": "plan.md", "content": "修改稿", "message": "补充内容", "expected_version": 1}
    assert ok(bob, "collab_write", write)["version"] == 2
    assert (root_of(bob) / "collaborative/current/plan.md").read_text("utf-8") == "修改稿"


def test_C_3_tool_conflict_result(abc: dict[str, WorkspaceTools]) -> None:
    alice, bob = abc["alice"], abc["bob"]
    ok(alice, "collab_write", {"filepath": "plan.md", "content": "初稿", "message": "v1", "expected_version": 0})
    assert ok(alice, "collab_read", {"filepath": "plan.md"})["version"] == 1
    assert ok(bob, "collab_read", {"filepath": "plan.md"})["version"] == 1
    mine = {"filepath": "plan.md", "content": "Alice的修改", "message": "a", "expected_version": 1}
    assert ok(alice, "collab_write", mine)["version"] == 2
    theirs = {"filepath": "plan.md", "content": "Bob的修改", "message": "b", "expected_version": 1}
    result = call(bob, "collab_write", theirs)
    assert result["success"] is False
    assert result["is_conflict"] is True and result["error_type"] == "conflict"
    conflict = result["conflict"]
    assert conflict["current_version"] == 2
    assert conflict["current_content"] == "Alice的修改"
    assert conflict["current_author"] == "alice"
    assert conflict["your_content"] == "Bob的修改"
    assert result["suggestion"] == conflict["suggestion"]
    assert "merge" in result["suggestion"] and "expected_version=2" in result["suggestion"]
    assert ok(bob, "collab_read", {"filepath": "plan.md"})["content"] == "Alice的修改"
    [refused] = ok(bob, "collab_history", {"filepath": "plan.md"})["your_refused_writes"]
    assert (refused["your_base"], refused["current_version"]) == (1, 2)
    assert refused["kept_at"] == "collaborative/.conflicts/bob/plan.md.rejected-1"
    assert ok(abc["alice"], "collab_history", {"filepath": "plan.md"})["your_refused_writes"] == []


def test_C_5_to_C_7_tool_history_rollback_and_missing(abc: dict[str, WorkspaceTools]) -> None:
    alice = abc["alice"]
    for n, content in enumerate(["初稿", "二稿", "三稿"]):
        ok(
            alice,
            "collab_write",
            {"filepath": "plan.md", "content": content, "message": f"m{n}", "expected_version": n},
        )
    history = ok(alice, "collab_history", {"filepath": "plan.md"})["history"]
    assert [h["version"] for h in history] == [1, 2, 3]
    assert all({"version", "author", "message", "timestamp"} <= set(h) for h in history)
    assert ok(alice, "collab_rollback", {"filepath": "plan.md", "to_version": 1})["new_version"] == 4
    read = ok(alice, "collab_read", {"filepath": "plan.md"})
    assert (read["version"], read["content"]) == (4, "初稿")
    assert "1" in ok(alice, "collab_history", {"filepath": "plan.md"})["history"][-1]["message"]
    for name in ("collab_read", "collab_history"):
        missing = call(alice, name, {"filepath": "nonexistent.md"})
        assert missing["success"] is False and missing["error_type"] == "not_found"
    no_version = call(alice, "collab_rollback", {"filepath": "plan.md", "to_version": 9})
    assert no_version["error_type"] == "not_found" and "collab_history" in no_version["hint"]


# -- modules D to I: realtime documents ----------------------------------------------------------------------

BOARD = {"title": "lww_register", "body": "rga", "members": "or_set", "settings": "lww_map", "view_count": "pn_counter"}


@pytest.fixture
def board(abc: dict[str, WorkspaceTools]) -> WorkspaceTools:
    """Seed I-1: a document with a field of every type, created by alice."""
    result = ok(abc["alice"], "realtime_create_document", {"doc_id": "board", "schema": BOARD})
    assert result["field_types"] == BOARD
    return abc["alice"]


def field(tools: WorkspaceTools, name: str) -> Any:
    return ok(tools, "realtime_get_field", {"doc_id": "board", "field_name": name})["value"]


def edit(tools: WorkspaceTools, operation: str, **args: Any) -> dict[str, Any]:
    arguments = {"doc_id": "board", "field_name": "body", "operation": operation, "args": args}
    return ok(tools, "realtime_edit_text", arguments)


def test_D_1_G_1_tool_set_and_get_fields(board: WorkspaceTools) -> None:
    ok(board, "realtime_set_field", {"doc_id": "board", "field_name": "title", "value": "第一版标题"})
    assert field(board, "title") == "第一版标题"
    ok(
        board,
        "realtime_set_field",
        {"doc_id": "board", "field_name": "settings", "value": {"theme": "dark", "lang": "zh"}},
    )
    assert field(board, "settings") == {"theme": "dark", "lang": "zh"}
    ok(board, "realtime_set_field", {"doc_id": "board", "field_name": "members", "value": ["alice", "bob"]})
    ok(board, "realtime_set_field", {"doc_id": "board", "field_name": "view_count", "value": 5})
    ok(board, "realtime_set_field", {"doc_id": "board", "field_name": "body", "value": "描述"})
    assert (field(board, "members"), field(board, "view_count"), field(board, "body")) == (["alice", "bob"], 5, "描述")
    wrong = call(board, "realtime_set_field", {"doc_id": "board", "field_name": "view_count", "value": "five"})
    assert wrong["error_type"] == "invalid_input" and field(board, "view_count") == 5


def test_E_1_to_E_4_E_7_tool_text_edits(board: WorkspaceTools) -> None:
    assert edit(board, "insert", position=0, text="Hello")["text"] == "Hello"
    assert edit(board, "insert", position=5, text=" World")["length"] == 11
    deleted = edit(board, "delete", **{"from": 5, "to": 11})
    assert (deleted["deleted_count"], deleted["text"]) == (6, "Hello")
    assert edit(board, "replace", **{"from": 0, "to": 5, "text": "Hi"})["text"] == "Hi"
    assert edit(board, "insert", position=999, text="!")["text"] == "Hi!"
    assert field(board, "body") == "Hi!"
    mixed = {"doc_id": "board", "field_name": "body", "operation": "insert", "args": {"from": 0, "text": "x"}}
    assert call(board, "realtime_edit_text", mixed)["error_type"] == "invalid_arguments"


def test_F_1_to_F_5_tool_set_operations(board: WorkspaceTools) -> None:
    target = {"doc_id": "board", "field_name": "members"}
    ok(board, "realtime_set_add", {**target, "element": "important"})
    assert ok(board, "realtime_set_add", {**target, "element": "urgent"})["count"] == 2
    removed = ok(board, "realtime_set_remove", {**target, "element": "important"})
    assert (removed["removed"], removed["elements"]) == (True, ["urgent"])
    again = ok(board, "realtime_set_add", {**target, "element": "urgent"})
    assert (again["added"], again["elements"]) == (False, ["urgent"])
    assert ok(board, "realtime_set_contains", {**target, "element": "urgent"})["exists"] is True
    assert ok(board, "realtime_set_contains", {**target, "element": "low"})["exists"] is False


def test_G_H_tool_map_and_counter(abc: dict[str, WorkspaceTools], board: WorkspaceTools) -> None:
    settings = {"doc_id": "board", "field_name": "settings"}
    ok(abc["alice"], "realtime_map_set", {**settings, "key": "theme", "value": "light"})
    assert ok(abc["bob"], "realtime_map_set", {**settings, "key": "lang", "value": "en"})["map"] == {
        "theme": "light",
        "lang": "en",
    }
    assert ok(abc["bob"], "realtime_map_delete", {**settings, "key": "theme"})["deleted"] is True
    counter = {"doc_id": "board", "field_name": "view_count"}
    ok(abc["alice"], "realtime_counter_increment", counter)
    assert ok(abc["alice"], "realtime_counter_increment", {**counter, "amount": 3})["value"] == 4
    assert ok(abc["bob"], "realtime_counter_decrement", {**counter, "amount": 2})["value"] == 2
    assert call(abc["bob"], "realtime_counter_decrement", {**counter, "amount": -2})["success"] is False


def test_I_2_tool_snapshot(board: WorkspaceTools) -> None:
    ok(board, "realtime_set_field", {"doc_id": "board", "field_name": "title", "value": "看板"})
    edit(board, "insert", position=0, text="描述")
    snapshot = ok(board, "realtime_get_document_snapshot", {"doc_id": "board"})["snapshot"]
    assert snapshot["doc_id"] == "board" and snapshot["field_types"] == BOARD
    assert snapshot["fields"]["title"] == "看板" and snapshot["fields"]["body"] == "描述"


def test_I_3_tool_snapshot_of_missing_document(abc: dict[str, WorkspaceTools]) -> None:
    result = call(abc["alice"], "realtime_get_document_snapshot", {"doc_id": "nonexistent"})
    assert result["success"] is False
    assert result["error_type"] == "not_found"
    assert "no realtime document 'nonexistent'" in result["error"]
    assert "realtime_create_document" in result["hint"]


def test_I_4_tool_unknown_field(board: WorkspaceTools) -> None:
    result = call(board, "realtime_set_field", {"doc_id": "board", "field_name": "color", "value": "red"})
    assert result["success"] is False and result["error_type"] == "not_found"
    assert "color" in result["error"]


def test_I_5_tool_text_edit_on_a_register(board: WorkspaceTools) -> None:
    ok(board, "realtime_set_field", {"doc_id": "board", "field_name": "title", "value": "看板"})
    arguments = {"doc_id": "board", "field_name": "title", "operation": "insert", "args": {"position": 0, "text": "x"}}
    result = call(board, "realtime_edit_text", arguments)
    assert result["success"] is False and result["error_type"] == "invalid_input"
    assert "not rga" in result["error"] and "'title'" in result["error"]
    assert "snapshot" in result["hint"]
    assert field(board, "title") == "看板"


def test_realtime_create_is_refused_twice(board: WorkspaceTools) -> None:
    again = call(board, "realtime_create_document", {"doc_id": "board", "schema": {"x": "rga"}})
    assert again["error_type"] == "already_exists"
    bad = call(board, "realtime_create_document", {"doc_id": "doc2", "schema": {"x": "text"}})
    assert bad["error_type"] == "invalid_arguments" and "lww_register" in bad["error"]


# -- module K: whole workflows, one WorkspaceTools per agent -------------------------------------------------


def test_K_1_research_analysis_writing_workflow(team: Team) -> None:
    agents = team("researcher", "analyst", "writer")
    researcher, analyst, writer = agents["researcher"], agents["analyst"], agents["writer"]
    # 1-2. the researcher keeps the data and hands it to the analyst
    ok(researcher, "save_to_my_workspace", {"filename": "data.md", "content": "调研数据..."})
    handoff = {"to_agent": "analyst", "filename": "data.md", "content": "调研数据...", "message": "请分析"}
    ok(researcher, "handoff_file", handoff)
    # 3-4. the analyst finds and reads it
    inbox = ok(analyst, "check_my_handoffs", {})
    assert inbox["count"] == 1 and inbox["handoffs"][0]["from"] == "researcher"
    delivered = ok(analyst, "read_handoff", {"from_agent": "researcher", "filename": "data.md"})
    assert (delivered["content"], delivered["message"]) == ("调研数据...", "请分析")
    # 5. the analyst drafts the report in the collaborative zone
    draft = {"filepath": "report.md", "content": "分析结果...", "message": "初稿", "expected_version": -1}
    assert ok(analyst, "collab_write", draft)["version"] == 1
    # 6-7. the writer polishes version 1
    assert ok(writer, "collab_read", {"filepath": "report.md"})["version"] == 1
    polish = {"filepath": "report.md", "content": "润色后的报告...", "message": "润色", "expected_version": 1}
    assert ok(writer, "collab_write", polish)["version"] == 2
    # 8. the analyst also edits version 1: a conflict, and nothing is written
    supplement = {"filepath": "report.md", "content": "补充数据...", "message": "补充", "expected_version": 1}
    conflict = call(analyst, "collab_write", supplement)
    assert conflict["success"] is False and conflict["is_conflict"] is True
    assert conflict["conflict"]["current_version"] == 2 and conflict["conflict"]["current_author"] == "writer"
    # 9. the analyst merges its supplement into the current version and commits on top of it
    current = ok(analyst, "collab_read", {"filepath": "report.md"})
    merged_text = current["content"] + "\n" + conflict["conflict"]["your_content"]
    merged = {
        "filepath": "report.md",
        "content": merged_text,
        "message": "合并润色和补充",
        "expected_version": current["version"],
    }
    assert ok(analyst, "collab_write", merged)["version"] == 3
    # 10. three versions, each traceable to its author
    history = ok(writer, "collab_history", {"filepath": "report.md"})["history"]
    assert [(h["version"], h["author"], h["message"]) for h in history] == [
        (1, "analyst", "初稿"),
        (2, "writer", "润色"),
        (3, "analyst", "合并润色和补充"),
    ]
    final = ok(writer, "collab_read", {"filepath": "report.md"})["content"]
    assert "润色后的报告..." in final and "补充数据..." in final
    # nothing was lost: the researcher's own copy and the delivery are intact
    assert (
        ok(writer, "read_from_workspace", {"agent_id": "researcher", "filename": "data.md"})["content"] == "调研数据..."
    )


def test_K_2_realtime_kanban_and_private_drafts(abc: dict[str, WorkspaceTools]) -> None:
    schema = {"title": "lww_register", "tasks": "or_set", "done_count": "pn_counter"}
    ok(abc["alice"], "realtime_create_document", {"doc_id": "kanban", "schema": schema})
    ok(abc["alice"], "realtime_set_field", {"doc_id": "kanban", "field_name": "title", "value": "Sprint 1"})
    for agent, tools in abc.items():
        ok(tools, "save_to_my_workspace", {"filename": "draft.md", "content": f"{agent}'s draft"})

    start = threading.Barrier(len(abc))

    def add_tasks(agent: str) -> None:
        start.wait(timeout=30)  # all three add at the same time
        for n in range(3):
            element = f"{agent}: task {n}"
            ok(abc[agent], "realtime_set_add", {"doc_id": "kanban", "field_name": "tasks", "element": element})

    with ThreadPoolExecutor(len(abc)) as pool:
        list(pool.map(add_tasks, abc))
    with ThreadPoolExecutor(2) as pool:
        counter = {"doc_id": "kanban", "field_name": "done_count"}
        list(pool.map(lambda agent: ok(abc[agent], "realtime_counter_increment", counter), ["alice", "bob"]))

    snapshot = ok(abc["charlie"], "realtime_get_document_snapshot", {"doc_id": "kanban"})["snapshot"]
    assert snapshot["fields"]["title"] == "Sprint 1"
    assert snapshot["fields"]["tasks"] == sorted(f"{a}: task {n}" for a in abc for n in range(3))
    assert snapshot["fields"]["done_count"] == 2
    assert snapshot["field_types"] == schema
    for agent, tools in abc.items():
        assert ok(tools, "list_workspace_files", {})["files"] == ["draft.md"]
        assert ok(tools, "read_from_workspace", {"agent_id": agent, "filename": "draft.md"})["content"] == (
            f"{agent}'s draft"
        )


def test_K_3_writer_reads_other_zones(team: Team) -> None:
    agents = team("researcher", "analyst", "writer")
    ok(agents["researcher"], "save_to_my_workspace", {"filename": "notes.md", "content": "research notes"})
    ok(agents["analyst"], "save_to_my_workspace", {"filename": "model.md", "content": "the model"})
    root = root_of(agents["writer"])
    before = {agent: zone_snapshot(root, agent) for agent in ("researcher", "analyst")}
    writer = agents["writer"]
    assert ok(writer, "list_workspace_files", {"agent_id": "researcher"})["files"] == ["notes.md"]
    notes = ok(writer, "read_from_workspace", {"agent_id": "researcher", "filename": "notes.md"})["content"]
    assert ok(writer, "list_workspace_files", {"agent_id": "analyst"})["files"] == ["model.md"]
    model = ok(writer, "read_from_workspace", {"agent_id": "analyst", "filename": "model.md"})["content"]
    ok(writer, "save_to_my_workspace", {"filename": "final_report.md", "content": f"综合报告: {notes} + {model}"})
    assert (root / "agents/writer/final_report.md").read_text("utf-8") == "综合报告: research notes + the model"
    assert {agent: zone_snapshot(root, agent) for agent in ("researcher", "analyst")} == before


# -- bugs are raised; the system prompt ----------------------------------------------------------------------


class BrokenBackend(StoreBackend):
    def write_private(self, filename: str, content: str) -> str:
        raise KeyError("a bug of ours")


def test_our_bugs_are_raised_not_returned(abc: dict[str, WorkspaceTools]) -> None:
    backend = abc["alice"].backend
    assert isinstance(backend, StoreBackend)
    tools = WorkspaceTools(BrokenBackend(backend.ws, "alice"))
    with pytest.raises(KeyError, match="a bug of ours"):
        tools.dispatch_tool_call("save_to_my_workspace", {"filename": "x.md", "content": "x"})


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (NotFound("x"), "not_found"),
        (ZoneDenied("x"), "zone_denied"),
        (InvalidInput("x"), "invalid_input"),
        (NameTooLong("x"), "invalid_input"),
        (AlreadyExists("x"), "already_exists"),
        (StoreCorrupt("x"), "store_corrupt"),
        (OmxError("x"), "workspace_error"),
    ],
)
def test_store_errors_map_to_one_error_type_each(
    abc: dict[str, WorkspaceTools], error: OmxError, expected: str
) -> None:
    backend = abc["alice"].backend
    assert isinstance(backend, StoreBackend)

    class Refusing(StoreBackend):
        def write_private(self, filename: str, content: str) -> str:
            raise error

    result = call(
        WorkspaceTools(Refusing(backend.ws, "alice")), "save_to_my_workspace", {"filename": "a", "content": ""}
    )
    assert (result["error"], result["error_type"]) == ("x", expected)
    assert result["hint"] and "is_conflict" not in result


def test_an_unknown_identity_is_refused(abc: dict[str, WorkspaceTools]) -> None:
    backend = abc["alice"].backend
    assert isinstance(backend, StoreBackend)
    mallory = WorkspaceTools(StoreBackend(backend.ws, "mallory"))
    result = call(mallory, "save_to_my_workspace", {"filename": "x.md", "content": "x"})
    assert result["error_type"] == "zone_denied" and "mallory" in result["error"]


def test_system_prompt_explains_zones_choice_and_conflicts() -> None:
    prompt = system_prompt("bob", ["alice", "bob", "charlie"])
    assert prompt == system_prompt("bob", ["alice", "bob", "charlie"])  # deterministic: cache-friendly
    assert prompt.startswith("You are bob,") and "Your teammates: alice, charlie." in prompt
    assert "agents/bob/" in prompt
    for phrase in ("No: your private zone", "taking turns: the collaborative zone", "same time: a realtime document"):
        assert phrase in prompt
    assert "is_conflict" in prompt and "current_version" in prompt and "expected_version" in prompt
    for name in TOOLS_BY_NAME:
        assert name in prompt
    assert not re.search(r"\d{4}-\d{2}-\d{2}", prompt)
    assert "only agent" in system_prompt("solo", ["solo"])
