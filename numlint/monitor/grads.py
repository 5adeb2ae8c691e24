"""Gradient norms with multi-tensor ops, per-parameter statistics, explosion and vanishing."""

from __future__ import annotations

import bisect
import math
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from numlint.monitor.events import (
    EXPLOSION,
    GRAD_STATS,
    VANISHING,
    Event,
    make_event,
    step_event,
)

_LOW = (torch.float16, torch.bfloat16)


@dataclass
class ParamGroup:
    """A named set of parameter indices (an optimizer param group or a top-level child)."""

    name: str
    indices: list[int]


def norms(tensors: list[Tensor], ord: float = 2.0) -> list[Tensor]:
    """Per-tensor norms on the device with one multi-tensor kernel (`torch._foreach_norm`)."""
    if not tensors:
        return []
    try:
        if tensors[0].dtype in _LOW:  # accumulate and return in float32: a half norm
            return list(torch._foreach_norm(tensors, ord, dtype=torch.float32))  # overflows
        return list(torch._foreach_norm(tensors, ord))
    except (RuntimeError, TypeError):  # mixed devices or dtypes the fused kernel refuses
        return [
            torch.linalg.vector_norm(
                t, ord, dtype=torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else None
            )
            for t in tensors
        ]


def stack_on(values: list[Tensor], device: torch.device) -> Tensor:
    """Stack 0-dim tensors onto one device as float32."""
    try:
        out = torch.stack(values)
    except RuntimeError:  # tensors on several devices
        out = torch.stack([v.to(device) for v in values])
    return out if out.dtype == torch.float32 else out.float()


def param_stats(params: list[Tensor], names: list[str], present: list[int]) -> list[dict[str, Any]]:
    """Per-parameter gradient statistics (name, mean, std, max |g|, nan/inf flags): one
    multi-tensor op per statistic and one read for all parameters."""
    if not present:
        return []
    grads = [params[i].grad.detach() for i in present]  # type: ignore[union-attr]
    dev = grads[0].device
    l2 = stack_on(norms(grads, 2.0), dev)
    linf = stack_on(norms(grads, math.inf), dev)
    sums = stack_on([g.sum(dtype=torch.float32) for g in grads], dev)
    table = torch.stack([l2, linf, sums]).tolist()
    rows = []
    for k, i in enumerate(present):
        n = max(grads[k].numel(), 1)
        l2v, linfv, sumv = table[0][k], table[1][k], table[2][k]
        mean = sumv / n
        var = max(l2v * l2v / n - mean * mean, 0.0) if math.isfinite(l2v) else math.nan
        finite = math.isfinite(l2v) and math.isfinite(sumv) and math.isfinite(linfv)
        has_nan = has_inf = False
        if not finite:  # rare: look at the gradient itself
            has_nan = bool(torch.isnan(grads[k]).any())
            has_inf = bool(torch.isinf(grads[k]).any())
        rows.append(
            {
                "name": names[i],
                "mean": mean,
                "std": math.sqrt(var) if math.isfinite(var) else math.nan,
                "absmax": linfv,
                "norm": l2v,
                "nonfinite": has_nan or has_inf,
                "has_nan": has_nan,
                "has_inf": has_inf,
            }
        )
    return rows


class ExplosionDetector:
    """Flags a gradient norm above `factor` times the running median of the last `window`
    finite norms, once `warmup` norms have been seen. The window is also kept sorted, so the
    median is one lookup rather than a sort per step."""

    def __init__(self, factor: float = 10.0, window: int = 100, warmup: int = 10) -> None:
        self.factor = factor
        self.warmup = warmup
        self.history: deque[float] = deque(maxlen=window)
        self._sorted: list[float] = []

    def median(self) -> float | None:
        """The median of the window, None before `warmup` norms (or with an empty window)."""
        s = self._sorted
        n = len(s)
        if n < self.warmup or not n:
            return None
        h = n // 2
        return s[h] if n % 2 else (s[h - 1] + s[h]) / 2

    def update(self, norm: float) -> float | None:
        """Add one norm; return the running median when `norm` is an explosion, else None."""
        return self.update_all([norm])[0]

    def update_all(self, norms: list[float]) -> list[float | None]:
        """`update` each norm in turn (a second's worth of steps at a time): for each, the
        running median when it is an explosion, else None."""
        history, s = self.history, self._sorted
        window, warmup, factor = history.maxlen, self.warmup, self.factor
        insort, bisect_left = bisect.insort, bisect.bisect_left
        out: list[float | None] = []
        for norm in norms:
            found = None
            if norm - norm == 0.0 and window:  # (finite, and a window to keep)
                n = len(s)
                if n >= warmup and n:  # (`median()`, inline)
                    h = n // 2
                    median = s[h] if n % 2 else (s[h - 1] + s[h]) / 2
                    if median > 0 and norm > factor * median:
                        found = median
                if n == window:
                    del s[bisect_left(s, history[0])]
                history.append(norm)
                insort(s, norm)
            out.append(found)
        return out


def step_events(
    *,
    step: int,
    iteration: int,
    rank: int,
    total: float,
    present: list[int],
    values: list[float],
    loss: float | None,
    scale: float | None,
    rows: list[dict[str, Any]] | None,
    groups: list[ParamGroup],
    names: list[str],
    explosion: ExplosionDetector,
    when: float | None = None,
    clip: tuple[float, float] | None = None,
    median: float | None | bool = False,
) -> list[Event]:
    """The events of one completed step: the global norm (always), an explosion, vanishing
    gradients (per group, the parameters whose gradient is all zeros), and the
    per-parameter statistics when they were computed. `values[k]` is the gradient norm of
    parameter `present[k]`; `when` the step's wall-clock time (default: now). When the loop
    clipped the gradients, `total` is the pre-clip norm and `clip` is (post-clip norm,
    max_norm). `median`: what `explosion.update(total)` returned, when the caller asked it
    already (else it is asked here)."""
    now = time.time() if when is None else when
    step_ev = step_event(step, iteration, rank, total, loss, scale, now)
    if clip is not None:
        step_ev.update(grad_norm_clipped=clip[0], max_norm=clip[1])
    out = [step_ev]
    if median is False:
        median = explosion.update(total)
    if median is None and rows is None and 0.0 not in values:
        return out  # (every step but a few)
    common = {"step": step, "iteration": iteration, "rank": rank}
    if median is not None:
        out.append(
            make_event(
                EXPLOSION,
                phase="grad",
                grad_norm=total,
                median=median,
                factor=explosion.factor,
                ratio=total / median,
                time=now,
                **common,
            )
        )
    if 0.0 in values:  # some gradient is all zeros: which parameters get no signal?
        per_param = dict(zip(present, values, strict=True))
        for group in groups:
            with_grad = [i for i in group.indices if i in per_param]
            zero = [names[i] for i in with_grad if per_param[i] == 0.0]
            if zero:
                out.append(
                    make_event(
                        VANISHING,
                        phase="grad",
                        group=group.name,
                        module=_common_module(zero) or group.name,
                        params=zero[:50],
                        zero_count=len(zero),
                        param_count=len(with_grad),
                        time=now,
                        **common,
                    )
                )
    if rows is not None:
        out.append(make_event(GRAD_STATS, phase="grad", params=rows, time=now, **common))
    return out


def _common_module(params: list[str]) -> str:
    """The innermost module holding every one of these parameters ("" for the model)."""
    parts = [p.split(".")[:-1] for p in params]
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return ".".join(common)
