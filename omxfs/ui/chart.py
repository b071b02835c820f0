"""The activity chart: events per agent over time, as bars of an inline SVG the server draws (no script, no
library): one row per agent, one bar per time bucket, its height the bucket's count relative to the busiest."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from omxfs.ui.feed import Event

BUCKETS = 48
ROW = 22  # pixels per agent
LABEL = 110  # pixels left of the bars for the agent's name
WIDTH = 720


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    count: int


@dataclass(frozen=True)
class Row:
    agent: str
    y: int
    bars: list[Bar]
    total: int


@dataclass(frozen=True)
class Chart:
    rows: list[Row]
    width: int
    height: int
    start: str
    end: str


def chart(events: list[Event], *, buckets: int = BUCKETS) -> Chart:
    if not events:
        return Chart([], WIDTH, ROW, "", "")
    first, last = events[0].epoch, events[-1].epoch
    span = max(last - first, 1.0)
    counts: dict[str, Counter[int]] = {}
    for event in events:
        bucket = min(int((event.epoch - first) / span * buckets), buckets - 1)
        counts.setdefault(event.agent, Counter())[bucket] += 1
    busiest = max(n for c in counts.values() for n in c.values())
    step = (WIDTH - LABEL) / buckets
    rows = []
    for index, agent in enumerate(sorted(counts)):
        top = index * ROW
        bars = [
            Bar(LABEL + b * step, top + ROW - 2 - (ROW - 4) * n / busiest, max(step - 1, 1), (ROW - 4) * n / busiest, n)
            for b, n in sorted(counts[agent].items())
        ]
        rows.append(Row(agent, top, bars, sum(counts[agent].values())))
    stamp = "%Y-%m-%d %H:%M:%S"
    return Chart(
        rows,
        WIDTH,
        ROW * len(rows) + 4,
        datetime.fromtimestamp(first).strftime(stamp),
        datetime.fromtimestamp(last).strftime(stamp),
    )
