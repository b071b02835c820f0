"""The plan tools of SPEC §6: read_text, write_text, list_dir, shell, python, llm.

Each has a pydantic input model (``inputs.py``), returns a structured ``ToolResult`` (``base.py``) and is confined
to the workspace root: file paths by ``paths.py``, subprocesses by ``agent.sandbox.confine``. Importing this package is
light; the tool implementations load with ``agent.plan_run.tools.registry``.
"""

from agent.plan_run.tools.inputs import TOOL_INPUTS, Ref, ToolInput

__all__ = ["TOOL_INPUTS", "Ref", "ToolInput"]
