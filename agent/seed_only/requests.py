"""Seed 002 §5 requests, not called by the product: one request, many responses, each a snapshot with its own stream.

``ModelRequest.get_response`` freezes the prompt and settings of that moment into a ``ModelResponse``, so the
request can be changed and asked again while earlier responses are still being read. A response asks its model
at once (so the model sees requests in the order they were made) but reads the stream only when someone reads
the response, and keeps every chunk: it can be read as deltas, text, parsed data or streaming parse events, by
several tasks at once, in any order, each seeing the whole reply. Whoever needs the next chunk fetches it under
the response's lock; everyone else replays what is already there.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import trio
from pydantic import BaseModel

from agent.prompting.layered_settings import LayeredSettings
from agent.prompting.output_model import parse_reply
from agent.prompting.output_schema import is_schema
from agent.prompting.prompt import Prompt
from agent.seed_only.streaming import StreamingData, StreamingModel, StreamingParser

__all__ = ["ModelRequest", "ModelResponse"]


class ModelRequest:
    """A prompt and settings (a child of the given ones) for one streaming model."""

    def __init__(self, model: StreamingModel, settings: LayeredSettings | None = None) -> None:
        self.model = model
        self.settings = (settings if settings is not None else LayeredSettings.defaults()).child()
        self.prompt = Prompt(self.settings)

    def set_settings(self, key: str, value: Any) -> ModelRequest:
        """A setting for this request only: the parent settings are not changed."""
        self.settings.set(key, value)
        return self

    def set_prompt(self, key: str, value: Any) -> ModelRequest:
        self.prompt.set(key, value)
        return self

    def get_response(self) -> ModelResponse:
        """A response to the prompt as it is now; later changes to the request do not reach it."""
        po = self.prompt.to_prompt_object()
        schema = po.output is not None and is_schema(po.output)
        return ModelResponse(
            self.model,
            self.prompt.to_messages(),
            settings=LayeredSettings(self.settings.to_dict()),
            output_model=self.prompt.to_output_model() if schema else None,
            json_mode=schema and po.output_format.lower() == "json",
        )


class ModelResponse:
    """The reply to one snapshot of a request; read it as ``deltas``, ``text``, ``data`` or ``instant`` events."""

    def __init__(
        self,
        model: StreamingModel,
        messages: list[dict[str, Any]],
        *,
        settings: LayeredSettings,
        output_model: type[BaseModel] | None = None,
        json_mode: bool = False,
    ) -> None:
        self.messages = messages
        self.settings = settings
        self.output_model = output_model
        self.json_mode = json_mode
        self._source: AsyncIterator[str] | None = model.stream(messages, json_mode=json_mode)
        self._chunks: list[str] = []
        self._done = False
        self._lock = trio.Lock()

    async def _chunk(self, index: int) -> str | None:
        """Chunk ``index``, fetching from the model if nobody has yet; None after the last one."""
        while index >= len(self._chunks) and not self._done:
            async with self._lock:
                if index < len(self._chunks) or self._done:
                    continue  # another reader fetched it while this one waited
                if self._source is None:
                    break  # closed early by aclose
                try:
                    self._chunks.append(await self._source.__anext__())
                except StopAsyncIteration:
                    self._done = True
        return self._chunks[index] if index < len(self._chunks) else None

    async def deltas(self) -> AsyncGenerator[str, None]:
        """The reply's text chunks from the first, however many readers there are."""
        index = 0
        while (chunk := await self._chunk(index)) is not None:
            yield chunk
            index += 1

    async def text(self) -> str:
        async for _ in self.deltas():
            pass
        return "".join(self._chunks)

    async def data(self) -> Any:
        """The reply checked against the output schema, as plain data; the text when no schema was asked for."""
        text = await self.text()
        return parse_reply(text, self.output_model) if self.output_model is not None else text

    async def instant(self) -> AsyncGenerator[StreamingData, None]:
        """Streaming parse (``response.streaming_parse``): each value of the JSON reply as it arrives."""
        if not self.settings.get("response.streaming_parse", False):
            raise RuntimeError("streaming parse is off for this response; set response.streaming_parse to true")
        parser = StreamingParser(self.settings.get("response.streaming_parse_path_style", "dot"))
        async for chunk in self.deltas():
            for event in parser.feed(chunk):
                yield event

    async def aclose(self) -> None:
        """Stop the model stream early (a reader that leaves before the end)."""
        source, self._source, self._done = self._source, None, True
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
