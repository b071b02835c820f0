"""The record of a run, for ``omx "task"``, ``omx run`` and ``omx agent`` alike: where it goes (``runs_dir.py``),
what it holds (``trace.py``) and how it reads back (``replay.py``)."""
