"""The failure path: re-run the failing forward (and backward) with exact per-module checks.

The fast path only knows *that* a module output (or gradient) was non-finite, from one device flag
per module read once per forward or backward. When that read fails, this module re-runs the same
forward on the same inputs with the same RNG state and the same grad/autocast mode, under detailed
hooks that look at every module's inputs before it runs and its outputs after, and (for backward)
at every gradient flowing into and out of every module and parameter. That gives exact origins
(a NaN where no input had one, or an Inf where no input had one), counts and statistics at the
cost of one extra forward (+ backward),
paid only when something already went wrong. Buffers (BatchNorm running statistics) and the RNG
are restored afterwards, so training numerics are untouched when the monitor only records."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from numlint.monitor.findings import Finding
from numlint.monitor.stats import (
    first_nonfinite,
    flat_tensors,
    is_checked,
    iter_tensors,
    tensor_stats,
)


def autocast_now() -> list[tuple[str, torch.dtype]]:
    try:
        return [
            (dev, torch.get_autocast_dtype(dev))
            for dev in ("cuda", "cpu")
            if torch.is_autocast_enabled(dev)
        ]
    except TypeError:  # torch before 2.4: no per-device query
        return []


# Whether any autocast mode is on: one call, so the per-device query runs only when one is.
any_autocast: Callable[[], bool] = getattr(torch._C, "_is_any_autocast_enabled", lambda: True)


@dataclass
class ForwardState:
    """What a forward depends on besides its inputs and weights, captured before it runs: the
    CPU and CUDA generator states and the autocast modes in force."""

    cpu: Tensor | None  # (None: not kept, see `draws_random`)
    cuda: list[Tensor] | None = None
    autocast: list[tuple[str, torch.dtype]] = field(default_factory=list)

    @classmethod
    def capture(cls) -> ForwardState:
        """The state now (about 2 us: one copy of the CPU generator state)."""
        cuda = None
        if torch.cuda.is_initialized():  # cheap test first: no CUDA state to save otherwise
            cuda = torch.cuda.get_rng_state_all()
        autocast = autocast_now() if any_autocast() else []
        return cls(torch.default_generator.get_state(), cuda, autocast)

    def restore(self) -> None:
        """Set the generators back to this state."""
        if self.cpu is not None:
            torch.set_rng_state(self.cpu)
        if self.cuda is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(self.cuda)

    def autocast_context(self) -> contextlib.ExitStack:
        """Re-enter the autocast modes that were in force."""
        stack = contextlib.ExitStack()
        for dev, dtype in self.autocast:
            stack.enter_context(torch.autocast(dev, dtype=dtype))
        return stack


#: Modules that draw random numbers in training (beyond these: a module whose class name says it
#: drops, like timm's DropPath, or that has a dropout probability above 0, like attention).
_RANDOM_MODULES: tuple[type[nn.Module], ...] = (nn.modules.dropout._DropoutNd, nn.RReLU)
_RANDOM_NAMES = ("drop", "stochasticdepth", "noise")
_DROPOUT_ATTRS = ("dropout", "dropout_p", "attention_dropout", "attn_dropout", "drop_prob")


def draws_random(model: nn.Module) -> bool:
    """True when a module of `model` draws random numbers in its forward as far as its type and
    attributes tell (dropout of any kind, RReLU, stochastic depth, attention dropout): the RNG
    state needs keeping to re-run a step the same way. A forward that draws them otherwise
    (torch.randn in a forward of its own) is not seen."""
    for m in model.modules():
        if isinstance(m, _RANDOM_MODULES):
            return True
        name = type(m).__name__.lower()
        if any(word in name for word in _RANDOM_NAMES):
            return True
        for attr in _DROPOUT_ATTRS:
            value = m.__dict__.get(attr)
            if type(value) is float and value > 0:
                return True
    return False


@contextlib.contextmanager
def preserved_state(model: nn.Module, rng: ForwardState | None) -> Iterator[None]:
    """Run with the RNG set to `rng`, then put back the caller's RNG and the model's buffers."""
    saved_rng = ForwardState.capture()
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    if rng is not None:
        rng.restore()
    try:
        yield
    finally:
        with torch.no_grad():
            for b, copy in buffers:
                if b.shape == copy.shape:
                    b.copy_(copy)
        saved_rng.restore()


def _nonfinite_params(module: nn.Module) -> list[str]:
    """Names of the module's own parameters (not its children's) holding NaN/Inf."""
    return [
        n for n, p in module.named_parameters(recurse=False) if not bool(torch.isfinite(p).all())
    ]


def _inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Tensor]]:
    found = list(iter_tensors(args, "input"))
    if kwargs:
        found += list(iter_tensors(kwargs, "input"))
    return [(n, t) for n, t in found if is_checked(t)]


def call_model(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    grad: bool,
    state: ForwardState | None,
) -> Any:
    """Call the model with the grad mode and the autocast modes of the recorded forward."""
    with torch.set_grad_enabled(grad), state.autocast_context() if state else _nothing():
        return model(*args, **kwargs)


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


def locate_forward(
    model: nn.Module,
    names: dict[nn.Module, str],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    rng: ForwardState | None,
    grad_enabled: bool,
    limit: int = 20,
) -> list[Finding]:
    """Re-run one forward; return the modules whose output was non-finite, in completion order,
    the origin (first module whose inputs were finite and whose output was not) marked. An empty
    list means the failure did not reproduce."""
    records: list[Finding] = []
    inputs_seen: dict[int, list[tuple[bool, bool]]] = {}
    handles = []

    def pre(module: nn.Module, a: tuple[Any, ...], kw: dict[str, Any]) -> None:
        ins = [t.detach() for _, t in _inputs(a, kw)]
        has_nan = any(bool(torch.isnan(t).any()) for t in ins)
        has_inf = any(bool(torch.isinf(t).any()) for t in ins)
        inputs_seen.setdefault(id(module), []).append((has_nan, has_inf))

    def post(module: nn.Module, a: tuple[Any, ...], kw: dict[str, Any], out: Any) -> None:
        stack = inputs_seen.get(id(module)) or [(False, False)]
        in_nan, in_inf = stack.pop()
        if len(records) >= limit:
            return
        bad = first_nonfinite(out, "output")
        if bad is None:
            return
        path, t = bad
        stats = tensor_stats(t)
        finding = Finding(names[module], path, stats, False, module)
        finding.extra["inputs_finite"] = not (in_nan or in_inf)
        # A NaN where no input had one, or an Inf where no input had one, began here (an
        # attention module fed a -inf mask that outputs NaN is an origin; one passing the
        # -inf through is not).
        out_nan = any(bool(torch.isnan(x).any()) for _, x in iter_tensors(out) if is_checked(x))
        out_inf = any(bool(torch.isinf(x).any()) for _, x in iter_tensors(out) if is_checked(x))
        finding.extra["candidate"] = (out_nan and not in_nan) or (out_inf and not in_inf)
        bad_params = _nonfinite_params(module)
        if bad_params:
            finding.extra["nonfinite_params"] = bad_params
        records.append(finding)

    input_bad = first_nonfinite(args, "input") or first_nonfinite(kwargs, "input")
    try:
        for module in names:
            handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
            handles.append(module.register_forward_hook(post, with_kwargs=True))
        with preserved_state(model, rng):
            call_model(model, args, kwargs, grad_enabled, rng)
    except Exception:
        pass  # whatever was recorded before the failure is still valid
    finally:
        for h in handles:
            h.remove()
    if input_bad is not None:
        path, t = input_bad
        records.insert(0, Finding("<input>", path, tensor_stats(t), True, None))
    else:
        for r in records:
            if r.extra.get("candidate") and not any(x.origin for x in records):
                r.origin = True
    for r in records:
        r.extra.pop("candidate", None)
    return records


def locate_backward(
    model: nn.Module,
    names: dict[nn.Module, str],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    rng: ForwardState | None,
    out_grads: list[Tensor | None],
    limit: int = 20,
) -> list[Finding]:
    """Re-run forward and backward (seeded with the recorded gradient of the model output, so
    the user's loss function is not needed); return modules and parameters whose gradients were
    non-finite, in the order backward produced them. The origin is the first module whose
    incoming gradient (w.r.t. its output) was finite and whose outgoing gradient (w.r.t. its
    inputs or its own parameters) was not."""
    # (group, kind, path, module, stats or None); hooks on one tensor share a group number
    order: list[tuple[int, str, str, nn.Module | None, dict[str, Any] | None]] = []
    handles = []
    tensor_handles = []
    param_owner = {}
    last: list[Any] = [None, 0]  # the last gradient seen and its group number
    for module, mname in names.items():
        for pname, p in module.named_parameters(recurse=False):
            param_owner[p] = (module, f"{mname}.{pname}" if mname else pname)

    def record(kind: str, path: str, module: nn.Module | None, g: Tensor) -> None:
        if g is not last[0]:
            last[0], last[1] = g, last[1] + 1
        if len(order) < 100_000:
            bad = not bool(torch.isfinite(g.detach()).all())
            order.append((last[1], kind, path, module, tensor_stats(g) if bad else None))

    def watch_grad(kind: str, path: str, module: nn.Module | None, t: Tensor) -> None:
        if t.requires_grad and is_checked(t):
            tensor_handles.append(t.register_hook(lambda g: record(kind, path, module, g)))

    def pre(module: nn.Module, a: tuple[Any, ...], kw: dict[str, Any]) -> None:
        for path, t in _inputs(a, kw):
            watch_grad("in", "grad_" + path, module, t)

    def post(module: nn.Module, a: tuple[Any, ...], kw: dict[str, Any], out: Any) -> None:
        for path, t in iter_tensors(out, "output"):
            watch_grad("out", "grad_" + path, module, t)

    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        owner, pname = param_owner.get(p, (None, "?"))
        tensor_handles.append(p.register_hook(lambda g, o=owner, n=pname: record("param", n, o, g)))
    try:
        for module in names:
            handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
            handles.append(module.register_forward_hook(post, with_kwargs=True))
        with preserved_state(model, rng):
            out = call_model(model, args, kwargs, True, rng)
            outs = flat_tensors(out)
            pairs = [
                (o, g)
                for o, g in zip(outs, out_grads, strict=False)
                if g is not None and o.requires_grad
            ]
            if pairs and params:
                torch.autograd.grad(
                    [o for o, _ in pairs],
                    params,
                    grad_outputs=[g for _, g in pairs],
                    allow_unused=True,
                )
    except Exception:
        pass
    finally:
        for h in handles + tensor_handles:
            h.remove()

    # Hooks on one tensor fire together in registration order (outer modules first); put the
    # gradient-of-output entries first and the inner modules' gradient-of-input entries next.
    groups: dict[int, list[Any]] = {}
    for entry in order:
        groups.setdefault(entry[0], []).append(entry)
    ordered = []
    for entries in groups.values():
        ordered += [e for e in entries if e[1] != "in"]
        ordered += [e for e in entries if e[1] == "in"][::-1]

    out_bad: set[int] = set()
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for _, kind, path, module, stats in ordered:
        if stats is None:
            continue
        if kind == "out" and module is not None:
            out_bad.add(id(module))
        if len(findings) >= limit:
            continue
        name = path if kind == "param" else names.get(module, "?")
        if (name, kind) in seen:
            continue
        seen.add((name, kind))
        f = Finding(name, "grad" if kind == "param" else path, stats, False, module)
        f.extra["gradient_of"] = {"in": "input", "out": "output", "param": "parameter"}[kind]
        # Outgoing gradient non-finite while the incoming one was finite: the NaN began here.
        f.extra["candidate"] = kind in ("in", "param") and id(module) not in out_bad
        findings.append(f)
    for f in findings:
        if f.extra.pop("candidate"):
            f.origin = True
            break
    for f in findings:
        f.extra.pop("candidate", None)
    return findings
