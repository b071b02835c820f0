"""``omx --loop "TASK"``: the task as a tool loop, each call confirmed and run as a one-step plan, then the task's
checks. Real ``omx`` processes, with a scripted model (``--model scripted:FILE``) or the OpenAI-compatible stub where
the test reads what the model was sent; judged by the files in the workspace and the run's trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_omx_workspaces import mounted  # noqa: F401  (the fixture, requested by name)
from tests.fuse.conftest import poll
from tests.support.openai_stub import OpenAIStub
from tests.support.sandbox import sandbox_or_skip
from tests.support.scripts import changes_and_undo

pytest_plugins = ["tests.support.fixtures"]

OMX = Path(sys.executable).parent / "omx"
COUNT_TASK = "count the lines of notes.txt and write just the number to out/n.txt"
NOTES = "alpha\nbeta\ngamma\n"
NEVER = "a tool loop is never reported a success"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": None, "tool_calls": [{"name": name, "arguments": arguments}]}


def omx(ws: Path, task: str, *options: str, replies: list[Any] | None = None, model: list[str] | None = None,
        answers: str = "") -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``omx --loop TASK -w WS [options]``, its prompts answered with ``answers``; the model scripted by ``replies``
    (``--model scripted:FILE``) or given as ``model`` (command-line options)."""
    if replies is not None:
        script = ws.parent / "replies.json"
        script.write_text(json.dumps(replies), encoding="utf-8")
        model = ["--model", f"scripted:{script}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"NO_PROXY": "127.0.0.1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [str(OMX), "--loop", task, "-w", str(ws), *(model or []), *options]
    return subprocess.run(command, input=answers, capture_output=True, text=True, timeout=180, env=env,
                          cwd=ws.parent, check=False)  # fmt: skip


def trace(ws: Path) -> list[dict[str, Any]]:
    (run,) = (ws / "runs").iterdir()
    return [json.loads(line) for line in (run / "trace.jsonl").read_text(encoding="utf-8").splitlines()]


def events(entries: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [e["data"] for e in entries if e.get("kind") == "run" and e.get("event") == event]


def of_kind(entries: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in entries if e.get("kind") == kind]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "out").mkdir(parents=True)
    (workspace / "notes.txt").write_text(NOTES, encoding="utf-8")
    return workspace


def test_a_loop_reads_writes_with_python_and_answers_done(ws: Path) -> None:
    """A call written as text (a local model's way) and a native one each run as a step, confirmed by its risk (the
    read on --yes, the python code at the prompt); every check of the task met: done, exit 0, never success."""
    sandbox_or_skip(ws)
    code = "n = len(open('notes.txt').read().splitlines())\nopen('out/n.txt', 'w').write(str(n))\nprint(n)"
    replies = [
        json.dumps({"name": "read_text", "arguments": {"path": "notes.txt"}}),
        call("python", code=code),
        "notes.txt has 3 lines; out/n.txt holds 3.",
    ]
    done = omx(ws, COUNT_TASK, "--yes", replies=replies, answers="y\n")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert (ws / "out/n.txt").read_text(encoding="utf-8") == "3"
    assert "Answer: notes.txt has 3 lines; out/n.txt holds 3." in done.stdout
    result = next(line for line in done.stdout.splitlines() if line.startswith("Result:"))
    assert result.startswith("Result: done, every check omx ran is met (2)") and NEVER in result, said
    assert "[met, omx's reading] out/n.txt is written by this run (from the task)" in done.stdout
    assert "Run this MEDIUM risk tool call?" in done.stdout and "Run this LOW risk" not in done.stdout
    entries = trace(ws)
    (start,), (end,) = events(entries, "start"), events(entries, "end")
    assert (start["command"], start["mode"], start["task"]) == ("task", "loop", COUNT_TASK)
    assert "llm" not in start["tools"] and {"read_text", "python", "delete"} <= set(start["tools"])
    assert (end["status"], end["calls"], end["steps_executed"], end["steps"]) == ("done", 2, 2, 3)
    assert [c["status"] for c in end["criteria"]] == ["met", "met"]
    steps = of_kind(entries, "step")
    assert [(s["step_id"], s["tool"], s["status"]) for s in steps] == [(1, "read_text", "success"),
                                                                      (2, "python", "success")]  # fmt: skip
    assert steps[0]["output"] == NOTES and steps[1]["output"] == "3\n"
    tools = of_kind(entries, "tool")
    assert [(t["tool"], t["source"], t["status"]) for t in tools] == [("read_text", "text", "success"),
                                                                      ("python", "native", "success")]  # fmt: skip
    # the task read first, as plan mode reads it (the script has no reading: the rules' reading alone), then the loop
    assert [(m["purpose"], m["status"]) for m in of_kind(entries, "model")] == [
        ("reading", "failed"), ("agent", "success"), ("agent", "success"), ("agent", "success")
    ]  # fmt: skip
    assert events(entries, "task_reading")
    assert [d["risk_level"] for d in events(entries, "plan")] == ["LOW", "MEDIUM"]
    assert [d["how"] for d in events(entries, "confirmation")] == ["--yes (LOW risk)", "confirmed at the prompt"]
    (run,) = (ws / "runs").iterdir()
    replay = subprocess.run([str(OMX), "replay", str(run)], capture_output=True, text=True, timeout=60, check=False)
    assert replay.returncode == 0, replay.stderr
    assert "An omx --loop run: no plan, each tool call the model made ran as a one-step plan" in replay.stdout
    assert "step 2 python: success" in replay.stdout and "tool python (model call 2): success" in replay.stdout


def test_a_delete_on_yes_alone_is_not_run_and_the_model_is_told(ws: Path, openai_stub: OpenAIStub) -> None:
    """HIGH: asked and the count typed, --yes or not; a "y" piped in is no count: not run, and the model's next
    request carries the tool result that says it was declined. The tools the model was sent are the plan's."""
    openai_stub.enqueue(tool_calls=[{"name": "delete", "arguments": {"path": "notes.txt"}}])
    openai_stub.enqueue(content="I could not delete notes.txt: it was declined.")
    model = ["--model", "openai/test", "--api-base", openai_stub.base_url]
    done = omx(ws, "delete notes.txt", "--yes", model=model, answers="y\n")
    said = done.stdout + done.stderr
    assert (ws / "notes.txt").read_text(encoding="utf-8") == NOTES, said
    assert "To run it, type 1" in done.stdout and "not run: not confirmed" in done.stdout
    assert done.returncode == 0, said  # the task names no file omx can check: done, nothing met or not
    assert "Result: done, omx found nothing in the task to check" in done.stdout
    tools = {t["function"]["name"]: t["function"] for t in openai_stub.requests[0]["tools"]}
    assert set(tools) == {"read_text", "write_text", "list_dir", "shell", "python", "move", "copy", "make_dir",
                          "delete"}  # fmt: skip
    content = tools["write_text"]["parameters"]["properties"]["content"]
    assert content["type"] == "string" and "ref" not in json.dumps(tools["write_text"]["parameters"])
    told = [m for m in openai_stub.requests[1]["messages"] if m["role"] == "tool"]
    assert len(told) == 1 and told[0]["content"].startswith("error: not run: the person declined this call")
    entries = trace(ws)
    assert not of_kind(entries, "step")
    assert [d["decision"] for d in events(entries, "confirmation")] == ["declined"]


def test_a_delete_runs_with_the_count_typed(ws: Path) -> None:
    replies = [call("delete", path="notes.txt"), "Deleted notes.txt."]
    done = omx(ws, "delete notes.txt", "--yes", replies=replies, answers="y\n1\n")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert not (ws / "notes.txt").exists()
    entries = trace(ws)
    assert [(s["tool"], s["status"], s["output"]) for s in of_kind(entries, "step")] == [
        ("delete", "success", "notes.txt")
    ]
    (confirmation,) = events(entries, "confirmation")
    assert confirmation["how"] == "confirmed at the prompt, 1 typed for its moves and deletes"


def test_arguments_that_do_not_fit_go_back_to_the_model(ws: Path, openai_stub: OpenAIStub) -> None:
    openai_stub.enqueue(tool_calls=[{"name": "read_text", "arguments": {"paht": "notes.txt"}}])
    openai_stub.enqueue(tool_calls=[{"name": "read_text", "arguments": {"path": "notes.txt"}}])
    openai_stub.enqueue(content="It says alpha, beta, gamma.")
    model = ["--model", "openai/test", "--api-base", openai_stub.base_url]
    done = omx(ws, "what does notes.txt say?", "--yes", model=model)
    assert done.returncode == 0, done.stdout + done.stderr
    told = [m["content"] for m in openai_stub.requests[1]["messages"] if m["role"] == "tool"]
    assert len(told) == 1 and told[0].startswith("error: the arguments of read_text do not fit the tool"), told
    assert "paht: Extra inputs are not permitted" in told[0] and "path: Field required" in told[0]
    told = [m["content"] for m in openai_stub.requests[2]["messages"] if m["role"] == "tool"]
    assert told[-1] == NOTES
    entries = trace(ws)
    assert [t["status"] for t in of_kind(entries, "tool")] == ["failed", "success"]
    assert [(s["step_id"], s["tool"]) for s in of_kind(entries, "step")] == [(1, "read_text")]  # the bad one: none


def test_a_check_of_the_task_not_met_fails_the_run(ws: Path) -> None:
    replies = [call("write_text", path="out/n.txt", content="three"), "I wrote the count."]
    done = omx(ws, COUNT_TASK, "--yes", replies=replies)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert (ws / "out/n.txt").read_text(encoding="utf-8") == "three"  # written: the value is what is wrong
    assert "Result: failed: a check of the task is not met: out/n.txt holds just a number" in done.stdout
    (end,) = events(trace(ws), "end")
    assert end["status"] == "failed" and "not met" in [c["status"] for c in end["criteria"]]


def test_max_steps_and_a_model_error_fail_the_run(ws: Path, tmp_path: Path) -> None:
    # 20 model calls, each a tool call: the loop stops without an answer
    looping = [call("list_dir", path=".") for _ in range(20)]
    done = omx(ws, "list the files", "--yes", replies=looping)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Result: failed: max steps reached (20 model calls) without an answer" in done.stdout
    assert events(trace(ws), "end")[0]["status"] == "failed"
    other = tmp_path / "other"
    other.mkdir()
    done = omx(other, "list the files", "--yes", replies=[call("list_dir", path=".")])  # no reply after the call
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Result: failed: LLM error: the scripted model has no reply left for request 2" in done.stdout


def test_on_a_mount_the_loop_starts_from_a_checkpoint_and_its_undo_line_undoes_it(
    mounted: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    zone = mounted / "agents" / "alice"
    (zone / "keep.md").write_text("A\n", encoding="utf-8")
    write, delete = (
        call("write_text", path="agents/alice/new.md", content="n\n"),
        call("delete", path="agents/alice/keep.md"),
    )
    replies = [write, delete, "Wrote new.md and deleted keep.md."]
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(replies), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    done = subprocess.run([str(OMX), "--loop", "add new.md and delete keep.md", "--yes", "--model",
                           f"scripted:{script}"], cwd=mounted, env=env, input="y\n1\n", capture_output=True,
                          text=True, timeout=180, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (zone / "new.md").is_file() and not (zone / "keep.md").exists()
    show, undo = changes_and_undo(done.stdout)
    assert undo[:4] == ["omxfs", "restore", str(mounted), "alice"] and undo[4] == show[4]
    assert done.stdout.rstrip().splitlines()[-2].startswith("Undo:")  # the last lines, before the tokens
    (run_dir,) = (zone / "runs").iterdir()
    entries = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    (start,) = events(entries, "start")
    assert start["checkpoint"]["id"] == int(show[4]) and start["agent"] == "alice"
    assert [(s["tool"], s["status"]) for s in of_kind(entries, "step")] == [("write_text", "success"),
                                                                             ("delete", "success")]  # fmt: skip
    undone = subprocess.run([sys.executable, "-m", "cli.omxfs", *undo[1:]], capture_output=True, text=True,
                            timeout=120, check=False)  # fmt: skip
    assert undone.returncode == 0, undone.stderr
    # the restore changed the store beneath the mount, which shows it within a second (until then the kernel may
    # remember that keep.md was absent)
    restored = lambda: (zone / "keep.md").is_file() and not (zone / "new.md").exists()  # noqa: E731
    poll(restored, 5, "the mount to show keep.md restored and new.md gone")
    assert (zone / "keep.md").read_text(encoding="utf-8") == "A\n"


def test_help_and_the_options_loop_mode_refuses() -> None:
    shown = subprocess.run([str(OMX), "task", "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "--loop Run TASK as a tool loop instead of one plan" in text
    assert "a move or delete needs the count typed, never --yes alone" in text and "never success" in text
    assert "--loop" in subprocess.run([str(OMX), "--help"], capture_output=True, text=True, timeout=60).stdout
    refused = subprocess.run([str(OMX), "--loop", "a task", "--dry-run"], capture_output=True, text=True, timeout=60,
                             check=False)  # fmt: skip
    assert refused.returncode == 2 and "--loop runs no plan" in refused.stderr


def test_the_benchmark_runs_the_loop_and_reports_both_modes(openai_stub: OpenAIStub, tmp_path: Path) -> None:
    """``bench_tasks.py --loop`` runs ``omx --loop``, answers a move's prompts as a person would (y, then the count)
    and records the mode; ``--report`` of a plan run's file and the loop run's puts the two side by side."""
    repo = Path(__file__).resolve().parents[2]
    script = repo / "scripts" / "bench_tasks.py"
    openai_stub.enqueue(tool_calls=[{"name": "move", "arguments": {"source": "data/draft.txt",
                                                                   "target": "data/final.txt"}}])  # fmt: skip
    openai_stub.enqueue(content="Renamed data/draft.txt to data/final.txt.")
    report = tmp_path / "loop.json"
    command = [sys.executable, str(script), "--loop", "--model", "openai/test", "--api-base", openai_stub.base_url,
               "--only", "move_rename_draft", "--json", str(report)]  # fmt: skip
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (outcome,) = json.loads(report.read_text(encoding="utf-8"))
    assert (outcome["mode"], outcome["right"], outcome["exit_code"], outcome["status"]) == ("loop", True, 0, "done")
    assert "To run it, type 1" in outcome["extra"]["output_tail"] and outcome["extra"]["model_calls"] == 3
    assert outcome["result_line"].startswith("Result: done, every check omx ran is met")
    assert openai_stub.requests[0]["tools"], "the loop's model is sent the tools"
    plan_run = tmp_path / "plan.json"
    plan_run.write_text(json.dumps([{**outcome, "mode": "plan", "right": False, "status": "failed"}]))
    both = subprocess.run([sys.executable, str(script), "--report", str(plan_run), str(report)], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert both.returncode == 0, both.stderr
    assert 'Mode plan (omx "TASK"):' in both.stdout and 'Mode loop (omx --loop "TASK"):' in both.stdout
    assert "Side by side, done right: plan 0/1 (0 %: tuning 0/1), loop 1/1 (100 %: tuning 1/1)" in both.stdout
    rows = [line.split() for line in both.stdout.splitlines() if line.startswith("move_rename_draft")]
    assert [row[4] for row in rows] == ["plan", "loop"]
