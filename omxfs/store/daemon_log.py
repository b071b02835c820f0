"""The daemon's log, ``WS/.omxfs/logs/mount-<pid>.log``: one line per record, whatever names agents choose.

Its refusal lines (``agent=<a> op=<op> path=<p> errno=<name>: <reason>``) are SPEC §7's audit trail, and
``omxfs status`` shows the last ones. Paths and names in them are the agents' own choice: a newline in a name
would start a forged line, attributed to anyone, and a name that is not UTF-8 (a surrogate-escaped ``str``)
cannot be encoded at all, so Python's logging printed a traceback in place of the refusal. The formatter here
escapes every record as a whole (``escaped``), and indents the lines of a traceback under it, so a line that
starts with a timestamp is always a record the daemon wrote, and that is what ``last_refusals`` reads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, TextIO

from omxfs.store.layout import LOGS, META_DIR
from omxfs.store.printable import escaped as escaped  # its home is a module of its own: ``omxfs log`` loads no logging

if TYPE_CHECKING:
    from omxfs.store.workspace import Workspace

#: how a record's line starts (``FORMAT``): a traceback's lines below it are indented, so never do
RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<level>[A-Z]+) ")
FORMAT = "%(asctime)s %(levelname)s %(message)s"
TRACEBACK_INDENT = "    "
#: how much of a log's end ``last_refusals`` reads: a long-lived daemon's log may be large
TAIL_BYTES = 64 * 1024


class LineFormatter(logging.Formatter):
    """``FORMAT`` with the message escaped (``escaped``): one line per record; a traceback's lines, escaped too,
    follow it indented, so none of them can pass for a record."""

    def __init__(self) -> None:
        super().__init__(FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escaped(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: logging._SysExcInfoType) -> str:
        return _indented(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _indented(super().formatStack(stack_info))


def _indented(text: str) -> str:
    return "\n".join(TRACEBACK_INDENT + escaped(line) for line in text.split("\n"))


def open_log(ws: Workspace, pid: int) -> tuple[TextIO, Path]:
    """The daemon's log, opened for appending (line-buffered), and its path relative to the store. Text that is
    not the formatter's (a crash's traceback on the descriptor) cannot fail to encode: it is backslash-escaped."""
    rel = PurePosixPath(META_DIR, LOGS, f"mount-{pid}.log")
    (ws.root / rel.parent).mkdir(parents=True, exist_ok=True)
    # the caller closes it
    stream = open(ws.root / rel, "a", encoding="utf-8", errors="backslashreplace", buffering=1)  # noqa: SIM115
    return stream, Path(rel)


def remove_log(ws: Workspace, rel: Path) -> None:
    """Best effort: a log nobody needs (a view's that says only start and stop)."""
    with contextlib.suppress(OSError):
        os.unlink(ws.root / rel)


def last_refusals(log_file: Path, count: int = 3) -> list[str]:
    """The last refusal (a WARNING with an errno) or ERROR records of a daemon's log, as their lines.

    Only lines the formatter wrote count: a record's line starts with its timestamp and is printable throughout;
    lines a log written before names were escaped holds (a name's newline, a terminal's escape sequence) do not.
    """
    try:
        with open(log_file, "rb") as f:
            start = max(0, f.seek(0, os.SEEK_END) - TAIL_BYTES)
            f.seek(start)
            lines = f.read().decode("utf-8", "replace").split("\n")
    except OSError:
        return []
    if start > 0:
        lines = lines[1:]  # begun mid-line
    found = []
    for line in lines:
        record = RECORD.match(line)
        if record is None or not line.isprintable():
            continue
        level = record.group("level")
        if level == "ERROR" or (level == "WARNING" and " errno=" in line):
            found.append(line)
    return found[-count:]
