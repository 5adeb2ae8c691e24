"""What the training loop computes outside the model: the loss it calls `backward()` on and the
pre-clip gradient norm `clip_grad_norm_` returns.

While at least one monitor is active, `torch.Tensor.backward` and `torch.nn.utils.clip_grad_norm_`
are wrapped; each call hands the tensor (never read here: no host synchronisation) to the active
monitors and then runs the original. Both are restored when the last monitor stops. A
`clip_grad_norm_` imported by name before the monitor started is not seen (the logged norm is
then the post-clip one)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

LossListener = Callable[[Tensor], None]
ClipListener = Callable[[Tensor, float, list[Tensor]], None]

_lock = threading.Lock()
_loss_listeners: list[LossListener] = []
_clip_listeners: list[ClipListener] = []
_saved: dict[str, Any] = {}


def _backward(self: Tensor, *args: Any, **kwargs: Any) -> Any:
    for fn in _loss_listeners:  # (never changed in place: see listen)
        fn(self)
    return _saved["backward"](self, *args, **kwargs)


def _clip_grad_norm_(parameters: Any, max_norm: float, *args: Any, **kwargs: Any) -> Tensor:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = _saved["clip"](params, max_norm, *args, **kwargs)
    for fn in _clip_listeners:
        fn(total, float(max_norm), params)
    return total


def _install() -> None:
    import torch.nn.utils.clip_grad as clip_mod

    if torch.Tensor.backward is not _backward:  # (never wrap a wrapper)
        _saved["backward"] = torch.Tensor.backward
    if torch.nn.utils.clip_grad_norm_ is not _clip_grad_norm_:
        _saved["clip"] = torch.nn.utils.clip_grad_norm_
    if clip_mod.clip_grad_norm_ is not _clip_grad_norm_:
        _saved["clip_mod"] = clip_mod.clip_grad_norm_
    _saved["installed"] = True
    torch.Tensor.backward = _backward  # type: ignore[method-assign]
    torch.nn.utils.clip_grad_norm_ = _clip_grad_norm_
    clip_mod.clip_grad_norm_ = _clip_grad_norm_  # type: ignore[assignment]


def _uninstall() -> None:
    import torch.nn.utils.clip_grad as clip_mod

    # (the originals stay in _saved: a call already inside a wrapper still finds them)
    torch.Tensor.backward = _saved["backward"]  # type: ignore[method-assign]
    torch.nn.utils.clip_grad_norm_ = _saved["clip"]
    clip_mod.clip_grad_norm_ = _saved["clip_mod"]
    _saved["installed"] = False


def listen(kind: str, fn: Callable[..., None]) -> None:
    """Start passing `kind` ("loss": the tensor backward() is called on; "clip": the result
    of clip_grad_norm_, its max_norm and parameters) to `fn`."""
    global _loss_listeners, _clip_listeners
    with _lock:
        if not _loss_listeners and not _clip_listeners:
            _install()
        # (a new list each time: a call going through the old one is not disturbed)
        if kind == "loss":
            _loss_listeners = [*_loss_listeners, fn]
        else:
            _clip_listeners = [*_clip_listeners, fn]


def unlisten(kind: str, fn: Callable[..., None]) -> None:
    """Stop passing it (the originals come back with the last listener)."""
    global _loss_listeners, _clip_listeners
    with _lock:
        if kind == "loss":
            _loss_listeners = [f for f in _loss_listeners if f != fn]
        else:
            _clip_listeners = [f for f in _clip_listeners if f != fn]
        if not _loss_listeners and not _clip_listeners and _saved.get("installed"):
            _uninstall()
