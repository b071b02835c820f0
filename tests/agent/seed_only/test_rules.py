"""Seed 000 RuleEngine.match_context: rules from YAML, matched against a context dict (the seed gives no case ids)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.seed_only.rules import RuleEngine

RULES = """
- name: python-style
  when: {language: python}
  then: Follow PEP 8.
- name: big-change
  when: {lines: {gt: 100}, language: [python, go]}
  then: Split the change into reviewable parts.
- name: tests-dir
  when: {path: {matches: '^tests/'}}
  then: Tests name the seed case they cover.
- name: secret-file
  when: {file.name: {in: [.env, id_rsa]}, file.size: {exists: true}}
  then: Never print secrets.
- name: always
  then: Answer in English.
"""


@pytest.fixture
def engine() -> RuleEngine:
    return RuleEngine.from_yaml(RULES)


def test_match_context_returns_matching_rule_names_in_file_order(engine: RuleEngine) -> None:
    assert engine.match_context({"language": "python", "lines": 120}) == ["python-style", "big-change", "always"]


def test_values_lists_and_operators(engine: RuleEngine) -> None:
    assert engine.match_context({"language": "go", "lines": 101, "path": "tests/agent/x.py"}) == [
        "big-change",
        "tests-dir",
        "always",
    ]
    assert engine.match_context({"language": "go", "lines": 100}) == ["always"]


def test_dotted_keys_reach_into_nested_context(engine: RuleEngine) -> None:
    assert "secret-file" in engine.match_context({"file": {"name": ".env", "size": 12}})
    assert "secret-file" not in engine.match_context({"file": {"name": ".env"}})  # size does not exist


def test_no_match_is_an_empty_list() -> None:
    engine = RuleEngine.from_yaml("rules:\n  - name: only-rust\n    when: {language: rust}\n")
    assert engine.match_context({}) == []
    assert engine.match_context({"language": "python"}) == []
    assert RuleEngine().match_context({"anything": 1}) == []


def test_a_type_mismatch_does_not_match_and_does_not_raise(engine: RuleEngine) -> None:
    assert "big-change" not in engine.match_context({"language": "python", "lines": "many"})


def test_matching_leaves_rules_unchanged(engine: RuleEngine) -> None:
    before = [rule.model_dump() for rule in engine.rules]
    engine.match_context({"language": "python", "lines": 500, "path": "tests/x"})
    assert [rule.model_dump() for rule in engine.rules] == before
    assert [rule.then for rule in engine.match({"language": "python"})] == ["Follow PEP 8.", "Answer in English."]


def test_rules_load_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(RULES, encoding="utf-8")
    assert len(RuleEngine.from_file(path).rules) == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- name: a\n  when: {x: {greater: 1}}\n", "unknown operator"),
        ("- name: a\n  when: {x: {matches: '('}}\n", "needs a regular expression"),
        ("- name: a\n- name: a\n", "rule names must be unique"),
        ("- name: a\n  when: {x: 1}\n  unexpected: 2\n", "invalid rule"),
        ("name: [unclosed\n", "not valid YAML"),
        ("just text\n", "expected a list of rules"),
    ],
)
def test_bad_rule_files_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RuleEngine.from_yaml(text)


def test_yaml_is_loaded_safely() -> None:
    with pytest.raises(ValueError, match="not valid YAML"):
        RuleEngine.from_yaml("- !!python/object/apply:os.system ['echo owned']\n")
