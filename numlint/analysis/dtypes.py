"""Is this code working in float16? Dtype evidence and constants for the NUM4xx rules.

Two questions, asked in this order:

1. What dtype does a value have, following it back through the same function
   (`traced_dtype`)? Explicit conversions decide: `.half()` / `.float()` / `.double()` /
   `.bfloat16()`, `.to(torch.float16)`, `.type(torch.half)`, `dtype=...` on the call that made
   it; arithmetic, reductions and tensor methods keep the dtype of their operands (a float32
   operand wins over a float16 one); `torch.zeros(...)`-style factories without `dtype=` give
   float32. Anything else (a parameter, a model call) is unknown.

2. When the value's dtype is unknown: does the *region* convert to float16 (`half_evidence`)?
   The region is the enclosing class when inside a method (all of its methods), otherwise the
   outermost enclosing function, otherwise the module's top-level statements. Evidence is an
   explicit conversion only:
   - `.half()`; `.to(...)` / `.type(...)` with `torch.float16` / `torch.half` (positionally or
     as `dtype=`), `.type(torch.HalfTensor)` or the string `"torch.cuda.HalfTensor"`;
   - any call with `dtype=torch.float16` / `dtype=torch.half` (factories,
     `torch.autocast("cuda", dtype=torch.float16)`);
   - `torch.HalfTensor(...)`, `torch.cuda.HalfTensor(...)`, `torch.set_default_dtype(torch.half)`;
   - only when asked (`autocast=True`): `torch.autocast("cuda")`, `torch.amp.autocast("cuda")`,
     `torch.autocast(device_type="cuda")` and `torch.cuda.amp.autocast()` without a dtype,
     which run matmuls in float16 on CUDA (`"cpu"` autocast defaults to bfloat16: not evidence).
   Comparisons such as `x.dtype == torch.float16` are not evidence: they are how dtype-aware
   code chooses its eps; conversions inside a branch chosen by such a test
   (`if x.dtype == torch.half: y = y.half()`) are not evidence either.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from numlint.analysis.context import Context, Env, Value
from numlint.analysis.semantics import keyword, number, positional, string_value
from numlint.tree import descendants, walk

#: What float16 conversions spell (`.half()`, `torch.HalfTensor`, `torch.float16`,
#: `autocast(`): the methods the NUM4xx rules keep for their class's evidence (Rule.EVIDENCE).
#: A dtype held in a name bound elsewhere (`x.to(DTYPE)`) is missed in a method without them.
HALF_WORDS = ("half", "Half", "float16", "autocast")

#: Below this (2**-25) a positive literal rounds to 0 in float16.
HALF_ZERO = 2.0**-25
HALF_MAX = 65504.0

_DTYPES = {
    "torch.float16": "float16",
    "torch.half": "float16",
    "torch.float32": "float32",
    "torch.float": "float32",
    "torch.float64": "float64",
    "torch.double": "float64",
    "torch.bfloat16": "bfloat16",
    "torch.HalfTensor": "float16",
    "torch.cuda.HalfTensor": "float16",
    "torch.FloatTensor": "float32",
    "torch.cuda.FloatTensor": "float32",
    "torch.DoubleTensor": "float64",
    "torch.cuda.DoubleTensor": "float64",
    "torch.BFloat16Tensor": "bfloat16",
    "torch.cuda.BFloat16Tensor": "bfloat16",
}
_CAST_METHODS = {"half": "float16", "float": "float32", "double": "float64", "bfloat16": "bfloat16"}
_INT_METHODS = frozenset(
    {"long", "int", "short", "bool", "byte", "char", "argmax", "argmin", "nonzero", "argsort"}
)
_FLOAT32_FACTORIES = frozenset(
    {"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.full",
     "torch.eye", "torch.linspace", "torch.logspace"}
)  # fmt: skip
_LIKE_FACTORIES = frozenset(
    {"torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.rand_like",
     "torch.randn_like", "torch.full_like"}
)  # fmt: skip
_AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
_CUDA_AUTOCAST = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
_FINFO = {
    "float16": {"tiny": 6.103515625e-05, "smallest_normal": 6.103515625e-05,
                "eps": 0.0009765625, "min": -65504.0, "max": 65504.0},
    "bfloat16": {"tiny": 1.1754943508222875e-38, "smallest_normal": 1.1754943508222875e-38,
                 "eps": 0.0078125, "min": -3.3895313892515355e38, "max": 3.3895313892515355e38},
    "float32": {"tiny": 1.1754943508222875e-38, "smallest_normal": 1.1754943508222875e-38,
                "eps": 1.1920928955078125e-07, "min": -3.4028234663852886e38,
                "max": 3.4028234663852886e38},
    "float64": {"tiny": 2.2250738585072014e-308, "smallest_normal": 2.2250738585072014e-308,
                "eps": 2.220446049250313e-16, "min": -1.7976931348623157e308,
                "max": 1.7976931348623157e308},
}  # fmt: skip


def dtype_name(ctx: Context, expr: cst.BaseExpression, env: Env | None = None) -> str | None:
    """`torch.float16` / `torch.half` / `"torch.cuda.HalfTensor"` -> "float16", etc."""
    if isinstance(expr, cst.SimpleString):
        return _DTYPES.get(str(string_value(expr)))
    qual = ctx.qualname(expr, env)
    return _DTYPES.get(qual or "")


def conversion(ctx: Context, call: cst.Call, env: Env | None = None) -> str | None:
    """The dtype a call explicitly converts to or creates (`.half()`, `dtype=...`), if any."""
    func = call.func
    qual = ctx.qualname(func, env)
    if qual is None and isinstance(func, cst.Attribute):
        name = func.attr.value
        if name in _CAST_METHODS and not call.args:
            return _CAST_METHODS[name]
        if name in ("to", "type"):
            for arg in call.args:
                if arg.keyword is None or arg.keyword.value == "dtype":
                    found = dtype_name(ctx, arg.value, env)
                    if found is not None:
                        return found
    kw = keyword(call, "dtype")
    if kw is not None:
        return dtype_name(ctx, kw, env)
    if qual in _DTYPES:
        return _DTYPES[qual]
    return None


def traced_dtype(ctx: Context, value: Value, depth: int = 12) -> str | None:
    """The dtype `value` has by the data flow of its function (None: unknown); see above."""
    if depth <= 0:
        return None
    value = ctx.deref(value)
    node, env = value.node, value.env
    if isinstance(node, cst.Call):
        return _call_dtype(ctx, node, env, depth)
    if isinstance(node, cst.BinaryOperation):
        left = traced_dtype(ctx, Value(node.left, env), depth - 1)
        right = traced_dtype(ctx, Value(node.right, env), depth - 1)
        scalar_left = _zero_dim(ctx, Value(node.left, env))
        if scalar_left != _zero_dim(ctx, Value(node.right, env)):
            # a 0-dim tensor promotes like a number: `attn / torch.tensor(d).sqrt()` keeps
            # attn's float dtype (a float one lifts integers)
            kept, scalar = (right, left) if scalar_left else (left, right)
            return scalar if kept in ("int", "bool") and scalar in _FINFO else kept
        return _promote(left, right)
    if isinstance(node, cst.UnaryOperation):
        return traced_dtype(ctx, Value(node.expression, env), depth - 1)
    if isinstance(node, cst.Subscript):
        return traced_dtype(ctx, Value(node.value, env), depth - 1)
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT", "data", "real"):
        return traced_dtype(ctx, Value(node.value, env), depth - 1)
    if isinstance(node, cst.Comparison):
        return "bool"
    if isinstance(node, cst.IfExp):  # `pad(w.float(), p) if p else w.float()`: arms agree
        body = traced_dtype(ctx, Value(node.body, env), depth - 1)
        orelse = traced_dtype(ctx, Value(node.orelse, env), depth - 1)
        return body if body == orelse else None
    if isinstance(node, (cst.Tuple, cst.List)) and node.elements:  # `torch.cat((a, b))`
        found = [traced_dtype(ctx, Value(e.value, env), depth - 1) for e in node.elements]
        return found[0] if all(f == found[0] for f in found) else None
    return None


def _call_dtype(ctx: Context, node: cst.Call, env: Env, depth: int) -> str | None:
    converted = conversion(ctx, node, env)
    if converted is not None:
        return converted
    callee = ctx.callee(node, env)
    if callee.qualname is not None:
        if callee.qualname in _FLOAT32_FACTORIES:
            return "float32"
        if callee.qualname in _LIKE_FACTORIES or callee.qualname.startswith("torch."):
            first = positional(node, 0, "input")
            return None if first is None else traced_dtype(ctx, Value(first, env), depth - 1)
        return None
    if callee.method is not None and callee.receiver is not None:
        if callee.method in _INT_METHODS:
            return "int"
        other = dtype_of_other(node)
        if other is not None:  # `m.to(s.dtype)`, `m.type_as(s)`: the dtype of `s`
            return traced_dtype(ctx, Value(other, env), depth - 1)
        return traced_dtype(ctx, Value(callee.receiver, env), depth - 1)
    return None


def dtype_of_other(call: cst.Call) -> cst.BaseExpression | None:
    """`v` of a conversion to another value's dtype: `m.to(v.dtype)`, `m.to(dtype=v.dtype)`,
    `m.type(v.dtype)`, `m.type_as(v)`; None for any other call."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    if func.attr.value == "type_as":
        return call.args[0].value if call.args else None
    if func.attr.value not in ("to", "type"):
        return None
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "dtype":
            value = arg.value
            if isinstance(value, cst.Attribute) and value.attr.value == "dtype":
                return value.value
    return None


#: Tensors of one number: `torch.tensor(d)`, also moved or converted.
_SCALAR_TENSORS = frozenset({"torch.tensor", "torch.as_tensor", "torch.scalar_tensor"})
_SCALAR_KEEPS = frozenset(
    {"to", "float", "double", "half", "bfloat16", "cuda", "cpu", "sqrt", "rsqrt", "log",
     "exp", "abs", "type_as", "detach", "clone"}
)  # fmt: skip


def _zero_dim(ctx: Context, value: Value, depth: int = 4) -> bool:
    """A 0-dim tensor made from a number (`torch.tensor(k.shape[-1])`, `torch.tensor(2.0)`,
    then `.to(torch.float32)`, `.sqrt()`, `torch.sqrt(...)`), which type promotion treats
    like a Python number."""
    if depth <= 0:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, env)
    if callee.qualname in _SCALAR_TENSORS:
        data = positional(node, 0, "data")
        return data is not None and _number_like(ctx, data, env)
    if callee.qualname in ("torch.sqrt", "torch.rsqrt", "torch.log", "torch.exp", "torch.abs"):
        first = positional(node, 0, "input")
        return first is not None and _zero_dim(ctx, Value(first, env), depth - 1)
    if callee.method in _SCALAR_KEEPS and callee.receiver is not None:
        return _zero_dim(ctx, Value(callee.receiver, env), depth - 1)
    return False


def _number_like(ctx: Context, expr: cst.BaseExpression, env: Env, depth: int = 4) -> bool:
    """A Python number: a literal or a constant, a size (`x.shape[-1]`, `x.size(1)`,
    `len(x)`), or arithmetic of those."""
    if depth <= 0:
        return False
    if constant(ctx, expr, env) is not None:
        return True
    found = ctx.deref(Value(expr, env))
    node = found.node
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute):
        return node.value.attr.value == "shape"
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "size" and node.args:
            return True
        return isinstance(func, cst.Name) and func.value in ("len", "float", "int")
    if isinstance(node, cst.BinaryOperation):
        return _number_like(ctx, node.left, found.env, depth - 1) and _number_like(
            ctx, node.right, found.env, depth - 1
        )
    return False


def _promote(left: str | None, right: str | None) -> str | None:
    floats = {x for x in (left, right) if x in _FINFO}
    if "float64" in floats:
        return "float64"
    if "float32" in floats or floats == {"float16", "bfloat16"}:
        return "float32"
    if floats:
        return floats.pop()
    return left if left == right else None


def is_half(ctx: Context, value: Value, autocast: bool = False) -> bool:
    """True when `value` is float16: by its data flow, or, when that is unknown, its region."""
    traced = traced_dtype(ctx, value)
    if traced is not None:
        return traced == "float16"
    found = [e for e in evidence(ctx) if e.kind != "autocast" or autocast]
    if not found:
        return False
    elsewhere = _other_arms(ctx) | _other_lambdas(ctx)
    return any(not _local_to(e, elsewhere) for e in found)


def _other_lambdas(ctx: Context) -> set[int]:
    """The calls inside lambdas that do not enclose the current node: a dispatch table's
    `torch.Tensor.half: lambda: t.half()` converts only what that lambda returns."""
    node = region(ctx)
    cache: dict[int, set[int]] = ctx.shared.setdefault("lambda_calls", {})
    inside = cache.get(id(node))
    if inside is None:
        inside = set()
        for lam in descendants(node):
            if isinstance(lam, cst.Lambda):
                inside.update(id(c) for c in descendants(lam.body) if isinstance(c, cst.Call))
        cache[id(node)] = inside
    around = next((n for n in reversed(ctx.stack) if isinstance(n, cst.Lambda)), None)
    if around is None:
        return inside
    return inside - {id(c) for c in descendants(around.body) if isinstance(c, cst.Call)}


def _other_arms(ctx: Context) -> set[int]:
    """The calls in the arms of enclosing `if`s that the current node is not in: a value
    converted there never reaches here (`if flash: q = q.half() ... else: softmax(...)`)."""
    found: set[int] = set()
    for parent, child in zip(ctx.stack, ctx.stack[1:], strict=False):
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            found.clear()  # only the arms inside the current function count
        if not isinstance(parent, cst.If):
            continue
        other = parent.orelse if child is parent.body else parent.body
        if other is not None and other is not child:
            found.update(id(c) for c in descendants(other) if isinstance(c, cst.Call))
    return found


def _local_to(e: Evidence, calls: set[int]) -> bool:
    """Evidence in another arm that converts a local value (not the model or `self`)."""
    if id(e.node) not in calls or e.kind == "default":
        return False
    return e.receiver is None or not (e.receiver == "self" or e.receiver.startswith("self."))


def constant(ctx: Context, expr: cst.BaseExpression, env: Env | None = None) -> float | None:
    """A numeric constant: a literal, a name bound to one, `torch.finfo(torch.float32).tiny`,
    or the default of a parameter (`def f(x, eps=1e-8)`, `self.eps = eps` in `__init__`)."""
    found = number(ctx, expr, env)
    if found is not None:
        return found
    if (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Call)
        and ctx.qualname(expr.value.func, env) == "torch.finfo"
        and (arg := positional(expr.value, 0, "type")) is not None
    ):
        table = _FINFO.get(dtype_name(ctx, arg, env) or "")
        return None if table is None else table.get(expr.attr.value)
    target = ctx.deref(Value(expr, env if env is not None else ctx.env))
    if target.node is not expr and not isinstance(target.node, cst.Name):
        return constant(ctx, target.node, target.env)
    name = target.node
    if isinstance(name, cst.Name):
        binding = ctx.lookup(name.value, target.env)
        if binding is not None and binding.value is None:
            return _parameter_default(ctx, name.value)
    return None


def _parameter_default(ctx: Context, name: str) -> float | None:
    """The literal default of parameter `name` of an enclosing function or of the class's
    `__init__` (for `self.eps = eps`)."""
    functions = [s.node for s in reversed(ctx.scopes) if s.kind == "function"]
    cls = ctx.class_scope
    if cls is not None:
        body = cls.node.body.body  # type: ignore[attr-defined]
        functions += [s for s in body if isinstance(s, cst.FunctionDef)]
    for func in functions:
        params = func.params  # type: ignore[attr-defined]
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == name:
                return number(ctx, param.default) if param.default is not None else None
    return None


# ---- region evidence ----


@dataclass(frozen=True)
class Evidence:
    """One reason to believe a region works in float16."""

    node: cst.Call
    #: "convert" (`x.half()`, `.to(torch.float16)`), "create" (`dtype=torch.half`,
    #: `torch.HalfTensor(...)`), "default" (`torch.set_default_dtype`) or "autocast".
    kind: str
    #: The converted object's source for "convert" (`model`, `self.net`), else None.
    receiver: str | None = None


def region(ctx: Context) -> cst.CSTNode:
    """The enclosing class, else the outermost enclosing function, else the module."""
    cls = ctx.class_scope
    if cls is not None:
        return cls.node
    for scope in ctx.scopes:
        if scope.kind == "function":
            return scope.node
    return ctx.module


def evidence(ctx: Context) -> tuple[Evidence, ...]:
    """Every float16 conversion in the current region (see the module docstring)."""
    node = region(ctx)
    cache: dict[int, tuple[Evidence, ...]] = ctx.shared.setdefault("half_evidence", {})
    found = cache.get(id(node))
    if found is None:
        found = tuple(_scan(ctx, node))
        cache[id(node)] = found
    return found


def _scan(ctx: Context, node: cst.CSTNode) -> Iterator[Evidence]:
    env = ctx.scopes[0].env
    calls = list(_calls(node, skip_defs=isinstance(node, cst.Module)))
    rounded = {  # `t.to(torch.float16).float()`: rounded to float16 values, kept in float32
        id(c.func.value)
        for c in calls
        if isinstance(c.func, cst.Attribute)
        and isinstance(c.func.value, cst.Call)
        and (c.func.attr.value in ("float", "double") or conversion(ctx, c, env) == "float32")
    }
    for call in calls:
        if id(call) in rounded:
            continue
        qual = ctx.qualname(call.func, env)
        if qual == "torch.set_default_dtype":
            arg = positional(call, 0, "d")
            if arg is not None and dtype_name(ctx, arg, env) == "float16":
                yield Evidence(call, "default")
            continue
        if qual in _AUTOCAST or qual in _CUDA_AUTOCAST:
            if _autocast_half(ctx, call, qual in _CUDA_AUTOCAST, env):
                yield Evidence(call, "autocast")
            continue
        if conversion(ctx, call, env) != "float16":
            continue
        func = call.func
        if qual is None and isinstance(func, cst.Attribute) and func.attr.value in _CONVERTERS:
            yield Evidence(call, "convert", ctx.code(func.value))
        else:
            yield Evidence(call, "create")


_CONVERTERS = frozenset({"half", "to", "type"})


def _autocast_half(ctx: Context, call: cst.Call, cuda: bool, env: Env) -> bool:
    enabled = keyword(call, "enabled")
    if enabled is not None and isinstance(enabled, cst.Name) and enabled.value == "False":
        return False
    dtype = keyword(call, "dtype")
    if dtype is not None:
        return dtype_name(ctx, dtype, env) == "float16"
    if cuda:
        return True
    device = positional(call, 0, "device_type")
    return device is not None and string_value(device) == "cuda"


def _calls(node: cst.CSTNode, skip_defs: bool) -> list[cst.Call]:
    """Calls under `node`, leaving out those in a branch chosen by a dtype test."""
    collect = _Calls(skip_defs)
    walk(node, collect)
    return collect.found


class _Calls(cst.CSTVisitor):
    """_calls()'s visitor (a module-level class: a class made per call is a reference
    cycle, and what its methods' closures hold would wait for the garbage collector)."""

    def __init__(self, skip_defs: bool) -> None:
        self.skip_defs = skip_defs
        self.found: list[cst.Call] = []
        self.guarded = 0

    def visit_Call(self, n: cst.Call) -> None:
        if not self.guarded:
            self.found.append(n)

    def visit_If(self, n: cst.If) -> None:
        self.guarded += _dtype_test(n.test)

    def leave_If(self, original_node: cst.If) -> None:
        self.guarded -= _dtype_test(original_node.test)

    def visit_IfExp(self, n: cst.IfExp) -> None:
        self.guarded += _dtype_test(n.test)

    def leave_IfExp(self, original_node: cst.IfExp) -> None:
        self.guarded -= _dtype_test(original_node.test)

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return not self.skip_defs

    def visit_ClassDef(self, n: cst.ClassDef) -> bool:
        return not self.skip_defs


_DTYPE_ATTRS = ("dtype", "is_floating_point")


def _dtype_test(test: cst.BaseExpression) -> int:
    """1 when an `if` test looks at a dtype (`x.dtype == torch.half`): dtype-aware code."""
    return int(
        any(
            isinstance(n, cst.Attribute) and n.attr.value in _DTYPE_ATTRS for n in descendants(test)
        )
    )


def dtype_branch(ctx: Context) -> bool:
    """Inside either branch of an `if` that tests a dtype (`if x.dtype == torch.float16:`):
    the code already handles each precision on purpose."""
    for parent in ctx.ancestors():
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            return False
        if isinstance(parent, (cst.If, cst.IfExp)) and _dtype_test(parent.test):
            return True
    return False
