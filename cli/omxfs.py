"""``omxfs``: create and inspect omx workspaces."""

from __future__ import annotations

from cli import loading  # before the rest: a Ctrl-C while they load ends omxfs quietly (cli/loading.py)

# isort: split
import os
import sys
from pathlib import Path

import click

from cli.commands import COMMANDS
from cli.errors import friendly_errors
from cli.lazy_group import LazyGroup
from cli.params import MOUNT_PATH


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
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
      omxfs mount ./ws --as alice        (mounted over ./ws; `omxfs umount ./ws` to stop)
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

    Agent names are 1-63 characters of a-z, 0-9 and '-'. On a mounted workspace (or its mountpoint) it adds them
    to the store beneath, and the mount knows them at once.
    """
    from omxfs.store.workspace import Workspace
    from omxfs.view.locate import store_beneath

    with friendly_errors():
        # a mount shows the config read-only to its agents: agents are added to the store beneath (as fsck checks it)
        beneath = store_beneath(workspace)
        try:
            ws = Workspace.init(
                workspace if beneath is None else beneath.reached, agents=list(agents), supervisors=list(supervisors)
            )
            agent_names, supervisor_names = ws.agents(), ws.config.supervisors
        finally:
            if beneath is not None:
                os.close(beneath.fd)
    click.echo(f"workspace ready at {workspace.resolve() if beneath is None else beneath.path}")
    click.echo(f"agents: {', '.join(agent_names) or '(none yet: add some with --agent NAME)'}")
    if supervisor_names:
        click.echo(f"supervisors: {', '.join(supervisor_names)}")


@main.command()
@click.argument("workspace", type=MOUNT_PATH)
@click.argument("mountpoint", required=False, type=MOUNT_PATH)
@click.option("--as", "agent", metavar="NAME", help="The identity of callers that name none (default: your login).")
@click.option("--foreground", is_flag=True, help="Serve in this process until unmounted (Ctrl-C unmounts).")
@click.option(
    "--allow-other",
    is_flag=True,
    help="Let other users' processes in (needs user_allow_other); unmapped uids act as the --as identity.",
)
@click.option("--detached", is_flag=True, hidden=True)
@click.option("--ready-fd", type=int, hidden=True)
def mount(
    workspace: Path,
    mountpoint: Path | None,
    agent: str | None,
    foreground: bool,
    allow_other: bool,
    detached: bool,
    ready_fd: int | None,
) -> None:
    """Mount WORKSPACE on MOUNTPOINT (default: over WORKSPACE itself) and return once it answers.

    Requests are made by an agent: the uid map of the workspace config, else the caller's OMX_AGENT,
    else NAME given with --as. The log is WORKSPACE/.omxfs/logs/mount-<pid>.log.
    """
    with loading.again():  # a Ctrl-C while they load ends omxfs quietly: nothing is mounted yet
        import getpass

        from omxfs.errors import OmxError
        from omxfs.fuse import mounts
        from omxfs.shell_line import shell_line
        from omxfs.stop_signals import StopSignals, interrupted

    ws_path = os.path.abspath(workspace)
    target = os.path.abspath(mountpoint or workspace)
    name = agent or getpass.getuser()
    if allow_other and not detached:
        click.echo(
            f"warning: --allow-other lets every local user in, and a user whose uid the workspace's uid map does "
            f"not name acts as {name} (or as the OMX_AGENT it claims), with its own uid for file permissions: map "
            f"each user's uid to an agent in {os.path.join(ws_path, '.omxfs', 'config.toml')} [uids], or give each "
            "agent a view (`omxfs run WS --as NAME -- ...`)",
            err=True,
        )

    def stopped(exc: OmxError) -> None:
        """A start that a stop signal ended: its one line, and the status of a command the signal stopped (130 for
        Ctrl-C); a failure the signal caused (a probe it killed) is told as the signal's."""
        if stop.signum is None:
            return
        message = exc.message if interrupted(exc) else f"{stop.name}: stopped; {exc.message}"
        if target in mounts.omx_mounts():  # said as the mount table has it, not as the start meant it to be
            message += f"; {target} is still mounted: stop it with: {shell_line('omxfs', 'umount', target)}"
        else:
            message += f"; nothing is mounted at {target}"
        click.echo(f"omxfs mount: {message}", err=True)
        raise SystemExit(128 + stop.signum)

    with friendly_errors(), StopSignals() as stop:  # a Ctrl-C is noted, and acted on where nothing is half-done
        try:
            store = mounts.preflight(ws_path, target, name)  # beneath a mount: serve the store, never the mount
            stop.check("stopped before anything was mounted")
        except OmxError as exc:
            mounts.report_ready(ready_fd, f"error {exc.message}")
            stopped(exc)
            raise
        if foreground:
            from omxfs.fuse import daemon  # imports pyfuse3: only on the mount path

            def ready(mounted: daemon.Mounted) -> None:
                if not detached:
                    click.echo(f"mounted {ws_path} at {target} as {name} (pid {mounted.pid}); Ctrl-C unmounts")

            try:
                ended = daemon.run(
                    store,
                    target,
                    name,
                    allow_other=allow_other,
                    detached=detached,
                    ready_fd=ready_fd,
                    on_ready=ready,
                    stop=stop,
                )
            except OmxError as exc:
                stopped(exc)
                raise
            if not detached:
                click.echo(ended)
            return
        argv = [sys.executable, "-m", "cli.omxfs", "mount", ws_path, target, "--as", name, "--foreground"]
        argv += ["--detached", *(["--allow-other"] if allow_other else [])]
        try:
            pid, log = mounts.start_background(argv, target, stop)
        except OmxError as exc:
            stopped(exc)
            raise
        click.echo(f"mounted {ws_path} at {target} as {name} (pid {pid}, log {log}); stop it with: "
                   f"{shell_line('omxfs', 'umount', target)}")  # fmt: skip
        stop.finish()  # the mount is live and reported: a Ctrl-C from here on changes nothing


@main.command()
@click.argument("mountpoint", type=MOUNT_PATH)
@click.option("--lazy", is_flag=True, help="Detach now even if files are open; finish when they are closed.")
def umount(mountpoint: Path, lazy: bool) -> None:
    """Flush and unmount MOUNTPOINT (also a stale one whose daemon died), and wait for the daemon to exit."""
    from omxfs.fuse import mounts

    target = os.path.abspath(mountpoint)
    with friendly_errors():
        mounts.unmount(target, lazy=lazy)
    click.echo(f"unmounted {target}")


loading.done()

if __name__ == "__main__":
    main()
