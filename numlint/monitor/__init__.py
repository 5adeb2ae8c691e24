"""Runtime monitor for training loops: the first NaN/Inf at the exact layer and step, gradient
norms, and AMP overflow told apart from divergence.

    monitor = numlint.watch(model, optimizer, scaler=scaler, log="numlint-events.jsonl")
    with monitor:
        ...  # the training loop, unchanged

Imports torch; nothing on the static linting path imports this package."""

from __future__ import annotations

from numlint.monitor.events import NonFiniteError
from numlint.monitor.monitor import Monitor, NumlintWarning, watch
from numlint.monitor.replay import ReplayResult, replay

__all__ = ["Monitor", "NonFiniteError", "NumlintWarning", "ReplayResult", "replay", "watch"]
