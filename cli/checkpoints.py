"""``omxfs checkpoint``, ``checkpoints``, ``diff`` and ``restore``: a private zone's history (``omxfs.checkpoints``).

Each works on the store, found the way ``omxfs fsck`` finds it: WORKSPACE is the store directory or the mountpoint
of an ``omxfs mount`` of it. The acting agent (who makes a checkpoint, restores, prunes) is ``--as NAME``, else
``OMX_AGENT``, else the login name, as for the other commands on a store directory; it must be the zone's owner or
a supervisor.

Each command is declared once (``cli.declare``): ``omxfs`` runs its plain forms without click, and makes the click
command of it for every other form and for ``--help``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from cli.declare import Argument, Declared, Option, Usage
from cli.echo import echo
from omxfs.errors import InvalidInput, NotPermitted

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from omxfs.checkpoints.review import Review
    from omxfs.store.workspace import Workspace

#: WORKSPACE, the first argument of each
WORKSPACE = Argument("workspace", kind="path")
#: NAME, whose zone
NAME = Argument("name")
AS_ACTOR = Option(
    "--as",
    name="actor",
    metavar="NAME",
    help="The agent acting: the zone's owner or a supervisor (default: OMX_AGENT, else your login).",
)
REVIEW_FLAG = Option(
    "--review", name="review", flag=True, help="The review (`omxfs run --review`): the default, --branch review."
)


@contextlib.contextmanager
def store_of(workspace: Path) -> Iterator[Workspace]:
    """The store behind WORKSPACE, beneath a mount if one covers it (as ``omxfs fsck``)."""
    from omxfs.store.workspace import Workspace
    from omxfs.view.locate import store_path

    with store_path(workspace) as path:
        yield Workspace(path, shown_as=str(workspace))  # the commands it prints name WORKSPACE as it was typed


def _actor(ws: Workspace, actor: str | None) -> str:
    from omxfs.view.env import VIEW_ENV

    if os.environ.get(VIEW_ENV):
        raise NotPermitted(
            "checkpoints are made and restored from outside a view: its .omxfs/ is read-only (run this on the host)"
        )
    if actor is not None:
        return actor
    from cli.who import who

    name, chosen_by = who(ws.root, ws.config, mounted=False)
    if not ws.config.knows(name):
        raise InvalidInput(
            f"you act as {name!r} ({chosen_by}), which is no agent of this workspace: name one with --as NAME"
        )
    return name


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _checkpoint(workspace: Path, actor: str | None, zone: str | None, message: str) -> None:
    """Record the acting agent's private zone (or OWNER's) as it is now, and print the checkpoint's id.

    Content is stored once, inside the store: a file unchanged since the last checkpoint adds nothing.
    """
    from omxfs.checkpoints.history import ZoneHistory

    with store_of(workspace) as ws:
        acting = _actor(ws, actor)
        made = ZoneHistory(ws, zone or acting).make(acting, message)
    assert made is not None
    echo(made.number)
    echo(
        f"checkpoint {made.number} of {made.zone}: {made.changed} change(s), {_size(made.bytes_added)} added",
        err=True,
    )


def _checkpoints(workspace: Path, name: str, as_json: bool, prune: int | None, actor: str | None) -> None:
    """List the checkpoints of NAME's private zone, oldest first (with --prune, remove all but the newest KEEP)."""
    from omxfs.checkpoints.history import ZoneHistory
    from omxfs.shell_line import shell_line

    with store_of(workspace) as ws:
        history = ZoneHistory(ws, name)
        if prune is not None:
            from omxfs.checkpoints.review import branch_bases
            from omxfs.snapshots.record import Snapshots  # with the snapshots' pydantic records: only to prune

            pinned = Snapshots(ws).checkpoints_named(name) | branch_bases(ws, name)
            pruned = history.prune(_actor(ws, actor), prune, pinned)
            kept = f"; kept {len(pinned)} that snapshots or pending branches name" if pinned else ""
            if pruned.bases:
                shown = ", ".join(map(str, pruned.bases))
                kept += f"; kept {shown}: newer ones are written as what changed since"
            echo(
                f"removed {len(pruned.manifests)} checkpoint(s) and {pruned.blobs} blob(s) ({_size(pruned.bytes)})"
                + kept,
                err=True,
            )
        made = history.all()
    if as_json:
        echo(json.dumps([m.summary() for m in made], indent=2))
        return
    if not made:
        make = shell_line("omxfs", "checkpoint", workspace, "--as", name)
        echo(f"no checkpoints of {name} yet (make one with `{make}`)")
        return
    echo(f"{'ID':>4}  {'TIME':27}  {'BY':12}  {'CHANGED':>7}  {'ADDED':>10}  MESSAGE")
    for m in made:
        echo(f"{m.number:>4}  {m.time:27}  {m.by:12}  {m.changed:>7}  {_size(m.bytes_added):>10}  {m.message}")


def _branch_option(what: str) -> Option:
    return Option(
        "--branch", name="branch", metavar="BRANCH", help=f"{what} NAME's branch BRANCH (`omxfs run --branch`)."
    )


def _branch(ws: Workspace, name: str, branch: str | None, review: bool) -> Review:
    """NAME's branch that ``--branch`` or ``--review`` names (``review`` with neither)."""
    from omxfs.checkpoints.branches import REVIEW, check_name
    from omxfs.checkpoints.review import Review

    if branch is not None and review and branch != REVIEW:
        raise Usage(f"--review is --branch {REVIEW}: give one of --review and --branch {branch}")
    return Review(ws, ws.require_known(name), check_name(branch) if branch is not None else REVIEW)


def _not_in_a_branch_view(ws: Workspace, workspace: Path, name: str, *command: str) -> None:
    """Refused in a view of one of NAME's branches, whose zone is that branch's overlay: a branch is compared with
    the zone there by no command (the command's line on the host, or the MCP tools, do it)."""
    from omxfs.shell_line import shell_line
    from omxfs.view.branch_view import viewed_branch
    from omxfs.view.env import VIEW_ENV

    if not os.environ.get(VIEW_ENV) or (current := viewed_branch(ws, ws.require_known(name))) is None:
        return
    host = shell_line("omxfs", command[0], workspace, name, *command[1:])
    raise InvalidInput(
        f"in the view of {name}'s branch {current} the zone is that branch's overlay, so no branch is compared with "
        f"the zone here: run `{host}` on the host (or list_my_branches over MCP)"
    )


def _diff(
    workspace: Path,
    name: str,
    source: str | None,
    target: str | None,
    as_json: bool,
    review: bool,
    branch_names: tuple[str, ...],
) -> None:
    """What changed in NAME's zone from checkpoint FROM (default: the last) to TO (default: the zone now).

    Paths are relative to the zone; text files get a unified diff, others their size and sha256. With --review,
    the change NAME's review runs made, against the zone now: what `omxfs accept` would apply; with --branch
    BRANCH, the change of that branch (--review is --branch review); of a branch made from another (`omxfs run
    --from`), against that one as it is now. With --branch A --branch B, the zone as branch A has it against the
    zone as branch B has it: two attempts compared.
    """
    from omxfs.checkpoints.diff import diff
    from omxfs.checkpoints.history import ZoneHistory

    if len(branch_names) > 2:
        raise Usage("--branch compares at most two branches: give it once or twice")
    held = review or bool(branch_names)
    if held and (source or target):
        flag = "--review" if not branch_names else "--branch"
        raise Usage(f"{flag} compares the zone now with its pending change: give no FROM or TO")
    if review and len(branch_names) == 2:
        raise Usage("--review is --branch review: give --branch twice, or --review and no --branch")
    with store_of(workspace) as ws:
        if not held:
            result = diff(ZoneHistory(ws, name), source, target)
        else:
            from omxfs.checkpoints.review import branches_diff, pending_diff  # a plain diff loads no branches

            _not_in_a_branch_view(ws, workspace, name, "diff", *(f"--branch={b}" for b in branch_names))
            if len(branch_names) == 2:
                first, second = (_branch(ws, name, b, False) for b in branch_names)
                result = branches_diff(first, second)
            else:
                result = pending_diff(_branch(ws, name, branch_names[0] if branch_names else None, review))
    if as_json:
        echo(json.dumps(result.to_json(), indent=2))
        return
    for line in result.lines():
        echo(line)


def _restore(workspace: Path, name: str, checkpoint_id: str, paths: tuple[str, ...], actor: str | None) -> None:
    """Put NAME's zone (or only PATHs in it, relative to the zone) back exactly as in CHECKPOINT.

    A checkpoint of the zone as it is is made first: the command prints how to undo the restore. Refused while
    a view of NAME runs (`omxfs run`): end it first.
    """
    from omxfs.checkpoints.history import ZoneHistory
    from omxfs.checkpoints.restore import restore
    from omxfs.shell_line import shell_line

    with store_of(workspace) as ws:
        history = ZoneHistory(ws, name)
        acting = _actor(ws, actor)
        done = restore(history, acting, history.resolve(checkpoint_id), paths)
    what = ", ".join(done.paths) if done.paths else f"the zone of {name}"
    echo(f"restored {what} to checkpoint {done.checkpoint} ({done.files} file(s))")
    if done.removed:  # not "0 file(s)" alone, which reads like nothing happened
        echo(f"not in checkpoint {done.checkpoint}, so removed: {', '.join(done.removed)}", err=True)
    if done.skipped:
        echo(f"not restored (only a program or root makes them): {', '.join(done.skipped)}", err=True)
    if not done.owners_kept:
        echo("owners: not root, so every restored node is yours", err=True)
    echo(f"undo with: {shell_line('omxfs', 'restore', workspace, name, done.undo, '--as', acting)}")


def _accept(workspace: Path, name: str, branch: str | None, review: bool, actor: str | None) -> None:
    """Apply the change NAME's review runs hold apart (`omxfs run --review`) to NAME's zone.

    With --branch BRANCH, the change of that branch (`omxfs run --branch`). A checkpoint of the zone is made first:
    the command prints the restore that undoes the accept. Refused while a view of NAME runs. An accept that was
    killed half-way is finished by running it again. The first branch accepted wins: a sibling that changed a path
    it changed too is conflicted, kept, and refused, as is a branch whose paths the zone itself changed since it was
    made (see `omxfs branches`; `omxfs rebase` takes it as it is).

    A branch made from another (`omxfs run --from PARENT`) goes into PARENT, not the zone: accept PARENT then to
    apply both. A branch with pending branches made from it is refused until each is accepted or discarded.
    """
    from omxfs.checkpoints.review import accept
    from omxfs.shell_line import shell_line

    with store_of(workspace) as ws:
        held = _branch(ws, name, branch, review)
        acting = _actor(ws, actor)
        done = accept(held, acting)
    finished = " (an interrupted accept, finished)" if done.resumed else ""
    if done.into is not None:
        echo(f"accepted {held.called} into branch {done.into}{finished}")
        parent = shell_line("omxfs", "accept", workspace, name, "--branch", done.into, "--as", acting)
        echo(f"the zone is unchanged: `{parent}` applies both, discarding {done.into} drops both")
        return
    echo(f"accepted {held.called}{finished}")
    echo(f"undo with: {shell_line('omxfs', 'restore', workspace, name, done.undo, '--as', acting)}")


def _discard(workspace: Path, name: str, branch: str | None, review: bool, actor: str | None) -> None:
    """Drop the change NAME's review runs hold apart: NAME's zone stays as it is.

    With --branch BRANCH, the change of that branch (`omxfs run --branch`). Refused while a view of NAME runs."""
    from omxfs.checkpoints.review import discard

    with store_of(workspace) as ws:
        held = _branch(ws, name, branch, review)
        discard(held, _actor(ws, actor))
    echo(f"discarded {held.called}")


def _rebase(workspace: Path, name: str, branch: str | None, review: bool, actor: str | None) -> None:
    """Take NAME's branch as it is on the zone now: it is no longer conflicted, and accept applies it.

    \b
    A branch shows the zone live under its change (its overlay's lower
    layer is the zone itself), so nothing of it moves. What a rebase
    changes is what the branch is judged against: the first branch
    accepted wins, and a branch made before an accept that changed the
    same paths is conflicted (`omxfs branches`) and refused by accept.
    After a rebase only accepts made after it count, so accept applies
    it, overwriting what those earlier accepts changed. The paths it will
    overwrite are printed; see them first with `omxfs diff --branch`,
    which shows exactly what accept would do to the zone now.

    \b
    A branch made from another (`omxfs run --from PARENT`) is rebased on
    PARENT as it is. Refused while a view of NAME runs.

    \b
    Example, after `omxfs accept ./ws bob --branch a --as bob` made b
    conflicted:
      omxfs diff ./ws bob --branch b           # what accepting b does now
      omxfs rebase ./ws bob --branch b --as bob
      omxfs accept ./ws bob --branch b --as bob
    """
    from omxfs.checkpoints.review import rebase
    from omxfs.shell_line import shell_line

    with store_of(workspace) as ws:
        held = _branch(ws, name, branch, review)
        overwritten = rebase(held, _actor(ws, actor))
        into = held.into()
    echo(f"rebased {held.called} on {into} as it is now")
    for accepted, paths in overwritten.items():
        by = "the zone itself" if accepted is None else f"branch {accepted}"
        echo(f"warning: accepting it overwrites what {by} changed: {', '.join(paths)}", err=True)
    if overwritten:
        echo(f"  see: {shell_line('omxfs', 'diff', workspace, name, *held.options('diff').split())}", err=True)


def _branches(workspace: Path, name: str, as_json: bool) -> None:
    """List NAME's branches (`omxfs run --branch`, `--review`): pending ones, then the last accepted or discarded.

    PARENT is the branch one was made from (`omxfs run --from`) and is accepted into, - for the zone. STATE is
    pending, conflicted (a branch accepted since, or the zone itself, changed a path it changed too: it is kept,
    and accept refuses it until `omxfs rebase`), orphaned (its PARENT is gone: discard it), accepted or discarded;
    CHANGES counts what a pending one adds (+), modifies (~) and deletes (-), against its PARENT.
    """
    from omxfs.checkpoints.review import branch_states
    from omxfs.shell_line import shell_line

    with store_of(workspace) as ws:
        _not_in_a_branch_view(ws, workspace, name, "branches")
        rows = branch_states(ws, ws.require_known(name))
    if as_json:
        echo(json.dumps([row.summary() for row in rows], indent=2))
        return
    if not rows:
        start = shell_line("omxfs", "run", workspace, "--as", name, "--branch", "NAME", "--", "CMD")
        echo(f"no branches of {name} (start one with `{start}`)")
        return
    echo(f"{'BRANCH':16}  {'PARENT':16}  {'CREATED':27}  {'BY':12}  {'CHANGES':12}  {'STATE':10}  DETAIL")
    for row in rows:
        shown = f"{row.name:16}  {row.parent or '-':16}  {row.created:27}  {row.by or '-':12}  {row.stat:12}"
        echo(f"{shown}  {row.state:10}  {row.detail}".rstrip())


checkpoint = Declared(
    "checkpoint",
    _checkpoint,
    WORKSPACE,
    AS_ACTOR,
    Option("--zone", name="zone", metavar="OWNER", help="Whose zone (default: the acting agent's own)."),
    Option("-m", "--message", name="message", default="", help="What this checkpoint is for."),
)
checkpoints = Declared(
    "checkpoints",
    _checkpoints,
    WORKSPACE,
    NAME,
    Option("--json", name="as_json", flag=True, help="A JSON list of objects (id, time, message, by, ...)."),
    Option(
        "--prune", name="prune", kind="count", metavar="KEEP", help="Keep the newest KEEP checkpoints, remove the rest."
    ),
    AS_ACTOR,
)
diff_command = Declared(
    "diff",
    _diff,
    WORKSPACE,
    NAME,
    Argument("source", metavar="[FROM]", required=False),
    Argument("target", metavar="[TO]", required=False),
    Option("--json", name="as_json", flag=True, help='{"added": [...], "modified": [...], "deleted": [...]} + details'),
    Option(
        "--review",
        name="review",
        flag=True,
        help="The change a review run holds apart (`omxfs run --review`), not yet in.",
    ),
    Option(
        "--branch",
        name="branch_names",
        metavar="BRANCH",
        multiple=True,
        help="The change held apart in NAME's branch BRANCH (`omxfs run --branch`); given twice, the two branches "
        "against each other.",
    ),
)
restore_command = Declared(
    "restore",
    _restore,
    WORKSPACE,
    NAME,
    Argument("checkpoint_id", metavar="CHECKPOINT"),
    Argument("paths", metavar="[PATH]...", many=True),
    AS_ACTOR,
)
accept_command = Declared("accept", _accept, WORKSPACE, NAME, _branch_option("Apply"), REVIEW_FLAG, AS_ACTOR)
discard_command = Declared("discard", _discard, WORKSPACE, NAME, _branch_option("Drop"), REVIEW_FLAG, AS_ACTOR)
rebase_command = Declared("rebase", _rebase, WORKSPACE, NAME, _branch_option("Rebase"), REVIEW_FLAG, AS_ACTOR)
branches_command = Declared(
    "branches",
    _branches,
    WORKSPACE,
    NAME,
    Option(
        "--json",
        name="as_json",
        flag=True,
        help="A JSON list of objects (name, parent, created, by, stat, state, ...).",
    ),
)
