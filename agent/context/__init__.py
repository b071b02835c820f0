"""Context discipline for the agent loop (seed 003), after Manus' "Context Engineering for AI Agents".

Append-only context with reversible compression, todo recitation, error preservation, tool masking, template
noise and file-based memory; ``agent.chat.loop`` wires each in behind a ``ContextSettings`` switch. Nothing here talks
to a model or imports litellm, and nothing here imports the chat loop or ``agent.prompting`` (which uses the
reversible compression for its sessions): ``tests/agent/test_structure.py`` keeps it so.
"""

from agent.context.append_only import ContextEntry, ContextManager, is_prefix
from agent.context.compression import (
    compress_messages,
    is_reference,
    restorable_reference,
    restore_all,
    restore_messages,
)
from agent.context.error_preservation import ErrorPreservation, is_tool_error
from agent.context.file_memory import FileBasedMemory, MemoryPathError
from agent.context.prefix import RequestMeasure, request_text, shared_prefix_chars
from agent.context.settings import ContextSettings
from agent.context.template_noise import TemplateNoise
from agent.context.todo_recitation import RECITATION_INSTRUCTION, TodoRecitation
from agent.context.tool_mask import ToolMask, refusal, tool_choice_for

__all__ = [
    "RECITATION_INSTRUCTION",
    "ContextEntry",
    "ContextManager",
    "ContextSettings",
    "ErrorPreservation",
    "FileBasedMemory",
    "MemoryPathError",
    "RequestMeasure",
    "TemplateNoise",
    "TodoRecitation",
    "ToolMask",
    "compress_messages",
    "is_prefix",
    "is_reference",
    "is_tool_error",
    "refusal",
    "request_text",
    "restorable_reference",
    "restore_all",
    "restore_messages",
    "shared_prefix_chars",
    "tool_choice_for",
]
