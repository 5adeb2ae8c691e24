"""Events: the record every check produces, the bounded in-memory log and the JSONL file."""

from __future__ import annotations

import contextlib
import json
import math
import operator
import os
import threading
import time
import weakref
from collections import deque
from pathlib import Path
from typing import Any

# Every JSONL line carries these keys (None where a key does not apply to the event type).
BASE_KEYS: tuple[str, ...] = (
    "event",
    "step",
    "iteration",
    "phase",
    "module",
    "kind",
    "nan_count",
    "inf_count",
    "dtype",
    "shape",
    "min",
    "max",
    "mean",
    "absmax",
    "rank",
    "origin",
)

# Event types. Only NONFINITE and AMP_DIVERGENCE are errors (raised with action="raise").
NONFINITE = "nonfinite"
NONFINITE_REMOTE = "nonfinite_remote"
STEP = "step"
GRAD_STATS = "grad_stats"
EXPLOSION = "grad_explosion"
VANISHING = "grad_vanishing"
AMP_SKIP = "amp_overflow_skip"
AMP_DIVERGENCE = "amp_divergence"
REPEATED = "nonfinite_repeated"  # a run of identical incidents after the first, with a count
ERROR_EVENTS = frozenset({NONFINITE, NONFINITE_REMOTE, AMP_DIVERGENCE})

Event = dict[str, Any]


def make_event(event: str, **fields: Any) -> Event:
    """A new event with every base key present, then `fields`."""
    ev: Event = dict.fromkeys(BASE_KEYS)
    ev["event"] = event
    ev.update(fields)
    ev.setdefault("time", time.time())
    return ev


def step_event(
    step: int,
    iteration: int,
    rank: int,
    grad_norm: float,
    loss: float | None,
    scale: float | None,
    time: float,
) -> Event:
    """The event of a completed step: `make_event(STEP, grad_norm=..., loss=..., scale=...,
    time=..., step=..., iteration=..., rank=...)`, made faster (one is made every step)."""
    ev = _STEP_EVENT.copy()
    ev["step"], ev["iteration"], ev["rank"] = step, iteration, rank
    ev["grad_norm"], ev["loss"], ev["scale"], ev["time"] = grad_norm, loss, scale, time
    return ev


class StepRecord(tuple):  # type: ignore[type-arg]
    """A plain step event kept compact until it is read: the values of `step_event`, in its
    order (step, iteration, rank, grad_norm, loss, scale, time). A completed step only makes
    one of these; the log holds it as it is and writes its line straight from it."""

    __slots__ = ()

    def event(self) -> Event:
        """The event, as `step_event` makes it."""
        return step_event(*self)

    def line(self) -> str:
        """Its JSONL line: `to_json_line(self.event())`, without the event."""
        step, iteration, rank, grad_norm, loss, scale, when = self
        if (
            type(grad_norm) is float
            and type(loss) is float
            and scale is None
            and type(when) is float
            and grad_norm - grad_norm == 0.0  # (finite: repr is what JSON writes)
            and loss - loss == 0.0
            and type(step) is int
            and type(iteration) is int
            and type(rank) is int
        ):
            return _STEP_LINE_PLAIN % (step, iteration, rank, grad_norm, loss, when)
        line = _step_line(self.event())
        return line if line is not None else to_json_line(self.event())


def as_event(entry: Event | StepRecord) -> Event:
    """An entry of the log as an event (a StepRecord made into its dict)."""
    return entry.event() if type(entry) is StepRecord else entry  # type: ignore[union-attr,return-value]


def _json_safe(value: Any) -> Any:
    """Floats JSON cannot hold (nan, inf) become strings, so every line is valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# The event of every completed step (see `step_event`); its line is written from a template,
# its seven values filled in (see `_step_line`).
_STEP_EVENT: Event = dict.fromkeys((*BASE_KEYS, "grad_norm", "loss", "scale", "time"))
_STEP_EVENT["event"] = STEP
_STEP_KEYS = frozenset(_STEP_EVENT)
_STEP_VALUES = operator.itemgetter(
    "step", "iteration", "rank", "grad_norm", "loss", "scale", "time"
)
_STEP_NULLS = operator.itemgetter(
    *(k for k in BASE_KEYS if k not in ("event", "step", "iteration", "rank"))
)
_NULLS = (None,) * (len(BASE_KEYS) - 4)
_STEP_LINE = (
    '{"event":"step","step":%s,"iteration":%s,'
    + "".join(f'"{k}":null,' for k in BASE_KEYS[3:14])
    + '"rank":%s,"origin":null,"grad_norm":%s,"loss":%s,"scale":%s,"time":%s}'
)


# (a step whose values are all plain finite numbers and that has no loss scale: most of them)
_STEP_LINE_PLAIN = (
    _STEP_LINE.replace("%s", "%d", 3).replace('"scale":%s', '"scale":null').replace("%s", "%r")
)


def _json_number(value: Any) -> str:
    """An int, float or None as strict JSON writes it (a non-finite float as a string)."""
    kind = type(value)
    if kind is float:
        return repr(value) if value - value == 0.0 else f'"{_json_safe(value)}"'
    if kind is int:
        return repr(value)
    if value is None:
        return "null"
    raise TypeError(kind)


def _step_line(event: Event) -> str | None:
    """The line of a plain step event (one key per value, numbers only), None for any other
    event: json.dumps of the same event, about four times faster."""
    if event.get("event") != STEP or event.keys() != _STEP_KEYS or _STEP_NULLS(event) != _NULLS:
        return None
    try:
        return _STEP_LINE % tuple(map(_json_number, _STEP_VALUES(event)))
    except TypeError:
        return None


def to_json_line(event: Event) -> str:
    """One event as one line of strict JSON (no NaN/Infinity tokens)."""
    line = _step_line(event)
    if line is not None:
        return line
    try:
        return json.dumps(event, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError):  # a non-finite float or a non-JSON value somewhere
        return json.dumps(_json_safe(event), allow_nan=False, separators=(",", ":"))


def describe(event: Event) -> str:
    """A one-line human summary of an error event."""
    where = f"{event.get('phase')} of {event.get('module')!r}"
    if event["event"] == AMP_DIVERGENCE:
        return (
            f"numlint: AMP divergence at step {event.get('step')}: {event.get('reason')} "
            f"(loss scale {event.get('scale')})"
        )
    if event["event"] == NONFINITE_REMOTE:
        return (
            f"numlint: non-finite value on rank {event.get('source_rank')} during "
            f"{event.get('phase')} at step {event.get('step')}; stopping rank {event.get('rank')}"
        )
    kind = {"nan": "NaN", "inf": "Inf"}.get(event.get("kind") or "", "non-finite value")
    module = event.get("module")
    origin = " (origin: inputs finite, output not)" if event.get("origin") else ""
    if module in ("<input>", "<target>"):
        what = "input" if module == "<input>" else "target"
        where = f"the {what} data ({event.get('tensor')}), before the model ran"
        origin = ""
    elif event.get("phase") == "loss" and event.get("gradient_of") == "model output":
        where = "backward of the loss"
        value = event.get("loss_value")
        if event.get("loss_finite") and isinstance(value, (int, float)):
            origin = (
                f" (origin: the loss finite ({value:.4g}), the gradient it sends back to the "
                "model output not)"
            )
        else:
            origin = " (origin: the gradient the loss sends back to the model output)"
    elif event.get("phase") == "loss" and module == "<loss>":
        where = "the loss"
        if event.get("origin"):
            origin = " (origin: the model's outputs finite, the loss not)"
    micro = event.get("micro_batch")
    step = f"step {event.get('step')}" + (f", micro-batch {micro}" if micro else "")
    text = f"numlint: first {kind} at {step}, {where}{origin}"
    if event.get("nan_count") is not None:
        text += (
            f": {event.get('nan_count')} NaN, {event.get('inf_count')} Inf in "
            f"{event.get('tensor') or 'tensor'} {event.get('dtype')}"
            f"{list(event.get('shape') or [])}"
        )
    if event.get("op"):
        node = event.get("autograd_node")
        made = f"{event['op']} in the backward of {node}" if node else event["op"]
        text += f"; made by {made} at {event.get('source') or 'an unknown line'}"
    static = event.get("static") or []
    if static:
        text += "; static findings: " + ", ".join(f"{s['code']} {s['location']}" for s in static)
    return text


class NonFiniteError(FloatingPointError):
    """Raised by the monitor (action="raise") on the first non-finite value or AMP divergence.

    `.event` is the origin event (the same dict written to the JSONL log), `.events` every event
    of the failing check, `.snapshot` the snapshot path (or dict when kept in memory)."""

    def __init__(
        self, event: Event, events: list[Event] | None = None, snapshot: Any = None
    ) -> None:
        super().__init__(describe(event))
        self.event = event
        self.events = events if events is not None else [event]
        self.snapshot = snapshot


class EventLog:
    """Thread-safe event sink: a ring buffer of the last `maxlen` events plus an optional JSONL
    file, one event per line, written at once for error events and at most a second late for
    the others. Lines are encoded when written, a second's worth at a time, so a training step
    only appends its events to a list. The first open() truncates the file; later ones (a
    monitor restarted) append. Events still unwritten at interpreter exit are written then.
    Past `max_bytes` the file is renamed to `<name>.1` (replacing an older one) and a new file
    begins, so a long run keeps at most about twice that on disk."""

    FLUSH_EVERY_S = 1.0

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        maxlen: int = 10_000,
        max_bytes: int | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.max_bytes = max_bytes
        self._bytes = 0
        self.events: deque[Event] = deque(maxlen=maxlen)
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._file: Any = None
        self._unwritten: list[Event] = []
        self._at_exit: weakref.finalize | None = None  # type: ignore[type-arg]
        self._opened_before = False
        self._flushed = 0.0

    def open(self) -> None:
        """Open the file (if any) for writing."""
        with self._lock:
            if self.path is None or self._file is not None:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._open("a" if self._opened_before else "w")

    def _open(self, mode: str) -> None:
        assert self.path is not None
        self._file = open(self.path, mode, encoding="utf-8")  # noqa: SIM115
        self._bytes = self._file.tell()
        self._opened_before = True
        self._flushed = time.monotonic()
        # A monitor never stopped still gets its last events written at exit.
        self._at_exit = weakref.finalize(
            self, _write_lines, self._file, self._unwritten, self._lock, True
        )

    def _write(self) -> None:
        """Write the pending lines (lock held), starting a new file whenever the next line would
        take this one past `max_bytes`."""
        lines = [
            (e.line() if type(e) is StepRecord else to_json_line(e)) + "\n"  # type: ignore[union-attr,arg-type]
            for e in self._unwritten
        ]
        self._unwritten.clear()
        limit = self.max_bytes
        text = "".join(lines)
        if limit is None or self._bytes + len(text) <= limit:  # (no new file needed)
            self._file.write(text)
            self._file.flush()
            self._bytes += len(text)
            self._flushed = time.monotonic()
            return
        chunk: list[str] = []
        size = self._bytes
        for line in lines:
            if limit is not None and size + len(line) > limit and size > 0:
                self._file.write("".join(chunk))
                chunk = []
                self._rotate()
                size = 0
            chunk.append(line)
            size += len(line)
        if chunk:
            self._file.write("".join(chunk))
        self._file.flush()
        self._bytes = size
        self._flushed = time.monotonic()

    def _rotate(self) -> None:
        """The file becomes `<name>.1` (replacing an older one); a new one begins."""
        assert self.path is not None
        if self._at_exit is not None:
            self._at_exit.detach()
        self._file.close()
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        self._open("w")

    def emit(self, event: Event) -> Event:
        """Record one event (ring buffer, counters, file)."""
        self.emit_many([event])
        return event

    def emit_many(self, events: list[Event | StepRecord]) -> None:
        """Record events in order (ring buffer, counters, file), under one lock. A StepRecord
        stays one until the events are read (`event_list`)."""
        with self._lock:
            self.events.extend(events)
            counts = self.counts
            error = False
            for event in events:
                name = STEP if type(event) is StepRecord else event["event"]  # type: ignore[index]
                counts[name] = counts.get(name, 0) + 1
                error = error or name in ERROR_EVENTS
            if self._file is not None:
                self._unwritten += events
                if error or time.monotonic() - self._flushed > self.FLUSH_EVERY_S:
                    self._write()

    def event_list(self) -> list[Event]:
        """The events in the ring buffer, in order, as dicts."""
        with self._lock:
            return [as_event(e) for e in self.events]

    def flush(self) -> None:
        """Write the events not yet in the file."""
        with self._lock:
            if self._file is not None:
                self._write()

    def close(self) -> None:
        """Write what is left and close the file; the ring buffer stays readable."""
        with self._lock:
            if self._at_exit is not None:
                self._at_exit.detach()
                self._at_exit = None
            if self._file is not None:
                self._write()
                self._file.close()
                self._file = None


def _write_lines(file: Any, events: list[Event], lock: Any = None, close: bool = False) -> None:
    """Encode `events` as JSON lines, write and flush them, empty the list; `lock` when the
    caller does not hold it already (the exit hook)."""
    with lock if lock is not None else contextlib.nullcontext():
        if file.closed:
            return
        if events:
            file.write("".join([_line(e) + "\n" for e in events]))
            events.clear()
        if close:
            file.close()
        else:
            file.flush()


def _line(entry: Event | StepRecord) -> str:
    """The JSONL line of a log entry."""
    return entry.line() if type(entry) is StepRecord else to_json_line(entry)  # type: ignore[union-attr,arg-type]
