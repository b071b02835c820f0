"""Seed 002 §3 tool loop, not called by the product (``omx agent`` is ``agent.chat.loop``): tools, then the answer.

Plan and run tool calls, then ask again with the results in the prompt.

The seed's tool extension answers in two phases. First the model sees the prompt and the tools and calls
what it needs, for up to ``tool.loop.max_rounds`` rounds (each round's results go back to it as tool
messages). Then a second, separate request sends the original prompt with an ``[ACTION RESULTS]`` section and
no tools, and its reply is parsed against the output schema. Keeping the answer out of the tool-calling
conversation means the final request has the same shape with or without tools, and a structured output is
never mixed with tool-call turns.

Tools are plain Python functions, sync or async, with typed parameters: the argument model is generated from
the signature (pydantic, ``extra="forbid"``), and a bad call or a failing tool becomes a result the model can
read (STYLE lessons 10 and 11), never an exception out of the loop.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from typing import Any

import trio
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agent.model.llm import Model, ModelReply, ToolCall
from agent.prompting.output_model import parse_reply
from agent.prompting.output_schema import is_schema
from agent.prompting.prompt import Prompt

__all__ = ["ActionResult", "FunctionTool", "ToolLoop", "ToolLoopResult"]

PLANNING_INSTRUCTION = (
    "Call the tools you need to answer the request below. When nothing more is needed, reply without a tool call; "
    "your final answer is asked for separately."
)


class FunctionTool:
    """A Python function as a tool: name, first docstring paragraph, and an argument model from its signature."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.description = (inspect.getdoc(fn) or self.name).split("\n\n")[0].strip()
        hints = typing.get_type_hints(fn)
        fields: dict[str, Any] = {}
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise ValueError(f"tool {self.name}: *args and **kwargs cannot be described to a model; name them")
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (hints.get(param.name, Any), default)
        config = ConfigDict(extra="forbid")
        self.arguments: type[BaseModel] = create_model(f"{self.name}_arguments", __config__=config, **fields)

    def schema(self) -> dict[str, Any]:
        """The OpenAI function definition, generated from the argument model."""
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": parameters}}  # fmt: skip

    async def call(self, kwargs: dict[str, Any]) -> Any:
        """Run the tool with checked arguments; a sync tool runs in a worker thread so it cannot block the loop."""
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(**kwargs)
        return await trio.to_thread.run_sync(lambda: self.fn(**kwargs), abandon_on_cancel=True)


class ActionResult(BaseModel):
    """One tool call and its outcome, as recorded and as injected into the final prompt."""

    purpose: str
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    success: bool
    result: Any = None
    error: str = ""


class ToolLoopResult(BaseModel):
    data: Any
    action_results: list[ActionResult] = Field(default_factory=list)
    text: str


class ToolLoop:
    """A model and the tools it may use (``use_tool``), configured by the prompt's ``tool.loop.*`` settings."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.tools: dict[str, FunctionTool] = {}

    def use_tool(self, fn: Callable[..., Any], *, name: str | None = None) -> ToolLoop:
        tool = FunctionTool(fn, name=name)
        self.tools[tool.name] = tool
        return self

    async def run(self, prompt: Prompt) -> ToolLoopResult:
        """Plan and run tools, then the final request with the action results; the parsed answer."""
        results = await self.plan_and_execute(prompt)
        final = prompt.copy()
        if results:
            final.set("action_results", {r.purpose: r.result if r.success else {"error": r.error} for r in results})
        po = final.to_prompt_object()
        schema = po.output is not None and is_schema(po.output)
        reply = await self._complete(final.to_messages(), None, json_mode=schema and po.output_format.lower() == "json")
        text = reply.content or ""
        data = parse_reply(text, final.to_output_model()) if schema else text
        return ToolLoopResult(data=data, action_results=results, text=text)

    async def plan_and_execute(self, prompt: Prompt) -> list[ActionResult]:
        """The tool rounds alone: what was called and what came back (nothing when the loop is off or no tools)."""
        settings = prompt.settings
        if not self.tools or not settings.get("tool.loop.enabled", True):
            return []
        planning = prompt.copy()
        planning.set("output", None)
        planning.set("instruct", _joined(PLANNING_INSTRUCTION, prompt.get("instruct")))
        messages = planning.to_messages()
        schemas = [tool.schema() for tool in self.tools.values()]
        results: list[ActionResult] = []
        for _ in range(int(settings.get("tool.loop.max_rounds", 3))):
            reply = await self._complete(messages, schemas, json_mode=False)
            if not reply.tool_calls:
                break
            messages.append(reply.as_message())
            for call in reply.tool_calls:
                result = await self._execute(call, float(settings.get("tool.loop.timeout", 30)), results)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": _result_text(result)})
        return results

    async def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *,
                        json_mode: bool) -> ModelReply:  # fmt: skip
        return await trio.to_thread.run_sync(lambda: self.model.complete(messages, tools=tools, json_mode=json_mode))

    async def _execute(self, call: ToolCall, timeout: float, results: list[ActionResult]) -> ActionResult:
        purpose = call.name if all(r.tool_name != call.name for r in results) else f"{call.name} ({len(results) + 1})"
        record = ActionResult(purpose=purpose, tool_name=call.name, success=False)
        tool = self.tools.get(call.name)
        try:
            if tool is None:
                raise LookupError(f"unknown tool {call.name}; available tools: {', '.join(sorted(self.tools))}")
            arguments = json.loads(call.arguments or "{}")
            if not isinstance(arguments, dict):
                raise LookupError(f"the arguments of {call.name} must be a JSON object")
            record.arguments = arguments
            checked = dict(tool.arguments.model_validate(arguments))
        except (json.JSONDecodeError, ValidationError, LookupError) as exc:
            record.error = f"bad call to {call.name}: {exc}; fix the call and try again"
        else:
            try:
                with trio.fail_after(timeout):
                    record.result = await tool.call(checked)
                record.success = True
            except trio.TooSlowError:
                record.error = f"tool {call.name} timed out after {timeout:g}s; try a smaller request"
            except Exception as exc:  # a tool's failure is news for the model, not a crash of the loop
                record.error = f"tool {call.name} failed: {type(exc).__name__}: {exc}"
        results.append(record)
        return record


def _joined(first: str, second: Any) -> str:
    return first if second is None else f"{first}\n\n{second if isinstance(second, str) else json.dumps(second)}"


def _result_text(result: ActionResult) -> str:
    if not result.success:
        return f"error: {result.error}"
    return result.result if isinstance(result.result, str) else json.dumps(result.result, default=str)
