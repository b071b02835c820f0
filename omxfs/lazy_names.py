"""A package whose public names load with their module on first use (a module ``__getattr__``, PEP 562): a command
that needs one of them does not import every module of the package."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from typing import Any


def name_loader(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: a name of ``homes`` is imported from its module (``homes[name]``, a dotted
    path) and kept on the package, so the next use finds it there; any other name is an ``AttributeError``."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return load
