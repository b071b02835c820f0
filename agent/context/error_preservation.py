"""Error preservation (seed 003 ErrorPreservation): failed attempts stay in context, and the retry cites them.

A model that can see its own failed attempt and the tool errors behind it avoids repeating them; hiding them (or
replacing the request) throws that evidence away. This module only builds text and decides; the loop appends.
"""

from __future__ import annotations

__all__ = ["ErrorPreservation", "is_tool_error"]


def is_tool_error(result: str) -> bool:
    """Tool results that report a failure start with "error:" (agent.chat.tool_manager's convention)."""
    return result.lstrip().startswith("error:")


class ErrorPreservation:
    @staticmethod
    def build_retry_prompt(original_query: str, failed_result: str, error_info: str = "") -> str:
        """A retry request that quotes the failed attempt and the errors seen, rather than starting afresh."""
        error_section = f"\nError encountered: {error_info}" if error_info else ""
        return (
            f'My previous attempt to answer "{original_query}":\n\n'
            f"{failed_result}\n"
            f"{error_section}\n\n"
            "The above attempt was incomplete or incorrect. "
            "Please provide an improved answer, learning from the issues above.\n"
        )

    @staticmethod
    def should_retry(result: str, max_retries: int = 1, current_retry: int = 0, min_chars: int = 10) -> bool:
        """Retry an answer shorter than ``min_chars`` (an empty one always), at most ``max_retries`` times."""
        if current_retry >= max_retries:
            return False
        stripped = result.strip()
        return stripped == "" or len(stripped) < min_chars
