"""Seed 000 SubAgentManager.select_agent: TC-SubAgent-001, and the contract's default and preconditions."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent.seed_only.subagents import DEFAULT_AGENT, SubAgentConfig, SubAgentManager, terms


def reviewer(specialization: str = "code review") -> SubAgentConfig:
    return SubAgentConfig(
        name="code_reviewer",
        specialization=specialization,
        prompt_template="...",
        available_skills=["analyze_code"],
        max_autonomy=3,
    )


def test_TC_SubAgent_001_keyword_match_selects_the_specialist() -> None:
    manager = SubAgentManager()
    manager.register_agent(reviewer())
    assert manager.select_agent("Please review this code for me") == "code_reviewer"


def test_TC_SubAgent_001_the_seed_case_in_chinese() -> None:
    manager = SubAgentManager()
    manager.register_agent(reviewer("代碼審查"))
    assert manager.select_agent("請幫我審查這段代碼") == "code_reviewer"


def test_no_match_falls_back_to_general() -> None:
    manager = SubAgentManager()
    manager.register_agent(reviewer())
    assert manager.select_agent("What is the weather in Taipei?") == DEFAULT_AGENT == "general"
    assert SubAgentManager().select_agent("anything at all") == "general"


def test_the_best_match_wins_and_keywords_count_double() -> None:
    manager = SubAgentManager()
    manager.register_agent(reviewer())
    manager.register_agent(
        SubAgentConfig(name="tester", specialization="writing unit tests for code", keywords=["pytest", "coverage"])
    )
    manager.register_agent(SubAgentConfig(name="writer", specialization="documentation and docs"))
    assert manager.select_agent("Raise the pytest coverage of this code") == "tester"
    assert manager.select_agent("Reviewing the code changes") == "code_reviewer"  # reviewing ~ review
    assert manager.select_agent("Update the documentation") == "writer"


def test_ties_go_to_the_agent_registered_first() -> None:
    manager = SubAgentManager()
    manager.register_agent(SubAgentConfig(name="first", specialization="data analysis"))
    manager.register_agent(SubAgentConfig(name="second", specialization="data cleaning"))
    assert manager.select_agent("look at this data") == "first"


def test_preconditions_are_checked() -> None:
    manager = SubAgentManager()
    manager.register_agent(reviewer())
    with pytest.raises(ValueError, match="task context must not be empty"):
        manager.select_agent("  ")
    with pytest.raises(ValueError, match="already registered"):
        manager.register_agent(reviewer())
    with pytest.raises(ValidationError):
        SubAgentConfig(name="bad name", specialization="x")
    assert manager.names == ["code_reviewer"]
    assert manager.get("code_reviewer") == reviewer()


def test_terms_ignore_filler_and_stem_lightly() -> None:
    assert terms("Please help reviewing THE codes") == {"review", "code"}
    assert terms("代碼審查") == {"代碼", "碼審", "審查"}
