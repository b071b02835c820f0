"""The workspace tools as an MCP server: ``python -m agent.workspace_tools.mcp_server ROOT AGENT [--http PORT]``.

Any MCP client (Claude Code, Codex, Cursor, Goose...) then gets the seed-001 tools with the schemas generated
from their input models (``definitions.py``) and the dispatcher's ``{"success": ...}`` results, a collaborative
conflict's suggestion included, exactly as ``omx`` agents get them.

It is built on the SDK's low-level ``Server``, not ``MCPServer``: ``MCPServer`` derives each tool's schema from a
Python signature and validates arguments against it, which would be a second copy of the schemas that could
drift from the generated ones, and would answer a model's bad arguments with its own error text instead of the
dispatcher's result that says how to call the tool.

The tools act through the mount as whoever the mount takes this process for, so the process must *be* AGENT
there (``MountBackend`` checks it and refuses otherwise): ``omxfs mcp`` starts it inside ``omxfs run --as AGENT``,
where the kernel fixes the identity. Calls run one at a time in a worker thread: they are blocking file I/O on the
mount, and the mount keeps one realtime base per process, not per call. Over HTTP every request must carry the
token printed with the URL at start (``mcp_token.py``): 127.0.0.1 is open to every local process, other views too.

Ctrl-C stops the server with exit status 130 and no traceback. Over stdio it stops at once: the SDK reads stdin in a
thread nothing can interrupt, so a cancelled server would wait for the client's next line; ending the process
mid-call loses nothing the store acknowledged, as when a client kills its server, which is how clients stop one.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import uvicorn  # the HTTP transport's server; the SDK imports it anyway
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

from agent.workspace_tools.definitions import get_tool_definitions
from agent.workspace_tools.mcp_token import SCHEME, RequireToken, new_token
from agent.workspace_tools.mount_backend import MountBackend
from agent.workspace_tools.prompt import system_prompt
from agent.workspace_tools.tools import WorkspaceTools
from omxfs.errors import OmxError
from omxfs.store.layout import AGENTS

SERVER_NAME = "omx"
HOST = "127.0.0.1"  # the HTTP transport is for local clients only, and each request needs the token (mcp_token.py)
HTTP_PATH = "/mcp"
INTERRUPTED = 128 + signal.SIGINT  # the shell's status for a command stopped by Ctrl-C


def tool_list() -> list[Tool]:
    """The generated definitions as MCP tools: the same names, descriptions and input schemas, and the tools on
    the agent's own checkpoints and branches."""
    return [
        Tool(name=d["name"], description=d["description"], input_schema=d["parameters"])
        for d in get_tool_definitions(history=True)
    ]


def tool_result(result: dict[str, Any]) -> CallToolResult:
    """A dispatcher result as an MCP result: the JSON as text (what models read) and as structured content.

    A failed call is a tool error (``isError``) so that clients show it as one, and still carries the whole
    result: the model reads the error, the hint and a conflict's suggestion from it and tries again.
    """
    text = json.dumps(result, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=result, is_error=not result["success"]
    )


def build_server(tools: WorkspaceTools, team: list[str]) -> Server[Any]:
    listed = ListToolsResult(tools=tool_list())
    schemas = {tool.name: tool.input_schema for tool in listed.tools}
    one_at_a_time = anyio.CapacityLimiter(1)

    async def list_tools(ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        return listed

    async def call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        result = await anyio.to_thread.run_sync(
            tools.dispatch_tool_call, params.name, params.arguments, limiter=one_at_a_time
        )
        return tool_result(result)

    return Server(
        SERVER_NAME,
        version=version("omx"),
        instructions=system_prompt(tools.agent, team),
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def announcement(url: str, token: str) -> str:
    """The line that tells a user where the server is and the header every request must carry."""
    return f'serving MCP for {SERVER_NAME} at {url} (every request needs the header "Authorization: {SCHEME} {token}")'


class AnnouncedServer(uvicorn.Server):
    """uvicorn that prints its URL and token on stderr once it serves, not before: clients wait for that line, and
    from then on a Ctrl-C is uvicorn's to handle (a clean stop) rather than the event loop's (a traceback
    mid-startup)."""

    def __init__(self, config: uvicorn.Config, line: str) -> None:
        super().__init__(config)
        self.line = line

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if not self.should_exit:
            sys.stderr.write(self.line + "\n")
            sys.stderr.flush()


async def serve_http(server: Server[Any], port: int) -> None:
    """Streamable HTTP on 127.0.0.1:PORT (0: a free port) for the holders of a token made now; the URL and the
    token are printed on stderr once it serves."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    token = new_token()
    app = RequireToken(server.streamable_http_app(streamable_http_path=HTTP_PATH, host=HOST), token)
    line = announcement(f"http://{HOST}:{sock.getsockname()[1]}{HTTP_PATH}", token)
    config = uvicorn.Config(app, log_level="warning", ws="none")  # MCP is plain HTTP: no websocket reaches the app
    await AnnouncedServer(config, line).serve(sockets=[sock])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent.workspace_tools.mcp_server")
    parser.add_argument("root", help="the mountpoint of the workspace")
    parser.add_argument("agent", help="the agent this process is on the mount")
    parser.add_argument(
        "--http", type=int, metavar="PORT", help="streamable HTTP on 127.0.0.1:PORT, not stdio (a token per start)"
    )
    args = parser.parse_args(argv)
    try:
        tools = WorkspaceTools(MountBackend(args.root, args.agent), history=True)
    except OmxError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        return 2
    team = sorted(p.name for p in Path(args.root, AGENTS).iterdir() if p.is_dir())
    server = build_server(tools, team)
    try:
        if args.http is None:
            signal.signal(signal.SIGINT, lambda *_: os._exit(INTERRUPTED))
            anyio.run(serve_stdio, server)
        else:
            anyio.run(serve_http, server, args.http)
    except KeyboardInterrupt:  # uvicorn stops cleanly on Ctrl-C, then raises it again
        return INTERRUPTED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
