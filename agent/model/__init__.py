"""Model access: the ``Model`` protocol and its clients (litellm, a direct OpenAI-compatible one, a scripted one
for tests), how a failure reads, how omx waits and retries, and what the tokens cost. Nothing above this package
sees litellm, and importing it never loads litellm (``llm.py`` says why)."""
