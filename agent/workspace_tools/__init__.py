"""The shared-workspace tools of seed 001 FR-5, for LLM tool calling.

``WorkspaceTools(backend).dispatch_tool_call(name, arguments)`` runs a model's tool call; ``get_tool_definitions``
(and its OpenAI and Anthropic forms) describes the tools to the model; ``system_prompt`` explains the zones.
A backend is how the tools reach a workspace: ``StoreBackend`` calls the store directly.
"""

from agent.workspace_tools.backend import (
    Delivery,
    FieldChange,
    FieldValue,
    HandoffNote,
    TextEdit,
    VersionedText,
    VersionInfo,
    WorkspaceBackend,
)
from agent.workspace_tools.definitions import (
    ToolDefinition,
    anthropic_tool_definitions,
    get_tool_definitions,
    openai_tool_definitions,
)
from agent.workspace_tools.models import TOOL_INPUTS, TOOLS_BY_NAME, ToolInput
from agent.workspace_tools.mount_backend import MountBackend
from agent.workspace_tools.prompt import system_prompt
from agent.workspace_tools.store_backend import StoreBackend
from agent.workspace_tools.tools import WorkspaceTools

__all__ = [
    "TOOLS_BY_NAME",
    "TOOL_INPUTS",
    "Delivery",
    "FieldChange",
    "FieldValue",
    "HandoffNote",
    "MountBackend",
    "StoreBackend",
    "TextEdit",
    "ToolDefinition",
    "ToolInput",
    "VersionInfo",
    "VersionedText",
    "WorkspaceBackend",
    "WorkspaceTools",
    "anthropic_tool_definitions",
    "get_tool_definitions",
    "openai_tool_definitions",
    "system_prompt",
]
