"""Realtime documents without shared locks: each writer's own file, merged on read (issue 13).

The OS lock is made useless here (``locks.hold`` a no-op, as on a filesystem whose clients share no locks):
writers acting as the same agent in threads and processes must still lose no operation, and mint no id twice.
"""

from __future__ import annotations

import contextlib
import errno
import json
import multiprocessing as mp
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from omxfs.crdt import RGA, Document, LWWRegister, ORSet, PNCounter
from omxfs.errors import InvalidInput, NotFound, StoreCorrupt, ZoneDenied
from omxfs.store import Workspace
from omxfs.store.layout import WRITERS
from omxfs.store.replicas import FOLD_AT, agent_of, encode_state, parse_writer_file

BOARD = {"title": "lww_register", "body": "rga", "tags": "or_set", "votes": "pn_counter"}


@contextlib.contextmanager
def no_lock(name: str) -> Iterator[None]:
    yield


def lockless(root: Path | str) -> Workspace:
    """A store object whose OS locks do nothing, as on sshfs or NFS without lockd."""
    ws = Workspace(root)
    ws.locks.hold = no_lock  # type: ignore[method-assign]
    return ws


def writer_files(ws: Workspace, doc: str = "board") -> list[str]:
    folder = ws.realtime.state_dir / WRITERS / doc
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def merged_file(ws: Workspace, doc: str = "board") -> Document:
    return Document.from_json(json.loads((ws.realtime.state_dir / f"{doc}.crdt.json").read_bytes()))


# -- replica ids ------------------------------------------------------------------------------------------------


def test_each_store_object_is_its_own_replica_ordered_by_agent_first(ws: Workspace) -> None:
    other = Workspace(ws.root)
    a, b = ws.realtime.replica("alice"), other.realtime.replica("alice")
    assert a != b and agent_of(a) == agent_of(b) == "alice"
    assert ws.realtime.replica("bob") == "bob+" + a.partition("+")[2]  # one token per process, per agent
    # '+' sorts below '-' and the digits, so by replica id the agents still order by name (SPEC §5's tie-break)
    assert sorted([ws.realtime.replica("alice-b"), a, ws.realtime.replica("alice0")])[0] == a
    assert agent_of("alice") == "alice"  # a bare id, from an older store or a remote replica


def test_a_writer_writes_a_file_of_its_own_and_the_merged_file_follows(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    ws.realtime.update("alice", "board", lambda d, r: d.typed("votes", PNCounter).increment(r, 2))
    ws.realtime.update("alice", "board", lambda d, r: d.typed("votes", PNCounter).increment(r, 3))
    files = writer_files(ws)
    assert len(files) == 1  # its previous file is gone once the new one is durable
    parsed = parse_writer_file(files[0])
    assert parsed is not None and parsed[0] == ws.realtime.replica("alice") and parsed[1] == 2
    assert merged_file(ws) == ws.realtime.load("board")
    assert merged_file(ws).snapshot()["fields"]["votes"] == 5


# -- no operation lost without locks ----------------------------------------------------------------------------


def test_two_store_objects_as_one_agent_in_threads_lose_nothing(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    stores = [lockless(ws.root), lockless(ws.root)]
    rounds = 40

    def work(i: int) -> None:
        zone = stores[i].realtime
        for k in range(rounds):
            zone.update("alice", "board", lambda d, r: d.typed("votes", PNCounter).increment(r, 1))
            zone.update("alice", "board", lambda d, r, k=k: d.typed("tags", ORSet).add(f"{i}-{k}", r))
            zone.update("alice", "board", lambda d, r, k=k: d.typed("body", RGA).insert(0, f"<{i}.{k}>", r))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    doc = Workspace(ws.root).realtime.load("board")
    assert doc.typed("votes", PNCounter).value() == 2 * rounds
    assert doc.typed("tags", ORSet).elements() == sorted(f"{i}-{k}" for i in range(2) for k in range(rounds))
    body = doc.typed("body", RGA).text()
    assert all(f"<{i}.{k}>" in body for i in range(2) for k in range(rounds))
    assert len(doc.to_json()["fields"]["votes"]["p"]) == 2  # two replicas of alice, each with its own tally


def lockless_worker(root: str, rounds: int, tag: str, results: mp.Queue) -> None:  # type: ignore[type-arg]
    ws = lockless(root)
    for k in range(rounds):
        ws.realtime.update("alice", "board", lambda d, r: d.typed("votes", PNCounter).increment(r, 1))
        ws.realtime.update("alice", "board", lambda d, r, k=k: d.typed("tags", ORSet).add(f"{tag}-{k}", r))
        ws.realtime.update("alice", "board", lambda d, r, k=k: d.typed("body", RGA).insert(0, f"<{tag}.{k}>", r))
    results.put((tag, ws.realtime.replica("alice")))


def test_two_processes_as_one_agent_without_locks_lose_nothing(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    rounds = 60
    ctx = mp.get_context("spawn")
    results: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=lockless_worker, args=(str(ws.root), rounds, tag, results)) for tag in "ab"]
    for p in procs:
        p.start()
    outcome = dict(results.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert outcome["a"] != outcome["b"]
    for reader in (Workspace(ws.root), ws):
        doc = reader.realtime.load("board")
        assert doc.typed("votes", PNCounter).value() == 2 * rounds
        assert doc.typed("tags", ORSet).elements() == sorted(f"{t}-{k}" for t in "ab" for k in range(rounds))
        body = doc.typed("body", RGA).text()
        assert all(f"<{t}.{k}>" in body for t in "ab" for k in range(rounds))
        assert set(doc.to_json()["fields"]["votes"]["p"]) == set(outcome.values())


# -- the number of files stays bounded --------------------------------------------------------------------------


def test_writers_fold_each_others_files(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    for i in range(3 * FOLD_AT):  # each a new process's store: a new writer, and a file left behind
        Workspace(ws.root).realtime.update("bob", "board", lambda d, r, i=i: d.typed("tags", ORSet).add(f"t{i}", r))
        assert len(writer_files(ws)) <= FOLD_AT + 1
    assert ws.realtime.load("board").typed("tags", ORSet).elements() == sorted(f"t{i}" for i in range(3 * FOLD_AT))
    assert merged_file(ws) == ws.realtime.load("board")


def test_an_older_store_with_only_the_merged_file_keeps_its_operations(ws: Workspace) -> None:
    legacy = Document("board", BOARD)
    legacy.typed("title", LWWRegister).set("from before", "alice", 5)
    legacy.typed("votes", PNCounter).increment("alice", 7)
    (ws.realtime.state_dir / "board.crdt.json").write_text(json.dumps(legacy.to_json()))
    assert ws.realtime.snapshot("board")["fields"]["votes"] == 7
    writers = [Workspace(ws.root) for _ in range(FOLD_AT + 3)]
    for store in writers:
        store.realtime.update("alice", "board", lambda d, r: d.typed("votes", PNCounter).increment(r, 1))
    for doc in (Workspace(ws.root).realtime.load("board"), merged_file(ws)):
        assert doc.snapshot()["fields"]["votes"] == 7 + len(writers)
        assert doc.snapshot()["fields"]["title"] == "from before"


def test_a_writer_file_of_another_document_is_corruption(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    ws.realtime.update("alice", "board", lambda d, r: d.typed("votes", PNCounter).increment(r, 1))
    folder = ws.realtime.state_dir / WRITERS / "board"
    (folder / "mallory+00.1.crdt.json").write_text(json.dumps(Document("other", BOARD).to_json()))
    with pytest.raises(StoreCorrupt, match="other"):
        Workspace(ws.root).realtime.load("board")


# -- attribution --------------------------------------------------------------------------------------------------


def forged(ws: Workspace, replica: str) -> Document:
    state = ws.realtime.load("board")
    state.typed("title", LWWRegister).set("forged title", replica)
    state.typed("votes", PNCounter).increment(replica, 1_000_000)
    return state


def test_a_state_with_another_agents_new_operations_is_refused(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    ws.realtime.update("alice", "board", lambda d, r: d.typed("title", LWWRegister).set("alice's", r))
    before = (ws.realtime.load("board"), writer_files(ws))
    for replica in ("alice", ws.realtime.replica("alice"), "alice+0123"):
        with pytest.raises(ZoneDenied, match="alice"):
            ws.realtime.merge_state("bob", "board", forged(ws, replica).to_json())
    assert (ws.realtime.load("board"), writer_files(ws)) == before
    # bob's own new operations, beside the ones the store already has, merge
    merged = ws.realtime.merge_state("bob", "board", forged(ws, "bob+remote").to_json())
    assert merged.snapshot()["fields"]["title"] == "forged title"
    assert ws.realtime.snapshot("board")["fields"]["votes"] == 1_000_000


def test_a_supervisor_may_merge_anyones_operations_and_is_recorded(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    ws.realtime.merge_state("boss", "board", forged(ws, "alice").to_json())
    assert ws.realtime.snapshot("board")["fields"]["title"] == "forged title"
    audit = json.dumps(ws.audit_trail().records)
    assert '"agent": "boss"' in audit and "merge operations of alice" in audit


def test_removals_are_not_attributed(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    ws.realtime.update("alice", "board", lambda d, r: d.typed("tags", ORSet).add("x", r))
    ws.realtime.update("alice", "board", lambda d, r: d.typed("body", RGA).insert(0, "alice's text", r))
    state = ws.realtime.load("board")
    state.typed("tags", ORSet).remove("x")
    state.typed("body", RGA).delete(0, 8)
    ws.realtime.merge_state("bob", "board", state.to_json())  # bob could do the same by editing the fields
    assert ws.realtime.snapshot("board")["fields"]["tags"] == []
    assert ws.realtime.snapshot("board")["fields"]["body"] == "text"


def test_a_new_document_from_another_agents_state_is_not_created(ws: Workspace) -> None:
    doc = Document("notes", {"text": "rga"})
    doc.typed("text", RGA).insert(0, "alice wrote this", "alice")
    with pytest.raises(ZoneDenied):
        ws.realtime.merge_state("bob", "notes", doc.to_json())
    assert not ws.realtime.exists("notes")
    with pytest.raises(InvalidInput):
        ws.realtime.merge_state("bob", "notes", Document("other", {"text": "rga"}).to_json())
    ws.realtime.merge_state("alice", "notes", doc.to_json())
    assert ws.realtime.snapshot("notes")["fields"]["text"] == "alice wrote this"


def test_a_refused_change_of_one_agent_does_not_stop_another(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    with pytest.raises(ZoneDenied):
        ws.realtime.merge_state("bob", "board", forged(ws, "charlie").to_json())
    ws.realtime.update("bob", "board", lambda d, r: d.typed("votes", PNCounter).increment(r, 1))
    assert ws.realtime.snapshot("board")["fields"]["votes"] == 1


def test_state_files_are_the_documents_canonical_json(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    ws.realtime.update("alice", "board", lambda d, r: d.typed("title", LWWRegister).set('看板 "x"\n', r))
    ws.realtime.update("alice", "board", lambda d, r: d.typed("body", RGA).insert(0, "tab\there ü", r))
    doc = ws.realtime.load("board")
    canonical = json.dumps(doc.to_json(), ensure_ascii=False, separators=(",", ":")).encode()
    assert encode_state(doc) == canonical
    assert (ws.realtime.state_dir / "board.crdt.json").read_bytes() == canonical
    assert (ws.realtime.state_dir / WRITERS / "board" / writer_files(ws)[0]).read_bytes() == canonical


# -- clients of a shared filesystem ---------------------------------------------------------------------------


def test_a_merged_file_read_short_is_left_out_once_writer_files_hold_everything(ws: Workspace) -> None:
    """sshfs and bindfs serve a file renamed over through another client with the old, cached size: the merged
    file reads short. Once writer files exist it holds nothing of its own, so a reader leaves it out."""
    ws.realtime.create("alice", "board", BOARD)
    ws.realtime.update("alice", "board", lambda doc, replica: doc.typed("votes", PNCounter).increment(replica, 3))
    merged = ws.realtime.state_dir / "board.crdt.json"
    short = merged.with_name("short.tmp")
    short.write_bytes(merged.read_bytes()[:40])  # what a short read returns (not in place: it may be a hard link)
    short.replace(merged)
    assert Workspace(ws.root).realtime.snapshot("board")["fields"]["votes"] == 3


def test_a_merged_file_read_short_before_any_writer_file_is_an_error(ws: Workspace) -> None:
    ws.realtime.create("alice", "board", BOARD)
    merged = ws.realtime.state_dir / "board.crdt.json"
    merged.write_bytes(merged.read_bytes()[:40])
    with pytest.raises(StoreCorrupt):
        Workspace(ws.root).realtime.snapshot("board")


@pytest.mark.parametrize("listed", ["its_previous_file", "no_file"])
def test_a_merged_file_read_short_while_another_client_writes_is_read_again(
    ws: Workspace, listed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two daemons on two clients (bindfs, sshfs): the reader stats the merged file and lists the writer files,
    and before it reads them the other daemon writes its next file, unlinks the listed one (or writes its first)
    and renames the merged file over: the reader's client serves the new merged file with the size it cached at
    the stat, short. With no writer file read, that short file is all the reader has; the writer file that holds
    it all exists by now, so the read is done again (it failed with EIO, one write in four CI runs of the load)."""
    ws.realtime.create("alice", "board", BOARD)
    writer, reader = Workspace(ws.root), Workspace(ws.root)  # each daemon, its own store object
    writes = 0

    def vote_and_tag(doc: Document, replica: str) -> None:
        doc.typed("votes", PNCounter).increment(replica, 1)
        doc.typed("tags", ORSet).add(f"each write makes the state longer: {writes}", replica)

    def write() -> None:
        nonlocal writes
        writes += 1
        writer.realtime.update("alice", "board", vote_and_tag)

    if listed == "its_previous_file":
        write()
    merged = ws.realtime.state_dir / "board.crdt.json"
    cached_size = merged.stat().st_size  # what the reader's client caches at its stat
    files = reader.realtime.files
    real_read, between = files._read, []

    def other_daemon_writes_first(dir_fd: int, name: str, shown: str, *, known: bool = False) -> bytes | None:
        if not between:
            between.append((name, writer_files(ws)))
            write()
            short = merged.with_name("short.tmp")
            short.write_bytes(merged.read_bytes()[:cached_size])  # the reader's client: new file, cached size
            short.replace(merged)
        return real_read(dir_fd, name, shown, known=known)

    monkeypatch.setattr(files, "_read", other_daemon_writes_first)
    fields = reader.realtime.snapshot("board")["fields"]
    assert between, "the other daemon's write did not come between the reader's listing and its reads"
    assert fields["votes"] == writes and len(fields["tags"]) == writes


def test_a_known_document_that_vanishes_for_a_moment_is_looked_for_again(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bindfs answers ENOENT now and then for a file another client is renaming over: documents are never
    deleted, so one seen before is looked for again instead of failing the write."""
    ws.realtime.create("alice", "board", BOARD)
    zone = ws.realtime
    zone.snapshot("board")
    store = zone.files
    real, vanished = store._current, []

    def flaky(doc_id: str) -> object:
        if len(vanished) < 3:
            vanished.append(doc_id)
            raise NotFound(f"no realtime document {doc_id!r}")
        return real(doc_id)

    monkeypatch.setattr(store, "_current", flaky)
    assert zone.snapshot("board")["doc_id"] == "board"
    assert vanished == ["board"] * 3
    with pytest.raises(NotFound):  # a document never seen here is not waited for
        zone.snapshot("other")


def test_a_stale_handle_on_glusterfs_is_tried_again(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """GlusterFS answers ESTALE for a file renamed over through another client, for a second or two."""
    ws.realtime.create("alice", "board", BOARD)
    store = ws.realtime.files
    real, stale = store._current, []

    def flaky(doc_id: str) -> object:
        if len(stale) < 3:
            stale.append(doc_id)
            raise StoreCorrupt("realtime/.crdt_state/board.crdt.json: Stale file handle") from OSError(
                errno.ESTALE, os.strerror(errno.ESTALE)
            )
        return real(doc_id)

    monkeypatch.setattr(store, "_current", flaky)
    assert ws.realtime.snapshot("board")["doc_id"] == "board"
    assert stale == ["board"] * 3
