"""Validation shared by the CRDT types: what a replica, a timestamp and a stored string must be.

Every type refuses bad input with ``InvalidInput`` before changing anything; these are the checks they share.
"""

from __future__ import annotations

from omxfs.errors import InvalidInput


def check_replica(replica: object) -> str:
    if not isinstance(replica, str) or not replica:
        raise InvalidInput(f"replica must be a non-empty string, not {replica!r}")
    return replica


def check_int(value: object, what: str) -> int:
    """An int that is not a bool."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"{what} must be an integer, not {value!r}")
    return value


def check_timestamp(timestamp: object) -> int:
    if not isinstance(timestamp, int) or isinstance(timestamp, bool) or timestamp < 0:
        raise InvalidInput(f"timestamp must be a non-negative integer, not {timestamp!r}")
    return timestamp


def check_text(value: object, what: str) -> str:
    """A string that can be written out: lone surrogates would break the file and the JSON."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    if not value.isascii():  # O(1), so typing pays nothing for the check below
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidInput(f"{what} is not valid Unicode: {value!r}") from e
    return value
