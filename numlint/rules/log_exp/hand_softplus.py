"""NUM104 hand-written-softplus."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.ops import op, plus_one
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.log_exp._forms import Found, bare, overflow_confidence, unbounded_exp


class HandWrittenSoftplus(Rule):
    """`log(1 + exp(x))` written by hand: overflows to inf for x > 88.7; use `F.softplus`.

    What it does:
    Flags `torch.log(1 + torch.exp(x))`, `torch.log(torch.exp(x) + 1)`,
    `torch.log1p(torch.exp(x))`, `x.exp().log1p()`, `x.exp().add(1).log()` and
    `(1 + x.exp()).log()`, also when the exponential comes from a variable of the same
    function.

    Why is this bad?
    `exp(x)` overflows to inf for x > 88.72 in float32 (11.09 in float16), so the result is
    inf and the gradient NaN even though softplus(x) is just about x there; for very negative
    x the `1 + exp(x)` form also loses all precision. `F.softplus(x)` (or
    `torch.logaddexp(0, x)`) is computed stably.

    Fix safety:
    Unsafe: `F.softplus` switches to the identity above its threshold (20), so values change
    in the last bits.

    Known limitations:
    Exponentials of a bounded argument (`exp(-x.abs())`, `exp(x - x.max())`,
    `exp(x.clamp(max=c))`) are the stable formulation and not reported.

    Confidence:
    high in float16 code (`exp` overflows from 11.1); medium in code that trains (a module's
    forward, a loss, or a helper only those call) where a gradient flows into the exponent:
    learned values are unbounded, and above 88.7 the result is inf and its gradient
    inf/inf = NaN; low elsewhere (values of unknown origin).

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.softplus.html
    - [numlint hazard catalog, row 7](https://github.com/numlint/numlint/blob/main/docs/hazards.md#7)
    """

    CODE = "NUM104"
    CONFIDENCE = "low"
    NAME = "hand-written-softplus"
    MESSAGE = (
        "hand-written softplus `log(1 + exp(x))`: exp overflows to inf for x > 88.7 (float32), "
        "giving inf and NaN gradients; use `F.softplus(x)`"
    )
    TRIGGERS = ("exp(",)

    VALID = [
        Valid(
            """
            import torch.nn.functional as F
            y = F.softplus(x)
            """,
            "the stable API",
        ),
        Valid(
            """
            import torch
            y = torch.clamp(x, min=0) + torch.log1p(torch.exp(-torch.abs(x)))
            """,
            "the stable formulation: exp of a non-positive argument",
        ),
        Valid(
            """
            import math
            y = math.log(1 + math.exp(x))
            """,
            "`math`",
        ),
        Valid(
            """
            import torch
            y = torch.log(2 + torch.exp(x))
            """,
            "not 1 + exp",
        ),
        Valid(
            """
            import torch
            y = torch.log(1 + torch.exp(x.clamp(max=20)))
            """,
            "a bounded argument",
        ),
        Valid(
            """
            import torch
            def logaddexp(a, b):
                hi = torch.maximum(a, b)
                return hi + torch.log1p(torch.exp(torch.minimum(a, b) - hi))
            """,
            "max-shifted: the exponent is never positive",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Scale(torch.nn.Module):
                def forward(self, x):
                    return torch.log(1 + torch.exp(self.proj(x)))
            """,
            line=4,
            column=16,
            confidence="medium",
            fixed="""
            import torch
            class Scale(torch.nn.Module):
                def forward(self, x):
                    return torch.nn.functional.softplus(self.proj(x))
            """,
            note="a layer's learned output: nothing keeps it below exp's overflow at 88.7",
        ),
        Invalid(
            """
            import torch
            y = torch.log(1 + torch.exp(x))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.nn.functional.softplus(x)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            y = torch.log1p(torch.exp(-z))
            """,
            line=3,
            column=5,
            fixed="""
            import torch
            import torch.nn.functional as F
            y = F.softplus(-z)
            """,
        ),
        Invalid(
            """
            import torch.nn.functional as F
            y = (a + b).exp().add(1).log()
            """,
            line=2,
            column=5,
            fixed="""
            import torch.nn.functional as F
            y = F.softplus(a + b)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def f(s):
                e = torch.exp(s)
                return (e + 1.0).log()
            """,
            line=5,
            column=12,
            fixed="""
            import torch
            import torch.nn.functional as F
            def f(s):
                e = torch.exp(s)
                return F.softplus(s)
            """,
            note="through a variable",
        ),
        Invalid(
            """
            import torch
            y = x.exp().log1p()
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.nn.functional.softplus(x)
            """,
        ),
        Invalid(
            """
            import torch
            def logistic_loss(logits, y):
                return torch.log(1 + torch.exp(-y * logits)).mean()
            """,
            confidence="medium",
            line=3,
            column=12,
            fixed="""
            import torch
            def logistic_loss(logits, y):
                return torch.nn.functional.softplus(-y * logits).mean()
            """,
            note="a loss on learned logits: a confidently wrong logit below -88.7 overflows",
        ),
        Invalid(
            """
            import torch
            def f(x):
                h = x.half()
                return torch.log1p(torch.exp(h))
            """,
            confidence="high",
            line=4,
            column=12,
            fixed="""
            import torch
            def f(x):
                h = x.half()
                return torch.nn.functional.softplus(h)
            """,
            note="float16: exp overflows from 11.1",
        ),
    ]
    PROBE = Probe(
        hazard="torch.log(1 + torch.exp(x))",
        fix="torch.nn.functional.softplus(x)",
        inputs={"x": "@exp-overflow"},
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        o = op(ctx, node)
        if o is None or o.input is None or o.name not in ("log", "log1p"):
            return
        if o.spelling == "method" and node.args:
            return
        if o.name == "log":
            inner = ctx.deref(ctx.value(o.input))
            if inner.mutations:
                return
            arg = plus_one(ctx, inner.node, inner.env)  # type: ignore[arg-type]
            if arg is None:
                return
            found = unbounded_exp(ctx, arg, inner.env)
            movable_sum = inner.node is o.input
        else:
            found = unbounded_exp(ctx, o.input)
            movable_sum = True
        if found is None:
            return
        self.report(
            node,
            fix=self._fix(node, found, movable_sum),
            confidence=overflow_confidence(ctx, found, learned=True),
        )

    def _fix(self, node: cst.Call, found: Found, movable: bool) -> FixSpec | None:
        ctx = self.ctx
        func = ctx.spell("torch.nn.functional.softplus")
        if func is None or not found.movable or not movable or found.op.input is None:
            return None
        code = f"{func}({bare(ctx, found.op.input)})"
        return self.fix("unsafe", "Replace with `F.softplus`", (node, code))
