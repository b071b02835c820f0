"""A step whose input names its own output, read as the output of the step before it.

The 0.5B model planned "step 2 [python] ... input: step:2.output" (and step 1 so, with nothing before it): no plan
is valid that way, and the model, shown the error, wrote the same reference again until planning failed. A step
cannot use what it has not made yet; what it was meant to use is, in every such plan seen, the output of the step
just before it. So before a plan is validated, a reference of a step to itself is made one to the step before it,
and its description says so (``by omx``), for the person who confirms the plan. A step that has no step before it
and names its own output as its optional ``input`` (a python or an llm step: "Use python3 -c to compute 2 to the
power 20 ...", the 1.5B model's step 1, ``input: step:1.output``, six invalid plans in a row) is given no input, and
its description says so; any other reference of such a step to itself is kept, and the plan stays invalid: the
model is told so, as before. References to a later step are left alone too: which step was meant is not known.
"""

from __future__ import annotations

from typing import Any

from agent.plan_run.tools.inputs import REF_PATTERN

__all__ = ["with_self_refs_mended"]


def with_self_refs_mended(data: Any) -> Any:
    """The plan ``data`` (parsed JSON, not validated yet) with each step's references to its own output made
    references to the step before it (see the module); anything not shaped as a plan is returned as it is."""
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list):
        return data
    mended: list[Any] = []
    before: int | None = None
    for step in steps:
        own = step.get("id") if isinstance(step, dict) else None
        if isinstance(own, int) and before is not None and _names(step.get("inputs"), own):
            note = f" (its input is the output of step {before}, by omx: the plan named this step's own output)"
            step = {**step, "inputs": _pointed(step["inputs"], own, before),
                    "description": f"{step.get('description', '')}{note}"}  # fmt: skip
        elif isinstance(own, int) and before is None and _own_input(step, own):
            inputs = {key: value for key, value in step["inputs"].items() if key != "input"}
            note = " (no input, by omx: the plan named this step's own output, and no step is before it)"
            step = {**step, "inputs": inputs, "description": f"{step.get('description', '')}{note}"}
        mended.append(step)
        before = own if isinstance(own, int) else before
    return {**data, "steps": mended}


def _own_input(step: dict[str, Any], own: int) -> bool:
    """Whether ``step``, a python or an llm step, has its own output as its ``input`` and no other reference to it."""
    inputs = step.get("inputs")
    if step.get("tool") not in ("python", "llm") or not isinstance(inputs, dict) or "input" not in inputs:
        return False
    return _own_ref(inputs["input"], own) and not _names({k: v for k, v in inputs.items() if k != "input"}, own)


def _own_ref(value: Any, own: int) -> bool:
    if not (isinstance(value, dict) and set(value) == {"ref"} and isinstance(value["ref"], str)):
        return False
    match = REF_PATTERN.fullmatch(value["ref"])
    return match is not None and int(match.group(1)) == own


def _names(inputs: Any, own: int) -> bool:
    if _own_ref(inputs, own):
        return True
    if isinstance(inputs, dict):
        return any(_names(value, own) for value in inputs.values())
    if isinstance(inputs, list):
        return any(_names(value, own) for value in inputs)
    return False


def _pointed(inputs: Any, own: int, before: int) -> Any:
    if _own_ref(inputs, own):
        return {"ref": f"step:{before}.output"}
    if isinstance(inputs, dict):
        return {key: _pointed(value, own, before) for key, value in inputs.items()}
    if isinstance(inputs, list):
        return [_pointed(value, own, before) for value in inputs]
    return inputs
