"""Seed 000 SubAgentManager, not called by the product: pick the sub-agent that best matches a task.

Matching is by words, not by a model call, so it is instant, free and predictable: the task is scored against
each agent's keywords, specialization and name. Words are lowercase runs of letters and digits, with a light
stem (review/reviewer/reviewing match); Chinese, Japanese and Korean text has no spaces, so it is compared by
two-character pieces instead ("代碼審查" matches "審查這段代碼").
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_AGENT = "general"

_WORD = re.compile(r"[a-z0-9]+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+")
_STOP = {"the", "and", "for", "with", "this", "that", "please", "help", "can", "you", "some", "agent", "task"}
_SUFFIXES = ("ing", "ers", "er", "ed", "s")


class SubAgentConfig(BaseModel):
    """One specialist: what it is for, its prompt, and the tools it may use."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+$", description="how the agent is selected and shown")
    specialization: str = Field(description="what it is good at, in a few words; matched against the task")
    prompt_template: str = Field("", description="its system prompt")
    available_skills: list[str] = Field(default_factory=list, description="tool names it may use")
    max_autonomy: int = Field(3, ge=0, description="steps it may take without asking")
    keywords: list[str] = Field(default_factory=list, description="extra words that select it")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """The comparable pieces of a text: stemmed words, and two-character pieces of CJK runs."""
    lowered = text.lower()
    found = {_stem(w) for w in _WORD.findall(lowered) if len(w) >= 3 and w not in _STOP}
    for run in _CJK_RUN.findall(lowered):
        found.update(run[i : i + 2] for i in range(max(len(run) - 1, 1)))
    return found


class SubAgentManager:
    """The registered specialists; ``select_agent`` picks one for a task."""

    def __init__(self) -> None:
        self._agents: dict[str, SubAgentConfig] = {}

    def register_agent(self, config: SubAgentConfig) -> None:
        if config.name in self._agents:
            raise ValueError(f"a sub-agent named {config.name!r} is already registered")
        self._agents[config.name] = config

    def get(self, name: str) -> SubAgentConfig | None:
        return self._agents.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._agents)

    def select_agent(self, task_context: str) -> str:
        """The best-matching agent's name; "general" when nothing matches. Ties go to the one registered first."""
        if not task_context.strip():
            raise ValueError("task context must not be empty")
        task = terms(task_context)
        best, best_score = DEFAULT_AGENT, 0
        for agent in self._agents.values():
            keywords = set().union(*(terms(k) for k in agent.keywords)) if agent.keywords else set()
            score = 2 * len(task & keywords) + len(task & (terms(agent.specialization) | terms(agent.name)))
            if score > best_score:
                best, best_score = agent.name, score
        return best
