"""Success criteria checked by omx (issue 28): each pattern it reads, met and not met, and everything else not
checked, never met because the file exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.plan_run.criteria import check_criteria, check_criterion

FILES = {
    "out/count.txt": "apples\npears\nplums\nfigs\n",
    "out/number.txt": "4\n",
    "out/summary.md": "Summary:\n- one\n- two\n* three\n• four\n",
    "out/table.md": "| fruit | n |\n| --- | ---: |\n| apple | 1 |\n| pear | 2 |\n",
    "out/blank.txt": "a\n\nb\n\n",
}


@pytest.fixture
def ws(tmp_path: Path) -> tuple[Path, list[Path]]:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path, [tmp_path / name for name in FILES]


@pytest.mark.parametrize(
    ("criterion", "status", "detail"),
    [
        ("out/count.txt exists", "met", "the file exists"),
        ("The file `out/count.txt` was written.", "met", "the file exists"),
        ("out/count.txt has 4 lines", "met", "4 non-empty lines"),
        ("out/count.txt has 3 lines", "not met", "4 non-empty lines"),  # issue 28: another number is not met
        ("out/count.txt contains exactly four lines", "met", "4 non-empty lines"),
        ("out/blank.txt has 2 lines", "met", "2 non-empty lines"),
        ("out/count.txt has at least 3 lines", "met", "4 non-empty lines"),
        ("out/count.txt has at most 3 lines", "not met", "4 non-empty lines"),
        ("out/summary.md has 4 bullet lines", "met", "4 bullet lines"),
        ("out/summary.md has 3 bullet lines", "not met", "4 bullet lines"),  # issue 28: 4 bullets met "3"
        ("out/summary.md contains three bullets", "not met", "4 bullet lines"),
        ("out/summary.md has no more than 5 bullet points", "met", "4 bullet lines"),
        ("out/number.txt contains just the number 4", "met", "it holds 4"),
        ("out/number.txt has only the number 4.0", "met", "it holds 4"),
        ("out/number.txt is 5", "not met", "it holds 4"),
        ("out/count.txt contains just the number 4", "not met", "not a number"),  # issue 28: the text, not 4
        ('out/count.txt contains "pears"', "met", "it contains 'pears'"),
        ("out/count.txt includes the word 'plums'", "met", "it contains 'plums'"),
        ('out/count.txt contains "Pears"', "not met", "'Pears' is not in it"),
        ("out/table.md is a markdown table", "met", "a table of 2 columns and 2 rows"),
        ("out/count.txt is a markdown table", "not met", "no markdown table"),
        ("out/count.txt exists and has 4 lines", "met", "the file exists; 4 non-empty lines"),
        ("out/count.txt exists and has 5 lines", "not met", "4 non-empty lines"),
        ("out/count.txt has 4 lines and out/number.txt has just the number 4", "met", "4 non-empty lines; it holds 4"),
        ("./out/count.txt has 4 lines", "met", "4 non-empty lines"),
    ],
)
def test_the_patterns_omx_reads_are_checked(
    ws: tuple[Path, list[Path]], criterion: str, status: str, detail: str
) -> None:
    workspace, produced = ws
    check = check_criterion(criterion, produced, workspace)
    assert (check.criterion, check.status) == (criterion, status)
    assert detail in check.detail


@pytest.mark.parametrize(
    "criterion",
    [
        "out/count.txt has 10 TODO comments",  # issue 28: met because the file existed
        "out/summary.md is a good summary",
        "out/summary.md has about 3 bullet lines",
        "out/count.txt does not contain 'kiwi'",
        "out/number.txt contains the number 4",  # somewhere in it, or only it? not guessed
        "the tone is friendly",
        "out/count.txt and out/number.txt exist",  # two files in one clause
        "out/summary.md has 4 bullet lines and is friendly",  # one part checked and met, one not checked
        "data/notes.txt has 3 lines",  # not a file this run wrote
    ],
)
def test_what_omx_cannot_read_is_not_checked_never_met(ws: tuple[Path, list[Path]], criterion: str) -> None:
    workspace, produced = ws
    (workspace / "data").mkdir()
    (workspace / "data" / "notes.txt").write_text("a\nb\nc\n", encoding="utf-8")
    assert check_criterion(criterion, produced, workspace).status == "not checked"


def test_a_part_not_met_fails_the_whole_criterion_even_beside_one_not_checked(ws: tuple[Path, list[Path]]) -> None:
    workspace, produced = ws
    check = check_criterion("out/summary.md is friendly and has 3 bullet lines", produced, workspace)
    assert (check.status, check.detail) == ("not met", "4 bullet lines")


def test_a_file_the_run_wrote_then_lost_is_not_met(ws: tuple[Path, list[Path]]) -> None:
    workspace, produced = ws
    (workspace / "out" / "count.txt").unlink()
    check = check_criterion("out/count.txt has 4 lines", produced, workspace)
    assert (check.status, check.detail) == ("not met", "count.txt is missing")


def test_a_file_named_by_its_absolute_path_is_checked(ws: tuple[Path, list[Path]]) -> None:
    workspace, produced = ws
    check = check_criterion(f"{workspace}/out/count.txt has 4 lines", produced, workspace)
    assert (check.status, check.detail) == ("met", "4 non-empty lines")


def test_a_written_file_named_without_its_directory_is_that_file(ws: tuple[Path, list[Path]]) -> None:
    """The 0.5B model wrote out/upper.txt and claimed "upper.txt exists", meaning it (not a ./upper.txt), and a run
    done right was reported failed; a bare name is the written file only where it is one of a kind."""
    workspace, produced = ws
    check = check_criterion("count.txt has 4 lines", produced, workspace, meant={"count.txt"})
    assert (check.status, check.detail) == ("met", "4 non-empty lines")
    (workspace / "count.txt").write_text("x\n", encoding="utf-8")  # a real ./count.txt is the one it names
    check = check_criterion("count.txt has 4 lines", produced, workspace)
    assert (check.status, check.detail) == ("not checked", "it names no file this run wrote")
    (workspace / "count.txt").unlink()
    (workspace / "again").mkdir()
    (workspace / "again" / "count.txt").write_text("one\n", encoding="utf-8")  # two written count.txt: neither
    check = check_criterion("count.txt exists", [*produced, workspace / "again" / "count.txt"], workspace)
    assert check.status == "not checked"


def test_check_criteria_keeps_the_order(ws: tuple[Path, list[Path]]) -> None:
    workspace, produced = ws
    checks = check_criteria(["out/count.txt exists", "nice", "out/count.txt has 2 lines"], produced, workspace)
    assert [c.status for c in checks] == ["met", "not checked", "not met"]


def test_a_file_the_run_was_meant_to_write_and_is_not_there_is_not_met(ws: tuple[Path, list[Path]]) -> None:
    workspace, produced = ws
    meant = check_criterion("out/missing.md has 2 bullet lines", produced, workspace, meant={"out/missing.md"})
    assert (meant.status, meant.detail) == ("not met", "missing.md is missing")
    # no one meant to write it (a criterion copied from the planner's example): not this run's, not checked
    assert check_criterion("out/missing.md exists", produced, workspace).status == "not checked"


def test_exists_alone_is_not_about_the_content(ws: tuple[Path, list[Path]]) -> None:
    workspace, produced = ws
    assert not check_criterion("out/count.txt exists", produced, workspace).about_content
    assert check_criterion("out/count.txt exists and has 4 lines", produced, workspace).about_content


def test_just_a_number_whichever(ws: tuple[Path, list[Path]]) -> None:
    workspace, produced = ws
    assert check_criterion("out/number.txt has just a number", produced, workspace).status == "met"
    assert check_criterion("out/count.txt holds only one number", produced, workspace).status == "not met"


@pytest.mark.parametrize(
    ("criterion", "judgeable", "file"),
    [
        ("out/summary.md is a good summary", True, "out/summary.md"),  # about a file the run wrote
        ("out/summary.md has 4 bullet lines", False, None),  # checked by omx
        ("the tone is friendly", False, None),  # no file named, and the run wrote several
        ("data/notes.txt is friendly", False, None),  # about a file the run did not write
    ],
)
def test_what_the_model_may_judge(
    ws: tuple[Path, list[Path]], criterion: str, judgeable: bool, file: str | None
) -> None:
    workspace, produced = ws
    (workspace / "data").mkdir()
    (workspace / "data" / "notes.txt").write_text("a\n", encoding="utf-8")
    check = check_criterion(criterion, produced, workspace)
    assert (check.judgeable, check.file) == (judgeable, file)


def test_the_only_output_may_be_judged_for_a_criterion_that_names_no_file(tmp_path: Path) -> None:
    (tmp_path / "out.md").write_text("hi\n", encoding="utf-8")
    check = check_criterion("the tone is friendly", [tmp_path / "out.md"], tmp_path)
    assert (check.status, check.judgeable, check.file) == ("not checked", True, "out.md")
