"""Seed 002 §2 Session default policy: resize decisions, sync/async overrides, and resize by reversible compression."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from agent.context import restore_messages
from agent.prompting import LayeredSettings, ResizeDecision, ResizePolicy, Session


def session_with(tmp_path: Path, **resize: Any) -> Session:
    settings = LayeredSettings.defaults().set("session.resize", resize)
    return Session(settings, context_dir=tmp_path / "context")


def chat(turns: int, size: int = 10) -> list[dict[str, Any]]:
    messages = []
    for n in range(turns):
        messages.append({"role": "user", "content": f"q{n} " + "x" * size})
        messages.append({"role": "assistant", "content": f"a{n} " + "y" * size})
    return messages


@pytest.mark.trio
async def test_long_text_gives_a_deep_decision(tmp_path: Path) -> None:
    """Seed 002 §2: text longer than max_messages_text_length -> type "deep", reason "max_messages_text_length"."""
    session = session_with(tmp_path, max_messages_text_length=50)
    session.add_messages(chat(1, size=10))
    assert await session.async_judge_resize() is None  # 28 characters: under the limit
    session.add_messages(chat(2, size=10))
    decision = await session.async_judge_resize()
    assert decision == ResizeDecision(type="deep", reason="max_messages_text_length")


@pytest.mark.trio
async def test_many_messages_give_a_lite_decision(tmp_path: Path) -> None:
    """Seed 002 §2: more messages than max_keep_messages_count -> type "lite", reason "max_keep_messages_count"."""
    session = session_with(tmp_path, max_keep_messages_count=3)
    session.add_messages(chat(1))
    assert await session.async_judge_resize() is None
    session.add_messages(chat(1))
    decision = await session.async_judge_resize()
    assert decision is not None
    assert (decision.type, decision.reason) == ("lite", "max_keep_messages_count")


@pytest.mark.trio
async def test_every_n_turns_gives_a_lite_decision_after_a_turn(tmp_path: Path) -> None:
    """Seed 002 §2: every_n_turns=1 and turns_since_last_resize >= 1 -> type "lite", reason "every_n_turns"."""
    session = session_with(tmp_path, every_n_turns=1)
    assert session.turns_since_last_resize == 0
    assert await session.async_judge_resize() is None
    session.add_message({"role": "user", "content": "hello"})
    assert session.turns_since_last_resize == 1
    decision = await session.async_judge_resize()
    assert decision is not None
    assert (decision.type, decision.reason) == ("lite", "every_n_turns")
    await session.async_resize()
    assert session.turns_since_last_resize == 0  # the counter restarts after a resize
    assert await session.async_judge_resize() is None


@pytest.mark.trio
@pytest.mark.parametrize("off", [0, None])
async def test_no_decision_when_every_threshold_is_off(tmp_path: Path, off: int | None) -> None:
    """Seed 002 §2: all thresholds 0 or None (disabled, the default) -> decision None."""
    session = session_with(tmp_path, max_messages_text_length=off, max_keep_messages_count=off, every_n_turns=off)
    session.add_messages(chat(50, size=1000))
    assert await session.async_judge_resize() is None
    assert session.judge_resize() is None
    default = Session()  # the defaults: resize off, and no context directory needed
    default.add_messages(chat(50, size=1000))
    assert default.resize() is None
    assert default.context_window == default.history


def test_policy_override_sync_and_async_are_called_and_take_effect(tmp_path: Path) -> None:
    """Seed 002 §2: a sync or an async policy handler replaces the default, and its decision is the one used."""
    session = session_with(tmp_path)  # the default policy would say None
    session.add_messages(chat(2))
    calls: list[tuple[int, ResizePolicy, int]] = []

    def sync_policy(window: list[dict[str, Any]], policy: ResizePolicy, turns: int) -> ResizeDecision | None:
        calls.append((len(window), policy, turns))
        return ResizeDecision(type="deep", reason="custom-sync")

    async def async_policy(window: list[dict[str, Any]], policy: ResizePolicy, turns: int) -> ResizeDecision | None:
        await trio.lowlevel.checkpoint()
        calls.append((len(window), policy, turns))
        return ResizeDecision(type="lite", reason="custom-async")

    session.register_policy_handler(sync_policy)
    assert session.judge_resize() == ResizeDecision(type="deep", reason="custom-sync")
    assert trio.run(session.async_judge_resize) == ResizeDecision(type="deep", reason="custom-sync")
    session.register_policy_handler(async_policy)
    assert trio.run(session.async_judge_resize) == ResizeDecision(type="lite", reason="custom-async")
    assert session.judge_resize() == ResizeDecision(type="lite", reason="custom-async")  # sync caller, async handler
    assert [c[0] for c in calls] == [4, 4, 4, 4]
    assert all(turns == 2 for _, _, turns in calls)


def test_resize_handler_override_sync_and_async_decide_how_much_is_folded(tmp_path: Path) -> None:
    """Seed 002 §2: sync and async resize handlers replace the defaults; their count is what gets folded."""
    session = session_with(tmp_path, max_keep_messages_count=2)
    messages = chat(3)
    session.add_messages(messages)
    seen: list[ResizeDecision] = []

    def fold_two(window: list[dict[str, Any]], decision: ResizeDecision, policy: ResizePolicy) -> int:
        seen.append(decision)
        return 2

    async def fold_three(window: list[dict[str, Any]], decision: ResizeDecision, policy: ResizePolicy) -> int:
        await trio.lowlevel.checkpoint()
        seen.append(decision)
        return 3

    session.register_resize_handler("lite", fold_two)
    session.resize()
    assert session.context_window[1:] == messages[2:]  # exactly two folded, not the default's count
    session.register_resize_handler("lite", fold_three)
    trio.run(session.async_resize)
    window = session.context_window
    assert len(window) == 3  # the old reference and two messages folded into one new reference
    assert window[1:] == messages[4:]
    assert [d.reason for d in seen] == ["max_keep_messages_count"] * 2
    assert session.restored_window() == messages


@pytest.mark.trio
async def test_an_async_handler_from_sync_code_inside_trio_is_refused(tmp_path: Path) -> None:
    """Seed 002 §2: inside trio an async override needs the async_ methods; the sync call says so."""
    session = session_with(tmp_path)

    async def policy(window: list[dict[str, Any]], policy: ResizePolicy, turns: int) -> ResizeDecision | None:
        return None

    session.register_policy_handler(policy)
    with pytest.raises(RuntimeError, match="use the async_ methods"):
        session.judge_resize()
    assert await session.async_judge_resize() is None


def test_lite_resize_folds_the_oldest_into_one_reference_and_restores_exactly(tmp_path: Path) -> None:
    """Seed 002 §2 + append-only rule: a lite resize replaces the oldest messages by ONE reference; nothing is lost."""
    session = session_with(tmp_path, max_keep_messages_count=4)
    messages = chat(4)
    session.add_messages(messages)
    decision = session.resize()
    assert decision == ResizeDecision(type="lite", reason="max_keep_messages_count")
    window = session.context_window
    assert len(window) == 4  # one reference + the three newest: within the limit
    assert window[1:] == messages[-3:]
    assert restore_messages(window[0], tmp_path / "context") == messages[:-3]
    assert session.history == messages  # the append-only record is untouched
    assert session.restored_window() == messages
    assert session.judge_resize() is None


def test_deep_resize_keeps_only_what_fits_and_repeated_resizes_nest_references(tmp_path: Path) -> None:
    """Seed 002 §2 + append-only rule: deep folds all but the newest text that fits; a second resize nests the first
    reference inside the new one, and restoring still gives every message back in order."""
    session = session_with(tmp_path, max_messages_text_length=60)
    first = chat(3, size=20)  # 23 characters each
    session.add_messages(first)
    assert session.resize() == ResizeDecision(type="deep", reason="max_messages_text_length")
    assert session.context_window[1:] == first[-2:]  # two messages (46 characters) fit under 60
    second = chat(2, size=20)
    session.add_messages(second)
    assert session.resize() is not None
    window = session.context_window
    assert window[1:] == second[-2:]
    assert session.restored_window() == first + second
    assert session.history == first + second
    before = session.context_window
    session.resize()  # the window is one reference + what fits: nothing new to fold
    assert session.context_window == before


def test_every_n_turns_keeps_the_last_messages(tmp_path: Path) -> None:
    """Seed 002 §2: an every-n-turns resize keeps session.resize.keep_last messages verbatim."""
    session = session_with(tmp_path, every_n_turns=3, keep_last=2)
    messages = chat(3)
    session.add_messages(messages)
    assert session.resize() == ResizeDecision(type="lite", reason="every_n_turns")
    assert session.context_window[1:] == messages[-2:]
    assert session.restored_window() == messages


def test_resize_without_a_context_directory_says_what_to_set() -> None:
    """Seed 002 §2: resizing is reversible only with somewhere to keep the folded messages."""
    session = Session(LayeredSettings.defaults().set("session.resize.max_keep_messages_count", 1))
    session.add_messages(chat(2))
    with pytest.raises(ValueError, match=r"set session\.context_dir"):
        session.resize()
    assert session.context_window == session.history == chat(2)  # a failed resize changes nothing


def test_a_handler_cannot_drop_messages(tmp_path: Path) -> None:
    """Append-only rule: a resize handler returns a count, anything else is refused; counts are clamped."""
    session = session_with(tmp_path, max_keep_messages_count=1)
    session.add_messages(chat(2))

    def bad(window: list[dict[str, Any]], decision: ResizeDecision, policy: ResizePolicy) -> Any:
        return window[-1:]  # a new window: exactly what must not be possible

    session.register_resize_handler("lite", bad)
    with pytest.raises(TypeError, match="how many messages to fold"):
        session.resize()
    session.register_resize_handler("lite", lambda window, decision, policy: 99)
    session.resize()
    assert len(session.context_window) == 1
    assert session.restored_window() == chat(2)


def test_a_fold_never_separates_tool_results_from_their_call(tmp_path: Path) -> None:
    """Seed 002 §2 + append-only rule: the kept part never starts with a tool result whose call was folded."""
    session = session_with(tmp_path, max_keep_messages_count=3)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "compute"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                "function": {"name": "python", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
        {"role": "tool", "tool_call_id": "c2", "content": "5"},
        {"role": "assistant", "content": "4 and 5"},
    ]  # fmt: skip
    session.add_messages(messages)
    session.resize()  # the default would keep the last two, starting with the "c2" tool result
    window = session.context_window
    assert window[1:] == messages[4:]
    assert session.restored_window() == messages


def test_plan_resize_decides_on_a_window_it_does_not_hold(tmp_path: Path) -> None:
    """What the agent loop uses: the policy and handler decide for the caller's window; nothing is folded here."""
    session = session_with(tmp_path, max_keep_messages_count=3)
    window = chat(3)
    assert session.plan_resize(window, 0) == (ResizeDecision(type="lite", reason="max_keep_messages_count"), 4)
    assert session.plan_resize(window[:2], 0) is None
    assert session.history == [] and not (tmp_path / "context").exists()

    async def never(window: list[dict[str, Any]], policy: ResizePolicy, turns: int) -> ResizeDecision | None:
        await trio.sleep(0)
        return None if turns < 5 else ResizeDecision(type="deep", reason="async")

    session.register_policy_handler(never)
    assert session.plan_resize(window, 4) is None
    decision = session.plan_resize(window, 5)
    assert decision is not None and decision[0].reason == "async"
    session.register_resize_handler("deep", lambda w, d, p: "all")  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="how many messages to fold"):
        session.plan_resize(window, 5)
