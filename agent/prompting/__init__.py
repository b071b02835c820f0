"""Prompting (seed 002): layered settings, sessions with reversible resize, the prompt generator and output models.

The chat loop uses the session (``session:`` in its config) and, for ``Agent.run(..., output=schema)``, the prompt
and output model;
the seed-002 parts the product does not call (requests, streaming, the tool loop) are in ``agent.seed_only``.
Nothing here imports FUSE or litellm, nor ``agent.chat``; of ``agent.context`` only the reversible compression.
"""

from agent.prompting.generator import PromptObject, to_messages, to_text
from agent.prompting.layered_settings import DEFAULTS, LayeredSettings
from agent.prompting.output_model import extract_json, output_model, parse_reply
from agent.prompting.output_schema import render_schema
from agent.prompting.prompt import Prompt
from agent.prompting.session import ResizeDecision, ResizePolicy, Session

__all__ = [
    "DEFAULTS",
    "LayeredSettings",
    "Prompt",
    "PromptObject",
    "ResizeDecision",
    "ResizePolicy",
    "Session",
    "extract_json",
    "output_model",
    "parse_reply",
    "render_schema",
    "to_messages",
    "to_text",
]
