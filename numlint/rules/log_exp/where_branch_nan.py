"""NUM110 where-branch-nan."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.evidence import grade
from numlint.analysis.gradients import gradient_evident, gradient_flows, gradient_free
from numlint.analysis.guards import Selection, guarded_by_mutation, sanitises, selection
from numlint.analysis.ops import HOLDS, clamp_bounds, const, op, positive_bound, same_code
from numlint.analysis.semantics import positional
from numlint.analysis.zeros import denominator_reason, positive_value, zero_reason
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.log_exp._forms import bare
from numlint.tree import call_name

_ROOTS = ("log", "log2", "log10", "sqrt", "rsqrt")


class WhereBranchNan(Rule):
    """log / sqrt / division inside `torch.where` still gives NaN gradients; sanitise the input.

    What it does:
    Flags `torch.log`, `torch.sqrt`, `torch.rsqrt` (and method forms) and divisions (`a / b`,
    `torch.div`, `torch.divide`, `a.div(b)`) computed
    inside a branch of `torch.where` whose condition tests the same value
    (`torch.where(x > 0, torch.log(x), 0)`, `torch.where(n > 0, v / n, 0)`), and such a log
    or sqrt multiplied by a mask on that value (`torch.log(x) * (x > 0)`). Also `log1p` of
    `-x.exp()` in the branch not taken at x = 0 (a hand-written log1mexp, `where(x > -ln 2,
    log(-expm1(x)), log1p(-exp(x)))`: exp(x) rounds to 1 for |x| < 6e-8, and log1p(-1) =
    -inf). An operation whose singular point lies in the branch taken (the log's 0 at x = 0
    there) masks nothing and is not reported: the condition is read at that point, also when
    it tests the value the operand is computed from (`-x.expm1()`, `1 - x.exp()`).

    Why is this bad?
    Both branches of `torch.where` are computed. The forward pass discards the -inf / NaN of
    the branch not taken, but the backward pass multiplies its infinite local gradient by 0
    and gets NaN, which reaches the input. Sanitise the input before the operation:
    `torch.log(torch.where(x > 0, x, 1))`.

    Fix safety:
    Unsafe: it changes the gradient (NaN becomes 0) though not the forward value. Inside
    `torch.where(c, f(x), y)` the operand becomes `torch.where(c, x, 1)`.

    Known limitations:
    The NaN is in the gradient only: nothing is reported inside `torch.no_grad()` /
    `inference_mode()` (an optimizer's `step`), or for an operand built only from
    constructors and constants, nor where no operand of a division carries one (counts of
    comparisons: `torch.where(n > 0, hits / n, 1.0)`).
    The operation must be written inside the `where` call or the masked product itself;
    a log computed in an earlier statement is not followed. Operands with an eps or clamp are
    not reported.

    Confidence:
    medium for the log1p of `-x.exp()` (x a log-probability near 0, an event nearly certain);
    high where the condition tests the operand against 0 (`x > 0`, `n != 0`: the author
    expects zeros) or the operand is 0 in ordinary use (a count, a mask, a ReLU output);
    otherwise graded like NUM202 / NUM103 (low for a norm: `torch.where(r < eps, 1, v / r)`
    needs an all-zero vector, and for a value tested against another bound). The harm is a
    gradient, so a finding is low unless something visibly differentiates the code: a method
    of an `nn.Module`, a loss (a function, class or file named so), a function that calls
    `backward()` or `autograd.grad`, or a function one of those calls (across the project).

    References:
    - https://pytorch.org/docs/stable/generated/torch.where.html
    - [numlint hazard catalog, row 13](https://github.com/numlint/numlint/blob/main/docs/hazards.md#13)
    """

    CODE = "NUM110"
    NAME = "where-branch-nan"
    MESSAGE = (
        "log / sqrt / division inside a `torch.where` branch: the branch not taken still gives "
        "NaN gradients; sanitise the input first (`torch.log(torch.where(x > 0, x, 1))`)"
    )
    #: a `where`, or a product with a parenthesised mask; and an operation that can fail
    TRIGGERS = ("where", "* (", "*(", ") *", ")*")
    ALSO_REQUIRES = ("log", "sqrt", "/", "div")

    VALID = [
        Valid(
            """
            import torch
            y = torch.where(x > 0, torch.log(torch.where(x > 0, x, 1.0)), 0.0)
            """,
            "the input is sanitised first",
        ),
        Valid(
            """
            import torch
            y = torch.where(x > 0, torch.log(x.clamp(min=1e-6)), 0.0)
            """,
            "a clamped operand",
        ),
        Valid(
            """
            import torch
            y = torch.where(mask, torch.log(p), 0.0)
            """,
            "the condition does not test the operand",
        ),
        Valid(
            """
            import numpy as np
            y = np.where(x > 0, np.log(x), 0)
            """,
            "NumPy",
        ),
        Valid(
            """
            import torch
            y = torch.where(n > 0, v / (n + 1e-8), 0.0)
            """,
            "a guarded denominator",
        ),
        Valid(
            """
            import torch
            y = torch.log(x) * (t > 0)
            """,
            "a mask on another value",
        ),
        Valid(
            """
            import torch
            def smooth_l1(loss, beta):
                return torch.where(loss < beta, 0.5 * loss**2 / beta, loss - 0.5 * beta)
            """,
            "the condition does not test the denominator against 0",
        ),
        Valid(
            """
            import torch
            class Lamb(torch.optim.Optimizer):
                @torch.no_grad()
                def step(self):
                    for p in self.params:
                        w, g = p.norm(), p.grad.norm()
                        p.mul_(torch.where(g > 0, w / g, 1.0))
            """,
            "an optimizer step under no_grad: no gradient flows",
        ),
        Valid(
            """
            import torch
            def f(x):
                with torch.no_grad():
                    return torch.where(x > 0, torch.log(x), 0.0)
            """,
            "inside `with torch.no_grad()`",
        ),
        Valid(
            """
            import torch
            import math
            class Circuit(torch.nn.Module):
                def forward(self, x):
                    return torch.where(x > -math.log(2), (-x.expm1()).log(), x)
            """,
            "the log's 0, at x = 0, is in the branch the condition takes: nothing is masked",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import math
            class Circuit(torch.nn.Module):
                def forward(self, x):
                    return torch.where(x > -math.log(2), (-x.expm1()).log(), (-x.exp()).log1p())
            """,
            line=5,
            column=66,
            confidence="medium",
            note="log1mexp: at x = 0, masked by the condition, exp(x) = 1 and log1p(-1) = -inf",
        ),
        Invalid(
            """
            import torch
            def nll_loss(x):
                return -torch.where(x > 0, torch.log(x), 0.0).mean()
            """,
            line=3,
            column=32,
            fixed="""
            import torch
            def nll_loss(x):
                return -torch.where(x > 0, torch.log(torch.where(x > 0, x, 1)), 0.0).mean()
            """,
        ),
        Invalid(
            """
            import torch
            class Distance(torch.nn.Module):
                def forward(self, d2):
                    return torch.where(d2 == 0, torch.zeros_like(d2), d2.sqrt())
            """,
            line=4,
            column=59,
            fixed="""
            import torch
            class Distance(torch.nn.Module):
                def forward(self, d2):
                    return torch.where(d2 == 0, torch.zeros_like(d2), torch.where(d2 == 0, 1, d2).sqrt())
            """,
            note="a layer's forward: autograd differentiates it",
        ),
        Invalid(
            """
            import torch
            def norm(v, n):
                return torch.where(n > 0, v / n, torch.zeros_like(v))
            def embedding_loss(v, n):
                return norm(v, n).pow(2).sum()
            """,
            line=3,
            column=31,
            fixed="""
            import torch
            def norm(v, n):
                return torch.where(n > 0, v / torch.where(n > 0, n, 1), torch.zeros_like(v))
            def embedding_loss(v, n):
                return norm(v, n).pow(2).sum()
            """,
            note="a helper a loss calls",
        ),
        Invalid(
            """
            import torch
            def entropy_loss(x):
                return (torch.log(x) * (x > 0).float()).sum()
            """,
            line=3,
            column=13,
            note="a mask multiplication: no fix",
        ),
        Invalid(
            """
            import torch
            def norm(v, n):
                return torch.where(n > 0, v / n, torch.zeros_like(v))
            """,
            confidence="low",
            line=3,
            column=31,
            fixed="""
            import torch
            def norm(v, n):
                return torch.where(n > 0, v / torch.where(n > 0, n, 1), torch.zeros_like(v))
            """,
            note="nothing visibly differentiates this helper (no module, loss or caller)",
        ),
    ]
    INVALID += [
        Invalid(
            """
            import torch
            class Ratio(torch.nn.Module):
                def forward(self, x1, x2):
                    return torch.where(x2 == 0, 0, torch.divide(x1, x2))
            """,
            line=4,
            column=40,
            fixed="""
            import torch
            class Ratio(torch.nn.Module):
                def forward(self, x1, x2):
                    return torch.where(x2 == 0, 0, torch.divide(x1, torch.where(x2 == 0, 1, x2)))
            """,
            note="`torch.divide` as `/`: a `divide_no_nan`",
        ),
    ]
    PROBE = Probe(
        hazard="torch.where(x > 0, torch.log(x), torch.zeros_like(x))",
        fix="torch.where(x > 0, torch.log(torch.where(x > 0, x, torch.ones_like(x))), torch.zeros_like(x))",
        inputs={"x": "torch.tensor([0.0, 1.0])"},
    )

    def visit_Call(self, node: cst.Call) -> None:
        o = op(self.ctx, node)
        if o is not None and o.name == "div" and o.input is not None:
            den = o.arg(0, "other")  # `torch.divide(a, b)`, `a.div(b)`: as `a / b`
            if den is not None and const(self.ctx, den) is None:
                self._check(node, den, o.input)
            return
        if o is None or o.name not in (*_ROOTS, "log1p") or o.input is None:
            return
        if o.spelling == "method" and node.args:
            return
        if o.name == "log1p" and not _minus_one_at(self.ctx, o.input):
            return  # log1p is -inf only at -1: `log1p(-x.exp())` reaches it at x = 0
        self._check(node, o.input, log1p=o.name == "log1p")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide) and const(self.ctx, node.right) is None:
            self._check(node, node.right, node.left)

    def _check(
        self,
        node: cst.CSTNode,
        operand: cst.BaseExpression,
        other: cst.BaseExpression | None = None,
        log1p: bool = False,
    ) -> None:
        ctx = self.ctx
        sel = selection(ctx, operand)
        if sel is None or _guarded(ctx, operand):
            return  # the cheap question first: most operands are in no selection
        operands = [e for e in (operand, other) if e is not None]
        if not any(gradient_flows(ctx, e) for e in operands):
            return  # the NaN is in the gradient only: nothing to report where none flows
        if all(gradient_free(ctx, e) for e in operands):
            return  # `where(n > 0, hits / n, 0)` of counts: no operand carries a gradient
        if _selected_at_zero(ctx, sel, operand, -1.0 if log1p else 0.0):
            return  # `where(n < 50, 5000 / n, ...)`: 0 is in the branch taken, not masked
        # `-x.exp()` is -1 where x = 0 (exp(x) rounds to 1 for |x| < 6e-8): a log-probability
        # of a near-certain event
        confidence = "medium" if log1p else _confidence(ctx, node, sel, operand)
        if not gradient_evident(ctx):
            confidence = "low"  # the harm is a NaN gradient: nothing visibly differentiates this
        self.report(node, fix=self._fix(operand, sel), confidence=confidence)

    def _fix(self, operand: cst.BaseExpression, sel: Selection) -> FixSpec | None:
        if sel.kind != "where" or "." not in sel.where_func and sel.where_func != "where":
            return None
        ctx = self.ctx
        if not sanitises(ctx, sel.condition, operand, sel.taken, ctx.env):
            return None  # the condition does not test this operand: wrapping would not guard it
        cond, text = ctx.code(sel.condition), bare(ctx, operand)
        branches = f"{text}, 1" if sel.taken else f"1, {text}"
        code = f"{sel.where_func}({cond}, {branches})"
        return self.fix("unsafe", "Sanitise the input with `torch.where`", (operand, code))


def _confidence(ctx, node: cst.CSTNode, sel: Selection, operand: cst.BaseExpression) -> str:
    """As sure as the evidence that the operand is exactly 0 where the other branch is
    taken: what it is (a count, a ReLU output: high; a norm: low), or a condition that tests
    it against 0 (`where(n != 0, s / n, 0)`: the author expects zeros)."""
    value = ctx.value(operand)
    if isinstance(node, cst.BinaryOperation):
        reason = denominator_reason(ctx, value)
        found = grade(ctx, reason, value) if reason else "low"
    else:
        root = isinstance(node, cst.Call) and call_name(node) in ("sqrt", "rsqrt")
        reason = zero_reason(ctx, value, "sqrt" if root else "log")
        found = grade(ctx, reason, value, log=not root) if reason else "low"
    if _tests_zero(ctx, sel.condition, operand):
        return "high"
    return found


def _tests_zero(ctx, cond: cst.BaseExpression, operand: cst.BaseExpression) -> bool:
    if isinstance(cond, cst.Name):
        cond = ctx.deref(ctx.value(cond)).node
    if not isinstance(cond, cst.Comparison) or len(cond.comparisons) != 1:
        return False
    right = cond.comparisons[0].comparator
    for a, b in ((cond.left, right), (right, cond.left)):
        if same_code(ctx, a, operand) and const(ctx, b) == 0.0:
            return True
    return False


def _selected_at_zero(ctx, sel: Selection, operand: cst.BaseExpression, at: float = 0.0) -> bool:
    """Whether the branch holding the operation is the one selected where the operand is
    `at` (its singular point: 0, or -1 for `log1p`): then nothing non-finite is masked away
    (the value itself is the problem, or none). The operand may be a function of the value
    the condition tests, singular at a known point of it: `-x.expm1()` and `1 - x.exp()` are
    0 at x = 0, `-x.exp()` is -1 there (`where(x > -ln 2, log(-expm1(x)), log1p(-exp(x)))`,
    a log1mexp: the log's 0 is where it is taken, the log1p's is masked)."""
    cond = sel.condition
    if isinstance(cond, cst.Name):
        cond = ctx.deref(ctx.value(cond)).node
    if not isinstance(cond, cst.Comparison) or len(cond.comparisons) != 1:
        return False
    target = cond.comparisons[0]
    holds = HOLDS.get(type(target.operator))
    if holds is None:
        return False
    point = _tested_point(ctx, cond.left, operand, at)
    if point is not None:
        bound = const(ctx, target.comparator)
        truth = None if bound is None else holds(point, bound)
    elif (point := _tested_point(ctx, target.comparator, operand, at)) is not None:
        bound = const(ctx, cond.left)
        truth = None if bound is None else holds(bound, point)
    else:
        return False
    return truth is not None and truth == sel.taken


def _tested_point(
    ctx, tested: cst.BaseExpression, operand: cst.BaseExpression, at: float
) -> float | None:
    """The value of `tested` at which `operand` equals `at`: `at` for the operand itself, 0
    for `-x.expm1()` or `1 - x.exp()` (at 0) and for `-x.exp()` (at -1); None otherwise."""
    if same_code(ctx, tested, operand):
        return at
    node = ctx.deref(ctx.value(operand)).node
    negated = isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
    inner = node.expression if negated else node
    o = op(ctx, inner) if isinstance(inner, cst.Call) else None
    if o is not None and o.input is not None and same_code(ctx, o.input, tested):
        if o.name == "expm1" and at == 0.0:
            return 0.0
        if o.name == "exp" and negated and at == -1.0:
            return 0.0
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        o = op(ctx, node.right) if isinstance(node.right, cst.Call) else None
        if const(ctx, node.left) == 1.0 and o is not None and o.name == "exp" and at == 0.0:
            return 0.0 if o.input is not None and same_code(ctx, o.input, tested) else None
    return None


def _minus_one_at(ctx, operand: cst.BaseExpression) -> bool:
    """Whether `log1p`'s operand reaches -1: `-x.exp()` (at x = 0: a log-probability of an
    event that is certain, or nearly so, rounds to it)."""
    node = ctx.deref(ctx.value(operand)).node
    if not (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)):
        return False
    o = op(ctx, node.expression) if isinstance(node.expression, cst.Call) else None
    return o is not None and o.name == "exp"


def _guarded(ctx, operand: cst.BaseExpression) -> bool:
    """An operand with its own guard: eps added, clamped, sanitised, or positive."""
    value = ctx.deref(ctx.value(operand))
    if guarded_by_mutation(ctx, value) or positive_value(ctx, value):
        return True
    node, env = value.node, value.env
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return positive_bound(ctx, node.right, env) or positive_bound(ctx, node.left, env)
    o = op(ctx, node, env)
    if o is None:
        return False
    if o.name in ("clamp", "clamp_min"):
        return positive_bound(ctx, clamp_bounds(o)[0], env)
    if o.name == "maximum":
        return positive_bound(ctx, o.arg(0, "other"), env)
    if o.name == "where" and o.spelling == "function":
        cond = positional(o.call, 0, "condition")
        args = [a.value for a in o.call.args if a.keyword is None]
        if cond is not None and len(args) == 3:
            return sanitises(ctx, cond, args[1], True, env) or sanitises(
                ctx, cond, args[2], False, env
            )
    return False
