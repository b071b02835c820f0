"""The plan omx writes itself for one operation on the text of each file of a folder, or of each file a task names,
in place.

"Add the line 'Reviewed: yes' at the top of every .md file in docs/", "Replace 'colour' with 'color' in all files
under notes/", "Lower-case each file in names/", "Rename the function calc_total to compute_total in app/util.py and
app/main.py": a small model cannot plan several reads, edits and writes (the 0.5B model's plans for the last referred
to their own step's output), and the task names no output file. Where the model's reading (``task_reading``) picked
an operation that edits a text (``IN_PLACE``: a filter, a sort, a replacement, a line added, a change of case, ...),
the task has no output of its own, and it names (paths in the operation's own quoted texts aside) either exactly one
folder and no other file or folder, that folder a directory of the workspace (``folder_files``: recursive, no link
followed), or two or more files and no folder, each a regular file of the workspace reached through no link, omx
plans the work itself, for each of those files, or each regular file of the folder the task's file pattern takes
(``extensions``: "*.md", "every .txt file"; no pattern: every file, hidden ones aside):

- each file read (``read_text``), then a python step given its text as INPUT whose code is omx's for the operation
  (``text_operations.operation_code``), the operation fitted to that file's first lines (``fitted``);
- then each file written over (``write_text``, overwrite) with that step's output; no file is written before every
  file's new text is made, so code that fails leaves every file as it was. An empty output is never written over a
  file that holds text (``executor``): that write fails, and the files written before it stay changed.

There is no such plan (None: the model plans, as before) where the pick is none of ``IN_PLACE``, the folder is the
workspace itself or omx's records, it has more than ``MOST_EACH`` such files (or none), or the operation does not fit
one of them (its TEXT missing, a CSV column a file lacks), or one is empty, not UTF-8 text, or too large to be read
and printed whole. The plan is shown and confirmed as any other (its python steps and overwrites make it MEDIUM at
least: ``risk``); its steps say omx planned them and whose code they run. Nothing checks that the task asks for that
operation (the model's pick): the run is "done", never "success" (``verdict``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection
from pathlib import Path

from agent.plan_run.code_steps import first_lines
from agent.plan_run.folder_files import extensions, folder_files
from agent.plan_run.operation_fitting import fitted
from agent.plan_run.plan import Plan, PythonStep, ReadTextStep, RiskLevel, Step, WriteTextStep
from agent.plan_run.task_checks import TaskExpectations, rules_outputs
from agent.plan_run.task_reading import TaskReading, named_paths
from agent.plan_run.text_operations import IN_PLACE, TextOperation, operation_code, operation_note
from agent.plan_run.tools.files import READ_LIMIT
from agent.plan_run.tools.inputs import PythonInput, ReadTextInput, Ref, WriteTextInput
from agent.plan_run.tools.path_tools import records_path, records_problem
from agent.sandbox.confine import OUTPUT_LIMIT

__all__ = ["MOST_EACH", "each_file_plan", "editable_file", "in_place_plan"]

#: the most files such a plan edits (three steps each); a larger folder is the model's to plan
MOST_EACH = 20
#: a task about the files' names, which no edit of their text does
_OF_NAMES = re.compile(
    r"\bfile\s*names?\b|\bnames\s+of\s+(?:the\s+|all\s+|every\s+)?files\b|"
    r"\brenam\w*\s+(?:the\s+|all\s+(?:the\s+)?|every\s+|each\s+)?files?\b",
    re.IGNORECASE,
)
#: the quotes around a text of the operation, as a task writes them
_QUOTES = (("'", "'"), ('"', '"'), ("`", "`"), ("\u2018", "\u2019"), ("\u201c", "\u201d"))


def each_file_plan(
    task: str, workspace: Path, expected: TaskExpectations, reading: TaskReading | None, by: str
) -> Plan | None:
    """The plan that applies the operation the model picked to each file of the folder the task names, in place
    (see the module), each step's description saying ``by`` (who planned it); None where the model is to plan the
    task."""
    operation = reading.operation if reading is not None else None
    if reading is None or operation is None or operation.op not in IN_PLACE or expected.operations:
        return None
    if _OF_NAMES.search(task):  # the files' names, not their text: "add old_ to the front of every filename"
        return None
    rest = _unquoted(task, operation)  # the task without the operation's own texts ('See docs/' is no folder)
    named_here = named_paths(rest)
    folders = [name for name in named_here if name.endswith("/")]
    if not folders:  # each file written over, so each is an output: a task that writes some of them reads others
        files = _named_files(workspace, named_here)
        every = {os.path.normpath(path) for path in files}
        model_outputs = {os.path.normpath(path) for path in reading.outputs}
        outputs = (expected.outputs, rules_outputs(task, workspace))
        read_as_outputs = [{os.path.normpath(path) for path in listed} for listed in outputs] + [model_outputs]
        in_place = {os.path.normpath(path) for path in reading.inputs} == every == model_outputs
        # the rules read "Prepend 'X' to a.txt and b.txt" as writing a.txt: a part of the files the model read
        # each as both read and written is no other output
        if any(listed and listed != every and not (in_place and listed < every) for listed in read_as_outputs):
            return None
    elif len(folders) != len(named_here) or len(folders) != 1:
        return None  # another file or folder named: an input or an output the model is to plan for
    else:
        files = _files(workspace, folders[0], extensions(rest))
    edited = {os.path.normpath(path) for path in (*folders, *files)}
    if not files or any(os.path.normpath(path) not in edited for path in expected.outputs):
        return None
    named = named_paths(task)
    fits: list[TextOperation] = []
    for path in files:
        sample = first_lines(workspace, path)
        fit = fitted(operation, sample, named, task) if sample is not None else None
        if fit is None or fit.op not in IN_PLACE:
            return None
        fits.append(fit)
    return in_place_plan(task, workspace, list(zip(files, fits, strict=True)), by)


def in_place_plan(
    task: str,
    workspace: Path,
    edits: list[tuple[str, TextOperation]],
    by: str,
    noted: Callable[[TextOperation], str] = operation_note,
) -> Plan:
    """The plan that makes each file's new text by omx's code of its operation, then writes each file over (see the
    module); ``by``: what each step says of who planned it, ``noted``: what a step of code says of whose code it
    runs."""
    made = [step for n, (path, fit) in enumerate(edits) for step in _made(2 * n + 1, path, fit, by, noted(fit))]
    written = [_written(2 * len(edits) + n + 1, 2 * n + 2, path, by) for n, (path, _) in enumerate(edits)]
    steps = [*made, *written]
    return Plan(version=1, goal=task, risk_level=RiskLevel.MEDIUM, workspace_root=str(workspace), steps=steps)


def _unquoted(task: str, operation: TextOperation) -> str:
    """``task`` with the operation's texts left out where it quotes them."""
    for text in (operation.text, operation.new_text):
        for left, right in _QUOTES if text else ():
            task = task.replace(f"{left}{text}{right}", " ")
    return task


def _files(workspace: Path, folder: str, wanted: Collection[str]) -> list[str]:
    """The folder's regular files that the pattern takes (``wanted``: their extensions; none: all), hidden ones
    aside, each small enough to be read and printed whole; empty where the folder is the workspace or omx's
    records, is no directory of the workspace, or has none or more than ``MOST_EACH`` such files, or one too large."""
    if os.path.normpath(folder) == "." or records_problem(folder, records_path(None)) is not None:
        return []
    listed = folder_files(workspace, folder)
    if listed is None or listed[1]:
        return []
    base = os.path.normpath(folder)
    taken = [
        entry
        for entry in listed[0]
        if not any(part.startswith(".") for part in Path(os.path.relpath(str(entry["path"]), base)).parts)
        and (not wanted or os.path.splitext(str(entry["name"]))[1].lower() in wanted)
    ]  # fmt: skip
    if len(taken) > MOST_EACH or any(int(entry["size"]) >= min(READ_LIMIT, OUTPUT_LIMIT) for entry in taken):
        return []
    return [str(entry["path"]) for entry in taken]


def _named_files(workspace: Path, named: list[str]) -> list[str]:
    """The files of ``named`` (two or more, no folder among them) where each is one omx edits in place
    (``editable_file``); else none."""
    if not 2 <= len(named) <= MOST_EACH or not all(editable_file(workspace, name) for name in named):
        return []
    return list(named)


def editable_file(workspace: Path, name: str) -> bool:
    """Whether ``name`` is a file omx edits in place: a regular file of the workspace reached through no link, not in
    omx's records, small enough to be read and printed whole."""
    root = workspace.resolve()
    path = root / os.path.normpath(name)
    if os.path.isabs(name) or name.endswith("/") or Path(os.path.realpath(path)) != path:
        return False
    if not path.is_file() or not path.is_relative_to(root) or records_problem(name, records_path(None)) is not None:
        return False
    return path.stat().st_size < min(READ_LIMIT, OUTPUT_LIMIT)


def _made(read_id: int, path: str, operation: TextOperation, by: str, note: str) -> list[Step]:
    """Read ``path``; omx's code of ``operation`` given its text as INPUT."""
    read = ReadTextStep(id=read_id, tool="read_text", description=f"Read {path} {by}",
                        inputs=ReadTextInput(path=path), produces=path)  # fmt: skip
    code = PythonInput(code=operation_code(operation), input=Ref(ref=f"step:{read_id}.output"))
    made = PythonStep(id=read_id + 1, tool="python",
                      description=f"Make the new text of {path} {by} {note}",
                      inputs=code, produces=f"the new text of {path}")  # fmt: skip
    return [read, made]


def _written(step_id: int, made_by: int, path: str, by: str) -> Step:
    """``path`` written over with step ``made_by``'s output."""
    inputs = WriteTextInput(path=path, content=Ref(ref=f"step:{made_by}.output"), mode="overwrite")
    return WriteTextStep(id=step_id, tool="write_text", description=f"Write the new text over {path} {by}",
                         inputs=inputs, produces=path)  # fmt: skip
