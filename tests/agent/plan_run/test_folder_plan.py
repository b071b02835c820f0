"""The plan omx writes for exact work from one folder, end to end through the real ``omx`` command with a scripted
model, the real step sandbox and real files: the code is given the folder's files (path, size, date) and today's
date as data, what it prints is written to the output, and a second program is told the same files; a folder that
is not there, or is not the workspace's, is planned by the model as before."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import kinds, omx, only_run, trace_of

#: the folder's files: size and the date each was last modified (at noon, local time)
LOGS = {"logs/app.log": (2048, "2025-11-02"), "logs/new.log": (5, "2026-05-01"), "logs/old/a.log": (10, "2024-03-01")}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, (size, day) in LOGS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x" * (size - 1) + "\n", encoding="utf-8")
        noon = datetime.fromisoformat(f"{day}T12:00:00").timestamp()
        os.utime(tmp_path / name, (noon, noon))
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def exact(inputs: list[str], output: str) -> dict[str, Any]:
    read = {"inputs": inputs, "outputs": [output], "kind": "exact", "shape": "lines", "count": None, "max_words": None}
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}


def model_calls(ws: Path) -> list[str]:
    return [c["purpose"] for c in kinds(trace_of(only_run(ws)), "model") if c["purpose"] != "reading"]


def events(ws: Path, event: str) -> list[dict[str, Any]]:
    return [e["data"] for e in trace_of(only_run(ws)) if e["kind"] == "run" and e["event"] == event]


def test_exact_work_from_a_folder_is_code_given_its_files_sizes_and_dates(
    ws: Path, script: Callable[..., ScriptedModel]
) -> None:
    fill = 'result = [f["path"] for f in files if f["modified"] < "2026-01-01"]'
    second = (
        "import os, datetime\nfor where, _, names in sorted(os.walk('logs')):\n    for n in sorted(names):\n"
        "        p = os.path.join(where, n)\n"
        "        if datetime.date.fromtimestamp(os.path.getmtime(p)).year < 2026:\n            print(p)"
    )
    model = script(exact(["logs"], "out/old.txt"), fill, second)
    result = omx("Write the files in logs/ last modified before 2026 to out/old.txt", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "old.txt").read_text(encoding="utf-8") == "logs/app.log\nlogs/old/a.log\n"
    assert model_calls(ws) == ["code", "second_program"]  # no plan asked
    assert events(ws, "plan_from_reading") == [{"tools": ["python", "write_text"]}]
    code_asked, second_asked = (r["messages"][-1]["content"] for r in model.requests[-2:])
    assert "{'path': 'logs/app.log', 'name': 'app.log', 'size': 2048, 'modified': '2025-11-02'}," in code_asked
    assert "{'path': 'logs/old/a.log', 'name': 'a.log', 'size': 10, 'modified': '2024-03-01'}," in code_asked
    assert f"today = '{datetime.now().date().isoformat()}'" in code_asked
    assert "logs/app.log  2048 bytes  modified 2025-11-02" in second_asked  # the second program is told the same
    assert "Result: success" in result.output, result.output  # code run on the folder, a second program agreed


def test_code_given_a_folder_s_files_may_read_their_text(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    fill = 'result = max(files, key=lambda f: f["size"])["path"] + " " + str(len(open(files[0]["path"]).read()))'
    script(exact(["logs/"], "out/largest.txt"), fill)
    result = omx("Write the name of the largest file in logs/ and its length to out/largest.txt", "--yes",
                 input="y\n")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "largest.txt").read_text(encoding="utf-8") == "logs/app.log 2048\n"
    assert events(ws, "plan_from_reading") == [{"tools": ["python", "write_text"]}]


@pytest.mark.parametrize("where", ["missing", "outside", "linked"])
def test_a_folder_not_in_the_workspace_is_planned_by_the_model(
    ws: Path, script: Callable[..., ScriptedModel], tmp_path_factory: pytest.TempPathFactory, where: str
) -> None:
    outside = tmp_path_factory.mktemp("elsewhere")
    (outside / "b.log").write_text("b\n", encoding="utf-8")
    folder = {"missing": "gone/", "outside": f"../{outside.name}/", "linked": "linked/"}[where]
    assert where != "outside" or (ws / folder).is_dir()  # a folder that is there, beside the workspace
    if where == "linked":
        (ws / "linked").symlink_to(outside)
    script(exact([folder], "out/n.txt"))  # no plan scripted: the request fails, and says the model was asked for one
    result = omx(f"Write how many files are in {folder} to out/n.txt", "--yes")
    if where == "outside":  # a path that climbs out: refused before any request (``outside_paths``)
        assert f"refused: the task names {folder}, outside the workspace" in result.output
        assert model_calls(ws) == []
    else:
        assert "plan" in model_calls(ws)
    assert events(ws, "plan_from_reading") == []
