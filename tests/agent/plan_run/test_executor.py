"""The executor (seed 004 FR-E1/E2): serial steps, references, output checks, stop at the first failure, trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.executor import Executor
from agent.plan_run.plan import Plan
from agent.plan_run.tools import registry
from agent.plan_run.tools.base import ToolContext
from agent.record.trace import RecordingModel, RunRecorder, digest, preview
from agent.sandbox.confine import OUTPUT_LIMIT, Sandbox, SandboxUnavailable
from tests.support.sandbox import sandbox_or_skip


def make_plan(*steps: tuple[str, dict[str, Any]], criteria: list[str] | None = None) -> Plan:
    numbered = [{"id": i, "description": f"step {i}", "tool": t, "inputs": inp} for i, (t, inp) in enumerate(steps, 1)]
    data = {"version": 1, "goal": "g", "risk_level": "LOW", "steps": numbered, "success_criteria": criteria or []}
    return Plan.model_validate(data)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "notes.txt").write_text("apples\npears\nplums\n", encoding="utf-8")
    return workspace.resolve()


@pytest.fixture
def recorder(ws: Path) -> RunRecorder:
    return RunRecorder.create(ws / "runs")


def executor(ws: Path, recorder: RunRecorder, *replies: Any) -> Executor:
    model = RecordingModel(ScriptedModel(replies), recorder)
    return Executor(ToolContext(workspace=ws, sandbox=Sandbox(ws), model=model), recorder)


def trace(recorder: RunRecorder, kind: str = "step") -> list[dict[str, Any]]:
    lines = recorder.trace_path.read_text(encoding="utf-8").splitlines()
    return [entry for entry in map(json.loads, lines) if entry["kind"] == kind]


SUMMARY_PLAN = (
    ("read_text", {"path": "data/notes.txt"}),
    ("llm", {"prompt": "Summarise in 3 bullets", "input": {"ref": "step:1.output"}}),
    ("write_text", {"path": "out/summary.md", "content": {"ref": "step:2.output"}}),
)


def test_steps_run_in_order_with_references_resolved(ws: Path, recorder: RunRecorder) -> None:
    model_reply = {"content": "- apples\n- pears\n- plums", "usage": {"prompt_tokens": 40, "cached_tokens": 32}}
    run = executor(ws, recorder, model_reply)
    result = run.execute(make_plan(*SUMMARY_PLAN, criteria=["out/summary.md has 3 bullet lines"]))
    # 3 bullets met, a form: nothing checked what the summary says (``verdict``)
    assert result.status == "done_unverified" and result.steps_executed == 3 and result.failed_step is None
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8") == "- apples\n- pears\n- plums\n"
    assert result.produced_files == [str(ws / "out" / "summary.md")]
    assert [(c.status, c.detail) for c in result.criteria] == [("met", "3 bullet lines")]
    assert isinstance(run.ctx.model, RecordingModel)
    request = run.ctx.model.model.requests[0]  # type: ignore[attr-defined]
    assert request["messages"][-1]["content"].endswith("---\napples\npears\nplums\n")


def test_every_step_is_traced_with_the_seed_fields(ws: Path, recorder: RunRecorder) -> None:
    executor(ws, recorder, "- a\n- b\n- c").execute(make_plan(*SUMMARY_PLAN))
    steps = trace(recorder)
    assert [(s["step_id"], s["tool"], s["status"]) for s in steps] == [
        (1, "read_text", "success"),
        (2, "llm", "success"),
        (3, "write_text", "success"),
    ]
    for entry in steps:
        for name in ("step_id", "tool", "inputs_digest", "output_digest", "start_time", "end_time", "status", "error"):
            assert name in entry
        assert entry["start_time"] <= entry["end_time"] and entry["error"] is None
    assert steps[0]["inputs_digest"] == digest({"path": "data/notes.txt"})
    assert steps[0]["output_digest"] == digest("apples\npears\nplums\n")
    assert steps[2]["inputs"]["content"] == "- a\n- b\n- c\n"  # the resolved value, not the reference


def test_model_requests_are_traced_with_their_usage(ws: Path, recorder: RunRecorder) -> None:
    reply = {"content": "- x", "usage": {"prompt_tokens": 120, "completion_tokens": 7, "cached_tokens": 96}}
    executor(ws, recorder, reply).execute(make_plan(("llm", {"prompt": "p"})))
    (call,) = trace(recorder, "model")
    assert (call["purpose"], call["step_id"], call["status"]) == ("step", 1, "success")
    assert (call["prompt_tokens"], call["completion_tokens"], call["cached_tokens"]) == (120, 7, 96)
    assert call["request_id"] == "scripted-1"


def test_the_first_failure_stops_the_run_and_the_rest_is_skipped(ws: Path, recorder: RunRecorder) -> None:
    plan = make_plan(
        ("read_text", {"path": "data/notes.txt"}),
        ("read_text", {"path": "missing.txt"}),
        ("write_text", {"path": "out/never.md", "content": "x"}),
    )
    result = executor(ws, recorder).execute(plan)
    assert result.status == "failed" and result.failed_step == 2 and result.steps_executed == 2
    assert result.error == "missing.txt does not exist"
    assert (
        result.suggestion and "list_dir" in result.suggestion and f"omx run {recorder.plan_path}" in result.suggestion
    )
    assert [o.status for o in result.steps] == ["success", "failed", "skipped"]
    assert not (ws / "out").exists()
    failed, skipped = trace(recorder)[1:]
    assert (failed["status"], failed["error_type"], failed["output_digest"]) == ("failed", "NotFound", None)
    assert failed["inputs"] == {"path": "missing.txt"} and failed["hint"]
    assert (skipped["status"], skipped["start_time"], skipped["inputs_digest"]) == ("skipped", None, None)


def test_output_checks_catch_empty_reads_and_replies(ws: Path, recorder: RunRecorder) -> None:
    (ws / "empty.txt").write_text("", encoding="utf-8")
    assert executor(ws, recorder).execute(make_plan(("read_text", {"path": "empty.txt"}))).error.endswith("is empty")  # type: ignore[union-attr]
    result = executor(ws, recorder, "").execute(make_plan(("llm", {"prompt": "p"})))
    assert result.status == "failed" and result.error == "the model returned an empty reply"


def test_an_unmet_success_criterion_fails_the_run(ws: Path, recorder: RunRecorder) -> None:
    plan = make_plan(
        ("write_text", {"path": "out/s.md", "content": "- only one\n"}),
        criteria=["out/s.md has 3 bullet lines", "the tone is friendly"],
    )
    result = executor(ws, recorder).execute(plan)
    assert result.status == "failed" and result.failed_step is None
    assert [c.status for c in result.criteria] == ["not met", "not checked"]
    assert result.error == "success criterion not met: out/s.md has 3 bullet lines (1 bullet line)"


def test_a_bug_in_a_tool_is_traced_then_raised(
    ws: Path, recorder: RunRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(inputs: Any, ctx: ToolContext) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setitem(registry.TOOLS, "list_dir", broken)
    with pytest.raises(RuntimeError, match="bug"):
        executor(ws, recorder).execute(make_plan(("list_dir", {})))
    (entry,) = trace(recorder)
    assert (entry["status"], entry["error_type"], entry["error"]) == ("failed", "RuntimeError", "internal error: bug")


def test_digests_are_canonical() -> None:
    assert digest({"b": 1, "a": "é"}) == digest({"a": "é", "b": 1})
    assert digest("x").startswith("sha256:") and len(digest("x")) == len("sha256:") + 64


def test_run_directories_are_unique(ws: Path) -> None:
    first, second = RunRecorder.create(ws / "runs"), RunRecorder.create(ws / "runs")
    assert first.run_dir != second.run_dir and first.run_dir.parent == second.run_dir.parent


# -- escape attempts: they all fail, and the trace says why ------------------------------------------------------

ESCAPES = [
    ("shell", "python3 -c \"open('{outside}/from-python.txt', 'w').write('x')\"", "NonZeroExit"),
    ("python", "import os; os.symlink('{outside}', 'out'); open('out/via-link.txt', 'w').write('x')", "NonZeroExit"),
    ("read_text", "link-out/secret.txt", "PathOutsideWorkspace"),
    ("write_text", "link-out/planted.txt", "PathOutsideWorkspace"),
    ("shell", "ls; rm -rf .", "CommandRefused"),
    ("shell", "cat $(ls data)", "CommandRefused"),
    ("shell", "cat data/notes.txt > copy.txt", "CommandRefused"),
    ("shell", "rm -rf .", "CommandRefused"),
]


@pytest.mark.parametrize(("tool", "value", "error_type"), ESCAPES)
def test_escape_attempts_fail_and_are_traced(
    ws: Path, recorder: RunRecorder, tmp_path: Path, tool: str, value: str, error_type: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret", encoding="utf-8")
    (ws / "link-out").symlink_to(outside)
    box = Sandbox(ws)
    if tool in ("shell", "python") and error_type == "NonZeroExit":
        try:
            box.info  # noqa: B018
        except SandboxUnavailable as exc:
            pytest.skip(f"no OS sandbox on this machine: {exc}")
    value = value.format(outside=outside)
    key = {"shell": "cmd", "python": "code", "read_text": "path"}.get(tool, "path")
    inputs = {key: value, "content": "x"} if tool == "write_text" else {key: value}
    ctx = ToolContext(workspace=ws, sandbox=box)
    result = Executor(ctx, recorder).execute(make_plan((tool, inputs)))
    assert result.status == "failed"
    (entry,) = trace(recorder)
    assert entry["status"] == "failed" and entry["error_type"] == error_type and entry["error"]
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (ws / "data" / "notes.txt").exists() and not (ws / "copy.txt").exists()
    if error_type == "NonZeroExit":
        stderr = entry["details"]["stderr"]  # refused, or not there at all: the sandbox shows only the workspace
        assert any(why in stderr for why in ("Permission denied", "Read-only", "No such file or directory")), stderr


def test_network_from_python_fails_and_is_traced(ws: Path, recorder: RunRecorder) -> None:
    import socket

    box = Sandbox(ws)
    try:
        box.info  # noqa: B018
    except SandboxUnavailable as exc:
        pytest.skip(f"no OS sandbox on this machine: {exc}")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')"
        result = Executor(ToolContext(workspace=ws, sandbox=box), recorder).execute(
            make_plan(("python", {"code": code}))
        )
    assert result.status == "failed"
    (entry,) = trace(recorder)
    assert entry["error_type"] == "NonZeroExit" and entry["error"].endswith("Operation not permitted")
    assert entry["details"]["sandbox"] == box.info.mechanism


BIG = f"import sys; sys.stdout.write('x' * {OUTPUT_LIMIT * 2})"


def test_a_cut_output_that_a_later_step_uses_fails_its_step(ws: Path, recorder: RunRecorder) -> None:
    """The sandbox keeps the first OUTPUT_LIMIT bytes of a step's output: a later step that used it got the start
    of the data (a 262,144-byte file where 192 MB were printed) and the run said success."""
    ctx = ToolContext(workspace=ws, sandbox=sandbox_or_skip(ws))
    plan = make_plan(
        ("python", {"code": BIG}), ("write_text", {"path": "big.txt", "content": {"ref": "step:1.output"}})
    )
    result = Executor(ctx, recorder).execute(plan)
    assert result.status == "failed" and result.failed_step == 1 and not (ws / "big.txt").exists()
    assert result.error == (
        f"the output of step 1 is longer than the {OUTPUT_LIMIT:,} bytes omx keeps of it, and step 2 would get only "
        "its start"
    )
    assert result.suggestion is not None and "write the data to a file" in result.suggestion
    assert result.suggestion.endswith("--from-step 1")
    assert [(e["status"], e.get("error_type")) for e in trace(recorder)] == [
        ("failed", "OutputTooLarge"),
        ("skipped", None),
    ]


def test_a_cut_output_nobody_uses_and_a_long_stderr_pass(ws: Path, recorder: RunRecorder) -> None:
    """Only an output passed on must be whole: one shown in the trace alone may be cut, and a long stderr cuts
    nothing that is passed on."""
    ctx = ToolContext(workspace=ws, sandbox=sandbox_or_skip(ws))
    noisy = f"import sys; sys.stderr.write('e' * {OUTPUT_LIMIT * 2}); print('done')"
    plan = make_plan(
        ("python", {"code": BIG}),
        ("python", {"code": noisy}),
        ("write_text", {"path": "done.txt", "content": {"ref": "step:2.output"}}),
    )
    result = Executor(ctx, recorder).execute(plan)
    assert result.status == "done", result.error  # every step ran; no criterion to check
    assert (ws / "done.txt").read_text(encoding="utf-8") == "done\n"


def test_a_long_output_in_the_trace_keeps_its_end_where_a_traceback_has_its_error() -> None:
    """Regression: the preview kept the first 400 characters, so a step's long traceback lost its last line, the
    one that says what went wrong."""
    frames = "".join(f'  File "step.py", line {n}, in f{n}\n    f{n + 1}()\n' for n in range(40))
    traceback = f"Traceback (most recent call last):\n{frames}ZeroDivisionError: division by zero\n"
    shown = preview(traceback)
    assert shown.startswith("Traceback") and shown.endswith("ZeroDivisionError: division by zero\n")
    assert f"[{len(traceback)} chars]" in shown and len(shown) < 500
