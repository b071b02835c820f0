"""``PlainRecord``: a class of named fields, compared, hashed, shown and copied by them as a frozen dataclass is,
without ``dataclasses``: that module imports ``inspect`` (with ``ast``, ``dis`` and ``tokenize``), about 8 ms of
the start of a command a person types, more than such a command's own work.

A subclass names its fields, in order, in ``FIELDS`` and sets each in its own ``__init__``, which takes every
field by keyword (``replace`` calls it so). Its instances are not to be changed once made.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from typing import Any, ClassVar, Self


class PlainRecord:
    __slots__ = ()

    FIELDS: ClassVar[tuple[str, ...]] = ()

    def values(self) -> tuple[Any, ...]:
        """The fields' values, in ``FIELDS`` order."""
        return tuple([getattr(self, name) for name in self.FIELDS])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, PlainRecord)
        return self.values() == other.values()

    def __hash__(self) -> int:
        return hash(self.values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{self.__class__.__qualname__}({shown})"

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (by field name), made by the class's ``__init__`` (nothing cached is copied)."""
        return self.__class__(**{name: getattr(self, name) for name in self.FIELDS} | changes)
