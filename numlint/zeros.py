"""Can this value be 0? Which op is this call, and is that a real guard? (shared by rules).

Purely syntactic plus numlint.context's data flow; nothing is imported or executed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from numlint.context import Context, Env, Value
from numlint.semantics import TRANSPARENT_METHODS, activation, number, positional
from numlint.tree import walk

#: Qualified torch functions -> a short op name.
FUNCTIONS: dict[str, str] = {
    "torch.log": "log", "torch.Tensor.log": "log", "torch.special.log": "log",
    "torch.log2": "log2", "torch.Tensor.log2": "log2",
    "torch.log10": "log10", "torch.Tensor.log10": "log10",
    "torch.log1p": "log1p", "torch.special.log1p": "log1p", "torch.Tensor.log1p": "log1p",
    "torch.exp": "exp", "torch.special.exp": "exp", "torch.Tensor.exp": "exp",
    "torch.expm1": "expm1", "torch.special.expm1": "expm1",
    "torch.sqrt": "sqrt", "torch.Tensor.sqrt": "sqrt", "torch.rsqrt": "rsqrt",
    "torch.pow": "pow", "torch.float_power": "pow", "torch.square": "square",
    "torch.sum": "sum", "torch.nansum": "sum", "torch.mean": "mean", "torch.nanmean": "mean",
    "torch.prod": "prod", "torch.cumprod": "cumprod",
    "torch.norm": "norm", "torch.linalg.norm": "norm", "torch.linalg.vector_norm": "norm",
    "torch.std": "std", "torch.var": "var", "torch.count_nonzero": "count",
    "torch.relu": "relu", "torch.nn.functional.relu": "relu", "torch.nn.functional.relu6": "relu",
    "torch.rand": "rand", "torch.rand_like": "rand",
    "torch.clamp": "clamp", "torch.clip": "clamp", "torch.clamp_min": "clamp_min",
    "torch.maximum": "maximum", "torch.fmax": "maximum", "torch.max": "max",
    "torch.where": "where", "torch.abs": "abs", "torch.absolute": "abs",
    "torch.det": "det", "torch.linalg.det": "det",
    "torch.acos": "acos", "torch.arccos": "acos", "torch.asin": "asin", "torch.arcsin": "asin",
    "torch.cosine_similarity": "cosine", "torch.nn.functional.cosine_similarity": "cosine",
    "torch.nn.functional.normalize": "normalize",
    "torch.div": "div", "torch.divide": "div", "torch.true_divide": "div",
    "torch.mul": "mul", "torch.multiply": "mul", "torch.reciprocal": "reciprocal",
    "torch.matmul": "matmul", "torch.mm": "matmul", "torch.bmm": "matmul", "torch.dot": "matmul",
    "torch.inner": "matmul", "torch.einsum": "einsum",
    "torch.ones": "ones", "torch.ones_like": "ones",
    "torch.nn.functional.softplus": "softplus",
    "torch.sigmoid": "sigmoid", "torch.nn.functional.sigmoid": "sigmoid",
    "torch.special.expit": "sigmoid",
    "torch.softmax": "softmax", "torch.nn.functional.softmax": "softmax",
    "torch.special.softmax": "softmax",
}  # fmt: skip

#: Tensor methods -> a short op name.
METHODS: dict[str, str] = {
    "log": "log", "log2": "log2", "log10": "log10", "log1p": "log1p", "exp": "exp",
    "expm1": "expm1", "sqrt": "sqrt", "rsqrt": "rsqrt", "pow": "pow", "float_power": "pow",
    "square": "square", "sum": "sum", "nansum": "sum", "mean": "mean", "nanmean": "mean",
    "prod": "prod", "cumprod": "cumprod", "norm": "norm", "std": "std", "var": "var",
    "count_nonzero": "count", "relu": "relu", "clamp": "clamp", "clip": "clamp",
    "clamp_min": "clamp_min", "maximum": "maximum", "fmax": "maximum", "max": "max",
    "abs": "abs", "absolute": "abs", "det": "det", "acos": "acos", "arccos": "acos",
    "asin": "asin", "arcsin": "asin", "div": "div", "divide": "div", "true_divide": "div",
    "mul": "mul", "multiply": "mul", "reciprocal": "reciprocal", "matmul": "matmul",
    "mm": "matmul", "bmm": "matmul", "dot": "matmul", "add": "add", "where": "where",
    "masked_fill": "masked_fill", "sigmoid": "sigmoid", "softmax": "softmax",
}  # fmt: skip

#: Methods whose name is also common on non-tensors: only trusted on a tensor-looking receiver.
MODULES: dict[str, str] = {
    "torch.nn.ReLU": "relu",
    "torch.nn.ReLU6": "relu",
    "torch.nn.CosineSimilarity": "cosine",
    "torch.nn.Softplus": "softplus",
}

_FOREIGN = ("numpy.", "math.", "scipy.", "jax.", "tensorflow.", "cupy.")

#: Machine epsilon below which `1 - eps` rounds to 1 in float32.
FLOAT32_HALF_ULP_BELOW_ONE = 2.98e-8


@dataclass(frozen=True)
class Op:
    """A recognised tensor operation."""

    name: str
    call: cst.Call
    env: Env
    #: The tensor it acts on: the first positional argument, or the receiver of a method.
    input: cst.BaseExpression | None
    spelling: str  # "function" | "method" | "module"
    qualname: str | None = None

    def arg(self, index: int, keyword: str | None = None) -> cst.BaseExpression | None:
        """Argument `index` after the input (so `dim` is 0 for `x.sum(dim)` and `sum(x, dim)`)."""
        if self.spelling == "function":
            return positional(self.call, index + 1, keyword)
        return positional(self.call, index, keyword)

    def rest(self) -> list[cst.Arg]:
        """Arguments besides the input."""
        if self.spelling == "method":
            return list(self.call.args)
        return [a for a in self.call.args if a.value is not self.input]


def op(ctx: Context, node: cst.BaseExpression, env: Env | None = None) -> Op | None:
    """The tensor operation a call performs, or None (numpy, math, unknown functions)."""
    if not isinstance(node, cst.Call):
        return None
    env = ctx.env if env is None else env
    callee = ctx.callee(node, env)
    if callee.qualname is not None:
        name = FUNCTIONS.get(callee.qualname)
        if name is None:
            return None
        inp = positional(node, 0, "input")
        return Op(name, node, env, inp, "function", callee.qualname)
    if callee.instance_of is not None:
        name = MODULES.get(callee.instance_of)
        if name is None or not node.args:
            return None
        return Op(name, node, env, node.args[0].value, "module", callee.instance_of)
    if callee.method is not None and callee.receiver is not None:
        name = METHODS.get(callee.method)
        if name is None or foreign(ctx, Value(callee.receiver, env)):
            return None
        if isinstance(callee.receiver, cst.Name) and callee.receiver.value == "self":
            return None
        return Op(name, node, env, callee.receiver, "method")
    return None


def foreign(ctx: Context, value: Value) -> bool:
    """Whether a value is visibly a NumPy / math / other non-torch object."""
    for _ in range(8):
        value = ctx.deref(value)
        node = value.node
        if isinstance(node, cst.Call):
            qual = ctx.qualname(node.func, value.env)  # type: ignore[arg-type]
            if qual is not None:
                return qual.startswith(_FOREIGN)
            if isinstance(node.func, cst.Attribute):
                value = Value(node.func.value, value.env, value.mutations)
                continue
        elif isinstance(node, cst.Attribute):
            qual = ctx.qualname(node, value.env)  # type: ignore[arg-type]
            return qual is not None and qual.startswith(_FOREIGN)
        elif isinstance(node, cst.Subscript):
            value = Value(node.value, value.env, value.mutations)
            continue
        return isinstance(node, (cst.Integer, cst.Float))
    return False


def const(ctx: Context, expr: cst.BaseExpression, env: Env | None = None) -> float | None:
    """A numeric constant, with + - * / ** on constants (`1 / 3`, `-1 + 1e-7`, `EPS`)."""
    env = ctx.env if env is None else env
    if isinstance(expr, cst.BinaryOperation):
        left, right = const(ctx, expr.left, env), const(ctx, expr.right, env)
        if left is None or right is None:
            return None
        try:
            if isinstance(expr.operator, cst.Add):
                return left + right
            if isinstance(expr.operator, cst.Subtract):
                return left - right
            if isinstance(expr.operator, cst.Multiply):
                return left * right
            if isinstance(expr.operator, cst.Divide):
                return left / right
            if isinstance(expr.operator, cst.Power):
                return float(left**right)
        except (ZeroDivisionError, OverflowError, TypeError):
            return None
        return None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = const(ctx, expr.expression, env)
        return None if inner is None else -inner
    return number(ctx, expr, env)


def positive_bound(ctx: Context, expr: cst.BaseExpression | None, env: Env) -> bool:
    """A lower bound that keeps a value away from 0: a positive constant or a named eps.

    Unknown names (`eps`, `self.eps`, `torch.finfo(t.dtype).tiny`) count as positive; only a
    constant that is 0 or negative does not.
    """
    if expr is None:
        return False
    value = const(ctx, expr, env)
    if value is not None:
        return value > 0
    node = ctx.deref(Value(expr, env)).node
    if isinstance(node, cst.Call):
        o = op(ctx, node, env)
        if o is not None and o.name in ("rand", "relu"):
            return False
    return not isinstance(node, (cst.Integer, cst.Float))


def is_zero(ctx: Context, expr: cst.BaseExpression, env: Env) -> bool:
    return const(ctx, expr, env) == 0.0


def clamp_bounds(o: Op) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    """(min, max) of a clamp / clip / clamp_min call."""
    if o.name == "clamp_min":
        return o.arg(0, "min"), None
    return o.arg(0, "min"), o.arg(1, "max")


def names(node: cst.CSTNode) -> set[str]:
    """Dotted names used in an expression (`x`, `self.scale`), without call names."""
    found: set[str] = set()

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            if isinstance(n.value, cst.Name) and n.value.value == "self":
                found.add(f"self.{n.attr.value}")
                return False
            walk(n.value, self)
            return False

        def visit_Call(self, n: cst.Call) -> bool:
            if isinstance(n.func, cst.Attribute):
                walk(n.func.value, self)
            for a in n.args:
                walk(a.value, self)
            return False

    walk(node, _Collect())
    return found - {"torch", "F", "nn", "th", "self"}


def same_code(ctx: Context, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return ctx.code(a).strip() == ctx.code(b).strip()


def same_value(ctx: Context, a: Value, b: Value) -> bool:
    """Two expressions that denote the same tensor (same text, or the same assignment)."""
    if same_code(ctx, a.node, b.node) and a.env is b.env:
        return True
    da, db = ctx.deref(Value(a.node, a.env)), ctx.deref(Value(b.node, b.env))
    if da.node is db.node:
        return True
    return same_code(ctx, da.node, db.node) and same_code(ctx, a.node, b.node)


# ---- guards -------------------------------------------------------------------------------

_GUARD_METHODS = frozenset({"clamp_", "clamp_min_", "clip_", "add_", "masked_fill_"})


def guarded_by_mutation(ctx: Context, value: Value) -> bool:
    """An in-place edit since the assignment that keeps the value away from 0.

    `p[p < eps] = eps`, `p[p == 0] = 1`, `p += eps`, `p.clamp_(min=eps)`, `p.add_(eps)`,
    `p.masked_fill_(p == 0, 1)`.
    """
    for stmt in value.mutations:
        if isinstance(stmt, cst.Assign) and positive_bound(ctx, stmt.value, value.env):
            return True
        if isinstance(stmt, cst.AugAssign) and isinstance(stmt.operator, cst.AddAssign):
            if positive_bound(ctx, stmt.value, value.env):
                return True
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            call = stmt.value
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            if method not in _GUARD_METHODS:
                continue
            if method == "masked_fill_":
                bound = positional(call, 1, "value")
            elif method == "add_":
                bound = positional(call, 0, "other")
            else:
                bound = positional(call, 0, "min")
            if positive_bound(ctx, bound, value.env):
                return True
    return False


# ---- can a value be exactly 0? ------------------------------------------------------------

_SQUARE = "a square"
_SUM_SQUARES = "a sum of squares"


def square_of(ctx: Context, node: cst.BaseExpression, env: Env) -> cst.BaseExpression | None:
    """`x ** 2`, `x.pow(2)`, `torch.square(x)`, `x * x` -> x."""
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Power) and const(ctx, node.right, env) == 2.0:
            return node.left
        if isinstance(node.operator, cst.Multiply) and same_code(ctx, node.left, node.right):
            return node.left
    o = op(ctx, node, env)
    if o is not None and o.input is not None:
        if o.name == "square":
            return o.input
        if o.name == "pow" and (e := o.arg(0, "exponent")) is not None:
            if const(ctx, e, env) == 2.0:
                return o.input
        if o.name == "mul" and (other := o.arg(0, "other")) is not None:
            if same_code(ctx, o.input, other):
                return o.input  # torch.mul(x, x)
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "pow"
        and ctx.lookup("pow", env) is None
        and "pow" not in ctx.imports
        and len(node.args) == 2
        and const(ctx, node.args[1].value, env) == 2.0
    ):
        return node.args[0].value  # the builtin pow(x, 2)
    return None


def zero_reason(ctx: Context, value: Value, mode: str = "log", depth: int = 0) -> str | None:
    """Why `value` can be exactly 0, or None when it cannot (or nothing is known).

    `mode` is "log" (log-like uses), "sqrt" (adds squares, sums of squares, variances and
    `1 - x**2`), or "one" (can the value be exactly 1: used for `1 - p`).
    """
    if depth > 12:
        return None
    value = ctx.deref(value)
    if guarded_by_mutation(ctx, value):
        return None
    node, env = value.node, value.env

    def sub(expr: cst.BaseExpression, m: str = mode) -> str | None:
        return zero_reason(ctx, Value(expr, env, value.mutations), m, depth + 1)

    if mode == "one":
        return _one_reason(ctx, value, depth)
    if isinstance(node, cst.Subscript):
        return sub(node.value)
    if isinstance(node, cst.Comparison):
        return "a 0/1 mask"
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return sub(node.expression)
    if isinstance(node, cst.BinaryOperation):
        return _binary_reason(ctx, node, env, mode, sub)
    if isinstance(node, cst.Call):
        return _call_reason(ctx, node, env, mode, sub, value)
    return None


def _binary_reason(ctx, node: cst.BinaryOperation, env: Env, mode: str, sub) -> str | None:
    operator = node.operator
    if isinstance(operator, cst.Add):
        left = "0" if is_zero(ctx, node.left, env) else sub(node.left)
        right = "0" if is_zero(ctx, node.right, env) else sub(node.right)
        if left and right:
            return right if left == "0" else left
        return None
    if isinstance(operator, cst.Subtract):
        if const(ctx, node.left, env) == 1.0:
            base = square_of(ctx, node.right, env)
            if mode == "sqrt" and base is not None:
                return None if clamped_inside_one(ctx, Value(base, env)) else "`1 - x**2`"
            if sub(node.right, "one"):
                return f"`1 - p` of {sub(node.right, 'one')}"
        return None
    if isinstance(operator, cst.Multiply):
        if mode == "sqrt" and square_of(ctx, node, env) is not None:
            return _SQUARE
        return sub(node.left) or sub(node.right)
    if isinstance(operator, cst.Divide):
        left = sub(node.left)
        if left:
            return left
        if const(ctx, node.left, env) is None and denominator_reason(ctx, Value(node.right, env)):
            if not positive_value(ctx, Value(node.left, env)):
                return "a normalised ratio"
        return None
    if isinstance(operator, cst.Power):
        exponent = const(ctx, node.right, env)
        if exponent is None or exponent <= 0:
            return None
        if mode == "sqrt" and exponent == 2.0:
            return _SQUARE
        return sub(node.left)
    return None


def _call_reason(ctx, node: cst.Call, env: Env, mode: str, sub, value: Value) -> str | None:
    callee = ctx.callee(node, env)
    if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
        return sub(callee.receiver)
    act = activation(ctx, Value(node, env))
    if act is not None:
        return f"a {act.kind} output"
    o = op(ctx, node, env)
    if o is None:
        return None
    inp = o.input
    if o.name == "relu":
        return "a ReLU output"
    if o.name == "rand":
        return "a `torch.rand` draw"
    if o.name in ("clamp", "clamp_min") and inp is not None:
        low, _high = clamp_bounds(o)
        if low is None:
            return sub(inp)
        if is_zero(ctx, low, env):
            return "a value clamped at 0"
        return None
    if o.name == "maximum" or (o.name == "max" and _binary_max(ctx, o)):
        other = o.arg(0, "other")
        if other is not None and is_zero(ctx, other, env):
            return "a value clamped at 0"
        return None
    if o.name == "where":
        return _where_reason(ctx, o, env, sub)
    if o.name == "masked_fill":
        fill = positional(node, 1, "value")
        if fill is not None and is_zero(ctx, fill, env):
            return "a tensor filled with 0"
        return sub(inp) if inp is not None else None
    if o.name in ("abs", "cumprod") and inp is not None:
        return sub(inp)
    if o.name in ("mul",) and inp is not None:
        other = o.arg(0, "other")
        return sub(inp) or (sub(other) if other is not None else None)
    if o.name == "div" and inp is not None:
        return sub(inp)
    if o.name == "square" and inp is not None:
        return _SQUARE if mode == "sqrt" else sub(inp)
    if o.name == "pow" and inp is not None:
        e = o.arg(0, "exponent")
        exponent = const(ctx, e, env) if e is not None else None
        if exponent is None or exponent <= 0:
            return None
        return _SQUARE if mode == "sqrt" and exponent == 2.0 else sub(inp)
    if o.name == "sqrt" and inp is not None:
        return sub(inp)
    if mode == "sqrt":
        if o.name in ("sum", "mean") and inp is not None:
            if square_of(ctx, ctx.deref(Value(inp, env)).node, env) is not None:
                return _SUM_SQUARES
            inner = sub(inp)
            if inner in (_SQUARE, _SUM_SQUARES):
                return _SUM_SQUARES
        if o.name == "var":
            return "a variance"
    return None


def _binary_max(ctx: Context, o: Op) -> bool:
    """`torch.max(a, b)` elementwise (not a reduction over an integer dim)."""
    other = o.arg(0, "other")
    if other is None or positional(o.call, 2 if o.spelling == "function" else 1) is not None:
        return False
    return not isinstance(other, cst.Integer) and not (
        isinstance(other, cst.UnaryOperation) and isinstance(other.expression, cst.Integer)
    )


def _where_reason(ctx: Context, o: Op, env: Env, sub) -> str | None:
    if o.spelling == "method":
        cond, branches = positional(o.call, 0, "condition"), (o.input, positional(o.call, 1))
    else:
        cond = positional(o.call, 0, "condition")
        branches = (positional(o.call, 1), positional(o.call, 2))
    for taken, branch in zip((True, False), branches, strict=False):
        if branch is None:
            continue
        if cond is not None and sanitises(ctx, cond, branch, taken, env):
            continue
        if is_zero(ctx, branch, env):
            return "a `torch.where` with a 0 branch"
        reason = sub(branch)
        if reason:
            return reason
    return None


_ABOVE = (cst.GreaterThan, cst.GreaterThanEqual, cst.NotEqual)
_BELOW = (cst.LessThan, cst.LessThanEqual, cst.Equal)


def sanitises(
    ctx: Context,
    cond: cst.BaseExpression,
    branch: cst.BaseExpression,
    taken: bool,
    env: Env,
) -> bool:
    """Whether `cond` keeps `branch` away from 0 when the branch is selected.

    `torch.where(x > 0, x, 1)`: the true branch is only used where x > 0.
    """
    if not isinstance(cond, cst.Comparison) or len(cond.comparisons) != 1:
        return False
    target = cond.comparisons[0]
    subject, bound = cond.left, target.comparator
    operator = target.operator
    flipped = False
    if not same_code(ctx, subject, branch):
        if not same_code(ctx, bound, branch):
            return False
        subject, bound, flipped = bound, subject, True
    low = const(ctx, bound, env)
    if low is None or low < 0:
        return False
    above = isinstance(operator, _ABOVE) if not flipped else isinstance(operator, _BELOW[:2])
    if isinstance(operator, cst.GreaterThanEqual) and low == 0 and not flipped:
        above = False
    return above == taken


def _one_reason(ctx: Context, value: Value, depth: int) -> str | None:
    """Why a value can be exactly 1 (so `1 - value` can be 0)."""
    node, env = value.node, value.env
    act = activation(ctx, value, ("softmax", "sigmoid"))
    if act is not None:
        return f"a {act.kind} output"
    if isinstance(node, cst.Comparison):
        return "a 0/1 mask"
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, env)
        if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
            return zero_reason(ctx, Value(callee.receiver, env), "one", depth + 1)
        o = op(ctx, node, env)
        if o is not None and o.name == "cosine":
            return "a cosine similarity"
    if isinstance(node, cst.Subscript):
        return zero_reason(ctx, Value(node.value, env, value.mutations), "one", depth + 1)
    return None


def positive_value(ctx: Context, value: Value, depth: int = 0) -> bool:
    """Known to be > 0 (or, for probabilities, to sum to a positive total): exp, softplus,
    softmax, sigmoid, ones, a positive constant, clamped above 0, `x + eps`, products and
    convex mixtures of those (`(1 - g) * p + g * q`), and their top-k / sorted / gathered /
    reshaped parts."""
    if depth > 8:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env

    def sub(expr: cst.BaseExpression) -> bool:
        return positive_value(ctx, Value(expr, env), depth + 1)

    c = const(ctx, node, env)
    if c is not None:
        return c > 0
    if isinstance(node, cst.Name):
        source = unpacked_from(ctx, node, env)
        return source is not None and positive_value(ctx, source, depth + 1)
    if isinstance(node, cst.Subscript):
        return sub(node.value)
    if isinstance(node, cst.Attribute) and node.attr.value == "values":
        return sub(node.value)  # `x.topk(k).values`
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        if _eps_like(ctx, node.left, env) or _eps_like(ctx, node.right, env):
            return True
        for a, b in ((node.left, node.right), (node.right, node.left)):
            c = const(ctx, a, env)
            if c is not None and c > 0 and _non_negative(ctx, Value(b, env)):
                return True  # `0.99 * torch.sigmoid(x) + 0.005`
        return _convex_mix(ctx, node, env, sub)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return sub(node.left) and sub(node.right)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        left = const(ctx, node.left, env)
        return left is not None and left > 0  # inverse weights `1 / counts`
    if isinstance(node, cst.Call) and ctx.qualname(node.func, env) in _TENSOR_LITERALS:
        data = positional(node, 0, "data")
        if isinstance(data, (cst.List, cst.Tuple)) and data.elements:
            return all((const(ctx, e.value, env) or 0) > 0 for e in data.elements)
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, env)
        if callee.receiver is not None and (
            callee.method in TRANSPARENT_METHODS or callee.method in _SELECTING
        ):
            return sub(callee.receiver)
        if callee.qualname in _SELECTING_FUNCTIONS and (inp := positional(node, 0, "input")):
            return sub(inp)
    o = op(ctx, node, env)
    if o is None:
        return activation(ctx, value) is not None
    if o.name in ("exp", "softplus", "ones", "softmax", "sigmoid"):
        return True
    if o.name in ("sum", "mean") and o.input is not None:
        return sub(o.input)
    if o.name in ("clamp", "clamp_min"):
        low = clamp_bounds(o)[0]
        return low is not None and positive_bound(ctx, low, env)
    return False


#: Methods and functions whose result is a selection of their input's elements.
_SELECTING = frozenset({"topk", "sort", "gather", "index_select", "masked_select", "narrow"})
_SELECTING_FUNCTIONS = frozenset({"torch.topk", "torch.sort", "torch.gather", "torch.narrow"})


_EPS_NAME = re.compile(r"(^|_)(eps|epsilon|tiny)($|_|\d)")


def _eps_like(ctx: Context, expr: cst.BaseExpression, env: Env) -> bool:
    """A positive constant, `torch.finfo(...).eps/tiny`, or a name spelt as an eps."""
    c = const(ctx, expr, env)
    if c is not None:
        return c > 0
    last = expr.attr.value if isinstance(expr, cst.Attribute) else None
    if isinstance(expr, cst.Name):
        last = expr.value
    return last is not None and _EPS_NAME.search(last.lower()) is not None


def _factors(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return [*_factors(node.left), *_factors(node.right)]
    return [node]


def _convex_mix(ctx: Context, node: cst.BinaryOperation, env: Env, sub) -> bool:
    """`(1 - g) * p + g * q` with p, q positive (probabilities): a convex mixture."""
    left, right = _factors(node.left), _factors(node.right)
    for a, b in ((left, right), (right, left)):
        for f in a:
            inner = f
            if (
                isinstance(inner, cst.BinaryOperation)
                and isinstance(inner.operator, cst.Subtract)
                and const(ctx, inner.left, env) == 1.0
            ):
                weight = inner.right
                match = [g for g in b if same_code(ctx, g, weight)]
                if match:
                    rest_a = [g for g in a if g is not f]
                    rest_b = [g for g in b if g is not match[0]]
                    return all(sub(g) for g in (*rest_a, *rest_b))
    return False


_TENSOR_LITERALS = frozenset(
    {"torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.FloatTensor"}
)


def has_tensor_op(ctx: Context, value: Value, depth: int = 0) -> bool:
    """Whether an expression visibly computes with tensors (a torch call or tensor method),
    following variables; used to tell `x ** 0.5` on tensors from plain Python arithmetic."""
    if depth > 4:
        return False
    value = ctx.deref(value)
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> bool:
            nonlocal found
            if op(ctx, n, value.env) is not None or (
                (q := ctx.qualname(n.func, value.env)) is not None and q.startswith("torch.")
            ):
                found = True
            return not found

        def visit_Name(self, n: cst.Name) -> None:
            nonlocal found
            if not found and ctx.deref(Value(n, value.env)).node is not n:
                found = has_tensor_op(ctx, Value(n, value.env), depth + 1)

    walk(value.node, _Find())
    return found


def denominator_reason(ctx: Context, value: Value, depth: int = 0) -> str | None:
    """Why a denominator can be 0: a norm, sum, count, std or variance without a guard."""
    if depth > 10:
        return None
    value = ctx.deref(value)
    if guarded_by_mutation(ctx, value):
        return None
    node, env = value.node, value.env
    if isinstance(node, cst.Subscript):
        return denominator_reason(ctx, Value(node.value, env, value.mutations), depth + 1)
    if isinstance(node, cst.BinaryOperation):
        operator = node.operator
        if isinstance(operator, cst.Multiply):
            return denominator_reason(ctx, Value(node.left, env), depth + 1) or denominator_reason(
                ctx, Value(node.right, env), depth + 1
            )
        if isinstance(operator, cst.Power):
            exponent = const(ctx, node.right, env)
            if exponent is not None and exponent > 0:
                return denominator_reason(ctx, Value(node.left, env), depth + 1)
        return None
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, env)
    if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
        return denominator_reason(ctx, Value(callee.receiver, env, value.mutations), depth + 1)
    o = op(ctx, node, env)
    if o is None or o.input is None and o.name not in ("count",):
        return None
    if o.name == "norm":
        return "a norm"
    if o.name == "std":
        return "a standard deviation"
    if o.name == "var":
        return "a variance"
    if o.name == "count":
        return "a count"
    if o.name == "sum" and o.input is not None:
        if positive_value(ctx, Value(o.input, env)):
            return None
        return "a sum"
    if o.name in ("sqrt", "pow") and o.input is not None:
        if o.name == "pow":
            e = o.arg(0, "exponent")
            if e is None or (const(ctx, e, env) or 0) <= 0:
                return None
        inner = denominator_reason(ctx, Value(o.input, env), depth + 1)
        if inner:
            return inner
        sq = zero_reason(ctx, Value(o.input, env), "sqrt")
        return f"the square root of {sq}" if sq else None
    if o.name in ("clamp", "clamp_min"):
        low = clamp_bounds(o)[0]
        if low is None:
            return denominator_reason(ctx, Value(o.input, env), depth + 1)  # type: ignore[arg-type]
        return "a value clamped at 0" if is_zero(ctx, low, env) else None
    if o.name == "abs":
        return denominator_reason(ctx, Value(o.input, env), depth + 1)  # type: ignore[arg-type]
    return None


# ---- branch selection (the torch.where trap) ----------------------------------------------


@dataclass(frozen=True)
class Selection:
    """A hazardous operation inside a branch of `torch.where` (or multiplied by a mask)."""

    kind: str  # "where" | "mask"
    call: cst.CSTNode  # the where call or the multiplication
    condition: cst.BaseExpression
    taken: bool  # which branch (for "where")
    where_func: str = ""


def _pairs(stack: list[cst.CSTNode]) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """(ancestor, its child on the path) from the innermost outwards."""
    for i in range(len(stack) - 2, -1, -1):
        yield stack[i], stack[i + 1]


def selection(ctx: Context, operand: cst.BaseExpression) -> Selection | None:
    """The `torch.where` / mask multiplication that selects around the current node.

    Only when the condition mentions a name of `operand` (the value that can be invalid):
    `torch.where(x > 0, torch.log(x), 0)`, `torch.log(x) * (x > 0)`.
    """
    wanted = names(operand)
    if not wanted:
        return None
    for parent, child in _pairs(ctx.stack):
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.SimpleStatementLine)):
            return None
        if isinstance(parent, cst.Call):
            o = op(ctx, parent)
            if o is None or o.name != "where":
                continue
            if o.spelling == "function":
                cond = positional(parent, 0, "condition")
                args = [a for a in parent.args if a.keyword is None]
                if cond is None or len(args) < 3 or child is args[0]:
                    continue
                taken = child is args[1]
            else:
                cond = positional(parent, 0, "condition")
                if cond is None or child is not parent.func:
                    continue
                taken = True
            if _tests(ctx, cond, wanted):
                return Selection("where", parent, cond, taken, ctx.code(parent.func))
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Multiply):
            other = parent.right if child is parent.left else parent.left
            mask = _mask_condition(ctx, other)
            if mask is not None and _tests(ctx, mask, wanted):
                return Selection("mask", parent, mask, True)
    return None


def _tests(ctx: Context, cond: cst.BaseExpression, wanted: set[str]) -> bool:
    """Whether a condition compares the operand (a name of it) with a constant bound:
    `x > 0`, `n != 0`, `d2 == 0`, `(x > 0) & m`, `x >= torch.finfo(x.dtype).tiny`."""
    if isinstance(cond, cst.BooleanOperation):
        return _tests(ctx, cond.left, wanted) or _tests(ctx, cond.right, wanted)
    if isinstance(cond, cst.BinaryOperation) and isinstance(cond.operator, (cst.BitAnd, cst.BitOr)):
        return _tests(ctx, cond.left, wanted) or _tests(ctx, cond.right, wanted)
    if isinstance(cond, cst.UnaryOperation):
        return _tests(ctx, cond.expression, wanted)
    if isinstance(cond, cst.Name):
        bound = ctx.deref(ctx.value(cond))
        if bound.node is not cond and isinstance(bound.node, cst.Comparison):
            return _tests(ctx, bound.node, wanted)
        return False
    if not isinstance(cond, cst.Comparison):
        return False
    sides = [cond.left, *(t.comparator for t in cond.comparisons)]
    for a, b in zip(sides, sides[1:], strict=False):
        for subject, bound in ((a, b), (b, a)):
            if wanted & names(subject) and _constant_bound(ctx, bound):
                return True
    return False


def _constant_bound(ctx: Context, expr: cst.BaseExpression) -> bool:
    if const(ctx, expr) is not None:
        return True
    return (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Call)
        and (ctx.qualname(expr.value.func) or "").endswith("finfo")
    )


def _mask_condition(ctx: Context, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`(x > 0)`, `(x > 0).float()`, `(x > 0).to(x.dtype)` -> the comparison."""
    for _ in range(4):
        if isinstance(expr, cst.Comparison):
            return expr
        if isinstance(expr, cst.Call):
            callee = ctx.callee(expr)
            if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
                expr = callee.receiver
                continue
        return None
    return None


def exp_bounded(
    ctx: Context, arg: cst.BaseExpression, env: Env, shifted_only: bool = False
) -> bool:
    """An exp argument bounded above, so exp cannot overflow: `-x.abs()`, `x - x.max()`,
    `x.clamp(max=c)`, `-F.relu(x)`, `-(x ** 2)`, `torch.minimum(x, c)`.

    With `shifted_only`, only `x - max(x)` counts (its largest term is exactly 1, so a sum of
    exponentials can neither overflow nor underflow to 0).
    """
    value = ctx.deref(Value(arg, env))
    node, env = value.node, value.env
    if const(ctx, node, env) is not None:
        return True
    if shifted_only:
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
            return _is_max_of(ctx, ctx.deref(Value(node.right, env)))
        return False
    if _non_positive(ctx, value):
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        right = ctx.deref(Value(node.right, env))
        return _is_max_of(ctx, right)
    o = op(ctx, node, env)
    if o is not None and o.name in ("clamp",):
        return clamp_bounds(o)[1] is not None
    if isinstance(node, cst.Call):
        qual = ctx.callee(node, env).qualname
        if qual in ("torch.minimum", "torch.nn.functional.logsigmoid", "torch.log_softmax"):
            return True
        if qual == "torch.nn.functional.log_softmax":
            return True
    return False


def clamped_inside_one(ctx: Context, value: Value) -> bool:
    """`c.clamp(-1 + eps, 1 - eps)`: both bounds strictly inside (-1, 1) in float32."""
    value = ctx.deref(value)
    o = op(ctx, value.node, value.env)
    if o is None or o.name != "clamp":
        return False
    low, high = clamp_bounds(o)

    def strict(bound: cst.BaseExpression | None, edge: float) -> bool:
        if bound is None:
            return False
        v = const(ctx, bound, value.env)
        return v is None or (abs(edge - v) >= FLOAT32_HALF_ULP_BELOW_ONE and abs(v) < 1)

    return strict(low, -1.0) and strict(high, 1.0)


def _non_positive(ctx: Context, value: Value, depth: int = 0) -> bool:
    """`-(x ** 2)`, `-x.abs()`, `x.abs().neg()`, `-d ** 2 / (2 * s ** 2)`, `-0.5 * r.pow(2)`:
    minus a non-negative value, scaled by non-negative factors (a Gaussian's exponent)."""
    if depth > 6:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _non_negative(ctx, Value(node.expression, env), depth + 1)
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, env)
        if callee.method == "neg" and callee.receiver is not None and not node.args:
            return _non_negative(ctx, Value(callee.receiver, env), depth + 1)
        if callee.qualname in ("torch.neg", "torch.negative") and node.args:
            return _non_negative(ctx, Value(node.args[0].value, env), depth + 1)
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Multiply, cst.Divide)
    ):
        left, right = Value(node.left, env), Value(node.right, env)
        if _non_positive(ctx, left, depth + 1) and _non_negative(ctx, right, depth + 1):
            return True
        if isinstance(node.operator, cst.Multiply):
            return _non_negative(ctx, left, depth + 1) and _non_positive(ctx, right, depth + 1)
        low = const(ctx, node.left, env)
        return low is not None and low <= 0 and _non_negative(ctx, right, depth + 1)
    low = const(ctx, node, env)
    return low is not None and low <= 0


def _non_negative(ctx: Context, value: Value, depth: int = 0) -> bool:
    """A square, absolute value, norm, ReLU, exp or softplus output, a non-negative constant,
    or products, quotients and sums of them."""
    if depth > 6:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env
    c = const(ctx, node, env)
    if c is not None:
        return c >= 0
    if square_of(ctx, node, env) is not None:
        return True
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Power):
            e = const(ctx, node.right, env)
            return e is not None and e % 2 == 0
        if isinstance(node.operator, (cst.Multiply, cst.Divide, cst.Add)):
            return _non_negative(ctx, Value(node.left, env), depth + 1) and _non_negative(
                ctx, Value(node.right, env), depth + 1
            )
        return False
    if isinstance(node, cst.Subscript):
        return _non_negative(ctx, Value(node.value, env), depth + 1)
    o = op(ctx, node, env)
    if o is None or o.input is None:
        return False
    if o.name in ("abs", "relu", "softplus", "norm", "square", "exp", "sqrt", "softmax", "sigmoid"):
        return True
    if o.name in ("sum", "mean", "pow"):
        if o.name == "pow":
            e = o.arg(0, "exponent")
            return e is not None and (const(ctx, e, env) or 1) % 2 == 0
        return _non_negative(ctx, Value(o.input, env), depth + 1)
    return False


def _is_max_of(ctx: Context, value: Value, depth: int = 0) -> bool:
    """A maximum (`x.max(d).values`, `torch.amax`, `torch.maximum`, a `*max*` helper's result)
    through masking, detaching and reshaping: subtracting it is the stabilisation idiom."""
    if depth > 6:
        return False
    node, env = value.node, value.env
    if isinstance(node, cst.Attribute) and node.attr.value == "values":
        node = node.value
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Name):
        deref = ctx.deref(Value(node, env))
        if deref.node is not node:
            return _is_max_of(ctx, deref, depth + 1)
        return "max" in node.value.lower()
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, env)  # type: ignore[arg-type]
    if callee.receiver is not None and (
        callee.method in TRANSPARENT_METHODS or callee.method in ("masked_fill", "squeeze")
    ):
        return _is_max_of(ctx, ctx.deref(Value(callee.receiver, env)), depth + 1)
    if callee.qualname in ("torch.masked_fill", "torch.squeeze", "torch.unsqueeze"):
        inp = positional(node, 0, "input")
        return inp is not None and _is_max_of(ctx, ctx.deref(Value(inp, env)), depth + 1)
    o = op(ctx, node, env)  # type: ignore[arg-type]
    if o is not None and o.name in ("max", "maximum"):
        return True
    if callee.qualname in ("torch.amax", "torch.logsumexp") or callee.method in (
        "amax",
        "logsumexp",
    ):
        return True
    name = callee.qualname or callee.method
    if name is None and isinstance(node.func, cst.Name):
        name = node.func.value
    return name is not None and "max" in name.rsplit(".", 1)[-1].lower() and o is None


# ---- values without a gradient ------------------------------------------------------------

#: Tensor constructors: their results never require a gradient, whatever their arguments.
CONSTRUCTORS = frozenset(
    {
        "torch.arange", "torch.range", "torch.zeros", "torch.ones", "torch.empty", "torch.full",
        "torch.eye", "torch.tensor", "torch.as_tensor", "torch.linspace", "torch.logspace",
        "torch.meshgrid", "torch.randint", "torch.randn", "torch.rand", "torch.randperm",
        "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like",
        "torch.randint_like", "torch.randn_like", "torch.rand_like", "torch.tril_indices",
        "torch.triu_indices", "torch.LongTensor", "torch.FloatTensor", "torch.Tensor",
    }
)  # fmt: skip
#: Functions that combine tensors without creating a gradient of their own.
_COMBINERS = frozenset({"torch.stack", "torch.cat", "torch.concat", "torch.flatten"})
_PY_NUMBERS = frozenset({"int", "float", "len", "round", "abs", "min", "max", "range"})


#: Constructors whose elements are whole numbers (given whole-number arguments).
_INTEGER_CONSTRUCTORS = frozenset(
    {
        "torch.arange", "torch.range", "torch.zeros", "torch.ones", "torch.eye", "torch.meshgrid",
        "torch.randint", "torch.randperm", "torch.zeros_like", "torch.ones_like",
        "torch.tril_indices", "torch.triu_indices", "torch.LongTensor",
    }
)  # fmt: skip
_INTEGER_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)


def no_gradient(ctx: Context, value: Value, depth: int = 0, integers: bool = False) -> bool:
    """Whether a value is built only from tensor constructors, constants and Python numbers
    (`torch.arange(n).view(1, -1) - torch.arange(n).view(-1, 1)`, `idx ** 2 + idy ** 2`), or
    detached: no gradient can flow through it, so gradient-only hazards do not apply.

    With `integers`, also require whole-number values (integer constructors and arithmetic).
    """
    if depth > 12:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env

    def sub(expr: cst.BaseExpression) -> bool:
        return no_gradient(ctx, Value(expr, env), depth + 1, integers)

    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Float):
        return not integers
    if isinstance(node, cst.UnaryOperation):
        return sub(node.expression)
    if isinstance(node, cst.BinaryOperation):
        if integers and not isinstance(node.operator, _INTEGER_OPS):
            if not (isinstance(node.operator, cst.Power) and isinstance(node.right, cst.Integer)):
                return False
        return sub(node.left) and sub(node.right)
    if isinstance(node, cst.Subscript):
        return sub(node.value)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(sub(e.value) for e in node.elements)
    if isinstance(node, cst.Attribute) and node.attr.value in ("shape", "ndim"):
        return True
    if not isinstance(node, cst.Call):
        return False
    if isinstance(node.func, cst.Name) and node.func.value in _PY_NUMBERS:
        return ctx.lookup(node.func.value, env) is None and (
            not integers or node.func.value != "float"
        )
    callee = ctx.callee(node, env)
    args = [a.value for a in node.args if a.keyword is None]
    if integers:
        if callee.qualname in _INTEGER_CONSTRUCTORS:
            return all(sub(a) for a in args if not isinstance(a, (cst.Attribute, cst.Name)))
        if callee.qualname in CONSTRUCTORS or callee.method in ("mean", "sqrt", "div", "exp"):
            return False
    elif callee.qualname in CONSTRUCTORS:
        return True
    if callee.qualname in _COMBINERS:
        return all(sub(a) for a in args)
    if callee.method in ("detach", "size", "numel", "dim"):
        return True
    if callee.method is not None and callee.receiver is not None:
        if callee.method in _SHAPE_METHODS:
            return sub(callee.receiver)  # arguments are sizes, dims, dtypes or devices
        return sub(callee.receiver) and all(sub(a) for a in args)
    return False


_SHAPE_METHODS = TRANSPARENT_METHODS | {"repeat", "repeat_interleave", "tile", "sign", "abs"}


def gradient_free(ctx: Context, operand: cst.BaseExpression) -> bool:
    """No gradient flows here: inside `torch.no_grad()` (or a function decorated with it), or
    the operand is built only from constructors and constants (see `no_gradient`)."""
    return ctx.in_no_grad() or no_gradient(ctx, ctx.value(operand))


# ---- guards by control flow ---------------------------------------------------------------

_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def guarded_by_condition(ctx: Context, operand: cst.BaseExpression) -> bool:
    """Whether control flow keeps `operand` away from 0 at the current node.

    `if n > 0: y = s / n`, `s / n if n != 0 else 0`, `else:` of `if n == 0:`, an earlier
    `if n == 0: return ...` (or `continue`, `raise`) and an earlier `assert n > 0` in the
    same block. Only tests comparing a name of the operand
    with a constant count.
    """
    wanted = names(operand)
    if not wanted:
        return False
    stack = ctx.stack
    for i in range(len(stack) - 2, -1, -1):
        parent, child = stack[i], stack[i + 1]
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(parent, (cst.If, cst.While)) and child is parent.body:
            if _nonzero_test(ctx, parent.test, wanted, True):
                return True
        elif isinstance(parent, cst.If) and child is parent.orelse:
            if _nonzero_test(ctx, parent.test, wanted, False):
                return True
        elif isinstance(parent, cst.IfExp):
            if child is parent.body and _nonzero_test(ctx, parent.test, wanted, True):
                return True
            if child is parent.orelse and _nonzero_test(ctx, parent.test, wanted, False):
                return True
        elif isinstance(parent, (cst.IndentedBlock, cst.Module)):
            for stmt in parent.body:
                if stmt is child:
                    break
                if (
                    isinstance(stmt, cst.If)
                    and _nonzero_test(ctx, stmt.test, wanted, False)
                    and _exits(stmt.body)
                ):
                    return True
                if isinstance(stmt, cst.SimpleStatementLine) and any(
                    isinstance(s, cst.Assert) and _nonzero_test(ctx, s.test, wanted, True)
                    for s in stmt.body
                ):
                    return True  # `assert n > 0`
    return False


def _exits(block: cst.BaseSuite) -> bool:
    body = block.body
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, _EXITS) for s in last.body)
    return False


def _nonzero_test(ctx: Context, test: cst.BaseExpression, wanted: set[str], taken: bool) -> bool:
    """Whether `test` being `taken` (True or False) implies a name in `wanted` is not 0."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _nonzero_test(ctx, test.expression, wanted, not taken)
    if isinstance(test, cst.BooleanOperation):
        both = isinstance(test.operator, cst.And) == taken  # `a and b` true: both hold
        left = _nonzero_test(ctx, test.left, wanted, taken)
        right = _nonzero_test(ctx, test.right, wanted, taken)
        return (left or right) if both else (left and right)
    if isinstance(test, cst.Name):
        bound = ctx.deref(ctx.value(test)).node
        if bound is not test and isinstance(bound, (cst.Comparison, cst.BooleanOperation)):
            return _nonzero_test(ctx, bound, wanted, taken)  # `ok = n > 0` ... `if ok:`
    if isinstance(test, (cst.Name, cst.Attribute)) and taken:
        return bool(wanted & names(test))  # `if n:`
    if isinstance(test, cst.Call):
        callee = ctx.callee(test)
        inner = positional(test, 0) if callee.qualname in ("torch.all", "torch.any") else None
        if callee.method in ("all", "any", "item") and callee.receiver is not None:
            inner = callee.receiver
        return inner is not None and _nonzero_test(ctx, inner, wanted, taken)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    subject, bound, operator = test.left, target.comparator, target.operator
    if not wanted & names(subject):
        subject, bound = bound, subject
        operator = _FLIP.get(type(operator), operator)
        if not wanted & names(subject):
            return False
    low = const(ctx, bound)
    if low is None and not _constant_bound(ctx, bound):
        return False
    low = 0.0 if low is None else low
    kind = type(operator)
    if taken:
        return (
            (kind is cst.GreaterThan and low >= 0)
            or (kind is cst.GreaterThanEqual and low > 0)
            or (kind is cst.NotEqual and low == 0)
        )
    return (
        (kind is cst.Equal and low == 0)
        or (kind is cst.LessThanEqual and low >= 0)
        or (kind is cst.LessThan and low > 0)
    )


_FLIP = {
    cst.GreaterThan: cst.LessThan(),
    cst.LessThan: cst.GreaterThan(),
    cst.GreaterThanEqual: cst.LessThanEqual(),
    cst.LessThanEqual: cst.GreaterThanEqual(),
}


# ---- tuple unpacking ----------------------------------------------------------------------

_UNPACKING = frozenset({"topk", "sort", "max", "min", "kthvalue", "mode", "median"})


def unpacked_from(ctx: Context, name: cst.Name, env: Env) -> Value | None:
    """For `v, i = torch.topk(x, k)` (also sort / max / min ...): the call `v` came from, as
    `Value(call, env)`, when `name` is the first target. Searches the enclosing function's
    statements before the current one; None when `name` was bound otherwise."""
    binding = ctx.lookup(name.value, env)
    func = ctx.function
    if binding is None or binding.value is not None or func is None:
        return None
    here = set(map(id, ctx.stack))
    found: cst.Call | None = None

    class _Find(cst.CSTVisitor):
        done = False

        def on_visit(self, node: cst.CSTNode) -> bool:
            if self.done or id(node) in here and isinstance(node, cst.BaseSmallStatement):
                self.done = True
                return False
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not func:
                return False
            return super().on_visit(node)

        def visit_Assign(self, node: cst.Assign) -> None:
            nonlocal found
            target = node.targets[0].target
            if (
                isinstance(target, (cst.Tuple, cst.List))
                and target.elements
                and isinstance(target.elements[0].value, cst.Name)
                and target.elements[0].value.value == name.value
            ):
                found = node.value if isinstance(node.value, cst.Call) else None

    walk(func, _Find())
    if found is None:
        return None
    callee = ctx.callee(found, binding.env)
    if callee.method in _UNPACKING or (callee.qualname or "").rsplit(".", 1)[-1] in _UNPACKING:
        return Value(found, binding.env)
    return None
