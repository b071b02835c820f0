"""Tool definitions for LLM APIs, generated from the input models.

pydantic's JSON schema is made plain here, because providers accept different subsets of JSON Schema: ``$ref``
into ``$defs`` is inlined, ``title`` noise is dropped, and an optional argument (``X | None = None``) becomes a
plain ``X`` that is simply not required. What remains is accepted as OpenAI function ``parameters`` and as
Anthropic ``input_schema`` alike.
"""

from __future__ import annotations

import copy
import functools
import inspect
from typing import Any, TypedDict

from agent.workspace_tools.models import HISTORY_TOOL_INPUTS, TOOL_INPUTS, ToolInput

# keys whose value is data, not a schema: never rewritten
_LITERAL_KEYS = frozenset({"default", "enum", "const", "examples"})


class ToolDefinition(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]


def _plain(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_plain(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = _plain(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        siblings = _plain({k: v for k, v in node.items() if k != "$ref"}, defs)
        return {**target, **siblings}  # a field's own description wins over its type's docstring
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs"):
            continue
        if key == "properties":
            out[key] = {name: _plain(sub, defs) for name, sub in value.items()}
        elif key in _LITERAL_KEYS:
            out[key] = value
        else:
            out[key] = _plain(value, defs)
    return _drop_null_branch(out)


def _drop_null_branch(schema: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, null]`` with default null → ``X``: an optional argument is one the model may leave out."""
    branches = schema.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return schema
    (other,) = [b for b in branches if b != {"type": "null"}]
    plain = {k: v for k, v in schema.items() if k != "anyOf" and not (k == "default" and v is None)}
    return {**other, **plain}


def parameters_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The model's arguments as a plain JSON schema object: type, properties, required (if any)."""
    raw = model.model_json_schema()
    schema = _plain(raw, raw.get("$defs", {}))
    schema.pop("description", None)  # the docstring is the tool's description, not repeated here
    parameters: dict[str, Any] = {"type": "object", "properties": schema.get("properties", {})}
    if schema.get("required"):
        parameters["required"] = schema["required"]
    parameters["additionalProperties"] = False
    return parameters


def description(model: type[ToolInput]) -> str:
    if not model.__doc__:
        raise TypeError(f"{model.__name__} has no docstring: it is the description the model reads")
    # docstrings are wrapped for the source; a model reads each paragraph as one line
    paragraphs = inspect.cleandoc(model.__doc__).split("\n\n")
    return "\n\n".join(" ".join(p.split("\n")) for p in paragraphs)


@functools.cache
def _definitions(history: bool) -> tuple[ToolDefinition, ...]:
    return tuple(
        ToolDefinition(name=model.tool_name, description=description(model), parameters=parameters_schema(model))
        for model in (*TOOL_INPUTS, *(HISTORY_TOOL_INPUTS if history else ()))
    )


def get_tool_definitions(*, history: bool = False) -> list[ToolDefinition]:
    """Every tool as ``{"name", "description", "parameters"}`` (seed J-4), with ``history`` also the tools on the
    agent's own checkpoints and branches; a fresh copy the caller may change."""
    return copy.deepcopy(list(_definitions(history)))


def openai_tool_definitions() -> list[dict[str, Any]]:
    """The tools in OpenAI's chat-completions format (also what litellm takes)."""
    return [{"type": "function", "function": dict(d)} for d in get_tool_definitions()]


def anthropic_tool_definitions() -> list[dict[str, Any]]:
    """The tools in Anthropic's messages format."""
    return [
        {"name": d["name"], "description": d["description"], "input_schema": d["parameters"]}
        for d in get_tool_definitions()
    ]


def argument_hint(model: type[ToolInput]) -> str:
    """One line telling a model what arguments a tool takes, for the result of a call with bad arguments."""
    parameters = parameters_schema(model)
    required = set(parameters.get("required", []))
    parts = []
    for name, schema in parameters["properties"].items():
        kind = schema.get("type", "any JSON value")
        need = "required" if name in required else "optional"
        parts.append(f'"{name}" ({kind}, {need}): {schema.get("description", "").rstrip(".")}')
    if not parts:
        return f"{model.tool_name} takes no arguments: pass {{}}."
    return f"{model.tool_name} takes a JSON object with " + "; ".join(parts)
