"""Findings (what the failure path found) and the events built from them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from numlint.monitor import events as ev
from numlint.monitor.stats import local, tensor_stats
from numlint.monitor.tieback import findings_for_file, findings_for_module, source_file_of


@dataclass
class Finding:
    """One module (or parameter, or the model input) seen non-finite on the failure path."""

    module: str
    tensor: str
    stats: dict[str, Any]
    origin: bool
    obj: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def from_flags(
    flags: list[Tensor], idx: list[int], names: list[str], tensor: str, limit: int
) -> list[Finding]:
    """Findings from the fast-path flags alone, for a failure that did not reproduce when
    re-run: module names in call order and NaN vs Inf, no statistics."""
    values = torch.stack(flags).tolist()
    out: list[Finding] = []
    seen: set[int] = set()
    for i, v in zip(idx, values, strict=False):
        if math.isfinite(v) or i in seen:
            continue
        seen.add(i)
        f = Finding(names[i], tensor, {"kind": "nan" if math.isnan(v) else "inf"}, not out)
        f.extra["reproduced"] = False
        out.append(f)
        if len(out) >= limit:
            break
    return out


def param_findings(names: list[str], params: list[Tensor], phase: str, limit: int) -> list[Finding]:
    """Parameters whose gradient (phase "grad") or value (phase "param") is non-finite. The
    origin is the first whose value was finite and gradient not ("grad"), or whose gradient was
    finite and updated value not ("param": the optimizer step made it)."""
    out: list[Finding] = []
    for name, p in zip(names, params, strict=True):
        t = p.grad if phase == "grad" else p
        if t is None or bool(torch.isfinite(local(t)).all()):
            continue
        other = p if phase == "grad" else p.grad
        f = Finding(name, phase, tensor_stats(t), False)
        f.extra["candidate"] = other is None or bool(torch.isfinite(local(other)).all())
        out.append(f)
        if len(out) >= limit:
            break
    for f in out:
        if f.extra.pop("candidate") and not any(g.origin for g in out):
            f.origin = True
    return out or [Finding("?", phase, {}, True)]


def to_event(
    f: Finding,
    phase: str,
    *,
    step: int,
    iteration: int,
    rank: int,
    static: bool,
    micro_batch: int = 0,
) -> ev.Event:
    """The JSONL event for one finding; the origin's event lists the static findings of the
    file that defines its module's class."""
    s = f.stats
    event = ev.make_event(
        ev.NONFINITE,
        step=step,
        iteration=iteration,
        phase=phase,
        module=f.module,
        kind=s.get("kind"),
        nan_count=s.get("nan_count"),
        inf_count=s.get("inf_count"),
        dtype=s.get("dtype"),
        shape=s.get("shape"),
        min=s.get("min"),
        max=s.get("max"),
        mean=s.get("mean"),
        absmax=s.get("absmax"),
        rank=rank,
        origin=bool(f.origin),
        tensor=f.tensor,
        micro_batch=micro_batch,
    )
    event.update(f.extra)
    source = str(f.extra.get("source") or "")
    if f.origin and static and f.module == "<loss>" and source:
        path, _, line = source.rpartition(":")
        found = findings_for_file(path) if line.isdigit() else []
        event["source_file"] = path
        event["static"] = [s for s in found if s["row"] == int(line)]
    elif f.origin and static and isinstance(f.obj, nn.Module):
        path = source_file_of(f.obj)
        event["source_file"] = path
        event["static"] = findings_for_module(f.obj) if path else []
    return event
