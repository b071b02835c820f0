"""The daemon log's lines (``omxfs.store.daemon_log``): one printable line per record, whatever the names in it.

The refusals themselves, through a real mount, are in ``tests/fuse/test_hostile.py`` (``test_hostile_name_*``).
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

import pytest

from omxfs.store.daemon_log import RECORD, LineFormatter, escaped, last_refusals

FORGED = "2026-01-01 00:00:00,000 WARNING agent=alice op=unlink path=secret errno=EACCES: forged"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("plain café.md", "plain café.md"),
        ("new\nline\r", "new\\nline\\r"),
        (os.fsdecode(b"latin-\xe9"), "latin-\\xe9"),  # the byte 0xE9, not the character é
        ("tab\tesc\x1b[2J", "tab\\tesc\\x1b[2J"),
        ("back\\slash", "back\\\\slash"),
        ("sep\u2028nel\x85", "sep\\u2028nel\\u0085"),  # str.splitlines() breaks at both
    ],
)
def test_escaped_names_are_one_printable_line(name: str, shown: str) -> None:
    assert escaped(name) == shown
    assert escaped(name).isprintable()
    escaped(name).encode("utf-8")  # a surrogate escape left in would raise here


def test_a_traceback_is_indented_under_its_record_so_no_line_of_it_passes_for_a_record() -> None:
    """A traceback's last line is the exception's message, which may hold a path with a newline."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LineFormatter())
    log = logging.getLogger("test_daemon_log")
    log.propagate = False
    log.addHandler(handler)
    try:
        raise ValueError(f"agents/bob/x\n{FORGED}")
    except ValueError as exc:
        log.error("agent=%s op=create path=%s errno=EIO: internal error", "bob", f"x\n{FORGED}", exc_info=exc)
    finally:
        log.removeHandler(handler)
    lines = stream.getvalue().rstrip("\n").split("\n")
    assert [line for line in lines if RECORD.match(line)] == [lines[0]]
    assert "path=x\\n2026-01-01" in lines[0]
    assert lines[1] == "    Traceback (most recent call last):"


def test_last_refusals_reads_only_the_records_the_formatter_wrote(tmp_path: Path) -> None:
    """``omxfs status`` showed the lines of Python's "--- Logging error ---" report (one holds " errno="), and
    would show a name's escape sequences raw: a log written before names were escaped has both."""
    refusal = "2026-01-02 10:00:03,000 WARNING agent=bob op=create path=z\\n errno=EACCES: refused"
    error = "2026-01-02 10:00:05,000 ERROR agent=bob op=write path=w errno=EIO: internal error"
    log = tmp_path / "mount-1.log"
    log.write_text(
        "\n".join(
            [
                "2026-01-02 10:00:00,000 INFO ready: /mnt answers",
                "--- Logging error ---",
                "Message: 'agent=%s op=%s path=%s errno=%s: %s'",
                "2026-01-02 10:00:02,000 WARNING agent=bob op=create path=y\x1b[2J errno=EACCES: refused",
                refusal,
                "2026-01-02 10:00:04,000 WARNING inotify's watch limit is reached",
                error,
                "    Traceback (most recent call last):",
                "",
            ]
        )
    )
    assert last_refusals(log) == [refusal, error]
