"""The planner's prompt teaches the plan format with tasks of its own: no example shares a file path or a run of
8 words with a task of the benchmark suite (scripts/bench_suite), so the suite measures planning, not copying. Only
the suite's prompts and file names are read here, never its checkers."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from agent.plan_run.criteria_prompt import CRITERIA_RULES, EXAMPLE_CRITERIA
from agent.plan_run.plan import plan_json_schema
from agent.plan_run.planner import EXAMPLES, system_prompt
from agent.plan_run.text_operations import EXAMPLES as OPERATION_EXAMPLES

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))  # where bench_suite is, as the benchmark scripts have it

from bench_suite import SUITE  # noqa: E402

RUN = 8
#: a path: segments joined by '/', or a file name with an extension
PATH = re.compile(r"[\w.-]*\w/[\w./-]*\w|\b[\w-]+\.(?:txt|md|csv|json|py|cfg|log|ini|yaml|js|html)\b")


def suite_texts() -> dict[str, str]:
    """Each suite task's prompt and file names, by task name."""
    return {task.name: " ".join([task.prompt, *task.files]) for task in SUITE}


def example_texts() -> list[str]:
    """Everything a prompt shows as an example: the example plans, the criteria examples, the example criteria,
    the schema's descriptions (its e.g. paths), and the worked examples of the request for a text operation."""
    criteria_lines = [line for line in CRITERIA_RULES.splitlines() if " -> " in line]
    operations = [task for task, _answer in OPERATION_EXAMPLES]
    return [*(json.dumps(e) for e in EXAMPLES), *criteria_lines, *EXAMPLE_CRITERIA, json.dumps(plan_json_schema()),
            *operations]  # fmt: skip


def paths(text: str) -> set[str]:
    return {path.rstrip("./") for path in PATH.findall(text)}


def runs(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[i : i + RUN]) for i in range(len(words) - RUN + 1)}


def test_the_helpers_find_what_they_look_for() -> None:
    """The checks below can fail: the old first example was the suite's first task, path and wording."""
    old = "Summarise data/notes.txt in 3 bullet points and write them to out/summary.md"
    suite = suite_texts()
    assert {"data/notes.txt", "out/summary.md"} <= paths(suite["sum_notes_3"]) & paths(old)
    assert runs(suite["sum_notes_3"]) & runs(old)
    assert "setup.cfg" in paths(suite["edit_bump_version"])


def test_the_examples_are_in_the_prompt_the_planner_sends() -> None:
    prompt = system_prompt()
    assert all(json.dumps(example) in prompt for example in EXAMPLES) and CRITERIA_RULES in prompt
    assert len([line for line in CRITERIA_RULES.splitlines() if " -> " in line]) >= 4


def test_no_example_names_a_file_of_the_suite() -> None:
    shown = set().union(*(paths(text) for text in example_texts()))
    assert len(shown) >= 8  # the examples' own files were found
    for name, text in suite_texts().items():
        assert not paths(text) & shown, (name, paths(text) & shown)


def test_no_example_shares_8_words_in_a_row_with_a_task_of_the_suite() -> None:
    shown = set().union(*(runs(text) for text in example_texts()))
    for name, text in suite_texts().items():
        shared = runs(text) & shown
        assert not shared, (name, [" ".join(run) for run in shared])


def test_the_whole_system_prompt_shares_no_task_wording_either() -> None:
    """The rules around the examples too: a copied sentence there would be an example in all but name."""
    prompt = system_prompt()
    for name, text in suite_texts().items():
        assert not runs(text) & runs(prompt), name
        assert not paths(text) & paths(prompt), name
