"""Asking for a reply that is a JSON object of a JSON schema, as strongly as the server allows.

The schema goes as ``response_format`` json_schema, so a server that supports it (llama.cpp, vLLM, Ollama, OpenAI)
cannot decode anything but its shape. A server that refuses it (a 400) is asked in JSON mode, and the caller
validates the reply; only a request the server answered 400 or 422 is a refusal (any other failure, a timeout or
a scripted model with no reply left, is not the schema's fault and must not switch every later request to JSON
mode). The refusal is remembered for the process (``SCHEMA_REFUSED``): one fast failed request per
run at most, and no state on disk that a server upgrade would make wrong. ``OMX_RESPONSE_FORMAT`` (json_schema,
json_object or none) pins one way of asking, without fallback, to measure what each adds. The plan
(``agent.plan_run.planner``) and an llm step whose output the task shapes (``agent.plan_run.output_shape``) are
asked this way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agent.model.llm import JsonMode, LLMError, Model, ModelReply

__all__ = ["RESPONSE_FORMATS", "SCHEMA_REFUSED", "SchemaUnavailable", "complete_with_schema", "pinned_format"]

#: the models (by their repr) whose server refused a JSON schema in this process: JSON mode for them
SCHEMA_REFUSED: set[str] = set()
#: the ways of asking that OMX_RESPONSE_FORMAT may pin: the schema, JSON mode, the prompt alone
RESPONSE_FORMATS = ("json_schema", "json_object", "none")
#: how a server says it cannot take a request's response_format: Bad Request, Unprocessable Entity
REFUSED_STATUSES = frozenset({400, 422})


def pinned_format() -> str | None:
    """``OMX_RESPONSE_FORMAT``: one way of asking, without fallback; unset or auto: the strongest the server takes."""
    value = os.environ.get("OMX_RESPONSE_FORMAT", "").strip()
    if not value or value == "auto":
        return None
    if value not in RESPONSE_FORMATS:
        raise LLMError(f"LLM error: OMX_RESPONSE_FORMAT={value!r} is not one of auto, {', '.join(RESPONSE_FORMATS)}")
    return value


def complete_with_schema(
    model: Model,
    messages: list[dict[str, Any]],
    schema: dict[str, Any],
    *,
    on_refused: Callable[[str], None] | None = None,
    schema_only: bool = False,
) -> ModelReply:
    """``model``'s reply to ``messages`` asked with ``schema``, else in JSON mode where the server refused the schema
    (``on_refused`` hears of the refusal, once a process), else as pinned by OMX_RESPONSE_FORMAT. ``schema_only``:
    a request worth making only with the schema raises ``SchemaUnavailable`` where the server takes none (or a
    format without it is pinned) instead."""
    pinned = pinned_format()
    key = repr(model)
    if schema_only and (key in SCHEMA_REFUSED or pinned not in (None, "json_schema")):
        raise SchemaUnavailable("the server is asked without a JSON schema")
    if pinned is not None:
        mode: JsonMode = schema if pinned == "json_schema" else pinned == "json_object"
        return model.complete(messages, json_mode=mode)
    if key not in SCHEMA_REFUSED:
        try:
            return model.complete(messages, json_mode=schema)
        except LLMError as exc:
            if exc.kind != "other" or exc.status not in REFUSED_STATUSES:
                raise
            SCHEMA_REFUSED.add(key)
            if on_refused:
                on_refused(str(exc))
            if schema_only:
                raise SchemaUnavailable("the server takes no JSON schema") from None
    return model.complete(messages, json_mode=True)


class SchemaUnavailable(LLMError):
    """A request made only with a JSON schema, to a server asked without one."""
