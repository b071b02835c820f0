"""The context settings of an agent (``context:`` in its YAML config); every one off or harmless by default.

One section of ``agent.chat.loop.AgentConfig``, the one config system of ``omx agent``; the seed-002 layered
settings (``agent.prompting.layered_settings``) are a different thing, the switches of the prompting features.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ContextSettings"]


class ContextSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    append_only: bool = Field(False, description="check every request extends the previous; allows compression")
    compress_at_chars: int | None = Field(None, gt=0, description="compress older turns beyond this context size")
    compress_keep_last: int = Field(8, ge=1, description="messages kept after the compressed reference")
    context_dir: Path | None = Field(None, description="where compressed context goes; default memory_dir/context")
    todo_recitation: bool = Field(False, description="restate the plan's checklist at the end of each request")
    error_preservation: bool = Field(False, description="keep failed answers and retry with a prompt citing them")
    max_retries: int = Field(1, ge=0, description="retries of a failed answer per run")
    retry_min_chars: int = Field(1, ge=1, description="an answer shorter than this counts as failed")
    tool_masking: bool = Field(False, description="modes restrict which tools may be called, never which exist")
    tool_modes: dict[str, list[str]] = Field(default_factory=dict, description="mode name -> allowed tool names")
    template_noise: bool = Field(False, description="vary the wording of newly appended harness text")
    noise_seed: int = Field(0, description="seed of the wording choices, so runs are reproducible")
    memory_dir: Path | None = Field(None, description="the agent's own directory for memory files and tools")

    @model_validator(mode="after")
    def _consistent(self) -> ContextSettings:
        if self.compress_at_chars is not None and not self.append_only:
            raise ValueError("compress_at_chars needs append_only: compression is the append-only context's shrink")
        if self.compress_at_chars is not None and self.context_dir is None and self.memory_dir is None:
            raise ValueError("compress_at_chars needs context_dir or memory_dir: compressed context goes to a file")
        return self

    @property
    def compress_dir(self) -> Path | None:
        if self.context_dir is not None:
            return self.context_dir
        return None if self.memory_dir is None else self.memory_dir / "context"
