"""The code of a plan's python steps, asked for again by a request of its own where it cannot work.

Written inside the plan's JSON, the 0.5B model's code named variables nothing defines (``sorted(names.split())``,
``print(a.txt.upper())``), printed nothing, or copied the example's code into another task. Asked for the code of
that one step alone (the task, the step, what INPUT holds and where its output goes), the same model wrote
working programs for most of the same tasks. So a plan's python step whose code fails a static look (it does not
compile, it reads a name nothing defines, it neither prints nor writes) is written again once that way, before the
plan is shown and its risk computed; code that passes is kept as the planner wrote it. This only decides whether to
ask again: what the code does is judged by the sandbox when it runs, and its result by the task's checks.
"""

from __future__ import annotations

import ast
import os
import re
import stat
from collections.abc import Callable, Collection
from datetime import date
from pathlib import Path

from agent.plan_run.code_templates import (
    MOST_PARSED,
    PRINT_LINE,
    TEMPLATE,
    WORDS_TEMPLATE,
    Template,
    files_template,
    folder_template,
    read_before_set,
    template_for_text,
    undefined_names,
    with_print_line,
    with_template_lines,
)
from agent.plan_run.folder_files import extensions, folder_files
from agent.plan_run.operation_fitting import answers_one_value, fitted
from agent.plan_run.plan import Plan, Step
from agent.plan_run.task_reading import named_paths
from agent.plan_run.text_operations import (
    IN_PLACE,
    ON_FOLDER,
    PATTERNED,
    TextOperation,
    operation_code,
    operation_note,
)
from agent.plan_run.tools.base import ToolFailure
from agent.plan_run.tools.held_paths import WorkspaceRoot, path_parts
from agent.plan_run.tools.inputs import PythonInput, ReadTextInput, Ref, ShellInput, WriteTextInput
from agent.plan_run.yes_or_no import asks_yes_or_no

__all__ = ["CODE_PROMPT", "PRINT_LINE", "TEMPLATE", "WORDS_TEMPLATE", "Ask", "code_of", "code_problem", "first_lines"]
__all__ += ["fixed_code", "held_start", "what_ref_holds", "with_operation_code", "with_print_line"]
__all__ += ["with_working_code", "working_code"]

#: asks the model for a step's code: ``ask(messages, step_id)``, the reply's text (None: the request failed)
Ask = Callable[[list[dict[str, str]], int], str | None]

#: requests for one step's code: the first, and one with the problem of the code it gave
ATTEMPTS = 2
#: the lines of an input the code request shows, so that code is written for the data as it is (its columns,
#: separators, blank lines), as a person looks at a file before writing code for it
SAMPLE_LINES = 8
#: calls that put a result somewhere: printing it, or writing a file
_OUTPUT_CALLS = frozenset({"print", "write", "writelines", "write_text", "dump"})
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\n(.*?)```", re.DOTALL)
#: what omx added to a step's description ("(python by omx: ...)"): for the person, not for the model's request
_OMX_NOTE = re.compile(r"\s*\([^()]*\bby omx\b[^()]*\)\s*$")

CODE_PROMPT = (
    "You write the Python code of one step of a plan. It runs with the workspace folder as its working directory: "
    "it may read and write the workspace's files by their relative paths. Standard library only; it cannot start "
    "programs (no subprocess, no os.system). Before writing a file, create its folder "
    "(os.makedirs(folder, exist_ok=True)). Reply with the code only."
)


def code_problem(
    code: str, *, must_print: bool = False, copied: Collection[str] = (), given_input: bool = False
) -> str | None:
    """Why ``code`` cannot work as a step (None: nothing found); ``must_print``: a later step uses what it prints;
    ``copied``: code of the prompt's examples, which a step of another task only has by copying it;
    ``given_input``: the request said INPUT holds the text to work on, so code that never reads INPUT works on
    something else (a constant of its own, or the input's text pasted in as code).
    Names are resolved by Python's own symbol tables, so a name bound anywhere at module level (assigned, imported,
    a def, a loop variable) counts as defined."""
    try:
        tree = ast.parse(code)
        undefined = undefined_names(code)
    except (SyntaxError, ValueError) as exc:
        return f"it does not compile ({exc})"
    if undefined is None:
        return "it does not compile"
    if undefined:
        return f"it reads {', '.join(sorted(undefined))}, which nothing defines"
    if early := read_before_set(code):
        return f"it reads {', '.join(sorted(early))} before it sets it"
    if given_input and not _reads_input(tree):
        return "it never reads INPUT, which holds the text to work on"
    if any(isinstance(node, ast.Constant) and node.value is Ellipsis for node in ast.walk(tree)):
        return "it leaves a ... where the work goes"
    if code.strip() in copied:
        return "it is the code of the prompt's example, not of this task"
    calls = {_called(node) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    if must_print and "print" not in calls:
        return "it prints nothing, and a later step uses what it prints"
    if not calls & _OUTPUT_CALLS:
        return "it neither prints nor writes anything"
    return None


def _reads_input(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.Name) and node.id == "INPUT" for node in ast.walk(tree))


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def with_working_code(plan: Plan, task: str, ask: Ask, copied: Collection[str] = ()) -> Plan:
    """``plan`` with the code of each python step that has a ``code_problem`` written again: ``ask(messages,
    step_id)`` asks the model (None: the request failed), and once more with the new code's problem if it has one.
    New code replaces the old only if it has no problem itself; otherwise the step stays as planned, and fails or
    passes when it runs."""
    steps = []
    for step in plan.steps:
        code = step.inputs.code if isinstance(step.inputs, PythonInput) else None
        if code is not None and code_problem(code, must_print=_used_later(plan, step), copied=copied):
            step = working_code(plan, _with_input(plan, step), task, ask) or step
        steps.append(step)
    return plan.model_copy(update={"steps": steps})


def with_operation_code(
    plan: Plan, task: str, output: str, operation: TextOperation, *, counted: bool, shape: str = "free"
) -> Plan:
    """``plan`` with the code of its python step that has none yet and writes the task's ``output`` whole made omx's
    code of ``operation`` (the one the model picked for ``task``: ``text_operations``) where it fits: an operation
    on a text, for a step given the text of a file a read_text step reads; an operation on a folder's files, for a
    step given nothing, where the task names a folder that is there (its files given to the code as data, as the
    code request's template gives them). ``counted``: the task asks how many, and a filter of lines prints how
    many it keeps. The plan as it was where there is no such step, the operation does not fit, makes no one value
    where the model read the output as one (``shape``: ``answers_one_value``), or the output is the file the text
    is read from and the operation is no edit of it (``IN_PLACE``: a count written over a list is the list lost)."""
    writers = set(plan.whole_writers(output))
    for step in plan.steps:
        inputs = step.inputs
        if step.id not in writers or not isinstance(inputs, PythonInput) or inputs.code.strip():
            continue
        code = _operation_code(plan, inputs, task, output, operation, counted, shape)
        if code is None:
            continue
        note = f" {operation_note(operation)}"
        given = inputs.model_copy(update={"code": code})
        plan = plan.with_step(step.model_copy(update={"inputs": given, "description": step.description + note}))
    return plan


def _operation_code(
    plan: Plan, inputs: PythonInput, task: str, output: str, operation: TextOperation, counted: bool, shape: str
) -> str | None:
    """The code of ``operation`` for a python step with ``inputs`` (see ``with_operation_code``), or None."""
    workspace = Path(plan.workspace_root)
    if operation.op in ON_FOLDER:
        template = _folder_template(workspace, task, output) if inputs.input is None else None
        fit = fitted(_with_pattern(operation, task), "", named_paths(task), task) if template is not None else None
        return "\n".join([*template.head, operation_code(fit)]) if template is not None and fit is not None else None
    source = _read_path(plan, inputs.input.step_id) if isinstance(inputs.input, Ref) else None
    sample = first_lines(workspace, source) if source is not None else None
    fit = fitted(operation, sample, named_paths(task), task) if sample is not None else None
    if fit is None or not answers_one_value(fit, task, shape, counted):
        return None
    if source is not None and _same_path(source, output) and fit.op not in IN_PLACE:
        return None  # a value, or text drawn out of the file, written over the file it was made of is data lost
    return operation_code(fit, counted=counted)


def _same_path(one: str, other: str) -> bool:
    return os.path.normpath(one) == os.path.normpath(other)


def _with_pattern(operation: TextOperation, task: str) -> TextOperation:
    """An operation on some of a folder's files picked without their pattern, given the one the task names by
    extension ("the .txt files": '*.txt'); the 0.5B model left it out, and the folder's notes were joined in."""
    wanted = extensions(task)
    if operation.op not in PATTERNED or operation.text or not wanted:
        return operation
    return operation.model_copy(update={"text": "|".join(f"*{ext}" for ext in sorted(wanted))})


def _with_input(plan: Plan, step: Step) -> Step:
    """A python step without an input that follows a step whose output no step uses gets that output as its input:
    the 0.5B model read data/numbers.txt in one step and summed ``numbers`` in the next, which nothing defined."""
    inputs = step.inputs
    before = [s for s in plan.steps if s.id < step.id]
    if not isinstance(inputs, PythonInput) or inputs.input is not None or not before or _used_later(plan, before[-1]):
        return step
    given = inputs.model_copy(update={"input": Ref(ref=f"step:{before[-1].id}.output")})
    return step.model_copy(update={"inputs": given})


def working_code(plan: Plan, step: Step, task: str, ask: Ask) -> Step | None:
    """python ``step`` of ``plan`` with code asked for on its own (see the module), or None when the model gave no
    code without a ``code_problem`` in ``ATTEMPTS`` requests."""
    assert isinstance(step.inputs, PythonInput)
    must_print = _used_later(plan, step)
    template = _template(plan, step, task, must_print)
    return _asked(step, _request(plan, step, task, must_print, template), ask, must_print, template)


def fixed_code(plan: Plan, step: Step, task: str, ask: Ask, failure: str) -> Step | None:
    """python ``step`` of ``plan`` with its code asked for again after it ran: the step's request anew, told
    ``failure`` (its error, or what it printed and what the task wants instead). None when the model gave no working
    code, or the same code again. Shown its own code and what came of it, the 0.5B model returned that code every
    time; asked anew, told only what was wrong, it wrote the filter it had got wrong."""
    assert isinstance(step.inputs, PythonInput)
    old = step.inputs.code
    must_print = _used_later(plan, step)
    template = _template(plan, step, task, must_print)
    fixed = _asked(step, _request(plan, step, task, must_print, template, failure), ask, must_print, template)
    if fixed is None or " ".join(_code(fixed).split()) == " ".join(old.split()):
        return None
    return fixed


def _code(step: Step) -> str:
    assert isinstance(step.inputs, PythonInput)
    return step.inputs.code


def _template(plan: Plan, step: Step, task: str, must_print: bool) -> Template | None:
    """The template the request for ``step``'s code gives it to complete (``code_templates``), answering yes or no
    where the task asks so (``yes_or_no``); None where no later step uses what it prints."""
    template = _given_template(plan, step, task, must_print)
    if template is None or not asks_yes_or_no(task) or template.replaces is not None:
        return template
    return template.answering_yes_or_no()


def _given_template(plan: Plan, step: Step, task: str, must_print: bool) -> Template | None:
    """The template for what ``step`` is given: for its INPUT (the data parsed, where INPUT is a file's text that
    parses), or for the files the task names that are there, which the code reads itself, or, where it names none
    but its output, for the files of a folder it names (given as data); None where no later step uses what it
    prints."""
    assert isinstance(step.inputs, PythonInput)
    if not must_print:
        return None
    given, workspace = step.inputs.input, Path(plan.workspace_root)
    if isinstance(given, Ref):
        path = _read_path(plan, given.step_id)
        held = held_start(workspace, path, MOST_PARSED + 1) if path is not None else None
        text = held.decode("utf-8", errors="replace") if held is not None else None
        template = template_for_text(task, path, text)
        written = _written_to(plan, step)
        return template.in_place(written) if written is not None and _same(path, written) else template
    if given is not None:
        return None
    written = _written_to(plan, step)
    there = [name for name in named_paths(task) if held_start(workspace, name, 0) is not None]
    read = [name for name in there if written is None or os.path.normpath(name) != os.path.normpath(written)]
    folder = None if read else _folder_template(workspace, task, written)
    return folder or (files_template(read or there) if there else None)


def _folder_template(workspace: Path, task: str, written: str | None) -> Template | None:
    """The template that gives the code the files of the first folder the task names that is there
    (``folder_files``), the folder the output goes to aside; None where there is none."""
    for name in named_paths(task):
        inside = written is not None and os.path.normpath(written).startswith(os.path.normpath(name) + "/")
        listed = folder_files(workspace, name) if name.endswith("/") and not inside else None
        if listed is not None:
            return folder_template(name, *listed, date.today().isoformat())
    return None


def _same(path: str | None, other: str) -> bool:
    return path is not None and os.path.normpath(path) == os.path.normpath(other)


def _read_path(plan: Plan, step_id: int) -> str | None:
    """The file a read_text step ``step_id`` reads (None: that step is no read_text)."""
    source = next((s for s in plan.steps if s.id == step_id), None)
    return source.inputs.path if source is not None and isinstance(source.inputs, ReadTextInput) else None


def _asked(
    step: Step, messages: list[dict[str, str]], ask: Ask, must_print: bool, template: Template | None
) -> Step | None:
    """``step`` with the code the model gives for ``messages``, asked once more with the problem of code that cannot
    work; None when no code without a problem came back. ``template``: the one the request gave, whose own lines
    the code gets back (``with_template_lines``); code given INPUT must read it."""
    assert isinstance(step.inputs, PythonInput)
    for _attempt in range(ATTEMPTS):
        reply = ask(messages, step.id)
        if reply is None:
            break
        code = with_template_lines(code_of(reply), template) if template is not None else code_of(reply)
        given_input = template is not None and template.given_input
        problem = code_problem(code, must_print=must_print, given_input=given_input)
        if problem is None:
            return step.model_copy(update={"inputs": step.inputs.model_copy(update={"code": code})})
        messages = [
            *messages,
            {"role": "assistant", "content": reply},
            {"role": "user", "content": f"That code cannot work: {problem}. Reply with the corrected code."},
        ]
    return None


def _request(
    plan: Plan, step: Step, task: str, must_print: bool, template: Template | None, failure: str | None = None
) -> list[dict[str, str]]:
    """The request for ``step``'s code, with ``template`` to complete; ``failure``: what was wrong with the code it
    ran before."""
    assert isinstance(step.inputs, PythonInput)
    lines = [f"Task: {task}", f"This step: {_OMX_NOTE.sub('', step.description)}"]
    given, written = step.inputs.input, _written_to(plan, step)
    told = [failure] if failure else []
    goes = f"What the code prints is written to {written}." if written else "A later step uses what it prints."
    if isinstance(given, Ref) and written is not None and _same(_read_path(plan, given.step_id), written):
        goes = f"What the code prints replaces {written} whole (INPUT is its text now): print all of its new text."
    if isinstance(given, Ref) and must_print:
        holds = f"INPUT holds {what_ref_holds(plan, given.step_id)} (the text itself, not a file name)."
        lines += [f"{holds} {goes}", *_sample(plan, given.step_id), *told]
    elif must_print:
        lines += [f"The code reads the files it needs itself and prints the result. {goes}", *told]
    else:
        lines += ["The code reads the files it needs itself and writes the file the task asks for.", *told]
    if template is not None:
        lines.append(f"Complete this code (replace the ...):\n{template.text()}")
    return [{"role": "system", "content": CODE_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


def _written_to(plan: Plan, step: Step) -> str | None:
    """The file a later write_text step writes this step's output to, if one does."""
    for later in plan.steps:
        inputs = later.inputs
        if isinstance(inputs, WriteTextInput) and isinstance(inputs.content, Ref) and inputs.content.step_id == step.id:
            return inputs.path
    return None


def _used_later(plan: Plan, step: Step) -> bool:
    return any(ref.step_id == step.id for later in plan.steps for ref in later.inputs.refs())


def what_ref_holds(plan: Plan, step_id: int) -> str:
    source = next((s for s in plan.steps if s.id == step_id), None)
    if source is None:
        return f"the output of step {step_id}"
    if isinstance(source.inputs, ReadTextInput):
        return f"the text of {source.inputs.path}"
    if isinstance(source.inputs, ShellInput):
        return f"what the command `{source.inputs.cmd}` printed"
    return f"the output of step {step_id} ({source.description})"


def _sample(plan: Plan, step_id: int) -> list[str]:
    """The lines that show how the file INPUT is read from begins, where a read_text step gives it."""
    source = next((s for s in plan.steps if s.id == step_id), None)
    if source is None or not isinstance(source.inputs, ReadTextInput):
        return []
    begins = first_lines(Path(plan.workspace_root), source.inputs.path)
    return [f"{source.inputs.path} begins:\n```\n{begins}\n```"] if begins else []


def first_lines(workspace: Path, path: str, lines: int = SAMPLE_LINES, most: int = 4096) -> str | None:
    """The first ``lines`` lines of the workspace's file ``path`` as it is now, each cut at 160 characters (None:
    no such regular file, or not UTF-8 text). Opened as ``held_start`` opens it: a link is not followed."""
    head = held_start(workspace, path, most)
    if head is None:
        return None
    if len(head) == most:  # a line cut short, perhaps inside a character, is not shown
        head = head[: head.rfind(b"\n") + 1]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "\n".join(line[:160] for line in text.splitlines()[:lines]) or None


def held_start(workspace: Path, path: str, most: int) -> bytes | None:
    """The first ``most`` bytes of the workspace's regular file ``path`` (None: no such file). Opened from the
    workspace's root without following a symlink: an agent's link to a file outside it is neither read nor sent to
    the model."""
    try:
        parts = path_parts(path)
        if not parts:
            return None
        with WorkspaceRoot(workspace) as root, root.parent(parts) as parent:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            with os.fdopen(os.open(parts[-1], flags, dir_fd=parent), "rb") as file:
                if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                    return None
                return file.read(most)
    except (OSError, ToolFailure):
        return None


def code_of(reply: str) -> str:
    """The code in a reply: the first fenced block, or the whole reply when it has none."""
    fenced = _FENCE.search(reply)
    return (fenced.group(1) if fenced else reply).strip()
