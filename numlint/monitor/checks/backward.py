"""Backward gradients: one flag per gradient flowing back into a module (where no weight
gradient covers it), read with the loss and the gradient norms; on failure the backward is
re-run with exact checks to name the module where the non-finite gradient began."""

from __future__ import annotations

import math

from torch import Tensor

from numlint.monitor.checks._base import LOCAL, OK, Check, Point
from numlint.monitor.checks._failures import backward_failure


class BackwardCheck(Check):
    """Phase "backward": the module whose incoming gradient was finite and outgoing not."""

    PRIORITY = 30
    FLAGS_ONLY = True
    POINTS = frozenset(("backward", "step"))

    def start(self) -> None:
        self._flags: list[Tensor] = []
        self._idx: list[int] = []

    def reads(self, point: Point) -> bool:
        # (without module hooks no gradient gets a flag in a training step, unless the outputs
        # of an AMP step are flagged: see Monitor._root_post)
        mon = self.mon
        return point in self.POINTS and (
            point != "step" or mon.module_hooks or mon.scaler is not None
        )

    def values(self, point: Point) -> list[Tensor]:
        if point not in ("backward", "step"):
            return []
        mon = self.mon
        flags, idx = mon.rec.take_backward() if mon.rec.bflags else ([], [])
        if point == "step" and mon.scaling:
            flags, idx = [], []  # GradScaler let this step through: its gradients are finite
        self._flags, self._idx = flags, idx
        return flags

    def judge(self, values: list[float], point: Point) -> int:
        return OK if all(math.isfinite(v) for v in values) else LOCAL

    def report(self, point: Point) -> None:
        backward_failure(self.mon, self._flags, self._idx)


CHECK = BackwardCheck
