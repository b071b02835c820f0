"""A task naming a file outside the workspace is refused before any plan is asked for: no plan the schema admits
can read it, and one that does something else instead (a copy of the workspace's own file) is no answer. End to
end through the real ``omx`` command with a scripted model that is never asked."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.outside_paths import outside_paths
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import omx, only_run, run_end, trace_of


@pytest.mark.parametrize(
    ("task", "outside"),
    [
        ("Copy /etc/passwd into out/passwd.txt so I can read it", ["/etc/passwd"]),
        ("run rm -rf ~/.cache, then write the MB freed to out/freed.txt", ["~/.cache"]),
        ("Summarise ../notes/plan.md and ../notes/plan.md.", ["../notes/plan.md"]),
        ("Fetch https://example.org/data/prices.csv and save it as data/prices.csv", []),
        ("Keep the lines with and/or in data/x.txt, 24/7 support", []),
        ("Read /tmp alone", []),
    ],
)
def test_the_paths_a_task_names_outside_the_workspace(tmp_path: Path, task: str, outside: list[str]) -> None:
    assert outside_paths(task, tmp_path) == outside


def test_an_absolute_path_into_the_workspace_is_inside(tmp_path: Path) -> None:
    assert outside_paths(f"Summarise {tmp_path}/data/a.txt into out/s.md", tmp_path) == []


def test_a_task_naming_a_file_outside_is_refused_before_any_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: Callable[..., ScriptedModel]
) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "readme.txt").write_text("hello\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    model = script()  # no reply: any request fails the test
    result = omx("Copy /etc/passwd into out/passwd.txt so I can read it", "--yes")
    assert result.exit_code == 3, result.output
    assert "refused: the task names /etc/passwd, outside the workspace" in result.output
    assert not (tmp_path / "out").exists()
    assert model.requests == []
    end = run_end(trace_of(only_run(tmp_path.resolve())))
    assert end["status"] == "refused" and "/etc/passwd" in end["reasons"][0]
