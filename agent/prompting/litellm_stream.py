"""Token streaming from a real model: ``litellm.completion(stream=True)`` behind the ``StreamingModel`` protocol.

It reuses a ``LiteLLMModel``'s settings (model, server, key, timeout) so one configuration serves both the
blocking agent loop and streamed responses. litellm's stream is a blocking iterator; each ``next`` runs in a
worker thread, so a slow model never blocks trio and other responses stream meanwhile. Errors become the same
one-line ``LLMError`` as a blocking call. litellm is imported on the first stream, never at import.
"""

from __future__ import annotations

import copy
import os
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import trio

from agent.llm import LiteLLMModel, _import_litellm, _litellm_warnings_ignored, new_request_id
from agent.llm_errors import translate

__all__ = ["LiteLLMStream"]

_END = object()


class LiteLLMStream:
    """A ``StreamingModel`` over a ``LiteLLMModel``: the reply's text deltas as the server sends them."""

    def __init__(self, model: LiteLLMModel) -> None:
        self.model = model

    def stream(self, messages: list[dict[str, Any]], *, json_mode: bool = False) -> AsyncIterator[str]:
        return self._stream(copy.deepcopy(messages), json_mode)

    def _kwargs(self, messages: list[dict[str, Any]], json_mode: bool, request_id: str) -> dict[str, Any]:
        m = self.model
        kwargs: dict[str, Any] = {"model": m.model, "messages": messages, "timeout": m.timeout, "stream": True}
        kwargs.update(temperature=m.temperature, extra_headers={"X-Request-ID": request_id}, max_retries=0)
        optional = {"api_base": m.api_base, "api_key": m._api_key, "max_tokens": m.max_tokens}
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    async def _stream(self, messages: list[dict[str, Any]], json_mode: bool) -> AsyncGenerator[str, None]:
        request_id = new_request_id()
        kwargs = self._kwargs(messages, json_mode, request_id)

        def start() -> Any:
            litellm = _import_litellm()
            with _litellm_warnings_ignored():
                return iter(litellm.completion(**kwargs))

        def pull(chunks: Any) -> Any:
            with _litellm_warnings_ignored():
                return next(chunks, _END)

        try:
            chunks = await trio.to_thread.run_sync(start)
            while (chunk := await trio.to_thread.run_sync(pull, chunks)) is not _END:
                choices = getattr(chunk, "choices", None) or []
                text = getattr(getattr(choices[0], "delta", None), "content", None) if choices else None
                if text:
                    yield text
        except Exception as exc:
            m = self.model
            secrets = [m._api_key, *(v for k, v in os.environ.items() if k.endswith(("_API_KEY", "_TOKEN")))]
            raise translate(exc, model=m.model, api_base=m.api_base, timeout=m.timeout, request_id=request_id,
                            secrets=secrets) from None  # fmt: skip
