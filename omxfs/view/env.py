"""The environment variables a view sets for the processes in it (``omxfs run``), named once for the view that
sets them and for the commands that read them."""

#: the environment variable that tells a process it runs in a view, and as whom (informative: the daemon ignores it)
VIEW_ENV = "OMX_VIEW"
#: the agent a process claims to be (SPEC §3): a mount reads it from the environment the process started with
AGENT_ENV = "OMX_AGENT"
#: which of ``omx --attempts``' runs a view's command makes (1 to N): set by omx for each ``omxfs run`` it starts
ATTEMPT_ENV = "OMX_ATTEMPT"
