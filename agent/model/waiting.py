"""How omx waits for a model (issue 17): transient failures are tried again with backoff, and a person at a
terminal sees that something is happening.

A 429, a 5xx or a refused connection often passes within seconds, so ending the run on the first one wastes the
work done so far; trying forever hides a dead server. ``RetryPolicy`` bounds it: ``retries`` more attempts
(``OMX_RETRIES``, default 3) after exponential, jittered delays (1, 2, 4 s..., at most 30 s), or the server's own
Retry-After. A timeout is not tried again: the same request would wait as long again (raise ``--timeout``).
Each retry is told to ``on_retry`` (the CLI prints it on stderr) and kept on the reply or the final error, so the
trace records it with the model call.

While a request is out, ``Spinner`` shows the model and the seconds waited on stderr, only when stderr is a
terminal: piped or captured output stays clean.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from agent.model.llm import JsonMode, LLMError, Model, ModelReply

__all__ = ["RetryPolicy", "Spinner", "WaitingModel", "retry_line"]

RETRIES = 3


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``retries`` more attempts; the n-th waits ``base_s * 2**(n-1)`` (jittered, capped at ``cap_s``)."""

    retries: int = RETRIES
    base_s: float = 1.0
    cap_s: float = 30.0

    @classmethod
    def from_env(cls) -> RetryPolicy:
        """``OMX_RETRIES`` (0 turns retrying off), else 3; a bad value is an error that says so."""
        text = os.environ.get("OMX_RETRIES")
        if not text:
            return cls()
        if not text.isdigit() or int(text) > 10:
            raise LLMError(f"LLM error: OMX_RETRIES={text!r} is not a number of retries from 0 to 10")
        return cls(retries=int(text))

    def delay_s(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based): the server's wish if it said, else backoff."""
        if retry_after is not None:
            return min(retry_after, self.cap_s)
        ceiling = min(self.cap_s, self.base_s * 2 ** (retry - 1))
        return round(random.uniform(ceiling / 2, ceiling), 2)  # jitter: many clients do not retry in step


def retry_line(error: LLMError, attempt: int, attempts: int, delay_s: float) -> str:
    """What a retry looks like to the user and in the trace."""
    return f"attempt {attempt} of {attempts} failed ({error}); trying again in {delay_s:.1f}s"


class Spinner:
    """A one-line "waiting for MODEL... Ns" on ``stream`` while a request is out, if ``stream`` is a terminal."""

    FRAMES = "|/-\\"

    def __init__(self, stream: TextIO, label: str, *, interval_s: float = 0.2) -> None:
        self.stream, self.label, self.interval_s = stream, label, interval_s
        self.enabled = _is_terminal(stream)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Spinner:
        if self.enabled:
            self._thread = threading.Thread(target=self._spin, name="omx-spinner", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.stream.write("\r\033[K")  # erase the line: what comes next starts clean
            self.stream.flush()

    def _spin(self) -> None:
        started = time.monotonic()
        for frame in itertools.cycle(self.FRAMES):
            self.stream.write(f"\r{frame} waiting for {self.label}... {time.monotonic() - started:.0f}s")
            self.stream.flush()
            if self._stop.wait(self.interval_s):
                return


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


class WaitingModel:
    """A ``Model`` that retries ``model``'s transient failures under ``policy`` and shows a spinner on ``progress``.

    Forwards ``tool_choice`` and ``supports_allowed_tools``, so tool masking works through it.
    """

    def __init__(
        self,
        model: Model,
        policy: RetryPolicy | None = None,
        *,
        on_retry: Callable[[str], None] | None = None,
        progress: TextIO | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model, self.policy = model, policy or RetryPolicy()
        self.on_retry, self.progress, self.sleep = on_retry, progress, sleep

    @property
    def supports_allowed_tools(self) -> bool:
        return getattr(self.model, "supports_allowed_tools", False) is True

    def __repr__(self) -> str:
        return f"WaitingModel({self.model!r}, retries={self.policy.retries})"

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: JsonMode = False,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> ModelReply:
        extra: dict[str, Any] = {"tool_choice": tool_choice} if tool_choice is not None else {}
        attempts = self.policy.retries + 1
        retries: list[str] = []
        for attempt in range(1, attempts + 1):
            try:
                with self._spinner():
                    reply = self.model.complete(messages, tools=tools, json_mode=json_mode, **extra)
            except LLMError as exc:
                if not exc.transient or attempt == attempts:
                    exc.attempts, exc.retries = attempt, retries
                    raise
                delay = self.policy.delay_s(attempt, exc.retry_after)
                line = retry_line(exc, attempt, attempts, delay)
                retries.append(line)
                if self.on_retry is not None:
                    self.on_retry(line)
                self.sleep(delay)
                continue
            return reply.model_copy(update={"retries": retries}) if retries else reply
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _spinner(self) -> contextlib.AbstractContextManager[object]:
        if self.progress is None:
            return contextlib.nullcontext()
        return Spinner(self.progress, str(getattr(self.model, "model", "the model")))
