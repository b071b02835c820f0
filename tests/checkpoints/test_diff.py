"""``omxfs.checkpoints.diff``: added, modified, deleted, modes, symlink targets; text diffs, binaries by hash."""

from __future__ import annotations

import difflib
import hashlib
import os
import subprocess
from pathlib import Path

from omxfs.checkpoints import ZoneHistory, diff
from omxfs.checkpoints.diff import _unified
from omxfs.store import Workspace


def test_a_diff_names_each_kind_of_change_from_the_last_checkpoint_to_now(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    (zone / "doc.md").write_text("line one\nline two\n")
    (zone / "tool.sh").write_text("echo\n")
    (zone / "gone/sub").mkdir(parents=True)
    (zone / "gone/sub/file").write_text("bye\n")
    (zone / "blob.bin").write_bytes(b"\x00\x01" * 100)
    os.symlink("doc.md", zone / "latest")
    history = ZoneHistory(ws, "alice")
    history.make("alice", "base")
    (zone / "doc.md").write_text("line one\nline 2\n")
    os.chmod(zone / "tool.sh", 0o755)
    for path in ("gone/sub/file", "gone/sub", "gone"):
        (os.unlink if path.endswith("file") else os.rmdir)(zone / path)
    (zone / "blob.bin").write_bytes(b"\x00\x02" * 150)
    os.unlink(zone / "latest")
    os.symlink("tool.sh", zone / "latest")
    (zone / "new.txt").write_text("fresh\n")
    os.utime(zone / "doc.md", (1, 1))  # times alone are no change, but its content changed

    result = diff(history)
    assert (result.source, result.target) == ("1", "now")
    assert result.added == ["new.txt"]
    assert result.deleted == ["gone", "gone/sub", "gone/sub/file"]
    assert result.modified == ["blob.bin", "doc.md", "latest", "tool.sh"]  # the zone's own mtime moved: no change
    details = result.details
    assert details["tool.sh"]["mode"] == ["644", "755"]
    assert details["latest"]["target"] == ["doc.md", "tool.sh"]
    assert "-line two\n+line 2\n" in details["doc.md"]["diff"]
    assert details["blob.bin"]["sha256"] == [
        hashlib.sha256(b"\x00\x01" * 100).hexdigest(),
        hashlib.sha256(b"\x00\x02" * 150).hexdigest(),
    ]
    assert details["blob.bin"]["size"] == [200, 300] and "diff" not in details["blob.bin"]
    assert "+fresh\n" in details["new.txt"]["diff"]
    text = "\n".join(result.lines())
    assert "M tool.sh  (mode 644 -> 755)" in text and "D gone/  (dir, and 2 entries below it)" in text
    assert "A new.txt" in text


def test_a_diff_between_two_checkpoints_and_a_touch_is_no_change(ws: Workspace) -> None:
    zone = ws.root / "agents/alice"
    (zone / "a").write_text("1\n")
    history = ZoneHistory(ws, "alice")
    history.make("alice")
    (zone / "a").write_text("2\n")
    history.make("alice")
    os.utime(zone / "a", (5, 5))
    assert diff(history).empty  # from the last checkpoint: only a time moved
    between = diff(history, "1", "2")
    assert between.to_json()["modified"] == ["a"] and between.target == "2"
    assert diff(history, "2", "1").details["a"]["diff"].endswith("-2\n+1\n")


def test_the_text_shows_a_directory_added_or_deleted_whole_as_one_line_and_json_lists_every_path(
    ws: Workspace,
) -> None:
    """A deleted git repository was printed entry by entry, each hook's whole content as a diff: hundreds of lines
    that hid the one change a reviewer needs to see."""
    zone = ws.root / "agents/alice"
    for name in ("repo/.git/hooks", "repo-notes"):
        (zone / name).mkdir(parents=True)
    (zone / "repo/.git/hooks/pre-commit").write_text("#!/bin/sh\necho hook\n")
    (zone / "repo/README").write_text("read me\n")
    (zone / "repo-notes/n.md").write_text("kept\n")  # a sibling whose name starts like the directory's
    history = ZoneHistory(ws, "alice")
    history.make("alice", "base")
    for path in ("repo/.git/hooks/pre-commit", "repo/README"):
        os.unlink(zone / path)
    for path in ("repo/.git/hooks", "repo/.git", "repo"):
        os.rmdir(zone / path)
    (zone / "new/deep").mkdir(parents=True)
    (zone / "new/deep/f.txt").write_text("fresh\n")
    (zone / "repo-notes/n.md").write_text("changed\n")

    result = diff(history)
    text = "\n".join(result.lines())
    assert "D repo/  (dir, and 4 entries below it)" in text and "A new/  (dir, and 2 entries below it)" in text
    assert "pre-commit" not in text and "echo hook" not in text and "f.txt" not in text
    assert "M repo-notes/n.md" in text and "+changed" in text
    assert result.to_json()["deleted"] == ["repo", "repo/.git", "repo/.git/hooks", "repo/.git/hooks/pre-commit",
                                           "repo/README"]  # fmt: skip


def test_a_long_file_s_text_diff_applies_and_is_difflib_s_where_unambiguous(tmp_path: Path) -> None:
    """The lines both sides share at the start and the end are left out of the comparison (its speed); the hunks,
    their line numbers and their context are those of the whole files, and ``patch`` applies them. Where an
    insertion could be placed at several lines (a repeated run), it may be shown at another of them."""
    base = [f"line {n}\n" for n in range(150)]
    edits = {
        "appended": [*base, "# new\n"],
        "first line": ["changed\n", *base[1:]],
        "two far apart": [*base[:20], "x\n", *base[21:120], "y\n", *base[121:]],
        "removed in the middle": base[:70] + base[75:],
        "no newline at the end": [*base[:-1], "line 149"],
        "repeated lines": [*base[:60], *base[58:]],
    }
    for name, after in edits.items():
        ours = _unified("f", base, after)
        whole = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in difflib.unified_diff(base, after, "a/f", "b/f")
        )
        assert ours == whole or name == "repeated lines", name
        (tmp_path / "f").write_text("".join(base))
        subprocess.run(["patch", "-s", "-p1"], input=ours, text=True, cwd=tmp_path, check=True)
        assert (tmp_path / "f").read_text() == "".join(after), name
