"""The store's records read back from ``.omxfs/`` (snapshots, kept deliveries, collaborative entries, audit and
mount records) are checked field by field: a crafted one is corruption that ``omxfs fsck`` reports, and no command
follows a name in it. Each test crafts one record in a real store, as anyone with write access to it could."""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from omxfs.errors import StoreCorrupt
from omxfs.snapshots import restore_snapshot, take
from omxfs.store import Workspace
from omxfs.store.audit import record_name
from omxfs.store.fsck import Finding, fsck
from omxfs.store.mount_records import read_records
from omxfs.store.records import utc_now
from tests.checkpoints.conftest import omxfs

SECRET = b"canary: the content of a file outside the store\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A store with one of everything a snapshot names, the snapshot 1 of it, and a canary beside the store."""
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"], supervisors=["boss"])
    (ws.root / "agents/alice/notes.md").write_text("n\n")
    ws.collab.write("alice", "plan.md", b"v1", expected_version=0)
    ws.handoff.deliver("alice", "bob", "d.csv", b"1,2", "first")
    take(ws, "boss", "all of it")
    (tmp_path / "canary.txt").write_bytes(SECRET)
    return ws


def rewrite_json(path: Path, change: Any) -> None:
    """Replace a record by ``change(data)`` of its JSON (the store makes its records read-only: a new file)."""
    data = json.loads(path.read_text())
    changed = change(data)
    path.unlink()
    path.write_text(json.dumps(data if changed is None else changed))


def findings(ws: Workspace, kind: str, *, repair: bool = False) -> list[Finding]:
    return [f for f in fsck(ws, repair=repair).findings if f.kind == kind]


def cli_corrupt(ws: Workspace) -> list[str]:
    """The lines the real ``omxfs fsck`` prints as corruption."""
    done = omxfs("fsck", str(ws.root), check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith("CORRUPT")]


# -- snapshots --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: d["collaborative"].update({"../../canary.txt": d["collaborative"].pop("plan.md")}), "'..'"),
        (lambda d: d["collaborative"].update({"/plan.md": d["collaborative"].pop("plan.md")}), "absolute path"),
        (lambda d: d["collaborative"].update({"a//plan.md": d["collaborative"].pop("plan.md")}), "not a normalized"),
        (lambda d: d["handoffs"][0].update(filename="../../../canary.txt"), "'..'"),
        (lambda d: d["handoffs"][0].update({"from": "../alice"}), "invalid agent name"),
        (lambda d: d["handoffs"][0].update(sha256="../../x"), "not 64 lowercase hex digits"),
        (lambda d: d["zones"].update({"../bob": 1}), "invalid agent name"),
        (lambda d: d["zones"].update(alice="1"), "is not an integer"),
        (lambda d: d["realtime"].update({"../doc": {}}), "invalid document id"),
    ],
    ids=["collab-parent", "collab-absolute", "collab-empty", "handoff-parent", "sender", "sha256", "zone", "number",
         "doc"],
)  # fmt: skip
def test_a_snapshot_naming_a_path_outside_its_zone_is_bad_and_not_brought_back(
    ws: Workspace, change: Any, said: str
) -> None:
    record = ws.meta / "snapshots/1.json"
    rewrite_json(record, change)
    [finding] = findings(ws, "bad-snapshot")
    assert finding.path == ".omxfs/snapshots/1.json" and said in finding.detail, finding.detail
    assert any("bad-snapshot" in line for line in cli_corrupt(ws))
    with pytest.raises(StoreCorrupt, match=said):
        restore_snapshot(ws, "boss", 1)
    assert ws.collab.read("plan.md").content == b"v1"
    assert not any(SECRET in p.read_bytes() for p in ws.root.rglob("*") if p.is_file() and not p.is_symlink())


# -- kept deliveries and handoff metadata -----------------------------------------------------------------------


def delivery_record(ws: Workspace) -> Path:
    [record] = (ws.meta / "deliveries/alice_to_bob").rglob("1.json")
    return record


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("filename", "../../../canary.txt", "'..'"),
        ("filename", "/etc/passwd", "absolute path"),
        ("filename", "./d.csv", "not a normalized path"),
        ("sha256", "../../../../canary.txt", "String should match pattern"),
        ("from", "al/ice", "String should match pattern"),
        ("number", "1", "number must be a positive integer"),
    ],
)
def test_a_delivery_record_with_a_bad_field_is_reported_and_its_content_never_read(
    ws: Workspace, field: str, value: str, said: str
) -> None:
    record = delivery_record(ws)
    rewrite_json(record, lambda d: d.update({field: value}))
    [finding] = findings(ws, "bad-delivery-record")
    assert said in finding.detail and finding.path.endswith("/1.json"), finding.detail
    with pytest.raises(StoreCorrupt):
        ws.handoff.history.load("alice_to_bob", PurePosixPath("d.csv"), 1)
    with pytest.raises(StoreCorrupt):
        ws.handoff.deliveries("alice", "bob", "d.csv")


def test_a_delivery_record_of_another_delivery_is_reported(ws: Workspace) -> None:
    rewrite_json(delivery_record(ws), lambda d: d.update(filename="other.csv"))
    [finding] = findings(ws, "bad-delivery-record")
    assert "the record is of another delivery ('other.csv')" in finding.detail


def test_handoff_metadata_naming_no_sha256_is_bad_meta_and_not_recorded(ws: Workspace) -> None:
    meta = ws.root / "handoff/alice_to_bob/d.csv.meta.json"
    rewrite_json(meta, lambda d: d.update(sha256="../../../canary.txt"))
    [finding] = findings(ws, "bad-meta", repair=True)
    assert "String should match pattern" in finding.detail and not finding.repaired
    assert len(list((ws.meta / "deliveries/blobs").rglob("*"))) == 2  # one blob, in its <aa>/ directory


# -- collaborative entries --------------------------------------------------------------------------------------


def test_a_version_entry_whose_staged_name_is_a_path_is_bad_and_repair_does_not_rename_it(ws: Workspace) -> None:
    directory = ws.collab.versions_dir / "plan.md"
    outside = ws.root.parent / "canary.txt"
    rewrite_json(directory / "v1.json", lambda d: d.update(staged="../../../../../canary.txt"))
    (directory / "v1.txt").unlink()  # so a repair would look for the staged name
    [finding] = findings(ws, "bad-entry", repair=True)
    assert "String should match pattern" in finding.detail and not finding.repaired
    assert outside.read_bytes() == SECRET and not (directory / "v1.txt").exists()


def test_a_version_entry_whose_sha256_is_no_sha256_is_bad(ws: Workspace) -> None:
    rewrite_json(ws.collab.versions_dir / "plan.md/v1.json", lambda d: d.update(sha256="X" * 64))
    assert [f.kind for f in findings(ws, "bad-entry")] == ["bad-entry"]


# -- audit records ----------------------------------------------------------------------------------------------


def crafted_audit_record(ws: Workspace, content: bytes) -> Path:
    """A record file named as the audit trail names its own, holding ``content``."""
    day, name = record_name(utc_now())
    path = ws.meta / "logs/audit" / day / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\xff garbage",
        b"[1, 2, 3]",
        b'{"timestamp": "2024-01-01T00:00:00Z"}',
        b'{"timestamp": "t", "agent": "boss", "uid": "0", "pid": 1, "action": "a", "path": "p"}',
        b'{"timestamp": "t", "agent": ["boss"], "uid": 0, "pid": 1, "action": "a", "path": "p"}',
        b'{"timestamp": "t", "agent": "boss", "uid": 0, "pid": -1, "action": "a", "path": {"p": 1}}',
    ],
)
def test_an_audit_record_that_is_garbage_is_reported_and_never_shown(ws: Workspace, garbage: bytes) -> None:
    shown = ws.audit_trail().records
    record = crafted_audit_record(ws, garbage)
    [finding] = findings(ws, "bad-audit")
    assert finding.path.endswith(record.name)
    trail = ws.audit_trail()
    assert trail.records == shown and trail.unreadable == [f"logs/audit/{record.parent.name}/{record.name}"]


# -- mount records and the accept marker -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"pid": "1"}, "pid '1' is no positive integer"),
        ({"pid": 0}, "pid 0 is no positive integer"),
        ({"store": "../../elsewhere"}, "store '../../elsewhere' is no absolute path"),
        ({"log": "../../../canary.txt"}, "'..'"),
        ({"extra": 1}, "not a mount record"),
    ],
)
def test_a_mount_record_that_is_none_is_bad_record_and_skipped(
    ws: Workspace, change: dict[str, Any], said: str
) -> None:
    mounts = ws.meta / "mounts"
    mounts.mkdir(exist_ok=True)
    good = {
        "pid": os.getpid(),  # alive: a record a command would take
        "mountpoint": str(ws.root),
        "store": str(ws.root),
        "default_agent": "alice",
        "started": "2024-01-01T00:00:00+00:00",
        "log": ".omxfs/logs/mount-1.log",
    }
    (mounts / f"{os.getpid()}.json").write_text(json.dumps(good))
    assert [r.pid for r in read_records(ws.meta)] == [os.getpid()]
    assert findings(ws, "bad-record") == []
    (mounts / f"{os.getpid()}.json").write_text(json.dumps(good | change))
    assert read_records(ws.meta) == []
    [finding] = findings(ws, "bad-record", repair=True)
    assert said in finding.detail and not finding.repaired, finding.detail
    assert (mounts / f"{os.getpid()}.json").exists()


def test_the_cli_reports_each_crafted_record_at_once(ws: Workspace) -> None:
    rewrite_json(ws.meta / "snapshots/1.json", lambda d: d["handoffs"][0].update(filename="../x"))
    rewrite_json(delivery_record(ws), lambda d: d.update(sha256="0" * 63))
    good = json.dumps({"timestamp": "t", "agent": "boss", "uid": 0, "pid": 1, "action": "a", "path": "p"})
    crafted_audit_record(ws, good.replace('"uid": 0', '"uid": "root"').encode())
    kinds = sorted(line.split()[1] for line in cli_corrupt(ws))
    assert kinds == ["bad-audit", "bad-delivery-record", "bad-snapshot"], kinds
