"""Seed 002 §5 several responses from one request, consumed concurrently without interfering."""

from __future__ import annotations

from contextlib import aclosing

import pytest
import trio

from agent.seed_only.requests import ModelRequest, ModelResponse
from agent.seed_only.streaming import ScriptedStreamingModel

PROMPTS = ["Hello, how are you?", "Hello again!", "Who are you?"]
REPLIES = ['{"thinking": "greet", "reply": ["Fine, thanks."]}', '{"thinking": "again", "reply": "Hi again!"}',
           '{"thinking": "me", "reply": ["I am omx.", "A local agent."]}']  # fmt: skip


def request_with_three_responses() -> tuple[ScriptedStreamingModel, list[ModelResponse]]:
    model = ScriptedStreamingModel(REPLIES, chunk_size=3)
    request = ModelRequest(model)
    responses = []
    for text in PROMPTS:
        request.set_prompt("input", text)
        request.set_prompt("output", {"thinking": (str,), "reply": ([str],)})
        responses.append(request.get_response())
    return model, responses


@pytest.mark.trio
async def test_multiple_responses_are_consumed_concurrently_and_independently() -> None:
    """Seed 002 §5: get_response() several times on one request; concurrent async consumption of each response's
    deltas does not interfere: each reader gets exactly its own reply, chunk by chunk, while they interleave."""
    model, responses = request_with_three_responses()
    seen: dict[int, list[str]] = {0: [], 1: [], 2: []}
    order: list[int] = []

    async def consume(index: int) -> None:
        async for delta in responses[index].deltas():
            seen[index].append(delta)
            order.append(index)

    async with trio.open_nursery() as nursery:
        for index in range(3):
            nursery.start_soon(consume, index)
    assert ["".join(seen[i]) for i in range(3)] == REPLIES
    assert all(len(seen[i]) > 1 for i in range(3))
    assert order != sorted(order)  # they really ran interleaved, not one after another
    # each response carried the prompt of its own moment (a snapshot), whatever the request said later
    assert [r["messages"][-1]["content"].split("[INPUT]:\n")[1].split("\n")[0] for r in model.requests] == PROMPTS
    data = [await r.data() for r in responses]
    assert data[1] == {"thinking": "again", "reply": ["Hi again!"]}  # a single reply wrapped into a list


@pytest.mark.trio
async def test_two_readers_of_one_response_each_see_the_whole_reply_from_one_model_call() -> None:
    """Seed 002 §5: one response read by two tasks at once: both get every chunk, the model streams once."""
    model = ScriptedStreamingModel(["abcdefghijklmnop"], chunk_size=2)
    response = ModelRequest(model).set_prompt("input", "letters").get_response()
    got: list[list[str]] = [[], []]

    async def read(slot: int) -> None:
        async for delta in response.deltas():
            got[slot].append(delta)
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read, 0)
        nursery.start_soon(read, 1)
    assert got[0] == got[1] == ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "op"]
    assert len(model.requests) == 1
    assert await response.text() == "abcdefghijklmnop"  # a later read replays, no new request
    assert await response.data() == "abcdefghijklmnop"  # no schema: the data is the text
    assert len(model.requests) == 1


@pytest.mark.trio
async def test_request_settings_override_without_leaking_and_responses_keep_theirs() -> None:
    """Seed 002 §5 + §1: a request's set_settings stays in the request; a response keeps the settings of its moment."""
    model = ScriptedStreamingModel(['{"a": "1"}', '{"a": "2"}'])
    request = ModelRequest(model).set_prompt("output", {"a": (str,)})
    request.set_settings("response.streaming_parse", True)
    first = request.get_response()
    request.set_settings("response.streaming_parse", False)
    second = request.get_response()
    assert [e.value async for e in first.instant()] == ["1"]
    with pytest.raises(RuntimeError):
        async for _ in second.instant():
            pass
    assert ModelRequest(model).settings["response.streaming_parse"] is False


@pytest.mark.trio
async def test_a_reader_can_stop_early_and_close_the_stream() -> None:
    """Seed 002 §5: leaving a response before its end closes its model stream; other responses go on."""
    _, responses = request_with_three_responses()
    async with aclosing(responses[0].deltas()) as deltas:  # trio: an abandoned async generator is closed explicitly
        async for _ in deltas:
            break
    await responses[0].aclose()
    assert await responses[1].text() == REPLIES[1]
