"""A direct client for OpenAI-compatible servers: ``openai/...`` models with an API base, without litellm.

``import litellm`` takes 3-6 s here (``python -X importtime``: most of it under ``litellm.main`` and
``litellm.utils``), and ``openai`` alone about 1 s, while ``httpx`` takes 0.1 s. A local or self-hosted
OpenAI-compatible server needs none of litellm's provider logic: the request is the chat-completions body, so
``omx`` reaches its first request in well under a second this way (scripts/bench_start.py). Starting the litellm
import in the background would not do: the plan prompt is ready in milliseconds, the import takes seconds.

The request is the one ``LiteLLMModel`` builds (this class only sends it), the reply is read the same way, and a
failure becomes the same ``LLMError`` message (``agent.model.errors.describe``), so nothing above this module can
tell the two clients apart. Every other model still goes through litellm.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent.model.errors import ErrorKind, LLMError, describe, retry_after_s
from agent.model.llm import LiteLLMModel, ModelReply, ToolCall, Usage

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIHTTPModel"]

#: litellm's own keys in ``_request``'s keyword arguments, which are not part of the HTTP body
_NOT_BODY = frozenset({"api_base", "api_key", "extra_headers", "timeout", "max_retries", "_skip_mcp_handler"})
_CONTEXT_WORDS = ("context length", "context_length", "context window", "maximum context")


class _HTTPFailure(Exception):
    """The server answered with an error status; ``detail`` is its error message."""

    def __init__(self, status: int, detail: str, retry_after: float | None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.retry_after = status, detail, retry_after


class _BadReply(Exception):
    """The server answered 200 with something that is not a chat completion; the message says what is wrong."""


class OpenAIHTTPModel(LiteLLMModel):
    """``LiteLLMModel``'s requests sent with httpx to ``{api_base}/chat/completions``; blocking and streamed."""

    def __init__(self, model: str, *, api_base: str, **settings: Any) -> None:
        if not model.startswith("openai/"):
            raise ValueError(f"the direct client serves openai/<name> models, not {model!r}")
        super().__init__(model, api_base=api_base, **settings)
        self._client: httpx.Client | None = None

    def _http(self) -> httpx.Client:
        """One client per model, so an agent's many requests reuse a connection (a TLS handshake to a remote
        server costs more than the request); closed when the model goes away or the interpreter exits."""
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=self.timeout)
            weakref.finalize(self, self._client.close)
        return self._client

    def __repr__(self) -> str:
        return f"OpenAIHTTPModel({self.model!r}, api_base={self.api_base!r})"

    def _send(self, kwargs: dict[str, Any], request_id: str) -> ModelReply:
        response = self._http().post(self._url(), json=self._body(kwargs), headers=self._headers(kwargs))
        _raise_for_status(response)
        try:
            data = response.json()
        except ValueError:
            raise _BadReply("the server's reply is not JSON") from None
        return _reply(data, request_id=request_id, model=self.model)

    def _open_stream(self, kwargs: dict[str, Any]) -> Iterator[str]:
        import httpx

        client = httpx.Client(timeout=self.timeout)
        try:
            request = client.build_request("POST", self._url(), json=self._body(kwargs), headers=self._headers(kwargs))
            response = client.send(request, stream=True)
            if response.is_error:
                response.read()
                _raise_for_status(response)
        except BaseException:
            client.close()
            raise
        return _events(client, response)

    def _url(self) -> str:
        return f"{(self.api_base or '').rstrip('/')}/chat/completions"

    def _body(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        body = {k: v for k, v in kwargs.items() if k not in _NOT_BODY}
        body["model"] = self.model.removeprefix("openai/")  # as litellm sends it: the provider prefix is ours
        return body

    def _headers(self, kwargs: dict[str, Any]) -> dict[str, str]:
        headers = dict(kwargs.get("extra_headers") or {})
        if kwargs.get("api_key"):
            headers["Authorization"] = f"Bearer {kwargs['api_key']}"
        return headers

    def _error(self, exc: Exception, request_id: str) -> LLMError:
        import httpx

        secrets = self._secrets()
        status: int | None = None
        retry_after = None
        if isinstance(exc, httpx.TimeoutException):
            kind: ErrorKind = "timeout"
            detail = str(exc)
        elif isinstance(exc, httpx.TransportError):
            kind, detail = "unreachable", " ".join(str(exc).split()) or type(exc).__name__
        elif isinstance(exc, _HTTPFailure):
            status, detail, retry_after = exc.status, exc.detail, exc.retry_after
            kind = _status_kind(exc.status, exc.detail)
        elif isinstance(exc, _BadReply):
            kind, detail = "other", f"unexpected reply: {exc}"
        else:  # a reply that is not the OpenAI shape in a way _reply does not check
            kind, detail = "other", f"unexpected reply: {type(exc).__name__}: {exc}"
        return describe(kind, model=self.model, api_base=self.api_base, timeout=self.timeout, request_id=request_id,
                        secrets=secrets, detail=detail, status=status, retry_after=retry_after)  # fmt: skip


def _status_kind(status: int, detail: str) -> ErrorKind:
    """The kind of an HTTP error status, as litellm's exception classes sort them."""
    if status == 401:
        return "auth"
    if status == 404:
        return "not_found"
    if status == 429:
        return "rate_limited"
    if status == 400 and any(word in detail.lower() for word in _CONTEXT_WORDS):
        return "context"
    return "server" if status >= 500 else "other"


def _raise_for_status(response: httpx.Response) -> None:
    if not response.is_error:
        return
    try:
        error = response.json().get("error")
        detail = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        detail = None
    text = " ".join(str(detail or response.text or response.reason_phrase).split()).rstrip(".")
    raise _HTTPFailure(response.status_code, text[:300], retry_after_s(response.headers))


def _events(client: httpx.Client, response: httpx.Response) -> Iterator[str]:
    """The text deltas of a server-sent-events stream of chat.completion.chunk objects, until ``[DONE]``."""
    try:
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            payload = line[len("data:") :].strip()
            if payload == "[DONE]":
                break
            choices = json.loads(payload).get("choices") or []
            text = (choices[0].get("delta") or {}).get("content") if choices else None
            if text:
                yield text
    finally:
        response.close()
        client.close()


def _reply(data: dict[str, Any], *, request_id: str, model: str) -> ModelReply:
    """The parts omx uses of an OpenAI chat completion (JSON), as ``agent.model.llm._reply`` reads litellm's object;
    ``_BadReply`` says in a sentence what a malformed one lacks."""
    if not isinstance(data, dict):
        raise _BadReply("the server's reply is not a JSON object (a chat completion)")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _BadReply("the server's reply has no choices")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise _BadReply("the server's reply has no message in its first choice")
    calls = []
    for i, c in enumerate(message.get("tool_calls") or []):
        function = c.get("function") if isinstance(c, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _BadReply(f"tool call {i + 1} of the server's reply has no function name")
        calls.append(ToolCall(id=c.get("id") or f"call_{i}", name=function["name"],
                              arguments=function.get("arguments") or "{}"))  # fmt: skip
    raw = _object(data.get("usage"))
    details = _object(raw.get("prompt_tokens_details"))
    usage = Usage(
        prompt_tokens=raw.get("prompt_tokens") or 0,
        completion_tokens=raw.get("completion_tokens") or 0,
        cached_tokens=details.get("cached_tokens") or 0,
    )
    return ModelReply(content=message.get("content"), tool_calls=calls, usage=usage, request_id=request_id,
                      model=model)  # fmt: skip


def _object(value: Any) -> dict[str, Any]:
    """A JSON object of the reply, or an empty one where the server sent null or another type."""
    return value if isinstance(value, dict) else {}
