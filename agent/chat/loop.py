"""Ask the model, run the tools it calls, hand the results back, until it answers.

The loop is bounded by ``max_steps`` model calls, so a model that never stops calling tools costs a known amount
and ends with "max steps reached". A model's mistakes (an unknown tool, arguments that are not JSON) go back to
it as tool results it can correct; a failure to reach the model is the user's to see and is raised as LLMError.
Many local models (llama.cpp, Ollama) write their calls in the reply's text instead of sending native tool calls:
a reply that is nothing but such calls (``agent.chat.text_tool_calls``) is run the same way, its results sent back
in a user message, and the trace marks those calls ``source: text``. A call that repeats one that failed, or
whose argument is a text omx sent (a nudge, an error), is not run: the model is told so (``agent.chat.repeats``);
after ``REFUSED_IN_A_ROW`` such calls in a row the loop ends with ``STUCK``, not at max steps.

The context discipline is wired in here, each part behind a ``context:`` setting that is off by default
(``agent.context`` holds the parts): the messages live in an append-only context, every request is measured
against the previous one (prefix shared, cached tokens) and, with ``runs_dir``, recorded in a run's trace.

Two more parts, both off by default. ``session:`` turns on session resize: at each turn boundary a ``Session``'s
policy decides (deep or lite, sync or async handlers) and the run's context folds the oldest turns
into a readable reference, the same reversible fold ``compress_at_chars`` uses, so the append-only rule holds
(``agent.chat.session_resize`` says why it is one fold with two triggers). ``run(..., output=schema)`` asks
for structured output: the task is sent as the prompt generator renders it (an OUTPUT REQUIREMENT section) and
the final answer is checked by the schema's output model; a reply that does not fit goes back to the model.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent.chat.memory_tools import register_memory_tools
from agent.chat.repeats import Refusal, RepeatGuard
from agent.chat.session_resize import SessionResize, SessionSettings
from agent.chat.text_tool_calls import TextCall, parse_text_tool_calls
from agent.chat.tool_manager import ToolManager
from agent.context import (
    RECITATION_INSTRUCTION,
    ContextManager,
    ContextSettings,
    ErrorPreservation,
    FileBasedMemory,
    RequestMeasure,
    TemplateNoise,
    TodoRecitation,
    ToolMask,
    is_prefix,
    is_tool_error,
    refusal,
    request_text,
    restore_all,
    shared_prefix_chars,
    tool_choice_for,
)
from agent.model.llm import LLMError, Model, ModelReply, ToolCall, ToolChoiceModel, Usage, model_from_settings
from agent.model.pricing import Tally
from agent.record.trace import ModelCallEntry, RunEntry, RunRecorder, ToolCallEntry, digest, now, preview

if TYPE_CHECKING:
    from agent.prompting import Session

MAX_STEPS_REACHED = "max steps reached"
#: the answer of a loop ended because the model kept sending calls it was told not to send again
STUCK = "stopped: the model sent calls it was told not to send again"
#: calls refused in a row (repeats of failed calls, echoes) that end the loop with ``STUCK``
REFUSED_IN_A_ROW = 3
#: the answers of a loop that ended without one
UNANSWERED = frozenset({MAX_STEPS_REACHED, STUCK})


def unanswered(answer: str, limit: str) -> str | None:
    """Why a loop ended without an answer, for the person (None: it answered); ``limit``: its max steps, in words."""
    if answer == MAX_STEPS_REACHED:
        return f"{MAX_STEPS_REACHED} ({limit}) without an answer"
    return answer if answer in UNANSWERED else None


NO_ANSWER = "the model gave an empty answer"
OUTPUT_MISMATCH = "error: your answer does not meet the OUTPUT REQUIREMENT"
TEXT_CALLS_FOLLOW_UP = "Those are the results of your tool calls: call a tool again, or answer in plain text."
NO_OUTPUT = "(no output: nothing was printed)"


class AgentConfig(BaseModel):
    """What an agent may do; frozen, so a run cannot change it (seed invariant 1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: int = Field(10, ge=1, description="model calls per prompt before giving up")
    tool_timeout: float = Field(30, gt=0, description="seconds one tool call may take")
    system_prompt: str = "You are a helpful assistant. Use the tools when they help; answer in plain text."
    model: str | None = Field(None, description="litellm model name; default --model / OMX_MODEL")
    timeout: float | None = Field(None, gt=0, description="seconds one model request may take; else OMX_TIMEOUT, 60")
    api_base: str | None = Field(None, description="an OpenAI-compatible server; default OMX_API_BASE")
    runs_dir: Path | None = Field(None, description="record each run in <runs_dir>/<timestamp>/trace.jsonl")
    context: ContextSettings = Field(default_factory=ContextSettings, description="context discipline")
    session: SessionSettings | None = Field(None, description="session resize; off when absent")

    @model_validator(mode="after")
    def _one_fold_trigger(self) -> AgentConfig:
        if self.session is not None and self.context.compress_at_chars is not None:
            raise ValueError("set session or context.compress_at_chars, not both: they trigger the same fold")
        if self.session is not None and self.session.context_dir is None and self.context.compress_dir is None:
            raise ValueError("session needs context_dir (or context.context_dir or context.memory_dir)")
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> AgentConfig:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: an agent config is a YAML mapping, such as 'max_steps: 5'")
        return cls.model_validate(data)


class AgentRun(BaseModel):
    """What one prompt cost and did: for traces and tests."""

    answer: str
    steps: int
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    requests: list[RequestMeasure] = Field(default_factory=list)
    run_dir: Path | None = None
    resizes: list[dict[str, Any]] = Field(default_factory=list, description="session resizes: step, type, reason")
    output: Any = Field(None, description="the answer checked by the output schema, when run(output=...) asked")
    tally: Tally = Field(default_factory=Tally, description="tokens and cost of the run's requests")


class AgentFailed(LLMError):
    """A run that ended on a model failure: the ``LLMError``, with what the run had cost and where it is recorded."""

    def __init__(self, error: LLMError, tally: Tally, run_dir: Path | None) -> None:
        super().__init__(str(error), request_id=error.request_id, kind=error.kind, retry_after=error.retry_after)
        self.attempts, self.retries = error.attempts, error.retries
        self.error, self.tally, self.run_dir = error, tally, run_dir


def tool_schemas(tools: ToolManager) -> list[dict[str, Any]]:
    """OpenAI function definitions for the registered tools, sorted by name: one string parameter each, or the
    schema a tool was registered with."""
    schemas = []
    for name, tool in tools.tools.items():
        parameters = tool.parameters or {
            "type": "object",
            "properties": {tool.parameter: {"type": "string"}},
            "required": [tool.parameter],
        }
        schemas.append(
            {"type": "function", "function": {"name": name, "description": tool.description, "parameters": parameters}}
        )
    return schemas


class Agent:
    """A model plus tools; the model comes from the config (or --model / OMX_MODEL) unless one is given.

    With ``context.memory_dir`` the memory tools are registered on ``tools`` here, before the first request, so
    the tool definitions never change during a run. ``session`` (or ``config.session``) turns on session resize;
    register custom policy or resize handlers on it (``agent.session.register_policy_handler``).
    """

    def __init__(
        self,
        config: AgentConfig | str | Path | None = None,
        *,
        model: Model | None = None,
        tools: ToolManager | None = None,
        session: Session | None = None,
    ) -> None:
        self.config = (
            config if isinstance(config, AgentConfig) else AgentConfig.from_yaml(config) if config else AgentConfig()
        )
        self.model = model or model_from_settings(self.config.model, self.config.api_base, timeout=self.config.timeout)
        self.tools = tools or ToolManager(timeout=self.config.tool_timeout)
        settings = self.config.context
        self.memory = FileBasedMemory(settings.memory_dir) if settings.memory_dir else None
        if self.memory is not None:
            register_memory_tools(self.tools, self.memory)
        self.mask = ToolMask(settings.tool_modes) if settings.tool_masking else None
        if self.mask is not None:
            self.mask.check(self.tools.names)
        self.noise = TemplateNoise(settings.noise_seed) if settings.template_noise else None
        if session is None and self.config.session is not None:
            session = self.config.session.build(self.config.session.context_dir or cast(Path, settings.compress_dir))
        if session is not None and settings.compress_at_chars is not None:
            raise ValueError("a session and context.compress_at_chars both trigger the fold: use one of them")
        self.session = session
        self._fold_dir = SessionResize(session, settings.compress_dir).directory if session else settings.compress_dir
        self._previous_request: str | None = None  # the last request sent: what a provider's cache holds

    def process(self, prompt: str, *, mode: str | None = None) -> str:
        """The final answer, or "max steps reached" when the loop ran out of model calls."""
        return self.run(prompt, mode=mode).answer

    def run(
        self, prompt: str, *, mode: str | None = None, output: Any = None, recorder: RunRecorder | None = None
    ) -> AgentRun:
        """One prompt to its answer; ``mode`` (with tool_masking) restricts the tools the model may call.

        ``output`` is an output schema (a dict, a one-item list, a type, ``(schema, "description")``);
        the checked data is ``AgentRun.output``. ``recorder``: a run record the caller made (``omx --loop``), which
        gets the model and tool calls; its start and end entries are the caller's to write.
        """
        if not prompt or not prompt.strip():
            raise ValueError("prompt must not be empty")
        if mode is not None and self.mask is None:
            raise ValueError("a mode needs context.tool_masking: true and context.tool_modes in the config")
        allowed = self.mask.get_allowed_tools(mode) if self.mask is not None and mode is not None else None
        own = recorder is None  # a run this call records itself, start and end
        if recorder is None and self.config.runs_dir:
            recorder = RunRecorder.create(self.config.runs_dir)
        if recorder is not None and own:
            start = {"command": "agent", "prompt": prompt, "mode": mode, "model": _model_name(self.model),
                     "max_steps": self.config.max_steps, "tools": self.tools.names}  # fmt: skip
            recorder.record(RunEntry(event="start", data=start))
        run = _Run(self, prompt, mode, allowed, recorder, output)
        try:
            result = run.loop()
        except LLMError as exc:
            if recorder is not None and own:
                end = {"status": "failed", "error": str(exc), "steps": run.steps, "usage": run.tally.record()}
                recorder.record(RunEntry(event="end", data=end))
            raise AgentFailed(exc, run.tally, recorder.run_dir if recorder is not None else None) from None
        if recorder is not None and own:
            status = {MAX_STEPS_REACHED: "max_steps", STUCK: "stuck"}.get(result.answer, "answered")
            end = {"status": status, "answer": preview(result.answer), "answer_digest": digest(result.answer),
                   "steps": result.steps, "usage": result.tally.record()}  # fmt: skip
            recorder.record(RunEntry(event="end", data=end))
        if self.memory is not None:
            self.memory.append_log("history.jsonl", {"task": prompt, "answer": result.answer, "steps": result.steps})
        return result

    def _execute(self, call: ToolCall) -> str:
        tool = self.tools.get(call.name)
        if tool is None:
            return self.tools.execute_tool(call.name, "")  # the "unknown tool" text, with the list of tools
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            send = "a JSON object of its arguments" if tool.parameters else f'{{"{tool.parameter}": "..."}}'
            return f"error: the arguments of {call.name} are not valid JSON ({exc}); send {send}"
        if tool.parameters is not None:  # the tool checks its arguments itself
            if not isinstance(arguments, dict):
                return f"error: the arguments of {call.name} must be a JSON object"
            return self.tools.execute_tool(call.name, call.arguments or "{}")
        if not isinstance(arguments, dict) or not isinstance(arguments.get(tool.parameter), str):
            return (
                f'error: {call.name} takes one string argument, "{tool.parameter}"; send {{"{tool.parameter}": "..."}}'
            )
        return self.tools.execute_tool(call.name, arguments[tool.parameter])


class _Run:
    """The state of one ``Agent.run``: its context, plan, retries and measurements."""

    def __init__(self, agent: Agent, prompt: str, mode: str | None, allowed: list[str] | None,
                 recorder: RunRecorder | None, output: Any = None) -> None:  # fmt: skip
        self.agent, self.prompt, self.mode, self.allowed, self.recorder = agent, prompt, mode, allowed, recorder
        self.settings = agent.config.context
        self.schemas = tool_schemas(agent.tools) or None  # every tool, same order, every request
        self.usage, self.calls, self.steps, self.retries = Usage(), list[ToolCall](), 0, 0
        self.tally = Tally()
        self.measures: list[RequestMeasure] = []
        self.tool_errors: list[str] = []
        self.repeats = RepeatGuard()  # failed calls and omx's own words, which are answered, not run again
        self.refused_in_a_row = 0
        self.recitation = TodoRecitation() if self.settings.todo_recitation else None
        system = agent.config.system_prompt
        if self.recitation is not None:
            system = f"{system}\n\n{RECITATION_INSTRUCTION}"
            self.recitation.create_initial_plan(prompt, mode or "chat")
        self.context = ContextManager()
        self.context.append_message({"role": "system", "content": system})
        self.output_model: type[BaseModel] | None = None
        task = prompt
        if output is not None:
            self.output_model, task = _structured(prompt, output)
        self.output: Any = None
        noise = agent.noise
        self.context.append_user(noise.wrap_instruction(task) if noise is not None else task)
        self.last_sent: list[dict[str, Any]] | None = None
        self.resizer = SessionResize(agent.session, agent._fold_dir) if agent.session is not None else None
        self.resizes: list[dict[str, Any]] = []

    def loop(self) -> AgentRun:
        while self.steps < self.agent.config.max_steps:
            reply = self._request()
            content = reply.content or ""
            if self.recitation is not None:
                self.recitation.update_from_output(content)
            if reply.tool_calls:
                self.context.append_message(reply.as_message())
                for call in reply.tool_calls:
                    result, error = self._call(call)
                    self.context.append_message({"role": "tool", "tool_call_id": call.id, "content": result},
                                                is_error=error)  # fmt: skip
            elif (written := parse_text_tool_calls(content)) is not None:
                self._run_text_calls(content, written)  # a local model's calls, written in the reply's text
            elif self._should_retry(content):
                self._preserve_and_retry(content)
                continue
            else:
                self.context.append_message({"role": "assistant", "content": content})
                if not self._parse_output(content):
                    continue
                return self._result(content or NO_ANSWER)
            if self.refused_in_a_row >= REFUSED_IN_A_ROW:  # told so three times, it will not change course
                return self._result(STUCK)
        return self._result(MAX_STEPS_REACHED)

    def _call(self, call: ToolCall, problem: str | None = None) -> tuple[str, bool]:
        """Run one call (or report the ``problem`` that kept it from being one), trace it: (result, failed).

        A call that repeats a failed one exactly, or echoes a text omx sent, is not run: the model is told so, and
        the trace records a ``repeat_refused`` event instead of a tool call.
        """
        self.calls.append(call)
        refused = self.repeats.refusal(call) if problem is None else None
        self.refused_in_a_row = self.refused_in_a_row + 1 if refused is not None else 0
        if refused is not None:
            self._record_repeat(call, refused)
            self.repeats.said(refused.message)
            return refused.message, True
        start, began = now(), time.monotonic()
        result = f"error: {problem}" if problem is not None else self._execute(call)
        error = is_tool_error(result)
        self._record_tool(call, result, error, start, began)
        if error:
            self.tool_errors.append(f"{call.name or '(no tool)'}: {result.strip()}")
        if problem is None:
            self.repeats.ran(call, result, error)
        else:
            self.repeats.said(result)
        return result, error

    def _run_text_calls(self, content: str, written: list[TextCall]) -> None:
        """Calls the model wrote as text run as native ones do: same checks, sandbox and trace (marked "text").

        The reply stays in the conversation as the model wrote it, and the results go back in one user message:
        a reply without native calls has no call ids for "tool" messages to answer, and servers reject those.
        """
        self.context.append_message({"role": "assistant", "content": content})
        parts, failed = [], False
        for i, found in enumerate(written):
            call = ToolCall(id=f"text_{self.steps}_{i}", name=found.name, arguments=found.arguments, source="text")
            result, error = self._call(call, found.problem)
            failed = failed or error
            shown = result.rstrip() or NO_OUTPUT  # `x = 1` prints nothing
            head = f"Result of your tool call {found.name or '(unreadable)'}:"
            self.repeats.said(head if shown != NO_OUTPUT else f"{head}\n{NO_OUTPUT}")
            parts.append(f"{head}\n{shown}")
        parts.append(TEXT_CALLS_FOLLOW_UP)
        self.repeats.said(TEXT_CALLS_FOLLOW_UP)
        self.context.append_user("\n\n".join(parts), is_error=failed)

    def _execute(self, call: ToolCall) -> str:
        """Masking: a call the mode does not allow is refused, whatever the provider let through."""
        if self._refused(call) and self.allowed is not None and self.mode is not None:
            return refusal(call.name, self.mode, self.allowed)
        return self.agent._execute(call)

    def _refused(self, call: ToolCall) -> bool:
        known = self.agent.tools.get(call.name) is not None
        return self.allowed is not None and self.mode is not None and known and call.name not in self.allowed

    def _request(self) -> ModelReply:
        """One model call at a turn boundary: resize or compress if due, recite the plan, send, measure."""
        settings = self.settings
        compressed = False
        limit, directory = settings.compress_at_chars, settings.compress_dir
        if self.resizer is not None:
            before = self.context.size_chars()
            resized = self.resizer.before_request(self.context)
            if resized is not None:
                self.resizes.append({"step": self.steps + 1, **resized})
                self._record_fold("resize", before, resized)
            compressed = resized is not None
        elif settings.append_only and limit is not None and directory is not None and self.context.size_chars() > limit:
            before = self.context.size_chars()
            kept = self.context.compress_to_file(directory, settings.compress_keep_last, keep_first=2)
            compressed = kept is not None
            if kept is not None:
                self._record_fold("compress", before, {"reference": preview(kept)})
        if self.recitation is not None:
            noise = self.agent.noise
            trailer = noise.recitation_trailer() if noise is not None else None
            text = self.recitation.build_recitation_prefix(*([trailer] if trailer else []))
            if text:
                self.context.append_user(text, recitation=True)
        messages = self.context.get_messages()
        if settings.append_only and self.last_sent is not None:
            earlier, later = self.last_sent, messages
            if compressed and self.agent._fold_dir is not None:  # a fold changed the request: restored, it must not
                earlier, later = restore_all(earlier, self.agent._fold_dir), restore_all(later, self.agent._fold_dir)
            if not is_prefix(earlier, later):  # our bug, not the model's
                raise RuntimeError("append-only context violated: a request does not extend the previous one")
        self.last_sent = messages
        text = request_text(messages, self.schemas)
        previous = self.agent._previous_request
        shared = shared_prefix_chars(previous, text) if previous is not None else 0
        self.agent._previous_request = text
        start, began = now(), time.monotonic()
        try:
            reply = self._complete(messages)
        except LLMError as exc:
            self._record(start, began, len(text), shared, previous is not None, None, exc)
            raise
        self.steps += 1
        _add_usage(self.usage, reply.usage)
        self.tally.add(reply.model, reply.usage)
        u = reply.usage
        measure = RequestMeasure(step=self.steps, prompt_chars=len(text), prefix_chars=shared,
                                 previous_request=previous is not None, prompt_tokens=u.prompt_tokens,
                                 cached_tokens=u.cached_tokens, completion_tokens=u.completion_tokens)  # fmt: skip
        self.measures.append(measure)
        self._record(start, began, len(text), shared, previous is not None, reply, None)
        return reply

    def _complete(self, messages: list[dict[str, Any]]) -> ModelReply:
        model = self.agent.model
        if self.allowed is not None and self.schemas and getattr(model, "supports_allowed_tools", False) is True:
            names = [t["function"]["name"] for t in self.schemas]
            choice = tool_choice_for(self.allowed, names)
            if choice is not None:
                return cast(ToolChoiceModel, model).complete(messages, tools=self.schemas, tool_choice=choice)
        return model.complete(messages, tools=self.schemas)

    def _record(self, start: str, began: float, chars: int, shared: int, had_previous: bool,
                reply: ModelReply | None, error: LLMError | None) -> None:  # fmt: skip
        if self.recorder is None:
            return
        usage = reply.usage if reply is not None else Usage()
        self.recorder.record(
            ModelCallEntry(
                purpose="agent",
                step_id=self.steps if reply is not None else self.steps + 1,
                model=reply.model if reply is not None else None,
                request_id=reply.request_id if reply is not None else error.request_id if error else None,
                start_time=start,
                end_time=now(),
                duration_s=round(time.monotonic() - began, 3),
                status="success" if reply is not None else "failed",
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
                error=str(error) if error is not None else None,
                prompt_chars=chars,
                prefix_chars=shared,
                previous_request=had_previous,
                retries=reply.retries if reply is not None else error.retries if error is not None else [],
            )
        )

    def _record_tool(self, call: ToolCall, result: str, error: bool, start: str, began: float) -> None:
        """The tool call in the trace: its arguments, its result in short and by digest, whether it failed."""
        if self.recorder is None:
            return
        try:
            arguments: Any = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            arguments = call.arguments
        refused = self._refused(call)
        status: Literal["success", "failed", "refused"] = "refused" if refused else "failed" if error else "success"
        self.recorder.record(
            ToolCallEntry(step=self.steps, call_id=call.id, tool=call.name, arguments=preview(arguments),
                          inputs_digest=digest(arguments), output_digest=digest(result), start_time=start,
                          end_time=now(), duration_s=round(time.monotonic() - began, 3), status=status,
                          output=preview(result), error=preview(result.strip()) if error else None,
                          source=call.source)
        )  # fmt: skip

    def _record_repeat(self, call: ToolCall, refused: Refusal) -> None:
        """A call not run (a repeat of a failed one, or an echo of omx's words) in the trace, as an event of its own."""
        if self.recorder is None:
            return
        try:
            arguments: Any = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            arguments = call.arguments
        data = {"step": self.steps, "call_id": call.id, "tool": call.name, "arguments": preview(arguments),
                "reason": refused.reason, "told": refused.message, "source": call.source}  # fmt: skip
        if refused.earlier_error is not None:
            data["earlier_error"] = preview(refused.earlier_error.strip())
        self.recorder.record(RunEntry(event="repeat_refused", data=data))

    def _record_fold(self, event: Literal["compress", "resize"], before: int, data: dict[str, Any]) -> None:
        """A compression or resize in the trace: at which request, and the context's size before and after."""
        if self.recorder is not None:
            sizes = {"step": self.steps + 1, "chars_before": before, "chars_after": self.context.size_chars()}
            self.recorder.record(RunEntry(event=event, data={**sizes, **data}))

    def _should_retry(self, answer: str) -> bool:
        if not self.settings.error_preservation or self.steps >= self.agent.config.max_steps:
            return False
        return ErrorPreservation.should_retry(answer, self.settings.max_retries, self.retries,
                                              self.settings.retry_min_chars)  # fmt: skip

    def _preserve_and_retry(self, answer: str) -> None:
        """The failed answer stays in the context; the retry prompt quotes it and the tool errors seen."""
        self.retries += 1
        self.context.append_error(answer, original_query=self.prompt)
        errors = "; ".join(e[:300] for e in self.tool_errors[-3:])
        retry = ErrorPreservation.build_retry_prompt(self.prompt, answer or "(an empty answer)", errors)
        self.context.append_user(retry, retry=self.retries)

    def _parse_output(self, answer: str) -> bool:
        """Whether the answer fits the output schema; if not, the model is told what was wrong (another step)."""
        from agent.prompting import parse_reply

        if self.output_model is None:
            return True
        try:
            self.output = parse_reply(answer, self.output_model)
        except ValueError as exc:  # pydantic's ValidationError is one too
            if self.steps >= self.agent.config.max_steps:
                return True  # no step left to correct it: the answer stands, without output
            mismatch = f"{OUTPUT_MISMATCH}: {str(exc)[:500]}\nAnswer again with the JSON only."
            self.repeats.said(mismatch)
            self.context.append_user(mismatch)
            return False
        return True

    def _result(self, answer: str) -> AgentRun:
        return AgentRun(answer=answer, steps=self.steps, tool_calls=self.calls, usage=self.usage, tally=self.tally,
                        messages=self.context.get_messages(), requests=self.measures,
                        run_dir=self.recorder.run_dir if self.recorder is not None else None,
                        resizes=self.resizes, output=self.output)  # fmt: skip


def _structured(prompt: str, output: Any) -> tuple[type[BaseModel], str]:
    """The output model and the task text with its OUTPUT REQUIREMENT, as the prompt generator writes it."""
    from agent.prompting import Prompt

    spec = Prompt().set("input", prompt).set("output", output)
    return spec.to_output_model(), str(spec.to_messages()[-1]["content"])


def _model_name(model: Any) -> str | None:
    """The name under wrappers (``WaitingModel(OpenAIHTTPModel("openai/x"))`` is "openai/x"); None if it has none."""
    for _ in range(4):
        model = getattr(model, "model", None)
        if model is None or isinstance(model, str):
            return model
    return None


def _add_usage(total: Usage, more: Usage) -> None:
    total.prompt_tokens += more.prompt_tokens
    total.completion_tokens += more.completion_tokens
    total.cached_tokens += more.cached_tokens
