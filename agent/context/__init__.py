"""Context discipline for the agent loop (seed 003), after Manus' "Context Engineering for AI Agents".

Append-only context with reversible compression, todo recitation, error preservation, tool masking, template
noise and file-based memory; ``agent.loop`` wires each in behind a ``ContextSettings`` switch. Nothing here talks
to a model or imports litellm.
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
from agent.context.file_memory import FileBasedMemory, MemoryPathError, register_memory_tools
from agent.context.prefix import RequestMeasure, request_text, shared_prefix_chars
from agent.context.session_resize import SessionResize, SessionSettings
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
    "SessionResize",
    "SessionSettings",
    "TemplateNoise",
    "TodoRecitation",
    "ToolMask",
    "compress_messages",
    "is_prefix",
    "is_reference",
    "is_tool_error",
    "refusal",
    "register_memory_tools",
    "request_text",
    "restorable_reference",
    "restore_all",
    "restore_messages",
    "shared_prefix_chars",
    "tool_choice_for",
]
