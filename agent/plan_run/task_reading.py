"""The model's reading of a task: the files it reads and writes, the kind of result it asks for, the output's shape.

Before the plan, one small request asked with a JSON schema (``agent.model.schema_request``) returns a
``TaskReading``; the files it may name as inputs are the workspace's own (an enum, as in the plan's schema), so a
grammar-constrained server cannot read a file that is not there. omx's rules (``agent.plan_run.task_checks``) read
the same task with regular expressions; neither is trusted alone. ``TaskExpectations.before`` acts on a part of the
task only where both readings agree (``agrees``):

- an **output** is a path the model lists, which the schema lets it pick only among the paths the task names (the
  model reads "save it as out/people.md", which the rules do not), and a file already there only where the rules
  read it as an output too (a small model lists the file a summary is made of); where the model listed outputs and
  none of them holds (it listed the inputs), the rules' outputs that are not there yet stand;
- a **form** of the output from the rules stays only where the model read the same: N bullets where it read
  bullets or N items; just a number, one line, a table, where it read that shape; at most N words where it read
  the same N;
- a **value** is asked (success then needs code run on the input: ``agent.plan_run.value_checks``) where either
  reading says so: withholding "success" is never an action on a wrong reading;
- the work is **exact** (its output made by code: ``TaskExpectations.exact``) where the model read kind "exact",
  with its output made from the input (``from_input``), and the task has an input that is there before the run;
  the rules do not say it; a task that limits its output's words is prose, whatever kind the model read (a pick on
  the input's lines aside);
- the **operation** the model picks by name (``text_operations``: sort, the first N lines, a CSV column's sum,
  the largest files of a folder, ..., or prose, files acted on, other), asked apart among those the files the task
  names can take (``offered_operations``): exact work from one file or folder gets omx's code of it; a pick on the
  input's own lines makes a task read as prose exact work, and any pick on a text one read as a command (the 0.5B
  model read sorts and first lines as prose, "use head" and edits in place as files acted on); a pick of prose makes
  a task read as a command prose (an email to write was read as a command); a pick of files acted on has the file
  operations asked, as the kind command does, but no delete is taken on the pick alone;
- the **file operations** of a task of kind command (moves, copies, deletes, folders made), asked apart
  (``read_operations``: each source one of the workspace's paths, which that request lists with their sizes and
  dates), are acted on only where they are consistent with the workspace and with every path the task names
  (``agent.plan_run.file_ops``).

What the two readings disagree on is recorded in the trace (``task_reading``). Where the request fails or its reply
is no reading (a server down, a script without one, a server that takes no JSON schema: unconstrained, a small
model's reading is a guess), the run goes on with the rules' reading alone, and the trace says that too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.model.llm import LLMError, Model
from agent.model.schema_request import complete_with_schema
from agent.plan_run.folder_files import extensions
from agent.plan_run.list_form import WORDS_AT_MOST_AFTER, WORDS_AT_MOST_BEFORE
from agent.plan_run.run_schema import workspace_paths
from agent.plan_run.text_operations import (
    FROM_LINES,
    LOOKUPS,
    ON_FOLDER,
    ON_TEXT,
    TextOperation,
    ask_operation,
    offered_operations,
)

__all__ = ["FILE_PATH", "READING_SCHEMA_TITLE", "Kind", "Says", "Shape", "TaskReading", "agree", "named_paths"]
__all__ += ["MAX_OPERATIONS", "OPERATIONS_SCHEMA_TITLE", "Action", "FileOperation", "FileOperations"]
__all__ += ["has_extension", "kind_named", "operations_schema", "read_operations", "read_task", "reading_schema"]
__all__ += ["asks_composed", "workspace_facts"]

Kind = Literal["exact", "prose", "command"]
#: what a task of kind command does to a path: a rename is a move
Action = Literal["move", "copy", "delete", "make_dir"]
Shape = Literal["number", "one_line", "lines", "bullets", "table", "json", "csv", "free"]
#: what a check of the rules reads in the task: one shape of its output
Says = Literal[
    "bullets", "sentences", "lines", "number", "words", "one_line", "table", "first_line", "title", "yes_or_no"
]

#: the title of the reading's schema, by which a scripted model tells its request from the plan's
READING_SCHEMA_TITLE = "TaskReading"
#: the title of the file operations' schema, asked after the reading (``read_operations``)
OPERATIONS_SCHEMA_TITLE = "FileOperations"
#: a file a task names: a path with an extension (``out/a.txt``); omx's rules read the task's files the same way
FILE_PATH = r"(?:[\w.-]+/)*[\w-][\w.-]*\.\w{1,8}(?![\w/])"
#: a path a task names: a file, or a directory with its final slash (``data/``, ``src/lib/``)
_NAMED_PATH = re.compile(rf"`?(?:{FILE_PATH}|(?:[\w.-]+/)+)")
#: an abbreviation, not a file: "e.g", "i.e", "a.m"
_ABBREVIATION = re.compile(r"[A-Za-z]\.[A-Za-z]")
#: a folder a task names without its final slash, after the word folder or directory ("a folder named media/videos")
_FOLDER_NAMED = re.compile(
    r"\b(?:folder|directory|dir)\s+(?:(?:named|called)\s+)?`?(?P<path>(?:[\w.-]+/)+[\w-]+)(?![\w/]|\.\w)",
    re.IGNORECASE,
)
#: the most file operations a reading lists (a constrained server stops there)
MAX_OPERATIONS = 20
#: the most paths of the workspace the request lists with their size and date
LISTED = 60

_SYSTEM = (
    "You read a task given to a file assistant, before anyone plans it. Say which files of the workspace it reads "
    "(inputs), which files it asks to be written or changed (outputs, with the paths the task gives them), what "
    "kind of result it asks for, and the shape of the output file. kind: 'exact' when a program could compute the "
    "one right output from the input: a count, a total, an answer looked up in the data, the input's lines picked, "
    "sorted, reversed, numbered, de-duplicated, joined or changed (upper case, a word replaced), items extracted, a "
    "format converted; a task that names the tool to use (grep, head, wc, python) is 'exact' too. 'prose' only when "
    "the output is new wording that someone composes: a summary (also one of exactly N bullets), a description, a "
    "title, an email, a reply. 'command' only when files are moved, renamed, copied or deleted, or edited where "
    "they are, and no output is computed from an input. shape: 'number' for just a number, 'one_line', 'lines' for "
    "one item per line, 'bullets', 'table' (markdown), 'json', 'csv', or 'free'. count: the number of bullets or "
    "lines the task asks for, else null. max_words: the most words the task allows, else null. Reply with the JSON "
    "object only."
)
#: the request for the file operations of a task the model read as files acted on (``read_operations``)
_OPERATIONS_SYSTEM = (
    "You read a task given to a file assistant that moves, renames, copies or deletes files or folders, or makes "
    "folders. List each operation it asks for, one per file, in order: action 'move' (a rename is a move), 'copy', "
    "'delete' or 'make_dir'; source: the file or folder acted on ('' for make_dir); target: the path it gets, file "
    "name included (for make_dir the folder made; '' for delete). The workspace's files are listed with their size "
    "and the day they last changed. Reply with the JSON object only."
)


#: the field the model writes just before the kind (a constrained server writes the fields in the schema's order):
#: with ``"from_input": true,`` written first, the 0.5B model read the kind of 29 of the 34 tuning tasks of exact
#: work right, against 25 without it (the same prompt; 12 with the prompt before it). Its answer is true for nearly
#: every task with an input, summaries too, so it only vetoes exact work where the model says the output is not
#: made from the input
FROM_INPUT = (
    "true when the output is made of the input's own lines, words or numbers (some of them picked, sorted, counted, "
    "joined or changed by a rule); false when it is new sentences someone composes (a summary, an email, a title)."
)


class FileOperation(BaseModel):
    """One file operation a task asks for, as the model read it."""

    model_config = ConfigDict(extra="ignore")

    action: Action = Field(description="move (a rename too), copy, delete or make_dir.")
    source: str = Field(description="The file or folder of the workspace acted on ('' for make_dir).")
    target: str = Field(description="The path it gets, file name included; the folder made; '' for delete.")


class TaskReading(BaseModel):
    """What the model read in a task; paths as the task writes them, relative to the workspace."""

    model_config = ConfigDict(extra="ignore")

    inputs: list[str] = Field(default_factory=list, description="The workspace files the task reads.")
    outputs: list[str] = Field(default_factory=list, description="The files the task asks to be written or changed.")
    from_input: bool = Field(default=True, description=FROM_INPUT)
    kind: Kind = Field(description="exact: one right result; prose: text written freely; command: files acted on.")
    shape: Shape = Field(default="free", description="The output file's shape.")
    count: int | None = Field(default=None, ge=0, description="The number of bullets or lines asked for, else null.")
    max_words: int | None = Field(default=None, ge=0, description="The most words allowed, else null.")
    # asked apart, after the reading (``read_task``): not in the reading's own schema
    operation: TextOperation | None = Field(default=None, description="The operation picked (text_operations).")
    operations: list[FileOperation] = Field(default_factory=list, description="The file operations, in order.")

    @property
    def acts_on_files(self) -> bool:
        """Whether the task acts on files: read as kind command, the operation picked is files acted on, or it is
        one that makes a text where every output listed is a folder (there is no file to write that text to: the
        0.5B model picked a listing of the files to be sorted into folders, and a sort for "Sort the files in
        inbox/ into folders by type")."""
        if self.kind == "command" or self.operation is None:
            return self.kind == "command"
        into_folders = bool(self.outputs) and all(path.endswith("/") for path in self.outputs)
        return self.operation.op == "file_operations" or (self.operation.op != "write_prose" and into_folders)

    def lists_output(self, path: str) -> bool:
        return os.path.normpath(path) in {os.path.normpath(p) for p in self.outputs}


class FileOperations(BaseModel):
    """The file operations a task asks for: the model's answer to the request of ``read_operations``."""

    model_config = ConfigDict(extra="ignore")

    operations: list[FileOperation] = Field(default_factory=list, description="Each operation, in order.")


def agree(says: Says, number: int | None, reading: TaskReading) -> bool:
    """Whether the model's ``reading`` says what a check of the rules reads in the task (``number``: its N)."""
    if says == "bullets" and number is None:  # a list of no said length: any reading of lines
        return reading.shape in ("bullets", "lines", "free")
    if says == "bullets":  # the shape, or the number of items
        return (reading.shape == "bullets" and reading.count in (None, number)) or reading.count == number
    if says == "sentences":  # no other number of them, or one line for one sentence
        return reading.count in (None, number) or (number == 1 and reading.shape == "one_line")
    if says in ("first_line", "lines", "title"):  # a line it quotes, lines it counts, a poem's form, a title: its words
        return True
    if says == "yes_or_no":  # a word on a line, maybe with why after it
        return reading.shape in ("one_line", "lines", "free")
    if says == "one_line":  # or lines, one of them: the 0.5B model read "in a single line" so
        return reading.shape == "one_line" or (reading.shape in ("lines", "bullets", "free") and reading.count == 1)
    if says == "words":  # the same N (a small model puts "at most 30 words" in count as often as in max_words), or
        # none: a limit of words the task writes out is not misread, and the 0.5B model left "under 80 words" out
        return number is not None and (number in (reading.max_words, reading.count) or reading.max_words is None)
    return reading.shape == says


def named_paths(task: str) -> list[str]:
    """Every path the task names, in order, once: files (``out/a.txt``) and directories with their final slash, also
    where the task writes one without it after the word folder or directory ("a folder named media/videos"); not an
    abbreviation ("e.g.")."""
    found = {m.start() + m.group(0).startswith("`"): m.group(0).strip("`") for m in _NAMED_PATH.finditer(task)
             if not _ABBREVIATION.fullmatch(m.group(0))}  # fmt: skip
    found |= {m.start("path"): f"{m.group('path')}/" for m in _FOLDER_NAMED.finditer(task)}
    return list(dict.fromkeys(found[start] for start in sorted(found)))


def reading_schema(workspace: Path, task: str) -> dict[str, Any]:
    """The reading's JSON schema for ``task`` in ``workspace``: inputs are the workspace's files and directories
    (plain strings in a large workspace), outputs the paths the task names, so that a grammar-constrained server
    can neither read a file that is not there nor write one the task never named."""
    schema = TaskReading.model_json_schema()
    schema["title"] = READING_SCHEMA_TITLE
    del schema["properties"]["operations"]  # asked apart (``operations_schema``)
    del schema["properties"]["operation"]  # asked apart (``text_operations``)
    schema.pop("$defs", None)
    schema["required"] = list(schema["properties"])  # a strict schema names every field
    schema["additionalProperties"] = False
    paths = workspace_paths(workspace)
    if paths is not None:
        files, dirs = paths
        choices = sorted(set(files) | set(dirs))
        if choices:
            schema["properties"]["inputs"]["items"] = {"type": "string", "enum": choices}
    schema["properties"]["inputs"]["maxItems"] = 20
    named = named_paths(task)
    outputs = schema["properties"]["outputs"]
    if named:
        outputs["items"] = {"type": "string", "enum": named}
    outputs["maxItems"] = len(named)  # an empty enum admits nothing, and some servers refuse it: no item then
    return schema


def operations_schema(workspace: Path, task: str = "") -> dict[str, Any]:
    """The JSON schema of a task's file operations in ``workspace``: each source one of the paths ``task`` names
    that are there and what the folders among them hold, or, where it names none that is there, any of the
    workspace's files and directories ('' for a folder to make; plain strings in a large workspace); at most as many
    operations as there are sources and new folders named (``MAX_OPERATIONS`` in all). Offered every path of the
    workspace, the 0.5B model moved the files of logs/ where the task said "Move build.log and test.log into a new
    folder called logs/old_builds/", and listed twenty copies into "config/settings.ini.bak", one of each file."""
    schema = FileOperations.model_json_schema()
    schema["title"] = OPERATIONS_SCHEMA_TITLE
    schema["required"] = list(schema["properties"])
    schema["additionalProperties"] = False
    operation = schema.pop("$defs").pop(FileOperation.__name__)  # inline: its source's choices are this run's
    operation["required"] = list(operation["properties"])
    operation["additionalProperties"] = False
    most = MAX_OPERATIONS
    paths = workspace_paths(workspace)
    if paths is not None and (choices := sorted(set(paths[0]) | set(paths[1]))):
        named, offered = [os.path.normpath(path) for path in named_paths(task)], set(choices)
        there = [path for path in named if path in offered]
        new = [path for path in named if not (workspace / path).exists()]
        sources = [c for c in choices if any(c == path or c.startswith(f"{path}/") for path in there)] or choices
        # of the kind of file the task names ("the .tmp files in tmp/"), or a file it names itself
        sources = [c for c in sources if kind_named(task, c) or (c in named and (workspace / c).is_file())] or sources
        # a folder a new path the task names lies in is where files go ("into inbox/pdf/"), not what moves
        sources = [c for c in sources if not (c in there and any(path.startswith(f"{c}/") for path in new))]
        operation["properties"]["source"]["enum"] = ["", *sources]
        if there:
            most = min(MAX_OPERATIONS, len(sources) + len(new))
            if targets := _targets(workspace, named, sources):
                operation["properties"]["target"]["enum"] = targets
    schema["properties"]["operations"] |= {"items": operation, "maxItems": most}
    return schema


#: the most targets a schema lists (more: any path)
MAX_TARGETS = 200


def _targets(workspace: Path, named: list[str], sources: list[str]) -> list[str] | None:
    """The paths an operation may give a source where the task names its paths: '' (a delete), each new path it
    names, each folder it names (into it; one there only where a source lies outside it) and each source's name in
    one, and a new file name it gives without a folder beside each source ("Rename data/draft.txt to final.txt");
    None where that is more than ``MAX_TARGETS``. A path there already is no target but such a folder: the 0.5B
    model renamed photos/ "to" photos/p1.jpg, and then to photos/."""
    folders = [
        path
        for path in named
        # a folder there is a target where something outside it is a source: photos/ is none of its own files'
        if ((workspace / path).is_dir() and any(not f"{s}/".startswith(f"{path}/") for s in sources if s))
        or (not os.path.lexists(workspace / path) and not has_extension(path))
    ]
    bare = [path for path in named if "/" not in path and has_extension(path) and not (workspace / path).exists()]
    targets = {path for path in named if not (workspace / path).exists() or path in folders}
    targets |= {
        f"{folder}/{os.path.basename(source)}"
        for folder in folders
        for source in sources
        if not f"{folder}/".startswith(f"{source}/")  # not into itself
    }
    targets |= {os.path.join(os.path.dirname(source), name) for name in bare for source in sources}
    kept = sorted(t for t in targets if t in folders or not os.path.lexists(workspace / t))
    return None if len(kept) > MAX_TARGETS else ["", *kept]


def kind_named(task: str, path: str) -> bool:
    """Whether ``path`` is of a kind of file ``task`` names by its extension ("the .tmp files", "*.jpg"), or the task
    names none. Offered every file of tmp/ for "Delete the .tmp files in tmp/", the 0.5B model deleted tmp/keep.txt
    too."""
    wanted = extensions(task)
    return not wanted or os.path.splitext(path)[1].lower() in wanted


def has_extension(path: str) -> bool:
    """Whether the last name of ``path`` has a file extension, as the task's files are read (``FILE_PATH``)."""
    return re.fullmatch(FILE_PATH, os.path.basename(path)) is not None


def read_task(
    model: Model, task: str, workspace: Path, *, on_refused: Callable[[str], None] | None = None
) -> tuple[TaskReading | None, str | None]:
    """The model's reading of ``task`` in ``workspace``, or None and why there is none (the request failed, or its
    reply was no reading); ``on_refused`` hears of a server that takes no JSON schema, as the planner's does."""
    messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": f"Task: {task}"}]
    try:
        reply = complete_with_schema(
            model, messages, reading_schema(workspace, task), on_refused=on_refused, schema_only=True
        )
    except LLMError as exc:
        return None, f"the request failed: {exc}"
    try:
        reading = TaskReading.model_validate(json.loads(reply.content or ""))
    except (json.JSONDecodeError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        return None, f"the reply was no reading ({first})"
    offered = offered_operations(workspace, named_paths(task))
    operation = ask_operation(model, task, offered, on_refused=on_refused)
    if operation is not None and operation.op == "file_operations" and reading.kind != "command":
        # files acted on where the model read no command and the task's words say none: no pick of one
        said = _SAYS_FILE_WORK.search(task) or _SAYS_DELETE.search(task)
        operation = operation if said else operation.model_copy(update={"op": "other"})
    reading = reading.model_copy(update={"operation": operation, "kind": _kind_for(reading.kind, task, operation)})
    if reading.acts_on_files:
        acted = read_operations(model, task, workspace, on_refused=on_refused)
        if acted is not None:
            # where only the pick says files are acted on, a delete is taken where the task's words say one too
            deletes = reading.kind == "command" or _SAYS_DELETE.search(task) is not None
            read = [o for o in acted.operations if deletes or o.action != "delete"]
            reading = reading.model_copy(update={"operations": read})
    return reading, None


#: a task's own words for removing files ("Delete the .tmp files in tmp/", "get rid of", "remove the old logs"): a
#: delete read where the model did not read the kind command is taken only where the task says one
_SAYS_DELETE = re.compile(
    r"\b(?:delete[sd]?|deleting|erase[sd]?|erasing|throw\s+(?:away|out)|get\s+rid\s+of|rm|"
    r"remov(?:e[sd]?|ing)\s+(?:[\w.*-]+\s+){0,3}(?:files?|folders?|director(?:y|ies)))\b",
    re.IGNORECASE,
)
#: a limit on the output's words ("at most 20 words", "in under fifteen words"): a limit on prose, never on a value
_ANY_NUMBER = r"(?:\d+|[a-z]+(?:-[a-z]+)?)"  # "fifteen", "twenty-five": any word, a limit's word only here
_WORD_LIMIT = re.compile(
    rf"\b(?:{WORDS_AT_MOST_BEFORE}|within)\s+{_ANY_NUMBER}\s+words\b|\b{_ANY_NUMBER}\s+words\s+{WORDS_AT_MOST_AFTER}\b",
    re.IGNORECASE,
)


#: words that ask for wording someone composes: a summary, its key points, a description, an email, a title
_COMPOSED = re.compile(
    r"\b(?:summar(?:i[sz]e[sd]?|i[sz]ing)|sum\s+(?:it\s+|them\s+)?up|tl;?dr|gist|(?:key|main)\s+points?|takeaways?|"
    r"keywords?\s+(?:for|of|from)|describe[sd]?|describing|explain(?:s|ed|ing)?|(?:summary|summaries|overview|description)\s+of|"
    r"\bone[\s-]+paragraph\b|(?:a|an)\s+(?:[\w-]+\s+){0,2}(?:summary|overview|description|email|e-mail|letter|reply|haiku|poem|"
    r"limerick|title|headline|tagline|slogan|caption|announcement|paragraph|tweet|intro|introduction|blurb|bio|"
    r"story|message|memo|invitation|speech|toast|pitch|note|notice|post|card|poster|flyer|advert)|"
    r"(?:thank[\s-]*you|welcome|birthday|get[\s-]+well|sympathy|condolence)\s+(?:note|card|letter|message|e-?mail)|"
    r"(?:instagram|facebook|linkedin|twitter|social[\s-]+media|blog)\s+(?:post|caption|update)|"
    r"in\s+(?:one|a|a\s+single|two|three|\d)\s+(?:short\s+|full\s+)?sentences?)\b",
    re.IGNORECASE,
)
#: a task's words for work on files themselves: moved, copied, renamed, deleted, archived, a folder made
_SAYS_FILE_WORK = re.compile(
    r"\b(?:mov(?:e[sd]?|ing)|cop(?:y|ies|ied|ying)|renam(?:e[sd]?|ing)|delet(?:e[sd]?|ing)|remov(?:e[sd]?|ing)|"
    r"archiv(?:e[sd]?|ing)|organi[sz](?:e[sd]?|ing)|mkdir|(?:make|create)\s+(?:a\s+)?(?:new\s+)?(?:folder|directory))\b",
    re.IGNORECASE,
)
#: the picks a task that asks for composed wording may still be: files acted on, a line or a word it quotes put in
_NOT_COMPOSED = frozenset({"file_operations", "add_first_line", "add_last_line", "replace"})
#: text a task quotes: 'x', "a line" (not an apostrophe: "Priya's", "I'm")
_QUOTED = re.compile(r"""(?:^|(?<=[\s(:]))(['"])(?=\S)[^'"\n]*?\S\1(?=[\s.,;:)!?]|$)""")


def _kind_for(kind: Kind, task: str, operation: TextOperation | None) -> Kind:
    """The kind of work ``task`` is, from the kind the model read and the operation it picked:

    - prose where the task asks for wording someone composes (a summary, its key points, a description, an email, a
      title: the 0.5B model read "the three key points of ..." as exact work and picked a word count, and "a
      numbered list of 4 takeaways" as the input's lines numbered), unless the pick is files acted on or a text the
      task quotes put in (``_puts_in``), or the model read a command, picked nothing, and the task says files are
      moved, copied, renamed, deleted or a folder made (the 0.5B model read "Write a polite reply to the customer in
      mail/complaint.txt ..., saved as out/reply.txt" as a command, and moved the complaint to out/reply.txt);
    - exact work where the pick makes it so (``_made_exact``);
    - prose where the model read files acted on and picked prose (it read "write a short email ... save it as
      out/email.txt" as a command, and planned a read of the email it was to write), or read exact work where the
      task limits the output's words and the pick is none on the input's lines (it read "the most important
      decision ... in at most 20 words" as exact work, and code copied the input)."""
    if _COMPOSED.search(task) and (operation is None or not _puts_in(operation.op, task)):
        return "prose" if kind != "command" or operation is not None or not _SAYS_FILE_WORK.search(task) else kind
    if operation is not None and _made_exact(kind, operation.op):
        return "exact"
    if kind == "command" and operation is not None and operation.op == "write_prose":
        return "prose"
    if kind == "exact" and _WORD_LIMIT.search(task) and (operation is None or operation.op not in FROM_LINES):
        return "prose"
    return kind


def asks_composed(task: str) -> bool:
    """Whether ``task`` asks for wording someone composes (``_COMPOSED``: a summary, key points, an email, ...)."""
    return _COMPOSED.search(task) is not None


def _puts_in(op: str, task: str) -> bool:
    """Whether the pick ``op`` is work a task that asks for composed wording may still be (``_NOT_COMPOSED``): files
    acted on, or a line or a word put in where the task quotes one (the 0.5B model picked a first line 'Priya' for
    "Can you draft a quick email to Priya ...? Save it as out/email_priya.txt")."""
    return op == "file_operations" or (op in _NOT_COMPOSED and _QUOTED.search(task) is not None)


def _made_exact(kind: Kind, op: str) -> bool:
    """Whether a reading of ``kind`` is exact work for the pick ``op``: prose where the pick is one on the input's
    own lines (a rule picks or changes them: the 0.5B model read sorts and first lines as prose) or on a folder's
    files (it read "Which files in docs/ were changed after 2020-01-01?" as prose) or a value looked up in a table or
    a document (``LOOKUPS``: a question whose answer is there, such as "Who scored highest in data/s.csv?"), a
    command where
    the pick is any operation on a text (the model read "use head to get the first 2 lines" and edits in place as
    files acted on, and then copied the file whole)."""
    if kind == "prose":  # a folder's files listed, counted or picked are no prose either
        return op in FROM_LINES or op in ON_FOLDER or op in LOOKUPS
    return kind == "command" and op in ON_TEXT


def read_operations(
    model: Model, task: str, workspace: Path, *, on_refused: Callable[[str], None] | None = None
) -> FileOperations | None:
    """The file operations ``task`` asks for in ``workspace``, as the model reads them (None: the request failed, or
    its reply was none), each source one of the workspace's paths. Asked apart, after a reading of kind command:
    with the operations in the reading's own request, the 0.5B model read 15 of 25 tuning tasks as files acted on,
    summaries and filters among them (1 of 54 without), and asked whether a task only acts on files, it said yes
    to every one. The request lists the workspace's files with their size and date."""
    listed = workspace_facts(workspace)
    asked = f"Task: {task}" + (f"\n\nFiles in the workspace:\n{listed}" if listed else "")
    messages = [{"role": "system", "content": _OPERATIONS_SYSTEM}, {"role": "user", "content": asked}]
    try:
        reply = complete_with_schema(model, messages, operations_schema(workspace, task), on_refused=on_refused,
                                     schema_only=True)  # fmt: skip
        return FileOperations.model_validate(json.loads(reply.content or ""))
    except (LLMError, json.JSONDecodeError, ValidationError):
        return None


def workspace_facts(workspace: Path, limit: int = LISTED) -> str:
    """The workspace's first ``limit`` paths, one a line, a file with its size and the day it was last changed
    (``data/a.txt (120 bytes, changed 2025-11-03)``), a directory with its final slash; and today's date, so that
    "the largest file" or "older than 30 days" is read from the files as they are. Empty for an empty workspace."""
    paths = workspace_paths(workspace)
    if paths is None:
        return ""
    files, dirs = paths
    lines = []
    for name in sorted([*files, *(f"{d}/" for d in dirs)])[:limit]:
        try:
            info = os.lstat(workspace / name)
        except OSError:
            continue
        day = datetime.fromtimestamp(info.st_mtime, UTC).date().isoformat()
        lines.append(name if name.endswith("/") else f"{name} ({info.st_size} bytes, changed {day})")
    if not lines:
        return ""
    more = len(files) + len(dirs) - limit
    tail = [f"... and {more} more"] if more > 0 else []
    return "\n".join([*lines, *tail, f"(today is {datetime.now(UTC).date().isoformat()})"])
