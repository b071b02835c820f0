"""The direct OpenAI-compatible client (issue 17, first request within 1 s): ``openai/...`` models with an API base
skip litellm, and must not be told apart from it. Each check sends the same call through ``LiteLLMModel`` and
``OpenAIHTTPModel`` to the local stub and compares what the server received and what the caller got back."""

from __future__ import annotations

import re
from typing import Any

import pytest
import trio

from agent.model.llm import LiteLLMModel, LLMError, ModelReply, model_from_settings
from agent.model.openai_http import OpenAIHTTPModel
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]

KEY = "sk-test-direct-0123456789"
TOOLS = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}]
PING = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "ping"}]


def both(stub: OpenAIStub, **settings: Any) -> tuple[LiteLLMModel, OpenAIHTTPModel]:
    return (
        LiteLLMModel("openai/test-model", api_base=stub.base_url, api_key=KEY, **settings),
        OpenAIHTTPModel("openai/test-model", api_base=stub.base_url, api_key=KEY, **settings),
    )


def outcome(model: LiteLLMModel, **call: Any) -> tuple[str, str] | dict[str, Any]:
    """The reply without its request id, or the error message with the id masked, and its kind."""
    try:
        reply: ModelReply = model.complete(PING, **call)
    except LLMError as exc:
        return re.sub(r"omx-[0-9a-f]+", "ID", str(exc)), exc.kind
    return reply.model_dump(exclude={"request_id"})


def test_an_openai_model_with_an_api_base_is_sent_without_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMX_TIMEOUT", raising=False)
    assert isinstance(model_from_settings("openai/qwen2.5", "http://127.0.0.1:8080/v1"), OpenAIHTTPModel)
    assert not isinstance(model_from_settings("openai/gpt-4o-mini", None), OpenAIHTTPModel)  # OpenAI itself
    assert not isinstance(model_from_settings("ollama/llama3.1", "http://127.0.0.1:11434"), OpenAIHTTPModel)


@pytest.mark.parametrize(
    "call",
    [
        {},
        {"tools": TOOLS, "tool_choice": "none"},
        {"json_mode": True},
    ],
    ids=["plain", "tools", "json"],
)
def test_the_direct_client_sends_what_litellm_sends(openai_stub: OpenAIStub, call: dict[str, Any]) -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "cached_tokens": 8}
    calls = [{"name": "f", "arguments": {"x": 1}, "id": "call_x"}]
    for _ in range(2):
        openai_stub.enqueue("pong", tool_calls=calls, usage=usage)
    via_litellm, direct = both(openai_stub, max_tokens=50)
    assert outcome(via_litellm, **call) == outcome(direct, **call)
    assert openai_stub.requests[0] == openai_stub.requests[1]
    sent = [{k: h[k] for k in ("authorization", "content-type")} for h in openai_stub.headers]
    assert sent[0] == sent[1] == {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    assert all(re.fullmatch(r"omx-[0-9a-f]{16}", h["x-request-id"]) for h in openai_stub.headers)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (500, "boom"),
        (503, "overloaded"),
        (429, "slow down"),
        (401, "bad key"),
        (404, "no such model"),
        (400, "This model's maximum context length is 8192 tokens"),
        (400, "bad thing"),
    ],
)
def test_an_http_error_gives_litellm_s_message_and_kind(openai_stub: OpenAIStub, status: int, message: str) -> None:
    for _ in range(2):
        openai_stub.enqueue(status=status, error=message)
    via_litellm, direct = both(openai_stub)
    assert outcome(direct) == outcome(via_litellm)


def test_a_slow_server_is_the_same_timeout_message(openai_stub: OpenAIStub) -> None:
    for _ in range(2):
        openai_stub.enqueue("late", delay=3)
    via_litellm, direct = both(openai_stub, timeout=0.5)
    expected = outcome(via_litellm)
    assert outcome(direct) == expected
    assert expected[1] == "timeout" and "--timeout or OMX_TIMEOUT" in expected[0]


def test_an_unreachable_server_is_a_transient_error_naming_the_address() -> None:
    base = "http://127.0.0.1:9/v1"  # the discard port: nothing listens
    with pytest.raises(LLMError) as caught:
        OpenAIHTTPModel("openai/test-model", api_base=base, api_key=KEY, timeout=5).complete(PING)
    assert caught.value.kind == "unreachable" and caught.value.transient
    assert f"cannot reach openai/test-model at {base}: " in str(caught.value)
    assert "check the address and that the server is running" in str(caught.value)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"choices": []}', "the server's reply has no choices"),
        (b'{"choices": [{"message": null}]}', "the server's reply has no message in its first choice"),
        (b"[1, 2]", "the server's reply is not a JSON object (a chat completion)"),
        (b"<html>busy</html>", "the server's reply is not JSON"),
        (b'{"choices": [{"message": {"tool_calls": [{"id": "c"}]}}]}', "tool call 1 of the server's reply has no"),
    ],
)
def test_a_malformed_reply_is_said_in_a_sentence(openai_stub: OpenAIStub, body: bytes, said: str) -> None:
    """A 200 that is not a chat completion gave Python's own words (``IndexError: list index out of range``,
    ``AttributeError: 'NoneType' object has no attribute 'get'``)."""
    openai_stub.enqueue(body=body)
    message, kind = outcome(both(openai_stub)[1])
    assert kind == "other" and f"unexpected reply: {said}" in message, message
    assert "Error" not in message, message


def test_the_key_never_appears_in_an_error(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(status=500, error=f"upstream said {KEY}")
    with pytest.raises(LLMError) as caught:
        both(openai_stub)[1].complete(PING)
    assert KEY not in str(caught.value) and "***" in str(caught.value)


def test_streaming_yields_the_text_and_sends_the_same_request(openai_stub: OpenAIStub) -> None:
    for _ in range(2):
        openai_stub.enqueue("a streamed answer")
    via_litellm, direct = both(openai_stub)

    async def chunks(model: LiteLLMModel) -> str:
        return "".join([text async for text in model.stream(PING)])

    assert trio.run(chunks, direct) == trio.run(chunks, via_litellm) == "a streamed answer"
    assert openai_stub.requests[0] == openai_stub.requests[1]
    assert openai_stub.requests[0]["stream"] is True


def test_a_streamed_http_error_is_the_same_llm_error(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(status=429, error="slow down")

    async def drain() -> None:
        async for _ in both(openai_stub)[1].stream(PING):
            pass

    with pytest.raises(LLMError, match="is rate limited; wait and retry: slow down") as caught:
        trio.run(drain)
    assert caught.value.transient


def test_both_clients_read_the_server_s_retry_after(openai_stub: OpenAIStub) -> None:
    for _ in range(2):
        openai_stub.enqueue(status=429, error="slow down", headers={"Retry-After": "7"})
    for model in both(openai_stub):
        with pytest.raises(LLMError) as caught:
            model.complete(PING)
        assert (caught.value.kind, caught.value.retry_after) == ("rate_limited", 7.0)
