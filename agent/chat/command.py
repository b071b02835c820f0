"""``omx agent "PROMPT"``: one prompt through the multi-turn tool loop (``agent.chat.loop``), recorded and measured.

``cli.omx`` parses and prints; this module builds the config (YAML, then the command line's overrides), runs the
agent and says how it ended. Every failure the user can fix is one line, never a traceback:
a bad config is exit 2, a run without an answer (max steps, an LLM error) is exit 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agent.chat.loop import Agent, AgentConfig, AgentFailed, unanswered
from agent.model.errors import advice
from agent.model.llm import LLMError, Model
from agent.plan_run.run_checkpoint import RunCheckpoint, change_stat, checkpoint_here
from agent.record.runs_dir import RunsError, is_omxfs_store, runs_root
from omxfs.errors import OmxError

ModelFactory = Callable[[str | None, str | None, float | None], Model]

DEFAULT_RUNS_DIR = Path("runs")


class ConfigError(Exception):
    """A config (or a mode) the agent cannot run with: one line saying which setting and why."""


@dataclass(frozen=True)
class AgentOutcome:
    """How ``omx agent`` ended: the answer for stdout, one-line ``message``, ``summary`` and ``usage`` for stderr."""

    exit_code: int
    answer: str | None = None
    message: str | None = None
    summary: str | None = None
    usage: str | None = None  # the run's tokens and cost
    undo: tuple[str, ...] = ()  # on a workspace: the lines that show and undo what the run did


def one_line(text: str) -> str:
    return " ".join(text.split())


def validation_line(source: str, exc: ValidationError) -> str:
    """Pydantic's multi-line report as one line: ``agent.yaml: context.append_only: Input should be ...``."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{where}: {error['msg']}" if where else str(error["msg"]))
    return one_line(f"{source}: " + "; ".join(problems))


def default_runs_dir() -> Path:
    """``./runs``; at the root of an omxfs mount the agent's own ``agents/<you>/runs``, as for ``omx "TASK"``: the
    mount's root is no one's to write, so ``./runs`` there failed with a PermissionError."""
    workspace = Path.cwd()
    if not is_omxfs_store(workspace):
        return DEFAULT_RUNS_DIR
    try:
        return runs_root(workspace, None)
    except RunsError as exc:
        raise ConfigError(one_line(str(exc))) from None


def load_config(
    path: Path | None,
    *,
    model: str | None,
    api_base: str | None,
    runs_dir: Path | None,
    timeout: float | None = None,
) -> AgentConfig:
    """The YAML's config (or the defaults) with the command line's overrides; runs always recorded."""
    import yaml

    try:
        config = AgentConfig.from_yaml(path) if path is not None else AgentConfig()
    except ValidationError as exc:
        raise ConfigError(validation_line(str(path), exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(one_line(f"{path}: not valid YAML: {exc}")) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(one_line(str(exc))) from None
    update: dict[str, object] = {"runs_dir": runs_dir or config.runs_dir or default_runs_dir()}
    if model:
        update["model"] = model
    if api_base:
        update["api_base"] = api_base
    if timeout:
        update["timeout"] = timeout
    return config.model_copy(update=update)


def run_agent(
    prompt: str,
    *,
    config_path: Path | None,
    model: str | None,
    api_base: str | None,
    mode: str | None,
    runs_dir: Path | None,
    build_model: ModelFactory,
    timeout: float | None = None,
) -> AgentOutcome:
    """Run ``prompt`` once; ``build_model(name, api_base, timeout)`` makes the model (``cli.omx.build_model``)."""
    if not prompt.strip():
        return AgentOutcome(2, message="the prompt is empty")
    try:
        config = load_config(config_path, model=model, api_base=api_base, runs_dir=runs_dir, timeout=timeout)
    except ConfigError as exc:
        return AgentOutcome(2, message=str(exc))
    try:
        llm = build_model(config.model, config.api_base, config.timeout)
    except LLMError as exc:
        return AgentOutcome(1, message=one_line(str(exc)))
    try:
        agent = Agent(config, model=llm)  # the default tools: the ToolManager's, under config.tool_timeout
        if mode is not None:
            _check_mode(agent, mode)
    except ValidationError as exc:
        return AgentOutcome(2, message=validation_line(str(config_path or "config"), exc))
    except ValueError as exc:  # a mode or tool_modes naming a tool that does not exist, two fold triggers
        return AgentOutcome(2, message=one_line(str(exc)))
    try:
        (config.runs_dir or DEFAULT_RUNS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = f"{config.runs_dir}: {exc.strerror or exc}"
        return AgentOutcome(2, message=f"cannot record the run in {where}; give another directory with --runs-dir")
    checkpoint, no_checkpoint = checkpoint_here(Path.cwd(), "before an omx agent run")
    undo = _undo_lines(checkpoint, no_checkpoint)
    try:
        run = agent.run(prompt, mode=mode)
    except RunsError as exc:  # its runs directory is a symlink, or not a directory: refused before anything ran
        return AgentOutcome(2, message=one_line(str(exc)), undo=undo)
    except AgentFailed as failed:
        next_step = advice(failed.kind, failed.attempts, "the same omx agent command")
        usage, summary = failed.tally.line(), f"run: {failed.run_dir}"
        return AgentOutcome(1, message=one_line(f"{failed}; {next_step}"), summary=summary, usage=usage, undo=undo)
    summary = f"{run.steps} steps, {len(run.requests)} requests, run: {run.run_dir}"
    if checkpoint is not None:
        summary += _changes(checkpoint)
    if (message := unanswered(run.answer, str(config.max_steps))) is not None:
        return AgentOutcome(1, message=message, summary=summary, usage=run.tally.line(), undo=undo)
    return AgentOutcome(0, answer=run.answer, summary=summary, usage=run.tally.line(), undo=undo)


def _undo_lines(checkpoint: RunCheckpoint | None, no_checkpoint: str | None) -> tuple[str, ...]:
    if checkpoint is not None:
        return tuple(checkpoint.lines())
    if no_checkpoint:
        return (f"No checkpoint of the zone before this run (it cannot be undone): {no_checkpoint}",)
    return ()


def _changes(checkpoint: RunCheckpoint) -> str:
    """``, zone: 2 added, 1 modified, 0 deleted``: what the run changed in the zone, counted as ``omxfs diff`` does."""
    try:
        stat = change_stat(checkpoint)
    except (OSError, OmxError):
        return ""  # the lines to see and undo it are printed all the same
    return f", zone: {stat['added']} added, {stat['modified']} modified, {stat['deleted']} deleted"


def _check_mode(agent: Agent, mode: str) -> None:
    """Before the run, so that a wrong ``--mode`` is a usage error, not a run directory with nothing in it."""
    if agent.mask is None:
        raise ValueError(f"--mode {mode} needs context.tool_masking: true and context.tool_modes in the config")
    agent.mask.get_allowed_tools(mode)
