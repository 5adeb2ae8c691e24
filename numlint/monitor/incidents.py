"""Incidents: what the monitor does once a check has found where a non-finite value began.

One incident per step: a failure later in the step of an incident already reported is its
consequence and is dropped. An incident identical to the previous one (a NaN left in the
weights, fed to every later step) is counted, and the run is logged once it ends as one
`nonfinite_repeated` event. Each new incident gets its own snapshot (up to `max_snapshots`),
its events are logged with an `incident` number, and the action is applied."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from numlint.monitor import events as ev
from numlint.monitor import snapshot as snap_mod
from numlint.monitor.events import Event, NonFiniteError, make_event

if TYPE_CHECKING:
    from numlint.monitor.state import MonitorLike


class NumlintWarning(RuntimeWarning):
    """Issued for error events when action="warn"."""


class Incidents:
    """The incidents of one monitor."""

    def __init__(self, monitor: MonitorLike) -> None:
        self.mon = monitor
        self.count = 0
        self.open = False  # an incident was reported in the current step
        self._last_sig: tuple[Any, ...] | None = None
        self._repeat: Event | None = None

    def report(self, events: list[Event]) -> None:
        """Report one incident (the events of one failing check): snapshot, log, action."""
        mon = self.mon
        origin = next((e for e in events if e.get("origin")), events[0])
        if self.open:
            return
        self.open = True
        mon.failed = True
        sig = tuple(origin.get(k) for k in ("event", "phase", "module", "kind", "source_rank"))
        if sig == self._last_sig:
            self._count_repeat(origin)
            if mon.action == "raise":
                raise NonFiniteError(origin, events, mon.snapshot)
            return
        mon.emit_pending()
        self.end_repeat()
        self._last_sig = sig
        self.count += 1
        if self.count <= mon.max_snapshots:
            mon.snapshot = self._save_snapshot(origin)
            if isinstance(mon.snapshot, Path):
                for e in events:
                    e["snapshot"] = str(mon.snapshot)
        for e in events:
            e["incident"] = self.count
            mon.log.emit(e)
        if mon.action == "raise":
            raise NonFiniteError(origin, events, mon.snapshot)
        if mon.action == "warn":
            warnings.warn(ev.describe(origin), NumlintWarning, stacklevel=4)

    def _count_repeat(self, origin: Event) -> None:
        mon = self.mon
        rep = self._repeat
        if rep is None:
            keys = ("phase", "module", "kind", "tensor", "source_rank")
            rep = self._repeat = make_event(
                ev.REPEATED,
                of=origin["event"],
                rank=mon.rank,
                incident=self.count,
                count=0,
                first_step=mon.step,
                first_iteration=mon.iteration,
                **{k: origin.get(k) for k in keys},
            )
        rep.update(count=rep["count"] + 1, step=mon.step, iteration=mon.iteration)

    def end_repeat(self) -> None:
        """Log the run of repeated incidents counted so far, if any."""
        rep, self._repeat = self._repeat, None
        if rep is not None:
            self.mon.log.emit(rep)

    def _save_snapshot(self, event: Event) -> Any:
        mon = self.mon
        grads = mon.output_grads() if event.get("phase") in ("backward", "grad", "loss") else None
        path = mon.snapshot_path
        if path is not None and self.count > 1:
            path = path.with_name(f"{path.stem}.{self.count}{path.suffix}")
        try:
            data = snap_mod.build(
                event=event,
                model=mon.model,
                optimizer=mon.optimizer,
                scaler=mon.scaler,
                args=mon.args,
                kwargs=mon.kwargs,
                rng=mon.rng,
                grad_enabled=mon.grad_enabled,
                output_grads=grads if grads and any(g is not None for g in grads) else None,
                targets=mon.targets,
            )
            if path is None:
                return data
            return snap_mod.save(data, path)
        except Exception as exc:  # a failed snapshot must not hide the real error
            warnings.warn(f"numlint: could not save snapshot: {exc}", NumlintWarning, stacklevel=2)
            return None
