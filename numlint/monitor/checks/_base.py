"""The interface every check implements, and the points at which the monitor reads values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from torch import Tensor

if TYPE_CHECKING:
    from numlint.monitor.state import MonitorLike

# Where the monitor reads device values, once per point, every check's values together:
#   "forward"     the end of the top-level forward (the module output flags)
#   "loss"        a criterion or GradScaler.scale() call (the loss, before its backward)
#   "backward"    a backward pass with no optimizer step after it yet (gradient accumulation,
#                 or no optimizer known), or one left on leaving the `with` block
#   "step"        just before optimizer.step
#   "param"       just after optimizer.step (check_params="step")
Point = Literal["forward", "loss", "backward", "step", "param"]
PHASE_OF: dict[str, str] = {
    "forward": "forward",
    "loss": "loss",
    "backward": "backward",
    "step": "grad",
    "param": "param",
}

# A check's verdict on its values. LOCAL: this rank made the non-finite value itself (its data,
# loss, activations, or gradients before DDP's all-reduce); SPREAD: it shows only in values the
# all-reduce combined, so another rank may have made it. The monitor reports the first LOCAL
# check of the origin rank, else its first SPREAD one.
OK, SPREAD, LOCAL = 0, 1, 2


class Check:
    """One check of the training loop. The Monitor creates one of each (`CHECK` in every file
    of this package) when it starts and calls these methods at its hook points, in
    `PRIORITY` order (lower first, which also decides which failing check reports when several
    fail at one point). Every method does nothing by default: a check overrides the ones it
    needs. `values` and `judge` are the fast path: device tensors are handed over unread and
    the monitor reads the values of every check at a point at once."""

    PRIORITY = 50
    #: The read points at which `values` may give something (and `judge` is called).
    POINTS: frozenset[str] = frozenset(("forward", "loss", "backward", "step", "param"))
    #: True when `judge` only asks that every value be finite (else LOCAL) and records
    #: nothing: the monitor then leaves it uncalled when every value it read is finite.
    FLAGS_ONLY = False

    def __init__(self, monitor: MonitorLike) -> None:
        self.mon = monitor
        #: False when `start()` found nothing to watch in this run (DDP buckets without DDP):
        #: the monitor then calls nothing but `stop()` on it.
        self.active = True

    def start(self) -> None:
        """Install what the check needs beyond the monitor's own hooks."""

    def stop(self) -> None:
        """Remove it."""

    def reads(self, point: Point) -> bool:
        """False when `values` can give nothing at `point` in this run (so the monitor need
        not ask); asked once, when the monitor starts."""
        return point in self.POINTS

    def values(self, point: Point) -> list[Tensor]:
        """Device tensors (0-dim) to read at `point`; not read here."""
        return []

    def judge(self, values: list[float], point: Point) -> int:
        """The verdict (OK, SPREAD or LOCAL) on the values this check gave at `point`."""
        return OK

    def report(self, point: Point) -> None:
        """Failure path: this check failed first at `point` on the rank where the value began;
        locate the origin and report it through `Monitor.fail`."""

    def claims(self, point: Point) -> bool:
        """Failure path, when a later check failed at `point`: True when this check's own
        value, which had no flag to read (an unflagged model output), is non-finite too, so
        that it reports instead: where the value began comes first."""
        return False

    def scaled(self, outputs: Any) -> None:
        """GradScaler.scale(outputs) was called (before the scaling)."""

    def step_done(self, scale: float | None) -> None:
        """An optimizer step was completed (`scale`: the loss scale after it, under AMP)."""

    def step_skipped(self, before: float, after: float) -> None:
        """GradScaler skipped the step (an overflowing gradient) and lowered the scale."""

    def flush(self) -> None:
        """Log whatever events the check holds back (before another event, and on stop)."""
