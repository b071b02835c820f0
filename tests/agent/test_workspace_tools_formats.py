"""The workspace tool definitions are valid in both the OpenAI and the Anthropic tool format, as litellm sends them.

OpenAI: a real ``LiteLLMModel`` request to the local OpenAI-compatible stub, whose received body is checked.
Anthropic: litellm's own request transformation (what it would POST to /v1/messages), with no network.
Each schema is also checked against the JSON Schema meta-schema, and a tool call that comes back through litellm
is dispatched.
"""

# ruff: noqa: F811  (the ``openai_stub`` fixture is imported and requested by name)
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # (litellm depends on it)
import pytest

from agent.model.llm import LiteLLMModel, _import_litellm
from agent.workspace_tools import (
    StoreBackend,
    WorkspaceTools,
    anthropic_tool_definitions,
    get_tool_definitions,
    openai_tool_definitions,
)
from omxfs.store import Workspace
from tests.support.fixtures import openai_stub  # noqa: F401
from tests.support.openai_stub import OpenAIStub

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what both providers accept as a tool name
DESCRIPTION_LIMIT = 1024  # OpenAI's limit for a function description


def _check_schema(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["type"] == "object" and isinstance(schema["properties"], dict)
    assert set(schema.get("required", [])) <= set(schema["properties"])
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and "anyOf" not in text  # plain, for every provider


def test_J_4_openai_format_as_litellm_sends_it(openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue("ok")
    model = LiteLLMModel("openai/test-model", api_base=openai_stub.base_url, api_key="sk-test")
    model.complete([{"role": "user", "content": "hi"}], tools=openai_tool_definitions())
    (body,) = openai_stub.requests
    assert body["tools"] == openai_tool_definitions()
    for tool in body["tools"]:
        assert tool["type"] == "function"
        function = tool["function"]
        assert NAME.fullmatch(function["name"]) and 0 < len(function["description"]) <= DESCRIPTION_LIMIT
        _check_schema(function["parameters"])


def test_J_4_anthropic_format_as_litellm_sends_it() -> None:
    _import_litellm()
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig
    from litellm.utils import get_optional_params

    model = "claude-3-5-sonnet-20241022"
    params = get_optional_params(model=model, custom_llm_provider="anthropic", tools=openai_tool_definitions())
    request = AnthropicConfig().transform_request(model, [{"role": "user", "content": "hi"}], params, {}, {})
    sent = [{key: tool[key] for key in ("name", "description", "input_schema")} for tool in request["tools"]]
    assert sent == anthropic_tool_definitions()
    assert len(sent) == len(get_tool_definitions())
    for tool in sent:
        assert NAME.fullmatch(tool["name"]) and tool["description"]
        _check_schema(tool["input_schema"])


def test_a_tool_call_back_through_litellm_is_dispatched(openai_stub: OpenAIStub, tmp_path: Path) -> None:
    arguments = {"filename": "test.md", "content": "hello"}
    openai_stub.enqueue(tool_calls=[{"name": "save_to_my_workspace", "arguments": arguments}])
    model = LiteLLMModel("openai/test-model", api_base=openai_stub.base_url, api_key="sk-test")
    reply = model.complete([{"role": "user", "content": "save it"}], tools=openai_tool_definitions())
    (call,) = reply.tool_calls
    tools = WorkspaceTools(StoreBackend(Workspace.init(tmp_path / "ws", agents=["alice"]), "alice"))
    result = tools.dispatch_tool_call(call.name, call.arguments)  # the JSON text, as the API returns it
    assert result["success"] is True
    assert (tmp_path / "ws/agents/alice/test.md").read_text() == "hello"


@pytest.mark.parametrize("definition", get_tool_definitions(), ids=lambda d: d["name"])
def test_every_definition_accepts_its_own_example_shape(definition: dict[str, Any]) -> None:
    """Empty arguments are valid JSON for every schema exactly when the tool requires nothing."""
    validator = jsonschema.Draft202012Validator(definition["parameters"])
    assert validator.is_valid({}) == (not definition["parameters"].get("required"))
