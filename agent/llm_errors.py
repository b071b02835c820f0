"""How a failed model call reaches the user: one clear line, never an API key (seed 000 TC-LLM-002, STYLE lesson 7).

litellm raises the OpenAI exception tree (``Timeout``, ``APIConnectionError``, ``AuthenticationError``, ...);
``translate`` maps it here, in one place, to an ``LLMError`` whose message says what happened and what to try.
Provider messages can quote a request or a header, so every message goes through ``redact`` first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: shapes of credentials that providers and HTTP libraries echo back: OpenAI/Anthropic keys, bearer tokens
_KEY_SHAPES = re.compile(r"(sk-[A-Za-z0-9_\-]{4,}|Bearer\s+[A-Za-z0-9._\-]+|AIza[0-9A-Za-z_\-]{20,})")


_UNREACHABLE = re.compile(
    r"connection (error|refused)|ConnectError|Name or service not known|nodename nor servname", re.I
)


class LLMError(Exception):
    """A clear one-line message for the user; never contains an API key."""

    def __init__(self, message: str, *, request_id: str | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove the given secrets and anything shaped like a key, so a message or a log line is safe to show."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_SHAPES.sub("***", text)


def _first_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    text = re.sub(r"^(?:(?:litellm\.)?\w+(?:Error|Exception)(?::| -)\s*)+", "", text)  # litellm's class-name prefixes
    text = re.sub(r"\s*Handle with `litellm\.\w+`\.?", "", text).rstrip(".")
    return text[:limit] + ("..." if len(text) > limit else "")


def translate(
    exc: Exception, *, model: str, api_base: str | None, timeout: float, request_id: str, secrets: Iterable[str | None]
) -> LLMError:
    """Turn whatever litellm raised into an LLMError that says what went wrong and what to try next."""
    name = type(exc).__name__
    where = f" at {api_base}" if api_base else ""
    status = getattr(exc, "status_code", None)
    if name == "Timeout" or "timeout" in name.lower():
        what = f"{model} timed out after {timeout:g}s; check that the server{where} is up, or raise the timeout"
    elif name == "APIConnectionError" or _UNREACHABLE.search(str(exc)):
        what = f"cannot reach {model}{where}: {_first_line(exc)}; check the address and that the server is running"
    elif name == "AuthenticationError":
        variable = f"{model.split('/')[0].upper()}_API_KEY" if "/" in model else "OPENAI_API_KEY"
        what = f"{model} rejected the API key; set {variable} (or OMX_API_KEY) to a valid key"
    elif name == "NotFoundError":
        what = f"{model} was not found{where}; check the model name (--model / OMX_MODEL)"
    elif name == "RateLimitError":
        what = f"{model} is rate limited; wait and retry: {_first_line(exc)}"
    elif name == "ContextWindowExceededError":
        what = f"the conversation is longer than {model}'s context window; shorten the input"
    elif "LLM Provider NOT provided" in str(exc):
        what = f"litellm does not know the provider of {model!r}; write it as provider/model, e.g. openai/gpt-4o-mini"
    else:
        code = f" (HTTP {status})" if isinstance(status, int) else ""
        what = f"{model} failed{code}: {_first_line(exc)}"
    return LLMError(redact(f"LLM error: {what} [request {request_id}]", secrets), request_id=request_id)
