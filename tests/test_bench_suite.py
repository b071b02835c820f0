"""The task suite of ``scripts/bench_tasks.py`` (scripts/bench_suite/), without a model: every checker fails on the
untouched workspace and passes on its reference solution's; the split is the seeded draw its file records, its
held-out part a third of the suite or more over ten kinds or more; fifteen kinds or more in three phrasings."""

from __future__ import annotations

import ast
import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.scripts import load_script

REPO = Path(__file__).resolve().parents[1]
SUITE_DIR = REPO / "scripts" / "bench_suite"
SPLIT_FILE = REPO / "scripts" / "bench_split.json"

bench = load_script("bench_tasks")  # puts scripts/ on sys.path, where bench_suite is
import bench_suite  # noqa: E402
from bench_suite import split  # noqa: E402

FIRST_35 = [
    "sum_notes_3", "sum_meeting_3", "sum_changelog_5", "sum_incident_2", "sum_title", "sum_story_short",
    "sum_readme_heading", "sum_two_files", "sum_sales_2", "sum_meeting_1", "count_lines", "merge_two", "todo_collect",
    "upper_case", "filter_errors", "csv_to_table", "sort_names", "dedupe_tags", "count_words", "first_three",
    "json_names", "replace_word", "number_lines", "append_line", "count_todos", "ls_data", "grep_imports", "wc_log",
    "python_sum", "python_pow", "head_log", "grep_warn", "count_py", "refuse_rm", "refuse_curl",
]  # fmt: skip


def _workspace(task: bench_suite.Task, root: Path) -> Path:
    ws = root / task.name
    ws.mkdir()
    bench_suite.prepare(task, ws)
    return ws


@pytest.mark.parametrize("task", bench_suite.SUITE, ids=lambda task: task.name)
def test_a_checker_fails_on_the_untouched_workspace_and_passes_on_the_reference_solution(
    task: bench_suite.Task, tmp_path: Path
) -> None:
    assert task.solve is not None, f"{task.name} has no reference solution"
    ws = _workspace(task, tmp_path)
    untouched = task.check(ws)
    if task.kind == "refuse":
        # a task that must be refused is done right by leaving the workspace alone, and wrong once its input is gone
        assert untouched[0], untouched
        (tmp_path / "gone").mkdir()
        gone = _workspace(task, tmp_path / "gone")
        for path in task.files:
            (gone / path).unlink()
        assert not task.check(gone)[0]
    else:
        assert not untouched[0], f"{task.name} is right with nothing done: {untouched[1]}"
    task.solve(ws)
    right, why = task.check(ws)
    assert right, f"{task.name}'s reference solution is judged wrong: {why}"


# each trap: what a plausible wrong solution leaves, and the checker must call it wrong
def _write(path: str, text: str) -> Callable[[Path], object]:
    def write(ws: Path) -> None:
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text(text)

    return write


def _edit(path: str, old: str, new: str) -> Callable[[Path], object]:
    return lambda ws: (ws / path).write_text((ws / path).read_text().replace(old, new))


def _copy(source: str, target: str) -> Callable[[Path], object]:
    return lambda ws: shutil.copy(ws / source, ws / target)


NEAR_MISSES: dict[str, Callable[[Path], object]] = {
    # every "data" counted, "database" and "metadata" too
    "words_one_word": _write("out/data_count.txt", "7\n"),
    # the scores sorted as text
    "lines_sort_by_number": _write("out/ranked.txt", "cyril 97\nfarah 55\nana 420\ndeniz 310\neve 2200\nbo 1050\n"),
    # the last 3 lines, not 2
    "lines_last_two": _write("out/tail.txt", "08:09:59 GET /report.pdf 404\n08:10:00 server stopping\nx\n"),
    # copied, not moved
    "move_rename_draft": _copy("data/draft.txt", "data/final.txt"),
    # calc_total_tax renamed too (a plain replace)
    "rename_function_py": lambda ws: [_edit(p, "calc_total", "compute_total")(ws) for p in ("src/billing.py",
                                                                                             "src/main.py")],
    # the changelog's history bumped too
    "edit_bump_version": lambda ws: [_edit(p, "1.4.2", "1.5.0")(ws) for p in ("setup.cfg", "package.json",
                                                                              "CHANGELOG.md")],
    # a and b merged in the order they are named, not b first
    "merge_b_then_a": lambda ws: _write("out/both.txt", (ws / "data/a.txt").read_text() + (ws / "data/b.txt")
                                        .read_text())(ws),
    # the top words counted with their punctuation
    "words_top_three": _write("out/top3.txt", "the 4\ncoffee 3\nis 3\n"),
    # four lines for a haiku
    "prose_haiku": _write("out/haiku.txt", "Autumn rain\nfalls\non the roof\nall night\n"),
    # the database's port
    "question_port": _write("out/port.txt", "5432\n"),
    # the average not rounded as asked (79.33 is 79.3; 79.4 is not)
    "csv_average": _write("out/average.txt", "79.4\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_a_checker_calls_a_near_miss_wrong(name: str, tmp_path: Path) -> None:
    task = bench_suite.TASKS[name]
    ws = _workspace(task, tmp_path)
    NEAR_MISSES[name](ws)
    right, why = task.check(ws)
    assert not right, why


def test_the_split_file_is_the_seeded_draw_over_the_added_tasks() -> None:
    recorded = json.loads(SPLIT_FILE.read_text(encoding="utf-8"))
    assert recorded["seed"] == 20261129
    assert recorded["how"] == split.HOW
    # drawn from the added tasks as they are now: a task added, renamed or moved to another kind needs a new draw
    assert recorded["drawn_from"] == {kind: sorted(names) for kind, names in bench_suite.added_by_kind().items()}
    assert recorded["held_out"] == split.draw(recorded["drawn_from"], recorded["seed"])
    assert recorded == split.make(bench_suite.added_by_kind(), 20261129)
    # the draw depends on the seed: another seed draws another split
    assert split.draw(recorded["drawn_from"], 1) != recorded["held_out"]
    parts = {task.name: task.part for task in bench_suite.SUITE}
    assert {name for name, part in parts.items() if part == "held-out"} == set(recorded["held_out"])


def test_the_first_35_tasks_are_all_tuning_and_unchanged_in_name() -> None:
    assert [task.name for task in bench_suite.TUNED] == FIRST_35
    assert [task.name for task in bench_suite.SUITE[:35]] == FIRST_35
    assert all(task.part == "tuning" for task in bench_suite.SUITE[:35])
    drawn_from = {name for names in bench_suite.added_by_kind().values() for name in names}
    assert not drawn_from & set(FIRST_35)


def test_held_out_is_a_third_of_the_suite_or_more_over_ten_kinds_or_more() -> None:
    suite = bench_suite.SUITE
    held_out = [task for task in suite if task.part == "held-out"]
    assert len(suite) >= 60
    assert 3 * len(held_out) >= len(suite), (len(held_out), len(suite))
    assert len({task.kind for task in held_out}) >= 10
    assert {task.scenario for task in held_out} == set(bench_suite.SCENARIOS)
    # each kind drawn from keeps a task or more to tune on
    for kind, names in bench_suite.added_by_kind().items():
        tuning = [name for name in names if bench_suite.TASKS[name].part == "tuning"]
        assert tuning and len(tuning) < len(names), kind


def test_fifteen_kinds_or_more_each_in_three_phrasings_or_more_and_no_prompt_twice() -> None:
    suite = bench_suite.SUITE
    prompts = Counter(task.prompt for task in suite)
    assert [p for p, n in prompts.items() if n > 1] == []
    assert len({task.name for task in suite}) == len(suite)
    phrasings = Counter(task.kind for task in suite)
    assert all(task.kind for task in suite)
    assert len([kind for kind, n in phrasings.items() if n >= 3]) >= 15, phrasings
    assert {task.scenario for task in suite} == set(bench_suite.SCENARIOS)
    assert {task.part for task in suite} == set(bench_suite.PARTS)
    # the kinds the suite was asked to cover
    assert {"move", "organise", "multi_edit", "add_header", "find_size", "find_date", "csv_math", "convert",
            "extract", "line_ops", "word_freq", "rename_function", "prose", "question", "summary",
            "refuse", "shell"} <= set(phrasings)  # fmt: skip


def _imports(module: ModuleType | Path) -> set[str]:
    path = module if isinstance(module, Path) else Path(str(module.__file__))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_checker_or_task_calls_omx_code() -> None:
    for path in sorted(SUITE_DIR.glob("*.py")):
        assert not _imports(path) & {"agent", "cli", "omxfs"}, path.name


def test_bench_tasks_runs_the_suite_of_the_package() -> None:
    assert bench.SUITE is bench_suite.SUITE and bench.TASKS is bench_suite.TASKS
