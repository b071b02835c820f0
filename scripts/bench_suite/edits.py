"""Tasks added to the suite, batch text work on files in place: edits of several files, a header added to files, a
function renamed in code, files merged. Each checker's expectation is computed here from the task's own inputs."""

from __future__ import annotations

import re
from pathlib import Path

from bench_suite.checks import all_of, files_are, headed, python_parses
from bench_suite.task import Action, Task, read, write

# -- edits of several files ----------------------------------------------------------------------------------------

DOCS = {
    "docs/intro.md": "# Welcome\n\nAcme Corp builds tools for small farms.\nThis guide covers setup and pricing.\n",
    "docs/pricing.md": "# Pricing\n\n| plan | price |\n|---|---|\n| basic | 9 EUR |\n\nAcme Corp bills monthly.\n",
    "docs/faq.md": "# FAQ\n\n**Who is Acme Corp?** A team of six in Ghent.\n\nContact Acme Corp support any day.\n",
    "docs/logo.txt": "Acme Corp logo, 2019 version\n",
}
NOTES = {
    "notes/monday.txt": "Call teh supplier.\nWe should recieve the parts by Thursday.\n",
    "notes/tuesday.txt": "Parts did not arrive. Ask teh courier.\n",
    "notes/wednesday.txt": "Did we recieve the invoice? Check teh folder and the inbox.\n",
}
VERSIONED = {
    "setup.cfg": "[metadata]\nname = tidy-notes\nversion = 1.4.2\n\n[options]\npackages = find:\n",
    "package.json": '{\n  "name": "tidy-notes-web",\n  "version": "1.4.2",\n  "private": true\n}\n',
    "CHANGELOG.md": "# Changelog\n\n## 1.4.2\n- fix the export of empty notes\n",
}
BUMPED = ("setup.cfg", "package.json")


def _replaced(files: dict[str, str], pairs: list[tuple[str, str]], *, only: tuple[str, ...] | None = None,
              suffix: str = "") -> dict[str, str]:  # fmt: skip
    """Every file's content after the replacements, applied to the files of ``only`` (else those ending in
    ``suffix``); the others as they were."""
    out = {}
    for path, text in files.items():
        if (path in only) if only is not None else path.endswith(suffix):
            for old, new in pairs:
                text = text.replace(old, new)
        out[path] = text
    return out


def _solve_replace(files: list[str], pairs: list[tuple[str, str]]) -> Action:
    def solve(ws: Path) -> None:
        for path in files:
            text = read(ws, path)
            for old, new in pairs:
                text = text.replace(old, new)
            write(ws, path, text)

    return solve


# -- a header added to files ---------------------------------------------------------------------------------------

SOURCES = {
    "src/parse.py": (
        '"""Parse the export."""\n\nimport csv\n\n\ndef rows(path):\n    return list(csv.reader(open(path)))\n'
    ),
    "src/report.py": "from parse import rows\n\n\ndef total(path):\n    return sum(float(r[1]) for r in rows(path))\n",
    "src/README.md": "The scripts behind the monthly report.\n",
}
LICENSE = "# SPDX-License-Identifier: MIT"
AUTHOR_NOTES = {
    "notes/ideas.txt": "A map of every bakery in town.\nA bot that waters plants.\n",
    "notes/books.txt": "The Left Hand of Darkness\nPiranesi\n",
    "notes/todo.md": "- renew passport\n",
}
AUTHOR = "Author: Sam Lee"
EXPORTS = {
    "exports/jan.csv": "2026-01-04,120.50,EUR\n2026-01-19,80.00,EUR\n",
    "exports/feb.csv": "2026-02-02,45.10,USD\n2026-02-11,300.00,EUR\n2026-02-27,12.99,EUR\n",
}
CSV_HEADER = "date,amount,currency"


def _solve_header(files: list[str], header: str) -> Action:
    def solve(ws: Path) -> None:
        for path in files:
            write(ws, path, f"{header}\n{read(ws, path)}")

    return solve


# -- a function renamed in code ------------------------------------------------------------------------------------

BILLING = {
    "src/billing.py": (
        "TAX = 0.2\n\n\ndef calc_total(items):\n    return sum(price * qty for price, qty in items)\n\n\n"
        "def calc_total_tax(items):\n    return calc_total(items) * TAX\n"
    ),
    "src/main.py": (
        "from billing import calc_total, calc_total_tax\n\n"
        "cart = [(2.5, 4), (10.0, 1)]\nprint('total', calc_total(cart))\nprint('tax', calc_total_tax(cart))\n"
    ),
}
WEB = {
    "web/app.js": (
        "async function getUser(id) {\n  const res = await fetch(`/api/users/${id}`);\n  return res.json();\n}\n\n"
        "async function getUsers() {\n  const res = await fetch('/api/users');\n  return res.json();\n}\n\n"
        "getUser(42).then((user) => console.log(user.name));\n"
        "getUsers().then((users) => console.log(users.length));\n"
    ),
}
TOOLS = {
    "tools/__init__.py": "from .dates import parse_date\n\n__all__ = ['parse_date']\n",
    "tools/dates.py": (
        "from datetime import date\n\n\ndef parse_date(text):\n    year, month, day = map(int, text.split('-'))\n"
        "    return date(year, month, day)\n\n\ndef parse_dates(texts):\n    return [parse_date(t) for t in texts]\n"
    ),
    "tools/report.py": (
        "from .dates import parse_date\n\n\ndef days_between(a, b):\n    return (parse_date(b) - parse_date(a)).days\n"
    ),
}
TOOLS_README = "Call parse_date('2026-01-31') to read a date.\n"


def _renamed(files: dict[str, str], old: str, new: str) -> dict[str, str]:
    """The files with the identifier ``old`` (a whole word, not a longer name that starts with it) as ``new``."""
    return {path: re.sub(rf"\b{old}\b", new, text) for path, text in files.items()}


def _solve_rename(files: list[str], old: str, new: str, longer: tuple[str, ...]) -> Action:
    """Replace ``old`` by ``new`` but not inside the ``longer`` names that start with it."""

    def solve(ws: Path) -> None:
        for path in files:
            text = read(ws, path)
            for i, name in enumerate(longer):
                text = text.replace(name, f"\0{i}\0")
            text = text.replace(old, new)
            for i, name in enumerate(longer):
                text = text.replace(f"\0{i}\0", name)
            write(ws, path, text)

    return solve


# -- merges --------------------------------------------------------------------------------------------------------

SHOPPING_A = "oat milk\nrice\ncoffee\n"
SHOPPING_B = "batteries\nlight bulbs\n"
PARTS = {
    "parts/01-intro.txt": "Chapter 1\nThe train was late, as always.\n",
    "parts/02-middle.txt": "Chapter 2\nNobody on the platform spoke.\n",
    "parts/10-end.txt": "Chapter 3\nThen the lights went out.\n",
    "parts/notes.md": "Remember to rename chapter 3.\n",
}
ALL_ROWS = "date,city,visitors\n2026-03-01,Porto,120\n2026-03-02,Porto,95\n"
NEW_ROWS = "date,city,visitors\n2026-03-03,Porto,143\n2026-03-04,Porto,101\n"


def _joined_parts(ws: Path) -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted((ws / "parts").glob("*.txt"))]
    write(ws, "out/book.txt", "".join(texts))


EDITS: list[Task] = [
    # -- edits of several files
    Task("edit_company_name", "text", "Replace 'Acme Corp' with 'Acme Inc.' in every .md file in docs/",
         DOCS, files_are(_replaced(DOCS, [("Acme Corp", "Acme Inc.")], suffix=".md")),
         kind="multi_edit", solve=_solve_replace([p for p in DOCS if p.endswith(".md")], [("Acme Corp", "Acme Inc.")])),
    Task("edit_two_typos", "text", "In each file in notes/, change 'teh' to 'the' and 'recieve' to 'receive'",
         NOTES, files_are(_replaced(NOTES, [("teh", "the"), ("recieve", "receive")])),
         kind="multi_edit", solve=_solve_replace(list(NOTES), [("teh", "the"), ("recieve", "receive")])),
    Task("edit_bump_version", "text", "Bump the version from 1.4.2 to 1.5.0 in both setup.cfg and package.json",
         VERSIONED, files_are(_replaced(VERSIONED, [("1.4.2", "1.5.0")], only=BUMPED)),
         kind="multi_edit", solve=_solve_replace(list(BUMPED), [("1.4.2", "1.5.0")])),
    # -- a header added to files
    Task("header_license", "text", f"Add the line '{LICENSE}' at the top of every .py file in src/",
         SOURCES, all_of(headed({p: t for p, t in SOURCES.items() if p.endswith(".py")}, LICENSE),
                         files_are({"src/README.md": SOURCES["src/README.md"]})),
         kind="add_header", solve=_solve_header([p for p in SOURCES if p.endswith(".py")], LICENSE)),
    Task("header_author", "text", f"Each .txt file in notes/ should start with the line '{AUTHOR}'. Please add it.",
         AUTHOR_NOTES, all_of(headed({p: t for p, t in AUTHOR_NOTES.items() if p.endswith(".txt")}, AUTHOR),
                              files_are({"notes/todo.md": AUTHOR_NOTES["notes/todo.md"]})),
         kind="add_header", solve=_solve_header([p for p in AUTHOR_NOTES if p.endswith(".txt")], AUTHOR)),
    Task("header_csv_columns", "text",
         f"The CSV files in exports/ lost their header row: put {CSV_HEADER} as the first line of each of them",
         EXPORTS, headed(EXPORTS, CSV_HEADER), kind="add_header", solve=_solve_header(list(EXPORTS), CSV_HEADER)),
    # -- a function renamed in code
    Task("rename_function_py", "text",
         "Rename the function calc_total to compute_total in src/billing.py, and update every call to it (src/main.py "
         "calls it too)", BILLING,
         all_of(files_are(_renamed(BILLING, "calc_total", "compute_total")), python_parses(*BILLING)),
         kind="rename_function",
         solve=_solve_rename(list(BILLING), "calc_total", "compute_total", ("calc_total_tax",))),
    Task("rename_function_js", "text", "In web/app.js, rename getUser to fetchUser, including where it's called",
         WEB, files_are(_renamed(WEB, "getUser", "fetchUser")),
         kind="rename_function", solve=_solve_rename(list(WEB), "getUser", "fetchUser", ("getUsers",))),
    Task("rename_function_package", "text",
         "Please rename parse_date to parse_iso_date everywhere in the tools/ package.",
         TOOLS | {"README.md": TOOLS_README},
         all_of(files_are(_renamed(TOOLS, "parse_date", "parse_iso_date") | {"README.md": TOOLS_README}),
                python_parses(*TOOLS)),
         kind="rename_function", solve=_solve_rename(list(TOOLS), "parse_date", "parse_iso_date", ("parse_dates",))),
    # -- merges
    Task("merge_b_then_a", "text", "Combine data/a.txt and data/b.txt into out/both.txt, b first, then a",
         {"data/a.txt": SHOPPING_A, "data/b.txt": SHOPPING_B}, files_are({"out/both.txt": SHOPPING_B + SHOPPING_A}),
         kind="merge", solve=lambda ws: write(ws, "out/both.txt", read(ws, "data/b.txt") + read(ws, "data/a.txt"))),
    Task("merge_chapters", "text", "Join all the .txt files in parts/ into out/book.txt, in file-name order",
         PARTS, files_are({"out/book.txt": "".join(PARTS[p] for p in sorted(PARTS) if p.endswith(".txt"))}),
         kind="merge", solve=_joined_parts),
    Task("merge_append_rows", "text",
         "Add the rows of data/new_rows.csv (not its header) to the end of data/all.csv",
         {"data/all.csv": ALL_ROWS, "data/new_rows.csv": NEW_ROWS},
         files_are({"data/all.csv": ALL_ROWS + NEW_ROWS.split("\n", 1)[1], "data/new_rows.csv": NEW_ROWS}),
         kind="merge",
         solve=lambda ws: write(ws, "data/all.csv", read(ws, "data/all.csv") + read(ws, "data/new_rows.csv")
                                .split("\n", 1)[1])),
]  # fmt: skip
