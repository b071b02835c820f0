"""Run workspace tool calls in a process of their own: ``python -m agent.workspace_tools.call ROOT AGENT``.

The mount knows a caller by its process (SPEC §3): the identity, and the omx run and step a write came from
(``omxfs/fuse/provenance.py``), are read from the environment the process *started* with. So ``omx`` runs each
tool call of a step in a fresh process started with ``OMX_AGENT``, ``OMX_RUN``, ``OMX_STEP`` and ``OMX_REQUEST``,
and a test keeps one such process per agent. Reads one call per line on stdin, ``{"name": ..., "arguments":
{...}}``, and answers each with one line on stdout: the tool's result, ``{"success": ..., ...}``. A line that is
not a call is answered with a failure too; only a bug of ours ends the process (exit 1, traceback on stderr).
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from agent.workspace_tools.mount_backend import MountBackend
from agent.workspace_tools.tools import WorkspaceTools
from omxfs.errors import OmxError


def _answer(tools: WorkspaceTools, line: str) -> dict[str, Any]:
    try:
        call = json.loads(line)
    except ValueError as exc:
        return {"success": False, "error": f"not a JSON call: {exc}", "error_type": "invalid_call"}
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return {"success": False, "error": 'a call is {"name": ..., "arguments": {...}}', "error_type": "invalid_call"}
    return tools.dispatch_tool_call(call["name"], call.get("arguments"))


def serve(root: str, agent: str, lines: TextIO, out: TextIO) -> int:
    """Answer every call on ``lines``; 2 when the mount does not take this process for ``agent``."""
    try:
        tools = WorkspaceTools(MountBackend(root, agent))
    except OmxError as exc:
        out.write(json.dumps({"success": False, "error": exc.message, "error_type": "no_workspace"}) + "\n")
        out.flush()
        return 2
    for line in lines:
        if not line.strip():
            continue
        out.write(json.dumps(_answer(tools, line), ensure_ascii=False) + "\n")
        out.flush()
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write(
            "usage: python -m agent.workspace_tools.call MOUNT_ROOT AGENT  (calls as JSON lines on stdin)\n"
        )
        return 2
    return serve(argv[0], argv[1], sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
