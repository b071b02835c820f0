"""The store's timestamps: what every record, manifest and audit line says of when it was made."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now(epoch: float | None = None) -> str:
    """An ISO 8601 UTC timestamp with microseconds, sortable as text: now, or of a Unix time."""
    moment = datetime.now(UTC) if epoch is None else datetime.fromtimestamp(epoch, UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")
