"""Structural template noise (seed 003 TemplateRandomizer): vary the wording of newly appended harness text.

A context full of identically phrased steps invites the model to imitate the pattern instead of thinking. Varying
the wrappers breaks that, and since only text being appended is wrapped, the prefix already sent never changes.
The choice comes from a seeded generator, so a run is reproducible and no clock enters the prompt.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["TemplateNoise"]


class TemplateNoise:
    _INSTRUCTION_WRAPPERS = (
        "{instruction}",
        "Please help with the following: {instruction}",
        "Task: {instruction}",
        "I need your help. {instruction}",
    )
    _QUALITY_SUFFIXES = ("", " Be thorough and accurate.", " Provide a clear and helpful response.",
                         " Think step by step if needed.")  # fmt: skip
    _RECITATION_TRAILERS = (
        "Review the plan above. Continue working on unchecked items.",
        "Check the plan above and carry on with the next open step.",
        "Plan above; pick up the first unchecked item.",
        "Keep to the plan above; the unchecked items are what is left.",
    )

    def __init__(self, seed: int = 0) -> None:
        self._random = random.Random(seed)

    def choose(self, variants: Sequence[str]) -> str:
        return self._random.choice(list(variants))

    def wrap_instruction(self, instruction: str) -> str:
        """The instruction inside a randomly chosen wrapper, plus a randomly chosen suffix."""
        wrapper = self.choose(self._INSTRUCTION_WRAPPERS)
        return wrapper.format(instruction=instruction) + self.choose(self._QUALITY_SUFFIXES)

    def recitation_trailer(self) -> str:
        return self.choose(self._RECITATION_TRAILERS)
