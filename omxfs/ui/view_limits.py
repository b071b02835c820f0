"""What a view's daemon log says of the view's limits (processes, memory, file size): the agent it served and each
line saying the view reached one (``omxfs.view.launch`` logs it in ``.omxfs/logs/mount-<pid>.log``). The feed
makes each such line an event, so the pages learn of it live; the Needs-you page lists them until marked resolved.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from omxfs.store.daemon_log import RECORD
from omxfs.store.layout import LOGS, META_DIR
from omxfs.ui.files import read_part
from omxfs.ui.kept import Kept

#: what a view's daemon logs when the view reached one of its limits (``omxfs.view.launch``)
LIMIT_LINE = "the view reached its limit of "
#: a line near a daemon log's start names the agent the mount (a view's: its agent) serves
MOUNTING = re.compile(r" INFO mounting .* as (\S+) \(pid \d+\)$", re.MULTILINE)
#: bytes read of the end of each daemon's log
LOG_TAIL = 64 * 1024


class ViewLimits:
    """The limit lines of every daemon log under a store's ``.omxfs/logs/``, each log read again only once it
    changed (``Kept``)."""

    def __init__(self, meta: Path) -> None:
        self.meta = meta
        self._logs = Kept(meta, self._read)

    def logs(self) -> Iterator[str]:
        """Each daemon log, as ``.omxfs/logs/mount-<pid>.log``, in name order."""
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(self.meta / LOGS)):
                if name.startswith("mount-") and name.endswith(".log"):
                    yield f"{META_DIR}/{LOGS}/{name}"

    def of(self, log: str) -> tuple[str, list[str]]:
        """The agent the log ``log`` names and its lines that say its view reached a limit (none: empty)."""
        return self._logs.get(log.removeprefix(f"{META_DIR}/")) or ("", [])

    def _read(self, rel: str, size: int) -> tuple[str, list[str]]:
        head, _ = read_part(self.meta, rel, 0, 4096)
        raw, _ = read_part(self.meta, rel, max(size - LOG_TAIL, 0), LOG_TAIL)
        named = MOUNTING.search(head.decode("utf-8", "replace"))
        lines = [
            line
            for line in raw.decode("utf-8", "replace").split("\n")
            if RECORD.match(line) and LIMIT_LINE in line and line.isprintable()
        ]
        return named.group(1) if named else "?", lines


def when_of(line: str, fallback: float) -> float:
    """The Unix time a daemon log's line was written (its ``2026-11-29 14:41:15,879`` start), else ``fallback``."""
    try:
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except ValueError:
        return fallback


def what_of(line: str) -> str:
    """What limit a limit line says was reached: "1 MiB per file (--max-file-size)"."""
    return line.split(LIMIT_LINE, 1)[1]
