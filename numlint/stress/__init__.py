"""Stress a user's own model: `numlint.stress(model, example_inputs)` runs it forward and
backward on the inputs that break models (zero rows, duplicated rows, tiny and huge inputs,
large logits) at float32, float16 and bfloat16, finds where the first NaN/Inf of each run
began (with the runtime monitor) and links it to the static findings it confirms.

Unlike `numlint check`, this runs the user's code: that is its purpose. The report's JSON file
(`report.save(path)`) is read by `numlint check --stress-report` without torch; the runner
(and torch) load only when `stress` is called."""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numlint.stress.report import StressIncident, StressReport, StressReportError
    from numlint.stress.runner import DTYPES, StressError, stress

__all__ = [
    "DTYPES",
    "StressError",
    "StressIncident",
    "StressReport",
    "StressReportError",
    "stress",
]

_WHERE = {
    "DTYPES": "numlint.stress.runner",
    "StressError": "numlint.stress.runner",
    "stress": "numlint.stress.runner",
    "SCENARIOS": "numlint.stress.scenarios",
    "StressIncident": "numlint.stress.report",
    "StressReport": "numlint.stress.report",
    "StressReportError": "numlint.stress.report",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'numlint.stress' has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """`numlint.stress` is this package and the function at once: `numlint.stress(model, x)`
    calls `numlint.stress.stress`, whichever of the two an import left on `numlint`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from numlint.stress.runner import stress

        return stress(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
