"""Waiting for a model like a good CLI (issue 17): transient failures are retried with bounded backoff, told to the
user and kept with the call; other failures are not retried; a spinner shows only on a terminal. The model is the
local OpenAI-compatible stub through the direct client; sleeps are recorded instead of slept."""

from __future__ import annotations

import io
import os
import pty
import select

import pytest

from agent.model.llm import LLMError
from agent.model.openai_http import OpenAIHTTPModel
from agent.model.waiting import RetryPolicy, Spinner, WaitingModel
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]

PING = [{"role": "user", "content": "ping"}]


def waiting(stub: OpenAIStub, retries: int = 3, **settings: float) -> tuple[WaitingModel, list[float], list[str]]:
    slept: list[float] = []
    told: list[str] = []
    inner = OpenAIHTTPModel("openai/test-model", api_base=stub.base_url, api_key="sk-test", **settings)
    model = WaitingModel(inner, RetryPolicy(retries=retries), on_retry=told.append, sleep=slept.append)
    return model, slept, told


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_transient_failure_is_retried_told_and_kept_with_the_reply(openai_stub: OpenAIStub, status: int) -> None:
    openai_stub.enqueue(status=status, error="busy")
    openai_stub.enqueue(status=status, error="still busy")
    openai_stub.enqueue("pong")
    model, slept, told = waiting(openai_stub)
    reply = model.complete(PING)
    assert reply.content == "pong" and len(openai_stub.requests) == 3
    assert len(slept) == 2 and 0.5 <= slept[0] <= 1.0 and 1.0 <= slept[1] <= 2.0  # exponential, jittered
    assert told == reply.retries and len(told) == 2
    assert told[0].startswith("attempt 1 of 4 failed (LLM error: ") and "busy" in told[0]
    assert told[0].endswith(f"trying again in {slept[0]:.1f}s")


def test_retries_are_bounded_and_the_last_error_says_how_many(openai_stub: OpenAIStub) -> None:
    for _ in range(3):
        openai_stub.enqueue(status=500, error="down")
    model, slept, _ = waiting(openai_stub, retries=2)
    with pytest.raises(LLMError, match=r"failed \(HTTP 500\): down") as caught:
        model.complete(PING)
    assert len(openai_stub.requests) == 3 and len(slept) == 2
    assert caught.value.attempts == 3 and len(caught.value.retries) == 2


def test_an_unreachable_server_is_retried() -> None:
    slept: list[float] = []
    inner = OpenAIHTTPModel("openai/test-model", api_base="http://127.0.0.1:9/v1", api_key="sk-test", timeout=5)
    model = WaitingModel(inner, RetryPolicy(retries=1), sleep=slept.append)
    with pytest.raises(LLMError, match="cannot reach") as caught:
        model.complete(PING)
    assert caught.value.attempts == 2 and len(slept) == 1


@pytest.mark.parametrize(("status", "kind"), [(401, "auth"), (404, "not_found"), (400, "other")])
def test_a_failure_that_would_repeat_is_not_retried(openai_stub: OpenAIStub, status: int, kind: str) -> None:
    openai_stub.enqueue(status=status, error="no")
    model, slept, told = waiting(openai_stub)
    with pytest.raises(LLMError) as caught:
        model.complete(PING)
    assert caught.value.kind == kind and caught.value.attempts == 1
    assert len(openai_stub.requests) == 1 and slept == [] and told == []


def test_a_reply_cut_short_of_its_format_is_not_retried(openai_stub: OpenAIStub) -> None:
    """llama.cpp's 500 when a reply held to a JSON schema ran out of tokens: the same request would run out again."""
    said = "The model produced output that does not match the expected peg-native format"
    openai_stub.enqueue(status=500, error=said)
    openai_stub.enqueue("never asked for")
    model, slept, told = waiting(openai_stub)
    with pytest.raises(LLMError, match="does not match the expected") as caught:
        model.complete(PING)
    assert caught.value.kind == "server" and caught.value.attempts == 1
    assert len(openai_stub.requests) == 1 and slept == [] and told == []


def test_a_timeout_is_not_retried_and_names_the_settings(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue("late", delay=3)
    model, slept, _ = waiting(openai_stub, timeout=0.5)
    with pytest.raises(LLMError, match=r"timed out after 0.5s; .* raise the timeout \(--timeout or OMX_TIMEOUT\)"):
        model.complete(PING)
    assert slept == []


def test_the_backoff_is_capped_and_a_retry_after_is_honoured() -> None:
    policy = RetryPolicy(retries=10, base_s=1, cap_s=8)
    assert all(4 <= policy.delay_s(n) <= 8 for n in range(4, 11))
    assert policy.delay_s(1, retry_after=2.5) == 2.5 and policy.delay_s(1, retry_after=600) == 8


def test_omx_retries_sets_the_bound_and_a_bad_value_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMX_RETRIES", "0")
    assert RetryPolicy.from_env().retries == 0
    monkeypatch.setenv("OMX_RETRIES", "many")
    with pytest.raises(LLMError, match="OMX_RETRIES='many' is not a number of retries from 0 to 10"):
        RetryPolicy.from_env()


def test_the_spinner_is_quiet_when_the_output_is_not_a_terminal() -> None:
    piped = io.StringIO()
    with Spinner(piped, "openai/x", interval_s=0.01) as spinner:
        assert not spinner.enabled
    assert piped.getvalue() == ""


def read_terminal(fd: int) -> str:
    """All a pty holds: the kernel hands written bytes to the reading side asynchronously, so one read may
    return part of them; read until nothing more comes within a second."""
    shown = b""
    while select.select([fd], [], [], 1.0)[0]:
        shown += os.read(fd, 4096)
    return shown.decode()


def test_the_spinner_shows_the_model_on_a_terminal_and_erases_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    parent, child = pty.openpty()
    try:
        with open(child, "w", encoding="utf-8", closefd=False) as terminal:
            with Spinner(terminal, "openai/x", interval_s=0.01) as spinner:
                assert spinner.enabled
            shown = read_terminal(parent)
    finally:
        os.close(parent)
        os.close(child)
    assert "waiting for openai/x... 0s" in shown and shown.endswith("\r\033[K")


def test_the_server_s_retry_after_decides_the_wait(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(status=429, error="slow down", headers={"Retry-After": "7"})
    openai_stub.enqueue("pong")
    model, slept, told = waiting(openai_stub)
    assert model.complete(PING).content == "pong"
    assert slept == [7.0] and told[0].endswith("trying again in 7.0s")
