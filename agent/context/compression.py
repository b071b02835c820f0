"""Reversible compression: the only way the context shrinks (seed 003 ContextManager.compress_to_file).

Old messages are written whole to a JSON file and replaced by one reference message that names the file and tells
the model how to read it back, so nothing is ever lost: ``restore_messages`` gives the exact messages again. The
file name is derived from the content (a hash), never a clock, so compressing the same history twice writes the
same reference text and keeps the prompt prefix stable.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["REFERENCE_MARKER", "compress_messages", "is_reference", "restorable_reference", "restore_all"]
__all__ += ["restore_messages"]

#: the reference message starts with this, so it is recognisable by the loop and by the model
REFERENCE_MARKER = "[compressed context]"
_FILE_RE = re.compile(r"^file: (.+\.json)$", re.MULTILINE)


def _canonical(messages: Sequence[Mapping[str, Any]]) -> str:
    """Deterministic JSON: the same messages always give the same bytes, and so the same file name."""
    return json.dumps([dict(m) for m in messages], ensure_ascii=False, sort_keys=True, indent=1)


def compress_messages(messages: Sequence[Mapping[str, Any]], directory: Path) -> dict[str, Any]:
    """Write messages (OpenAI-format chat dicts) to a new JSON file under directory; return ONE reference message.

    The reference is a ``user`` message (every provider accepts one anywhere after the system prompt) whose content
    names the file, how many messages it holds and how to read it back.
    """
    if not messages:
        raise ValueError("nothing to compress: the message list is empty")
    text = _canonical(messages)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"context-{digest}.json"
    if not path.exists():
        _write_atomic(path, text)
    content = (
        f"{REFERENCE_MARKER} {len(messages)} earlier messages were moved to the file below. Nothing was lost: "
        f"read that file (a JSON list of chat messages) if you need the earlier context.\nfile: {path.resolve()}"
    )
    return {"role": "user", "content": content}


def is_reference(message: Mapping[str, Any]) -> bool:
    """Whether a message is a reference left by ``compress_messages``."""
    content = message.get("content")
    return isinstance(content, str) and content.startswith(REFERENCE_MARKER)


def restore_messages(reference: Mapping[str, Any], directory: Path) -> list[dict[str, Any]]:
    """The messages a reference stands for, read back from its file (exact round trip).

    Only files inside ``directory`` are read: a reference is model-visible text, and a forged one must not make
    this read anything else.
    """
    content = reference.get("content")
    match = _FILE_RE.search(content) if isinstance(content, str) and is_reference(reference) else None
    if match is None:
        raise ValueError("not a compressed-context reference: it names no context file")
    root = Path(directory).resolve()
    path = Path(match.group(1)).resolve()
    if path.parent != root:
        raise ValueError(f"the reference names {path}, which is outside {root}")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
        raise ValueError(f"{path} is not a JSON list of messages")
    return [dict(m) for m in data]


def restorable_reference(message: Mapping[str, Any], directory: Path) -> bool:
    """Whether ``message`` is a reference (a user message) whose file under ``directory`` can be read back."""
    if message.get("role") != "user" or not is_reference(message):
        return False
    try:
        restore_messages(message, directory)
    except (ValueError, OSError):
        return False
    return True


def restore_all(messages: Sequence[Mapping[str, Any]], directory: Path) -> list[dict[str, Any]]:
    """The messages with every reference replaced by those it stands for, recursively (references may nest)."""
    restored: list[dict[str, Any]] = []
    for message in messages:
        if restorable_reference(message, directory):
            restored += restore_all(restore_messages(message, directory), directory)
        else:
            restored.append(copy.deepcopy(dict(message)))
    return restored


def _write_atomic(path: Path, text: str) -> None:
    """Write then rename, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".context-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
