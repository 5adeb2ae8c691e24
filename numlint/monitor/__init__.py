"""Runtime monitor for training loops: the first NaN/Inf at the exact layer and step, gradient
norms, and AMP overflow told apart from divergence.

    monitor = numlint.watch(model, optimizer, scaler=scaler, log="numlint-events.jsonl")
    with monitor:
        ...  # the training loop, unchanged

The names below load lazily, so `numlint report` (numlint.monitor.report) runs without torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numlint.monitor.events import NonFiniteError
    from numlint.monitor.monitor import Monitor, NumlintWarning, watch
    from numlint.monitor.replay import ReplayResult, replay

__all__ = ["Monitor", "NonFiniteError", "NumlintWarning", "ReplayResult", "replay", "watch"]

_WHERE = {
    "NonFiniteError": "numlint.monitor.events",
    "Monitor": "numlint.monitor.monitor",
    "NumlintWarning": "numlint.monitor.monitor",
    "watch": "numlint.monitor.monitor",
    "ReplayResult": "numlint.monitor.replay",
    "replay": "numlint.monitor.replay",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'numlint.monitor' has no attribute {name!r}")
