"""Scripted probes for hazards that are not one expression (`Probe(scenario="name")`).

Each scenario runs a tiny training step both ways, the hazardous protocol and the fixed
one, and measures what the hazard changes: update size, parameter finiteness, a raised
error, a warning. Cells are words so rule pages stay identical on every machine; the
numbers go in the row details. An unknown name gives "not probeable", never an error.
"""

from __future__ import annotations

import dataclasses
import re
import time
import warnings
from collections.abc import Callable
from functools import cache

import torch

from numlint.probe.runner import (
    Evidence,
    Row,
    evidence,
    nonfinite,
    not_probeable,
    seeded,
)

Scenario = Callable[[str], list[Row]]

_GRAD = (30.0, 40.0)  # gradient norm 50
_MAX_NORM = 1.0
_STEPS = 3


class _SGD:
    """Plain SGD: what GradScaler needs of an optimizer (`param_groups`, `step`), without
    torch.optim (whose first step imports torch._dynamo: seconds per `check --probe`)."""

    def __init__(self, params: list[torch.nn.Parameter], lr: float = 1.0) -> None:
        self.param_groups = [{"params": params, "lr": lr}]
        self.state: dict = {}

    def zero_grad(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])


def _fmt(x: float) -> str:
    return f"{x:.2g}"


def _param(device: str, dtype: torch.dtype = torch.float32) -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.zeros(len(_GRAD), dtype=dtype, device=device))


def _loss(w: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    grad = torch.tensor(_GRAD, dtype=w.dtype, device=w.device) * scale
    return (w * grad).sum()


def _scaler(device: str, init_scale: float) -> torch.amp.GradScaler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.amp.GradScaler(device, init_scale=init_scale)


def _norms(xs: list[float]) -> str:
    return ", ".join(_fmt(x) for x in xs)


def _clip_loop(device: str, order: str) -> tuple[list[float], list[float], int]:
    """`_STEPS` SGD steps (lr 1; step k's gradient is k times [30, 40]) with clipping placed as
    `order` says (before backward: ahead of that step's zero_grad): the norms clipping measured, the update norms, and how many of the
    clipped gradients a later step used."""
    w = _param(device)
    opt = _SGD([w])
    seen: list[float] = []
    updates: list[float] = []
    used = 0
    clipped_pending = False

    def clip() -> None:
        nonlocal clipped_pending
        grads = [w] if w.grad is not None else []
        seen.append(float(torch.nn.utils.clip_grad_norm_(grads, _MAX_NORM)))
        clipped_pending = w.grad is not None

    for k in range(1, _STEPS + 1):
        before = w.detach().clone()
        if order == "after-zero-grad":
            _loss(w, k).backward()
            used += clipped_pending
            opt.step()
            opt.zero_grad()
            clip()
        else:
            if order == "before-backward":  # the previous step's gradients, or none yet
                clip()
            opt.zero_grad()  # a clipped gradient left from the last step is dropped here
            clipped_pending = False
            _loss(w, k).backward()
            if order == "correct":
                clip()
            used += clipped_pending
            opt.step()
            if order == "after-step":
                clip()
        updates.append(float((w.detach() - before).norm()))
    return seen, updates, used


_ORDER_WORDS = {
    "before-backward": "clip before backward",
    "after-step": "clip after step",
    "after-zero-grad": "clip after zero_grad",
}


def _order_detail(order: str, seen: list[float], used: int) -> str:
    n = len(seen)
    if order == "after-step":
        return (
            f"the clip ran on {n} of {n} steps (norms {_norms(seen)}), but zero_grad() dropped "
            f"the clipped gradients before a step used them ({used} of {n} used)"
        )
    empty = sum(1 for x in seen if x == 0.0)
    return (
        f"the clip measured norms {_norms(seen)}: {empty} of {n} steps had no gradients "
        "to clip, the rest the previous step's"
        if empty < n
        else f"the clip measured norm 0 on {n} of {n} steps: no gradients to clip yet"
    )


def clip_order(
    device: str, orders: tuple[str, ...] = ("before-backward", "after-step")
) -> list[Row]:
    """Clipping before backward(), after step() or after zero_grad() leaves every update
    unclipped; the tiny loop shows what the clip saw and what the step used."""
    seen_fix, fixed, _ = _clip_loop(device, "correct")
    rows = []
    for order in orders:
        seen, updates, used = _clip_loop(device, order)
        ok = all(abs(u - _MAX_NORM) <= 1e-3 for u in updates)
        fix_ok = all(abs(u - _MAX_NORM) <= 1e-3 for u in fixed)
        rows.append(
            Row(
                "float32",
                f"{_STEPS} steps, grads k*{list(_GRAD)}, max_norm {_MAX_NORM}: "
                + _ORDER_WORDS[order],
                "correct" if ok else "wrong",
                "—",
                "correct" if fix_ok else "wrong",
                not ok,
                fix_ok,
                {
                    "forward": f"update norms {_norms(updates)} where {_fmt(_MAX_NORM)} was "
                    f"asked; {_order_detail(order, seen, used)}",
                    "fix": f"clip after backward: measured {_norms(seen_fix)}, "
                    f"update norms {_norms(fixed)}",
                },
            )
        )
    return rows


#: Scales the gradient [30, 40] to norm 0.5, below max_norm: correct clipping never fires.
_TRUE = 0.01


def _scaled_loop(device: str, unscale: bool, init_scale: float) -> tuple[int, float, float]:
    """`_STEPS` GradScaler steps with clip_grad_norm_(max_norm 1) on a gradient of norm 0.5:
    how often the clip fired, the norm it measured, the mean update norm."""
    w = _param(device)
    opt = _SGD([w])
    scaler = _scaler(device, init_scale)
    fired, measured, total = 0, 0.0, 0.0
    for _ in range(_STEPS):
        before = w.detach().clone()
        opt.zero_grad()
        scaler.scale(_loss(w, _TRUE)).backward()
        if unscale:
            scaler.unscale_(opt)
        measured = float(torch.nn.utils.clip_grad_norm_([w], _MAX_NORM))
        fired += measured > _MAX_NORM
        scaler.step(opt)
        scaler.update()
        total += float((w.detach() - before).norm())
    return fired, measured, total / _STEPS


def clip_without_unscale(device: str) -> list[Row]:
    """clip_grad_norm_ on scaled gradients: it measures the scaled norm, so the threshold is
    `scale` times smaller and the clip fires on every step."""
    rows = []
    due = _TRUE * 50.0
    for scale in (65536.0, 1024.0):
        fired, measured, update = _scaled_loop(device, False, scale)
        fix_fired, fix_measured, fix_update = _scaled_loop(device, True, scale)
        ok = abs(update - due) <= 1e-3 * due
        fix_ok = abs(fix_update - due) <= 1e-3 * due
        rows.append(
            Row(
                "float32",
                f"{_STEPS} steps, grad norm {_fmt(due)}, max_norm {_MAX_NORM}, "
                f"init_scale {scale:g}",
                "correct" if ok else "wrong",
                "—",
                "correct" if fix_ok else "wrong",
                not ok,
                fix_ok,
                {
                    "forward": f"the clip fired on {fired} of {_STEPS} steps: it measured "
                    f"norm {_fmt(measured)} (the scaled gradients), so max_norm {_MAX_NORM:g} "
                    f"acts as {_fmt(_MAX_NORM / scale)} on the true gradients, {scale:g}x "
                    f"smaller; update norm {_fmt(update)} where {_fmt(due)} was due",
                    "fix": f"unscale_ first: fired on {fix_fired} of {_STEPS} steps, measured "
                    f"{_fmt(fix_measured)}, update norm {_fmt(fix_update)}",
                },
            )
        )
    return rows


def _scaler_loop(device: str, update: bool, steps: int = 3) -> str:
    w = _param(device)
    opt = _SGD([w], lr=0.01)
    scaler = _scaler(device, 1024.0)
    try:
        for _ in range(steps):
            opt.zero_grad()
            scaler.scale(_loss(w)).backward()
            scaler.step(opt)  # noqa: NUM503 (without `update` this loop shows the hazard)
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
    """One step of torch's Adam (default eps 1e-8). Its functional form runs the same code as
    `torch.optim.Adam.step` without constructing the optimizer (which imports torch._dynamo:
    seconds); a torch whose functional signature differs gets the class."""
    grad = torch.tensor([1e-4, 0.0, 1e-3, 1.0], dtype=dtype, device=device)
    p = torch.ones(4, dtype=dtype, device=device)
    try:
        from torch.optim.adam import adam

        adam(
            [p], [grad], [torch.zeros_like(p)], [torch.zeros_like(p)], [],
            [torch.tensor(0.0)], foreach=False, capturable=False, differentiable=False,
            fused=None, grad_scale=None, found_inf=None, has_complex=False,
            decoupled_weight_decay=False, amsgrad=False, beta1=0.9, beta2=0.999, lr=1e-3,
            weight_decay=0.0, eps=1e-8 if eps is None else eps, maximize=False,
        )  # fmt: skip
        return p
    except (ImportError, TypeError):
        param = torch.nn.Parameter(torch.ones(4, dtype=dtype, device=device))
        opt = torch.optim.Adam([param], **({} if eps is None else {"eps": eps}))
        param.grad = grad
        opt.step()
        return param.detach()


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
        "torch.cpu.amp.GradScaler()",
        lambda: torch.cpu.amp.GradScaler(),
        lambda: torch.amp.GradScaler("cpu"),
    ),
    (
        "torch.cpu.amp.autocast()",
        lambda: torch.cpu.amp.autocast(),
        lambda: torch.amp.autocast("cpu"),
    ),
    (
        "torch.cuda.amp.custom_fwd",
        lambda: torch.cuda.amp.custom_fwd(lambda ctx, x: x),
        lambda: torch.amp.custom_fwd(lambda ctx, x: x, device_type="cuda"),
    ),
    (
        "torch.cuda.amp.custom_bwd",
        lambda: torch.cuda.amp.custom_bwd(lambda ctx, g: g),
        lambda: torch.amp.custom_bwd(lambda ctx, g: g, device_type="cuda"),
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
                {"forward": got[0][:200] if got else "", "fix": fixed[0][:200] if fixed else ""},
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
    opt = _SGD([w], lr=0.01)
    scaler = _scaler(device, 1024.0)
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
    "deprecated-amp": lambda d: deprecated_api(d, ".amp."),
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


#: Where a clip-order finding's message says the clip is, and the loop that shows it.
_CLIP_PLACES = {
    "before `backward()`": "clip-before-backward",
    "after `optimizer.step()`": "clip-after-step",
    "after `zero_grad()`": "clip-after-zero-grad",
}
_NAMED = re.compile(r"`([\w.]+)")
#: Scenarios that are a training loop in the order a finding names.
_LOOPS = frozenset(
    {
        "clip-without-unscale", "clip-order", "clip-before-backward", "clip-after-step",
        "clip-after-zero-grad", "scaler-step-without-update", "unscale-after-step",
    }
)  # fmt: skip


def for_finding(scenario: str, message: str, flagged: str = "", device: str = "cpu") -> Evidence:
    """Evidence for one training-loop or deprecated-API finding: the loop with the order its
    message names, or the warning torch emits for the API it names."""
    if scenario.startswith("deprecated-"):
        named = [m.group(1) for m in _NAMED.finditer(message)] + [flagged.split("(")[0]]
        for name in named:
            api = _deprecated_label(name)
            if api:
                ev = _deprecated_evidence(api, device)
                return dataclasses.replace(ev, summary=f"torch {ev.summary}")
        return run_scenario(scenario, device)
    if scenario.startswith("clip-") and scenario in SCENARIOS:
        scenario = next((v for k, v in _CLIP_PLACES.items() if k in message), scenario)
    ev = run_scenario(scenario, device)
    if ev.confirmed or ev.verdict == "not confirmed":
        what = "loop with the flagged order" if scenario in _LOOPS else "check"
        prefix = f"scripted {what} on {device.upper() if device == 'cpu' else device}"
        ev = dataclasses.replace(
            ev, summary=f"{prefix} (the checked code is not run): {ev.summary}"
        )
    return ev


def _deprecated_label(name: str) -> str:
    """The `_DEPRECATED` label of a (possibly short) API name ("" when none matches)."""
    name = name.replace(".autocast_mode", "").replace(".grad_scaler", "")
    labels = [label for label, _, _ in _DEPRECATED]
    exact = [x for x in labels if x.rstrip("()") == name]
    if exact:
        return exact[0]
    tail = [x for x in labels if name and x.rstrip("()").endswith("." + name)]
    return tail[0] if len(tail) == 1 else ""


@cache
def _deprecated_evidence(label: str, device: str) -> Evidence:
    rows = deprecated_api(device, label)
    if not rows:
        return not_probeable(f"no scripted check for {label}")
    row = rows[0]
    if row.hazard_fails:
        summary = f"emits FutureWarning: {row.details.get('forward', '').rstrip('.')}"
        summary += (
            "; the replacement does not warn" if row.fix_ok else "; the replacement warns too"
        )
        return Evidence("confirmed", summary, tuple(rows), None, f"scenario deprecated {label}")
    return evidence(rows, hazard=f"scenario deprecated {label}")
