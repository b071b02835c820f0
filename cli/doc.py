"""``omxfs doc create DOC FIELD=TYPE ...``: create a realtime document the way any program would (SPEC §5, §6).

Through a mount it is ``mkdir realtime/DOC`` and one write of ``realtime/DOC/.schema.json``, so the daemon
applies its rules and logs as for every other program. On a workspace directory that is not mounted it calls
the store directly. It acts as ``--as NAME``, else as SPEC §3 says (``cli.acting``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path

import click

from cli.errors import friendly_errors
from cli.params import AS_AGENT, WORKSPACE
from omxfs.store.layout import REALTIME, SCHEMA

_WHY = {
    errno.EINVAL: "the mount refused the name or the schema",
    errno.EACCES: "permission denied",
    errno.EEXIST: "it exists already, and a schema is fixed once created",
    errno.ENOENT: "no such directory",
}


def _schema(fields: tuple[str, ...]) -> dict[str, str]:
    from omxfs.crdt import TYPES

    schema: dict[str, str] = {}
    for spec in fields:
        name, sep, type_name = spec.partition("=")
        if not sep or not name or not type_name:
            raise click.BadParameter(f"{spec!r}: write FIELD=TYPE, for example title=lww_register", param_hint="FIELD")
        if type_name not in TYPES:
            raise click.BadParameter(
                f"{spec!r}: unknown type {type_name!r}; one of {', '.join(sorted(TYPES))}", param_hint="FIELD"
            )
        if name in schema:
            raise click.BadParameter(f"field {name!r} is given twice", param_hint="FIELD")
        schema[name] = type_name
    return schema


def _fail(what: str, path: Path, exc: OSError) -> click.ClickException:
    why = _WHY.get(exc.errno or 0, exc.strerror or "error")
    return click.ClickException(f"cannot {what} {path}: {why} ({os.strerror(exc.errno or errno.EIO)})")


def _create_on_mount(root: Path, doc: str, schema: dict[str, str]) -> None:
    doc_dir = root / REALTIME / doc
    if (doc_dir / SCHEMA).exists():
        raise click.ClickException(f"realtime document {doc!r} exists; its schema is fixed")
    made = False
    try:
        doc_dir.mkdir()
        made = True
    except FileExistsError:
        pass  # made by mkdir and still waiting for its schema: finish the job
    except OSError as exc:
        raise _fail("create", doc_dir, exc) from exc
    try:
        with open(doc_dir / SCHEMA, "x", encoding="utf-8") as f:
            f.write(json.dumps(schema, indent=2) + "\n")
    except OSError as exc:  # the daemon answers at close: EINVAL, EEXIST…
        if made:  # a document without a schema is no document: leave the directory as it was, absent
            with contextlib.suppress(OSError):
                doc_dir.rmdir()
        raise _fail("write", doc_dir / SCHEMA, exc) from exc


@click.group("doc")
def doc_group() -> None:
    """Realtime CRDT documents (realtime/<doc>/<field>)."""


@doc_group.command("create")
@click.argument("doc")
@click.argument("fields", nargs=-1, required=True, metavar="FIELD=TYPE...")
@AS_AGENT
@WORKSPACE
def create(doc: str, fields: tuple[str, ...], agent: str | None, workspace: Path | None) -> None:
    """Create the document DOC with fields of the given types; the schema is fixed afterwards.

    \b
    Types: lww_register (text, last writer wins), rga (text, merged), or_set (lines),
           lww_map (JSON object, per key), pn_counter (integer).
    Example:
      omxfs doc create board title=lww_register body=rga members=or_set view_count=pn_counter
    """
    from cli.acting import acting_agent
    from omxfs.store.names import check_doc_id
    from omxfs.store.workspace import Workspace

    schema = _schema(fields)
    with friendly_errors():  # the rule said plainly, before the mount refuses the name with a bare EINVAL or EACCES
        check_doc_id(doc)
    workspace = workspace or Path(".")
    with friendly_errors():
        me = acting_agent(workspace, agent)
    if not (workspace / REALTIME).is_dir():
        raise click.ClickException(f"{workspace} is not an omx workspace (no realtime/ directory)")
    if os.path.ismount(workspace):
        _create_on_mount(workspace, doc, schema)
    else:
        with friendly_errors():
            Workspace(workspace).realtime.create(me, doc, schema)
    click.echo(f"created realtime/{doc}: {', '.join(f'{k}={v}' for k, v in schema.items())}")


COMMANDS: list[click.Command] = [doc_group]
