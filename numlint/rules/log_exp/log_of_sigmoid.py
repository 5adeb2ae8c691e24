"""NUM102 log-of-sigmoid."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.context import Value
from numlint.analysis.semantics import (
    Activation,
    activation,
    is_one,
    log_argument,
    needs_parens,
    positional,
    same_bindings,
)
from numlint.analysis.summaries import origin_of, related
from numlint.analysis.zeros import magnitude_bound
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid


class LogOfSigmoid(Rule):
    """Log of a sigmoid (or of one minus it): -inf and infinite gradients; use `F.logsigmoid`.

    What it does:
    Flags `torch.log(torch.sigmoid(z))`, `torch.log(1 - torch.sigmoid(z))`,
    `torch.log1p(-torch.sigmoid(z))` and their method forms (`z.sigmoid().log()`,
    `(1 - p).log()`), also when the sigmoid reaches the log through a variable of the same
    function or is an `nn.Sigmoid` module stored on `self`.

    Why is this bad?
    `sigmoid(z)` rounds to exactly 0 for z below -88.7 (float32 and bfloat16, measured on CPU)
    and -17.4 (float16), and `1 - sigmoid(z)` rounds to 0 already at z >= 16.64 (float32),
    8.32 (float16), 6.23 (bfloat16): the log is -inf and
    the gradient inf or NaN. `F.logsigmoid(z)` = `-softplus(-z)` is finite everywhere, and
    `log(1 - sigmoid(z))` is exactly `logsigmoid(-z)`.

    Fix safety:
    Unsafe: `F.logsigmoid` gives slightly different (more accurate) values. Offered only when
    the sigmoid's input was not reassigned between the sigmoid and the log.

    Known limitations:
    Follows values within one function and `self.` modules of one class. A hand-written
    binary cross-entropy on probabilities is reported by the loss rules.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.logsigmoid.html
    - [numlint hazard catalog, row 2](https://github.com/numlint/numlint/blob/main/docs/hazards.md#2)
    """

    CODE = "NUM102"
    NAME = "log-of-sigmoid"
    MESSAGE = (
        "log of sigmoid: the probability rounds to 0 or 1, giving -inf and infinite gradients; "
        "use `F.logsigmoid(z)` (and `F.logsigmoid(-z)` for `log(1 - sigmoid(z))`)"
    )
    TRIGGERS = ("sigmoid", "Sigmoid", "expit", "log(")

    VALID = [
        Valid(
            """
            import torch.nn.functional as F
            y = F.logsigmoid(z)
            """,
            "the stable API",
        ),
        Valid(
            """
            import math
            y = math.log(1 - p)
            """,
            "`math.log`",
        ),
        Valid(
            """
            import torch
            p = torch.sigmoid(z).clamp(1e-6, 1 - 1e-6)
            y = torch.log(1 - p)
            """,
            "clamped away from 0 and 1",
        ),
        Valid(
            """
            import torch
            y = torch.log(torch.sigmoid(z) + 1e-6)
            """,
            "an eps inside the log",
        ),
        Valid(
            """
            import torch
            y = torch.log(2 - torch.sigmoid(z))
            """,
            "2 - sigmoid never reaches 0",
        ),
        Valid(
            """
            import torch
            y = torch.log(torch.tanh(z) + 2)
            """,
            "not a sigmoid",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def distill(a, b):
                return -torch.log(torch.sigmoid(F.cosine_similarity(a, b, dim=1))).mean()
            """,
            "a cosine keeps the probability inside (0.27, 0.73)",
        ),
        Valid(
            """
            import torch
            def angular_bpr(u, i, j):
                si = torch.acos(torch.clamp((u * i).sum(1), -1 + 1e-7, 1 - 1e-7))
                sj = torch.acos(torch.clamp((u * j).sum(1), -1 + 1e-7, 1 - 1e-7))
                return -torch.log(torch.sigmoid(sj - si)).sum()
            """,
            "a difference of two angles lies in [-pi, pi]: the sigmoid stays far from 0",
        ),
        Valid(
            """
            import torch
            LOGSIGMOID_TABLE = torch.log(torch.sigmoid(torch.arange(-6.01, 6.01, 0.01)))
            """,
            "a table on a grid between constants: the sigmoid stays inside (0.002, 0.998)",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def distill(a, b):
                return -torch.log(torch.sigmoid(20 * F.cosine_similarity(a, b, dim=1))).mean()
            """,
            line=4,
            column=13,
            fixed="""
            import torch
            import torch.nn.functional as F
            def distill(a, b):
                return -F.logsigmoid(20 * F.cosine_similarity(a, b, dim=1)).mean()
            """,
            note="a cosine scaled by 20 saturates the sigmoid",
        ),
        Invalid(
            """
            import torch
            table = torch.log(torch.sigmoid(torch.linspace(-100, 6, 1000)))
            """,
            line=2,
            column=9,
            fixed="""
            import torch
            table = torch.nn.functional.logsigmoid(torch.linspace(-100, 6, 1000))
            """,
            note="a grid reaching -100, where the sigmoid rounds to 0",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            y = torch.log(torch.sigmoid(z))
            """,
            line=3,
            column=5,
            fixed="""
            import torch
            import torch.nn.functional as F
            y = F.logsigmoid(z)
            """,
        ),
        Invalid(
            """
            import torch
            y = torch.log(1 - torch.sigmoid(a + b))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.nn.functional.logsigmoid(-(a + b))
            """,
        ),
        Invalid(
            """
            import torch.nn.functional as F
            y = z.sigmoid().log()
            """,
            line=2,
            column=5,
            fixed="""
            import torch.nn.functional as F
            y = F.logsigmoid(z)
            """,
        ),
        Invalid(
            """
            import torch
            from torch.nn import functional as F
            def bce(z, y):
                h = torch.sigmoid(z)
                return -(y * torch.log(h) + (1 - y) * torch.log(1 - h)).mean()
            """,
            also=((5, 43),),
            line=5,
            column=18,
            fixed="""
            import torch
            from torch.nn import functional as F
            def bce(z, y):
                h = torch.sigmoid(z)
                return -(y * F.logsigmoid(z) + (1 - y) * F.logsigmoid(-z)).mean()
            """,
            note="a hand-written binary cross-entropy: both logs are flagged",
        ),
        Invalid(
            """
            import torch
            y = torch.log1p(-torch.special.expit(z))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.nn.functional.logsigmoid(-z)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Gate(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = nn.Sigmoid()
                def forward(self, x):
                    return (1.0 - self.act(x)).log()
            """,
            line=8,
            column=16,
            fixed="""
            import torch
            import torch.nn as nn
            class Gate(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = nn.Sigmoid()
                def forward(self, x):
                    return nn.functional.logsigmoid(-x)
            """,
        ),
        Invalid(
            """
            import torch
            def angular_bpr(u, i, j):
                si = torch.acos(torch.clamp((u * i).sum(1), -1 + 1e-7, 1 - 1e-7))
                sj = torch.acos(torch.clamp((u * j).sum(1), -1 + 1e-7, 1 - 1e-7))
                return -torch.log(1 - torch.sigmoid(sj - si)).sum()
            """,
            line=5,
            column=13,
            fixed="""
            import torch
            def angular_bpr(u, i, j):
                si = torch.acos(torch.clamp((u * i).sum(1), -1 + 1e-7, 1 - 1e-7))
                sj = torch.acos(torch.clamp((u * j).sum(1), -1 + 1e-7, 1 - 1e-7))
                return -torch.nn.functional.logsigmoid(-(sj - si)).sum()
            """,
            note="`1 - sigmoid(z)` of |z| up to 2 pi: bfloat16 rounds sigmoid to 1 from 6.2",
        ),
    ]
    PROBE = Probe(
        hazard="torch.log(torch.sigmoid(z)) + torch.log(1 - torch.sigmoid(z))",
        fix="torch.nn.functional.logsigmoid(z) + torch.nn.functional.logsigmoid(-z)",
        inputs={"z": ("@sigmoid-one", "@sigmoid-zero")},
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        arg = log_argument(ctx, node)
        negated = False
        if arg is None:
            arg = _log1p_of_negative(ctx, node)
            if arg is None:
                return
            negated = True
        value = ctx.deref(ctx.value(arg))
        if not negated and _is_one_minus(ctx, value.node):
            negated = True
            value = Value(value.node.right, value.env, value.mutations)  # type: ignore[attr-defined]
        elif not negated and value.mutations:
            return
        act = activation(ctx, value, ("sigmoid",))
        if act is None:
            found = None if value.mutations else origin_of(ctx, value.node, ("sigmoid",))
            if found is not None:
                message = (
                    f"log of sigmoid ({found.what}): it underflows to 0 for large negative "
                    "logits, giving -inf; return the logits from there and use `F.logsigmoid`"
                    " (or `F.binary_cross_entropy_with_logits`)"
                )
                self.report(node, message, related=related(found))
            return
        bound = magnitude_bound(ctx, Value(act.input, act.env)) if act.input is not None else None
        if bound is not None and bound <= (_SAFE_LOGIT if negated else _SAFE_NEGATIVE_LOGIT):
            return  # `log(sigmoid(cosine_similarity(a, b)))`: the probability stays in (0, 1)
        self.report(node, fix=self._fix(node, act, negated))

    def _fix(self, node: cst.Call, act: Activation, negated: bool) -> FixSpec | None:
        ctx = self.ctx
        if act.indirect or not same_bindings(ctx, act.call, act.env):
            return None
        func = ctx.spell("torch.nn.functional.logsigmoid")
        if func is None:
            return None
        inner = ctx.code(act.input)
        if negated:
            inner = f"-({inner})" if needs_parens(act.input) else f"-{inner}"
        return self.fix("unsafe", "Replace with `F.logsigmoid`", (node, f"{func}({inner})"))


#: |z| up to which sigmoid(z) rounds to neither 0 nor 1, in float16 too (it reaches 1 near 8).
_SAFE_LOGIT = 6.0
#: |z| up to which sigmoid(z) stays above 0 in float16 (it flushes to 0 below about -16.6):
#: enough for `log(sigmoid(z))`, where rounding to 1 is harmless.
_SAFE_NEGATIVE_LOGIT = 16.0


def _is_one_minus(ctx, node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Subtract)
        and is_one(ctx, node.left)
    )


def _log1p_of_negative(ctx, call: cst.Call) -> cst.BaseExpression | None:
    """`torch.log1p(-p)` / `(-p).log1p()` -> p."""
    callee = ctx.callee(call)
    if callee.qualname in ("torch.log1p", "torch.special.log1p"):
        arg = positional(call, 0, "input")
    elif callee.method == "log1p" and callee.receiver is not None and not call.args:
        arg = callee.receiver
    else:
        return None
    if isinstance(arg, cst.UnaryOperation) and isinstance(arg.operator, cst.Minus):
        return arg.expression
    return None
