"""Tensor walking, the cheap on-device finiteness flag, and exact statistics for events."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor

_LOW_PRECISION = (torch.float16, torch.bfloat16)
_MAX_DEPTH = 6


def is_checked(t: Tensor) -> bool:
    """Floating-point and complex tensors can hold NaN/Inf; integer and bool tensors cannot."""
    return t.is_floating_point() or t.is_complex()


def iter_tensors(obj: Any, name: str = "output", depth: int = 0) -> Iterator[tuple[str, Tensor]]:
    """(path, tensor) for every tensor inside tuples, lists, dicts (ModelOutput included),
    dataclasses and objects with `to_tuple()`; paths read like `output[0]`, `output.logits`."""
    if isinstance(obj, Tensor):
        yield name, obj
        return
    if depth >= _MAX_DEPTH or obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from iter_tensors(value, f"{name}.{key}", depth + 1)
    elif isinstance(obj, (list, tuple)):
        fields = getattr(obj, "_fields", None)  # namedtuple
        for i, value in enumerate(obj):
            sub = f"{name}.{fields[i]}" if fields else f"{name}[{i}]"
            yield from iter_tensors(value, sub, depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from iter_tensors(getattr(obj, f.name, None), f"{name}.{f.name}", depth + 1)
    elif callable(getattr(obj, "to_tuple", None)):
        try:
            values = obj.to_tuple()
        except Exception:
            return
        yield from iter_tensors(tuple(values), name, depth + 1)


def flat_tensors(obj: Any) -> list[Tensor]:
    """The checkable tensors inside `obj` (fast path for a plain tensor)."""
    if isinstance(obj, Tensor):
        return [obj] if is_checked(obj) else []
    return [t for _, t in iter_tensors(obj) if is_checked(t)]


def flag(t: Tensor) -> Tensor:
    """A 0-dim device tensor that is non-finite iff `t` holds a NaN or Inf.

    One reduction (a sum) and no host synchronisation. Half and bfloat16 sum in float32 so a large
    finite tensor cannot overflow; a float32 tensor whose finite values sum past 3.4e38 reads as
    non-finite, which the exact re-check on the failure path then sorts out."""
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype in _LOW_PRECISION:
        return t.sum(dtype=torch.float32)
    return t.sum()


def all_finite(flags: list[Tensor]) -> bool:
    """Read flags once: True when every flag is finite. On an accelerator the stacked flags are
    summed and read with one synchronisation (only when that sum is not finite are the flags
    themselves read: finite flags can overflow a sum). CPU flags hold no device work to wait
    for, so each is read directly: cheaper than building the stacked tensor."""
    if not flags:
        return True
    if flags[0].is_cpu:  # (a flag on another device then only costs a wait, not an error)
        for f in flags:
            if not math.isfinite(f.item()):
                return False
        return True
    try:
        stacked = torch.stack(flags)
    except RuntimeError:  # flags on several devices
        stacked = torch.stack([f.to(flags[0].device) for f in flags])
    if math.isfinite(stacked.sum().item()):
        return True
    return all(math.isfinite(v) for v in stacked.tolist())


def read_floats(values: list[Tensor]) -> list[float]:
    """The values of 0-dim tensors as floats: one read of the stacked values on an
    accelerator; on the CPU, where there is nothing to wait for, each value directly (cheaper
    than building the stacked tensor)."""
    if values[0].is_cpu:
        return list(map(Tensor.item, values))
    try:
        stacked = torch.stack(values)
    except RuntimeError:  # values on several devices
        stacked = torch.stack([v.to(values[0].device) for v in values])
    return stacked.float().tolist()


def local(t: Tensor) -> Tensor:
    """This rank's part of a sharded tensor (an FSDP2 DTensor parameter or gradient); any
    other tensor as it is."""
    to_local = getattr(t, "to_local", None)
    return to_local() if callable(to_local) else t


def tensor_stats(t: Tensor) -> dict[str, Any]:
    """Exact statistics for an event: counts of NaN/Inf and min/max/mean/absmax of the finite
    values (None when no value is finite; this rank's shard of a DTensor). Synchronises; used
    only on the failure path."""
    t = local(t).detach()
    out: dict[str, Any] = {
        "dtype": str(t.dtype).replace("torch.", ""),
        "shape": list(t.shape),
        "numel": t.numel(),
    }
    if not is_checked(t):
        out.update(kind=None, nan_count=0, inf_count=0, min=None, max=None, mean=None, absmax=None)
        return out
    if t.is_complex():
        t = torch.view_as_real(t)
    nan = int(torch.isnan(t).sum())
    inf = int(torch.isinf(t).sum())
    finite = t[torch.isfinite(t)].double()
    if finite.numel():
        stats = torch.stack([finite.min(), finite.max(), finite.mean(), finite.abs().max()])
        lo, hi, mean, absmax = (float(v) for v in stats.tolist())
    else:
        lo = hi = mean = absmax = None
    kind = "nan" if nan else ("inf" if inf else None)
    out.update(kind=kind, nan_count=nan, inf_count=inf, min=lo, max=hi, mean=mean, absmax=absmax)
    return out


def first_nonfinite(obj: Any, name: str) -> tuple[str, Tensor] | None:
    """The first (path, tensor) inside `obj` holding a NaN/Inf, else None (synchronises)."""
    for path, t in iter_tensors(obj, name):
        if is_checked(t) and not bool(torch.isfinite(local(t).detach()).all()):
            return path, t
    return None


def structure_finite(obj: Any) -> bool:
    """True when every checkable tensor inside `obj` is finite (synchronises)."""
    return first_nonfinite(obj, "x") is None
