"""A realtime document: a fixed schema of named, typed CRDT fields that merge as one (SPEC §5).

The schema is fixed at creation, so two replicas of a document always hold the same fields of the same types
and a merge is just each field merging with its twin. A document whose id or schema differs is another
document, and merging it is refused before anything changes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from omxfs.crdt.base import CRDT
from omxfs.crdt.lww_map import LWWMap
from omxfs.crdt.lww_register import LWWRegister
from omxfs.crdt.or_set import ORSet
from omxfs.crdt.pn_counter import PNCounter
from omxfs.crdt.rga import RGA
from omxfs.errors import InvalidInput, NotFound

#: every field type, by the name schemas and state files use
TYPES: dict[str, type[CRDT]] = {cls.TYPE: cls for cls in (LWWRegister, RGA, ORSet, LWWMap, PNCounter)}

# a field is a file in realtime/<doc>/, and dot-files there (.schema.json, .snapshot.json) are the mount's own
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")

T = TypeVar("T", bound=CRDT)


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid {what} {name!r}: use 1-128 letters, digits, '_', '.', '-', not starting with '.' or '-'"
        )
    return name


def _check_schema(schema: object) -> dict[str, str]:
    if not isinstance(schema, Mapping):
        raise InvalidInput("a schema must map field names to field types")
    if not schema:
        raise InvalidInput("a document needs at least one field")
    checked: dict[str, str] = {}
    for name, type_name in schema.items():
        _check_name(name, "field name")
        if type_name not in TYPES:
            raise InvalidInput(
                f"field {name!r} has unknown type {type_name!r}; expected one of {', '.join(sorted(TYPES))}"
            )
        checked[name] = type_name
    return checked


class Document:
    """Named, typed CRDT fields under one document id."""

    def __init__(self, doc_id: str, schema: Mapping[str, str]) -> None:
        self._doc_id = _check_name(doc_id, "document id")
        self._schema = _check_schema(schema)
        self._fields: dict[str, CRDT] = {name: TYPES[type_name]() for name, type_name in self._schema.items()}
        self._borrowed: set[str] = set()  # fields still shared with the document this one was forked from

    @property
    def doc_id(self) -> str:
        return self._doc_id

    @property
    def schema(self) -> dict[str, str]:
        """Field name → type name (a copy: the schema is fixed)."""
        return dict(self._schema)

    def field(self, name: str) -> CRDT:
        """The live field: its operations change this document."""
        try:
            field = self._fields[name]
        except (KeyError, TypeError):
            raise NotFound(f"no field {name!r} in document {self._doc_id!r}") from None
        if name in self._borrowed:
            field = self._fields[name] = field.copy()
            self._borrowed.discard(name)
        return field

    def field_json(self, name: str) -> Any:
        """``field(name).to_json()``, without taking the field for a change (a fork does not copy it)."""
        try:
            return self._fields[name].to_json()
        except (KeyError, TypeError):
            raise NotFound(f"no field {name!r} in document {self._doc_id!r}") from None

    def typed(self, name: str, cls: type[T]) -> T:
        """The field, checked to be a ``cls``: a text edit on a register is refused (seed I-5)."""
        field = self.field(name)
        if not isinstance(field, cls):
            raise InvalidInput(f"field {name!r} is {field.TYPE}, not {cls.TYPE}")
        return field

    def merge(self, other: Document) -> None:
        self._check_twin(other)
        for name in self._schema:
            if self._fields[name] is not other._fields[name]:
                self.field(name).merge(other._fields[name])

    def _check_twin(self, other: Document) -> None:
        if not isinstance(other, Document):
            raise InvalidInput(f"cannot merge {type(other).__name__} into a document")
        if other._doc_id != self._doc_id:
            raise InvalidInput(f"cannot merge document {other._doc_id!r} into document {self._doc_id!r}")
        if other._schema != self._schema:
            raise InvalidInput(f"cannot merge document {self._doc_id!r}: the schemas differ")

    def new_replicas(self, other: Document) -> set[str]:
        """The replicas of the operations ``other`` has and this document lacks, over every field (see
        ``CRDT.new_replicas``: removals recorded as tombstones are not attributed). Another document is refused."""
        self._check_twin(other)
        return set().union(*(field.new_replicas(other._fields[name]) for name, field in self._fields.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "doc_id": self._doc_id,
            "schema": dict(sorted(self._schema.items())),
            "fields": {name: self._fields[name].to_json() for name in sorted(self._fields)},
        }

    @classmethod
    def from_json(cls, data: Any) -> Self:
        if not isinstance(data, dict) or set(data) != {"doc_id", "schema", "fields"}:
            raise InvalidInput("document state must be an object with keys doc_id, schema, fields")
        document = cls(data["doc_id"], data["schema"])
        fields = data["fields"]
        if not isinstance(fields, dict) or set(fields) != set(document._schema):
            raise InvalidInput(f"document {document._doc_id!r}: fields must hold one state per schema field")
        document._fields = {
            name: TYPES[type_name].from_json(fields[name]) for name, type_name in document._schema.items()
        }
        return document

    def snapshot(self) -> dict[str, Any]:
        """Plain values and types, for ``.snapshot.json`` and the agent tools (seed I-2)."""
        return {
            "doc_id": self._doc_id,
            "fields": {name: self._fields[name].value() for name in sorted(self._fields)},
            "field_types": dict(sorted(self._schema.items())),
        }

    def copy(self) -> Self:
        twin = type(self)(self._doc_id, self._schema)
        twin._fields = {name: field.copy() for name, field in self._fields.items()}
        return twin

    def fork(self) -> Self:
        """A copy that shares each field with this document until it changes it (``field``, ``typed`` and ``merge``
        copy the field first). For a document that is itself never changed again, such as a stored state, it is
        ``copy`` that costs only what the changes touch; ``shares`` tells the fields left as they were."""
        twin = type(self)(self._doc_id, self._schema)
        twin._fields = dict(self._fields)
        twin._borrowed = set(self._fields)
        return twin

    def settle(self) -> None:
        """Stop copying fields on first use: this fork is now a state that, like its origin, nobody changes (a
        stored state whose fields are read, from several threads, and only ever forked)."""
        self._borrowed = set()

    def shares(self, name: str, other: Document) -> bool:
        """Whether field ``name`` is the very same object in ``other`` (unchanged since one was forked)."""
        return self._fields.get(name) is other._fields.get(name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Document):
            return NotImplemented
        return (self._doc_id, self._schema, self._fields) == (other._doc_id, other._schema, other._fields)

    def __repr__(self) -> str:
        return f"Document({self._doc_id!r}, {self._schema!r})"
