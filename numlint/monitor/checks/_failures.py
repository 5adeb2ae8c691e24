"""Failure-path helpers shared by several checks: exact re-checks and the re-run of a backward
pass that names where a non-finite gradient began."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from numlint.monitor.checks._base import LOCAL, OK, Check, Point
from numlint.monitor.findings import Finding, from_flags
from numlint.monitor.grads import norms
from numlint.monitor.locate import locate_backward
from numlint.monitor.stats import (
    all_finite,
    first_nonfinite,
    flat_tensors,
    is_checked,
    local,
    tensor_stats,
)

if TYPE_CHECKING:
    from numlint.monitor.state import MonitorLike

LOSS = "<loss>"


def params_finite(mon: MonitorLike) -> bool:
    """Every parameter finite: one multi-tensor norm, checked exactly when it overflows."""
    if all_finite(norms([local(p).detach() for p in mon.params])):
        return True
    return all(bool(torch.isfinite(local(p)).all()) for p in mon.params)


def grads_finite_exact(mon: MonitorLike) -> bool:
    """Every parameter gradient finite, element by element (for a norm that overflowed)."""
    return all(bool(torch.isfinite(local(p.grad)).all()) for p in mon.params if p.grad is not None)


def locate_backward_findings(mon: MonitorLike) -> list[Finding]:
    """Re-run the last forward and backward with exact checks (empty if it cannot)."""
    grads = mon.output_grads()
    model = mon.rerun_model()
    if mon.args is None or model is None or not any(g is not None for g in grads):
        return []
    return mon.paused_call(
        locate_backward,
        model,
        mon.name_of,
        mon.args,
        mon.kwargs or {},
        mon.rng,
        list(grads),
        mon.max_findings,
        default=[],
    )


def loss_gradient_failure(mon: MonitorLike) -> bool:
    """When the gradient arriving at the model output is already non-finite (the loss did
    it), report that and return True."""
    grads = mon.output_grads()
    g = next((t for t in grads if t is not None and not bool(torch.isfinite(t).all())), None)
    if g is None:
        return False
    f = Finding(LOSS, "grad_output", tensor_stats(g), True, mon.criterion)
    f.extra["gradient_of"] = "model output"
    if mon.loss is not None and mon.loss.numel() == 1:
        value = float(mon.loss.detach().float())
        f.extra["loss_value"] = value if math.isfinite(value) else str(value)
        f.extra["loss_finite"] = math.isfinite(value)
    add_loss_op(mon, f)
    mon.fail("loss", [f])
    return True


def add_loss_op(mon: MonitorLike, f: Finding) -> None:
    """Name the op and line in the loss where the value began (re-running the loss)."""
    if mon.incident_open:
        return
    info = mon.locate_loss()
    if info is None:
        return
    f.extra.update(op=info["op"], source=info["source"], code=info["code"])
    if info.get("node"):
        f.extra["autograd_node"] = info["node"]
    f.extra["op_phase"] = "backward" if info["phase"] == "backward" else "forward"


def backward_failure(mon: MonitorLike, flags: list[Tensor], idx: list[int]) -> None:
    """A non-finite gradient seen in backward: name the module where it began."""
    if loss_gradient_failure(mon):
        return
    findings = locate_backward_findings(mon)
    if not findings and flags:
        findings = from_flags(flags, idx, mon.names, "grad_output", mon.max_findings)
    if not findings:
        findings = mon.param_findings("grad")
    mon.fail("backward", findings or [Finding("?", "grad", {}, True)])


def grad_failure(mon: MonitorLike) -> None:
    """Non-finite parameter gradients before the step. When re-running the last backward
    reproduces them, the module where they began is named (phase "backward"); otherwise
    something between backward and the step made them (phase "grad")."""
    if loss_gradient_failure(mon):  # (a Linear head's output gradient has no flag)
        return
    findings = [f for f in locate_backward_findings(mon) if f.origin or f.stats]
    if any(f.origin for f in findings):
        mon.fail("backward", findings)
    else:
        mon.fail("grad", mon.param_findings("grad"))


def loss_failure(mon: MonitorLike, loss: Tensor | None, inputs: Any = None) -> None:
    """A non-finite loss: it began in the target data when a target (the criterion's, or a
    tensor the loss's autograd graph saved that is data, not computed) holds a NaN/Inf, else
    in the loss computation itself (phase "loss", module "<loss>")."""
    if loss is None:
        return
    data = first_nonfinite(mon.targets, "target") if mon.targets is not None else None
    if data is None:
        data = nonfinite_data_in_graph(loss)
    outputs_ok = all(bool(torch.isfinite(x).all()) for x in flat_tensors(inputs))
    findings = []
    if data is not None:
        findings.append(Finding("<target>", data[0], tensor_stats(data[1]), True))
    f = Finding(LOSS, "loss", tensor_stats(loss), data is None and outputs_ok, mon.criterion)
    f.extra["inputs_finite"] = data is None and outputs_ok
    if data is None:
        add_loss_op(mon, f)
    findings.append(f)
    mon.fail("loss", findings)


def nonfinite_data_in_graph(loss: Tensor, limit: int = 64) -> tuple[str, Tensor] | None:
    """A non-finite tensor saved by the loss's autograd graph that is data (a leaf needing no
    gradient: a target), as ("MseLossBackward0.target", tensor); None if there is none (or
    the graph was freed by backward already)."""
    queue, seen = [loss.grad_fn], set()
    while queue and len(seen) < limit:
        node = queue.pop(0)
        if node is None or node in seen:
            continue
        seen.add(node)
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                t = getattr(node, attr)
            except Exception:
                continue
            if (
                isinstance(t, Tensor)
                and t.dim() > 0  # (a 0-dim one is a constant of the code, `* inf`)
                and t.grad_fn is None
                and not t.requires_grad
                and is_checked(t)
                and not bool(torch.isfinite(t).all())
            ):
                return f"{node.name()}.{attr[len('_saved_') :]}", t
        queue.extend(n for n, _ in node.next_functions)
    return None


class LocalGradientFlags(Check):
    """Base of the checks that flag each rank's own gradients before a collective spreads
    them (`ddp`, `fsdp`): the flags gathered since the last step are read with the step's
    other values, and a non-finite one is this rank's gradient failure."""

    _flags: list[Tensor]
    POINTS = frozenset(("step",))
    FLAGS_ONLY = True

    def values(self, point: Point) -> list[Tensor]:
        if point != "step":
            return []
        flags, self._flags = self._flags, []
        return flags

    def judge(self, values: list[float], point: Point) -> int:
        return OK if all(math.isfinite(v) for v in values) else LOCAL

    def report(self, point: Point) -> None:
        grad_failure(self.mon)
