"""A name in code renamed where the task says so: which tasks rename a name, which files the plan edits, and a real
``omx`` run with a scripted model that read a file to move, whose Python files are renamed by their names (strings
and comments as they were) and still run."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.code_renames import rename_plan, renamed_name
from agent.plan_run.plan import PythonStep, WriteTextStep
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from agent.plan_run.text_operations import TextOperation, operation_code
from agent.sandbox.confine import OUTPUT_LIMIT
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import omx

PRICING = '''"""Prices: price() is what a row costs."""


def price(row):
    return float(row["price"]) * 1.2  # price with tax


def price_list(rows):
    return [price(row) for row in rows]
'''
QUOTE = """from pricing import price, price_list

ROW = {"price": "10"}
print(f"one: {price(ROW):.2f}", price_list([ROW]))
"""
NOTES = "price is read from the price column\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pricing.py").write_text(PRICING, encoding="utf-8")
    (tmp_path / "quote.py").write_text(QUOTE, encoding="utf-8")
    (tmp_path / "notes.txt").write_text(NOTES, encoding="utf-8")
    (tmp_path / "photos").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


@pytest.mark.parametrize(
    ("task", "rename"),
    [
        ("rename fmt_ticket to format_ticket_label in tools/labels.py pls", ("fmt_ticket", "format_ticket_label")),
        ("Rename the low_stock function in inventory.py to parts_to_reorder", ("low_stock", "parts_to_reorder")),
        ("in shop/tickets.py rename the Ticket method calc_total to total_price", ("calc_total", "total_price")),
        ("rename the price() function in pricing.py to unit_price", ("price", "unit_price")),
        ("change the name of OPEN_HRS in shopinfo.py to OPENING_HOURS; x.py uses it", ("OPEN_HRS", "OPENING_HOURS")),
        ("Rename function `calc_total` to `compute_total` in app/util.py", ("calc_total", "compute_total")),
        ("Rename notes.txt to old_notes.txt", None),  # files
        ("Rename the folder photos to pictures", None),
        ("Rename all the files in docs/ to lowercase", None),
        ("Rename a to b and c to d in x.py", None),  # two renames: not one
        ("Rename the function f to function in x.py", None),
        ("unit_price should be called price_of: rename it in a.py and wherever it is used", ("unit_price", "price_of")),
        ("The function `calc` must be renamed to compute in a.py", ("calc", "compute")),
        ("the file should be called notes.md", None),  # a file's name
        ("it should be called total", None),
    ],
)
def test_a_task_renames_one_name_where_it_says_so(task: str, rename: tuple[str, str] | None) -> None:
    assert renamed_name(task) == rename


def test_a_python_rename_changes_names_and_f_string_braces_not_strings_or_comments() -> None:
    code = operation_code(TextOperation(op="rename_in_python", text="price", new_text="unit_price"))
    printed = subprocess.run([sys.executable, "-c", f"INPUT = {PRICING + QUOTE!r}\n{code}"], capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
    assert (
        printed
        == (PRICING + QUOTE)
        .replace("def price(", "def unit_price(")
        .replace("[price(row)", "[unit_price(row)")
        .replace("import price,", "import unit_price,")
        .replace("{price(ROW)", "{unit_price(ROW)")
        .rstrip("\n")
        + "\n"
    )


def test_the_files_named_and_those_that_use_the_name_are_edited(ws: Path) -> None:
    only_named = rename_plan("rename the price() function in pricing.py to unit_price", ws, "(by omx)")
    assert only_named is not None
    assert [s.inputs.path for s in only_named.steps if isinstance(s, WriteTextStep)] == ["pricing.py"]
    with_uses = rename_plan("rename the price() function in pricing.py to unit_price, and every caller", ws, "(x)")
    assert with_uses is not None
    assert [s.inputs.path for s in with_uses.steps if isinstance(s, WriteTextStep)] == ["pricing.py", "quote.py"]
    assert all("rename_in_python" not in s.description for s in with_uses.steps if isinstance(s, PythonStep))
    assert rename_plan("rename photos to pictures in pricing.py", ws, "(x)") is None  # a folder of that name
    assert rename_plan("rename price to cost in notes.txt", ws, "(x)") is None  # no code file
    assert rename_plan("rename nothing_here to x in pricing.py", ws, "(x)") is None  # no file holds it
    (ws / "big.py").write_text("price = 1\n" + "#" * OUTPUT_LIMIT, encoding="utf-8")  # not printed whole: left alone
    every = rename_plan("rename the price() function in pricing.py to unit_price, and every caller", ws, "(x)")
    assert every is not None and "big.py" not in [s.inputs.path for s in every.steps if isinstance(s, WriteTextStep)]


def test_a_rename_the_model_read_as_a_move_is_planned_by_omx(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    read = {"inputs": ["pricing.py"], "outputs": ["pricing.py"], "kind": "command", "shape": "one_line",
            "operation": {"op": "file_operations", "text": "", "new_text": "", "number": 0},
            "operations": [{"action": "move", "source": "pricing.py", "target": ""}]}  # fmt: skip
    script({"for": READING_SCHEMA_TITLE, "content": json.dumps(read)})
    result = omx("rename the price() function in pricing.py to unit_price - quote.py uses it too", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert "(omx's code of the rename the task says)" in result.output
    renamed = (ws / "pricing.py").read_text(encoding="utf-8")
    assert "def unit_price(row):" in renamed and 'row["price"]' in renamed and "# price with tax" in renamed
    assert "def price_list(rows):" in renamed and "[unit_price(row) for row in rows]" in renamed
    assert '"""Prices: price() is what a row costs."""' in renamed
    assert (ws / "notes.txt").read_text(encoding="utf-8") == NOTES
    ran = subprocess.run([sys.executable, "quote.py"], cwd=ws, capture_output=True, text=True, check=True)
    assert ran.stdout == "one: 12.00 [12.0]\n"
    assert "Result: done" in result.output and "Result: success" not in result.output
