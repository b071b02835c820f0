"""``omx --as bob --attempts N "TASK"``: N runs of one task, each a branch of bob's zone, then a table to choose
from. The real ``omx`` command, run by the person (root, no OMX_AGENT) beside a workspace named ``my ws``, given
relative; real views and overlays; the model scripted, with different replies per attempt. The printed commands are
pasted into the same shell (``tests/test_printed_commands.py``'s fixtures).
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import shutil
import subprocess
from pathlib import Path

import pytest

from omxfs.checkpoints.review import Review
from omxfs.store import Workspace
from tests.test_printed_commands import NAME, _on_path, bin_dir, pasted, person_env, printed, ws

__all__ = ["_on_path", "bin_dir", "ws"]  # the fixtures, used by name

TASK = "Write 2 lines about omx to agents/bob/summary.md"
CHECKED = ["agents/bob/summary.md exists and has 2 lines", 'agents/bob/summary.md contains "omx"']


def _write(path: str, content: str) -> dict[str, object]:
    return {"description": f"write {path}", "tool": "write_text", "inputs": {"path": path, "content": content}}


def _plan(*steps: dict[str, object], criteria: list[str]) -> str:
    return json.dumps(
        {"version": 1, "goal": "write the summary", "risk_level": "LOW", "workspace_root": ".",
         "steps": [{"id": n, **step} for n, step in enumerate(steps, 1)], "success_criteria": criteria}
    )  # fmt: skip


#: attempt 1 meets every check (forms of prose: done, its content not checked), attempt 2 writes three lines for
#: two, attempt 3 adds a criterion omx cannot check and a second file
ATTEMPTS = [
    [_plan(_write("agents/bob/summary.md", "omx plans\nomx runs\n"), criteria=CHECKED)],
    [_plan(_write("agents/bob/summary.md", "omx plans\nomx runs\nomx ends\n"), criteria=CHECKED)],
    [
        _plan(
            _write("agents/bob/summary.md", "omx plans first\nthen omx runs\n"),
            _write("agents/bob/more.md", "more\n"),
            criteria=[*CHECKED, "agents/bob/summary.md reads well"],
        )
    ],
]


def _omx(here: Path, replies: Path, *options: str, task: str = TASK) -> subprocess.CompletedProcess[str]:
    argv = ["omx", task, "--as", "bob", "-w", NAME, "--model", f"scripted:{replies}", *options]
    return subprocess.run(argv, cwd=here, env=person_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=240, check=False)  # fmt: skip


def _zone(ws: Workspace) -> dict[str, str]:
    zone = ws.root / "agents/bob"
    return {str(p.relative_to(zone)): p.read_text() if p.is_file() else "/" for p in sorted(zone.rglob("*"))}


def _rows(stdout: str) -> dict[str, list[str]]:
    """The table's rows by attempt: outcome, checks, changes (the columns are two spaces apart at least)."""
    rows = [line.split("  ") for line in stdout.splitlines() if line.startswith("attempt-")]
    return {cells[0]: [c.strip() for c in cells[1:] if c.strip()] for cells in rows}


def _end(review: Review) -> dict[str, object]:
    """The end entry of the one run recorded in the branch, read from its overlay's upper layer."""
    (trace,) = (review.upper / "runs").glob("*/trace.jsonl")
    ends = [e for line in trace.read_text().splitlines() if (e := json.loads(line)).get("event") == "end"]
    return dict(ends[-1]["data"])


def _checks(end: dict[str, object]) -> str:
    criteria = end["criteria"]
    assert isinstance(criteria, list) and criteria
    return f"{sum(1 for c in criteria if c['status'] == 'met' and c['by'] == 'omx')}/{len(criteria)}"


@pytest.fixture
def replies(tmp_path: Path) -> Path:
    if not os.path.exists("/dev/fuse") or shutil.which("bwrap") is None:
        pytest.skip("views need /dev/fuse and bwrap")
    path = tmp_path / "replies.json"  # outside the workspace: the view shows it read-only
    path.write_text(json.dumps({"attempts": ATTEMPTS}), encoding="utf-8")
    return path


def test_three_attempts_are_three_branches_and_the_printed_accept_applies_one(
    ws: Workspace, tmp_path: Path, replies: Path
) -> None:
    (ws.root / "agents/bob/notes.md").write_text("bob's notes\n")
    zone = _zone(ws)
    done = _omx(tmp_path, replies, "--attempts", "3", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _zone(ws) == zone  # nothing landed: every attempt is held apart

    branches = [Review(ws, "bob", f"attempt-{k}") for k in (1, 2, 3)]
    assert all(b.pending for b in branches), done.stderr
    ends = [_end(b) for b in branches]  # each its own plan, run and trace, in its own branch
    assert [e["status"] for e in ends] == ["done_unverified", "failed", "done"]
    assert (branches[0].upper / "summary.md").read_text() == "omx plans\nomx runs\n"
    assert (branches[1].upper / "summary.md").read_text() == "omx plans\nomx runs\nomx ends\n"
    assert (branches[2].upper / "more.md").read_text() == "more\n"

    rows = _rows(done.stdout)
    assert rows == {
        "attempt-1": ["done unverified", _checks(ends[0]), "+1 ~0 -0"],
        "attempt-2": ["failed", _checks(ends[1]), "+1 ~0 -0"],
        "attempt-3": ["done", _checks(ends[2]), "+2 ~0 -0"],
    }, done.stdout
    met, total = map(int, rows["attempt-2"][1].split("/"))
    assert met < total and len(set(rows["attempt-1"][1].split("/"))) == 1  # attempt 1 met all, attempt 2 not

    compare = printed(done.stdout, "attempt-3  compare: ")
    lines = done.stdout.splitlines()
    accept = lines[lines.index(f"  attempt-3  compare: {compare}") + 1].split("accept: ", 1)[1].strip()
    assert compare == "omxfs diff 'my ws' bob --branch attempt-3", compare
    assert accept == "omxfs accept 'my ws' bob --branch attempt-3 --as bob", accept
    assert "+then omx runs" in pasted(compare, tmp_path).stdout
    pasted(accept, tmp_path)  # as root, with no OMX_AGENT
    assert (ws.root / "agents/bob/summary.md").read_text() == "omx plans first\nthen omx runs\n"
    assert (ws.root / "agents/bob/more.md").read_text() == "more\n"
    assert not branches[2].pending and branches[0].pending and branches[1].pending

    once = tmp_path / "once.json"
    once.write_text(json.dumps({"attempts": [[_plan(_write("agents/bob/new.md", "new\n"), criteria=[])]]}))
    again = _omx(
        tmp_path, once, "--attempts", "1", "--yes", task="Write a note to agents/bob/new.md"
    )  # numbered on from the pending attempt-1 and 2
    assert again.returncode == 0, again.stdout + again.stderr
    (row,) = _rows(again.stdout).items()
    assert row[0] == "attempt-3" and row[1][::2] == ["done", "+1 ~0 -0"], again.stdout
    assert (Review(ws, "bob", "attempt-3").upper / "new.md").read_text() == "new\n"  # the first list of its file


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (["--attempts", "2", "--review", "--yes"], "an attempt is a branch of the agent's zone already"),
        (["--attempts", "2", "--dry-run"], "--attempts runs TASK's plan N times: not with --dry-run or --loop"),
        (["--attempts", "2", "--parallel"], "--parallel asks nothing (the attempts cannot share a terminal)"),
        (["--attempts", "2"], "several attempts ask each plan on the terminal, one after another, and stdin is none"),
        (["--parallel", "--yes"], "--parallel runs the attempts of --attempts N at once: give --attempts too"),
    ],
)
def test_attempts_are_refused_where_a_branch_or_an_answer_cannot_be_had(
    ws: Workspace, tmp_path: Path, options: list[str], error: str
) -> None:
    done = _omx(tmp_path, tmp_path / "replies.json", *options)
    assert done.returncode == 2 and error in " ".join(done.stderr.split()), done.stderr
    assert not (ws.meta / "branches").exists() and not (ws.root / "agents/bob/runs").exists()


def test_attempts_need_an_agent_and_an_omxfs_workspace(ws: Workspace, tmp_path: Path) -> None:
    bare = subprocess.run(["omx", TASK, "-w", NAME, "--attempts", "2", "--yes"], cwd=tmp_path, env=person_env(),
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert bare.returncode == 2 and "name the agent with --as NAME" in bare.stderr, bare.stderr
    stranger = subprocess.run(["omx", TASK, "-w", NAME, "--as", "carol", "--attempts", "2", "--yes"], cwd=tmp_path,
                              env=person_env(), capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert stranger.returncode == 1 and "no agent named 'carol' in this workspace" in stranger.stderr, stranger.stderr
    assert not (ws.meta / "branches").exists()
    (tmp_path / "plain").mkdir()
    plain = subprocess.run(["omx", TASK, "-w", "plain", "--as", "bob", "--attempts", "2", "--yes"], cwd=tmp_path,
                           env=person_env(), capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert plain.returncode == 2 and "--attempts needs an omxfs workspace" in plain.stderr, plain.stderr


def test_parallel_attempts_run_at_once_each_line_marked_with_its_attempt(
    ws: Workspace, tmp_path: Path, replies: Path
) -> None:
    done = _omx(tmp_path, replies, "--attempts", "2", "--parallel", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(done.stdout)
    assert [row[::2] for row in rows.values()] == [["done unverified", "+1 ~0 -0"], ["failed", "+1 ~0 -0"]], done.stdout
    for k in (1, 2):
        assert f"[attempt-{k}] Result: " in done.stdout, done.stdout
        assert f"[attempt-{k}] omxfs run: held for review in branch attempt-{k} of bob's zone" in done.stderr
    assert "  apply:   " not in done.stderr and "  drop:    " not in done.stderr  # the table's commands alone
    assert not (ws.root / "agents/bob/summary.md").exists()


def test_on_a_terminal_each_attempt_asks_for_its_own_plan(ws: Workspace, tmp_path: Path, replies: Path) -> None:
    """Without --yes, one attempt after another, each MEDIUM risk plan asked on the terminal as one run's is: the
    first answered yes runs, the second answered no is not confirmed."""
    code = _plan({"description": "compute", "tool": "python", "inputs": {"code": "print(1 + 1)"}}, criteria=[])
    replies.write_text(json.dumps({"attempts": [[code], [code]]}), encoding="utf-8")
    argv = ["omx", "compute 1 + 1", "--as", "bob", "-w", NAME, "--model", f"scripted:{replies}", "--attempts", "2"]
    fd, terminal = pty.openpty()
    omx = subprocess.Popen(argv, cwd=tmp_path, env=person_env(), stdin=terminal, stdout=terminal, stderr=terminal,
                           start_new_session=True)  # fmt: skip
    os.close(terminal)
    seen, answers = b"", [b"y\n", b"n\n"]
    with contextlib.suppress(OSError):  # EIO: the terminal's last process ended
        while select.select([fd], [], [], 60)[0] and (chunk := os.read(fd, 4096)):  # silent for a minute: stuck
            seen += chunk
            if answers and seen.count(b"[y/N]") == 3 - len(answers):
                os.write(fd, answers.pop(0))
    os.close(fd)
    try:
        status = omx.wait(timeout=60)
    finally:
        if omx.poll() is None:  # stuck
            omx.kill()
    text = seen.decode()
    assert status == 0, text
    assert text.count("Run this MEDIUM risk plan? [y/N]") == 2, text
    assert [row[0] for row in _rows(text.replace("\r\n", "\n")).values()] == ["done", "not confirmed"], text
