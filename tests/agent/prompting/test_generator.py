"""Seed 002 §6 PromptGenerator: to_prompt_object, to_text, to_messages (rich or not) and strict role orders."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agent.prompting import LayeredSettings, Prompt

MAIN = (
    "[INFO]:\nI'm a human\n\n"
    "[INSTRUCT]:\nreply something\n\n"
    "[INPUT]:\nHello\n\n"
    "[OUTPUT REQUIREMENT]:\n"
    "Data Format: JSON\n"
    "Data Structure:\n"
    "{\n"
    '  "thinking": <str>, // describe how will you plan to reply?\n'
    '  "reply": <str> // your final reply\n'
    "}\n\n"
    "[OUTPUT]:"
)

HISTORY = [
    {"role": "user", "content": [{"type": "text", "text": "ni hao"}, {"type": "something", "something": "OK"}]},
    {"role": "assistant", "content": "hello, what can I help you?"},
]


def full_prompt() -> Prompt:
    return Prompt().update(
        {
            "input": "Hello",
            "instruct": "reply something",
            "info": "I'm a human",
            "output": {
                "thinking": (str, "describe how will you plan to reply?"),
                "reply": (str, "your final reply"),
            },
        }
    )


def test_output_format_defaults_to_markdown_with_only_an_input() -> None:
    """Seed 002 §6 to_prompt_object: only input set -> output_format "markdown"; extra parts are kept."""
    prompt = Prompt().set("input", "OK")
    po = prompt.to_prompt_object()
    assert po.input == "OK"
    assert po.chat_history == []
    assert po.output_format == "markdown"
    prompt.set("user_info", "Nobody")
    assert prompt.to_prompt_object().model_extra == {"user_info": "Nobody"}


def test_output_turns_the_default_format_into_json_until_the_user_sets_one() -> None:
    """Seed 002 §6 to_prompt_object: setting output makes the default "json"; a user's own value then wins."""
    prompt = Prompt().set("input", "OK")
    prompt["output"] = {"reply": (str, "your reply")}
    po = prompt.to_prompt_object()
    assert po.output == {"reply": (str, "your reply")}
    assert po.output_format == "json"
    prompt["output_format"] = "yaml"
    assert prompt.to_prompt_object().output_format == "yaml"


def test_an_explicit_output_format_is_not_infected_by_a_later_output() -> None:
    """Seed 002 §6 to_prompt_object: output_format set first stays as set after output is set."""
    prompt = Prompt()
    prompt["output_format"] = "some random words"
    prompt["output"] = [(str, "something")]
    assert prompt.to_prompt_object().output_format == "some random words"


def test_prompt_object_is_a_snapshot() -> None:
    """Seed 002 §6 to_prompt_object: changing the prompt (or the caller's value) afterwards changes no snapshot."""
    schema: dict[str, Any] = {"reply": (str, "your reply")}
    prompt = Prompt().set("output", schema)
    po = prompt.to_prompt_object()
    schema["extra"] = (int,)
    prompt.set("output", "plain text please")
    assert po.output == {"reply": (str, "your reply")}
    assert prompt.to_prompt_object().output_format == "markdown"  # a text output asks for no JSON


def test_to_text_is_exactly_the_sectioned_prompt_with_desc_comments() -> None:
    """Seed 002 §6 to_text: INFO / INSTRUCT / INPUT / OUTPUT REQUIREMENT / OUTPUT, blank lines and // desc."""
    assert full_prompt().to_text() == f"user:\n{MAIN}\nassistant:"


def test_to_text_renders_a_root_list_and_nested_objects_exactly() -> None:
    """Seed 002 §6 to_text: a list schema shows one item and "...", nested objects indent by two spaces."""
    prompt = Prompt().update(
        {
            "input": "Hello",
            "output": [{"title": (str, "news title"), "tags": ([str], "a few tags"), "score": int}],
        }
    )
    assert prompt.to_text() == (
        "user:\n"
        "[INPUT]:\nHello\n\n"
        "[OUTPUT REQUIREMENT]:\n"
        "Data Format: JSON\n"
        "Data Structure:\n"
        "[\n"
        "  {\n"
        '    "title": <str>, // news title\n'
        '    "tags": [\n'
        "      <str>,\n"
        "      ...\n"
        "    ], // a few tags\n"
        '    "score": <int>\n'
        "  },\n"
        "  ...\n"
        "]\n\n"
        "[OUTPUT]:\n"
        "assistant:"
    )


def test_to_text_skips_non_text_history_parts_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """Seed 002 §6 to_text: non-text chat_history content is skipped (warning), absent from the text."""
    history = [
        {"role": "user", "content": [{"type": "text", "text": "ni hao"}, {"type": "image_url", "image_url": "CAT"}]}
    ]
    prompt = full_prompt().set("chat_history", history)
    with caplog.at_level(logging.WARNING, logger="omx.prompting"):
        text = prompt.to_text()
    assert text == f"user:\n[CHAT HISTORY]:\n[user]:ni hao\n\n{MAIN}\nassistant:"
    assert "CAT" not in text and "image_url" not in text
    assert any("'image_url' part" in r.getMessage() for r in caplog.records)


def test_to_text_of_an_empty_prompt_is_an_error() -> None:
    """Seed 002 §6 to_text: nothing to say is the caller's mistake, not an empty request."""
    with pytest.raises(ValueError, match="the prompt is empty"):
        Prompt().to_text()


def test_to_messages_without_rich_content_flattens_history_and_appends_the_main_prompt() -> None:
    """Seed 002 §6 to_messages(rich_content=False): text parts joined by a blank line, main prompt last, a string."""
    history = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "ni hao"},
                {"type": "image_url", "image_url": "x"},
                {"type": "text", "text": "again"},
            ],
        },
        HISTORY[1],
    ]
    prompt = full_prompt().set("chat_history", history)
    assert prompt.to_messages(rich_content=False) == [
        {"role": "user", "content": "ni hao\n\nagain"},
        {"role": "assistant", "content": "hello, what can I help you?"},
        {"role": "user", "content": MAIN},
    ]


def test_to_messages_with_rich_content_keeps_parts_and_wraps_strings() -> None:
    """Seed 002 §6 to_messages(rich_content=True): history keeps its non-text parts; string content becomes a part."""
    prompt = full_prompt().set("chat_history", HISTORY)
    assert prompt.to_messages(rich_content=True) == [
        {"role": "user", "content": [{"type": "text", "text": "ni hao"}, {"type": "something", "something": "OK"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hello, what can I help you?"}]},
        {"role": "user", "content": [{"type": "text", "text": MAIN}]},
    ]


def test_rich_content_default_comes_from_the_settings() -> None:
    """Seed 002 §6 to_messages: without an argument, prompt.rich_content decides."""
    prompt = Prompt(LayeredSettings.defaults().set("prompt.rich_content", True)).set("input", "hi")
    assert prompt.to_messages() == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


def test_strict_role_orders_inserts_the_opener_and_the_continue_marker() -> None:
    """Seed 002 §6 strict_role_orders: "[CHAT HISTORY]" user first, "[User continue input]" assistant last."""
    prompt = Prompt().set(
        "chat_history",
        [{"role": "assistant", "content": "Hi, how can I help you today?"}, {"role": "user", "content": "?"}],
    )
    prompt.set("input", "hi")
    assert prompt.to_messages(rich_content=False, strict_role_orders=True) == [
        {"role": "user", "content": "[CHAT HISTORY]"},
        {"role": "assistant", "content": "Hi, how can I help you today?"},
        {"role": "user", "content": "?"},
        {"role": "assistant", "content": "[User continue input]"},
        {"role": "user", "content": "hi"},
    ]
    assert prompt.to_messages(rich_content=True, strict_role_orders=True) == [
        {"role": "user", "content": [{"type": "text", "text": "[CHAT HISTORY]"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hi, how can I help you today?"}]},
        {"role": "user", "content": [{"type": "text", "text": "?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "[User continue input]"}]},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    ]
    # without strict orders (the default) the history goes as it is
    assert [m["content"] for m in prompt.to_messages()] == ["Hi, how can I help you today?", "?", "hi"]


def test_strict_role_orders_leaves_a_well_ordered_history_alone() -> None:
    """Seed 002 §6 strict_role_orders: nothing is inserted when the history starts with user and ends with assistant."""
    prompt = Prompt().update({"chat_history": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
                              "input": "c", "system": "be brief"})  # fmt: skip
    assert prompt.to_messages(strict_role_orders=True) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]


def test_a_bare_input_is_sent_alone_but_labelled_after_a_history_in_text() -> None:
    """Seed 002 §6 to_text / to_messages: input alone is the plain turn; in to_text after a history it gets [INPUT]."""
    prompt = Prompt().set("input", "hi")
    assert prompt.to_text() == "user:\nhi\nassistant:"
    assert prompt.to_messages() == [{"role": "user", "content": "hi"}]
    prompt.set("chat_history", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    prompt.set("system", "be brief")
    assert prompt.to_text() == (
        "system:\nbe brief\n\nuser:\n[CHAT HISTORY]:\n[user]:a\n[assistant]:b\n\n[INPUT]:\nhi\n\n[OUTPUT]:\nassistant:"
    )
