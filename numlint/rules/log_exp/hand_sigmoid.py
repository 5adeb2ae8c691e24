"""NUM107 hand-written-sigmoid."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.ops import const, op, plus_one, same_code
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.log_exp._forms import (
    Found,
    bare,
    negate,
    overflow_confidence,
    unbounded_exp,
    wrap,
)


class HandWrittenSigmoid(Rule):
    """`1 / (1 + exp(-x))` written by hand: NaN gradients for x < -88.7; use `torch.sigmoid`.

    What it does:
    Flags `1 / (1 + torch.exp(-x))`, `1.0 / (torch.exp(-x) + 1)`, `torch.reciprocal(1 + x.neg().exp())`
    style reciprocals, and `torch.exp(x) / (1 + torch.exp(x))`.

    Why is this bad?
    `exp(-x)` overflows to inf for x < -88.7 (float32) / -11.1 (float16): the value rounds
    to 0 but the gradient is inf/inf = NaN. The `exp(x) / (1 + exp(x))` form is NaN already
    in the forward pass for x > 88.7. `torch.sigmoid` is stable everywhere.

    Fix safety:
    Unsafe (results differ in the last bits): `1 / (1 + exp(-x))` becomes `torch.sigmoid(x)`,
    `1 / (1 + exp(x))` becomes `torch.sigmoid(-x)`.

    Known limitations:
    Only the division and `torch.reciprocal` spellings are recognised; exponentials of a
    bounded argument (`exp(-x.abs())`) are not reported.

    Confidence:
    high in float16 code (`exp` overflows from 11.1); low elsewhere (float32 `exp` overflows
    only above 88.7, which even logits rarely reach).

    References:
    - https://pytorch.org/docs/stable/generated/torch.sigmoid.html
    - [numlint hazard catalog, row 2](https://github.com/numlint/numlint/blob/main/docs/hazards.md#2)
    """

    CODE = "NUM107"
    CONFIDENCE = "low"
    NAME = "hand-written-sigmoid"
    MESSAGE = (
        "hand-written sigmoid `1 / (1 + exp(-x))`: exp overflows for large |x|, giving NaN "
        "gradients; use `torch.sigmoid(x)`"
    )
    TRIGGERS = ("exp(",)

    VALID = [
        Valid(
            """
            import torch
            y = torch.sigmoid(x)
            """,
            "the stable API",
        ),
        Valid(
            """
            import math
            y = 1 / (1 + math.exp(-x))
            """,
            "`math.exp` on a Python float",
        ),
        Valid(
            """
            import torch
            y = 1 / (1 + torch.exp(-x.abs()))
            """,
            "a bounded argument",
        ),
        Valid(
            """
            import torch
            y = 1 / (1 + x ** 2)
            """,
            "not an exponential",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            y = 1 / (1 + torch.exp(-x))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.sigmoid(x)
            """,
        ),
        Invalid(
            """
            import torch
            y = 1.0 / (torch.exp(-(a @ w)) + 1.0)
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.sigmoid(a @ w)
            """,
        ),
        Invalid(
            """
            import torch
            def gate(z):
                e = torch.exp(z)
                return e / (1 + e)
            """,
            line=4,
            column=12,
            fixed="""
            import torch
            def gate(z):
                e = torch.exp(z)
                return torch.sigmoid(z)
            """,
        ),
        Invalid(
            """
            import torch
            y = torch.reciprocal(1 + torch.exp(t))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.sigmoid(-t)
            """,
        ),
        Invalid(
            """
            import torch
            def prob(logits):
                return 1 / (1 + torch.exp(-logits))
            """,
            confidence="low",
            line=3,
            column=12,
            fixed="""
            import torch
            def prob(logits):
                return torch.sigmoid(logits)
            """,
            note="float32 logits: overflow needs x > 88.7",
        ),
        Invalid(
            """
            import torch
            def gate(x):
                z = x.to(torch.float16)
                return 1 / (1 + torch.exp(-z))
            """,
            confidence="high",
            line=4,
            column=12,
            fixed="""
            import torch
            def gate(x):
                z = x.to(torch.float16)
                return torch.sigmoid(z)
            """,
            note="float16: exp overflows from 11.1",
        ),
    ]
    PROBE = Probe(
        hazard="1 / (1 + torch.exp(-x))",
        fix="torch.sigmoid(x)",
        inputs={"x": "@exp-overflow [-{}]"},
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Divide):
            return
        ctx = self.ctx
        if const(ctx, node.left) == 1.0:
            self._reciprocal(node, node.right)
            return
        num = unbounded_exp(ctx, node.left)
        arg = plus_one(ctx, node.right)
        if num is None or arg is None or num.op.input is None:
            return
        den = unbounded_exp(ctx, arg)
        if den is None or den.op.input is None:
            return
        if den.op.call is num.op.call or same_code(ctx, den.op.input, num.op.input):
            confidence = overflow_confidence(ctx, num)
            self.report(node, fix=self._fix(node, num, negated=False), confidence=confidence)

    def visit_Call(self, node: cst.Call) -> None:
        o = op(self.ctx, node)
        if o is not None and o.name == "reciprocal" and o.input is not None:
            if o.spelling == "method" and node.args:
                return
            self._reciprocal(node, o.input)

    def _reciprocal(self, node: cst.CSTNode, den: cst.BaseExpression) -> None:
        arg = plus_one(self.ctx, den)
        if arg is None:
            return
        found = unbounded_exp(self.ctx, arg)
        if found is not None:
            confidence = overflow_confidence(self.ctx, found)
            self.report(node, fix=self._fix(node, found, negated=True), confidence=confidence)

    def _fix(self, node: cst.CSTNode, found: Found, negated: bool) -> FixSpec | None:
        ctx = self.ctx
        func = ctx.spell("torch.sigmoid")
        if func is None or not found.movable or found.op.input is None:
            return None
        inner = negate(ctx, found.op.input) if negated else bare(ctx, found.op.input)
        code = wrap(node, f"{func}({inner})")  # type: ignore[arg-type]
        return self.fix("unsafe", "Replace with `torch.sigmoid`", (node, code))
