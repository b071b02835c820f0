"""A checkpoint's manifest read back from the store is checked field by field before any use: a crafted one is
corruption that ``omxfs fsck`` reports, never a path a restore follows. Each test crafts a record in a real store
(as anyone with write access to ``.omxfs/`` could) and runs the real commands on it."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omxfs.checkpoints import ZoneHistory
from omxfs.checkpoints.blobs import BlobStore
from omxfs.checkpoints.records import (
    all_blob_names,
    all_zone_paths,
    is_blob_name,
    is_zone_path,
    parse_accept_marker,
    read_accept_marker,
)
from omxfs.checkpoints.scan import RACY_NS
from omxfs.errors import StoreCorrupt
from omxfs.store import Workspace
from omxfs.store.fsck import fsck
from tests.checkpoints.conftest import omxfs

SECRET = b"canary: the content of a file outside the store\n"
_ENTRIES, _END = ', "entries": [\n', "\n]}\n"


def manifest_file(ws: Workspace, number: int) -> Path:
    return ws.meta / "checkpoints/alice/manifests" / f"{number}.json"


def rewrite(path: Path, text: str) -> None:
    """Replace a store's file as a person with write access would (the store makes its manifests read-only)."""
    path.unlink()
    path.write_text(text)


def edit_entry(ws: Workspace, number: int, path: str, changes: dict[str, Any]) -> None:
    """Change the entry of ``path`` in checkpoint ``number``, keeping the manifest's layout (one entry a line)."""
    manifest = manifest_file(ws, number)
    head, _, rest = manifest.read_text().partition(_ENTRIES)
    lines = rest[: -len(_END)].split(",\n")
    for index, line in enumerate(lines):
        entry = json.loads(line)
        if entry["path"] == path:
            entry.update(changes)
            lines[index] = json.dumps(entry, separators=(",", ":"))
            break
    else:
        raise AssertionError(f"checkpoint {number} has no entry {path}")
    rewrite(manifest, head + _ENTRIES + ",\n".join(lines) + _END)


def edit_head(ws: Workspace, number: int, **changes: Any) -> None:
    manifest = manifest_file(ws, number)
    head, _, rest = manifest.read_text().partition(_ENTRIES)
    data = json.loads(head + "}") | changes
    rewrite(manifest, json.dumps(data)[:-1] + _ENTRIES + rest)


def bad_manifests(ws: Workspace) -> dict[str, str]:
    """What ``omxfs fsck`` (the real command) calls corrupt checkpoint data: path -> detail."""
    done = omxfs("fsck", str(ws.root), check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    found = {}
    for line in done.stdout.splitlines():
        words = line.split(maxsplit=2)
        if words[:2] == ["CORRUPT", "bad-manifest"]:
            where, _, detail = words[2].partition(": ")
            found[where] = detail
    return found


@pytest.fixture
def zone(ws: Workspace) -> Path:
    """alice's zone with a file and a directory, checkpoint 1 of it, and a canary file outside the store."""
    zone = ws.root / "agents/alice"
    (zone / "notes.txt").write_text("mine\n")
    (zone / "sub").mkdir()
    (zone / "sub/deep.txt").write_text("deep\n")
    (ws.root.parent / "canary.txt").write_bytes(SECRET)
    omxfs("checkpoint", str(ws.root), "--as", "alice")
    return zone


def holds_secret(zone: Path) -> list[str]:
    found = []
    for directory, _, files in os.walk(zone):
        for name in files:
            path = Path(directory, name)
            if not path.is_symlink() and SECRET in path.read_bytes():
                found.append(str(path.relative_to(zone)))
    return found


# -- the blob name ----------------------------------------------------------------------------------------------

#: blobs/<aa>/<sha256> with this "sha256" is blobs/../../../../../canary.txt: the canary beside the workspace
TRAVERSAL = "../../../../canary.txt"


@pytest.mark.parametrize("paths", [(), ("notes.txt",)], ids=["whole-zone", "one-path"])
def test_a_blob_name_that_is_a_path_is_refused_and_nothing_outside_the_store_is_copied(
    ws: Workspace, zone: Path, paths: tuple[str, ...]
) -> None:
    edit_entry(ws, 1, "notes.txt", {"sha256": TRAVERSAL, "size": len(SECRET)})
    (zone / "notes.txt").write_text("changed since\n")
    done = omxfs("restore", str(ws.root), "alice", "1", *paths, "--as", "alice", check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "checkpoint 1 of alice" in done.stderr and "sha256" in done.stderr and "no blob name" in done.stderr
    assert holds_secret(zone) == []
    assert (zone / "notes.txt").read_text() == "changed since\n"  # the zone as it was
    detail = bad_manifests(ws)[".omxfs/checkpoints/alice/manifests/1.json"]
    assert "notes.txt" in detail and TRAVERSAL in detail


def test_the_blob_store_refuses_any_name_that_is_no_sha256_whoever_asks(ws: Workspace, zone: Path) -> None:
    blobs = ZoneHistory(ws, "alice").blobs
    assert isinstance(blobs, BlobStore)
    good = ZoneHistory(ws, "alice").load(1).entry("notes.txt")
    assert good is not None and blobs.path(good.sha256).is_file()
    for name in (TRAVERSAL, "..", "", good.sha256.upper(), good.sha256 + "\n", good.sha256[:63] + "/"):
        with pytest.raises(StoreCorrupt, match="no blob name"):
            blobs.path(name)
        with pytest.raises(StoreCorrupt, match="no blob name"):
            blobs.exists(name)


# -- every other field of an entry ------------------------------------------------------------------------------

CRAFTED: list[tuple[str, str, dict[str, Any], str]] = [
    ("parent", "notes.txt", {"path": "../x"}, "path is no relative, normalized path"),
    ("absolute", "notes.txt", {"path": "/abs"}, "path is no relative, normalized path"),
    ("empty-component", "sub/deep.txt", {"path": "sub//deep.txt"}, "path is no relative, normalized path"),
    ("dot-component", "sub/deep.txt", {"path": "sub/./deep.txt"}, "path is no relative, normalized path"),
    ("nul", "notes.txt", {"path": "no\0tes.txt"}, "path is no relative, normalized path"),
    ("dot-file", "notes.txt", {"path": "."}, "entry '.': the zone's root is no directory"),
    ("twice", "notes.txt", {"path": "sub"}, "a path has two entries"),
    ("mode", "notes.txt", {"mode": 0o107777}, "mode 0o107777 has bits beyond 0o7777"),
    ("size-as-text", "notes.txt", {"size": "12"}, "size '12' is no integer"),
    ("uid", "notes.txt", {"uid": -1}, "uid -1 is negative"),
    ("gid-bool", "notes.txt", {"gid": True}, "gid True is no integer"),
    ("type", "notes.txt", {"type": "door"}, "type 'door' is none of"),
    ("link", "sub/deep.txt", {"link": "../../../canary.txt"}, "link '../../../canary.txt' is no relative"),
    ("uppercase-sha256", "notes.txt", {"sha256": "A" * 64}, "is no blob name"),
    ("attribute", "notes.txt", {"xattrs": {"security.capability": "AAAA"}}, "is no user.* attribute"),
    ("extents", "notes.txt", {"data": [[0, -5]]}, "is no list of [offset, length] integers"),
    ("target", "notes.txt", {"type": "symlink", "target": 7, "sha256": "", "size": 0}, "target 7 is no string"),
    ("under-a-file", "sub/deep.txt", {"path": "notes.txt/deep.txt"}, "not below a directory entry before it"),
]


@pytest.mark.parametrize(("entry", "changes", "said"), [c[1:] for c in CRAFTED], ids=[c[0] for c in CRAFTED])
def test_a_crafted_entry_is_a_bad_manifest_that_fsck_reports_and_a_restore_refuses(
    ws: Workspace, zone: Path, entry: str, changes: dict[str, Any], said: str
) -> None:
    before = sorted(p.name for p in zone.rglob("*"))
    edit_entry(ws, 1, entry, changes)
    detail = bad_manifests(ws)[".omxfs/checkpoints/alice/manifests/1.json"]
    assert said in detail, detail
    done = omxfs("restore", str(ws.root), "alice", "1", "--as", "alice", check=False)
    assert done.returncode == 1 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert sorted(p.name for p in zone.rglob("*")) == before and not (ws.root / "agents/x").exists()
    assert not (ws.root.parent / "x").exists()


def test_fsck_repair_does_not_act_on_a_bad_manifest_nor_remove_the_blobs_it_may_name(ws: Workspace, zone: Path) -> None:
    edit_entry(ws, 1, "notes.txt", {"mode": 0o107777})
    blobs = sorted(p for p in (ws.meta / "checkpoints/alice/blobs").rglob("*") if p.is_file())
    for blob in blobs:
        os.utime(blob, (0, 0))  # old: a repair would remove an unreferenced one
    report = fsck(ws, repair=True)
    kinds = {(f.kind, f.repaired) for f in report.findings}
    assert ("bad-manifest", False) in kinds and ("unreferenced-blob", True) not in kinds
    assert all(blob.is_file() for blob in blobs) and len(blobs) == 2
    assert manifest_file(ws, 1).is_file()


def test_a_delta_with_a_bad_entry_and_a_head_with_bad_fields_are_bad_manifests(ws: Workspace, zone: Path) -> None:
    for n in range(20):
        (zone / f"f{n}.txt").write_text(f"{n}\n")
    time.sleep(RACY_NS / 1e9 + 0.05)  # else the next checkpoint reads every file again: too many for a delta
    omxfs("checkpoint", str(ws.root), "--as", "alice")  # 2: the base of the deltas
    for n in range(3):
        (zone / f"n{n}.txt").write_text(f"{n}\n")
        omxfs("checkpoint", str(ws.root), "--as", "alice")  # 3, 4, 5
    assert [json.loads(manifest_file(ws, n).read_text().partition(_ENTRIES)[0] + "}")["format"] for n in (3, 4, 5)] == [
        2,
        2,
        2,
    ]
    edit_entry(ws, 3, "n0.txt", {"sha256": TRAVERSAL})
    edit_head(ws, 4, removed=["../../etc"])
    edit_head(ws, 5, base=5)  # written against itself
    edit_head(ws, 2, extra={"paths": ["sub/../.."]})
    found = bad_manifests(ws)
    where = ".omxfs/checkpoints/alice/manifests"
    assert TRAVERSAL in found[f"{where}/3.json"] and "no blob name" in found[f"{where}/3.json"]
    assert "removed: '../../etc' is no relative, normalized path" in found[f"{where}/4.json"]
    assert "base: 5 is no integer >= 1 <= 4" in found[f"{where}/5.json"]
    assert "extra: paths: 'sub/../..' is no relative, normalized path" in found[f"{where}/2.json"]
    for number in (2, 3, 4, 5):
        done = omxfs("restore", str(ws.root), "alice", str(number), "--as", "alice", check=False)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert holds_secret(zone) == [] and ZoneHistory(ws, "alice").load(1).number == 1  # the sound one still reads


# -- the accept marker ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b'{"undo": 3, "by": "alice"}', None),
        (b'{"undo": "3", "by": "alice"}', "undo: '3' is no integer >= 1"),
        (b'{"undo": 0, "by": "alice"}', "undo: 0 is no integer >= 1"),
        (b'{"undo": 3, "by": "../x"}', "by: '../x' is no agent name"),
        (b'{"undo": 3}', "not an accept marker"),
        (b"garbage", "not JSON"),
    ],
)
def test_an_accept_marker_is_read_only_when_it_is_one(tmp_path: Path, raw: bytes, said: str | None) -> None:
    marker = tmp_path / "accepting"
    marker.write_bytes(raw)
    if said is None:
        assert read_accept_marker(marker) == 3 == parse_accept_marker(raw, "m")
        return
    with pytest.raises(StoreCorrupt, match=said):
        read_accept_marker(marker)


def test_an_accept_marker_that_is_a_symlink_or_a_fifo_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b'{"undo": 3, "by": "alice"}')
    (tmp_path / "link").symlink_to(tmp_path / "real")
    os.mkfifo(tmp_path / "fifo")
    for name in ("link", "fifo"):
        with pytest.raises(StoreCorrupt):
            read_accept_marker(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        read_accept_marker(tmp_path / "none")


def test_fsck_reports_an_interrupted_accept_whose_marker_is_no_marker(ws: Workspace, zone: Path) -> None:
    review = ws.meta / "reviews/alice"
    (review / "upper").mkdir(parents=True)
    (review / "accepting").write_text('{"undo": "../../1", "by": "alice"}')
    found: Callable[[str], list[str]] = lambda kind: [f.path for f in fsck(ws).findings if f.kind == kind]  # noqa: E731
    assert found("bad-record") == [".omxfs/reviews/alice/accepting"]
    assert found("interrupted-accept") == [".omxfs/reviews/alice"]


# -- the checks of many names at once agree with the checks of one ------------------------------------------------

PATHS = st.lists(st.text(alphabet="ab./\0", max_size=8), max_size=5)
DIGESTS = st.lists(st.text(alphabet="0123456789abcdefABF \t\né", min_size=64, max_size=64), max_size=4)


@given(PATHS)
def test_all_zone_paths_is_is_zone_path_of_each(paths: list[str]) -> None:
    assert all_zone_paths(paths) == all(is_zone_path(p) for p in paths)


@given(DIGESTS)
def test_all_blob_names_is_is_blob_name_of_each(names: list[str]) -> None:
    assert all_blob_names(names) == all(is_blob_name(n) for n in names)


def test_a_checkpoint_of_an_empty_zone_reads_back(ws: Workspace) -> None:
    omxfs("checkpoint", str(ws.root), "--as", "bob")
    assert [e.path for e in ZoneHistory(ws, "bob").load(1).entries] == ["."]
