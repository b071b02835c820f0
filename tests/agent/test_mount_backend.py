"""``MountBackend``: the workspace tools of seed 001 through a real mount, one process per agent.

The mount decides who an agent is from the calling process, so every agent's tool calls run in a process of its
own (``m.py(..., agent=...)``), which builds ``WorkspaceTools(MountBackend(root, agent))`` and prints the results
as JSON. The same workflows as ``test_workspace_tools.py`` (J, K) must give the same answers, and a parity test
runs one sequence of calls through both backends and compares them.
"""

# ruff: noqa: F811  (the ``mount`` fixture is imported from tests/fuse/conftest.py and requested by name)
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agent.workspace_tools import TOOLS_BY_NAME, StoreBackend, WorkspaceTools
from agent.workspace_tools.mount_backend import _failure
from omxfs.errors import AlreadyExists, Conflict, InvalidInput, NameTooLong, NotFound, ZoneDenied
from omxfs.store import Workspace
from tests.fuse.conftest import Mount, mount, poll  # noqa: F401

MountFactory = Callable[..., Mount]
Call = tuple[str, dict[str, Any] | str]

#: run in a process of the agent: the tool calls of argv, as JSON; ``go`` (if given) is waited for first
SCRIPT = """
import json, os, sys, time
from agent.workspace_tools import WorkspaceTools
from agent.workspace_tools.mount_backend import MountBackend
root, agent, calls, go = {root!r}, {agent!r}, json.loads({calls!r}), {go!r}
tools = WorkspaceTools(MountBackend(root, agent))
if go:
    open(go + "." + agent, "w").close()  # ready
    deadline = time.monotonic() + 10
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.005)
print(json.dumps([tools.dispatch_tool_call(name, arguments) for name, arguments in calls]))
"""


def script(m: Mount, agent: str, calls: Sequence[Call], go: str = "") -> str:
    return SCRIPT.format(root=str(m.root), agent=agent, calls=json.dumps(list(calls)), go=go)


def check(result: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(result, dict) and isinstance(result["success"], bool)
    if not result["success"]:
        assert result["error"] and isinstance(result["error"], str)
    return result


def run(m: Mount, agent: str, calls: Sequence[Call]) -> list[dict[str, Any]]:
    """The results of ``calls``, made in order by one process of ``agent``."""
    done = m.py(script(m, agent, calls), agent=agent)
    return [check(r) for r in json.loads(done.stdout)]


def ok(m: Mount, agent: str, name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    (result,) = run(m, agent, [(name, arguments)])
    assert result["success"], result
    return result


def concurrently(m: Mount, tmp_path: Path, batches: dict[str, Sequence[Call]]) -> dict[str, list[dict[str, Any]]]:
    """One process per agent, all released at once when each has built its backend."""
    tmp_path.mkdir(exist_ok=True)
    go = tmp_path / "go"
    procs = {
        agent: subprocess.Popen(
            [sys.executable, "-c", script(m, agent, calls, str(go))],
            cwd=m.root,
            env=m.env(agent),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for agent, calls in batches.items()
    }
    poll(lambda: all(go.with_name(f"go.{agent}").exists() for agent in batches), what="the agents to be ready")
    go.touch()
    results = {}
    for agent, proc in procs.items():
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode(errors="replace")
        results[agent] = [check(r) for r in json.loads(out)]
    return results


def zone_snapshot(root: Path, agent: str) -> dict[str, bytes]:
    zone = root / "agents" / agent
    return {str(p.relative_to(zone)): p.read_bytes() for p in sorted(zone.rglob("*")) if p.is_file()}


# -- identity and errno mapping ------------------------------------------------------------------------------


def test_the_backend_acts_only_as_the_agent_its_process_is(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"], default="alice")
    code = "from agent.workspace_tools.mount_backend import MountBackend\nMountBackend({!r}, {!r})"
    assert m.py(code.format(str(m.root), "alice"), agent=None).returncode == 0  # the mount's default
    assert m.py(code.format(str(m.root), "bob"), agent="bob").returncode == 0
    refused = m.py(code.format(str(m.root), "bob"), agent=None, check=False)  # alice on the mount
    assert refused.returncode != 0
    assert b"IdentityMismatch" in refused.stderr and b"OMX_AGENT=bob" in refused.stderr
    claimed = m.py(code.format(str(m.root), "alice"), agent="bob", check=False)
    assert claimed.returncode != 0 and b"is 'bob' on the mount" in claimed.stderr
    assert list((m.disk / "agents" / "alice").iterdir()) == []  # the probe leaves nothing behind
    assert list((m.disk / "agents" / "bob").iterdir()) == []


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (errno.ENOENT, NotFound),
        (errno.EACCES, ZoneDenied),
        (errno.EINVAL, InvalidInput),
        (errno.EEXIST, AlreadyExists),
        (errno.ENAMETOOLONG, NameTooLong),
        (errno.EBUSY, Conflict),
    ],
)
def test_errnos_map_to_store_errors(code: int, expected: type[Exception]) -> None:
    assert type(_failure(OSError(code, "x"), "what")) is expected


def test_an_unexpected_errno_is_a_bug_not_a_result() -> None:
    with pytest.raises(OSError, match="boom"):
        _failure(OSError(errno.EIO, "boom"), "what")


def test_a_conflict_carries_the_record_read() -> None:
    info = {"current_version": 2, "suggestion": "merge"}
    exc = _failure(OSError(errno.EBUSY, "busy"), "collaborative/p.md", lambda: info)
    assert isinstance(exc, Conflict) and exc.info == info and "merge" in exc.message


def test_a_refused_collab_write_is_kept_with_its_content_by_the_mount(mount: MountFactory) -> None:
    """ "Your rejected content is kept (see kept_at)": the file the mount kept and its record hold what the tool
    tried to write, for a stale base, a version the file never reached, and a file that does not exist yet."""
    m = mount(agents=["alice", "bob"])
    ok(m, "alice", "collab_write", {"filepath": "plan.md", "content": "v1", "message": "m", "expected_version": 0})
    ok(m, "bob", "collab_write", {"filepath": "plan.md", "content": "v2 bob", "message": "m", "expected_version": 1})
    refused = run(
        m,
        "alice",
        [
            ("collab_write", {"filepath": "plan.md", "content": "ALICE'S WORK", "message": "m", "expected_version": 1}),
            ("collab_write", {"filepath": "plan.md", "content": "on v99", "message": "m", "expected_version": 99}),
            ("collab_write", {"filepath": "new.md", "content": "on v3", "message": "m", "expected_version": 3}),
            ("collab_history", {"filepath": "plan.md"}),
        ],
    )
    for result, content, base in zip(refused, ["ALICE'S WORK", "on v99", "on v3"], [1, 99, 3], strict=False):
        assert result["is_conflict"] is True, result
        info = result["conflict"]
        assert (info["your_content"], info["your_base"]) == (content, base)
        assert (m.disk / info["kept_at"]).read_text("utf-8") == content
        assert json.loads((m.disk / f"{info['kept_at']}.json").read_text("utf-8"))["your_content"] == content
    assert refused[0]["conflict"]["current_version"] == 2 and refused[0]["conflict"]["current_content"] == "v2 bob"
    kept = [(m.disk / w["kept_at"]).read_text("utf-8") for w in refused[3]["your_refused_writes"]]
    assert kept == ["ALICE'S WORK", "on v99"]
    assert m.ws.collab.read("plan.md").content == b"v2 bob" and m.ws.collab.history("new.md") == []
    # the commits went through temp files: none is left, in the listing or in alice's scratch area
    assert sorted(os.listdir(m.path("collaborative/current"))) == ["plan.md"]
    assert not any((m.disk / ".omxfs/scratch").rglob("*.omx-tmp"))
    # the message of a refused write is not the next one's
    (ok_again,) = run(
        m, "alice", [("collab_write", {"filepath": "plan.md", "content": "v3", "message": "", "expected_version": 2})]
    )
    assert ok_again["success"] and ok_again["version"] == 3 and ok_again["message"] == "write by alice"


def test_realtime_replies_show_a_field_left_empty_by_the_change(mount: MountFactory) -> None:
    """The tools write the field and read it back: a change that empties it (the last element removed, all text
    deleted) is written with ``O_TRUNC`` and nothing else, and the reply must show the empty value, not the old."""
    m = mount(agents=["alice", "bob"])
    ok(m, "alice", "realtime_create_document", {"doc_id": "d", "schema": {"body": "rga", "tags": "or_set"}})
    calls: list[Call] = []
    for i in range(20):
        calls += [
            (
                "realtime_edit_text",
                {"doc_id": "d", "field_name": "body", "operation": "insert", "args": {"position": 0, "text": "hi"}},
            ),
            (
                "realtime_edit_text",
                {"doc_id": "d", "field_name": "body", "operation": "delete", "args": {"from": 0, "to": 99}},
            ),
            ("realtime_set_add", {"doc_id": "d", "field_name": "tags", "element": f"t{i}"}),
            ("realtime_set_remove", {"doc_id": "d", "field_name": "tags", "element": f"t{i}"}),
        ]
    results = run(m, "bob", calls)
    for inserted, deleted, added, removed in zip(*[iter(results)] * 4, strict=True):
        assert (inserted["text"], deleted["deleted_count"], deleted["text"]) == ("hi", 2, "")
        assert (len(added["elements"]), removed["removed"], removed["elements"]) == (1, True, [])


# -- module J: the dispatcher ----------------------------------------------------------------------------------


def test_J_1_mount_backend_dispatch_routes_save(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob", "charlie"])
    result = ok(m, "alice", "save_to_my_workspace", {"filename": "test.md", "content": "hello"})
    assert result["path"] == "agents/alice/test.md"
    assert (m.disk / "agents/alice/test.md").read_text() == "hello"


def test_J_1_mount_backend_takes_json_string_arguments(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob", "charlie"])
    ok(m, "alice", "save_to_my_workspace", '{"filename": "d/test.md", "content": "héllo"}')
    read, inbox = run(
        m, "bob", [("read_from_workspace", '{"agent_id": "alice", "filename": "d/test.md"}'), ("check_my_handoffs", "")]
    )
    assert read["content"] == "héllo" and inbox["count"] == 0


def test_J_2_mount_backend_unknown_tool(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])
    unknown, near = run(m, "alice", [("nonexistent_tool", {}), ("collab_reed", {})])
    assert unknown["success"] is False and "unknown tool" in unknown["error"]
    assert unknown["available_tools"] == list(TOOLS_BY_NAME)
    assert "collab_read" in near["hint"]


def test_J_3_mount_backend_every_tool_survives_empty_arguments(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])
    results = run(m, "alice", [(name, {}) for name in TOOLS_BY_NAME])
    for name, result in zip(TOOLS_BY_NAME, results, strict=True):
        required = TOOLS_BY_NAME[name].model_json_schema().get("required", [])
        assert result["success"] is not bool(required), (name, result)
    missing = run(m, "alice", [("save_to_my_workspace", {}), ("save_to_my_workspace", "{not json")])
    assert all(r["error_type"] == "invalid_arguments" for r in missing)
    assert list((m.disk / "agents/alice").iterdir()) == []


def test_J_3_mount_backend_refusals_are_results(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])
    ok(m, "bob", "save_to_my_workspace", {"filename": "b.md", "content": "bob's"})
    escape, missing, no_doc = run(
        m,
        "alice",
        [
            ("save_to_my_workspace", {"filename": "../bob/b.md", "content": "x"}),
            ("read_from_workspace", {"agent_id": "bob", "filename": "nope.md"}),
            ("realtime_get_document_snapshot", {"doc_id": "nonexistent"}),
        ],
    )
    assert escape["error_type"] in ("invalid_input", "invalid_arguments")
    assert missing["error_type"] == "not_found" and "list_workspace_files" in missing["hint"]
    assert no_doc["error_type"] == "not_found" and "no realtime document 'nonexistent'" in no_doc["error"]
    assert (m.disk / "agents/bob/b.md").read_text() == "bob's"


def test_J_4_mount_backend_tool_definitions(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])
    code = (
        "import json\nfrom agent.workspace_tools import WorkspaceTools\n"
        "from agent.workspace_tools.mount_backend import MountBackend\n"
        f"tools = WorkspaceTools(MountBackend({str(m.root)!r}, 'alice'))\n"
        "print(json.dumps([tools.get_tool_definitions(), tools.tool_names()]))"
    )
    definitions, names = json.loads(m.py(code, agent="alice").stdout)
    assert len(definitions) == 22 and [d["name"] for d in definitions] == names == list(TOOLS_BY_NAME)
    assert definitions == WorkspaceTools.get_tool_definitions()


# -- module K: whole workflows, one process per agent ----------------------------------------------------------


def test_K_1_mount_backend_research_analysis_writing(mount: MountFactory) -> None:
    m = mount(agents=["researcher", "analyst", "writer"], default="researcher")
    handoff = {"to_agent": "analyst", "filename": "data.md", "content": "调研数据...", "message": "请分析"}
    run(
        m,
        "researcher",
        [("save_to_my_workspace", {"filename": "data.md", "content": "调研数据..."}), ("handoff_file", handoff)],
    )
    inbox, delivered, draft = run(
        m,
        "analyst",
        [
            ("check_my_handoffs", {}),
            ("read_handoff", {"from_agent": "researcher", "filename": "data.md"}),
            (
                "collab_write",
                {"filepath": "report.md", "content": "分析结果...", "message": "初稿", "expected_version": -1},
            ),
        ],
    )
    assert inbox["count"] == 1 and inbox["handoffs"][0]["from"] == "researcher"
    assert (delivered["content"], delivered["message"]) == ("调研数据...", "请分析")
    assert draft["version"] == 1
    polish = {"filepath": "report.md", "content": "润色后的报告...", "message": "润色", "expected_version": 1}
    read, polished = run(m, "writer", [("collab_read", {"filepath": "report.md"}), ("collab_write", polish)])
    assert read["version"] == 1 and polished["version"] == 2
    supplement = {"filepath": "report.md", "content": "补充数据...", "message": "补充", "expected_version": 1}
    conflict, current = run(m, "analyst", [("collab_write", supplement), ("collab_read", {"filepath": "report.md"})])
    assert conflict["success"] is False and conflict["is_conflict"] is True
    assert conflict["conflict"]["current_version"] == 2 and conflict["conflict"]["current_author"] == "writer"
    assert conflict["conflict"]["your_content"] == "补充数据..." and conflict["suggestion"]
    merged = {
        "filepath": "report.md",
        "content": current["content"] + "\n" + conflict["conflict"]["your_content"],
        "message": "合并润色和补充",
        "expected_version": current["version"],
    }
    assert ok(m, "analyst", "collab_write", merged)["version"] == 3
    history, final, notes = run(
        m,
        "writer",
        [
            ("collab_history", {"filepath": "report.md"}),
            ("collab_read", {"filepath": "report.md"}),
            ("read_from_workspace", {"agent_id": "researcher", "filename": "data.md"}),
        ],
    )
    assert [(h["version"], h["author"], h["message"]) for h in history["history"]] == [
        (1, "analyst", "初稿"),
        (2, "writer", "润色"),
        (3, "analyst", "合并润色和补充"),
    ]
    assert "润色后的报告..." in final["content"] and "补充数据..." in final["content"]
    assert notes["content"] == "调研数据..."
    assert m.ws.collab.read("report.md").content.decode() == final["content"]  # the store agrees


def test_K_2_mount_backend_realtime_kanban(mount: MountFactory, tmp_path: Path) -> None:
    agents = ["alice", "bob", "charlie"]
    m = mount(agents=agents)
    schema = {"title": "lww_register", "tasks": "or_set", "done_count": "pn_counter"}
    run(
        m,
        "alice",
        [
            ("realtime_create_document", {"doc_id": "kanban", "schema": schema}),
            ("realtime_set_field", {"doc_id": "kanban", "field_name": "title", "value": "Sprint 1"}),
        ],
    )
    adds = {
        agent: [
            ("realtime_set_add", {"doc_id": "kanban", "field_name": "tasks", "element": f"{agent}: task {n}"})
            for n in range(3)
        ]
        for agent in agents
    }
    for results in concurrently(m, tmp_path / "adds", adds).values():
        assert all(r["success"] and r["added"] for r in results), results
    counter = [("realtime_counter_increment", {"doc_id": "kanban", "field_name": "done_count"})]
    concurrently(m, tmp_path / "counts", {"alice": counter, "bob": counter})
    snapshot = ok(m, "charlie", "realtime_get_document_snapshot", {"doc_id": "kanban"})["snapshot"]
    assert snapshot["fields"]["title"] == "Sprint 1"
    assert snapshot["fields"]["tasks"] == sorted(f"{a}: task {n}" for a in agents for n in range(3))
    assert snapshot["fields"]["done_count"] == 2
    assert snapshot["field_types"] == schema


def test_K_3_mount_backend_writer_reads_other_zones(mount: MountFactory) -> None:
    m = mount(agents=["researcher", "analyst", "writer"], default="writer")
    ok(m, "researcher", "save_to_my_workspace", {"filename": "notes.md", "content": "research notes"})
    ok(m, "analyst", "save_to_my_workspace", {"filename": "model.md", "content": "the model"})
    before = {agent: zone_snapshot(m.disk, agent) for agent in ("researcher", "analyst")}
    listed_r, notes, listed_a, model, denied = run(
        m,
        "writer",
        [
            ("list_workspace_files", {"agent_id": "researcher"}),
            ("read_from_workspace", {"agent_id": "researcher", "filename": "notes.md"}),
            ("list_workspace_files", {"agent_id": "analyst"}),
            ("read_from_workspace", {"agent_id": "analyst", "filename": "model.md"}),
            ("handoff_file", {"to_agent": "writer", "filename": "x.md", "content": "x", "message": ""}),
        ],
    )
    assert listed_r["files"] == ["notes.md"] and listed_a["files"] == ["model.md"]
    assert denied["error_type"] == "invalid_input"
    report = f"综合报告: {notes['content']} + {model['content']}"
    ok(m, "writer", "save_to_my_workspace", {"filename": "final_report.md", "content": report})
    assert (m.disk / "agents/writer/final_report.md").read_text("utf-8") == "综合报告: research notes + the model"
    assert {agent: zone_snapshot(m.disk, agent) for agent in ("researcher", "analyst")} == before


# -- parity: the same calls through the store and through the mount ------------------------------------------

SEQUENCE: list[tuple[str, list[Call]]] = [
    (
        "alice",
        [
            ("save_to_my_workspace", {"filename": "notes/a.md", "content": "alpha"}),
            ("list_workspace_files", {}),
            ("handoff_file", {"to_agent": "bob", "filename": "h.md", "content": "for bob", "message": "read me"}),
            ("handoff_file", {"to_agent": "nobody", "filename": "h.md", "content": "x", "message": ""}),
            ("collab_write", {"filepath": "plan.md", "content": "v1", "message": "first", "expected_version": 0}),
            ("collab_write", {"filepath": "plan.md", "content": "v2", "message": "", "expected_version": 1}),
            ("collab_write", {"filepath": "new.md", "content": "x", "message": "m", "expected_version": 3}),
            ("collab_history", {"filepath": "absent.md"}),
            ("collab_write", {"filepath": "docs/a.md", "content": "nested", "message": "", "expected_version": -1}),
            ("collab_read", {"filepath": "docs"}),
            ("collab_read", {"filepath": "docs/a.md"}),
            ("handoff_file", {"to_agent": "bob", "filename": "h2.md", "content": "second", "message": ""}),
            ("read_from_workspace", {"agent_id": "nobody", "filename": "a.md"}),
            ("list_workspace_files", {"agent_id": "nobody"}),
            ("realtime_create_document", {"doc_id": "doc", "schema": {"t": "rga", "s": "or_set", "m": "lww_map"}}),
            ("realtime_create_document", {"doc_id": "doc", "schema": {"t": "rga"}}),
            ("realtime_set_field", {"doc_id": "doc", "field_name": "t", "value": "hello world"}),
        ],
    ),
    (
        "bob",
        [
            ("check_my_handoffs", {}),
            ("read_handoff", {"from_agent": "alice", "filename": "h.md"}),
            ("read_from_workspace", {"agent_id": "alice", "filename": "notes/a.md"}),
            ("collab_write", {"filepath": "plan.md", "content": "bob", "message": "mine", "expected_version": 1}),
            ("collab_read", {"filepath": "plan.md"}),
            ("collab_write", {"filepath": "plan.md", "content": "v3", "message": "on top", "expected_version": 2}),
            ("collab_rollback", {"filepath": "plan.md", "to_version": 1}),
            ("collab_rollback", {"filepath": "plan.md", "to_version": 9}),
            ("collab_history", {"filepath": "plan.md"}),
            (
                "realtime_edit_text",
                {"doc_id": "doc", "field_name": "t", "operation": "insert", "args": {"position": 5, "text": ","}},
            ),
            (
                "realtime_edit_text",
                {"doc_id": "doc", "field_name": "t", "operation": "delete", "args": {"start": 0, "end": 1}},
            ),
            (
                "realtime_edit_text",
                {
                    "doc_id": "doc",
                    "field_name": "t",
                    "operation": "replace",
                    "args": {"start": 4, "end": 99, "text": "!"},
                },
            ),
            ("realtime_set_add", {"doc_id": "doc", "field_name": "s", "element": "x"}),
            ("realtime_set_add", {"doc_id": "doc", "field_name": "s", "element": "x"}),
            ("realtime_set_add", {"doc_id": "doc", "field_name": "s", "element": "y"}),
            ("realtime_set_remove", {"doc_id": "doc", "field_name": "s", "element": "x"}),
            ("realtime_set_remove", {"doc_id": "doc", "field_name": "s", "element": "zz"}),
            ("realtime_set_contains", {"doc_id": "doc", "field_name": "s", "element": "y"}),
            ("realtime_map_set", {"doc_id": "doc", "field_name": "m", "key": "k", "value": {"n": [1, 2]}}),
            ("realtime_map_set", {"doc_id": "doc", "field_name": "m", "key": "j", "value": "v"}),
            ("realtime_map_delete", {"doc_id": "doc", "field_name": "m", "key": "k"}),
            ("realtime_map_delete", {"doc_id": "doc", "field_name": "m", "key": "k"}),
            ("realtime_set_field", {"doc_id": "doc", "field_name": "s", "value": ["b", "a"]}),
            ("realtime_set_field", {"doc_id": "doc", "field_name": "m", "value": {"z": 1}}),
            ("realtime_set_field", {"doc_id": "doc", "field_name": "nope", "value": "x"}),
            ("realtime_set_add", {"doc_id": "doc", "field_name": "t", "element": "x"}),
            ("realtime_get_field", {"doc_id": "doc", "field_name": "t"}),
            ("realtime_get_field", {"doc_id": "doc", "field_name": "m"}),
            ("realtime_get_document_snapshot", {"doc_id": "doc"}),
        ],
    ),
    (
        "alice",
        [
            ("realtime_create_document", {"doc_id": "board", "schema": {"n": "pn_counter", "r": "lww_register"}}),
            ("realtime_counter_increment", {"doc_id": "board", "field_name": "n", "amount": 3}),
            ("realtime_counter_decrement", {"doc_id": "board", "field_name": "n", "amount": 6}),
            ("realtime_counter_decrement", {"doc_id": "board", "field_name": "n", "amount": 3}),
            ("realtime_set_field", {"doc_id": "board", "field_name": "n", "value": 10}),
            ("realtime_set_field", {"doc_id": "board", "field_name": "n", "value": "ten"}),
            ("realtime_set_field", {"doc_id": "board", "field_name": "r", "value": "line\n"}),
            ("realtime_get_document_snapshot", {"doc_id": "board"}),
            ("save_to_my_workspace", {"filename": "notes/a.md", "content": "alpha 2"}),
            ("list_workspace_files", {"agent_id": "bob"}),
        ],
    ),
]

VOLATILE = {"timestamp", "kept_at", "suggestion", "error", "hint"}


def comparable(value: Any) -> Any:
    """A result without what differs by nature between two runs: times, paths on disk and message wording."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def test_parity_store_and_mount_backends_answer_alike(mount: MountFactory, tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "store-only", agents=["alice", "bob"])
    store = {agent: WorkspaceTools(StoreBackend(ws, agent)) for agent in ("alice", "bob")}
    expected = [store[agent].dispatch_tool_call(name, args) for agent, calls in SEQUENCE for name, args in calls]
    m = mount(agents=["alice", "bob"])
    got = [result for agent, calls in SEQUENCE for result in run(m, agent, calls)]
    assert [r["success"] for r in got] == [r["success"] for r in expected]
    for (name, _), mine, theirs in zip((c for _, calls in SEQUENCE for c in calls), got, expected, strict=True):
        assert comparable(mine) == comparable(theirs), name
    assert sum(not r["success"] for r in got) >= 8  # the sequence does exercise refusals
