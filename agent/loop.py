"""Seed 000 Agent.process: ask the model, run the tools it calls, hand the results back, until it answers.

The loop is bounded by ``max_steps`` model calls, so a model that never stops calling tools costs a known amount
and ends with "max steps reached". A model's mistakes (an unknown tool, arguments that are not JSON) go back to
it as tool results it can correct; a failure to reach the model is the user's to see and is raised as LLMError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agent.llm import Model, ModelReply, ToolCall, Usage, model_from_settings
from agent.tool_manager import ToolManager

MAX_STEPS_REACHED = "max steps reached"
NO_ANSWER = "the model gave an empty answer"


class AgentConfig(BaseModel):
    """What an agent may do; frozen, so a run cannot change it (seed invariant 1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: int = Field(10, ge=1, description="model calls per prompt before giving up")
    tool_timeout: float = Field(30, gt=0, description="seconds one tool call may take")
    system_prompt: str = "You are a helpful assistant. Use the tools when they help; answer in plain text."
    model: str | None = Field(None, description="litellm model name; default --model / OMX_MODEL")
    api_base: str | None = Field(None, description="an OpenAI-compatible server; default OMX_API_BASE")

    @classmethod
    def from_yaml(cls, path: str | Path) -> AgentConfig:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: an agent config is a YAML mapping, such as 'max_steps: 5'")
        return cls.model_validate(data)


class AgentRun(BaseModel):
    """What one prompt cost and did: for traces and tests."""

    answer: str
    steps: int
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    messages: list[dict[str, Any]] = Field(default_factory=list)


def tool_schemas(tools: ToolManager) -> list[dict[str, Any]]:
    """OpenAI function definitions for the registered tools: one string parameter each."""
    schemas = []
    for name, tool in tools.tools.items():
        parameters = {
            "type": "object",
            "properties": {tool.parameter: {"type": "string"}},
            "required": [tool.parameter],
        }
        schemas.append(
            {"type": "function", "function": {"name": name, "description": tool.description, "parameters": parameters}}
        )
    return schemas


class Agent:
    """A model plus tools; the model comes from the config (or --model / OMX_MODEL) unless one is given."""

    def __init__(
        self,
        config: AgentConfig | str | Path | None = None,
        *,
        model: Model | None = None,
        tools: ToolManager | None = None,
    ) -> None:
        self.config = (
            config if isinstance(config, AgentConfig) else AgentConfig.from_yaml(config) if config else AgentConfig()
        )
        self.model = model or model_from_settings(self.config.model, self.config.api_base)
        self.tools = tools or ToolManager(timeout=self.config.tool_timeout)

    def process(self, prompt: str) -> str:
        """The final answer, or "max steps reached" (seed TC-Agent-001...004)."""
        return self.run(prompt).answer

    def run(self, prompt: str) -> AgentRun:
        if not prompt or not prompt.strip():
            raise ValueError("prompt must not be empty")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.config.system_prompt},
            {"role": "user", "content": prompt},
        ]
        schemas = tool_schemas(self.tools) or None
        usage, calls, steps = Usage(), list[ToolCall](), 0
        while steps < self.config.max_steps:
            reply = self.model.complete(messages, tools=schemas)
            steps += 1
            _add_usage(usage, reply.usage)
            if not reply.tool_calls:
                messages.append({"role": "assistant", "content": reply.content or ""})
                answer = reply.content or NO_ANSWER
                return AgentRun(answer=answer, steps=steps, tool_calls=calls, usage=usage, messages=messages)
            messages.append(_assistant_message(reply))
            for call in reply.tool_calls:
                calls.append(call)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": self._execute(call)})
        return AgentRun(answer=MAX_STEPS_REACHED, steps=steps, tool_calls=calls, usage=usage, messages=messages)

    def _execute(self, call: ToolCall) -> str:
        tool = self.tools.get(call.name)
        if tool is None:
            return self.tools.execute_tool(call.name, "")  # the "unknown tool" text, with the list of tools
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return f'error: the arguments of {call.name} are not valid JSON ({exc}); send {{"{tool.parameter}": "..."}}'
        if not isinstance(arguments, dict) or not isinstance(arguments.get(tool.parameter), str):
            return (
                f'error: {call.name} takes one string argument, "{tool.parameter}"; send {{"{tool.parameter}": "..."}}'
            )
        return self.tools.execute_tool(call.name, arguments[tool.parameter])


def _assistant_message(reply: ModelReply) -> dict[str, Any]:
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in reply.tool_calls
    ]
    return {"role": "assistant", "content": reply.content, "tool_calls": calls}


def _add_usage(total: Usage, more: Usage) -> None:
    total.prompt_tokens += more.prompt_tokens
    total.completion_tokens += more.completion_tokens
    total.cached_tokens += more.cached_tokens
