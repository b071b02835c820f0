"""What a run's tokens cost, from the price list litellm ships, read without importing litellm.

litellm keeps its prices in ``model_prices_and_context_window_backup.json`` inside its package (the list omx
makes it use offline: ``LITELLM_LOCAL_MODEL_COST_MAP``). Reading that file takes 30 ms; importing litellm to
ask ``litellm.completion_cost`` takes seconds, which the direct client exists to avoid. A model litellm has no
price for (a local server's ``openai/qwen2.5``) has no cost: ``None``, never a guess.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.model.llm import Usage

__all__ = ["Tally", "cost_usd"]

PRICES_FILE = "model_prices_and_context_window_backup.json"


@functools.cache
def _prices() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        return {}
    try:
        data = json.loads((Path(next(iter(spec.submodule_search_locations))) / PRICES_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _price(model: str) -> dict[str, Any] | None:
    """litellm's entry for ``provider/name`` or ``name`` (its OpenAI models are listed without the provider)."""
    prices = _prices()
    for key in (model, model.split("/", 1)[-1]):
        entry = prices.get(key)
        if isinstance(entry, dict) and "input_cost_per_token" in entry and "output_cost_per_token" in entry:
            return entry
    return None


def cost_usd(model: str, usage: Usage) -> float | None:
    """The price of one reply's usage in US dollars; cached prompt tokens at the cache-read price if listed."""
    entry = _price(model)
    if entry is None:
        return None
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    cache_price = entry.get("cache_read_input_token_cost", entry["input_cost_per_token"])
    return float(
        (usage.prompt_tokens - cached) * entry["input_cost_per_token"]
        + cached * cache_price
        + usage.completion_tokens * entry["output_cost_per_token"]
    )


@dataclass
class Tally:
    """A run's tokens and cost so far; the cost is unknown (None) before the first reply (which tells the model and
    so its price: "$0.0000" for a model with none was wrong) and once one reply came from an unpriced model."""

    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    cost: float | None = None

    def add(self, model: str, usage: Usage) -> None:
        self.usage = Usage(
            prompt_tokens=self.usage.prompt_tokens + usage.prompt_tokens,
            completion_tokens=self.usage.completion_tokens + usage.completion_tokens,
            cached_tokens=self.usage.cached_tokens + usage.cached_tokens,
        )
        price = cost_usd(model, usage)
        if self.requests == 0:  # the first reply: its price is the cost so far
            self.cost = price
        elif price is None or self.cost is None:  # one unpriced reply makes the whole cost unknown
            self.cost = None
        else:
            self.cost += price
        self.requests += 1

    def line(self) -> str:
        """``Tokens: 1,234 in (1,000 cached), 56 out in 3 requests; cost $0.0012`` (or that the cost is unknown)."""
        u = self.usage
        unknown = "no reply from the model" if self.requests == 0 else "no price for this model"
        price = f"cost ${self.cost:.4f}" if self.cost is not None else f"cost unknown ({unknown})"
        plural = "s" if self.requests != 1 else ""
        return (
            f"Tokens: {u.prompt_tokens:,} in ({u.cached_tokens:,} cached), {u.completion_tokens:,} out "
            f"in {self.requests} request{plural}; {price}"
        )

    @classmethod
    def combined(cls, *tallies: Tally) -> Tally:
        """The tokens and cost of several tallies of one run; the cost is unknown where one of them has a reply
        from an unpriced model, as ``add`` keeps it."""
        used = [t for t in tallies if t.requests]
        usage = Usage(prompt_tokens=sum(t.usage.prompt_tokens for t in used),
                      completion_tokens=sum(t.usage.completion_tokens for t in used),
                      cached_tokens=sum(t.usage.cached_tokens for t in used))  # fmt: skip
        costs = [t.cost for t in used]
        cost = None if not used or None in costs else sum(c for c in costs if c is not None)
        return cls(usage, sum(t.requests for t in used), cost)

    def record(self) -> dict[str, Any]:
        """For the trace's end line."""
        return {**self.usage.model_dump(), "requests": self.requests, "cost_usd": self.cost}
