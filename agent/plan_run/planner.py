"""Turn a task into a plan: ask the model for plan format v1 as JSON, validate it, retry once.

The retry shows the model its own reply and the validation errors, which is what it needs to fix them; a second
invalid reply is a clear failure (``PlanningError``) rather than a loop. The model never chooses where the plan
runs: ``workspace_root`` is set to the real workspace afterwards.

The plan is asked with its JSON schema where the server takes it, else in JSON mode
(``agent.model.schema_request``, where ``OMX_RESPONSE_FORMAT`` may pin one way of asking). The schema is made for
the run (``run_schema``): the run's tools, and the workspace's files as the paths a step may read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.model.errors import advice
from agent.model.llm import LLMError, Model, ModelReply
from agent.model.schema_request import SCHEMA_REFUSED, complete_with_schema
from agent.plan_run.code_fix import CodeAtFault
from agent.plan_run.code_steps import Ask, fixed_code, with_operation_code, with_working_code
from agent.plan_run.completion import completed, unwritten
from agent.plan_run.criteria_prompt import CRITERIA_RULES, EXAMPLE_CRITERIA
from agent.plan_run.feasibility import infeasible
from agent.plan_run.listings import with_listings
from agent.plan_run.output_maker import with_code_for_exact_work, with_model_for_prose
from agent.plan_run.plan import Plan, validation_summary
from agent.plan_run.reading_plan import plan_from_reading
from agent.plan_run.run_schema import RunSchema, run_plan_schema, writable_paths
from agent.plan_run.self_refs import with_self_refs_mended
from agent.plan_run.shell_policy import ALLOW_LIST
from agent.plan_run.task_checks import TaskExpectations
from agent.plan_run.task_files import with_task_files
from agent.plan_run.task_prompt import with_task_words
from agent.plan_run.task_reading import named_paths
from agent.plan_run.tools.inputs import TOOL_INPUTS, WriteTextInput
from agent.record.trace import RecordingModel, RunEntry

__all__ = ["SCHEMA_REFUSED", "Planner", "PlanningError", "invalid_plan_text", "system_prompt"]

LISTING_LIMIT = 60
SKIPPED_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "runs", ".omxfs", ".mypy_cache"}


def _example(goal: str, risk: str, steps: list[dict[str, Any]], criteria: list[str]) -> dict[str, Any]:
    """An example plan in plan format v1, its steps numbered in order."""
    numbered = [{"id": n, **step} for n, step in enumerate(steps, 1)]
    return {"version": 1, "goal": goal, "risk_level": risk, "workspace_root": ".", "steps": numbered,
            "success_criteria": criteria}  # fmt: skip


def _read_step(path: str, produces: str) -> dict[str, Any]:
    return {"description": f"Read the {produces}", "tool": "read_text", "inputs": {"path": path}, "produces": produces}


def _write_step(description: str, path: str) -> dict[str, Any]:
    """The last step of an example: write what step 2 made to ``path``."""
    inputs = {"path": path, "content": {"ref": "step:2.output"}, "mode": "overwrite"}
    return {"description": description, "tool": "write_text", "inputs": inputs, "produces": path}


#: the plans the prompt shows, one for each way a task's text is worked on: prose by the model (an llm step), exact
#: work by code (a python step given the text as INPUT). With only the first, the 0.5B model planned every task as
#: read, llm, write, and asked the llm step to count lines, sort names and upper-case a file, which it cannot do
#: reliably; the second shows the way that can.
EXAMPLES = [
    _example(
        "Turn the trip plan in travel/itinerary.txt into 3 packing reminders in out/packing.md",
        "LOW",
        [
            _read_step("travel/itinerary.txt", "itinerary"),
            {
                "description": "Write the reminders",
                "tool": "llm",
                "inputs": {
                    "prompt": "Write 3 packing reminders, one '- ' line each",
                    "input": {"ref": "step:1.output"},
                },
                "produces": "reminders",
            },
            _write_step("Save the reminders", "out/packing.md"),
        ],
        EXAMPLE_CRITERIA,
    ),
    _example(
        "Drop the blank lines of garden/seeds.txt and save what is left in out/seeds.txt",
        "MEDIUM",
        [
            _read_step("garden/seeds.txt", "seed list"),
            {
                "description": "Keep the lines that are not blank",
                "tool": "python",
                "inputs": {
                    "code": "print('\\n'.join(line for line in INPUT.splitlines() if line.strip()))",
                    "input": {"ref": "step:1.output"},
                },
                "produces": "seed lines",
            },
            _write_step("Save them", "out/seeds.txt"),
        ],
        ["out/seeds.txt exists"],
    ),
]


class PlanningError(Exception):
    """No valid plan: the model failed, or returned an invalid plan twice. ``replies`` keeps what it said;
    ``problems`` is what was wrong with the last reply when the model answered but never with a valid plan (a
    re-plan may fix that, while a model that failed would fail again)."""

    def __init__(self, message: str, replies: list[str] | None = None, problems: str | None = None) -> None:
        super().__init__(message)
        self.replies = replies or []
        self.problems = problems


#: the code of the examples' python steps: a step of another task has it only by copying it (``code_steps``)
EXAMPLE_CODE = [s["inputs"]["code"] for example in EXAMPLES for s in example["steps"] if s["tool"] == "python"]


def invalid_plan_text(problems: str) -> str:
    """What a re-plan after plans still invalid after their retry tells the model (``Planner.replan``)."""
    return (
        f"Your last plans for this task were invalid:\n{problems}\nUse only the tools listed, with exactly their "
        'inputs (text inputs are strings, or {"ref": "step:N.output"} where the rules allow it).'
    )


def _tool_lines() -> str:
    lines = []
    for name, model in TOOL_INPUTS.items():
        fields = ", ".join(name if field.is_required() else f"{name}?" for name, field in model.model_fields.items())
        lines.append(f"- {name} {{{fields}}}: {' '.join((model.__doc__ or '').split())}")
    return "\n".join(lines)


def _workspace_section(agent: str, team: tuple[str, ...]) -> str:
    """On an omxfs mount: the shared-workspace tools as plan tools, and the zones they work on."""
    from agent.workspace_tools import get_tool_definitions
    from agent.workspace_tools import system_prompt as zones

    lines = []
    for tool in get_tool_definitions():
        params = tool["parameters"]
        required = set(params.get("required", []))
        fields = ", ".join(name if name in required else f"{name}?" for name in params["properties"])
        lines.append(f"- {tool['name']} {{{fields}}}: {tool['description'].splitlines()[0]}")
    return f"""

This workspace is an omxfs mount shared by a team of agents. These shared-workspace tools are plan tools too;
their inputs are the tool's arguments, and a text argument (content, message) may be {{"ref": "step:N.output"}}.
Their output is the tool's JSON result. If a collab_write meets a conflict when the plan runs, you will be asked
to merge and write again. Use them for every file in agents/, handoff/, collaborative/ and realtime/.
{chr(10).join(lines)}

{zones(agent, team)}"""


def system_prompt(workspace_agent: str | None = None, team: tuple[str, ...] = ()) -> str:
    """The planner's instructions; with ``workspace_agent``, also the shared-workspace tools of an omxfs mount."""
    shared = _workspace_section(workspace_agent, team or (workspace_agent,)) if workspace_agent else ""
    return f"""You plan tasks for omx, a local assistant that runs tools in a sandboxed workspace.
Reply with one JSON object: a plan in plan format v1 (the fields of the example below; no other fields).
No prose, no code fences.

Tools and their inputs (? = optional):
{_tool_lines()}

Rules:
- Paths are relative to the workspace root: no absolute paths, no '..'.
- A step's output is used by a later step as {{"ref": "step:N.output"}}, only in write_text content, llm
  prompt/input and python input. Paths, commands and code are literal.
- Use llm for prose (summaries, titles, descriptions). Use python with an input for exact work on text: counting,
  sorting, filtering, picking lines, changing case, replacing words, JSON and CSV; its code gets the text as INPUT
  and prints the result.
- shell runs one command without a shell; allowed: {ALLOW_LIST}. No pipes, redirections, ';', '&&' or '$(...)'.
- Only move, copy, make_dir and delete move, rename, copy or delete files and make directories: shell and python
  code must not. Each step acts on one path, named in full (a target too); a person confirms every move and delete.
- Prefer read_text/list_dir/write_text over shell. Keep plans short: only the steps the task needs.
- risk_level: LOW (reads, new files, copies, new directories), MEDIUM (overwrites existing files, runs code), HIGH
  (moves, deletes, anything destructive).
{CRITERIA_RULES}

Examples:
{chr(10).join(json.dumps(example) for example in EXAMPLES)}{shared}"""


def _unfit(plan: Plan, workspace: Path, expected: TaskExpectations, writable: list[str] | None) -> list[str]:
    """Why ``plan`` cannot do the task ``expected`` describes (empty: nothing found); ``writable``: the paths its
    write_text steps may write (``run_schema.writable_paths``; None: any)."""
    missing = [
        f"no step writes {path}, which the task asks for: add the write_text step that writes it, with the content "
        "of the step that makes it"
        for path in unwritten(plan, list(expected.outputs))
    ]
    stray = [
        f"step {step.id} writes {step.inputs.path}, which the task does not ask for: write to "
        f"{' or '.join(expected.outputs)} instead"
        for step in plan.steps
        if isinstance(step.inputs, WriteTextInput) and writable is not None
        and os.path.normpath(step.inputs.path) not in writable
    ]  # fmt: skip
    return missing + stray + infeasible(plan, workspace, expected)


def _corrected(reply: str, problem: str) -> list[dict[str, Any]]:
    """The messages that show the model its reply and what is wrong with it, and ask for the plan again."""
    return [
        {"role": "assistant", "content": reply},
        {"role": "user", "content": f"{problem}\nReply with the corrected plan: one JSON object in plan format v1, "
         "nothing else."},
    ]  # fmt: skip


def workspace_listing(workspace: Path, limit: int = LISTING_LIMIT) -> str:
    """The first files of the workspace (two levels), so the model plans with real paths."""
    entries: list[str] = []
    try:
        for entry in sorted(workspace.iterdir()):
            if entry.name in SKIPPED_DIRS:
                continue
            entries.append(entry.name + ("/" if entry.is_dir() else ""))
            if entry.is_dir() and not entry.is_symlink():
                entries += [
                    f"{entry.name}/{sub.name}" + ("/" if sub.is_dir() else "") for sub in sorted(entry.iterdir())
                ]
    except OSError:
        pass
    shown = entries[:limit]
    more = [f"... and {len(entries) - limit} more"] if len(entries) > limit else []
    return "\n".join(shown + more) or "(empty)"


def _extract_json(content: str) -> Any:
    """The JSON object in a reply: the whole text, or inside a code fence, or from the first '{' to the last '}'."""
    text = content.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(text[start : end + 1])
            except json.JSONDecodeError:
                pass
        raise ValueError(f"the reply is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


def _validate(content: str | None) -> Plan:
    if not content or not content.strip():
        raise ValueError("the reply is empty")
    data = with_self_refs_mended(_extract_json(content))
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise ValueError(validation_summary(exc)) from None


class Planner:
    """Plans with ``model``; ``on_invalid(attempt, reply, problems)`` hears about each rejected reply (the trace)."""

    def __init__(
        self,
        model: Model,
        *,
        on_invalid: Callable[[int, str, str], None] | None = None,
        workspace_agent: str | None = None,
        team: tuple[str, ...] = (),
        on_schema_refused: Callable[[str], None] | None = None,
        on_unfit: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.model = model
        self.on_invalid = on_invalid
        self.on_unfit = on_unfit
        self.on_schema_refused = on_schema_refused
        self.workspace_agent, self.team = workspace_agent, team

    def _ask(self, messages: list[dict[str, Any]], schema: RunSchema) -> ModelReply:
        """The plan asked for with this run's JSON schema, so that a server that supports it cannot decode anything
        but a valid plan's shape, with the run's tools and files; where the server refuses the schema, JSON mode,
        and the validation and retry of ``plan`` catch the rest (``agent.model.schema_request``)."""
        return complete_with_schema(self.model, messages, schema.schema, on_refused=self.on_schema_refused)

    def run_schema(self, workspace: Path, expected: TaskExpectations | None, task: str = "") -> RunSchema:
        """The schema of this run's planning requests for ``task``, made from ``workspace`` as it is now (a
        re-plan's from the files the run left); when its paths are plain strings (a large workspace), the trace says
        why."""
        outputs = list(expected.outputs) if expected else []
        writable = writable_paths(workspace, outputs, named_paths(task))
        schema = run_plan_schema(
            workspace, outputs, writable=writable, workspace_tools=self.workspace_agent is not None
        )
        if schema.open_paths and isinstance(self.model, RecordingModel):
            self.model.recorder.record(RunEntry(event="plan_schema", data={"open_paths": schema.open_paths}))
        return schema

    def plan(self, task: str, workspace: Path, expected: TaskExpectations | None = None) -> Plan:
        """A plan for ``task``; ``expected``: what the task asks of its output, read before the run (read here when
        the caller has not)."""
        if not task.strip():
            raise PlanningError("the task is empty: say what omx should do")
        expected = TaskExpectations.before(task, workspace) if expected is None else expected
        reading = expected.model_reading
        if self.workspace_agent is None and (made := plan_from_reading(task, workspace, expected, reading)):
            self._record_reading_plan(made)
            return self._finished(made, task, expected)
        plan = self._plan(self._opening(task, workspace), workspace.resolve(), expected, task)
        return self._finished(plan, task, expected)

    def _record_reading_plan(self, plan: Plan) -> None:
        """The trace says the model was asked no plan: omx made it from the task's reading (``reading_plan``)."""
        if isinstance(self.model, RecordingModel):
            tools = [step.tool for step in plan.steps]
            self.model.recorder.record(RunEntry(event="plan_from_reading", data={"tools": tools}))

    def replan(
        self,
        task: str,
        workspace: Path,
        what_happened: str,
        failed: Plan | None = None,
        expected: TaskExpectations | None = None,
    ) -> Plan:
        """A new plan for what is left of ``task`` after ``failed`` stopped (None: no plan was valid): the model sees
        its plan, what went wrong (``what_happened``: what ran and the error, or the invalid plans' problems), and
        the workspace as the run left it (recover instead of stop). The request ends with the task
        again: with only the failure to go on, the 0.5B model planned the prompt's example instead. ``expected``:
        what the task asks of its output, read before the run (``plan``'s), which the new plan is finished by."""
        shown = [{"role": "assistant", "content": failed.model_dump_json(exclude={"workspace_root"})}] if failed else []
        messages = [
            *self._opening(task, workspace),
            *shown,
            {
                "role": "user",
                "content": f"{what_happened}\n\nWrite a new plan that finishes the task from here (the workspace is "
                f"as those steps left it; files now:\n{workspace_listing(workspace.resolve())}\n). Fix what failed; "
                f"do not repeat steps whose work is done.\nThe task is still: {task}\n"
                "One JSON object in plan format v1, nothing else.",
            },
        ]
        return self._finished(self._plan(messages, workspace.resolve(), expected, task, fit=False), task, expected)

    def with_fixed_code(self, plan: Plan, task: str, fault: CodeAtFault) -> Plan | None:
        """``plan`` with the code of the step at ``fault`` asked for again, told what came of it (``code_fix``);
        None when the model gave no working code, or the same code again."""
        fixed = fixed_code(plan, fault.step, task, self._code_request(), fault.failure)
        return plan.with_step(fixed) if fixed is not None else None

    def _finished(self, plan: Plan, task: str, expected: TaskExpectations | None) -> Plan:
        """A valid plan as omx finishes it before the person sees it: the write of the task's file it lacks
        (``completion``), code for exact work the plan gave a model and a model for prose it gave code
        (``output_maker``), the model step that writes the task's output asked in the task's words
        (``task_prompt``), and each python step's code that cannot work asked for again on its own (``code_steps``)."""
        ask = self._code_request()
        if expected is not None:
            plan = completed(plan, list(expected.outputs))
            reading = expected.model_reading
            if expected.output is not None and reading is not None and reading.operation is not None:
                # where omx planned code it has not written
                plan = with_operation_code(plan, task, expected.output, reading.operation,
                                           counted=expected.count_asked, shape=reading.shape)  # fmt: skip
            plan = with_model_for_prose(with_code_for_exact_work(plan, task, expected, ask), task, expected)
            plan = with_task_words(plan, task, expected)
        return with_working_code(plan, task, ask, EXAMPLE_CODE)

    def _code_request(self) -> Ask:
        """Asks the model for one step's code; the requests are traced as ``code`` with their step's id."""

        def ask(messages: list[dict[str, str]], step_id: int) -> str | None:
            recording = self.model if isinstance(self.model, RecordingModel) else None
            before = (recording.purpose, recording.step_id) if recording else None
            if recording:
                recording.purpose, recording.step_id = "code", step_id
            try:
                return self.model.complete(list(messages)).content
            except LLMError:
                return None  # the step keeps its code: it fails when it runs, and a re-plan sees why
            finally:
                if recording and before:
                    recording.purpose, recording.step_id = before

        return ask

    def _opening(self, task: str, workspace: Path) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": system_prompt(self.workspace_agent, self.team)},
            {"role": "user", "content": f"Task: {task}\n\nFiles in the workspace:\n{workspace_listing(workspace)}"},
        ]

    def _plan(
        self,
        messages: list[dict[str, Any]],
        workspace: Path,
        expected: TaskExpectations | None,
        task: str,
        fit: bool = True,
    ) -> Plan:
        """Ask, validate, and once more with the problems shown if the reply is not a valid plan, or if it is valid
        but unfit for the task ``expected`` describes (asked with ``fit``; a re-plan is not): no step writes a file the
        task asks for (the 0.5B model's plans often read and transformed and never wrote), or it cannot work here
        (``feasibility``). An unfit plan is kept if the second reply is no better: it runs, and the run's checks say
        what failed. A valid plan's reads of directories and of files the task never named are mended first
        (``listings``, ``task_files``)."""
        replies: list[str] = []
        unfit: Plan | None = None
        schema = self.run_schema(workspace, expected, task)
        for attempt in (1, 2):
            try:
                reply = self._ask(messages, schema)
            except LLMError as exc:
                if unfit is not None:
                    return unfit
                next_step = advice(exc.kind, exc.attempts, "the same omx command")
                raise PlanningError(f"planning failed: {exc}\n{next_step}", replies) from None
            content = reply.content or ""
            replies.append(content)
            try:
                plan = with_listings(_validate(content), workspace)
                plan = with_task_files(plan, workspace, expected) if expected else plan
                plan = plan.model_copy(update={"workspace_root": str(workspace)})
            except ValueError as exc:
                problems = str(exc)
                if self.on_invalid:
                    self.on_invalid(attempt, content, problems)
                if unfit is not None:
                    return unfit
                if attempt == 2:
                    first = problems.splitlines()[0]
                    raise PlanningError(
                        f"the model did not return a valid plan, also after one retry: {first}", replies, problems
                    ) from None
                messages = [*messages, *_corrected(content, f"That plan is invalid:\n{problems}")]
                continue
            why = _unfit(plan, workspace, expected, schema.writable) if expected and fit else []
            if not why or attempt == 2:
                return plan
            unfit = plan
            if self.on_unfit:
                self.on_unfit(why)
            problem = "That plan cannot do the task:\n" + "\n".join(f"- {p}" for p in why)
            messages = [*messages, *_corrected(content, problem)]
        raise AssertionError("unreachable")
