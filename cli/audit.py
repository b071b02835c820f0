"""``omxfs audit WS [--json]``: the supervisor audit trail, oldest first (SPEC §3).

Every change a supervisor makes outside their own zone, and every checkpoint of another's zone, restore and
prune, is a record of its own under ``.omxfs/logs/audit/`` (``omxfs.store.audit``), merged here by time with
the ``audit.jsonl`` of stores made before. WORKSPACE is the store directory or the mountpoint of an ``omxfs
mount`` of it, as for ``omxfs fsck``.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli.checkpoints import WORKSPACE, store_of
from cli.declare import Declared, Option
from cli.echo import echo


def _audit(workspace: Path, as_json: bool) -> None:
    """Show who changed what outside their own zone (supervisors), and every restore, oldest first."""
    with store_of(workspace) as ws:
        trail = ws.audit_trail()
    if as_json:
        echo(json.dumps(trail.records, indent=2, ensure_ascii=False))
    elif not trail.records:
        echo("no audited changes: no supervisor has changed another agent's zone")
    else:
        echo(f"{'TIME':27}  {'AGENT':12}  {'UID':>6}  {'PID':>7}  {'PATH':30}  ACTION")
        for r in trail.records:
            echo(f"{r['timestamp']:27}  {r['agent']:12}  {r['uid']:>6}  {r['pid']:>7}  {r['path']:30}  {r['action']}")
    if trail.unreadable:
        where = ", ".join(trail.unreadable[:3]) + (" ..." if len(trail.unreadable) > 3 else "")
        echo(f"{len(trail.unreadable)} record(s) could not be read ({where}): see `omxfs fsck`", err=True)


audit = Declared(
    "audit",
    _audit,
    WORKSPACE,
    Option(
        "--json", name="as_json", flag=True, help="A JSON list of records (timestamp, agent, uid, pid, action, path)."
    ),
)
