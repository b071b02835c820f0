#!/usr/bin/env python3
"""Measure how much of each model request repeats the previous one (seed 003 Task 0.2), from a runs directory.

    scripts/measure_kv_cache.py RUNS_DIR      report the agent runs recorded under RUNS_DIR (or one run directory)
    scripts/measure_kv_cache.py --demo        first run a scripted 10-step task with every context feature on

The agent loop writes a ``model`` line per request to ``<run>/trace.jsonl`` with the request's size in characters
(``prompt_chars``), the characters it shares with the previous request (``prefix_chars``) and the provider's
usage (``prompt_tokens``, ``cached_tokens``). The last line printed is one JSON object:

- ``prefix_reuse``: shared characters / prompt characters over the requests that had a previous request. The
  first request of a fresh agent has nothing to repeat; counting it measures how many agents were started, not
  whether the prefix is kept stable (with it, ten requests of growing size can never pass 0.9).
  ``prefix_reuse_with_cold`` counts it too, and ``cold_requests`` says how many there were.
- ``cached_token_rate``: cached tokens / prompt tokens as the provider reported them; null when none reported.

Characters stand in for tokens: there is no tokenizer offline, and a shared character prefix is a shared token
prefix up to the last token, which is what a provider's prefix cache can reuse.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.chat.loop import Agent, AgentConfig
from agent.chat.tool_manager import ToolManager
from agent.context import ContextSettings, request_text, shared_prefix_chars
from agent.model.llm import ModelReply, ScriptedModel, Usage
from agent.workspace_tools.prompt import system_prompt as workspace_prompt

CACHE_BLOCK_TOKENS = 16  # the simulated cache reuses whole blocks, as vLLM's prefix cache does


def _traces(runs_dir: Path) -> list[Path]:
    own = runs_dir / "trace.jsonl"
    return [own] if own.is_file() else sorted(runs_dir.glob("*/trace.jsonl"))


def model_lines(runs_dir: Path) -> list[dict[str, Any]]:
    """The agent's successful model requests, run by run in time order (run directories sort by timestamp)."""
    lines = []
    for trace in _traces(runs_dir):
        for text in trace.read_text(encoding="utf-8").splitlines():
            entry = json.loads(text)
            if entry.get("kind") == "model" and entry.get("status") == "success" and entry.get("prompt_chars"):
                lines.append(entry | {"run": trace.parent.name})
    return lines


def report(runs_dir: Path) -> dict[str, Any]:
    lines = model_lines(runs_dir)
    warm = [e for e in lines if e.get("previous_request")]
    chars = sum(e["prompt_chars"] for e in lines)
    warm_chars = sum(e["prompt_chars"] for e in warm)
    shared = sum(e.get("prefix_chars") or 0 for e in lines)
    tokens = sum(e.get("prompt_tokens") or 0 for e in lines)
    cached = sum(e.get("cached_tokens") or 0 for e in lines)
    return {
        "requests": len(lines),
        "prefix_reuse": round(shared / warm_chars, 4) if warm_chars else None,
        "cached_token_rate": round(cached / tokens, 4) if tokens else None,
        "prefix_reuse_with_cold": round(shared / chars, 4) if chars else None,
        "cold_requests": len(lines) - len(warm),
        "runs": len({e["run"] for e in lines}),
        "prompt_chars": chars,
        "prefix_chars": shared,
        "prompt_tokens": tokens,
        "cached_tokens": cached,
        "unit": "chars",
    }


class SimulatedCacheModel(ScriptedModel):
    """The scripted model, reporting the usage a provider with a prefix cache would: ~4 characters a token, and
    the longest prefix shared with any earlier request counted as cached in whole blocks."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        super().__init__(replies)
        self._seen: list[str] = []

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> ModelReply:
        reply = super().complete(messages, **kwargs)
        text = request_text(messages, kwargs.get("tools"))
        best = max((shared_prefix_chars(text, seen) for seen in self._seen), default=0)
        self._seen.append(text)
        cached = (best // 4) // CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS
        usage = Usage(prompt_tokens=math.ceil(len(text) / 4), completion_tokens=20, cached_tokens=cached)
        return reply.model_copy(update={"usage": usage})


DEMO_SYSTEM_PROMPT = """\
You are an omx agent working in a shared workspace for teams of AI agents. The workspace is a directory tree; \
your private zone is yours alone, other agents' zones are readable but not writable, handoff boxes pass files \
from one agent to another, and collaborative documents merge edits from several agents.

How to work:
1. Read before you write. List the directory and read the files a task is about before changing anything; \
never guess the content of a file you can read.
2. Make the smallest change that does the task. Do not reformat, rename or reorganise files nobody asked about.
3. Write only inside your own zone unless the task names a handoff box or a shared document.
4. When a tool fails, read its error: it says what went wrong and what to try. Do not repeat a call that \
failed the same way twice; change the arguments or the approach.
5. Keep notes that will matter later (decisions, file names, open questions) in your memory directory with \
memory_save, and read them back with memory_load instead of relying on what you remember.
6. Some tools may be unavailable in the current mode. If a call is refused, use an allowed tool instead.
7. Report what you did at the end in a few plain sentences: which files you read, which you changed and why, \
and anything left undone. Do not claim a change you did not make.

Conventions of this workspace:
- Text files are UTF-8 with a final newline. Markdown for notes and reports, JSON for data.
- File names are lower-case, with '-' between words; dates as YYYY-MM-DD.
- A report starts with a one-line summary, then the details as a list.
- Counts and measurements are given with their unit.
- Quote file paths relative to the workspace root.

Safety:
- Never delete a file unless the task says so; prefer writing a new version next to it.
- Never put secrets, tokens or passwords in a file or an answer.
- If a task is unclear or would need a forbidden action, say so instead of guessing.
"""

DEMO_FILES = {
    "notes/alpha.txt": "The alpha release ships the private zone and the handoff boxes.\n",
    "notes/beta.txt": "The beta release adds collaborative documents and the realtime zone.\n",
}


def _demo_tools(workspace: Path) -> ToolManager:
    tools = ToolManager()

    def inside(name: str) -> Path:
        path = (workspace / name.strip()).resolve()
        if not path.is_relative_to(workspace.resolve()):
            raise ValueError(f"{name!r} is outside the workspace")
        return path

    def read_file(name: str) -> str:
        path = inside(name)
        if not path.is_file():
            return f"error: no file {name.strip()!r}; list_dir shows the files that exist"
        return path.read_text(encoding="utf-8")

    def write_file(text: str) -> str:
        name, _, content = text.partition("\n")
        inside(name).parent.mkdir(parents=True, exist_ok=True)
        inside(name).write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {name.strip()}"

    def list_dir(name: str) -> str:
        root = inside(name or ".")
        return "\n".join(sorted(str(p.relative_to(workspace)) for p in root.rglob("*") if p.is_file()))

    def word_count(text: str) -> str:
        return f"{len(text.split())} words"

    described = {
        "read_file": (read_file, "path", "Read a UTF-8 text file of the workspace. The path is relative to the "
                      "workspace root; a missing file is an error that says so. The file is returned whole, so list "
                      "the directory first and read only the files the task is about."),
        "write_file": (write_file, "text", "Write a UTF-8 text file of the workspace: the first line is its path "
                       "(relative to the workspace root), the rest its content. Parent directories are created; an "
                       "existing file is replaced, so read it first when you mean to change only part of it."),
        "list_dir": (list_dir, "path", "List the files under a directory of the workspace, recursively, one path "
                     "per line, relative to the workspace root; '.' lists the whole workspace."),
        "word_count": (word_count, "text", "Count the words of a text, separated by white space; returns the "
                       "count with its unit, such as '12 words'."),
    }  # fmt: skip
    for name, (fn, parameter, description) in described.items():
        tools.register(name, fn, parameter=parameter, description=description)
    return tools


def _call(name: str, argument: str, value: str, content: str | None = None) -> dict[str, Any]:
    return {"content": content, "tool_calls": [{"name": name, "arguments": {argument: value}}]}


DEMO_SCRIPT: list[dict[str, Any]] = [
    _call("list_dir", "path", ".", "- [ ] read the release notes\n- [ ] count their words\n- [ ] write the report"),
    _call("read_file", "path", "notes/alpha.txt"),
    _call("read_file", "path", "notes/gamma.txt"),  # no such file: the error stays in the context
    _call("python", "code", "print(1)"),  # not allowed in the "edit" mode: refused
    _call(
        "read_file",
        "path",
        "notes/beta.txt",
        "- [x] read the release notes\n- [ ] count their words\n- [ ] write the report",
    ),
    _call("word_count", "text", DEMO_FILES["notes/alpha.txt"] + DEMO_FILES["notes/beta.txt"]),
    _call("memory_save", "text", "release-notes.md\nalpha + beta: 22 words; gamma does not exist"),
    _call(
        "write_file",
        "text",
        "report.md\nRelease notes: 2 files, 22 words.\n- alpha: zones\n- beta: documents\n",
        "- [x] read the release notes\n- [x] count their words\n- [ ] write the report",
    ),
    _call("memory_load", "name", "release-notes.md"),
    {
        "content": "- [x] read the release notes\n- [x] count their words\n- [x] write the report\n"
        "Wrote report.md: the two release notes have 22 words; notes/gamma.txt does not exist."
    },
]


def run_demo(runs_dir: Path) -> Path:
    """The scripted 10-step task with every context feature on; its run directory."""
    base = Path(tempfile.mkdtemp(prefix="omx-kv-demo-"))
    workspace, memory = base / "workspace", base / "memory"
    for name, text in DEMO_FILES.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text, encoding="utf-8")
    tools = _demo_tools(workspace)
    edit = ["list_dir", "memory_list", "memory_load", "memory_save", "read_file", "word_count", "write_file"]
    settings = ContextSettings(append_only=True, compress_at_chars=200_000, todo_recitation=True,
                               error_preservation=True, tool_masking=True, tool_modes={"edit": edit},
                               template_noise=True, memory_dir=memory)  # fmt: skip
    system = DEMO_SYSTEM_PROMPT + "\n" + workspace_prompt("alice", ["alice", "bob"])  # what an omx agent carries
    config = AgentConfig(max_steps=12, system_prompt=system, runs_dir=runs_dir, context=settings)
    agent = Agent(config, model=SimulatedCacheModel(DEMO_SCRIPT), tools=tools)
    run = agent.run("Summarise the release notes in notes/ into report.md, with their word count.", mode="edit")
    assert run.run_dir is not None
    return run.run_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("runs_dir", nargs="?", type=Path, help="a runs directory (or one run directory)")
    parser.add_argument("--demo", action="store_true", help="first run the scripted 10-step task")
    args = parser.parse_args(argv)
    if args.demo:
        runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="omx-kv-runs-"))
        print(f"demo run: {run_demo(runs_dir)}")
    elif args.runs_dir is None:
        parser.error("give a RUNS_DIR, or --demo")
    else:
        runs_dir = args.runs_dir
        if not runs_dir.is_dir():
            parser.error(f"{runs_dir} is not a directory")
    for entry in model_lines(runs_dir):
        share = entry["prefix_chars"] / entry["prompt_chars"]
        tokens = f"{entry.get('cached_tokens', 0)}/{entry.get('prompt_tokens', 0)} tokens cached"
        print(
            f"{entry['run']} step {entry.get('step_id')}: {entry['prompt_chars']} chars, {share:.1%} shared, {tokens}"
        )
    print(json.dumps(report(runs_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
