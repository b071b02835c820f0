"""Provenance without a mount: the store backend records it, and the mount's reader parses only what omx writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent.workspace_tools import StoreBackend, WorkspaceTools
from omxfs.fuse.provenance import ProvenanceReader, provenance_from_environ
from omxfs.store import Workspace

RUN = {"run": "agents/alice/runs/20250101-120000", "step": "3"}


def test_store_backend_records_provenance_on_versions_and_deliveries(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    tools = WorkspaceTools(StoreBackend(ws, "alice", provenance=RUN))
    write = {"filepath": "r.md", "content": "x", "message": "m", "expected_version": 0}
    assert tools.dispatch_tool_call("collab_write", write)["success"]
    assert tools.dispatch_tool_call("collab_rollback", {"filepath": "r.md", "to_version": 1})["success"]
    delivery = {"to_agent": "bob", "filename": "d.md", "content": "d", "message": "for you"}
    assert tools.dispatch_tool_call("handoff_file", delivery)["success"]
    assert [e.provenance for e in ws.collab.history("r.md")] == [RUN, RUN]
    meta = json.loads((tmp_path / "ws/handoff/alice_to_bob/d.md.meta.json").read_text())
    assert meta["provenance"] == RUN


def test_provenance_needs_a_run_and_drops_odd_values() -> None:
    assert provenance_from_environ({b"OMX_STEP": b"2"}) is None
    env = {b"OMX_RUN": b"agents/a/runs/1", b"OMX_STEP": b"2x", b"OMX_REQUEST": b"omx-1234"}
    assert provenance_from_environ(env) == {"run": "agents/a/runs/1", "request": "omx-1234"}
    assert provenance_from_environ({b"OMX_RUN": b"../../etc"}) is None


def test_the_reader_sees_a_process_starting_environment() -> None:
    env = {**os.environ, "OMX_RUN": "agents/a/runs/7", "OMX_STEP": "4"}
    code = "import sys; print('up', flush=True); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        # Popen returns once exec has begun, before the kernel set up the new program's environment (an empty
        # /proc/PID/environ then, and None: seen once in CI): the child's first line says it runs.
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        reader = ProvenanceReader()
        assert reader.of(child.pid) == {"run": "agents/a/runs/7", "step": "4"}
        assert reader.of(child.pid) == {"run": "agents/a/runs/7", "step": "4"}  # cached, a copy each time
    finally:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.close()
        child.stdout.close()
        child.wait(timeout=10)
    assert ProvenanceReader().of(child.pid) is None  # gone: nothing, never an error
