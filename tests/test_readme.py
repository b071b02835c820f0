"""The README runs as written (issue 25): its two commands are what CI runs, and every other shell block, in
order and unchanged, in one shell from a directory that looks like a fresh checkout after the first command; what
the README says a block printed is what it printed.

The blocks run in ``tmp_path`` (``.venv`` and ``scripts`` linked to this checkout's, ``examples`` copied), so the
walkthrough's ``ws``, ``data.csv`` and ``demo`` never land in the checkout. Nothing stands in for anything: the
omx blocks name their model themselves (``--model scripted:examples/...``, files that ship in the repository), and
no server listens for them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
PRINTED_BLOCK = re.compile(r"^What that printed[^\n]*\n\n```text\n(.*?)^```", re.MULTILINE | re.DOTALL)
MARK = "@@ README block {} @@"
#: what varies from run to run, and what stands for it on both sides of a comparison
VARYING = [
    (re.compile(r"/tmp/\S*?/checkout"), "CHECKOUT"),  # tmp_path; the README may show any directory
    (re.compile(r"\b\d{8}-\d{6}\b"), "YYYYMMDD-HHMMSS"),  # a run's directory
    (re.compile(r"\b\d\d:\d\d:\d\d(\.\d+)?\b"), "HH:MM:SS"),
    (re.compile(r"\b\d+(\.\d+)?\s?(s|ms)\b"), "N s"),  # durations
    (re.compile(r"\b[\d,]+ (prompt|completion|in|out)\b"), r"N \1"),  # token counts
]


def shell_blocks() -> list[str]:
    return SHELL_BLOCK.findall(README.read_text())


def printed_blocks() -> list[tuple[int, str]]:
    """Each "What that printed" block of the README, with the index of the shell block just above it."""
    text = README.read_text()
    found = []
    for printed in PRINTED_BLOCK.finditer(text):
        above = [m for m in SHELL_BLOCK.finditer(text) if m.end() <= printed.start()]
        found.append((len(above) - 1, printed.group(1)))
    return found


def normalised(text: str) -> str:
    for pattern, stands_for in VARYING:
        text = pattern.sub(stands_for, text)
    return text


def test_the_readme_gives_the_test_command_that_ci_runs() -> None:
    main_job, tests = shell_blocks()[:2]
    assert main_job.startswith("scripts/install.sh && .venv/bin/omxfs init ./ws")
    assert tests.strip() == "scripts/install.sh --dev && scripts/check.sh"
    assert (REPO / ".ci" / "run").read_text().splitlines()[-1] == tests.strip()


def test_the_readme_says_what_its_review_block_printed() -> None:
    """The comparison below has something to compare: the review block's output is in the README."""
    blocks = shell_blocks()
    shown = {blocks[i].splitlines()[0]: printed for i, printed in printed_blocks()}
    review = next(line for line in shown if "--review" in line)
    assert "held for review in bob's zone" in shown[review]


def test_every_block_of_the_readme_runs_as_written(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in (".venv", "scripts"):
        (checkout / name).symlink_to(REPO / name)
    shutil.copytree(REPO / "examples", checkout / "examples")  # as a clone has them: the omx blocks' models
    blocks = shell_blocks()
    ran = [0, *range(2, len(blocks))]  # all but the test command, which is the suite this test is part of
    marked = "".join(f"echo '{MARK.format(i)}'\n{blocks[i]}" for i in ran)
    script = "exec 2>&1\nset -euo pipefail\n" + marked + f"echo '{MARK.format('end')}'\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")} | {"TMPDIR": str(tmp_path)}
    try:
        done = subprocess.run(
            ["bash", "-c", script], cwd=checkout, stdout=subprocess.PIPE, text=True, timeout=600, env=env
        )
    finally:
        subprocess.run([str(REPO / ".venv/bin/omxfs"), "umount", str(checkout / "ws")], capture_output=True)
    out = done.stdout
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
    # both omx tasks write prose: its form checked by omx, never what it says
    assert out.count("Result: done, form checked, content not checked (") == 2
    assert len(list((ws / "agents/bob/runs").iterdir())) == 1  # bob's run, in his view: its record in his zone
    assert "+oops" in out  # the diff of the run gone wrong; the restore brought the repository and summary back
    assert "held for review in bob's zone: 0 added, 1 modified, " in out  # the review run, until accepted
    assert "D repo/  (dir, and " in out and "repo/.git" not in out  # omxfs diff --review: git init's repository
    assert "+- check the figures" in out
    assert "accepted bob's review" in out  # then two branches, the long one accepted over it
    assert (ws / "agents/bob/summary.md").read_text() == "all good: figures checked\n"
    assert not (ws / ".omxfs/branches/bob/short").exists()  # discarded
    assert not (ws / "agents/bob/repo").exists()
    assert "merged and committed version 3" in out  # the team demo ran
    outputs = dict(zip(ran, re.split(r"@@ README block \S+ @@\n", out)[1:], strict=False))
    for index, printed in printed_blocks():
        assert normalised(outputs[index]) == normalised(printed), f"README block {index} printed:\n{outputs[index]}"
    with open("/proc/self/mounts") as mounts:
        assert str(tmp_path) not in mounts.read()
