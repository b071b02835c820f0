"""Any interleaving of writers' writes, folds and readers' reads converges, and keeps every acknowledged operation.

Each writer and reader is a store object of its own (its own token, its own cache), all acting as one agent, the
hardest case. A write is cut in two steps, as concurrency cuts it: ``begin`` loads the latest state and applies an
operation to a copy, ``finish`` persists it (its own new file, its previous one and maybe others' folded away, the
merged file refreshed, or not: a writer may be killed right after its own file is durable). Other writers'
steps, reads and restarts (a new process: a new writer, its file left behind) run in between, so writers persist
states loaded before others' writes, and fold files while others are mid-write.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from omxfs.crdt import RGA, Document, ORSet, PNCounter
from omxfs.store import Workspace
from omxfs.store.replicas import StateView, Writer

WRITERS, READERS = 3, 2
SCHEMA = {"body": "rga", "tags": "or_set", "votes": "pn_counter"}

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("begin"), st.integers(0, WRITERS - 1), st.integers(0, 2)),
        st.tuples(st.just("finish"), st.integers(0, WRITERS - 1), st.integers(0, 1)),
        st.tuples(st.just("read"), st.integers(0, READERS - 1), st.just(0)),
        st.tuples(st.just("fold_at"), st.integers(0, WRITERS - 1), st.sampled_from([0, 1, 2, 8])),
        st.tuples(st.just("restart"), st.integers(0, WRITERS - 1), st.just(0)),
    ),
    max_size=40,
)


@dataclass
class Acked:
    votes: int = 0
    tags: set[str] = field(default_factory=set)
    tokens: set[str] = field(default_factory=set)

    def check(self, doc: Document) -> None:
        assert doc.typed("votes", PNCounter).value() == self.votes
        assert set(doc.typed("tags", ORSet).elements()) == self.tags
        body = doc.typed("body", RGA).text()
        assert all(token in body for token in self.tokens)


class Actor:
    def __init__(self, root: Path) -> None:
        self.ws = Workspace(root)
        self.writer = Writer(self.ws.realtime.replica("alice"))
        self.ws.realtime.files.fold_at = 1  # fold often (the "fold_at" step changes it)
        self.pending: tuple[StateView, Document, tuple[str, str]] | None = None


def apply(doc: Document, replica: str, kind: int, n: int) -> tuple[str, str]:
    if kind == 0:
        doc.typed("votes", PNCounter).increment(replica, 1)
        return ("vote", "")
    if kind == 1:
        doc.typed("tags", ORSet).add(f"t{n}", replica)
        return ("tag", f"t{n}")
    doc.typed("body", RGA).insert(0, f"<{n}>", replica)  # at the start: never inside another token
    return ("token", f"<{n}>")


def acknowledge(acked: Acked, op: tuple[str, str]) -> None:
    kind, value = op
    if kind == "vote":
        acked.votes += 1
    elif kind == "tag":
        acked.tags.add(value)
    else:
        acked.tokens.add(value)


def killed(*args: object) -> StateView:
    raise OSError("killed before the merged file was refreshed")


def finish(actor: Actor, acked: Acked, crash: bool = False) -> None:
    """Persist the pending write; ``crash``: the process dies once its own file is durable (no tidying after)."""
    assert actor.pending is not None
    base, work, op = actor.pending
    actor.pending = None
    files = actor.ws.realtime.files
    if crash:
        files._publish = killed  # type: ignore[method-assign]
    try:
        files.commit("doc", actor.writer, base, work)
    finally:
        files.__dict__.pop("_publish", None)
    acknowledge(acked, op)


@settings(max_examples=150, deadline=None, database=None)
@given(steps=STEPS)
def test_any_interleaving_converges_with_every_acknowledged_operation(steps: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Workspace.init(Path(tmp) / "ws", agents=["alice"]).root
        Workspace(root).realtime.create("alice", "doc", SCHEMA)
        writers = [Actor(root) for _ in range(WRITERS)]
        readers = [Workspace(root) for _ in range(READERS)]
        acked = Acked()
        for n, (step, who, arg) in enumerate(steps):
            actor = writers[who] if step != "read" else None
            if step == "begin" and writers[who].pending is None:
                w = writers[who]
                base, work = w.ws.realtime.files.begin(w.writer, "doc")
                w.pending = (base, work, apply(work, w.writer.replica, arg, n))
            elif step == "finish" and writers[who].pending is not None:
                finish(writers[who], acked, crash=bool(arg))
                if arg:
                    writers[who] = Actor(root)  # killed: a new process takes its place
            elif step == "read":
                acked.check(readers[who].realtime.current("doc").doc)
            elif step == "fold_at" and actor is not None:
                actor.ws.realtime.files.fold_at = arg
            elif step == "restart" and writers[who].pending is None:
                writers[who] = Actor(root)
        for w in writers:
            if w.pending is not None:
                finish(w, acked)
        last = Actor(root)  # one more write, whose merged file refresh then holds everything
        base, work = last.ws.realtime.files.begin(last.writer, "doc")
        last.pending = (base, work, apply(work, last.writer.replica, 0, len(steps)))
        finish(last, acked)
        states = [r.realtime.current("doc").doc for r in readers] + [Workspace(root).realtime.load("doc")]
        states.append(Document.from_json(json.loads((root / "realtime/.crdt_state/doc.crdt.json").read_bytes())))
        for state in states:
            acked.check(state)
            assert state.to_json() == states[0].to_json()


def test_a_fold_removes_only_files_the_folder_had_loaded(tmp_path: Path) -> None:
    """A writer folding others' files, with a state loaded before one of them wrote again, keeps that write."""
    root = Workspace.init(tmp_path / "ws", agents=["alice"]).root
    Workspace(root).realtime.create("alice", "doc", SCHEMA)
    a, b, c = Actor(root), Actor(root), Actor(root)
    acked = Acked()
    for actor, n in ((a, 1), (b, 2)):
        base, work = actor.ws.realtime.files.begin(actor.writer, "doc")
        actor.pending = (base, work, apply(work, actor.writer.replica, 1, n))
        finish(actor, acked)
    base, work = c.ws.realtime.files.begin(c.writer, "doc")  # c loads a's and b's files
    c.pending = (base, work, apply(work, c.writer.replica, 1, 3))
    base, work = a.ws.realtime.files.begin(a.writer, "doc")  # a writes again: a new file c has not seen
    a.pending = (base, work, apply(work, a.writer.replica, 1, 4))
    finish(a, acked)
    c.ws.realtime.files.fold_at = 0
    finish(c, acked)  # folds what it loaded, not a's new file
    acked.check(Workspace(root).realtime.load("doc"))
    acked.check(Document.from_json(json.loads((root / "realtime/.crdt_state/doc.crdt.json").read_bytes())))
