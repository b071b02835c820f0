"""Test helpers shared across the suite: a local OpenAI-compatible stub server and its pytest fixture."""
