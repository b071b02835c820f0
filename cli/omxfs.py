"""``omxfs``: create and inspect omx workspaces."""

from __future__ import annotations

from pathlib import Path

import click

from cli.errors import friendly_errors
from omxfs.store import Workspace


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="omx")
def main() -> None:
    """A shared workspace for teams of AI agents.

    \b
    A workspace is a directory with four zones:
      agents/<agent>/       private: only <agent> writes, everyone reads
      handoff/<a>_to_<b>/   deliveries from <a> to <b>, with generated .meta.json
      collaborative/        version-controlled files with compare-and-swap
      realtime/             CRDT documents several agents edit at once

    \b
    Start with:
      omxfs init ./ws --agent alice --agent bob
    """


@main.command()
@click.argument("workspace", type=click.Path(file_okay=False, path_type=Path))
@click.option("--agent", "agents", multiple=True, metavar="NAME", help="An agent that may act here (repeatable).")
@click.option(
    "--supervisor",
    "supervisors",
    multiple=True,
    metavar="NAME",
    help="An agent that may write in every zone, audited.",
)
def init(workspace: Path, agents: tuple[str, ...], supervisors: tuple[str, ...]) -> None:
    """Create the workspace layout in WORKSPACE (idempotent: re-run it to add agents).

    Agent names are 1-63 characters of a-z, 0-9 and '-'.
    """
    with friendly_errors():
        ws = Workspace.init(workspace, agents=list(agents), supervisors=list(supervisors))
    click.echo(f"workspace ready at {ws.root.resolve()}")
    click.echo(f"agents: {', '.join(ws.agents()) or '(none yet: add some with --agent NAME)'}")
    if ws.config.supervisors:
        click.echo(f"supervisors: {', '.join(ws.config.supervisors)}")


@main.command()
@click.argument("workspace", type=click.Path(exists=True, file_okay=False, path_type=Path))
def status(workspace: Path) -> None:
    """Show the agents and what each zone holds."""
    with friendly_errors():
        ws = Workspace(workspace)
        click.echo(f"workspace {ws.root.resolve()}")
        for agent in ws.agents():
            files = ws.private.list(agent)
            inbox = ws.handoff.inbox(agent)
            click.echo(f"  {agent}: {len(files)} private file(s), {len(inbox)} handoff(s) received")
        for path in ws.collab.list():
            click.echo(f"  collaborative/{path}: version {ws.collab.current_version(path)}")
        for doc in ws.realtime.list():
            click.echo(f"  realtime/{doc}: {', '.join(f'{k}:{v}' for k, v in ws.realtime.load(doc).schema.items())}")
