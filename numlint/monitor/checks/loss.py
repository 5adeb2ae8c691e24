"""The loss: the tensor `backward()` is called on (read with the step's other values, or with
a micro-batch's backward flags), and a criterion's or GradScaler.scale()'s argument (read at
once, before its backward). A non-finite loss is reported even when the gradients stay
finite, as the target data's when a target holds the NaN/Inf."""

from __future__ import annotations

import math
import sys
import threading
from typing import Any

import torch
from torch import Tensor, nn

from numlint.monitor import capture
from numlint.monitor.checks._base import LOCAL, OK, Check, Point
from numlint.monitor.checks._failures import loss_failure
from numlint.monitor.stats import flag, flat_tensors

_thread = threading.get_ident


class LossCheck(Check):
    """Phase "loss": module "<loss>", or "<target>" for non-finite target data."""

    PRIORITY = 20
    POINTS = frozenset(("loss", "backward", "step"))

    def start(self) -> None:
        self._unread: Tensor | None = None  # a loss backward() saw, not yet read
        self._read: Tensor | None = None  # the loss read at the last point
        self._now: list[Tensor] = []  # a criterion's or scaler's loss, read at once
        self._inputs: Any = None
        capture.listen("loss", self._on_backward_call)
        mon = self.mon
        if mon.criterion is not None:
            hook = mon.criterion.register_forward_hook(self._on_criterion, with_kwargs=True)
            mon.handles.append(hook)

    def stop(self) -> None:
        capture.unlisten("loss", self._on_backward_call)
        self._unread = self._read = self.mon.loss = None  # (with their autograd graphs)

    def _on_backward_call(self, t: Tensor) -> None:
        """`t.backward()` was called: keep a scalar floating `t` as the step's loss (not read;
        under an enabled GradScaler its `scale()` call gives the unscaled loss instead). Only
        in the thread that ran the model's forward: another thread trains another model."""
        mon = self.mon
        if mon.rec.paused or t.numel() != 1 or _thread() != mon.thread:
            return
        if not (t.is_floating_point() or t.is_complex()):
            return
        mon.backward_seen = True
        caller = sys._getframe(2)  # (this hook, the Tensor.backward wrapper, the loop)
        mon.backward_site = (caller.f_code, caller.f_lasti)  # (the line: when it is needed)
        if not mon.scaling:
            # (kept as it is, not detached: a read needs no copy, and the monitor lets go of
            # it at the step, as the loop does)
            mon.loss = self._unread = t

    def _on_criterion(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        if not self.mon.paused:
            self.mon.targets = tuple(args[1:]) + tuple(kwargs.values())
            self.mon.criterion_call = (args, kwargs)
            self._check_now(output, (args, kwargs))

    def scaled(self, outputs: Any) -> None:
        self._check_now(outputs, None)

    def _check_now(self, loss: Any, inputs: Any) -> None:
        tensors = flat_tensors(loss)
        if not tensors:
            return
        self.mon.loss = tensors[0].detach()
        self._now, self._inputs = tensors, inputs
        try:
            self.mon.check("loss")
        finally:
            self._now, self._inputs = [], None

    def take(self) -> Tensor | None:
        """The step's loss for the monitor's own read of a lean step (see `Monitor._pre_step`),
        as `values("step")` hands it over."""
        self._unread = None
        t = self.mon.loss
        return t if t is not None and t.numel() == 1 else None

    def values(self, point: Point) -> list[Tensor]:
        if point == "step":
            t = self.mon.loss
            self.mon.loss_value = None
        elif point == "backward":
            t = self._unread
        elif point == "loss":
            return [flag(t) for t in self._now]
        else:
            return []
        self._unread = None
        if t is None or t.numel() != 1:
            self._read = None
            return []
        self._read = t
        return [t if t.dim() == 0 else t.detach().reshape(())]

    def judge(self, values: list[float], point: Point) -> int:
        ok = all(map(math.isfinite, values))
        if point == "step":
            if values:
                self.mon.loss_value = values[0]
        elif point == "loss":
            self.mon.loss_finite = ok
        if not ok:
            return LOCAL
        self._read = None  # (needed by `report` only; it holds the loss's autograd graph)
        return OK

    def report(self, point: Point) -> None:
        if point == "loss":
            bad = next(t for t in self._now if not bool(torch.isfinite(t).all()))
            loss_failure(self.mon, bad, self._inputs)
        else:
            loss_failure(self.mon, self._read)

    def step_skipped(self, before: float, after: float) -> None:
        self._unread = None


CHECK = LossCheck
