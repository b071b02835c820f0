"""``omxfs rollback PATH N``, ``omxfs handoff FILE --to AGENT -m MSG`` (SPEC §6; ``omxfs log PATH``: ``cli.log``).

Conveniences over the mount: they do what any program could, through the mount, so the daemon applies its rules
and logs them as for everyone else. ``log`` reads the versions' entries and the conflict records; ``rollback``
reads the old version, observes the current one (``user.omx.version``), sets ``user.omx.message`` and writes the
old content back, which commits a new version or fails with the conflict; ``handoff`` copies the file into
``handoff/<me>_to_<agent>/`` and sets ``user.omx.message`` while it is open, so the delivery has it at once.

On a workspace directory that is not mounted they call the store directly. Each acts as ``--as NAME``, else as
SPEC §3 says (``cli.acting``).
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cli.errors import friendly_errors
from cli.log import check_workspace, collaborative_file, store_at
from cli.params import AS_AGENT, WORKSPACE
from omxfs.errors import OmxError
from omxfs.store.layout import (
    COLLABORATIVE,
    CONFIG,
    HANDOFF,
    MESSAGE,
    META_DIR,
    VERSION,
    VERSIONS,
    version_name,
)

if TYPE_CHECKING:
    pass

_WHY = {
    errno.EBUSY: "conflict: it changed since you read it; the rejected write is kept under collaborative/.conflicts/",
    errno.EACCES: "permission denied",
    errno.ENOENT: "no such file or directory",
    errno.EINVAL: "the mount refused the name or the content",
}


def _fail(what: str, exc: OSError) -> click.ClickException:
    code = exc.errno or errno.EIO
    return click.ClickException(f"cannot {what}: {_WHY.get(code, os.strerror(code))} ({os.strerror(code)})")


@click.command("rollback")
@click.argument("path", type=click.Path(path_type=Path))
@click.argument("version", type=click.IntRange(min=1))
@click.option("-m", "--message", help='The commit message (default: "rollback to version N").')
@AS_AGENT
@WORKSPACE
def rollback(path: Path, version: int, message: str | None, agent: str | None, workspace: Path | None) -> None:
    """Make a new version of PATH whose content is VERSION's; the history is kept."""
    from cli.acting import acting_agent

    with friendly_errors():
        root, rel = collaborative_file(path, workspace)
        note = message or f"rollback to version {version}"
        me = acting_agent(root, agent)
        check_workspace(root, path, workspace)
    if not os.path.ismount(root):
        with friendly_errors():
            entry = store_at(root).collab.rollback(me, str(rel), version, message=note)
        click.echo(f"{rel}: version {entry.version} has the content of version {version}")
        return
    target = root / "collaborative/current" / rel
    try:
        old = (root / COLLABORATIVE / VERSIONS / rel / version_name(version)).read_bytes()
    except FileNotFoundError:
        raise click.ClickException(f"collaborative/current/{rel} has no version {version}") from None
    except OSError as exc:
        raise _fail(f"read version {version} of {rel}", exc) from exc
    try:
        seen = int(os.getxattr(target, VERSION))  # observing the current version makes it our base
        os.setxattr(target, MESSAGE, note.encode("utf-8"))
        try:
            with open(target, "wb") as f:
                f.write(old)
        except OSError:
            with contextlib.suppress(OSError):
                os.removexattr(target, MESSAGE)  # not for whatever is written next
            raise
        now = int(os.getxattr(target, VERSION))
    except OSError as exc:
        raise _fail(f"roll {rel} back to version {version}", exc) from exc
    click.echo(f"{rel}: version {now} has the content of version {version} (was version {seen})")


@click.command("handoff")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--to", "recipient", required=True, metavar="AGENT", help="Who receives it.")
@click.option("-m", "--message", default="", help="What the recipient should know or do.")
@click.option("--name", help="The name in the handoff box (default: FILE's name).")
@AS_AGENT
@WORKSPACE
def handoff(
    file: Path, recipient: str, message: str, name: str | None, agent: str | None, workspace: Path | None
) -> None:
    """Deliver FILE to AGENT: handoff/<you>_to_<AGENT>/<name> with its .meta.json."""
    from cli.acting import acting_agent
    from omxfs.store.config import parse_config

    workspace = workspace or Path(".")
    with friendly_errors():
        me = acting_agent(workspace, agent)
    if not (workspace / HANDOFF).is_dir():
        raise click.ClickException(f"{workspace} is not an omx workspace (no handoff/ directory)")
    content = file.read_bytes()
    filename = name or file.name
    if recipient == me:  # the mount would refuse the box handoff/<me>_to_<me> as a permission, not say why
        raise click.ClickException(f"a handoff goes to another agent: you act as {me} (--as NAME acts as another)")
    if not os.path.ismount(workspace):
        with friendly_errors():
            store_at(workspace).handoff.deliver(me, recipient, filename, content, message)
        click.echo(f"delivered handoff/{me}_to_{recipient}/{filename}")
        return
    with contextlib.suppress(OSError, OmxError):  # the config is readable through the mount: say it plainly
        config = parse_config((workspace / META_DIR / CONFIG).read_text("utf-8"))
        if not config.knows(recipient):
            raise click.ClickException(f"no agent named {recipient!r} in this workspace")
    box = workspace / HANDOFF / f"{me}_to_{recipient}"
    try:
        box.mkdir(exist_ok=True)
    except OSError as exc:
        raise _fail(f"open the box {box} as {me} (--as NAME if you act as another agent)", exc) from exc
    target = box / filename
    try:
        with open(target, "wb") as f:
            os.setxattr(target, MESSAGE, message.encode("utf-8"))  # applies at the close, with the content
            f.write(content)
    except OSError as exc:
        raise _fail(f"deliver {target}", exc) from exc
    click.echo(f"delivered handoff/{me}_to_{recipient}/{filename}")


COMMANDS: list[click.Command] = [rollback, handoff]
