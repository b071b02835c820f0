"""LWWMap: seeds G-1 and G-2 (per-key LWW through the file form), deletes as tombstones, the JSON form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omxfs.crdt.lww_map import LWWMap
from omxfs.errors import InvalidInput


def lwwmap(values: dict[str, Any], replica: str = "seed", timestamp: int = 1) -> LWWMap:
    m = LWWMap()
    for key, value in values.items():
        m.set(key, value, replica, timestamp)
    return m


def test_G_1_set_and_read() -> None:
    config = LWWMap()
    config.set("theme", "dark", "alice")
    config.set("lang", "zh", "alice")
    assert config.value() == {"theme": "dark", "lang": "zh"}
    assert config.get("theme") == "dark"
    assert config.get("lang") == "zh"


def test_G_1_set_through_the_file() -> None:
    config = LWWMap()
    config.write_text(config.base(), '{"theme": "dark", "lang": "zh"}', "alice")
    assert config.value() == {"theme": "dark", "lang": "zh"}


G2_BASE = {"theme": "dark", "lang": "zh"}
G2_ALICE = '{"theme": "light", "lang": "zh"}\n'
G2_BOB = '{"theme": "dark", "lang": "en"}\n'
G2_EXPECTED = {"theme": "light", "lang": "en"}


@pytest.mark.parametrize("alice_first", [True, False])
def test_G_2_concurrent_writes_of_different_keys_both_kept_on_one_replica(alice_first: bool) -> None:
    config = lwwmap(G2_BASE)
    alice_base = bob_base = config.base()  # both read the same value
    writes = [(alice_base, G2_ALICE, "alice"), (bob_base, G2_BOB, "bob")]
    for base, text, agent in writes if alice_first else reversed(writes):
        config.write_text(base, text, agent)
    assert config.value() == G2_EXPECTED


def test_G_2_concurrent_writes_of_different_keys_both_kept_on_two_replicas() -> None:
    common = lwwmap(G2_BASE)
    alice, bob = common.copy(), common.copy()
    alice.write_text(alice.base(), G2_ALICE, "alice")
    bob.write_text(bob.base(), G2_BOB, "bob")
    ab, ba = alice.copy(), bob.copy()
    ab.merge(bob)
    ba.merge(alice)
    assert ab.value() == ba.value() == G2_EXPECTED
    assert ab == ba


def test_same_key_last_writer_wins_then_higher_replica() -> None:
    a, b = lwwmap({"k": 1}, "alice", 5), lwwmap({"k": 2}, "bob", 5)
    a.merge(b)
    assert a.get("k") == 2
    c = lwwmap({"k": 3}, "alice", 6)
    c.merge(a)
    assert c.get("k") == 3


def test_same_replica_and_timestamp_still_merges_deterministically() -> None:
    a, b, deleted = lwwmap({"k": 1}, "alice", 5), lwwmap({"k": 2}, "alice", 5), LWWMap()
    deleted.delete("k", "alice", 5)
    for x, y in [(a, b), (a, deleted), (b, deleted)]:
        xy, yx = x.copy(), y.copy()
        xy.merge(y)
        yx.merge(x)
        assert xy == yx


def test_delete_is_a_tombstone_that_orders_like_a_write() -> None:
    m = lwwmap({"k": "v"}, "alice", 5)
    stale = m.copy()
    assert m.delete("k", "bob", 6) is True
    assert "k" not in m
    assert m.get("k") is None
    assert m.get("k", "default") == "default"
    m.merge(stale)  # the older set does not resurrect it
    assert m.value() == {}
    assert m.to_json() == {"entries": {"k": {"timestamp": 6, "replica": "bob", "deleted": True}}}
    m.set("k", "again", "alice", 7)
    assert m.value() == {"k": "again"}
    assert m.delete("missing", "bob") is False


def test_older_explicit_write_does_not_take_effect() -> None:
    m = lwwmap({"k": "new"}, "alice", 9)
    m.set("k", "old", "zed", 3)
    m.delete("k", "zed", 3)
    assert m.value() == {"k": "new"}


def test_local_write_beats_observed_future_timestamp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("omxfs.crdt.lww_map.now_ns", lambda: 100)
    m = lwwmap({"k": "fast clock"}, "zed", 5_000)
    m.set("k", "local", "alice")
    m.set("other", "x", "alice")
    assert m.to_json()["entries"]["k"] == {"timestamp": 5_001, "replica": "alice", "value": "local"}
    assert m.to_json()["entries"]["other"]["timestamp"] == 100
    m.delete("k", "alice")
    assert m.to_json()["entries"]["k"]["timestamp"] == 5_002


def test_values_are_json_and_copied() -> None:
    m = LWWMap()
    nested: dict[str, Any] = {"list": [1, 2.5, None, True, "s"], "obj": {"a": {}}}
    m.set("n", nested, "alice")
    nested["list"].append(99)
    got = m.get("n")
    assert got == {"list": [1, 2.5, None, True, "s"], "obj": {"a": {}}}
    got["obj"]["a"]["x"] = 1
    assert m.get("n") == {"list": [1, 2.5, None, True, "s"], "obj": {"a": {}}}


def test_len_keys_and_contains() -> None:
    m = lwwmap({"b": 1, "a": 2, "c": 3})
    m.delete("c", "alice", 2)
    assert len(m) == 2
    assert m.keys() == ["a", "b"]
    assert "a" in m
    assert "c" not in m
    assert 1 not in m


def test_render_is_sorted_indented_json() -> None:
    assert LWWMap().render() == "{}\n"
    m = lwwmap({"theme": "dark", "lang": "中文", "n": [1]})
    assert m.render() == '{\n  "lang": "中文",\n  "n": [\n    1\n  ],\n  "theme": "dark"\n}\n'


def test_write_back_what_was_read_changes_nothing() -> None:
    m = lwwmap({"a": 1, "b": {"x": [True, None]}, "c": 1.5})
    before = m.to_json()
    m.write_text(m.base(), m.render(), "bob")
    assert m.to_json() == before


def test_write_text_deletes_keys_left_out_and_keeps_others_concurrent_changes() -> None:
    m = lwwmap({"keep": 1, "drop": 2, "theirs": 3})
    base = m.base()
    m.set("theirs", 30, "carol", 5)  # after the writer read
    m.write_text(base, '{"keep": 1, "theirs": 3, "new": [1]}', "bob", 4)
    assert m.value() == {"keep": 1, "theirs": 30, "new": [1]}


def test_write_text_compares_values_exactly() -> None:
    m = lwwmap({"flag": 1})
    m.write_text(m.base(), '{"flag": true}', "bob", 2)
    assert m.get("flag") is True
    m.write_text(m.base(), '{"flag": 1.0}', "bob", 3)
    assert m.to_json()["entries"]["flag"]["value"] == 1.0
    assert isinstance(m.get("flag"), float)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "not json",
        "[]",
        '["a"]',
        '"string"',
        "42",
        "null",
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": 1e400}',
        '{"a": "\\ud800"}',
        pytest.param("[" * 100_000 + "]" * 100_000, id="too-deep"),
    ],
)
def test_bad_write_text_changes_nothing(text: str) -> None:
    m = lwwmap({"keep": "me"})
    before = m.to_json()
    with pytest.raises(InvalidInput):
        m.write_text(m.base(), text, "bob")
    assert m.to_json() == before


def test_write_text_refuses_bad_base_or_replica() -> None:
    m = lwwmap({"keep": "me"})
    with pytest.raises(InvalidInput):
        m.write_text(["keep"], "{}", "bob")
    with pytest.raises(InvalidInput):
        m.write_text(m.base(), "{}", "")
    with pytest.raises(InvalidInput):
        m.write_text(m.base(), "{}", "bob", -1)
    assert m.value() == {"keep": "me"}


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        {1: "int key"},
        (1, 2),
        {"a": {1, 2}},
        object(),
        b"bytes",
        "\udc80",
        pytest.param(10**5000, id="huge-int"),
    ],
)
def test_set_refuses_values_json_cannot_carry(value: Any) -> None:
    m = LWWMap()
    with pytest.raises(InvalidInput):
        m.set("k", value, "alice")
    assert m == LWWMap()


@pytest.mark.parametrize(("key", "replica"), [(1, "alice"), (None, "alice"), ("\ud800", "alice"), ("k", "")])
def test_set_refuses_bad_key_or_replica(key: Any, replica: Any) -> None:
    m = LWWMap()
    with pytest.raises(InvalidInput):
        m.set(key, "v", replica)
    with pytest.raises(InvalidInput):
        m.delete(key, replica)
    assert m == LWWMap()


def test_json_round_trip() -> None:
    m = lwwmap({"a": {"b": [1, None]}, "c": "中"})
    m.delete("c", "bob", 2)
    data = json.loads(json.dumps(m.to_json()))
    again = LWWMap.from_json(data)
    assert again == m
    assert again.to_json() == m.to_json()
    assert again.value() == {"a": {"b": [1, None]}}


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {},
        {"entries": []},
        {"entries": {}, "x": 1},
        {"entries": {"k": "v"}},
        {"entries": {"k": {"timestamp": 1, "replica": "a"}}},
        {"entries": {"k": {"timestamp": 1, "replica": "a", "value": 1, "deleted": True}}},
        {"entries": {"k": {"timestamp": 1, "replica": "a", "deleted": False}}},
        {"entries": {"k": {"timestamp": -1, "replica": "a", "value": 1}}},
        {"entries": {"k": {"timestamp": 1.0, "replica": "a", "value": 1}}},
        {"entries": {"k": {"timestamp": 1, "replica": "", "value": 1}}},
        {"entries": {"k": {"timestamp": 1, "replica": "a", "value": float("nan")}}},
        {"entries": {"k": {"timestamp": 1, "replica": "a", "value": (1,)}}},
    ],
)
def test_from_json_rejects_malformed(data: Any) -> None:
    with pytest.raises(InvalidInput):
        LWWMap.from_json(data)


def test_copy_is_independent() -> None:
    m = lwwmap({"a": 1})
    twin = m.copy()
    twin.set("a", 2, "bob", 9)
    assert (m.get("a"), twin.get("a")) == (1, 2)
    assert m != twin
    assert m != {"a": 1}
