"""Model access: one small ``Model`` protocol, litellm behind it, and a scripted model for tests.

Everything above this module talks to ``Model.complete`` and gets a ``ModelReply`` back, so the planner, the
agent loop and the tests never see litellm. litellm costs about two seconds to import and fetches a price list
from the internet unless told not to, so it is imported on the first real call, never at module import.
``LiteLLMModel.stream`` sends the same request as ``complete`` with ``stream=True``, so
one configuration serves the blocking agent loop and streamed responses.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import importlib.util
import inspect
import json
import logging
import os
import re
import uuid
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from agent.model.errors import LLMError, redact, translate

__all__ = ["LLM", "LLMError", "LiteLLMModel", "Model", "ModelReply", "ScriptedModel", "ToolCall", "Usage"]
__all__ += ["ToolChoiceModel", "model_from_settings", "timeout_from_env"]

log = logging.getLogger("omx.llm")

#: ``LLM.call``'s precondition: a prompt is shorter than this
CALL_LIMIT = 10_000


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens served from the provider's cache (KV-cache hit)


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str  # the JSON text the model sent, unparsed: the caller reports bad JSON back to the model
    # "text": written in the reply's content, not sent as a native call (agent.chat.text_tool_calls reads those)
    source: Literal["native", "text"] = "native"


class ModelReply(BaseModel):
    content: str | None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    request_id: str
    model: str
    retries: list[str] = Field(default_factory=list)  # failed attempts before this reply (agent.model.waiting)

    def as_message(self) -> dict[str, Any]:
        """The reply as the assistant message that goes back into the conversation, tool calls included."""
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in self.tool_calls
        ]
        return {"role": "assistant", "content": self.content, "tool_calls": calls}


#: what a reply must be: anything (False), one JSON object (True), or one JSON object that follows this JSON schema,
#: which a server that supports it (llama.cpp, vLLM, Ollama, OpenAI) enforces while decoding
JsonMode = bool | dict[str, Any]


class Model(Protocol):
    def complete(
        self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None, json_mode: JsonMode = False
    ) -> ModelReply: ...


class ToolChoiceModel(Protocol):
    """A ``Model`` that also takes OpenAI's ``tool_choice`` ("none", or ``allowed_tools``): tool masking uses it."""

    supports_allowed_tools: bool

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: JsonMode = False,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> ModelReply: ...


def new_request_id() -> str:
    """A unique id per call, sent as X-Request-ID and written to the trace, so a run can be matched to server logs."""
    return f"omx-{uuid.uuid4().hex[:16]}"


def _import_litellm() -> Any:
    """Import litellm offline (local price list) and quiet: its records go to omx's logging, not its own console."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    quiet = "LITELLM_LOG" not in os.environ  # a user who sets LITELLM_LOG asked for litellm's own output
    if quiet:
        for name in _LITELLM_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)
    with _litellm_warnings_ignored():
        import litellm
    litellm.suppress_debug_info = True
    if quiet:
        for name in _LITELLM_LOGGERS:
            logging.getLogger(name).handlers.clear()
    if not _closing_at_exit:
        atexit.register(_close_cached_clients, litellm)
        _closing_at_exit.append(True)
    return litellm


_closing_at_exit: list[bool] = []  # one atexit hook per process, however often litellm is asked for


def _close_cached_clients(litellm: Any) -> None:
    """Close the provider clients litellm keeps for reuse between calls (an ``openai.OpenAI`` per endpoint holds an
    open connection): left to the interpreter's end, each socket is a ResourceWarning on stderr (litellm 1.110).
    Only the synchronous ones: the calls here are blocking, and an async client's ``close`` needs a loop."""
    clients = getattr(getattr(litellm, "in_memory_llm_clients_cache", None), "cache_dict", None) or {}
    for client in list(clients.values()):
        close = getattr(client, "close", None)
        if callable(close) and not inspect.iscoroutinefunction(close):
            with contextlib.suppress(Exception):  # at exit: a client that cannot close is no reason to fail
                close()


_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


@contextlib.contextmanager
def _litellm_warnings_ignored() -> Iterator[None]:
    """litellm's own deprecations, and pydantic's remarks on litellm's types, are not the user's to fix."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"pydantic\.")
        yield


class LiteLLMModel:
    """A ``Model`` over ``litellm.completion``: any provider litellm knows, or any OpenAI-compatible server."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_input_chars: int = 200_000,
        temperature: float = 0,
        max_tokens: int | None = None,
        allowed_tools: bool | None = None,
    ) -> None:
        self.model, self.api_base, self.timeout = model, api_base, timeout
        # OpenAI's own API takes tool_choice {"type": "allowed_tools"}; other servers may reject it, so by default
        # only openai/ models without an api_base get it (tool masking then falls back to refusing calls)
        self.supports_allowed_tools = (
            allowed_tools if allowed_tools is not None else model.startswith("openai/") and api_base is None
        )
        self.max_input_chars, self.temperature, self.max_tokens = max_input_chars, temperature, max_tokens
        self._api_key = api_key  # kept private and out of repr and logs

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.model!r}, api_base={self.api_base!r})"

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: JsonMode = False,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> ModelReply:
        request_id = new_request_id()
        kwargs = self._request(messages, request_id, tools=tools, json_mode=json_mode, tool_choice=tool_choice)
        try:
            return self._send(kwargs, request_id)
        except LLMError:
            raise
        except Exception as exc:
            raise self._error(exc, request_id) from None

    def _send(self, kwargs: dict[str, Any], request_id: str) -> ModelReply:
        """One blocking request built by ``_request``; ``openai_http`` sends the same one without litellm."""
        litellm = _import_litellm()  # before find_spec below, which would import litellm without our settings
        if kwargs.get("tools") and importlib.util.find_spec("litellm.responses.mcp") is not None:
            kwargs["_skip_mcp_handler"] = True  # litellm 1.7x+ imports the optional `mcp` package for any tools
        with _litellm_warnings_ignored(), ThreadPoolExecutor(1, thread_name_prefix="omx-llm") as pool:
            # off the main thread: there litellm's sync logging adopts a main-thread event loop it never closes
            response = pool.submit(litellm.completion, **kwargs).result()
        return _reply(response, request_id=request_id, model=self.model)

    def stream(self, messages: list[dict[str, Any]], *, json_mode: JsonMode = False) -> AsyncIterator[str]:
        """The reply's text deltas as the server sends them (``stream=True``): a trio async iterator.

        The request is built exactly as ``complete`` builds it; litellm's stream is a blocking iterator, so each
        chunk is pulled in a worker thread and a slow model never blocks trio. Errors are the same ``LLMError``.
        """
        request_id = new_request_id()
        kwargs = self._request(copy.deepcopy(messages), request_id, json_mode=json_mode)  # fails before any I/O
        return self._stream(kwargs | {"stream": True}, request_id)

    async def _stream(self, kwargs: dict[str, Any], request_id: str) -> AsyncGenerator[str, None]:
        import trio  # here, not at import: the blocking loop and `omx --help` never pay for it

        def pull(chunks: Iterator[str]) -> Any:
            with _litellm_warnings_ignored():
                return next(chunks, _END)

        try:
            chunks = await trio.to_thread.run_sync(self._open_stream, kwargs)
            while (text := await trio.to_thread.run_sync(pull, chunks)) is not _END:
                yield text
        except LLMError:
            raise
        except Exception as exc:
            raise self._error(exc, request_id) from None

    def _open_stream(self, kwargs: dict[str, Any]) -> Iterator[str]:
        """The text deltas of a streamed request, as a blocking iterator (pulled in a worker thread)."""
        litellm = _import_litellm()
        with _litellm_warnings_ignored():
            chunks = iter(litellm.completion(**kwargs))
        return _stream_texts(chunks)

    def _request(
        self,
        messages: list[dict[str, Any]],
        request_id: str,
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: JsonMode = False,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """litellm's keyword arguments for one request, the same for a blocking and a streamed call."""
        size = sum(len(str(m.get("content") or "")) for m in messages)
        if size > self.max_input_chars:
            raise LLMError(
                f"LLM error: input too long: {size} characters, the limit is {self.max_input_chars}; shorten the input",
                request_id=request_id,
            )
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "timeout": self.timeout}
        kwargs.update(temperature=self.temperature, extra_headers={"X-Request-ID": request_id}, max_retries=0)
        optional: dict[str, Any] = {
            "api_base": self.api_base,
            "api_key": self._api_key,
            "max_tokens": self.max_tokens,
            "tools": tools or None,
            "tool_choice": tool_choice if tools else None,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        if isinstance(json_mode, dict):
            name = re.sub(r"[^A-Za-z0-9_-]", "_", str(json_mode.get("title") or "reply"))  # OpenAI's rule for names
            schema = {"name": name, "schema": json_mode, "strict": True}
            kwargs["response_format"] = {"type": "json_schema", "json_schema": schema}
        elif json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        log.debug("request %s: %s, %d messages, %d characters", request_id, self.model, len(messages), size)
        return kwargs

    def _secrets(self) -> list[str | None]:
        """What a message must never show: the key, and every provider key or token in the environment."""
        return [self._api_key, *(v for k, v in os.environ.items() if k.endswith(("_API_KEY", "_TOKEN")))]

    def _error(self, exc: Exception, request_id: str) -> LLMError:
        """The one-line ``LLMError`` for a failed call, with the key and every provider secret redacted."""
        secrets = self._secrets()
        log.debug("request %s failed: %s", request_id, redact(repr(exc), secrets))
        return translate(exc, model=self.model, api_base=self.api_base, timeout=self.timeout,
                         request_id=request_id, secrets=secrets)  # fmt: skip


_END = object()  # the end of a litellm stream, from a worker thread's ``next``


def _stream_texts(chunks: Iterator[Any]) -> Iterator[str]:
    for chunk in chunks:
        choices = getattr(chunk, "choices", None) or []
        text = getattr(getattr(choices[0], "delta", None), "content", None) if choices else None
        if text:
            yield text


def _reply(response: Any, *, request_id: str, model: str) -> ModelReply:
    """Read the parts omx uses from litellm's OpenAI-shaped response."""
    message = response.choices[0].message
    calls = [
        ToolCall(id=c.id or f"call_{i}", name=c.function.name, arguments=c.function.arguments or "{}")
        for i, c in enumerate(getattr(message, "tool_calls", None) or [])
    ]
    raw = getattr(response, "usage", None)
    details = getattr(raw, "prompt_tokens_details", None)
    usage = Usage(
        prompt_tokens=getattr(raw, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(raw, "completion_tokens", 0) or 0,
        cached_tokens=getattr(details, "cached_tokens", 0) or 0,
    )
    return ModelReply(content=message.content, tool_calls=calls, usage=usage, request_id=request_id, model=model)


Scripted = ModelReply | LLMError | str | dict[str, Any]


#: requests (by their JSON schema's title) a scripted model answers only with a reply marked for them
#: (``{"for": TITLE, ...}``), else fails as a server would: a script written before omx made such a request still
#: plays its replies in order
MARKED_ONLY = frozenset({"TaskReading", "FileOperations", "TextOperation"})


class ScriptedModel:
    """A ``Model`` for tests (no real model in them): replies in the given order, and a record of every request.

    A reply marked ``"for": TITLE`` answers the first request asked with a JSON schema of that title, wherever it is
    queued, and no other request; unmarked replies answer the rest in order (``MARKED_ONLY``: titles that never take
    an unmarked reply; such a request with no reply marked for it fails, and is kept in ``unscripted``, not in
    ``requests``, so a script's requests are counted as they were before omx made it)."""

    def __init__(self, replies: Iterable[Scripted] = (), *, supports_allowed_tools: bool = True) -> None:
        self.supports_allowed_tools = supports_allowed_tools
        self._replies: list[tuple[str | None, ModelReply | LLMError]] = []
        self._made = 0
        self.requests: list[dict[str, Any]] = []
        self.unscripted: list[dict[str, Any]] = []
        self.enqueue(*replies)

    def enqueue(self, *replies: Scripted) -> None:
        """Add replies: a ModelReply, a str (text) or {"content", "tool_calls": [{"name", "arguments"}], "usage",
        "for"}; an ``LLMError`` is raised by the request that takes it (a failing or flaky model)."""
        self._replies.extend(self._coerce(r) for r in replies)

    def _coerce(self, reply: Scripted) -> tuple[str | None, ModelReply | LLMError]:
        n = self._made = self._made + 1
        if isinstance(reply, ModelReply | LLMError):
            return None, reply
        if isinstance(reply, str):
            reply = {"content": reply}
        calls = [
            ToolCall(id=c.get("id", f"call_{n}_{i}"), name=c["name"], arguments=_json_text(c.get("arguments", {})))
            for i, c in enumerate(reply.get("tool_calls") or [])
        ]
        usage = Usage(**reply.get("usage", {}))
        return reply.get("for"), ModelReply(content=reply.get("content"), tool_calls=calls, usage=usage,
                                            request_id=f"scripted-{n}", model="scripted")  # fmt: skip

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: JsonMode = False,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> ModelReply:
        request: dict[str, Any] = {"messages": copy.deepcopy(messages), "tools": tools, "json_mode": json_mode}
        if tool_choice is not None:
            request["tool_choice"] = copy.deepcopy(tool_choice)
        title = json_mode.get("title") if isinstance(json_mode, dict) else None
        taken = next((i for i, (mark, _) in enumerate(self._replies) if mark is not None and mark == title), None)
        if taken is None and title in MARKED_ONLY:
            self.unscripted.append(request)
            raise LLMError(f"LLM error: the scripted model has no reply for a {title} request")
        self.requests.append(request)
        if taken is None:
            taken = next((i for i, (mark, _) in enumerate(self._replies) if mark is None), None)
        if taken is None:
            raise LLMError(f"LLM error: the scripted model has no reply left for request {len(self.requests)}")
        _, reply = self._replies.pop(taken)
        if isinstance(reply, LLMError):
            raise reply
        return reply


def _json_text(arguments: str | dict[str, Any]) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def model_from_settings(model: str | None, api_base: str | None, *, timeout: float | None = None) -> Model:
    """The model the user chose: --model / OMX_MODEL, --api-base / OMX_API_BASE; provider keys from their variables.

    An ``openai/<name>`` model with an API base is sent by the direct client (``agent.model.openai_http``: no litellm
    import, so the first request leaves at once); every other model goes through litellm. ``timeout``: seconds
    one request may take, else ``OMX_TIMEOUT``, else 60.
    """
    name = model or os.environ.get("OMX_MODEL")
    base = api_base or os.environ.get("OMX_API_BASE")
    if not name:
        raise LLMError(
            "LLM error: no model configured; pass --model or set OMX_MODEL (for example openai/gpt-4o-mini, "
            "or ollama/llama3.1, or openai/<name> with --api-base http://127.0.0.1:8000/v1 for a local server)"
        )
    if name.startswith("scripted:"):  # demos and shell tests: the replies, in order, from a JSON list in a file
        return _scripted_from_file(name.removeprefix("scripted:"))
    key = os.environ.get("OMX_API_KEY")
    if key is None and base and name.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        key = "no-key"  # local OpenAI-compatible servers ignore the key, but the OpenAI client insists on one
    seconds = timeout if timeout is not None else timeout_from_env()
    if base and name.startswith("openai/"):
        from agent.model.openai_http import OpenAIHTTPModel  # imports agent.model.llm: here, not at the top

        return OpenAIHTTPModel(name, api_base=base, api_key=key, timeout=seconds)
    return LiteLLMModel(name, api_base=base, api_key=key, timeout=seconds)


DEFAULT_TIMEOUT_S = 60.0


def timeout_from_env() -> float:
    """``OMX_TIMEOUT`` in seconds, else 60; a value that is not a positive number is an error that says so."""
    text = os.environ.get("OMX_TIMEOUT")
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0
    if not seconds > 0:
        raise LLMError(f"LLM error: OMX_TIMEOUT={text!r} is not a number of seconds above 0 (for example 180)")
    return seconds


def _scripted_from_file(path: str) -> ScriptedModel:
    """``--model scripted:FILE``: a ScriptedModel whose replies are FILE's JSON list (as ``enqueue`` takes them)."""
    try:
        with open(path, encoding="utf-8") as f:
            replies = json.load(f)
    except (OSError, ValueError) as exc:
        raise LLMError(f"LLM error: cannot read the scripted replies in {path}: {exc}") from None
    if not isinstance(replies, list):
        raise LLMError(f"LLM error: {path} must hold a JSON list of replies")
    return ScriptedModel(replies)


class LLM:
    """The plain ``LLM.call(prompt) -> str``: one user message in, the text out, errors as an "LLM error" string."""

    def __init__(self, model: Model | str, *, api_key: str | None = None, api_base: str | None = None,
                 max_tokens: int | None = None, timeout: float = 60) -> None:  # fmt: skip
        self.model: Model = (
            LiteLLMModel(model, api_key=api_key, api_base=api_base, max_tokens=max_tokens, timeout=timeout)
            if isinstance(model, str)
            else model
        )
        self.last_request_id: str | None = None

    def call(self, prompt: str) -> str:
        """The reply's text; a failed model call returns its clear "LLM error: ..." line instead of raising."""
        if not prompt:
            raise ValueError("prompt must not be empty")
        if len(prompt) > CALL_LIMIT:
            raise ValueError(f"input too long: {len(prompt)} characters, the limit is {CALL_LIMIT}")
        try:
            reply = self.model.complete([{"role": "user", "content": prompt}])
        except LLMError as exc:
            self.last_request_id = exc.request_id
            return str(exc)
        self.last_request_id = reply.request_id
        return reply.content or ""
