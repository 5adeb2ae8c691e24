"""Helpers for the hand-written stable-function rules (NUM104-NUM108)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from numlint.analysis.context import Context, Value
from numlint.analysis.dtypes import is_half
from numlint.analysis.gradients import gradient_flows, trained
from numlint.analysis.ops import Op, const, op
from numlint.analysis.semantics import needs_parens, same_bindings
from numlint.analysis.zeros import exp_bounded
from numlint.diagnostic import Confidence
from numlint.tree import unparenthesized


@dataclass(frozen=True)
class Found:
    """An operation found behind an expression, and whether a fix may move its inputs."""

    op: Op
    movable: bool


def find(ctx: Context, expr: cst.BaseExpression, names: tuple[str, ...], env=None) -> Found | None:
    """The op (one of `names`) that `expr` is, directly or through a variable."""
    start = Value(expr, ctx.env if env is None else env)
    value = ctx.deref(start)
    if value.mutations:
        return None
    o = op(ctx, value.node, value.env)  # type: ignore[arg-type]
    if o is None or o.name not in names or o.input is None:
        return None
    through = value.node is not expr
    movable = not through or same_bindings(ctx, o.call, value.env)
    return Found(o, movable)


def unbounded_exp(
    ctx: Context, expr: cst.BaseExpression, env=None, shifted_only: bool = False
) -> Found | None:
    """`torch.exp(x)` / `x.exp()` whose argument can be large (not `x - x.max()` etc.).

    With `shifted_only`, only a max-shifted argument counts as safe (see `exp_bounded`).
    """
    found = find(ctx, expr, ("exp",), env)
    if found is None or found.op.input is None:
        return None
    if exp_bounded(ctx, found.op.input, found.op.env, shifted_only):
        return None
    return found


def exp_sums(
    ctx: Context, expr: cst.BaseExpression, env=None, shifted_only: bool = True
) -> list[Found] | None:
    """The exponentials of `torch.exp(x).sum(d)` (also a mean, through a variable), or of a
    product of such sums (`exp(a).sum() * exp(b).sum()`, a circle loss's two terms); None
    for anything else. Exponents bounded above do not count (max-shifted ones only, with
    `shifted_only`; numlint.analysis.zeros.exp_bounded)."""
    env = ctx.env if env is None else env
    value = ctx.deref(Value(expr, env))
    node = unparenthesized(value.node)  # type: ignore[arg-type]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        left = exp_sums(ctx, node.left, value.env, shifted_only)
        right = exp_sums(ctx, node.right, value.env, shifted_only) if left is not None else None
        return left + right if left is not None and right is not None else None
    red = find(ctx, expr, ("sum", "mean"), env)
    if red is None or red.op.input is None:
        return None
    e = unbounded_exp(ctx, red.op.input, red.op.env, shifted_only=shifted_only)
    return [e] if e is not None else None


def overflow_confidence(ctx: Context, exp: Found, learned: bool = False) -> Confidence:
    """How likely `exp(x)` overflows into a NaN: in float16 (from x = 11.1) `high`; with
    `learned` (a form whose overflow is inf/inf or an infinite gradient: a softmax, a
    softplus), in code that trains (a module's forward, a loss, or a helper only those call)
    with a gradient into x `medium`: learned scores are unbounded and nothing keeps them
    below float32's 88.7; elsewhere `low` (values of unknown origin)."""
    arg = exp.op.input
    if arg is None:
        return "low"
    if is_half(ctx, Value(arg, exp.op.env)):
        return "high"
    return "medium" if learned and trained(ctx) and gradient_flows(ctx, arg) else "low"


def is_one(ctx: Context, expr: cst.BaseExpression) -> bool:
    return const(ctx, expr) == 1.0


def negate(ctx: Context, expr: cst.BaseExpression) -> str:
    """Source of `-expr`, simplifying `-(-x)` to `x`."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return bare(ctx, expr.expression)
    text = bare(ctx, expr)
    return f"-({text})" if needs_parens(unparenthesized(expr)) else f"-{text}"


def bare(ctx: Context, expr: cst.BaseExpression) -> str:
    """Source of an expression without its outer parentheses."""
    return ctx.code(unparenthesized(expr))


def wrap(node: cst.CSTNode, code: str) -> str:
    """Replacement text for `node`: its parentheses lie outside its range and stay."""
    return code
