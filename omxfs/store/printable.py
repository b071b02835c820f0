"""One line of printable text for a name or a message that may hold anything (``escaped``): what the daemon's log
and ``omxfs log`` print of names an agent chose."""

from __future__ import annotations

#: the escapes of the characters that have a common one; any other character that is not printable is
#: ``\xNN`` (ASCII controls, and a byte of a name that is not UTF-8), ``\uNNNN`` or ``\UNNNNNNNN``
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: how ``os.fsdecode`` carries a byte that is not UTF-8: U+DC80..U+DCFF for the bytes 0x80..0xFF
_SURROGATE_ESCAPES = range(0xDC80, 0xDD00)


def escaped(text: str) -> str:
    """``text`` with every character that is not printable (newline, carriage return, escape sequences, Unicode
    line separators, undecodable bytes) and the backslash written as a Python-style escape: one line of printable
    text that encodes as UTF-8, and says exactly which bytes a name had (``\\xff`` is the byte 0xFF)."""
    if text.isprintable() and "\\" not in text:  # nearly every line: checked in C
        return text
    return "".join(_escape(c) for c in text)


def _escape(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    if c.isprintable():
        return c
    code = ord(c)
    if code in _SURROGATE_ESCAPES:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
