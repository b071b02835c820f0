"""The checks a record read back from ``.omxfs/`` passes before any use: a name in it is data, never a path.

Anyone with write access to the store can change its records; a blob name, a path, a mode or an owner read from
one is used only once it is what the store writes: a blob name 64 lowercase hex digits, a path relative and
normalized (no ``..``, ``.`` or empty component, no NUL), a number a JSON integer in its range. Each check raises
``StoreCorrupt`` naming the record and the field (what ``omxfs fsck`` reports), never follows the value.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from omxfs.errors import StoreCorrupt
from omxfs.store.layout import USER_XATTRS
from omxfs.store.names import AGENT_NAME

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from typing import Any

#: a blob's name: the sha256 of its content (``layout.BLOB``), compiled once for the hot paths
is_blob_name = re.compile(r"[0-9a-f]{64}").fullmatch
#: a uid or gid: 32 bits
ID_MAX = 2**32 - 1
#: the largest record read whole into memory where its size is not bounded by what it describes (a marker)
SMALL_RECORD = 4096


def shown(value: Any) -> str:
    """``value`` as an error message quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def is_zone_path(path: Any) -> bool:
    """Whether ``path`` is a path below a zone's root as the store writes it: a string, relative, no empty, ``.``
    or ``..`` component, no NUL (``"."``, the root, is not one: its callers take it where it belongs)."""
    if type(path) is not str:
        return False
    framed = f"/{path}/"
    return not ("//" in framed or "/./" in framed or "/../" in framed or "\0" in framed)


def all_zone_paths(paths: list[str]) -> bool:
    """Whether every one of ``paths`` (strings) ``is_zone_path``: tested on all of them joined, in a few passes
    of C over one string instead of a few per path (a manifest names thousands)."""
    if not paths:
        return True
    joined = "/" + "/\0/".join(paths) + "/"
    return not ("//" in joined or "/./" in joined or "/../" in joined or joined.count("\0") != len(paths) - 1)


def all_blob_names(names: list[str]) -> bool:
    """Whether every one of ``names`` (strings of 64 characters each) is a blob's name: hex digits, lowercase,
    tested on all of them joined (whitespace, which ``bytes.fromhex`` skips, makes the result shorter)."""
    joined = "".join(names)
    try:
        return len(bytes.fromhex(joined)) * 2 == len(joined) and joined == joined.lower()
    except ValueError:
        return False


def zone_path(value: Any, where: str) -> str:
    """``value`` if ``is_zone_path``; StoreCorrupt naming ``where`` otherwise."""
    if not is_zone_path(value):
        raise StoreCorrupt(f"{where}: {shown(value)} is no relative, normalized path")
    return str(value)


def blob_name(value: Any, where: str) -> str:
    """``value`` if it is a blob's name (64 lowercase hex digits); StoreCorrupt naming ``where`` otherwise."""
    if type(value) is not str or not is_blob_name(value):
        raise StoreCorrupt(f"{where}: {shown(value)} is no blob name (64 lowercase hex digits)")
    return value


def integer(value: Any, where: str, least: int | None = 0, most: int | None = None) -> int:
    """``value`` if it is a JSON integer (not a bool, not a string of digits) in [least, most]."""
    if type(value) is not int or (least is not None and value < least) or (most is not None and value > most):
        bounds = "" if least is None else f" >= {least}"
        bounds += "" if most is None else f" <= {most}"
        raise StoreCorrupt(f"{where}: {shown(value)} is no integer{bounds}")
    return value


def text(value: Any, where: str) -> str:
    if type(value) is not str:
        raise StoreCorrupt(f"{where}: {shown(value)} is no string")
    return value


def agent(value: Any, where: str) -> str:
    """``value`` if it is an agent's name (``names.AGENT_NAME``): one names a directory of the store."""
    if type(value) is not str or not AGENT_NAME.fullmatch(value):
        raise StoreCorrupt(f"{where}: {shown(value)} is no agent name")
    return value


def entry_problem(raw: Any) -> str | None:
    """What is wrong with the manifest entry ``raw`` that ``manifest.Entry.from_json`` refused, naming the field
    (its slow path: the fast one only says yes or no)."""
    from omxfs.checkpoints.manifest import DIR, FILE, TYPES  # the format's: manifest imports this

    if type(raw) is not dict:
        return f"an entry is no JSON object: {shown(raw)}"
    path = raw.get("path")
    at = f"entry {shown(path)}"
    if path != "." and not is_zone_path(path):
        return f"{at}: path is no relative, normalized path"
    for name in ("type", "mode", "uid", "gid", "mtime_ns"):
        if name not in raw:
            return f"{at}: it has no {name}"
    kind = raw["type"]
    if type(kind) is not str or kind not in TYPES:
        return f"{at}: type {shown(kind)} is none of {', '.join(TYPES)}"
    if path == "." and kind != DIR:
        return f"{at}: the zone's root is no directory"
    for name in ("mode", "uid", "gid", "size", "rdev", "ino", "mtime_ns", "atime_ns", "ctime_ns"):
        value = raw.get(name, 0)
        if type(value) is not int:
            return f"{at}: {name} {shown(value)} is no integer"
    mode = raw["mode"]
    if not 0 <= mode <= 0o7777:
        return f"{at}: mode {mode:#o} has bits beyond 0o7777"
    for name in ("uid", "gid", "size", "rdev", "ino"):
        if raw.get(name, 0) < 0:
            return f"{at}: {name} {raw[name]} is negative"
    for name in ("uid", "gid"):
        if raw[name] > ID_MAX:
            return f"{at}: {name} {raw[name]} is larger than 32 bits"
    link = raw.get("link", "")
    if link != "" and not is_zone_path(link):
        return f"{at}: link {shown(link)} is no relative, normalized path"
    target = raw.get("target", "")
    if type(target) is not str or "\0" in target:
        return f"{at}: target {shown(target)} is no string without NUL"
    sha256 = raw.get("sha256", "")
    if kind == FILE and not link:
        if type(sha256) is not str or not is_blob_name(sha256):
            return f"{at}: sha256 {shown(sha256)} is no blob name (64 lowercase hex digits)"
    elif sha256 != "":
        return f"{at}: sha256 {shown(sha256)} on an entry that has no content of its own"
    if raw.get("data") is not None:
        try:
            entry_extents(raw["data"], str(path))
        except StoreCorrupt as exc:
            return exc.message
    if raw.get("xattrs"):
        try:
            entry_attributes(raw["xattrs"], str(path))
        except StoreCorrupt as exc:
            return exc.message
    return None


def entry_extents(data: Any, path: str) -> tuple[tuple[int, int], ...]:
    """A sparse file's data extents, each two integers >= 0."""
    if type(data) is not list or not all(
        type(e) is list and len(e) == 2 and type(e[0]) is int and type(e[1]) is int and e[0] >= 0 and e[1] >= 0
        for e in data
    ):
        raise StoreCorrupt(f"entry {shown(path)}: data {shown(data)} is no list of [offset, length] integers")
    return tuple((o, n) for o, n in data)


def entry_attributes(xattrs: Any, path: str) -> tuple[tuple[str, bytes], ...]:
    """``user.*`` attributes, each value base64: a name outside ``user.`` (``security.capability``,
    ``trusted.*``) is never one a scan records, and a restore would set it."""
    if type(xattrs) is not dict:
        raise StoreCorrupt(f"entry {shown(path)}: xattrs {shown(xattrs)} is no JSON object")
    import base64  # only where a file has attributes

    found = []
    for name, value in xattrs.items():
        if not name.startswith(USER_XATTRS) or "\0" in name:
            raise StoreCorrupt(f"entry {shown(path)}: attribute {shown(name)} is no user.* attribute")
        try:
            found.append((name, base64.b64decode(value, validate=True)))
        except (ValueError, TypeError):
            raise StoreCorrupt(f"entry {shown(path)}: attribute {shown(name)}'s value is not base64") from None
    return tuple(sorted(found))


def parse_accept_marker(raw: bytes, where: str) -> int:
    """The undo checkpoint an ``accepting`` marker (``checkpoints.review``) names: ``{"undo": N, "by": AGENT}``
    with N >= 1; StoreCorrupt naming ``where`` for anything else."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise StoreCorrupt(f"{where}: not JSON: {exc}") from None
    if type(data) is not dict or set(data) != {"undo", "by"}:
        raise StoreCorrupt(f"{where}: not an accept marker (it holds undo and by)")
    agent(data["by"], f"{where}: by")
    return integer(data["undo"], f"{where}: undo", least=1)


def read_accept_marker(path: Path) -> int:
    """``parse_accept_marker`` of the marker at ``path``, opened without following a symlink and read up to
    ``SMALL_RECORD`` bytes; FileNotFoundError if there is none."""
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise StoreCorrupt(f"{where}: {exc.strerror}: not an accept marker") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreCorrupt(f"{where}: not a regular file: not an accept marker")
        raw = os.read(fd, SMALL_RECORD + 1)
    except OSError as exc:
        raise StoreCorrupt(f"{where}: {exc.strerror}: not an accept marker") from None
    finally:
        os.close(fd)
    if len(raw) > SMALL_RECORD:
        raise StoreCorrupt(f"{where}: larger than an accept marker is")
    return parse_accept_marker(raw, where)
