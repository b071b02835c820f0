"""The laws every field type and the document obey (seeds L-1 … L-4), checked with hypothesis.

Each replica is one agent applying random typed operations and file writes (with bases read earlier, so some
are stale); merge must then be commutative, associative and idempotent, and replicas exchanging whole states
in a seeded random order, with duplicates, stale deliveries and a partition, must all end with equal JSON.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from omxfs.crdt import RGA, Document, LWWMap, LWWRegister, ORSet, PNCounter

LAWS = settings(max_examples=120, deadline=None, database=None)

Op = tuple[Any, ...]
Ctx = dict[str, Any]  # what one replica remembers between operations: the base it last read


@dataclass(frozen=True)
class Kind:
    new: Callable[[], Any]
    op: st.SearchStrategy[Op]
    apply: Callable[[Any, Op, Ctx, str], None]


def _read_or_now(state: Any, ctx: Ctx) -> Any:
    """The base the writer read earlier, or the current one if it never read."""
    return ctx.get("base", state.base())


# timestamps: mostly tiny explicit ones, so ties are frequent; sometimes the clock
STAMPS = st.one_of(st.integers(0, 3), st.integers(0, 3), st.none())
TEXTS = st.sampled_from(["", "a", "b", "看板", "x\ny"])
ELEMENTS = st.sampled_from(["a", "b", "c", "中"])
KEYS = st.sampled_from(["k1", "k2", "k3"])
JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["v", "中", [1]]))


# -- LWWRegister ---------------------------------------------------------------------------------------------


def _apply_register(reg: LWWRegister, op: Op, ctx: Ctx, replica: str) -> None:
    match op:
        case ("set", value, stamp):
            reg.set(value, replica, stamp)
        case ("read",):
            ctx["base"] = reg.base()
        case ("write", text, stamp):
            reg.write_text(_read_or_now(reg, ctx), text, replica, stamp)


REGISTER = Kind(
    LWWRegister,
    st.one_of(
        st.tuples(st.just("set"), TEXTS, STAMPS),
        st.tuples(st.just("read")),
        st.tuples(st.just("write"), TEXTS, STAMPS),
    ),
    _apply_register,
)


# -- ORSet ---------------------------------------------------------------------------------------------------


def _apply_orset(tags: ORSet, op: Op, ctx: Ctx, replica: str) -> None:
    match op:
        case ("add", element):
            tags.add(element, replica)
        case ("remove", element):
            tags.remove(element)
        case ("read",):
            ctx["base"] = tags.base()
        case ("write", elements):
            tags.write_text(_read_or_now(tags, ctx), "".join(f"{e}\n" for e in elements), replica)


ORSET = Kind(
    ORSet,
    st.one_of(
        st.tuples(st.just("add"), ELEMENTS),
        st.tuples(st.just("remove"), ELEMENTS),
        st.tuples(st.just("read")),
        st.tuples(st.just("write"), st.lists(ELEMENTS, unique=True, max_size=3)),
    ),
    _apply_orset,
)


# -- LWWMap --------------------------------------------------------------------------------------------------


def _apply_map(m: LWWMap, op: Op, ctx: Ctx, replica: str) -> None:
    match op:
        case ("set", key, value, stamp):
            m.set(key, value, replica, stamp)
        case ("delete", key, stamp):
            m.delete(key, replica, stamp)
        case ("read",):
            ctx["base"] = m.base()
        case ("write", obj, stamp):
            m.write_text(_read_or_now(m, ctx), json.dumps(obj), replica, stamp)


MAP = Kind(
    LWWMap,
    st.one_of(
        st.tuples(st.just("set"), KEYS, JSON_VALUES, STAMPS),
        st.tuples(st.just("delete"), KEYS, STAMPS),
        st.tuples(st.just("read")),
        st.tuples(st.just("write"), st.dictionaries(KEYS, JSON_VALUES, max_size=3), STAMPS),
    ),
    _apply_map,
)


# -- PNCounter -----------------------------------------------------------------------------------------------


def _apply_counter(counter: PNCounter, op: Op, ctx: Ctx, replica: str) -> None:
    match op:
        case ("inc", n):
            counter.increment(replica, n)
        case ("dec", n):
            counter.decrement(replica, n)
        case ("read",):
            ctx["base"] = counter.base()
        case ("write", text):
            counter.write_text(_read_or_now(counter, ctx), text, replica)


COUNTER = Kind(
    PNCounter,
    st.one_of(
        st.tuples(st.just("inc"), st.integers(0, 5)),
        st.tuples(st.just("dec"), st.integers(0, 5)),
        st.tuples(st.just("read")),
        st.tuples(
            st.just("write"),
            st.one_of(
                st.integers(0, 9).map(str),
                st.integers(0, 5).map(lambda k: f"+{k}"),
                st.integers(0, 5).map(lambda k: f"-{k}"),
            ),
        ),
    ),
    _apply_counter,
)


# -- Document (all five types) -------------------------------------------------------------------------------

BOARD = {
    "title": "lww_register",
    "body": "rga",
    "members": "or_set",
    "settings": "lww_map",
    "view_count": "pn_counter",
}


def _apply_document(doc: Document, op: Op, ctx: Ctx, replica: str) -> None:
    body = doc.typed("body", RGA)
    match op:
        case ("title", value, stamp):
            doc.typed("title", LWWRegister).set(value, replica, stamp)
        case ("insert", where, text):
            body.insert(where % (len(body) + 1), text, replica)
        case ("delete", where, length):
            start = where % (len(body) + 1)
            body.delete(start, min(start + length, len(body)))
        case ("read_body",):
            ctx["base"] = body.base()
        case ("write_body", text):
            body.write_text(_read_or_now(body, ctx), text, replica)
        case ("member", element, present):
            members = doc.typed("members", ORSet)
            if present:
                members.add(element, replica)
            else:
                members.remove(element)
        case ("setting", key, value, stamp):
            doc.typed("settings", LWWMap).set(key, value, replica, stamp)
        case ("count", delta):
            doc.typed("view_count", PNCounter).add(replica, delta)


DOCUMENT = Kind(
    lambda: Document("board", BOARD),
    st.one_of(
        st.tuples(st.just("title"), TEXTS, STAMPS),
        st.tuples(st.just("insert"), st.integers(0, 20), st.sampled_from(["x", "yz", "中文"])),
        st.tuples(st.just("delete"), st.integers(0, 20), st.integers(0, 3)),
        st.tuples(st.just("read_body")),
        st.tuples(st.just("write_body"), st.sampled_from(["", "x", "xyz", "hello", "中文"])),
        st.tuples(st.just("member"), ELEMENTS, st.booleans()),
        st.tuples(st.just("setting"), KEYS, JSON_VALUES, STAMPS),
        st.tuples(st.just("count"), st.integers(-3, 3)),
    ),
    _apply_document,
)


# -- the harness ---------------------------------------------------------------------------------------------

AGENTS = ("alice", "bob", "carol", "dave")


def ops(kind: Kind, max_size: int = 8) -> st.SearchStrategy[list[Op]]:
    return st.lists(kind.op, max_size=max_size)


def run(kind: Kind, state: Any, script: list[Op], replica: str) -> Any:
    ctx: Ctx = {}
    for op in script:
        kind.apply(state, op, ctx, replica)
    return state


def branches(kind: Kind, common: list[Op], scripts: list[list[Op]]) -> list[Any]:
    """Replicas that share a history and then diverge, one agent each."""
    origin = run(kind, kind.new(), common, "origin")
    return [run(kind, origin.copy(), script, agent) for script, agent in zip(scripts, AGENTS, strict=False)]


def merged(*states: Any) -> Any:
    out = states[0].copy()
    for state in states[1:]:
        out.merge(state)
    return out


def plain(state: Any) -> Any:
    return state.snapshot() if isinstance(state, Document) else state.value()


def check_commutative(kind: Kind, common: list[Op], a: list[Op], b: list[Op]) -> None:
    x, y = branches(kind, common, [a, b])
    xy, yx = merged(x, y), merged(y, x)
    assert xy.to_json() == yx.to_json()
    assert xy == yx
    assert plain(xy) == plain(yx)


def check_associative(kind: Kind, common: list[Op], a: list[Op], b: list[Op], c: list[Op]) -> None:
    x, y, z = branches(kind, common, [a, b, c])
    left, right = merged(merged(x, y), z), merged(x, merged(y, z))
    assert left.to_json() == right.to_json()
    assert left == right


def check_idempotent(kind: Kind, common: list[Op], a: list[Op], b: list[Op]) -> None:
    x, y = branches(kind, common, [a, b])
    before = x.to_json()
    x.merge(x.copy())
    x.merge(x)
    assert x.to_json() == before
    once = merged(x, y)
    twice = merged(once, y)
    twice.merge(x)
    assert twice.to_json() == once.to_json()
    assert twice == once


def check_convergence(kind: Kind, script: list[tuple[int, Op]], seed: int, n: int = 3) -> None:
    """States travel as copies taken at send time: late, out of order, twice, or lost across a partition."""
    rng = random.Random(seed)
    states = [kind.new() for _ in range(n)]
    ctxs: list[Ctx] = [{} for _ in range(n)]
    side = [rng.randrange(2) for _ in range(n)]
    partition_ends = rng.randrange(len(script) + 1)
    in_flight: list[tuple[int, int, Any]] = []
    for step, (who, op) in enumerate(script):
        kind.apply(states[who % n], op, ctxs[who % n], AGENTS[who % n])
        if rng.random() < 0.6:
            src, dst = rng.randrange(n), rng.randrange(n)
            in_flight.append((src, dst, states[src].copy()))
        if in_flight and rng.random() < 0.6:
            k = rng.randrange(len(in_flight))
            src, dst, message = in_flight[k]
            if step < partition_ends and side[src] != side[dst]:
                del in_flight[k]  # lost in the partition
                continue
            states[dst].merge(message)
            if rng.random() < 0.7:
                del in_flight[k]  # else it will arrive again
    everything = merged(*states)
    rng.shuffle(in_flight)
    for _, dst, message in in_flight:  # the stragglers, after the partition heals
        states[dst].merge(message)
    pairs = [(src, dst) for src in range(n) for dst in range(n) if src != dst]
    rng.shuffle(pairs)
    for src, dst in pairs:  # one round of anti-entropy
        states[dst].merge(states[src].copy())
    for state in states:
        assert state.to_json() == everything.to_json()
        assert state == everything


def scripts(kind: Kind, size: int = 3) -> st.SearchStrategy[list[list[Op]]]:
    return st.lists(ops(kind), min_size=size, max_size=size)


def deliveries(kind: Kind) -> st.SearchStrategy[list[tuple[int, Op]]]:
    return st.lists(st.tuples(st.integers(0, 3), kind.op), min_size=5, max_size=30)


SEEDS = st.integers(0, 2**32 - 1)


# -- L-1 commutativity ---------------------------------------------------------------------------------------


@LAWS
@given(ops(REGISTER), scripts(REGISTER, 2))
def test_L_1_commutativity_lww_register(common: list[Op], s: list[list[Op]]) -> None:
    check_commutative(REGISTER, common, *s)


@LAWS
@given(ops(ORSET), scripts(ORSET, 2))
def test_L_1_commutativity_or_set(common: list[Op], s: list[list[Op]]) -> None:
    check_commutative(ORSET, common, *s)


@LAWS
@given(ops(MAP), scripts(MAP, 2))
def test_L_1_commutativity_lww_map(common: list[Op], s: list[list[Op]]) -> None:
    check_commutative(MAP, common, *s)


@LAWS
@given(ops(COUNTER), scripts(COUNTER, 2))
def test_L_1_commutativity_pn_counter(common: list[Op], s: list[list[Op]]) -> None:
    check_commutative(COUNTER, common, *s)


@LAWS
@given(ops(DOCUMENT), scripts(DOCUMENT, 2))
def test_L_1_commutativity_document(common: list[Op], s: list[list[Op]]) -> None:
    check_commutative(DOCUMENT, common, *s)


# -- L-2 associativity ---------------------------------------------------------------------------------------


@LAWS
@given(ops(REGISTER), scripts(REGISTER))
def test_L_2_associativity_lww_register(common: list[Op], s: list[list[Op]]) -> None:
    check_associative(REGISTER, common, *s)


@LAWS
@given(ops(ORSET), scripts(ORSET))
def test_L_2_associativity_or_set(common: list[Op], s: list[list[Op]]) -> None:
    check_associative(ORSET, common, *s)


@LAWS
@given(ops(MAP), scripts(MAP))
def test_L_2_associativity_lww_map(common: list[Op], s: list[list[Op]]) -> None:
    check_associative(MAP, common, *s)


@LAWS
@given(ops(COUNTER), scripts(COUNTER))
def test_L_2_associativity_pn_counter(common: list[Op], s: list[list[Op]]) -> None:
    check_associative(COUNTER, common, *s)


@LAWS
@given(ops(DOCUMENT), scripts(DOCUMENT))
def test_L_2_associativity_document(common: list[Op], s: list[list[Op]]) -> None:
    check_associative(DOCUMENT, common, *s)


# -- L-3 idempotence -----------------------------------------------------------------------------------------


@LAWS
@given(ops(REGISTER), scripts(REGISTER, 2))
def test_L_3_idempotence_lww_register(common: list[Op], s: list[list[Op]]) -> None:
    check_idempotent(REGISTER, common, *s)


@LAWS
@given(ops(ORSET), scripts(ORSET, 2))
def test_L_3_idempotence_or_set(common: list[Op], s: list[list[Op]]) -> None:
    check_idempotent(ORSET, common, *s)


@LAWS
@given(ops(MAP), scripts(MAP, 2))
def test_L_3_idempotence_lww_map(common: list[Op], s: list[list[Op]]) -> None:
    check_idempotent(MAP, common, *s)


@LAWS
@given(ops(COUNTER), scripts(COUNTER, 2))
def test_L_3_idempotence_pn_counter(common: list[Op], s: list[list[Op]]) -> None:
    check_idempotent(COUNTER, common, *s)


@LAWS
@given(ops(DOCUMENT), scripts(DOCUMENT, 2))
def test_L_3_idempotence_document(common: list[Op], s: list[list[Op]]) -> None:
    check_idempotent(DOCUMENT, common, *s)


# -- L-4 convergence -----------------------------------------------------------------------------------------


@LAWS
@given(deliveries(REGISTER), SEEDS)
def test_L_4_convergence_lww_register(script: list[tuple[int, Op]], seed: int) -> None:
    check_convergence(REGISTER, script, seed)


@LAWS
@given(deliveries(ORSET), SEEDS)
def test_L_4_convergence_or_set(script: list[tuple[int, Op]], seed: int) -> None:
    check_convergence(ORSET, script, seed, n=4)


@LAWS
@given(deliveries(MAP), SEEDS)
def test_L_4_convergence_lww_map(script: list[tuple[int, Op]], seed: int) -> None:
    check_convergence(MAP, script, seed)


@LAWS
@given(deliveries(COUNTER), SEEDS)
def test_L_4_convergence_pn_counter(script: list[tuple[int, Op]], seed: int) -> None:
    check_convergence(COUNTER, script, seed, n=4)


@LAWS
@given(deliveries(DOCUMENT), SEEDS)
def test_L_4_convergence_document(script: list[tuple[int, Op]], seed: int) -> None:
    check_convergence(DOCUMENT, script, seed)


# -- ORSet: a removed element never comes back without a new add ---------------------------------------------

Entry = tuple[str, str, int]


def _entries(tags: ORSet, part: str) -> set[Entry]:
    return {(e, r, c) for e, pairs in tags.to_json()[part].items() for r, c in pairs}


ORSET_STEPS = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.one_of(ORSET.op, st.tuples(st.just("sync"), st.integers(0, 2), st.integers(0, 10))),
    ),
    min_size=10,
    max_size=40,
)


@LAWS
@given(ORSET_STEPS)
def test_or_set_removed_element_never_comes_back_without_a_new_add(script: list[tuple[int, Op]]) -> None:
    n = 3
    states = [ORSet() for _ in range(n)]
    ctxs: list[Ctx] = [{} for _ in range(n)]
    history: list[list[ORSet]] = [[s.copy()] for s in states]  # every state each replica has been in
    created: set[Entry] = set()
    for who, op in script:
        state = states[who]
        live_before, tombstones_before = _entries(state, "live"), _entries(state, "tombstones")
        known_before = live_before | tombstones_before
        present_before = {e for e, _, _ in live_before}
        if op[0] == "sync":  # receive a possibly stale state of another replica
            _, src, age = op
            state.merge(history[src][-1 - min(age, len(history[src]) - 1)])
        else:
            ORSET.apply(state, op, ctxs[who], AGENTS[who])
        live, tombstones = _entries(state, "live"), _entries(state, "tombstones")
        created |= live
        assert not live & tombstones
        assert tombstones >= tombstones_before  # tombstones are kept
        assert not tombstones_before & live  # so a tombstoned tag is never live again
        for element in {e for e, _, _ in live} - present_before:
            # a removed (or never seen) element reappears only through a tag this replica had not seen
            assert not {t for t in live if t[0] == element} & known_before
        history[who].append(state.copy())
    everything = merged(*states)
    for state in states:
        state.merge(everything)
        tombstoned = _entries(state, "tombstones")
        for element in {e for e, _, _ in created}:
            survivors = {t for t in created if t[0] == element} - tombstoned
            assert state.contains(element) == bool(survivors)
