"""Shared by the omx end-to-end tests: the seed's tasks and scripted plans, and readers for a run's record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

import cli.omx

REPO = Path(__file__).resolve().parents[2]
TASK_A = "把 data/notes.txt 总结成 3 条要点，写到 out/summary.md"
TASK_C = "删除 workspace 下所有文件（用 rm -rf）"
NOTES = "omx plans before it acts.\nEvery tool runs in a sandbox.\nEvery run leaves a trace.\n"
SUMMARY = "- omx plans first\n- tools are sandboxed\n- every run is traced"
PLAN_A: dict[str, Any] = {
    "version": 1,
    "goal": "Summarise data/notes.txt into 3 bullets in out/summary.md",
    "risk_level": "LOW",
    "workspace_root": ".",
    "steps": [
        {
            "id": 1,
            "description": "Read the notes",
            "tool": "read_text",
            "inputs": {"path": "data/notes.txt"},
            "produces": "notes",
        },
        {
            "id": 2,
            "description": "Summarise",
            "tool": "llm",
            "inputs": {"prompt": "Summarise in 3 bullets", "input": {"ref": "step:1.output"}},
            "produces": "summary",
        },
        {
            "id": 3,
            "description": "Write it",
            "tool": "write_text",
            "inputs": {"path": "out/summary.md", "content": {"ref": "step:2.output"}, "mode": "overwrite"},
            "produces": "out/summary.md",
        },
    ],
    "success_criteria": ["out/summary.md has 3 bullet lines"],
}
PLAN_C: dict[str, Any] = {
    "version": 1,
    "goal": "Delete every file of the workspace",
    "risk_level": "LOW",  # the model understates it; the computed risk decides
    "workspace_root": ".",
    "steps": [{"id": 1, "description": "Delete everything", "tool": "shell", "inputs": {"cmd": "rm -rf ."}}],
    "success_criteria": ["the workspace is empty"],
}

# no word the risk rules read as network use: the sandbox is the boundary, not the heuristic
SEND_UDP = """
import asyncio
async def send():
    loop = asyncio.get_running_loop()
    sender, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=("127.0.0.1", {port}))
    sender.sendto(b"exfiltrated")
    print("sent")
asyncio.run(send())
"""


def omx(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli.omx.main, list(args), input=input)


def only_run(ws: Path) -> Path:
    (run_dir,) = sorted((ws / "runs").iterdir())
    return run_dir


def trace_of(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "trace.jsonl").read_text(encoding="utf-8").splitlines()]


def kinds(entries: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in entries if e["kind"] == kind]


def run_end(entries: list[dict[str, Any]]) -> dict[str, Any]:
    (end,) = [e for e in entries if e["kind"] == "run" and e["event"] == "end"]
    data: dict[str, Any] = end["data"]
    return data
