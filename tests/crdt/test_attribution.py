"""``new_replicas``: who made the operations one state has and another lacks (what a merge would add).

The store refuses a state from elsewhere whose new operations are another agent's; these tests pin what each
type counts as a new operation, and that removals (tombstones: what, not who) are not attributed.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omxfs.crdt import RGA, Document, LWWMap, LWWRegister, ORSet, PNCounter
from omxfs.errors import InvalidInput


def test_register_counts_only_a_write_that_would_win() -> None:
    mine = LWWRegister()
    mine.set("a", "alice", 10)
    theirs = mine.copy()
    assert mine.new_replicas(theirs) == set()
    theirs.set("b", "bob", 20)
    assert mine.new_replicas(theirs) == {"bob"}
    older = LWWRegister()
    older.set("old", "bob", 5)
    assert mine.new_replicas(older) == set()  # loses to what is here: merging it adds nothing


def test_map_counts_winning_key_writes_and_deletes() -> None:
    mine = LWWMap()
    mine.set("k", 1, "alice", 10)
    theirs = mine.copy()
    theirs.set("j", 2, "bob", 11)
    theirs.delete("k", "carol", 12)
    assert mine.new_replicas(theirs) == {"bob", "carol"}
    mine.merge(theirs)
    assert mine.new_replicas(theirs) == set()


def test_or_set_counts_unknown_tags_not_removals() -> None:
    mine = ORSet()
    mine.add("x", "alice")
    theirs = mine.copy()
    theirs.remove("x")  # a tombstone of a known tag: not attributed
    assert mine.new_replicas(theirs) == set()
    theirs.add("y", "bob")
    theirs.add("z", "carol")
    theirs.remove("z")  # an add never seen here, even if removed since, is carol's
    assert mine.new_replicas(theirs) == {"bob", "carol"}


def test_counter_counts_tallies_above_the_known_ones() -> None:
    mine = PNCounter()
    mine.increment("alice", 4)
    theirs = mine.copy()
    theirs.increment("bob", 1)
    theirs.decrement("carol", 2)
    assert mine.new_replicas(theirs) == {"bob", "carol"}
    behind = PNCounter()
    behind.increment("alice", 3)
    assert mine.new_replicas(behind) == set()
    ahead = mine.copy()
    ahead.increment("alice", 1_000_000)
    assert mine.new_replicas(ahead) == {"alice"}


def test_rga_counts_new_elements_not_deletions() -> None:
    mine = RGA()
    mine.insert(0, "hello", "alice")
    theirs = mine.copy()
    theirs.delete(0, 2)
    assert mine.new_replicas(theirs) == set()
    theirs.insert(3, "XY", "bob")
    assert mine.new_replicas(theirs) == {"bob"}
    mine.insert(5, "!", "alice")  # mine moved on too: only what the other has and mine lacks counts
    assert mine.new_replicas(theirs) == {"bob"}
    assert theirs.new_replicas(mine) == {"alice"}


def test_document_unites_its_fields_and_refuses_another_document() -> None:
    schema = {"title": "lww_register", "votes": "pn_counter", "body": "rga"}
    mine = Document("board", schema)
    theirs = mine.copy()
    theirs.typed("title", LWWRegister).set("forged", "alice+0bad", 1)
    theirs.typed("votes", PNCounter).increment("bob+1", 1_000_000)
    assert mine.new_replicas(theirs) == {"alice+0bad", "bob+1"}
    with pytest.raises(InvalidInput):
        mine.new_replicas(Document("other", schema))
    with pytest.raises(InvalidInput):
        mine.new_replicas(Document("board", {"title": "rga"}))


def test_type_mismatch_is_refused() -> None:
    with pytest.raises(InvalidInput):
        RGA().new_replicas(PNCounter())  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        ORSet().new_replicas(LWWMap())  # type: ignore[arg-type]


OPS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(["title", "body", "tags", "votes", "conf"]),
        st.integers(0, 5),
    ),
    max_size=25,
)


def _apply(doc: Document, replica: str, field: str, n: int) -> None:
    if field == "title":
        doc.typed("title", LWWRegister).set(f"t{n}", replica, n)
    elif field == "body":
        rga = doc.typed("body", RGA)
        if n % 3 == 0 and len(rga):
            rga.delete(n % len(rga), n % len(rga) + 1)
        else:
            rga.insert(n, f"{n}", replica)
    elif field == "tags":
        tags = doc.typed("tags", ORSet)
        tags.remove(f"e{n}") if n % 2 else tags.add(f"e{n}", replica)
    elif field == "votes":
        doc.typed("votes", PNCounter).add(replica, n - 2)
    else:
        doc.typed("conf", LWWMap).set(f"k{n % 2}", n, replica, n)


SCHEMA = {"title": "lww_register", "body": "rga", "tags": "or_set", "votes": "pn_counter", "conf": "lww_map"}


@settings(max_examples=150, deadline=None, database=None)
@given(common=OPS, mine_ops=OPS, their_ops=OPS)
def test_new_operations_are_only_the_other_replicas_and_none_once_merged(
    common: list[tuple[str, str, int]], mine_ops: list[tuple[str, str, int]], their_ops: list[tuple[str, str, int]]
) -> None:
    """Two replicas from a common history: what one has beyond the other is all its own, and a merge absorbs it."""
    base = Document("d", SCHEMA)
    for replica, field, n in common:
        _apply(base, replica, field, n)
    mine, theirs = base.copy(), base.copy()
    for _, field, n in mine_ops:
        _apply(mine, "mine", field, n)
    for _, field, n in their_ops:
        _apply(theirs, "theirs", field, n)
    assert mine.new_replicas(theirs) <= {"theirs"}
    assert theirs.new_replicas(mine) <= {"mine"}
    assert base.new_replicas(mine) <= {"mine"}
    mine.merge(theirs)
    assert mine.new_replicas(theirs) == set()
    assert mine.new_replicas(base) == set()
