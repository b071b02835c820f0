"""Seed 002 §4 streaming, not called by the product: models that yield text chunks, parsed into partial values.

``StreamingModel.stream`` returns an async iterator of text chunks. ``StreamingParser`` reads a JSON reply as it
arrives and reports each value that changed as a ``StreamingData`` addressed by its path (``/reply/0`` in the
slash style, ``reply[0]`` in the dot style), so a user interface can show a field while the model still writes it.

Each chunk re-parses the text received so far: quadratic in the reply length, which is fine for the few
kilobytes a structured reply has, and far simpler than an incremental parser that must agree with ``json``.

Real models: ``agent.model.llm.LiteLLMModel`` is a ``StreamingModel`` itself (its ``stream`` sends tokens through
litellm); ``CompletionStream`` adapts any other ``agent.model.llm.Model`` (the whole reply arrives as one chunk).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Literal, Protocol

import trio
from pydantic import BaseModel, ConfigDict

from agent.model.llm import LLMError, Model
from agent.seed_only.partial_json import Path, partial_leaves

__all__ = ["CompletionStream", "ScriptedStreamingModel", "StreamingData", "StreamingModel", "StreamingParser"]
__all__ += ["format_path"]

PathStyle = Literal["slash", "dot"]


class StreamingData(BaseModel):
    """One value as far as it has arrived: where it is, what it is so far, what was added, whether it is done."""

    model_config = ConfigDict(frozen=True)

    path: str
    value: Any
    delta: str | None = None  # for strings, the text added since the last report of this path
    is_complete: bool = False


class StreamingModel(Protocol):
    def stream(self, messages: list[dict[str, Any]], *, json_mode: bool = False) -> AsyncIterator[str]: ...


def format_path(path: Path, style: PathStyle) -> str:
    """``("reply", 0)`` as ``/reply/0`` (JSON Pointer, RFC 6901) or ``reply[0]``."""
    if style == "slash":
        return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path) or "/"
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


class StreamingParser:
    """Feed it chunks of a JSON reply; each ``feed`` returns the values that changed, in document order."""

    def __init__(self, path_style: PathStyle = "dot") -> None:
        if path_style not in ("slash", "dot"):
            raise ValueError(f"unknown path style {path_style!r}; use 'slash' or 'dot'")
        self.path_style: PathStyle = path_style
        self._text = ""
        self._seen: dict[Path, tuple[Any, bool]] = {}

    def feed(self, chunk: str) -> list[StreamingData]:
        self._text += chunk
        events: list[StreamingData] = []
        for path, value, complete in partial_leaves(self._text):
            previous = self._seen.get(path)
            if previous == (value, complete):
                continue
            delta = None
            if isinstance(value, str):
                before = previous[0] if previous is not None and isinstance(previous[0], str) else ""
                delta = value[len(before) :] if value.startswith(before) else value
            events.append(
                StreamingData(path=format_path(path, self.path_style), value=value, delta=delta, is_complete=complete)
            )
            self._seen[path] = (value, complete)
        return events


class ScriptedStreamingModel:
    """A ``StreamingModel`` for tests: scripted replies, sent in small chunks with a trio checkpoint between them.

    A reply given as a string is cut into ``chunk_size`` pieces; one given as a list is sent as those chunks.
    Replies are taken in the order of ``stream`` calls, not of consumption, so a response that is read later
    still gets the reply meant for its request.
    """

    def __init__(self, replies: Iterable[str | Sequence[str]] = (), *, chunk_size: int = 5) -> None:
        self.chunk_size = chunk_size
        self._replies: list[list[str]] = []
        self.requests: list[dict[str, Any]] = []
        self.enqueue(*replies)

    def enqueue(self, *replies: str | Sequence[str]) -> None:
        for reply in replies:
            if isinstance(reply, str):
                self._replies.append([reply[i : i + self.chunk_size] for i in range(0, len(reply), self.chunk_size)])
            else:
                self._replies.append(list(reply))

    def stream(self, messages: list[dict[str, Any]], *, json_mode: bool = False) -> AsyncIterator[str]:
        self.requests.append({"messages": copy.deepcopy(messages), "json_mode": json_mode})
        if not self._replies:
            raise LLMError(f"LLM error: the scripted model has no reply left for request {len(self.requests)}")
        return _chunks(self._replies.pop(0))


async def _chunks(chunks: list[str]) -> AsyncIterator[str]:
    for chunk in chunks:
        await trio.lowlevel.checkpoint()  # let other consumers run between chunks, as a network stream would
        yield chunk


class CompletionStream:
    """Any ``agent.model.llm.Model`` as a ``StreamingModel``: the call runs in a worker thread, one chunk."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def stream(self, messages: list[dict[str, Any]], *, json_mode: bool = False) -> AsyncIterator[str]:
        return self._stream(copy.deepcopy(messages), json_mode)

    async def _stream(self, messages: list[dict[str, Any]], json_mode: bool) -> AsyncIterator[str]:
        reply = await trio.to_thread.run_sync(lambda: self.model.complete(messages, json_mode=json_mode))
        if reply.content:
            yield reply.content
