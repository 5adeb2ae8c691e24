"""Shared questions rules ask about expressions: is this a softmax output, a log, a guard?

Everything here is syntactic plus the data flow in numlint.analysis.context: nothing is imported
or executed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import libcst as cst

from numlint.analysis.context import Context, Env, Value
from numlint.analysis.summaries import returned_parameter
from numlint.analysis.tables import (
    LOG_FUNCTIONS,
    PROBS_OF_LOGITS,
    SIGMOID_FUNCTIONS,
    SIGMOID_MODULES,
    SOFTMAX_FUNCTIONS,
    SOFTMAX_MODULES,
    TRANSPARENT_FUNCTIONS,
    TRANSPARENT_METHODS,
)
from numlint.tree import walk


@dataclass(frozen=True)
class Activation:
    """A softmax or sigmoid call found behind an expression."""

    kind: str  # "softmax" | "sigmoid"
    call: cst.Call
    env: object  # the Env the call was evaluated in
    spelling: str  # "function" | "method" | "module"
    input: cst.BaseExpression
    #: The remaining arguments (dim, dtype, ...): for a module, its constructor's.
    args: Sequence[cst.Arg]
    func_qualname: str | None = None
    #: True when the value reached the use through copies, indexing or in-place edits.
    indirect: bool = False
    through_variable: bool = False


def positional(call: cst.Call, index: int, keyword: str | None = None) -> cst.BaseExpression | None:
    """Argument `index` of a call, given positionally or by `keyword`."""
    for arg in call.args:
        if keyword is not None and arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    plain = [a for a in call.args if a.keyword is None and not a.star]
    return plain[index].value if index < len(plain) else None


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def number(ctx: Context, expr: cst.BaseExpression, env: object = None) -> float | None:
    """The value of a numeric constant expression (`1e-8`, `-1`, `EPS` bound to a literal)."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        try:
            return float(expr.evaluated_value)
        except Exception:  # literal_eval on odd literals
            return None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        inner = number(ctx, expr.expression, env)
        if inner is None:
            return None
        return -inner if isinstance(expr.operator, cst.Minus) else inner
    if isinstance(expr, cst.Name):
        binding = ctx.lookup(expr.value, env)  # type: ignore[arg-type]
        if binding is not None and binding.value is not None and not binding.mutations:
            return number(ctx, binding.value, binding.env)
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value == "float"
    ):
        arg = positional(expr, 0)
        text = string_value(arg) if arg is not None else None
        if text is not None:
            try:
                return float(text)
            except ValueError:
                return None
    return None


def string_value(expr: cst.BaseExpression) -> str | None:
    """The value of a plain string literal (None for f-strings, bytes, or undecodable text)."""
    if not isinstance(expr, cst.SimpleString):
        return None
    try:
        value = expr.evaluated_value
    except Exception:  # literal_eval rejects NUL bytes and odd escapes
        return None
    return value if isinstance(value, str) else None


def strip(
    ctx: Context, value: Value, methods: frozenset[str] = TRANSPARENT_METHODS
) -> tuple[Value, bool]:
    """Follow names and zero-preserving operations (`.float()`, indexing, gather; of the
    methods, those in `methods`).

    Returns the innermost value and whether anything besides plain names was crossed.
    """
    crossed = False
    for _ in range(16):
        value = ctx.deref(value)
        node = value.node
        if value.mutations:
            crossed = True
        if isinstance(node, cst.Subscript):
            value, crossed = Value(node.value, value.env, value.mutations), True
            continue
        if isinstance(node, cst.Call):
            callee = ctx.callee(node, value.env)  # type: ignore[arg-type]
            if callee.method in methods and callee.receiver is not None:
                value, crossed = Value(callee.receiver, value.env, value.mutations), True
                continue
            if callee.qualname in TRANSPARENT_FUNCTIONS and (arg := positional(node, 0, "input")):
                value, crossed = Value(arg, value.env, value.mutations), True
                continue
            arg = passed_through(ctx, node, value.env, methods)  # type: ignore[arg-type]
            if arg is not None:
                value, crossed = Value(arg, value.env, value.mutations), True
                continue
        break
    return value, crossed


def passed_through(
    ctx: Context, call: cst.Call, env: Env, methods: frozenset[str] = TRANSPARENT_METHODS
) -> cst.BaseExpression | None:
    """The argument that a call of the project's own function returns as given, or converted
    only by `methods` (numlint.analysis.summaries.returned_parameter): the mask in
    `to_dtype(dist < cutoff, dtype=d)` with `def to_dtype(x, dtype): return x.type(dtype)`."""
    callee = ctx.callee(call, env)
    if callee.method is not None or (callee.qualname or "").startswith(_LIBRARIES):
        return None
    target = ctx.project_target(call, env)
    found = returned_parameter(ctx, *target) if target is not None else None
    if found is None or not found[2] <= methods:
        return None
    return positional(call, found[0], found[1])


#: Names of libraries, not of the project: they have no summaries.
_LIBRARIES = ("torch.", "numpy.", "math.", "scipy.")


def activation(
    ctx: Context, value: Value, kinds: tuple[str, ...] = ("softmax", "sigmoid")
) -> Activation | None:
    """The softmax or sigmoid whose output `value` is, following variables and `self.` modules;
    also when only another arm of an earlier `if` assigns it (then, as when the arms differ,
    it counts as indirect: a fix must not rewrite what every arm computes)."""
    found = ctx.on_any_arm(value, lambda v: _activation(ctx, v, kinds))
    if found is not None and ctx.has_alternatives(value):
        found = replace(found, indirect=True, through_variable=True)
    return found


def _activation(ctx: Context, value: Value, kinds: tuple[str, ...]) -> Activation | None:
    direct = ctx.deref(Value(value.node, value.env))
    through_variable = direct.node is not value.node
    found, indirect = strip(ctx, value)
    node = found.node
    if isinstance(node, cst.Attribute) and node.attr.value == "probs" and not found.mutations:
        return _probs_of_logits(ctx, Value(node.value, found.env), kinds, through_variable)
    if not isinstance(node, cst.Call) or found.mutations:
        return None  # edited in place since (`p[p < eps] = eps`, `p.clamp_(...)`): unknown
    callee = ctx.callee(node, found.env)  # type: ignore[arg-type]
    for kind, functions, modules in (
        ("softmax", SOFTMAX_FUNCTIONS, SOFTMAX_MODULES),
        ("sigmoid", SIGMOID_FUNCTIONS, SIGMOID_MODULES),
    ):
        if kind not in kinds:
            continue
        common = dict(
            kind=kind,
            call=node,
            env=found.env,
            indirect=indirect,
            through_variable=through_variable,
        )
        if callee.qualname in functions:
            inp = positional(node, 0, "input")
            if inp is None:
                return None
            rest = [a for a in node.args if a.value is not inp]
            return Activation(
                spelling="function", input=inp, args=rest, func_qualname=callee.qualname, **common
            )  # type: ignore[arg-type]
        if callee.method == kind and callee.receiver is not None:
            if kind == "sigmoid" and node.args:
                return None  # Tensor.sigmoid takes no arguments: not a tensor method
            return Activation(
                spelling="method", input=callee.receiver, args=list(node.args), **common
            )  # type: ignore[arg-type]
        if callee.instance_of in modules and callee.constructor is not None and node.args:
            return Activation(
                spelling="module",
                input=node.args[0].value,
                args=list(callee.constructor.args),
                **common,  # type: ignore[arg-type]
            )
    return None


def _probs_of_logits(
    ctx: Context, dist: Value, kinds: tuple[str, ...], through_variable: bool
) -> Activation | None:
    """`d.probs` of `d = Categorical(logits=s)` (OneHotCategorical, Bernoulli, ...): the
    softmax or sigmoid of `s`, which the distribution computes."""
    made = ctx.deref(dist)
    node = made.node
    if not isinstance(node, cst.Call):
        return None
    kind = PROBS_OF_LOGITS.get(ctx.callee(node, made.env).qualname or "")
    logits = next((a.value for a in node.args if a.keyword and a.keyword.value == "logits"), None)
    if kind is None or kind not in kinds or logits is None:
        return None
    return Activation(
        kind=kind,
        call=node,
        env=made.env,
        spelling="distribution",
        input=logits,
        args=[],
        indirect=True,  # `d.probs` is not rewritten: the distribution has `.logits`
        through_variable=through_variable,
    )


def log_argument(
    ctx: Context, call: cst.Call, names: frozenset[str] = LOG_FUNCTIONS, method: str = "log"
) -> cst.BaseExpression | None:
    """If `call` is a natural log (`torch.log(x)`, `x.log()`, `x.log_()` in place), return
    what it takes the log of."""
    callee = ctx.callee(call)
    if callee.qualname in names:
        return positional(call, 0, "input")
    if callee.method in (method, f"{method}_") and callee.receiver is not None and not call.args:
        if callee.qualname is None:
            return callee.receiver
    return None


def is_one(ctx: Context, expr: cst.BaseExpression) -> bool:
    return number(ctx, expr) == 1.0


def format_args(
    ctx: Context, args: Sequence[cst.Arg], positional_as: Sequence[str] = ()
) -> list[str]:
    """Source text of call arguments, naming the first positional ones as `positional_as`."""
    out = []
    index = 0
    for arg in args:
        text = ctx.code(arg.value)
        if arg.keyword is not None:
            out.append(f"{arg.keyword.value}={text}")
        elif arg.star:
            out.append(f"{arg.star}{text}")
        else:
            out.append(f"{positional_as[index]}={text}" if index < len(positional_as) else text)
            index += 1
    return out


def needs_parens(expr: cst.BaseExpression) -> bool:
    """Whether `expr` must be parenthesised as the operand of a unary minus or a method call."""
    if expr.lpar:
        return False
    return not isinstance(
        expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)
    )


def same_bindings(ctx: Context, expr: cst.CSTNode, env: object) -> bool:
    """True when every name in `expr` means here what it meant in `env` (safe to move it)."""
    for name in _names(expr):
        if ctx.lookup(name, env) is not ctx.lookup(name):  # type: ignore[arg-type]
            return False
    return True


def _names(node: cst.CSTNode) -> set[str]:
    collect = _Names()
    walk(node, collect)
    return collect.found


class _Names(cst.CSTVisitor):
    """_names()'s visitor (a module-level class: a class made per call is a reference cycle,
    and what its methods' closures hold would wait for the garbage collector)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Name(self, n: cst.Name) -> None:
        self.found.add(n.value)

    def visit_Attribute(self, n: cst.Attribute) -> bool:
        walk(n.value, self)
        return False


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a name or an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        return ".".join([node.value, *reversed(parts)])
    return None
