"""File-based memory (seed 003 FileBasedMemory): the agent's own directory as unlimited, persistent memory.

Plain file I/O under one root, the agent's private zone (``/<mount>/<agent>/...`` on omxfs, any directory
otherwise). Every name is resolved and refused if it lands outside the root, symlinks included, because the names
come from the model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["FileBasedMemory", "MemoryPathError"]


class MemoryPathError(ValueError):
    """A memory file name that is empty or points outside the memory directory."""


class FileBasedMemory:
    def __init__(self, workspace_dir: str | Path) -> None:
        self.root = Path(workspace_dir).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, filename: str) -> Path:
        """The file's path inside the root; MemoryPathError for anything that would leave it."""
        if not filename or not filename.strip() or "\0" in filename:
            raise MemoryPathError("a memory file name must not be empty")
        path = (self.root / filename).resolve()
        if path == self.root or not path.is_relative_to(self.root):
            raise MemoryPathError(f"{filename!r} is outside the memory directory {self.root}")
        return path

    def save(self, filename: str, content: str) -> str:
        path = self.path(filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return str(path)

    def load(self, filename: str) -> str:
        """The file's text, or "" when there is no such file."""
        path = self.path(filename)
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def append_log(self, filename: str, entry: Mapping[str, Any]) -> None:
        """One JSON line appended: a log is never rewritten."""
        path = self.path(filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(entry), ensure_ascii=False, sort_keys=True) + "\n")

    def list_files(self, pattern: str = "*") -> list[str]:
        """Relative names of the files matching ``pattern`` (sorted, so the listing is the same every time)."""
        if ".." in Path(pattern).parts or Path(pattern).is_absolute():
            raise MemoryPathError(f"pattern {pattern!r} reaches outside the memory directory")
        found = []
        for p in self.root.glob(pattern):
            resolved = p.resolve()
            if p.is_file() and resolved.is_relative_to(self.root):
                found.append(str(p.relative_to(self.root)))
        return sorted(found)
