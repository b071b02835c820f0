"""The cost at the end of a run (issue 17: "the cost when litellm knows the model's price"), read from litellm's
price list without importing litellm: it must be the cost litellm itself computes, cached prompt tokens included,
and unknown (never a guess) for a model the list does not price."""

from __future__ import annotations

import pytest

from agent.model.llm import Usage
from agent.model.pricing import Tally, cost_usd


@pytest.mark.parametrize("cached", [0, 600])
def test_a_priced_model_costs_what_litellm_says(monkeypatch: pytest.MonkeyPatch, cached: int) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the bundled list, as omx makes litellm use it
    import litellm  # only here: the product reads the list without it

    prompt, completion = litellm.cost_per_token(
        model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=100, cache_read_input_tokens=cached
    )
    usage = Usage(prompt_tokens=1000, completion_tokens=100, cached_tokens=cached)
    assert cost_usd("openai/gpt-4o-mini", usage) == pytest.approx(prompt + completion)


def test_a_run_s_line_gives_the_dollars_or_says_the_price_is_unknown() -> None:
    priced, local = Tally(), Tally()
    for _ in range(2):
        priced.add("openai/gpt-4o-mini", Usage(prompt_tokens=1000, completion_tokens=100))
    local.add("openai/gpt-4o-mini", Usage(prompt_tokens=1000, completion_tokens=100))
    local.add("openai/qwen2.5", Usage(prompt_tokens=10, completion_tokens=1))  # one unpriced reply: unknown
    one = cost_usd("openai/gpt-4o-mini", Usage(prompt_tokens=1000, completion_tokens=100))
    assert one is not None
    expected = 2 * one
    assert priced.cost == pytest.approx(expected) and priced.cost > 0
    assert priced.line() == f"Tokens: 2,000 in (0 cached), 200 out in 2 requests; cost ${expected:.4f}"
    assert priced.record()["cost_usd"] == priced.cost
    assert local.cost is None and local.line().endswith("cost unknown (no price for this model)")


def test_before_any_reply_the_cost_is_unknown_not_zero() -> None:
    """After only failed or refused requests the line said ``cost $0.0000``, also for a model with no price."""
    tally = Tally()
    assert tally.cost is None and tally.record()["cost_usd"] is None
    assert tally.line() == "Tokens: 0 in (0 cached), 0 out in 0 requests; cost unknown (no reply from the model)"
