"""``omx``: the local agent. Plan a task, confirm it, execute it in a sandbox, record a trace (SPEC §6);
or, with ``omx agent``, answer a prompt with the multi-turn tool loop (``agent.chat.command``).

Parsing and printing only; the flow lives in ``agent.plan_run.workflow``. Nothing heavy is imported at module level
(pydantic and litellm load when a command runs), so ``omx --help`` answers at once.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from cli.errors import ClosedPipeQuiet
from cli.params import MOUNT_PATH, limit_options

if TYPE_CHECKING:
    from agent.chat.command import AgentOutcome
    from agent.model.llm import Model
    from agent.plan_run.workflow import Options, Outcome
    from agent.sandbox.confine import SandboxMode
    from omxfs.limits import Limits

EPILOG = """\b
Exit status: 0 done (or dry run), 1 failed, 2 usage error, 3 refused (HIGH risk), 4 not confirmed; with --attempts,
0 when an attempt is done (success, done unverified or done), 3 or 4 when every one was refused or not confirmed,
else 1.
A plan that moves or deletes files (HIGH risk) is asked twice, --yes or not: confirm it, then type the number of
paths it moves or deletes; every other HIGH risk plan is refused.
Model: --model / OMX_MODEL (e.g. openai/gpt-4o-mini, ollama/llama3.1); --api-base / OMX_API_BASE for a local
OpenAI-compatible server, e.g. --model openai/qwen2.5 --api-base http://127.0.0.1:8080/v1.
--model scripted:FILE runs without a model (demos, tests): FILE is a JSON list of the model's answers in order,
each a string or {"content": "..."}; for omx "TASK" the first is the plan as JSON text (the format omx schema
prints), then one answer per llm step; {"attempts": [LIST, LIST...]} gives attempt K of --attempts the K-th
list. scripts/demo_team.sh writes such files.
Waiting: --timeout / OMX_TIMEOUT seconds per request (60); 429, 5xx and connection errors are tried again
OMX_RETRIES times (3) with backoff, each retry shown on stderr and kept in the trace."""

#: the most attempts one ``omx --attempts`` runs: each is a view, a plan and a branch to read
MAX_ATTEMPTS = 20

#: what omx says when no model is chosen: what to do, not an "LLM error" (no model was asked anything)
NO_MODEL = (
    "no model configured; pass --model or set OMX_MODEL, for example: export OMX_MODEL=openai/gpt-4o-mini (with "
    "OPENAI_API_KEY), or --model ollama/llama3.1, or --model openai/qwen2.5 --api-base http://127.0.0.1:8080/v1 for "
    "a local server, or --model scripted:FILE for scripted answers (omx --help)"
)


def build_model(model: str | None, api_base: str | None, timeout: float | None = None) -> Model:
    """The model for a run, retried on transient failures (each retry told on stderr) with a spinner on a
    terminal; tests replace this function to script the model."""
    from agent.attempts import scripted_for_attempt
    from agent.model.llm import LLMError, model_from_settings
    from agent.model.waiting import RetryPolicy, WaitingModel

    if not (model or os.environ.get("OMX_MODEL")):
        raise LLMError(NO_MODEL)
    inner = scripted_for_attempt(model or os.environ.get("OMX_MODEL")) or model_from_settings(
        model, api_base, timeout=timeout
    )
    warn = lambda line: click.echo(f"omx: {line}", err=True)  # noqa: E731
    return WaitingModel(inner, RetryPolicy.from_env(), on_retry=warn, progress=sys.stderr)


class ClickUI:
    """Show text on stdout; ask on the terminal. No answer (end of input) is a no."""

    def show(self, text: str) -> None:
        click.echo(text)

    def ask(self, question: str) -> bool:
        try:
            answer = click.confirm(question, default=False)
        except click.Abort:
            click.echo()
            return False
        if not sys.stdin.isatty():  # a piped answer is not echoed: end the prompt's line, or the output runs on
            click.echo()
        return answer

    def ask_text(self, question: str) -> str:
        """A typed answer ("" at the end of input): the second confirmation of a plan that moves or deletes."""
        try:
            answer: str = click.prompt(question, default="", show_default=False)
        except click.Abort:
            click.echo()
            return ""
        if not sys.stdin.isatty():
            click.echo()
        return answer


class TaskGroup(ClosedPipeQuiet):
    """``omx "task" ...`` is ``omx task "task" ...``: anything that is not a subcommand is a task."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help", "--version"):
            args = ["task", *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("omx", '"TASK" [OPTIONS] | agent "PROMPT" | run PLAN | replay RUN_DIR')

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The task's options too, before the commands: ``omx "TASK"`` is what people run, and its options
        (--yes, --dry-run, --model, --as, -w) were behind ``omx task --help``."""
        click.Command.format_options(self, ctx, formatter)
        task = self.commands["task"]
        task_ctx = click.Context(task, info_name="task", parent=ctx)
        options = [p for p in task.get_params(task_ctx) if isinstance(p, click.Option) and "--help" not in p.opts]
        with formatter.section('Task options (omx "TASK" [OPTIONS]; omx run PLAN takes them too)'):
            formatter.write_dl([row for option in options if (row := option.get_help_record(task_ctx))])
        self.format_commands(ctx, formatter)


def _finish(outcome: Outcome) -> None:
    if outcome.message and outcome.exit_code != 0:
        click.echo(f"omx: {outcome.message}", err=True)
    if outcome.run_dir is not None and outcome.exit_code != 0:
        click.echo(f"omx: trace: {outcome.run_dir / 'trace.jsonl'}", err=True)
    sys.exit(outcome.exit_code)


def adopt_identity(as_agent: str | None, workspace: str | None = None, review: bool = False) -> None:
    """``--as NAME``: start omx again as NAME, so that the workspace takes omx and every process it starts for NAME.

    On an omxfs workspace, omx runs itself again inside NAME's view (``agent/view.py``): the identity is then the
    kernel's, and no tool can change it. Elsewhere (a mount this machine cannot make views of, or no workspace),
    it runs again with ``OMX_AGENT=NAME``, which a mount reads from the environment a process started with
    (changing ``os.environ`` is not seen). Only as the installed command: inside a test runner or another
    program the environment is the caller's to set.
    """
    from agent.record.runs_dir import RunsError
    from agent.view import in_view, view_command
    from cli.who import started_with

    if review and not as_agent:
        raise click.UsageError("--review holds an agent's run apart: name the agent with --as NAME")
    if not as_agent or os.path.basename(sys.argv[0]) not in ("omx", "omx.py") or not os.path.isfile(sys.argv[0]):
        return
    try:
        view = view_command(Path(workspace or "."), as_agent, [sys.executable, sys.argv[0], *sys.argv[1:]])
    except RunsError as exc:
        raise click.ClickException(str(exc)) from None
    sys.stdout.flush()
    if view is not None:
        if review:  # omxfs run --review: the run's changes held apart, then their stat and accept/discard shown
            view.insert(view.index("--"), "--review")
        os.execv(view[0], view)
    if review and in_view() is None:
        raise click.UsageError("--review needs an omxfs workspace (its store or a mount of it): -w WORKSPACE")
    if started_with("OMX_AGENT") == as_agent or os.environ.get("OMX_REEXEC") == as_agent:
        return
    env = {**os.environ, "OMX_AGENT": as_agent, "OMX_REEXEC": as_agent}
    os.execve(sys.executable, [sys.executable, sys.argv[0], *sys.argv[1:]], env)


def refuse_unanswering(*paths: Path | None) -> None:
    """Each path omx was given (None: the current directory) lies on no mount whose daemon does not answer, else
    one line: a stat there (click's, the view's, the run's) would wait for good. Paths are taken as written."""
    from omxfs.errors import MountError
    from omxfs.view.locate import check_answers

    for path in paths:
        try:
            check_answers(os.path.abspath(path or "."))
        except MountError as exc:
            raise click.ClickException(exc.message) from None


def saved_workspace(plan: Path) -> Path | None:
    """The workspace a saved plan ran in (its ``workspace_root``, where ``omx run`` runs it again), or None where the
    file holds no plan that names one: the plan's own checks then say what is wrong with it."""
    import json

    try:
        root = json.loads(plan.read_text(encoding="utf-8")).get("workspace_root")
    except (OSError, ValueError, AttributeError):
        return None
    return Path(root) if isinstance(root, str) and os.path.isabs(root) else None


def _options(
    workspace: Path | None,
    as_agent: str | None,
    yes: bool,
    dry_run: bool,
    no_sandbox: bool,
    *given: Path,
    review: bool = False,
    plan: Path | None = None,
) -> Options:
    """The run's options, once the workspace (and any other path ``given``) is known to answer and omx runs as
    ``as_agent``: in ``as_agent``'s view of the workspace, which is ``workspace``, else the saved ``plan``'s."""
    from agent.plan_run.workflow import Options

    refuse_unanswering(workspace, *given)
    if workspace is not None and workspace.is_file():
        raise click.BadParameter(f"{workspace} is a file, not a directory", param_hint="'--workspace' / '-w'")
    viewed = workspace or (saved_workspace(plan) if plan is not None and as_agent else None)
    adopt_identity(as_agent, str(viewed) if viewed else None, review)

    mode: SandboxMode = "off" if no_sandbox else "auto"
    return Options(workspace, as_agent, yes, dry_run, mode)


def _limits_given(max_procs: int | None, max_memory: int | None, max_file_size: int | None) -> Limits:
    """The steps' limits the command line sets; each one it leaves out is the workspace config's, else the default."""
    from omxfs.limits import Limits

    return Limits(max_procs, max_memory, max_file_size)


def _guarded(run: Any, finish: Any = _finish) -> None:
    """Run a command; an unexpected exception (our bug) becomes one line, or a traceback with OMX_DEBUG=1."""
    try:
        finish(run())
    except (SystemExit, click.exceptions.Exit, click.ClickException, click.Abort):
        raise
    except Exception as exc:
        if os.environ.get("OMX_DEBUG"):
            raise
        message = f"internal error ({type(exc).__name__}: {exc}); OMX_DEBUG=1 shows the traceback"
        raise click.ClickException(message) from exc


_workspace = click.option(  # not click.Path, which stats it: -w may be a mount that hangs (refuse_unanswering)
    "--workspace", "-w", type=MOUNT_PATH, help="The workspace root."
)
_as = click.option(
    "--as", "as_agent", metavar="AGENT", help="Act as this agent: on an omxfs workspace, in its view (omxfs run)."
)
_review = click.option(
    "--review",
    is_flag=True,
    help="With --as on an omxfs workspace: hold the run's changes to the agent's zone for `omxfs accept`/`discard`.",
)
_yes = click.option("--yes", "-y", is_flag=True, help="Run a LOW risk plan without asking (never MEDIUM or HIGH).")
_dry = click.option("--dry-run", is_flag=True, help="Save and show the plan and its risk; execute nothing (exit 0).")
_model = click.option(
    "--model", "-m", metavar="M", help="litellm model name, or scripted:FILE (below) (default: $OMX_MODEL)."
)
_base = click.option("--api-base", metavar="URL", help="OpenAI-compatible server (default: $OMX_API_BASE).")
_nosb = click.option("--no-sandbox", is_flag=True, help="Run shell and python steps without an OS sandbox.")
_nojudge = click.option(
    "--no-judge",
    is_flag=True,
    help="Do not ask the model to judge the success criteria omx cannot check itself (they stay not checked).",
)
_replans = click.option(
    "--replans",
    type=click.IntRange(min=0),
    metavar="N",
    help="After a failed step, an invalid plan or a result short of what the task asks for, let the model plan "
    "again up to N times, each plan shown and confirmed like the first (default: 2 for a task, 0 for omx run).",
)
_limits = limit_options("each step")
_loop = click.option(
    "--loop",
    is_flag=True,
    help="Run TASK as a tool loop instead of one plan: the model calls the plan's tools (no llm) one at a time and "
    "reads each result before the next, for models that handle tool calls. Each call is shown and confirmed by its "
    "risk as a plan step is (a move or delete needs the count typed, never --yes alone), run in the same sandbox and "
    "traced in runs/<ts>/; a declined call is not run, and the model is told. It ends done when every check omx reads "
    "from the task is met, failed otherwise, never success (no plan's code to verify). Not with --dry-run or "
    "--replans.",
)
_attempts = click.option(
    "--attempts",
    type=click.IntRange(min=1, max=MAX_ATTEMPTS),
    metavar="N",
    help="With --as on an omxfs workspace: run TASK N times, each attempt held apart as a branch of the agent's zone "
    "(attempt-K, numbered on from the pending ones) with its own plan, confirmation, checks and trace; then a table "
    "of each one's outcome, checks met (by omx's own check), changes (+added ~modified -deleted, omx's record of the "
    "run not counted) and the commands to compare and accept one. One after another, each plan asked as a single "
    "run's is; more than one without --yes needs a terminal to ask on. Not with --review, --dry-run or --loop.",
)
_parallel = click.option(
    "--parallel",
    is_flag=True,
    help="With --attempts and --yes: run the attempts at once (a model server that answers one request at a time "
    "gains nothing), their output lines marked [attempt-K]; a plan --yes does not run is not confirmed.",
)
_timeout = click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="How long one model request may take (default: $OMX_TIMEOUT, else 60).",
)


@click.group(cls=TaskGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.version_option(package_name="omx")
def main() -> None:
    """A local agent: plans a task, asks for confirmation, executes it with sandboxed tools, records a trace.

    Every run is recorded in runs/<timestamp>/ (plan.json, trace.jsonl) in the workspace, or in
    agents/<you>/runs/ on an omxfs mount.
    """


@main.command("task", epilog=EPILOG)
@click.argument("task")
@_yes
@_dry
@_as
@_workspace
@_model
@_base
@_timeout
@_nosb
@_nojudge
@_review
@_replans
@_limits
@_loop
@_attempts
@_parallel
def task_command(
    task: str,
    yes: bool,
    dry_run: bool,
    as_agent: str | None,
    workspace: Path | None,
    model: str | None,
    api_base: str | None,
    timeout: float | None,
    no_sandbox: bool,
    no_judge: bool,
    review: bool,
    replans: int | None,
    max_procs: int | None,
    max_memory: int | None,
    max_file_size: int | None,
    loop: bool,
    attempts: int | None,
    parallel: bool,
) -> None:
    """Plan TASK, show the plan, and run it once confirmed (the default command: omx "TASK"); with --loop, do it
    in a tool loop, each call confirmed as a plan step; with --attempts N, N times, each in a branch."""
    from agent.attempts import this_attempt

    if parallel and attempts is None:
        raise click.UsageError("--parallel runs the attempts of --attempts N at once: give --attempts too")
    if attempts is not None and this_attempt() is None:  # in the view of an attempt: the one run it is
        _run_attempts(attempts, parallel, as_agent, workspace, yes, dry_run or loop, review)
    if loop and (dry_run or replans is not None):
        raise click.UsageError('--loop runs no plan: --dry-run and --replans are for omx "TASK" without --loop')
    if loop:
        from agent.chat.loop_mode import run_loop_task as run_task
    else:
        from agent.plan_run.workflow import run_task

    options = _options(workspace, as_agent, yes, dry_run, no_sandbox, review=review)
    options.judge, options.replans = not no_judge, replans
    options.limits = _limits_given(max_procs, max_memory, max_file_size)
    _guarded(lambda: run_task(task, options, ClickUI(), lambda: build_model(model, api_base, timeout)))


def _run_attempts(
    count: int, parallel: bool, as_agent: str | None, workspace: Path | None, yes: bool, other_mode: bool, review: bool
) -> NoReturn:
    """``--attempts N``: the task run N times, each in a branch of the agent's zone (``agent.attempts``), then the
    table; omx exits with the attempts' status. Refused as ``--review`` is, and where nothing could be asked."""
    from agent.attempts import exit_status, run_attempts, table
    from agent.record.runs_dir import RunsError, is_omxfs_store
    from agent.view import in_view
    from omxfs.errors import OmxError

    if review:
        raise click.UsageError("an attempt is a branch of the agent's zone already, held apart as --review holds a "
                               "run: give one of --attempts and --review")  # fmt: skip
    if not as_agent:
        raise click.UsageError(
            "--attempts runs each attempt in a branch of an agent's zone: name the agent with --as NAME"
        )
    if other_mode:
        raise click.UsageError("--attempts runs TASK's plan N times: not with --dry-run or --loop")
    if parallel and not yes:
        raise click.UsageError("--parallel asks nothing (the attempts cannot share a terminal): give --yes too")
    if count > 1 and not (yes or sys.stdin.isatty()):
        raise click.UsageError(
            "several attempts ask each plan on the terminal, one after another, and stdin is none: give --yes "
            "(a plan it does not run is not confirmed)"
        )
    refuse_unanswering(workspace)
    if workspace is not None and workspace.is_file():
        raise click.BadParameter(f"{workspace} is a file, not a directory", param_hint="'--workspace' / '-w'")
    if (current := in_view()) is not None:
        raise click.ClickException(f"this process runs in {current}'s view: omx --attempts starts a view per "
                                   "attempt, from outside one")  # fmt: skip
    if not is_omxfs_store(workspace or Path(".")):
        raise click.UsageError("--attempts needs an omxfs workspace (its store or a mount of it): -w WORKSPACE")
    if os.path.basename(sys.argv[0]) not in ("omx", "omx.py") or not os.path.isfile(sys.argv[0]):
        raise click.ClickException("omx --attempts runs itself again in each attempt's view: run the omx command")
    sys.stdout.flush()
    try:
        ended = run_attempts(
            workspace or Path("."),
            as_agent,
            count,
            [sys.executable, sys.argv[0], *sys.argv[1:]],
            parallel=parallel,
            stdin_open=not parallel and (count == 1 or sys.stdin.isatty()),
            say=lambda line: click.echo(line, err=True),
        )
    except RunsError as exc:
        raise click.ClickException(str(exc)) from None
    except OmxError as exc:
        raise click.ClickException(exc.message) from None
    click.echo(f"{len(ended)} attempt(s) of the task as {as_agent}, each a branch of the zone: nothing lands before "
               "you accept one")  # fmt: skip
    for line in table(ended, str(workspace or "."), as_agent):
        click.echo(line)
    sys.exit(exit_status(ended))


@main.command("run", epilog=EPILOG)
@click.argument("plan", type=MOUNT_PATH)  # in the workspace, which may hang: probed first
@click.option(
    "--from-step",
    type=click.IntRange(min=1),
    metavar="N",
    help="Start at step N (after fixing it); earlier steps are not run again, their saved outputs are used.",
)
@_yes
@_dry
@_as
@_workspace
@_model
@_base
@_timeout
@_nosb
@_nojudge
@_review
@_replans
@_limits
def run_command(
    plan: Path,
    yes: bool,
    dry_run: bool,
    as_agent: str | None,
    workspace: Path | None,
    model: str | None,
    api_base: str | None,
    timeout: float | None,
    no_sandbox: bool,
    from_step: int | None,
    no_judge: bool,
    review: bool,
    replans: int | None,
    max_procs: int | None,
    max_memory: int | None,
    max_file_size: int | None,
) -> None:
    """Re-execute a saved plan (runs/<ts>/plan.json), with the same risk checks and confirmation; it runs as it is,
    re-planned after a failed step only with --replans."""
    from agent.plan_run.workflow import run_plan_file

    options = _options(workspace, as_agent, yes, dry_run, no_sandbox, plan, review=review, plan=plan)
    options.from_step, options.replans = from_step, replans
    options.judge = not no_judge
    options.limits = _limits_given(max_procs, max_memory, max_file_size)
    _guarded(lambda: run_plan_file(plan, options, ClickUI(), lambda: build_model(model, api_base, timeout)))


@main.command("replay")
@click.argument("run_dir", type=click.Path())
def replay_command(run_dir: str) -> None:
    """Show a recorded run (runs/<ts>) as a timeline: plan, model calls, steps, outcome."""
    from agent.record.replay import ReplayError, render_run

    try:
        click.echo(render_run(Path(run_dir)))
    except ReplayError as exc:
        raise click.ClickException(str(exc)) from None


AGENT_EPILOG = """\b
Exit status: 0 answered, 1 no answer (max steps reached, or an LLM error), 2 bad config or --mode.
Model: --model, else the config's model, else $OMX_MODEL; --model scripted:FILE replays a JSON list of replies.
Timeout: --timeout, else the config's timeout, else $OMX_TIMEOUT, else 60 s; OMX_RETRIES (3) for 429/5xx."""


@main.command("agent", epilog=AGENT_EPILOG)
@click.argument("prompt")
@click.option("--config", "-c", "config", type=click.Path(dir_okay=False), help="The agent's YAML config.")
@_model
@_base
@_timeout
@click.option("--mode", metavar="MODE", help="Restrict the callable tools to a mode of context.tool_modes.")
@click.option(
    "--runs-dir",
    type=click.Path(file_okay=False),
    help="Where runs go (default: runs_dir, else ./runs; at an omxfs mount's root agents/<you>/runs).",
)
def agent_command(
    prompt: str,
    config: str | None,
    model: str | None,
    api_base: str | None,
    timeout: float | None,
    mode: str | None,
    runs_dir: str | None,
) -> None:
    """Answer PROMPT with the multi-turn tool-calling loop, under the context settings of --config.

    omx "TASK" plans first, asks, then executes the plan. omx agent has no plan: the model calls tools turn by
    turn until it answers (at most max_steps model calls), with the context discipline the YAML turns on. The
    answer goes to stdout; stderr gets one line with the steps, the requests and the run directory, whose
    trace.jsonl measures every request (shared prefix, cached tokens): scripts/measure_kv_cache.py RUNS_DIR.

    \b
    A minimal agent.yaml (every context key is off by default):
      max_steps: 8
      timeout: 120                 # seconds per model request (else --timeout, OMX_TIMEOUT, 60)
      runs_dir: runs
      context:
        append_only: true          # each request extends the previous one
        todo_recitation: true      # the plan's checklist ends every request
        error_preservation: true   # a failed answer stays, and the retry cites it
        tool_masking: true         # --mode look: only these tools may be called
        tool_modes: {look: [python]}
        memory_dir: memory         # memory_save / memory_load tools and files
    """
    from agent.chat.command import run_agent

    config_path, runs = Path(config) if config else None, Path(runs_dir) if runs_dir else None
    _guarded(
        lambda: run_agent(prompt, config_path=config_path, model=model, api_base=api_base, timeout=timeout,
                          mode=mode, runs_dir=runs, build_model=build_model),
        _finish_agent,
    )  # fmt: skip


def _finish_agent(outcome: AgentOutcome) -> None:
    if outcome.answer is not None:
        click.echo(outcome.answer)
    for line in (outcome.message, outcome.summary, outcome.usage):
        if line:
            click.echo(f"omx agent: {line}", err=True)
    for line in outcome.undo:
        click.echo(line, err=True)
    sys.exit(outcome.exit_code)


@main.command("schema")
def schema_command() -> None:
    """Print the JSON schema of plan format v1 (what plan.json files follow)."""
    import json

    from agent.plan_run.plan import plan_json_schema

    click.echo(json.dumps(plan_json_schema(), indent=2))


if __name__ == "__main__":
    main()
