"""``omx "TASK"`` and ``omx run PLAN``: plan → show → confirm → execute → summarise (seed 004).

``workflow.py`` is the flow; ``planner.py`` asks the model for a plan in the format of ``plan.py``; ``risk.py`` and
``shell_policy.py`` judge it, ``confirm.py`` and ``overwrites.py`` show it to the person; ``executor.py`` runs its
steps with the plan tools (``agent.plan_run.tools``), ``resume.py`` from a later step.
"""
