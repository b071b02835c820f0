"""Prompting (seed 002): settings, sessions with reversible resize, the prompt generator, output models, streaming
parse, requests with independent responses, and the tool loop. Nothing here imports FUSE or litellm."""

from agent.prompting.generator import PromptObject, to_messages, to_text
from agent.prompting.output_model import extract_json, output_model, parse_reply
from agent.prompting.output_schema import render_schema
from agent.prompting.prompt import Prompt
from agent.prompting.requests import ModelRequest, ModelResponse
from agent.prompting.session import ResizeDecision, ResizePolicy, Session
from agent.prompting.settings import DEFAULTS, Settings
from agent.prompting.streaming import (
    CompletionStream,
    ScriptedStreamingModel,
    StreamingData,
    StreamingModel,
    StreamingParser,
)
from agent.prompting.tool_loop import ActionResult, FunctionTool, ToolLoop, ToolLoopResult

__all__ = [
    "DEFAULTS",
    "ActionResult",
    "CompletionStream",
    "FunctionTool",
    "ModelRequest",
    "ModelResponse",
    "Prompt",
    "PromptObject",
    "ResizeDecision",
    "ResizePolicy",
    "ScriptedStreamingModel",
    "Session",
    "Settings",
    "StreamingData",
    "StreamingModel",
    "StreamingParser",
    "ToolLoop",
    "ToolLoopResult",
    "extract_json",
    "output_model",
    "parse_reply",
    "render_schema",
    "to_messages",
    "to_text",
]
