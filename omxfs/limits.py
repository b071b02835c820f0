"""The limits of a view or an omx step: processes held at once, memory, and the size of one file.

What they are, their defaults, how sizes are written (``512M``, ``2G``) and how a limit that was reached is told.
``omxfs.cgroups`` holds a process tree to them; the workspace's config (``[limits]``) and the command line
(``--max-procs``, ``--max-memory``, ``--max-file-size``) choose them, the first that does winning (``resolve``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from omxfs.errors import InvalidInput

__all__ = ["DEFAULT_MAX_FILE_SIZE", "DEFAULT_MAX_PROCS", "MEMORY_CAP", "NO_LIMIT", "OPTIONS", "Limits", "Reached"]
__all__ += ["default_limits", "format_size", "limits_from_table", "parse_count", "parse_size", "resolve"]
__all__ += ["size_text"]

KIB = 1024
MIB, GIB, TIB = KIB**2, KIB**3, KIB**4
DEFAULT_MAX_PROCS = 512
DEFAULT_MAX_FILE_SIZE = 16 * GIB
#: the default memory limit is half the machine's memory, and never more than this
MEMORY_CAP = 8 * GIB
#: the value that means "no limit", in the config, on the command line and in ``Limits``
NO_LIMIT = 0
#: each limit's field, which is also its key in the config, and its option on the command line
OPTIONS = {"max_procs": "--max-procs", "max_memory": "--max-memory", "max_file_size": "--max-file-size"}
_SIZE = re.compile(r"(?i)\s*(\d+)\s*([kmgt]?)(?:i?b)?\s*")
_UNITS = {"": 1, "k": KIB, "m": MIB, "g": GIB, "t": TIB}
_UNLIMITED = ("unlimited", "none")
Kind = Literal["processes", "memory", "file size"]
_FIELD_OF: dict[Kind, str] = {"processes": "max_procs", "memory": "max_memory", "file size": "max_file_size"}


@dataclass(frozen=True)
class Limits:
    """A view's or a step's limits. A field of None is not chosen at this layer (``resolve`` takes the next one, in
    the end the default); ``NO_LIMIT`` (0) is no limit."""

    max_procs: int | None = None  # processes (threads count too) held at once
    max_memory: int | None = None  # bytes
    max_file_size: int | None = None  # bytes, for each file

    def described(self) -> str:
        """``"512 processes, 8 GiB of memory, 16 GiB per file"`` (a field not chosen shows as ``?``)."""
        return ", ".join(limit_text(field.name, getattr(self, field.name)) for field in fields(self))


def limit_text(name: str, value: int | None) -> str:
    """One limit as a person reads it: ``"512 processes"``, ``"8 GiB of memory"``, ``"1 MiB per file"``."""
    if value is None:
        shown = "?"
    elif value == NO_LIMIT:
        shown = "no limit on"
    else:
        shown = str(value) if name == "max_procs" else format_size(value)
    if name == "max_procs":
        return f"{shown} processes"
    if name == "max_memory":
        return "no limit on memory" if value == NO_LIMIT else f"{shown} of memory"
    return "no limit on file size" if value == NO_LIMIT else f"{shown} per file"


def default_limits() -> Limits:
    """What holds where nothing else is chosen: 512 processes, half the machine's memory up to 8 GiB, 16 GiB per file;
    enough for builds and test suites, and the machine still answers the rest of the team."""
    return Limits(DEFAULT_MAX_PROCS, min(_memory_total() // 2, MEMORY_CAP), DEFAULT_MAX_FILE_SIZE)


def resolve(*layers: Limits) -> Limits:
    """Each limit from the first layer that chooses it (the command line, then the workspace's config), else the
    default: every field set."""
    chosen = default_limits()
    for layer in reversed(layers):
        given = {f.name: getattr(layer, f.name) for f in fields(layer) if getattr(layer, f.name) is not None}
        chosen = replace(chosen, **given)
    return chosen


def parse_size(text: str | int, what: str) -> int:
    """Bytes from ``"512M"``, ``"2G"``, ``"1MiB"``, ``"4096"`` (binary units); ``"unlimited"``, ``"none"`` or 0:
    no limit."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    value = str(text).strip().lower()
    if value in _UNLIMITED:
        return NO_LIMIT
    match = _SIZE.fullmatch(value)
    if isinstance(text, bool) or match is None:
        raise InvalidInput(f"{what}: {text!r} is not a size (like 512M, 2G, 1048576, or unlimited)")
    return int(match.group(1)) * _UNITS[match.group(2)]


def parse_count(text: str | int, what: str) -> int:
    """A number of processes; ``"unlimited"``, ``"none"`` or 0: no limit."""
    value = str(text).strip().lower()
    if value in _UNLIMITED:
        return NO_LIMIT
    if isinstance(text, bool) or not value.isdigit():
        raise InvalidInput(f"{what}: {text!r} is not a number of processes (or unlimited)")
    return int(value)


def limits_from_table(table: dict[str, Any], where: str) -> Limits:
    """The ``[limits]`` table of a config: ``max_procs``, ``max_memory``, ``max_file_size``, each optional."""
    unknown = sorted(set(table) - set(OPTIONS))
    if unknown:
        raise InvalidInput(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(OPTIONS)})")
    procs, memory, size = (table.get(name) for name in OPTIONS)
    return Limits(
        None if procs is None else parse_count(procs, f"{where}.max_procs"),
        None if memory is None else parse_size(memory, f"{where}.max_memory"),
        None if size is None else parse_size(size, f"{where}.max_file_size"),
    )


def format_size(size: int) -> str:
    """``"64 MiB"``, ``"1.5 GiB"``, ``"100 B"``."""
    for unit, name in ((TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if size >= unit:
            return f"{size / unit:.1f}".removesuffix(".0") + f" {name}"
    return f"{size} B"


def size_text(size: int) -> str:
    """A size as ``parse_size`` reads it back exactly: ``"512M"``, ``"1536M"``, ``"1000"``."""
    for unit, name in ((TIB, "T"), (GIB, "G"), (MIB, "M"), (KIB, "K")):
        if size and size % unit == 0:
            return f"{size // unit}{name}"
    return str(size)


def _memory_total() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * KIB
    except (OSError, ValueError, IndexError):
        pass
    return 2 * MEMORY_CAP


@dataclass(frozen=True)
class Reached:
    """A limit that a tree reached: which one, its value, and what the kernel did about it."""

    kind: Kind
    limit: int
    detail: str

    @property
    def option(self) -> str:
        return OPTIONS[_FIELD_OF[self.kind]]

    def message(self) -> str:
        """``"reached its limit of 512 processes (--max-procs): 37 fork(s) refused"``."""
        return f"reached its limit of {limit_text(_FIELD_OF[self.kind], self.limit)} ({self.option}): {self.detail}"
