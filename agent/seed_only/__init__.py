"""Seed cases the product does not call: each module implements one case of a seed, and its tests keep it honest.

``omx`` runs plans (``agent.plan_run``) and ``omx agent`` runs the chat loop (``agent.chat``); neither calls
anything here. Kept apart so that nobody takes them for the product's code path, and so that wiring one in is a
decision: the seed-000 rule engine (``rules``) and sub-agent choice (``subagents``); the seed-002 tool loop
(``tool_loop``, not ``agent.chat.loop``), requests with independent responses (``requests``) and streaming parse
(``streaming``, ``partial_json``). ``agent.model.llm``'s ``stream`` methods serve only these.
"""
