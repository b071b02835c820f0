"""Seed 002 §4 streaming parse, not called by the product: the leaves of a JSON text that may still be arriving.

A streaming reply is a prefix of a JSON document. This parser reads as far as the prefix goes and reports every
scalar it has seen: a string so far (``"Hel"``, not finished), a finished number, ``true``... A number or a
literal is reported only once something follows it, since ``12`` may yet become ``123``. Text before the first
``{`` or ``[`` (a sentence, a code fence) is skipped. Malformed JSON raises ``ValueError`` with the offset.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Leaf", "Path", "partial_leaves"]

Path = tuple[str | int, ...]
Leaf = tuple[Path, Any, bool]  # path, value so far, finished

_DELIMITERS = set(",}] \t\r\n")


def partial_leaves(text: str) -> list[Leaf]:
    """Every scalar in the JSON prefix ``text``, in document order."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return []
    parser = _Parser(text, min(starts))
    parser.value(())
    return parser.leaves


class _Parser:
    def __init__(self, text: str, start: int) -> None:
        self.text, self.i = text, start
        self.leaves: list[Leaf] = []

    def _eof(self) -> bool:
        while self.i < len(self.text) and self.text[self.i] in " \t\r\n":
            self.i += 1
        return self.i >= len(self.text)

    def _error(self, expected: str) -> ValueError:
        found = self.text[self.i : self.i + 10]
        return ValueError(f"not JSON at offset {self.i}: expected {expected}, found {found!r}")

    def value(self, path: Path) -> bool:
        """Parse one value at ``path``; True when it is complete."""
        if self._eof():
            return False
        char = self.text[self.i]
        if char == "{":
            return self._object(path)
        if char == "[":
            return self._array(path)
        if char == '"':
            text, done = self._string()
            if text or done:
                self.leaves.append((path, text, done))
            return done
        return self._scalar(path)

    def _object(self, path: Path) -> bool:
        self.i += 1
        while True:
            if self._eof():
                return False
            if self.text[self.i] == "}":
                self.i += 1
                return True
            if self.text[self.i] != '"':
                raise self._error("a key in double quotes")
            key, done = self._string()
            if not done or self._eof():
                return False
            if self.text[self.i] != ":":
                raise self._error("':'")
            self.i += 1
            if not self.value((*path, key)) or self._eof():
                return False
            if self.text[self.i] == ",":
                self.i += 1
            elif self.text[self.i] != "}":
                raise self._error("',' or '}'")

    def _array(self, path: Path) -> bool:
        self.i += 1
        index = 0
        while True:
            if self._eof():
                return False
            if self.text[self.i] == "]":
                self.i += 1
                return True
            if not self.value((*path, index)) or self._eof():
                return False
            index += 1
            if self.text[self.i] == ",":
                self.i += 1
            elif self.text[self.i] != "]":
                raise self._error("',' or ']'")

    def _string(self) -> tuple[str, bool]:
        """The string from the opening quote at ``self.i``; a half-received escape at the end is left out."""
        self.i += 1
        out: list[str] = []
        text = self.text
        while self.i < len(text):
            char = text[self.i]
            if char == '"':
                self.i += 1
                return "".join(out), True
            if char == "\\":
                width = 6 if text[self.i + 1 : self.i + 2] == "u" else 2
                escape = text[self.i : self.i + width]
                if len(escape) < width:
                    self.i = len(text)
                    break
                try:
                    out.append(json.loads(f'"{escape}"'))
                except json.JSONDecodeError:
                    raise self._error("a valid escape") from None
                self.i += width
                continue
            out.append(char)
            self.i += 1
        return "".join(out), False

    def _scalar(self, path: Path) -> bool:
        start = self.i
        while self.i < len(self.text) and self.text[self.i] not in _DELIMITERS:
            self.i += 1
        if self.i >= len(self.text):
            return False  # "12" may still become "123", "tr" become "true"
        token = self.text[start : self.i]
        try:
            value = json.loads(token)
        except json.JSONDecodeError:
            self.i = start
            raise self._error("a number, true, false or null") from None
        self.leaves.append((path, value, True))
        return True
