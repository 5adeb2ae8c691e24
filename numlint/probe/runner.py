"""Run a hazard and its fix on sample inputs in several dtypes and judge the outcome.

A row of evidence is one (dtype, input) pair: the hazard's forward value and input
gradients are checked with `torch.isfinite`; for silently wrong hazards (`Probe.compare`)
they are compared with the fix evaluated in float64 on the same (rounded) inputs. The fix
runs on the same inputs and must be finite (and, when comparing, correct).
"""

from __future__ import annotations

import contextlib
import math
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch

from numlint.probe.evaluator import MAX_ELEMENTS, MAX_INPUT_ELEMENTS, evaluate
from numlint.probe.whitelist import Expression, NotProbeable, compile_expression

CONFIRMED, NOT_CONFIRMED, NOT_PROBEABLE = "confirmed", "not confirmed", "not probeable"

#: Import aliases a rule's probe expressions may use.
PROBE_IMPORTS = {
    "torch": "torch",
    "F": "torch.nn.functional",
    "nn": "torch.nn",
    "math": "math",
}
DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}
SEED = 0


@dataclass(frozen=True)
class Row:
    """One (dtype, input) measurement. Cells are words (stable across machines)."""

    dtype: str
    inputs: str
    forward: str
    gradient: str
    fix: str
    hazard_fails: bool
    #: None when no fix ran.
    fix_ok: bool | None
    #: Numbers behind the cells ("forward", "gradient", "fix"), for the command line only.
    details: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype,
            "input": self.inputs,
            "forward": self.forward,
            "gradient": self.gradient,
            "fix": self.fix,
            "hazard_fails": self.hazard_fails,
            "fix_ok": self.fix_ok,
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class Evidence:
    """A verdict with the rows that support it."""

    verdict: str
    summary: str
    rows: tuple[Row, ...] = ()
    dtype: str | None = None
    hazard: str = ""
    fix: str = ""

    @property
    def confirmed(self) -> bool:
        return self.verdict == CONFIRMED

    @property
    def fix_cleared(self) -> bool:
        """The fix ran on every row and was finite (and correct) on each."""
        ran = [r.fix_ok for r in self.rows if r.fix_ok is not None]
        return bool(ran) and all(ran)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "evidence": self.summary,
            "dtype": self.dtype,
            "hazard": self.hazard,
            "fix": self.fix,
            "fix_cleared": self.fix_cleared,
            "rows": [r.to_json() for r in self.rows],
        }


@dataclass
class Outcome:
    """One evaluation of one expression: states of its value and input gradients."""

    value: torch.Tensor | None = None
    grads: tuple[torch.Tensor | None, ...] = ()
    error: str = ""
    backward: bool = True

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def forward_state(self) -> str:
        if self.error:
            return "raises"
        return nonfinite(self.value)

    @property
    def gradient_state(self) -> str:
        if self.error:
            return "raises" if self.backward else "—"
        if not self.backward or not any(g is not None for g in self.grads):
            return "—"
        return nonfinite(torch.cat([g.flatten() for g in self.grads if g is not None]))

    @property
    def finite(self) -> bool:
        return self.ok and self.forward_state == "finite" and self.gradient_state in ("finite", "—")


def nonfinite(t: torch.Tensor | None) -> str:
    """Which of -inf, inf, NaN a tensor holds ("finite" when none)."""
    if t is None or t.numel() == 0:
        return "finite"
    kinds = []
    if bool(torch.isneginf(t).any()):
        kinds.append("-inf")
    if bool(torch.isposinf(t).any()):
        kinds.append("inf")
    if bool(torch.isnan(t).any()):
        kinds.append("NaN")
    return ", ".join(kinds) or "finite"


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """Probe tensors are tiny: one intra-op thread avoids thread wake-ups that cost
    milliseconds per op (a softmax over a size-1 dimension takes 20 ms on two busy cores)."""
    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


@contextlib.contextmanager
def seeded() -> Iterator[None]:
    """Deterministic random numbers that leave the caller's generator untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        yield


def _flatten(value: Any) -> torch.Tensor | None:
    """The floating-point tensor content of a result (tuples and named tuples too)."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex():
            return value
        return value.to(torch.float64)
    if isinstance(value, (tuple, list)):
        parts = [p for v in value if (p := _flatten(v)) is not None]
        parts = [p.flatten() for p in parts]
        return torch.cat([p.to(torch.float64) for p in parts]) if parts else None
    if isinstance(value, (int, float)):
        return torch.tensor(float(value), dtype=torch.float64)
    return None


def _scalar_loss(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value.sum() if value.requires_grad else None
    if isinstance(value, (tuple, list)):
        parts = [s for v in value if (s := _scalar_loss(v)) is not None]
        return sum(parts[1:], parts[0]) if parts else None
    return None


def run(
    expression: Expression,
    bindings: Mapping[str, Any],
    backward: bool = True,
    limit: int = MAX_ELEMENTS,
) -> Outcome:
    """Evaluate forward (and `.sum().backward()`); never raises for torch errors."""
    leaves = [v for v in bindings.values() if isinstance(v, torch.Tensor) and v.requires_grad]
    for leaf in leaves:
        leaf.grad = None
    try:
        seed = seeded() if expression.random else contextlib.nullcontext()
        with seed, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = evaluate(expression, bindings, limit)
            flat = _flatten(value)
            if flat is None:
                raise NotProbeable("the expression does not give a tensor or a number")
            grads: tuple[torch.Tensor | None, ...] = ()
            if backward and leaves:
                loss = _scalar_loss(value)
                if loss is not None:
                    loss.backward()
                    grads = tuple(
                        None if leaf.grad is None else leaf.grad.detach().clone() for leaf in leaves
                    )
            return Outcome(flat.detach().clone(), grads, backward=backward)
    except NotProbeable:
        raise
    except Exception as exc:  # torch raises many kinds for bad shapes, dtypes, overflow
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Outcome(error=f"{type(exc).__name__}: {message[:100]}", backward=backward)


def bind(
    raw: Mapping[str, Any],
    dtype: torch.dtype,
    device: str,
    grad: bool,
    reference: bool = False,
    no_grad: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Sample values cast to `dtype` (floating tensors only) as fresh leaves on `device`.

    With reference=True the values are rounded to `dtype` first, then widened to float64.
    Names in `no_grad` (targets, masks) get no gradient.
    """
    out: dict[str, Any] = {}
    for name, v in raw.items():
        if isinstance(v, torch.Tensor):
            t = v.detach()
            if t.is_floating_point():
                t = t.to(dtype)
                if reference:
                    t = t.to(torch.float64)
                t = t.to(device).clone().requires_grad_(grad and name not in no_grad)
            else:
                t = t.to(device).clone()
            out[name] = t
        else:
            out[name] = v
    return out


#: Elements smaller than this fraction of the largest reference element are compared
#: absolutely (against that fraction), not relatively.
FLOOR = 1e-6


def _deviation(a: torch.Tensor | None, ref: torch.Tensor | None) -> float:
    """Largest elementwise relative error of `a` against `ref` (0 when equal; inf when not
    comparable). Elementwise, so one underflowed entry among large ones still counts."""
    if a is None and ref is None:
        return 0.0
    if a is None or ref is None:
        return math.inf
    a64 = a.detach().to("cpu", torch.float64).flatten()
    r64 = ref.detach().to("cpu", torch.float64).flatten()
    if a64.shape != r64.shape or not bool(torch.isfinite(a64).all()):
        return math.inf
    if a64.numel() == 0 or bool((a64 == r64).all()):
        return 0.0
    scale = float(r64.abs().max())
    den = r64.abs() + FLOOR * scale + 1e-300
    return float(((a64 - r64).abs() / den).max())


def _grads(o: Outcome) -> torch.Tensor | None:
    if not o.grads:
        return None
    return torch.cat(
        [g.flatten().to("cpu", torch.float64) for g in o.grads if g is not None]
        or [torch.zeros(0, dtype=torch.float64)]
    )


def tolerance(dtype: str) -> float:
    """How far a result may sit from the float64 reference and still count as correct."""
    return max(1e-2, 10 * torch.finfo(DTYPES[dtype]).eps)


def _fmt(x: float) -> str:
    return f"{x:.2g}"


def _norm(t: torch.Tensor | None) -> float:
    return 0.0 if t is None else float(t.to(torch.float64).norm())


_NUMERIC_ERROR = re.compile(r"overflow|non-finite|\bnan\b|\binf\b", re.IGNORECASE)


def numeric_error(message: str) -> bool:
    """An error about a value (overflow, NaN) rather than about shapes or types."""
    return bool(_NUMERIC_ERROR.search(message))


def judge(
    dtype: str,
    inputs: str,
    hazard: Outcome,
    fix: Outcome | None,
    reference: Outcome | None,
    compare: str,
    runs_in_float32: bool = False,
) -> Row:
    """Turn the outcomes of one (dtype, input) pair into a Row.

    An error counts against the hazard only when it is about a value (an overflow) or the
    dtype's doing (the hazard runs on the same inputs in float32); a shape or type error
    means the sample did not fit.
    """
    details: dict[str, str] = {}
    forward, gradient = hazard.forward_state, hazard.gradient_state
    fails = forward not in ("finite",) or gradient not in ("finite", "—")
    if not hazard.ok:
        details["forward"] = hazard.error
        fails = runs_in_float32 or numeric_error(hazard.error)
    tol = tolerance(dtype)
    check_value = compare in ("value", "both")
    check_grad = compare in ("gradient", "both")
    if reference is not None and reference.ok and hazard.ok:
        dv = _deviation(hazard.value, reference.value)
        if check_value and forward == "finite":
            forward = "wrong" if dv > tol else "correct"
            fails = fails or dv > tol
        if hazard.value is not None and reference.value is not None and forward != "raises":
            if hazard.value.numel() == 1 and reference.value.numel() == 1:
                details["forward"] = (
                    f"value {_fmt(float(hazard.value))} vs {_fmt(float(reference.value))} "
                    "(the fix in float64)"
                )
            elif math.isfinite(dv):
                details["forward"] = f"value off by {_fmt(dv)} (relative, vs the fix in float64)"
        hg, rg = _grads(hazard), _grads(reference)
        if rg is not None and hg is not None:
            dg = _deviation(hg, rg)
            if check_grad and gradient == "finite":
                gradient = "wrong" if dg > tol else "correct"
                fails = fails or dg > tol
            rn = _norm(rg)
            if rn > 0 and math.isfinite(_norm(hg)):
                details["gradient"] = (
                    f"gradient norm {_fmt(_norm(hg))} vs {_fmt(rn)} (ratio {_fmt(_norm(hg) / rn)})"
                )
    fix_cell, fix_ok = "—", None
    if fix is not None:
        if not fix.ok:
            fix_cell, fix_ok = "raises", False
            details["fix"] = fix.error
        elif not fix.finite:
            bad = fix.forward_state if fix.forward_state != "finite" else fix.gradient_state
            where = "" if fix.forward_state != "finite" else "gradient "
            fix_cell, fix_ok = f"{where}{bad}", False
        else:
            fix_cell, fix_ok = "finite", True
            if reference is not None and reference.ok and compare:
                dv = _deviation(fix.value, reference.value) if check_value else 0.0
                dg = _deviation(_grads(fix), _grads(reference)) if check_grad else 0.0
                if max(dv, dg) > tol:
                    fix_cell, fix_ok = "wrong", False
                else:
                    fix_cell = "correct"
                details["fix"] = f"relative error {_fmt(max(dv, dg))} vs float64"
    return Row(dtype, inputs, forward, gradient, fix_cell, fails, fix_ok, details)


def measure(
    hazard: Expression,
    fix: Expression | None,
    raw: Mapping[str, Any],
    dtype: str,
    inputs: str,
    device: str = "cpu",
    backward: bool = True,
    compare: str = "",
    no_grad: frozenset[str] = frozenset(),
    limit: int = MAX_ELEMENTS,
) -> Row:
    """Run hazard, fix (and float64 reference) on one set of raw inputs in one dtype."""

    def inputs_in(dt: torch.dtype, reference: bool = False) -> dict[str, Any]:
        return bind(raw, dt, device, backward, reference, no_grad)

    with contextlib.ExitStack() as stack:
        if device != "cpu":  # tensors the expression creates itself go there too
            stack.enter_context(torch.device(device))
        return _measure(hazard, fix, dtype, inputs, inputs_in, backward, compare, limit)


def _measure(
    hazard: Expression,
    fix: Expression | None,
    dtype: str,
    inputs: str,
    inputs_in: Callable[..., dict[str, Any]],
    backward: bool,
    compare: str,
    limit: int,
) -> Row:
    tdtype = DTYPES[dtype]
    h = run(hazard, inputs_in(tdtype), backward, limit)
    f = run(fix, inputs_in(tdtype), backward, limit) if fix is not None else None
    ref = None
    if fix is not None and compare:
        ref = run(fix, inputs_in(tdtype, reference=True), backward, limit)
    baseline = False
    if not h.ok and dtype != "float32":
        baseline = run(hazard, inputs_in(torch.float32), backward, limit).ok
    return judge(dtype, inputs, h, f, ref, compare, baseline)


_NONFINITE = {"-inf", "inf", "NaN"}


def _cell(name: str, cell: str, detail: str) -> str:
    if set(cell.split(", ")) <= _NONFINITE:
        return f"{name} {cell}"
    if cell == "wrong":
        return detail or f"{'value' if name == 'forward' else name} wrong"
    return f"{cell} ({detail})" if detail else cell


def describe_failure(row: Row) -> str:
    """`gradient NaN`, `forward -inf, gradient NaN`, `value 100 vs 200 (float64 fix)`..."""
    parts = []
    if row.forward not in ("finite", "correct", "—"):
        parts.append(_cell("forward", row.forward, row.details.get("forward", "")))
    if row.gradient not in ("finite", "correct", "—", "raises"):
        parts.append(_cell("gradient", row.gradient, row.details.get("gradient", "")))
    return ", ".join(parts) or "fails"


def summarise(rows: Sequence[Row], dtype_order: Sequence[str] = ()) -> tuple[str, str, str | None]:
    """(verdict, one line of evidence, dtype) for a set of rows."""
    if not rows:
        return NOT_PROBEABLE, "nothing could be evaluated", None
    order = {d: i for i, d in enumerate(dtype_order)}
    ranked = sorted(range(len(rows)), key=lambda i: (order.get(rows[i].dtype, len(order)), i))
    failing = [rows[i] for i in ranked if rows[i].hazard_fails]
    if not failing:
        dtypes = sorted({r.dtype for r in rows}, key=lambda d: order.get(d, len(order)))
        labels = list(dict.fromkeys(r.inputs for r in rows))
        shown = "; ".join(labels[:3]) + (f"; and {len(labels) - 3} more" if len(labels) > 3 else "")
        return (
            NOT_CONFIRMED,
            f"no failure in {', '.join(dtypes)} on {len(labels)} sample "
            f"input{'s' if len(labels) != 1 else ''} ({shown})",
            None,
        )
    best = next((r for r in failing if r.fix_ok), failing[0])
    fix = {None: "no fix to run", True: f"fix {best.fix}"}.get(best.fix_ok, f"fix {best.fix} too")
    broken = next((r for r in rows if r.fix_ok is False and r.dtype != best.dtype), None)
    if best.fix_ok and broken is not None:
        fix += f" ({broken.fix} in {broken.dtype})"
    prefix = f"{best.dtype}: " if best.dtype != "—" else ""
    line = f"{prefix}{describe_failure(best)} at {best.inputs}; {fix}"
    return CONFIRMED, line, best.dtype if best.dtype != "—" else None


def evidence(
    rows: Sequence[Row], hazard: str = "", fix: str = "", dtype_order: Sequence[str] = ()
) -> Evidence:
    verdict, summary, dtype = summarise(rows, dtype_order)
    return Evidence(verdict, summary, tuple(rows), dtype, hazard, fix)


def not_probeable(reason: str, hazard: str = "", fix: str = "") -> Evidence:
    return Evidence(NOT_PROBEABLE, reason, (), None, hazard, fix)


def compile_probe_expression(text: str) -> Expression:
    """A rule's own probe expression (hazard, fix or input), checked like any other."""
    return compile_expression(text, PROBE_IMPORTS)


@cache
def build_input(text: str) -> Any:
    """Evaluate a rule's sample-input expression (seeded, on the CPU, float32 by default).

    Cached: callers never modify a sample (`bind` copies it).
    """
    expr = compile_probe_expression(text)
    if expr.free:
        raise NotProbeable(f"input `{text}` uses unknown names {', '.join(expr.free)}")
    with seeded():
        return evaluate(expr, {}, MAX_INPUT_ELEMENTS)
