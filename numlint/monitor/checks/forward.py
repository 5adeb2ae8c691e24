"""Forward outputs: one flag per module output, read at the end of the top-level forward; on
failure the forward is re-run with exact per-module checks, and per-op checks inside the
origin module name the op, its line and its dtype."""

from __future__ import annotations

import math

from torch import Tensor, nn

from numlint.monitor.checks._base import LOCAL, OK, Check, Point
from numlint.monitor.checks._failures import params_finite
from numlint.monitor.findings import Finding, from_flags
from numlint.monitor.locate import locate_forward
from numlint.monitor.stats import first_nonfinite, tensor_stats


class ForwardCheck(Check):
    """A module whose inputs were finite and whose output was not (phase "forward"), or a
    parameter a step left non-finite (phase "param", found at the next forward)."""

    PRIORITY = 10
    FLAGS_ONLY = True
    POINTS = frozenset(("forward", "step"))

    def start(self) -> None:
        self._flags: list[Tensor] = []
        self._idx: list[int] = []

    def reads(self, point: Point) -> bool:
        # (without module hooks a training step's outputs get no flag: nothing to read then)
        return point in self.POINTS and (point != "step" or self.mon.module_hooks)

    def values(self, point: Point) -> list[Tensor]:
        # at "step": the flags of a training forward, read with the step's other values
        self._flags, self._idx = self.mon.rec.take_forward()
        return self._flags

    def judge(self, values: list[float], point: Point) -> int:
        return OK if all(math.isfinite(v) for v in values) else LOCAL

    def claims(self, point: Point) -> bool:
        # (a training step's outputs are not flagged without module hooks: the loss or the
        # gradients show a non-finite output, and it is looked for here)
        mon = self.mon
        if mon.output_flagged or point not in ("step", "backward", "loss"):
            return False
        self._flags, self._idx = [], []
        return mon.output is not None and first_nonfinite(mon.output, "output") is not None

    def report(self, point: Point) -> None:
        mon = self.mon
        if mon.check_params and not params_finite(mon):
            # Parameters went non-finite (the last optimizer step, or they started that way).
            mon.fail("param", mon.param_findings("param"))
            return
        findings: list[Finding] = []
        model = mon.rerun_model()
        if mon.args is not None and model is None:  # no re-run: is it the batch at least?
            bad = first_nonfinite(mon.args, "input") or first_nonfinite(mon.kwargs, "input")
            if bad is not None:
                findings = [Finding("<input>", bad[0], tensor_stats(bad[1]), True)]
        elif mon.args is not None:
            findings = mon.paused_call(
                locate_forward,
                model,
                mon.name_of,
                mon.args,
                mon.kwargs or {},
                mon.rng,
                mon.grad_enabled,
                mon.max_findings,
                default=[],
            )
        findings = [f for f in findings if not mon.ignored(f.module)]
        if not findings and self._flags:
            findings = from_flags(self._flags, self._idx, mon.names, "output", mon.max_findings)
        if not findings and not mon.output_flagged:  # (not reproduced, no flags: the output)
            bad = first_nonfinite(mon.output, "output")
            if bad is not None:
                f = Finding("", bad[0], tensor_stats(bad[1]), False)
                f.extra["reproduced"] = False
                findings = [f]
        if not findings:
            return  # only modules the user asked to ignore held non-finite values
        phase = "forward"
        first = next((f for f in findings if f.origin), findings[0])
        if first.module == "" and first.tensor.endswith(".loss"):
            phase = "loss"  # a model that computes its own loss (Hugging Face style)
        if first.origin and isinstance(first.obj, nn.Module) and not mon.incident_open:
            self._add_op(first)
        mon.fail(phase, findings)

    def _add_op(self, f: Finding) -> None:
        """Name the op inside the origin module that made the NaN/Inf, its source line, and
        its dtype (the event's `dtype`; the module output's is `output_dtype`)."""
        from numlint.monitor.opcheck import locate_op

        mon = self.mon
        model = mon.rerun_model()
        if model is None:
            return
        args = (model, f.obj, mon.args or (), mon.kwargs or {}, mon.rng, mon.grad_enabled)
        info = mon.paused_call(locate_op, *args)
        if info is None:
            return
        f.extra.update(op=info["op"], source=info["source"], code=info["code"])
        if f.stats.get("dtype") is not None:
            f.extra["output_dtype"] = f.stats["dtype"]
            f.stats["dtype"] = info["dtype"]


CHECK = ForwardCheck
