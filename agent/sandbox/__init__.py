"""The OS sandbox every tool subprocess runs in: ``confine.py`` picks the mechanism and runs the program,
``launcher.py`` is the small standalone program that confines itself (Landlock) and then execs it."""
