"""NUM111 log-of-product."""

from __future__ import annotations

import re

import libcst as cst

from numlint.analysis.context import Context, Value
from numlint.analysis.guards import sanitised_later
from numlint.analysis.ops import op
from numlint.analysis.semantics import positional
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.log_exp._forms import Found, bare, find
from numlint.tree import call_name


class LogOfProduct(Rule):
    """Log of a product or determinant: underflows to -inf; sum the logs or use `logdet`.

    What it does:
    Flags `torch.log(torch.prod(p, d))`, `p.prod(d).log()`, `torch.log(torch.det(A))`,
    `torch.log(torch.linalg.det(A))`, `A.det().log()` and `torch.log(torch.abs(torch.det(A)))`
    (also `log2` / `log10`, and through a variable of the same function).

    Why is this bad?
    A product of many factors below 1 underflows to 0 (200 factors of 0.5 already do in
    float32) and one above 1 overflows to inf; the log is then -inf or inf with NaN gradients.
    A determinant is such a product of eigenvalues (`det(0.1 * eye(200))` is 0 in float32).
    `torch.log(p).sum(d)`, `torch.logdet(A)` and `torch.linalg.slogdet(A).logabsdet` never
    form the product.

    Fix safety:
    Unsafe (the values change, becoming finite). `log(prod(p, d))` becomes
    `torch.log(p).sum(d)`; `log(det(A))` becomes `torch.logdet(A)`; `log(abs(det(A)))`
    becomes `torch.linalg.slogdet(A).logabsdet`. Only the natural log is rewritten.

    A product of a shape's sizes (`torch.prod(torch.Tensor(shape))`, `torch.tensor(x.shape)`)
    is an element count and is left alone.

    Known limitations:
    A product written with `*` over a loop is not seen. `torch.inverse(A) @ b` (use
    `torch.linalg.solve`) is not covered here.

    References:
    - https://pytorch.org/docs/stable/generated/torch.linalg.slogdet.html
    - [numlint hazard catalog, row 29](https://github.com/numlint/numlint/blob/main/docs/hazards.md#29)
    """

    CODE = "NUM111"
    NAME = "log-of-product"
    MESSAGE = (
        "log of a product or determinant: it underflows to 0 (or overflows), giving -inf and "
        "NaN gradients; sum the logs (`torch.log(p).sum(d)`) or use `torch.logdet` / `slogdet`"
    )
    TRIGGERS = ("prod(", "det(")

    VALID = [
        Valid(
            """
            import torch
            y = torch.log(p).sum(-1)
            z = torch.logdet(A)
            """,
            "the stable forms",
        ),
        Valid(
            """
            import numpy as np
            y = np.log(np.prod(p))
            """,
            "NumPy",
        ),
        Valid(
            """
            import torch
            sign, logabs = torch.linalg.slogdet(A)
            """,
            "slogdet",
        ),
        Valid(
            """
            import torch
            y = torch.log(torch.cumsum(p, 0))
            """,
            "not a product",
        ),
        Valid(
            """
            import torch
            numel = torch.prod(torch.Tensor(shape))
            scale = torch.log(numel) / 2
            fan = torch.log(torch.tensor(x.shape[1:]).prod())
            """,
            "the product of a shape's sizes is an element count",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            y = torch.log(torch.prod(p, dim=-1))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.log(p).sum(dim=-1)
            """,
        ),
        Invalid(
            """
            import torch
            y = likelihoods.prod(1).log()
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = likelihoods.log().sum(1)
            """,
        ),
        Invalid(
            """
            import torch
            def logdet(cov):
                d = torch.linalg.det(cov)
                return torch.log(d)
            """,
            line=4,
            column=12,
            fixed="""
            import torch
            def logdet(cov):
                d = torch.linalg.det(cov)
                return torch.logdet(cov)
            """,
        ),
        Invalid(
            """
            import torch
            y = torch.log(torch.abs(torch.det(J)))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.linalg.slogdet(J).logabsdet
            """,
        ),
        Invalid(
            """
            import torch
            y = torch.log2(torch.prod(p))
            """,
            line=2,
            column=5,
            note="log2: no fix",
        ),
    ]
    PROBE = Probe(
        hazard="torch.log(torch.prod(p))",
        fix="torch.log(p).sum()",
        inputs={"p": "torch.full((200,), 0.5)"},
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        o = op(ctx, node)
        if o is None or o.name not in ("log", "log2", "log10") or o.input is None:
            return
        if o.spelling == "method" and node.args:
            return
        absolute = False
        found = find(ctx, o.input, ("prod", "det", "abs"))
        if found is not None and found.op.name == "abs" and found.op.input is not None:
            absolute = True
            inner = find(ctx, found.op.input, ("det",), found.op.env)
            found = inner if inner is not None and found.movable else None
        if found is None or (found.op.name == "prod" and _of_sizes(ctx, found)):
            return
        fix = self._fix(node, o.name, o.spelling, found, absolute)
        # `log_det[log_det == -inf] = floor` on the next line: the code handles the underflow
        self.report(node, fix=fix, confidence="low" if sanitised_later(ctx) else None)

    def _fix(
        self, node: cst.Call, log: str, spelling: str, found: Found, absolute: bool
    ) -> FixSpec | None:
        ctx = self.ctx
        f = found.op
        if log != "log" or not found.movable or f.input is None:
            return None
        text = bare(ctx, f.input)
        if f.name == "det":
            name = "torch.linalg.slogdet" if absolute else "torch.logdet"
            func = ctx.spell(name)
            if func is None:
                return None
            code = f"{func}({text}).logabsdet" if absolute else f"{func}({text})"
            return self.fix("unsafe", "Use a log-determinant", (node, code))
        if any(
            a.keyword is not None and a.keyword.value not in ("dim", "keepdim") for a in f.rest()
        ):
            return None
        args = ", ".join(ctx.code(a).rstrip(", ") for a in f.rest())
        if spelling == "method" or f.spelling == "method":
            receiver = ctx.code(f.input)
            code = f"{receiver}.log().sum({args})"
        else:
            code = f"{ctx.code(node.func)}({text}).sum({args})"
        return self.fix("unsafe", "Sum the logs instead", (node, code))


_SIZE_NAME = re.compile(r"(^|_)(shape|shapes|size|sizes|dims|dim_sizes)$", re.I)
_FROM_DATA = frozenset({"torch.tensor", "torch.Tensor", "torch.as_tensor", "torch.LongTensor"})


def _of_sizes(ctx: Context, found: Found) -> bool:
    """`torch.prod(torch.Tensor(shape))`: the product of a shape's sizes is an element count
    (at least 1); it neither underflows nor reaches float32's overflow."""
    value = ctx.deref(Value(found.op.input, found.op.env)) if found.op.input else None
    if value is None or not isinstance(value.node, cst.Call):
        return False
    if ctx.qualname(value.node.func, value.env) not in _FROM_DATA:  # type: ignore[arg-type]
        return False
    data = positional(value.node, 0, "data")
    if isinstance(data, cst.Subscript):
        data = data.value  # `x.shape[1:]`
    if isinstance(data, cst.Call) and call_name(data) == "size":
        return True
    name = data.attr.value if isinstance(data, cst.Attribute) else getattr(data, "value", None)
    return isinstance(name, str) and bool(_SIZE_NAME.search(name))
