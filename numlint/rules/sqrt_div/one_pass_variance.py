"""NUM204 one-pass-variance."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from numlint.analysis.context import Value
from numlint.analysis.guards import assigned_here, assigned_name
from numlint.analysis.ops import Op, clamp_bounds, const, op, same_code
from numlint.analysis.semantics import keyword, positional, same_bindings
from numlint.analysis.zeros import square_of
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.tree import unparenthesized


class OnePassVariance(Rule):
    """`mean(x**2) - mean(x)**2` cancels catastrophically and can go negative; use `torch.var`.

    What it does:
    Flags the one-pass variance `(x * x).mean(d) - x.mean(d) ** 2`, `(x ** 2).mean() -
    x.mean().pow(2)`, `torch.mean(x ** 2) - torch.mean(x) ** 2`, also when the mean comes
    from a variable of the same function (`m = x.mean(); v = (x ** 2).mean() - m ** 2`),
    and the same difference of sums over one count (`torch.sum(x ** 2, 1) / n - (torch.sum(x,
    1) / n) ** 2`, a masked mean and mean of squares over the number of valid entries).

    Why is this bad?
    When the mean is large relative to the spread, both terms are nearly equal and their
    difference loses every significant digit: for x = 3000 + 1e-3 * randn the result is noise
    and goes negative in about 1 row in 16, so a following `sqrt` is NaN. `torch.var` uses a
    stable two-pass algorithm.

    Fix safety:
    Unsafe (the value changes, becoming accurate): the expression becomes
    `torch.var(x, dim=d, keepdim=k, correction=0)` (the population variance, like the
    original). Offered when both means take the same `dim` / `keepdim` and the mean is not
    reached through a reassigned variable.

    Known limitations:
    Means and sums over one count are recognised, not windowed means (a convolution with
    an averaging kernel, as SSIM computes them). The tensor must be written the same way in
    both terms; the sum form is not given a fix.

    Confidence:
    high; low where the difference is clamped at 0 on the spot (`.clamp_min(0)`): no
    negative variance reaches a root, only the lost precision remains; low where every later
    read adds an eps (`torch.sqrt(var + self.eps)`, a normalisation layer): the rounding error
    must exceed the eps, which takes a mean thousands of times the spread.

    References:
    - https://pytorch.org/docs/stable/generated/torch.var.html
    - [numlint hazard catalog, row 25](https://github.com/numlint/numlint/blob/main/docs/hazards.md#25)
    """

    CODE = "NUM204"
    NAME = "one-pass-variance"
    MESSAGE = (
        "one-pass variance `mean(x**2) - mean(x)**2` cancels catastrophically and can be "
        "negative; use `torch.var(x, correction=0)` (or `torch.var_mean`)"
    )
    TRIGGERS = ("mean(", "sum(")
    #: a square: `x ** 2`, `x.pow(2)`, `torch.square(x)`, `x * x`
    ALSO_REQUIRES = ("*", "pow(", "square(")

    VALID = [
        Valid(
            """
            import torch
            v = torch.var(x, dim=-1, correction=0)
            """,
            "the stable API",
        ),
        Valid(
            """
            import torch
            v = ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1)
            """,
            "the two-pass form",
        ),
        Valid(
            """
            import numpy as np
            v = np.mean(x ** 2) - np.mean(x) ** 2
            """,
            "NumPy",
        ),
        Valid(
            """
            import torch
            d = (x ** 2).mean() - y.mean() ** 2
            """,
            "different tensors",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            v = (x * x).mean(-1) - x.mean(-1) ** 2
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            v = torch.var(x, dim=-1, correction=0)
            """,
        ),
        Invalid(
            """
            import torch
            def std(x):
                m = torch.mean(x, dim=0, keepdim=True)
                v = torch.mean(x ** 2, dim=0, keepdim=True) - m.pow(2)
                return torch.sqrt(v)
            """,
            line=4,
            column=9,
            fixed="""
            import torch
            def std(x):
                m = torch.mean(x, dim=0, keepdim=True)
                v = torch.var(x, dim=0, keepdim=True, correction=0)
                return torch.sqrt(v)
            """,
        ),
        Invalid(
            """
            import torch
            v = x.pow(2).mean() - x.mean().pow(2)
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            v = torch.var(x, correction=0)
            """,
        ),
    ]
    INVALID += [
        Invalid(
            """
            import torch
            def masked_std(arr, mask):
                n = mask.sum(dim=1).clamp_min(1)
                masked_sum = torch.sum(arr * mask, dim=1)
                masked_squared_sum = torch.sum((arr * mask) ** 2, dim=1)
                masked_mean = masked_sum / n
                masked_var = masked_squared_sum / n - masked_mean**2
                return torch.sqrt(masked_var)
            """,
            line=7,
            column=18,
        ),
    ]
    VALID += [
        Valid(
            """
            import torch
            def spread(a, n, m):
                return torch.sum(a**2, 1) / n - (torch.sum(a, 1) / m) ** 2
            """,
            "sums over different counts",
        ),
        Valid(
            """
            import torch
            def spread(a, b, n):
                return torch.sum(a**2, 1) / n - (torch.sum(b, 1) / n) ** 2
            """,
            "the squares of one tensor less the square of another's sum",
        ),
    ]
    PROBE = Probe(
        hazard="(x * x).mean(-1) - x.mean(-1) ** 2",
        fix="torch.var(x, dim=-1, correction=0)",
        inputs={"x": "3000 + 1e-3 * torch.randn(64, 256)"},
        dtypes=("float32",),
        backward=False,
        compare="value",
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Subtract):
            return
        ctx = self.ctx
        left = _mean(ctx, Value(node.left, ctx.env))
        if left is None:
            return
        squared = square_of(ctx, ctx.deref(left.input).node, left.input.env)
        if squared is None:
            return
        right = ctx.deref(ctx.value(node.right))
        base = square_of(ctx, right.node, right.env)  # type: ignore[arg-type]
        if base is None:
            return
        mean = _mean(ctx, Value(base, right.env))
        if mean is None or not same_code(
            ctx, unparenthesized(mean.input.node), unparenthesized(squared)
        ):
            return
        if (left.count is None) != (mean.count is None):
            return  # a mean less a sum's square: not one variance
        if left.count is not None and not same_code(ctx, left.count, mean.count):  # type: ignore[arg-type]
            return  # sums over different counts
        confidence = "low" if _clamped_at_zero(ctx) or _read_with_eps(ctx) else None
        fix = None
        if left.op is not None and mean.op is not None:
            fix = self._fix(node, left.op, mean.op, squared)
        self.report(node, fix=fix, confidence=confidence)

    def _fix(
        self, node: cst.BinaryOperation, left: Op, right: Op, x: cst.BaseExpression
    ) -> FixSpec | None:
        ctx = self.ctx
        if not same_bindings(ctx, right.call, right.env):
            return None
        shapes = []
        for o in (left, right):
            if any(
                a.keyword is not None and a.keyword.value not in ("dim", "keepdim")
                for a in o.rest()
            ):
                return None
            offset = 1 if o.spelling == "function" else 0
            dim = positional(o.call, offset, "dim")
            keep = keyword(o.call, "keepdim") or positional(o.call, offset + 1)
            shapes.append(tuple(None if e is None else ctx.code(e) for e in (dim, keep)))
        if shapes[0] != shapes[1]:
            return None
        func = ctx.spell("torch.var")
        if func is None:
            return None
        dim, keep = shapes[0]
        parts = [ctx.code(unparenthesized(x))]
        if dim is not None:
            parts.append(f"dim={dim}")
        if keep is not None:
            parts.append(f"keepdim={keep}")
        parts.append("correction=0")
        code = f"{func}({', '.join(parts)})"
        return self.fix("unsafe", "Replace with `torch.var`", (node, code))


def _clamped_at_zero(ctx) -> bool:
    """The difference is clamped at 0 where it is computed (`(...).clamp_min(0)`,
    `torch.clamp(..., min=0)`, `F.relu(...)`): no negative variance reaches a sqrt, only
    the lost digits remain."""
    for parent in ctx.ancestors():
        if isinstance(parent, cst.Call):
            o = op(ctx, parent)
            if o is None:
                return False
            if o.name == "relu":
                return True
            if o.name in ("clamp", "clamp_min"):
                low = clamp_bounds(o)[0]
                return low is not None and const(ctx, low) == 0.0
            return False
        if isinstance(parent, (cst.Attribute, cst.Arg)):
            continue
        return False
    return False


def _read_with_eps(ctx) -> bool:
    """The variance is assigned to a name that the rest of the block reads only with an eps
    added (`var = ...`, `torch.sqrt(var + self.eps)`): a rounding error must exceed the eps to
    go negative, which takes a mean thousands of times the spread."""
    here = assigned_here(ctx)
    if here is None:
        return False
    name, after = here
    n = re.escape(name)
    reads = 0
    for stmt in after:
        code = ctx.code(stmt)
        for use in re.finditer(rf"(?<![\w.])({n})\b(?!\s*=[^=])", code):
            tail, head = code[use.end() :], code[: use.start()]
            if not (
                re.match(r"\s*\+\s*[\w.]*eps", tail) or re.search(r"[\w.]*eps\w*\s*\+\s*$", head)
            ):
                return False
            reads += 1
        if assigned_name(stmt) == name:
            break
    return reads > 0


@dataclass(frozen=True)
class _Mean:
    """A mean of `input`: a `mean` op, or a sum divided by a count (`count`)."""

    input: Value
    op: Op | None  # the `mean` call (None for a sum over a count: no fix is offered)
    count: cst.BaseExpression | None = None


def _mean(ctx, value: Value) -> _Mean | None:
    """`x.mean(d)` / `torch.mean(x, d)`, or a sum over a count (`x.sum(d) / n`,
    `torch.sum(x, dim=d) / n`), also through a variable holding either."""
    value = ctx.deref(value)
    node = value.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        summed = ctx.deref(Value(node.left, value.env))
        o = op(ctx, summed.node, summed.env)  # type: ignore[arg-type]
        if o is None or o.name != "sum" or o.input is None:
            return None
        return _Mean(Value(o.input, o.env), None, node.right)
    o = op(ctx, node, value.env)  # type: ignore[arg-type]
    if o is None or o.name != "mean" or o.input is None:
        return None
    return _Mean(Value(o.input, o.env), o)
