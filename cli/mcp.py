"""``omxfs mcp WS --as NAME``: serve the workspace tools to MCP clients, acting as NAME on the mount at WS.

The server (``agent.workspace_tools.mcp_server``) must be NAME on the mount, and the mount reads who a process is
from the environment it *started* with, so this command does not serve in its own process: it execs the server
(same pid, same stdio, so an MCP client that started ``omxfs mcp`` talks to it directly) in a process that is
NAME. Where ``omxfs run`` exists, that process runs inside ``omxfs run WS --as NAME`` and the kernel fixes the
identity; until then it is started with ``OMX_AGENT=NAME``, as ``omx`` starts its tool calls.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cli.errors import friendly_errors
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
    if state is not mounts.State.LIVE:
        raise MountError(f"{target} is not a mounted workspace: {how}")


def server_command(target: str, agent: str, port: int | None, has_run: bool) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of a server process that the mount takes for ``agent``."""
    http = ["--http", str(port)] if port is not None else []
    server = [sys.executable, "-P", "-m", SERVER_MODULE, target, agent, *http]
    env = {**os.environ, "OMX_AGENT": agent}  # the claim; inside a view it agrees with the kernel's identity
    if has_run:
        return [sys.executable, "-P", "-m", "cli.omxfs", "run", target, "--as", agent, "--", *server], env
    return server, env


@click.command("mcp")
@click.argument("workspace", type=click.Path(readable=False, path_type=Path))
@click.option("--as", "agent", required=True, metavar="NAME", help="The agent the tools act as.")
@click.option(
    "--http",
    "port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve streamable HTTP on 127.0.0.1:PORT instead of stdio (0: a free port; the URL is printed).",
)
@click.pass_context
def mcp(ctx: click.Context, workspace: Path, agent: str, port: int | None) -> None:
    """Serve the shared-workspace tools over MCP (stdio) to Claude Code, Codex, Cursor or any MCP client.

    WORKSPACE is a mounted workspace (`omxfs mount`); every tool call acts as NAME through it, with the
    zones' rules, merges and conflicts as for any program on the mount.
    """
    target = os.path.abspath(workspace)
    with friendly_errors():
        require_mount(target, agent)
    group = ctx.find_root().command
    has_run = isinstance(group, click.Group) and group.get_command(ctx, "run") is not None
    argv, env = server_command(target, agent, port, has_run)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(argv[0], argv, env)
