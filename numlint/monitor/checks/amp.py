"""AMP: a GradScaler overflow skip is an event (`amp_overflow_skip`, with where the overflow
was first seen); `max_skips` consecutive skips or a loss scale below `min_scale` is
divergence, an error."""

from __future__ import annotations

import math
from typing import Any

from numlint.monitor import events as ev
from numlint.monitor.amp import SkipTracker
from numlint.monitor.checks._base import Check
from numlint.monitor.grads import norms, stack_on
from numlint.monitor.stats import read_floats


class AmpCheck(Check):
    """Skipped steps and divergence under an enabled GradScaler."""

    PRIORITY = 80
    POINTS = frozenset(())

    def start(self) -> None:
        self._skips = SkipTracker(self.mon.max_skips, self.mon.min_scale)
        self.active = self.mon.scaler is not None

    def step_done(self, scale: float | None) -> None:
        if scale is not None:
            self._skips.stepped()

    def step_skipped(self, before: float, after: float) -> None:
        mon = self.mon
        flags, idx = mon.rec.take_backward()
        if not mon.loss_finite:
            return  # already reported as a loss event
        where: dict[str, Any] = {}
        if flags:  # where the overflowing gradient was first seen in backward
            vals = read_floats(flags)
            k = next((k for k, v in enumerate(vals) if not math.isfinite(v)), None)
            if k is not None:
                where = {
                    "module": mon.names[idx[k]],
                    "kind": "nan" if vals[k] != vals[k] else "inf",
                }
        if not where:  # else the first parameter whose gradient overflowed
            where = self._first_nonfinite_grad()
        reason = self._skips.skipped(after)
        event = ev.make_event(
            ev.AMP_SKIP,
            step=mon.step,  # (the optimizer step it would have been, counted from 0)
            iteration=mon.iteration - 1,  # (the attempt just ended, counted from 0)
            phase="grad",
            rank=mon.rank,
            origin=False,
            scale_before=before,
            scale=after,
            loss=float(mon.loss.detach().float().item()) if mon.loss is not None else None,
            consecutive=self._skips.consecutive,
            **where,
        )
        mon.emit(event)
        if reason is not None:
            div = dict(event)
            div.update(event=ev.AMP_DIVERGENCE, reason=reason, origin=True)
            mon.fail_events([div])

    def _first_nonfinite_grad(self) -> dict[str, Any]:
        mon = self.mon
        present = [(n, p.grad) for n, p in zip(mon.param_names, mon.params, strict=True)]
        present = [(n, g) for n, g in present if g is not None]
        if not present:
            return {}
        values = stack_on(norms([g for _, g in present]), present[0][1].device).tolist()
        for (name, _), v in zip(present, values, strict=True):
            if not math.isfinite(v):
                return {"module": name, "kind": "nan" if v != v else "inf"}
        return {}


CHECK = AmpCheck
