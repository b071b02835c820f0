"""PNCounter: seeds H-1 … H-5, the file form (N, +K, -K) and the JSON form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omxfs.crdt.pn_counter import PNCounter
from omxfs.errors import InvalidInput


def counter_at(value: int, replica: str = "seed") -> PNCounter:
    counter = PNCounter()
    counter.add(replica, value)
    return counter


def test_H_1_increment() -> None:
    score = PNCounter()
    score.increment("alice")
    score.increment("alice", 3)
    assert score.value() == 4


def test_H_2_decrement() -> None:
    score = counter_at(4, "alice")
    score.decrement("alice", 2)
    assert score.value() == 2
    score.decrement("alice")
    assert score.value() == 1


def test_H_3_concurrent_increments_all_count() -> None:
    base = PNCounter()
    replicas = {name: base.copy() for name in ("alice", "bob", "charlie")}
    for (name, replica), step in zip(replicas.items(), (5, 3, 7), strict=True):
        replica.increment(name, step)
    total = base.copy()
    for replica in replicas.values():
        total.merge(replica)
    assert total.value() == 15


def test_H_4_concurrent_increment_and_decrement_in_any_order() -> None:
    base = counter_at(10)
    alice, bob = base.copy(), base.copy()
    alice.increment("alice", 5)
    bob.decrement("bob", 3)
    ab, ba = alice.copy(), bob.copy()
    ab.merge(bob)
    ba.merge(alice)
    assert ab.value() == ba.value() == 12
    assert ab == ba


def test_H_5_merge_takes_per_replica_max_and_is_idempotent() -> None:
    a, b = PNCounter(), PNCounter()
    a.increment("alice", 10)
    a.increment("bob", 5)
    b.increment("alice", 3)
    b.increment("charlie", 7)
    a.merge(b)
    assert a.to_json() == {"p": {"alice": 10, "bob": 5, "charlie": 7}, "n": {}}
    assert a.value() == 22
    before = a.to_json()
    a.merge(b)
    a.merge(a.copy())
    assert a.to_json() == before
    assert a.value() == 22


def test_render_is_the_integer_and_a_newline() -> None:
    assert PNCounter().render() == "0\n"
    assert counter_at(-3).render() == "-3\n"
    assert counter_at(12).render() == "12\n"


def test_write_absolute_adds_difference_from_base() -> None:
    views = counter_at(5)
    base = views.base()
    assert base == 5
    views.increment("bob", 2)  # concurrent, unseen by the writer
    views.write_text(base, "8\n", "alice")
    assert views.value() == 10  # 5 + bob's 2 + alice's (8 - 5)
    views.write_text(views.base(), "  4 \n", "alice")
    assert views.value() == 4


@pytest.mark.parametrize(("text", "expected"), [("+3", 8), ("-2\n", 3), ("+0", 5), ("-0", 5), ("5", 5)])
def test_write_step(text: str, expected: int) -> None:
    views = counter_at(5)
    views.write_text(views.base(), text, "alice")
    assert views.value() == expected


@pytest.mark.parametrize("value", [7, 0, -3])
def test_rewriting_the_text_read_changes_nothing(value: int) -> None:
    """An editor that saves an unchanged file writes back what it read; a negative value is no step then."""
    views = counter_at(value)
    views.write_text(views.base(), views.render(), "alice")
    assert views.value() == value


def test_minus_k_is_a_step_when_it_is_not_the_value_read() -> None:
    views = counter_at(-3)
    views.write_text(views.base(), "-2", "alice")
    assert views.value() == -5


@pytest.mark.parametrize(
    "text",
    [
        "",
        "  \n",
        "abc",
        "1.5",
        "1e3",
        "++1",
        "+-1",
        "1 2",
        "0x10",
        "٣",
        "1_000",
        pytest.param("9" * 5000, id="5000-digits"),
    ],
)
def test_write_rejects_text_that_is_not_an_integer(text: str) -> None:
    views = counter_at(5)
    before = views.to_json()
    with pytest.raises(InvalidInput):
        views.write_text(views.base(), text, "alice")
    assert views.to_json() == before


@pytest.mark.parametrize("base", ["5", None, 5.0, True])
def test_write_rejects_a_base_that_is_not_a_read(base: Any) -> None:
    views = counter_at(5)
    with pytest.raises(InvalidInput):
        views.write_text(base, "+1", "alice")
    assert views.value() == 5


@pytest.mark.parametrize("n", [-1, 1.0, True, "2", None])
def test_steps_must_be_non_negative_integers(n: Any) -> None:
    views = counter_at(5)
    with pytest.raises(InvalidInput):
        views.increment("alice", n)
    with pytest.raises(InvalidInput):
        views.decrement("alice", n)
    assert views.value() == 5


def test_replica_must_be_named() -> None:
    with pytest.raises(InvalidInput):
        PNCounter().increment("", 1)


def test_zero_steps_leave_no_trace() -> None:
    counter = PNCounter()
    counter.increment("alice", 0)
    counter.decrement("bob", 0)
    assert counter == PNCounter()
    assert counter.to_json() == {"p": {}, "n": {}}


def test_json_round_trip() -> None:
    counter = counter_at(5, "alice")
    counter.decrement("bob", 8)
    data = json.loads(json.dumps(counter.to_json()))
    again = PNCounter.from_json(data)
    assert again == counter
    assert again.value() == -3
    assert again.to_json() == counter.to_json()


def test_from_json_drops_zero_tallies() -> None:
    assert PNCounter.from_json({"p": {"alice": 0}, "n": {}}) == PNCounter()


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"p": {}},
        {"p": {}, "n": {}, "x": {}},
        {"p": [], "n": {}},
        {"p": {"alice": -1}, "n": {}},
        {"p": {"alice": 1.5}, "n": {}},
        {"p": {"alice": True}, "n": {}},
        {"p": {"": 1}, "n": {}},
        {"p": {}, "n": {"bob": "2"}},
    ],
)
def test_from_json_rejects_malformed(data: Any) -> None:
    with pytest.raises(InvalidInput):
        PNCounter.from_json(data)


def test_copy_is_independent() -> None:
    counter = counter_at(1, "alice")
    twin = counter.copy()
    twin.increment("alice")
    assert (counter.value(), twin.value()) == (1, 2)
    assert counter != twin
    assert counter != 1
