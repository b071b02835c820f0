"""litellm is imported on the first real model call and never before: it costs about two seconds, and `omx --help`
must not pay for it. Each check runs in a fresh interpreter, since this test process may have imported it already."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "OMX_MODEL": "", "HOME": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
    )


def test_agent_core_imports_without_litellm() -> None:
    """No timing here (a loaded machine made a 0.5 s bound fail): what costs the seconds is litellm, checked."""
    result = run_python(
        """
        import sys
        import agent.model.llm, agent.chat.loop, agent.chat.tool_manager
        import agent.seed_only.subagents, agent.seed_only.rules
        from agent.model.llm import LLM, ScriptedModel
        LLM(ScriptedModel(["hi"])).call("hello")
        assert "litellm" not in sys.modules, "litellm imported without a real call"
        """
    )
    assert result.returncode == 0, result.stderr


def test_cli_module_does_not_import_litellm() -> None:
    result = run_python("import sys, cli.omx; assert 'litellm' not in sys.modules, 'cli.omx imports litellm'")
    assert result.returncode == 0, result.stderr


def test_litellm_arrives_with_the_first_real_call_offline_and_quiet() -> None:
    result = run_python(
        """
        import os, sys
        from agent.model.llm import LiteLLMModel
        from tests.support.openai_stub import OpenAIStub
        assert "litellm" not in sys.modules
        with OpenAIStub() as stub:
            stub.enqueue("pong")
            model = LiteLLMModel("openai/test-model", api_base=stub.base_url, api_key="sk-test")
            assert "litellm" not in sys.modules  # constructing a model is not a call
            tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
            assert model.complete([{"role": "user", "content": "ping"}], tools=tools).content == "pong"
        assert "litellm" in sys.modules
        assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no cost-map download warning, no litellm console handler output


def test_a_local_openai_compatible_server_is_called_without_litellm() -> None:
    """Issue 17: the first request within 1 s of starting omx. litellm costs seconds to import, so a call to an
    ``openai/...`` model with an API base (what ``omx --model openai/X --api-base URL`` builds) must not load it."""
    result = run_python(
        """
        import sys
        from agent.model.llm import model_from_settings
        from tests.support.openai_stub import OpenAIStub
        with OpenAIStub() as stub:
            stub.enqueue("pong")
            model = model_from_settings("openai/test-model", stub.base_url)
            assert model.complete([{"role": "user", "content": "ping"}]).content == "pong"
        assert "litellm" not in sys.modules, "the direct client imported litellm"
        assert "openai" not in sys.modules, "the direct client imported the openai SDK"
        """
    )
    assert result.returncode == 0, result.stderr
