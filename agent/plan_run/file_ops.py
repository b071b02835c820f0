"""The file operations a task asks for, as the model read them, held against the workspace and the task's words.

The model reads a task of kind command (files moved, renamed, copied, deleted, organised into folders) as a list
of operations (``task_reading.read_operations``): an action, a source among the workspace's paths, a target. omx
acts on them (``file_ops_plan``) only where nothing contradicts them (``agreed_operations``):

- each source is there (a make_dir has none), reached through real directories; no source is acted on twice or
  lies in another one; none is omx's run records;
- each target is a new path inside the workspace, through real directories, not onto or into its own source nor
  into another source, and no two share one; a target that is a directory there means into it under the source's
  own name, as ``mv`` reads it, and so does one written as a folder (a final '/' in the reading or the task) for a
  file; a folder given a path that is not there is renamed to it, as ``mv`` does; a folder is not moved or
  copied to a name with a file extension, nor a file with one to a name without;
- where the task states a rule over the files of the one folder it names (sorted into a folder for each type or
  year, renamed by a prefix or to lower case, those older than a span it says moved into a folder it names,
  gathered by how their names start into the folder it says after each start), the operations are the rule's,
  made from the folder's files, not the model's list, whatever kind of task the model read (a new folder the task
  names as an example of the rule's, "e.g. invoices/2023/", is one of them; a kind of file named where files are
  sorted by type is one of the types);
- a file moved into another folder keeps its name unless the task says the new one; where the task names a kind of
  file (an extension or format, a word the names hold) and the model moves files of that kind out of a folder, every
  file of that kind there, and in the folders the task names, goes the same way;
- where the task names the new folders, no other is made or moved into: the other operations are dropped;
- the task's own paths agree: each path it names that is there is a source, holds one or is where a target goes;
  each it names that is not there is a target, a target's folder or a target's name; each source is a path the
  task names or lies in a folder it names (where it names no path at all, the choice is the reading's).

After the run each operation is checked on the files themselves (``operation_checks``): a moved source is gone and
its target holds what the source held before the run, a copy's target holds it and its source is unchanged, a
deleted path is gone, a folder made is there. Where the task names an operation's paths itself, that check is of
what the task asked for. Where the model chose them (the largest file, the files of one client, each file of a
folder), which paths the task means is the model's reading alone: a criterion says so, not checked, and the run is
done, never a success on that choice.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from agent.plan_run.criteria import CriterionCheck, CriterionStatus
from agent.plan_run.folder_files import extensions, files_in
from agent.plan_run.operation_fitting import earlier_day
from agent.plan_run.task_reading import Action, FileOperation, TaskReading, has_extension, named_paths
from agent.plan_run.tools.path_tools import records_path, records_problem

__all__ = ["TOO_LARGE", "Operation", "agreed_operations", "operation_checks", "state"]

#: the state of a tree too large to compare: its operation is not checked
TOO_LARGE = "too large"
#: the most entries of a directory, and bytes of its files, read for its state
MAX_ENTRIES = 2000
MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Operation:
    """One operation omx acts on; paths relative to the workspace and normalised (``''``: none)."""

    action: Action
    source: str
    target: str
    before: str | None = None  # the source's ``state`` before the run
    named: bool = False  # the task names its paths itself: its check is of what the task asked for

    @property
    def text(self) -> str:
        """What it does, in a few words: ``data/a.txt moved to old/a.txt``."""
        if self.action == "delete":
            return f"{self.source} deleted"
        if self.action == "make_dir":
            return f"the folder {self.target} made"
        return f"{self.source} {'moved' if self.action == 'move' else 'copied'} to {self.target}"

    def record(self) -> dict[str, str]:
        return {"action": self.action, "source": self.source, "target": self.target}


def agreed_operations(task: str, workspace: Path, reading: TaskReading | None) -> tuple[Operation, ...]:
    """The operations of ``reading`` omx acts on, each with its source's state now; none where anything contradicts
    them (see the module) or the model read the task as one that does not act on files."""
    if reading is None:
        return ()
    root = workspace.resolve()
    folders = {_normal(name) for name in named_paths(task) if name.endswith("/")}  # the task writes them as folders
    ruled = (_sorted_into_folders(task, root, folders) or _renamed_by_rule(task, root, folders)
             or _older_moved(task, root, folders) or _gathered_by_name_start(task, root, folders))  # fmt: skip
    if not (ruled or reading.acts_on_files):  # a rule the task states over the files there acts on them
        return ()
    listed = ruled or reading.operations
    if not listed:
        return ()
    asked = list(dict.fromkeys((op.action, op.source.strip(), op.target.strip()) for op in listed))
    asked = list(dict.fromkeys(_with_their_own_names(task, asked)))
    operations = [_operation(root, FileOperation(action=a, source=s, target=t), folders) for a, s, t in asked]
    if any(op is None for op in operations):
        return ()
    agreed = [op for op in operations if op is not None]
    if not ruled:  # a rule's folders are those the task asks for, where it names one of them as an example
        agreed = _into_new_folders_named(task, root, agreed)
    # sorted by type, a kind it names is one of the types, an example; gathered by how names start, one of those
    if not (ruled and (_BY_TYPE.search(task) or _NAME_START.search(task))):
        agreed = _of_the_kind_named(task, agreed)
        agreed = _with_every_file_of_the_kind(task, root, agreed, folders)
    agreed = _of_the_names_each_folder_gathers(task, agreed)
    if not agreed or not _apart(agreed) or not _agrees_with_task(task, root, agreed, ruled=bool(ruled)):
        return ()
    named = [_normal(path) for path in named_paths(task)]
    return tuple(replace(op, before=state(root / op.source) if op.source else None, named=_named(op, named))
                 for op in agreed)  # fmt: skip


def _into_new_folders_named(task: str, root: Path, operations: list[Operation]) -> list[Operation]:
    """``operations`` without those that make, or move or copy into, a new folder the task does not name, where it
    names the new folders itself ("acme_ files go in docs/acme/, the globex_ ones in docs/globex/. Leave everything
    else where it is": the 0.5B model also moved docs/readme.txt into a docs/readme/ of its own); where the task
    names no new folder, the folders are the reading's choice."""
    named = [path for path in (_normal(name) for name in named_paths(task)) if path]
    new = [path for path in named if not os.path.lexists(root / path) and not has_extension(path)]
    if not new:
        return operations

    def said(folder: str) -> bool:
        return not folder or os.path.lexists(root / folder) or any(_within(folder, path) for path in new)

    # a folder copied or moved to a new path the task names ("Copy drafts/ to backup/drafts/") is said too
    return [
        op
        for op in operations
        if op.target in new or said(op.target if op.action == "make_dir" else os.path.dirname(op.target))
    ]


def _of_the_kind_named(task: str, operations: list[Operation]) -> list[Operation]:
    """``operations`` without those on a path that is not of the kind of file the task names (``_kind_said``: by
    its extension, "Delete the .tmp files in tmp/": not tmp/keep.txt, nor tmp/ itself; or by a word in the names),
    unless it is a file the task names."""
    named = {_normal(name) for name in named_paths(task) if not name.endswith("/")}
    of_kind = _kind_said(task)
    return [
        op
        for op in operations
        if not op.source or op.source in named or of_kind is None or of_kind(os.path.basename(op.source))
    ]


#: files sorted into a folder for each kind: "by type", "by file extension", "a subfolder per file type", "a
#: subfolder named after its extension"
_BY_TYPE = re.compile(
    r"\bby\s+(?:file\s+)?(?:type|extension|format)s?\b|\b(?:for|per)\s+(?:each\s+|every\s+)?(?:file\s+)?"
    r"(?:type|extension|format)\b|\bafter\s+(?:its|their|the)\s+(?:file\s+)?(?:type|extension|format)s?\b",
    re.IGNORECASE,
)
#: files sorted into a folder for each year: "by year", "by the year in their name", "one folder per year", "year
#: folders"
_BY_YEAR = re.compile(
    r"\bby\s+(?:the\s+)?year\b|\b(?:for|per)\s+(?:each\s+|every\s+)?year\b|\bafter\s+(?:its|their|the)\s+year\b|"
    r"\byear\s+(?:sub)?folders\b",
    re.IGNORECASE,
)
#: a year in a file's name: report_2023_q1.txt
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")


def _sorted_into_folders(task: str, root: Path, folders: set[str]) -> list[FileOperation]:
    """Where the task sorts the files of the one folder it names into a folder for each type (``_BY_TYPE``) or each
    year (``_BY_YEAR``), a move of each file there into the folder named by its extension in lower case
    (``inbox/a.PDF`` into ``inbox/pdf/``), or by the year its name holds (``q/report_2023_q1.txt`` into
    ``q/2023/``; where no name holds one, the year it was last changed): the 0.5B model, asked for "a subfolder
    in it for each file type (pdf, jpg, txt, zip...)", listed the folders to make with the files' own names. None
    otherwise, or where the task names a new path that is not one of those folders (it says where files go: a
    folder of its own, a path outside that folder), not an example of them ("e.g. invoices/2023/"). The folder is
    one the task writes as a folder, or names as one ("my downloads folder"), and is there."""
    folder = _one_folder(task, root, folders)
    by_type, by_year = _BY_TYPE.search(task), _BY_YEAR.search(task)
    if folder is None or not (by_type or by_year):
        return []
    names = files_in(root, folder)
    if by_type:
        kinds = {name: ext[1:].lower() for name in names if (ext := os.path.splitext(name)[1])}
    elif any(_YEAR.search(name) for name in names):
        kinds = {name: year.group() for name in names if (year := _YEAR.search(name))}
    else:
        kinds = {name: str(_changed(root / folder / name).year) for name in names}
    made = {f"{folder}/{kind}" for kind in kinds.values()}
    new = [path for path in map(_normal, named_paths(task)) if not os.path.lexists(root / path)]
    if any(not _within(path, folder) or not (has_extension(path) or path in made) for path in new):
        return []
    return [FileOperation(action="move", source=f"{folder}/{name}", target=f"{folder}/{kind}/")
            for name, kind in kinds.items()]  # fmt: skip


#: a prefix put before the names of a folder's files: "add old_ to the front of every filename", "prefix each file
#: with 2024-"
_PREFIX = re.compile(
    r"\b(?:add|put|prepend|stick)\s+(?P<q>['\"`]?)(?P<prefix>[\w.-]+)(?P=q)\s+(?:to\s+the\s+|at\s+the\s+|in\s+)?"
    r"(?:front|start|beginning)\s+of\s+(?:every|each|all|the)?\s*(?:the\s+)?(?:files?\s*names?|files?|names?)\b|"
    r"\bprefix\s+(?:every|each|all|the)?\s*(?:the\s+)?(?:files?\s*names?|files?|names?)\b.*?\bwith\s+"
    r"(?P<q2>['\"`]?)(?P<prefix2>[\w.-]+?)(?P=q2)(?=[\s.,;:!?]|$)",
    re.IGNORECASE,
)


#: names made lower case: "make all the filenames in inbox/ lowercase", "lower-case the file names", "rename the
#: files in recipes/ so their names are lowercase"
_NAMES_WORD = r"(?:file\s*names?|names\s+of\s+(?:the\s+|all\s+(?:the\s+)?)?files|renam\w*|(?:their|its)\s+names?)"
_LOWER_NAMES = re.compile(
    rf"\b{_NAMES_WORD}\b.*\blower[\s-]?case|\blower[\s-]?case\b.*\b{_NAMES_WORD}\b", re.IGNORECASE
)


def _renamed_by_rule(task: str, root: Path, folders: set[str]) -> list[FileOperation]:
    """Where the task renames the files of the one folder it names by a rule, a move of each of its files to its
    new name in the same folder (those whose name it leaves as it is aside): a prefix put before each name
    (``_PREFIX``: the 0.5B model, asked to "add old_ to the front of every filename in drafts/", listed the moves
    with no target), or the names made lower case (``_LOWER_NAMES``); none otherwise."""
    match = _PREFIX.search(task)
    if match is not None:
        prefix = match.group("prefix") or match.group("prefix2")
        rule: Callable[[str], str] = lambda name: name if name.startswith(prefix) else prefix + name  # noqa: E731
    elif _LOWER_NAMES.search(task):
        rule = str.lower
    else:
        return []
    folder = _one_folder(task, root, folders)
    names = files_in(root, folder) if folder else []
    return [FileOperation(action="move", source=f"{folder}/{name}", target=f"{folder}/{rule(name)}")
            for name in names if rule(name) != name]  # fmt: skip


def _older_moved(task: str, root: Path, folders: set[str]) -> list[FileOperation]:
    """Where the task moves the files of one folder that are older than a span it says ("Anything in reports/ that
    hasn't been modified in over a year should go into reports/archive/": ``operation_fitting.earlier_day``) into one
    new or other folder it names, a move of each file of the first last changed before that day into the second;
    none otherwise."""
    day = earlier_day(task)
    there = [name for name in folders if name and _is_dir(root / name)]
    into = [name for name in folders if name and not os.path.lexists(root / name)]
    if day is None or len(there) != 1 or len(into) != 1:
        return []
    folder = there[0]
    older = [name for name in files_in(root, folder) if _changed(root / folder / name) < day]
    return [FileOperation(action="move", source=f"{folder}/{name}", target=f"{into[0]}/") for name in older]


#: how a task says the start of the names of files it gathers: "files whose names start with acme_", "beginning
#: with 'inv'", "prefixed by draft-", or a start written with its separator ("the cat_ files", "the globex_ ones")
_NAME_START = re.compile(
    r"(?:\b(?:start|begin)\w*\s+with|\bprefixed\s+(?:with|by))\s+(?P<q>['\"`]?)(?P<said>[\w.-]+?)(?P=q)(?=[\s,;:]|$)|"
    r"(?<![\w/.'\"`-])(?P<q2>['\"`]?)(?P<marked>\w[\w.-]*[_-])(?P=q2)\s+(?:files?|ones|documents|invoices|items)\b",
    re.IGNORECASE,
)
#: the folder such files go into, said after their start: "go in docs/acme/", "into records/dogs/"
_INTO_FOLDER = re.compile(r"\b(?:in|into|to|under)\s+(?:the\s+folder\s+)?`?(?P<folder>[\w.-][\w./-]*/)")


def _gathered_by_name_start(task: str, root: Path, folders: set[str]) -> list[FileOperation]:
    """Where the task gathers files by how their names start ("files whose names start with acme_ go in docs/acme/,
    the globex_ ones in docs/globex/"), a move of each file of the folder they are in whose name starts so (case
    aside) into the folder said after that start, before the next start said: the 0.5B model read "Group the
    invoices in docs/ by client: ..." as a text to write and listed no moves. The folder the files are in is the one
    the task names as a folder that is there, else the one folder all the new folders lie in, where it is there;
    none where a start said has no folder after it."""
    starts = list(_NAME_START.finditer(task))
    if not starts:
        return []
    gathered: list[tuple[str, str]] = []
    for n, match in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(task)
        said_into = _INTO_FOLDER.search(task, match.end(), end)
        if said_into is None:
            return []
        gathered.append(((match.group("said") or match.group("marked")).lower(), _normal(said_into.group("folder"))))
    parents = {os.path.dirname(folder) for _, folder in gathered}
    folder = _one_folder(task, root, folders - {into for _, into in gathered})
    if folder is None and len(parents) == 1 and _is_dir(root / next(iter(parents))):
        folder = next(iter(parents))
    if folder is None:
        return []
    moves = []
    for name in files_in(root, folder):
        into = next((into for start, into in gathered if name.lower().startswith(start)), folder)
        if into != folder:
            moves.append(FileOperation(action="move", source=f"{folder}/{name}", target=f"{into}/"))
    return moves


def _one_folder(task: str, root: Path, folders: set[str]) -> str | None:
    """The one folder there that the task writes as a folder, or names as one ("my downloads folder"); else None."""
    there = [name for name in folders | _folders_said(task) if name and _is_dir(root / name)]
    return there[0] if len(there) == 1 else None


def _folders_said(task: str) -> set[str]:
    """The folders ``task`` names as folders without their slash ("my downloads folder", "the folder inbox")."""
    return {_normal(m.group(1) or m.group(2)) for m in _FOLDER_WORD.finditer(task)}


def _changed(path: Path) -> date:
    """The local day ``path`` was last changed (as ``folder_files`` gives a file's date)."""
    return date.fromtimestamp(path.lstat().st_mtime)


#: a folder named as one without its final slash: "my downloads folder", "the folder inbox"
_FOLDER_WORD = re.compile(r"\b([\w.-]+)\s+(?:folder|directory|dir)\b|\b(?:folder|directory)\s+([\w.-]+/?)",
                          re.IGNORECASE)  # fmt: skip


#: words that pick some files of a kind, not all of them: "the largest image", "the 3 newest PDFs", "the first"
_SOME = re.compile(r"\b(?:\d+|largest|smallest|biggest|newest|oldest|latest|earliest|first|last|one|two|three|"
                   r"four|five|few|some\s+of)\b", re.IGNORECASE)  # fmt: skip
#: a kind of file named in the plural: "the pictures", "PDFs", "the .txt files"
_PLURAL_KIND = re.compile(r"\b(?:files|images|pictures|photos|photographs|pics|documents|scripts|[A-Z]{2,5}s)\b")
#: a word the names of the files meant hold: "every file that has 'amazon' in its name", "whose names contain acme"
_NAME_HOLDS = re.compile(
    r"""['"`]([^'"`\s]+)['"`]\s+in\s+(?:its|their|the)\s+(?:file\s*)?names?\b|"""
    r"""\bnames?\s+(?:contains?|containing|includes?|including|with|starts?\s+with|starting\s+with)\s+['"`]?([\w.-]+)""",
    re.IGNORECASE,
)


def _kind_said(task: str) -> Callable[[str], bool] | None:
    """Whether a file's name is of the kind of file the task names, where it names one: by extension or format
    (``folder_files.extensions``), or by a word the names hold (``_NAME_HOLDS``); None where it names none."""
    wanted = extensions(task)
    held = [word.lower() for match in _NAME_HOLDS.finditer(task) if (word := match.group(1) or match.group(2))]
    if not wanted and len(held) != 1:
        return None
    return lambda name: (os.path.splitext(name)[1].lower() in wanted) if wanted else held[0] in name.lower()


def _with_every_file_of_the_kind(
    task: str, root: Path, operations: list[Operation], folders: set[str]
) -> list[Operation]:
    """``operations`` with a move (or copy) of every other file of the kind the task names (``_kind_said``; by
    extension, in the plural: "the pictures", "the PDF files") that lies in a folder they move files of that kind
    from, or a folder the task names, to the one folder they move them into: the 0.5B model, asked to move "the
    pictures mixed in with the other things in stuff/" into images/, listed one of three. Not where the task picks
    some of them ("the largest", "3 of"), the operations do anything else, or a file cannot be moved there
    (``_operation``)."""
    of_kind = _kind_said(task)
    paths = set(named_paths(task))
    words = " ".join(word for word in task.split() if word not in paths)
    plural = _PLURAL_KIND.search(words) or _NAME_HOLDS.search(task)
    if of_kind is None or not plural or _SOME.search(_NAME_HOLDS.sub(" ", words)):
        return operations
    acts = [op for op in operations if op.action != "make_dir"]
    kinds = {(op.action, os.path.dirname(op.target)) for op in acts}
    if len(kinds) != 1 or not all(of_kind(os.path.basename(op.source)) for op in acts):
        return operations
    action, into = kinds.pop()
    named = {name for name in folders if name and name != into and _is_dir(root / name)}
    sources = {os.path.dirname(op.source) for op in acts} | named
    if action not in ("move", "copy") or into in sources:  # a rename in place is no gathering
        return operations
    taken = {op.source for op in acts}
    more = [
        _operation(root, FileOperation(action=action, source=path, target=os.path.join(into, name)), folders)
        for folder in sorted(sources)
        for name in files_in(root, folder)
        if of_kind(name) and (path := os.path.join(folder, name)) not in taken
    ]
    return [*operations, *(op for op in more if op is not None)]


def _with_their_own_names(task: str, asked: list[tuple[Action, str, str]]) -> list[tuple[Action, str, str]]:
    """The operations ``asked`` (action, source, target) whose moves and copies of a file into another folder keep
    the file's name (the target made that folder: into it, under its own name), unless the task says the new name:
    the 0.5B model moved receipts/uber_march.txt to receipts/amazon/amazon_march.txt for "Move every file in
    receipts/ that has 'amazon' in its name into a new folder, receipts/amazon/"."""
    said = {os.path.basename(_normal(path)) for path in named_paths(task)}
    kept = []
    for action, source, target in asked:
        folder, name = os.path.split(_normal(target))
        moved_away = folder and folder != os.path.dirname(_normal(source)) and has_extension(source)
        if action in ("move", "copy") and moved_away and name != os.path.basename(_normal(source)) and name not in said:
            target = f"{folder}/"
        kept.append((action, source, target))
    return kept


def _of_the_names_each_folder_gathers(task: str, operations: list[Operation]) -> list[Operation]:
    """``operations`` without a move or copy of a file the task does not name into a folder whose name the names of
    the other files moved or copied into it hold, where its own name does not: files sorted into folders by what
    their names say ("acme_ files go in docs/acme/, the globex_ ones in docs/globex/. Leave everything else where it
    is": the 0.5B model moved docs/readme.txt into docs/acme/ with the two acme_ files)."""
    named = {_normal(name) for name in named_paths(task) if not name.endswith("/")}
    into: dict[str, list[Operation]] = {}
    for op in operations:
        if op.action in ("move", "copy") and op.source:
            into.setdefault(os.path.dirname(op.target), []).append(op)

    def holds(op: Operation, folder: str) -> bool:
        return os.path.basename(folder).lower() in os.path.basename(op.source).lower()

    strays = {
        id(op)
        for folder, gathered in into.items()
        if os.path.basename(folder) and sum(holds(op, folder) for op in gathered) >= 2
        for op in gathered
        if not holds(op, folder) and op.source not in named
    }
    return [op for op in operations if id(op) not in strays]


def _normal(path: str) -> str:
    """``path`` as a relative, normalised path (``./out//a.txt/`` is ``out/a.txt``); '' where it is none."""
    cleaned = path.strip().strip("`")
    if not cleaned or os.path.isabs(cleaned):
        return ""
    normal = os.path.normpath(cleaned)
    return "" if normal == "." or normal == ".." or normal.startswith("../") else normal


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def _real_dirs(root: Path, path: str) -> bool:
    """Whether every folder above ``path`` that is there is a directory, no symlink (one not there yet is made)."""
    parts = path.split("/")[:-1]
    for n in range(1, len(parts) + 1):
        try:
            mode = os.lstat(root.joinpath(*parts[:n])).st_mode
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if not stat.S_ISDIR(mode):
            return False
    return True


def _operation(root: Path, asked: FileOperation, folders: set[str]) -> Operation | None:
    """``asked`` as an operation omx may do in ``root``, or None where it cannot be one as it stands; ``folders``:
    the paths the task writes as folders (a final '/'), where a move or copy goes into."""
    records = records_path(None)
    source = "" if asked.action == "make_dir" else _normal(asked.source)
    target = "" if asked.action == "delete" else _normal(asked.target)
    if asked.action != "make_dir" and not (source and os.path.lexists(root / source) and _real_dirs(root, source)):
        return None
    if asked.action in ("move", "copy") and target:
        folder, written_as_folder = root / target, asked.target.strip().endswith("/") or target in folders
        # into the folder, under its own name; a folder given a new path is renamed to it, as ``mv`` does
        if _is_dir(folder) or (written_as_folder and not _is_dir(root / source)):
            target = f"{target}/{os.path.basename(source)}"
        if os.path.lexists(root / target) or _within(target, source) or not _same_kind(root, source, target):
            return None
    there = root / target
    if asked.action == "make_dir" and target and os.path.lexists(there) and not _is_dir(there):
        return None  # a folder to make where a file or a link is
    if asked.action != "delete" and (not target or not _real_dirs(root, target)):
        return None
    if any(path and records_problem(path, records) for path in (source, target)):
        return None
    return Operation(asked.action, source, target)


def _is_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _same_kind(root: Path, source: str, target: str) -> bool:
    """Whether ``target``'s name reads as what ``source`` is: a folder's with no file extension, a file's with one
    where the file has one (a folder moved to ``out/list.txt``, or ``a.txt`` to ``archive``, is no such move)."""
    named_as_file = has_extension(target)
    if _is_dir(root / source):
        return not named_as_file
    return named_as_file or not has_extension(source)


def _apart(operations: list[Operation]) -> bool:
    """No path acted on twice: sources differ, none in another, targets differ, none in a source."""
    sources = [op.source for op in operations if op.source]
    targets = [op.target for op in operations if op.target]
    if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
        return False
    nested = any(a != b and _within(a, b) for a in sources for b in sources)
    return not nested and not any(_within(t, s) for t in targets for s in sources)


def _agrees_with_task(task: str, root: Path, operations: list[Operation], *, ruled: bool = False) -> bool:
    """Whether every path the task names is one the operations use, and every source one the task points to
    (where the operations are a rule's, their sources are those of the rule: taken as pointed to)."""
    named = [path for path in (_normal(name) for name in named_paths(task)) if path]
    sources = [op.source for op in operations if op.source]
    targets = [op.target for op in operations if op.target]
    for path in named:
        if os.path.lexists(root / path):
            used = any(_within(p, path) for p in [*sources, *targets])
        else:
            bare = "/" not in path
            used = any(_within(t, path) for t in targets) or (
                bare and any(os.path.basename(p) == path for p in [*sources, *targets])
            )
        if not used:
            return False
    bare_names = {path for path in named if "/" not in path}
    # a folder named as one without its slash ("the inbox folder") is a folder the task points to as well
    pointed = named + [name for name in _folders_said(task) if _is_dir(root / name)]
    return (
        not named
        or ruled
        or all(
            any(_within(source, path) for path in pointed) or os.path.basename(source) in bare_names
            for source in sources
        )
    )


def _named(op: Operation, named: list[str]) -> bool:
    """Whether the task names ``op``'s paths itself: each the path it says, or in a folder it says (a target also
    in its source's folder) under a name it says (a target also under its source's name)."""
    names = {os.path.basename(path) for path in named}

    def says(path: str, folders: set[str], own_names: set[str]) -> bool:
        folder, name = os.path.split(path)
        return path in named or (folder in {*named, *folders} and name in names | own_names)

    if op.action == "make_dir":
        return op.target in named
    if not says(op.source, set(), set()):
        return False
    own = os.path.split(op.source)
    return op.action == "delete" or says(op.target, {own[0]}, {own[1]})


def state(path: Path) -> str | None:
    """What is at ``path``, not following a symlink: a digest of a file's bytes or of a directory's whole tree
    (names, kinds, contents), a link's target; None where nothing is there, ``TOO_LARGE`` past the limits or where
    a part cannot be read."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return TOO_LARGE
    digest = hashlib.sha256()
    try:
        _Tree(digest.update).feed(path, info)
    except (_TooLarge, OSError):
        return TOO_LARGE
    return f"{_kind(info.st_mode)}:{digest.hexdigest()}"


class _TooLarge(Exception):
    """A tree past ``MAX_ENTRIES`` entries or ``MAX_BYTES`` bytes of files."""


def _kind(mode: int) -> str:
    return "dir" if stat.S_ISDIR(mode) else "link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "other"


class _Tree:
    """Feeds what is at a path, and under it, to ``update``, within the limits."""

    def __init__(self, update: Callable[[bytes], object]) -> None:
        self.update = update
        self.entries, self.bytes = MAX_ENTRIES, MAX_BYTES

    def feed(self, path: Path, info: os.stat_result) -> None:
        self.entries -= 1
        if self.entries < 0:
            raise _TooLarge
        kind = _kind(info.st_mode)
        self.update(kind.encode() + b"\0")
        if kind == "link":
            self.update(os.fsencode(os.readlink(path)) + b"\0")
        elif kind == "file":
            self.bytes -= info.st_size
            if self.bytes < 0:
                raise _TooLarge
            with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as file:
                while chunk := file.read(1 << 20):
                    self.update(chunk)
            self.update(b"\0")
        elif kind == "dir":
            for name in sorted(os.listdir(path)):
                self.update(os.fsencode(name) + b"\0")
                self.feed(path / name, os.lstat(path / name))
            self.update(b"\0\0")


def operation_checks(operations: tuple[Operation, ...], workspace: Path) -> list[CriterionCheck]:
    """After the run: each operation checked on the files (see the module), and, where the model chose paths the
    task does not name, that choice, not checked."""
    checks = [_check(op, workspace) for op in operations]
    chosen = [op.source or op.target for op in operations if not op.named]
    if chosen:
        detail = f"the model's reading chose {', '.join(chosen)}; nothing checks which ones the task means"
        checks.append(CriterionCheck(criterion="the paths acted on are the ones the task means", status="not checked",
                                     detail=detail, source="reading"))  # fmt: skip
    return checks


def _check(op: Operation, workspace: Path) -> CriterionCheck:
    status: CriterionStatus
    if op.action == "make_dir":
        there = workspace / op.target
        made = _is_dir(there)
        status, detail = ("met", "there") if made else ("not met", f"{op.target} is not a folder there")
    elif op.action == "delete":
        gone = not os.path.lexists(workspace / op.source)
        status, detail = ("met", "gone") if gone else ("not met", f"{op.source} is still there")
    else:
        status, detail = _put(op, workspace)
    file = op.target if op.action in ("move", "copy") else None  # what the model is told of, when not met
    return CriterionCheck(criterion=op.text, status=status, detail=detail, kind="value", source="reading", file=file)


def _put(op: Operation, workspace: Path) -> tuple[CriterionStatus, str]:
    """A move's or a copy's check: its target holds what its source held; a move's source is gone, a copy's kept."""
    if op.before is None or op.before == TOO_LARGE:
        return "not checked", f"{op.source} was too large to compare"
    after = state(workspace / op.target)
    left = state(workspace / op.source)
    if after is None:
        return "not met", f"{op.target} is not there"
    if after != op.before:
        return "not met", f"{op.target} does not hold what {op.source} held"
    if op.action == "move" and left is not None:
        return "not met", f"{op.source} is still there"
    if op.action == "copy" and left != op.before:
        return "not met", f"{op.source} changed"
    gone = f", and {op.source} is gone" if op.action == "move" else ""
    return "met", f"{op.target} holds what {op.source} held{gone}"
