"""``omx agent "PROMPT"``: the multi-turn tool loop (seed 000 Agent) and what it wires in.

``command.py`` is the command (config, run, how it ended), ``loop.py`` the loop and ``AgentConfig``, the one config
of ``omx agent``; ``tool_manager.py`` its tools, ``memory_tools.py`` and ``session_resize.py`` the glue to the
parts it takes from ``agent.context`` (seed 003) and ``agent.prompting`` (seed 002), which know nothing of it.
"""
