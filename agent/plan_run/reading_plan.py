"""The plan omx writes itself where the model's reading of a task leaves one way to do it.

Asked for a whole plan, the 0.5B model wrote its output over the file it had read, wrote the file it read unchanged
and skipped the work, gave a summary's step the instruction "Sum up the data" (the task had said the first line is
a heading), or put a count in a model's prose. Asked for one narrow thing at a time (the task's reading, one step's
code, one text) the same model does much better. So where the reading (``agent.plan_run.task_reading``) and omx's
rules agree that the task makes one new text from files it names, or that it acts on files, omx writes the plan from
that reading and asks the model only for what it makes:

- **prose** from one file: read it, ask the model the task itself (the person's words but where the output goes,
  ``task_prompt``, in the shape the task gives: ``output_shape``), write the reply to the output; from several
  files or one small folder: the same, given the files shown one after the other under their names (a ``head``
  of them); prose from the task's own words (an email, a poem: the model lists no input, and the task names no
  file that is there but its output): the same without the read;
- **an exact result** from one file: read it, a python step whose code is asked for on its own, shown the file's
  first lines (``code_steps``), given the text as INPUT, its printed result written to the output; from two or more
  files: a python step that reads them itself and prints the result (omx's code, the files one after the other in
  the order the task names them, where the task merges, combines, concatenates or joins them and says no order:
  never a success, the order is omx's reading); from one folder
  (and no file): a python step given the folder's files as data (each one's path, size and date:
  ``folder_files``), its printed result written;
- **files acted on**: the reading's moves, copies, deletes and folders made, where they agree with the workspace
  and the task's paths (``file_ops``), as path-tool steps (``file_ops_plan``);
- **a name renamed in code** where the task says so, in the code files that hold it (``code_renames``), whatever
  kind the model read: the 1.5B model read a file to move;
- **each file of a folder edited in place** by the operation the model picked (a line added, a word replaced, the
  lines sorted), where the task names that one folder and no output: omx's code of it run on each file's text, the
  file written over (``each_file_plan``).

Every other task (no reading, a reading the rules do not share, operations that do not hold, several outputs, prose
from a large folder, an input that is not a plain file, a shared workspace's zones) is planned by the model as
before. The plan is shown and confirmed as any other, its steps say that omx planned them, and a failure re-plans as
any other.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from agent.plan_run.code_renames import rename_plan
from agent.plan_run.each_file_plan import each_file_plan
from agent.plan_run.file_ops_plan import operations_plan
from agent.plan_run.folder_files import files_in, folder_files
from agent.plan_run.plan import LlmStep, Plan, PythonStep, ReadTextStep, RiskLevel, ShellStep, Step, WriteTextStep
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.task_prompt import task_words
from agent.plan_run.task_reading import TaskReading, asks_composed, named_paths
from agent.plan_run.text_operations import CODE_BY_OMX, ON_FOLDER, ON_TEXT
from agent.plan_run.tools.inputs import LlmInput, PythonInput, ReadTextInput, Ref, ShellInput, WriteTextInput

__all__ = ["BY_OMX", "JOIN_ORDER", "MAX_INPUTS", "plan_from_reading"]

#: what each step of such a plan says of who planned it, for the person who confirms it
BY_OMX = "(planned by omx from the task's reading)"
#: the most files an exact result's code reads itself
MAX_INPUTS = 4


def plan_from_reading(
    task: str, workspace: Path, expected: TaskExpectations, reading: TaskReading | None
) -> Plan | None:
    """The plan for ``task`` made from ``reading`` (see the module), or None where the model is to plan it."""
    if renamed := rename_plan(task, workspace, BY_OMX):  # a name in code, whatever the model read
        return renamed
    if expected.operations:  # files acted on: the operations of the reading that hold (``file_ops``)
        return operations_plan(task, workspace, expected.operations, BY_OMX)
    if each := each_file_plan(task, workspace, expected, reading, BY_OMX):  # each file of a folder, in place
        return each
    output = expected.output
    if reading is None or output is None or reading.kind not in ("exact", "prose"):
        return None
    inputs = _inputs(task, workspace, reading, output)
    folder = _folder(task, workspace, reading, output) if not inputs else None
    criteria: list[str] = []
    if reading.kind == "prose" and not inputs and _from_nothing(task, workspace, reading, output):
        steps = _prose_from_words(task, output)
    elif folder is not None and reading.kind == "exact":
        steps = _exact_from_files([folder], output)
    elif folder is not None and (texts := _texts_in(workspace, folder)):
        steps = _prose(task, texts[0], output) if len(texts) == 1 else _prose_from_files(task, texts, output)
    elif not inputs or len(inputs) > MAX_INPUTS:
        return None
    elif len(inputs) > 1 and _JOINED.search(task) and not asks_composed(task) and (order := _join_order(task, inputs)):
        steps, criteria = _joined(order, output, _between(task)), [JOIN_ORDER]  # whatever kind the model read
    elif reading.kind == "prose":
        steps = _prose(task, inputs[0], output) if len(inputs) == 1 else _prose_from_files(task, inputs, output)
    elif len(inputs) > 1 and os.path.normpath(output) in map(os.path.normpath, inputs):
        return None  # one of several files written over, made from the others: its own text would be lost
    elif len(inputs) == 1:
        steps = _exact_from_text(inputs[0], output)
    else:
        steps = _exact_from_files(inputs, output)
    computed = reading.kind == "exact" or any(step.tool == "python" for step in steps)
    risk = RiskLevel.MEDIUM if computed or (workspace / output).exists() else RiskLevel.LOW
    # the order of files joined is omx's reading of the task: a second program that reads it so too checks nothing
    return Plan(version=1, goal=task, risk_level=risk, workspace_root=str(workspace), steps=steps,
                success_criteria=criteria)  # fmt: skip


def _inputs(task: str, workspace: Path, reading: TaskReading, output: str) -> list[str]:
    """The files the task names that both readings take as its inputs: named in the task, listed by the model (or,
    where it listed none, any: for prose, the 0.5B model listed no input for "a summary of data/README.md", and
    none, read as made from none, for "Write a polite reply to the customer in mail/complaint.txt ...", whose own
    plan then copied the complaint; for an operation on a text it picked, offered only where the task names a file
    that is there, it listed none for "What port does config/dev.json set?" and its plan copied the file), and
    plain files of the workspace now (the output too, where the task changes it in place). A file of the
    workspace's top folder is named by its name without its extension too, after "the", "my", "our" or "this" ("a
    two sentence summary of the README": the 0.5B model listed no input, and wrote of a README it had not read)."""
    listed = {os.path.normpath(path) for path in reading.inputs}
    on_text = reading.operation is not None and reading.operation.op in ON_TEXT
    unlisted = not listed and (reading.kind == "prose" or on_text)
    return [
        name
        for name in dict.fromkeys([*named_paths(task), *_named_as_words(task, workspace)])
        if (os.path.normpath(name) in listed or unlisted) and _plain_file(workspace, name)
        and (os.path.normpath(name) != os.path.normpath(output) or reading.kind == "exact")
    ]  # fmt: skip


#: a word that may name a file by its name without its extension: "the README", "my todo", "this changelog"
_AS_A_WORD = re.compile(r"\b(?:the|my|our|this)\s+([A-Za-z][\w-]{2,})\b", re.IGNORECASE)


def _named_as_words(task: str, workspace: Path) -> list[str]:
    """The files of the workspace's top folder the task names by their name without its extension (``_AS_A_WORD``),
    each the only file of that name there."""
    by_stem: dict[str, list[str]] = {}
    for name in files_in(workspace, "."):
        by_stem.setdefault(os.path.splitext(name)[0].lower(), []).append(name)
    said = dict.fromkeys(match.group(1).lower() for match in _AS_A_WORD.finditer(task))
    return [by_stem[word][0] for word in said if len(by_stem.get(word, [])) == 1]


def _folder(task: str, workspace: Path, reading: TaskReading, output: str) -> str | None:
    """The one folder the task names that both readings take as its input: named in the task (with its final slash,
    or as a word where the model listed it: "everything in my journal folder"), listed by the model (or any the
    task names, where the operation it picked is one on a folder's files: the 0.5B model lists a file of the
    folder, not the folder), a directory of the workspace reached through no symlink (``folder_files``), not the
    folder the output goes to; None where there is no such folder, or more than one."""
    on_folder = reading.operation is not None and reading.operation.op in ON_FOLDER
    listed = {os.path.normpath(path) for path in reading.inputs}
    written = os.path.normpath(output)
    words = set(re.findall(r"[\w.-]+", task.lower()))
    said = [f"{name}/" for name in sorted(listed) if "/" not in name and name.lower() in words]
    folders = [
        name
        for name in dict.fromkeys([*named_paths(task), *said])
        if name.endswith("/") and (on_folder or os.path.normpath(name) in listed)
        and not written.startswith(os.path.normpath(name) + "/") and folder_files(workspace, name) is not None
    ]  # fmt: skip
    return folders[0] if len(folders) == 1 else None


#: the most files, and bytes in all, of a folder whose texts a model step is given to write prose from
MAX_PROSE_FILES = 8
MAX_PROSE_BYTES = 24_000


def _texts_in(workspace: Path, folder: str) -> list[str]:
    """The files of ``folder`` (``folder_files``) a model step is given to write prose from: all of them, where
    there are at most ``MAX_PROSE_FILES`` of at most ``MAX_PROSE_BYTES`` in all; else none."""
    listed = folder_files(workspace, folder)
    if listed is None or listed[1]:
        return []
    files = listed[0]
    if not files or len(files) > MAX_PROSE_FILES or sum(int(f["size"]) for f in files) > MAX_PROSE_BYTES:
        return []
    return [str(f["path"]) for f in files]


def _from_nothing(task: str, workspace: Path, reading: TaskReading, output: str) -> bool:
    """Whether the task makes its text from its own words alone: the model lists no input that is there (the 1.5B
    model listed the output itself, not there yet, for "Write a short email to Sam ... Save it as out/email.txt",
    and its own plan then read it), and no path the task names but its output is there (a file the model missed
    would be material the text is made of)."""
    named = [name for name in named_paths(task) if os.path.normpath(name) != os.path.normpath(output)]
    return not any(_there(workspace, name) for name in [*reading.inputs, *named])


def _there(workspace: Path, name: str) -> bool:
    """Whether ``name``, a path relative to the workspace, is there (a path outside it never is)."""
    path = os.path.normpath(name)
    return not os.path.isabs(path) and not path.startswith("..") and (workspace / path).exists()


def _plain_file(workspace: Path, name: str) -> bool:
    """A regular file of the workspace reached through no symlink: what the plan reads is the file the task names."""
    path = workspace.resolve() / os.path.normpath(name)
    return not name.endswith("/") and path.is_file() and Path(os.path.realpath(path)) == path


def _read(step_id: int, path: str) -> Step:
    return ReadTextStep(id=step_id, tool="read_text", description=f"Read {path} {BY_OMX}",
                        inputs=ReadTextInput(path=path), produces=path)  # fmt: skip


def _write(step_id: int, made_by: int, output: str) -> Step:
    return WriteTextStep(id=step_id, tool="write_text", description=f"Write the result to {output} {BY_OMX}",
                         inputs=WriteTextInput(path=output, content=Ref(ref=f"step:{made_by}.output")),
                         produces=output)  # fmt: skip


def _prose(task: str, source: str, output: str) -> list[Step]:
    """Read, the model asked the task in the person's words, write."""
    prompt = task_words(task, output)  # the person's words, where the output goes aside (``task_prompt``)
    asked = LlmStep(id=2, tool="llm", description=f"Write what the task asks, from {source} {BY_OMX}",
                    inputs=LlmInput(prompt=prompt, input=Ref(ref="step:1.output")), produces="text")  # fmt: skip
    return [_read(1, source), asked, _write(3, 2, output)]


def _prose_from_files(task: str, sources: list[str], output: str) -> list[Step]:
    """The files shown one after the other, each under its name (``head`` of several files heads each with
    ``==> path <==``, a LOW risk command), the model asked the task in the person's words, write."""
    shown = ShellStep(id=1, tool="shell", description=f"Show {', '.join(sources)} {BY_OMX}",
                      inputs=ShellInput(cmd=shlex.join(["head", "-n", str(_ALL_LINES), *sources])),
                      produces="texts")  # fmt: skip
    asked = LlmStep(id=2, tool="llm", description=f"Write what the task asks, from {len(sources)} files {BY_OMX}",
                    inputs=LlmInput(prompt=task_words(task, output), input=Ref(ref="step:1.output")),
                    produces="text")  # fmt: skip
    return [shown, asked, _write(3, 2, output)]


#: as many lines as ``head`` shows of a file whole (``_texts_in`` keeps the files small)
_ALL_LINES = 100_000


def _prose_from_words(task: str, output: str) -> list[Step]:
    """The model asked the task in the person's words, with no material, then write."""
    asked = LlmStep(id=1, tool="llm", description=f"Write what the task asks {BY_OMX}",
                    inputs=LlmInput(prompt=task_words(task, output)), produces="text")  # fmt: skip
    return [asked, _write(2, 1, output)]


def _exact_from_text(source: str, output: str) -> list[Step]:
    """Read, code given the text as INPUT (asked for on its own), write what it prints."""
    code = PythonStep(id=2, tool="python", description=f"Compute what the task asks from {source} {BY_OMX}",
                      inputs=PythonInput(code="", input=Ref(ref="step:1.output")), produces="result")  # fmt: skip
    return [_read(1, source), code, _write(3, 2, output)]


#: a task that says in which order things go ("b first, then a", "in reverse order", "after", "onto the end of"):
#: omx joins them in that order only where it reads it (``_join_order``)
_ORDER = re.compile(r"\b(?:first|then|after|before|followed|order(?:ed)?|reversed?|last|finally|end|onto)\b",
                    re.IGNORECASE)  # fmt: skip
#: words that say the files go in the order the task names them ("in that order", "in the order given")
_AS_NAMED = re.compile(r"\bin\s+(?:that|this|the\s+(?:same|given|listed|above))\s+order\b|"
                       r"\bin\s+the\s+order\s+(?:given|listed|named|above|shown)\b", re.IGNORECASE)  # fmt: skip
#: what a joined plan's criterion says, never checked by omx: the order is its reading of the task
JOIN_ORDER = "the files are joined in the order the task means (omx joined them in the order it names them)"
_JOIN_NOTE = f"{CODE_BY_OMX}: one file after the other)"
#: a task that joins files into one: "merge", "combine", "concatenate", "join", "put together", "glue", "stitch",
#: "append", "a.csv + b.csv"
_JOINED = re.compile(r"\b(?:merg(?:e[sd]?|ing)|combin(?:e[sd]?|ing)|concatenat(?:e[sd]?|ing)|join(?:s|ed|ing)?|"
                     r"put\s+together|glue[sd]?|stitch(?:es|ed|ing)?|append(?:s|ed|ing)?)\b|\w\s*\+\s*[\w./]",
                     re.IGNORECASE)  # fmt: skip


#: words between two files that put the first after the second: "intro.md onto the end of body.md", "a after b"
_AFTER = re.compile(r"^\s*(?:(?:on)?to\s+the\s+(?:end|bottom)\s+of|at\s+the\s+(?:end|bottom)\s+of|after|below|"
                    r"under(?:neath)?|following)\s*$", re.IGNORECASE)  # fmt: skip
#: words between two files that put the first before the second: "a before b", "a on top of b"
_BEFORE = re.compile(r"^\s*(?:before|above|ahead\s+of|on\s+top\s+of|(?:on)?to\s+the\s+(?:start|top|beginning)\s+"
                     r"of|at\s+the\s+(?:start|top|beginning)\s+of)\s*$", re.IGNORECASE)  # fmt: skip
#: "first" said of a file: "b.txt first", "first b.txt"
_FIRST = r"`?\)?(?:\s*\([^()]*\))?\s*,?\s*(?:(?:goes|go|comes|come|is|should\s+(?:go|come|be))\s+)?first\b"


def _join_order(task: str, sources: list[str]) -> list[str]:
    """The order in which ``task`` joins ``sources`` (named in that order): as named where it says no order
    (``_ORDER``) or says "in that order"; reversed for "in reverse order"; for two files, the one said to go
    "after", "onto the end of", "below" the other last, the one "before", "above", "on top of" it, or said
    "first" ("home (home.txt) first, then work"), first. Empty where the task says an order omx does not read
    (the model's code is asked, with the files' paths)."""
    words = _AS_NAMED.sub(" ", task)
    if not _ORDER.search(words):
        return sources
    if re.search(r"\brevers(?:e|ed)\s+order\b|\bin\s+reverse\b", words, re.IGNORECASE):
        return sources[::-1]
    if len(sources) != 2:
        return []
    one, two = sources
    at = [task.find(path) for path in sources]
    if min(at) < 0:
        return []
    between = task[at[0] + len(one) : at[1]] if at[0] < at[1] else task[at[1] + len(two) : at[0]]
    earlier, later = (one, two) if at[0] < at[1] else (two, one)
    if _AFTER.match(between):
        return [later, earlier]
    if _BEFORE.match(between):
        return [earlier, later]
    firsts = [path for path in sources if any(re.search(re.escape(said) + _FIRST, task, re.IGNORECASE)
                                              for said in _spellings(path))]  # fmt: skip
    return firsts + [path for path in sources if path not in firsts] if len(firsts) == 1 else []


#: a line the task puts between the files joined: "with a line containing just --- between them", "separated by
#: '***'", "with ==== between each"; and a blank line put there
_SEPARATOR = re.compile(
    r"\b(?:with|and|put(?:ting)?|add(?:ing)?|insert(?:ing)?)\s+(?:an?\s+)?(?:(?:separator\s+|divider\s+)?line\s+"
    r"(?:containing|with|of|saying|that\s+says|reading)\s+(?:just\s+|only\s+)?)?(?:(?P<q>['\"`])(?P<mark>[^'\"`\n]+)(?P=q)|"
    r"(?P<bare>[^\w\s'\"`]+))\s+(?:line\s+)?(?:in\s+)?between\b|"
    r"\bseparated\s+by\s+(?:an?\s+)?(?:line\s+(?:of|with|containing)\s+(?:just\s+|only\s+)?)?(?P<q2>['\"`])(?P<mark2>[^'\"`\n]+)(?P=q2)",
    re.IGNORECASE,
)
_BLANK = re.compile(
    r"\b(?:blank|empty)\s+line\s+(?:in\s+)?between\b|\bseparated\s+by\s+(?:an?\s+)?(?:blank|empty)\s+lines?\b",
    re.IGNORECASE,
)


def _between(task: str) -> str | None:
    """The line ``task`` puts between the files joined ('' for a blank line), or None where it says none."""
    if _BLANK.search(task):
        return ""
    said = _SEPARATOR.search(task)
    return None if said is None else said.group("mark") or said.group("bare") or said.group("mark2")


def _spellings(path: str) -> list[str]:
    """How a task may name the file at ``path``: the path, its name, its name without extension, and that with
    '_' and '-' as spaces ("Part B goes first" for drafts/part_b.txt)."""
    name = os.path.basename(path)
    stem = os.path.splitext(name)[0]
    return list(dict.fromkeys([path, name, stem, re.sub(r"[_-]+", " ", stem)]))


def _joined(sources: list[str], output: str, between: str | None = None) -> list[Step]:
    """omx's code that prints the files one after the other, in the order given (``_join_order``: the order the
    task names them, or the one it says), and the write: the 0.5B model's code for "Merge notes/a.md and notes/b.md
    into a single file out/all.md" failed, and for "Combine data/part1.txt and data/part2.txt into out/full.txt"
    kept the lines that contain 'part1'. Never a success (``JOIN_ORDER``, not checked): a task that asked b first,
    then a was once joined a then b, and a second program that read it so too made that a success. CSV files whose first
    rows are the same header are joined under it once, as their rows; JSON files that each hold a list are one list
    of their items. ``between``: a line put between each file and the next ('' a blank one)."""
    joiner = "\n" if between is None else f"\n{between}\n"
    code = (f"import json\npaths = {sources!r}\n"
            "texts = [open(path, encoding='utf-8').read().rstrip('\\n') for path in paths]\n"
            "heads = {text.split('\\n', 1)[0] for text in texts}\n"
            "if all(path.lower().endswith(('.csv', '.tsv')) for path in paths) and len(heads) == 1:\n"
            "    texts = texts[:1] + [text.partition('\\n')[2] for text in texts[1:]]  # one header row\n"
            "if all(path.lower().endswith('.json') for path in paths):\n"
            "    try:\n"
            "        lists = [json.loads(text) for text in texts]\n"
            "    except ValueError:\n"
            "        lists = []\n"
            "    if lists and all(isinstance(items, list) for items in lists):  # one list of their items\n"
            "        texts = [json.dumps([item for items in lists for item in items], indent=2)]\n"
            f"print({joiner!r}.join(text for text in texts if text))")  # fmt: skip
    named = ", ".join(sources)
    joined = PythonStep(id=1, tool="python",
                        description=f"Join {named}, in that order {BY_OMX} {_JOIN_NOTE}",
                        inputs=PythonInput(code=code), produces="result")  # fmt: skip
    return [joined, _write(2, 1, output)]


def _exact_from_files(sources: list[str], output: str) -> list[Step]:
    """Code that reads the files itself (asked for on its own), write what it prints."""
    named = ", ".join(sources)
    code = PythonStep(id=1, tool="python", description=f"Compute what the task asks from {named} {BY_OMX}",
                      inputs=PythonInput(code=""), produces="result")  # fmt: skip
    return [code, _write(2, 1, output)]
