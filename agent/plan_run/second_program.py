"""A value made by code is checked only when a second program, asked for apart, prints the same.

That code made a task's value from its input proves where the value came from, not that it is right: the 1.5B
model's code summed the wrong column of a CSV file, printed 0, and the run was a success. So where every check of a
run is met and its value came from code (``agent.plan_run.value_checks``), omx asks the model for a second program by a
request of its own, worded apart from the first code request and shown neither the first program nor what it
printed (at temperature 0 the same request gives the same code). It runs as a python step runs (``tools.python``:
the same sandbox), on the same input: the first program's INPUT, or the files the task names, which it reads
itself (a folder's files listed with their sizes and dates, as the first program was given them). What it prints
is compared with what the output holds, whitespace aside and numbers as numbers (49.75 is 49.750), JSON as the data
it holds (however indented):

- the same: the value is checked, a check ``[met]`` of what the output holds (also where no other check was);
- another value: the check is not met; which of the two is wrong is not known, so the run is "done, form checked,
  value not checked" (``agent.plan_run.verdict``), not failed;
- no value (the request failed, no code that can work came back, it failed when it ran): the check is not checked,
  and the run is "done, form checked, value not checked" too.

The trace has both values and the second program (``second_program``). Two programs that print the same wrong value
stay possible: a small model errs the same way twice less often than once.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from agent.model.llm import LLMError
from agent.plan_run.code_steps import ATTEMPTS, code_of, code_problem, first_lines, held_start, what_ref_holds
from agent.plan_run.code_templates import with_last_value_printed
from agent.plan_run.criteria import MAX_READ, CriterionCheck, CriterionStatus
from agent.plan_run.executor import ExecutionResult
from agent.plan_run.folder_files import FolderFiles, folder_files
from agent.plan_run.plan import Plan, Step
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.tools.base import ToolContext
from agent.plan_run.tools.inputs import PythonInput, ReadTextInput, Ref
from agent.plan_run.tools.python import python
from agent.plan_run.value_checks import value_maker
from agent.plan_run.verdict import run_status, unmet_error, value_to_compare
from agent.plan_run.yes_or_no import answer_in
from agent.record.trace import RecordingModel, RunEntry, RunRecorder, preview, read_output

__all__ = ["SECOND_CHECK", "SECOND_PROMPT", "same_value", "second_checked"]

#: the check a second program's value adds to a run's criteria
SECOND_CHECK = "a second program, written apart, printed the same value"
SECOND_PROMPT = (
    "You write a short, self-contained Python program that answers a question about files and prints the answer. "
    "It runs in the folder that holds the files and reads them by their relative paths. Standard library only; it "
    "cannot start programs. It prints the answer alone, exactly as it would be written to a file, and writes no "
    "file. Reply with the program only."
)
#: the calls of code that writes or removes files: the second program only prints
_WRITING_CALLS = frozenset(
    {"write", "writelines", "write_text", "write_bytes", "dump", "makedirs", "mkdir", "remove", "unlink", "rename",
     "rmtree", "rmdir"}
)  # fmt: skip
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def same_value(first: str, second: str) -> bool:
    """Whether two programs printed the same value: the same JSON data where both printed JSON (an object or an
    array, however indented), else the same non-empty lines, each the same words once whitespace is normalised,
    where numbers compare as numbers (``49.75`` and ``49.750``; integers exactly, decimals to 1e-9), and a Python
    list printed as such is the lines, or the CSV rows, it holds (``_lines``); a yes or a no the same answer
    however written (``yes``, ``True``, ``No.``)."""
    if (answer := answer_in(first)) is not None:
        return answer == answer_in(second)
    data_a, data_b = _json(first), _json(second)
    if data_a is not None and data_b is not None:
        return data_a == data_b
    lines_a = [line.split() for line in _lines(first)]
    lines_b = [line.split() for line in _lines(second)]
    if len(lines_a) != len(lines_b):
        return False
    return all(
        len(a) == len(b) and all(_same_word(x, y) for x, y in zip(a, b, strict=True))
        for a, b in zip(lines_a, lines_b, strict=True)
    )


def _lines(text: str) -> list[str]:
    """The non-empty lines of what a program printed, where a list printed as Python writes it is read as the data it
    holds: ``['a', 'b']`` whole as the lines a and b, ``['1', 'ann']`` on a line as the CSV row 1,ann. A second
    program printed the rows it kept as Python lists, the first as CSV, and the two were told apart by that alone."""
    whole = _literal(text.strip())
    if isinstance(whole, list | tuple) and whole and not any(isinstance(item, dict) for item in whole):
        return [_row(item) for item in whole]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [_row(value) if isinstance(value := _literal(line), list | tuple) else line for line in lines]


def _literal(text: str) -> Any:
    """``text`` read as a Python literal (None: it is none)."""
    if not text.startswith(("[", "(")):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _row(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def _json(text: str) -> dict[str, Any] | list[Any] | None:
    """``text`` parsed as a JSON object or array, or None."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict | list) else None


def _same_word(a: str, b: str) -> bool:
    if a == b:
        return True
    if not (_NUMBER.fullmatch(a) and _NUMBER.fullmatch(b)):
        return False
    try:
        if Decimal(a) == Decimal(b):
            return True
    except InvalidOperation:
        return False
    if not any(c in a + b for c in ".eE"):  # two integers: equal only exactly
        return False
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


def _writes(code: str) -> str | None:
    """Why ``code`` would change the workspace (it writes, makes or removes a file), or None."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None  # ``code_problem`` says why it cannot work
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in _WRITING_CALLS:
            return f"it calls {name}(), and the program must write no file"
        if name == "open":  # open(path, mode) or a Path's open(mode)
            given = node.args[1:2] if isinstance(func, ast.Name) else node.args[:1]
            modes = [*given, *(k.value for k in node.keywords if k.arg == "mode")]
            if any(isinstance(m, ast.Constant) and isinstance(m.value, str) and set(m.value) & set("wax+")
                   for m in modes):  # fmt: skip
                return "it opens a file for writing, and the program must write no file"
    return None


def _reads_output(code: str, output: str) -> str | None:
    """Why ``code`` would check the output by reading it (a string in it names ``output``, by its path or its file
    name), or None (also where ``output`` is '': a file the task changes in place is its input too): a program
    that prints what the output holds agrees with anything. The 0.5B model's second program, given the input as
    INPUT, opened the task's output and printed its rows again. A look, not a wall: a path built from parts is not
    seen (what it prints is still compared with the value)."""
    if not output:
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None  # ``code_problem`` says why it cannot work
    named = {os.path.normpath(output), os.path.basename(output)}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.strip()
            and os.path.normpath(node.value.strip().removeprefix("./")) in named
        ):
            return f"it reads {output}, the answer it is compared with; work it out from the question's input"
    return None


def _given(plan: Plan, maker: Step, run_dir: Path) -> tuple[str | None, str]:
    """The second program's INPUT (the first's, where it had one: None, where it reads files itself) and what the
    request says of it ("" where it reads the files itself)."""
    inputs = maker.inputs
    if not isinstance(inputs, PythonInput) or inputs.input is None:
        return None, ""
    if isinstance(inputs.input, str):
        return inputs.input, f"The variable INPUT holds this text:\n```\n{preview(inputs.input, 600)}\n```"
    step_id = inputs.input.step_id
    source = next((s for s in plan.steps if s.id == step_id), None)
    path = source.inputs.path if source is not None and isinstance(source.inputs, ReadTextInput) else None
    begins = first_lines(Path(plan.workspace_root), path) if path is not None else None
    shown = f"; it begins:\n```\n{begins}\n```" if begins else ""
    told = f"The variable INPUT holds {what_ref_holds(plan, step_id)} (the text itself, not a file name){shown}"
    return read_output(run_dir, step_id), told


def _files(expected: TaskExpectations) -> str:
    """What the request says of the files the program reads itself: each, with its first lines."""
    if not expected.sources:
        return "The question names no file: compute the answer from its own words."
    parts = ["The program reads what it needs itself:"]
    for name in expected.sources:
        begins = None if name.endswith("/") else first_lines(expected.workspace, name)
        listed = folder_files(expected.workspace, name) if name.endswith("/") else None
        parts.append(f"- {name}" + (f", which begins:\n```\n{begins}\n```" if begins else _folder(listed)))
    return "\n".join(parts)


def _folder(listed: FolderFiles | None) -> str:
    """What the request says of a folder's files, as the first code was given them (``folder_files``)."""
    if listed is None:
        return ""
    files, more = listed
    shown = "\n".join(f"{entry['path']}  {entry['size']} bytes  modified {entry['modified']}" for entry in files)
    cut = f" (the first {len(files)})" if more else ""
    return f", a folder whose files are{cut}:\n```\n{shown}\n```\nToday is {date.today().isoformat()}."


def _in_place(output: str, plan: Plan, maker: Step, expected: TaskExpectations) -> str:
    """What the request says where the task changes its input in place (the first program's INPUT is the output's
    text, or the output is a file the task reads): the answer is that file's whole new text. Asked to add a line
    to a list, the 0.5B model's second program wrote the file."""
    given = maker.inputs.input if isinstance(maker.inputs, PythonInput) else None
    source = next((s for s in plan.steps if isinstance(given, Ref) and s.id == given.step_id), None)
    read = {source.inputs.path} if source is not None and isinstance(source.inputs, ReadTextInput) else set()
    if os.path.normpath(output) not in {os.path.normpath(path) for path in (*read, *expected.sources)}:
        return ""
    return f"\nThe answer is the whole new text of {output}, as the task leaves it: print all of it."


def _request(task: str, told: str) -> list[dict[str, str]]:
    question = (
        f"Question: {task}\n{told}\nWrite a program that works out the answer to this question and prints only "
        "that answer, nothing around it; it writes no file (the answer is compared with one found another way)."
    )
    return [{"role": "system", "content": SECOND_PROMPT}, {"role": "user", "content": question}]


def _ask(model: RecordingModel, messages: list[dict[str, str]], step_id: int, output: str) -> tuple[str | None, str]:
    """The second program's code, asked once more with the problem of code that cannot work, writes a file or reads
    ``output`` (see ``_reads_output``); None and why when none came back."""
    before = (model.purpose, model.step_id)
    model.purpose, model.step_id = "second_program", step_id
    problem = "no reply"
    try:
        for _attempt in range(ATTEMPTS):
            try:
                reply = model.complete(list(messages)).content or ""
            except LLMError as exc:
                return None, f"the model's request failed ({str(exc).splitlines()[0]})"
            code = with_last_value_printed(code_of(reply))
            problem = code_problem(code, must_print=True) or _writes(code) or _reads_output(code, output) or ""
            if not problem:
                return code, ""
            messages = [
                *messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": f"That program cannot be used: {problem}. Reply with the corrected one."},
            ]
    finally:
        model.purpose, model.step_id = before
    return None, f"no program that can work came back ({problem})"


def second_checked(
    result: ExecutionResult,
    plan: Plan,
    task: str,
    expected: TaskExpectations,
    ctx: ToolContext,
    recorder: RunRecorder,
    disputed: bool = False,
) -> ExecutionResult:
    """``result`` with the check of a second program (see the module) and its status decided again, where the
    run awaits only that value to be a success: every check met, and the task's value came from code
    (``verdict.value_to_compare``); else ``result`` as it is. ``disputed``: two programs written apart printed
    different values earlier in this run, so two that agree now do not settle the value (programs by the same model
    can share a mistake): the check is not checked, never met."""
    output, model = expected.output, ctx.model
    maker = value_maker(plan, output) if output is not None else None
    if result.status == "failed" or not value_to_compare(result.criteria) or output is None or maker is None:
        return result
    if not isinstance(model, RecordingModel):
        return result  # every run of omx "TASK" has a recording model; a caller without one checks nothing more
    first = _held(expected.workspace, output)
    given, told = _given(plan, maker, recorder.run_dir)
    in_place = _in_place(output, plan, maker, expected)  # the output is the input too: it is read
    told = (told or _files(expected)) + in_place
    compared_with = "" if in_place else output
    asked = first is not None and bool(first.strip())  # nothing to compare: two programs that print nothing agree
    code, why = _ask(model, _request(task, told), maker.id, compared_with) if asked else (None, "")
    second: str | None = None
    if code is not None:
        timeout = maker.inputs.timeout if isinstance(maker.inputs, PythonInput) else None
        ran = python(PythonInput(code=code, input=given, timeout=timeout), ctx)
        if not ran.ok:
            why = f"it failed: {ran.error}"
        elif ran.details.get("truncated"):
            why = "it printed more than omx keeps of a program's output"
        elif _held(expected.workspace, output) != first:  # code that writes no file by its look wrote one all the same
            why = f"it changed {output}"
        else:
            second = ran.output
    status, detail = _compared(output, first, second, why)
    if disputed and status == "met":
        status, detail = "not checked", f"{detail}; but two programs printed different values earlier in this run"
    recorder.record(
        RunEntry(
            event="second_program",
            data={"step": maker.id, "status": status, "first": preview(first, 2000), "second": preview(second, 2000),
                  "error": why or None, "code": code,
                  "input": "INPUT" if given is not None else list(expected.sources)},
        )
    )  # fmt: skip
    check = CriterionCheck(criterion=SECOND_CHECK, status=status, detail=detail, kind="value", source="code")
    checks = [*result.criteria, check]
    return result.model_copy(update={"criteria": checks, "status": run_status(checks), "error": unmet_error(checks)})


def _held(workspace: Path, output: str) -> str | None:
    """What the output file holds (None: not a regular file of the workspace, reached through no link, that omx
    reads whole)."""
    held = held_start(workspace, output, MAX_READ + 1)
    return held.decode("utf-8", errors="replace") if held is not None and len(held) <= MAX_READ else None


def _compared(output: str, first: str | None, second: str | None, why: str) -> tuple[CriterionStatus, str]:
    """The check's status and detail from what the output holds (``first``) and what the second program printed."""
    if first is None:
        return "not checked", f"{output} cannot be read whole to compare"
    if not first.strip():
        return "not checked", f"{output} is empty: there is no value to compare"
    if second is None:
        return "not checked", f"the second program gave no value: {why}"
    if same_value(first, second):
        return "met", preview(first.strip(), 40)
    return "not met", f"it printed {preview(second.strip(), 40)!r}, {output} holds {preview(first.strip(), 40)!r}"
