"""The order in which the feed found its events: each gets the next sequence number as it is added, so a page can
say which events it shows (the last number, its cursor) and its event stream can send it every event after that.

The feed keeps its events in time order (``Feed.events``), where an event found late may land in the middle; a
page rendered from them and the stream it opens afterwards meet on the arrival order instead, which only grows.
Only the newest ``limit`` arrivals are kept for that: a cursor older than them (a page left open through more
events than that) is told to load itself again, which is the same as a fresh page.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the feed numbers its events here: imported for the types only
    from omxfs.ui.feed import Event

#: how many arrivals are kept for the streams that resume (an event costs the deque one reference)
LIMIT = 10_000


class Arrival(NamedTuple):
    seq: int  # 1 for the first event the feed found, one more for each after it
    event: Event


class Arrivals:
    def __init__(self, limit: int = LIMIT) -> None:
        self._kept: deque[Event] = deque(maxlen=limit)
        self.last = 0  # the number of the newest arrival (0: none yet): the cursor of a page rendered now

    def add(self, events: list[Event]) -> list[Arrival]:
        """Number ``events`` in this order, after every one added before."""
        first = self.last + 1
        self._kept.extend(events)
        self.last += len(events)
        return [Arrival(seq, event) for seq, event in enumerate(events, first)]

    def after(self, cursor: int) -> list[Arrival] | None:
        """Every arrival numbered above ``cursor``, oldest first; None where some of them are no longer kept."""
        oldest = self.last - len(self._kept) + 1
        if cursor + 1 < oldest:
            return None
        start = max(cursor + 1, oldest)
        kept = itertools.islice(self._kept, start - oldest, None)
        return [Arrival(seq, event) for seq, event in enumerate(kept, start)]
