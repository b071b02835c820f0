"""Issue 28: tool calls that local models write as text, read precisely: every format, and prose that stays prose."""

from __future__ import annotations

import json

import pytest

from agent.chat.text_tool_calls import TextCall, parse_text_tool_calls

CALL = '{"name": "python", "arguments": {"code": "print(6 * 7)"}}'
PYTHON = TextCall("python", json.dumps({"code": "print(6 * 7)"}))


@pytest.mark.parametrize(
    "reply",
    [
        CALL,
        f"  \n{CALL}\n\n",
        f"```\n{CALL}\n```",
        f"```json\n{CALL}\n```",
        f"```json\n{CALL}```",
        f"[{CALL}]",
        f"```json\n[{CALL}]\n```",
        f"<tool_call>\n{CALL}\n</tool_call>",
        f"I will compute it.\n<tool_call>\n{CALL}\n</tool_call>",
        f"<tool_call>\n{CALL}",  # cut off before the closing tag
        '{"name": "python", "parameters": {"code": "print(6 * 7)"}}',  # Llama 3.1's spelling
    ],
)
def test_one_call_in_every_format_is_read(reply: str) -> None:
    assert parse_text_tool_calls(reply) == [PYTHON]


def test_several_calls_are_read_in_order() -> None:
    other = '{"name": "memory_load", "arguments": {"input": "notes"}}'
    expected = [PYTHON, TextCall("memory_load", '{"input": "notes"}')]
    assert parse_text_tool_calls(f"[{CALL}, {other}]") == expected
    assert parse_text_tool_calls(f"{CALL}\n{other}") == expected
    assert parse_text_tool_calls(f"<tool_call>{CALL}</tool_call>\n<tool_call>{other}</tool_call>") == expected


def test_arguments_given_as_json_text_are_kept_as_text_for_the_caller_to_check() -> None:
    reply = json.dumps({"name": "python", "arguments": '{"code": "print(1)"}'})
    assert parse_text_tool_calls(reply) == [TextCall("python", '{"code": "print(1)"}')]
    broken = json.dumps({"name": "python", "arguments": "{not json"})
    assert parse_text_tool_calls(broken) == [TextCall("python", "{not json")]


def test_an_unknown_name_is_still_a_call_the_caller_reports() -> None:
    assert parse_text_tool_calls('{"name": "calculator", "arguments": {"x": 1}}') == [
        TextCall("calculator", '{"x": 1}')
    ]


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "6 times 7 is 42.",
        "The set {1, 2, 3} has three elements; {} is empty.",
        'Call it like this: {"name": "python", "arguments": {"code": "1"}} and you get 1.',
        f"Here is the call I would make:\n```json\n{CALL}\n```",  # prose around a fence: an answer
        '{"name": "Ada Lovelace", "born": 1815}',  # JSON, but not a call
        '{"name": "python"}',  # no arguments
        '{"name": "python", "arguments": {"code": "1"}, "result": 1}',  # a member a call does not have
        '{"name": "", "arguments": {}}',
        '{"name": "python", "arguments": [1, 2]}',
        f"[{CALL}, 42]",  # an array with something else in it
        "[]",
        f"{CALL} and then I stop",
        '{"name": "python", "arguments": {"code": "1"}',  # not closed: not JSON
        "```\nprint(6 * 7)\n```",
        "Use <tool_call> tags to call tools.",  # an unclosed tag inside prose
    ],
)
def test_prose_and_other_json_stay_an_answer(reply: str) -> None:
    assert parse_text_tool_calls(reply) is None


def test_a_tag_that_holds_no_call_is_a_problem_for_the_model() -> None:
    (bad_json,) = parse_text_tool_calls("<tool_call>\n{name: python}\n</tool_call>") or []
    assert bad_json.name == "" and bad_json.problem and "does not hold valid JSON" in bad_json.problem
    (not_a_call,) = parse_text_tool_calls('<tool_call>["python"]</tool_call>') or []
    assert not_a_call.problem and 'one JSON object {"name": ..., "arguments": {...}}' in not_a_call.problem
    (no_arguments,) = parse_text_tool_calls('<tool_call>{"name": "memory_list"}</tool_call>') or []
    assert no_arguments == TextCall("memory_list", "{}")  # inside a tag, a call without arguments is a call
