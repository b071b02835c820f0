"""A command of ``omxfs`` declared once, as plain data: its arguments, options and body, without click.

A command a person types often (a checkpoint, a diff, the read commands) should answer at once, and click, with
the standard library it loads, costs more to import than such a command's work. Each such command is a
``Declared``: ``cli.to_click.command`` makes the click command of it (``--help``, usage errors, every unusual
form), and ``parse`` reads the plain forms of a command line from the same declaration, so the two cannot drift
(``tests/cli/test_quick_parse.py`` holds ``parse`` to click's parse). ``parse`` takes only what it is sure of and
answers None for anything else, which is then click's to parse and to report, as it always did.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

#: the kinds of value a parameter takes, each read the same by click (``cli.to_click.TYPES``) and by ``parse``:
#: ``text`` as given, ``path`` a non-empty path taken as written (no stat: it may be a mount that does not answer),
#: ``file`` a path that is readable if it exists (``click.Path()``, which stats it), ``count`` a whole number
KINDS = ("text", "path", "file", "count")


class Usage(Exception):
    """A command line that parses but that the command refuses (two options that exclude each other): click's
    usage error, with the command's usage line. Raised before the command does anything."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Argument:
    """A positional parameter; ``many`` takes all those left (``nargs=-1``), none required."""

    __slots__ = ("kind", "many", "metavar", "name", "required")

    def __init__(
        self, name: str, *, kind: str = "text", metavar: str | None = None, required: bool = True, many: bool = False
    ) -> None:
        assert kind in KINDS, kind
        self.name, self.kind, self.metavar, self.required, self.many = name, kind, metavar, required, many


class Option:
    """An option: ``flags`` as typed (``-m``, ``--message``), ``name`` the body's parameter it sets. A ``flag``
    takes no value (False unless given); a ``multiple`` one gathers every value given, in order; another keeps the
    last value given, else ``default``; ``shown_default`` is what its help says the default is."""

    __slots__ = ("default", "flag", "flags", "help", "kind", "metavar", "multiple", "name", "shown_default")

    def __init__(
        self,
        *flags: str,
        name: str,
        help: str,
        kind: str = "text",
        metavar: str | None = None,
        flag: bool = False,
        multiple: bool = False,
        default: str | None = None,
        shown_default: str | None = None,
    ) -> None:
        assert kind in KINDS, kind
        self.flags, self.name, self.help, self.kind, self.metavar = flags, name, help, kind, metavar
        self.flag, self.multiple, self.default, self.shown_default = flag, multiple, default, shown_default


class Declared:
    """The command ``name``: ``run`` called with one keyword argument per parameter, ``params`` in the order its
    ``--help`` lists them; its help is ``run``'s docstring."""

    __slots__ = ("name", "params", "run")

    def __init__(self, name: str, run: Callable[..., None], *params: Argument | Option) -> None:
        self.name, self.run, self.params = name, run, params

    @property
    def help(self) -> str:
        return self.run.__doc__ or ""


def _value(kind: str, text: str) -> object | None:
    """``text`` as a value of ``kind``, or None where click might read it otherwise (or refuse it)."""
    if kind == "text":
        return text
    if kind == "path":
        return Path(text) if text else None
    if kind == "file":  # as click.Path() takes it: a path that is not there as it is, one that is if readable
        try:
            os.stat(text)
        except OSError:
            return Path(text) if text else None
        return Path(text) if os.access(text, os.R_OK) else None
    return int(text) if text.isascii() and text.isdigit() else None


def parse(command: Declared, argv: Sequence[str]) -> dict[str, object] | None:
    """The body's keyword arguments for ``argv`` (the words after the command's name), as click would give them;
    None for a form this does not read (``--help``, ``--``, a short option with its value attached, a word that
    starts with ``-`` and is not one of the command's options, a value that does, a missing or extra argument, a
    value of the wrong kind): that command line is click's."""
    options = {flag: o for o in command.params if isinstance(o, Option) for flag in o.flags}
    values: dict[str, object] = {}
    for param in command.params:
        if isinstance(param, Option):
            values[param.name] = False if param.flag else () if param.multiple else param.default
    words: list[str] = []
    rest = iter(argv)
    for word in rest:
        if not word.startswith("-"):
            words.append(word)
            continue
        name, equals, given = word.partition("=") if word.startswith("--") else (word, "", "")
        option = options.get(name)
        if option is None:
            return None
        if option.flag:
            if equals:
                return None
            values[option.name] = True
            continue
        if not equals:
            given = next(rest, "-")  # none left: click says the option needs a value
            if given.startswith("-"):
                return None
        value = _value(option.kind, given)
        if value is None:
            return None
        if option.multiple:
            values[option.name] = (*values[option.name], value)  # type: ignore[misc]
        else:
            values[option.name] = value
    for argument in (p for p in command.params if isinstance(p, Argument)):
        if argument.many:
            taken, words = words, []
            converted = tuple(_value(argument.kind, w) for w in taken)
            if None in converted:
                return None
            values[argument.name] = converted
            continue
        if not words:
            if argument.required:
                return None
            values[argument.name] = None
            continue
        value = _value(argument.kind, words.pop(0))
        if value is None:
            return None
        values[argument.name] = value
    return None if words else values
