"""The audit trail as safe as the store (issue 27): a record file of its own per audited change, created
exclusively, so that writers in many processes (or on many clients of a shared filesystem) never overwrite or
interleave with each other; read back merged by time with a store's older ``audit.jsonl``; checked by fsck;
shown by ``omxfs audit``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.omxfs import main as omxfs
from omxfs.store import Workspace
from omxfs.store.fsck import fsck
from scripts import shared_fs
from tests.support.scripts import unmount_everything_under

WRITER = """
import sys
from omxfs.store import Workspace
ws = Workspace(sys.argv[1])
for n in range(int(sys.argv[3])):
    ws.audit("boss", f"write {sys.argv[2]}-{n}", "agents/alice/x")
"""

LEGACY = [
    {
        "timestamp": "2020-01-01T00:00:00.000001Z",
        "agent": "boss",
        "uid": 0,
        "pid": 1,
        "action": "old first",
        "path": "a",
    },
    {
        "timestamp": "2999-01-01T00:00:00.000001Z",
        "agent": "boss",
        "uid": 0,
        "pid": 1,
        "action": "old last",
        "path": "b",
    },
]


def test_writers_in_many_processes_at_once_lose_no_record(ws: Workspace) -> None:
    writers, each = 4, 60
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    started = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(ws.root), str(w), str(each)], env=env)
        for w in range(writers)
    ]
    assert [p.wait(timeout=120) for p in started] == [0] * writers
    trail = ws.audit_trail()
    actions = [r["action"] for r in trail.records]
    assert sorted(actions) == sorted(f"write {w}-{n}" for w in range(writers) for n in range(each))
    assert [r["timestamp"] for r in trail.records] == sorted(r["timestamp"] for r in trail.records)
    for w in range(writers):  # one writer's records keep its order
        mine = [a for a in actions if a.startswith(f"write {w}-")]
        assert mine == [f"write {w}-{n}" for n in range(each)]
    assert not (ws.meta / "logs/audit.jsonl").exists() and trail.unreadable == []
    assert fsck(ws).checked["audit records"] == writers * each


@pytest.mark.parametrize("kind", shared_fs.KINDS)
def test_writers_on_two_clients_of_a_shared_filesystem_lose_no_record(kind: str, tmp_path: Path) -> None:
    """Two FUSE clients of one store directory (``scripts/shared_fs.py``: sshfs to a private sshd, or bindfs),
    which share no OS locks and cache attributes: records made through both at once are all there and fsck finds
    them sound. (On these two tiers, both served by this machine's kernel, O_APPEND to one file happened to lose
    nothing either, 200 of 200 lines kept: the loss issue 27 measured was between JuiceFS clients, which this
    machine does not have; this shows the exclusive creates and links the records rest on work here.)"""
    reason = shared_fs.missing(kind)
    if reason is not None:
        pytest.skip(f"{kind}: {reason}")
    ws = Workspace.init(tmp_path / "store", agents=["alice"], supervisors=["boss"])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    each = 50
    try:
        with shared_fs.clients(kind, ws.root, tmp_path, n=2) as views:
            started = [
                subprocess.Popen([sys.executable, "-c", WRITER, str(view), f"{c}.{w}", str(each)], env=env)
                for c, view in enumerate(views)
                for w in range(2)
            ]
            assert [p.wait(timeout=300) for p in started] == [0] * len(started)
    finally:
        unmount_everything_under(tmp_path)
    actions = sorted(r["action"] for r in ws.audit_trail().records)
    assert actions == sorted(f"write {c}.{w}-{n}" for c in range(2) for w in range(2) for n in range(each))
    report = fsck(ws)
    assert not report.corrupt and report.checked["audit records"] == 4 * each


def test_an_older_audit_jsonl_is_read_merged_by_time_and_never_written(ws: Workspace) -> None:
    legacy = ws.meta / "logs/audit.jsonl"
    legacy.write_text("".join(json.dumps(r) + "\n" for r in LEGACY), encoding="utf-8")
    before = legacy.read_bytes()
    ws.private.write("boss", "alice", "review.md", b"see me")
    assert legacy.read_bytes() == before
    trail = ws.audit_trail()
    assert [r["action"] for r in trail.records] == ["old first", "write", "old last"]
    assert trail.records[1]["path"] == "agents/alice/review.md" and trail.records[1]["pid"] == os.getpid()


def test_fsck_counts_records_reports_bad_ones_and_cuts_a_torn_old_line(ws: Workspace) -> None:
    ws.audit("boss", "write", "agents/alice/x")
    legacy = ws.meta / "logs/audit.jsonl"
    legacy.write_text(json.dumps(LEGACY[0]) + "\n" + '{"timestamp": "2020-01-0', encoding="utf-8")
    (day,) = (ws.meta / "logs/audit").iterdir()
    (day / "20200101T000000.000000Z-0123456789abcdef.json").write_text("{not json", encoding="utf-8")
    report = fsck(ws)
    kinds = sorted((f.kind, f.is_corruption) for f in report.findings)
    assert kinds == [("bad-audit", True), ("torn-audit", False)], report.findings
    assert report.checked["audit records"] == 2
    bad = f"logs/audit/{day.name}/20200101T000000.000000Z-0123456789abcdef.json"
    assert ws.audit_trail().unreadable == ["logs/audit.jsonl:2", bad]
    fsck(ws, repair=True)
    assert legacy.read_text(encoding="utf-8") == json.dumps(LEGACY[0]) + "\n"
    (day / "20200101T000000.000000Z-0123456789abcdef.json").unlink()
    assert fsck(ws).clean


def test_omxfs_audit_shows_the_trail_as_text_and_as_json(ws: Workspace) -> None:
    runner = CliRunner()
    empty = runner.invoke(omxfs, ["audit", str(ws.root)])
    assert empty.exit_code == 0 and "no audited changes" in empty.output
    (ws.meta / "logs/audit.jsonl").write_text(json.dumps(LEGACY[0]) + "\n", encoding="utf-8")
    ws.private.write("boss", "alice", "review.md", b"see me")
    shown = runner.invoke(omxfs, ["audit", str(ws.root)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].split() == ["TIME", "AGENT", "UID", "PID", "PATH", "ACTION"]
    assert "old first" in lines[1] and "agents/alice/review.md" in lines[2] and lines[2].endswith("write")
    listed = json.loads(runner.invoke(omxfs, ["audit", str(ws.root), "--json"]).output)
    assert [(r["agent"], r["action"]) for r in listed] == [("boss", "old first"), ("boss", "write")]
    missing = runner.invoke(omxfs, ["audit", str(ws.root / "nowhere")])
    assert missing.exit_code != 0 and "Traceback" not in missing.output
