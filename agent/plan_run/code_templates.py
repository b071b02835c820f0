"""The code a python step's request asks the model to complete: omx's first and last lines, the model's ``result``.

Left to write a step's code whole, the 0.5B model printed nothing, wrote files the next step then overwrote, or took
INPUT for a file name; given a template to complete, it filled in ``result`` right for counting, sorting,
upper-casing and replacing. The template fits what the step is given:

- a text (``INPUT``): ``text`` and ``lines``, and ``words`` where the task speaks of words;
- a text that parses as JSON, or a YAML or CSV file's text: the data parsed (``data``, or ``rows`` for CSV), with a
  comment that says its shape (the keys, the header row), and a print line that writes a dict back as JSON and rows
  back as CSV. Given only the text, the 0.5B model kept the JSON's lines that held a name, brackets and all, and
  "converted" YAML to JSON by printing the YAML;
- files the code reads itself: their paths and texts;
- a folder's files (``folder_files``): each one's path, size and date, and today's date, as data.

The head (what the step is given) and the last line (how ``result`` is printed) are omx's: the model fills in
``result``. ``with_template_lines`` puts back a head line whose name the code reads and nowhere defines, and makes a
last print of ``result`` (or none at all, after ``result`` is set) the template's print line. None of this judges
what the code computes: the sandbox runs it and the task's checks judge the file.
"""

from __future__ import annotations

import ast
import builtins
import configparser
import csv
import io
import json
import os
import re
import symtable
import tomllib
from dataclasses import dataclass, replace
from typing import Any

import yaml

__all__ = ["MOST_PARSED", "PRINT_LINE", "TEMPLATE", "WORDS_TEMPLATE", "Template", "data_template", "files_template"]
__all__ += ["template_for_text", "text_template", "undefined_names", "with_last_value_printed", "with_print_line"]
__all__ += ["folder_template", "read_before_set", "with_template_lines"]

#: the names code may use without defining them: the builtins and the step's input (``tools.python.BOOT``)
GIVEN = frozenset(dir(builtins)) | {"INPUT", "__file__", "__name__"}
#: the last line of a template for text: a list is printed as lines, not as a Python list
PRINT_LINE = 'print("\\n".join(map(str, result)) if isinstance(result, list) else result)'
#: how the JSON and CSV templates print ``result``: a dict, or a list that holds dicts, as JSON, else as text lines
_AS_JSON = (
    "json.dumps(result, indent=2, default=str) if isinstance(result, dict) or isinstance(result, list) and "
    'any(isinstance(x, {kinds}) for x in result) else "\\n".join(map(str, result)) if isinstance(result, list) '
    "else result"
)
#: the last line where the data is JSON or YAML: a list of lists is JSON too
_JSON_PRINT = f"print({_AS_JSON.format(kinds='(dict, list)')})"
#: the last line where the data is CSV rows: a list of rows is written as CSV
_CSV_PRINT = (
    'csv.writer(sys.stdout, lineterminator="\\n").writerows(result) if isinstance(result, list) and '
    f"all(isinstance(r, (list, tuple)) for r in result) else print({_AS_JSON.format(kinds='dict')})"
)
#: the last line where ``result`` answers a question yes or no
_YES_OR_NO_PRINT = 'print(result if isinstance(result, str) else "yes" if result else "no")'
_PLAIN = "a str, a number, or a list of lines"
_DATA = "data to write as JSON (a dict or a list of dicts)"
#: the most of a data file omx parses to offer the parsed data (a bigger one gets the text template)
MOST_PARSED = 1_000_000
_WORDS = re.compile(r"\bwords?\b", re.IGNORECASE)
#: calls that put a result somewhere: code that makes none of them and sets ``result`` gets the print line
_OUTPUT_CALLS = frozenset({"print", "write", "writelines", "writerow", "writerows", "dump"})


@dataclass(frozen=True)
class Template:
    """The lines of a template: ``head`` defines what the code works on (``names``), the model completes the line
    that computes ``result`` (``what`` it may be), ``print_line`` prints it; ``given_input``: the head reads INPUT,
    so code must too; ``replaces``: the file INPUT is the text of, which the output replaces whole."""

    head: tuple[str, ...]
    names: str
    what: str
    print_line: str
    given_input: bool = True
    replaces: str | None = None

    @property
    def fill(self) -> str:
        """The line the model completes."""
        if self.replaces is not None:
            changed = f"the whole new text of {self.replaces} (its lines, changed as the task asks)"
            return f"result = ...  # {changed}, from {self.names}"
        return f"result = ...  # computed from {self.names}: {self.what}"

    def text(self) -> str:
        """The template as the request shows it, in a fenced block."""
        return "```python\n" + "\n".join([*self.head, self.fill, self.print_line]) + "\n```"

    def answering_yes_or_no(self) -> Template:
        """This template for code that answers a question yes or no: ``result`` is True or False, printed as yes or
        no (a str as it is: "no" is no yes) (``yes_or_no``)."""
        return replace(self, what="True or False, the answer to the question", print_line=_YES_OR_NO_PRINT)

    def in_place(self, path: str) -> Template:
        """This template for code whose output replaces ``path``, the file INPUT is the text of: ``result`` is that
        file's whole new text. Told only how to compute it, the 0.5B model set ``result = ['bread']`` for "Append
        the line 'bread' to data/list.txt", which replaced the list; told this, ``lines + ['bread']``."""
        return replace(self, replaces=path)


def text_template(words: bool = False) -> Template:
    """The template for a text: ``text``, ``lines`` and, with ``words``, ``words``. The 0.5B model counted a
    sentence's words as ``len(lines)`` without ``words``; with it everywhere, it replaced a word word by word."""
    head = ("text = INPUT", "lines = text.splitlines()", *(("words = text.split()",) if words else ()))
    names = "text, lines or words" if words else "text or lines"
    return Template(head, names, _PLAIN, PRINT_LINE)


TEMPLATE = text_template().text()
WORDS_TEMPLATE = text_template(words=True).text()


def template_for_text(task: str, path: str | None, text: str | None) -> Template:
    """The template for code given ``text`` as INPUT, read from ``path`` (None: not a file's text): the data's
    where it parses, else the text's."""
    data = data_template(path, text) if text is not None else None
    return data or text_template(words=_WORDS.search(task) is not None)


def data_template(path: str | None, text: str) -> Template | None:
    """The template that gives the code ``text`` parsed: JSON (any text that is a JSON object or array), YAML (a
    ``.yaml``/``.yml`` file that is a mapping or a list), TOML (a ``.toml`` file), INI (an ``.ini`` or ``.cfg`` file
    of sections), CSV (a ``.csv``/``.tsv`` file of two columns or more); None where it is none of these."""
    if len(text) > MOST_PARSED or not text.strip():
        return None
    suffix = os.path.splitext(path or "")[1].lower()
    parsed = _parsed(text, suffix)
    if parsed is not None:
        module, loads, value = parsed
        head = (f"import {module}", "import json") if module != "json" else ("import json",)
        return Template((*head, f"data = {loads}  # {_shape(value)}"), "data", f"{_PLAIN}, or {_DATA}", _JSON_PRINT)
    if suffix in (".csv", ".tsv"):
        return _csv_template(text, "\t" if suffix == ".tsv" else ",")
    if suffix in (".ini", ".cfg") and (sections := _ini_sections(text)):
        ini = ("import configparser", "import json", "config = configparser.ConfigParser(interpolation=None)",
                "config.read_string(INPUT)", "data = {name: dict(config[name]) for name in config.sections()}  # "
                f"{_shape(sections)}, each a dict of str")  # fmt: skip
        return Template(ini, "data", f"{_PLAIN}, or {_DATA}", _JSON_PRINT)
    return None


def _ini_sections(text: str) -> dict[str, dict[str, str]] | None:
    """The sections of ``text`` read as an INI file, each a dict of its keys' values; None where it is none (the
    1.5B model, given an INI file as text, wrote a port's host for its port)."""
    config = configparser.ConfigParser(interpolation=None)
    try:
        config.read_string(text)
    except configparser.Error:
        return None
    return {name: dict(config[name]) for name in config.sections()}


def _parsed(text: str, suffix: str) -> tuple[str, str, Any] | None:
    """The module, the call and the value of ``text`` parsed as JSON, YAML (a dict or a list) or TOML (a ``.toml``
    file: the 1.5B model, given a server's TOML config as text, took "the 4th line" for its port), or None."""
    try:
        value = json.loads(text)
        if isinstance(value, dict | list):
            return "json", "json.loads(INPUT)", value
    except ValueError:
        pass
    if suffix == ".toml":
        try:
            return "tomllib", "tomllib.loads(INPUT)", tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return None
    if suffix not in (".yaml", ".yml"):
        return None
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return ("yaml", "yaml.safe_load(INPUT)", value) if isinstance(value, dict | list) else None


def _csv_template(text: str, delimiter: str) -> Template | None:
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:
        return None
    if len(rows) < 2 or len(rows[0]) < 2:
        return None
    given = "" if delimiter == "," else f", delimiter={delimiter!r}"
    head = ("import csv", "import io", "import json", "import sys",
            f"rows = list(csv.reader(io.StringIO(INPUT){given}))  # rows[0] is the header row: "
            f"{_cut(repr(rows[0]))}; every cell is a str")  # fmt: skip
    rows_as_csv = "a list of rows (lists of cells) to write as CSV"
    return Template(head, "rows", f"a str, a number, {rows_as_csv}, or {_DATA}", _CSV_PRINT)


def _shape(value: Any) -> str:
    """A short description of parsed data: its type, its length, the keys of a dict or of a list's first dict."""
    if isinstance(value, dict):
        return f"a dict with the keys {_keys(value)}" if value else "an empty dict"
    items = f"{len(value)} item{'s' if len(value) != 1 else ''}"
    first = value[0] if value else None
    if isinstance(first, dict) and all(isinstance(item, dict) for item in value):
        return f"a list of {len(value)} dicts, the first with the keys {_keys(first)}"
    kinds = sorted({type(item).__name__ for item in value})
    return f"a list of {items}" + (f" ({', '.join(kinds)})" if kinds else "")


def _keys(value: dict[Any, Any]) -> str:
    return _cut(", ".join(repr(key) for key in value))


def _cut(text: str, most: int = 120) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


def files_template(paths: list[str]) -> Template:
    """The template for code that reads ``paths`` itself: their texts, and their lines file after file."""
    head = (
        f"paths = {paths!r}",
        'texts = [open(path, encoding="utf-8").read() for path in paths]',
        "lines = [line for text in texts for line in text.splitlines()]  # the files' lines, file after file",
    )
    return Template(head, "texts (one per path, in that order) or lines", _PLAIN, PRINT_LINE, given_input=False)


def folder_template(folder: str, files: list[dict[str, str | int]], more: bool, today: str) -> Template:
    """The template for code given the files of ``folder`` as data (``folder_files``; ``more``: there were more than
    it lists) and ``today`` (``YYYY-MM-DD``): names, sizes and dates need no file read; a file's text, where the
    task needs it, is read by its path."""
    listed = "".join(f"\n    {entry!r}," for entry in files)
    cut = f" (the first {len(files)})" if more else ""
    head = (
        f"folder = {folder!r}",
        f"today = {today!r}  # today's date, YYYY-MM-DD",
        f"# every file under {folder}{cut}: its path from here (open it by that path), its name, its size in bytes and"
        f" the date it was last modified (YYYY-MM-DD)\nfiles = [{listed}\n]",
    )
    names = "files (a dict for each file: path, name, size, modified) and today"
    return Template(head, names, _PLAIN, PRINT_LINE, given_input=False)


def undefined_names(code: str) -> set[str] | None:
    """The module-level names ``code`` reads and nowhere defines, builtins and INPUT aside (None: it does not
    compile). Names are resolved by Python's own symbol tables: a name bound anywhere at module level (assigned,
    imported, a def, a loop variable) counts as defined."""
    try:
        table = symtable.symtable(code, "<step>", "exec")
    except (SyntaxError, ValueError):
        return None
    defined = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    return _globals_read(table) - defined - GIVEN


def read_before_set(code: str) -> set[str]:
    """The names a top-level statement of ``code`` reads where no statement before it, nor a template name
    (``GIVEN``), has set them, though the code sets them later or in that statement: each is a NameError when it
    runs. The 0.5B model completed a template with ``result = "\\n".join(result) if isinstance(result, list) else
    result``. Names bound inside a compound statement (a loop, an ``if``, a ``with``) count as set from its first
    line, so only straight-line misuse is found; code that does not parse gives none."""
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError):
        return set()
    bound: set[str] = set()
    early: set[str] = set()
    for statement in body:
        simple = not isinstance(statement, _COMPOUND)
        stored = _stored(statement)
        if not simple:
            bound |= stored
        early |= {name for name in _loaded(statement) if name not in bound and name not in GIVEN}
        bound |= stored
    return early & bound


#: statements whose own lines may bind a name before another of their lines reads it
_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef, ast.Match)  # fmt: skip
#: expressions with a scope of their own: only the first iterable is read where they stand
_SCOPED = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _loaded(node: ast.AST) -> set[str]:
    """The names ``node`` reads in its own scope: a comprehension's first iterable, no lambda or function body."""
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) else set()
    if isinstance(node, _SCOPED):
        return _loaded(node.generators[0].iter)
    if isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return set()
    return set().union(*(_loaded(child) for child in ast.iter_child_nodes(node)))


def _stored(node: ast.AST) -> set[str]:
    """The names ``node`` binds in its own scope (assignments, imports, loop targets, a def's or class's name)."""
    names: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
        elif isinstance(child, ast.Import | ast.ImportFrom):
            names |= {alias.asname or alias.name.split(".")[0] for alias in child.names}
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(child.name)
    return names


def _globals_read(table: symtable.SymbolTable) -> set[str]:
    """The module-level names ``table`` and the scopes inside it read."""
    module = table.get_type() == "module"
    read = {s.get_name() for s in table.get_symbols() if s.is_referenced() and (module or s.is_global())}
    for child in table.get_children():
        read |= _globals_read(child)
    return read


def with_template_lines(code: str, template: Template) -> str:
    """``code`` with the template's own lines (see the module): its print line last, and where the code reads a
    name the head defines and the code nowhere does, the head up to that name's line first (``data =
    json.loads(INPUT)`` comes with ``import json``). Code that does not parse is left as it is."""
    code = with_print_line(code, template.print_line)
    missing = undefined_names(code)
    needed = [i for i, line in enumerate(template.head) if missing and _defines(line) & missing]
    return "\n".join([*template.head[: max(needed) + 1], code]) if needed else code


def _defines(line: str) -> set[str]:
    """The names one line of a template binds (an import, an assignment)."""
    names: set[str] = set()
    for node in ast.parse(line).body:
        if isinstance(node, ast.Import):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return names


def with_print_line(code: str, print_line: str = PRINT_LINE) -> str:
    """``code`` whose last statement, a print of ``result``, is ``print_line``; code that sets ``result`` and
    prints or writes nothing gets ``print_line`` after it. The 0.5B model wrote the line back as
    ``print("\\n".join(map(str, result)))``, which fails on the number a count makes, or left it out. Other code,
    or code that does not parse, is left as it is."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code
    body = tree.body
    last = body[-1] if body else None
    if last is None:
        return code
    calls = {_called(node) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    if not calls & _OUTPUT_CALLS and _sets_result(body):
        return f"{code.rstrip()}\n{print_line}"
    if not (isinstance(last, ast.Expr) and "print" in {_called(n) for n in ast.walk(last) if isinstance(n, ast.Call)}):
        return code
    if not any(isinstance(node, ast.Name) and node.id == "result" for node in ast.walk(last)):
        return code
    lines = code.splitlines()
    return "\n".join([*lines[: last.lineno - 1], print_line, *lines[last.end_lineno or last.lineno :]])


def with_last_value_printed(code: str) -> str:
    """``code`` whose last statement, an expression that is not a print, has its value printed unless it is None,
    as a REPL shows it: a program asked to print its answer ended in ``count(INPUT)`` and printed nothing. Code
    that prints and writes nothing and ends by assigning one name (``count = text.count('sea')``) has that name's
    value printed after it the same way. Other code, or code that does not parse, is left as it is."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code
    last = tree.body[-1] if tree.body else None
    calls = {_called(node) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    if isinstance(last, ast.Assign | ast.AnnAssign) and not calls & _OUTPUT_CALLS:
        targets = _targets(last)
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            name = targets[0].id
            return f"{code.rstrip()}\nif {name} is not None:\n    print({name})"
        return code
    if not isinstance(last, ast.Expr) or (isinstance(last.value, ast.Call) and _called(last.value) == "print"):
        return code
    segment = ast.get_source_segment(code, last.value)
    if segment is None or isinstance(last.value, ast.Constant):
        return code
    lines = code.splitlines()
    shown = [f"_value = ({segment})", "if _value is not None:", "    print(_value)"]
    return "\n".join([*lines[: last.lineno - 1], *shown, *lines[last.end_lineno or last.lineno :]])


def _sets_result(body: list[ast.stmt]) -> bool:
    """Whether a module-level statement of ``body`` assigns ``result``."""
    return any(
        isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
        and any(isinstance(t, ast.Name) and t.id == "result" for t in _targets(node))
        for node in body
    )


def _targets(node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
