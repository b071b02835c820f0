"""A pydantic model built from an output schema, to check and normalise a model's reply (seed 002 §6).

Models answer loosely: one value where the schema says a list, ``"456"`` for an int, ``1`` for a string. The
built model forgives exactly that (a single value is wrapped into a list, list items and fields are cast with
pydantic's lax mode, numbers become strings where strings are asked for) and nothing more, so the caller gets
data of the promised shape or a ``ValidationError`` that says what was wrong. Every field is optional: a model
that leaves one out gives ``None`` there rather than failing the whole reply.
"""

from __future__ import annotations

import enum
import json
import re
import typing
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, RootModel, create_model

from agent.prompting.output_schema import split_spec

__all__ = ["extract_json", "output_model", "parse_reply"]

_CONFIG = ConfigDict(coerce_numbers_to_str=True)
_NAMED_TYPES: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "any": Any, "dict": dict}


def output_model(spec: Any, name: str = "OutputModel") -> type[BaseModel]:
    """The model for ``spec``: an object schema gives a model with those fields, anything else a ``RootModel``."""
    inner, _ = split_spec(spec)
    if isinstance(inner, dict):
        return _object_model(inner, name)
    base: Any = RootModel[_annotation(inner, name)]  # type: ignore[misc]  # built at run time
    root: type[BaseModel] = type(name, (base,), {"model_config": _CONFIG})
    return root


def _object_model(fields: dict[str, Any], name: str) -> type[BaseModel]:
    definitions: dict[str, Any] = {}
    for key, spec in fields.items():
        inner, description = split_spec(spec)
        annotation = _annotation(inner, f"{name}_{_identifier(str(key))}")
        definitions[str(key)] = (annotation | None, Field(default=None, description=description))
    model: type[BaseModel] = create_model(name, __config__=_CONFIG, **definitions)
    return model


def _annotation(spec: Any, name: str) -> Any:
    inner, _ = split_spec(spec)
    if isinstance(inner, dict):
        return _object_model(inner, name)
    if isinstance(inner, list):
        if len(inner) != 1:
            raise ValueError(f"a list in an output schema holds exactly one item schema, not {len(inner)}")
        item = _annotation(inner[0], f"{name}_item")
        return Annotated[list[item], BeforeValidator(_as_list)]  # type: ignore[valid-type]
    if isinstance(inner, str):
        return _NAMED_TYPES.get(inner, Any)
    if inner is Any or isinstance(inner, type) or typing.get_origin(inner) is not None:
        return _enum_by_name(inner) if isinstance(inner, type) and issubclass(inner, enum.Enum) else inner
    raise ValueError(f"not an output schema: {inner!r}; use a type, a dict, a one-item list or (schema, 'desc')")


def _as_list(value: Any) -> Any:
    """A single value where a list is expected becomes a one-item list; ``None`` stays missing."""
    if value is None or isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    return [value]


def _enum_by_name(cls: type[enum.Enum]) -> Any:
    """An Enum accepts its values and also its member names ("OPEN" for ``Status.OPEN``)."""

    def by_name(value: Any) -> Any:
        return cls[value] if isinstance(value, str) and value in cls.__members__ else value

    return Annotated[cls, BeforeValidator(by_name)]


def _identifier(key: str) -> str:
    return re.sub(r"\W", "_", key).title().replace("_", "") or "Field"


def extract_json(text: str) -> Any:
    """The first JSON object or array in a reply, skipping prose or a code fence around it."""
    decoder = json.JSONDecoder()
    for index, char in enumerate(text):
        if char in "{[":
            try:
                return decoder.raw_decode(text, index)[0]
            except json.JSONDecodeError:
                continue
    raise ValueError(f"the reply holds no JSON object or list: {text[:200]!r}")


def parse_reply(text: str, model: type[BaseModel]) -> Any:
    """The reply's JSON checked by ``model``, as plain data (dicts, lists, values): what the caller asked for."""
    return model.model_validate(extract_json(text)).model_dump()
