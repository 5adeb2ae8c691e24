"""NUM109 entropy-term."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.context import Value
from numlint.analysis.evidence import grade as evidence_grade
from numlint.analysis.guards import (
    guarded_by_mutation,
    nonfinite_replaced,
    replaced_by_where,
    sanitised_later,
    selection,
)
from numlint.analysis.ops import const, op, same_value
from numlint.analysis.semantics import activation
from numlint.analysis.zeros import positive_value, selects_nonzero, zero_reason
from numlint.rule import Invalid, Probe, Rule, Valid
from numlint.rules.log_exp._forms import bare


def _averaged(ctx, value: Value) -> bool:
    """`p` is a mean over many entries (`probs.mean(0)`, `w.abs().mean(-1) / total`): 0 only
    where every entry is, unlike a distribution's own entries or a histogram's counts (a
    class never seen sums to 0)."""
    node = value.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        left = node.left
        if _summed(ctx, left, value):
            return True  # `total_probs / n`: a mean written out
        return _averaged(ctx, ctx.deref(Value(left, value.env)))
    o = op(ctx, node, value.env)  # type: ignore[arg-type]
    return o is not None and o.name == "mean"


def _summed(ctx, node: cst.BaseExpression, value: Value) -> bool:
    """A sum of probabilities over examples: `probs.softmax(-1).sum(0)`, or a name saying so
    (`self._sum_of_probabilities`); not a histogram of counts (a class never seen is 0)."""
    name = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", None)
    if isinstance(name, str) and "sum" in name.lower() and "prob" in name.lower():
        return True
    found = ctx.deref(Value(node, value.env))
    o = op(ctx, found.node, found.env)  # type: ignore[arg-type]
    if o is None or o.name != "sum" or o.input is None:
        return False
    return activation(ctx, Value(o.input, found.env), ("softmax", "sigmoid")) is not None


_KL_MESSAGE = (
    "`p * log(p / q)` is 0 * -inf = NaN where p is 0; use `torch.xlogy(p, p / q)` "
    "(or `F.kl_div(q.log(), p, reduction=...)`)"
)


def _log_term(ctx, value: Value) -> Value:
    """The log in `log(p) - log(q)` (a KL term written as a difference of logs), else
    `value` itself."""
    node = value.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        left = ctx.deref(Value(node.left, value.env))
        o = op(ctx, left.node, left.env)  # type: ignore[arg-type]
        if o is not None and o.name in ("log", "log2"):
            return left
    return value


def _numerator(ctx, value: Value) -> Value:
    """p of `p / q` (directly or through a variable), else the value itself."""
    found = ctx.deref(value)
    node = found.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return Value(node.left, found.env)
    return value


class EntropyTerm(Rule):
    """`p * log(p)` is 0 * -inf = NaN at p = 0: use `torch.xlogy(p, p)` or `torch.special.entr`.

    What it does:
    Flags a product of a tensor and its own log: `p * torch.log(p)`, `p * p.log()`,
    `torch.log(p) * p`, `-p * torch.log2(p)`, as written in entropies, and the KL term
    `p * torch.log(p / q)` / `p * (torch.log(p) - torch.log(q))`, also summed by an einsum
    of two operands with the same subscripts (`torch.einsum("bc,bc->b", p, p.log())`), unless
    `p`
    is known to be positive (clamped, an exponential), holds only entries that pass a test of
    themselves (`p[p > eps]`, `s = s[s.pow(2) > 0]`), or is a softmax / sigmoid output (then
    NUM101 / NUM102 report the log itself).

    Why is this bad?
    The limit of p log p at 0 is 0, but in floating point `0 * log(0)` is `0 * -inf` = NaN,
    so one zero probability makes the whole entropy NaN. `torch.xlogy(p, p)` defines the
    value at p = 0 as 0, and `torch.special.entr(p)` computes `-p * log(p)` the same way.

    Fix safety:
    Unsafe: the value at p = 0 changes from NaN to 0. `p * torch.log(p)` becomes
    `torch.xlogy(p, p)` (natural log only).

    Known limitations:
    Only a direct product of the two factors is recognised (not `w * p * log(p)`). The
    gradient of xlogy at p = 0 is still not finite; from logits, compute the entropy as
    `-(z.softmax(-1) * z.log_softmax(-1)).sum(-1)`.

    Confidence:
    high when `p` is known to reach 0 (a ReLU output, a mask, a value clamped at 0, a
    probability that underflows); low when `p` is a mean over many entries (0 only where all
    are) or when the entries are replaced on the next lines (`t.masked_fill(p == 0, 0)`,
    `torch.nan_to_num(t)`, `h = torch.where(p > 0, h, 0)`, or `h` used only as a branch of
    `torch.where(t > 1, h, 0)`); medium otherwise (a normalised
    ratio, an unknown `p`).

    References:
    - https://pytorch.org/docs/stable/generated/torch.xlogy.html
    - https://pytorch.org/docs/stable/special.html#torch.special.entr
    - [numlint hazard catalog, row 12](https://github.com/numlint/numlint/blob/main/docs/hazards.md#12)
    """

    CODE = "NUM109"
    NAME = "entropy-term"
    MESSAGE = (
        "`p * log(p)` is 0 * -inf = NaN where p is 0; use `torch.xlogy(p, p)` "
        "(or `-torch.special.entr(p)`)"
    )
    TRIGGERS = ("log(", "log2(", "log10(")

    VALID = [
        Valid(
            """
            import torch
            h = -torch.special.entr(p).sum(-1)
            """,
            "the stable API",
        ),
        Valid(
            """
            import torch
            def entropy(hist):
                log_h = torch.log(hist)
                log_h[torch.isinf(log_h) | torch.isnan(log_h)] = 0.0
                return -(hist * log_h).sum(-1)
            """,
            "the log's non-finite entries are replaced by 0 before the product",
        ),
        Valid(
            """
            import torch
            h = -(p * torch.log(p + 1e-8)).sum(-1)
            """,
            "an eps inside the log",
        ),
        Valid(
            """
            import torch
            def ent(p):
                p = p.clamp(min=1e-8)
                return -(p * p.log()).sum(-1)
            """,
            "clamped before",
        ),
        Valid(
            """
            import torch
            kl = (p * torch.log(q)).sum()
            """,
            "different tensors (cross-entropy term)",
        ),
        Valid(
            """
            import math
            h = -p * math.log(p)
            """,
            "`math.log` of a Python float",
        ),
        Valid(
            """
            import torch
            def ent(z):
                p = torch.softmax(z, -1)
                return -(p * torch.log(p)).sum(-1)
            """,
            "log of a softmax output: NUM101 reports the log",
        ),
        Valid(
            """
            import torch
            def log_binom(n, eps=1e-7):
                n = n + eps
                return n * torch.log(n)
            """,
            "an eps added in an earlier statement",
        ),
        Valid(
            """
            import torch
            def cross_term(p, q):
                return torch.sum(q * torch.log(p / q), axis=-1)
            """,
            "the factor is not the numerator of the log's ratio",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def entropy(x):
                p = torch.relu(x)
                log_p = p.log()
                return -(p * log_p).sum(-1)
            """,
            line=5,
            column=14,
            note="the log on a line of its own: no fix",
        ),
        Invalid(
            """
            import torch
            h = -(p * torch.log(p)).sum(-1)
            """,
            confidence="medium",
            line=2,
            column=7,
            fixed="""
            import torch
            h = -(torch.xlogy(p, p)).sum(-1)
            """,
        ),
        Invalid(
            """
            import torch
            def entropy(probs):
                return -(probs * probs.log()).sum(dim=1).mean()
            """,
            confidence="medium",
            line=3,
            column=14,
            fixed="""
            import torch
            def entropy(probs):
                return -(torch.xlogy(probs, probs)).sum(dim=1).mean()
            """,
        ),
        Invalid(
            """
            import torch
            h = torch.sum(torch.log(w) * w)
            """,
            confidence="medium",
            line=2,
            column=15,
            fixed="""
            import torch
            h = torch.sum(torch.xlogy(w, w))
            """,
        ),
        Invalid(
            """
            import torch
            h = (-q * torch.log2(q)).sum()
            """,
            confidence="medium",
            line=2,
            column=6,
            note="log2: no fix",
        ),
        Invalid(
            """
            import torch
            def kl_divergence(p, q):
                return torch.sum(p * torch.log(p / q), axis=-1)
            """,
            confidence="medium",
            line=3,
            column=22,
            note="a KL term: `p * log(p / q)` is NaN where p is 0 (also `p * (log(p) - log(q))`)",
        ),
    ]
    PROBE = Probe(
        hazard="p * torch.log(p)",
        fix="torch.xlogy(p, p)",
        inputs={"p": "torch.tensor([0.0, 0.5])"},
        backward=False,
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Multiply):
            self._product(node, node.left, node.right)

    def visit_Call(self, node: cst.Call) -> None:
        """`torch.einsum("bcxy,bcxy->bxy", p, torch.log(p) - torch.log(q))`: a product of
        two operands with the same subscripts, summed."""
        func = node.func
        spelled = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if spelled != "einsum" or len(node.args) != 3:
            return
        if self.ctx.qualname(func) != "torch.einsum":
            return
        spec = node.args[0].value
        if not isinstance(spec, cst.SimpleString):
            return
        inputs = str(spec.evaluated_value).replace(" ", "").split("->")[0].split(",")
        if len(inputs) == 2 and inputs[0] == inputs[1] and "..." not in inputs[0]:
            self._product(node, node.args[1].value, node.args[2].value)

    def _product(
        self, node: cst.CSTNode, left: cst.BaseExpression, right: cst.BaseExpression
    ) -> None:
        ctx = self.ctx
        for factor, other in ((left, right), (right, left)):
            kept = ctx.deref(ctx.value(other))  # `log_p = p.log()` on a line of its own
            whole = kept
            kept = _log_term(ctx, kept)  # `p * (log(p) - log(q))`: the log of p
            o = op(ctx, kept.node, kept.env)  # type: ignore[arg-type]
            if o is None or o.name not in ("log", "log2") or o.input is None:
                continue
            separate = kept.node is not other
            if o.spelling == "method" and o.call.args:
                continue
            negated = isinstance(factor, cst.UnaryOperation) and isinstance(
                factor.operator, cst.Minus
            )
            base = factor.expression if negated else factor  # type: ignore[attr-defined]
            logged = Value(o.input, kept.env)
            if not same_value(ctx, ctx.value(base), logged):
                logged = _numerator(ctx, logged)  # `p * log(p / q)`: a KL term
                if not same_value(ctx, ctx.value(base), logged):
                    continue
            relative = logged.node is not o.input or kept is not whole
            separate = separate or relative
            value = ctx.deref(logged)
            if const(ctx, logged.node) is not None:
                return  # `math.pi * torch.log(math.pi)`: a constant, never 0
            if guarded_by_mutation(ctx, value) or positive_value(ctx, value):
                return
            if separate and nonfinite_replaced(ctx, kept):
                return  # `log_p[torch.isinf(log_p)] = 0`: 0 * 0 where p is 0
            if isinstance(value.node, cst.Subscript) and selects_nonzero(
                ctx, value.node, value.env
            ):
                return  # `t[t.nonzero(as_tuple=True)]`, `p[p > eps]`: the nonzero entries
            if activation(ctx, Value(o.input, ctx.env)) is not None:
                return
            if selection(ctx, o.input) is not None:
                return  # inside `torch.where(p > 0, ...)`: NUM110 reports the gradient
            fix = None
            func = ctx.spell("torch.xlogy")
            if (
                o.name == "log"
                and func is not None
                and not separate
                and isinstance(node, cst.BinaryOperation)
            ):
                text = bare(ctx, base)
                code = f"{'-' if negated else ''}{func}({text}, {text})"
                fix = self.fix("unsafe", "Replace with `torch.xlogy`", (node, code))
            reason = zero_reason(ctx, value, "log")
            grade = "medium" if reason is None else evidence_grade(ctx, reason, value, log=True)
            if grade != "high" and _averaged(ctx, value):
                grade = "low"
            if sanitised_later(ctx) or replaced_by_where(ctx, o.input):
                grade = "low"  # `h = p * p.log(); h = torch.where(p > 0, h, 0)`
            self.report(node, _KL_MESSAGE if relative else None, fix, confidence=grade)
            return
