"""Scripted probes for hazards that are not one expression (`Probe(scenario="name")`).

Each scenario runs a tiny training step both ways, the hazardous protocol and the fixed
one, and measures what the hazard changes: update size, parameter finiteness, a raised
error, a warning. Cells are words so rule pages stay identical on every machine; the
numbers go in the row details. An unknown name gives "not probeable", never an error.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from functools import cache

import torch

from numlint.probe.runner import Evidence, Row, evidence, nonfinite, not_probeable, seeded

Scenario = Callable[[str], list[Row]]

_GRAD = (30.0, 40.0)  # gradient norm 50
_MAX_NORM = 1.0


def _fmt(x: float) -> str:
    return f"{x:.2g}"


def _param(device: str, dtype: torch.dtype = torch.float32) -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.zeros(len(_GRAD), dtype=dtype, device=device))


def _loss(w: torch.Tensor) -> torch.Tensor:
    return (w * torch.tensor(_GRAD, dtype=w.dtype, device=w.device)).sum()


def _update_row(label: str, got: float, want: float, fixed: float) -> Row:
    """A row comparing an update norm with what clipping asked for."""
    ok = abs(got - want) <= 1e-3 * want
    fix_ok = abs(fixed - want) <= 1e-3 * want
    return Row(
        "float32",
        label,
        "correct" if ok else "wrong",
        "—",
        "correct" if fix_ok else "wrong",
        not ok,
        fix_ok,
        {
            "forward": f"update norm {_fmt(got)}, asked for {_fmt(want)}",
            "fix": f"update norm {_fmt(fixed)}",
        },
    )


def _clipped_step(device: str, order: str) -> float:
    """One SGD step (lr 1) with clipping placed as `order` says; the update's norm."""
    w = _param(device)
    opt = torch.optim.SGD([w], lr=1.0)
    clip = lambda: torch.nn.utils.clip_grad_norm_([w], _MAX_NORM)  # noqa: E731
    if order == "before-backward":
        opt.zero_grad()
        clip()
        _loss(w).backward()
        opt.step()
    elif order == "after-step":
        opt.zero_grad()
        _loss(w).backward()
        opt.step()
        clip()
    elif order == "after-zero-grad":
        _loss(w).backward()
        opt.step()
        opt.zero_grad()
        clip()
    else:  # backward -> clip -> step
        opt.zero_grad()
        _loss(w).backward()
        clip()
        opt.step()
    return float(w.detach().norm())


def clip_order(
    device: str, orders: tuple[str, ...] = ("before-backward", "after-step")
) -> list[Row]:
    """Clipping before backward() or after step() leaves the update unclipped."""
    fixed = _clipped_step(device, "correct")
    return [
        _update_row(f"grad {list(_GRAD)}, max_norm {_MAX_NORM}: clip {o.replace('-', ' ')}",
                    _clipped_step(device, o), _MAX_NORM, fixed)
        for o in orders
    ]  # fmt: skip


def _scaled_step(device: str, unscale: bool, init_scale: float) -> float:
    w = _param(device)
    opt = torch.optim.SGD([w], lr=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = torch.amp.GradScaler(device, init_scale=init_scale)
    scaler.scale(_loss(w)).backward()
    if unscale:
        scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_([w], _MAX_NORM)
    scaler.step(opt)
    scaler.update()
    return float(w.detach().norm())


def clip_without_unscale(device: str) -> list[Row]:
    """clip_grad_norm_ on scaled gradients: the norm is the scaled one, the update tiny."""
    rows = []
    for scale in (65536.0, 1024.0):
        rows.append(
            _update_row(
                f"grad {list(_GRAD)}, max_norm {_MAX_NORM}, init_scale {scale:g}",
                _scaled_step(device, False, scale),
                _MAX_NORM,
                _scaled_step(device, True, scale),
            )
        )
    return rows


def _scaler_loop(device: str, update: bool, steps: int = 3) -> str:
    w = _param(device)
    opt = torch.optim.SGD([w], lr=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = torch.amp.GradScaler(device, init_scale=1024.0)
    try:
        for _ in range(steps):
            opt.zero_grad()
            scaler.scale(_loss(w)).backward()
            scaler.step(opt)
            if update:
                scaler.update()
    except RuntimeError as exc:
        return str(exc).strip().splitlines()[0]
    return ""


def scaler_step_without_update(device: str) -> list[Row]:
    """scaler.step() without scaler.update(): the second iteration raises."""
    error = _scaler_loop(device, update=False)
    fixed = _scaler_loop(device, update=True)
    return [
        Row(
            "float32",
            "3 iterations of scale -> backward -> step",
            "raises" if error else "finite",
            "—",
            "raises" if fixed else "finite",
            bool(error),
            not fixed,
            {"forward": error, "fix": fixed or "3 steps, scale updated"},
        )
    ]


def _adam_step(device: str, dtype: torch.dtype, eps: float | None) -> torch.Tensor:
    p = torch.nn.Parameter(torch.ones(4, dtype=dtype, device=device))
    opt = torch.optim.Adam([p], **({} if eps is None else {"eps": eps}))
    p.grad = torch.tensor([1e-4, 0.0, 1e-3, 1.0], dtype=dtype, device=device)
    opt.step()
    return p.detach()


def adam_eps_half(device: str) -> list[Row]:
    """Adam's default eps=1e-8 is 0 in float16: the first step divides by zero."""
    rows = []
    for name, dtype in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        state = nonfinite(_adam_step(device, dtype, None))
        fixed = nonfinite(_adam_step(device, dtype, 1e-4))
        rows.append(
            Row(
                name,
                "grads [1e-4, 0, 1e-3, 1], one Adam step (eps 1e-8; fix eps 1e-4)",
                state,
                "—",
                fixed,
                state != "finite",
                fixed == "finite",
                {"forward": f"parameters after the step: {state}"},
            )
        )
    return rows


def clip_nonfinite(device: str) -> list[Row]:
    """A non-finite gradient into clip_grad_norm_ silently becomes NaN and zeros."""
    p = torch.nn.Parameter(torch.ones(3, device=device))
    p.grad = torch.tensor([float("inf"), 1.0, 1.0], device=device)
    torch.nn.utils.clip_grad_norm_([p], 1.0)
    after = [float(x) for x in p.grad]
    q = torch.nn.Parameter(torch.ones(3, device=device))
    q.grad = torch.tensor([float("inf"), 1.0, 1.0], device=device)
    try:
        torch.nn.utils.clip_grad_norm_([q], 1.0, error_if_nonfinite=True)
        raised = ""
    except RuntimeError as exc:
        raised = str(exc).strip().splitlines()[0]
    return [
        Row(
            "float32",
            "grad [inf, 1, 1], max_norm 1",
            "—",
            nonfinite(torch.tensor(after)),
            "raises" if raised else "silent",
            "finite" != nonfinite(torch.tensor(after)),
            bool(raised),
            {"gradient": f"clipped gradient {after}", "fix": raised[:80]},
        )
    ]


_DEPRECATED: tuple[tuple[str, Callable[[], object], Callable[[], object]], ...] = (
    (
        "torch.cuda.amp.GradScaler()",
        lambda: torch.cuda.amp.GradScaler(),
        lambda: torch.amp.GradScaler("cuda"),
    ),
    (
        "torch.cuda.amp.autocast()",
        lambda: torch.cuda.amp.autocast(),
        lambda: torch.amp.autocast("cuda"),
    ),
    (
        "torch.cuda.amp.custom_fwd",
        lambda: torch.cuda.amp.custom_fwd(lambda ctx, x: x),
        lambda: torch.amp.custom_fwd(lambda ctx, x: x, device_type="cuda"),
    ),
    (
        "torch.nn.utils.clip_grad_norm",
        lambda: torch.nn.utils.clip_grad_norm([_with_grad()], 1.0),
        lambda: torch.nn.utils.clip_grad_norm_([_with_grad()], 1.0),
    ),
)


def _with_grad() -> torch.nn.Parameter:
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.ones(2)
    return p


def _future_warnings(make: Callable[[], object]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            make()
        except Exception as exc:  # an API removed in a later torch
            return [f"raises {type(exc).__name__}"]
    return [
        str(w.message).splitlines()[0]
        for w in caught
        if issubclass(w.category, (FutureWarning, DeprecationWarning))
    ]


def deprecated_api(device: str, only: str = "") -> list[Row]:
    """Deprecated spellings emit a FutureWarning; their replacements do not."""
    rows = []
    for label, old, new in _DEPRECATED:
        if only and only not in label:
            continue
        got, fixed = _future_warnings(old), _future_warnings(new)
        rows.append(
            Row(
                "—",
                label,
                "FutureWarning" if got else "no warning",
                "—",
                "warns" if fixed else "no warning",
                bool(got),
                not fixed,
                {"forward": got[0][:100] if got else "", "fix": fixed[0][:100] if fixed else ""},
            )
        )
    return rows


def detect_anomaly(device: str) -> list[Row]:
    """Anomaly mode costs time on every step and still lets an infinite gradient through."""
    x = torch.tensor([0.0, 1.0], device=device, requires_grad=True)
    missed = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            try:
                torch.log(x).sum().backward()
            except RuntimeError as exc:
                missed = str(exc).splitlines()[0]
    grad = nonfinite(x.grad) if x.grad is not None else "finite"

    def timed(anomaly: bool) -> float:
        w = torch.randn(8, device=device, requires_grad=True)
        best = float("inf")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autograd.set_detect_anomaly(anomaly):
                for _ in range(3):
                    start = time.perf_counter()
                    for _ in range(2):
                        y = w
                        for _ in range(50):  # many small ops: the per-op cost shows
                            y = (y * 1.01).tanh()
                        y.sum().backward()
                    best = min(best, time.perf_counter() - start)
        return best

    with seeded():
        ratio = timed(True) / max(timed(False), 1e-9)
    # the fix: anomaly mode off, gradients checked with torch.isfinite (as numlint.monitor does)
    y = torch.tensor([0.0, 1.0], device=device, requires_grad=True)
    torch.log(y).sum().backward()
    caught = y.grad is not None and not bool(torch.isfinite(y.grad).all())
    return [
        Row(
            "float32",
            "log([0, 1]).sum().backward() under detect_anomaly",
            "—",
            f"{grad}, not reported" if not missed else "reported",
            "caught by isfinite" if caught else "missed",
            not missed and grad != "finite",
            caught,
            {
                "gradient": f"a 100-op step took {_fmt(ratio)}x as long in anomaly mode",
                "fix": "anomaly mode off, torch.isfinite on the gradients",
            },
        )
    ]


def _unscale_loop(device: str, after_step: bool) -> str:
    w = _param(device)
    opt = torch.optim.SGD([w], lr=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = torch.amp.GradScaler(device, init_scale=1024.0)
    try:
        scaler.scale(_loss(w)).backward()
        if not after_step:
            scaler.unscale_(opt)
        scaler.step(opt)
        if after_step:
            scaler.unscale_(opt)
        scaler.update()
    except RuntimeError as exc:
        return str(exc).strip().splitlines()[0]
    return ""


def unscale_after_step(device: str) -> list[Row]:
    """scaler.unscale_(opt) after scaler.step(opt) raises; before it, it works."""
    error, fixed = _unscale_loop(device, True), _unscale_loop(device, False)
    return [
        Row(
            "float32",
            "scale -> backward -> step -> unscale_",
            "raises" if error else "finite",
            "—",
            "raises" if fixed else "finite",
            bool(error),
            not fixed,
            {"forward": error, "fix": fixed or "unscale_ before step runs"},
        )
    ]


SCENARIOS: dict[str, Scenario] = {
    "clip-without-unscale": clip_without_unscale,
    "clip-order": lambda d: clip_order(d, ("before-backward", "after-step", "after-zero-grad")),
    "clip-before-backward": lambda d: clip_order(d, ("before-backward",)),
    "clip-after-step": lambda d: clip_order(d, ("after-step",)),
    "clip-after-zero-grad": lambda d: clip_order(d, ("after-zero-grad",)),
    "scaler-step-without-update": scaler_step_without_update,
    "adam-eps-half": adam_eps_half,
    "clip-nonfinite": clip_nonfinite,
    "clip-nonfinite-grad": clip_nonfinite,
    "unscale-after-step": unscale_after_step,
    "deprecated-api": deprecated_api,
    "deprecated-cuda-amp": lambda d: deprecated_api(d, "torch.cuda.amp"),
    "deprecated-clip-grad-norm": lambda d: deprecated_api(d, "clip_grad_norm"),
    "detect-anomaly": detect_anomaly,
}


@cache
def run_scenario(name: str, device: str = "cpu") -> Evidence:
    """Evidence from a named scenario; "not probeable" for a name numlint does not know."""
    scenario = SCENARIOS.get(name)
    if scenario is None:
        return not_probeable(f"no scripted probe named {name!r}")
    try:
        with seeded():
            rows = scenario(device)
    except Exception as exc:  # a device or torch version without the API
        return not_probeable(f"scenario {name!r} could not run: {type(exc).__name__}: {exc}")
    return evidence(rows, hazard=f"scenario {name}", dtype_order=("float32", "float16"))
