"""Which torch operation is this call, and what constant is that: the op tables, `op`,
`const`, and comparisons of expressions (shared by the rules and the other analyses).

Purely syntactic plus numlint.analysis.context's data flow; nothing is imported or executed.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from numlint.analysis.context import Context, Env, Value
from numlint.analysis.semantics import number, positional
from numlint.analysis.tables import (
    FILL_FUNCTIONS,
    FILL_METHODS,
    HOST_MODULES,
    ZERO_FUNCTIONS,
    ZERO_METHODS,
)
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
    "torch.diagonal": "diagonal", "torch.diag": "diagonal", "torch.cov": "cov",
    "torch.relu": "relu", "torch.nn.functional.relu": "relu", "torch.nn.functional.relu6": "relu",
    "torch.rand": "rand", "torch.rand_like": "rand",
    "torch.clamp": "clamp", "torch.clip": "clamp", "torch.clamp_min": "clamp_min",
    "torch.maximum": "maximum", "torch.fmax": "maximum", "torch.max": "max",
    "torch.amax": "amax", "torch.amin": "amin", "torch.min": "min",
    "torch.where": "where", "torch.abs": "abs", "torch.absolute": "abs",
    "torch.det": "det", "torch.linalg.det": "det",
    "torch.acos": "acos", "torch.arccos": "acos", "torch.asin": "asin", "torch.arcsin": "asin",
    "torch.sin": "sin", "torch.tan": "tan",
    "torch.cosine_similarity": "cosine", "torch.nn.functional.cosine_similarity": "cosine",
    "torch.nn.functional.normalize": "normalize",
    "torch.div": "div", "torch.divide": "div", "torch.true_divide": "div",
    "torch.mul": "mul", "torch.multiply": "mul", "torch.reciprocal": "reciprocal",
    "torch.matmul": "matmul", "torch.mm": "matmul", "torch.bmm": "matmul", "torch.dot": "matmul",
    "torch.inner": "matmul", "torch.einsum": "einsum", "torch.nn.functional.linear": "matmul",
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
    "asin": "asin", "arcsin": "asin", "sin": "sin", "tan": "tan",
    "div": "div", "divide": "div", "true_divide": "div",
    "div_": "div", "divide_": "div", "true_divide_": "div",
    "mul": "mul", "multiply": "mul", "reciprocal": "reciprocal", "matmul": "matmul",
    "mm": "matmul", "bmm": "matmul", "dot": "matmul", "add": "add", "where": "where",
    "masked_fill": "masked_fill", "sigmoid": "sigmoid", "softmax": "softmax",
    "diagonal": "diagonal", "diag": "diagonal", "amax": "amax", "amin": "amin", "min": "min",
}  # fmt: skip
#: In-place methods: the same op on the receiver's value before the call. No fix rewrites a
#: call of one (numlint.rule.Rule.report): an expression in its place would change nothing.
IN_PLACE: dict[str, str] = {
    "log_": "log", "log2_": "log2", "log10_": "log10", "log1p_": "log1p", "exp_": "exp",
    "sqrt_": "sqrt", "rsqrt_": "rsqrt", "mul_": "mul", "multiply_": "mul",
    "reciprocal_": "reciprocal",
}  # fmt: skip
METHODS.update(IN_PLACE)


#: Methods whose name is also common on non-tensors: only trusted on a tensor-looking receiver.
MODULES: dict[str, str] = {
    "torch.nn.ReLU": "relu",
    "torch.nn.ReLU6": "relu",
    "torch.nn.CosineSimilarity": "cosine",
    "torch.nn.Softplus": "softplus",
}


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


#: Python builtins that act on a tensor as the torch function does.
_BUILTINS = {"abs": "abs"}


def op(ctx: Context, node: cst.BaseExpression, env: Env | None = None) -> Op | None:
    """The tensor operation a call performs, or None (numpy, math, unknown functions)."""
    if not isinstance(node, cst.Call):
        return None
    env = ctx.env if env is None else env
    key = ("op", id(node), id(env))
    known = ctx.answers.get(key)
    if known is not None and known[0] is node and known[1] is env:
        return known[2]  # type: ignore[no-any-return]
    found = _op(ctx, node, env)
    ctx.answers[key] = (node, env, found)
    return found


def _op(ctx: Context, node: cst.Call, env: Env) -> Op | None:
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
    func = node.func
    if isinstance(func, cst.Name) and func.value in _BUILTINS and func.value not in env:
        inp = positional(node, 0, "x")  # `abs(a - b)` of tensors is `torch.abs`
        return Op(_BUILTINS[func.value], node, env, inp, "function", func.value)
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
                return qual.startswith(HOST_MODULES)
            if isinstance(node.func, cst.Attribute):
                value = Value(node.func.value, value.env, value.mutations)
                continue
        elif isinstance(node, cst.Attribute):
            qual = ctx.qualname(node, value.env)  # type: ignore[arg-type]
            return qual is not None and qual.startswith(HOST_MODULES)
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
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("pi", "e", "tau"):
        found = _MATH_CONSTANTS.get(ctx.qualname(expr) or "")  # `math.pi`, `np.e`
        if found is not None:
            return found
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and expr.args[0].keyword is None:
        func = _MATH.get(ctx.qualname(expr.func) or "")  # `math.exp(-2)`, `np.sqrt(2)`
        arg = const(ctx, expr.args[0].value, env) if func is not None else None
        if func is not None and arg is not None:
            try:
                return float(func(arg))
            except (ValueError, OverflowError):
                return None
    return number(ctx, expr, env)


_MATH_CONSTANTS = {
    f"{module}.{name}": getattr(math, name)
    for module in ("math", "numpy", "np", "torch")
    for name in ("pi", "e", "tau")
}
_MATH = {
    f"{module}.{name}": getattr(math, name)
    for module in ("math", "numpy", "np")
    for name in ("exp", "log", "log2", "log10", "sqrt", "cos", "sin", "tanh")
}


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
    found = ctx.deref(Value(expr, env))
    node = found.node
    if isinstance(node, cst.Call):
        o = op(ctx, node, env)
        if o is not None and o.name in ("rand", "relu"):
            return False
        if ctx.qualname(node.func, found.env) in ("torch.tensor", "torch.as_tensor") and node.args:
            return positive_bound(ctx, node.args[0].value, found.env)  # `torch.tensor(eps)`
    if _most_negative(ctx, node, found.env):
        return False  # `torch.finfo(t.dtype).min`: the most negative float, no bound at 0
    return not isinstance(node, (cst.Integer, cst.Float))


def _most_negative(ctx: Context, node: cst.CSTNode, env: Env) -> bool:
    """`torch.finfo(...).min` / `torch.iinfo(...).min` (through a variable)."""
    if not (isinstance(node, cst.Attribute) and node.attr.value == "min"):
        return False
    info = ctx.deref(Value(node.value, env)).node
    return isinstance(info, cst.Call) and ctx.qualname(info.func, env) in (
        "torch.finfo",
        "torch.iinfo",
    )


def is_zero(ctx: Context, expr: cst.BaseExpression, env: Env) -> bool:
    """The number 0, or a tensor of zeros (`torch.zeros_like(x)`, `x.new_zeros(n)`,
    `torch.full_like(x, 0)`, `torch.tensor(0.0)`), also through a variable."""
    if const(ctx, expr, env) == 0.0:
        return True
    found = ctx.deref(Value(expr, env))
    node = found.node
    if not isinstance(node, cst.Call):
        return False
    name = ctx.qualname(node.func, found.env) or ""
    if name in ZERO_FUNCTIONS:
        return True
    spot = FILL_FUNCTIONS.get(name)
    if spot is None and isinstance(node.func, cst.Attribute) and not name.startswith(HOST_MODULES):
        method = node.func.attr.value
        if method in ZERO_METHODS:
            return True
        spot = FILL_METHODS.get(method)
    fill = positional(node, *spot) if spot is not None else None
    return fill is not None and const(ctx, fill, found.env) == 0.0


def plus_one(
    ctx: Context, expr: cst.BaseExpression, env: Env | None = None
) -> cst.BaseExpression | None:
    """`1 + x`, `x + 1`, `x.add(1)` -> x (directly, not through a variable)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left, right = const(ctx, expr.left) == 1.0, const(ctx, expr.right) == 1.0
        if left and not right:
            return expr.right
        if right and not left:
            return expr.left
    o = op(ctx, expr, env)
    if o is not None and o.name == "add" and o.spelling == "method" and len(expr.args) == 1:  # type: ignore[attr-defined]
        if const(ctx, expr.args[0].value) == 1.0:  # type: ignore[attr-defined]
            return o.input
    return None


def magnitude_of(ctx: Context, expr: cst.BaseExpression, env: Env) -> cst.BaseExpression | None:
    """`x` of `x.abs()`, `x ** 2`, `x.pow(2)`, `torch.square(x)`: a magnitude of `x`."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Power):
        exponent = const(ctx, expr.right, env)
        return expr.left if exponent is not None and exponent > 0 else None
    o = op(ctx, expr, env)
    if o is None or o.input is None:
        return None
    if o.name in ("abs", "square"):
        return o.input
    if o.name == "pow":
        exponent = o.arg(0, "exponent")
        return o.input if exponent is not None and (const(ctx, exponent, env) or 0) > 0 else None
    return None


def unscaled(ctx: Context, node: cst.CSTNode, env: Env) -> cst.CSTNode:
    """`node` without constant factors other than 0 (`(a - b) * 0.5`, `2 * (a - b)`,
    `(a - b) / 2`): the same zeros."""
    while isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Multiply, cst.Divide)
    ):
        left, right = const(ctx, node.left, env), const(ctx, node.right, env)
        if right not in (None, 0):
            node = node.left
        elif left not in (None, 0) and isinstance(node.operator, cst.Multiply):
            node = node.right
        else:
            break
    return node


def clamp_bounds(o: Op) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    """(min, max) of a clamp / clip / clamp_min call."""
    if o.name == "clamp_min":
        return o.arg(0, "min"), None
    return o.arg(0, "min"), o.arg(1, "max")


def names(node: cst.CSTNode) -> set[str]:
    """Dotted names used in an expression (`x`, `self.scale`), without call names and the
    constants `True`, `False` and `None`."""
    found: set[str] = set()
    walk(node, _Names(found))
    return found - {"torch", "F", "nn", "th", "self", "True", "False", "None"}


class _Names(cst.CSTVisitor):
    """names()'s visitor (a module-level class: a class made per call is a reference cycle,
    and what its methods' closures hold would wait for the garbage collector)."""

    def __init__(self, found: set[str]) -> None:
        self.found = found

    def visit_Name(self, n: cst.Name) -> None:
        self.found.add(n.value)

    def visit_Attribute(self, n: cst.Attribute) -> bool:
        if isinstance(n.value, cst.Name) and n.value.value == "self":
            self.found.add(f"self.{n.attr.value}")
            return False
        walk(n.value, self)
        return False

    def visit_Call(self, n: cst.Call) -> bool:
        if isinstance(n.func, cst.Attribute):
            walk(n.func.value, self)
        for a in n.args:
            walk(a.value, self)
        return False


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


TENSOR_LITERALS = frozenset(
    {"torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.FloatTensor"}
)


def has_tensor_op(ctx: Context, value: Value, depth: int = 0) -> bool:
    """Whether an expression visibly computes with tensors (a torch call or tensor method),
    following variables; used to tell `x ** 0.5` on tensors from plain Python arithmetic."""
    if depth > 4:
        return False
    value = ctx.deref(value)
    find = _TensorOp(ctx, value.env, depth)
    walk(value.node, find)
    return find.found


class _TensorOp(cst.CSTVisitor):
    """has_tensor_op()'s visitor."""

    def __init__(self, ctx: Context, env: Env, depth: int) -> None:
        self.ctx, self.env, self.depth = ctx, env, depth
        self.found = False

    def visit_Call(self, n: cst.Call) -> bool:
        ctx = self.ctx
        if op(ctx, n, self.env) is not None or (
            (q := ctx.qualname(n.func, self.env)) is not None and q.startswith("torch.")
        ):
            self.found = True
        return not self.found

    def visit_Name(self, n: cst.Name) -> None:
        if not self.found and self.ctx.deref(Value(n, self.env)).node is not n:
            self.found = has_tensor_op(self.ctx, Value(n, self.env), self.depth + 1)


def constant_bound(ctx: Context, expr: cst.BaseExpression) -> bool:
    if const(ctx, expr) is not None:
        return True
    return (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Call)
        and (ctx.qualname(expr.value.func) or "").endswith("finfo")
    )


_UNPACKING = frozenset({"topk", "sort", "max", "min", "kthvalue", "mode", "median"})


def unpacked_from(ctx: Context, name: cst.Name, env: Env) -> Value | None:
    """For `v, i = torch.topk(x, k)` (also sort / max / min ...): the call `v` came from, as
    `Value(call, env)`, when `name` is the first target. Searches the enclosing function's
    statements before the current one; None when `name` was bound otherwise."""
    found = unpacking_call(ctx, name, env, first_only=True)
    if found is None:
        return None
    callee = ctx.callee(found.node, found.env)  # type: ignore[arg-type]
    if callee.method in _UNPACKING or (callee.qualname or "").rsplit(".", 1)[-1] in _UNPACKING:
        return found
    return None


def unpacking_call(
    ctx: Context, name: cst.Name, env: Env, first_only: bool = False
) -> Value | None:
    """The call a name of the enclosing function was unpacked from (`xx, yy = f(...)`), in
    the last such statement before the current one (`first_only`: `name` is the first
    target); None when `name` was bound otherwise."""
    found = _last_unpacking(ctx, name, env)
    if found is None or (first_only and found[1] != 0):
        return None
    stmt, _, binding_env = found
    return Value(stmt.value, binding_env) if isinstance(stmt.value, cst.Call) else None


def unpacked_value(ctx: Context, name: cst.Name, env: Env) -> Value | None:
    """What a name of the enclosing function was unpacked from (`row, col = edge_index`: the
    value of `edge_index` there), or None."""
    found = _last_unpacking(ctx, name, env)
    if found is None:
        return None
    stmt, _, binding_env = found
    return ctx.deref(Value(stmt.value, binding_env))


def unpacked_element(ctx: Context, name: cst.Name, env: Env) -> tuple[Value, int] | None:
    """The call a name of the enclosing function was unpacked from and its place among the
    targets (`pred, aux = model(x)`: the call, 0), or None."""
    found = _last_unpacking(ctx, name, env)
    if found is None or not isinstance(found[0].value, cst.Call):
        return None
    stmt, index, binding_env = found
    target = stmt.targets[0].target
    if any(isinstance(e, cst.StarredElement) for e in target.elements[:index]):  # type: ignore[union-attr]
        return None
    return Value(stmt.value, binding_env), index


def unpacked_size(ctx: Context, name: cst.Name, env: Env) -> bool:
    """`name` was unpacked from a tensor's shape (`K, B = Q.shape`, `n, d = x.size()`): a
    size, positive wherever the tensor has entries to divide."""
    found = _last_unpacking(ctx, name, env)
    if found is None:
        return False
    value = found[0].value
    if isinstance(value, cst.Subscript):
        value = value.value  # `B, _, C = x.size()[:3]`: a slice of the sizes
    if isinstance(value, cst.Attribute):
        return value.attr.value == "shape"
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "size"
        and not value.args
    )


def mapped_element(ctx: Context, name: cst.Name, env: Env) -> cst.Call | None:
    """`x` of `x, y = map(f, (a, b))` (the last unpacking of `x` before the current
    statement) as the call `f(a)` it holds; None when `name` was bound otherwise."""
    found = _last_unpacking(ctx, name, env)
    if found is None:
        return None
    stmt, index, _ = found
    call = stmt.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)):
        return None
    if call.func.value != "map" or len(call.args) != 2:
        return None
    items = call.args[1].value
    if not isinstance(items, (cst.Tuple, cst.List)) or index >= len(items.elements):
        return None
    try:
        return cst.Call(func=call.args[0].value, args=[cst.Arg(items.elements[index].value)])
    except cst.CSTValidationError:  # `map(f, ((), x))`: an item that needs parentheses
        return None


def _last_unpacking(ctx: Context, name: cst.Name, env: Env) -> tuple[cst.Assign, int, Env] | None:
    """The last statement before the current one of the enclosing function that unpacks
    into `name` (`a, b = ...`), `name`'s place among its targets, and the binding's env;
    None when `name` was bound otherwise."""
    binding = ctx.lookup(name.value, env)
    func = ctx.function
    if binding is None or binding.value is not None or func is None:
        return None
    here = set(map(id, ctx.stack))
    found: tuple[cst.Assign, int, Env] | None = None
    for stmt in _small_statements(ctx, func):
        if id(stmt) in here:
            break  # the statement being linted: what follows it does not count
        if not isinstance(stmt, cst.Assign):
            continue
        target = stmt.targets[0].target
        if not isinstance(target, (cst.Tuple, cst.List)):
            continue
        for i, e in enumerate(target.elements):
            if isinstance(e.value, cst.Name) and e.value.value == name.value:
                found = (stmt, i, binding.env)
    return found


def _small_statements(ctx: Context, func: cst.FunctionDef) -> list[cst.BaseSmallStatement]:
    """The simple statements of `func` in walk order, not those of functions, classes or
    lambdas inside it (read once per function of the file)."""
    known = ctx.shared.setdefault("small_statements", {})
    entry = known.get(id(func))
    if entry is None or entry[0] is not func:
        find = _SmallStatements(func)
        walk(func, find)
        entry = known[id(func)] = (func, find.found)
    return entry[1]  # type: ignore[no-any-return]


class _SmallStatements(cst.CSTVisitor):
    """_small_statements()' visitor."""

    def __init__(self, func: cst.CSTNode) -> None:
        self.func = func
        self.found: list[cst.BaseSmallStatement] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseSmallStatement):
            self.found.append(node)
            return False  # no statement inside a simple one
        return not (
            isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not self.func
        )


#: What each comparison computes on numbers (`cst.GreaterThan` -> `>`).
HOLDS: dict[type, Callable[[float, float], bool]] = {
    cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge,
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
}
