"""``omxfs log PATH`` (SPEC §6): the versions of a collaborative file and the writes to it refused as conflicts,
read through the mount (or on a workspace directory, from the store), as any program could read them; and what
the other conveniences over the mount (``cli.mount_tools``) find a workspace and its file by.

Declared once (``cli.declare``): ``omxfs`` runs its plain forms without click.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from cli.declare import Argument, Declared, Option
from cli.echo import echo
from cli.shared_options import AS_AGENT, WORKSPACE
from omxfs.errors import InvalidInput, NotFound, OmxError
from omxfs.store.layout import AGENTS, COLLABORATIVE, CURRENT, HANDOFF

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace


def collaborative_file(path: Path, workspace: Path | None = None) -> tuple[Path, PurePosixPath]:
    """The workspace root (a mount or a store directory) and the path below ``collaborative/current/``, from the
    names alone (``acting_agent`` comes before any stat: a mount answers none to a process it takes for nobody);
    a relative PATH is taken in ``workspace`` when one is given."""
    absolute = Path(os.path.abspath(path if workspace is None else workspace / path))
    for parent in absolute.parents:
        if parent.name == CURRENT and parent.parent.name == COLLABORATIVE:
            return parent.parent.parent, PurePosixPath(absolute.relative_to(parent).as_posix())
    raise InvalidInput(f"{path} is not a file in collaborative/current/ of an omx workspace")


def check_workspace(root: Path, path: Path, workspace: Path | None) -> None:
    """``root``, found from PATH's names, is an omx workspace, and the one ``-w`` names if it names one."""
    if not (root / HANDOFF).is_dir() or not (root / AGENTS).is_dir():
        raise InvalidInput(f"{path} is not a file in collaborative/current/ of an omx workspace")
    if workspace is not None and not os.path.samefile(root, workspace):
        raise InvalidInput(f"{path} is not a file of the workspace {workspace}")


def store_at(root: Path) -> Workspace:
    """The store of the workspace directory ``root``."""
    from omxfs.store.workspace import Workspace

    return Workspace(root)


def _log(path: Path, as_json: bool, agent: str | None, workspace: Path | None) -> None:
    """Show the versions of the collaborative file PATH, oldest first, then every write to it that was refused
    as a conflict (each kept under collaborative/.conflicts/<agent>/)."""
    from cli.acting import acting_agent, through_a_mount
    from omxfs.store.printable import escaped

    root, rel = collaborative_file(path, workspace)
    if agent is not None or through_a_mount(root):  # a mount answers only agents it knows; a store, anyone
        acting_agent(root, agent)
    check_workspace(root, path, workspace)
    ws = store_at(root)
    try:
        entries = ws.collab.history(str(rel))
        refused = [(agent, r) for agent in ws.agents() for r in ws.collab.conflicts(agent, str(rel))]
    except OmxError as exc:
        raise OmxError(f"cannot read the history of {rel}: {exc.message}") from None
    if not entries:
        raise NotFound(f"collaborative/current/{rel} has no history: it was never written")
    if as_json:
        echo(json.dumps([e.to_json() for e in entries], ensure_ascii=False, indent=2))
        return
    for e in entries:  # a message is its writer's text: escaped, it can neither start a line nor drive the terminal
        echo(f"v{e.version}  {e.timestamp}  {e.author}  {escaped(e.message)}")
        if e.provenance and e.provenance.get("run"):
            echo(f"     {provenance_line(dict(e.provenance))}")
    if refused:
        echo(f"refused writes ({len(refused)}), oldest first:")
    for agent, r in sorted(refused, key=lambda item: str(item[1].get("timestamp"))):
        on = f"on v{r.get('your_base')}, v{r.get('current_version')} was current"
        echo(f"  {r.get('timestamp')}  {agent}  {on}  kept at {r.get('kept_at', '?')}")


def provenance_line(made_by: dict[str, object]) -> str:
    """Where a version came from: the omx run's trace, the step and the model request (``omx replay RUN``)."""
    parts = [f"by omx run {made_by['run']}"]
    if made_by.get("step"):
        parts.append(f"step {made_by['step']}")
    if made_by.get("request"):
        parts.append(f"request {made_by['request']}")
    return ", ".join(parts)


log = Declared(
    "log",
    _log,
    Argument("path", kind="file"),
    Option("--json", name="as_json", flag=True, help="Print the history as JSON (history.json's format)."),
    AS_AGENT,
    WORKSPACE,
)
