"""Seed 000 LLM.call (TC-LLM-001...003) and the Model behind it: scripted, and real litellm against a local stub."""

from __future__ import annotations

import json
import logging
import re
import urllib.error
import urllib.request

import pytest

from agent.model.errors import redact
from agent.model.llm import LLM, LiteLLMModel, LLMError, ModelReply, ScriptedModel, ToolCall, Usage, model_from_settings
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]

KEY = "sk-test-0123456789abcdef"


def stub_model(stub: OpenAIStub) -> LiteLLMModel:
    return LiteLLMModel("openai/test-model", api_base=stub.base_url, api_key=KEY)


# --- TC-LLM-001: a normal call -------------------------------------------------------------------------------


def test_TC_LLM_001_call_returns_the_reply_text_scripted() -> None:
    model = ScriptedModel(["test response"])
    assert LLM(model).call("test prompt") == "test response"
    assert len(model.requests) == 1
    assert model.requests[0]["messages"] == [{"role": "user", "content": "test prompt"}]


def test_TC_LLM_001_call_through_litellm_sends_headers_and_data(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue("test response")
    llm = LLM("openai/test-model", api_key=KEY, api_base=openai_stub.base_url, max_tokens=100)
    assert llm.call("test prompt") == "test response"
    assert len(openai_stub.requests) == 1  # called once: no retry behind our back
    body, headers = openai_stub.requests[0], openai_stub.headers[0]
    assert body["model"] == "test-model"
    assert body["messages"] == [{"role": "user", "content": "test prompt"}]
    assert body["max_tokens"] == 100
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["x-request-id"] == llm.last_request_id


# --- TC-LLM-002: network errors ------------------------------------------------------------------------------


def test_TC_LLM_002_timeout_is_a_clear_llm_error_message(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue("too late", delay=10)
    result = LLM("openai/test-model", api_key=KEY, api_base=openai_stub.base_url, timeout=0.5).call("test prompt")
    assert result.startswith("LLM error: ")
    assert "timed out after 0.5s" in result
    assert "\n" not in result and KEY not in result


def test_TC_LLM_002_scripted_model_failure_is_returned_not_raised() -> None:
    class Failing:
        def complete(self, messages: object, **_: object) -> ModelReply:
            raise LLMError("LLM error: test-model timed out after 1s", request_id="omx-1")

    llm = LLM(Failing())
    assert llm.call("test prompt") == "LLM error: test-model timed out after 1s"
    assert llm.last_request_id == "omx-1"


def test_unreachable_server_says_so() -> None:
    stub = OpenAIStub()
    base = stub.base_url
    stub.close()  # nothing listens there any more
    with pytest.raises(LLMError, match=r"cannot reach openai/test-model at http://127\.0\.0\.1:\d+/v1"):
        LiteLLMModel("openai/test-model", api_base=base, api_key=KEY, timeout=5).complete(
            [{"role": "user", "content": "x"}]
        )


def test_provider_500_is_one_clear_line(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(status=500, error="the GPU caught fire")
    with pytest.raises(LLMError) as caught:
        stub_model(openai_stub).complete([{"role": "user", "content": "x"}])
    message = str(caught.value)
    assert message.startswith("LLM error: openai/test-model failed (HTTP 500): the GPU caught fire")
    assert caught.value.request_id and caught.value.request_id in message
    assert len(openai_stub.requests) == 1


def test_keys_from_provider_variables_are_redacted_too(
    openai_stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "plainkey-without-a-known-shape")
    openai_stub.enqueue(status=500, error="echo plainkey-without-a-known-shape")
    model = LiteLLMModel("openai/test-model", api_base=openai_stub.base_url)
    with pytest.raises(LLMError, match=r"failed \(HTTP 500\): echo \*\*\*"):
        model.complete([{"role": "user", "content": "x"}])
    assert openai_stub.headers[0]["authorization"] == "Bearer plainkey-without-a-known-shape"


def test_rejected_key_says_which_variable_to_set(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(status=401, error=f"Incorrect API key provided: {KEY}")
    with pytest.raises(LLMError, match=r"rejected the API key; set OPENAI_API_KEY \(or OMX_API_KEY\)") as caught:
        stub_model(openai_stub).complete([{"role": "user", "content": "x"}])
    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (404, "openai/test-model was not found at http://127.0.0.1:"),
        (429, "openai/test-model is rate limited; wait and retry: slow down"),
        (503, "openai/test-model failed (HTTP 503): slow down"),
    ],
)
def test_provider_errors_say_what_to_do(openai_stub: OpenAIStub, status: int, expected: str) -> None:
    openai_stub.enqueue(status=status, error="slow down")
    with pytest.raises(LLMError, match=re.escape(expected)):
        stub_model(openai_stub).complete([{"role": "user", "content": "x"}])


def test_unknown_provider_says_how_to_name_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(LLMError, match="write it as provider/model"):
        LiteLLMModel("no-such-model-xyz", api_key=KEY).complete([{"role": "user", "content": "x"}])
    assert capsys.readouterr() == ("", "")  # litellm's own "Provider List" banner stays off the console


def test_api_key_never_reaches_logs_or_messages(
    openai_stub: OpenAIStub, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    model = stub_model(openai_stub)
    openai_stub.enqueue("fine")
    openai_stub.enqueue(status=500, error=f"server echoes the request: Authorization: Bearer {KEY}")
    model.complete([{"role": "user", "content": "x"}])
    with pytest.raises(LLMError) as caught:
        model.complete([{"role": "user", "content": "x"}])
    captured = capsys.readouterr()
    assert "request omx-" in caplog.text  # we did log, at debug
    for text in (caplog.text, str(caught.value), captured.out, captured.err, repr(model)):
        assert KEY not in text


# --- TC-LLM-003: input too long ------------------------------------------------------------------------------


def test_TC_LLM_003_input_over_10000_characters_is_refused_before_any_call() -> None:
    model = ScriptedModel(["unused"])
    with pytest.raises(ValueError, match="input too long"):
        LLM(model).call("a" * 10001)
    assert model.requests == []
    assert LLM(model).call("a" * 10000) == "unused"


def test_empty_prompt_is_refused() -> None:
    with pytest.raises(ValueError, match="prompt must not be empty"):
        LLM(ScriptedModel()).call("")


def test_model_input_limit_is_an_llm_error_without_a_request(openai_stub: OpenAIStub) -> None:
    model = LiteLLMModel("openai/test-model", api_base=openai_stub.base_url, api_key=KEY, max_input_chars=10)
    with pytest.raises(LLMError, match="input too long: 11 characters, the limit is 10"):
        model.complete([{"role": "user", "content": "a" * 11}])
    assert openai_stub.requests == []


# --- the Model interface through litellm ---------------------------------------------------------------------


def test_each_call_gets_its_own_request_id(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue("one")
    openai_stub.enqueue("two")
    model = stub_model(openai_stub)
    first, second = (model.complete([{"role": "user", "content": "x"}]) for _ in range(2))
    assert first.request_id != second.request_id
    assert [h["x-request-id"] for h in openai_stub.headers] == [first.request_id, second.request_id]


def test_usage_includes_cached_tokens(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue("hi", usage={"prompt_tokens": 1200, "completion_tokens": 7, "cached_tokens": 1024})
    reply = stub_model(openai_stub).complete([{"role": "user", "content": "x"}])
    assert reply.usage == Usage(prompt_tokens=1200, completion_tokens=7, cached_tokens=1024)
    assert reply.content == "hi" and reply.model == "openai/test-model"


def test_tool_calls_round_trip(openai_stub: OpenAIStub) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "python",
                "description": "Run Python code.",
                "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
            },
        }
    ]
    openai_stub.enqueue(tool_calls=[{"id": "call_a", "name": "python", "arguments": {"code": "print(2+2)"}}])
    reply = stub_model(openai_stub).complete([{"role": "user", "content": "2+2?"}], tools=tools)
    assert reply.content is None
    assert reply.tool_calls == [ToolCall(id="call_a", name="python", arguments='{"code": "print(2+2)"}')]
    sent = openai_stub.requests[0]
    assert sent["tools"] == tools
    assert "_skip_mcp_handler" not in sent


def test_json_mode_asks_for_a_json_object(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(json.dumps({"version": 1}))
    reply = stub_model(openai_stub).complete([{"role": "user", "content": "plan"}], json_mode=True)
    assert json.loads(reply.content or "") == {"version": 1}
    assert openai_stub.requests[0]["response_format"] == {"type": "json_object"}
    assert openai_stub.requests[0]["temperature"] == 0


# --- choosing a model ----------------------------------------------------------------------------------------


def test_no_model_configured_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMX_MODEL", raising=False)
    with pytest.raises(LLMError, match="no model configured; pass --model or set OMX_MODEL"):
        model_from_settings(None, None)


def test_settings_come_from_flags_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMX_MODEL", "ollama/llama3.1")
    monkeypatch.setenv("OMX_API_BASE", "http://127.0.0.1:11434")
    monkeypatch.delenv("OMX_API_KEY", raising=False)
    from_env = model_from_settings(None, None)
    assert isinstance(from_env, LiteLLMModel)
    assert (from_env.model, from_env.api_base) == ("ollama/llama3.1", "http://127.0.0.1:11434")
    from_flags = model_from_settings("openai/gpt-4o-mini", "http://127.0.0.1:8000/v1")
    assert isinstance(from_flags, LiteLLMModel)
    assert (from_flags.model, from_flags.api_base) == ("openai/gpt-4o-mini", "http://127.0.0.1:8000/v1")


def test_local_openai_compatible_server_needs_no_key(openai_stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OMX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    openai_stub.enqueue("local")
    model = model_from_settings("openai/test-model", openai_stub.base_url)
    assert model.complete([{"role": "user", "content": "x"}]).content == "local"


# --- the scripted model and redaction ------------------------------------------------------------------------


def test_scripted_model_replays_in_order_and_records_requests() -> None:
    model = ScriptedModel(["first", {"content": None, "tool_calls": [{"name": "python", "arguments": {"code": "1"}}]}])
    model.enqueue({"content": "third", "usage": {"prompt_tokens": 3, "cached_tokens": 2}})
    messages = [{"role": "user", "content": "go"}]
    assert model.complete(messages).content == "first"
    messages.append({"role": "assistant", "content": "first"})
    call = model.complete(messages, tools=[{"type": "function"}]).tool_calls[0]
    assert (call.name, json.loads(call.arguments)) == ("python", {"code": "1"})
    assert model.complete(messages, json_mode=True).usage.cached_tokens == 2
    assert [len(r["messages"]) for r in model.requests] == [1, 2, 2]  # a copy per request, not the live list
    assert [r["json_mode"] for r in model.requests] == [False, False, True]
    with pytest.raises(LLMError, match="no reply left"):
        model.complete(messages)


def test_redact_removes_given_secrets_and_key_shapes() -> None:
    assert redact("key=abcd1234 and sk-proj-XYZ123456 and Bearer tok.en-1", ["abcd1234"]) == "key=*** and *** and ***"


# --- the stub itself, without litellm ------------------------------------------------------------------------


def post(url: str, body: dict[str, object]) -> tuple[int, str]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()


def test_stub_replays_in_order_and_says_when_it_runs_out(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue("one")
    url = f"{openai_stub.base_url}/chat/completions"
    status, text = post(url, {"model": "m", "messages": []})
    assert status == 200 and json.loads(text)["choices"][0]["message"]["content"] == "one"
    status, text = post(url, {"model": "m", "messages": []})
    assert status == 500 and "no scripted response left for request 2" in text
    assert post(f"{openai_stub.base_url}/embeddings", {})[0] == 404
    assert len(openai_stub.requests) == 2


def test_stub_streams_server_sent_events(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue("streamed", usage={"prompt_tokens": 3, "completion_tokens": 1, "cached_tokens": 2})
    status, text = post(f"{openai_stub.base_url}/chat/completions", {"model": "m", "messages": [], "stream": True})
    events = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    assert status == 200 and events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["content"] == "streamed"
    assert chunks[-1]["usage"]["prompt_tokens_details"] == {"cached_tokens": 2}


def test_omx_timeout_sets_the_request_timeout_and_a_bad_value_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 17: the timeout was fixed at 60 s. --timeout wins over OMX_TIMEOUT, which wins over the default."""
    monkeypatch.setenv("OMX_TIMEOUT", "180")
    model = model_from_settings("ollama/llama3.1", None)
    assert isinstance(model, LiteLLMModel) and model.timeout == 180
    flagged = model_from_settings("openai/qwen", "http://127.0.0.1:8080/v1", timeout=5)
    assert isinstance(flagged, LiteLLMModel) and flagged.timeout == 5
    for bad in ("soon", "0", "-3", "nan"):
        monkeypatch.setenv("OMX_TIMEOUT", bad)
        with pytest.raises(LLMError, match=f"OMX_TIMEOUT='{bad}' is not a number of seconds above 0"):
            model_from_settings("ollama/llama3.1", None)
