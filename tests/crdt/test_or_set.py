"""ORSet: seeds F-1 … F-5, add-wins and tombstones, the file form (one element a line) and the JSON form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omxfs.crdt.or_set import ORSet
from omxfs.errors import InvalidInput


def orset(*elements: str, replica: str = "alice") -> ORSet:
    tags = ORSet()
    for element in elements:
        tags.add(element, replica)
    return tags


def test_F_1_add_elements() -> None:
    tags = ORSet()
    tags.add("important", "alice")
    tags.add("urgent", "alice")
    assert tags.elements() == ["important", "urgent"]
    assert len(tags) == 2


def test_F_2_remove_element() -> None:
    tags = orset("important", "urgent")
    assert tags.remove("important") is True
    assert tags.elements() == ["urgent"]
    assert len(tags) == 1


def test_F_3_adding_twice_keeps_one_element_with_two_tags() -> None:
    tags = orset("urgent")
    tags.add("urgent", "alice")
    assert tags.elements() == ["urgent"]
    assert len(tags) == 1
    assert tags.to_json()["live"] == {"urgent": [["alice", 1], ["alice", 2]]}


def test_F_4_concurrent_add_wins_over_remove() -> None:
    base = orset("important", replica="alice")
    alice, bob = base.copy(), base.copy()
    alice.remove("important")
    bob.add("important", "bob")
    ab, ba = alice.copy(), bob.copy()
    ab.merge(bob)
    ba.merge(alice)
    assert ab.contains("important")
    assert ba.contains("important")
    assert ab == ba
    # only the tag alice saw is tombstoned
    assert ab.to_json() == {"live": {"important": [["bob", 1]]}, "tombstones": {"important": [["alice", 1]]}}


def test_F_5_contains() -> None:
    tags = orset("urgent")
    assert tags.contains("urgent") is True
    assert tags.contains("low") is False
    assert "urgent" in tags
    assert "low" not in tags
    assert 3 not in tags


def test_remove_of_absent_element_returns_false_and_changes_nothing() -> None:
    tags = orset("a")
    assert tags.remove("b") is False
    assert tags == orset("a")


def test_removed_element_stays_removed_after_merging_a_stale_replica() -> None:
    base = orset("x")
    stale = base.copy()
    base.remove("x")
    base.merge(stale)
    stale.merge(base)
    assert not base.contains("x")
    assert not stale.contains("x")


def test_re_add_after_remove_uses_a_fresh_tag() -> None:
    tags = orset("x")
    tags.remove("x")
    tags.add("x", "alice")
    assert tags.contains("x")
    assert tags.to_json() == {"live": {"x": [["alice", 2]]}, "tombstones": {"x": [["alice", 1]]}}


def test_render_sorted_one_per_line() -> None:
    assert ORSet().render() == ""
    assert orset("urgent", "important", "中文").render() == "important\nurgent\n中文\n"


def test_write_text_adds_and_removes_against_base() -> None:
    tags = orset("a", "b")
    tags.write_text(tags.base(), "b\nc\n", "bob")
    assert tags.elements() == ["b", "c"]


def test_write_text_ignores_blank_lines_and_crlf() -> None:
    tags = orset("a")
    tags.write_text(tags.base(), "\r\nb\r\n\n  \na\n", "bob")
    assert tags.elements() == ["a", "b"]


def test_write_back_what_was_read_changes_nothing() -> None:
    tags = orset("x", "y z", " padded ")
    before = tags.to_json()
    tags.write_text(tags.base(), tags.render(), "bob")
    assert tags.to_json() == before


def test_write_text_removes_only_the_tags_the_writer_saw() -> None:
    tags = orset("shared")
    base = tags.base()
    tags.add("shared", "bob")  # concurrent re-add, unseen by the writer
    tags.write_text(base, "", "alice")
    assert tags.contains("shared")
    assert tags.to_json()["tombstones"] == {"shared": [["alice", 1]]}


def test_concurrent_file_writes_from_one_base_both_count() -> None:
    base_state = orset("a", "b")
    alice, bob = base_state.copy(), base_state.copy()
    alice.write_text(alice.base(), "a\nb\nfrom-alice\n", "alice")
    bob.write_text(bob.base(), "b\n", "bob")  # bob removes a
    alice.merge(bob)
    bob.merge(alice)
    assert alice == bob
    assert alice.elements() == ["b", "from-alice"]


def test_write_text_leaves_concurrently_removed_element_removed() -> None:
    tags = orset("a", "b")
    base = tags.base()
    tags.remove("a")  # someone else, after the writer read
    tags.write_text(base, "a\nb\nc\n", "bob")  # the writer kept "a" as it was
    assert tags.elements() == ["b", "c"]


@pytest.mark.parametrize("element", ["", "   ", "a\nb", "a\r", "a\rb", "\ud800", 5, None])
def test_bad_elements_are_refused(element: Any) -> None:
    tags = orset("keep")
    before = tags.to_json()
    with pytest.raises(InvalidInput):
        tags.add(element, "alice")
    assert tags.to_json() == before


@pytest.mark.parametrize("replica", ["", None, 3])
def test_bad_replica_is_refused(replica: Any) -> None:
    with pytest.raises(InvalidInput):
        ORSet().add("x", replica)


def test_bad_write_text_changes_nothing() -> None:
    tags = orset("keep", "drop")
    before = tags.to_json()
    with pytest.raises(InvalidInput):
        tags.write_text(tags.base(), "new\nbad\rline\n", "bob")
    with pytest.raises(InvalidInput):
        tags.write_text(tags.base(), "new\n", "")
    with pytest.raises(InvalidInput):
        tags.write_text(["keep"], "new\n", "bob")
    with pytest.raises(InvalidInput):
        tags.write_text({"drop": "not tags"}, "new\n", "bob")
    assert tags.to_json() == before


def test_base_is_read_only() -> None:
    base = orset("a").base()
    with pytest.raises(TypeError):
        base["b"] = frozenset()  # type: ignore[index]


def test_json_round_trip() -> None:
    tags = orset("a", "b", "c")
    tags.remove("b")
    tags.add("d", "bob")
    data = json.loads(json.dumps(tags.to_json()))
    again = ORSet.from_json(data)
    assert again == tags
    assert again.to_json() == tags.to_json()
    again.add("e", "alice")
    assert again.to_json()["live"]["e"] == [["alice", 4]]  # counters continue after tombstoned tags


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"live": {}},
        {"live": {}, "tombstones": {}, "x": 1},
        {"live": [], "tombstones": {}},
        {"live": {"a": []}, "tombstones": {}},
        {"live": {"a": [["alice"]]}, "tombstones": {}},
        {"live": {"a": [["alice", 0]]}, "tombstones": {}},
        {"live": {"a": [["alice", "1"]]}, "tombstones": {}},
        {"live": {"a": [["alice", True]]}, "tombstones": {}},
        {"live": {"a": [["", 1]]}, "tombstones": {}},
        {"live": {"a": [("alice", 1)]}, "tombstones": {}},
        {"live": {"a\nb": [["alice", 1]]}, "tombstones": {}},
        {"live": {"a": [["alice", 1]]}, "tombstones": {"a": [["alice", 1]]}},
    ],
)
def test_from_json_rejects_malformed(data: Any) -> None:
    with pytest.raises(InvalidInput):
        ORSet.from_json(data)


def test_copy_is_independent() -> None:
    tags = orset("a")
    twin = tags.copy()
    twin.add("b", "bob")
    twin.remove("a")
    assert tags.elements() == ["a"]
    assert twin.elements() == ["b"]
    assert tags != twin
    assert tags != ["a"]
