"""The command lines omx and omxfs print for a person to run: each one works pasted into the shell the person ran
the printing command in, as the same person.

So a line carries what its command needs to act as the printing one did (``--as NAME``: a person who is no agent
of the workspace, root say, is refused without it) and names the workspace as the person did, relative paths
included, never a path only this process sees (``/proc/self/fd/N``). Each word is quoted for a POSIX shell where
it must be (a space, ``$``, a quote...): ``shell_line("omxfs", "restore", "my ws", "bob", 4, "--as", "bob")`` is
``omxfs restore 'my ws' bob 4 --as bob``.
"""

from __future__ import annotations

from os import PathLike

__all__ = ["acting_as", "named", "shell_line"]


def shell_line(*words: str | int | PathLike[str]) -> str:
    """``words`` as one shell command line, each quoted where the shell would otherwise split or expand it."""
    import shlex  # here: most commands print no command line, and shlex compiles its pattern when imported

    return shlex.join(str(word) for word in words)


def acting_as(agent: str | None) -> tuple[str, ...]:
    """``--as AGENT`` for a printed command where the printing one acted as AGENT by its ``--as``; none without."""
    return ("--as", agent) if agent else ()


def named(root: str | PathLike[str]) -> str:
    """A workspace as a printed command names it, from a path to its store: ``WS`` where the store is reached
    through a descriptor (``/proc/self/fd/N``, beneath a mount in place), which no other process can use."""
    return "WS" if str(root).startswith("/proc/self/fd/") else str(root)
