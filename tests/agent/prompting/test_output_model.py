"""Seed 002 §6 to_output_model: single values wrapped into lists, list items cast, descriptions and enums kept."""

from __future__ import annotations

import enum
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from agent.prompting import Prompt, parse_reply


def test_a_single_value_is_wrapped_and_cast_to_the_item_type() -> None:
    """Seed 002 §6 to_output_model: list schema accepts a single value; 1 -> "1" for a list of str."""
    prompt = Prompt().set(
        "output",
        {"thinking": [(str, "Your plan to reply")], "reply": (Literal[1, 2, 3], "Your actual reply"), "number": int},
    )
    model = prompt.to_output_model()
    output = model.model_validate({"thinking": 1, "number": "123"})
    assert output.model_dump() == {"thinking": ["1"], "reply": None, "number": 123}
    assert prompt["output"]["thinking"] == [(str, "Your plan to reply")]  # building the model changed no schema
    assert model.model_json_schema()["properties"]["reply"]["description"] == "Your actual reply"
    with pytest.raises(ValidationError):
        model.model_validate({"reply": 4})  # a value outside the Literal is refused, not forgiven


def test_a_root_list_schema_casts_items_and_wraps_a_single_value() -> None:
    """Seed 002 §6 to_output_model: ["456"] -> [456] for a list of int; "456" alone -> [456]."""
    model = Prompt().set("output", [(int,)]).to_output_model()
    from_list: Any = model.model_validate(["456"]).model_dump()
    from_value: Any = model.model_validate("456").model_dump()
    assert from_list == from_value == [456]
    with pytest.raises(ValidationError):
        model.model_validate(["not a number"])


def test_nested_objects_in_lists_and_enums_by_value_or_name() -> None:
    """Seed 002 §6 to_output_model: nested schemas build nested models; an Enum takes its values or names."""

    class Status(enum.Enum):
        OPEN = "open"
        CLOSED = "closed"

    prompt = Prompt().set("output", {"items": [{"title": (str, "t"), "status": (Status, "s")}]})
    model = prompt.to_output_model()
    data = model.model_validate({"items": {"title": 7, "status": "CLOSED"}}).model_dump()
    assert data == {"items": [{"title": "7", "status": Status.CLOSED}]}
    assert '"status": <Literal[open, closed]> // s\n' in prompt.to_text()


def test_parse_reply_finds_the_json_in_prose_and_checks_it() -> None:
    """Seed 002 §6 to_output_model: a reply is parsed with the built model, prose and code fences around it skipped."""
    model = Prompt().set("output", {"result": (int,)}).to_output_model()
    assert parse_reply('Sure!\n```json\n{"result": "42"}\n```', model) == {"result": 42}
    with pytest.raises(ValueError, match="no JSON"):
        parse_reply("I cannot do that", model)


def test_without_an_output_schema_there_is_no_output_model() -> None:
    """Seed 002 §6 to_output_model: asking for a model with no schema is the caller's mistake."""
    with pytest.raises(ValueError, match="no output schema"):
        Prompt().set("input", "hi").to_output_model()
