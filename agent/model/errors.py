"""How a failed model call reaches the user: one clear line, never an API key (seed 000 TC-LLM-002, STYLE lesson 7).

litellm raises the OpenAI exception tree (``Timeout``, ``APIConnectionError``, ``AuthenticationError``, ...);
``translate`` maps it here, in one place, to an ``LLMError`` whose message says what happened and what to try.
Provider messages can quote a request or a header, so every message goes through ``redact`` first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

#: shapes of credentials that providers and HTTP libraries echo back: OpenAI/Anthropic keys, bearer tokens
_KEY_SHAPES = re.compile(r"(sk-[A-Za-z0-9_\-]{4,}|Bearer\s+[A-Za-z0-9._\-]+|AIza[0-9A-Za-z_\-]{20,})")


_UNREACHABLE = re.compile(
    r"connection (error|refused)|ConnectError|Name or service not known|nodename nor servname", re.I
)


#: what went wrong with a call, which decides whether trying again can help (``LLMError.transient``)
ErrorKind = Literal[
    "timeout", "unreachable", "auth", "not_found", "rate_limited", "server", "context", "provider", "other"
]
#: the failures a later attempt may not meet: the server was busy, overloaded or not reachable for a moment
TRANSIENT: frozenset[ErrorKind] = frozenset({"unreachable", "rate_limited", "server"})
#: server errors (HTTP 500) that the same request meets again: llama.cpp's answer when a reply held to a JSON schema
#: ran out of tokens before it was complete. Retried, a 0.5B model's runaway reply cost four full generations (15
#: minutes) instead of one
REPEATING_SERVER_ERRORS = ("does not match the expected",)


class LLMError(Exception):
    """A clear one-line message for the user; never contains an API key.

    ``kind`` says what failed, so the caller can retry a transient failure and give advice that fits it (run
    again, raise the timeout, fix the key) instead of blaming the plan; ``status`` is the HTTP status the server
    answered with, where one did; ``retry_after`` is the server's Retry-After in seconds when it sent one;
    ``attempts`` how many times the call was tried in all.
    """

    def __init__(
        self,
        message: str,
        *,
        request_id: str | None = None,
        kind: ErrorKind = "other",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.request_id, self.kind, self.status, self.retry_after = request_id, kind, status, retry_after
        self.attempts = 1
        self.retries: list[str] = []  # the failed attempts before this one (agent.model.waiting), for the trace

    @property
    def transient(self) -> bool:
        return self.kind in TRANSIENT and not self.unreadable_reply

    @property
    def unreadable_reply(self) -> bool:
        """The server failed a request held to a JSON schema because it could not read its own reply as that schema
        (``REPEATING_SERVER_ERRORS``): the same request without the schema may well be answered."""
        return any(said in str(self) for said in REPEATING_SERVER_ERRORS)


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
    status = getattr(exc, "status_code", None)
    if name == "Timeout" or "timeout" in name.lower():
        kind: ErrorKind = "timeout"
    elif name == "APIConnectionError" or _UNREACHABLE.search(str(exc)):
        kind = "unreachable"
    elif name == "AuthenticationError":
        kind = "auth"
    elif name == "NotFoundError":
        kind = "not_found"
    elif name == "RateLimitError":
        kind = "rate_limited"
    elif name == "ContextWindowExceededError":
        kind = "context"
    elif "LLM Provider NOT provided" in str(exc):
        kind = "provider"
    else:
        kind = "server" if isinstance(status, int) and status >= 500 else "other"
    # litellm keeps the server's headers on the exception; its .response is one it rebuilt, without them
    headers = getattr(exc, "litellm_response_headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    return describe(kind, model=model, api_base=api_base, timeout=timeout, request_id=request_id, secrets=secrets,
                    detail=_first_line(exc), status=status, retry_after=retry_after_s(headers))  # fmt: skip


def describe(
    kind: ErrorKind,
    *,
    model: str,
    api_base: str | None,
    timeout: float,
    request_id: str,
    secrets: Iterable[str | None],
    detail: str,
    status: Any = None,
    retry_after: float | None = None,
) -> LLMError:
    """The one message for a kind of failure, whichever client met it (litellm or the direct HTTP client)."""
    where = f" at {api_base}" if api_base else ""
    if kind == "timeout":
        what = (
            f"{model} timed out after {timeout:g}s; check that the server{where} is up, "
            "or raise the timeout (--timeout or OMX_TIMEOUT)"
        )
    elif kind == "unreachable":
        what = f"cannot reach {model}{where}: {detail}; check the address and that the server is running"
    elif kind == "auth":
        variable = f"{model.split('/')[0].upper()}_API_KEY" if "/" in model else "OPENAI_API_KEY"
        what = f"{model} rejected the API key; set {variable} (or OMX_API_KEY) to a valid key"
    elif kind == "not_found":
        what = f"{model} was not found{where}; check the model name (--model / OMX_MODEL)"
    elif kind == "rate_limited":
        what = f"{model} is rate limited; wait and retry: {detail}"
    elif kind == "context":
        what = f"the conversation is longer than {model}'s context window; shorten the input"
    elif kind == "provider":
        what = f"litellm does not know the provider of {model!r}; write it as provider/model, e.g. openai/gpt-4o-mini"
    else:
        code = f" (HTTP {status})" if isinstance(status, int) else ""
        what = f"{model} failed{code}: {detail}"
    message = redact(f"LLM error: {what} [request {request_id}]", secrets)
    http_status = status if isinstance(status, int) else None
    return LLMError(message, request_id=request_id, kind=kind, status=http_status, retry_after=retry_after)


def retry_after_s(headers: Any) -> float | None:
    """A Retry-After header given in seconds (the HTTP-date form is rare from model servers and is ignored)."""
    try:
        value = headers.get("retry-after") if headers is not None else None
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def advice(kind: str, attempts: int, rerun: str) -> str:
    """What to do after a failed model call of ``kind`` (``LLMError.kind``), given the command that runs the same
    thing again (``rerun``). A model's failure is not the plan's or the prompt's: the advice never says to edit
    them, except to shorten an input the model cannot take.
    """
    tried = f" (tried {attempts} times)" if attempts > 1 else ""
    if kind in TRANSIENT:
        return f"the model's server failed{tried}, not the task: run it again when the server is back: {rerun}"
    if kind == "timeout":
        return f"raise the timeout (--timeout SECONDS or OMX_TIMEOUT) and run it again: {rerun}"
    if kind == "context":
        return f"shorten the input the model gets, then run it again: {rerun}"
    if kind in ("auth", "not_found", "provider"):
        return f"fix the model settings as the error says, then run it again: {rerun}"
    return f"run it again: {rerun}; if it fails the same way, check the model and its server"
