"""Seed 003's unit tests, one per assertion the seed lists (named after the seed's tests), plus the edges we added."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from agent.context import (
    ContextManager,
    ErrorPreservation,
    FileBasedMemory,
    MemoryPathError,
    TemplateNoise,
    TodoRecitation,
    ToolMask,
    compress_messages,
    is_reference,
    restore_messages,
    tool_choice_for,
)

SEED_GROUPS = {"CHAT": ["respond"], "CODE": ["respond", "code_execute", "code_analyze"]}


# --- ContextManager (seed 3.5 test_context_manager.py) ---


def test_append_only() -> None:
    cm = ContextManager()
    cm.append_user("hello")
    cm.append_assistant("world")
    messages = cm.get_messages()
    assert len(messages) == 2
    assert messages[0]["role"] == "user" and messages[1]["role"] == "assistant"


def test_no_mutation() -> None:
    cm = ContextManager()
    cm.append_user("original")
    entries = cm.get_entries()
    assert entries[0].content == "original"
    with pytest.raises(dataclasses.FrozenInstanceError):
        entries[0].content = "changed"  # type: ignore[misc]
    cm.get_messages()[0]["content"] = "changed"  # a copy: the context keeps its own
    assert cm.get_entries()[0].content == "original" and isinstance(entries, tuple)


def test_compress_to_file_is_reversible(tmp_path: Path) -> None:
    cm = ContextManager()
    for i in range(20):
        cm.append_user(f"message {i}")
    before = cm.get_messages()
    reference = cm.compress_to_file(tmp_path, keep_last=5)
    assert reference is not None and len(list(tmp_path.glob("*.json"))) == 1  # the file was written
    messages = cm.get_messages()
    assert any("compressed" in (m["content"] or "").lower() for m in messages)
    assert cm.entry_count == 6  # 1 reference + 5 kept
    assert messages[1:] == before[15:]
    assert restore_messages(messages[0], tmp_path) + messages[1:] == before  # nothing lost


def test_error_preserved_in_context() -> None:
    cm = ContextManager()
    cm.append_user("question")
    cm.append_error("failed answer", original_query="question")
    entries = cm.get_entries()
    assert len(entries) == 2
    assert entries[1].metadata.get("is_error") is True


def test_compression_cuts_only_at_turn_boundaries(tmp_path: Path) -> None:
    cm = ContextManager()
    cm.append_message({"role": "system", "content": "s"})
    cm.append_user("task")
    for i in range(3):
        calls = [{"id": f"c{i}{j}", "type": "function", "function": {"name": "t", "arguments": "{}"}} for j in "ab"]
        cm.append_message({"role": "assistant", "content": None, "tool_calls": calls})
        for j in "ab":
            cm.append_message({"role": "tool", "tool_call_id": f"c{i}{j}", "content": "r"})
    before = cm.get_messages()
    cm.compress_to_file(tmp_path, keep_last=1, keep_first=2)  # a cut before the last tool result moves back
    after = cm.get_messages()
    assert after[:2] == before[:2] and is_reference(after[2])
    assert after[3]["role"] == "assistant" and [m["role"] for m in after[4:]] == ["tool", "tool"]
    assert after[:2] + restore_messages(after[2], tmp_path) + after[3:] == before
    called = {c["id"] for m in after if m.get("tool_calls") for c in m["tool_calls"]}
    assert all(m["tool_call_id"] in called for m in after if m["role"] == "tool")  # no orphaned tool result


def test_compress_messages_contract_round_trip_and_forged_reference(tmp_path: Path) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "héllo"}, {"role": "assistant", "content": None}]
    reference = compress_messages(messages, tmp_path / "a dir")
    assert reference["role"] in ("user", "system") and "a dir" in reference["content"]
    assert restore_messages(reference, tmp_path / "a dir") == messages
    assert compress_messages(messages, tmp_path / "a dir") == reference  # deterministic: no clock in the name
    outside = tmp_path / "context-0000000000000000.json"
    outside.write_text(json.dumps(messages))
    forged = {"role": "user", "content": f"[compressed context] x\nfile: {outside}"}
    with pytest.raises(ValueError, match="outside"):
        restore_messages(forged, tmp_path / "a dir")


# --- TodoRecitation (seed 3.5 test_todo_recitation.py) ---


def test_creates_initial_plan() -> None:
    plan = TodoRecitation().create_initial_plan("Write a factorial function")
    assert "factorial" in plan.lower() and "- [ ]" in plan


def test_recitation_prefix_pushes_plan_to_recent() -> None:
    tr = TodoRecitation()
    tr.create_initial_plan("test query")
    prefix = tr.build_recitation_prefix()
    assert "CURRENT_PLAN" in prefix and "test query" in prefix


def test_update_from_output() -> None:
    tr = TodoRecitation()
    tr.create_initial_plan("test")
    tr.update_from_output("Here's my work:\n- [x] Analyzed\n- [ ] Need to verify")
    assert "[x] Analyzed" in tr.current_plan
    assert not tr.update_from_output("no checklist here") and "[x] Analyzed" in tr.current_plan


def test_empty_plan_returns_empty_prefix() -> None:
    assert TodoRecitation().build_recitation_prefix() == ""


# --- ErrorPreservation (seed 3.5 test_error_preservation.py) ---


def test_retry_prompt_includes_failure() -> None:
    prompt = ErrorPreservation.build_retry_prompt(original_query="What is 2+2?", failed_result="I'm not sure.")
    assert "I'm not sure" in prompt and "2+2" in prompt


def test_should_retry_for_empty_result() -> None:
    assert ErrorPreservation.should_retry("", max_retries=1, current_retry=0)


def test_should_not_retry_after_max() -> None:
    assert not ErrorPreservation.should_retry("", max_retries=1, current_retry=1)


def test_should_not_retry_for_good_result() -> None:
    good = "This is a detailed and helpful response about the topic."
    assert not ErrorPreservation.should_retry(good, max_retries=1, current_retry=0)


# --- ToolAvailabilityMask (seed 4.5 test_tool_mask.py) ---


def test_chat_mode_only_respond() -> None:
    assert ToolMask(SEED_GROUPS).get_allowed_tools("CHAT") == ["respond"]


def test_code_mode_includes_code_tools() -> None:
    assert "code_execute" in ToolMask(SEED_GROUPS).get_allowed_tools("CODE")


def test_apply_mask_filters_tools() -> None:
    all_tools = [{"name": "respond"}, {"name": "web_search"}, {"name": "code_execute"}]
    filtered = ToolMask(SEED_GROUPS).apply_mask("CHAT", all_tools)
    assert len(filtered) == 1 and filtered[0]["name"] == "respond"


def test_mask_rejects_unknown_modes_and_tools_and_builds_tool_choice() -> None:
    mask = ToolMask(SEED_GROUPS)
    with pytest.raises(ValueError, match="unknown mode"):
        mask.get_allowed_tools("NOPE")
    with pytest.raises(ValueError, match="code_analyze"):
        mask.check(["respond", "code_execute"])
    names = ["a", "b", "c"]
    assert tool_choice_for(names, names) is None
    assert tool_choice_for([], names) == "none"
    choice = tool_choice_for(["c", "a"], names)
    assert isinstance(choice, dict) and choice["type"] == "allowed_tools"
    assert [t["function"]["name"] for t in choice["allowed_tools"]["tools"]] == ["a", "c"]  # definition order


# --- TemplateRandomizer (seed 4.5 test_randomizer.py) ---


def test_wraps_instruction() -> None:
    assert "hello world" in TemplateNoise().wrap_instruction("Write hello world").lower()


def test_varies_output() -> None:
    tr = TemplateNoise()
    assert len({tr.wrap_instruction("test") for _ in range(20)}) > 1
    a, b = TemplateNoise(seed=3), TemplateNoise(seed=3)
    assert [a.wrap_instruction("x") for _ in range(5)] == [b.wrap_instruction("x") for _ in range(5)]  # seeded


# --- FileBasedMemory (seed 4.5 test_file_memory.py) ---


def test_save_and_load(tmp_path: Path) -> None:
    mem = FileBasedMemory(workspace_dir=str(tmp_path))
    mem.save("test.md", "hello world")
    assert mem.load("test.md") == "hello world"


def test_load_nonexistent_returns_empty(tmp_path: Path) -> None:
    assert FileBasedMemory(workspace_dir=str(tmp_path)).load("nonexistent.md") == ""


def test_append_log_is_append_only(tmp_path: Path) -> None:
    mem = FileBasedMemory(workspace_dir=str(tmp_path))
    mem.append_log("history.jsonl", {"query": "q1"})
    mem.append_log("history.jsonl", {"query": "q2"})
    lines = (tmp_path / "history.jsonl").read_text().strip().split("\n")
    assert len(lines) == 2 and json.loads(lines[0]) == {"query": "q1"}


def test_memory_refuses_paths_outside_its_zone(tmp_path: Path) -> None:
    zone = tmp_path / "agents" / "alice"
    mem = FileBasedMemory(zone)
    (tmp_path / "secret.txt").write_text("no")
    (zone / "link").symlink_to(tmp_path)
    for name in ("../secret.txt", str(tmp_path / "secret.txt"), "link/secret.txt", "", "."):
        with pytest.raises(MemoryPathError):
            mem.load(name)
    with pytest.raises(MemoryPathError):
        mem.list_files("../*")
    mem.save("notes/a.md", "a")
    assert mem.load(str(zone / "notes" / "a.md")) == "a"  # an absolute path inside the zone is fine
    assert mem.list_files("**/*") == ["notes/a.md"]  # the symlinked directory is not followed out


def test_fold_pins_the_head_keeps_tool_results_with_their_call_and_nests(tmp_path: Path) -> None:
    """ContextManager.fold (session resize): the oldest after the head, cut past tool results, references nest."""
    from agent.context import restore_all

    context = ContextManager()
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for i in range(3):
        messages += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}"}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": f"r{i}"}]  # fmt: skip
    for m in messages:
        context.append_message(m)
    assert context.fold(tmp_path, 1, keep_first=2) is not None  # one asked; its tool result goes with it
    window = context.get_messages()
    assert window[:2] == messages[:2] and is_reference(window[2]) and window[3] == messages[4]
    assert context.fold(tmp_path, 1, keep_first=2) is None  # a lone reference is not folded again
    assert context.fold(tmp_path, 2, keep_first=2) is not None  # the reference and the next call (+ its result)
    window = context.get_messages()
    assert len(window) == 5 and is_reference(window[2]) and restore_all(window, tmp_path) == messages
