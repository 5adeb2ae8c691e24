"""NUM106 hand-written-softmax."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.context import Value
from numlint.analysis.ops import same_code
from numlint.analysis.semantics import keyword, positional
from numlint.analysis.zeros import exp_bounded, segment_sum_input
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.log_exp._forms import Found, bare, find, overflow_confidence, unbounded_exp, wrap


class HandWrittenSoftmax(Rule):
    """`exp(x) / exp(x).sum(d, keepdim=True)` by hand: inf/inf or 0/0 = NaN; use `torch.softmax`.

    What it does:
    Flags a division of `torch.exp(x)` (or `x.exp()`) by a sum of the same exponentials:
    `torch.exp(x) / torch.exp(x).sum(d, keepdim=True)`, `e / e.sum(d, keepdim=True)` with
    `e = x.exp()`, `torch.exp(x) / torch.sum(torch.exp(x), dim=d, keepdim=True)`; also a
    softmax over segments (a graph's edges per node): `e / scatter_add(e, index, dim=0)[index]`
    (torch_scatter, `index_add`, `scatter_add` methods) with `e = x.exp()`, also through a
    helper of the project that returns such a sum or mean of its argument
    (`z = scatter(e, dst, dim=0, reduce="mean")` of a `scatter` wrapping
    `torch.scatter_reduce`; not where the call asks the helper for another reduction).

    Why is this bad?
    For any logit above 88.7 (float32) / 11.1 (float16) the numerator and the sum are inf and
    the quotient is NaN; when every logit is below -104 both are 0 and the quotient is 0/0.
    `torch.softmax` subtracts the maximum first and is finite for any finite input.

    Fix safety:
    Unsafe (results differ in the last bits). Offered when the sum has a `dim` and
    `keepdim=True` (the only shape-preserving form): it becomes `torch.softmax(x, dim=d)`.

    Also the in-place division `e /= e.sum(d, keepdim=True)`, and a tensor filled entry by
    entry with exponentials (`t = torch.zeros(n)`, then `t[i] = torch.exp(s)` in a loop)
    divided by its own sum.

    Known limitations:
    The max-shifted hand-written form `exp(x - m) / exp(x - m).sum(...)` is stable and not
    reported. Values are followed within one function.

    Confidence:
    high in float16 code (`exp` overflows from 11.1); medium in code that trains (a module's
    forward, a loss, or a helper only those call) where a gradient flows into the exponent:
    learned scores (attention logits, unscaled dot products) are unbounded and nothing here
    keeps them below float32's 88.7; low elsewhere (scores of unknown origin). Not reported
    when the exponent is bounded above (a Gaussian kernel's `-d**2 / (2 s**2)`): nothing
    overflows, and 0/0 needs every term to underflow at once, which a window holding its
    centre (exp(0) = 1) never does.
    Where the exponentials are a statement of their own (`e = x.exp()`, then `e / e.sum(d)`),
    the finding is on that `exp`, the value that overflows; the fix still rewrites the
    division.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.softmax.html
    - [numlint hazard catalog, row 8](https://github.com/numlint/numlint/blob/main/docs/hazards.md#8)
    """

    CODE = "NUM106"
    CONFIDENCE = "low"
    NAME = "hand-written-softmax"
    MESSAGE = (
        "hand-written softmax `exp(x) / exp(x).sum(d)`: overflows to inf/inf or underflows to "
        "0/0, giving NaN; use `torch.softmax(x, dim=d)`"
    )
    TRIGGERS = ("exp(",)

    VALID = [
        Valid(
            """
            import torch
            def shares(scores, groups):
                out = torch.zeros(len(groups))
                for i, idx in enumerate(groups):
                    out[i] = torch.exp(scores[idx] - scores[idx].max()).sum()
                out /= out.sum()
                return out
            """,
            "entries are sums of max-shifted exponentials: each is at least 1",
        ),
        Valid(
            """
            import torch
            def shares(scores, groups):
                out = torch.zeros(len(groups))
                for i, idx in enumerate(groups):
                    out[i] = scores[idx].abs().sum()
                out /= out.sum()
                return out
            """,
            "filled with other values: no softmax",
        ),
        Valid(
            """
            import torch
            def rescale(x, w):
                e = torch.exp(x)
                e /= w.sum(-1, keepdim=True)
                return e
            """,
            "divided in place by the sum of something else",
        ),
        Valid(
            """
            from torch_scatter import scatter_add
            def edge_weights(src, w, index):
                out = src.exp()
                return out / scatter_add(w, index, dim=0)[index]
            """,
            "a segment sum of other values: no softmax",
        ),
        Valid(
            """
            import torch
            def gaussian(size, sigma):
                x = torch.arange(size) - size // 2
                gauss = torch.exp(-(x ** 2) / (2 * sigma ** 2))
                return gauss / gauss.sum()
            """,
            "a Gaussian kernel: its exponent is at most 0, so nothing overflows",
        ),
        Valid(
            """
            import torch
            p = torch.softmax(x, dim=-1)
            """,
            "the stable API",
        ),
        Valid(
            """
            import torch
            def f(x):
                e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
                return e / e.sum(dim=-1, keepdim=True)
            """,
            "max-shifted",
        ),
        Valid(
            """
            import numpy as np
            p = np.exp(x) / np.exp(x).sum()
            """,
            "NumPy",
        ),
        Valid(
            """
            import torch
            w = torch.exp(a) / torch.exp(b).sum(-1, keepdim=True)
            """,
            "different exponentials",
        ),
        Valid(
            """
            import torch
            def softmax(x, dim):
                x_max = _safe_amax(x, dim)
                unnormalized = torch.exp(x - x_max)
                return unnormalized / torch.sum(unnormalized, dim, keepdim=True)
            """,
            "shifted by a maximum from a helper",
        ),
    ]
    INVALID = [
        Invalid(
            """
            from torch_scatter import scatter_add
            def edge_softmax(src, index):
                out = src.exp()
                return out / scatter_add(out, index, dim=0)[index]
            """,
            line=3,
            column=11,
            confidence="low",
            note="a softmax over each node's edges, summed by torch_scatter: reported on the "
            "exp, which overflows",
        ),
        Invalid(
            """
            import torch
            p = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            p = torch.softmax(x, dim=-1)
            """,
        ),
        Invalid(
            """
            import torch
            def attention(q, k):
                e = (q @ k.transpose(-2, -1)).exp()
                return e / e.sum(dim=-1, keepdim=True)
            """,
            line=3,
            column=9,
            fixed="""
            import torch
            def attention(q, k):
                e = (q @ k.transpose(-2, -1)).exp()
                return torch.softmax(q @ k.transpose(-2, -1), dim=-1)
            """,
        ),
        Invalid(
            """
            import torch
            p = torch.exp(s) / torch.sum(torch.exp(s), dim=1, keepdim=True)
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            p = torch.softmax(s, dim=1)
            """,
        ),
        Invalid(
            """
            import torch
            w = torch.exp(s) / torch.exp(s).sum()
            """,
            line=2,
            column=5,
            note="a sum over all elements: no fix",
        ),
        Invalid(
            """
            import torch
            def attend(scores):
                return torch.exp(scores) / torch.exp(scores).sum(-1, keepdim=True)
            """,
            confidence="low",
            line=3,
            column=12,
            fixed="""
            import torch
            def attend(scores):
                return torch.softmax(scores, dim=-1)
            """,
            note="float32 scores: overflow needs x > 88.7",
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class GraphAttention(nn.Module):
                def forward(self, x, index):
                    e = self.score(x).exp()
                    return e / torch.zeros(8).index_add(0, index, e)[index]
            """,
            confidence="medium",
            line=5,
            column=13,
            note="a layer's learned scores: nothing bounds them below exp's overflow at 88.7",
        ),
        Invalid(
            """
            import torch
            def attend(q, k):
                s = (q @ k.T).half()
                return s.exp() / s.exp().sum(-1, keepdim=True)
            """,
            confidence="high",
            line=4,
            column=12,
            fixed="""
            import torch
            def attend(q, k):
                s = (q @ k.T).half()
                return torch.softmax(s, dim=-1)
            """,
            note="float16: exp overflows from 11.1",
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class Ranker(nn.Module):
                def forward(self, x, groups):
                    logits = self.score(x)
                    probs = torch.zeros(len(groups))
                    for i, idx in enumerate(groups):
                        probs[i] = torch.exp(logits[idx].max())
                    probs /= probs.sum()
                    return probs
            """,
            confidence="medium",
            line=8,
            column=24,
            note="filled entry by entry with exponentials of learned scores, then divided by "
            "its own sum in place",
        ),
        Invalid(
            """
            import torch
            def normalise(x):
                e = torch.exp(x)
                e /= e.sum(-1, keepdim=True)
                return e
            """,
            confidence="low",
            line=3,
            column=9,
            note="the in-place spelling; scores of unknown origin",
        ),
    ]
    PROBE = Probe(
        hazard="torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)",
        fix="torch.softmax(x, -1)",
        inputs={"x": ("@exp-overflow [[{0}, {0}]]", "@exp-underflow [[{0}, {0}]]")},
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check(node, node.left, node.right)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        """`e /= e.sum(d, keepdim=True)`: the division in place."""
        if isinstance(node.operator, cst.DivideAssign):
            self._check(node, node.target, node.value)  # type: ignore[arg-type]

    def _check(
        self, node: cst.CSTNode, left: cst.BaseExpression, right: cst.BaseExpression
    ) -> None:
        ctx = self.ctx
        num = unbounded_exp(ctx, left, shifted_only=True)
        filled = num is None
        if filled:
            num = _filled_with_exp(ctx, left)  # `t[i] = torch.exp(s)` in a loop
        if num is None or num.op.input is None:
            return
        red = find(ctx, right, ("sum",))
        summed = red.op.input if red is not None else _segment_sum(ctx, right)
        if summed is None:
            return
        if filled or isinstance(node, cst.AugAssign):
            if not same_code(ctx, summed, left):
                return  # `t /= t.sum()`: the tensor's own sum
        else:
            den = find(ctx, summed, ("exp",), red.op.env if red is not None else None)
            if den is None or den.op.input is None:
                return
            same = den.op.call is num.op.call or same_code(ctx, den.op.input, num.op.input)
            if not same:
                return
        if exp_bounded(ctx, num.op.input, num.op.env):
            return  # a Gaussian kernel's -d**2 / (2 s**2): no overflow, 0/0 needs every term to
            # underflow at once (a window without its centre and a tiny sigma)
        confidence = overflow_confidence(ctx, num, learned=True)
        # `e = x.exp()` a statement above: the finding goes on the exp, which overflows
        through = filled or ctx.deref(ctx.value(left)).node is not left
        at = num.op.call if through else node
        if red is None:
            self.report(at, _SEGMENT_MESSAGE, confidence=confidence)
            return
        fix = self._fix(node, num, red) if isinstance(node, cst.BinaryOperation) else None
        self.report(at, fix=fix, confidence=confidence)

    def _fix(self, node: cst.BinaryOperation, num: Found, red: Found) -> FixSpec | None:
        ctx = self.ctx
        r = red.op
        if not (num.movable and red.movable) or num.op.input is None:
            return None
        if any(
            a.keyword is not None and a.keyword.value not in ("dim", "keepdim") for a in r.rest()
        ):
            return None
        offset = 1 if r.spelling == "function" else 0
        dim = positional(r.call, offset, "dim")
        keep = keyword(r.call, "keepdim") or positional(r.call, offset + 1)
        func = ctx.spell("torch.softmax")
        if dim is None or func is None:
            return None
        if not (isinstance(keep, cst.Name) and keep.value == "True"):
            return None
        code = f"{func}({bare(ctx, num.op.input)}, dim={ctx.code(dim)})"
        return self.fix("unsafe", "Replace with `torch.softmax`", (node, wrap(node, code)))


_SEGMENT_MESSAGE = (
    "hand-written segment softmax `exp(x) / scatter_add(exp(x), index)[index]`: overflows to "
    "inf/inf or underflows to 0/0, giving NaN; subtract each segment's maximum first "
    "(`torch_scatter.scatter_max`) or use `torch_geometric.utils.softmax`"
)


def _segment_sum(ctx, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What a segment sum adds up, read back per entry (`scatter_add(e, index, dim=0)[index]`,
    `torch.zeros(n).index_add(0, index, e)[index]`, `zeros.scatter_add(0, index, e)`): the
    denominator of a softmax over each node's edges."""
    value = ctx.deref(Value(expr, ctx.env))
    node = value.node
    if isinstance(node, cst.Subscript):
        node = ctx.deref(Value(node.value, value.env)).node
    if not isinstance(node, cst.Call):
        return None
    return segment_sum_input(ctx, node, value.env)


#: Tensors made to be filled entry by entry.
_BLANKS = frozenset(
    {"torch.zeros", "torch.empty", "torch.zeros_like", "torch.empty_like", "torch.Tensor"}
)


def _filled_with_exp(ctx, expr: cst.BaseExpression) -> Found | None:
    """A blank tensor whose every entry the code writes as an exponential (`t =
    torch.zeros(n)`, then `t[i] = torch.exp(s)` in a loop): the first such `exp`."""
    value = ctx.deref(Value(expr, ctx.env))
    node = value.node
    if not (isinstance(node, cst.Call) and ctx.qualname(node.func, value.env) in _BLANKS):
        return None
    found: Found | None = None
    for stmt in value.mutations:
        if not (
            isinstance(stmt, cst.Assign)
            and all(isinstance(t.target, cst.Subscript) for t in stmt.targets)
        ):
            return None  # another edit: not only exponentials
        exp = unbounded_exp(ctx, stmt.value, shifted_only=True)
        if exp is None:
            return None
        found = found or exp
    return found
