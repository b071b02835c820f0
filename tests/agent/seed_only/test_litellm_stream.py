"""Seed 002 §4 with a real client: litellm's stream=True through the OpenAI stub, parsed as it arrives."""

from __future__ import annotations

import pytest

from agent.model.llm import LiteLLMModel, LLMError
from agent.prompting import LayeredSettings
from agent.seed_only.requests import ModelRequest
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]


def stream_for(stub: OpenAIStub) -> LiteLLMModel:
    """``LiteLLMModel`` is a ``StreamingModel``: its ``stream`` shares ``complete``'s request building."""
    return LiteLLMModel("openai/test-model", api_base=stub.base_url, api_key="sk-test", timeout=10)


@pytest.mark.trio
async def test_litellm_stream_feeds_streaming_parse(openai_stub: OpenAIStub) -> None:
    """Seed 002 §4: a structured reply streamed by a real client yields StreamingData, the first value not None."""
    openai_stub.enqueue('{"thinking": "hi", "reply": ["hello"]}')
    settings = LayeredSettings.defaults().set(
        "response", {"streaming_parse": True, "streaming_parse_path_style": "slash"}
    )
    request = ModelRequest(stream_for(openai_stub), settings)
    request.set_prompt("input", "hello").set_prompt("output", {"thinking": (str,), "reply": ([str],)})
    events = [e async for e in request.get_response().instant()]
    assert events and events[0].value is not None
    assert {e.path: e.value for e in events if e.is_complete} == {"/thinking": "hi", "/reply/0": "hello"}
    body = openai_stub.requests[0]
    assert body["stream"] is True and body["response_format"] == {"type": "json_object"}


@pytest.mark.trio
async def test_litellm_stream_errors_are_one_clear_line(openai_stub: OpenAIStub) -> None:
    """Seed 002 §4: a failed stream raises the same LLMError a blocking call gives, without the key."""
    openai_stub.enqueue(status=500, error="boom")
    response = ModelRequest(stream_for(openai_stub)).set_prompt("input", "x").get_response()
    with pytest.raises(LLMError, match=r"^LLM error: .*boom") as raised:
        await response.text()
    assert "sk-test" not in str(raised.value)


@pytest.mark.trio
async def test_stream_sends_the_request_complete_sends(openai_stub: OpenAIStub) -> None:
    """One request builder: a streamed call is the blocking call's body plus ``stream``, limits included."""
    openai_stub.enqueue("one")
    openai_stub.enqueue("two")
    model = stream_for(openai_stub)
    messages = [{"role": "user", "content": "hi"}]
    assert model.complete(messages, json_mode=True).content == "one"
    assert "".join([t async for t in model.stream(messages, json_mode=True)]) == "two"
    blocking, streamed = openai_stub.requests
    assert streamed.pop("stream") is True and "stream" not in blocking
    streamed.pop("stream_options", None)  # litellm's own addition for streamed usage, if any
    assert streamed == blocking
    small = LiteLLMModel("openai/test-model", api_base=openai_stub.base_url, api_key="sk-test", max_input_chars=1)
    with pytest.raises(LLMError, match="input too long"):
        small.stream(messages)
    assert len(openai_stub.requests) == 2
