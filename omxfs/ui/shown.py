"""Untrusted text as a page shows it: agents choose file names, messages and contents, so every string is cut to a
size a page can hold and its control characters are made visible (an escape sequence or a NUL shown as ``\\x1b``,
``\\x00``), before Jinja2's autoescape turns markup into text."""

from __future__ import annotations

import re

#: characters of a content shown at most (a 10 MB file shows its beginning and says it was cut)
CONTENT_LIMIT = 20_000
#: characters of a name, message or field value shown at most
LINE_LIMIT = 300
#: bytes read of a file to show it: a cut content never needs more
READ_LIMIT = CONTENT_LIMIT * 4

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}" if ord(match.group()) < 0x100 else f"\\u{ord(match.group()):04x}"


def visible(text: str) -> str:
    """``text`` with every control character (but newline and tab) and bidi override written out as an escape."""
    return _CONTROL.sub(_visible, text)


def cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [cut: {len(text):,} characters in all]"


def line(value: object, limit: int = LINE_LIMIT) -> str:
    """A name, message or value on one line: newlines shown as ``\\n`` too."""
    text = visible(str(value)).replace("\n", "\\n")
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text):,} chars]"


def content(data: bytes | str, total: int | None = None, limit: int = CONTENT_LIMIT) -> str:
    """A file's content (or its first bytes, of ``total`` in all) for a ``<pre>``: decoded, cut, made visible."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    size = total if total is not None else len(data)
    shown = visible(text[:limit])
    if size > len(data) or len(text) > limit:
        shown += f"\n… [cut: {size:,} {'bytes' if isinstance(data, bytes) else 'characters'} in all]"
    return shown
