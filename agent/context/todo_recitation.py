"""todo.md recitation (seed 003 TodoRecitation): the plan's checklist restated at the end of every request.

Long contexts bury the goal in the middle, where models attend least; restating the checklist as the newest
message puts it where attention is highest. The model updates the plan by writing checklist lines in its reply.
"""

from __future__ import annotations

__all__ = ["DEFAULT_TRAILER", "RECITATION_INSTRUCTION", "TodoRecitation"]

DEFAULT_TRAILER = "Review the plan above. Continue working on unchecked items."

#: added once to the system prompt (so it stays byte-identical across requests)
RECITATION_INSTRUCTION = (
    "Keep a plan as a checklist of '- [ ] step' lines. Whenever you finish or change a step, write the whole "
    "updated checklist in your reply, with '- [x]' for the steps that are done."
)


class TodoRecitation:
    """The current plan; ``build_recitation_prefix`` is the text appended before each model call."""

    def __init__(self) -> None:
        self._current_plan = ""

    def create_initial_plan(self, query: str, mode: str = "chat") -> str:
        self._current_plan = (
            f"## Task: {query}\n## Mode: {mode}\n## Steps:\n"
            "- [ ] Analyze the request\n- [ ] Generate response\n- [ ] Verify quality\n"
        )
        return self._current_plan

    def build_recitation_prefix(self, trailer: str = DEFAULT_TRAILER) -> str:
        """The plan between markers, or "" when there is none (no plan, nothing to add to the context).

        "Prefix" is the seed's name: the text goes before the model call, as the newest message of the request.
        """
        if not self._current_plan:
            return ""
        return f"[CURRENT_PLAN]\n{self._current_plan.rstrip()}\n[/CURRENT_PLAN]\n\n{trailer}\n"

    def update_from_output(self, llm_output: str) -> bool:
        """Take the checklist lines of a reply as the new plan; whether there were any."""
        lines = [line.strip() for line in llm_output.splitlines() if line.strip().startswith("- [")]
        if lines:
            self._current_plan = "\n".join(lines)
        return bool(lines)

    @property
    def current_plan(self) -> str:
        return self._current_plan

    def reset(self) -> None:
        self._current_plan = ""
