"""NUM105 hand-written-logsumexp."""

from __future__ import annotations

import re

import libcst as cst

from numlint.analysis.context import Value
from numlint.analysis.ops import const, op, plus_one, same_code
from numlint.analysis.semantics import keyword, positional
from numlint.analysis.zeros import exp_bounded, subtraction
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.log_exp._forms import Found, bare, exp_sums, find, unbounded_exp
from numlint.tree import call_name, descendants


class HandWrittenLogsumexp(Rule):
    """`log(sum(exp(x)))` written by hand: inf for large x, -inf for small; use `torch.logsumexp`.

    What it does:
    Flags `torch.log(torch.sum(torch.exp(x), d))`, `torch.log(torch.exp(x).sum(d))`,
    `x.exp().sum(d).log()`, the same with `mean`, `torch.log(torch.exp(a) + torch.exp(b))`,
    the hand-written InfoNCE / cross-entropy term
    `torch.log(torch.exp(pos) / torch.exp(sim).sum(d))`, and the soft-margin form
    `torch.log(1 + torch.exp(x).sum(d))` (also of a product of such sums, as in a circle
    loss), also when the parts come from variables of the same function.

    Why is this bad?
    `exp(x)` overflows to inf for x >= 88.7 (float32) / 11.1 (float16), and when every x is
    below -104 the sum underflows to 0 and the log is -inf; gradients are NaN in both cases.
    `torch.logsumexp` subtracts the maximum first and is finite for any finite input;
    `torch.logaddexp(a, b)` does the same for two terms.

    Fix safety:
    Unsafe (results differ in the last bits). `torch.log(torch.exp(x).sum(d, keepdim=k))`
    becomes `torch.logsumexp(x, dim=d, keepdim=k)`; two exponentials become
    `torch.logaddexp(a, b)`. No fix for a sum over all elements or a mean.

    Known limitations:
    The stable hand-written form `m + torch.log(torch.exp(x - m).sum(d))` with m a maximum is
    not reported, also when the shifted argument is scaled (`exp((x - m) / t)`) or the maximum
    is written as a clamp (`y.clamp(min=x)`), nor the soft-minimum `m - t * torch.log(torch.exp(
    -(x - m) / t).sum())` with m the minimum of x. Values are followed within one function.

    Confidence:
    high; low when every exponent is bounded above (`exp(-d ** 2)`, `exp(-x.abs())`): exp
    cannot overflow, and the sum reaches 0 only when every term underflows (all exponents
    below -104 in float32), which needs every point far from every other. Also low when the
    function writes the shifted form of the same two values too
    (`mx + torch.log1p(torch.exp(mn - mx))`): the plain sum is a deliberate edge-case path.
    For `log(1 + sum(exp(x)))`: high when the exponent is scaled (`exp(s * x)`, `exp(x / t)`:
    a cosine times 64 overflows); not reported otherwise (an unscaled similarity stays far
    below 88.7, and only an overflow hurts there: the 1 keeps the log finite).
    Medium for a sum along a dimension of exps shifted by the maximum of the whole tensor
    (`x - x.data.max()`, then `sum(..., 1)`): a row far below that maximum underflows to
    log(0) = -inf.

    References:
    - https://pytorch.org/docs/stable/generated/torch.logsumexp.html
    - [numlint hazard catalog, row 8](https://github.com/numlint/numlint/blob/main/docs/hazards.md#8)
    """

    CODE = "NUM105"
    NAME = "hand-written-logsumexp"
    MESSAGE = (
        "hand-written logsumexp `log(sum(exp(x)))`: overflows to inf (x > 88.7) or underflows "
        "to -inf, with NaN gradients; use `torch.logsumexp(x, dim)`"
    )
    TRIGGERS = ("exp(",)

    VALID = [
        Valid(
            """
            import torch
            def log_sum_exp(x):
                x_max = x.max(1, keepdim=True)[0]
                return torch.log(torch.sum(torch.exp(x - x_max), 1, keepdim=True)) + x_max
            """,
            "shifted by each row's own maximum",
        ),
        Valid(
            """
            import torch
            def info_nce(pos, sim, t=0.07):
                return -(pos / t - torch.logsumexp(sim / t, dim=-1)).mean()
            """,
            "the stable InfoNCE",
        ),
        Valid(
            """
            import torch
            y = torch.logsumexp(x, dim=-1)
            """,
            "the stable API",
        ),
        Valid(
            """
            import torch
            def lse(x):
                m = x.max(dim=-1, keepdim=True).values
                return m + torch.log(torch.exp(x - m).sum(-1, keepdim=True))
            """,
            "the stable hand-written form",
        ),
        Valid(
            """
            import numpy as np
            y = np.log(np.sum(np.exp(x)))
            """,
            "NumPy",
        ),
        Valid(
            """
            import torch
            def f(x):
                m = torch.amax(x, dim=1, keepdim=True)
                return torch.log(torch.sum(torch.exp(x - m), dim=1)) + m.squeeze(1)
            """,
            "max-shifted with `torch.amax`",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def lse_pool(x, r):
                x_max = F.adaptive_max_pool2d(x, 1)
                e = torch.exp(r * (x - x_max))
                return x_max + torch.log(e.mean(dim=(2, 3), keepdim=True)) / r
            """,
            "max-shifted, then scaled by a pooling exponent",
        ),
        Valid(
            """
            import torch
            def logaddexp(x, y):
                shift = torch.max(x.detach(), y.detach()).clamp(min=torch.finfo(x.dtype).min)
                return torch.log(torch.exp(x - shift) + torch.exp(y - shift)) + shift
            """,
            "shifted by a clamped maximum",
        ),
        Valid(
            """
            import torch
            def logaddexp(x: float, y):
                shift = y.detach().clamp(min=x)
                return torch.log(torch.exp(x - shift) + torch.exp(y - shift)) + shift
            """,
            "`y.clamp(min=x)` is the maximum of the two",
        ),
        Valid(
            """
            import torch
            def bce_with_logits(x, y):
                m = torch.clamp(-x, 0.0, float("inf"))
                return x - x * y + m + ((-m).exp() + (-x - m).exp()).log()
            """,
            "log(exp(0 - m) + exp(-x - m)) with m = max(-x, 0): both terms max-shifted",
        ),
        Valid(
            """
            import torch
            def log_sum_exp(vec, n):
                _, idx = torch.max(vec, 1)
                top = torch.gather(vec, 1, idx.view(-1, 1, n)).view(-1, 1, n)
                return top.view(-1, n) + torch.log(torch.sum(torch.exp(vec - top.expand_as(vec)), 1))
            """,
            "shifted by the maximum picked at its own argmax (the CRF helper)",
        ),
        Valid(
            """
            import torch
            def smooth_count(d):
                return torch.log(1 + torch.exp(-(d ** 2) / 2).sum(-1))
            """,
            "`log(1 + sum(exp(-d ** 2 / 2)))`: each term at most 1, nothing overflows",
        ),
        Valid(
            """
            import torch
            def soft_margin(d):
                return torch.log(1 + torch.exp(d).sum(-1))
            """,
            "an unscaled exponent (a similarity, a distance): overflow needs a value above 88.7",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def log_sum_exp(x):
                x_max = x.data.max()
                return torch.log(torch.sum(torch.exp(x - x_max), 1, keepdim=True)) + x_max
            """,
            line=4,
            column=12,
            confidence="medium",
            note="shifted by the whole tensor's maximum, summed per row",
        ),
        Invalid(
            """
            import torch
            def log_sum_exp(vec, other, n):
                _, idx = torch.max(other, 1)
                top = torch.gather(vec, 1, idx.view(-1, 1, n))
                return torch.log(torch.sum(torch.exp(vec - top.expand_as(vec)), 1))
            """,
            line=5,
            column=12,
            fixed="""
            import torch
            def log_sum_exp(vec, other, n):
                _, idx = torch.max(other, 1)
                top = torch.gather(vec, 1, idx.view(-1, 1, n))
                return torch.logsumexp(vec - top.expand_as(vec), dim=1)
            """,
            note="gathered at the argmax of another tensor: not this one's maximum",
        ),
        Invalid(
            """
            import torch
            def info_nce(pos, sim, t=0.07):
                return -torch.log(torch.exp(pos / t) / torch.exp(sim / t).sum(dim=-1)).mean()
            """,
            line=3,
            column=13,
            note="a hand-written InfoNCE loss",
        ),
        Invalid(
            """
            import torch
            y = torch.log(torch.sum(torch.exp(x), dim=-1))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.logsumexp(x, dim=-1)
            """,
        ),
        Invalid(
            """
            import torch
            y = scores.exp().sum(1, keepdim=True).log()
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.logsumexp(scores, dim=1, keepdim=True)
            """,
        ),
        Invalid(
            """
            import torch
            def energy(logits):
                e = torch.exp(logits / 0.5)
                return -torch.log(e.sum(-1))
            """,
            line=4,
            column=13,
            fixed="""
            import torch
            def energy(logits):
                e = torch.exp(logits / 0.5)
                return -torch.logsumexp(logits / 0.5, dim=-1)
            """,
        ),
        Invalid(
            """
            import torch
            y = torch.log(torch.exp(a) + torch.exp(b))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.logaddexp(a, b)
            """,
        ),
        Invalid(
            """
            import torch
            y = torch.log(torch.exp(x).mean())
            """,
            line=2,
            column=5,
            note="a mean: no fix",
        ),
        Invalid(
            """
            import torch
            def rbf(d):
                return torch.log(torch.exp(-d ** 2).sum(-1))
            """,
            line=3,
            column=12,
            fixed="""
            import torch
            def rbf(d):
                return torch.logsumexp(-d ** 2, dim=-1)
            """,
            confidence="low",
            note="exp of a non-positive argument cannot overflow but underflows to log(0)",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def dispersive_loss(z):
                d = F.pdist(z).square() / z.shape[1]
                return torch.log(torch.exp(-d).mean())
            """,
            confidence="low",
            line=5,
            column=12,
            note="distances over a size: the exponent is never positive",
        ),
        Invalid(
            """
            import torch
            def logaddexp(a, b, edge):
                mx, mn = torch.maximum(a, b), torch.minimum(a, b)
                odd = torch.log(torch.exp(mn) + torch.exp(mx))
                return torch.where(edge, odd, mx + torch.log1p(torch.exp(mn - mx)))
            """,
            fixed="""
            import torch
            def logaddexp(a, b, edge):
                mx, mn = torch.maximum(a, b), torch.minimum(a, b)
                odd = torch.logaddexp(mn, mx)
                return torch.where(edge, odd, mx + torch.log1p(torch.exp(mn - mx)))
            """,
            confidence="low",
            line=4,
            column=11,
            note="the same function writes the shifted form of the same values: an edge-case path",
        ),
        Invalid(
            """
            import torch
            def uniform_loss(x, t=2):
                return torch.pdist(x, p=2).pow(2).mul(-t).exp().mean().log()
            """,
            confidence="low",
            line=3,
            column=12,
            note="squared distances times minus a scale whose default is positive",
        ),
        Invalid(
            """
            import torch
            def dispersion(z, t):
                d = z @ z.T
                return torch.log(torch.exp(d / t).mean())
            """,
            confidence="high",
            line=4,
            column=12,
            note="a similarity can be large: exp overflows",
        ),
        Invalid(
            """
            import torch
            def lse_pool(x, r):
                e = torch.exp(r * x)
                return torch.log(e.mean(dim=(2, 3), keepdim=True)) / r
            """,
            line=4,
            column=12,
            note="scaled but not max-shifted: no fix for a mean",
        ),
        Invalid(
            """
            import torch
            def circle_loss(sp, sn, scale=256.0, m=0.25):
                loss_p = torch.sum(torch.exp(-scale * (sp - 1 + m)))
                loss_n = torch.sum(torch.exp(scale * (sn - m)))
                return torch.log(1 + loss_p * loss_n)
            """,
            confidence="high",
            line=5,
            column=12,
            note="`log(1 + sum(exp))` of scaled similarities, through variables: a softplus "
            "of a logsumexp",
        ),
    ]
    PROBE = Probe(
        hazard="torch.log(torch.exp(x).sum(-1))",
        fix="torch.logsumexp(x, -1)",
        inputs={"x": ("@exp-overflow [[{0}, {0}]]", "@exp-underflow [[{0}, {0}]]")},
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        o = op(ctx, node)
        if o is None or o.input is None or o.name != "log":
            return
        if o.spelling == "method" and node.args:
            return
        inner = ctx.deref(ctx.value(o.input))
        if inner.mutations:
            return
        expr = inner.node
        rest = plus_one(ctx, expr, inner.env)  # type: ignore[arg-type]
        # `log(1 + sum(exp(x)))`: 1 keeps the log finite, only an overflow hurts
        exps = exp_sums(ctx, rest, inner.env, shifted_only=False) if rest is not None else None
        if exps:
            if any(_scaled(ctx, e) for e in exps):  # unscaled: overflow needs x > 88.7
                self.report(node, _SOFTPLUS_MESSAGE, confidence="high")
            return
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            a = unbounded_exp(ctx, expr.left, inner.env, shifted_only=True)
            b = unbounded_exp(ctx, expr.right, inner.env, shifted_only=True)
            if a is not None and b is not None:
                fix = self._logaddexp(node, a, b, inner.node is o.input)
                grade = "low" if _stable_form_beside(ctx, a, b) else _grade(ctx, a, b)
                self.report(node, fix=fix, confidence=grade)
            return
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
            self._ratio(node, expr, inner.env)
            return
        red = find(ctx, o.input, ("sum", "mean"))
        if red is None or red.op.input is None:
            return
        e = unbounded_exp(ctx, red.op.input, red.op.env, shifted_only=True)
        if e is None:
            if _shifted_by_global_max(ctx, red):
                self.report(node, _GLOBAL_MESSAGE, confidence="medium")
            return
        self.report(node, fix=self._logsumexp(node, red, e), confidence=_grade(ctx, e))

    def _ratio(self, node: cst.Call, expr: cst.BinaryOperation, env) -> None:
        """`log(exp(pos) / exp(sim).sum(d))`: a hand-written InfoNCE / cross-entropy term."""
        ctx = self.ctx
        num = unbounded_exp(ctx, expr.left, env, shifted_only=True)
        red = find(ctx, expr.right, ("sum",), env)
        if num is None or red is None or red.op.input is None:
            return
        den = unbounded_exp(ctx, red.op.input, red.op.env, shifted_only=True)
        if den is None:
            return
        message = (
            "hand-written log-softmax `log(exp(a) / exp(s).sum(d))` (an InfoNCE or "
            "cross-entropy term): exp overflows to inf (> 88.7) and the ratio becomes NaN; "
            "write `a - torch.logsumexp(s, d)`, or `F.cross_entropy(logits, target)`"
        )
        self.report(node, message, confidence=_grade(ctx, num, den))

    def _logsumexp(self, node: cst.Call, red: Found, e: Found) -> FixSpec | None:
        ctx = self.ctx
        r = red.op
        if r.name != "sum" or not (red.movable and e.movable) or e.op.input is None:
            return None
        if any(
            a.keyword is not None and a.keyword.value not in ("dim", "keepdim") for a in r.rest()
        ):
            return None
        offset = 1 if r.spelling == "function" else 0
        dim = positional(r.call, offset, "dim")
        keep = keyword(r.call, "keepdim") or positional(r.call, offset + 1)
        func = ctx.spell("torch.logsumexp")
        if dim is None or func is None:
            return None
        parts = [bare(ctx, e.op.input), f"dim={ctx.code(dim)}"]
        if keep is not None:
            parts.append(f"keepdim={ctx.code(keep)}")
        code = f"{func}({', '.join(parts)})"
        return self.fix("unsafe", "Replace with `torch.logsumexp`", (node, code))

    def _logaddexp(self, node: cst.Call, a: Found, b: Found, direct: bool) -> FixSpec | None:
        ctx = self.ctx
        func = ctx.spell("torch.logaddexp")
        if func is None or not (direct and a.movable and b.movable):
            return None
        if a.op.input is None or b.op.input is None:
            return None
        code = f"{func}({bare(ctx, a.op.input)}, {bare(ctx, b.op.input)})"
        return self.fix("unsafe", "Replace with `torch.logaddexp`", (node, code))


_SOFTPLUS_MESSAGE = (
    "hand-written `log(1 + sum(exp(x)))`: exp overflows to inf (x > 88.7) and the gradient "
    "is inf/inf = NaN; write `F.softplus(torch.logsumexp(x, d))` (for a product of sums, "
    "`F.softplus(torch.logsumexp(a, d) + torch.logsumexp(b, d))`)"
)
_GLOBAL_MESSAGE = (
    "log-sum-exp shifted by the maximum of the whole tensor, not of each row it sums: a "
    "row far below that maximum (about 104 in float32) underflows to log(0) = -inf; "
    "subtract `x.amax(dim, keepdim=True)` or use `torch.logsumexp(x, dim)`"
)


def _shifted_by_global_max(ctx, red: Found) -> bool:
    """`log(sum(exp(x - x.max()), 1))`: a sum along a dimension of exps shifted by the
    maximum over every entry (`x.max()`, `x.data.max()`, `torch.max(x)`, no `dim`)."""
    if red.op.arg(0, "dim") is None:
        return False  # a total over every entry: the global maximum is its own
    found = find(ctx, red.op.input, ("exp",), red.op.env)  # type: ignore[arg-type]
    if found is None or found.op.input is None:
        return False
    arg = ctx.deref(Value(found.op.input, found.op.env))
    parts = subtraction(ctx, arg.node, arg.env)  # type: ignore[arg-type]
    if parts is None:
        return False
    shift = ctx.deref(Value(parts[1], arg.env))
    o = op(ctx, shift.node, shift.env) if isinstance(shift.node, cst.Call) else None
    if o is None or o.name not in ("max", "amax") or o.input is None:
        return False
    return not [a for a in o.rest()] and same_code(ctx, _undetached(ctx, o.input), parts[0])


def _undetached(ctx, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`x` of `x.data`, `x.detach()`."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        return expr.value
    if isinstance(expr, cst.Call) and call_name(expr) == "detach":
        callee = ctx.callee(expr)
        return callee.receiver if callee.receiver is not None else expr
    return expr


def _scaled(ctx, e: Found) -> bool:
    """An exponent multiplied by a scale (`exp(-self.scale * (s - m))`, `exp(s * 64)`) or
    divided by a temperature (`exp(s / t)`, `exp(s / 0.05)`): a cosine times 64 overflows,
    where an unscaled similarity stays far below 88.7."""
    arg = e.op.input
    if arg is None or exp_bounded(ctx, arg, e.op.env):
        return False
    return _has_scale(ctx, ctx.deref(Value(arg, e.op.env)).node, e.op.env, 0)


def _has_scale(ctx, node: cst.CSTNode, env, depth: int) -> bool:
    if depth > 4 or not isinstance(node, (cst.BinaryOperation, cst.UnaryOperation)):
        return False
    if isinstance(node, cst.UnaryOperation):
        return _has_scale(ctx, node.expression, env, depth + 1)
    if isinstance(node.operator, cst.Multiply):
        for side in (node.left, node.right):
            c = const(ctx, side, env)
            if (c is None and isinstance(side, (cst.Name, cst.Attribute))) or (
                c is not None and abs(c) >= 10
            ):
                return True
    if isinstance(node.operator, cst.Divide):
        c = const(ctx, node.right, env)
        if (c is None and isinstance(node.right, (cst.Name, cst.Attribute))) or (
            c is not None and 0 < abs(c) <= 0.1
        ):
            return True
    return _has_scale(ctx, node.left, env, depth + 1) or _has_scale(ctx, node.right, env, depth + 1)


def _grade(ctx, *exps: Found) -> str:
    """low when no exponent can overflow (each bounded above): only the underflow of every
    term is left."""
    bounded = all(e.op.input is not None and exp_bounded(ctx, e.op.input, e.op.env) for e in exps)
    return "low" if bounded else "high"


def _stable_form_beside(ctx, a: Found, b: Found) -> bool:
    """The function also writes the shifted form over the same two values
    (`mx + torch.log1p(torch.exp(mn - mx))`): the plain one is a deliberate edge-case path."""
    func = ctx.function
    if func is None or a.op.input is None or b.op.input is None:
        return False
    wanted = _identifiers(a.op.input) | _identifiers(b.op.input)
    for found in re.finditer(r"log1p\(\s*(?:torch\.)?exp\(([^()]*)\)", ctx.code(func)):
        if wanted and wanted <= set(re.findall(r"[A-Za-z_]\w*", found.group(1))):
            return True
    return False


def _identifiers(node: cst.CSTNode) -> set[str]:
    return {n.value for n in descendants(node, every=True) if isinstance(n, cst.Name)}
