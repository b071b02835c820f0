"""``omx agent "PROMPT"``: the multi-turn tool loop from the command line, with a scripted model (no network).

In process (CliRunner) the scripted model is captured, so its requests show what the YAML's context settings did;
in a subprocess the installed ``omx`` is run, and ``scripts/measure_kv_cache.py`` reads the runs it left.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import cli.omx
from agent.context import is_prefix
from agent.model.llm import Model, ScriptedModel
from agent.model.waiting import WaitingModel
from tests.support.openai_stub import OpenAIStub

REPO = Path(__file__).resolve().parents[2]
OMX = REPO / ".venv" / "bin" / "omx"

pytest_plugins = ["tests.support.fixtures"]

ANSWER = "6 times 7 is 42."
TWO_STEPS: list[Any] = [
    {"content": None, "tool_calls": [{"name": "python", "arguments": {"code": "print(6*7)"}}]},
    ANSWER,
]

CONTEXT_YAML = """\
max_steps: 6
system_prompt: You are a careful agent.
context:
  append_only: true
  todo_recitation: true
  error_preservation: true
  tool_masking: true
  tool_modes: {look: [python, memory_load]}
  memory_dir: mem
"""
CONTEXT_SCRIPT: list[Any] = [
    {"content": "- [ ] compute\n- [ ] answer", "tool_calls": [{"name": "nosuch", "arguments": {"x": "1"}}]},
    {"content": None, "tool_calls": [{"name": "python", "arguments": {"code": "print(6*7)"}}]},
    "",  # a failed (empty) answer: kept, and the retry prompt cites it
    "- [x] compute\n- [x] answer\n" + ANSWER,
]


def script(tmp_path: Path, replies: list[Any]) -> str:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    return f"scripted:{path}"


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[ScriptedModel]:
    """Runs in tmp_path; every model the command builds (from --model scripted:FILE) is kept for inspection."""
    monkeypatch.chdir(tmp_path)
    for name in ("OMX_MODEL", "OMX_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    built: list[ScriptedModel] = []
    real = cli.omx.build_model

    def keep(model: str | None, api_base: str | None, timeout: float | None = None) -> Model:
        made = real(model, api_base, timeout)
        assert isinstance(made, WaitingModel) and isinstance(made.model, ScriptedModel)
        built.append(made.model)
        return made

    monkeypatch.setattr(cli.omx, "build_model", keep)
    return built


def omx_agent(*args: str) -> Result:
    return CliRunner().invoke(cli.omx.main, ["agent", *args])


def model_lines(run_dir: Path) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    return [e for e in entries if e.get("kind") == "model"]


def summary_run_dir(stderr: str) -> Path:
    """The run directory named by the one summary line on stderr."""
    (line,) = [line for line in stderr.splitlines() if ", run: " in line]
    return Path(line.rsplit(", run: ", 1)[1])


def test_the_answer_is_printed_and_the_run_recorded_with_measurements(
    models: list[ScriptedModel], tmp_path: Path
) -> None:
    result = omx_agent("What is 6*7? Use python.", "--model", script(tmp_path, TWO_STEPS))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ANSWER + "\n"
    assert result.stderr.startswith("omx agent: 2 steps, 2 requests, run: runs/")
    run_dir = summary_run_dir(result.stderr)
    assert run_dir.parent == Path("runs") and (tmp_path / run_dir / "trace.jsonl").is_file()  # default ./runs
    lines = model_lines(tmp_path / run_dir)
    assert [e["status"] for e in lines] == ["success", "success"]
    assert [e["previous_request"] for e in lines] == [False, True]
    assert lines[1]["prompt_chars"] > lines[0]["prompt_chars"] == lines[1]["prefix_chars"] > 0  # append-only reuse
    (model,) = models
    tool_results = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_results == ["42\n"]  # the default tools: the ToolManager's python, really run
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["python"]


def test_a_yaml_with_context_features_is_honoured(models: list[ScriptedModel], tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(CONTEXT_YAML + "runs_dir: from-yaml\n", encoding="utf-8")
    result = omx_agent("Compute 6*7", "-c", "agent.yaml", "--mode", "look", "--model", script(tmp_path, CONTEXT_SCRIPT))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.endswith(ANSWER + "\n")
    assert summary_run_dir(result.stderr).parent == Path("from-yaml")  # the config's runs_dir
    (model,) = models
    requests = [r["messages"] for r in model.requests]
    assert len(requests) == 4
    assert requests[0][0]["content"].startswith("You are a careful agent.")
    for messages in requests:  # todo_recitation: the checklist ends every request, updated from the output
        assert messages[-1]["role"] == "user" and messages[-1]["content"].startswith("[CURRENT_PLAN]")
    assert "- [ ] compute" in requests[1][-1]["content"]
    for earlier, later in itertools.pairwise(requests):  # append_only: never an edit
        assert is_prefix(earlier, later) and len(later) > len(earlier)
    last = requests[-1]  # error preservation: the unknown tool's error and the failed answer stay in view
    tool_results = [m["content"] for m in last if m["role"] == "tool"]
    assert any("nosuch" in text for text in tool_results) and "42\n" in tool_results
    failed = [i for i, m in enumerate(last) if m["role"] == "assistant" and m["content"] == ""]
    assert len(failed) == 1 and "My previous attempt" in last[failed[0] + 1]["content"]
    names = ["memory_list", "memory_load", "memory_save", "python"]  # masking: every tool defined, a mode allowed
    assert all([t["function"]["name"] for t in r["tools"]] == names for r in model.requests)
    assert all(r.get("tool_choice") for r in model.requests)


def test_the_help_explains_the_loop_and_its_yaml_example_runs(models: list[ScriptedModel], tmp_path: Path) -> None:
    result = omx_agent("--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "multi-turn tool-calling loop" in text and 'omx "TASK" plans first' in text
    example = result.stdout.split("A minimal agent.yaml (every context key is off by default):\n", 1)[1]
    yaml_lines = list(itertools.takewhile(lambda line: line.startswith("    ") or not line, example.splitlines()))
    (tmp_path / "help.yaml").write_text("\n".join(line[4:] for line in yaml_lines) + "\n", encoding="utf-8")
    ran = omx_agent("Compute 6*7", "-c", "help.yaml", "--mode", "look", "--model", script(tmp_path, TWO_STEPS))
    assert ran.exit_code == 0, ran.stderr
    assert ran.stdout == ANSWER + "\n"
    assert (tmp_path / "memory").is_dir()  # memory_dir: on


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("context:\n  todo_recitaton: true\nmax_steps: 0\n", "agent.yaml: max_steps: Input should be greater"),
        ("context: {append_only: yes please}\n", "agent.yaml: context.append_only: Input should be a valid boolean"),
        ("max_steps: [1\n", "agent.yaml: not valid YAML"),
        ("- 1\n- 2\n", "an agent config is a YAML mapping"),
        (None, "cannot read agent.yaml: No such file or directory"),
        ("context: {tool_masking: true, tool_modes: {look: [grep]}}\n", "grep"),
    ],
)
def test_a_bad_config_is_exit_2_with_one_line(
    models: list[ScriptedModel], tmp_path: Path, yaml_text: str | None, expected: str
) -> None:
    if yaml_text is not None:
        (tmp_path / "agent.yaml").write_text(yaml_text, encoding="utf-8")
    result = omx_agent("hi", "--config", "agent.yaml", "--model", script(tmp_path, TWO_STEPS))
    assert result.exit_code == 2, result.stderr
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("omx agent: ") and expected in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "runs").exists()


def test_a_mode_without_masking_is_exit_2(models: list[ScriptedModel], tmp_path: Path) -> None:
    result = omx_agent("hi", "--mode", "look", "--model", script(tmp_path, TWO_STEPS))
    assert result.exit_code == 2
    assert (
        result.stderr
        == "omx agent: --mode look needs context.tool_masking: true and context.tool_modes in the config\n"
    )


def test_max_steps_is_exit_1_with_the_run_recorded(models: list[ScriptedModel], tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text("max_steps: 1\n", encoding="utf-8")
    result = omx_agent("hi", "-c", "agent.yaml", "--runs-dir", "out", "--model", script(tmp_path, TWO_STEPS))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "omx agent: max steps reached (1) without an answer",
        f"omx agent: 1 steps, 1 requests, run: {summary_run_dir(result.stderr)}",
        "omx agent: Tokens: 0 in (0 cached), 0 out in 1 request; cost unknown (no price for this model)",
    ]
    assert summary_run_dir(result.stderr).parent == Path("out")  # --runs-dir wins


def test_an_llm_error_is_exit_1_with_one_line(models: list[ScriptedModel], tmp_path: Path) -> None:
    result = omx_agent("hi", "--model", script(tmp_path, TWO_STEPS[:1]))  # no reply left for the second request
    assert result.exit_code == 1
    message, where, usage = result.stderr.splitlines()
    # issue 17: the advice fits a model failure (run again), the run is named, and its tokens are counted
    assert message == (
        "omx agent: LLM error: the scripted model has no reply left for request 2; run it again: the same omx agent "
        "command; if it fails the same way, check the model and its server"
    )
    assert where.startswith("omx agent: run: runs/") and usage.startswith("omx agent: Tokens: 0 in (0 cached)")
    no_model = omx_agent("hi")
    assert no_model.exit_code == 1 and no_model.stderr.startswith("omx agent: no model configured; pass --model")
    assert len(no_model.stderr.splitlines()) == 1


def test_the_installed_omx_routes_agent_and_measure_kv_cache_reports_the_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    model = script(tmp_path, TWO_STEPS)
    ran = subprocess.run([str(OMX), "agent", "What is 6*7?", "--model", model, "--runs-dir", "runs"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == ANSWER + "\n"
    assert "2 steps, 2 requests, run: runs/" in ran.stderr
    measured = subprocess.run([sys.executable, str(REPO / "scripts" / "measure_kv_cache.py"), str(tmp_path / "runs")],
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert measured.returncode == 0, measured.stderr
    report = json.loads(measured.stdout.splitlines()[-1])
    assert report["requests"] == 2 and report["runs"] == 1 and report["cold_requests"] == 1
    assert 0 < report["prefix_reuse"] < 1


def test_omx_help_lists_the_agent_command_and_a_task_still_routes_to_task(tmp_path: Path) -> None:
    runner = CliRunner()
    top = runner.invoke(cli.omx.main, ["--help"])
    assert top.exit_code == 0 and "agent" in top.stdout and 'agent "PROMPT"' in top.stdout
    task_help = runner.invoke(cli.omx.main, ["summarise agents", "--help"])  # not a subcommand: a task
    assert task_help.exit_code == 0 and "Plan TASK" in task_help.stdout


def test_the_trace_holds_every_tool_call_and_replay_shows_the_run(models: list[ScriptedModel], tmp_path: Path) -> None:
    """Issue 17: an omx agent trace held only model measurements, and replay printed "No plan.json ... plan None"."""
    replies = [
        {"content": None, "tool_calls": [{"name": "python", "arguments": {"code": "print(6*7)"}}]},
        {"content": None, "tool_calls": [{"name": "python", "arguments": "not json"}]},
        {"content": ANSWER, "usage": {"prompt_tokens": 180, "completion_tokens": 8, "cached_tokens": 96}},
    ]
    result = omx_agent("What is 6*7? Use python.", "--model", script(tmp_path, replies))
    assert result.exit_code == 0, result.stderr
    run_dir = summary_run_dir(result.stderr)
    entries = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    ran, bad = [e for e in entries if e["kind"] == "tool"]
    assert (ran["step"], ran["tool"], ran["arguments"], ran["status"]) == (
        1,
        "python",
        {"code": "print(6*7)"},
        "success",
    )
    assert ran["output"] == "42\n" and ran["output_digest"].startswith("sha256:") and ran["error"] is None
    assert (bad["step"], bad["arguments"], bad["status"]) == (2, "not json", "failed")
    assert "are not valid JSON" in bad["error"]
    end = entries[-1]["data"]
    assert (end["status"], end["answer"], end["steps"]) == ("answered", ANSWER, 3)
    assert (end["usage"]["prompt_tokens"], end["usage"]["cached_tokens"]) == (180, 96)

    shown = CliRunner().invoke(cli.omx.main, ["replay", str(run_dir)])
    assert shown.exit_code == 0, shown.output
    lines = [line.strip() for line in shown.output.splitlines()]
    assert "No plan.json" not in shown.output and "plan None" not in shown.output
    assert "An omx agent run: no plan, the model called tools turn by turn" in lines
    assert any(line.endswith("agent run started: prompt What is 6*7? Use python.") for line in lines)
    assert any("tool python (model call 1): success" in line for line in lines)
    assert "code: print(6*7)" in lines and any(line.startswith("-> 42\\n  (sha256:") for line in lines)
    assert any("tool python (model call 2): failed" in line for line in lines)
    assert any(line.startswith("error: error: the arguments of python are not valid JSON") for line in lines)
    assert any("run ended: answered after 3 model call(s); 180 tokens in (96 cached), 8 out" in x for x in lines)
    assert f"answer: {ANSWER}" in lines


# -- issue 28: tool calls that a local model writes as text ------------------------------------------------------


def omx_agent_on(stub: OpenAIStub, tmp_path: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    """The installed ``omx agent`` against the OpenAI-compatible stub, as with a llama.cpp or Ollama server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))} | {"NO_PROXY": "127.0.0.1"}
    command = [str(OMX), "agent", prompt, "--model", "openai/local-model", "--api-base", stub.base_url]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)


def tool_entries(run_dir: Path) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    return [e for e in entries if e.get("kind") == "tool"]


TEXT_CALL = '{"name": "python", "arguments": {"code": "print(6 * 7)"}}'


@pytest.mark.parametrize(
    "written",
    [TEXT_CALL, f"```json\n{TEXT_CALL}\n```", f"<tool_call>\n{TEXT_CALL}\n</tool_call>"],
    ids=["json", "fenced", "qwen-tags"],
)
def test_a_tool_call_written_as_text_runs_and_the_answer_uses_it(
    openai_stub: OpenAIStub, tmp_path: Path, written: str
) -> None:
    """Issue 28: Qwen2.5-Coder-0.5B behind llama.cpp wrote its call as text; omx printed the JSON and stopped."""
    openai_stub.enqueue(content=written)
    openai_stub.enqueue(content=ANSWER)
    ran = omx_agent_on(openai_stub, tmp_path, "What is 6*7? Use python.")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == ANSWER + "\n"
    assert len(openai_stub.requests) == 2
    reply, results = openai_stub.requests[1]["messages"][-2:]
    assert reply == {"role": "assistant", "content": written}  # what the model said, as it said it
    assert results["role"] == "user" and "Result of your tool call python:\n42\n" in results["content"]
    (entry,) = tool_entries(tmp_path / summary_run_dir(ran.stderr))
    assert (entry["tool"], entry["source"], entry["status"], entry["output"]) == ("python", "text", "success", "42\n")
    assert entry["arguments"] == {"code": "print(6 * 7)"}
    shown = CliRunner().invoke(cli.omx.main, ["replay", str(tmp_path / summary_run_dir(ran.stderr))])
    assert "tool python (model call 1, written as text): success" in shown.output


def test_several_calls_as_text_all_run_in_order(openai_stub: OpenAIStub, tmp_path: Path) -> None:
    first = '{"name": "python", "arguments": {"code": "print(6 * 7)"}}'
    second = '{"name": "python", "arguments": {"code": "print(42 + 1)"}}'
    openai_stub.enqueue(content=f"<tool_call>\n{first}\n</tool_call>\n<tool_call>\n{second}\n</tool_call>")
    openai_stub.enqueue(content="42, and 43 after it.")
    ran = omx_agent_on(openai_stub, tmp_path, "Compute 6*7 and one more.")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "42, and 43 after it.\n"
    results = openai_stub.requests[1]["messages"][-1]["content"]
    assert results.index("Result of your tool call python:\n42") < results.index("Result of your tool call python:\n43")
    assert [e["output"] for e in tool_entries(tmp_path / summary_run_dir(ran.stderr))] == ["42\n", "43\n"]


def test_an_unknown_tool_written_as_text_is_an_error_the_model_sees(openai_stub: OpenAIStub, tmp_path: Path) -> None:
    openai_stub.enqueue(content='```json\n{"name": "calculator", "arguments": {"expression": "6*7"}}\n```')
    openai_stub.enqueue(content=TEXT_CALL)
    openai_stub.enqueue(content=ANSWER)
    ran = omx_agent_on(openai_stub, tmp_path, "What is 6*7?")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == ANSWER + "\n"  # not the JSON of the first reply
    told = openai_stub.requests[1]["messages"][-1]
    assert told["role"] == "user"
    assert "error: unknown tool: calculator; available tools: python" in told["content"]
    calls = tool_entries(tmp_path / summary_run_dir(ran.stderr))
    assert [(e["tool"], e["status"], e["source"]) for e in calls] == [
        ("calculator", "failed", "text"),
        ("python", "success", "text"),
    ]


def test_an_answer_with_braces_or_json_in_prose_stays_the_answer(openai_stub: OpenAIStub, tmp_path: Path) -> None:
    answer = 'Send {"name": "python", "arguments": {"code": "print(42)"}} to run code; {} is an empty dict.'
    openai_stub.enqueue(content=answer)
    ran = omx_agent_on(openai_stub, tmp_path, "How do I call the python tool?")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == answer + "\n"
    assert len(openai_stub.requests) == 1 and tool_entries(tmp_path / summary_run_dir(ran.stderr)) == []
