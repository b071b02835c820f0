"""Seed 002's session resize as the agent loop's trigger for folding its context (``session:`` in a config).

One fold, two possible triggers. The run's append-only ``ContextManager`` holds the messages and is the only thing
that shrinks them (``ContextManager.fold``: whole turns to a file, one reference in their place, readable back).
A seed-002 ``Session`` brings the decision: its policy says whether to resize (deep or lite, from the thresholds
or a custom sync/async handler) and its resize handler how many of the oldest messages to fold. The session does
not hold the run's messages, so there is no second copy to keep in step and no second compression mechanism.
``context.compress_at_chars`` is the other trigger of the same kind of fold; a config sets at most one.

The loop asks before each request, a turn boundary: the last message is then the task or a tool result, never an
assistant turn waiting for its results. The system prompt and the task are pinned (the cached prefix and what the
run is for): the policy sees, and the handler counts, only the messages after them. A later resize folds the
earlier reference along with newer messages, so references nest and the window stays bounded as in the seed's
session; ``agent.context.restore_all`` gives every message back. ``every_n_turns`` counts model turns (one reply
and its tool results) since the last resize: an agent run has one user task, so user turns would never count up.

``agent.prompting`` (and trio with it) is imported only when a session is in use, so the loop stays cheap to import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agent.context.append_only import ContextManager

if TYPE_CHECKING:
    from agent.prompting.session import Session

__all__ = ["PINNED", "SessionResize", "SessionSettings"]

#: the messages a resize never folds: the system prompt and the task
PINNED = 2


class SessionSettings(BaseModel):
    """The ``session:`` settings of an agent; absent (None) means no session resize, the default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_messages_text_length: int | None = Field(None, ge=0, description="deep resize above this many characters")
    max_keep_messages_count: int | None = Field(None, ge=0, description="lite resize above this many messages")
    every_n_turns: int | None = Field(None, ge=0, description="lite resize after this many model turns")
    keep_last: int = Field(4, ge=0, description="messages an every-n-turns resize keeps verbatim")
    context_dir: Path | None = Field(None, description="where folded messages go; default context.compress_dir")

    def build(self, context_dir: Path) -> Session:
        """A seed-002 ``Session`` with these thresholds and the default policy and handlers."""
        from agent.prompting import LayeredSettings, Session

        resize = self.model_dump(exclude={"context_dir"})
        settings = LayeredSettings.defaults().set("session", {"context_dir": str(context_dir), "resize": resize})
        return Session(settings)


class SessionResize:
    """The loop's side of a session: asked at each turn boundary, it folds the run's context as the session says."""

    def __init__(self, session: Session, fallback_dir: Path | None) -> None:
        self.session = session
        try:
            self.directory = session.context_dir
        except ValueError:
            if fallback_dir is None:
                raise ValueError(
                    "session resize needs a directory for folded messages: set session.context_dir, or "
                    "context.context_dir or context.memory_dir in the agent config"
                ) from None
            self.directory = fallback_dir
        self.turns = 0  # model turns since the last resize

    def before_request(self, context: ContextManager) -> dict[str, Any] | None:
        """Resize if the session's policy says so; what was done (type, reason, messages folded), or None."""
        window = context.get_messages()[PINNED:]
        plan = self.session.plan_resize(window, self.turns)
        self.turns = (self.turns if plan is None else 0) + 1  # the reply to this request is the next turn
        if plan is None:
            return None
        decision, count = plan
        before = context.entry_count
        reference = context.fold(self.directory, count, keep_first=PINNED)
        if reference is None:
            return None
        return {"type": decision.type, "reason": decision.reason, "folded": before - context.entry_count + 1}
