"""The store's timestamp of now is what ``datetime.now(UTC)`` says, as text, read without ``datetime``."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from omxfs.store.stamps import utc_now


def by_datetime() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def test_now_is_datetimes_now_to_the_microsecond() -> None:
    for _ in range(2000):
        before, now, after = by_datetime(), utc_now(), by_datetime()
        assert before <= now <= after
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", now), now


def test_a_unix_time_reads_as_before() -> None:
    assert utc_now(0) == "1970-01-01T00:00:00.000000Z"
    assert utc_now(1764424807.524432) == "2025-11-29T14:00:07.524432Z"
