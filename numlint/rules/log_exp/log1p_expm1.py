"""NUM108 log1p-expm1-precision."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.context import Value
from numlint.analysis.dtypes import traced_dtype
from numlint.analysis.gradients import no_gradient, rounded_here
from numlint.analysis.ops import const, op, plus_one
from numlint.analysis.summaries import origin_of, rounds_parameter
from numlint.analysis.tables import ROUNDING
from numlint.rule import Invalid, Probe, Rule, Valid
from numlint.rules.log_exp._forms import bare, exp_sums, find, is_one, wrap
from numlint.tree import call_name


class Log1pExpm1Precision(Rule):
    """`log(1 + x)` and `exp(x) - 1` lose precision for small x: use `torch.log1p` / `torch.expm1`.

    What it does:
    Flags `torch.log(1 + x)`, `torch.log(x + 1)`, `(1 + x).log()`, `x.add(1).log()`,
    `torch.exp(x) - 1`, `x.exp() - 1` and `1 - torch.exp(x)` (so also
    `torch.log(1 - torch.exp(x))`) on tensors.

    Why is this bad?
    In float32, `1 + x` rounds to exactly 1 for |x| < 6e-8, so `log(1 + x)` is 0 and
    `exp(x) - 1` is 0 instead of about x; `log(1 - exp(x))` becomes log(0) = -inf for tiny
    negative x. `torch.log1p(x)` and `torch.expm1(x)` keep full precision near 0.

    Fix safety:
    Unsafe: the values change (they become more accurate). `torch.log(1 + x)` becomes
    `torch.log1p(x)`, `exp(x) - 1` becomes `torch.expm1(x)`, `1 - exp(x)` becomes
    `-torch.expm1(x)`.

    Known limitations:
    `log(1 + exp(x))` is NUM104 (softplus). Sums reached through variables are reported
    without a fix. Whole numbers are not reported (`1 + n` is exact): integer constructors
    (`torch.arange`) and counts (`bincount`, `count_nonzero`, graph node degrees), also cast,
    reshaped or combined with whole constants (`2.0 * torch.arange(n) + 1.0`), and values cast
    to float right before the sum from a dtype the code does not show as floating
    (`torch.log(durations.float() + 1)`), or counts a function of the project returns
    (`torch.unique(..., return_counts=True)` gathered with `.append` and `torch.cat`). Nor is a log
    added to a constant of magnitude 0.5 or more (`-math.log(math.pi) - torch.log(1 + x**2)`):
    that sum rounds away what `log1p` would keep. Nor a value stepped by 1 in place (`x = x +
    1` in a loop, then `x.log()`): a shift or a counter, not `1 + small`. Nor `exp(x) - 1`
    whose every later use is rounded to whole numbers, in the function or in the function of
    the project it is handed to (`durs = torch.clamp(torch.exp(log_d) - 1, 0)`, then
    `upsample(x, durs)` with `(pace * durs[i]).long()`).

    Confidence:
    low: a loss of precision, rarely a failure; shown with `--min-confidence low`.

    References:
    - https://pytorch.org/docs/stable/generated/torch.log1p.html
    - https://pytorch.org/docs/stable/generated/torch.expm1.html
    - [numlint hazard catalog, row 28](https://github.com/numlint/numlint/blob/main/docs/hazards.md#28)
    """

    CODE = "NUM108"
    #: A loss of precision, rarely a failure: shown with `--min-confidence low`.
    CONFIDENCE = "low"
    NAME = "log1p-expm1-precision"
    MESSAGE = (
        "`log(1 + x)` / `exp(x) - 1` round to 0 for small x in floating point; "
        "use `torch.log1p(x)` / `torch.expm1(x)`"
    )
    TRIGGERS = ("log(", "exp(")

    VALID = [
        Valid(
            """
            import torch
            y = torch.log1p(x)
            z = torch.expm1(x)
            """,
            "the precise APIs",
        ),
        Valid(
            """
            import torch
            def log_terms(n):
                odd = 2.0 * torch.arange(0, n) + 1.0
                return odd.log()
            """,
            "whole numbers (an arange scaled by whole floats): `1 + x` is exact",
        ),
        Valid(
            """
            import torch
            from torch_geometric.utils import degree
            def amplify(out, index):
                deg = degree(index, dtype=out.dtype).view(-1, 1)
                return out * torch.log(deg.clamp(min=1) + 1)
            """,
            "node degrees are counts: `1 + deg` is exact",
        ),
        Valid(
            """
            import math
            import torch
            def cauchy_log_density(x):
                return -math.log(math.pi) - torch.log(1 + x ** 2)
            """,
            "added to a constant of magnitude 1: its rounding is as large as what log1p keeps",
        ),
        Valid(
            """
            import math
            y = math.log(1 + x)
            """,
            "`math`",
        ),
        Valid(
            """
            import torch
            y = torch.log(1 + torch.exp(x))
            """,
            "softplus: NUM104",
        ),
        Valid(
            """
            import torch
            y = torch.log(2 + x)
            z = torch.exp(x) - 2
            """,
            "not 1",
        ),
        Valid(
            """
            import numpy as np
            y = np.exp(x) - 1
            """,
            "NumPy",
        ),
        Valid(
            """
            import torch
            def log_coords(n):
                rel = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).float()
                return torch.sign(rel) * torch.log(1.0 + rel.abs())
            """,
            "whole-number offsets: `1 + x` is exact",
        ),
        Valid(
            """
            import torch
            def log_gamma_shifted(x, shift):
                for _ in range(shift):
                    x = x + 1
                return (x - 0.5) * x.log()
            """,
            "a value stepped by 1 in place (a shift, a counter): the log of x, not of 1 + small",
        ),
        Valid(
            """
            import torch
            def durations(log_dur):
                return torch.round(torch.exp(log_dur) - 1).long()
            """,
            "rounded to whole numbers right away",
        ),
        Valid(
            """
            import torch
            def upsample(feats, durs, pace=1.0):
                return [
                    torch.repeat_interleave(feats[i], (pace * durs[i]).long(), dim=0)
                    for i in range(len(durs))
                ]
            def infer(feats, log_durs):
                durs = torch.clamp(torch.exp(log_durs) - 1, 0)
                return upsample(feats, durs)
            """,
            "rounded to whole frames in the function it is handed to",
        ),
        Valid(
            """
            import torch
            def log_durations(durations):
                return torch.log(durations.float() + 1)
            """,
            "counts cast to float before the log: `1 + n` is exact",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            y = torch.log(1 + x)
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.log1p(x)
            """,
        ),
        Invalid(
            """
            import torch
            y = (dist / scale + 1).log()
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = (dist / scale).log1p()
            """,
        ),
        Invalid(
            """
            import torch
            y = torch.exp(x) - 1
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.expm1(x)
            """,
        ),
        Invalid(
            """
            import torch
            y = torch.log(1 - torch.exp(-rate * t))
            """,
            line=2,
            column=15,
            fixed="""
            import torch
            y = torch.log(-torch.expm1(-rate * t))
            """,
        ),
        Invalid(
            """
            import torch
            y = 2 * (x.exp() - 1.0)
            """,
            line=2,
            column=10,
            fixed="""
            import torch
            y = 2 * (x.expm1())
            """,
        ),
        Invalid(
            """
            import torch
            def f(x):
                y = x.half().float()
                return torch.log(y + 1)
            """,
            line=4,
            column=12,
            fixed="""
            import torch
            def f(x):
                y = x.half().float()
                return torch.log1p(y)
            """,
            note="a cast of a value already floating: not a count",
        ),
        Invalid(
            """
            import torch
            def f(x):
                s = x + 1
                return torch.log(s)
            """,
            line=4,
            column=12,
            note="through a variable: no fix",
        ),
    ]
    PROBE = Probe(
        hazard="torch.log(1 + x)",
        fix="torch.log1p(x)",
        inputs={"x": "torch.tensor([1e-8, -1e-8, 1e-3])"},
        backward=False,
        compare="value",
        note="silently wrong: compared with log1p evaluated in float64",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        o = op(ctx, node)
        if o is None or o.name != "log" or o.input is None:
            return
        if o.spelling == "method" and node.args:
            return
        inner = ctx.deref(ctx.value(o.input))
        if inner.mutations:
            return
        x = plus_one(ctx, inner.node, inner.env)  # type: ignore[arg-type]
        if x is None or const(ctx, x, inner.env) is not None:  # type: ignore[arg-type]
            return
        if isinstance(o.input, cst.Name) and isinstance(x, cst.Name) and x.value == o.input.value:
            return  # `x = x + 1` (a shift or a counter stepped in a loop): not `1 + small`
        if _absorbed(ctx, node):
            return
        if find(ctx, x, ("exp",), inner.env) is not None or exp_sums(ctx, x, inner.env):
            return  # `log(1 + exp(x))`: NUM104; `log(1 + exp(x).sum())`: NUM105
        if no_gradient(ctx, Value(x, inner.env), integers=True):
            return  # whole numbers (`torch.arange` offsets): `1 + x` is exact
        if _cast_from_whole(ctx, Value(x, inner.env)):
            return  # `torch.log(durations.float() + 1)`: counts cast to float
        if origin_of(ctx, x, ("whole",)) is not None:
            return  # counts a helper returns (`torch.unique(..., return_counts=True)`)
        fix = None
        if inner.node is o.input:
            if o.spelling == "method":
                text = bare(ctx, x)
                if x.lpar or not isinstance(x, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
                    text = f"({text})"
                code = f"{text}.log1p()"
            else:
                func = ctx.spell("torch.log1p")
                code = f"{func}({bare(ctx, x)})" if func else ""
            if code:
                fix = self.fix("unsafe", "Replace with `log1p`", (node, code))
        self.report(node, fix=fix)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Subtract):
            return
        ctx = self.ctx
        if is_one(ctx, node.right):
            negated, side = False, node.left
        elif is_one(ctx, node.left):
            negated, side = True, node.right
        else:
            return
        o = op(ctx, side)
        if o is None or o.name != "exp" or o.input is None or rounded_here(ctx):
            return
        if _rounded_later(ctx, node):
            return
        if o.spelling == "method" and node.left is side:
            text = ctx.code(o.input)
            code = f"{text}.expm1()"
        else:
            func = ctx.spell("torch.expm1")
            if func is None:
                self.report(node)
                return
            code = f"{func}({bare(ctx, o.input)})"
        if negated:
            code = f"-{code}"
        fix = self.fix("unsafe", "Replace with `expm1`", (node, wrap(node, code)))
        self.report(node, fix=fix)


def _cast_from_whole(ctx, value: Value) -> bool:
    """`n.float()`, `n.to(torch.float32)`: a value cast to float right before `1 + n`, when
    nothing shows it was floating already: the cast is what whole numbers (counts,
    durations, lengths) need before a log, and `1 + n` is exact for them."""
    found = ctx.deref(value)
    node = found.node
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return False
    method = node.func.attr.value
    if method in ("float", "double") and not node.args:
        cast = True
    elif method in ("to", "type") and len(node.args) == 1:
        qual = ctx.qualname(node.args[0].value, found.env) or ""
        cast = qual in ("torch.float32", "torch.float", "torch.float64", "torch.double")
    else:
        cast = False
    if not cast:
        return False
    source = traced_dtype(ctx, Value(node.func.value, found.env))
    return source is None or not source.startswith(("float", "bfloat"))


def _absorbed(ctx, node: cst.Call) -> bool:
    """`-np.log(np.pi) - torch.log(1 + x**2)`: the log is added to a constant of magnitude 0.5
    or more, whose rounding (at least 3e-8 in float32) is as large as anything `log1p`
    would keep."""
    child: cst.CSTNode = node
    for parent in ctx.ancestors():
        if isinstance(parent, cst.UnaryOperation):
            child = parent
            continue
        if not isinstance(parent, cst.BinaryOperation):
            return False
        if not isinstance(parent.operator, (cst.Add, cst.Subtract)):
            return False
        other = parent.right if parent.left is child else parent.left
        value = const(ctx, other)
        return value is not None and abs(value) >= 0.5
    return False


#: Calls whose result keeps the value's small digits where they were (`clamp(d, 0)`).
_KEEPING = frozenset({"clamp", "clamp_min", "clip", "relu"})


def _rounded_later(ctx, node: cst.BinaryOperation) -> bool:
    """`d = torch.clamp(torch.exp(log_d) - 1, 0)`, where every later read of `d` in the
    function is rounded (`d.round()`, `torch.floor(d * pace)`) or handed to a function of this
    project that only rounds that parameter (`upsample(x, d)` with `(pace * d[i]).long()`):
    the digits `expm1` would keep are discarded."""
    stack = ctx.stack
    i = len(stack) - 1
    while i > 0 and stack[i] is not node:
        i -= 1
    child = node
    for parent in reversed(stack[:i]):
        if isinstance(parent, cst.Arg) or (
            isinstance(parent, cst.Call) and call_name(parent) in _KEEPING
        ):
            child = parent
            continue
        break
    else:
        return False
    if not (
        isinstance(parent, cst.Assign)
        and parent.value is child
        and len(parent.targets) == 1
        and isinstance(parent.targets[0].target, cst.Name)
    ):
        return False
    reads = _Reads(parent.targets[0].target.value)
    for stmt in _statements_after(stack):
        stmt.visit(reads)
    return bool(reads.found) and all(_whole(ctx, chain) for chain in reads.found)


def _statements_after(stack: list[cst.CSTNode]) -> list[cst.CSTNode]:
    """The statements that run after the one on `stack`, up to the end of its function."""
    out: list[cst.CSTNode] = []
    for i in range(len(stack) - 1, 0, -1):
        node, parent = stack[i], stack[i - 1]
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            break
        if isinstance(parent, (cst.IndentedBlock, cst.Module)) and node in parent.body:
            out += list(parent.body[list(parent.body).index(node) + 1 :])
    return out


class _Reads(cst.CSTVisitor):
    """Each read of a name, with the nodes holding it (innermost last)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stack: list[cst.CSTNode] = []
        self.found: list[list[cst.CSTNode]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name) and node.value == self.name:
            if not (self.stack and isinstance(self.stack[-1], cst.AssignTarget)):
                self.found.append([*self.stack, node])
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def _whole(ctx, chain: list[cst.CSTNode]) -> bool:
    """The read at the end of `chain` is rounded, or passed to a function of this project
    that rounds that parameter."""
    child = chain[-1]
    for parent in reversed(chain[:-1]):
        if (
            isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation))
            or (isinstance(parent, cst.IfExp) and parent.test is not child)
            or (isinstance(parent, cst.Subscript) and parent.value is child)
        ):
            child = parent
            continue
        if isinstance(parent, cst.Attribute) and parent.value is child:
            return parent.attr.value in ROUNDING
        if isinstance(parent, cst.Arg) and parent.value is child:
            child = parent
            continue
        if isinstance(parent, cst.Call) and isinstance(child, cst.Arg):
            name = call_name(parent)
            if name in ROUNDING:
                return True
            if not isinstance(parent.func, cst.Name) or name is None:
                return False
            index = (
                None if child.keyword else [a for a in parent.args if not a.keyword].index(child)
            )
            keyword = child.keyword.value if child.keyword else None
            return rounds_parameter(ctx, name, index, keyword)
        return False
    return False
