"""A chat session whose context window is resized by reversible compression, never by cutting (seed 002 §2).

The seed's session trims old turns when the history grows too long. Cutting from the front would lose what the
model was told and break the append-only rule of the context (seed 003), so here a resize folds the oldest
messages of the window into ONE reference message (``agent.context.compress_messages``: the messages go to a
JSON file, the reference names it) and ``restored_window`` gives the exact messages back. ``history`` is the
append-only record of every message ever added; it is never changed.

When to resize is a policy, how much to fold is a handler; both can be replaced by sync or async functions:

- a *policy* ``(window, policy, turns_since_last_resize) -> ResizeDecision | None`` decides whether to resize;
  the default says "deep" over ``max_messages_text_length`` characters, "lite" over ``max_keep_messages_count``
  messages or after ``every_n_turns`` user turns, and nothing when every threshold is 0 or None (the default);
- a *resize handler* ``(window, decision, policy) -> int`` says how many of the oldest messages to fold. It
  returns a count, not a new window, so no handler can drop a message: folding is always done here.
"""

from __future__ import annotations

import copy
import inspect
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import trio
from pydantic import BaseModel, ConfigDict, Field

from agent.context.compression import compress_messages, restorable_reference, restore_all
from agent.prompting.layered_settings import LayeredSettings

__all__ = ["PolicyHandler", "ResizeDecision", "ResizeHandler", "ResizePolicy", "Session", "text_length"]

T = TypeVar("T")
Message = dict[str, Any]


class ResizeDecision(BaseModel):
    """What a policy decided: the kind of resize and the threshold that triggered it."""

    model_config = ConfigDict(frozen=True)

    type: Literal["lite", "deep"]
    reason: str


class ResizePolicy(BaseModel):
    """The ``session.resize.*`` settings, checked; 0 or None turns a threshold off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_messages_text_length: int | None = Field(None, ge=0, description="deep resize above this many characters")
    max_keep_messages_count: int | None = Field(None, ge=0, description="lite resize above this many messages")
    every_n_turns: int | None = Field(None, ge=0, description="lite resize after this many user turns")
    keep_last: int = Field(4, ge=0, description="messages an every-n-turns resize keeps verbatim")

    @classmethod
    def from_settings(cls, settings: LayeredSettings) -> ResizePolicy:
        return cls.model_validate(settings.get("session.resize", {}) or {})


PolicyHandler = Callable[[list[Message], ResizePolicy, int], "ResizeDecision | Awaitable[ResizeDecision | None] | None"]
ResizeHandler = Callable[[list[Message], ResizeDecision, ResizePolicy], "int | Awaitable[int]"]


def text_length(messages: Sequence[Mapping[str, Any]]) -> int:
    """Characters of message text: string contents and the text parts of rich contents."""
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(
                len(str(p.get("text", ""))) for p in content if isinstance(p, dict) and p.get("type") == "text"
            )
    return total


def default_policy(window: list[Message], policy: ResizePolicy, turns_since_last_resize: int) -> ResizeDecision | None:
    """The seed's default: text length first (deep), then message count, then turns (lite)."""
    if policy.max_messages_text_length and text_length(window) > policy.max_messages_text_length:
        return ResizeDecision(type="deep", reason="max_messages_text_length")
    if policy.max_keep_messages_count and len(window) > policy.max_keep_messages_count:
        return ResizeDecision(type="lite", reason="max_keep_messages_count")
    if policy.every_n_turns and turns_since_last_resize >= policy.every_n_turns:
        return ResizeDecision(type="lite", reason="every_n_turns")
    return None


def lite_resize(window: list[Message], decision: ResizeDecision, policy: ResizePolicy) -> int:
    """Fold all but the newest messages: enough to get under the count limit (reference included), else keep_last."""
    if decision.reason == "max_keep_messages_count" and policy.max_keep_messages_count:
        keep = max(policy.max_keep_messages_count - 1, 1)
    else:
        keep = policy.keep_last
    return max(len(window) - keep, 0)


def deep_resize(window: list[Message], decision: ResizeDecision, policy: ResizePolicy) -> int:
    """Fold everything except the longest newest run that fits the text limit (the newest message always stays)."""
    limit = policy.max_messages_text_length or 0
    kept, total = 0, 0
    for message in reversed(window):
        size = text_length([message])
        if kept and total + size > limit:
            break
        kept, total = kept + 1, total + size
    return len(window) - kept


class Session:
    """The messages of one conversation: ``history`` (append-only) and ``context_window`` (what is sent)."""

    def __init__(
        self, settings: LayeredSettings | None = None, *, context_dir: Path | None = None, id: str | None = None
    ) -> None:
        self.id = id or uuid.uuid4().hex
        self.settings = settings if settings is not None else LayeredSettings.defaults()
        self._context_dir = context_dir
        self._history: list[Message] = []
        self._window: list[Message] = []
        self.turns_since_last_resize = 0
        self._policy: PolicyHandler = default_policy
        self._resizers: dict[str, ResizeHandler] = {"lite": lite_resize, "deep": deep_resize}

    @property
    def history(self) -> list[Message]:
        """Every message ever added, in order; a copy."""
        return copy.deepcopy(self._history)

    @property
    def context_window(self) -> list[Message]:
        """The messages to send: the history, with the oldest parts folded into references by resizes; a copy."""
        return copy.deepcopy(self._window)

    @property
    def policy(self) -> ResizePolicy:
        return ResizePolicy.from_settings(self.settings)

    @property
    def context_dir(self) -> Path:
        directory = self._context_dir or self.settings.get("session.context_dir")
        if not directory:
            raise ValueError("session resize needs a directory for compressed messages: set session.context_dir")
        return Path(directory)

    def add_message(self, message: Mapping[str, Any]) -> None:
        """Append one chat message; each user message counts as a turn."""
        if "role" not in message:
            raise ValueError(f"a chat message needs a role: {dict(message)!r}")
        self._history.append(copy.deepcopy(dict(message)))
        self._window.append(copy.deepcopy(dict(message)))
        if message["role"] == "user":
            self.turns_since_last_resize += 1

    def add_messages(self, messages: Sequence[Mapping[str, Any]]) -> None:
        for message in messages:
            self.add_message(message)

    def register_policy_handler(self, handler: PolicyHandler) -> None:
        """Replace the policy that decides whether to resize (sync or async)."""
        self._policy = handler

    def register_resize_handler(self, kind: Literal["lite", "deep"], handler: ResizeHandler) -> None:
        """Replace how many messages a ``kind`` resize folds (sync or async)."""
        self._resizers[kind] = handler

    def judge_resize(self) -> ResizeDecision | None:
        return _run(self._policy(self.context_window, self.policy, self.turns_since_last_resize))

    async def async_judge_resize(self) -> ResizeDecision | None:
        return await _await(self._policy(self.context_window, self.policy, self.turns_since_last_resize))

    def plan_resize(self, window: list[Message], turns_since_last_resize: int) -> tuple[ResizeDecision, int] | None:
        """Judge and size a resize of ``window`` without folding anything: the decision and how many to fold.

        For a caller that holds its own context and folds it itself (the agent loop); this session's handlers and
        settings decide, sync or async (an async one runs to completion here).
        """
        decision = _run(self._policy(copy.deepcopy(window), self.policy, turns_since_last_resize))
        if decision is None:
            return None
        count = _run(self._resizers[decision.type](copy.deepcopy(window), decision, self.policy))
        return decision, _checked_count(decision, count)

    async def async_plan_resize(
        self, window: list[Message], turns_since_last_resize: int
    ) -> tuple[ResizeDecision, int] | None:
        decision = await _await(self._policy(copy.deepcopy(window), self.policy, turns_since_last_resize))
        if decision is None:
            return None
        count = await _await(self._resizers[decision.type](copy.deepcopy(window), decision, self.policy))
        return decision, _checked_count(decision, count)

    def resize(self) -> ResizeDecision | None:
        """Judge, and fold if the policy says so; the decision taken, or None."""
        plan = self.plan_resize(self._window, self.turns_since_last_resize)
        if plan is not None:
            self._fold(*plan)
        return None if plan is None else plan[0]

    async def async_resize(self) -> ResizeDecision | None:
        plan = await self.async_plan_resize(self._window, self.turns_since_last_resize)
        if plan is not None:
            self._fold(*plan)
        return None if plan is None else plan[0]

    def restored_window(self) -> list[Message]:
        """The context window with every reference replaced by the messages it stands for, recursively."""
        return restore_all(self._window, self.context_dir)

    def _fold(self, decision: ResizeDecision, count: int) -> None:
        count = min(max(count, 0), len(self._window))
        while count and count < len(self._window) and self._window[count].get("role") == "tool":
            count += 1  # a tool result never loses the assistant turn that called it: providers reject orphans
        self.turns_since_last_resize = 0
        if count == 0 or (count == 1 and restorable_reference(self._window[0], self.context_dir)):
            return  # nothing new to fold: a lone reference folded again would only nest it
        reference = compress_messages(self._window[:count], self.context_dir)
        self._window = [reference, *self._window[count:]]


def _checked_count(decision: ResizeDecision, count: object) -> int:
    if not isinstance(count, int) or isinstance(count, bool):
        raise TypeError(f"a {decision.type} resize handler returns how many messages to fold, not {count!r}")
    return count


async def _await(result: T | Awaitable[T]) -> T:
    if inspect.isawaitable(result):
        return await result
    return result


def _run(result: T | Awaitable[T]) -> T:
    """A sync caller's view of a handler's result: an awaitable is run to completion in its own trio run."""
    if not inspect.isawaitable(result):
        return result
    if trio.lowlevel.in_trio_run():
        if inspect.iscoroutine(result):
            result.close()
        raise RuntimeError("an async session handler was called from sync code inside trio; use the async_ methods")
    awaitable = result

    async def wait() -> T:
        return await awaitable

    return trio.run(wait)
