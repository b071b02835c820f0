"""The template a python step's code request gives the model, end to end through the real ``omx`` command with a
scripted model, the real step sandbox and real files: a JSON, YAML or CSV input is given to the code parsed (its
shape said), files the code reads itself are given by their paths, and a reply that fills in only ``result`` gets
the template's own lines back."""

# ruff: noqa: F811  (the ``script`` fixture is imported and requested by name)

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.code_templates import (
    PRINT_LINE,
    data_template,
    text_template,
    with_last_value_printed,
    with_template_lines,
)
from agent.plan_run.task_reading import READING_SCHEMA_TITLE
from tests.e2e.conftest import script  # noqa: F401  (the scripted model in the CLI)
from tests.e2e.helpers import omx

USERS = '[{"name": "ada", "id": 1}, {"name": "bob", "id": 2}, {"name": "cy", "id": 3}]\n'
SETTINGS = "name: desk\nport: 8080\nflags:\n  - quiet\n  - fast\n"
ORDERS = "id,who,state\n1,ann,open\n2,bo,closed\n3,cy,open\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    files = {"data/users.json": USERS, "data/settings.yaml": SETTINGS, "data/orders.csv": ORDERS,
             "data/a.txt": "x\ny\n", "data/b.txt": "z\n"}  # fmt: skip
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def exact(inputs: list[str], output: str) -> dict[str, Any]:
    read = {"inputs": inputs, "outputs": [output], "from_input": True, "kind": "exact", "shape": "lines",
            "count": None, "max_words": None}  # fmt: skip
    return {"for": READING_SCHEMA_TITLE, "content": json.dumps(read)}


def code_request(model: ScriptedModel) -> str:
    (asked,) = [text for r in model.requests if "Complete this code" in (text := r["messages"][1]["content"])]
    return asked


def test_json_is_given_parsed_with_its_shape(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    model = script(exact(["data/users.json"], "out/who.txt"), 'result = [user["name"] for user in data]')
    result = omx("Put the name of each user of data/users.json on a line of its own in out/who.txt", "--yes",
                 input="y\n")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "who.txt").read_text(encoding="utf-8") == "ada\nbob\ncy\n"
    assert "data = json.loads(INPUT)  # a list of 3 dicts, the first with the keys 'name', 'id'" in code_request(model)


def test_yaml_is_given_parsed_and_a_dict_is_printed_as_json(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    model = script(exact(["data/settings.yaml"], "out/settings.json"), "result = data")
    result = omx("Turn data/settings.yaml into JSON in out/settings.json", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    written = json.loads((ws / "out" / "settings.json").read_text(encoding="utf-8"))
    assert written == {"name": "desk", "port": 8080, "flags": ["quiet", "fast"]}
    assert "data = yaml.safe_load(INPUT)  # a dict with the keys 'name', 'port', 'flags'" in code_request(model)


def test_toml_is_given_parsed(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Given a server's TOML config as text, the 1.5B model took "the 4th line" for its port."""
    (ws / "data" / "server.toml").write_text('[server]\nhost = "0.0.0.0"\nport = 8642\n\n[dev]\nport = 8000\n')
    model = script(exact(["data/server.toml"], "out/port.txt"), "result = data['server']['port']")
    result = omx("What port does the server use in data/server.toml? Write it to out/port.txt", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "port.txt").read_text(encoding="utf-8") == "8642\n"
    assert "data = tomllib.loads(INPUT)  # a dict with the keys 'server', 'dev'" in code_request(model)


def test_ini_is_given_parsed(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    """Given an INI config as text, the 1.5B model wrote the server's host for its port."""
    (ws / "data" / "app.ini").write_text("[server]\nhost = shop.local\nport = 8443\n\n[db]\nname = orders\n")
    model = script(exact(["data/app.ini"], "out/port.txt"), "result = data['server']['port']")
    result = omx("Which port does data/app.ini use? Put just the number in out/port.txt", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "port.txt").read_text(encoding="utf-8") == "8443\n"
    asked = code_request(model)
    assert "data = {name: dict(config[name]) for name in config.sections()}  # a dict with the keys 'server', 'db'" in (
        asked
    )


def test_csv_is_given_as_rows_and_rows_are_printed_as_csv(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    fill = 'result = [rows[0]] + [row for row in rows[1:] if row[2] == "open"]'
    model = script(exact(["data/orders.csv"], "out/open.csv"), fill)
    result = omx("Write the rows of data/orders.csv whose state is open, header first, to out/open.csv", "--yes",
                 input="y\n")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "open.csv").read_text(encoding="utf-8") == "id,who,state\n1,ann,open\n3,cy,open\n"
    assert "rows[0] is the header row: ['id', 'who', 'state']" in code_request(model)


def test_files_the_code_reads_itself_are_given_by_their_paths(ws: Path, script: Callable[..., ScriptedModel]) -> None:
    model = script(exact(["data/a.txt", "data/b.txt"], "out/ab.txt"), "result = lines")
    result = omx("Write the lines of data/a.txt, then those of data/b.txt, into out/ab.txt", "--yes", input="y\n")
    assert result.exit_code == 0, result.output
    assert (ws / "out" / "ab.txt").read_text(encoding="utf-8") == "x\ny\nz\n"
    assert "paths = ['data/a.txt', 'data/b.txt']" in code_request(model)


@pytest.mark.parametrize(
    ("code", "made"),
    [
        ("result = len(lines)", f"text = INPUT\nlines = text.splitlines()\nresult = len(lines)\n{PRINT_LINE}"),
        ("result = text.upper()", f"text = INPUT\nresult = text.upper()\n{PRINT_LINE}"),
        ("text = INPUT\nresult = text[:3]\nprint(result)", f"text = INPUT\nresult = text[:3]\n{PRINT_LINE}"),
        ("print(INPUT.upper())", "print(INPUT.upper())"),  # no result: the model's own code
        ("result = (", "result = ("),  # does not parse: asked again with its problem
    ],
)
def test_a_reply_gets_the_template_s_own_lines_back(code: str, made: str) -> None:
    assert with_template_lines(code, text_template()) == made


def test_only_data_that_parses_is_given_parsed() -> None:
    assert data_template("data/a.json", "not json at all") is None
    assert data_template("data/notes.txt", "name: desk\n") is None  # YAML only where the file says it is
    assert data_template("data/a.toml", "port = = 1\n") is None  # TOML that does not parse
    assert data_template("data/a.ini", "port = 1\n") is None  # INI without a section
    assert data_template("data/a.cfg", "[a]\n= x\n") is None  # INI that does not parse
    assert data_template("data/one.csv", "just one column\nof text\n") is None
    table = data_template("data/t.tsv", "a\tb\n1\t2\n")
    assert table is not None and "delimiter='\\t'" in table.text()


@pytest.mark.parametrize(
    ("code", "made"),
    [
        ("n = 3\nlen(INPUT) + n", "n = 3\n_value = (len(INPUT) + n)\nif _value is not None:\n    print(_value)"),
        ("print(len(INPUT))", "print(len(INPUT))"),  # printed already
        ("x = len(INPUT)", "x = len(INPUT)\nif x is not None:\n    print(x)"),  # a name assigned last, nothing printed
        ("x: int = len(INPUT)", "x: int = len(INPUT)\nif x is not None:\n    print(x)"),
        ("print(1)\nx = 2", "print(1)\nx = 2"),  # something printed: as it is
        ("a, b = 1, 2", "a, b = 1, 2"),  # not one name
        ("x = 1\nx += 1", "x = 1\nx += 1"),  # no assignment last
        (
            "def f():\n    print(1)\nf()",
            "def f():\n    print(1)\n_value = (f())\nif _value is not None:\n    print(_value)",
        ),
    ],
)
def test_a_program_s_last_expression_is_printed_as_a_repl_shows_it(code: str, made: str) -> None:
    assert with_last_value_printed(code) == made
