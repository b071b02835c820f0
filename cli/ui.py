"""``omxfs ui WS``: the supervisor's live dashboard (``omxfs.ui``), served on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cli.errors import friendly_errors
from cli.params import MOUNT_PATH

if TYPE_CHECKING:
    import socket

LOCALHOST = "127.0.0.1"


def _listen(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1 only (port 0: any free one), bound before the URL is printed."""
    import socket

    from omxfs.errors import OSFailure

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOCALHOST, port))
    except OSError as exc:
        sock.close()
        raise OSFailure(f"cannot listen on {LOCALHOST}:{port}: {exc.strerror}", exc.errno or errno.EADDRINUSE) from None
    sock.listen(128)
    return sock


@click.command("ui")
@click.argument("workspace", type=MOUNT_PATH)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, show_default="any free port", help="Port on 127.0.0.1."
)
@click.option(
    "--as",
    "actor",
    metavar="NAME",
    help=(
        "Act as this supervisor (roll back, restore, accept or discard a review, mark resolved; audited with your "
        "uid). Without it the page is read-only."
    ),
)
def ui(workspace: Path, port: int, actor: str | None) -> None:
    """Serve a live web dashboard of WORKSPACE (mounted or not) on 127.0.0.1, until Ctrl-C.

    It prints the URL to open once: it holds a token, new at every start, without which nothing is served.
    Pages: needs you (what waits for you, counted in every page's header), team, activity (live), handoffs,
    collaborative files and conflicts, realtime documents, checkpoints and reviews, omx runs.
    """
    import uvicorn  # the workspace, the server and the app load only for this command: not for `omxfs --help`

    from omxfs.store.workspace import Workspace
    from omxfs.ui.app import build, guarded
    from omxfs.ui.guard import new_token
    from omxfs.view.locate import store_path

    with friendly_errors(), store_path(workspace) as path:
        ws = Workspace(path)
        if actor is not None:
            ws.require_known(actor)
        token = new_token()
        sock = _listen(port)
        bound = sock.getsockname()[1]
        app = guarded(build(ws, token, actor, str(workspace)), token, bound)
        if actor is None:
            mode = "read-only (start with --as SUPERVISOR to act)"
        elif ws.is_supervisor(actor):
            mode = f"acting as supervisor {actor}"
        else:
            mode = f"read-only as {actor} (no supervisor)"
        click.echo(f"omxfs ui of {workspace}: {mode}")
        click.echo(f"open http://{LOCALHOST}:{bound}/?token={token}", nl=True)
        click.echo("Ctrl-C stops it", err=True)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
