"""What a request looks like to a prefix cache, and how much of it repeats the previous one.

The request is rendered deterministically (tool definitions, then one line per message, keys sorted), so two
requests share a character prefix exactly when a provider could reuse its KV cache for it; a timestamp or a
reordered dict would show here as a short shared prefix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

__all__ = ["RequestMeasure", "request_text", "shared_prefix_chars"]


def _line(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def request_text(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> str:
    """The request as one text: tools first (providers put them before the messages), then each message."""
    return _line(list(tools or [])) + "".join(_line(dict(m)) for m in messages)


def shared_prefix_chars(a: str, b: str) -> int:
    """Length of the common prefix; binary search over slice comparisons, which run in C."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class RequestMeasure(BaseModel):
    """One model request: its size, how much of it repeats the previous request, and the provider's usage."""

    step: int
    prompt_chars: int
    prefix_chars: int
    previous_request: bool
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
