"""The RGA text type: seed cases E-1…E-7, its JSON form, editing as a file, unicode, a real editing trace."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest

from omxfs.crdt.base import CRDT
from omxfs.crdt.rga import RGA, RGABase
from omxfs.errors import InvalidInput

TRACE = Path(__file__).resolve().parents[2] / "data" / "automerge-paper.json.gz"  # in the repository: never skipped


def text_of(text: str, replica: str = "alice") -> RGA:
    rga = RGA()
    rga.insert(0, text, replica)
    return rga


def merged(a: RGA, b: RGA) -> RGA:
    out = a.copy()
    out.merge(b)
    return out


def char_ids(base: RGABase) -> list[tuple[str, int]]:
    return [(rep, ctr + i) for rep, ctr, n in zip(base.reps, base.ctrs, base.lens, strict=True) for i in range(n)]


# -- seed cases -------------------------------------------------------------------------------------------


def test_E_1_insert_into_empty() -> None:
    rga = RGA()
    rga.insert(0, "Hello", "alice")
    assert rga.text() == "Hello"
    assert len(rga) == 5


def test_E_2_insert_at_end() -> None:
    rga = text_of("Hello")
    rga.insert(5, " World", "alice")
    assert rga.text() == "Hello World"
    assert len(rga) == 11


def test_E_3_delete_range_returns_count() -> None:
    rga = text_of("Hello World")
    assert rga.delete(5, 11) == 6
    assert rga.text() == "Hello"
    assert rga.delete(3, 3) == 0
    assert rga.delete(-5, 1) == 1
    assert rga.delete(2, 99) == 2
    assert rga.text() == "el"


def test_E_4_replace() -> None:
    rga = text_of("Hello")
    rga.replace(0, 5, "Hi", "alice")
    assert rga.text() == "Hi"
    assert len(rga) == 2


def test_E_5_concurrent_inserts_at_different_places_converge() -> None:
    start = text_of("AC", "carol")
    alice, bob = start.copy(), start.copy()
    alice.insert(1, "B", "alice")
    bob.insert(2, "D", "bob")
    assert merged(alice, bob).text() == "ABCD"
    assert merged(bob, alice).text() == "ABCD"
    alice.merge(bob)
    bob.merge(alice)
    assert alice.text() == bob.text() == "ABCD"
    assert alice == bob


def test_E_6_concurrent_inserts_at_the_same_place_converge() -> None:
    start = text_of("AC", "carol")
    alice, bob = start.copy(), start.copy()
    alice.insert(1, "X", "alice")
    bob.insert(1, "Y", "bob")
    alice_first, bob_first = merged(alice, bob), merged(bob, alice)
    assert alice_first.text() == bob_first.text()
    assert alice_first.to_json() == bob_first.to_json()
    text = alice_first.text()
    assert sorted(text) == ["A", "C", "X", "Y"]
    assert text[0] == "A" and text[-1] == "C"
    # equal counters: the higher replica name goes first
    assert text == "AYXC"


def test_E_7_insert_past_the_end_is_clamped() -> None:
    rga = text_of("Hi")
    rga.insert(999, "!", "alice")
    assert rga.text() == "Hi!"
    rga.insert(-3, "¡", "alice")
    assert rga.text() == "¡Hi!"


# -- ordering rules -----------------------------------------------------------------------------------------


def test_siblings_go_by_counter_then_replica_highest_first() -> None:
    start = text_of("ab", "carol")  # counters 1, 2
    alice, bob = start.copy(), start.copy()
    alice.insert(1, "x", "alice")  # counter 3
    bob.insert(0, "zz", "bob")  # counters 3, 4: bob learns nothing of alice
    bob.insert(3, "y", "bob")  # counter 5, after "a" like alice's x: greater, so first
    assert merged(alice, bob).text() == merged(bob, alice).text() == "zzayxb"


def test_counters_are_lamport() -> None:
    alice = text_of("abc", "alice")
    bob = RGA()
    bob.merge(alice)
    bob.insert(3, "d", "bob")
    assert bob.to_json()["runs"][-1] == ["d", 1, 4]


def test_inserting_nothing_changes_nothing() -> None:
    rga = text_of("abc")
    before = rga.to_json()
    rga.insert(1, "", "bob")
    assert rga.to_json() == before
    assert "bob" not in rga.to_json()["reps"]


def test_protocol_and_plain_value() -> None:
    rga = text_of("x\ny")
    assert isinstance(rga, CRDT)
    assert RGA.TYPE == "rga"
    assert rga.value() == rga.render() == "x\ny"
    assert RGA().text() == ""
    assert RGA() == RGA()
    assert rga != text_of("x\ny", "bob")
    assert rga != "x\ny"
    assert "RGA(" in repr(rga)


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.insert("1", "a", "alice"),
        lambda r: r.insert(True, "a", "alice"),
        lambda r: r.insert(0, b"a", "alice"),
        lambda r: r.insert(0, "a", ""),
        lambda r: r.insert(0, "a", None),
        lambda r: r.insert(0, "a\ud800", "alice"),  # a lone surrogate cannot be written out
        lambda r: r.write_text(r.base(), "\udfff", "alice"),
        lambda r: r.delete(0, 1.5),
        lambda r: r.replace(0, 1, 5, "alice"),
        lambda r: r.merge(object()),
    ],
)
def test_bad_arguments_are_invalid_input_and_change_nothing(call: Any) -> None:
    rga = text_of("abc")
    before = rga.to_json()
    with pytest.raises(InvalidInput):
        call(rga)
    assert rga.to_json() == before


# -- JSON ---------------------------------------------------------------------------------------------------


def test_json_round_trip_keeps_state_and_drops_deleted_content() -> None:
    alice = text_of("Hello World")
    bob = alice.copy()
    alice.delete(0, 6)
    bob.insert(5, ",", "bob")
    bob.insert(0, "«", "bob")
    alice.merge(bob)
    data = json.loads(json.dumps(alice.to_json()))
    again = RGA.from_json(data)
    assert again == alice
    assert again.text() == alice.text() == "«,World"  # bob's comma outlives the "o" it followed
    assert "Hello" not in json.dumps(data)
    assert again.to_json() == data
    # the rebuilt state works: same edits give the same states
    again.insert(1, "!", "carol")
    alice.insert(1, "!", "carol")
    assert again == alice


def test_json_is_canonical_whatever_the_history() -> None:
    typed = RGA()
    for i, char in enumerate("abcdef"):
        typed.insert(i, char, "alice")
    typed.delete(1, 2)
    typed.delete(1, 3)  # "c" and "d" were deleted on their own, "b" before: one tombstone run of 3
    pasted = text_of("abcdef")
    pasted.delete(1, 4)
    assert typed.to_json() == pasted.to_json() == {"reps": ["alice"], "runs": [["a", 0, 1], [3], ["ef"]]}
    # merging pieces back together gives the same runs again
    assert merged(typed, pasted).to_json() == pasted.to_json()


def test_json_encodes_origins_compactly() -> None:
    rga = text_of("ab", "alice")  # a1 b2
    rga.insert(0, "x", "bob")  # x3, origin the start
    rga.insert(3, "y", "bob")  # y4, origin b2
    rga.insert(2, "z", "carol")  # z5, origin a1
    assert rga.text() == "xazby"
    assert rga.to_json() == {
        "reps": ["bob", "alice", "carol"],
        "runs": [
            ["x", 0, 3],  # first, so its origin is the start
            ["a", 1, 1, None],  # the start again, though not first
            ["z", 2, 5],  # its origin "a" is just before it
            ["b", 1, 2, 1, 1],  # its origin is "a", not "z"
            ["y", 0, 4],
        ],
    }
    assert RGA.from_json(rga.to_json()) == rga


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"reps": []},
        {"reps": [], "runs": [], "extra": 1},
        {"reps": "a", "runs": []},
        {"reps": ["a"], "runs": {}},
        {"reps": [""], "runs": []},
        {"reps": ["a", "a"], "runs": []},
        {"reps": ["a"], "runs": [["x"]]},  # continues nothing
        {"reps": ["a"], "runs": ["x"]},
        {"reps": ["a"], "runs": [["x", 0]]},
        {"reps": ["a"], "runs": [["", 0, 1]]},  # empty text
        {"reps": ["a"], "runs": [["\ud800", 0, 1]]},  # not valid Unicode
        {"reps": ["a"], "runs": [[0, 0, 1]]},  # empty tombstone
        {"reps": ["a"], "runs": [[True, 0, 1]]},
        {"reps": ["a"], "runs": [[1.0, 0, 1]]},
        {"reps": ["a"], "runs": [["x", 1, 1]]},  # no such replica
        {"reps": ["a"], "runs": [["x", -1, 1]]},
        {"reps": ["a"], "runs": [["x", 0, 0]]},  # counters start at 1
        {"reps": ["a"], "runs": [["x", 0, "1"]]},
        {"reps": ["a"], "runs": [["x", 0, 2**60]]},
        {"reps": ["a"], "runs": [["xy", 0, 2**53]]},  # its last counter is too big
        {"reps": ["a"], "runs": [["x", 0, 1, 0]]},  # 4 values end in null
        {"reps": ["a"], "runs": [["x", 0, 1], ["y", 0, 1, None]]},  # duplicate id
        {"reps": ["a"], "runs": [["xy", 0, 1], ["z", 0, 2, None]]},  # overlapping ids
        {"reps": ["a"], "runs": [["x", 0, 1], ["y", 0, 5, 0, 3]]},  # unknown origin
        {"reps": ["a"], "runs": [["x", 0, 2, 0, 1], ["y", 0, 1, None]]},  # origin after its element
        {"reps": ["a"], "runs": [["x", 0, 1], ["y", 0, 3, None]]},  # siblings ascending
        {"reps": ["a", "b"], "runs": [["x", 0, 5], ["y", 1, 3]]},  # counter not above the origin's
        {"reps": ["a", "b"], "runs": [["ab", 0, 1], ["y", 1, 5, 0, 1], ["z", 1, 3, 0, 1]]},  # out of order
    ],
)
def test_from_json_rejects_malformed_states(data: Any) -> None:
    with pytest.raises(InvalidInput):
        RGA.from_json(data)


def test_from_json_accepts_runs_that_are_not_maximal() -> None:
    rga = RGA.from_json({"reps": ["a"], "runs": [["d", 0, 7], ["ab", 0, 1, None], ["c"], [2], [1]]})
    assert rga.text() == "dabc"
    assert rga.to_json() == {"reps": ["a"], "runs": [["d", 0, 7], ["abc", 0, 1, None], [3]]}


def test_merge_refuses_states_that_disagree_about_an_id() -> None:
    tail_only = RGA.from_json({"reps": ["a"], "runs": [["y", 0, 2]]})  # a2, typed at the start
    whole = RGA.from_json({"reps": ["a"], "runs": [["xy", 0, 1]]})  # a2 again, but typed after a1
    before = tail_only.to_json()
    with pytest.raises(InvalidInput):
        tail_only.merge(whole)
    assert tail_only.to_json() == before


def test_merge_into_an_empty_replica_is_a_copy() -> None:
    doc = text_of("abc")
    doc.delete(1, 2)
    empty = RGA()
    empty.merge(doc)
    assert empty == doc
    empty.insert(1, "x", "bob")
    assert doc.text() == "ac"  # independent
    doc.merge(empty)
    assert doc.text() == "axc"


# -- editing as a file ------------------------------------------------------------------------------------------


def test_two_writers_from_one_base_keep_both_edits() -> None:
    doc = text_of("hello world")
    base = doc.base()
    brave, bang = doc.copy(), doc.copy()
    brave.write_text(base, "hello brave world", "alice")
    bang.write_text(base, "hello world!", "bob")
    assert merged(brave, bang).text() == merged(bang, brave).text() == "hello brave world!"
    # the same two writes applied one after the other to one replica
    doc.write_text(base, "hello brave world", "alice")
    doc.write_text(base, "hello world!", "bob")
    assert doc.text() == "hello brave world!"


def test_write_text_keeps_concurrent_deletes_and_inserts() -> None:
    doc = text_of("one two three")
    base = doc.base()
    other = doc.copy()
    other.delete(4, 8)  # "two " gone elsewhere
    other.insert(0, ">", "bob")
    doc.merge(other)
    doc.write_text(base, "one two three four", "alice")  # the writer still saw "two"
    assert doc.text() == ">one three four"


def test_write_text_with_a_base_read_from_another_replica() -> None:
    reader = text_of("abc")
    base = reader.base()
    writer = RGA()
    writer.merge(reader)
    writer.insert(3, "d", "bob")
    writer.write_text(base, "aXc", "carol")
    assert writer.text() == "aXcd"
    with pytest.raises(InvalidInput):
        RGA().write_text(base, "aXc", "carol")  # ids it never had
    stranger = text_of("abc", "zed")
    before = stranger.to_json()
    with pytest.raises(InvalidInput):
        stranger.write_text(base, "", "carol")
    assert stranger.to_json() == before
    with pytest.raises(InvalidInput):
        stranger.write_text({"text": "abc"}, "x", "carol")
    with pytest.raises(InvalidInput):
        stranger.write_text(stranger.base(), None, "carol")  # type: ignore[arg-type]


def test_write_text_diffs_by_line_and_keeps_untouched_lines() -> None:
    lines = [f"line {i} of the file\n" for i in range(1, 101)]
    doc = text_of("".join(lines))
    base = doc.base()
    edited = ["LINE 1 of the file\n", *lines[1:99], "line 100 of the file, edited\n"]
    other = doc.copy()
    other.insert(doc.text().index("line 50") + 5, "fifty ", "bob")
    doc.write_text(base, "".join(edited), "alice")
    assert doc.text() == "".join(edited)
    after = doc.base()
    # lines 2-99 keep their characters' identities: nothing was deleted and retyped
    first, last = len(lines[0]), len("".join(lines[:99]))
    assert char_ids(after)[first:last] == char_ids(base)[first:last]
    assert len(doc.to_json()["runs"]) <= 6
    doc.merge(other)
    assert "line fifty 50 of the file" in doc.text()
    assert doc.text().startswith("LINE 1 of") and doc.text().endswith("line 100 of the file, edited\n")


def test_write_text_inside_a_line_replaces_only_what_changed() -> None:
    doc = text_of("alpha\nthe quick brown fox\nomega\n")
    base = doc.base()
    doc.write_text(base, "alpha\nthe quick red fox\nomega\nnew\n", "alice")
    assert doc.text() == "alpha\nthe quick red fox\nomega\nnew\n"
    deleted = [run[0] for run in doc.to_json()["runs"] if isinstance(run[0], int)]
    assert deleted == [len("brown")]


def test_write_text_refuses_a_base_it_cannot_place() -> None:
    reader = text_of("abc")
    base = reader.base()
    stranger = text_of("abc", "zed")
    for forged in (
        RGABase("abcd", base.reps, base.ctrs, base.lens),
        RGABase("abc", base.reps, base.ctrs, (*base.lens, 1)),
    ):
        with pytest.raises(InvalidInput):
            reader.write_text(forged, "x", "carol")
    with pytest.raises(InvalidInput):
        stranger.write_text(base, "abXc", "carol")  # only an insertion, after a "b" it never had
    assert stranger.text() == "abc"
    assert reader.text() == "abc"


def test_base_joins_runs_of_consecutive_ids() -> None:
    rga = RGA.from_json({"reps": ["a"], "runs": [["d", 0, 9], ["ab", 0, 1, None], ["c"]]})
    assert rga.text() == "dabc"
    base = rga.base()
    assert (base.reps, base.ctrs, base.lens) == (("a", "a"), (9, 1), (1, 3))


def test_base_is_cached_until_a_change() -> None:
    doc = text_of("abc")
    assert doc.base() is doc.base()
    base = doc.base()
    doc.insert(1, "x", "alice")
    assert doc.base() is not base
    assert base.text == "abc"
    assert doc.base().text == "axbc"


# -- unicode and scale ---------------------------------------------------------------------------------------


def test_unicode_characters_count_as_one() -> None:
    doc = text_of("a😀中b")
    assert len(doc) == 4
    assert doc.delete(1, 2) == 1
    assert doc.text() == "a中b"
    doc.insert(2, "🎉", "bob")
    assert doc.text() == "a中🎉b"
    again = RGA.from_json(json.loads(json.dumps(doc.to_json())))
    assert again == doc and again.text() == "a中🎉b"
    base = doc.base()
    doc.write_text(base, "a中🎉🎉b\U0001f600", "carol")
    assert doc.text() == "a中🎉🎉b😀"


def test_merge_of_a_thousand_concurrent_edits() -> None:
    rng = random.Random(7)
    words = [rng.choice(["lorem", "ipsum", "dolor", "sit", "amet\n"]) for _ in range(1200)]
    alice = text_of(" ".join(words))
    bob = alice.copy()
    for _ in range(1000):
        if rng.random() < 0.6:
            bob.insert(rng.randint(0, len(bob)), rng.choice(["x", "yz", "😀"]), "bob")
        else:
            start = rng.randrange(len(bob))
            bob.delete(start, start + rng.randint(1, 3))
    merged_alice = merged(alice, bob)
    assert merged_alice.text() == bob.text()
    assert merged_alice == bob
    for _ in range(200):  # alice edits too: both directions still agree
        alice.insert(rng.randint(0, len(alice)), "A", "alice")
        alice.delete(rng.randrange(len(alice)), len(alice) - rng.randrange(len(alice)))
    assert merged(alice, bob) == merged(bob, alice)


def test_E_trace_replay_automerge_paper() -> None:
    with gzip.open(TRACE) as f:
        trace = json.load(f)
    doc = RGA()
    for txn in trace["txns"]:
        for pos, deleted, inserted in txn["patches"]:
            if deleted:
                doc.delete(pos, pos + deleted)
            if inserted:
                doc.insert(pos, inserted, "author")
    assert doc.text() == trace["endContent"]
    assert len(doc) == len(trace["endContent"]) == 104_852
    again = RGA.from_json(json.loads(json.dumps(doc.to_json())))
    assert again.text() == trace["endContent"]
