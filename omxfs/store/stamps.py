"""The store's timestamps: what every record, manifest and audit line says of when it was made."""

from __future__ import annotations

import time


def utc_now(epoch: float | None = None) -> str:
    """An ISO 8601 UTC timestamp with microseconds, sortable as text: now, or of a Unix time. Now is the clock read
    to the nanosecond and cut to the microsecond, as ``datetime.now`` reads it, without ``datetime`` (a checkpoint's
    start pays for every module it imports)."""
    if epoch is not None:
        from datetime import UTC, datetime

        return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    seconds, ns = divmod(time.time_ns(), 1_000_000_000)
    t = time.gmtime(seconds)
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
        f".{ns // 1000:06d}Z"
    )
