"""A name in code renamed where the task says so, planned by omx whatever the model read: ``rename_plan``.

"rename fmt_ticket to format_ticket_label in tools/labels.py pls": the 1.5B model read a file to move, and its own
plan opened the file in ``nano``; "Rename the low_stock function in inventory.py to parts_to_reorder and update
report.py and reorder.py, which import it": several files to edit, which a small model does not plan. Where the task
renames one name (``rename X to Y``, ``rename the X function ... to Y``, ``change the name of X ... to Y``, ``X should
be called Y``; X and Y names as code writes them, X no path of the workspace) and X stands as a name in code files it
names, or in those of a folder it names, omx plans the edit of each such file that holds X itself
(``each_file_plan.in_place_plan``): Python files by their names (``rename_in_python``: a string or a comment that says
X stays as it is), files of other code whole word by whole word (``replace_names``). Where the task also says the
places that use X ("update every place that calls it", "everywhere", "the files that import it"), the workspace's other
code files of the same kinds that hold X are edited too.

Nothing checks that the task asks for that rename (omx's reading of its words): the run is "done", never "success".
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from pathlib import Path

from agent.plan_run.each_file_plan import MOST_EACH, editable_file, in_place_plan
from agent.plan_run.folder_files import folder_files
from agent.plan_run.plan import Plan
from agent.plan_run.task_reading import named_paths
from agent.plan_run.text_operations import TextOperation

__all__ = ["rename_plan", "renamed_name"]

#: the extensions of files of code, whose names a task renames
CODE_FILES = frozenset(
    {".py", ".js", ".ts", ".jsx", ".tsx", ".java", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".go", ".rs", ".rb",
     ".php", ".swift", ".kt", ".scala", ".lua", ".sh", ".pl", ".r"}
)  # fmt: skip
#: the words that ask a name be renamed, and what is said up to its new name ("to", "as")
_RENAME = re.compile(
    r"\b(?:rename|change\s+the\s+name\s+of)\s+(?P<old>(?:[^.;:!?\n]|[.:](?=\w))*?)\s+(?:to|as|into)\s+`?(?P<new>[A-Za-z_]\w*)\b",
    re.IGNORECASE,
)
#: a name said to get another: "unit_price should be called price_of", "calc must be renamed to compute"
_CALLED = re.compile(
    r"`?(?P<old>[A-Za-z_]\w*)`?(?:\(\))?\s+(?:should|must|needs?\s+to|has\s+to)\s+be\s+"
    r"(?:called|named|renamed(?:\s+to)?)\s+`?(?P<new>[A-Za-z_]\w*)\b(?![./]\w)",
    re.IGNORECASE,
)
#: the words around a name that say what kind of name it is, and words that say nothing of which one
_KINDS = frozenset({"function", "method", "variable", "class", "constant", "const", "field", "attribute", "var"})
_FILLERS = frozenset({"the", "a", "an", "in", "of", "from", "inside", "def", "name", "named", "called", "module"})
_NAME = re.compile(r"[A-Za-z_]\w*")
#: words before "should be called" that name no name of code
_NO_NAME = frozenset({"it", "this", "that", "file", "folder", "directory", "output", "result", "one"})
#: the words that ask the places that use the name changed too
_ITS_USES = re.compile(
    r"\beverywhere\b|\bevery\s+(?:place|file|caller|call|use|reference)|\ball\s+(?:the\s+)?(?:places|callers|calls|"
    r"uses|references|files)\b|\bcall(?:er)?s?\s+(?:of\s+)?it\b|\bcalls\b|\bcallers\b|\bimports?\s+it\b|"
    r"\bimport\s+(?:it|them)\b|\buses?\s+it\b|\bwherever\b",
    re.IGNORECASE,
)


def renamed_name(task: str) -> tuple[str, str] | None:
    """The name ``task`` renames and its new name ("rename the price() function in pricing.py to unit_price":
    price, unit_price), where it says one rename of one name to another; else None."""
    found = list(_RENAME.finditer(task))
    if not found and len(called := list(_CALLED.finditer(task))) == 1:
        old, new = called[0].group("old"), called[0].group("new")
        return (old, new) if old != new and not {old.lower(), new.lower()} & (_KINDS | _FILLERS | _NO_NAME) else None
    if len(found) != 1:
        return None
    said, new = found[0].group("old"), found[0].group("new")
    words = [word.strip("`'\"()") for word in said.split() if word not in named_paths(said)]
    names = [word for word in words if _NAME.fullmatch(word) and word.lower() not in _FILLERS]
    kinds = [n for n, word in enumerate(names) if word.lower() in _KINDS]
    named = [word for word in names if word.lower() not in _KINDS]
    if len(kinds) == 1 and kinds[0] < len(names) - 1:  # "the Ticket method calc_total": the name after the kind
        named = [names[kinds[0] + 1]]
    if len(named) != 1 or named[0] == new or new.lower() in _KINDS:
        return None
    return named[0], new


def rename_plan(task: str, workspace: Path, by: str) -> Plan | None:
    """The plan that renames the name ``task`` renames in the code files that hold it (see the module), each step
    saying ``by``; None where the task renames no name of code files there."""
    rename = renamed_name(task)
    if rename is None:
        return None
    old, new = rename
    if (workspace / old).exists() or any(os.path.basename(p.rstrip("/")) == old for p in named_paths(task)):
        return None  # a file or a folder of that name: a move
    named = _code_files(workspace, named_paths(task))
    if not named:
        return None
    kinds = {os.path.splitext(path)[1].lower() for path in named}
    others = _code_files(workspace, ["./"], kinds) if _ITS_USES.search(task) else []
    files = [path for path in dict.fromkeys([*named, *others]) if _holds_name(workspace / path, old)]
    if not files or len(files) > MOST_EACH:
        return None
    edits = [(path, _renaming(path, old, new)) for path in files]
    return in_place_plan(task, workspace, edits, by, lambda _: "(omx's code of the rename the task says)")


def _renaming(path: str, old: str, new: str) -> TextOperation:
    python = os.path.splitext(path)[1].lower() == ".py"
    return TextOperation(op="rename_in_python" if python else "replace_names", text=old, new_text=new)


def _code_files(workspace: Path, named: list[str], kinds: frozenset[str] | set[str] = CODE_FILES) -> list[str]:
    """The code files (of the extensions ``kinds``) among ``named`` and in the folders it names, each one omx edits
    in place (``each_file_plan.editable_file``); hidden files and folders aside."""
    files: list[str] = []
    for name in named:
        if name.endswith("/"):
            listed = folder_files(workspace, name)
            entries = [str(entry["path"]) for entry in listed[0]] if listed is not None else []
            files += [path for path in entries if not any(part.startswith(".") for part in Path(path).parts)]
        else:
            files.append(os.path.normpath(name))
    return [path for path in files if os.path.splitext(path)[1].lower() in kinds and editable_file(workspace, path)]


def _holds_name(path: Path, name: str) -> bool:
    """Whether ``path`` holds ``name`` as a name: a Python file, as a token of its own (a file that does not parse,
    as a whole word); another file, as a whole word."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() == ".py":
        try:
            return any(t.type == tokenize.NAME and t.string == name for t in _tokens(text))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            pass
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(text).readline))
