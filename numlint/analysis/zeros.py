"""Can this value be exactly 0 (or 1), is it positive, is an exponent bounded above: the
reasons the "can be zero" rules report, following numlint.analysis.context's data flow.
"""

from __future__ import annotations

import math
import re

import libcst as cst

from numlint.analysis.context import Binding, Context, Env, Value
from numlint.analysis.gradients import constant_table, objective
from numlint.analysis.guards import (
    floored_by_mutation,
    guarded_by_mutation,
    sanitises,
    threshold_name,
)
from numlint.analysis.ops import (
    FLOAT32_HALF_ULP_BELOW_ONE,
    HOLDS,
    TENSOR_LITERALS,
    Op,
    clamp_bounds,
    const,
    has_tensor_op,
    is_zero,
    magnitude_of,
    names,
    op,
    plus_one,
    positive_bound,
    same_code,
    same_value,
    unpacked_from,
    unpacked_size,
    unpacking_call,
    unscaled,
)
from numlint.analysis.semantics import activation, is_one, keyword, positional, strip
from numlint.analysis.settings import settings_only
from numlint.analysis.summaries import (
    Origin,
    bounded_by_callers,
    origin_of,
    positive_from_callers,
    segment_reduced,
)
from numlint.analysis.tables import (
    COUNT_FUNCTIONS,
    JOINS,
    LOG_PROBABILITIES,
    SUM_REDUCTIONS,
    TRANSPARENT_FUNCTIONS,
    TRANSPARENT_METHODS,
)
from numlint.tree import call_name, descendants

_SQUARE = "a square"
_ABS = "an absolute value"


_SUM_SQUARES = "a sum of squares"
#: softplus(x) is about exp(x) for x << 0: it rounds to 0 where a sigmoid does.
SOFTPLUS = "a softplus output (0 for inputs below -104 in float32, -17.3 in float16)"
EXP_LOG_PROB = "the exp of a log-probability (0 once it is below -103 in float32, -17 in float16)"
MASKED_SUM = "a sum over the entries a mask keeps"
#: Reasons whose zero is an underflow that training can drive a learned value into.
UNDERFLOWS = frozenset({SOFTPLUS, EXP_LOG_PROB})


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
    `1 - x**2`), "sum" (what a sum is taken of: as "log", but a selection by a named
    threshold may be empty), or "one" (can the value be exactly 1: used for `1 - p`).
    """
    if depth > 12:
        return None
    # a name may hold another value from the other arm of an `if`
    return ctx.on_any_arm(value, lambda v: _zero_reason(ctx, v, mode, depth))


def _zero_reason(ctx: Context, value: Value, mode: str, depth: int) -> str | None:
    value = ctx.deref(value)
    if guarded_by_mutation(ctx, value):
        return None
    if mode != "one" and floored_by_mutation(ctx, value):
        return "a value clamped at 0"  # `d.normal_(); d.clamp_(0, None)`: all 0 if all were < 0
    node, env = value.node, value.env

    def sub(expr: cst.BaseExpression, m: str = mode) -> str | None:
        return zero_reason(ctx, Value(expr, env, value.mutations), m, depth + 1)

    if mode == "one":
        return _one_reason(ctx, value, depth)
    c = const(ctx, node, env)
    if c is not None:
        return None  # a nonzero constant (`math.exp(-2)`); a literal 0 is the callers' test
    if isinstance(node, cst.Subscript):
        # a named threshold for the entries of a root or a log, not of a sum ("sum"): a
        # selection by `s > thr` may be empty
        kept = _kept_by_own_test(ctx, node, env, named=mode != "sum")
        if indexed_by_nonzero(ctx, node, env) or kept:
            return None  # `p[p.nonzero(as_tuple=True)]`, `p[p > 0]`: only the nonzero entries
        if mode != "one" and floored_by_mutation(
            ctx, ctx.deref(Value(node.value, env)), part=ctx.code(node)
        ):
            return "a value clamped at 0"  # `d[:, k].normal_(); d[:, k].clamp_(0, None)`
        return sub(node.value)
    if isinstance(node, cst.Comparison):
        return None if always_true(ctx, node, env) else "a 0/1 mask"
    if isinstance(node, cst.Attribute) and node.attr.value == "values":
        return sub(node.value)  # `d.min(dim=1).values`, `x.topk(k).values`
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return sub(node.expression)
    if isinstance(node, cst.BinaryOperation):
        return _binary_reason(ctx, node, env, mode, sub)
    if isinstance(node, cst.IfExp):  # either branch may be the value
        return sub(node.body) or sub(node.orelse)
    if isinstance(node, cst.Call):
        return _call_reason(ctx, node, env, mode, sub, value, depth)
    if isinstance(node, cst.Name):
        if mode == "log" and loss_target(ctx, node):
            return LOSS_TARGET
        if mode == "log" and loss_input_like_target(ctx, node):
            return LOSS_INPUT
        return floored_elsewhere(ctx, node, mode)  # a parameter its callers pass a ReLU output
    return None


#: The target of a loss, logged: one-hot labels, sparse priors and empty pixels are 0.
LOSS_TARGET = "the target a loss is given (a one-hot label or a sparse distribution)"


def loss_target(ctx: Context, name: cst.Name) -> bool:
    """`name` is the target of the loss being visited: the second parameter of the `forward`
    of a loss module (torch's `forward(input, target)` convention), without a default and
    never reassigned."""
    func = ctx.function
    if func is None or func.name.value != "forward" or ctx.class_scope is None:
        return False
    param = ctx.parameter(name.value)
    if param is None or param.default is not None:
        return False
    binding = ctx.lookup(name.value)
    if binding is None or binding.value is not None or binding.mutations:
        return False
    params = [p.name.value for p in func.params.params if p.name.value not in ("self", "cls")]
    return len(params) >= 2 and params[1] == name.value and objective(ctx)


LOSS_INPUT = (
    "the input of a loss that takes the log of its target too (the same kind of quantity: a "
    "magnitude with empty bins, a distribution)"
)


def loss_input_like_target(ctx: Context, name: cst.Name) -> bool:
    """`name` is the input of the loss being visited (the first parameter of a loss module's
    `forward`, as `loss_target` reads the second), and the function also takes the log of its
    target: it treats both as the same kind of quantity (`torch.log(x_mag)`, `torch.log(y_mag)`
    of two magnitudes), which holds exact zeros where the target's does."""
    func = ctx.function
    if func is None or func.name.value != "forward" or ctx.class_scope is None:
        return False
    params = [p.name.value for p in func.params.params if p.name.value not in ("self", "cls")]
    if len(params) < 2 or params[0] != name.value:
        return False
    param = ctx.parameter(name.value)
    binding = ctx.lookup(name.value)
    if param is None or param.default is not None or binding is None or binding.value is not None:
        return False
    target = cst.Name(params[1])
    if not loss_target(ctx, target):
        return False
    for node in descendants(func.body):
        if isinstance(node, cst.Call):
            o = op(ctx, node)
            if o is not None and o.name in ("log", "log2", "log10") and o.input is not None:
                if isinstance(o.input, cst.Name) and o.input.value == params[1]:
                    return True
    return False


def always_true(ctx: Context, test: cst.Comparison, env: Env) -> bool:
    """A comparison of a probability (a softmax or sigmoid output, in [0, 1]) with a constant
    outside that range that holds everywhere: `p != 250`, `p < 2`, `p >= -1`: its mask
    keeps every entry, and a count of it is never 0."""
    if len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    operator = type(target.operator)
    for side, other, flipped in ((test.left, target.comparator, False),
                                 (target.comparator, test.left, True)):  # fmt: skip
        c = const(ctx, other, env)
        if c is None or activation(ctx, Value(side, env)) is None:
            continue
        above, below = c > 1, c < 0  # the constant lies above or below [0, 1]
        if flipped:
            above, below = below, above  # `2 > p` reads as `p < 2`
        if operator is cst.NotEqual and (above or below):
            return True
        if operator in (cst.LessThan, cst.LessThanEqual) and above:
            return True
        if operator in (cst.GreaterThan, cst.GreaterThanEqual) and below:
            return True
    return False


#: Kinds of numlint.analysis.summaries for a value that reaches exactly 0 from above.
_FLOORED = {"relu": "a ReLU output", "floored": "a value clamped at 0", "softplus": SOFTPLUS}


def floored_elsewhere(ctx: Context, node: cst.BaseExpression, mode: str = "log") -> str | None:
    """A ReLU output, a value clamped at 0 or a softplus output that another function
    makes: what a caller passes for a parameter (`nll(mu, F.relu(v), y)`), what a project
    function, method or model returns (`torch.log(self.scale(x))` of a `forward` ending in
    `nn.ReLU()`, `mu, sigma = model(x)` of one returning `F.softplus(h)`: under a log, as a
    softplus made here is, `mode` "log")."""
    kinds = tuple(k for k in _FLOORED if mode == "log" or k != "softplus")
    found = origin_of(ctx, node, kinds)
    return _FLOORED[found.kind] if found is not None else None


def made_elsewhere(ctx: Context, value: Value) -> Origin | None:
    """Where another function makes the zero of `value` (a ReLU, a clamp at 0, a
    log_softmax whose exp is a probability), for a finding to name it; None when `value`
    gets it in the function itself."""
    v = ctx.deref(value)
    for _ in range(8):  # through `-x`, `x[i]`, `1 - x`, `exp(x)`, `x.gather(...)`
        node = v.node
        if isinstance(node, cst.UnaryOperation):
            inner: cst.BaseExpression = node.expression
        elif isinstance(node, cst.Subscript):
            inner = node.value
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
            inner = node.right
        elif isinstance(node, cst.Call) and (o := op(ctx, node, v.env)) and o.name == "exp":
            if o.input is None:
                break
            inner = o.input
        elif isinstance(node, cst.Call) and (
            (c := ctx.callee(node, v.env)).method in TRANSPARENT_METHODS and c.receiver
        ):
            inner = c.receiver
        else:
            break
        v = ctx.deref(Value(inner, v.env))
    node = v.node
    if isinstance(node, cst.Name) or (isinstance(node, cst.Call) and user_call(ctx, node, v.env)):
        return origin_of(ctx, node, (*_FLOORED, "log_softmax"))
    return None


def indexed_by_nonzero(ctx: Context, node: cst.Subscript, env: Env) -> bool:
    """`x[x.nonzero(as_tuple=True)]`, `x[torch.nonzero(x).split(1, dim=1)]`,
    `x[torch.where(x)]`: the entries picked are the nonzero ones of `x` itself."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    index = ctx.deref(Value(node.slice[0].slice.value, env)).node
    for _ in range(4):  # `.split(1, dim=1)`, `.t()`, `.unbind(1)`
        if not isinstance(index, cst.Call):
            return False
        callee = ctx.callee(index, env)
        if callee.method == "nonzero" and callee.receiver is not None:
            return _nonzero_of(ctx, callee.receiver, node.value, env)
        if callee.qualname in ("torch.nonzero", "torch.where") and len(index.args) == 1:
            return _nonzero_of(ctx, index.args[0].value, node.value, env)
        if callee.receiver is None or callee.method not in _INDEX_RESHAPES:
            return False
        index = callee.receiver
    return False


#: Reshapes of an index tensor that keep which entries it picks.
_INDEX_RESHAPES = frozenset(
    {"split", "t", "unbind", "chunk", "squeeze", "flatten", "view", "reshape"}
)


def _nonzero_of(
    ctx: Context, tested: cst.BaseExpression, tensor: cst.BaseExpression, env: Env
) -> bool:
    """`x` itself, `(x != 0)` or `(x > 0)` (through a name): what `.nonzero()` of it picks
    are the nonzero entries of `x`."""
    if same_code(ctx, tested, tensor):
        return True
    found = _self_comparison(ctx, tested, tensor, env)
    return found is not None and found[0] in (cst.NotEqual, cst.GreaterThan) and found[1] == 0


def _self_comparison(
    ctx: Context,
    tested: cst.BaseExpression,
    tensor: cst.BaseExpression,
    env: Env,
    named: bool = False,
) -> tuple[type, float] | None:
    """For `tested` a comparison of `tensor` itself with a constant (`p > 1e-30`, also
    through a name bound to it): the operator's type and the constant."""
    test = ctx.deref(Value(tested, env)).node
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    bound = const(ctx, target.comparator, env)
    if named and bound is None and threshold_name(target.comparator):
        if isinstance(target.operator, cst.GreaterThan):
            bound = 0.0  # `d > min_distance`: a named threshold, taken as >= 0
    if bound is None:
        return None
    if not same_code(ctx, test.left, tensor):
        # `s[s.pow(2) > 0]`, `s[s.abs() > 0]`: a magnitude above 0 says only `s != 0`
        magnitude = magnitude_of(ctx, test.left, env)
        if magnitude is None or not same_code(ctx, magnitude, tensor):
            return None
        if not (isinstance(target.operator, cst.GreaterThan) and bound >= 0):
            return None
        return cst.NotEqual, 0.0
    return type(target.operator), bound


def _keeps_one_per_row(ctx: Context, cond: Value) -> bool:
    """`~mask` where `mask = torch.where(mask.any(d, keepdim=True), mask, True)` (or `mask |
    ~mask.any(d, keepdim=True)`): a row with nothing kept is kept whole, so filling `~mask`
    never empties a row."""
    node = cond.node
    if _position_kept(ctx, cond):
        return True
    if not (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert)):
        return False
    kept = ctx.deref(Value(node.expression, cond.env))
    expr = kept.node
    if isinstance(expr, cst.Call) and ctx.qualname(expr.func, kept.env) == "torch.where":
        test, _keep, other = (positional(expr, i) for i in range(3))
        return (
            test is not None
            and other is not None
            and (_is_true(other) or const(ctx, other, kept.env) == 1.0)
            and _any_of_row(ctx, Value(test, kept.env))
        )
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        for side in (expr.left, expr.right):
            if isinstance(side, cst.UnaryOperation) and isinstance(side.operator, cst.BitInvert):
                if _any_of_row(ctx, Value(side.expression, kept.env)):
                    return True
    return False


def _position_kept(ctx: Context, cond: Value) -> bool:
    """A removal mask with a position of every row cleared (`remove[..., -k:] = 0`, `remove[...,
    0] = False`), also once scattered back to the unsorted order (`remove.scatter(-1, idx,
    remove)`): the top-p / top-k idiom, which always keeps a token."""
    found = ctx.deref(cond)
    node = found.node
    if isinstance(node, cst.Call) and call_name(node) in ("scatter", "scatter_"):
        func = node.func
        if isinstance(func, cst.Attribute):
            return _position_kept(ctx, Value(func.value, found.env))
        return False
    if not isinstance(cond.node, cst.Name):
        return False
    clear = re.compile(rf"^\s*{re.escape(cond.node.value)}\[([\w\s.,:+\-]*)\]\s*=\s*(0|False)\s*$")
    for stmt in found.mutations:
        hit = clear.match(ctx.code(stmt).strip())
        if hit is not None and (":" in hit.group(1) or "..." in hit.group(1)):
            return True
    return False


def _any_of_row(ctx: Context, test: Value) -> bool:
    """`mask.any(dim=d, keepdim=True)` / `torch.any(mask, d, keepdim=True)` on some arm (an
    arm may combine it across shards: `dist_sum(any_mask.float()).bool()`)."""
    return ctx.on_any_arm(test, lambda v: _one_any_of_row(ctx, v) or None) is not None


def _one_any_of_row(ctx: Context, test: Value) -> bool:
    node = ctx.deref(test).node
    if isinstance(node, cst.Call) and call_name(node) == "unsqueeze":
        return isinstance(node.func, cst.Attribute) and _any_call(node.func.value)
    return _any_call(node) and any(
        a.keyword is not None and a.keyword.value == "keepdim" and _is_true(a.value)
        for a in node.args  # type: ignore[attr-defined]
    )


def _any_call(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and call_name(node) == "any" and bool(node.args)


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _binary_reason(ctx, node: cst.BinaryOperation, env: Env, mode: str, sub) -> str | None:
    operator = node.operator
    if isinstance(operator, cst.Add):
        negated = _negated_plus_one(ctx, node, env)
        if negated is not None:  # `-p + 1.`: `1 - p`
            return f"`1 - p` of {sub(negated, 'one')}" if sub(negated, "one") else None
        if _blend_with_constant(ctx, node, env):
            return None  # `u * (1 - c) + c`: at least c
        picked = _complementary_masks(ctx, node, env)
        if picked is not None:  # `a * (x <= y).float() + b * (x > y).float()`: a or b
            return next((r for r in map(sub, picked) if r), None)
        parts = _mixed_parts(ctx, node, env)
        if parts is not None:  # `q * pdf_1 + (1 - q) * pdf_0`: 0 only where a pdf is
            return next((r for r in map(sub, parts) if r), None)  # (not where q is)
        if _lifts_zeros(ctx, node.right, node.left, env) or _lifts_zeros(
            ctx, node.left, node.right, env
        ):
            return None
        left = "0" if is_zero(ctx, node.left, env) else sub(node.left)
        right = "0" if is_zero(ctx, node.right, env) else sub(node.right)
        if left and right:
            return right if left == "0" else left
        return None
    if isinstance(operator, cst.Subtract):
        if const(ctx, node.left, env) == 1.0:
            base = square_of(ctx, node.right, env)
            if base is None and mode == "sqrt" and isinstance(node.right, cst.Name):
                square = ctx.deref(Value(node.right, env))  # `c2 = c ** 2; 1 - c2`
                base = square_of(ctx, square.node, square.env)  # type: ignore[arg-type]
                env = square.env if base is not None else env
            if mode == "sqrt" and base is not None:
                if clamped_inside_one(ctx, Value(base, env)) or _one_excluded(ctx, base):
                    return None
                return "`1 - x**2`"
            if sub(node.right, "one"):
                return f"`1 - p` of {sub(node.right, 'one')}"
        return None
    if isinstance(operator, cst.Multiply):
        base = square_of(ctx, node, env) if mode == "sqrt" else None
        if base is not None:
            return _square(ctx, base, env)
        if mode == "log" and _hand_relu(ctx, node, env):
            # `x * (x > 0)`: x where positive, else exactly 0 (a product, not an indicator;
            # its backward multiplies, so a root keeps reading it as a mask's product)
            return "a ReLU output"
        return sub(node.left) or sub(node.right)
    if isinstance(operator, cst.Divide):
        left = sub(node.left)
        if left:
            return left
        if const(ctx, node.left, env) is None and denominator_reason(ctx, Value(node.right, env)):
            if not positive_value(ctx, Value(node.left, env)):
                return "a normalised ratio"
        return None
    if isinstance(operator, cst.MatrixMultiply) and mode == "sqrt":
        if _with_own_transpose(ctx, node, env):
            return _SUM_SQUARES  # `v @ v.T`: a vector's squared length
        return _weighted_squares(sub(node.left), sub(node.right))  # `bands @ power**2`
    if isinstance(operator, cst.Power):
        exponent = const(ctx, node.right, env)
        if exponent is None or exponent <= 0:
            return None
        if mode == "sqrt" and exponent == 2.0:
            return _square(ctx, node.left, env)  # not `+ self.eps ** 2`
        return sub(node.left)
    return None


MEAN_SQUARED_ERROR = "a mean squared error"
_MSE_FUNCTIONS = frozenset({"torch.nn.functional.mse_loss"})
_MSE_MODULES = frozenset({"torch.nn.MSELoss", "torch.nn.modules.loss.MSELoss"})


def squared_error(ctx: Context, node: cst.Call, env: Env) -> bool:
    """`F.mse_loss(a, b)`, `nn.MSELoss()(a, b)`, `self.criterion(a, b)` with an
    `nn.MSELoss` criterion: a mean (or sum, or per entry) of squared differences."""
    callee = ctx.callee(node, env)
    return callee.qualname in _MSE_FUNCTIONS or callee.instance_of in _MSE_MODULES


#: Inner products of their two arguments (not matrix products: `x @ x` is no square).
_INNER = frozenset({"torch.dot", "torch.inner", "torch.vdot", "torch.linalg.vecdot"})


def self_product(ctx: Context, node: cst.CSTNode, env: Env) -> bool:
    """A tensor's inner product with itself, a sum of squares: `torch.matmul(v, v.mT)`,
    `torch.dot(v, v)`, `v.dot(v)`, `torch.inner(v, v)`, `torch.linalg.vecdot(x, x)`,
    `torch.einsum("bi,bi->b", x, x)` (the same subscripts, some of them summed)."""
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, env)
    args = [a.value for a in node.args if a.keyword is None and not a.star]
    if callee.qualname == "torch.einsum" and len(args) == 3:
        return _self_contraction(ctx, args[0], args[1], args[2], env)
    if callee.qualname in _INNER and len(args) == 2:
        return same_value(ctx, Value(args[0], env), Value(args[1], env))
    if callee.method in ("dot", "inner", "vdot") and callee.receiver is not None and args:
        return same_value(ctx, Value(callee.receiver, env), Value(args[0], env))
    o = op(ctx, node, env)
    if o is None or o.name != "matmul" or o.input is None:
        return False
    other = o.arg(0, "other") or o.arg(0, "mat2")
    return other is not None and (
        _transpose_of(ctx, o.input, other, env) or _transpose_of(ctx, other, o.input, env)
    )


def _self_contraction(
    ctx: Context, equation: cst.BaseExpression, a: cst.BaseExpression, b: cst.BaseExpression,
    env: Env,
) -> bool:  # fmt: skip
    """`einsum("bi,bi->b", x, x)`: one tensor twice, with the same subscripts, and an index
    summed (left out of the output, or the implicit output of `"bi,bi"`)."""
    if not isinstance(equation, cst.SimpleString):
        return False
    text = str(equation.evaluated_value).replace(" ", "")
    inputs, _, output = text.partition("->")
    parts = inputs.split(",")
    if len(parts) != 2 or parts[0] != parts[1] or not parts[0]:
        return False
    summed = set(parts[0]) - set(output) - {"."} if "->" in text else set(parts[0]) - {"."}
    return bool(summed) and same_value(ctx, Value(a, env), Value(b, env))


#: Sums over segments (a graph's nodes per batch entry, edges per node).
_SEGMENT_SUMS = frozenset(
    {"torch_scatter.scatter_add", "torch_scatter.scatter_sum", "torch_scatter.scatter_mean",
     "torch_scatter.scatter", "torch_geometric.utils.scatter"}
)  # fmt: skip


def segment_sum_input(ctx: Context, node: cst.Call, env: Env) -> cst.BaseExpression | None:
    """What a sum or mean over segments adds up (`scatter(x * x, batch, reduce="add")`,
    `scatter_mean(src, index)`, `zeros.index_add(0, index, src)`), or None."""
    callee = ctx.callee(node, env)
    if callee.qualname in _SEGMENT_SUMS:
        reduce = keyword(node, "reduce")
        if reduce is not None and not (
            isinstance(reduce, cst.SimpleString) and reduce.evaluated_value in SUM_REDUCTIONS
        ):
            return None
        return positional(node, 0, "src")
    if callee.method in ("scatter_add", "scatter_add_", "index_add", "index_add_"):
        return positional(node, 2, "src" if callee.method.startswith("scatter") else "source")
    if callee.qualname == "torch.scatter_reduce" or callee.method in (
        "scatter_reduce",
        "scatter_reduce_",
    ):
        at = 1 if callee.qualname == "torch.scatter_reduce" else 0  # after `input`
        reduce = positional(node, at + 3, "reduce")
        if isinstance(reduce, cst.SimpleString) and reduce.evaluated_value in ("sum", "mean"):
            return positional(node, at + 2, "src")  # `out.scatter_reduce(0, idx, src, "sum")`
    outside = (callee.qualname or "").split(".")[0] in ("torch", "numpy", "math", "builtins")
    if callee.method is None and callee.receiver is None and not outside:
        helper = segment_reduced(ctx, node)
        if helper is not None:  # a project helper: `scatter(e, dst, dim=0, reduce="mean")`
            if helper.reduce_name is not None:
                chosen = positional(node, helper.reduce_index, helper.reduce_name)
                if chosen is not None and not (
                    isinstance(chosen, cst.SimpleString)
                    and chosen.evaluated_value in SUM_REDUCTIONS
                ):
                    return None
            return positional(node, helper.index, helper.name)
    return None


def _lambda_applied(ctx: Context, call: cst.Call, env: Env) -> Value | None:
    """The body of the lambda a call applies (`f = lambda x, act=F.relu: 1 - exp(-act(x))`,
    then `f(raw)`), its parameters bound to the call's arguments or their defaults; or the
    call of the function a local name holds (`act = F.relu`, then `act(x)`)."""
    found = ctx.deref(Value(call.func, env))
    lam = found.node
    if isinstance(call.func, cst.Name) and isinstance(lam, (cst.Attribute, cst.Name)):
        if lam is not call.func:  # `act = F.relu`, then `act(x)`
            return Value(call.with_changes(func=lam), env)
        return None
    if not isinstance(lam, cst.Lambda) or lam.params.star_kwarg is not None:
        return None
    if isinstance(lam.params.star_arg, cst.Param) or lam.params.kwonly_params:
        return None
    bound = dict(found.env)
    for i, param in enumerate(lam.params.params):
        name = param.name.value
        arg = positional(call, i, name)
        if arg is not None:
            bound[name] = Binding(arg, env)
        elif param.default is not None:
            bound[name] = Binding(param.default, found.env)
        else:
            return None
    return Value(lam.body, bound)


def _weighted_squares(left: str | None, right: str | None) -> str | None:
    """A matrix product with squares on one side (`bands @ mag**2`, `matmul(W, x**2)`): each
    entry is a weighted sum of squares, 0 wherever the squares it weights are."""
    if left in (_SQUARE, _SUM_SQUARES) or right in (_SQUARE, _SUM_SQUARES):
        return _SUM_SQUARES
    return None


def _call_reason(
    ctx, node: cst.Call, env: Env, mode: str, sub, value: Value, depth: int
) -> str | None:
    applied = _lambda_applied(ctx, node, env)
    if applied is not None:  # `alpha = raw2alpha(raw, dists)` of a local lambda
        return zero_reason(ctx, applied, mode, depth + 1)
    callee = ctx.callee(node, env)
    if _picked_by_sampling(ctx, node, callee, env):
        return None
    if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
        return sub(callee.receiver)
    if callee.qualname in TRANSPARENT_FUNCTIONS and (arg := positional(node, 0, "input")):
        return sub(arg)  # `torch.squeeze(theta2, dim=1)`
    act = activation(ctx, Value(node, env))
    if act is not None:
        return f"a {act.kind} output"
    floor = _floor_at_zero(ctx, node, callee.qualname, env)
    if floor is not None:
        return floor
    if _range_from_zero(ctx, node, env):
        return "a range from 0"
    if mode == "sqrt" and self_product(ctx, node, env):
        return _SUM_SQUARES  # `torch.matmul(v, v.transpose(1, 2))`, `torch.dot(v, v)`
    if mode == "sqrt" and squared_error(ctx, node, env):
        return MEAN_SQUARED_ERROR  # `torch.sqrt(F.mse_loss(pred, y))`: 0 at a perfect fit
    o = op(ctx, node, env)
    if o is None:
        src = segment_sum_input(ctx, node, env) if mode == "sqrt" else None
        if src is not None and sub(src) in (_SQUARE, _SUM_SQUARES):
            return _SUM_SQUARES  # `scatter(x * x, batch, reduce="add")`: a graph's variance
        return floored_elsewhere(ctx, node, mode) if user_call(ctx, node, env) else None
    inp = o.input
    if o.name == "relu":
        return "a ReLU output"
    if o.name == "softplus" and mode == "log":
        return SOFTPLUS  # `std = F.softplus(h)`, then `std.log()`: -inf once h is far below 0
    if o.name == "sum" and mode == "log" and inp is not None and _masked(ctx, inp, env, depth):
        return MASKED_SUM  # `log((exp(s) * pos_mask).sum(1))`: a row whose mask keeps nothing
    if o.name == "exp" and mode == "log" and inp is not None and _log_density(ctx, inp, env):
        return EXP_LOG_PROB  # `log(pi * exp(d1.log_prob(w)) + ...)`: out of log space and back
    if o.name == "rand":
        return "a `torch.rand` draw"
    if o.name in ("clamp", "clamp_min") and inp is not None:
        low, _high = clamp_bounds(o)
        if low is None:
            return sub(inp)
        if is_zero(ctx, low, env):
            return "a value clamped at 0"
        return None if positive_bound(ctx, low, env) else sub(inp)  # `clamp(min=-1)`
    if o.name == "maximum" or (o.name == "max" and _binary_max(ctx, o)):
        other = o.arg(0, "other")
        if other is not None and is_zero(ctx, other, env):
            return "a value clamped at 0"
        if other is not None and inp is not None and is_zero(ctx, inp, env):
            return "a value clamped at 0"  # `torch.max(zero, 1 + m00 - m11 - m22)`
        if other is not None and inp is not None and not positive_bound(ctx, other, env):
            return sub(inp)  # `torch.maximum(n, torch.finfo(n.dtype).min)`: no bound at 0
        return None
    if o.name == "where":
        return _where_reason(ctx, o, env, sub)
    if o.name == "masked_fill":
        fill = positional(node, 1, "value")
        if fill is not None and is_zero(ctx, fill, env):
            cond = positional(node, 0, "mask")
            if cond is not None and _keeps_one_per_row(ctx, Value(cond, env)):
                return sub(inp) if inp is not None else None
            return "a tensor filled with 0"
        return sub(inp) if inp is not None else None
    if o.name == "abs" and inp is not None and mode == "sqrt":
        inner = sub(inp)
        if inner is not None:
            return inner
        diff = _subtraction(ctx, ctx.deref(Value(inp, env)).node, env)
        if diff is None or any(const(ctx, side, env) is not None for side in diff):
            return None  # `|1 - r**2|` has its own reasons (above), a constant none
        # `sqrt(|x - y|)`: 0 where x = y, with the same infinite slope as a square's root
        return _ABS if _square(ctx, inp, env) else None
    if o.name in ("abs", "cumprod") and inp is not None:
        return sub(inp)
    if o.name == "det" and mode == "sqrt":
        return "a determinant"  # `Sigma.det().sqrt()`: 0 for a degenerate covariance
    if o.name in ("min", "amin") and inp is not None and not _binary_max(ctx, o):
        return sub(inp)  # `d.min(dim=1)[0]`: the nearest of squared distances is 0 where one is
    if o.name in ("matmul", "mm", "bmm") and inp is not None and mode == "sqrt":
        other = o.arg(0, "other") or o.arg(0, "mat2")
        return _weighted_squares(sub(inp), sub(other) if other is not None else None)
    if o.name in ("mul",) and inp is not None:
        other = o.arg(0, "other")
        return sub(inp) or (sub(other) if other is not None else None)
    if o.name == "div" and inp is not None:
        return sub(inp)
    if o.name == "square" and inp is not None:
        if mode != "sqrt":
            return sub(inp)
        return _square(ctx, inp, env)
    if o.name == "pow" and inp is not None:
        e = o.arg(0, "exponent")
        exponent = const(ctx, e, env) if e is not None else None
        if exponent is None or exponent <= 0:
            return None
        if mode == "sqrt" and exponent == 2.0:
            return _square(ctx, inp, env)
        return sub(inp)
    if o.name == "sqrt" and inp is not None:
        return sub(inp)
    if mode == "sqrt":
        if (
            o.name in ("sum", "mean", "var")
            and inp is not None
            and random_sample(ctx, Value(inp, env))
        ):
            return None  # a sum of squares of Gaussian noise is 0 with probability 0
        if o.name in ("sum", "mean") and inp is not None:
            summed = ctx.deref(Value(inp, env))
            base = square_of(ctx, summed.node, summed.env)
            if base is not None and o.name == "mean" and centred(ctx, Value(base, summed.env)):
                return "a variance"  # `((x - mu) ** 2).mean(-1)`: 0 for a constant input
            if base is not None:
                return _SUM_SQUARES if _square(ctx, base, summed.env) else None
            inner = sub(inp)
            if inner in (_SQUARE, _SUM_SQUARES):
                return _SUM_SQUARES
            if inner == MEAN_SQUARED_ERROR:  # `F.mse_loss(a, b, reduction="none").mean(d)`
                return MEAN_SQUARED_ERROR
        if o.name == "var":
            return "a variance"
        if o.name == "diagonal" and inp is not None and _covariance(ctx, Value(inp, env)):
            return "a variance"  # the diagonal of a covariance: 0 for a constant feature
    return None


_COV_NAME = re.compile(r"(^|_)(cov|covar|covariance|gram|sigma|var|variance)s?($|_|\d)", re.I)


#: Indices that pick an entry of positive probability: sampled, or the largest.
_PICKING = frozenset({"multinomial", "argmax"})


def gather_parts(node: cst.Call, callee) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """`(x, idx)` for `x.gather(d, idx)` / `torch.gather(x, d, idx)`; None for other calls."""
    if callee.method == "gather" and callee.receiver is not None:
        source, index = callee.receiver, positional(node, 1, "index")
    elif callee.qualname == "torch.gather":
        source, index = positional(node, 0, "input"), positional(node, 2, "index")
    else:
        return None
    return None if index is None or source is None else (source, index)


def _picked_by_sampling(ctx: Context, node: cst.Call, callee, env: Env) -> bool:
    """`probs.gather(1, idx)` with `idx = torch.multinomial(probs, 1)` or `probs.argmax(-1)`
    (on every arm of an earlier `if`): the token drawn, or the most likely one, never has
    probability 0."""
    parts = gather_parts(node, callee)
    if parts is None:
        return False
    source, index = parts
    value = Value(index, env)
    picks = [ctx.deref(value), *ctx.alternatives(value)]
    return all(p is not None and _picks_from(ctx, p, source, env) for p in picks)


def _picks_from(ctx: Context, index: Value, source: cst.BaseExpression, env: Env) -> bool:
    node = index.node
    for _ in range(4):  # `.unsqueeze(-1)`, `.view(-1, 1)`
        if not isinstance(node, cst.Call):
            return False
        callee = ctx.callee(node, index.env)
        name = callee.method or (callee.qualname or "").rsplit(".", 1)[-1]
        if name in _PICKING:
            picked = callee.receiver if callee.method else positional(node, 0, "input")
            return picked is not None and same_code(ctx, picked, source)
        if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
            node = callee.receiver
            continue
        return False
    return False


def _covariance(ctx: Context, value: Value) -> bool:
    """A covariance or Gram matrix: `torch.cov(x)`, `x.T @ x`, or a name saying so."""
    v = ctx.deref(value)
    node = v.node
    o = op(ctx, node, v.env)  # type: ignore[arg-type]
    if o is not None and o.name in ("cov", "matmul"):
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        return True
    name = (
        node.value
        if isinstance(node, cst.Name)
        else getattr(getattr(node, "attr", None), "value", None)
    )
    return bool(name and _COV_NAME.search(name))


def _binary_max(ctx: Context, o: Op) -> bool:
    """`torch.max(a, b)` (or `torch.min(a, b)`) elementwise, not a reduction over an
    integer dim."""
    other = o.arg(0, "other")
    if other is None or positional(o.call, 2 if o.spelling == "function" else 1) is not None:
        return False
    return not isinstance(other, cst.Integer) and not (
        isinstance(other, cst.UnaryOperation) and isinstance(other.expression, cst.Integer)
    )


def _where_arms(o: Op) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    """The values `torch.where(c, a, b)` (or `a.where(c, b)`) picks from: `(a, b)`."""
    if o.spelling == "method":
        return o.input, positional(o.call, 1)
    return positional(o.call, 1), positional(o.call, 2)


def _where_reason(ctx: Context, o: Op, env: Env, sub) -> str | None:
    cond, branches = positional(o.call, 0, "condition"), _where_arms(o)
    fallback = cond is not None and any(
        b is not None and positive_value(ctx, Value(b, env)) for b in branches
    )
    for taken, branch in zip((True, False), branches, strict=False):
        if branch is None:
            continue
        if cond is not None and sanitises(ctx, cond, branch, taken, env):
            continue
        if is_zero(ctx, branch, env):
            return "a `torch.where` with a 0 branch"
        reason = sub(branch)
        if reason and fallback:
            return KEPT_BY_WHERE  # `safe = where(active, x, ones_like(x))`: a double where
        if reason:
            return reason
    return None


#: A value a `torch.where` keeps only where its test holds, with a positive fallback.
KEPT_BY_WHERE = "a value a `torch.where` keeps where its test holds"


def _negated_plus_one(
    ctx: Context, node: cst.BinaryOperation, env: Env
) -> cst.BaseExpression | None:
    """`-p + 1` or `1 + -p`: the `p` of a `1 - p` written the other way round."""
    for a, b in ((node.left, node.right), (node.right, node.left)):
        minus = isinstance(a, cst.UnaryOperation) and isinstance(a.operator, cst.Minus)
        if minus and const(ctx, b, env) == 1.0:
            return a.expression  # type: ignore[union-attr]
    return None


def _one_reason(ctx: Context, value: Value, depth: int) -> str | None:
    """Why a value can be exactly 1 (so `1 - value` can be 0); `p + eps` reaches past 1."""
    node, env = value.node, value.env
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        for part, other in ((node.left, node.right), (node.right, node.left)):
            if _eps_like(ctx, other, env):  # `F.softmax(x, 1) + eps`: up to 1 + eps
                return zero_reason(ctx, Value(part, env), "one", depth + 1)
        return None
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
        if o is not None and o.name == "exp" and o.input is not None:
            kind = log_probability(ctx, Value(o.input, env))
            if kind is not None:  # `logp.exp()` of a log_softmax: 1 where the model is sure
                return f"a {kind} output"
            inner = zero_reason(ctx, Value(o.input, env), "log", depth + 1)
            if inner in _EXP_AT_ZERO:  # `1 - exp(-relu(s) * d)`: exp(0) is exactly 1
                return f"an exp of {inner}"
    if isinstance(node, cst.Subscript):
        return zero_reason(ctx, Value(node.value, env, value.mutations), "one", depth + 1)
    base = square_of(ctx, node, env)
    if base is not None:  # `1 - tanh(x) ** 2`: a tanh saturates to exactly +-1 from |x| = 9.01
        found = ctx.deref(Value(base, env))
        if isinstance(found.node, cst.Call):
            callee = ctx.callee(found.node, found.env)
            name = (callee.qualname or "").rsplit(".", 1)[-1] if callee.qualname else None
            if callee.qualname in _REACH_ONE or (
                callee.receiver is not None and callee.method in ("tanh", "cos", "sin")
            ):
                return f"the square of a {name or callee.method} output"
    return None


def _masked(ctx: Context, expr: cst.BaseExpression, env: Env, depth: int) -> bool:
    """`x * m` (through variables) with `m` a 0/1 mask the code computes by a test: its sum
    is 0 along a row where the mask keeps nothing."""
    found = ctx.deref(Value(expr, env))
    parts = factors(found.node)  # type: ignore[arg-type]
    if len(parts) < 2:
        return False
    return any(
        zero_reason(ctx, Value(p, found.env), "sum", depth + 1) == "a 0/1 mask" for p in parts
    )


def _log_density(ctx: Context, expr: cst.BaseExpression, env: Env) -> bool:
    """A log-probability or log-density: a distribution's `log_prob(x)`, a log_softmax or
    logsigmoid output (through variables and entries)."""
    found = ctx.deref(Value(expr, env))
    node = found.node
    if isinstance(node, cst.Subscript):
        return _log_density(ctx, node.value, found.env)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value == "log_prob" and node.args:
            return True
    return log_probability(ctx, found) is not None


def log_probability(ctx: Context, value: Value, depth: int = 0) -> str | None:
    """The activation ("softmax" or "sigmoid") when `value` is a log_softmax or logsigmoid
    output, or entries of one (`lp.gather(-1, y)`, `lp[:, 0]`), following variables: its
    exp is a probability, exactly 1 where the model is sure."""
    if depth > 8:
        return None
    found = ctx.deref(value)
    node, env = found.node, found.env
    if isinstance(node, cst.Subscript):
        return log_probability(ctx, Value(node.value, env), depth + 1)
    if isinstance(node, cst.Name) or (isinstance(node, cst.Call) and user_call(ctx, node, env)):
        # what a caller passes, a project function returns
        return "softmax" if origin_of(ctx, node, ("log_softmax",)) is not None else None
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, env)
    if callee.qualname in LOG_PROBABILITIES:
        return LOG_PROBABILITIES[callee.qualname]
    if callee.receiver is not None and callee.qualname is None:
        if callee.method == "log_softmax":
            return "softmax"
        if callee.method in TRANSPARENT_METHODS:
            return log_probability(ctx, Value(callee.receiver, env), depth + 1)
    if callee.qualname in TRANSPARENT_FUNCTIONS and (arg := positional(node, 0, "input")):
        return log_probability(ctx, Value(arg, env), depth + 1)
    return None


#: Functions whose output reaches +-1 exactly in float32 (a saturated tanh, a cosine of 0).
_REACH_ONE = frozenset(
    {"torch.tanh", "torch.nn.functional.tanh", "torch.cos", "torch.sin",
     "torch.cosine_similarity", "torch.nn.functional.cosine_similarity"}
)  # fmt: skip


#: What an exponent is when its exp is exactly 1 in ordinary use (a NeRF opacity
#: `1 - exp(-relu(sigma) * delta)` is 0 in empty space).
_EXP_AT_ZERO = frozenset({"a ReLU output", "a value clamped at 0", "a tensor filled with 0"})


#: Attributes holding the entries of the tensor they are read from (some of them, moved).
_SAME_ENTRIES = frozenset({"values", "T", "mT", "data"})


def positive_value(ctx: Context, value: Value, depth: int = 0) -> bool:
    """Known to be > 0 (or, for probabilities, to sum to a positive total): exp, softplus,
    softmax, sigmoid, ones, a positive constant, clamped above 0, `x + eps`, products and
    convex mixtures of those (`(1 - g) * p + g * q`), and their top-k / sorted / gathered /
    reshaped parts."""
    if depth > 12:
        return False
    for alt in ctx.alternatives(value):  # positive on every arm of an earlier `if`
        if alt is None or not positive_value(ctx, alt, depth + 1):
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
        if source is None:
            if ctx.parameter(node.value) is not None and ctx.deref(value).node is node:
                # what every caller passes: `sinkhorn(torch.exp(scores / eps))`
                if positive_from_callers(ctx, node.value):
                    return True
            if unpacked_size(ctx, node, env):
                return True  # `K, B = Q.shape`, then `torch.ones(B) / B`
            return _unique_counts(ctx, node, env)
        return positive_value(ctx, source, depth + 1)
    if isinstance(node, cst.Subscript):
        if indexed_by_nonzero(ctx, node, env) and _non_negative(ctx, Value(node.value, env)):
            return True  # `freq[freq.nonzero(as_tuple=True)]` of counts
        if _kept_by_own_test(ctx, node, env, named=False):
            return True  # `p = p[p > 1e-30]` (a sum of `s[s > thr]` may be empty)
        return sub(node.value)
    if isinstance(node, cst.Attribute) and node.attr.value in _SAME_ENTRIES:
        return sub(node.value)  # `x.topk(k).values`, `q.T`
    if isinstance(node, cst.Attribute) and node.attr.value == "shape":
        return True  # `x.shape[1]`: a size (a tensor with no entries has no values to divide)
    if _declared_positive(ctx, node):
        return True  # `self.concentration` of a distribution constrained positive
    if isinstance(node, cst.Call) and call_name(node) in ("size", "numel", "len"):
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        if _eps_like(ctx, node.left, env) or _eps_like(ctx, node.right, env):
            return True
        for a, b in ((node.left, node.right), (node.right, node.left)):
            c = const(ctx, a, env)
            if c is not None and c > 0 and _non_negative(ctx, Value(b, env)):
                return True  # `0.99 * torch.sigmoid(x) + 0.005`
            if c is None and sub(a) and _non_negative(ctx, Value(b, env)):
                return True  # `p + one_hot`: probabilities plus a 0/1 target
        return _convex_mix(ctx, node, env, sub)
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Multiply, cst.MatrixMultiply)
    ):
        return sub(node.left) and sub(node.right)  # `s.T @ s` of a softmax: sums of products
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power):
        return sub(node.left)  # a positive base to any power: `d.clamp_min(eps) ** -2`
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        c = const(ctx, node.left, env)
        high = upper_bound(ctx, Value(node.right, env))
        if c is None or high is None:
            return False
        # `1 - (0.99 * p + 0.005)`; a gap below float32's rounding at 1 (`1 - 1e-8`) is none
        return c - high >= FLOAT32_HALF_ULP_BELOW_ONE * max(abs(c), 1.0)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        left = const(ctx, node.left, env)
        if left is not None:
            return left > 0  # inverse weights `1 / counts`
        return sub(node.left) and sub(node.right)
    if isinstance(node, cst.Call) and (qual := ctx.qualname(node.func, env)) in _POSITIVE_FILLS:
        fills = [positional(node, i, k) for i, k in _POSITIVE_FILLS[qual]]
        if _zero_written(ctx, value):
            return False  # `m.fill_diagonal_(0)`
        return all(f is not None and (const(ctx, f, env) or 0) > 0 for f in fills)
    if isinstance(node, cst.Call) and ctx.qualname(node.func, env) == "torch.arange":
        start, step = positional(node, 0, "start"), positional(node, 2, "step")
        if positional(node, 1, "end") is not None and start is not None:
            low = const(ctx, start, env)  # `torch.arange(1, n + 1)`: 1, 2, ..., n
            return (
                low is not None and low > 0 and (step is None or (const(ctx, step, env) or 0) > 0)
            )
    if isinstance(node, cst.Call) and ctx.qualname(node.func, env) in TENSOR_LITERALS:
        data = positional(node, 0, "data")
        if isinstance(data, (cst.List, cst.Tuple)) and data.elements:
            return all(
                not isinstance(e, cst.StarredElement) and sub(e.value) for e in data.elements
            )
        if isinstance(data, (cst.ListComp, cst.GeneratorExp)):
            return sub(data.elt)  # `torch.tensor([exp(-x**2 / s) for x in range(n)])`
    if isinstance(node, cst.Call) and ctx.qualname(node.func, env) in _SCALAR_POSITIVE:
        return True  # `math.exp(-d ** 2)`: a Gaussian tap built from Python numbers
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, env)
        if callee.receiver is not None and (
            callee.method in TRANSPARENT_METHODS or callee.method in _SELECTING
        ):
            return sub(callee.receiver)
        if callee.qualname in _SELECTING_FUNCTIONS and (inp := positional(node, 0, "input")):
            return sub(inp)
    o = op(ctx, node, env)
    if o is None and isinstance(node, cst.Call) and user_call(ctx, node, env):
        # `stft(y)` of a helper returning `torch.sqrt(torch.clamp(m, min=1e-8))`, here or
        # in another file
        return origin_of(ctx, node, ("positive", "softmax", "sigmoid")) is not None
    if o is None:
        return activation(ctx, value) is not None
    if o.name in ("exp", "softplus", "ones", "softmax", "sigmoid"):
        return True
    if o.name == "matmul" and o.input is not None and (other := o.rest()):
        return len(other) == 1 and sub(o.input) and sub(other[0].value)
    if o.name == "reciprocal" and o.input is not None:
        return sub(o.input)  # `torch.reciprocal((x / s) ** 2 + 1)`: a Cauchy kernel
    if o.name == "pow" and o.input is not None:
        return sub(o.input)
    if o.name == "where" and len(node.args) == 3:  # type: ignore[union-attr]
        # `torch.where(lam > thr, lam, 1)`: each branch positive where it is taken
        cond, *branches = (a.value for a in node.args)  # type: ignore[union-attr]
        return all(sub(b) or sanitises(ctx, cond, b, i == 0, env) for i, b in enumerate(branches))
    if o.name in ("sum", "mean") and o.input is not None:
        if sub(o.input) or nonzero_selected(ctx, Value(o.input, env)):
            return True
        if _nonnegative_with_a_positive_entry(ctx, Value(o.input, env)):
            return True  # `torch.hann_window(n).sum()`, `torch.eye(k).sum()`
        return _counts_itself(ctx, Value(o.input, env))
    if o.name in ("clamp", "clamp_min"):
        low = clamp_bounds(o)[0]
        return low is not None and positive_bound(ctx, low, env)
    return False


#: Python and NumPy functions whose value is > 0 for every finite argument.
_SCALAR_POSITIVE = frozenset({"math.exp", "numpy.exp", "math.cosh", "numpy.cosh"})

#: Tensors with no negative entry and at least one positive one, whatever the arguments:
#: an identity matrix and the window functions (a window of length 1 is `[1.]`).
_NONZERO_MAKERS = frozenset(
    {"torch.eye", "torch.hann_window", "torch.hamming_window", "torch.blackman_window",
     "torch.bartlett_window", "torch.kaiser_window"}
)  # fmt: skip


def _nonnegative_with_a_positive_entry(ctx: Context, value: Value) -> bool:
    """An identity matrix or a window function (through casts and views), with no 0 written
    into it: its sum and norm are positive."""
    found, _ = strip(ctx, value)
    node = found.node
    if _zero_written(ctx, found):
        return False  # `eye.fill_diagonal_(0)`
    return isinstance(node, cst.Call) and ctx.qualname(node.func, found.env) in _NONZERO_MAKERS


def _never_all_zero(ctx: Context, value: Value) -> bool:
    """A tensor with an entry that is never 0: its norm is positive. A stack or
    concatenation with a positive part is one (`torch.stack([x, torch.ones_like(x)])`)."""
    if positive_value(ctx, value) or _nonnegative_with_a_positive_entry(ctx, value):
        return True
    found, _ = strip(ctx, value)
    node = found.node
    if isinstance(node, cst.Comparison) and not found.mutations:
        return always_true(ctx, node, found.env)  # `(p != 250).float()`: all ones
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if _off_diagonal(ctx, Value(a, found.env)) and positive_value(ctx, Value(b, found.env)):
                return True  # `~torch.eye(2 * b) * torch.exp(sim / t)`: NT-Xent's negatives
    if not isinstance(node, cst.Call) or ctx.qualname(node.func, found.env) not in JOINS:
        return False
    parts = positional(node, 0, "tensors")
    return isinstance(parts, (cst.List, cst.Tuple)) and any(
        not isinstance(e, cst.StarredElement) and positive_value(ctx, Value(e.value, found.env))
        for e in parts.elements
    )


def _off_diagonal(ctx: Context, value: Value) -> bool:
    """The off-diagonal mask of an n x n matrix with n >= 2 (`~torch.eye(2 * b)`,
    `1 - torch.eye(n)` for a constant n >= 2): every row and column keeps n - 1 >= 1 entries."""
    found, _ = strip(ctx, value)
    node, env = found.node, found.env
    if _zero_written(ctx, found):
        return False
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        eye = node.expression
    elif (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Subtract)
        and const(ctx, node.left, env) == 1
    ):
        eye = node.right
    else:
        return False
    eye = strip(ctx, Value(eye, env))[0].node
    if not isinstance(eye, cst.Call) or ctx.qualname(eye.func, env) != "torch.eye":
        return False
    n = positional(eye, 0, "n")
    return n is not None and _at_least_two(ctx, n, env)


def _at_least_two(ctx: Context, size: cst.BaseExpression, env: Env) -> bool:
    """A size that is 2 or more: a constant, or a count doubled (`2 * b`, `b * n_views` with a
    constant factor of 2 or more)."""
    c = const(ctx, size, env)
    if c is not None:
        return c >= 2
    if isinstance(size, cst.BinaryOperation) and isinstance(size.operator, cst.Multiply):
        return any((const(ctx, f, env) or 0) >= 2 for f in (size.left, size.right))
    return False


def _one_hot_rows(ctx: Context, value: Value, dim: cst.BaseExpression | None) -> bool:
    """A one-hot encoding (through casts) summed over everything or over its last axis:
    every row holds one 1, so the sum is positive. A sum over the samples (`dim=0`) counts
    a class, which can be absent."""
    return _one_hot(ctx, value) and (dim is None or const(ctx, dim, value.env) == -1)


#: The number of samples of each class: 0 for a class the batch does not hold.
_PER_CLASS = "a count per class"
_DEGREE = "a node's degree"
_VALUE_COUNT = "the count of each value of a vector up to its largest"
#: Functions and methods giving each node's number of edges: 0 for an isolated node.
_DEGREES = frozenset({"torch_geometric.utils.degree", "torch_geometric.utils.degree.degree"})
_DEGREE_METHODS = frozenset({"in_degrees", "out_degrees"})
#: Reasons of a whole number that is 0: `log(1 + n)` is 0 with it.
_WHOLE_ZEROS = frozenset({"a count", _PER_CLASS, _DEGREE, _VALUE_COUNT})


def _one_hot(ctx: Context, value: Value) -> bool:
    """A one-hot encoding of labels (through casts), not edited since."""
    found, _ = strip(ctx, value)
    node = found.node
    return (
        isinstance(node, cst.Call)
        and ctx.qualname(node.func, found.env) == "torch.nn.functional.one_hot"
        and not _zero_written(ctx, found)
    )


def _counts_of_own_entries(ctx: Context, node: cst.Subscript, env: Env) -> bool:
    """`counts[y]` with `counts = torch.bincount(y)`: the histogram read at the values it
    counted, each at least 1."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    found, _ = strip(ctx, Value(node.value, env))
    hist = found.node
    if not (isinstance(hist, cst.Call) and _histogram(ctx, found)):
        return False
    callee = ctx.callee(hist, found.env)
    counted = callee.receiver if callee.receiver is not None else positional(hist, 0, "input")
    index = node.slice[0].slice.value
    return counted is not None and same_code(ctx, counted, index)


def _histogram(ctx: Context, value: Value) -> bool:
    """`torch.bincount(y)` / `y.bincount()` without weights: every entry of `y` adds 1 to some
    bin, so some bin is nonzero (a tensor without entries has nothing to average). Followed
    through names and casts (`torch.bincount(y).float()`)."""
    found, _ = strip(ctx, value)
    node = found.node
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, found.env)
    if callee.qualname == "torch.bincount":
        return positional(node, 1, "weights") is None
    return callee.method == "bincount" and positional(node, 0, "weights") is None


def _counts_itself(ctx: Context, value: Value) -> bool:
    """Every entry >= 0 and the entry compared with itself > 0: a rank among the entries
    (`(x >= x[i]).float()`, `torch.clamp((x - x[i]) / d + 0.5, 0, 1)`), whose sum is not 0."""
    found = _at_own_entry(ctx, value)
    return found is not None and found[0] > 0 and found[1] >= 0


def _at_own_entry(ctx: Context, value: Value) -> tuple[float, float] | None:
    """For relations of a tensor to one of its own entries (`x - x[i]`, `(x >= x[i]).float()`,
    `torch.clamp((x - x[i]) / d + 0.5, min=0, max=1)`): the value at entry `i` itself and a
    lower bound of every entry (None: not such a relation, or several indices)."""
    indices: set[str] = set()
    found = _own_entry(ctx, value, indices, 0)
    return found if found is not None and len(indices) == 1 else None


def _own_entry(
    ctx: Context, value: Value, indices: set[str], depth: int
) -> tuple[float, float] | None:
    if depth > 8:
        return None
    arms = [ctx.deref(value), *ctx.alternatives(value)]
    if any(a is None for a in arms):
        return None
    found = [_own_entry_of(ctx, a, indices, depth) for a in arms if a is not None]
    if any(f is None for f in found):
        return None
    return min(f[0] for f in found if f), min(f[1] for f in found if f)


def _own_entry_of(
    ctx: Context, value: Value, indices: set[str], depth: int
) -> tuple[float, float] | None:
    node, env = value.node, value.env

    def sub(expr: cst.BaseExpression) -> tuple[float, float] | None:
        return _own_entry(ctx, Value(expr, env), indices, depth + 1)

    c = const(ctx, node, env)
    if c is not None:
        return c, c
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        test = HOLDS.get(type(node.comparisons[0].operator))
        right = node.comparisons[0].comparator
        if test is None:
            return None
        if _entry_of(ctx, node.left, right, indices) or _entry_of(ctx, right, node.left, indices):
            return float(test(0.0, 0.0)), 0.0  # `x >= x[i]`: equal at i
        left, other = sub(node.left), sub(right)
        if left is None or other is None:
            return None
        return float(test(left[0], other[0])), 0.0
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Subtract) and _entry_of(
            ctx, node.left, node.right, indices
        ):
            return 0.0, -math.inf  # `x - x[i]`
        left, right = sub(node.left), sub(node.right)
        scaled = isinstance(node.operator, (cst.Multiply, cst.Divide))
        if scaled and right is None and left is not None and left[0] == 0:
            return 0.0, -math.inf  # `(x - x[i]) / (2 * delta)`: 0 at i
        if left is None or right is None:
            return None
        (a, la), (b, lb) = left, right
        if isinstance(node.operator, cst.Add):
            return a + b, la + lb
        if isinstance(node.operator, cst.Subtract):
            return a - b, (la - b if lb == b else -math.inf)  # minus a constant only
        if isinstance(node.operator, cst.Multiply):
            return a * b, (la * lb if la >= 0 and lb >= 0 else -math.inf)
        if isinstance(node.operator, cst.Divide) and b == lb and b > 0:
            return a / b, la / b  # by a positive constant
        return None
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, env)
    if callee.receiver is not None and callee.method in TRANSPARENT_METHODS:
        return sub(callee.receiver)
    o = op(ctx, node, env)
    if o is None or o.name not in ("clamp", "clamp_min") or o.input is None:
        return None
    inner = sub(o.input)
    if inner is None:
        return None
    own, low = inner
    lo, hi = (const(ctx, b, env) if b is not None else None for b in clamp_bounds(o))
    if lo is not None:
        own, low = max(own, lo), max(low, lo)
    if hi is not None:
        own = min(own, hi)
    return own, low


def _entry_of(
    ctx: Context, whole: cst.BaseExpression, entry: cst.BaseExpression, indices: set[str]
) -> bool:
    """`entry` is `whole[i]`: one entry of the same tensor (its index noted)."""
    if not isinstance(entry, cst.Subscript) or len(entry.slice) != 1:
        return False
    index = entry.slice[0].slice
    if not isinstance(index, cst.Index) or not same_code(ctx, entry.value, whole):
        return False
    indices.add(ctx.code(index.value))
    return True


def _unique_counts(ctx: Context, name: cst.Name, env: Env) -> bool:
    """`vals, counts = x.unique(return_counts=True)`: every value found occurs at least once."""
    found = unpacking_call(ctx, name, env)
    if found is None or not isinstance(found.node, cst.Call):
        return False
    callee = ctx.callee(found.node, found.env)
    kind = callee.method or (callee.qualname or "").rsplit(".", 1)[-1]
    if kind not in ("unique", "unique_consecutive"):
        return False
    counts, inverse = keyword(found.node, "return_counts"), keyword(found.node, "return_inverse")
    if not (isinstance(counts, cst.Name) and counts.value == "True"):
        return False
    return not (isinstance(inverse, cst.Name) and inverse.value == "True") or "count" in name.value


def selects_nonzero(ctx: Context, node: cst.Subscript, env: Env) -> bool:
    """The entries picked are nonzero ones of the tensor itself, entry by entry:
    `p[p.nonzero(as_tuple=True)]`, `p[p > 0]`, `p[mask]` with `mask = p > eps`."""
    return indexed_by_nonzero(ctx, node, env) or _kept_by_own_test(ctx, node, env)


def _kept_by_own_test(ctx: Context, node: cst.Subscript, env: Env, named: bool = True) -> bool:
    """`p[p > 1e-30]`, `p[p != 0]` (also through a name bound to the test): the entries kept
    pass a test of themselves, entry by entry."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    test = ctx.deref(Value(node.slice[0].slice.value, env))
    for factor in _conjuncts(test.node):  # `(d > lo) & (d < hi)`: each must hold
        found = _self_comparison(ctx, factor, node.value, test.env, named)
        if found is None:
            continue
        kind, bound = found
        if (kind is cst.GreaterThan and bound >= 0) or (kind is cst.NotEqual and bound == 0):
            return True
    return False


def _conjuncts(test: cst.CSTNode) -> list[cst.BaseExpression]:
    """The tests `a & b & c` (or `a and b`) requires, parentheses dropped."""
    if isinstance(test, cst.BinaryOperation) and isinstance(test.operator, cst.BitAnd):
        return _conjuncts(test.left) + _conjuncts(test.right)
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test] if isinstance(test, cst.BaseExpression) else []


def _zero_written(ctx: Context, value: Value) -> bool:
    """Whether an in-place edit of `value` since its assignment may write a 0."""
    return any(_writes_zero(ctx, stmt, value.env) for stmt in value.mutations)


def _writes_zero(ctx: Context, stmt: cst.CSTNode, env: Env) -> bool:
    """An in-place edit that may write a 0: `t[i] = 0`, `t.fill_diagonal_(0)`, `t.zero_()`,
    or a value it cannot read."""
    if isinstance(stmt, cst.Assign):
        c = const(ctx, stmt.value, env)
        return c is None or c == 0
    if isinstance(stmt, cst.AugAssign):
        return not isinstance(stmt.operator, (cst.DivideAssign, cst.MultiplyAssign))
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
        if method in ("fill_", "fill_diagonal_") and call.args:
            c = const(ctx, call.args[0].value, env)
            return c is None or c <= 0
        return True
    return True


_EXTREMES = frozenset({"max", "min", "amax", "amin"})


def _hits_of_own_extreme(ctx: Context, mask: Value, dim: cst.BaseExpression | None) -> bool:
    """`(x == x.max(d, keepdim=True)[0])`, `x == torch.amax(x, d, keepdim=True)`: the entries
    equal to their row's maximum, at least one per row, summed over that row (or whole)."""
    found = ctx.deref(mask)
    node, env = found.node, found.env
    for _ in range(4):  # `.float()`, `.to(x.dtype)`
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if node.func.attr.value in TRANSPARENT_METHODS:
                node = node.func.value
                continue
        break
    if isinstance(node, cst.Name):
        found = ctx.deref(Value(node, env))
        node, env = found.node, found.env
    if not (isinstance(node, cst.Comparison) and len(node.comparisons) == 1):
        return False
    operator = node.comparisons[0].operator
    left, right = node.left, node.comparisons[0].comparator
    pairs = {
        cst.Equal: ((left, right), (right, left)),
        cst.GreaterThanEqual: ((left, right),),  # `x >= x.max(1, keepdim=True)[0] / 2`
        cst.LessThanEqual: ((right, left),),
    }.get(type(operator), ())
    for a, b in pairs:
        at_least = not isinstance(operator, cst.Equal)
        extreme, fraction = _extreme_call(ctx, Value(b, env), scaled=at_least)
        o = op(ctx, extreme, env) if extreme is not None else None
        if o is None or o.name not in _EXTREMES or o.input is None:
            continue
        if ctx.code(o.input) != ctx.code(a) or (at_least and o.name not in ("max", "amax")):
            continue
        if fraction and not _non_negative(ctx, Value(o.input, env)):
            continue  # a fraction of a negative maximum lies above it
        axis = o.arg(0, "dim")
        if dim is None or (axis is not None and const(ctx, axis, env) == const(ctx, dim, env)):
            return True
    return False


def _extreme_call(
    ctx: Context, value: Value, scaled: bool
) -> tuple[cst.BaseExpression | None, bool]:
    """The reduction a row's extreme is read from (`torch.max(x, 0, keepdim=True)[0]`,
    `x.max(1).values`, `peaks` of `peaks, _ = torch.max(x, 1)`), and whether the value is a
    fraction of it: with `scaled`, `peaks / 2` and `0.5 * peaks` count too, which every
    row's maximum still reaches when the values are not negative."""
    found = ctx.deref(value) if isinstance(value.node, cst.Name) else value
    node, env = found.node, found.env
    if scaled and isinstance(node, cst.BinaryOperation):
        left, right = node.left, node.right
        if isinstance(node.operator, cst.Divide) and (const(ctx, right, env) or 0) >= 1:
            return _extreme_call(ctx, Value(left, env), False)[0], True
        if isinstance(node.operator, cst.Multiply):
            for k, m in ((left, right), (right, left)):
                if 0 < (const(ctx, k, env) or 0) <= 1:
                    return _extreme_call(ctx, Value(m, env), False)[0], True
        return None, False
    if isinstance(node, cst.Subscript):
        return node.value, False
    if isinstance(node, cst.Attribute) and node.attr.value == "values":
        return node.value, False
    if isinstance(value.node, cst.Name):
        source = unpacked_from(ctx, value.node, value.env)  # `peaks, _ = torch.max(x, 1)`
        if source is not None:
            return source.node, False
    return node, False


def _range_from_zero(ctx: Context, node: cst.Call, env: Env) -> bool:
    """`torch.arange(n)`, `torch.arange(0, n)`, `torch.linspace(0, 1, n)`: the first entry
    is exactly 0."""
    qual = ctx.qualname(node.func, env)
    if qual == "torch.arange":
        if positional(node, 1, "end") is None:
            return positional(node, 0, "end") is not None and keyword(node, "start") is None
        start = positional(node, 0, "start")
        return start is not None and const(ctx, start, env) == 0
    if qual == "torch.linspace":
        start = positional(node, 0, "start")
        return start is not None and const(ctx, start, env) == 0
    return False


#: Constructors filled with positive constants: the (position, keyword) of each value.
_POSITIVE_FILLS = {
    "torch.full": ((1, "fill_value"),),
    "torch.full_like": ((1, "fill_value"),),
    "torch.linspace": ((0, "start"), (1, "end")),
    "torch.logspace": ((0, "start"),),
}
_CONTINUOUS_RANDOM = frozenset(
    {
        *(f"torch.{name}" for name in ("randn", "randn_like", "rand", "rand_like", "normal")),
        "torch.distributions.utils._standard_normal",  # what `Normal.rsample` draws
        *(f"numpy.random.{name}" for name in ("normal", "randn", "standard_normal", "uniform")),
    }
)
#: In-place draws of a tensor, and the draws of a NumPy Generator or RandomState
#: (`rng.normal(0, s, size=n)`; a tensor has no method of these names).
_CONTINUOUS_RANDOM_METHODS = frozenset(
    {"normal_", "uniform_", "exponential_", "normal", "standard_normal", "randn"}
)
#: A NumPy array made a tensor, or cast: the same values.
_AS_TENSOR = frozenset({*TENSOR_LITERALS, "torch.from_numpy"})


def random_sample(ctx: Context, value: Value, depth: int = 0) -> bool:
    """A continuous random sample (`torch.randn(...)`, `torch.rand_like(x)`, `t.normal_()`,
    `np.random.normal(...)`, `rng.normal(...)` made a tensor) through reshaping, casts, `abs`,
    squaring and scaling by nonzero constants or number settings: a whole sample of it is
    never exactly 0. (A draw's own scale is not read: noise of scale 0 is no noise.)"""
    if depth > 8:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env
    if value.mutations and _drawn_in_place(ctx, value.mutations[-1], env):
        return True  # `torch.nn.init.orthogonal_(w)`, `w.data.normal_(0, s)` last

    def sub(expr: cst.BaseExpression | None) -> bool:
        return expr is not None and random_sample(ctx, Value(expr, env), depth + 1)

    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Power):
            return sub(node.left)
        if isinstance(node.operator, (cst.Multiply, cst.Divide)):
            if (c := const(ctx, node.right, env)) is not None:
                return c != 0 and sub(node.left)
            if (c := const(ctx, node.left, env)) is not None:
                return c != 0 and sub(node.right)
            if not isinstance(node.operator, cst.Multiply):
                return False
            return any(  # `torch.randn_like(x) * std` with a number setting, or two draws
                sub(a) and (sub(b) or settings_only(ctx, b))
                for a, b in ((node.left, node.right), (node.right, node.left))
            )
        return False
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, env)
    if callee.qualname in _CONTINUOUS_RANDOM:
        return True
    if callee.qualname in _AS_TENSOR:
        return sub(positional(node, 0, "data"))  # `torch.tensor(rng.normal(0, s, n))`
    if callee.receiver is None:
        return False
    if callee.method in _CONTINUOUS_RANDOM_METHODS:
        return True
    if callee.method in TRANSPARENT_METHODS or callee.method in ("abs", "square", "pow", "astype"):
        return sub(callee.receiver)
    return False


#: The initialisers that fill a tensor with continuous random numbers.
_RANDOM_INITS = frozenset(
    f"torch.nn.init.{name}"
    for name in ("normal_", "uniform_", "orthogonal_", "trunc_normal_", "xavier_uniform_",
                 "xavier_normal_", "kaiming_uniform_", "kaiming_normal_")
)  # fmt: skip


def _drawn_in_place(ctx: Context, stmt: cst.CSTNode, env: Env) -> bool:
    """An in-place change (see Context._record_mutation) that fills the tensor with random
    numbers."""
    call = stmt.value if isinstance(stmt, cst.Expr) else None
    if not isinstance(call, cst.Call):
        return False
    if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Subscript):
        return False  # `d[:, k].normal_()` redraws a part of d only
    callee = ctx.callee(call, env)
    if callee.qualname is not None:
        return callee.qualname in _RANDOM_INITS
    return callee.method in _CONTINUOUS_RANDOM_METHODS


def nonzero_selected(ctx: Context, value: Value) -> bool:
    """Only the entries or rows that pass a nonzero test are kept (`x[:, x.sum(0) != 0]`,
    here or in a helper such as `drop_empty_rows(x)`): their sums are not 0."""
    value = ctx.deref(value)
    node = value.node
    if isinstance(node, cst.Subscript):
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index):
                continue
            test = index.value
            if isinstance(test, cst.Name):  # `keep = m.sum(1) > 0; m = m[keep]`
                test = ctx.deref(Value(test, value.env)).node
            if _nonzero_test(ctx, test, value.env):
                return True
        return False
    if isinstance(node, cst.Call) and user_call(ctx, node, value.env):
        return origin_of(ctx, node, ("nonzero",)) is not None
    return False


def user_call(ctx: Context, node: cst.Call, env: Env) -> bool:
    """A call of a function of the user's code (`drop_empty(x)`, `self.filter(x)`), not of
    torch or a tensor method: only those can have a summary."""
    callee = ctx.callee(node, env)
    if callee.qualname is not None:
        return not callee.qualname.startswith(("torch.", "numpy.", "math."))
    func = node.func
    return isinstance(func, cst.Name) or (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
    )


def _nonzero_test(ctx: Context, test: cst.BaseExpression, env: Env) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    return isinstance(target.operator, (cst.NotEqual, cst.GreaterThan)) and is_zero(
        ctx, target.comparator, env
    )


#: Ops (numlint.analysis.ops names) whose result never exceeds 1.
_AT_MOST_ONE = frozenset({"sigmoid", "softmax", "cosine"})
_ERFC = frozenset({"torch.erfc", "torch.special.erfc"})


def _setting(ctx: Context, expr: cst.BaseExpression, env: Env) -> float | None:
    """A number: a constant, or the default of a parameter of the enclosing function
    (`def f(x, eps=1e-6)`)."""
    c = const(ctx, expr, env)
    if c is not None or not isinstance(expr, cst.Name):
        return c
    param = ctx.parameter(expr.value)
    return const(ctx, param.default, env) if param is not None and param.default else None


def upper_bound(ctx: Context, value: Value, depth: int = 0) -> float | None:
    """A constant the value never exceeds (None: unknown): probabilities and cosines (1),
    clamps with a maximum, and sums and non-negative multiples of those
    (`0.99 * torch.sigmoid(x) + 0.005` <= 0.995)."""
    if depth > 6:
        return None
    value = ctx.deref(value)
    node, env = value.node, value.env
    c = const(ctx, node, env)
    if c is not None:
        return c

    def sub(expr: cst.BaseExpression) -> float | None:
        return upper_bound(ctx, Value(expr, env), depth + 1)

    if value.mutations:  # `p.clamp_(eps, 1 - eps)` as the last edit in place
        last = value.mutations[-1]
        call = last.value if isinstance(last, cst.Expr) else None
        if isinstance(call, cst.Call) and call_name(call) in _CLAMPS_IN_PLACE:
            high = positional(call, 0 if call_name(call) == "clamp_max_" else 1, "max")
            return None if high is None else sub(high)

    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Add):
            left, right = sub(node.left), sub(node.right)
            return None if left is None or right is None else left + right
        if isinstance(node.operator, cst.Subtract):
            left = sub(node.left)
            if left is None:
                return None
            low = _setting(ctx, node.right, env)  # `0.5 * erfc(x) - eps`
            if low is not None and low > 0:
                return left - low
            return left if _non_negative(ctx, Value(node.right, env)) else None
        if isinstance(node.operator, (cst.Multiply, cst.Divide)):
            scale = const(ctx, node.right, env)
            inner = node.left
            if scale is None and isinstance(node.operator, cst.Multiply):
                scale, inner = const(ctx, node.left, env), node.right
            if scale is None or scale <= 0:
                return None
            high = sub(inner)
            if high is None:
                return None
            return high * scale if isinstance(node.operator, cst.Multiply) else high / scale
        return None
    if isinstance(node, cst.Subscript):
        return sub(node.value)
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, env)
        if callee.receiver is not None and callee.method in TRANSPARENT_METHODS:
            return sub(callee.receiver)
        if callee.qualname in _ERFC or callee.method == "erfc":
            return 2.0
    o = op(ctx, node, env)
    if o is None:
        return 1.0 if activation(ctx, value) is not None else None
    if o.name in _AT_MOST_ONE:
        return 1.0
    if o.name == "clamp":  # `clip` too: the op table names both "clamp"
        high = clamp_bounds(o)[1]
        return None if high is None else sub(high)  # `1 - eps` with `eps=1e-6`
    return None


#: In-place clamps, which may set a maximum.
_CLAMPS_IN_PLACE = frozenset({"clamp_", "clip_", "clamp_max_"})
#: Functions whose values lie in [-1, 1].
_UNIT_RANGE = frozenset(
    {"torch.tanh", "torch.nn.functional.tanh", "torch.sin", "torch.cos", "torch.erf",
     "torch.nn.functional.softsign", "torch.nn.functional.hardtanh"}
)  # fmt: skip
_UNIT_RANGE_METHODS = frozenset({"tanh", "sin", "cos", "erf"})
#: Inverse trigonometric functions and the largest magnitude of their values.
_ANGLES = {
    "torch.acos": math.pi, "torch.arccos": math.pi, "torch.asin": math.pi / 2,
    "torch.arcsin": math.pi / 2, "torch.atan": math.pi / 2, "torch.arctan": math.pi / 2,
    "torch.atan2": math.pi, "torch.arctan2": math.pi,
}  # fmt: skip


def magnitude_bound(ctx: Context, value: Value, depth: int = 0) -> float | None:
    """A constant the value's magnitude never exceeds (None: unknown): cosines, tanh, sin,
    clamps with both bounds, and sums and constant multiples of those."""
    if depth > 6:
        return None
    value = ctx.deref(value)
    node, env = value.node, value.env
    c = const(ctx, node, env)
    if c is not None:
        return abs(c)

    def sub(expr: cst.BaseExpression) -> float | None:
        return magnitude_bound(ctx, Value(expr, env), depth + 1)

    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return sub(node.expression)
    if isinstance(node, cst.BinaryOperation):
        left, right = sub(node.left), sub(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.operator, (cst.Add, cst.Subtract)):
            return left + right
        if isinstance(node.operator, cst.Multiply):
            return left * right
        if isinstance(node.operator, cst.Divide) and const(ctx, node.right, env):
            return left / right
        return None
    if isinstance(node, cst.Subscript):
        return sub(node.value)
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, env)
    if callee.qualname in _UNIT_RANGE or callee.method in _UNIT_RANGE_METHODS:
        return 1.0
    angle = _ANGLES.get(callee.qualname or "") or _ANGLES.get(f"torch.{callee.method}")
    if angle is not None:
        return angle  # `torch.acos(c)` lies in [0, pi]
    if callee.receiver is not None and callee.method in TRANSPARENT_METHODS:
        return sub(callee.receiver)
    if activation(ctx, value) is not None:
        return 1.0  # a sigmoid or softmax output
    o = op(ctx, node, env)
    if o is not None and o.name == "cosine":
        return 1.0
    if o is not None and o.name == "clamp":
        low, high = clamp_bounds(o)
        lo = const(ctx, low, env) if low is not None else None
        hi = const(ctx, high, env) if high is not None else None
        return None if lo is None or hi is None else max(abs(lo), abs(hi))
    if callee.qualname in ("torch.arange", "torch.linspace"):  # a grid between constants
        ends = [positional(node, i, k) for i, k in ((0, "start"), (1, "end"))]
        found = [const(ctx, e, env) for e in ends if e is not None]
        if callee.qualname == "torch.linspace" and len(found) < 2:
            return None
        if not found or any(f is None for f in found):
            return None
        return max(abs(f) for f in found)  # type: ignore[arg-type]
    return None


#: Methods and functions whose result is a selection of their input's elements.
_SELECTING = frozenset({"topk", "sort", "gather", "index_select", "masked_select", "narrow"})


_SELECTING_FUNCTIONS = frozenset(
    {"torch.topk", "torch.sort", "torch.gather", "torch.narrow", "torch.index_select"}
)


_EPS_NAME = re.compile(r"(^|_)(eps|epsilon|tiny|jitter|smooth)($|_|\d)")
#: A lower bound kept as a setting (`self.sigma_min`): a positive scalar, not a tensor.
_FLOOR_SETTING = re.compile(r"^(min_\w+|\w+_min)$")


def centred(ctx: Context, value: Value) -> bool:
    """`x - x.mean(-1, keepdim=True)`, also through names (`mu = x.mean(0)`; `x - mu`): a
    deviation from its own mean, whose mean square is a variance (0 for a constant input)."""
    found = ctx.deref(value)
    node = found.node
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)):
        return False
    mean = ctx.deref(Value(node.right, found.env))
    o = op(ctx, mean.node, mean.env) if isinstance(mean.node, cst.Call) else None
    return (
        o is not None
        and o.name == "mean"
        and o.input is not None
        and same_value(ctx, Value(o.input, mean.env), ctx.deref(Value(node.left, found.env)))
    )


def _square(ctx: Context, base: cst.BaseExpression, env: Env) -> str | None:
    """The reason a square `base ** 2` under a root can be 0: None for an eps (`self.eps **
    2`) or a base shifted by one (`(x - y + eps) ** 2`: identical inputs give eps**2 > 0, and
    0 needs x - y to equal -eps exactly)."""
    if _eps_like(ctx, base, env):
        return None
    if random_sample(ctx, Value(base, env)):
        return None  # the square of a continuous random draw (Rician noise) is never 0
    found = ctx.deref(Value(base, env))
    node = found.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        if _eps_like(ctx, node.right, found.env) or _eps_like(ctx, node.left, found.env):
            return None
    return _SQUARE


def _eps_like(ctx: Context, expr: cst.BaseExpression, env: Env) -> bool:
    """A positive constant, `torch.finfo(...).eps/tiny`, a name spelt as an eps, or a
    lower bound kept as a setting on `self` (`self.sigma_min`)."""
    c = const(ctx, expr, env)
    if c is not None:
        return c > 0
    last = expr.attr.value if isinstance(expr, cst.Attribute) else None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        if expr.value.value == "self" and _FLOOR_SETTING.match(last.lower()):
            return True
    if isinstance(expr, cst.Name):
        last = expr.value
        if _FLOOR_SETTING.match(last.lower()):
            low = _setting(ctx, expr, env)  # `def sigma(t, sigma_min=1e-3)`
            if low is not None:
                return low > 0
        param = ctx.parameter(last)
        if param is not None and param.default is not None:
            low = const(ctx, param.default, {})  # `def nmi(x, y, e=1e-10)`: a tiny default
            if low is not None and 0 < low <= 1e-3:
                return True
    return last is not None and _EPS_NAME.search(last.lower()) is not None


#: Comparison operators and the one that holds exactly where they do not.
_OPPOSITE = {
    cst.LessThanEqual: cst.GreaterThan,
    cst.GreaterThan: cst.LessThanEqual,
    cst.LessThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.LessThan,
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
}


def _complementary_masks(
    ctx: Context, node: cst.BinaryOperation, env: Env
) -> list[cst.BaseExpression] | None:
    """`a * m + b * (not m)`, with `m` a comparison and the other its complement (`x <= y`
    and `x > y`): a selection by hand, 0 only where the term it selects is. The factors of
    both terms besides the masks, else None."""
    left, right = factors(node.left), factors(node.right)
    for i, m in enumerate(left):
        for j, n in enumerate(right):
            if _opposite_tests(ctx, m, n, env):
                return [*left[:i], *left[i + 1 :], *right[:j], *right[j + 1 :]]
    return None


def _opposite_tests(ctx: Context, a: cst.BaseExpression, b: cst.BaseExpression, env: Env) -> bool:
    tests = []
    for expr in (a, b):
        found, _ = strip(ctx, Value(expr, env))
        node = found.node
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            return False
        tests.append(node)
    first, second = tests
    op_a, op_b = type(first.comparisons[0].operator), type(second.comparisons[0].operator)
    return (
        _OPPOSITE.get(op_a) is op_b
        and same_code(ctx, first.left, second.left)
        and same_code(ctx, first.comparisons[0].comparator, second.comparisons[0].comparator)
    )


def factors(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The factors of a product `a * b * c` (the node itself when it is not one)."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return [*factors(node.left), *factors(node.right)]
    return [node]


#: Tests that hold where `x` is 0: `x == 0`, `x <= tiny`, `x < tiny`.
_AT_ZERO = (cst.Equal, cst.LessThanEqual, cst.LessThan)
#: `0 >= x` read as `x <= 0`; a test that does not single out 0 maps to `!=` (rejected).
_MIRROR = {
    cst.GreaterThanEqual: cst.LessThanEqual,
    cst.GreaterThan: cst.LessThan,
    cst.Equal: cst.Equal,
}


def _lifts_zeros(
    ctx: Context, addend: cst.BaseExpression, other: cst.BaseExpression, env: Env
) -> bool:
    """`x + 1e-4 * (x <= 0).float()`: a positive multiple of a test that holds where `x`
    is 0, so every zero of `x` is lifted."""
    test: Value | None = None
    for factor in factors(addend):
        c = const(ctx, factor, env)
        if c is not None and c > 0 or _eps_like(ctx, factor, env):
            continue
        found = strip(ctx, Value(factor, env))[0]
        if test is not None or not isinstance(found.node, cst.Comparison):
            return False
        test = found
    if test is None or len(test.node.comparisons) != 1:  # type: ignore[attr-defined]
        return False
    comp: cst.Comparison = test.node  # type: ignore[assignment]
    target = comp.comparisons[0]
    subject, bound_node, kind = comp.left, target.comparator, type(target.operator)
    if const(ctx, subject, test.env) is not None:  # `0 >= x`
        subject, bound_node, kind = bound_node, subject, _MIRROR.get(kind, cst.NotEqual)
    bound = const(ctx, bound_node, test.env)
    if bound is None or kind not in _AT_ZERO or not 0 <= bound <= 1e-3:
        return False
    if bound == 0 and kind is cst.LessThan:
        return False  # `x < 0` tests the sign
    if bound > 0 and kind is cst.Equal:
        return False
    return same_value(ctx, Value(subject, test.env), Value(other, env))


def _convex_mix(ctx: Context, node: cst.BinaryOperation, env: Env, sub) -> bool:
    """`(1 - g) * p + g * q` with p, q positive (probabilities): a convex mixture."""
    parts = _mixed_parts(ctx, node, env)
    return parts is not None and all(sub(g) for g in parts)


def _mixed_parts(
    ctx: Context, node: cst.BinaryOperation, env: Env
) -> list[cst.BaseExpression] | None:
    """For `(1 - g) * p + g * q`: the factors besides the weights (`[p, q]`); None for
    other sums. The weights cannot both be 0, so the sum is 0 only where p or q is."""
    left, right = factors(node.left), factors(node.right)
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
                    return [*rest_a, *rest_b]
    return None


def _blend_with_constant(ctx: Context, node: cst.BinaryOperation, env: Env) -> bool:
    """`u * (1 - c) + c` with c a constant in (0, 1): the value is at least min(c, 1 - c)
    times the larger of its parts, and one part is the constant 1, so it is never 0."""
    left, right = factors(node.left), factors(node.right)
    for a, b in ((left, right), (right, left)):
        for f in a:
            if not (
                isinstance(f, cst.BinaryOperation)
                and isinstance(f.operator, cst.Subtract)
                and const(ctx, f.left, env) == 1.0
            ):
                continue
            weight = const(ctx, f.right, env)
            if weight is None or not 0 < weight < 1:
                continue
            other = [g for g in b if not same_code(ctx, g, f.right)]
            if len(other) < len(b) and not other:
                return True  # `... + c`: the constant's own part is 1
            if len(a) == 1:
                return True  # `(1 - c) + c * q`
    return False


def _unguarded(ctx: Context, value: Value, depth: int) -> str | None:
    """A denominator bounded below by a negative value (`torch.maximum(n, finfo.min)`,
    `n.clamp(min=-1)`): the bound does not keep it from 0, and the guard shows the author
    expects the value to reach 0."""
    inner = denominator_reason(ctx, value, depth + 1)
    if inner is None:
        v = ctx.deref(value)
        if isinstance(v.node, cst.BinaryOperation) and isinstance(v.node.operator, cst.Power):
            inner = denominator_reason(ctx, Value(v.node.left, v.env), depth + 1)
    return UNGUARDED if inner else None


#: The reason for `x.max() - x.min()`: 0 for a constant input.
OWN_RANGE = "the range (max - min) of one tensor"
#: A range per row: any constant row of many (a dead channel, a blank sample) gives 0.
ROW_RANGE = "the range (max - min) of each row of a tensor"


def _own_range(ctx: Context, node: cst.BinaryOperation, env: Env) -> str | None:
    """`x.max() - x.min()`, `torch.amax(x, d) - torch.amin(x, d)`, `maxs - mins` with
    `maxs = x.view(b, -1).max(-1)[0]` (through names, indexing and reshapes): the range of
    one tensor, 0 where it is constant (a blank image, an all-zero activation map);
    ROW_RANGE where both extremes are taken along an axis (one range per row, channel or
    sample), else OWN_RANGE; None for anything else."""
    high, low = _extreme(ctx, Value(node.left, env)), _extreme(ctx, Value(node.right, env))
    if high is None or low is None or (high[0], low[0]) != ("max", "min") or high[1] != low[1]:
        return None
    return ROW_RANGE if high[2] and low[2] else OWN_RANGE


def _extreme(ctx: Context, value: Value) -> tuple[str, str, bool] | None:
    """A maximum or minimum of one tensor (`x.amax(d)`, `torch.min(x)`, through names and
    indexing): ("max" or "min", the tensor's code, whether it is taken along an axis)."""
    v, _ = strip(ctx, value)
    if not isinstance(v.node, cst.Call):
        return None
    o = op(ctx, v.node, v.env)
    if o is None or o.name not in ("max", "amax", "min", "amin") or o.input is None:
        return None
    if o.name in ("max", "min") and _binary_max(ctx, o):
        return None  # `torch.max(a, b)`: elementwise, not an extreme
    root, _ = strip(ctx, Value(o.input, v.env))
    return o.name.lstrip("a"), ctx.code(root.node), o.arg(0, "dim") is not None


#: The reason for a denominator whose guard has a negative bound.
UNGUARDED = "a value its guard does not keep from 0 (a negative lower bound)"


def denominator_reason(ctx: Context, value: Value, depth: int = 0) -> str | None:
    """Why a denominator can be 0: a norm, sum, count, std or variance without a guard (on
    any arm of an earlier `if` that assigns it)."""
    if depth > 10:
        return None
    return ctx.on_any_arm(value, lambda v: _denominator_reason(ctx, v, depth))


#: Reductions that are 0 only where every entry they reduce is 0, when no entry is negative.
_ZERO_TOGETHER = frozenset(
    {"a count", "a sum", "a norm", "a sum of squares", "a count another function makes"}
)
#: Of those, the ones that are never negative whatever they reduce.
_NEVER_NEGATIVE = _ZERO_TOGETHER - {"a sum"}


def zero_sum_terms(ctx: Context, value: Value, depth: int = 0) -> list[tuple[Value, str]] | None:
    """`tp + fp`, `pred.sum() + target.sum()` of 0/1 masks, `p + r` of two ratios of such
    counts: a sum whose every term is a count, norm or sum of values that are never negative
    (or a multiple or a ratio of one) is 0 where every term is (no positive prediction, two
    empty masks). Its terms, each with why it can be 0; None when a term is none of these
    (an eps, a positive value)."""
    if depth > 10:
        return None
    value = ctx.deref(value)
    node, env = value.node, value.env
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)):
        return None
    found = []
    for part in _added(node):
        term = _term_of(ctx, part, env)
        if term is None:
            return None
        reason = denominator_reason(ctx, term, depth + 1)
        if reason not in _ZERO_TOGETHER:
            return None
        if reason not in _NEVER_NEGATIVE and not _non_negative(ctx, term):
            return None  # `x.sum() + y.sum()` of signed values: 0 only by cancelling
        found.append((term, reason))
    return found


def overlap_masks(ctx: Context, num: Value, den: Value) -> tuple[Value, Value] | None:
    """The masks a and b of `2 * (a * b).sum() / (a.sum() + b.sum())` (a Dice or F1 score)
    or `(a * b).sum() / (a.sum() + b.sum() - (a * b).sum())` (an IoU): the overlap of two
    masks over their sizes, 0/0 where both are empty (a class absent from an image and from
    its prediction). None for another quotient, or where a or b is positive (probabilities,
    also from every caller: their sum is not 0)."""
    top = ctx.deref(num)
    inner = _summed(ctx, Value(unscaled(ctx, top.node, top.env), top.env))  # type: ignore[arg-type]
    if inner is None:
        return None
    pair = factors(inner.node)  # type: ignore[arg-type]
    bottom = ctx.deref(den)
    node = bottom.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        node = node.left  # `|a| + |b| - |a b|`
    if len(pair) != 2 or not (
        isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)
    ):
        return None
    x, y = (_summed(ctx, Value(t, bottom.env)) for t in (node.left, node.right))
    a, b = (Value(f, inner.env) for f in pair)
    if x is None or y is None or any(_probabilities(ctx, m) for m in (a, b)):
        return None
    if same_value(ctx, a, x) and same_value(ctx, b, y):
        return a, b
    return (a, b) if same_value(ctx, a, y) and same_value(ctx, b, x) else None


def fraction_of_whole(ctx: Context, num: Value, den: Value) -> bool:
    """`tp / (tp + fp)`, `c[1, 1] / (c[0, 1] + c[1, 0] + c[1, 1])`: a part over a sum of
    terms that holds it (a precision, recall or IoU of counts), 0/0 where every term is 0
    (no positive predicted, none present). False where a term is a number or an eps, or is
    positive (`e / (e + torch.exp(b))`)."""
    bottom = ctx.deref(den)
    terms = _added_terms(bottom.node)
    if len(terms) < 2 or len(terms) > 6:
        return False
    top = ctx.deref(num)
    part = Value(unscaled(ctx, top.node, top.env), top.env)  # type: ignore[arg-type]
    values = [Value(t, bottom.env) for t in terms]
    if any(const(ctx, t, bottom.env) is not None or eps_like(ctx, t, bottom.env) for t in terms):
        return False
    if not any(same_value(ctx, part, v) for v in values):
        return False
    if any(_probabilities(ctx, v) for v in values):
        return False
    # entries of one count table (`c[1, 1] / (c[0, 1] + c[1, 0] + c[1, 1])`), or counts
    bases = {ctx.code(t.value) for t in terms if isinstance(t, cst.Subscript)}
    if len(bases) == 1 and all(isinstance(t, cst.Subscript) for t in terms):
        table = Value(terms[0].value, bottom.env)  # type: ignore[attr-defined]
        return not constant_table(ctx, table) and not positive_value(ctx, table)
    return all(denominator_reason(ctx, v, 1) in _COUNTS for v in values)


#: Counts, also those a project function returns (`tp, fp, fn = stat_scores(p, y, c)`).
_COUNTS = _WHOLE_ZEROS | {"a count another function makes"}


def _added_terms(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The terms of `a + b + c` (left to right); [] for anything else."""
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)):
        return []
    left = _added_terms(node.left) or [node.left]
    return [*left, node.right]


def _probabilities(ctx: Context, value: Value) -> bool:
    """Positive here, or a parameter every caller passes a softmax, sigmoid or positive value."""
    if positive_value(ctx, value):
        return True
    found = ctx.deref(value)
    kinds = ("positive", "softmax", "sigmoid")
    return isinstance(found.node, cst.Name) and origin_of(ctx, found.node, kinds) is not None


def _summed(ctx: Context, value: Value) -> Value | None:
    """What `x.sum(...)` / `torch.sum(x, ...)` sums, following variables."""
    found = ctx.deref(value)
    o = op(ctx, found.node, found.env) if isinstance(found.node, cst.Call) else None
    if o is None or o.name != "sum" or o.input is None:
        return None
    return ctx.deref(Value(o.input, found.env))


def _added(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The terms of a sum `a + b + c`."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return [*_added(node.left), *_added(node.right)]
    return [node]


def _term_of(ctx: Context, part: cst.BaseExpression, env: Env) -> Value | None:
    """What a term of a sum is 0 with: itself, the other factor of a positive constant
    multiple (`0.5 * fp`), the numerator of a ratio (`tp / (tp + fp)`: 0 where tp is)."""
    if isinstance(part, cst.BinaryOperation) and isinstance(part.operator, cst.Multiply):
        for k, other in ((part.left, part.right), (part.right, part.left)):
            c = const(ctx, k, env)
            if c is not None:
                return _term_of(ctx, other, env) if c > 0 else None
    if isinstance(part, cst.BinaryOperation) and isinstance(part.operator, cst.Divide):
        found = ctx.deref(Value(part.left, env))
        if isinstance(found.node, cst.BinaryOperation) and isinstance(found.node.operator, cst.Add):
            return None  # a smoothed ratio, `(inter + smooth) / (...)`
        return Value(part.left, env) if _non_negative(ctx, Value(part.right, env)) else None
    if const(ctx, part, env) is not None:
        return None  # `n + 1e-8`: guarded
    found = ctx.deref(Value(part, env))
    if isinstance(found.node, cst.BinaryOperation) and isinstance(found.node.operator, cst.Divide):
        return _term_of(ctx, found.node, found.env)  # `precision = tp / (tp + fp)`, then `p + r`
    return Value(part, env)


def _made_elsewhere_reason(ctx: Context, node: cst.BaseExpression) -> str | None:
    """A norm, sum of squares or count that a project function returns or a caller passes."""
    found = origin_of(ctx, node, tuple(_MADE_ELSEWHERE))
    return _MADE_ELSEWHERE[found.kind] if found is not None else None


#: Why what a project function returns can be 0, by numlint.analysis.summaries kind.
_MADE_ELSEWHERE = {
    "norm": "a norm",
    "sum_of_squares": "a sum",
    "count": "a count another function makes",
    "softplus": SOFTPLUS,
}


def _squares_of_tensors(ctx: Context, node: cst.BinaryOperation, env: Env) -> bool:
    """`a ** 2 + b ** 2` with a and b computed by tensor ops (local means of two images):
    not `(1 - t) ** 2 + t ** 2` of a number, nor `sigma ** 2 + self.sigma_data ** 2`."""
    for side in (node.left, node.right):
        base = square_of(ctx, ctx.deref(Value(side, env)).node, env)  # type: ignore[arg-type]
        if base is None or not has_tensor_op(ctx, Value(base, env)):
            return False
    return True


_TRANSPOSES = frozenset({"t", "transpose", "swapaxes", "swapdims", "permute", "adjoint"})


def _with_own_transpose(ctx: Context, node: cst.BinaryOperation, env: Env) -> bool:
    """`v.T @ v`, `v_t @ v` with `v_t = v.transpose(-1, -2)` or an einops `rearrange` of
    `v` that only reorders its axes: a product of a tensor with its own transpose."""
    return _transpose_of(ctx, node.left, node.right, env) or _transpose_of(
        ctx, node.right, node.left, env
    )


def _transpose_of(ctx: Context, a: cst.BaseExpression, b: cst.BaseExpression, env: Env) -> bool:
    """`a` is a transpose of `b`."""
    found = ctx.deref(Value(a, env))
    node = found.node
    source: cst.BaseExpression | None = None
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT", "H", "mH"):
        source = node.value
    elif isinstance(node, cst.Call):
        callee = ctx.callee(node, found.env)
        if callee.method in _TRANSPOSES and callee.receiver is not None:
            source = callee.receiver
        elif callee.qualname in ("torch.transpose", "torch.t", "torch.swapaxes") and node.args:
            source = node.args[0].value
        elif callee.qualname == "einops.rearrange" and len(node.args) >= 2:
            pattern = node.args[1].value
            if isinstance(pattern, cst.SimpleString) and _reorders_only(pattern.evaluated_value):
                source = node.args[0].value
    if source is None:
        return False
    return same_value(ctx, Value(source, found.env), ctx.deref(Value(b, env)))


def _reorders_only(pattern: object) -> bool:
    """An einops pattern whose output holds the input's axes in another order."""
    if not isinstance(pattern, str) or "->" not in pattern:
        return False
    left, right = (side.split() for side in pattern.split("->", 1))
    return sorted(left) == sorted(right) and left != right


def _denominator_reason(ctx: Context, value: Value, depth: int) -> str | None:
    value = ctx.deref(value)
    if guarded_by_mutation(ctx, value):
        return None
    node, env = value.node, value.env
    if isinstance(node, cst.Subscript):
        if indexed_by_nonzero(ctx, node, env) or _kept_by_own_test(ctx, node, env):
            return None  # `n[(n != 0).nonzero()]`, `n[valid]` with `valid = n != 0`
        if _counts_of_own_entries(ctx, node, env):
            return None  # `torch.bincount(y)[y]`: each sample's class counts the sample
        return denominator_reason(ctx, Value(node.value, env, value.mutations), depth + 1)
    if isinstance(node, cst.Attribute) and node.attr.value == "values":
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
        if isinstance(operator, cst.Subtract):
            return _own_range(ctx, node, env)
        if isinstance(operator, cst.Add) and _squares_of_tensors(ctx, node, env):
            return _SUM_SQUARES  # `mu_x ** 2 + mu_y ** 2`: 0 where both are
        if isinstance(operator, cst.Add) and (terms := zero_sum_terms(ctx, value, depth)):
            reasons = {r for _, r in terms}  # `tp + fp`: no positive prediction
            return reasons.pop() if len(reasons) == 1 else "a sum"
        if isinstance(operator, cst.MatrixMultiply) and _with_own_transpose(ctx, node, env):
            return _SUM_SQUARES  # `v_t @ v`: a vector's squared length
        return None
    if isinstance(node, cst.Name) and depth > 0:
        # entries or terms of a norm or count a caller passes (`c[0, 1] + c[1, 1]` of a
        # confusion matrix); a bare parameter (`x / scale`) is not asked about: the question
        # searches the project for callers, and a scale or temperature is rarely a count
        return _made_elsewhere_reason(ctx, node)
    if not isinstance(node, cst.Call):
        return None
    if self_product(ctx, node, env):
        return _SUM_SQUARES  # `torch.dot(v, v)`, `torch.einsum("bi,bi->b", x, x)`
    callee = ctx.callee(node, env)
    if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
        return denominator_reason(ctx, Value(callee.receiver, env, value.mutations), depth + 1)
    if _histogram(ctx, Value(node, env)):
        return _PER_CLASS  # `x.sum(0) / torch.bincount(y, minlength=k)`: a class not drawn
    if callee.qualname in _DEGREES:
        # `degree(index, num_nodes=n)`: a node without edges; without n, the count of each
        # value up to the largest (`degree(batch)`: nodes per graph, none empty)
        return _DEGREE if positional(node, 1, "num_nodes") is not None else _VALUE_COUNT
    if callee.qualname is None and callee.method in _DEGREE_METHODS and not node.args:
        return _DEGREE  # DGL's `g.in_degrees()`: an isolated node
    o = op(ctx, node, env)
    if o is not None and o.name in ("log", "log1p") and o.input is not None:
        inner: Value | None = Value(o.input, env)
        if o.name == "log":  # `torch.log(deg + 1)`, also through a variable
            found = ctx.deref(Value(o.input, env))
            x = plus_one(ctx, found.node, found.env)  # type: ignore[arg-type]
            inner = Value(x, found.env) if x is not None else None
        if inner is not None and denominator_reason(ctx, inner, depth + 1) in _WHOLE_ZEROS:
            return "the log of 1 + a count"  # `torch.log(deg + 1)`: 0 for deg = 0
        return None
    if o is None and user_call(ctx, node, env):
        return _made_elsewhere_reason(ctx, node)  # `x / l2_norm(x)`, a helper elsewhere
    if o is None or o.input is None and o.name not in ("count",):
        return None
    if o.name == "softplus":
        return SOFTPLUS  # `var = F.softplus(h) ** 2`, then `/ (2 * var)`: 0 once h is far below 0
    if o.name in ("norm", "sum", "std", "var") and random_sample(ctx, Value(o.input, env)):
        return None  # a norm of Gaussian noise is 0 with probability 0
    if o.name == "norm":
        if _never_all_zero(ctx, Value(o.input, env)):
            return None  # `torch.norm(torch.eye(k))`, the norm of a positive tensor
        if _zero_entries_lifted(ctx, ctx.deref(Value(o.input, env))):
            return None  # `x[x == 0] = x[x == 0] + eps` before `x.norm(dim=-1)`
        return "a norm"
    if o.name == "mean" and (
        base := square_of(ctx, (found := ctx.deref(Value(o.input, env))).node, found.env)
    ):
        if centred(ctx, Value(base, found.env)):
            return "a variance"  # `((x - mu) ** 2).mean(-1)`: a hand-written variance
        return "a norm"  # a root mean square: `x.pow(2).mean(-1) ** 0.5`
    if o.name in ("max", "amax") and not _binary_max(ctx, o) and _absolute(ctx, o.input, env):
        return "the largest absolute value"  # `w / w.abs().amax(1)`: 0 for an all-zero row
    if o.name == "std":
        return "a standard deviation"
    if o.name == "var":
        return "a variance"
    if o.name == "count":
        if o.input is not None and _histogram(ctx, Value(o.input, env)):
            return None  # `torch.count_nonzero(torch.bincount(y))`: the classes present
        return "a count"
    if o.name == "sum" and o.input is not None:
        if _never_all_zero(ctx, Value(o.input, env)):
            return None  # a sum of positive values, of a window function
        found = ctx.deref(Value(o.input, env))
        base = square_of(ctx, found.node, found.env)  # type: ignore[arg-type]
        if base is not None and centred(ctx, Value(base, found.env)):
            return "a variance"  # `((x - x.mean()) ** 2).sum()`: 0 for a constant input
        if nonzero_selected(ctx, Value(o.input, env)):
            return None  # `m = m[m.sum(1) > 0]; ... / m.sum(1)`: the empty rows are gone
        if _hits_of_own_extreme(ctx, Value(o.input, env), o.arg(0, "dim")):
            return None  # `w = (p == p.max(0, keepdim=True)[0]).float(); w / w.sum(0)`
        if _counts_itself(ctx, Value(o.input, env)):
            return None  # `rank = (x >= x[i]).float().sum()`: entry i counts itself
        if _one_hot_rows(ctx, Value(o.input, env), o.arg(0, "dim")):
            return None  # `F.one_hot(y, k).sum()`: one 1 per row (a class column can be 0)
        if _histogram(ctx, Value(o.input, env)):
            return None  # `torch.bincount(y).sum()`: one per sample
        if _one_hot(ctx, Value(o.input, env)):
            return _PER_CLASS  # `F.one_hot(y, k).sum(0)`: a class no sample has
        return "a sum"
    if o.name in ("sqrt", "pow") and o.input is not None:
        root = "the square root"
        if o.name == "pow":
            e = o.arg(0, "exponent")
            power = const(ctx, e, env) if e is not None else None
            if power is None or power <= 0:
                return None
            root = "the square root" if power == 0.5 else "a power"
        inner = denominator_reason(ctx, Value(o.input, env), depth + 1)
        if inner:
            return inner
        sq = zero_reason(ctx, Value(o.input, env), "sqrt")
        return f"{root} of {sq}" if sq else None
    if o.name in ("clamp", "clamp_min"):
        low = clamp_bounds(o)[0]
        if low is None:
            return denominator_reason(ctx, Value(o.input, env), depth + 1)  # type: ignore[arg-type]
        if not is_zero(ctx, low, env) and not positive_bound(ctx, low, env):
            return _unguarded(ctx, Value(o.input, env), depth)  # type: ignore[arg-type]
        if not is_zero(ctx, low, env) or _zeros_replaced(ctx, Value(o.input, env)):  # type: ignore[arg-type]
            return None
        return "a value clamped at 0"
    if o.name == "maximum" or (o.name == "max" and _binary_max(ctx, o)):
        other = o.arg(0, "other")
        if (
            other is not None
            and not is_zero(ctx, other, env)
            and not positive_bound(ctx, other, env)
        ):
            return _unguarded(ctx, Value(o.input, env), depth)
        return None
    if o.name == "abs":
        return denominator_reason(ctx, Value(o.input, env), depth + 1)  # type: ignore[arg-type]
    if o.name in ("max", "amax") and o.input is not None and not _binary_max(ctx, o):
        inner = zero_reason(ctx, Value(o.input, env), "sum")
        if inner in _ZERO_FLOORED:  # `relu(x).amax(1)`: 0 where every channel is 0
            return f"the maximum of {inner}"
        if _shifted_by_own_minimum(ctx, Value(o.input, env, value.mutations)):
            return ROW_RANGE if o.arg(0, "dim") is not None else OWN_RANGE
    return None


def _shifted_by_own_minimum(ctx: Context, value: Value) -> bool:
    """A tensor less its own minimum (`x - x.amin(d, keepdim=True)`, or `x.sub_(x.min(...))`
    in place before): its maximum is then its range, 0 where it is constant."""
    v, _ = strip(ctx, value)  # through `flatten`, `view`, names
    node = v.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        return _minimum_of(ctx, node.right, v.env, node.left)
    name = node.value if isinstance(node, cst.Name) else None
    for stmt in v.mutations:
        if (
            name is not None
            and isinstance(stmt, cst.Expr)
            and isinstance(stmt.value, cst.Call)
            and call_name(stmt.value) == "sub_"
            and stmt.value.args
            and _minimum_of(ctx, stmt.value.args[0].value, v.env, node)
        ):
            return True  # `cams.sub_(cams.flatten(1).min(-1).values[:, None])`
    return False


def _minimum_of(ctx: Context, expr: cst.BaseExpression, env: Env, of: cst.BaseExpression) -> bool:
    """`expr` is a minimum (`amin`, `min`, `.values` of one) taken of `of` itself."""
    found, _ = strip(ctx, Value(expr, env))
    if isinstance(found.node, cst.Attribute) and found.node.attr.value == "values":
        found = Value(found.node.value, found.env)
    low = _extreme(ctx, found)
    of_code = ctx.code(strip(ctx, Value(of, env))[0].node)
    return low is not None and low[0] == "min" and low[1] == of_code


#: Values whose maximum is 0 wherever all of its entries are (nothing is below 0).
_ZERO_FLOORED = frozenset({"a ReLU output", "a value clamped at 0"})


def _zero_entries_lifted(ctx: Context, value: Value) -> bool:
    """An in-place write, since the assignment, that lifts the value's own zero entries
    (`x[x == 0] = eps`, `x[x.abs() < tiny] = x[x.abs() < tiny] + eps`, `x.clamp_(min=eps)`):
    no entry is 0 after it, so neither is a norm of it."""
    for stmt in value.mutations:
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            call = stmt.value
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            low = positional(call, 0, "min")
            if method in ("clamp_", "clip_", "clamp_min_") and positive_bound(ctx, low, value.env):
                return True
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0].target
        if not isinstance(target, cst.Subscript) or not isinstance(target.value, cst.Name):
            continue
        name = target.value.value
        tests = [
            n for el in target.slice for n in descendants(el)
            if isinstance(n, cst.Comparison) and len(n.comparisons) == 1
            and isinstance(n.comparisons[0].operator, _AT_ZERO) and name in names(n.left)
        ]  # fmt: skip
        if tests and positive_bound(ctx, stmt.value, value.env):
            return True
    return False


def _zeros_replaced(ctx: Context, value: Value, depth: int = 0) -> bool:
    """The value comes from one whose zeros were overwritten in place (`d[d == 0] = 1`),
    through `torch.where` arms, shifts by a constant and casts: clamping that at 0 keeps an
    index range (`d.clamp(0, max_dist)`), it does not bring the zeros back."""
    if depth > 6:
        return False
    value = ctx.deref(value)
    if guarded_by_mutation(ctx, value):
        return True
    node, env = value.node, value.env
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        if const(ctx, node.right, env) is not None:
            return _zeros_replaced(ctx, Value(node.left, env), depth + 1)
        return False
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, env)
    if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
        return _zeros_replaced(ctx, Value(callee.receiver, env), depth + 1)
    o = op(ctx, node, env)
    if o is not None and o.name == "where":
        return all(
            a is not None and _zeros_replaced(ctx, Value(a, env), depth + 1) for a in _where_arms(o)
        )
    return False


def exp_bounded(
    ctx: Context, arg: cst.BaseExpression, env: Env, shifted_only: bool = False
) -> bool:
    """An exp argument bounded above, so exp cannot overflow: `-x.abs()`, `x - x.max()`,
    `x.clamp(max=c)`, `-F.relu(x)`, `-(x ** 2)`, `torch.minimum(x, c)`.

    With `shifted_only`, only `x - max(x)` counts (its largest term is exactly 1, so a sum of
    exponentials can neither overflow nor underflow to 0).
    """
    if _shifted_in_place(ctx, Value(arg, env)):
        return True  # `logits.sub_(logits_max)` earlier: the stabilisation idiom in place
    value = ctx.deref(Value(arg, env))
    node, env = value.node, value.env
    if const(ctx, node, env) is not None:
        return True
    scaled = _scaled_part(ctx, node, env)  # `(x - m) / t`, `self.r * (x - m)`
    if scaled is not None:
        node = ctx.deref(Value(scaled, env)).node
    if shifted_only:
        parts = _subtraction(ctx, node, env)
        if parts is not None:
            return is_max_of(ctx, ctx.deref(Value(parts[1], env)))
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            if _minus_its_minimum(ctx, node.expression, env):
                return True  # `-(x - x.min())`: a soft-min shifted by its minimum
            return _max_with_zero(ctx, ctx.deref(Value(node.expression, env)))  # `0 - m`
        return False
    if _non_positive(ctx, value):
        return True
    parts = _subtraction(ctx, node, env)
    if parts is not None:
        return is_max_of(ctx, ctx.deref(Value(parts[1], env)))
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


def _minus_its_minimum(ctx: Context, expr: cst.BaseExpression, env: Env) -> bool:
    """`x - x.min()`, `x - torch.min(x)`, `x - minimum` (a name bound to one): every entry is
    at least 0, the smallest exactly 0."""
    parts = _subtraction(ctx, ctx.deref(Value(expr, env)).node, env)
    if parts is None:
        return False
    low = ctx.deref(Value(parts[1], env))
    node = low.node.value if isinstance(low.node, cst.Attribute) else low.node
    if isinstance(node, cst.Subscript):
        node = node.value  # `torch.min(x, 0)[0]`
    o = op(ctx, node, low.env)  # type: ignore[arg-type]
    return (
        o is not None
        and o.name in ("min", "amin")
        and o.input is not None
        and same_code(ctx, o.input, parts[0])
    )


def _subtraction(
    ctx: Context, node: cst.BaseExpression, env: Env
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(a, b) of `a - b`, `a.sub(b)`, `a.subtract(b)`, `torch.sub(a, b)`."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        return node.left, node.right
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, env)
    args = [a.value for a in node.args if a.keyword is None]
    if callee.method in ("sub", "subtract") and callee.receiver is not None and len(args) == 1:
        return callee.receiver, args[0]
    if callee.qualname in ("torch.sub", "torch.subtract") and len(args) == 2:
        return args[0], args[1]
    return None


def _max_with_zero(ctx: Context, value: Value) -> bool:
    """`torch.clamp(-x, 0, inf)`, `x.clamp(min=0)`, `torch.maximum(x, zeros)`: a maximum taken
    with 0, so `exp(-m)` is the max-shifted exp(0) term of `log(exp(0 - m) + exp(x - m))`."""
    o = op(ctx, value.node, value.env)
    if o is None or not is_max_of(ctx, value):
        return False
    if o.name in ("clamp", "clamp_min"):
        low = clamp_bounds(o)[0]
        return low is not None and is_zero(ctx, low, value.env)
    other = o.arg(0, "other")
    return other is not None and is_zero(ctx, other, value.env)


def _scaled_part(ctx: Context, node: cst.BaseExpression, env: Env) -> cst.BaseExpression | None:
    """`d` in `d / t`, `c * d`, `d * c` with `c`/`t` a constant or a plain name or attribute
    (a temperature or a pooling exponent): scaling keeps a max-shifted term at exp(0)."""
    if not isinstance(node, cst.BinaryOperation):
        return None
    scalar = (cst.Name, cst.Attribute, cst.Integer, cst.Float)
    if isinstance(node.operator, cst.Divide) and isinstance(node.right, scalar):
        return node.left
    if isinstance(node.operator, cst.Multiply):
        left, right = node.left, node.right
        if isinstance(left, scalar) and isinstance(right, cst.BinaryOperation):
            return right
        if isinstance(right, scalar) and isinstance(left, cst.BinaryOperation):
            return left
    return None


def _shifted_in_place(ctx: Context, value: Value) -> bool:
    """The name was shifted by its maximum in place since it was bound: `x.sub_(m)` or
    `x -= m` with m a maximum."""
    node = value.node
    if not isinstance(node, cst.Name):
        return False
    binding = ctx.lookup(node.value, value.env)
    if binding is None:
        return False
    for stmt in binding.mutations:
        shift = None
        if isinstance(stmt, cst.AugAssign) and isinstance(stmt.operator, cst.SubtractAssign):
            shift = stmt.value
        elif isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            call = stmt.value
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "sub_":
                shift = positional(call, 0, "other")
        if shift is not None and is_max_of(ctx, ctx.deref(Value(shift, binding.env))):
            return True
    return False


def clamped_inside_one(ctx: Context, value: Value, depth: int = 0) -> bool:
    """`c.clamp(-1 + eps, 1 - eps)`: both bounds strictly inside (-1, 1) in float32; or the
    entries at +-1 replaced: `r.masked_fill(~(r.abs() < 1), 0)`, `torch.where(r.abs() < 1,
    r, 0)` (also after further fills with values inside (-1, 1))."""
    value = ctx.deref(value)
    o = op(ctx, value.node, value.env)
    if o is not None and o.name in ("masked_fill", "where") and depth < 4:
        return _ones_replaced(ctx, o, value.env, depth)
    if o is None or o.name != "clamp":
        return False
    low, high = clamp_bounds(o)

    def strict(bound: cst.BaseExpression | None, edge: float) -> bool:
        if bound is None:
            return False
        v = const(ctx, bound, value.env)
        return v is None or (abs(edge - v) >= FLOAT32_HALF_ULP_BELOW_ONE and abs(v) < 1)

    return strict(low, -1.0) and strict(high, 1.0)


def _ones_replaced(ctx: Context, o: Op, env: Env, depth: int) -> bool:
    if o.name == "where":
        test, kept, fill = (positional(o.call, i) for i in range(3))
        inside = True
    else:
        kept, test, fill = o.input, o.arg(0, "mask"), o.arg(1, "value")
        inside = False
    v = const(ctx, fill, env) if fill is not None else None
    if kept is None or test is None or v is None or abs(v) >= 1:
        return False
    if clamped_inside_one(ctx, Value(kept, env), depth + 1):
        return True  # `safe = corr.masked_fill(underflow, 0)` of a corr already inside
    node = ctx.deref(Value(test, env)).node
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        node, inside = ctx.deref(Value(node.expression, env)).node, not inside
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return False
    target = node.comparisons[0]
    subject = node.left
    if isinstance(subject, cst.Call) and call_name(subject) == "abs":
        inner = ctx.callee(subject, env).receiver or positional(subject, 0, "input")
        subject = inner if inner is not None else subject
    if const(ctx, target.comparator, env) != 1.0 or not same_code(ctx, subject, kept):
        return False
    if inside:  # the test holds where kept: it must say |r| < 1
        return isinstance(target.operator, cst.LessThan)
    return isinstance(target.operator, cst.GreaterThanEqual)  # filled where |r| >= 1


def _one_excluded(ctx: Context, base: cst.BaseExpression) -> bool:
    """The node being visited runs only where `base` is not +-1: the `else` of
    `f if x == 1 else ...`, or under `if abs(x) < 1:` / `if x != 1:`."""
    text = ctx.code(base).strip()
    for parent, child in zip(reversed(ctx.stack[:-1]), reversed(ctx.stack[1:]), strict=False):
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if not isinstance(parent, (cst.If, cst.IfExp)):
            continue
        test = parent.test
        if isinstance(test, cst.Call) and call_name(test) == "isclose" and len(test.args) >= 2:
            a, b = test.args[0].value, test.args[1].value  # `torch.isclose(x, one)`
            one = next((e for e in (a, b) if _is_one(ctx, e)), None)
            other = b if one is a else a
            if one is not None and ctx.code(other).strip() == text and child is parent.orelse:
                return True
            continue
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            continue
        subject, target = test.left, test.comparisons[0]
        if isinstance(subject, cst.Call) and call_name(subject) == "abs" and subject.args:
            subject = subject.args[0].value
        if ctx.code(subject).strip() != text or const(ctx, target.comparator) != 1.0:
            continue
        in_else = child is parent.orelse
        if in_else and isinstance(target.operator, cst.Equal):
            return True
        if not in_else and isinstance(target.operator, (cst.LessThan, cst.NotEqual)):
            return True
    return False


def _is_one(ctx: Context, expr: cst.BaseExpression) -> bool:
    """`1.0`, or `torch.tensor(1.0, ...)`."""
    if const(ctx, expr) == 1.0:
        return True
    return isinstance(expr, cst.Call) and bool(expr.args) and const(ctx, expr.args[0].value) == 1.0


def _non_positive(ctx: Context, value: Value, depth: int = 0) -> bool:
    """`-(x ** 2)`, `-x.abs()`, `x.abs().neg()`, `-d ** 2 / (2 * s ** 2)`, `-0.5 * r.pow(2)`:
    minus a non-negative value, scaled by non-negative factors (a Gaussian's exponent)."""
    if depth > 6:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = node.expression
        if isinstance(inner, cst.Name) and _positive_default(ctx, inner.value):
            return True  # `-t` in `def uniform_loss(x, t=2)`: a scale kept positive
        return _non_negative(ctx, Value(inner, env), depth + 1)
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, env)
        if callee.method == "neg" and callee.receiver is not None and not node.args:
            return _non_negative(ctx, Value(callee.receiver, env), depth + 1)
        if callee.qualname in ("torch.neg", "torch.negative") and node.args:
            return _non_negative(ctx, Value(node.args[0].value, env), depth + 1)
        o = op(ctx, node, env)
        other = o.arg(0, "other") if o is not None and o.name in ("mul", "div") else None
        if o is not None and o.input is not None and other is not None:  # `d.mul(-t)`
            left, right = Value(o.input, env), Value(other, env)
            if _non_positive(ctx, left, depth + 1) and _non_negative(ctx, right, depth + 1):
                return True
            return _non_negative(ctx, left, depth + 1) and _non_positive(ctx, right, depth + 1)
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


def _declared_positive(ctx: Context, node: cst.BaseExpression) -> bool:
    """`self.<attr>` of a distribution class whose `arg_constraints` declare that parameter
    positive (`"concentration": constraints.positive`, also `independent(constraints.positive,
    1)` or `greater_than(0.)`): the distribution validates it."""
    if not (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and ctx.class_scope is not None
    ):
        return False
    body = ctx.class_scope.node.body  # type: ignore[attr-defined]
    lines = [s for s in getattr(body, "body", ()) if isinstance(s, cst.SimpleStatementLine)]
    for stmt in lines:
        for small in stmt.body:
            if not (isinstance(small, cst.Assign) and isinstance(small.value, cst.Dict)):
                continue
            target = small.targets[0].target
            if not (isinstance(target, cst.Name) and target.value == "arg_constraints"):
                continue
            for element in small.value.elements:
                key = element.key if isinstance(element, cst.DictElement) else None
                if not isinstance(key, cst.SimpleString) or key.evaluated_value != node.attr.value:
                    continue
                text = ctx.code(element.value)
                return bool(re.search(r"\bpositive\b(?!_)|greater_than\(\s*0", text))
    return False


def setting_value(ctx: Context, node: cst.BaseExpression) -> float | None:
    """The number a `self.<attr>` setting holds: a constant assigned to it, or the constant
    default of the `__init__` parameter it is assigned from (`self.t = t` with `t=2.0`);
    None when the class assigns it different things or anything else."""
    cls = ctx.class_scope
    if not (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and cls is not None
    ):
        return None
    name = node.attr.value
    held = cls.attrs.get(name)
    if held is None or name in cls.varied:
        return None
    c = const(ctx, held.node, held.env)
    if c is not None or not isinstance(held.node, cst.Name):
        return c
    body = getattr(cls.node, "body", None)
    for stmt in getattr(body, "body", ()):
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
            for param in (*stmt.params.params, *stmt.params.kwonly_params):
                if param.name.value == held.node.value and param.default is not None:
                    return const(ctx, param.default, {})
    return None


def _non_negative(ctx: Context, value: Value, depth: int = 0) -> bool:
    """A square, absolute value, norm, ReLU, exp or softplus output, a non-negative constant
    or setting, or products, quotients and sums of them."""
    if depth > 6:
        return False
    c = setting_value(ctx, value.node)  # `self.t` set from `t: float = 2.0`
    value = ctx.deref(value)
    node, env = value.node, value.env
    if c is None:
        c = const(ctx, node, env)
    if c is not None:
        return c >= 0
    if square_of(ctx, node, env) is not None or isinstance(node, cst.Comparison):
        return True  # a 0/1 mask, `pred == 1`
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, (cst.BitAnd, cst.BitOr)):  # `(p == 1) & (t == 1)`
            return _non_negative(ctx, Value(node.left, env), depth + 1) and _non_negative(
                ctx, Value(node.right, env), depth + 1
            )
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
    if isinstance(node, cst.Attribute) and node.attr.value == "shape":
        return True  # `x.shape[1]`: a size
    if isinstance(node, cst.Call) and call_name(node) in ("size", "numel", "len"):
        return True
    if isinstance(node, cst.Name) and _positive_default(ctx, node.value):
        return True  # `tau=200`: a setting given as a non-negative number
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, env)
        qual = callee.qualname
        if qual in _DISTANCES or qual in _NON_NEGATIVE_MAKERS or qual in COUNT_FUNCTIONS:
            return True
        if qual in ("torch.arange", "torch.linspace"):
            return _range_from_non_negative(ctx, node, qual, env)
        if callee.receiver is not None and f"torch.{callee.method}" in COUNT_FUNCTIONS:
            return True  # `x.bincount()`
        if callee.receiver is not None and callee.method in TRANSPARENT_METHODS:
            return _non_negative(ctx, Value(callee.receiver, env), depth + 1)  # `s.to(x)`
        first = positional(node, 0, "tensors") if qual in JOINS else None
        if isinstance(first, (cst.Tuple, cst.List)):  # `torch.cat((d, d, zeros))`
            return all(_non_negative(ctx, Value(e.value, env), depth + 1) for e in first.elements)
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


def _range_from_non_negative(ctx: Context, node: cst.Call, qual: str, env: Env) -> bool:
    """`torch.arange(n)`, `torch.arange(0.0, n, 1.0)`, `torch.linspace(0, 1, n)`: every
    entry is >= 0 (arange counts up from a start >= 0; linspace lies between two ends >= 0)."""
    args = [a for a in node.args if a.keyword is None and not a.star]
    if qual == "torch.arange":
        if len(args) == 1:
            return True  # from 0
        start, step = (args[0].value if args else None), (args[2].value if len(args) > 2 else None)
        low = const(ctx, start, env) if start is not None else None
        pace = const(ctx, step, env) if step is not None else 1.0
        return low is not None and low >= 0 and pace is not None and pace > 0
    ends = [const(ctx, a.value, env) for a in args[:2]]
    return len(ends) == 2 and all(e is not None and e >= 0 for e in ends)


def _positive_default(ctx: Context, name: str) -> bool:
    """`name` is a parameter of the function whose default is a constant >= 0."""
    param = ctx.parameter(name)
    if param is None or param.default is None:
        return False
    low = const(ctx, param.default, {})
    return low is not None and low >= 0


_NON_NEGATIVE_MAKERS = frozenset(
    {"torch.zeros", "torch.zeros_like", "torch.ones", "torch.ones_like",
     "torch.nn.functional.one_hot"}
)  # fmt: skip
_DISTANCES = frozenset(
    {"torch.cdist", "torch.nn.functional.pdist", "torch.pdist", "torch.dist",
     "torch.nn.functional.pairwise_distance", "torch.pairwise_distance"}
)  # fmt: skip


def _gathered_at_argmax(ctx: Context, node: cst.Call, callee, env: Env) -> bool:
    """`torch.gather(x, 1, idx)` / `x.gather(1, idx)` with `_, idx = torch.max(x, 1)` or `idx =
    x.argmax(1)`: the maximum picked by its index (the CRF `log_sum_exp` helpers)."""
    parts = gather_parts(node, callee)
    if parts is None:
        return False
    source, index = parts
    value = Value(index, env)
    for _ in range(6):
        found = ctx.deref(value)
        if isinstance(found.node, cst.Name):  # `_, idx = torch.max(x, 1)`
            unpacked = unpacking_call(ctx, found.node, found.env)
            if unpacked is None:
                return False
            found = unpacked
        if not isinstance(found.node, cst.Call):
            return False
        inner = ctx.callee(found.node, found.env)  # type: ignore[arg-type]
        if inner.method in TRANSPARENT_METHODS and inner.receiver is not None:
            value = Value(inner.receiver, found.env)
            continue
        picked = inner.receiver if inner.receiver is not None else positional(found.node, 0)
        return (
            call_name(found.node) in ("max", "argmax")
            and picked is not None
            and same_code(ctx, picked, source)
        )
    return False


def is_max_of(ctx: Context, value: Value, depth: int = 0) -> bool:
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
            return is_max_of(ctx, deref, depth + 1)
        source = unpacked_from(ctx, node, env)  # `m, _ = torch.max(x, dim)`
        if source is not None:
            return is_max_of(ctx, source, depth + 1)
        return "max" in node.value.lower()
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, env)  # type: ignore[arg-type]
    if _gathered_at_argmax(ctx, node, callee, env):
        return True
    if callee.receiver is not None and (
        callee.method in TRANSPARENT_METHODS or callee.method in ("masked_fill", "squeeze")
    ):
        return is_max_of(ctx, ctx.deref(Value(callee.receiver, env)), depth + 1)
    if callee.qualname in ("torch.masked_fill", "torch.squeeze", "torch.unsqueeze"):
        inp = positional(node, 0, "input")
        return inp is not None and is_max_of(ctx, ctx.deref(Value(inp, env)), depth + 1)
    o = op(ctx, node, env)  # type: ignore[arg-type]
    if o is not None and o.name in ("max", "maximum"):
        return True
    if o is not None and o.name in ("clamp", "clamp_min") and o.input is not None:
        low, high = clamp_bounds(o)
        if low is not None and (high is None or const(ctx, high, env) == math.inf):
            return True  # `y.clamp(min=x)` is max(x, y); a clamped maximum stays one
    if callee.qualname in ("torch.amax", "torch.logsumexp") or callee.method in (
        "amax",
        "logsumexp",
    ):
        return True
    name = callee.qualname or callee.method
    if name is None and isinstance(node.func, cst.Name):
        name = node.func.value
    return name is not None and "max" in name.rsplit(".", 1)[-1].lower() and o is None


_VIEW_FUNCTIONS = frozenset(
    {"einops.rearrange", "einops.repeat", "torch.unsqueeze", "torch.transpose", "torch.t",
     "torch.squeeze", "torch.reshape"}
)  # fmt: skip


def expanded_distance(ctx: Context, value: Value) -> bool:
    """`|x|**2 + |y|**2 - 2 * x @ y.T` (through variables, views, einops and `addmm(...,
    alpha=-2)`): a squared distance expanded into norms and an inner product. For vectors
    close together the terms cancel and rounding leaves a value below 0, so its root is
    NaN in the forward pass."""
    terms: list[tuple[int, cst.BaseExpression, Env]] = []
    _signed_terms(ctx, value.node, value.env, 1, terms, 0)  # type: ignore[arg-type]
    if len(terms) < 2:
        return False
    product = any(s < 0 and _inner_product(ctx, n, e) for s, n, e in terms)
    return product and any(s > 0 and _squared_norm(ctx, n, e) for s, n, e in terms)


def _signed_terms(
    ctx: Context,
    node: cst.BaseExpression,
    env: Env,
    sign: int,
    out: list[tuple[int, cst.BaseExpression, Env]],
    depth: int,
) -> None:
    """The terms of a sum, with their signs (`a - 2 * b` -> (+1, a), (-1, b))."""
    if depth > 8 or len(out) > 8:
        return
    if isinstance(node, cst.Name):
        found = ctx.deref(Value(node, env))
        if found.node is not node and isinstance(found.node, cst.BaseExpression):
            _signed_terms(ctx, found.node, found.env, sign, out, depth + 1)
            return
    inner = _view_of(ctx, node, env)
    if inner is not None:
        _signed_terms(ctx, inner, env, sign, out, depth + 1)
        return
    if isinstance(node, cst.BinaryOperation):
        operator = node.operator
        if isinstance(operator, (cst.Add, cst.Subtract)):
            _signed_terms(ctx, node.left, env, sign, out, depth + 1)
            flip = -1 if isinstance(operator, cst.Subtract) else 1
            _signed_terms(ctx, node.right, env, sign * flip, out, depth + 1)
            return
        if isinstance(operator, cst.Multiply):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                c = const(ctx, a, env)
                if c is not None and c != 0:
                    _signed_terms(ctx, b, env, sign * (1 if c > 0 else -1), out, depth + 1)
                    return
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        _signed_terms(ctx, node.expression, env, -sign, out, depth + 1)
        return
    if isinstance(node, cst.Call) and call_name(node) in ("addmm", "addmm_", "baddbmm"):
        alpha = keyword(node, "alpha")
        c = const(ctx, alpha, env) if alpha is not None else 1.0
        callee = ctx.callee(node, env)
        start = positional(node, 0, "input") if callee.receiver is None else callee.receiver
        if c is not None and start is not None:
            _signed_terms(ctx, start, env, sign, out, depth + 1)
            out.append((sign * (1 if c > 0 else -1), node, env))
            return
    out.append((sign, node, env))


def _view_of(ctx: Context, node: cst.BaseExpression, env: Env) -> cst.BaseExpression | None:
    """The tensor that `x[:, None]`, `x.unsqueeze(1)`, `rearrange(x, ...)` is a view of."""
    if isinstance(node, cst.Subscript):
        return node.value
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, env)
    if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
        return callee.receiver
    if callee.qualname in _VIEW_FUNCTIONS and node.args:
        return node.args[0].value
    return None


def _inner_product(ctx: Context, node: cst.BaseExpression, env: Env) -> bool:
    """`x @ y.T`, `torch.mm(x, y.t())`, `einsum('id,jd->ij', x, y)`, `addmm(..)`."""
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, cst.MatrixMultiply)
    if isinstance(node, cst.Call) and call_name(node) in ("addmm", "addmm_", "baddbmm"):
        return True
    if isinstance(node, cst.Call) and ctx.qualname(node.func, env) == "einops.einsum":
        return True
    o = op(ctx, node, env) if isinstance(node, cst.Call) else None
    return o is not None and o.name in ("matmul", "einsum")


def _squared_norm(ctx: Context, node: cst.BaseExpression, env: Env) -> bool:
    """`(x ** 2).sum(-1)`, `x.pow(2).sum(1)`, `reduce(x ** 2, 'b n d -> b n', 'sum')`,
    `x.norm(dim=1) ** 2`."""
    if isinstance(node, cst.Call) and ctx.qualname(node.func, env) == "einops.reduce":
        kind = positional(node, 2, "reduction")
        if isinstance(kind, cst.SimpleString) and kind.evaluated_value == "sum" and node.args:
            return square_of(ctx, node.args[0].value, env) is not None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power):
        o = op(ctx, node.left, env) if isinstance(node.left, cst.Call) else None
        return const(ctx, node.right, env) == 2.0 and o is not None and o.name == "norm"
    o = op(ctx, node, env) if isinstance(node, cst.Call) else None
    if o is None or o.name != "sum" or o.input is None:
        return False
    return square_of(ctx, ctx.deref(Value(o.input, env)).node, env) is not None  # type: ignore[arg-type]


def eps_like(ctx: Context, expr: cst.BaseExpression, env: Env) -> bool:
    """A small positive guard: a constant, `finfo(...).eps`, a name spelt as an eps."""
    return _eps_like(ctx, expr, env)


def subtraction(
    ctx: Context, node: cst.BaseExpression, env: Env
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(a, b) of `a - b`, `a.sub(b)`, `a.subtract(b)`, `torch.sub(a, b)`."""
    return _subtraction(ctx, node, env)


#: Ops whose result is kept away from 0 or 1 by a bound: a guarded probability.
_BOUNDING = frozenset({"clamp", "clamp_min", "clamp_max", "clip", "maximum", "minimum"})


def complemented_probability(ctx: Context, value: Value) -> str | None:
    """Why a log's argument is a probability that can reach exactly 0: the code pairs it with
    its complement, as a hand-written binary cross-entropy or focal loss does. `log(p)` in a
    function that also takes `log(1 - p)`, `log(1 - p)` beside `log(p)`, or the probability
    of the true class picked by the label (`where(y == 1, p, 1 - p)`, `p * y + (1 - p) *
    (1 - y)`). A probability saturates: a float32 sigmoid is exactly 1 above a logit of
    about 17, so `1 - p` (or `p` of the other class) is 0. None when `p` is bounded (a
    clamp, `+ eps`, an in-place floor) or is a softmax or sigmoid output (NUM101/NUM102)."""
    found = ctx.deref(value)
    node, env = found.node, found.env
    picked = _picked_by_label(ctx, node, env)
    if picked is not None:
        return None if _bounded(ctx, picked) else "the probability of the true class"
    base = _one_minus(ctx, node)
    complement = base is not None
    p = Value(base, env) if base is not None else found
    if _bounded(ctx, p) or ctx.function is None or not _weighted(ctx):
        return None  # `log(p) - log(1 - p)` is a logit, not a cross-entropy
    for call in descendants(ctx.function.body):
        if not isinstance(call, cst.Call) or call is node:
            continue
        o = op(ctx, call, env)
        if o is None or o.name != "log" or o.input is None:
            continue
        other = ctx.deref(Value(o.input, env)).node
        if complement and same_value(ctx, Value(other, env), p):
            return "`1 - p` of a probability p (the code takes `log(p)` too)"
        other_base = None if complement else _one_minus(ctx, other)
        if other_base is not None and same_value(ctx, Value(other_base, env), p):
            return "a probability (the code takes `log(1 - p)` too)"
    return None


def _one_minus(ctx: Context, node: cst.CSTNode) -> cst.BaseExpression | None:
    """The `p` of `1 - p`, else None."""
    if (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Subtract)
        and is_one(ctx, node.left)
    ):
        return node.right
    return None


def _weighted(ctx: Context) -> bool:
    """The log being visited is a factor of a product (`y * log(p)`, `-(1 - y) * log(1 - p)`):
    a cross-entropy term weighted by its label."""
    for parent in ctx.ancestors():
        if isinstance(parent, cst.UnaryOperation):
            continue
        return isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Multiply)
    return False


def _picked_by_label(ctx: Context, node: cst.CSTNode, env: Env) -> Value | None:
    """p in `where(y == 1, p, 1 - p)` (either order) or `p * y + (1 - p) * (1 - y)`."""
    if isinstance(node, cst.Call):
        o = op(ctx, node, env)
        if o is None or o.name != "where":
            return None
        a, b = _where_arms(o)
        pairs = [(a, b), (b, a)]
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        pairs = [(x, y) for x in factors(node.left) for y in factors(node.right)] + [
            (y, x) for x in factors(node.left) for y in factors(node.right)
        ]
    else:
        return None
    for p, q in pairs:
        if p is None or q is None:
            continue
        base = _one_minus(ctx, ctx.deref(Value(q, env)).node)
        if base is not None and same_value(ctx, Value(base, env), Value(p, env)):
            return Value(p, env)
    return None


def bounded_probability(ctx: Context, p: Value) -> bool:
    """A probability kept off 0 (see _bounded)."""
    return _bounded(ctx, p)


def _bounded(ctx: Context, p: Value, depth: int = 0) -> bool:
    """A probability kept off 0 and 1 (`p.clamp(eps, 1 - eps)`, `p + eps`, an in-place
    floor), a softmax or sigmoid output (NUM101/NUM102 report those), or a constant; also
    a part or view of one (`p[:, 1].unsqueeze(1)`), on any arm of an earlier `if`."""
    if depth > 6:
        return False
    return ctx.on_any_arm(p, lambda v: _bounded_here(ctx, v, depth) or None) is True


def _bounded_here(ctx: Context, p: Value, depth: int) -> bool:
    found = ctx.deref(p)
    node, env = found.node, found.env
    if isinstance(node, cst.Name) and ctx.parameter(node.value) is not None:
        return bounded_by_callers(ctx, node.value)  # `loss(p.clamp(eps, 1 - eps), y)`
    if isinstance(node, cst.Subscript):
        return _bounded(ctx, Value(node.value, env, found.mutations), depth + 1)
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, env)
        if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
            return _bounded(ctx, Value(callee.receiver, env, found.mutations), depth + 1)
    if guarded_by_mutation(ctx, found) or const(ctx, node, env) is not None:
        return True
    if activation(ctx, found, ("softmax", "sigmoid")) is not None:
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _eps_like(ctx, node.left, env) or _eps_like(ctx, node.right, env)
    if not isinstance(node, cst.Call):
        return False
    o = op(ctx, node, env)
    if o is not None and o.name in _BOUNDING:
        return True
    # made by a model or helper elsewhere: NUM101/NUM102 name it
    return origin_of(ctx, node, ("softmax", "sigmoid")) is not None


def _hand_relu(ctx: Context, node: cst.BinaryOperation, env: Env) -> bool:
    """`x * (x > 0)`, `(x >= 0).float() * x`: a value times its own test against 0."""
    for value, test in ((node.left, node.right), (node.right, node.left)):
        t = strip(ctx, Value(test, env))[0].node
        if not isinstance(t, cst.Comparison) or len(t.comparisons) != 1:
            continue
        target = t.comparisons[0]
        if isinstance(target.operator, (cst.GreaterThan, cst.GreaterThanEqual)) and is_zero(
            ctx, target.comparator, env
        ):
            if t.left.deep_equals(value):
                return True
    return False


def _floor_at_zero(ctx: Context, node: cst.Call, qualname: str | None, env: Env) -> str | None:
    """`F.hardtanh(x, 0.0, 1.0)` (a clamp at 0 from below) and `F.threshold(x, t, 0.0)`
    (entries at or below t set to exactly 0)."""
    if qualname == "torch.nn.functional.hardtanh":
        low = positional(node, 1, "min_val")
        return "a value clamped at 0" if low is not None and is_zero(ctx, low, env) else None
    if qualname in ("torch.nn.functional.threshold", "torch.threshold"):
        fill = positional(node, 2, "value")
        return "a ReLU output" if fill is not None and is_zero(ctx, fill, env) else None
    return None


def _absolute(ctx: Context, expr: cst.BaseExpression, env: Env) -> bool:
    """`x.abs()`, `torch.abs(x)` (through variables): magnitudes, whose largest is 0 only
    where every entry is."""
    found = ctx.deref(Value(expr, env))
    o = op(ctx, found.node, found.env) if isinstance(found.node, cst.Call) else None
    return o is not None and o.name == "abs"
