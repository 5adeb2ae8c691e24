"""Per-operation checks: a TorchDispatchMode that finds the first aten op producing a NaN/Inf
from inputs without one, and the user's source line that ran it. Used by replay (the whole step)
and by the monitor's failure path (inside the origin module only).

Ops that fill deliberately with a non-finite scalar (`masked_fill(mask, -inf)`, `full(..., -inf)`)
and ops returning uninitialised memory are not counted. Backward ops are traced to the forward
line that created them through autograd's anomaly-mode tracebacks."""

from __future__ import annotations

import linecache
import math
import os
import re
import sys
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from numlint.monitor.locate import ForwardState, call_model, preserved_state
from numlint.monitor.stats import is_checked, tensor_stats

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_MONITOR_DIR = os.path.dirname(os.path.abspath(__file__))
_UNINITIALISED = {
    "aten::empty",
    "aten::empty_like",
    "aten::empty_strided",
    "aten::new_empty",
    "aten::new_empty_strided",
    "aten::resize_",
    "aten::set_",
}
_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)')


def _user_frame_from_stack() -> tuple[str, int] | None:
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (
            path.startswith(_TORCH_DIR + os.sep)
            or path.startswith(_MONITOR_DIR + os.sep)
            or path.startswith("<")
            or os.path.basename(os.path.dirname(path)) == "contextlib"
            or path.endswith(os.sep + "contextlib.py")
        ):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _user_frame_from_trace(trace: Any) -> tuple[str, int] | None:
    text = "".join(trace) if isinstance(trace, (list, tuple)) else str(trace)
    found = None
    for m in _FRAME_RE.finditer(text):
        path = os.path.abspath(m["file"])
        if path.startswith(_TORCH_DIR + os.sep) or path.startswith(_MONITOR_DIR + os.sep):
            continue
        found = (m["file"], int(m["line"]))  # the innermost user frame wins
    return found


def _has(t: Tensor, what: str) -> bool:
    t = torch.view_as_real(t) if t.is_complex() else t
    return bool((torch.isnan(t) if what == "nan" else torch.isinf(t)).any())


class OpChecker(TorchDispatchMode):
    """Checks each aten op; records the first that creates a NaN or Inf."""

    def __init__(self, module_stack: list[str]) -> None:
        super().__init__()
        self.phase = "forward"
        self.module_stack = module_stack
        self.found: dict[str, Any] | None = None

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.found is not None:
            return func(*args, **kwargs)
        name = func._schema.name
        leaves = tree_leaves((args, kwargs))
        ins = [t for t in leaves if isinstance(t, Tensor) and is_checked(t)]
        deliberate = any(isinstance(v, float) and not math.isfinite(v) for v in leaves)
        in_nan = any(_has(t, "nan") for t in ins)
        in_inf = any(_has(t, "inf") for t in ins)
        in_stats = [tensor_stats(t) for t in ins[:4]] if not (in_nan and in_inf) else []
        out = func(*args, **kwargs)
        if name in _UNINITIALISED or deliberate or (in_nan and in_inf):
            return out
        for t in tree_leaves(out):
            if not isinstance(t, Tensor) or not is_checked(t):
                continue
            new_nan = not in_nan and _has(t, "nan")
            new_inf = not in_inf and _has(t, "inf")
            if new_nan or new_inf:
                self._record(func, name, "nan" if new_nan else "inf", in_stats, t)
                break
        return out

    def _record(self, func: Any, name: str, kind: str, ins: list[Any], t: Tensor) -> None:
        node = torch._C._current_autograd_node() if self.phase == "backward" else None
        where = None
        if node is not None:
            where = _user_frame_from_trace(node.metadata.get("traceback_", ""))
        if where is None and node is None:
            where = _user_frame_from_stack()
        self.found = {
            "phase": self.phase,
            "op": name,
            "overload": str(func),
            "kind": kind,
            "module": self.module_stack[-1] if self.module_stack else None,
            "node": node.name() if node is not None else None,
            "where": where,
            "inputs": ins,
            "output": tensor_stats(t),
        }


def locate_op(
    model: nn.Module,
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    rng: ForwardState | None,
    grad_enabled: bool,
) -> dict[str, Any] | None:
    """Re-run one forward with per-op checks inside `module` only (the origin the per-module
    checks named): the first op there whose output holds a NaN/Inf its inputs did not, as
    {"op", "dtype" (of that op's output: float16 for a float16 overflow later cast to float32),
    "source", "code"}; None if none did."""
    checker = OpChecker([])
    depth = [0]

    def pre(m: nn.Module, a: Any) -> None:
        if depth[0] == 0:
            checker.__enter__()
        depth[0] += 1

    def post(m: nn.Module, a: Any, o: Any) -> None:
        depth[0] -= 1
        if depth[0] == 0:
            checker.__exit__(None, None, None)

    handles = [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    try:
        with preserved_state(model, rng):
            call_model(model, args, kwargs, grad_enabled, rng)
    except Exception:
        pass
    finally:
        for h in handles:
            h.remove()
        if depth[0]:
            checker.__exit__(None, None, None)
    found = checker.found
    if found is None:
        return None
    where = found["where"]
    return {
        "op": found["op"],
        "dtype": found["output"]["dtype"],
        "source": f"{where[0]}:{where[1]}" if where else None,
        "code": linecache.getline(*where).strip() or None if where else None,
    }
