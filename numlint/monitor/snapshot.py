"""Snapshots: everything needed to re-run the failing step (batch, RNG, model and optimizer)."""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from numlint.monitor.locate import ForwardState

FORMAT_VERSION = 1


def _to_cpu(obj: Any) -> Any:
    """A detached CPU copy of every tensor inside `obj` (containers rebuilt, others kept)."""
    if isinstance(obj, Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        items = {k: _to_cpu(v) for k, v in obj.items()}
        return type(obj)(items) if type(obj) in (dict, OrderedDict) else items
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_cpu(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_cpu(v) for v in obj)
    return obj


def build(
    *,
    event: dict[str, Any],
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    scaler: Any,
    args: tuple[Any, ...] | None,
    kwargs: dict[str, Any] | None,
    rng: ForwardState | None,
    grad_enabled: bool,
    output_grads: list[Tensor] | None,
    targets: tuple[Any, ...] | None,
) -> dict[str, Any]:
    """A self-contained snapshot dict (tensors copied to CPU, so training may go on)."""
    snap: dict[str, Any] = {
        "numlint_snapshot": FORMAT_VERSION,
        "torch_version": torch.__version__,
        "event": dict(event),
        "step": event.get("step"),
        "iteration": event.get("iteration"),
        "phase": event.get("phase"),
        "rank": event.get("rank"),
        "training": model.training,
        "grad_enabled": grad_enabled,
        "args": _to_cpu(args) if args is not None else None,
        "kwargs": _to_cpu(kwargs) if kwargs is not None else None,
        "rng_cpu": rng.cpu.clone() if rng is not None and rng.cpu is not None else None,
        "rng_cuda": [s.clone() for s in rng.cuda] if rng is not None and rng.cuda else None,
        "autocast": list(rng.autocast) if rng is not None else [],
        "model_state": _to_cpu(model.state_dict()),
        "optimizer_state": None,
        "scaler_state": None,
        "output_grads": _to_cpu(output_grads) if output_grads else None,
        "targets": _to_cpu(targets) if targets is not None else None,
    }
    if optimizer is not None:
        try:
            snap["optimizer_state"] = _to_cpu(optimizer.state_dict())
        except Exception:
            snap["optimizer_state"] = None
    if scaler is not None:
        try:
            snap["scaler_state"] = scaler.state_dict()
        except Exception:
            snap["scaler_state"] = None
    return snap


def save(snap: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a snapshot with torch.save (atomically: temporary file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(snap, tmp)
    os.replace(tmp, path)
    return path


def load(source: str | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]:
    """A snapshot from a path or an in-memory dict. Snapshots are pickles (they hold the user's
    batch, whatever its type): load only files you wrote yourself."""
    if isinstance(source, dict):
        snap = source
    else:
        snap = torch.load(source, map_location="cpu", weights_only=False)
    if not isinstance(snap, dict) or "numlint_snapshot" not in snap:
        raise ValueError(
            f"not a numlint snapshot: {source if not isinstance(source, dict) else 'dict'}"
        )
    return snap
