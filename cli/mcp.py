"""``omxfs mcp WS --as NAME``: serve the workspace tools to MCP clients, acting as NAME on the mount at WS.

The server (``agent.workspace_tools.mcp_server``) must be NAME on the mount, so this command does not serve in
its own process: it execs ``omxfs run WS --as NAME -- <the server>`` (same pid, same stdio, so the MCP client that
started ``omxfs mcp`` talks to the server directly), and in NAME's view the kernel fixes who the server is: no
``OMX_AGENT`` claim that another process could also make.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cli.errors import friendly_errors
from cli.params import MOUNT_PATH
from omxfs.errors import MountError
from omxfs.fuse import mounts

SERVER_MODULE = "agent.workspace_tools.mcp_server"


def require_mount(target: str, agent: str) -> None:
    """WS is a live omxfs mount; else one line that says how to get one."""
    how = f"mount it first with `omxfs mount {target} --as {agent}`"
    if not os.path.isdir(target):
        raise MountError(f"{target} is not a directory: {how}")
    state = mounts.probe(target)
    if state is mounts.State.STALE:
        raise MountError(f"{target} is a stale mount (its daemon died): run `omxfs umount {target}`, then {how}")
    if state is mounts.State.UNRESPONSIVE:
        raise MountError(f"{target} does not answer (its daemon is stopped, hung or swamped)")
    if state is not mounts.State.LIVE:
        raise MountError(f"{target} is not a mounted workspace: {how}")


def server_command(target: str, agent: str, port: int | None) -> list[str]:
    """The argv of the server in NAME's view of the workspace mounted at ``target``."""
    http = ["--http", str(port)] if port is not None else []
    server = [sys.executable, "-P", "-m", SERVER_MODULE, target, agent, *http]  # -P: the client's cwd shadows nothing
    return [sys.executable, "-P", "-m", "cli.omxfs", "run", target, "--as", agent, "--", *server]


@click.command("mcp")
@click.argument("workspace", type=MOUNT_PATH)
@click.option("--as", "agent", required=True, metavar="NAME", help="The agent the tools act as.")
@click.option(
    "--http",
    "port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve streamable HTTP on 127.0.0.1:PORT instead of stdio (0: a free port); a new token at each start.",
)
def mcp(workspace: Path, agent: str, port: int | None) -> None:
    """Serve the shared-workspace tools over MCP (stdio) to Claude Code, Codex, Cursor or any MCP client.

    WORKSPACE is a mounted workspace (`omxfs mount`); every tool call acts as NAME through it, with the
    zones' rules, merges and conflicts as for any program on the mount. The server runs in NAME's view
    (`omxfs run`), so the kernel, not a claim, makes it NAME. Ctrl-C stops it.

    \b
    Add it to an agent (with the workspace's full path):
      claude mcp add omx -- omxfs mcp /path/to/ws --as alice
      codex mcp add omx -- omxfs mcp /path/to/ws --as alice
      Cursor, in .cursor/mcp.json:
        {"mcpServers": {"omx": {"command": "omxfs", "args": ["mcp", "/path/to/ws", "--as", "alice"]}}}

    With --http PORT it prints its URL and a token, new at each start, on stderr (nowhere else), and answers
    401 to a request without the header "Authorization: Bearer TOKEN": 127.0.0.1 is open to every local
    process, other agents' views included. Give both to the agent:

    \b
      claude mcp add --transport http omx URL --header "Authorization: Bearer TOKEN"
      codex mcp add omx --url URL --bearer-token-env-var OMX_MCP_TOKEN   (codex started with OMX_MCP_TOKEN=TOKEN)
      Cursor: {"mcpServers": {"omx": {"url": "URL", "headers": {"Authorization": "Bearer TOKEN"}}}}
    """
    target = os.path.abspath(workspace)
    with friendly_errors():
        require_mount(target, agent)
    argv = server_command(target, agent, port)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)
