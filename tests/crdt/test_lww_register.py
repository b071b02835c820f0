"""LWWRegister: seeds D-1 … D-3, hybrid timestamps, the file form and the JSON form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omxfs.crdt.lww_register import LWWRegister
from omxfs.errors import InvalidInput


def register(value: str, replica: str, timestamp: int) -> LWWRegister:
    reg = LWWRegister()
    reg.set(value, replica, timestamp)
    return reg


def merged(a: LWWRegister, b: LWWRegister) -> LWWRegister:
    out = a.copy()
    out.merge(b)
    return out


def test_D_1_set_then_read() -> None:
    title = LWWRegister()
    title.set("第一版标题", "alice")
    assert title.value() == "第一版标题"
    assert title.render() == "第一版标题"
    assert title.replica == "alice"


def test_D_2_later_timestamp_wins_in_either_order() -> None:
    alice = register("Alice的标题", "alice", 1_000)
    bob = register("Bob的标题", "bob", 2_000)
    assert merged(alice, bob).value() == "Bob的标题"
    assert merged(bob, alice).value() == "Bob的标题"
    # the same holds for a later timestamp from the lower replica name
    assert merged(register("x", "zed", 1), register("y", "amy", 2)).value() == "y"


def test_D_2_explicit_older_write_arriving_late_loses() -> None:
    title = register("Bob的标题", "bob", 2_000)
    title.set("Alice的标题", "alice", 1_000)
    assert title.value() == "Bob的标题"
    assert title.timestamp == 2_000


def test_D_3_equal_timestamps_higher_replica_wins() -> None:
    alice = register("alice's", "alice", 42)
    bob = register("bob's", "bob", 42)
    ab, ba = merged(alice, bob), merged(bob, alice)
    assert ab.value() == "bob's"
    assert ab == ba
    assert ab.to_json() == ba.to_json() == {"value": "bob's", "timestamp": 42, "replica": "bob"}


def test_same_replica_and_timestamp_still_merges_deterministically() -> None:
    a, b = register("a", "alice", 7), register("b", "alice", 7)
    assert merged(a, b) == merged(b, a)


def test_never_set_reads_empty() -> None:
    reg = LWWRegister()
    assert reg.value() == reg.render() == ""
    assert reg.to_json() == {"value": "", "timestamp": 0, "replica": ""}


def test_local_set_beats_observed_future_timestamp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("omxfs.crdt.lww_register.now_ns", lambda: 100)
    reg = register("from a fast clock", "bob", 5_000)
    reg.set("local", "alice")
    assert (reg.value(), reg.timestamp, reg.replica) == ("local", 5_001, "alice")


def test_local_set_uses_the_clock_when_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("omxfs.crdt.lww_register.now_ns", lambda: 9_000)
    reg = register("old", "bob", 5_000)
    reg.set("new", "alice")
    assert (reg.value(), reg.timestamp) == ("new", 9_000)


def test_write_text_sets_the_exact_text_and_ignores_base() -> None:
    reg = register("old", "alice", 1)
    base = reg.base()
    reg.set("someone else's", "bob", 2)
    reg.write_text(base, "line one\nline two\n", "carol")
    assert reg.render() == "line one\nline two\n"
    assert reg.replica == "carol"


@pytest.mark.parametrize(
    ("value", "replica", "timestamp"),
    [
        (42, "alice", 1),
        (None, "alice", 1),
        ("\ud800", "alice", 1),
        ("v", "", 1),
        ("v", 7, 1),
        ("v", "alice", -1),
        ("v", "alice", True),
        ("v", "alice", 1.5),
    ],
)
def test_bad_set_raises_and_changes_nothing(value: Any, replica: Any, timestamp: Any) -> None:
    reg = register("keep", "alice", 3)
    before = reg.to_json()
    with pytest.raises(InvalidInput):
        reg.set(value, replica, timestamp)
    assert reg.to_json() == before


def test_bad_write_text_changes_nothing() -> None:
    reg = register("keep", "alice", 3)
    with pytest.raises(InvalidInput):
        reg.write_text(reg.base(), "new", "")
    assert reg.value() == "keep"


def test_json_round_trip() -> None:
    reg = register("标题", "alice", 123)
    data = json.loads(json.dumps(reg.to_json()))
    again = LWWRegister.from_json(data)
    assert again == reg
    assert again.to_json() == reg.to_json()
    assert LWWRegister.from_json(LWWRegister().to_json()) == LWWRegister()


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        "value",
        {},
        {"value": "x", "timestamp": 1},
        {"value": "x", "timestamp": 1, "replica": "a", "extra": 0},
        {"value": 1, "timestamp": 1, "replica": "a"},
        {"value": "x", "timestamp": "1", "replica": "a"},
        {"value": "x", "timestamp": -1, "replica": "a"},
        {"value": "x", "timestamp": False, "replica": "a"},
        {"value": "x", "timestamp": 1, "replica": None},
        {"value": "x", "timestamp": 1, "replica": ""},
        {"value": "x", "timestamp": 0, "replica": ""},
    ],
)
def test_from_json_rejects_malformed(data: Any) -> None:
    with pytest.raises(InvalidInput):
        LWWRegister.from_json(data)


def test_copy_is_independent() -> None:
    reg = register("a", "alice", 1)
    twin = reg.copy()
    twin.set("b", "bob", 2)
    assert reg.value() == "a"
    assert twin.value() == "b"
    assert reg != twin


def test_equality_is_by_state() -> None:
    assert register("a", "alice", 1) == register("a", "alice", 1)
    assert register("a", "alice", 1) != register("a", "alice", 2)
    assert register("a", "alice", 1) != register("a", "bob", 1)
    assert LWWRegister() != "not a register"


def test_merge_refuses_another_type() -> None:
    from omxfs.crdt.pn_counter import PNCounter

    reg = register("a", "alice", 1)
    with pytest.raises(InvalidInput):
        reg.merge(PNCounter())  # type: ignore[arg-type]
    assert reg.value() == "a"
