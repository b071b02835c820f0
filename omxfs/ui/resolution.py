"""When a conflict is resolved: a rejected write (``collaborative/.conflicts/<agent>/<path>.rejected-K.json``) waits
for the person until one of these is true, read from what the store keeps (nothing is written for the first two):

- its agent committed a later version of the file (it merged, or wrote again on the version it was told of);
- the file was rolled back after it: a later version holds the content of an earlier one (what ``omxfs rollback``
  and the UI's roll back make, by whichever message);
- a supervisor marked it resolved: an audit record of ``feed.MARK`` naming the record's path (the store's audit
  trail keeps it, with the person's uid, as it keeps every supervisor action).

"Later" is after the version the file was at when the write was refused (the record's ``current_version``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omxfs.store.layout import COLLABORATIVE, CONFLICTS
from omxfs.store.records import VersionEntry


def record_path(record: str) -> str:
    """The path a mark of the conflict whose record is ``record`` (relative to ``.conflicts/``) names."""
    return f"{COLLABORATIVE}/{CONFLICTS}/{record}"


def resolution(
    agent: str, info: Mapping[str, Any], history: Sequence[VersionEntry], mark: Mapping[str, Any] | None
) -> str:
    """Why ``agent``'s conflict (its record's ``info``) is resolved, in a few words; "" while it is not.
    ``history``: the file's versions, oldest first; ``mark``: the audit record that marked it resolved, if any."""
    if mark is not None:
        return f"marked resolved by {mark.get('agent')} at {mark.get('timestamp')}"
    at = info.get("current_version")
    if not isinstance(at, int) or isinstance(at, bool):
        return ""
    seen: set[str] = set()
    for entry in history:
        if entry.version > at:
            if entry.author == agent:
                return f"{agent} committed version {entry.version}"
            if entry.sha256 in seen:
                return f"rolled back: version {entry.version} by {entry.author} holds an earlier version's content"
        seen.add(entry.sha256)
    return ""
