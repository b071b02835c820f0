"""Seed 002 §4 Response streaming_parse: structured output yields path-addressed partial values as it arrives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.prompting import LayeredSettings
from agent.seed_only.partial_json import partial_leaves
from agent.seed_only.requests import ModelRequest
from agent.seed_only.streaming import CompletionStream, ScriptedStreamingModel, StreamingParser

REPLY = '{"thinking": "Say hi back.", "reply": ["Hello!", "How are you?"], "score": 12, "done": true}'


@pytest.mark.trio
async def test_instant_yields_streaming_data_whose_first_value_is_not_none() -> None:
    """Seed 002 §4: streaming_parse=True, path style "slash", structured output -> at least one StreamingData from
    the instant generator, and the first one's value is not None."""
    settings = LayeredSettings.defaults()
    settings.set("response.streaming_parse", True)
    settings.set("response.streaming_parse_path_style", "slash")
    request = ModelRequest(ScriptedStreamingModel([REPLY], chunk_size=4), settings)
    request.set_prompt("input", "hello").set_prompt("output", {"thinking": (str,), "reply": ([str],)})
    events = [event async for event in request.get_response().instant()]
    assert len(events) > 0
    assert events[0].value is not None
    assert events[0].path == "/thinking"
    finals = {e.path: e.value for e in events if e.is_complete}
    assert finals == {"/thinking": "Say hi back.", "/reply/0": "Hello!", "/reply/1": "How are you?", "/score": 12,
                      "/done": True}  # fmt: skip
    thinking = [e for e in events if e.path == "/thinking"]
    assert len(thinking) > 1  # it arrived in pieces, reported as it grew
    assert "".join(e.delta or "" for e in thinking) == "Say hi back."
    assert [e.is_complete for e in thinking][-1] is True and not any(e.is_complete for e in thinking[:-1])


@pytest.mark.trio
async def test_streaming_parse_is_off_by_default() -> None:
    """Seed 002 §4: streaming parse is behind response.streaming_parse, off by default; text still streams."""
    request = ModelRequest(ScriptedStreamingModel([REPLY]))
    request.set_prompt("input", "hello").set_prompt("output", {"thinking": (str,)})
    response = request.get_response()
    with pytest.raises(RuntimeError, match=r"set response\.streaming_parse"):
        async for _ in response.instant():
            pass
    assert await response.text() == REPLY


def test_parser_reports_numbers_and_literals_only_when_finished_and_splits_escapes_safely() -> None:
    """Seed 002 §4: a partial value is only what is certain: "12" may become "123", a half escape is held back."""
    parser = StreamingParser("dot")
    assert parser.feed('Sure: {"n": 12') == []
    assert [(e.path, e.value, e.is_complete) for e in parser.feed("3, ")] == [("n", 123, True)]
    events = parser.feed('"items": [{"t": "a\\')
    assert [(e.path, e.value, e.delta) for e in events] == [("items[0].t", "a", "a")]
    events = parser.feed('u00e9b"}]}')
    assert [(e.path, e.value, e.delta, e.is_complete) for e in events] == [("items[0].t", "aéb", "éb", True)]
    assert parser.feed("") == []  # nothing changed, nothing reported


def test_partial_leaves_matches_json_on_every_prefix() -> None:
    """Seed 002 §4: on any prefix the finished leaves agree with json.loads of the whole document."""
    document = {"a": 'x"y\\z', "b": [1, 2.5, None, False, {"c": "ü/~"}], "d": {}}
    text = json.dumps(document, ensure_ascii=False)
    finished = {(path, json.dumps(value)) for path, value, done in partial_leaves(text) if done}
    assert finished == {
        (("a",), json.dumps('x"y\\z')), (("b", 0), "1"), (("b", 1), "2.5"), (("b", 2), "null"),
        (("b", 3), "false"), (("b", 4, "c"), json.dumps("ü/~")),
    }  # fmt: skip
    for end in range(len(text) + 1):
        for path, value, done in partial_leaves(text[:end]):
            node: Any = document
            for part in path:
                node = node[part]
            assert value == node if done else str(node).startswith(value)


def test_slash_paths_escape_like_json_pointer_and_malformed_json_is_an_error() -> None:
    """Seed 002 §4 path style "slash": RFC 6901 escapes; a reply that is not JSON says where it went wrong."""
    events = StreamingParser("slash").feed('{"a/b": {"~c": "v"}}')
    assert [e.path for e in events] == ["/a~1b/~0c"]
    with pytest.raises(ValueError, match="not JSON at offset 6"):
        StreamingParser().feed('{"a": nope, "b": 1}')
    with pytest.raises(ValueError, match="unknown path style"):
        StreamingParser("colon")  # type: ignore[arg-type]


@pytest.mark.trio
async def test_any_model_streams_through_completion_stream() -> None:
    """Seed 002 §4: a non-streaming agent.model.llm.Model is one chunk; the response still parses it."""
    model = ScriptedModel(['{"result": "7"}'])
    request = ModelRequest(CompletionStream(model)).set_prompt("input", "3+4").set_prompt("output", {"result": (int,)})
    assert await request.get_response().data() == {"result": 7}
    assert model.requests[0]["json_mode"] is True
