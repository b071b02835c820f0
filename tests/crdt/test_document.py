"""Document: seeds I-1, I-2, I-4, I-5 (I-3, a missing document, is the store's), schemas, merge, JSON form."""

from __future__ import annotations

import json
from typing import Any

import pytest

import omxfs.crdt
from omxfs.crdt import CRDT, RGA, TYPES, Document, LWWMap, LWWRegister, ORSet, PNCounter
from omxfs.errors import InvalidInput, NotFound

BOARD = {
    "title": "lww_register",
    "body": "rga",
    "members": "or_set",
    "settings": "lww_map",
    "view_count": "pn_counter",
}


def filled_board() -> Document:
    board = Document("board", BOARD)
    board.typed("title", LWWRegister).set("看板", "alice")
    board.typed("body", RGA).insert(0, "描述", "alice")
    members = board.typed("members", ORSet)
    members.add("alice", "alice")
    members.add("bob", "bob")
    board.typed("settings", LWWMap).set("theme", "dark", "alice")
    board.typed("view_count", PNCounter).increment("alice", 5)
    return board


def test_package_exports_the_types_deliberately() -> None:
    assert set(omxfs.crdt.__all__) == {
        "CRDT",
        "TYPES",
        "Document",
        "LWWRegister",
        "RGA",
        "ORSet",
        "LWWMap",
        "PNCounter",
    }
    expected = {
        "lww_register": LWWRegister,
        "rga": RGA,
        "or_set": ORSet,
        "lww_map": LWWMap,
        "pn_counter": PNCounter,
    }
    assert expected == TYPES
    for name, cls in TYPES.items():
        assert name == cls.TYPE
        assert isinstance(cls(), CRDT)


def test_I_1_create_document_with_five_field_types() -> None:
    board = Document("board", BOARD)
    assert board.doc_id == "board"
    assert board.schema == BOARD
    assert len(board.schema) == 5
    for name, type_name in BOARD.items():
        field = board.field(name)
        assert type_name == field.TYPE
        assert isinstance(field, TYPES[type_name])


def test_I_2_snapshot_has_values_and_types() -> None:
    snapshot = filled_board().snapshot()
    assert snapshot == {
        "doc_id": "board",
        "fields": {
            "title": "看板",
            "body": "描述",
            "members": ["alice", "bob"],
            "settings": {"theme": "dark"},
            "view_count": 5,
        },
        "field_types": BOARD,
    }
    json.dumps(snapshot)  # plain JSON, as .snapshot.json


def test_I_4_unknown_field_is_not_found() -> None:
    board = Document("board", BOARD)
    with pytest.raises(NotFound, match="no field 'color' in document 'board'"):
        board.field("color")
    with pytest.raises(NotFound):
        board.typed("color", LWWRegister)


def test_I_5_operation_on_a_field_of_another_type_is_refused() -> None:
    board = Document("board", BOARD)
    with pytest.raises(InvalidInput, match="field 'title' is lww_register, not rga"):
        board.typed("title", RGA)
    assert isinstance(board.typed("title", LWWRegister), LWWRegister)
    assert isinstance(board.typed("body", RGA), RGA)


def test_field_is_live() -> None:
    board = Document("board", BOARD)
    board.field("view_count").write_text(0, "+2", "alice")
    assert board.snapshot()["fields"]["view_count"] == 2


def test_schema_is_a_copy() -> None:
    board = Document("board", BOARD)
    board.schema["extra"] = "rga"
    assert board.schema == BOARD
    with pytest.raises(NotFound):
        board.field("extra")


def test_schema_given_is_copied() -> None:
    schema = {"title": "lww_register"}
    doc = Document("d", schema)
    schema["other"] = "rga"
    assert doc.schema == {"title": "lww_register"}


@pytest.mark.parametrize(
    "name",
    ["", ".hidden", "-dash", "a/b", "a b", "ä", "a\n", "x" * 129, "..", None, 3],
)
def test_bad_field_names_are_refused(name: Any) -> None:
    with pytest.raises(InvalidInput, match="invalid field name"):
        Document("d", {name: "lww_register"})


@pytest.mark.parametrize("name", ["a", "_", "0", "title.v2", "a-b_c", "x" * 128])
def test_good_field_names(name: str) -> None:
    assert Document("d", {name: "pn_counter"}).schema == {name: "pn_counter"}


def test_unknown_type_names_the_field() -> None:
    with pytest.raises(InvalidInput, match=r"field 'title' has unknown type 'text'"):
        Document("d", {"title": "text"})
    with pytest.raises(InvalidInput, match="field 'title' has unknown type"):
        Document("d", {"title": None})  # type: ignore[dict-item]


@pytest.mark.parametrize("schema", [{}, None, [("title", "rga")], "title=rga"])
def test_schema_must_be_a_non_empty_mapping(schema: Any) -> None:
    with pytest.raises(InvalidInput):
        Document("d", schema)


@pytest.mark.parametrize("doc_id", ["", ".x", "a/b", None, "x" * 129])
def test_bad_doc_ids_are_refused(doc_id: Any) -> None:
    with pytest.raises(InvalidInput, match="invalid document id"):
        Document(doc_id, BOARD)


def test_merge_merges_every_field() -> None:
    common = Document("board", BOARD)
    alice, bob = common.copy(), common.copy()
    alice.typed("members", ORSet).add("alice", "alice")
    alice.typed("view_count", PNCounter).increment("alice", 2)
    alice.typed("body", RGA).insert(0, "hello", "alice")
    bob.typed("members", ORSet).add("bob", "bob")
    bob.typed("view_count", PNCounter).increment("bob", 3)
    bob.typed("settings", LWWMap).set("lang", "en", "bob")
    ab, ba = alice.copy(), bob.copy()
    ab.merge(bob)
    ba.merge(alice)
    assert ab == ba
    assert ab.to_json() == ba.to_json()
    fields = ab.snapshot()["fields"]
    assert fields["members"] == ["alice", "bob"]
    assert fields["view_count"] == 5
    assert fields["body"] == "hello"
    assert fields["settings"] == {"lang": "en"}


@pytest.mark.parametrize(
    "other",
    [
        Document("other", BOARD),
        Document("board", {**BOARD, "extra": "rga"}),
        Document("board", {**BOARD, "title": "rga"}),
    ],
)
def test_merge_of_another_document_is_refused_and_changes_nothing(other: Document) -> None:
    board = filled_board()
    before = board.to_json()
    other_fields = set(other.schema) & set(BOARD)
    for name in other_fields:
        if other.schema[name] == "pn_counter":
            other.typed(name, PNCounter).increment("mallory", 100)
    with pytest.raises(InvalidInput):
        board.merge(other)
    assert board.to_json() == before


def test_merge_refuses_a_non_document() -> None:
    with pytest.raises(InvalidInput):
        filled_board().merge(LWWRegister())  # type: ignore[arg-type]


def test_json_round_trip() -> None:
    board = filled_board()
    data = json.loads(json.dumps(board.to_json()))
    assert set(data) == {"doc_id", "schema", "fields"}
    assert data["schema"] == BOARD
    again = Document.from_json(data)
    assert again == board
    assert again.to_json() == board.to_json()
    assert again.snapshot() == board.snapshot()


def good_state() -> dict[str, Any]:
    return filled_board().to_json()


def _without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


@pytest.mark.parametrize(
    "mangle",
    [
        lambda d: None,
        lambda d: [],
        lambda d: "garbage",
        lambda d: _without(d, "fields"),
        lambda d: {**d, "extra": 1},
        lambda d: {**d, "doc_id": ""},
        lambda d: {**d, "doc_id": 7},
        lambda d: {**d, "schema": {}},
        lambda d: {**d, "schema": {**d["schema"], "title": "nope"}},
        lambda d: {**d, "schema": {**d["schema"], "title": "rga"}},
        lambda d: {**d, "fields": []},
        lambda d: {**d, "fields": _without(d["fields"], "body")},
        lambda d: {**d, "fields": {**d["fields"], "color": {}}},
        lambda d: {**d, "fields": {**d["fields"], "view_count": {"p": {"alice": -5}, "n": {}}}},
        lambda d: {**d, "fields": {**d["fields"], "members": None}},
    ],
)
def test_from_json_rejects_malformed(mangle: Any) -> None:
    with pytest.raises(InvalidInput):
        Document.from_json(mangle(good_state()))


def test_copy_is_independent() -> None:
    board = filled_board()
    twin = board.copy()
    twin.typed("view_count", PNCounter).increment("bob")
    twin.typed("members", ORSet).remove("alice")
    assert board.snapshot()["fields"]["view_count"] == 5
    assert board.snapshot()["fields"]["members"] == ["alice", "bob"]
    assert board != twin
    assert board != board.to_json()


def test_equality_is_by_state() -> None:
    board = filled_board()
    assert board == board.copy()
    assert Document("a", {"x": "rga"}) != Document("b", {"x": "rga"})
    assert Document("a", {"x": "rga"}) != Document("a", {"x": "lww_register"})


def test_a_fork_copies_only_the_fields_it_changes() -> None:
    doc = filled_board()
    before = doc.to_json()
    fork = doc.fork()
    assert all(fork.shares(name, doc) for name in doc.schema)
    assert fork.field_json("body") == doc.field_json("body")  # a read of the JSON does not take the field
    assert fork.shares("body", doc)
    fork.typed("view_count", PNCounter).increment("bob", 3)
    fork.merge(doc)  # a field shared with the other document is the same state: nothing to copy
    assert not fork.shares("view_count", doc) and fork.shares("body", doc)
    assert doc.to_json() == before  # the origin never changes
    assert fork.field("view_count").value() == doc.field("view_count").value() + 3
    fork.settle()
    assert fork.field("body") is doc.field("body")  # settled: read in place, like its origin
