"""Plan format v1 (SPEC §6): what the planner asks the model for, what ``plan.json`` holds and ``omx run`` accepts.

Plans are files users keep and re-run, so the format is strict and versioned: ``version`` is required, every step
names a known tool with exactly that tool's inputs (``extra="forbid"`` everywhere), and references may only point
back to earlier steps. The JSON schema given to the model is generated from these models.
"""

from __future__ import annotations

import enum
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from agent.plan_run.tools.inputs import (
    CopyInput,
    DeleteInput,
    ListDirInput,
    LlmInput,
    MakeDirInput,
    MoveInput,
    PythonInput,
    ReadTextInput,
    Ref,
    ShellInput,
    ToolInput,
    WorkspaceInput,
    WorkspaceToolName,
    WriteTextInput,
)

__all__ = [
    "PathStep",
    "Plan",
    "PlanError",
    "RiskLevel",
    "Step",
    "WorkspaceStep",
    "load_plan",
    "parse_plan",
    "plan_json_schema",
    "validation_summary",
]


class PlanError(Exception):
    """A plan that cannot be used: unreadable, not JSON, or not plan format v1. The message says which and where."""


class RiskLevel(enum.StrEnum):
    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"

    @property
    def rank(self) -> int:
        return ("LOW", "MEDIUM", "HIGH").index(self.value)

    @classmethod
    def highest(cls, *levels: RiskLevel) -> RiskLevel:
        return max(levels, key=lambda level: level.rank, default=cls.LOW)


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int = Field(ge=1, description="1, 2, 3, ... in order.")
    description: str = Field(description="What the step does, for the person who confirms the plan.")
    produces: str | None = Field(default=None, description="A name for the output, or the path of the file written.")


class ReadTextStep(_Step):
    tool: Literal["read_text"]
    inputs: ReadTextInput


class WriteTextStep(_Step):
    tool: Literal["write_text"]
    inputs: WriteTextInput


class ListDirStep(_Step):
    tool: Literal["list_dir"]
    inputs: ListDirInput


class ShellStep(_Step):
    tool: Literal["shell"]
    inputs: ShellInput


class PythonStep(_Step):
    tool: Literal["python"]
    inputs: PythonInput


class LlmStep(_Step):
    tool: Literal["llm"]
    inputs: LlmInput


class MoveStep(_Step):
    tool: Literal["move"]
    inputs: MoveInput


class CopyStep(_Step):
    tool: Literal["copy"]
    inputs: CopyInput


class MakeDirStep(_Step):
    tool: Literal["make_dir"]
    inputs: MakeDirInput


class DeleteStep(_Step):
    tool: Literal["delete"]
    inputs: DeleteInput


#: a step that moves, copies, makes or deletes paths
PathStep = MoveStep | CopyStep | MakeDirStep | DeleteStep


class WorkspaceStep(_Step):
    """A shared-workspace tool, for plans run on an omxfs mount; its inputs are the tool's arguments."""

    tool: WorkspaceToolName
    inputs: WorkspaceInput

    @model_validator(mode="after")
    def _arguments_fit_the_tool(self) -> WorkspaceStep:
        from agent.workspace_tools.models import TOOLS_BY_NAME

        model = TOOLS_BY_NAME[self.tool]
        # a reference stands for text that exists only at run time: checked here as an empty string
        arguments = {k: "" if isinstance(v, Ref) else v for k, v in self.inputs.arguments().items()}
        try:
            model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'inputs'}: {e['msg']}"
                for e in exc.errors(include_url=False, include_input=False)
            )
            raise ValueError(f"inputs of {self.tool}: {problems}") from None
        return self


Step = Annotated[
    ReadTextStep
    | WriteTextStep
    | ListDirStep
    | ShellStep
    | PythonStep
    | LlmStep
    | MoveStep
    | CopyStep
    | MakeDirStep
    | DeleteStep
    | WorkspaceStep,
    Field(discriminator="tool"),
]


class Plan(BaseModel):
    """A plan: the goal, the steps in order, and how to tell it worked."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = Field(description="Always 1 (plan format v1).")
    goal: str = Field(min_length=1)
    risk_level: Annotated[RiskLevel, BeforeValidator(_upper)] = Field(
        description="Your estimate: LOW (reads, new files), MEDIUM (overwrites, code), HIGH (moves, deletes, anything "
        "destructive)."
    )
    workspace_root: str = Field(default=".", description="Always '.': the tools work inside the workspace.")
    steps: list[Step] = Field(min_length=1)
    success_criteria: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ordered_steps_and_backward_refs(self) -> Plan:
        seen: set[int] = set()
        for step in self.steps:
            if step.id in seen or (seen and step.id < max(seen)):
                raise ValueError(f"step ids must increase: step {step.id} comes after step {max(seen)}")
            for ref in step.inputs.refs():
                if ref.step_id not in seen:
                    raise ValueError(f"step {step.id} refers to {ref.ref!r}, which is not an earlier step")
            seen.add(step.id)
        return self

    def step_inputs(self) -> list[tuple[int, str, ToolInput]]:
        return [(step.id, step.tool, step.inputs) for step in self.steps]

    def with_step(self, step: Step) -> Plan:
        """This plan with ``step`` in place of its step of the same id."""
        return self.model_copy(update={"steps": [step if s.id == step.id else s for s in self.steps]})

    def read_paths(self) -> set[str]:
        """The files this plan's read_text steps read, their paths normalised (``out/./a.txt`` is ``out/a.txt``)."""
        return {os.path.normpath(step.inputs.path) for step in self.steps if isinstance(step.inputs, ReadTextInput)}

    def whole_writers(self, path: str) -> list[int]:
        """The steps whose whole output a write_text step writes over ``path`` (not appends to it)."""
        wanted = os.path.normpath(path)
        return [
            step.inputs.content.step_id
            for step in self.steps
            if isinstance(step.inputs, WriteTextInput)
            and step.inputs.mode == "overwrite"
            and isinstance(step.inputs.content, Ref)
            and os.path.normpath(step.inputs.path) == wanted
        ]


def plan_json_schema() -> dict[str, Any]:
    """The JSON schema of plan format v1, generated from the models (given to the model, printed by the CLI)."""
    return Plan.model_json_schema()


def validation_summary(error: ValidationError, limit: int = 5) -> str:
    """The first few validation problems, one per line, each with where in the plan it is (for the model and user)."""
    lines = []
    for problem in error.errors()[:limit]:
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in problem["loc"])
        where = where.lstrip(".") or "plan"
        lines.append(f"{where}: {problem['msg']}")
    more = error.error_count() - limit
    if more > 0:
        lines.append(f"... and {more} more")
    return "\n".join(lines)


def parse_plan(text: str) -> Plan:
    """A plan from JSON text; PlanError with the problems listed when it is not JSON or not plan format v1."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanError(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise PlanError(f"not a valid plan (format v1):\n{validation_summary(exc)}") from None


def load_plan(path: Path) -> Plan:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"cannot read plan {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return parse_plan(text)
    except PlanError as exc:
        raise PlanError(f"{path}: {exc}") from None
