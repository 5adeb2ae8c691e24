"""Parameters after optimizer.step (check_params="step": one multi-tensor norm and one read
per step). By default a parameter a step made non-finite is found by the next forward's check
instead, at no per-step cost (see `forward`)."""

from __future__ import annotations

import math

from torch import Tensor

from numlint.monitor.checks._base import LOCAL, OK, Check, Point
from numlint.monitor.checks._failures import params_finite
from numlint.monitor.grads import norms
from numlint.monitor.stats import local


class ParamCheck(Check):
    """Phase "param": the first parameter whose gradient was finite and updated value not."""

    PRIORITY = 70
    POINTS = frozenset(("param",))

    def values(self, point: Point) -> list[Tensor]:
        if point != "param":
            return []
        return norms([local(p).detach() for p in self.mon.params])

    def judge(self, values: list[float], point: Point) -> int:
        if all(math.isfinite(v) for v in values) or params_finite(self.mon):
            return OK
        return LOCAL

    def report(self, point: Point) -> None:
        self.mon.fail("param", self.mon.param_findings("param"))


CHECK = ParamCheck
