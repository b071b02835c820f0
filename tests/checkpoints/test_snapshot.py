"""``omxfs snapshot``, ``snapshot restore`` and ``snapshots``: the whole workspace recorded by a supervisor and
brought back forward, as real processes on a real store (and through a real ``omxfs mount`` where agents work),
with kill -9 at chosen points (``crashpoints``) followed by ``fsck``."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from omxfs.checkpoints import ZoneHistory
from omxfs.crdt import Document, LWWRegister
from omxfs.snapshots import Snapshots, take
from omxfs.store import Workspace
from omxfs.store.fsck import fsck
from tests.checkpoints.conftest import kill_at, omxfs, tree_state
from tests.fuse.conftest import Mount, clean_env
from tests.view.conftest import poll, view_argv

SCHEMA = {"title": "lww_register", "body": "rga", "tags": "or_set", "count": "pn_counter"}


def edit(ws: Workspace, agent: str, doc: str, **texts: str) -> None:
    """``agent`` writes each field's file text, as through the mount (``write_text`` against what it read)."""

    def change(d: Document, replica: str) -> None:
        for name, text in texts.items():
            live = d.field(name)
            live.write_text(live.base(), text, replica)

    ws.realtime.update(agent, doc, change)


def workspace_at_work(ws: Workspace) -> None:
    """Every kind of thing a snapshot records: versions, a delivery, a realtime document, files in two zones."""
    ws.collab.write("alice", "plan.md", b"one\n", expected_version=0)
    ws.collab.write("bob", "plan.md", b"two\n", expected_version=1)
    ws.handoff.deliver("alice", "bob", "data.csv", b"1,2\n", "first data")
    ws.realtime.create("alice", "notes", SCHEMA)
    edit(ws, "alice", "notes", title="Hello", body="body text\n", tags="a\nb\n", count="5")
    (ws.root / "agents/alice/work").mkdir()
    (ws.root / "agents/alice/work/draft.txt").write_text("draft\n")
    (ws.root / "agents/alice/keep.txt").write_text("keep\n")
    (ws.root / "agents/bob/bob.txt").write_text("bob's\n")


def change_everything(ws: Workspace) -> None:
    ws.collab.write("charlie", "plan.md", b"three\n", expected_version=2)
    ws.collab.write("alice", "new.md", b"made after\n", expected_version=0)
    ws.handoff.deliver("alice", "bob", "data.csv", b"9,9\n", "second data")  # a re-delivery
    edit(ws, "bob", "notes", title="Bye", body="other\n", tags="c\n", count="9")
    (ws.root / "agents/alice/work/draft.txt").unlink()
    (ws.root / "agents/alice/work").rmdir()
    (ws.root / "agents/alice/keep.txt").write_text("changed\n")
    (ws.root / "agents/alice/extra.txt").write_text("new\n")


def test_a_restore_brings_everything_back_forward_with_its_history(mount: Callable[..., Mount]) -> None:
    m = mount(agents=["alice", "bob", "charlie"], supervisors=["boss"], default="alice")
    ws = m.ws
    ws.realtime.create("alice", "notes", SCHEMA)
    # the agents work through the mount, as they do
    m.run("echo one > collaborative/current/plan.md", agent="alice", check=True)
    m.run("cat collaborative/current/plan.md && echo two > collaborative/current/plan.md", agent="bob", check=True)
    m.run("printf '1,2\\n' > handoff/alice_to_bob/data.csv", agent="alice", check=True)
    m.run("printf Hello > realtime/notes/title && printf 'a\\nb\\n' > realtime/notes/tags", agent="alice", check=True)
    m.run("mkdir agents/alice/work && echo draft > agents/alice/work/draft.txt", agent="alice", check=True)
    m.run("echo keep > agents/alice/keep.txt && echo mine > agents/bob/bob.txt", agent="alice", check=False)
    m.run("echo mine > agents/bob/bob.txt", agent="bob", check=True)
    zones = {z: tree_state(m.disk / "agents" / z) for z in ("alice", "bob")}
    values = ws.realtime.snapshot("notes")

    made = omxfs("snapshot", str(m.root), "-m", "before the change", "--as", "boss")
    assert made.stdout == "1\n" and "2 delivery" not in made.stderr and "1 delivery(ies)" in made.stderr

    plan = "collaborative/current/plan.md"
    m.run(
        f"cat {plan} && echo three > {plan} && echo after > collaborative/current/new.md", agent="charlie", check=True
    )
    m.run("printf '9,9\\n' > handoff/alice_to_bob/data.csv", agent="alice", check=True)  # a re-delivery
    m.run("printf Bye > realtime/notes/title && printf 'c\\n' > realtime/notes/tags", agent="bob", check=True)
    m.run("rm -rf agents/alice/work && echo changed > agents/alice/keep.txt && echo x > agents/alice/x", "alice", True)
    changed_zone = tree_state(m.disk / "agents/alice")

    done = omxfs("snapshot", "restore", str(m.root), "1", "--as", "boss")
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "restored snapshot 1: 1 zone(s), 1 collaborative file(s) as new versions, 1 delivery(ies) delivered again, "
        "1 realtime document(s) (2 field(s)) by new operations"
    ), done.stdout
    assert "made since the snapshot, left as they are: 1 files" in done.stdout
    assert f"undo with: omxfs snapshot restore {m.root} 2 --as boss" in lines

    # collaborative: a new version with the snapshot's content; every older version still there
    history = ws.collab.history("plan.md")
    assert [e.author for e in history] == ["alice", "bob", "charlie", "boss"]
    assert history[-1].provenance == {"snapshot": "1", "version": "2"}
    assert [ws.collab.read_version("plan.md", n) for n in (1, 2, 3, 4)] == [b"one\n", b"two\n", b"three\n", b"two\n"]
    assert m.path("collaborative/current/plan.md").read_text() == "two\n"
    assert m.path("collaborative/current/new.md").read_text() == "after\n"  # made since: left as it is
    # handoff: delivered again; the re-delivery it replaces is still readable
    assert m.path("handoff/alice_to_bob/data.csv").read_text() == "1,2\n"
    kept = ws.handoff.deliveries("alice", "bob", "data.csv")
    assert [ws.handoff.kept("alice", "bob", "data.csv", k.number).content for k in kept] == [
        b"1,2\n",
        b"9,9\n",
        b"1,2\n",
    ]
    assert kept[-1].meta.provenance == {"snapshot": "1", "delivery": "1"}
    # realtime: the snapshot's values, by new operations of the supervisor
    assert ws.realtime.snapshot("notes") == values
    assert m.path("realtime/notes/title").read_text() == "Hello"
    assert ws.realtime.load("notes").typed("title", LWWRegister).replica.startswith("boss+")
    # zones: exactly as they were
    assert {z: tree_state(m.disk / "agents" / z) for z in ("alice", "bob")} == zones
    assert m.path("agents/alice/work/draft.txt").read_text() == "draft\n"
    assert any(
        r["action"] == "restore snapshot 1 (undo: snapshot 2)" and r["agent"] == "boss"
        for r in ws.audit_trail().records
    )
    assert fsck(Workspace(m.disk)).clean

    undone = omxfs("snapshot", "restore", str(m.root), "2", "--as", "boss")  # the undo line, as printed
    assert undone.returncode == 0
    assert m.path("collaborative/current/plan.md").read_text() == "three\n"
    assert m.path("handoff/alice_to_bob/data.csv").read_text() == "9,9\n"
    assert m.path("realtime/notes/title").read_text() == "Bye"
    assert tree_state(m.disk / "agents/alice") == changed_zone


def test_zone_restores_only_that_zone(ws: Workspace) -> None:
    workspace_at_work(ws)
    alice = tree_state(ws.root / "agents/alice")
    omxfs("snapshot", str(ws.root), "--as", "boss")
    change_everything(ws)
    (ws.root / "agents/bob/bob.txt").write_text("bob changed\n")
    bob = tree_state(ws.root / "agents/bob")
    done = omxfs("snapshot", "restore", str(ws.root), "1", "--zone", "alice", "--as", "boss")
    assert done.stdout.splitlines() == [
        "restored agents/alice/ as in snapshot 1",
        f"undo with: omxfs restore {ws.root} alice 2 --as boss",
    ]
    assert tree_state(ws.root / "agents/alice") == alice
    assert tree_state(ws.root / "agents/bob") == bob  # not this zone
    assert ws.collab.read("plan.md").content == b"three\n"  # nor the shared zones
    assert ws.handoff.read("alice", "bob", "data.csv").content == b"9,9\n"
    assert Snapshots(ws).numbers() == [1]  # no snapshot first: the zone restore's checkpoint undoes it
    omxfs("restore", str(ws.root), "alice", "2", "--as", "boss")
    assert (ws.root / "agents/alice/keep.txt").read_text() == "changed\n"


def test_what_is_as_in_the_snapshot_is_left_alone(ws: Workspace) -> None:
    workspace_at_work(ws)
    omxfs("snapshot", str(ws.root), "--as", "boss")
    done = omxfs("snapshot", "restore", str(ws.root), "1", "--as", "boss")
    assert done.stdout.splitlines()[:2] == [
        "restored snapshot 1: 0 zone(s), 0 collaborative file(s) as new versions, 0 delivery(ies) delivered again, "
        "0 realtime document(s) (0 field(s)) by new operations",
        "already as in the snapshot, left alone: 6",  # 3 zones, 1 file, 1 delivery, 1 document
    ], done.stdout
    assert len(ws.collab.history("plan.md")) == 2
    assert len(ws.handoff.deliveries("alice", "bob", "data.csv")) == 1


def test_snapshots_lists_them(ws: Workspace) -> None:
    workspace_at_work(ws)
    assert omxfs("snapshots", str(ws.root)).stdout.startswith("no snapshots yet")
    omxfs("snapshot", str(ws.root), "-m", "first", "--as", "boss")
    omxfs("snapshot", str(ws.root), "--as", "boss")
    listed = json.loads(omxfs("snapshots", str(ws.root), "--json").stdout)
    assert [(s["id"], s["message"], s["by"]) for s in listed] == [(1, "first", "boss"), (2, "", "boss")]
    assert listed[0] | {"time": ""} == {
        "id": 1,
        "time": "",
        "message": "first",
        "by": "boss",
        "zones": 3,
        "files": 1,
        "deliveries": 1,
        "documents": 1,
    }
    table = omxfs("snapshots", str(ws.root)).stdout.splitlines()
    assert table[0].split() == ["ID", "TIME", "BY", "ZONES", "FILES", "DELIV", "DOCS", "MESSAGE"]
    assert table[1].split()[0] == "1" and table[1].endswith("first")


def test_refusals_are_one_line(ws: Workspace, tmp_path: os.PathLike[str]) -> None:
    workspace_at_work(ws)
    omxfs("snapshot", str(ws.root), "--as", "boss")
    bare = Workspace.init(f"{tmp_path}/bare", agents=["alice"])
    for args, said in (
        (("snapshot", str(ws.root), "--as", "alice"), "alice is no supervisor of this workspace: only boss may"),
        (("snapshot", "restore", str(ws.root), "1", "--as", "bob"), "bob is no supervisor of this workspace"),
        (("snapshot", "restore", str(ws.root), "7", "--as", "boss"), "this workspace has no snapshot 7"),
        (("snapshot", "restore", str(ws.root), "x", "--as", "boss"), "'x' names no snapshot"),
        (("snapshot", "restore", str(ws.root), "1", "--zone", "zed", "--as", "boss"), "snapshot 1 has no zone 'zed'"),
        (("snapshot", str(bare.root), "--as", "alice"), "this workspace has no supervisor"),
        (("snapshot", str(ws.root)), "unknown agent 'nobody-here'"),
    ):
        done = omxfs(*args, check=False, env={**clean_env(), "USER": "nobody-here", "LOGNAME": "nobody-here"})
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert said in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert Snapshots(ws).numbers() == [1]
    assert ws.collab.read("plan.md").content == b"two\n"


# -- kill -9 ----------------------------------------------------------------------------------------------------

SCRIPT = """
import sys
from omxfs.snapshots import restore_snapshot, take
from omxfs.store import Workspace
ws = Workspace(sys.argv[1])
if sys.argv[2] == "snapshot":
    take(ws, "boss", "killed")
else:
    restore_snapshot(ws, "boss", int(sys.argv[3]))
"""


def killed_at(point: str, ws: Workspace, *args: str) -> None:
    kill_at(point, SCRIPT, ws.root, *args)


@pytest.mark.parametrize("point", ["snapshot-zone:2", "snapshot-delivery", "snapshot-record"])
def test_a_snapshot_killed_midway_leaves_the_earlier_ones_whole(ws: Workspace, point: str) -> None:
    workspace_at_work(ws)
    omxfs("snapshot", str(ws.root), "--as", "boss")
    first = (ws.meta / "snapshots/1.json").read_bytes()
    change_everything(ws)
    killed_at(point, ws, "snapshot")
    assert Snapshots(ws).numbers() == [1] and (ws.meta / "snapshots/1.json").read_bytes() == first
    report = fsck(ws, temp_grace=0)
    assert not report.corrupt, [f.line() for f in report.findings]
    assert {f.kind for f in report.findings} <= {"temp-file"}, [f.line() for f in report.findings]
    assert omxfs("snapshot", str(ws.root), "--as", "boss").stdout == "2\n"
    assert fsck(ws).clean


@pytest.mark.parametrize("point", ["snapshot-restore-step:1", "snapshot-restore-step:3", "restore-built"])
def test_a_restore_killed_midway_is_finished_by_running_it_again(ws: Workspace, point: str) -> None:
    workspace_at_work(ws)
    alice = tree_state(ws.root / "agents/alice")
    values = ws.realtime.snapshot("notes")
    omxfs("snapshot", str(ws.root), "--as", "boss")
    change_everything(ws)
    killed_at(point, ws, "restore", "1")
    report = fsck(ws, temp_grace=0)
    assert not report.corrupt, [f.line() for f in report.findings]
    assert {f.kind for f in report.findings} <= {"temp-file", "stale-restore"}, [f.line() for f in report.findings]
    fsck(ws, repair=True, temp_grace=0)
    assert fsck(ws, temp_grace=0).clean
    assert Snapshots(ws).numbers() == [1, 2]  # the snapshot made first was whole before anything changed

    omxfs("snapshot", "restore", str(ws.root), "1", "--as", "boss")
    assert tree_state(ws.root / "agents/alice") == alice
    assert ws.collab.read("plan.md").content == b"two\n"
    assert len(ws.collab.history("plan.md")) == 4  # one new version, whether the killed run made it or this one
    assert ws.handoff.read("alice", "bob", "data.csv").content == b"1,2\n"
    assert ws.realtime.snapshot("notes") == values
    assert fsck(ws).clean


def test_a_prune_keeps_the_checkpoints_snapshots_name(ws: Workspace) -> None:
    workspace_at_work(ws)
    omxfs("snapshot", str(ws.root), "--as", "boss")
    change_everything(ws)
    omxfs("checkpoint", str(ws.root), "--as", "alice")
    (ws.root / "agents/alice/more.txt").write_text("more\n")
    omxfs("checkpoint", str(ws.root), "--as", "alice")
    pruned = omxfs("checkpoints", str(ws.root), "alice", "--prune", "1", "--as", "alice")
    assert "removed 1 checkpoint(s)" in pruned.stderr
    assert "kept 1 that snapshots or pending branches name" in pruned.stderr
    listed = json.loads(omxfs("checkpoints", str(ws.root), "alice", "--json").stdout)
    assert [c["id"] for c in listed] == ["1", "3"]  # the snapshot's and the newest
    assert fsck(ws).clean
    omxfs("snapshot", "restore", str(ws.root), "1", "--as", "boss")
    assert (ws.root / "agents/alice/keep.txt").read_text() != "changed\n"


def test_a_zone_whose_checkpoint_is_gone_is_said_and_the_rest_restored(ws: Workspace) -> None:
    """A checkpoint a snapshot names, removed anyway (by hand, or by a prune from before prunes kept them)."""
    workspace_at_work(ws)
    omxfs("snapshot", str(ws.root), "--as", "boss")
    change_everything(ws)
    omxfs("checkpoint", str(ws.root), "--as", "alice")
    (ws.root / ".omxfs/checkpoints/alice/manifests/1.json").unlink()
    found = [f for f in fsck(ws).findings if f.kind == "dangling-snapshot"]
    assert len(found) == 1 and "checkpoint 1 of alice" in found[0].detail and found[0].is_corruption
    done = omxfs("snapshot", "restore", str(ws.root), "1", "--as", "boss", check=False)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"not restored: agents/alice/: alice has no checkpoint 1 (see `omxfs checkpoints {ws.root} alice`)"
    ], done.stderr
    assert "0 zone(s), 1 collaborative file(s)" in done.stdout  # the rest is back
    assert ws.collab.read("plan.md").content == b"two\n"
    assert (ws.root / "agents/alice/keep.txt").read_text() == "changed\n"


def test_a_zone_with_its_view_running_is_left_and_restored_later_with_zone(store: Workspace, tmp_path: Path) -> None:
    """A real ``omxfs run`` view of alice holds her zone: the restore brings back all else and says how to finish."""
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "f").write_text("snapshotted\n")
    (ws / "agents/bob/g").write_text("snapshotted\n")
    store.collab.write("bob", "plan.md", b"then\n", expected_version=0)
    omxfs("snapshot", str(ws), "--as", "boss")
    (ws / "agents/bob/g").write_text("changed\n")
    store.collab.write("bob", "plan.md", b"now\n", expected_version=1)
    script = "echo changed > f; touch started; while [ ! -e stop ]; do sleep 0.05; done"
    view = subprocess.Popen(view_argv(ws, "alice", script), cwd=tmp_path, env=clean_env())
    try:
        poll(lambda: (zone / "started").exists(), what="the view to start")
        done = omxfs("snapshot", "restore", str(ws), "1", "--as", "boss", check=False)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.startswith("not restored: agents/alice/: a view of alice is running"), done.stderr
        assert (zone / "f").read_text() == "changed\n"
        assert (ws / "agents/bob/g").read_text() == "snapshotted\n" and store.collab.read(
            "plan.md"
        ).content == b"then\n"
    finally:
        (zone / "stop").touch()
        assert view.wait(timeout=60) == 0
    omxfs("snapshot", "restore", str(ws), "1", "--zone", "alice", "--as", "boss")
    assert (zone / "f").read_text() == "snapshotted\n" and not (zone / "started").exists()


@contextlib.contextmanager
def _no_lock(name: str) -> Iterator[None]:
    yield


def _snapshot_unlocked(root: str, message: str) -> None:
    """A supervisor's snapshot from a process whose locks hold nothing, as on a shared filesystem's client."""
    ws = Workspace(root)
    ws.locks.hold = _no_lock  # type: ignore[method-assign]
    take(ws, "boss", message)


def test_two_snapshots_at_once_take_two_numbers_without_a_lock(ws: Workspace) -> None:
    workspace_at_work(ws)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_snapshot_unlocked, args=(str(ws.root), tag)) for tag in ("one", "two")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    made = Snapshots(ws).all()
    assert [s.number for s in made] == [1, 2] and {s.message for s in made} == {"one", "two"}
    assert made[0].collaborative == made[1].collaborative and made[0].zones.keys() == made[1].zones.keys()
    for zone in made[0].zones:  # each made or reused a checkpoint of the same zone: the same state either way
        history = ZoneHistory(ws, zone)
        first, second = (history.load(s.zones[zone]).by_path() for s in made)
        assert first.keys() == second.keys() and all(first[p].key() == second[p].key() for p in first)
    assert fsck(ws).clean  # which checks that what each names is there
