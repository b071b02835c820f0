"""The output schema a prompt asks for, written as plain Python values, and its text for the model (seed 002 §6).

A schema is a dict (an object), a one-item list (a list of that item), a type (``str``, ``int``,
``Literal[1, 2]``, an ``Enum``) or a tuple ``(schema, "description")`` that adds a description. The same value
renders the "Data Structure" block of the prompt, with each description as a ``// comment``, and builds the
pydantic model that checks the reply (``output_model``), so the two can never disagree.
"""

from __future__ import annotations

import enum
import json
import typing
from typing import Any

__all__ = ["is_schema", "render_schema", "split_spec", "type_name"]

INDENT = "  "


def split_spec(spec: Any) -> tuple[Any, str | None]:
    """``(inner, description)``: a tuple ``(schema, "desc")`` carries a description, anything else has none."""
    if isinstance(spec, tuple):
        if not spec:
            return Any, None
        description = spec[1] if len(spec) > 1 and isinstance(spec[1], str) and spec[1] else None
        return spec[0], description
    return spec, None


def is_schema(output: Any) -> bool:
    """Whether ``output`` is a structured schema (asks for JSON) rather than a plain text instruction."""
    return not isinstance(output, str)


def type_name(spec: Any) -> str:
    """How a leaf type reads in the prompt: ``str``, ``int``, ``Literal[1, 2, 3]``, an Enum as its values."""
    if isinstance(spec, str):
        return spec
    if spec is Any:
        return "any"
    if isinstance(spec, type) and issubclass(spec, enum.Enum):
        return f"Literal[{', '.join(str(member.value) for member in spec)}]"
    origin = typing.get_origin(spec)
    if origin is typing.Literal:
        return f"Literal[{', '.join(str(arg) for arg in typing.get_args(spec))}]"
    if isinstance(spec, type) and origin is None:
        return spec.__name__
    return str(spec).replace("typing.", "")


def render_schema(spec: Any) -> str:
    """The schema as the JSON-like text in [OUTPUT REQUIREMENT], descriptions as ``// comments``."""
    inner, description = split_spec(spec)
    text = _render(inner, 0)
    return f"{text} // {description}" if description else text


def _render(spec: Any, depth: int) -> str:
    inner, _ = split_spec(spec)
    if isinstance(inner, dict):
        return _render_object(inner, depth)
    if isinstance(inner, list):
        return _render_list(inner, depth)
    return f"<{type_name(inner)}>"


def _render_object(fields: dict[str, Any], depth: int) -> str:
    pad = INDENT * (depth + 1)
    lines = ["{"]
    for index, (key, spec) in enumerate(fields.items()):
        _, description = split_spec(spec)
        comma = "," if index < len(fields) - 1 else ""
        comment = f" // {description}" if description else ""
        lines.append(f"{pad}{json.dumps(str(key), ensure_ascii=False)}: {_render(spec, depth + 1)}{comma}{comment}")
    lines.append(INDENT * depth + "}")
    return "\n".join(lines)


def _render_list(items: list[Any], depth: int) -> str:
    if len(items) != 1:
        raise ValueError(f"a list in an output schema holds exactly one item schema, not {len(items)}")
    pad = INDENT * (depth + 1)
    _, description = split_spec(items[0])
    comment = f" // {description}" if description else ""
    return "\n".join(["[", f"{pad}{_render(items[0], depth + 1)},{comment}", f"{pad}...", INDENT * depth + "]"])
