"""The store on JuiceFS (issue 27 item 7): a file renamed over through one client of a shared filesystem can read
as ENOENT through another for about a second (JuiceFS with its trash off: the other client's kernel still holds
the name of the inode that was removed), and EBADF or ENOENT if that client had just opened it. The store reads
such a file again (``atomic.read_with_stat``, ``atomic.read_at``) when it was there a moment ago, and answers a
name that is not there at once.

The first two tests make the moment on a local filesystem (the name is absent, then renamed in: what a client
sees of a rename over it); the third on two real JuiceFS clients; the last runs ``scripts/juicefs_load.py`` short:
a private redis-server, a local bucket, three clients, the load with one daemon per client, fsck, checkpoints
across clients and the audit from both at once. The JuiceFS tests skip where redis-server or juicefs is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from omxfs.errors import NotFound
from omxfs.store import atomic
from scripts import juicefs_volume
from tests.fuse.conftest import clean_env, poll
from tests.support.scripts import unmount_everything_under

REPO = Path(__file__).resolve().parents[2]

#: the names whose opens are being counted, and each one's count (the "open" audit event of os.open)
_WATCHED: dict[str, int] = {}


def _count_opens(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _WATCHED and isinstance(args[0], str) and args[0] in _WATCHED:
        _WATCHED[args[0]] += 1


sys.addaudithook(_count_opens)  # audit hooks cannot be removed: this one only counts names a test watches


@pytest.fixture
def opens() -> Iterator[dict[str, int]]:
    yield _WATCHED
    _WATCHED.clear()


def test_a_known_record_absent_for_a_moment_is_read_again(tmp_path: Path, opens: dict[str, int]) -> None:
    """The name is absent when the read starts, and a new file is renamed in after its first open failed: the
    read returns the new file's content instead of ENOENT."""
    opens["history.json"] = 0
    found: list[bytes | BaseException] = []

    def read() -> None:
        try:
            found.append(atomic.read_with_stat(tmp_path, PurePosixPath("history.json"), known=True)[0])
        except BaseException as exc:  # shown by the assertion below
            found.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    poll(lambda: opens["history.json"] >= 1 or bool(found), what="the reader's first open")
    (tmp_path / "history.json.tmp").write_bytes(b"[1]\n")
    os.rename(tmp_path / "history.json.tmp", tmp_path / "history.json")
    reader.join(30)
    assert found == [b"[1]\n"], f"{found} after {opens['history.json']} open(s)"
    assert opens["history.json"] >= 2


def test_a_name_that_is_not_there_is_not_found_at_once(tmp_path: Path, opens: dict[str, int]) -> None:
    """Not known, not named: one open, then NotFound (a real "not found" never waits)."""
    opens["absent.json"] = 0
    with pytest.raises(NotFound):
        atomic.read_with_stat(tmp_path, PurePosixPath("absent.json"))
    assert opens["absent.json"] == 1


@pytest.fixture
def juicefs_here() -> None:
    reason = juicefs_volume.missing()
    if reason is not None:
        pytest.skip(f"JuiceFS: {reason}")


@pytest.fixture
def juicefs(juicefs_here: None, tmp_path: Path) -> Iterator[list[Path]]:
    try:
        with juicefs_volume.clients(tmp_path, n=2) as mounts:
            yield mounts
    finally:
        unmount_everything_under(tmp_path)


def test_a_file_renamed_over_on_one_juicefs_client_reads_new_on_the_other(juicefs: list[Path]) -> None:
    """Client b has read the record (its kernel caches the name and inode); client a renames a new file over it,
    which removes that inode; b's next read returns the new content, round after round."""
    a, b = juicefs
    (a / "record.json").write_bytes(b"0\n")
    poll(lambda: (b / "record.json").exists(), what="the record in the other client")
    read = []
    for n in range(1, 11):
        atomic.read_bytes(b, PurePosixPath("record.json"))
        (a / "record.json.tmp").write_bytes(f"{n}\n".encode())
        os.rename(a / "record.json.tmp", a / "record.json")
        read.append(atomic.read_bytes(b, PurePosixPath("record.json")).decode())
    assert read == [f"{n}\n" for n in range(1, 11)]


@pytest.mark.timeout(240)
def test_the_store_on_juicefs_loses_nothing_and_keeps_checkpoints_and_audit(juicefs_here: None) -> None:
    """``scripts/juicefs_load.py`` short: its JSON figures, every check of which must hold."""
    command = [sys.executable, str(REPO / "scripts" / "juicefs_load.py"), "--seconds", "3", "--rounds", "2"]
    command += ["--records", "50"]
    done = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=220, check=False)
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr
    figures = json.loads(lines[-1])
    print(json.dumps(figures, indent=1))  # the figures, shown in full beside a failure
    load, fsck, checkpoints, audit = figures["load"], figures["fsck"], figures["checkpoints"], figures["audit"]
    assert load["ops"] > 0 and load["lost_updates"] == 0 and load["errors"] == {}, figures
    assert load["conflicts_reported"] == load["conflicts_expected"] and load["unexplained"] == 0, figures
    assert fsck["exit"] == 0 and fsck["findings"] == {}, figures
    assert checkpoints["diff_on_client_1"] == {
        "added": ["added.txt"],
        "modified": ["changed.txt"],
        "deleted": ["removed.txt"],
    }, figures
    assert checkpoints["restored_exactly_seen_by_client_0"], figures
    assert checkpoints["restored_exactly_seen_by_client_1"], figures
    assert checkpoints["concurrent_checkpoints"] == 4 and checkpoints["concurrent_ids_distinct"], figures
    assert checkpoints["concurrent_ids_all_listed"], figures
    assert audit["read_back"] == {"client0": 50, "client1": 50} and audit["unreadable"] == 0, figures
    assert audit["restore_audited"], figures
    assert figures["ok"] and done.returncode == 0, figures
