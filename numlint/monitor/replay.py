"""Replay a snapshot with per-operation checks to name the exact aten op and source line.

Every aten operation of the replayed forward, loss and backward runs under a TorchDispatchMode
that checks its inputs and outputs (one host read per op: slow, and only for replay). The first
op whose output holds a NaN while none of its inputs did, or an Inf while none of its inputs did,
is where the value began. Ops that fill deliberately with a non-finite scalar
(`masked_fill(mask, -inf)`, `full(..., -inf)`) and ops returning uninitialised memory are not
counted. Backward ops are traced to the forward line that created them through autograd's
anomaly-mode tracebacks."""

from __future__ import annotations

import linecache
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from numlint.monitor import snapshot as snap_mod
from numlint.monitor.locate import ForwardState
from numlint.monitor.opcheck import OpChecker
from numlint.monitor.stats import first_nonfinite, flat_tensors, tensor_stats
from numlint.monitor.tieback import enclosing_span, findings_for_file


@dataclass
class ReplayResult:
    """What replay found: the first op that produced a NaN/Inf, where, and from what."""

    found: bool
    phase: str | None = None  # "data", "forward", "loss" or "backward"
    op: str | None = None  # e.g. "aten::log"
    overload: str | None = None  # e.g. "aten.log.default"
    module: str | None = None  # innermost module running the op; "<input>", "<target>" data
    tensor: str | None = None  # for phase "data": where in the batch, e.g. "input[0]"
    source: str | None = None  # "path/to/file.py:42"
    code: str | None = None  # the text of that source line
    autograd_node: str | None = None  # e.g. "LogBackward0" for a backward op
    kind: str | None = None  # "nan" or "inf"
    inputs: list[dict[str, Any]] = field(default_factory=list)
    output: dict[str, Any] | None = None
    static: list[dict[str, Any]] = field(default_factory=list)
    event: dict[str, Any] | None = None  # the event the snapshot was taken for
    loss_run: bool = True  # False: no loss_fn was given, the loss was not computed
    backward: bool = True  # a backward pass was replayed

    def __str__(self) -> str:
        if not self.found and not self.loss_run and (self.event or {}).get("phase") == "loss":
            return (
                "numlint replay: the model's forward"
                + (" and backward (from the recorded output gradient)" if self.backward else "")
                + " ran without a NaN/Inf, but the incident began in the loss and the loss was "
                "not run: no loss_fn was given; pass loss_fn (called as "
                "loss_fn(output, *targets) with the snapshot's targets) to replay it"
            )
        if not self.found:
            text = "numlint replay: the step ran without producing a NaN/Inf (did not reproduce)"
            if not self.loss_run:
                text += "; the loss was not run (no loss_fn was given)"
            return text
        out = self.output or {}
        if self.phase == "data":
            what = "input" if self.module == "<input>" else "target"
            return (
                f"numlint replay: the {what} data already holds {self.kind} before the model runs: "
                f"{self.tensor} {out.get('dtype')}{out.get('shape')}: {out.get('nan_count')} NaN, "
                f"{out.get('inf_count')} Inf (a bad batch, not the model)"
            )
        where = f" in module {self.module!r}" if self.module else ""
        node = f" (backward of {self.autograd_node})" if self.autograd_node else ""
        lines = [
            f"numlint replay: first {self.kind} produced by {self.op}{node} during "
            f"{self.phase}{where}",
            f"  at {self.source}: {self.code or ''}".rstrip(),
            f"  output {out.get('dtype')}{out.get('shape')}: {out.get('nan_count')} NaN, "
            f"{out.get('inf_count')} Inf; inputs finite-value ranges: "
            + ", ".join(f"[{i.get('min')}, {i.get('max')}]" for i in self.inputs),
        ]
        for s in self.static:
            mark = "  <- this line" if s.get("at_line") else ""
            lines.append(f"  static: {s['code']} {s['location']} {s['message']}{mark}")
        return "\n".join(lines)


def _to_device(obj: Any, device: torch.device) -> Any:
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(v, device) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(v, device) for v in obj)
    return obj


def _module_at(model: nn.Module, path: str, line: int) -> str | None:
    """The innermost module whose class's forward() spans path:line."""
    import inspect

    best = None
    target = os.path.abspath(path)
    for name, m in model.named_modules():
        fwd = getattr(type(m), "forward", None)
        try:
            file = inspect.getsourcefile(fwd)  # type: ignore[arg-type]
            lines, start = inspect.getsourcelines(fwd)  # type: ignore[arg-type]
        except (TypeError, OSError):
            continue
        if file and os.path.abspath(file) == target and start <= line < start + len(lines):
            best = name
    return best


def replay(
    snapshot: str | os.PathLike[str] | dict[str, Any],
    model: nn.Module,
    loss_fn: Any = None,
    *,
    backward: bool = True,
    strict: bool = True,
) -> ReplayResult:
    """Re-run the snapshot's step on `model` with per-operation checks.

    Loads the snapshot's model state into `model` (as restoring a checkpoint would), restores the
    RNG state of that step, runs the forward on the saved batch, then `loss_fn` and backward.
    `loss_fn(output)` computes the loss; when the monitor was given `criterion=`, the snapshot
    holds the targets and it is called as `loss_fn(output, *targets)`. Without `loss_fn`,
    backward is seeded with the gradient of the model output recorded at that step, when the
    snapshot has it. `strict` is passed to load_state_dict. The caller's RNG state is restored
    afterwards."""
    snap = snap_mod.load(snapshot)
    model.load_state_dict(snap["model_state"], strict=strict)
    model.train(bool(snap.get("training", True)))
    model.zero_grad(set_to_none=True)
    first = next(iter(model.parameters()), None)
    device = first.device if first is not None else torch.device("cpu")
    args = _to_device(snap.get("args") or (), device)
    kwargs = _to_device(snap.get("kwargs") or {}, device)
    targets = _to_device(snap.get("targets"), device)
    out_grads = _to_device(snap.get("output_grads"), device)
    bad = first_nonfinite(args, "input") or first_nonfinite(kwargs, "input")
    where = "<input>"
    if bad is None and targets is not None:
        bad, where = first_nonfinite(targets, "target"), "<target>"
    if bad is not None:  # the batch holds the NaN/Inf: nothing to re-run
        stats = tensor_stats(bad[1])
        return ReplayResult(
            found=True,
            phase="data",
            module=where,
            tensor=bad[0],
            kind=stats["kind"],
            output=stats,
            event=snap.get("event"),
        )

    stack: list[str] = []

    def enter(name: str) -> Any:
        def pre(mod: nn.Module, a: Any) -> None:
            stack.append(name)

        return pre

    def leave(mod: nn.Module, a: Any, o: Any) -> None:
        if stack:
            stack.pop()

    handles = []
    for name, m in model.named_modules():
        handles.append(m.register_forward_pre_hook(enter(name)))
        handles.append(m.register_forward_hook(leave))
    checker = OpChecker(stack)
    caller_rng = ForwardState.capture()
    state = ForwardState(snap.get("rng_cpu"), snap.get("rng_cuda"), snap.get("autocast") or [])
    if state.cpu is not None:
        state.restore()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autograd.set_detect_anomaly(True, check_nan=False):
                with torch.set_grad_enabled(bool(snap.get("grad_enabled", True)) or backward):
                    loss = None
                    with checker, state.autocast_context():
                        output = model(*args, **kwargs)
                        if checker.found is None and loss_fn is not None:
                            checker.phase = "loss"
                            loss = loss_fn(output, *targets) if targets else loss_fn(output)
                    if backward and checker.found is None:
                        checker.phase = "backward"
                        with checker:
                            if loss is not None and loss.requires_grad:
                                (loss if loss.numel() == 1 else loss.sum()).backward()
                            elif out_grads:
                                pairs = [
                                    (o, g)
                                    for o, g in zip(flat_tensors(output), out_grads, strict=False)
                                    if g is not None and o.requires_grad
                                ]
                                if pairs:
                                    torch.autograd.backward(
                                        [o for o, _ in pairs], [g for _, g in pairs]
                                    )
    finally:
        for h in handles:
            h.remove()
        caller_rng.restore()
    result = _result(checker.found, model, snap.get("event"))
    result.loss_run = loss_fn is not None
    result.backward = backward and bool(loss_fn is not None or out_grads)
    return result


def _result(found: dict[str, Any] | None, model: nn.Module, event: Any) -> ReplayResult:
    if found is None:
        return ReplayResult(found=False, event=event)
    where = found["where"]
    source = code = None
    module = found["module"]
    static: list[dict[str, Any]] = []
    if where is not None:
        path, line = where
        source = f"{path}:{line}"
        code = linecache.getline(path, line).strip() or None
        if module is None or found["phase"] == "backward":
            module = _module_at(model, path, line) or module
        span = enclosing_span(path, line) or (line, line)
        for s in findings_for_file(path):
            if not span[0] <= s.get("row", 0) <= span[1]:
                continue  # another class's or function's findings
            entry = dict(s)
            entry["at_line"] = s.get("row") == line
            static.append(entry)
    if module is None and found["phase"] == "loss":
        module = "<loss>"
    return ReplayResult(
        found=True,
        phase=found["phase"],
        op=found["op"],
        overload=found["overload"],
        module=module,
        source=source,
        code=code,
        autograd_node=found["node"],
        kind=found["kind"],
        inputs=found["inputs"],
        output=found["output"],
        static=static,
        event=event,
    )


__all__ = ["ReplayResult", "replay"]
