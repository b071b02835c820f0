"""Seed 000 RuleEngine, not called by the product: which YAML rules apply to a context (a dict of facts).

A rule file is a list (or ``{"rules": [...]}``) of ``{name, when, then}``; every key of ``when`` must hold:

    - name: python-style
      when: {language: python, lines: {gt: 100}, path: {matches: '\\.py$'}}
      then: "Follow PEP 8; split functions over 50 lines."

A condition is a value (equal), a list (one of), or ``{op: value}`` with the ops below. Keys may be dotted paths
into nested dicts. Rules are checked when loaded, so a typo in an op is an error naming the rule, not a rule that
silently never matches; YAML is read with ``safe_load`` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

_MISSING = object()

OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda v, x: v == x,
    "ne": lambda v, x: v != x,
    "in": lambda v, x: v in x,
    "not_in": lambda v, x: v not in x,
    "contains": lambda v, x: x in v,
    "gt": lambda v, x: v > x,
    "gte": lambda v, x: v >= x,
    "lt": lambda v, x: v < x,
    "lte": lambda v, x: v <= x,
    "matches": lambda v, x: re.search(x, str(v)) is not None,
}


class Rule(BaseModel):
    """One rule; its conditions are checked when it is built, so a bad file fails at load time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    when: dict[str, Any] = Field(default_factory=dict, description="every condition must hold; empty = always")
    then: Any = Field(None, description="what applies when the rule matches: a prompt fragment, a setting...")
    description: str = ""

    @field_validator("when")
    @classmethod
    def _known_ops(cls, when: dict[str, Any]) -> dict[str, Any]:
        for key, condition in when.items():
            if isinstance(condition, dict):
                unknown = set(condition) - set(OPS) - {"exists"}
                if unknown or not condition:
                    raise ValueError(f"{key}: unknown operator(s) {sorted(unknown)}; use {sorted(OPS)} or exists")
                if "matches" in condition:
                    try:
                        re.compile(condition["matches"])
                    except (re.error, TypeError) as exc:
                        raise ValueError(f"{key}: 'matches' needs a regular expression: {exc}") from None
        return when

    def holds(self, context: Mapping[str, Any]) -> bool:
        return all(_condition_holds(_lookup(context, key), cond) for key, cond in self.when.items())


def _lookup(context: Mapping[str, Any], key: str) -> Any:
    value: Any = context
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return context.get(key, _MISSING)  # a literal key with dots wins over no match
        value = value[part]
    return value


def _condition_holds(value: Any, condition: Any) -> bool:
    if isinstance(condition, dict):
        if "exists" in condition and bool(condition["exists"]) != (value is not _MISSING):
            return False
        checks = [(op, arg) for op, arg in condition.items() if op != "exists"]
        if value is _MISSING:
            return not checks
        try:
            return all(OPS[op](value, arg) for op, arg in checks)
        except TypeError:  # comparing a string with a number, say: the rule does not apply
            return False
    if value is _MISSING:
        return False
    return value in condition if isinstance(condition, list) else bool(value == condition)


class RuleEngine:
    """An ordered, unchanging set of rules; names are unique so a match can be reported by name."""

    def __init__(self, rules: list[Rule] | None = None) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules or ())
        names = [r.name for r in self.rules]
        if duplicates := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"rule names must be unique; repeated: {duplicates}")

    @classmethod
    def from_file(cls, path: str | Path) -> RuleEngine:
        return cls.from_yaml(Path(path).read_text(encoding="utf-8"), source=str(path))

    @classmethod
    def from_yaml(cls, text: str, *, source: str = "rules") -> RuleEngine:
        """Rules from YAML text: a list of {name, when, then}, or {rules: [...]}."""
        try:
            data = yaml.safe_load(text) or []
        except yaml.YAMLError as exc:
            raise ValueError(f"{source}: not valid YAML: {exc}") from None
        items = data.get("rules", []) if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ValueError(f"{source}: expected a list of rules, each {{name, when, then}}")
        try:
            return cls([Rule.model_validate(item) for item in items])
        except ValidationError as exc:
            raise ValueError(f"{source}: invalid rule: {exc}") from None

    def match(self, context: Mapping[str, Any]) -> list[Rule]:
        return [rule for rule in self.rules if rule.holds(context)]

    def match_context(self, context: Mapping[str, Any]) -> list[str]:
        """The names of the rules that apply, in file order; possibly none."""
        return [rule.name for rule in self.match(context)]
