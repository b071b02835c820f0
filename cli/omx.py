"""``omx``: the local agent (plan, confirm, execute in a sandbox, trace). Not built yet; this says so clearly."""

from __future__ import annotations

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("task", required=False)
@click.version_option(package_name="omx")
def main(task: str | None) -> None:
    """Run TASK with a local agent that plans, asks for confirmation, executes and records a trace.

    Not available yet in this version: today omx provides the shared workspace (`omxfs`) and its Python API.
    """
    raise click.ClickException("the omx agent is not built yet in this version; see `omxfs --help` for the workspace")
