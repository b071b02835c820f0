"""Issue 28: after a failed step, or a plan still invalid after its retry, omx shows the model what went wrong and
runs its new plan, at most --replans times (2 for a task, none for omx run unless asked); each new plan is shown
and confirmed by the same risk rules as the first, the failing step still stops its own plan (seed 004 FR-E2), and
the trace, the run directory (plans/N/) and omx replay keep every plan. Scripted model (or the OpenAI stub), real
files, the real omx command in process (or as a process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import LLMError, ScriptedModel
from agent.plan_run import workflow
from tests.e2e.helpers import NOTES, REPO, kinds, omx, only_run, run_end, trace_of
from tests.support.openai_stub import OpenAIStub

pytest_plugins = ["tests.support.fixtures"]


def plan(steps: list[tuple[str, dict[str, Any]]], risk: str = "LOW") -> str:
    numbered = [{"id": i, "description": tool, "tool": tool, "inputs": inputs} for i, (tool, inputs) in
                enumerate(steps, 1)]  # fmt: skip
    return json.dumps({"version": 1, "goal": "count", "risk_level": risk, "workspace_root": ".", "steps": numbered,
                       "success_criteria": []})  # fmt: skip


READ_MISSING = plan([("read_text", {"path": "src/count.txt"}), ("write_text", {"path": "out/n.txt", "content": "?"})])
LIST_THEN_WRITE = plan([("list_dir", {"path": "src"}), ("write_text", {"path": "out/n.txt", "content": "2\n"})])
TASK = "Count the files in src/ and write just the number to out/n.txt"
# READ_MISSING's read of a file the workspace lacks is seen before the run (agent.plan_run.feasibility): omx asks once
# more for the plan, and the tests of what happens at run time reply with the same plan, which then runs and fails


def test_a_failed_step_is_followed_by_a_new_plan_that_finishes_the_task(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    (ws / "src").mkdir()
    for name in ("a.py", "b.py"):
        (ws / "src" / name).write_text("x = 1\n")
    model = script(READ_MISSING, READ_MISSING, LIST_THEN_WRITE)
    result = omx(TASK, "--yes")
    assert result.exit_code == 0, result.output
    assert "Step 1 failed: src/count.txt does not exist" in result.output
    assert "Re-planning (1 of at most 2)" in result.output
    # the model wrote the 2 itself, no code counted src/: done, its value not checked
    assert "Result: done, form checked, value not checked" in result.output and (ws / "out/n.txt").read_text() == "2\n"
    missing = "step 1 reads src/count.txt, which is not in the workspace (its files are listed above)"
    assert missing in model.requests[1]["messages"][-1]["content"]
    replan_request = model.requests[2]["messages"][-1]["content"]
    assert "step 1 (read_text): failed: src/count.txt does not exist" in replan_request
    assert "list_dir" in replan_request
    trace = trace_of(only_run(ws))
    (unfit,) = [e for e in trace if e.get("event") == "plan_unfit"]
    assert unfit["data"]["problems"] == [missing]
    (replan,) = [e for e in trace if e.get("event") == "replan"]
    assert replan["data"]["failed_step"] == 1 and replan["data"]["plan"]["steps"][0]["tool"] == "read_text"
    assert [e["event"] for e in trace if e.get("event") in ("plan", "end")] == ["plan", "plan", "end"]
    assert run_end(trace)["status"] == "done_unverified"
    replayed = omx("replay", str(only_run(ws)))
    assert "re-plan 1: step 1 failed: src/count.txt does not exist" in replayed.output
    assert "the failed plan: 1. read_text, 2. write_text" in replayed.output


def test_re_plans_are_bounded(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    (ws / "src").mkdir()
    model = script(READ_MISSING, READ_MISSING, READ_MISSING, READ_MISSING)
    result = omx(TASK, "--yes")
    assert result.exit_code == 1, result.output
    assert "Re-planning (2 of at most 2)" in result.output and "Re-planning (3" not in result.output
    assert "Result: failed at step 1" in result.output and len(model.requests) == 4
    assert [e["event"] for e in trace_of(only_run(ws)) if e.get("event") == "end"] == ["end"]


def test_a_new_plan_is_confirmed_by_the_same_rules_and_a_high_one_refused(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "keep.py").write_text("x = 1\n")
    delete = plan([("shell", {"cmd": "rm src/keep.py"})], risk="LOW")
    script(READ_MISSING, READ_MISSING, delete)
    result = omx(TASK, "--yes")
    assert result.exit_code == 3, result.output  # refused: HIGH, whatever the plan called itself
    assert "refused: the plan is HIGH risk" in result.output and (ws / "src/keep.py").exists()


# -- the re-plans ported from the fix-replan branch: invalid plans, the bound, omx run, plans/N/, replay ----------

COPY_TASK = "copy the notes to out/copy.txt"  # no input named: a read of a missing file is not mended (task_files)


def steps_plan(*steps: dict[str, Any], goal: str = COPY_TASK, risk: str = "LOW") -> str:
    numbered = [{"id": i, "description": f"step {i}", **step} for i, step in enumerate(steps, 1)]
    return json.dumps({"version": 1, "goal": goal, "risk_level": risk, "steps": numbered})


def read(path: str) -> dict[str, Any]:
    return {"tool": "read_text", "inputs": {"path": path}}


def write(path: str, content: Any, mode: str = "overwrite") -> dict[str, Any]:
    return {"tool": "write_text", "inputs": {"path": path, "content": content, "mode": mode}}


COPY = steps_plan(read("data/notes.txt"), write("out/copy.txt", {"ref": "step:1.output"}))
LISTS_THEN_READS_A_MISSING_FILE = steps_plan(
    {"tool": "list_dir", "inputs": {"path": "data"}},
    read("data/note.txt"),
    write("out/copy.txt", {"ref": "step:2.output"}),
)
READS_A_MISSING_FILE = steps_plan(read("data/missing.txt"), write("out/copy.txt", {"ref": "step:1.output"}))


def events(entries: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [e["data"] for e in entries if e["kind"] == "run" and e["event"] == event]


def test_each_plan_is_kept_with_its_outputs_and_replayed(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    model = script(LISTS_THEN_READS_A_MISSING_FILE, LISTS_THEN_READS_A_MISSING_FILE, COPY)
    result = omx(COPY_TASK, "--yes")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert (ws / "out" / "copy.txt").read_text(encoding="utf-8") == NOTES
    assert "Re-planning (1 of at most 2)" in result.output and "Re-plan 1 of 2:" in result.output
    assert "(2/2 steps, after 1 re-plan)" in result.output
    assert model.requests[2]["json_mode"]["title"] == "Plan"  # a re-plan is asked with the plan's schema too
    replan = model.requests[2]["messages"][-1]["content"]
    assert "- step 2 (read_text): failed: data/note.txt does not exist" in replan and "list_dir" in replan
    assert "- step 1 (list_dir): success, output: 'notes.txt'" in replan
    assert f"The task is still: {COPY_TASK}" in replan
    run_dir = only_run(ws)
    entries = trace_of(run_dir)
    steps = [(s["step_id"], s["tool"], s["status"]) for s in kinds(entries, "step")]
    assert steps == [(1, "list_dir", "success"), (2, "read_text", "failed"), (3, "write_text", "skipped"),
                     (1, "read_text", "success"), (2, "write_text", "success")]  # fmt: skip
    plans = events(entries, "plan")
    assert [p["number"] for p in plans] == [1, 2]
    assert [p["plan"]["steps"][1]["tool"] for p in plans] == ["read_text", "write_text"]
    (asked,) = events(entries, "replan")
    assert (asked["number"], asked["reason"], asked["failed_step"]) == (1, "failed step", 2)
    assert [m["purpose"] for m in kinds(entries, "model")] == ["reading", "plan", "plan", "replan"]
    end = run_end(entries)
    assert (end["status"], end["replans"], end["plans"]) == ("done", 1, 2)
    # plan.json and outputs/ are the last plan's, never a mix; the first is kept where omx run --from-step finds it
    assert json.loads((run_dir / "plan.json").read_text())["steps"][0]["inputs"] == {"path": "data/notes.txt"}
    first = json.loads((run_dir / "plans" / "1" / "plan.json").read_text())
    assert first["steps"][1]["inputs"] == {"path": "data/note.txt"}
    assert (run_dir / "plans" / "1" / "outputs" / "1.txt").read_text() == "notes.txt"
    assert (run_dir / "outputs" / "1.txt").read_text() == NOTES
    replay = omx("replay", str(run_dir))
    assert replay.exit_code == 0, replay.output
    assert "(2 plans; the last, in plan.json, has 2 step(s); the others in plans/)" in replay.output
    assert "re-plan 1: step 2 failed: data/note.txt does not exist" in replay.output
    assert "  plan 1: " + COPY_TASK in replay.output and "  plan 2: " + COPY_TASK in replay.output
    assert "1. [list_dir] step 1 (path: data)" in replay.output
    assert "run ended: done, 2 step(s) executed, after 1 re-plan(s)" in replay.output


def test_a_plan_invalid_after_its_retry_is_re_planned(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    command_as_tool = steps_plan({"tool": "cp data/notes.txt out/copy.txt", "inputs": {}})
    not_a_string = steps_plan(read("data/notes.txt"), write("out/copy.txt", {"text": 1}))
    model = script(command_as_tool, not_a_string, COPY)
    result = omx(COPY_TASK, "--yes")
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert (ws / "out" / "copy.txt").read_text(encoding="utf-8") == NOTES
    assert "The model's plan was invalid, also after a retry: steps[1].write_text.inputs.content" in result.output
    assert "Re-plan 1 of 2:" in result.output and "after 1 re-plan" in result.output
    third = model.requests[2]["messages"]
    assert [m["role"] for m in third] == ["system", "user", "user"]  # a fresh request, not the retry's conversation
    assert "Your last plans for this task were invalid:\nsteps[1].write_text.inputs.content" in third[-1]["content"]
    assert f"The task is still: {COPY_TASK}" in third[-1]["content"]
    entries = trace_of(only_run(ws))
    assert [e["attempt"] for e in events(entries, "plan_invalid")] == [1, 2]
    assert [e["reason"] for e in events(entries, "replan")] == ["invalid plan"]
    assert [p["number"] for p in events(entries, "plan")] == [1]  # the only valid plan, the one shown
    assert run_end(entries)["replans"] == 1
    replay = omx("replay", str(only_run(ws)))
    assert "re-plan 1: the plan was invalid, also after a retry: steps[1].write_text" in replay.output


def test_an_invalid_re_plan_that_cannot_be_made_leaves_the_invalid_plan_s_error(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    script("not json", "still not json", LLMError("LLM error: the server is gone", kind="unreachable"))
    result = omx(COPY_TASK, "--yes")
    assert result.exit_code == workflow.EXIT_FAILED
    assert "No new plan: planning failed: LLM error: the server is gone" in result.output
    assert "omx: the model did not return a valid plan, also after one retry" in result.stderr
    end = run_end(trace_of(only_run(ws)))
    assert (end["status"], end["replans"]) == ("planning_failed", 0)


@pytest.mark.parametrize(("option", "plans"), [((), 3), (("--replans", "1"), 2), (("--replans", "0"), 1)])
def test_replans_sets_the_bound(
    ws: Path, script: Callable[..., ScriptedModel], option: tuple[str, ...], plans: int
) -> None:
    model = script(*[READS_A_MISSING_FILE] * 5)
    result = omx(COPY_TASK, "--yes", *option)
    assert result.exit_code == workflow.EXIT_FAILED
    assert len(model.requests) == plans + 1  # the first plan asked twice; the replies left were never asked for
    replans = plans - 1
    after = f", after {replans} re-plan{'s' if replans > 1 else ''}" if replans else ""
    assert f"Result: failed at step 1 of 2{after}: data/missing.txt does not exist" in result.output
    end = run_end(trace_of(only_run(ws)))
    assert (end["status"], end["replans"], end["plans"]) == ("failed", replans, plans)


def test_a_medium_risk_re_plan_is_asked_whatever_yes_says(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    overwrite = steps_plan(write("data/notes.txt", "overwritten", "overwrite"), risk="MEDIUM")
    script(READS_A_MISSING_FILE, READS_A_MISSING_FILE, overwrite)
    result = omx(COPY_TASK, "--yes", input="n\n")
    assert result.exit_code == workflow.EXIT_DECLINED
    assert "Run this MEDIUM risk plan? (--yes does not answer for MEDIUM risk plans)" in result.output
    assert (ws / "data" / "notes.txt").read_text(encoding="utf-8") == NOTES
    assert [c["decision"] for c in events(trace_of(only_run(ws)), "confirmation")] == ["approved", "declined"]


def test_a_step_the_model_s_server_failed_is_not_re_planned(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    summarise = steps_plan(
        read("data/notes.txt"),
        {"tool": "llm", "inputs": {"prompt": "sum", "input": {"ref": "step:1.output"}}},
        write("out/copy.txt", {"ref": "step:2.output"}),
    )
    model = script(summarise, LLMError("LLM error: the server is gone", kind="unreachable"), COPY)
    result = omx(COPY_TASK, "--yes")
    assert result.exit_code == workflow.EXIT_FAILED and "Re-planning" not in result.output
    assert len(model.requests) == 2


def test_a_saved_plan_is_re_planned_only_when_asked(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    saved = ws / "saved.json"
    saved.write_text(READS_A_MISSING_FILE, encoding="utf-8")
    model = script(COPY)
    as_is = omx("run", str(saved), "--yes")
    assert as_is.exit_code == workflow.EXIT_FAILED and model.requests == []
    assert "Re-planning" not in as_is.output and "fix step 1 in" in as_is.output
    asked = omx("run", str(saved), "--yes", "--replans", "1")
    assert asked.exit_code == workflow.EXIT_OK, asked.output
    assert (ws / "out" / "copy.txt").read_text(encoding="utf-8") == NOTES
    (request,) = model.requests
    assert request["messages"][1]["content"].startswith(f"Task: {COPY_TASK}")  # the saved plan's goal is the task


def test_the_mode_the_server_took_is_kept_for_the_re_plan(ws: Path, openai_stub: OpenAIStub) -> None:
    """A real omx process against a server without json_schema: refused once, JSON mode for the plan and re-plan."""
    openai_stub.unsupported_response_formats = {"json_schema"}
    openai_stub.enqueue(content=READS_A_MISSING_FILE)
    openai_stub.enqueue(content=READS_A_MISSING_FILE)
    openai_stub.enqueue(content=COPY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO), "NO_PROXY": "127.0.0.1"}
    command = [sys.executable, "-m", "cli.omx", COPY_TASK, "--yes", "--model", "openai/test", "--api-base",
               openai_stub.base_url]  # fmt: skip
    done = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert openai_stub.response_formats == ["json_schema", "json_object", "json_object", "json_object"]
    entries = trace_of(only_run(ws))
    calls = [(c["purpose"], c["status"], c["response_format"]) for c in kinds(entries, "model")]
    # the task's reading, asked first and only with the schema, meets the refusal; the plans go in JSON mode
    assert calls == [("reading", "failed", "json_schema"), ("plan", "success", "json_object"),
                     ("plan", "success", "json_object"), ("replan", "success", "json_object")]  # fmt: skip
    assert len(events(entries, "schema_refused")) == 1


@pytest.mark.parametrize(("pinned", "sent"), [("json_object", "json_object"), ("none", None)])
def test_omx_response_format_pins_one_way_of_asking(
    ws: Path, openai_stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch, pinned: str, sent: str | None
) -> None:
    """OMX_RESPONSE_FORMAT asks every plan one way, never the schema first (to measure what each way adds)."""
    openai_stub.enqueue(content=COPY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO), "NO_PROXY": "127.0.0.1", "OMX_RESPONSE_FORMAT": pinned}
    command = [sys.executable, "-m", "cli.omx", COPY_TASK, "--yes", "--model", "openai/test", "--api-base",
               openai_stub.base_url]  # fmt: skip
    done = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert openai_stub.response_formats == [sent]
    env["OMX_RESPONSE_FORMAT"] = "grammar"
    bad = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == workflow.EXIT_FAILED
    assert "OMX_RESPONSE_FORMAT='grammar' is not one of auto, json_schema, json_object, none" in bad.stderr
    assert len(openai_stub.requests) == 1  # nothing was asked


# -- a result omx found short of what the task asks for is re-planned, told exactly what was unmet -----------------

BULLETS_TASK = "Summarise data/notes.txt in 3 bullets into out/summary.md"


def test_a_result_short_of_the_task_is_re_planned_with_what_was_unmet(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    four = steps_plan(write("out/summary.md", "- a\n- b\n- c\n- d\n"), goal=BULLETS_TASK)
    three = steps_plan(write("out/summary.md", "- a\n- b\n- c\n"), goal=BULLETS_TASK)
    model = script(four, three)
    result = omx(BULLETS_TASK, "--yes", input="y\n")  # the re-plan overwrites the first plan's file: MEDIUM, asked
    assert result.exit_code == workflow.EXIT_OK, result.output
    assert "Run this MEDIUM risk plan?" in result.output
    assert "The result is wrong: success criterion not met: out/summary.md has 3 bullet lines" in result.output
    assert "Re-planning (1 of at most 2)" in result.output
    assert "Result: done, form checked, content not checked (1/1 steps, after 1 re-plan)" in result.output
    assert (ws / "out" / "summary.md").read_text(encoding="utf-8") == "- a\n- b\n- c\n"
    told = model.requests[1]["messages"][-1]["content"]
    assert "Every step ran, but the result is not what the task asks for:" in told
    assert "- out/summary.md has 3 bullet lines: not met (4 bullet lines)" in told
    assert f"The task is still: {BULLETS_TASK}" in told
    run_dir = only_run(ws)
    entries = trace_of(run_dir)
    (asked,) = events(entries, "replan")
    assert (asked["reason"], asked["failed_step"]) == ("unmet task check", None)
    assert (run_end(entries)["status"], run_end(entries)["replans"]) == ("done_unverified", 1)
    replay = omx("replay", str(run_dir))
    assert "re-plan 1: the result is wrong: success criterion not met: out/summary.md has 3 bullet lines" in (
        replay.output
    )


def test_a_result_still_short_after_the_re_plans_fails_and_a_plan_s_own_criterion_is_no_reason(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    four = steps_plan(write("out/summary.md", "- a\n- b\n- c\n- d\n"), goal=BULLETS_TASK)
    model = script(four, four, four, four)
    result = omx(BULLETS_TASK, "--yes", input="y\ny\n")
    assert result.exit_code == workflow.EXIT_FAILED
    assert len(model.requests) == 3 and "after 2 re-plans" in result.output  # the bound of every re-plan
    # the plan's own criterion not met, the task's met: the plan may have guessed wrong; no re-plan
    own = json.loads(steps_plan(write("out/summary.md", "- a\n- b\n- c\n"), goal=BULLETS_TASK))
    own["success_criteria"] = ['out/summary.md contains "sandbox"']  # the input's word: a quoted text it may hold
    (ws / "out" / "summary.md").unlink()
    model = script(json.dumps(own), COPY)
    result = omx(BULLETS_TASK, "--yes")
    assert result.exit_code == workflow.EXIT_FAILED and "Re-planning" not in result.output
    assert len(model.requests) == 1
