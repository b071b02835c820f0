"""Seed 002 §1 AgentlyMain / Settings: ``set_settings`` then ``settings[...]``, layered and with safe defaults."""

from __future__ import annotations

import pytest

from agent.prompting import DEFAULTS, LayeredSettings


def test_set_settings_then_settings_item_reads_it_back() -> None:
    """Seed 002 §1: after set_settings("test", "test"), settings["test"] == "test"."""
    settings = LayeredSettings.defaults()
    settings.set_settings("test", "test")
    assert settings["test"] == "test"
    settings["other"] = 1  # the item form writes too
    assert settings.get("other") == 1


def test_dotted_keys_and_mappings_merge_leaf_by_leaf() -> None:
    """Seed 002 §1: a nested setting is addressed by a dotted key; setting a mapping keeps the siblings."""
    settings = LayeredSettings.defaults()
    settings.set("session.resize", {"every_n_turns": 2})
    assert settings["session.resize.every_n_turns"] == 2
    assert settings["session.resize.keep_last"] == DEFAULTS["session"]["resize"]["keep_last"]
    assert "session.resize.nothing" not in settings
    with pytest.raises(KeyError):
        settings["session.resize.nothing"]
    with pytest.raises(KeyError, match="not a settings key"):
        settings.set("a..b", 1)


def test_a_child_reads_through_and_never_writes_back() -> None:
    """Seed 002 §1: a request's settings override its agent's without changing them."""
    parent = LayeredSettings.defaults()
    child = parent.child()
    child.set("response.streaming_parse", True)
    assert child["response.streaming_parse"] is True
    assert parent["response.streaming_parse"] is False
    parent.set("test", "from parent")
    assert child["test"] == "from parent"


def test_defaults_keep_every_feature_off_or_bounded() -> None:
    """Seed 002 (issue 5): each feature sits behind a setting whose default is safe."""
    settings = LayeredSettings.defaults()
    resize = settings["session.resize"]
    assert [resize[k] for k in ("max_messages_text_length", "max_keep_messages_count", "every_n_turns")] == [None] * 3
    assert settings["response.streaming_parse"] is False
    assert settings["prompt.strict_role_orders"] is False
    assert settings["tool.loop.max_rounds"] == 3
    settings.set("tool.loop.max_rounds", 9)
    assert DEFAULTS["tool"]["loop"]["max_rounds"] == 3  # the module's defaults are copied, never changed
