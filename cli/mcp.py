"""``omxfs mcp WS --as NAME``: serve the workspace tools to MCP clients, acting as NAME in the workspace at WS.

The server (``agent.workspace_tools.mcp_server``) must be NAME on a mount, so this command does not serve in
its own process: it execs ``omxfs run WS --as NAME -- <the server>`` (same pid, same stdio, so the MCP client that
started ``omxfs mcp`` talks to the server directly), and in NAME's view the kernel fixes who the server is: no
``OMX_AGENT`` claim that another process could also make. The view's own daemon serves the shared zones, so WS
need not be mounted: the store directory serves as well as a mount of it (after a reboot, nothing is mounted).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cli.errors import friendly_errors
from cli.params import MOUNT_PATH
from cli.view import branch_named

SERVER_MODULE = "agent.workspace_tools.mcp_server"


def require_workspace(target: str) -> None:
    """WS is a workspace a view can be made of, a store directory or a live omxfs mount of one; else one line
    before the exec (a stale or unanswering mount, or no workspace at all), where the MCP client would see only
    "Connection closed"."""
    from omxfs.view.locate import locate

    os.close(locate(target).fd)


def server_command(target: str, agent: str, port: int | None, branch: str | None = None) -> list[str]:
    """The argv of the server in NAME's view of the workspace at ``target`` (a store or a mount of one), or in the
    view of NAME's branch ``branch`` (``omxfs run --branch``)."""
    http = ["--http", str(port)] if port is not None else []
    server = [sys.executable, "-P", "-m", SERVER_MODULE, target, agent, *http]  # -P: the client's cwd shadows nothing
    held = ["--branch", branch] if branch is not None else []
    return [sys.executable, "-P", "-m", "cli.omxfs", "run", target, "--as", agent, *held, "--", *server]


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
@click.option(
    "--branch",
    metavar="BRANCH",
    help="Serve in NAME's branch BRANCH (`omxfs run --branch`): the agent's writes to its zone are held apart there "
    "until a person accepts them (`omxfs accept WS NAME --branch BRANCH`); `review` is the review.",
)
def mcp(workspace: Path, agent: str, port: int | None, branch: str | None) -> None:
    """Serve the shared-workspace tools over MCP (stdio) to Claude Code, Codex, Cursor or any MCP client.

    WORKSPACE is the workspace directory, mounted (`omxfs mount`) or not. The server runs in NAME's view
    (`omxfs run`), whose own daemon serves the shared zones: every tool call acts as NAME, with the zones'
    rules, merges and conflicts as for any program on a mount, and the kernel, not a claim, makes it NAME.
    Ctrl-C stops it.

    \b
    Add it to an agent (with the workspace's full path):
      claude mcp add omx -- omxfs mcp /path/to/ws --as alice
      codex mcp add omx -- omxfs mcp /path/to/ws --as alice
      Cursor, in .cursor/mcp.json:
        {"mcpServers": {"omx": {"command": "omxfs", "args": ["mcp", "/path/to/ws", "--as", "alice"]}}}

    A pending branch of NAME's zone keeps a plain view from starting (its overlay's lower layer is the zone): serve
    in a branch with --branch BRANCH then, or decide the branches first (`omxfs branches WS NAME`).

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
        require_workspace(target)
    held = branch_named(branch, False)
    argv = server_command(os.path.realpath(target), agent, port, held)  # the path the view shows the workspace at
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)
