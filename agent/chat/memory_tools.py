"""The agent's memory directory as three tools (seed 003 FileBasedMemory): the model keeps and reads its memory.

``agent.context.file_memory`` is the memory itself, plain file I/O confined to one root; this is how ``omx agent``
offers it to the model, so the context package needs nothing from the chat loop.
"""

from __future__ import annotations

from typing import Any

from agent.chat.tool_manager import ToolManager
from agent.context.file_memory import FileBasedMemory, MemoryPathError

__all__ = ["register_memory_tools"]


def register_memory_tools(tools: ToolManager, memory: FileBasedMemory) -> None:
    """memory_save / memory_load / memory_list as tools, so the model itself keeps and reads its memory."""

    def guarded(fn: Any) -> Any:
        def run(text: str) -> str:
            try:
                return str(fn(text))
            except (MemoryPathError, OSError) as exc:
                return f"error: {exc}; use a relative name inside your memory directory"

        return run

    def save(text: str) -> str:
        name, _, content = text.partition("\n")
        return f"saved {memory.save(name.strip(), content)}"

    def load(name: str) -> str:
        return memory.load(name.strip()) or f"error: no memory file {name.strip()!r}; memory_list shows the files"

    def listing(pattern: str) -> str:
        return "\n".join(memory.list_files(pattern.strip() or "*")) or "(no files)"

    tools.register(
        "memory_save", guarded(save), parameter="text",
        description="Save to your memory directory: first line the file name, the rest the content.",
    )  # fmt: skip
    tools.register(
        "memory_load", guarded(load), parameter="name",
        description="Read a file from your memory directory (a relative name, or a path inside it).",
    )  # fmt: skip
    tools.register(
        "memory_list", guarded(listing), parameter="pattern",
        description="List the files in your memory directory matching a glob such as '*' or '**/*.md'.",
    )  # fmt: skip
