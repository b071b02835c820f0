"""Property tests of the RGA: the merge laws, convergence under messy delivery, and ``write_text``.

States come from random edit histories on a few replicas. Besides checking that replicas agree, every
history is replayed on ``Model``, a deliberately naive RGA (a flat list of one-character elements, linear
scans, the textbook integration rule), so the fast structure (runs, blocks, cursor, id index) is checked
against the rule itself and not only against itself.
"""

from __future__ import annotations

import json
import random
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omxfs.crdt import rga as rga_module
from omxfs.crdt.rga import RGA
from omxfs.crdt.text_diff import diff_spans

Id = tuple[str, int]


class Model:
    """One element per character: ``[replica, counter, origin, char, deleted]`` in document order."""

    def __init__(self) -> None:
        self.elems: list[list[Any]] = []
        self.max = 0

    def copy(self) -> Model:
        twin = Model()
        twin.elems = [list(e) for e in self.elems]
        twin.max = self.max
        return twin

    def text(self) -> str:
        return "".join(e[3] for e in self.elems if not e[4])

    def _visible(self) -> list[list[Any]]:
        return [e for e in self.elems if not e[4]]

    def _integrate(self, rep: str, ctr: int, origin: Id | None, char: str, deleted: bool) -> None:
        i = 0
        if origin is not None:
            i = next(k for k, e in enumerate(self.elems) if (e[0], e[1]) == origin) + 1
        while i < len(self.elems) and (self.elems[i][1], self.elems[i][0]) > (ctr, rep):
            i += 1
        self.elems.insert(i, [rep, ctr, origin, char, deleted])

    def insert(self, pos: int, text: str, rep: str) -> None:
        visible = self._visible()
        pos = max(0, min(pos, len(visible)))
        origin: Id | None = (visible[pos - 1][0], visible[pos - 1][1]) if pos else None
        for char in text:
            self.max += 1
            self._integrate(rep, self.max, origin, char, False)
            origin = (rep, self.max)

    def delete(self, start: int, end: int) -> None:
        for e in self._visible()[max(start, 0) : max(end, 0)]:
            e[4] = True

    def merge(self, other: Model) -> None:
        mine = {(e[0], e[1]): e for e in self.elems}
        for e in sorted(other.elems, key=lambda e: (e[1], e[0])):
            if (e[0], e[1]) in mine:
                mine[(e[0], e[1])][4] |= e[4]
            else:
                self._integrate(e[0], e[1], e[2], e[3], e[4])
        self.max = max(self.max, other.max)

    def elements(self) -> list[tuple[str, int, bool]]:
        return [(e[0], e[1], e[4]) for e in self.elems]


def elements(rga: RGA) -> list[tuple[str, int, bool]]:
    """The element sequence of an RGA, read back from its JSON (which also exercises ``to_json``)."""
    data = rga.to_json()
    out: list[tuple[str, int, bool]] = []
    for run in data["runs"]:
        payload = run[0]
        if len(run) == 1:
            rep, ctr = out[-1][0], out[-1][1] + 1
        else:
            rep, ctr = data["reps"][run[1]], run[2]
        n = len(payload) if isinstance(payload, str) else payload
        out.extend((rep, ctr + i, not isinstance(payload, str)) for i in range(n))
    return out


REPLICAS = ["alice", "bob", "carol"]
ALPHABET = "ab\n😀中"

edit = st.one_of(
    st.tuples(st.just("ins"), st.integers(0, 2), st.integers(-1, 30), st.text(ALPHABET, min_size=1, max_size=4)),
    st.tuples(st.just("del"), st.integers(0, 2), st.integers(-1, 30), st.integers(0, 5)),
    st.tuples(st.just("send"), st.integers(0, 2), st.integers(0, 2), st.booleans()),
)


def run_history(ops: list[tuple[Any, ...]], partition_until: int = 0) -> tuple[list[RGA], list[Model]]:
    """Apply a history to 3 RGA replicas and 3 models side by side, checking texts after every step.

    ``send`` merges one replica's state into another's, either the current state or (flag set) an older
    snapshot, so deliveries come late, twice and out of order. Before step ``partition_until`` the replica
    ``carol`` is cut off from the others.
    """
    rgas = [RGA() for _ in REPLICAS]
    models = [Model() for _ in REPLICAS]
    history: list[list[tuple[RGA, Model]]] = [[] for _ in REPLICAS]
    for step, (kind, i, a, b) in enumerate(ops):
        if kind == "ins":
            rgas[i].insert(a, b, REPLICAS[i])
            models[i].insert(a, b, REPLICAS[i])
        elif kind == "del":
            rgas[i].delete(a, a + b)
            models[i].delete(a, a + b)
        else:
            if step < partition_until and (i == 2) != (a == 2):
                continue
            old = history[i][len(history[i]) // 2] if b and history[i] else (rgas[i], models[i])
            rgas[a].merge(old[0])
            models[a].merge(old[1])
        history[i].append((rgas[i].copy(), models[i].copy()))
        assert rgas[i].text() == models[i].text()
        assert len(rgas[i]) == len(models[i].text())
    for rga, model in zip(rgas, models, strict=True):
        assert rga.text() == model.text()
        assert elements(rga) == model.elements()
    return rgas, models


histories = st.lists(edit, max_size=40)


def merged(*states: RGA) -> RGA:
    out = states[0].copy()
    for state in states[1:]:
        out.merge(state)
    return out


@settings(max_examples=150, deadline=None)
@given(histories)
def test_L_1_rga_commutativity(ops: list[tuple[Any, ...]]) -> None:
    (a, b, _), _ = run_history(ops)
    assert merged(a, b).to_json() == merged(b, a).to_json()
    assert merged(a, b).text() == merged(b, a).text()


@settings(max_examples=150, deadline=None)
@given(histories)
def test_L_2_rga_associativity(ops: list[tuple[Any, ...]]) -> None:
    (a, b, c), _ = run_history(ops)
    left = merged(merged(a, b), c)
    right = merged(a, merged(b, c))
    assert left.to_json() == right.to_json()
    assert left == right


@settings(max_examples=150, deadline=None)
@given(histories)
def test_L_3_rga_idempotence(ops: list[tuple[Any, ...]]) -> None:
    (a, b, _), _ = run_history(ops)
    before = a.to_json()
    a.merge(a.copy())
    a.merge(a)
    assert a.to_json() == before
    once = merged(a, b)
    twice = merged(once, b)
    assert twice.to_json() == once.to_json()


@pytest.mark.parametrize("block_max", [64, 3])
@settings(max_examples=150, deadline=None)
@given(ops=histories, partition_until=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
def test_L_4_rga_convergence(block_max: int, ops: list[tuple[Any, ...]], partition_until: int, seed: int) -> None:
    """Tiny blocks make every history split blocks, in local edits and in merges alike."""
    with patch.object(rga_module, "_BLOCK_MAX", block_max):
        check_convergence(ops, partition_until, seed)


def check_convergence(ops: list[tuple[Any, ...]], partition_until: int, seed: int) -> None:
    rgas, models = run_history(ops, partition_until)
    rng = random.Random(seed)
    # two rounds of everyone hearing from everyone, in a seeded random order, some states sent twice
    for _ in range(2):
        pairs = [(src, dst) for src in range(3) for dst in range(3)]
        pairs += rng.choices(pairs, k=3)
        rng.shuffle(pairs)
        for src, dst in pairs:
            rgas[dst].merge(rgas[src].copy())
            models[dst].merge(models[src])
    states = [json.dumps(rga.to_json(), sort_keys=True) for rga in rgas]
    assert len(set(states)) == 1
    assert len({rga.text() for rga in rgas}) == 1
    assert rgas[0].text() == models[0].text()
    assert elements(rgas[0]) == models[0].elements()
    # the state survives its JSON form, and a removed character never comes back
    again = RGA.from_json(json.loads(states[0]))
    assert again == rgas[0]
    dead = {(rep, ctr) for rep, ctr, deleted in elements(rgas[0]) if deleted}
    for rga in rgas:
        rga.merge(again)
        assert {(rep, ctr) for rep, ctr, deleted in elements(rga) if deleted} == dead


@settings(max_examples=150, deadline=None)
@given(histories, st.text(ALPHABET + " c\n", max_size=30))
def test_write_text_on_unchanged_state_gives_the_text(ops: list[tuple[Any, ...]], target: str) -> None:
    (a, _, _), _ = run_history(ops)
    base = a.base()
    a.write_text(base, target, "dave")
    assert a.text() == target
    assert RGA.from_json(a.to_json()) == a


@settings(max_examples=150, deadline=None)
@given(histories, st.lists(st.integers(0, 40), min_size=3, max_size=3), st.booleans())
def test_write_text_from_one_base_keeps_both_writers_edits(
    ops: list[tuple[Any, ...]], cuts: list[int], edit_both: bool
) -> None:
    """Writer 1 inserts X, writer 2 replaces a later range with Y, both against one base: the merge has both.

    The markers are not in the alphabet, so each diff is exactly that edit, and the anchors differ.
    """
    (a, _, _), _ = run_history(ops)
    base = a.base()
    p1, p2, p3 = sorted(min(cut, len(base.text)) for cut in cuts)
    if p1 == p2:
        p1 -= 1
    if p1 < 0:
        return
    b = a.copy()
    a.write_text(base, base.text[:p1] + "X" + base.text[p1:], "w1")
    b.write_text(base, base.text[:p2] + "Y" + base.text[p3:], "w2")
    if edit_both:  # the state writer 2 applies to has moved on since its base
        b.merge(a)
    expected = base.text[:p1] + "X" + base.text[p1:p2] + "Y" + base.text[p3:]
    assert merged(a, b).text() == expected
    assert merged(b, a).text() == expected


@settings(max_examples=300, deadline=None)
@given(st.text("ab\nc", max_size=40), st.text("ab\nc", max_size=40))
def test_diff_spans_turn_old_into_new(old: str, new: str) -> None:
    spans = diff_spans(old, new)
    out, at = [], 0
    for i1, i2, j1, j2 in spans:
        assert at <= i1 <= i2 <= len(old) and 0 <= j1 <= j2 <= len(new)
        assert (i1, j1) != (i2, j2)  # never an empty span
        assert at == 0 or i1 > at  # never touching the previous span: each insert has its own anchor
        out.append(old[at:i1] + new[j1:j2])
        at = i2
    assert "".join(out) + old[at:] == new
    assert (spans == []) == (old == new)


@pytest.mark.parametrize("block_max", [64, 3])
@pytest.mark.parametrize("seed", range(4))
def test_L_4_rga_convergence_of_editing_sessions(block_max: int, seed: int) -> None:
    """Editors that type, backspace and delete forward around a cursor, as people do, with late, repeated
    and partitioned deliveries; checked against the model all along, with normal and tiny blocks."""
    rng = random.Random(seed)
    with patch.object(rga_module, "_BLOCK_MAX", block_max):
        rgas = [RGA() for _ in REPLICAS]
        models = [Model() for _ in REPLICAS]
        cursors = [0, 0, 0]
        sent: list[tuple[int, RGA, Model]] = []
        for step in range(600):
            i = rng.randrange(3)
            rga, model, size = rgas[i], models[i], len(rgas[i])
            cursor = min(cursors[i], size)
            roll = rng.random()
            if roll < 0.05:
                cursor = rng.randint(0, size)  # the editor clicks elsewhere
            elif roll < 0.55:
                chunk = rng.choice(["a", "b", "\n", "😀", "xyz"])
                rga.insert(cursor, chunk, REPLICAS[i])
                model.insert(cursor, chunk, REPLICAS[i])
                cursor += len(chunk)
            elif roll < 0.7 and cursor:
                back = rng.randint(1, 3)  # backspace
                rga.delete(cursor - back, cursor)
                model.delete(cursor - back, cursor)
                cursor = max(cursor - back, 0)
            elif roll < 0.8:
                ahead = rng.randint(1, 12)  # forward delete or a selection
                rga.delete(cursor, cursor + ahead)
                model.delete(cursor, cursor + ahead)
            elif roll < 0.9:
                sent.append((i, rga.copy(), model.copy()))
            elif sent:
                src, state, model_state = rng.choice(sent)  # late, and maybe again
                if step < 300 and (src == 2) != (i == 2):
                    continue  # carol is cut off for the first half
                rga.merge(state)
                model.merge(model_state)
            cursors[i] = cursor
            assert rga.text() == model.text()
        for _ in range(2):
            for dst in range(3):
                for src in rng.sample(range(3), 3):
                    rgas[dst].merge(rgas[src])
                    models[dst].merge(models[src])
        assert len({json.dumps(rga.to_json()) for rga in rgas}) == 1
        assert rgas[0].text() == models[0].text()
        assert elements(rgas[0]) == models[0].elements()
