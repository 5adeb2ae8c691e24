"""The monitor's checks, one file each. A file here (not starting with `_`) defines `CHECK`, a
subclass of `Check` (see `_base`); the Monitor finds every one of them and dispatches to them,
so adding a check is adding a file."""

from __future__ import annotations

import importlib
import pkgutil

from numlint.monitor.checks._base import LOCAL, OK, SPREAD, Check, Point

_found: list[type[Check]] | None = None


def all_checks() -> list[type[Check]]:
    """Every check class, in PRIORITY order (found once)."""
    global _found
    if _found is None:
        classes = []
        for info in pkgutil.iter_modules(__path__):
            if not info.name.startswith("_"):
                classes.append(importlib.import_module(f"{__name__}.{info.name}").CHECK)
        _found = sorted(classes, key=lambda c: c.PRIORITY)
    return list(_found)


__all__ = ["LOCAL", "OK", "SPREAD", "Check", "Point", "all_checks"]
