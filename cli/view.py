"""``omxfs run``: a command in an agent's view of a workspace (``omxfs.view``)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cli.errors import friendly_errors
from cli.params import MOUNT_PATH, limit_options
from omxfs.view.sandbox import Bind, runtime_dirs

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

HELP = """Run COMMAND as agent NAME in a view of WORKSPACE made for it.

\b
Inside the view the workspace shows at its own path, and:
  agents/NAME/   the store's own directory, read-write at native speed
  agents/*/      every other agent's zone, read-only
  handoff/ collaborative/ realtime/
                 served by a daemon for which every request is NAME's:
                 no OMX_AGENT, no uid map, nothing to forge
  .omxfs/        read-only
The host's system directories are read-only; /tmp is private, $HOME is
empty, there is no /run or /home, and the view has its own PID, IPC and
user namespaces: no capability, no other process, no host UNIX socket.
COMMAND and all it starts are held to limits they cannot lift: processes
at once, memory, size of a file (a cgroup of the view's own where one can
be made); a view that reaches one ends with a line that names it.
COMMAND starts in the current directory if it lies inside WORKSPACE, else
in WORKSPACE/agents/NAME. Its exit status is omxfs run's.

WORKSPACE is the store directory or the mountpoint of an `omxfs mount`.

\b
Examples (from outside ./ws, so each starts in ws/agents/NAME):
  omxfs run ./ws --as alice -- sh
  omxfs run ./ws --as alice --ro-bind ~/.gitconfig -- git init project
  omxfs run ./ws --as bob --no-network -- python3 agent.py
  omxfs run ./ws --as bob --review -- sh   # then: omxfs diff ./ws bob --review
  omxfs run ./ws --as bob --branch try1 -- sh   # then: omxfs branches ./ws bob
  omxfs run ./ws --as bob --branch fix --from try1 -- sh   # try1 as it is, then
                                # omxfs accept ./ws bob --branch fix --as bob: into try1
  omxfs run ./ws --as bob --max-procs 64 --max-memory 2G -- make -j8
"""


@click.command("run", help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("workspace", type=MOUNT_PATH)  # not click.Path, which stats it: WS may be a mount that hangs
@click.option("--as", "agent", required=True, metavar="NAME", help="The agent the view belongs to.")
@click.option("--bind", "binds", multiple=True, metavar="PATH[:DEST]", help="Show a host path read-write.")
@click.option("--ro-bind", "ro_binds", multiple=True, metavar="PATH[:DEST]", help="Show a host path read-only.")
@click.option("--no-network", is_flag=True, help="Cut the network (a network namespace with loopback only).")
@click.option(
    "--review",
    is_flag=True,
    help="Hold the run's changes to NAME's zone apart until `omxfs accept` (or `omxfs discard`); others see the "
    "zone as it was. The same as --branch review.",
)
@click.option(
    "--branch",
    metavar="BRANCH",
    help="As --review, under the name BRANCH: several branches of one zone are held apart and may run at once "
    "(`omxfs branches WS NAME` lists them).",
)
@click.option(
    "--from",
    "parent",
    metavar="PARENT",
    help="Make the new BRANCH from NAME's pending branch PARENT: the view shows the zone as PARENT has it, and "
    "`omxfs accept --branch BRANCH` applies BRANCH into PARENT, not the zone (accept PARENT then to apply both).",
)
@limit_options("the view")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(
    workspace: Path,
    agent: str,
    binds: tuple[str, ...],
    ro_binds: tuple[str, ...],
    no_network: bool,
    review: bool,
    branch: str | None,
    parent: str | None,
    max_procs: int | None,
    max_memory: int | None,
    max_file_size: int | None,
    command: tuple[str, ...],
) -> None:
    from cli.checkpoints import store_of
    from omxfs.limits import Limits
    from omxfs.view import launch

    if not command[0]:  # execvp("") would fail in the view with a traceback
        raise click.BadParameter("the command name is empty", param_hint="COMMAND")
    held = branch_named(branch, review)
    if parent is not None and held is None:
        raise click.UsageError(f"--from {parent} makes a new branch from another: give it --branch NAME")
    paths = [_bind(spec, read_only=False) for spec in binds] + [_bind(spec, read_only=True) for spec in ro_binds]
    hidden = hidden_host_paths(command, workspace, paths)
    if hidden:  # the command runs all the same: it may mean the view's own /tmp
        click.echo(
            f"omxfs run: {', '.join(hidden)}: not in the view, whose /tmp and /var/tmp are its own, empty: show it "
            f"with {' '.join(f'--ro-bind {path}' for path in hidden)} (--bind to write)",
            err=True,
        )
    with friendly_errors(), contextlib.ExitStack() as stack:
        # the store, reached before the run: a root launcher ends in a mount namespace of its own, where a mount
        # of the workspace it did not show the view is detached (``namespaces.drop_fuse_mounts``)
        ws = stack.enter_context(store_of(workspace)) if held else None
        limits = Limits(max_procs, max_memory, max_file_size)
        status = launch.run(
            str(workspace),
            agent,
            command,
            binds=paths,
            network=not no_network,
            branch=held,
            parent=parent,
            limits=limits,
        )
        if ws is not None and held is not None:
            _tell_pending(ws, workspace, agent, held)
    sys.exit(status)


def branch_named(branch: str | None, review: bool) -> str | None:
    """The branch a run holds its changes in: ``--branch``'s (a plain name), ``review`` for ``--review``, else
    None (a plain run)."""
    from omxfs.checkpoints.branches import REVIEW, check_name
    from omxfs.errors import InvalidInput

    if branch is None:
        return REVIEW if review else None
    if review and branch != REVIEW:
        raise click.UsageError(f"--review is --branch {REVIEW}: give one of --review and --branch {branch}")
    try:
        return check_name(branch)
    except InvalidInput as exc:
        raise click.BadParameter(exc.message, param_hint="--branch") from None


def _tell_pending(ws: Workspace, workspace: Path, agent: str, branch: str) -> None:
    """After a review run (``omxfs run --review``, ``omx --as NAME --review``) or a branch's (``--branch``): the
    pending change's stat and the commands that show, apply and drop it, as the run's agent (its owner may accept
    or discard it); or that nothing is held, when the run changed nothing of the zone but omx's record of it
    (``review.settle``)."""
    from omxfs.checkpoints.review import RUN_RECORDS, Review, settle
    from omxfs.shell_line import shell_line
    from omxfs.view.env import ATTEMPT_ENV

    review = Review(ws, agent, branch)
    where = f"{agent}'s zone" if review.is_review else f"branch {branch} of {agent}'s zone"
    if review.pending and review.made.parent is not None:
        where += f", made from branch {review.made.parent} (an accept applies it there)"
    pending, held = settle(review)
    if not held:
        but = f" but omx's record of it, now in {RUN_RECORDS}/" if pending.added else ""
        click.echo(f"omxfs run: nothing held for review in {where}: the run changed nothing there{but}",
                   err=True)  # fmt: skip
        return
    stat = f"{len(pending.added)} added, {len(pending.modified)} modified, {len(pending.deleted)} deleted"
    click.echo(f"omxfs run: held for review in {where}: {stat}", err=True)
    if os.environ.get(ATTEMPT_ENV):  # one of omx --attempts' runs: its table ends with the commands, once for all
        return
    named = ("--review",) if review.is_review else ("--branch", branch)
    decided = () if review.is_review else ("--branch", branch)
    click.echo(f"  show:    {shell_line('omxfs', 'diff', workspace, agent, *named)}", err=True)
    click.echo(f"  apply:   {shell_line('omxfs', 'accept', workspace, agent, *decided, '--as', agent)}", err=True)
    click.echo(f"  drop:    {shell_line('omxfs', 'discard', workspace, agent, *decided, '--as', agent)}", err=True)
    if not review.is_review:
        click.echo(f"  list:    {shell_line('omxfs', 'branches', workspace, agent)}", err=True)


#: the host's directories a view replaces with empty ones of its own (``sandbox.bwrap_args``)
PRIVATE_TMP = ("/tmp", "/var/tmp")


def hidden_host_paths(command: tuple[str, ...], workspace: Path, binds: list[Bind]) -> list[str]:
    """The existing host paths COMMAND's arguments name (``PATH`` or ``--option=PATH``) in a /tmp the view replaces
    with its own, unless the view shows them all the same (in the workspace, bound, or omx's own interpreter and
    packages, which a checkout under ``mktemp -d`` has in /tmp): a file the caller made in /tmp is the one thing a
    view hides that people pass it."""
    shown = [os.path.abspath(workspace), *(bind.dest for bind in binds), *runtime_dirs()]  # omx's own: in the view
    hidden: list[str] = []
    for argument in command:
        value = argument.partition("=")[2] if argument.startswith("-") else argument
        if not value.startswith("/"):  # a relative path is the view's: COMMAND starts in the workspace
            continue
        path = os.path.normpath(value)
        inside = _within(path, PRIVATE_TMP) and path not in PRIVATE_TMP  # /tmp itself: the view's, surely
        if inside and not _within(path, shown) and os.path.lexists(path) and path not in hidden:
            hidden.append(path)
    return hidden


def _within(path: str, dirs: list[str] | tuple[str, ...]) -> bool:
    return any(path == top or path.startswith(top.rstrip("/") + "/") for top in dirs)


def _bind(spec: str, *, read_only: bool) -> Bind:
    option = "--ro-bind" if read_only else "--bind"
    source, _, dest = spec.partition(":")
    if not source:  # abspath("") is the current directory: never bind it by accident
        raise click.BadParameter(f"{spec!r} names no source path", param_hint=option)
    source = os.path.abspath(os.path.expanduser(source))
    if not os.path.exists(source):
        raise click.BadParameter(f"{source} does not exist", param_hint=option)
    return Bind(source, os.path.abspath(dest) if dest else source, read_only)
