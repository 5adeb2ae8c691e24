"""Is this value a probability? Softmax / sigmoid outputs that reach a loss function.

A value counts as a probability when, following variables of the same function, copies,
indexing and clamps, it is:
- a softmax or sigmoid call in any spelling (`torch.softmax`, `F.softmax`, `x.softmax(d)`,
  `torch.sigmoid`, `torch.special.expit`, an `nn.Softmax` / `nn.Sigmoid` module, also one
  stored on `self` in `__init__`), see `numlint.analysis.semantics.activation`;
- a hand-written sigmoid `1 / (1 + torch.exp(-z))`, `torch.reciprocal(1 + torch.exp(-z))`,
  `torch.exp(z) / (1 + torch.exp(z))`, or a hand-written softmax
  `torch.exp(x) / torch.exp(x).sum(d, keepdim=True)`;
- the output of a model whose `forward()` returns such a value on every path: `self(x)` and
  `self.forward(x)` in the same class, `model(x)` / `self.model(x)` where the model is an
  instance of a class defined in the same file, or an `nn.Sequential(...)` whose last module
  is `nn.Softmax` / `nn.Sigmoid`; across files through numlint.analysis.summaries, also
  `obj.head(x)` where a method of the file sets `obj.head = Head(...)` on an object it is
  given (a callback's probe on the LightningModule, `Head` imported inside that method);
  also one part of a tuple or dict such a `forward()` returns (`pred, aux = model(x)`,
  `model(x)[0]`, `out["prob"]`).
An average of such values (`p.mean(0)`, `torch.mean(p, dim=0)`: the batch's mean
distribution) is one too, of kind "mean:softmax" / "mean:sigmoid", where a rule asks for it
(AVERAGED_KINDS).
A value edited in place by anything but a clamp or an indexed assignment is not followed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst

from numlint.analysis.context import Context, Env, Scope, Value
from numlint.analysis.ops import op, unpacked_element
from numlint.analysis.semantics import (
    Activation,
    activation,
    format_args,
    number,
    positional,
    same_bindings,
    string_value,
    strip,
)
from numlint.analysis.summaries import Origin, origin_of, related
from numlint.analysis.tables import (
    SIGMOID_MODULES,
    SOFTMAX_MODULES,
    TRANSPARENT_FUNCTIONS,
    TRANSPARENT_METHODS,
)
from numlint.tree import descendants, walk

KINDS = ("softmax", "sigmoid")
#: Also an average of probabilities over a dimension (see averaged_probability).
AVERAGED_KINDS = (*KINDS, "mean:softmax", "mean:sigmoid")
_CLAMP_METHODS = frozenset({"clamp", "clamp_min", "clamp_max", "clip"})
_CLAMP_FUNCTIONS = frozenset({"torch.clamp", "torch.clip", "torch.clamp_min", "torch.clamp_max"})
#: In-place edits after which a probability is still a probability.
_KEEP_MUTATIONS = frozenset(
    {"clamp_", "clamp_min_", "clamp_max_", "clip_", "masked_fill_", "fill_diagonal_",
     "requires_grad_", "unsqueeze_", "squeeze_", "resize_"}
)  # fmt: skip
_EXP = frozenset({"torch.exp", "torch.special.exp"})
_SEQUENTIAL = frozenset({"torch.nn.Sequential", "torch.nn.modules.container.Sequential"})
_LOG_SOFTMAX = {
    "torch.softmax": "torch.log_softmax",
    "torch.Tensor.softmax": "torch.Tensor.log_softmax",
    "torch.nn.functional.softmax": "torch.nn.functional.log_softmax",
    "torch.special.softmax": "torch.special.log_softmax",
}


@dataclass(frozen=True)
class Probability:
    """Where a probability came from."""

    kind: str  # "softmax" | "sigmoid" | "mean:softmax" | "mean:sigmoid"
    origin: str  # "activation" | "hand-written" | "model"
    #: The softmax / sigmoid call, for origin "activation".
    activation: Activation | None = None
    #: The pre-activation expression (the logits) when it is known, and its environment.
    logits: cst.BaseExpression | None = None
    negated: bool = False
    env: Env | None = None
    #: True when the value crossed copies, indexing, clamps or in-place edits on its way.
    indirect: bool = False
    #: True when the value reached the use through a variable.
    through_variable: bool = False
    #: For origin "project": where another function, method, model or file makes it.
    source: Origin | None = None

    @property
    def related(self) -> tuple[tuple[tuple[str, int, int], str], ...]:
        """The place that makes the probability, when it is in another function or file."""
        return related(self.source) if self.source is not None else ()


def probability(
    ctx: Context, value: Value, kinds: tuple[str, ...] = KINDS, depth: int = 3
) -> Probability | None:
    """The softmax / sigmoid output that `value` is, if it is one (see the module docstring)."""
    found, indirect = _strip_all(ctx, value)
    via = ctx.deref(Value(value.node, value.env)).node is not value.node
    if not _mutations_keep(found.mutations):
        return None
    act = activation(ctx, found, kinds)
    if act is not None:
        return Probability(
            act.kind,
            "activation",
            act,
            act.input,
            env=act.env,  # type: ignore[arg-type]
            indirect=indirect or act.indirect,
            through_variable=via,
        )
    node = found.node
    if "sigmoid" in kinds and (hand := _hand_sigmoid(ctx, found)) is not None:
        logits, negated = hand
        return Probability(
            "sigmoid", "hand-written", None, logits, negated, found.env, indirect, via
        )
    if "softmax" in kinds and _hand_softmax(ctx, found):
        return Probability("softmax", "hand-written", env=found.env, indirect=True)
    if isinstance(node, cst.Call) and depth > 0:
        kind = _model_output(ctx, node, found.env, depth)
        if kind in kinds:
            return Probability(kind, "model", env=found.env, indirect=True, through_variable=via)
    element = _element(ctx, value) if depth > 0 else None
    if element is not None:  # `pred, aux = model(x)`, `model(x)[0]`, `out["prob"]`
        call, key = element
        kind = _model_output(ctx, call.node, call.env, depth, key)  # type: ignore[arg-type]
        if kind in kinds:
            return Probability(kind, "model", env=call.env, indirect=True, through_variable=True)
    if depth == 3 and not found.mutations:
        source = origin_of(ctx, found.node, kinds)
        if source is None and element is not None:  # `model(x)[0]` of a model of another file
            part = ctx.deref(value).node
            source = origin_of(ctx, part, kinds) if part is not found.node else None
        if source is not None:
            return Probability(source.kind, "project", env=found.env, indirect=True, source=source)
    return None


def movable(ctx: Context, prob: Probability) -> cst.BaseExpression | None:
    """The logits of `prob` when the loss input can be rewritten to use them here.

    Not through indexing or clamps; through a variable only when the logits are a name or
    attribute chain (no call would run twice) that still means what it meant.
    """
    logits = prob.logits
    if logits is None or prob.indirect or prob.env is None:
        return None
    if prob.through_variable and _has_call(logits):
        return None
    return logits if same_bindings(ctx, logits, prob.env) else None


def logits_replacement(
    ctx: Context, loss_input: cst.BaseExpression, prob: Probability
) -> tuple[cst.BaseExpression, str] | None:
    """(loss_input, the logits' code) to hand a loss its logits instead of the probability
    `prob`, where movable() allows it; None otherwise."""
    logits = movable(ctx, prob)
    return None if logits is None else (loss_input, ctx.code(logits))


def _has_call(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Call) for n in descendants(node))


def log_softmax_code(ctx: Context, act: Activation) -> str | None:
    """`log_softmax` written the way the softmax `act` was written (None: not spellable)."""
    if act.spelling == "method":
        return f"{ctx.code(act.input)}.log_softmax({', '.join(format_args(ctx, act.args))})"
    dims = ("dim",) if act.spelling == "module" else ()
    args = [ctx.code(act.input), *format_args(ctx, act.args, dims)]
    if act.spelling == "module":
        func = ctx.spell("torch.nn.functional.log_softmax")
    elif isinstance(act.call.func, cst.Attribute):
        func = f"{ctx.code(act.call.func.value)}.log_softmax"
    else:
        func = ctx.spell(_LOG_SOFTMAX.get(act.func_qualname or "", "torch.log_softmax"))
    return None if func is None else f"{func}({', '.join(args)})"


# ---- following values ----


def averaged_probability(ctx: Context, value: Value) -> Probability | None:
    """`p.mean(0)`, `torch.mean(p, dim=0)` of a probability `p` of this function, or one that
    another function or file averages (kind "mean:softmax" / "mean:sigmoid"): in [0, 1] like
    `p`, with no log-space replacement."""
    found = ctx.deref(value)
    o = op(ctx, found.node, found.env)
    if o is not None and o.name == "mean" and o.input is not None:
        prob = probability(ctx, Value(o.input, found.env))
        if prob is not None:
            return replace(prob, kind=f"mean:{prob.kind}", activation=None, indirect=True)
    return probability(ctx, value, AVERAGED_KINDS)


def _strip_all(ctx: Context, value: Value) -> tuple[Value, bool]:
    """Follow names, copies, indexing (numlint.analysis.semantics.strip) and clamps."""
    crossed = False
    for _ in range(16):
        value, more = strip(ctx, value)
        crossed = crossed or more
        node = value.node
        if not isinstance(node, cst.Call):
            break
        callee = ctx.callee(node, value.env)  # type: ignore[arg-type]
        if callee.method in _CLAMP_METHODS and callee.receiver is not None:
            value = Value(callee.receiver, value.env, value.mutations)
        elif callee.qualname in _CLAMP_FUNCTIONS and (arg := positional(node, 0, "input")):
            value = Value(arg, value.env, value.mutations)
        else:
            break
        crossed = True
    return value, crossed


def _mutations_keep(mutations: tuple[cst.CSTNode, ...]) -> bool:
    for stmt in mutations:
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            func = stmt.value.func
            if isinstance(func, cst.Attribute) and func.attr.value not in _KEEP_MUTATIONS:
                return False
    return True


def _exp_argument(ctx: Context, value: Value) -> cst.BaseExpression | None:
    """`torch.exp(a)` / `a.exp()` (through variables) -> a."""
    value = ctx.deref(value)
    node = value.node
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, value.env)  # type: ignore[arg-type]
    if callee.qualname in _EXP:
        return positional(node, 0, "input")
    if callee.method == "exp" and callee.receiver is not None and not node.args:
        return callee.receiver
    return None


def _one_plus(ctx: Context, value: Value) -> cst.BaseExpression | None:
    """`1 + e` / `e + 1` (through variables) -> e."""
    value = ctx.deref(value)
    node = value.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        if number(ctx, node.left, value.env) == 1.0:
            return node.right
        if number(ctx, node.right, value.env) == 1.0:
            return node.left
    return None


def _hand_sigmoid(ctx: Context, value: Value) -> tuple[cst.BaseExpression, bool] | None:
    """A hand-written sigmoid: (its logits, whether they appear negated in `-logits`)."""
    node, env = value.node, value.env
    den: cst.BaseExpression | None = None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        if number(ctx, node.left, env) == 1.0:
            den = node.right
        else:
            top = _exp_argument(ctx, Value(node.left, env))
            rest = _one_plus(ctx, Value(node.right, env))
            bottom = _exp_argument(ctx, Value(rest, env)) if rest is not None else None
            if top is not None and bottom is not None and ctx.code(top) == ctx.code(bottom):
                return top, False
            return None
    elif isinstance(node, cst.Call):
        callee = ctx.callee(node, env)  # type: ignore[arg-type]
        if callee.qualname == "torch.reciprocal":
            den = positional(node, 0, "input")
        elif callee.method == "reciprocal" and callee.receiver is not None and not node.args:
            den = callee.receiver
    if den is None:
        return None
    rest = _one_plus(ctx, Value(den, env))
    if rest is None:
        return None
    arg = _exp_argument(ctx, Value(rest, env))
    if arg is None:
        return None
    if isinstance(arg, cst.UnaryOperation) and isinstance(arg.operator, cst.Minus):
        return arg.expression, False
    return arg, True  # 1 / (1 + exp(z)) is sigmoid(-z)


def _hand_softmax(ctx: Context, value: Value) -> bool:
    """`torch.exp(x) / torch.exp(x).sum(d, keepdim=True)` (through variables)."""
    node, env = value.node, value.env
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)):
        return False
    top = _exp_argument(ctx, Value(node.left, env))
    if top is None:
        return False
    den = ctx.deref(Value(node.right, env))
    if not isinstance(den.node, cst.Call):
        return False
    callee = ctx.callee(den.node, den.env)  # type: ignore[arg-type]
    if callee.method == "sum" and callee.receiver is not None:
        summed = callee.receiver
    elif callee.qualname == "torch.sum":
        summed = positional(den.node, 0, "input")
    else:
        return False
    bottom = _exp_argument(ctx, Value(summed, den.env)) if summed is not None else None
    return bottom is not None and ctx.code(bottom) == ctx.code(top)


# ---- model outputs ----


#: Which part of a model's output a value is: a tuple position or a dict key (None: all).
Part = int | str | None


def _model_output(
    ctx: Context, call: cst.Call, env: Env, depth: int, part: Part = None
) -> str | None:
    """The kind of probability a model call returns (`part` of it): `self(x)`, `model(x)`,
    `self.net(x)`."""
    func = call.func
    cls = ctx.class_scope
    if cls is not None and isinstance(func, cst.Name) and func.value == "self":
        return _forward_kind(ctx, cls.node, depth, part)  # type: ignore[arg-type]
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        if isinstance(func.value, cst.Name) and func.value.value == "self" and cls is not None:
            return _forward_kind(ctx, cls.node, depth, part)  # type: ignore[arg-type]
        func = func.value
    target = ctx.deref(Value(func, env))
    return _module_kind(ctx, target, depth, part)


def _module_kind(ctx: Context, target: Value, depth: int, part: Part = None) -> str | None:
    """The kind of probability a module instance (its constructor call) returns."""
    node = target.node
    if not isinstance(node, cst.Call):
        return None
    qual = ctx.qualname(node.func, target.env)
    if part is None and qual in SOFTMAX_MODULES:
        return "softmax"
    if part is None and qual in SIGMOID_MODULES:
        return "sigmoid"
    if part is None and qual in _SEQUENTIAL:
        last = [a for a in node.args if a.keyword is None and not a.star]
        if last:
            return _module_kind(ctx, ctx.deref(Value(last[-1].value, target.env)), depth)
        return None
    if qual is None and isinstance(node.func, cst.Name):
        classdef = ctx.top_level(node.func.value, cst.ClassDef)
        if classdef is not None:
            return _forward_kind(ctx, classdef, depth, part)
    return None


def _forward_kind(
    ctx: Context, classdef: cst.ClassDef, depth: int, part: Part = None
) -> str | None:
    """ "softmax" / "sigmoid" when every `return` of the class's `forward()` returns one (as
    `part` of a tuple or dict it returns, when given)."""
    cache: dict[tuple[int, Part], str | None] = ctx.shared.setdefault("forward_kinds", {})
    key = (id(classdef), part)
    if key in cache:
        return cache[key]
    cache[key] = None  # guards against recursion through self(x) in forward
    sub, scope = _analyse_class(ctx, classdef)
    kinds = set()
    returns = scope.returns.get("forward", [])
    for ret in returns:
        picked = _part(sub, ret, part) if part is not None else ret
        prob = probability(sub, picked, KINDS, depth - 1) if picked is not None else None
        kinds.add(prob.kind if prob is not None else None)
    result = kinds.pop() if len(kinds) == 1 else None
    cache[key] = result
    return result


def _part(ctx: Context, value: Value, part: int | str) -> Value | None:
    """Element `part` of a returned tuple (`return x, aux`) or entry of a returned dict
    (`return {"prob": p}`, `dict(prob=p)`), or None."""
    found = ctx.deref(value)
    node = found.node
    if isinstance(part, int) and isinstance(node, (cst.Tuple, cst.List)):
        elements = node.elements
        if part < len(elements) and not any(
            isinstance(e, cst.StarredElement) for e in elements[: part + 1]
        ):
            return Value(elements[part].value, found.env)
        return None
    if isinstance(part, str) and isinstance(node, cst.Dict):
        for e in node.elements:
            if isinstance(e, cst.DictElement) and _literal(e.key) == part:
                return Value(e.value, found.env)
        return None
    if (
        isinstance(part, str)
        and isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "dict"
        and ctx.lookup("dict", found.env) is None
    ):
        for a in node.args:
            if a.keyword is not None and a.keyword.value == part:
                return Value(a.value, found.env)
    return None


def _element(ctx: Context, value: Value) -> tuple[Value, int | str] | None:
    """The model call and the part of its output that `value` is, through variables,
    casts and reshapes: `pred, aux = model(x)` (0), `model(x)[1]`, `out["prob"]` with `out
    = model(x)` ("prob"); None otherwise."""
    for _ in range(8):
        found = ctx.deref(value)
        node, env = found.node, found.env
        if isinstance(node, cst.Name):
            unpacked = unpacked_element(ctx, node, env)
            return unpacked  # type: ignore[return-value]
        if isinstance(node, cst.Subscript):
            index = _single_index(node)
            inner = ctx.deref(Value(node.value, env))
            if index is None or not isinstance(inner.node, cst.Call):
                return None
            return inner, index
        if not isinstance(node, cst.Call):
            return None
        callee = ctx.callee(node, env)
        if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
            value = Value(callee.receiver, env)
        elif callee.qualname in TRANSPARENT_FUNCTIONS and (arg := positional(node, 0, "input")):
            value = Value(arg, env)
        else:
            return None
    return None


def _single_index(node: cst.Subscript) -> int | str | None:
    """The constant of `x[0]` or `x["prob"]`, or None."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    return _literal(node.slice[0].slice.value)


def _literal(node: cst.BaseExpression | None) -> int | str | None:
    """The value of an integer or string literal, or None."""
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    return string_value(node) if node is not None else None


class _Walker(cst.CSTVisitor):
    """Runs a fresh Context over one class, keeping the class scope it builds."""

    def __init__(self, sub: Context, target: cst.ClassDef) -> None:
        self.sub = sub
        self.target = target
        self.scope: Scope | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.sub.enter(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if original_node is self.target:
            self.scope = self.sub.scope
        self.sub.leave(original_node)


def _analyse_class(ctx: Context, classdef: cst.ClassDef) -> tuple[Context, Scope]:
    """A Context positioned inside `classdef` after seeing all of it (attrs, returns)."""
    sub = Context(ctx.module, ctx.path, ctx.source, ctx.syntax)
    sub.share_project(ctx)
    sub.imports = dict(ctx.imports)
    sub.star_imports = list(ctx.star_imports)
    module_scope = Scope("module", ctx.module, env=dict(ctx.scopes[0].env))
    sub.scopes = [module_scope]
    walker = _Walker(sub, classdef)
    walk(classdef, walker)
    scope = walker.scope or Scope("class", classdef)
    sub.scopes = [module_scope, scope]
    return sub, scope


def log_space_code(ctx: Context, prob: Probability) -> str | None:
    """`log_softmax(...)` to replace a softmax probability given where log-probabilities belong
    (None when it is not a softmax, or cannot be moved here unchanged)."""
    act = prob.activation
    if act is None or prob.kind != "softmax" or movable(ctx, prob) is None:
        return None
    if not same_bindings(ctx, act.call, act.env):
        return None
    return log_softmax_code(ctx, act)
