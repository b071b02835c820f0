"""A tiny OpenAI-compatible server on 127.0.0.1 that replays scripted replies (STYLE lesson 9: no real model).

It lets tests drive the real litellm client end to end, tool calls and cached-token usage included, with no
network: ``enqueue`` what the "model" says next, run the code, then read ``requests`` to see what it was asked.
The standard library and the one constant it shares with ``ScriptedModel``, so it runs wherever the tests run.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.model.llm import MARKED_ONLY


@dataclass
class ScriptedResponse:
    """One scripted answer: a chat completion, or an HTTP error with ``status`` and ``error``, after ``delay`` s."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, Any] | None = None
    status: int = 200
    error: str = "scripted error"
    delay: float = 0.0
    finish_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)  # sent with the answer, e.g. Retry-After
    body: bytes | None = None  # answered as is with status 200, in place of a chat completion (a malformed reply)
    for_schema: str | None = None  # answers only a request asked with the JSON schema of this name


def _tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """[{"name", "arguments": dict|str, "id"?}] in OpenAI wire format."""
    wire = []
    for i, call in enumerate(calls):
        arguments = call.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        function = {"name": call["name"], "arguments": text}
        wire.append({"id": call.get("id", f"call_{i}"), "type": "function", "function": function})
    return wire


def _usage(usage: dict[str, Any] | None) -> dict[str, Any]:
    """{"prompt_tokens", "completion_tokens", "cached_tokens"} in OpenAI wire format (cached under details)."""
    u = dict(usage or {"prompt_tokens": 10, "completion_tokens": 5})
    cached = u.pop("cached_tokens", 0)
    u.setdefault("prompt_tokens", 0)
    u.setdefault("completion_tokens", 0)
    u.setdefault("total_tokens", u["prompt_tokens"] + u["completion_tokens"])
    u.setdefault("prompt_tokens_details", {"cached_tokens": cached})
    return u


class OpenAIStub:
    """The server: ``base_url``, ``enqueue(...)``, ``requests`` (JSON bodies received), ``headers``; ``close()``.

    ``unsupported_response_formats`` (a set, changeable at any time) plays a server without some ``response_format``
    types: a request asking for one is answered HTTP 400 at once, as llama.cpp or OpenAI answer an option they do
    not take, without using a scripted reply; ``response_formats`` lists the type each request asked for."""

    def __init__(self, port: int = 0, *, unsupported_response_formats: set[str] | None = None) -> None:
        """``port`` 0 takes a free one; a fixed one plays a server at its usual address (the README's Ollama)."""
        self.unsupported_response_formats: set[str] = set(unsupported_response_formats or ())
        self._queue: list[ScriptedResponse] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.unscripted: list[dict[str, Any]] = []  # MARKED_ONLY requests with no reply for them (answered 404)
        self.headers: list[dict[str, str]] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request: scripts/bench_start.py times a start
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="openai-stub", daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def enqueue(
        self,
        content: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        usage: dict[str, Any] | None = None,
        *,
        status: int = 200,
        error: str = "scripted error",
        delay: float = 0.0,
        finish_reason: str | None = None,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        for_schema: str | None = None,
    ) -> None:
        """Queue the next reply. tool_calls: [{"name", "arguments": dict or JSON text, "id"?}]; usage:
        {"prompt_tokens", "completion_tokens", "cached_tokens"}; status != 200 answers an OpenAI-style error with
        message ``error``; delay (s) holds the answer back, to test timeouts; headers go with the answer; body is
        answered as is (status 200) instead of a chat completion; for_schema: the reply answers the first request asked
        with the JSON schema of that name, and no other (as ``ScriptedModel``'s marked replies do: a request of a
        ``MARKED_ONLY`` schema with no reply for it is answered 404, a request the server cannot serve)."""
        scripted = ScriptedResponse(content, tool_calls, usage, status, error, delay, finish_reason,
                                    headers=headers or {}, body=body, for_schema=for_schema)  # fmt: skip
        with self._lock:
            self._queue.append(scripted)

    @property
    def response_formats(self) -> list[str | None]:
        """The ``response_format`` type of each request received (None: it sent none)."""
        with self._lock:
            return [(r.get("response_format") or {}).get("type") for r in self.requests]

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> ScriptedResponse:
        with self._lock:
            asked = (body.get("response_format") or {}).get("type")
            name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
            marked = [i for i, r in enumerate(self._queue) if r.for_schema is not None and r.for_schema == name]
            if not marked and name in MARKED_ONLY and asked not in self.unsupported_response_formats:
                self.unscripted.append(body)  # not in requests: a script's requests count as before omx made it
                return ScriptedResponse(status=404, error=f"openai stub: no scripted response for a {name} request")
            self.requests.append(body)
            self.headers.append(headers)
            self.arrivals.append(time.monotonic())
            if asked in self.unsupported_response_formats:
                return ScriptedResponse(status=400, error=f"response_format type {asked!r} is not supported")
            unmarked = [i for i, r in enumerate(self._queue) if r.for_schema is None]
            if marked or unmarked:
                return self._queue.pop((marked or unmarked)[0])
        return ScriptedResponse(
            status=500, error=f"openai stub: no scripted response left for request {len(self.requests)}"
        )

    def wait(self, seconds: float) -> None:
        """Sleep for a delayed reply, but wake at once when the server is closing."""
        self._stopping.wait(seconds)

    def close(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIStub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def completion(scripted: ScriptedResponse, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": scripted.content}
    if scripted.tool_calls:
        message["tool_calls"] = _tool_calls(scripted.tool_calls)
    finish = scripted.finish_reason or ("tool_calls" if scripted.tool_calls else "stop")
    return {
        "id": f"chatcmpl-stub-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(scripted.usage),
        **scripted.extra,
    }


def _stream_events(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The same reply as chat.completion.chunk events: the whole delta in one chunk, then the finish and usage."""
    base = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    delta = dict(reply["choices"][0]["message"])
    for i, call in enumerate(delta.get("tool_calls", [])):
        call["index"] = i
    finish = reply["choices"][0]["finish_reason"]
    return [
        base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": reply["usage"]},
    ]


def _handler_for(stub: OpenAIStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def _send(
            self,
            status: int,
            payload: bytes,
            content_type: str = "application/json",
            headers: dict[str, str] | None = None,
        ) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(
                    200, json.dumps({"object": "list", "data": [{"id": "test-model", "object": "model"}]}).encode()
                )
            else:
                self._send(404, b'{"error": {"message": "not found"}}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
                return
            body = json.loads(raw or b"{}")
            scripted = stub._next(body, {k.lower(): v for k, v in self.headers.items()})
            if scripted.delay:
                stub.wait(scripted.delay)
            try:
                if scripted.body is not None:
                    self._send(200, scripted.body)
                elif scripted.status != 200:
                    error = {"error": {"message": scripted.error, "type": "server_error", "code": scripted.status}}
                    self._send(scripted.status, json.dumps(error).encode(), headers=scripted.headers)
                elif body.get("stream"):
                    events = _stream_events(completion(scripted, body.get("model", "test-model")))
                    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                    self._send(200, text.encode(), "text/event-stream")
                else:
                    self._send(200, json.dumps(completion(scripted, body.get("model", "test-model"))).encode())
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

    return Handler
