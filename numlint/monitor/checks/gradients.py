"""Gradient norms: every parameter's gradient norm in one multi-tensor op before each step
(the global norm logged, before clip_grad_norm_ when the loop clips, with the clipped norm and
max_norm), explosions, parameters whose gradient is all zeros, per-parameter statistics, and a
non-finite gradient stopped before it reaches the weights. The step events are built a
second's worth at a time: a step only appends one tuple."""

from __future__ import annotations

import math
import operator
import time
from typing import Any

import torch
from torch import Tensor

from numlint.monitor import capture
from numlint.monitor.checks._base import LOCAL, OK, SPREAD, Check, Point
from numlint.monitor.checks._failures import backward_failure, grad_failure, grads_finite_exact
from numlint.monitor.events import EventLog, StepRecord
from numlint.monitor.grads import ExplosionDetector, norms, param_stats, stack_on, step_events
from numlint.monitor.stats import local

_GRAD = operator.attrgetter("grad")
_ITEM = Tensor.item
_foreach_norm = torch._foreach_norm
_time = time.time
_FLUSH_EVERY_S = EventLog.FLUSH_EVERY_S


class GradientCheck(Check):
    """Phase "grad" (or "backward" when re-running backward names the module)."""

    PRIORITY = 60
    POINTS = frozenset(("backward", "step"))

    def start(self) -> None:
        self._explosion = ExplosionDetector(*self.mon.explosion)
        self._all_present = list(range(len(self.mon.params)))
        # (FSDP2's sharded parameters are DTensors: their gradient norms need a collective)
        self._sharded = any(getattr(p, "device_mesh", None) is not None for p in self.mon.params)
        # (every parameter one single- or double-precision dtype on one device: the norms of a
        # lean step need none of the cases `norms` looks out for)
        params = self.mon.params
        self._plain = (
            bool(params)
            and all(p.dtype == params[0].dtype and p.device == params[0].device for p in params)
            and params[0].dtype in (torch.float32, torch.float64)
        )
        self._clip: tuple[Tensor, float] | None = None  # clip_grad_norm_'s result this step
        self._step: tuple[list[int], tuple[Tensor, float] | None] | None = None
        self._pending: tuple[Any, ...] | None = None  # the step's record, until it completes
        self._unbuilt: list[tuple[Any, ...]] = []  # completed steps whose events are not built
        self._unbuilt_since = 0.0
        capture.listen("clip", self._on_clip)

    def stop(self) -> None:
        capture.unlisten("clip", self._on_clip)

    def _on_clip(self, total: Tensor, max_norm: float, params: list[Tensor]) -> None:
        """clip_grad_norm_ ran on this model's parameters: keep its pre-clip norm (not read)."""
        if not self.mon.paused and params and id(params[0]) in self.mon.param_ids:
            full = getattr(total, "full_tensor", None)  # (FSDP2: a DTensor)
            self._clip = (full() if callable(full) else total, max_norm)

    def values(self, point: Point) -> list[Tensor]:
        params = self.mon.params
        if point == "backward":  # the gradients accumulated so far
            return norms([local(p.grad) for p in params if p.grad is not None])
        if point != "step":
            return []
        grads = list(map(_GRAD, params))
        present = self._all_present
        for g in grads:
            if g is None:  # some parameters got no gradient this step
                present = [i for i, g in enumerate(grads) if g is not None]
                grads = [grads[i] for i in present]
                break
        clip = self._clip
        self._step = (present, clip)
        found = _global_norms(grads) if self._sharded else norms(grads)  # type: ignore[arg-type]
        if clip is None:
            return found
        self._clip = None
        return [clip[0].reshape(()), *found]

    def lean_step(self, loss: Tensor | None) -> bool:
        """The monitor's own read of a lean step (see `Monitor._pre_step`): every gradient's
        norm (one multi-tensor norm) and `loss`, in one read. When every value is finite the
        step is recorded at once, numbered as `step_done` numbers it (the monitor counts it
        next: nothing waits for the step to end), and True is returned. False (nothing
        recorded) when a value is not finite, or the step is not a plain one (a parameter
        without a gradient, clipping, statistics due, sharded gradients): the checks are
        asked then."""
        mon = self.mon
        if self._clip is not None or self._sharded or mon.grad_stats_every:
            return False
        grads = list(map(_GRAD, mon.params))
        for g in grads:
            if g is None:  # (`None in grads` would compare tensors with None)
                return False
        if not grads:
            return False
        try:  # (sparse gradients, say: `norms` knows what to do)
            found = _foreach_norm(grads) if self._plain else norms(grads)  # type: ignore[arg-type]
        except (RuntimeError, TypeError):
            found = norms(grads)  # type: ignore[arg-type]
        vals = list(map(_ITEM, found))
        value = loss.item() if loss is not None else None
        total = math.hypot(*vals)
        if total - total != 0.0 or (value is not None and value - value != 0.0):
            return False  # (an Inf or a NaN)
        mon.loss_value = value
        mon.last_grad_norm = total
        now = _time()
        steps = self._unbuilt
        steps.append(
            (
                mon.step,
                mon.iteration,
                None,
                now,
                (total, self._all_present, vals, value, None, None),
            )
        )
        if len(steps) == 1:
            self._unbuilt_since = now
        elif not 0 <= now - self._unbuilt_since <= _FLUSH_EVERY_S:
            self.flush()
        return True

    def judge(self, values: list[float], point: Point) -> int:
        if point == "backward":
            ok = all(math.isfinite(v) for v in values) or grads_finite_exact(self.mon)
            return OK if ok else LOCAL
        if point != "step" or self._step is None:
            return OK
        mon = self.mon
        present, clip = self._step
        self._step = None
        pre_clip = values[0] if clip is not None else None
        norms_ = values[1:] if clip is not None else values
        total = math.hypot(*norms_)
        if total == math.inf:  # (an Inf or a NaN: the one a sum of the squares gives)
            total = math.sqrt(math.fsum([v * v for v in norms_]))
        # (a sum of squares can overflow: a non-finite total is checked exactly)
        ok = math.isfinite(total) or grads_finite_exact(mon)
        self._pending = None
        if present:
            rows = None
            if mon.grad_stats_every and mon.iteration % mon.grad_stats_every == 0:
                rows = param_stats(mon.params, mon.param_names, present)
            clipped = None
            if clip is not None and pre_clip is not None:
                clipped, total = (total, clip[1]), pre_clip
            self._pending = (total, present, norms_, mon.loss_value, rows, clipped)
        return OK if ok else SPREAD  # (under DDP, the all-reduce may have brought it)

    def report(self, point: Point) -> None:
        if point == "backward":
            backward_failure(self.mon, [], [])
        else:
            grad_failure(self.mon)

    def step_done(self, scale: float | None) -> None:
        """Record the completed step; its events are built later, in order."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        mon = self.mon
        mon.last_grad_norm = pending[0]
        steps = self._unbuilt
        now = time.time()
        # (one numbering for every event: the step just completed, counted from 0, as an
        # incident during it would have said)
        steps.append((mon.step - 1, mon.iteration - 1, scale, now, pending))
        if len(steps) == 1:
            self._unbuilt_since = now
        elif not 0 <= now - self._unbuilt_since <= EventLog.FLUSH_EVERY_S:
            self.flush()

    def step_skipped(self, before: float, after: float) -> None:
        self._pending = None
        self._clip = None

    def flush(self) -> None:
        """Turn the recorded steps into events, in order."""
        steps = self._unbuilt
        if not steps:
            return
        self._unbuilt = []
        mon = self.mon
        rank = mon.rank
        medians = self._explosion.update_all([entry[4][0] for entry in steps])
        events: list[Any] = []
        for (step, iteration, scale, when, pending), median in zip(steps, medians, strict=True):
            total, present, values, loss, rows, clip = pending
            if median is None and rows is None and clip is None and 0.0 not in values:
                # (every step but a few: one plain step event, kept compact)
                events.append(StepRecord((step, iteration, rank, total, loss, scale, when)))
                continue
            events += step_events(
                median=median,
                step=step,
                iteration=iteration,
                rank=mon.rank,
                total=total,
                present=present,
                values=values,
                loss=loss,
                scale=scale,
                rows=rows,
                groups=mon.groups,
                names=mon.param_names,
                explosion=self._explosion,
                when=when,
                clip=clip,
            )
        mon.log.emit_many(events)


def _global_norms(grads: list[Tensor]) -> list[Tensor]:
    """Each gradient's norm; for FSDP2's sharded (DTensor) gradients, the norm of the whole
    gradient: the squared norms of the local shards summed over the shard group (one small
    all-reduce per step)."""
    mesh = getattr(grads[0], "device_mesh", None) if grads else None
    if mesh is None:
        return norms(grads)
    local_norms = norms([local(g) for g in grads])
    dims = [i for i, p in enumerate(grads[0].placements) if p.is_shard()]  # type: ignore[attr-defined]
    if not dims:
        return local_norms
    import torch.distributed as dist

    squares = stack_on(local_norms, local_norms[0].device) ** 2
    dist.all_reduce(squares, group=mesh.get_group(dims[0]))
    return list(squares.sqrt())


CHECK = GradientCheck
