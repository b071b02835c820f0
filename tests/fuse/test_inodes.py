"""The inode table's hard links (issue 15): the names of one store file share one number, and only while the
known name still is that file."""

from __future__ import annotations

import stat
from pathlib import PurePosixPath

from omxfs.fuse.inodes import InodeTable

FILE = stat.S_IFREG | 0o644
A, B, C = PurePosixPath("agents/alice/a"), PurePosixPath("agents/alice/b"), PurePosixPath("agents/alice/c")


def test_two_names_of_one_file_share_a_number_until_both_are_gone() -> None:
    table = InodeTable()
    first = table.remember(A, FILE, ino=42)
    assert table.remember(B, FILE, ino=42, same_file=lambda known: known == A) == first  # was a number per name
    table.unlinked(A)
    assert not table.is_detached(first) and table.path(first) == B
    table.unlinked(B)
    assert table.is_detached(first)
    table.forget(first, 2)
    table.check()


def test_a_reused_store_inode_number_never_joins_two_files() -> None:
    """A's file was replaced behind the mount's back and its inode number reused by C: C gets a number of its own."""
    table = InodeTable()
    first = table.remember(A, FILE, ino=42)
    other = table.remember(C, FILE, ino=42, same_file=lambda known: False)
    assert other != first and table.path(first) == A
    table.check()


def test_renaming_one_name_of_a_file_onto_another_changes_nothing() -> None:
    """rename(2) between two links of one file does nothing; the table must not drop a name that still exists."""
    table = InodeTable()
    first = table.remember(A, FILE, ino=7)
    table.remember(B, FILE, ino=7, same_file=lambda known: True)
    table.renamed(A, B)
    assert table.inode_of(A) == table.inode_of(B) == first
    table.renamed(B, C)
    assert table.inode_of(C) == first and table.inode_of(B) is None and table.inode_of(A) == first
    table.check()


def test_i16_a_forgotten_file_gets_its_number_back_when_looked_up_again() -> None:
    """The kernel forgets an inode whenever its entry is invalidated (issue 16's store watch): the file's st_ino
    must not change for that (pjdfstest rename/00.t compares them), for a file or a directory."""
    table = InodeTable()
    directory = PurePosixPath("agents/alice/d")
    file_number = table.remember(A, FILE, ino=42)
    dir_number = table.remember(directory, stat.S_IFDIR | 0o755, ino=43)
    table.forget(file_number, 1)
    table.forget(dir_number, 1)
    assert len(table) == 1  # only the root is left
    table.renamed(A, B)  # renamed meanwhile, behind the kernel's back: the number goes with the file
    assert table.remember(B, FILE, ino=42) == file_number
    assert table.remember(directory, stat.S_IFDIR | 0o755, ino=43) == dir_number
    assert table.remember(C, FILE, ino=44) not in (file_number, dir_number)
    table.check()
