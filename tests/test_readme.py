"""The README runs as written (issue 25): its two commands are what CI runs, and every other shell block, in
order and unchanged, in one shell from a directory that looks like a fresh checkout after the first command.

The blocks run in ``tmp_path`` (``.venv`` and ``scripts`` linked to this checkout's), so the walkthrough's ``ws``,
``data.csv`` and ``demo`` never land in the checkout. The only stand-in is the model: an OpenAI-compatible stub
listens where the README's ``OMX_API_BASE`` points (Ollama's port) and answers omx's requests from a script.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_stub import OpenAIStub

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
OLLAMA_PORT = 11434  # the README's OMX_API_BASE


def shell_blocks() -> list[str]:
    return SHELL_BLOCK.findall(README.read_text())


def plan(goal: str, steps: list[tuple[str, str, dict[str, Any]]]) -> str:
    numbered = [{"id": i, "description": d, "tool": t, "inputs": a} for i, (d, t, a) in enumerate(steps, 1)]
    body = {"version": 1, "goal": goal, "risk_level": "LOW", "workspace_root": ".", "steps": numbered,
            "success_criteria": []}  # fmt: skip
    return json.dumps(body)


@pytest.fixture
def model() -> Iterator[OpenAIStub]:
    """The model the README's ``export OMX_MODEL=... OMX_API_BASE=...`` names, scripted for its two omx tasks."""
    with OpenAIStub(port=OLLAMA_PORT) as stub:
        summary = [
            ("Read the notes", "read_text", {"path": "data/notes.txt"}),
            ("Summarise", "llm", {"prompt": "Summarise in 3 bullets", "input": {"ref": "step:1.output"}}),
            ("Write it", "write_text", {"path": "out/summary.md", "content": {"ref": "step:2.output"}}),
        ]
        stub.enqueue(plan("Summarise data/notes.txt into out/summary.md", summary))
        stub.enqueue("- omx plans first\n- tools are sandboxed\n- runs are traced\n")
        in_view = [
            ("List the shared files", "list_dir", {"path": "collaborative/current"}),
            ("Write the summary", "write_text", {"path": "agents/bob/summary.md", "content": "plan.md, hello.md\n"}),
        ]
        stub.enqueue(plan("Summarise collaborative/current/ into agents/bob/summary.md", in_view))
        yield stub


def test_the_readme_gives_the_test_command_that_ci_runs() -> None:
    main_job, tests = shell_blocks()[:2]
    assert main_job.startswith("scripts/install.sh && .venv/bin/omxfs init ./ws")
    assert tests.strip() == "scripts/install.sh --dev && scripts/check.sh"
    assert (REPO / ".ci" / "run").read_text().splitlines()[-1] == tests.strip()


def test_every_block_of_the_readme_runs_as_written(tmp_path: Path, model: OpenAIStub) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in (".venv", "scripts"):
        (checkout / name).symlink_to(REPO / name)
    blocks = shell_blocks()
    script = "set -euo pipefail\n" + blocks[0] + "\n".join(blocks[2:])
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")} | {"TMPDIR": str(tmp_path)}
    try:
        done = subprocess.run(
            ["bash", "-c", script], cwd=checkout, capture_output=True, text=True, timeout=600, env=env
        )
    finally:
        subprocess.run([str(REPO / ".venv/bin/omxfs"), "umount", str(checkout / "ws")], capture_output=True)
    out = done.stdout + done.stderr
    if os.environ.get("OMX_README_OUTPUT"):  # to show a real session's output in the README
        Path(os.environ["OMX_README_OUTPUT"]).write_text(out)
    assert done.returncode == 0, out[-6000:]
    ws = checkout / "ws"
    assert "Permission denied" in out and out.count("refused, as it should be") == 1
    assert (ws / "agents/alice/notes.md").read_text() == "draft\n"
    assert json.loads((ws / "handoff/alice_to_bob/data.csv.meta.json").read_text())["message"] == "please analyse"
    assert "Device or resource busy" in out and "refused: alice last saw v1, bob made v2" in out
    assert (ws / "collaborative/current/plan.md").read_text() == "v1\n"  # the rollback: v4 is v1
    assert "refused: read-only in bob's view" in out
    assert (ws / "collaborative/current/hello.md").read_text() == "hi\n"  # bob's repo/.git: the review below
    assert (checkout / "demo/out/summary.md").read_text().count("- ") == 3
    assert "+oops" in out  # the diff of the run gone wrong; the restore brought the repository and summary back
    assert "held for review in bob's zone: 0 added, 1 modified, " in out  # the review run, until accepted
    assert "D repo/  (dir, and " in out and "repo/.git" not in out  # omxfs diff --review: git init's repository
    assert "+- check the figures" in out
    assert (ws / "agents/bob/summary.md").read_text() == "plan.md, hello.md\n- check the figures\n"  # accepted
    assert not (ws / "agents/bob/repo").exists()
    assert len(model.requests) == 3  # both tasks planned, the summary written: no request went unanswered
    assert "merged and committed version 3" in out  # the team demo ran
    with open("/proc/self/mounts") as mounts:
        assert str(tmp_path) not in mounts.read()
