"""numlint: a linter for numerically unsafe PyTorch code."""

from __future__ import annotations

from typing import Any

from numlint.api import check_paths, check_source
from numlint.diagnostic import Diagnostic, Edit, Fix

__version__ = "0.1.0"

__all__ = [
    "Diagnostic",
    "Edit",
    "Fix",
    "NonFiniteError",
    "check_paths",
    "check_source",
    "replay",
    "stress",
    "watch",
    "__version__",
]

# The runtime monitor imports torch; load it only when asked for.
_RUNTIME = {"watch", "replay", "NonFiniteError"}


def __getattr__(name: str) -> Any:
    if name == "stress":  # the package, callable as the function: numlint.stress(model, x)
        import importlib

        return importlib.import_module("numlint.stress")
    if name in _RUNTIME:
        from numlint import monitor

        return getattr(monitor, name)
    raise AttributeError(f"module 'numlint' has no attribute {name!r}")
