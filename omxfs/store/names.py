"""Validation of every name and path that comes from outside the store.

A path given to the store is always relative to a zone. It is split into components and each component is
checked here, so that no caller can reach outside its zone with ``..``, an absolute path, an empty or
odd component (NUL, newline, control characters) or a name the kernel would refuse (over 255 bytes). The one
exception is a private zone through the mount, a POSIX filesystem, which takes any name POSIX allows
(``check_posix_name``).
Symlinks are the other way out; the store's I/O refuses to follow them (see ``atomic.py``).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath

from omxfs.errors import InvalidInput, NameTooLong
from omxfs.store.layout import META_SUFFIX, REJECTED, STATE_SUFFIX

AGENT_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
#: ``AGENT_NAME`` in words, for the messages that refuse a name
AGENT_RULE = "1-63 characters of a-z, 0-9 and '-', not starting with '-'"
DOC_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
NAME_MAX = 255  # bytes, as in Linux and macOS
PATH_MAX = 4096  # bytes
#: bytes a handoff delivery's name needs beyond its own: its ``<file>.meta.json``
DELIVERY_ROOM = len(META_SUFFIX)
#: ... and a collaborative file's: its conflict records ``<file>.rejected-<K>.json`` (K up to 10 digits)
VERSIONED_ROOM = len(REJECTED) + 10 + len(".json")


def check_agent(name: str) -> str:
    """An agent name per SPEC §2 (no underscore, so ``<from>_to_<to>`` splits one way only)."""
    if not isinstance(name, str) or not AGENT_NAME.fullmatch(name):
        raise InvalidInput(f"invalid agent name {name!r}: use {AGENT_RULE}")
    return name


def check_doc_id(doc_id: str) -> str:
    if not isinstance(doc_id, str) or not DOC_ID.fullmatch(doc_id) or doc_id.endswith(STATE_SUFFIX):
        raise InvalidInput(f"invalid document id {doc_id!r}: use 1-128 of A-Z a-z 0-9 _ . -, not starting with '.'")
    return doc_id


def check_component(part: str) -> str:
    """One path component: not empty, not ``.``/``..``, no slash, NUL or control character, at most 255 bytes."""
    if part in ("", ".", ".."):
        raise InvalidInput(f"invalid path component {part!r}")
    if part.isascii() and part.isprintable() and "/" not in part:  # the common name, checked in C: one byte a
        if len(part) > NAME_MAX:  # character, no control character (none is printable)
            raise NameTooLong(f"name is {len(part)} bytes, the limit is {NAME_MAX}")
        return part
    if "/" in part or any(ord(c) < 0x20 or ord(c) == 0x7F for c in part):
        raise InvalidInput(f"invalid character in name {part!r}")
    try:
        encoded = part.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"name {part!r} is not valid UTF-8") from None
    if len(encoded) > NAME_MAX:
        raise NameTooLong(f"name is {len(encoded)} bytes, the limit is {NAME_MAX}")
    return part


def check_posix_name(part: str) -> str:
    """A name a program gives a private zone through the mount: any bytes but NUL and ``/``, at most 255, as POSIX
    allows. The zone keeps the bytes a program gave (``tar x`` of Latin-1 names, a name with a newline), as the
    store's own filesystem does; the names are the kernel's, which never gives an empty name, ``.`` or ``..``."""
    if part in ("", ".", "..") or "/" in part or "\0" in part:
        raise InvalidInput(f"invalid name {part!r}")
    size = len(part.encode("utf-8", "surrogateescape"))  # a byte that is not UTF-8 is one byte, as it was given
    if size > NAME_MAX:
        raise NameTooLong(f"name is {size} bytes, the limit is {NAME_MAX}")
    return part


def relative_path(path: str) -> PurePosixPath:
    """A clean relative path inside a zone; refuses absolute paths, ``..`` and odd components."""
    if not isinstance(path, str) or path == "":
        raise InvalidInput("empty path")
    if path.startswith("/"):
        raise InvalidInput(f"absolute path {path!r}: paths are relative to the zone")
    parts = [check_component(p) for p in path.split("/") if p not in ("", ".")]
    if not parts:
        raise InvalidInput(f"path {path!r} names no file")
    if len(path.encode("utf-8")) > PATH_MAX:  # every component encoded above, so this cannot raise
        raise NameTooLong(f"path is longer than {PATH_MAX} bytes")
    return PurePosixPath(*parts)


def shared_path(path: str) -> PurePosixPath:
    """A path in a shared zone (handoff, collaborative): ``relative_path`` of its NFC form, so that ``café`` typed
    precomposed (NFC) or decomposed (NFD, as macOS tools write it) names one file, never two that list alike."""
    return relative_path(nfc(path) if isinstance(path, str) else path)


def nfc(name: str) -> str:
    """``name`` in Unicode normalisation form C; names undecodable as UTF-8 (surrogate escapes) stay as they are."""
    return name if name.isascii() else unicodedata.normalize("NFC", name)


def check_room(rel: PurePosixPath, room: int, why: str) -> PurePosixPath:
    """``rel``, whose file the store also keeps under its name plus ``room`` bytes (``why``): checked when the file
    is created, since a write acknowledged first and refused at its commit for a name too long would be lost."""
    size = len(rel.name.encode("utf-8", "surrogateescape"))
    if size + room > NAME_MAX:
        raise NameTooLong(f"{rel.name[:40]}...: {size} bytes, at most {NAME_MAX - room} here ({why})")
    return rel


def handoff_dir_name(sender: str, recipient: str) -> str:
    return f"{check_agent(sender)}_to_{check_agent(recipient)}"


def parse_handoff_dir(name: str) -> tuple[str, str] | None:
    """``alice_to_bob`` → ("alice", "bob"); None for anything that is not a valid handoff directory name."""
    sender, sep, recipient = name.partition("_to_")
    if not sep or not AGENT_NAME.fullmatch(sender) or not AGENT_NAME.fullmatch(recipient):
        return None
    return sender, recipient
