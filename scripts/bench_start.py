#!/usr/bin/env python3
"""How long ``omx`` takes from process start to its first model request (issue 17: within 1 s).

    scripts/bench_start.py [--runs N] [--model openai/test-model]

Starts a local OpenAI-compatible stub on 127.0.0.1 (tests/support/openai_stub.py), then runs the installed
``omx`` N times for each command and measures, on the one monotonic clock, the time from just before the process
is started to the moment its first request reaches the stub: ``omx agent "..."`` (the first request is the
agent's) and ``omx "TASK" --dry-run`` (the first request is the planner's). The model answers at once, so what
is measured is omx's own start: interpreter, imports, config, the plan prompt, the HTTP client.

The last line printed is one JSON object: the median and worst start-to-first-request per command, in seconds,
and ``ratio_to_target``, the median divided by the 1 s target (below 1 meets it). No assertion: a benchmark,
not a test (the machine's load decides the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.openai_stub import OpenAIStub  # noqa: E402

TARGET_S = 1.0
PLAN = {
    "version": 1,
    "goal": "List the workspace",
    "risk_level": "LOW",
    "workspace_root": ".",
    "steps": [{"id": 1, "description": "List it", "tool": "list_dir", "inputs": {"path": "."}}],
    "success_criteria": ["the listing is shown"],
}


def omx_command() -> list[str]:
    """The installed ``omx`` next to this interpreter, as a user runs it (else the module)."""
    installed = Path(sys.executable).with_name("omx")
    return [str(installed)] if installed.is_file() else [sys.executable, "-m", "cli.omx"]


def first_request_s(args: list[str], reply: str, model: str, workdir: Path) -> float:
    """Seconds from just before the process starts to its first request at a fresh stub."""
    with OpenAIStub() as stub:
        stub.enqueue(reply)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "LITELLM"))}
        env |= {"OMX_MODEL": model, "OMX_API_BASE": stub.base_url, "HOME": str(workdir)}
        started = time.monotonic()
        done = subprocess.run(
            [*omx_command(), *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        if not stub.arrivals:
            raise SystemExit(f"omx {' '.join(args)} sent no request (exit {done.returncode}): {done.stderr.strip()}")
        return stub.arrivals[0] - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (default 5)")
    parser.add_argument("--model", default="openai/test-model", help="the model name omx is given")
    options = parser.parse_args()
    commands = {
        "agent": (["agent", "Say ok.", "--runs-dir", "runs"], "ok"),
        "task": (["List the workspace", "--dry-run"], json.dumps(PLAN)),
    }
    report: dict[str, object] = {"runs": options.runs, "target_s": TARGET_S}
    with tempfile.TemporaryDirectory(prefix="omx-bench-start-") as tmp:
        workdir = Path(tmp)
        (workdir / "notes.txt").write_text("a file to list\n", encoding="utf-8")
        for name, (args, reply) in commands.items():
            times = [first_request_s(args, reply, options.model, workdir) for _ in range(options.runs)]
            median = statistics.median(times)
            print(f"omx {name}: start to first request, median {median:.3f}s, worst {max(times):.3f}s")
            report[name] = {
                "median_s": round(median, 3),
                "worst_s": round(max(times), 3),
                "ratio_to_target": round(median / TARGET_S, 2),
            }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
