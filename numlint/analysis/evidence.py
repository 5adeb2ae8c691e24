"""How sure is numlint that a value reaches its bad point? The confidence of a finding.

`high`: positive evidence that the bad value occurs in ordinary use (a sum or count of a
mask, a difference of a tensor with a reshaped copy of itself, a ReLU output, a value
clamped at 0, a `1 - sigmoid` that saturates). `medium`: the value is of a kind that reaches
0 with plausible inputs (a probability that underflows, a variance of constant data).
`low`: only the shape of the expression says so (the norm or sum of some tensor, which would
need an all-zero vector). One table grades the reasons that numlint.analysis.zeros gives; what a sum
or norm is taken *of* can raise the grade.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator

import libcst as cst

from numlint.analysis.context import Context, Env, Value
from numlint.analysis.gradients import gradient_evident, module_forward, no_gradient, objective
from numlint.analysis.guards import assigned_here, branches, tested_small
from numlint.analysis.liveness import unused_option
from numlint.analysis.ops import (
    TENSOR_LITERALS,
    Op,
    const,
    is_zero,
    mapped_element,
    names,
    op,
    same_value,
    unpacked_from,
    unpacking_call,
    unscaled,
)
from numlint.analysis.semantics import activation, dotted_name, keyword, positional, strip
from numlint.analysis.summaries import (
    cleared_parameter,
    file_text,
    length_mask_result,
    origin_of,
    passed_gradient,
    passed_names,
    positive_from_callers,
    project_files,
    project_root,
    tested_by_callers,
)
from numlint.analysis.tables import JOINS, TRANSPARENT_METHODS
from numlint.analysis.zeros import (
    UNDERFLOWS,
    factors,
    gather_parts,
    is_max_of,
    positive_value,
    square_of,
    user_call,
    zero_reason,
    zero_sum_terms,
)
from numlint.diagnostic import Confidence, confidence_rank
from numlint.tree import call_name, descendants, exits, unparenthesized

#: The grade of each reason numlint.analysis.zeros gives for "can be exactly 0".
REASONS: dict[str, Confidence] = {
    "a ReLU output": "high",
    "the maximum of a ReLU output": "medium",
    "the maximum of a value clamped at 0": "medium",
    "a 0/1 mask": "high",
    "a value clamped at 0": "high",
    "a tensor filled with 0": "high",
    "a `torch.where` with a 0 branch": "high",
    "`1 - x**2`": "high",
    "a count": "high",
    "a count another function makes": "medium",
    "a count per class": "medium",
    "a node's degree": "medium",
    "a determinant": "medium",
    "the count of each value of a vector up to its largest": "low",
    "the log of 1 + a count": "medium",
    "a `torch.rand` draw": "high",
    "a range from 0": "high",
    "a value its guard does not keep from 0 (a negative lower bound)": "high",
    "the range (max - min) of one tensor": "low",
    "the range (max - min) of each row of a tensor": "medium",
    "a softmax output": "medium",
    "a sigmoid output": "medium",
    "a normalised ratio": "medium",
    "a square": "low",
    "an absolute value": "low",
    "a variance": "low",
    "a standard deviation": "low",
    "a sum of squares": "low",
    "a mean squared error": "low",
    "a norm": "low",
    "the largest absolute value": "low",
    "a sum over the entries a mask keeps": "low",
    "a sum": "low",
    "a value a `torch.where` keeps where its test holds": "low",
    "a value the code tests for 0 and only warns about": "medium",
    "a value whose total the code tests for 0, not each entry": "medium",
    "the total size of two masks (a Dice or IoU denominator)": "medium",
}
#: Reductions and roots whose zero comes from what they reduce.
_THROUGH = frozenset({"sum", "mean", "norm", "sqrt", "pow", "square", "abs", "std", "var"})
_MASK_NAME = re.compile(r"(^|_)(mask|masks|valid|keep|selected|positive|positives)($|_|\d)", re.I)
#: Functions and methods whose result is a 0/1 mask.
_MASK_OPS = frozenset(
    {"logical_and", "logical_or", "logical_not", "eq", "ne", "gt", "lt", "ge", "le"}
)
_CASTS = frozenset({"float", "long", "int", "bool", "half", "double", "to", "type_as", "type"})


#: Under a log, a probability that underflows is the everyday failure (float32 softmax
#: outputs reach exactly 0 at a logit gap of 104, float16 at 17).
_LOG_HIGH = frozenset({"a softmax output", "a sigmoid output"})
#: Under a root, a probability reaches exactly 0 only at extreme logits, and a ratio only
#: where its numerator is 0: rare next to the squares and clamps that are everyday zeros.
_ROOT_LOW = frozenset({"a softmax output", "a sigmoid output", "a normalised ratio"})
#: The log of an indicator is usually a deliberate log-density (-inf off the support).
_LOG_LOW = frozenset({"a 0/1 mask"})


def grade(ctx: Context, reason: str, value: Value | None = None, log: bool = False) -> Confidence:
    """The confidence for a finding whose value can be 0 for `reason`; `value` (the
    operand) lets what it is computed from raise the grade; `log`: the value is taken the
    log of."""
    if log and reason in _LOG_LOW:
        return "low"
    if not log and reason in _ROOT_LOW:
        return "low"
    if value is not None and unused_option(ctx, value):
        return "low"  # `torch.log(cf / cf.sum())` with `cf=None` that no caller passes
    if reason in UNDERFLOWS:
        # as rare as a sigmoid's underflow, unless training pushes the input down (a scale
        # a policy or a variational posterior learns to shrink)
        return "medium" if _differentiated(ctx, value) else "low"
    terms = zero_sum_terms(ctx, value) if value is not None and not log else None
    if terms:  # `tp + fp`: 0 only where every term is, so as likely as the least likely
        return min((grade(ctx, r, t) for t, r in terms), key=confidence_rank)
    if reason == "the square root of `1 - x**2`" and value is not None:
        if not _root_of_unit_gap(ctx, value):
            return "low"  # `sqrt(1 - ecc**2)`: an eccentricity stops short of 1
    if reason == "a `torch.rand` draw" and _runs_once(ctx):
        return "low"  # an initialisation draws a few hundred numbers once: 0 has odds 2**-24 each
    if reason == "the range (max - min) of one tensor" and _differentiated(ctx, value):
        return "medium"  # a loss's min-max normalisation: a constant tensor in training
    if value is not None and reason == "a value clamped at 0" and _enclosing(ctx, value):
        return "low"  # GIoU's enclosing box: 0 only when both boxes are degenerate
    base: Confidence = "high" if log and reason in _LOG_HIGH else _table(reason)
    if value is not None and reason == "a normalised ratio" and _ratio_of_norms(ctx, value):
        return "low"  # `log10(x.norm() / (x - y).norm())`: 0 only for an all-zero tensor
    if value is not None and reason in ("a 0/1 mask", "a count"):
        counted = _counted(ctx, value) if reason == "a count" else value
        if counted is not None and not mask_computed(ctx, counted):
            return "low"  # a mask the code is given, or a padding test: a row keeps an entry
    if value is None or base == "high":
        return base
    found = _source_grade(ctx, value)
    return found if confidence_rank(found) > confidence_rank(base) else base


def _differentiated(ctx: Context, value: Value | None) -> bool:
    """Autograd differentiates the function, and `value` is built from more than tensor
    constructors and constants (numlint.analysis.gradients.no_gradient)."""
    return value is not None and gradient_evident(ctx) and not no_gradient(ctx, value)


_INIT_NAME = re.compile(r"^(__init__|_?reset_parameters|_?init(ialize|ialise)?(_\w*)?)$")


def _runs_once(ctx: Context) -> bool:
    """In a constructor or a parameter initialiser (`__init__`, `reset_parameters`,
    `_init_weights`): code that draws once, not at every step."""
    func = ctx.function
    return func is not None and bool(_INIT_NAME.match(func.name.value))


_UNIT_OPS = frozenset(
    {"cos", "sin", "tanh", "cosine", "cosine_similarity", "hardtanh", "clamp", "clip", "erf"}
)


_COSINE_NAME = re.compile(r"(cos|sin|corr|rho|tanh|dot|sim)", re.I)


def unit_bounded(ctx: Context, value: Value) -> bool:
    """In `1 - x**2`, x may reach +-1: a cosine, sine, tanh, a clamp, or a value whose name
    says so (`cos`, `rho`). Not `exp(-k)`, another op whose range stops short of 1, or an
    unknown `x` (an aperiodicity, a decay rate)."""
    v, _ = strip(ctx, value)
    node = v.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        # `n * m * (1 - c**2)`: the factors that are `1 - x**2`
        gaps = [
            f
            for f in factors(node)
            if isinstance(f, cst.BinaryOperation) and isinstance(f.operator, cst.Subtract)
        ]
        return not gaps or any(unit_bounded(ctx, Value(f, v.env)) for f in gaps)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        right = Value(node.right, v.env)
        base = square_of(ctx, node.right, v.env)
        if base is None and isinstance(node.right, cst.Name):  # `c2 = c ** 2; 1 - c2`
            right = ctx.deref(right)
            base = square_of(ctx, right.node, right.env)  # type: ignore[arg-type]
        if base is None:
            return False
        b, _ = strip(ctx, Value(base, right.env))
        if ctx.on_any_arm(b, lambda arm: _cosines(ctx, arm) or None):
            return True  # `F.linear(F.normalize(x), F.normalize(w))`: a cosine
        if isinstance(b.node, cst.Call):
            o = op(ctx, b.node, b.env)
            name = o.name if o is not None else call_name(b.node)
            return name in _UNIT_OPS
        # a parameter or attribute: unknown, a cosine when its name says so; a computed
        # value: only the ops above reach +-1
        node = b.node
        ident = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "")
        return isinstance(ident, str) and bool(_COSINE_NAME.search(ident))
    return True  # not the plain form: keep the grade


def unit_unknown(ctx: Context, value: Value) -> bool:
    """In `1 - x**2`, nothing is known of x: a parameter or an attribute (through casts),
    which the code's callers may fill with a cosine, or what a function of the project
    returns (`w = self._sample_w(k)`, a draw on [-1, 1])."""
    v, _ = strip(ctx, value)
    node = v.node
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)):
        return False
    base = square_of(ctx, node.right, v.env)
    if base is None:
        return False
    b, _ = strip(ctx, Value(base, v.env))
    if isinstance(b.node, cst.Name):
        return ctx.parameter(b.node.value) is not None
    if isinstance(b.node, cst.Call):
        return user_call(ctx, b.node, b.env)
    return isinstance(b.node, cst.Attribute)


_PRODUCTS = frozenset({"matmul"})


def _cosines(ctx: Context, value: Value) -> bool:
    """Inner products of unit vectors, also concatenated or stacked (`torch.cat((cos,
    F.linear(...)), dim=1)`)."""
    v, _ = strip(ctx, value)
    node = v.node
    if isinstance(node, cst.Call) and ctx.qualname(node.func, v.env) in (
        "torch.cat",
        "torch.stack",
    ):
        parts = positional(node, 0, "tensors")
        if isinstance(parts, (cst.Tuple, cst.List)) and parts.elements:
            return any(_cosines(ctx, Value(e.value, v.env)) for e in parts.elements)
    return _product_of_unit_vectors(ctx, v)


def _product_of_unit_vectors(ctx: Context, value: Value) -> bool:
    """`F.linear(F.normalize(x), F.normalize(w))`, `a_n @ b_n.T`, `torch.mm(a_n, b_n)`: inner
    products of unit vectors, cosines that reach +-1 as training aligns them."""
    node = value.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        operands = [node.left, node.right]
    elif isinstance(node, cst.Call) and (o := op(ctx, node, value.env)) is not None:
        if o.name not in _PRODUCTS or len(node.args) < 2:
            return False
        operands = [node.args[0].value, node.args[1].value]
    else:
        return False
    return all(_unit_vector(ctx, Value(x, value.env)) for x in operands)


def _unit_vector(ctx: Context, value: Value) -> bool:
    """A value normalised to unit length: `F.normalize(x)`, `x / x.norm(...)` (through
    transposes and reshapes)."""
    v, _ = strip(ctx, value)
    node = ctx.deref(v).node
    while (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and (node.func.attr.value in ("t", "T", "transpose", "permute", "mT"))
    ):
        node = node.func.value
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT"):
        node = node.value
    v = ctx.deref(Value(node, v.env))
    node = v.node
    if isinstance(node, cst.Call):
        o = op(ctx, node, v.env)
        if o is not None:
            return o.name == "normalize"
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        den = ctx.deref(Value(node.right, v.env)).node
        o = op(ctx, den, v.env) if isinstance(den, cst.Call) else None
        return o is not None and o.name in ("norm", "vector_norm")
    if isinstance(node, cst.Name) and (applied := mapped_element(ctx, node, v.env)) is not None:
        node = applied  # `x, y = map(l2norm, (x, y))`: `l2norm(x)`
        if (o := op(ctx, node, v.env)) is not None:
            return o.name == "normalize"
    if isinstance(node, (cst.Name, cst.Call)):  # a helper that returns `F.normalize(t)`
        return origin_of(ctx, node, ("unit",)) is not None
    return False


def joins_unit_vectors(ctx: Context, value: Value) -> bool:
    """A squared length `v_t @ v` (or a norm) of `v = a + b` or `a - b` with `a` and `b`
    unit vectors (`F.normalize`, `x / x.norm()`, a helper returning one): 0 when the two
    point in opposite directions (the sum) or the same one (the difference), which a
    rotation between two given directions or a pair drawn from one batch reaches."""
    node = ctx.deref(value).node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        vector: cst.BaseExpression = node.right
    elif isinstance(node, cst.Call) and (o := op(ctx, node, value.env)) is not None:
        if o.name not in ("norm", "vector_norm") or o.input is None:
            return False
        vector = o.input
    else:
        return False
    inner, _ = strip(ctx, Value(vector, value.env))  # through indexing and reshapes
    for _ in range(4):  # and einops rearranges
        node = inner.node
        if not (isinstance(node, cst.Call) and node.args):
            break
        if ctx.callee(node, inner.env).qualname != "einops.rearrange":
            break
        inner, _ = strip(ctx, Value(node.args[0].value, inner.env))
    found = inner.node
    if not (
        isinstance(found, cst.BinaryOperation)
        and isinstance(found.operator, (cst.Add, cst.Subtract))
    ):
        return False
    return all(_unit_vector(ctx, Value(x, inner.env)) for x in (found.left, found.right))


def _root_of_unit_gap(ctx: Context, value: Value) -> bool:
    """A denominator holding `sqrt(1 - x**2)` whose x can reach +-1 (see `unit_bounded`)."""
    node = ctx.deref(value).node
    gaps = [
        n
        for n in descendants(node)
        if isinstance(n, cst.BinaryOperation)
        and isinstance(n.operator, cst.Subtract)
        and square_of(ctx, n.right, value.env) is not None
    ]
    return not gaps or any(unit_bounded(ctx, Value(g, value.env)) for g in gaps)


def _enclosing(ctx: Context, value: Value, depth: int = 0) -> bool:
    """The value is built from the extent of an enclosing box, `(max(a, b) - min(c, d))`
    clamped at 0 (`wh[..., 0] * wh[..., 1]`): as wide as the widest of the boxes it holds."""
    if depth > 6:
        return False
    v = ctx.deref(value)
    node, env = v.node, v.env
    if isinstance(node, cst.Subscript):
        return _enclosing(ctx, Value(node.value, env), depth + 1)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return _enclosing(ctx, Value(node.left, env), depth + 1) and _enclosing(
            ctx, Value(node.right, env), depth + 1
        )
    if isinstance(node, cst.Call):
        o = op(ctx, node, env)
        if o is not None and o.input is not None and o.name in ("clamp", "clamp_min", "prod"):
            return _enclosing(ctx, Value(o.input, env), depth + 1)
        if "cast" in call_name(node) and len(node.args) == 1:  # torchvision's `_upcast(rb - lt)`
            return _enclosing(ctx, Value(node.args[0].value, env), depth + 1)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        high = ctx.deref(Value(node.left, env)).node
        low = ctx.deref(Value(node.right, env)).node
        return (
            isinstance(high, cst.Call)
            and isinstance(low, cst.Call)
            and call_name(high) in ("max", "maximum")
            and call_name(low) in ("min", "minimum")
        )
    return False


def _division(ctx: Context, value: Value) -> Value | None:
    """The division `a / b` the value is, also through its square (`(a / b).pow(2)`)."""
    v, _ = strip(ctx, value)
    base = square_of(ctx, v.node, v.env)  # type: ignore[arg-type]
    if base is not None:
        v, _ = strip(ctx, Value(base, v.env))
    node = v.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return v
    return None


def _ratio_of_norms(ctx: Context, value: Value) -> bool:
    """`a / b` whose numerator is a norm, standard deviation or variance; also its square
    (`(ref.norm() / err.norm()).pow(2)`, a power ratio in dB)."""
    v = _division(ctx, value)
    if v is None:
        return False
    node: cst.BinaryOperation = v.node  # type: ignore[assignment]
    top = strip(ctx, Value(node.left, v.env))[0]  # `x.norm(2, 1, True)[:, 0]`
    o = op(ctx, top.node, top.env) if isinstance(top.node, cst.Call) else None
    if o is not None and o.name == "sum" and o.input is not None:
        return _squares(strip(ctx, Value(o.input, top.env))[0].node)  # an energy ratio (dB)
    return o is not None and o.name in ("norm", "std", "var")


_TALLY_NAME = re.compile(r"count|cnt|hist|freq|tally|occurr|vote|hits|prob|(^|_)(n|num)_", re.I)


def tallied_share(ctx: Context, value: Value) -> bool:
    """`counts / counts.sum()`: a share of tallies (counts, a histogram, frequencies), whose
    empty bins are everyday zeros, unlike the share of a quantity (a composition, a volume)."""
    v = _division(ctx, value)
    if v is None:
        return False
    node: cst.BinaryOperation = v.node  # type: ignore[assignment]
    top = strip(ctx, Value(node.left, v.env))[0]
    found = {n.rsplit(".", 1)[-1] for n in names(node.left) | names(top.node)}
    found |= {p for n in list(found) for p in passed_names(ctx, n)}  # `_init(cf=counts)`
    return any(_TALLY_NAME.search(n) for n in found)


def _counted(ctx: Context, value: Value) -> Value | None:
    """What `torch.count_nonzero(x)` (or `x.count_nonzero()`) counts."""
    v, _ = strip(ctx, value)
    node = v.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        for side in (node.left, node.right):  # `count_nonzero(m) * batch_size`
            found = _counted(ctx, Value(side, v.env, v.mutations))
            if found is not None:
                return found
        return None
    if not isinstance(node, cst.Call):
        return None
    o = op(ctx, node, v.env)
    if o is None or o.name != "count" or o.input is None:
        return None
    return Value(o.input, v.env, v.mutations)


def _table(reason: str) -> Confidence:
    for prefix in ("the square root of ", "a power of ", "`1 - p` of "):
        if reason.startswith(prefix):
            inner = reason[len(prefix) :]
            if prefix.startswith("`1") and inner in ("a softmax output", "a sigmoid output"):
                return "high"  # 1 - sigmoid(x) is exactly 0 from x = 16.6 in float32
            return _table(inner)
    return REASONS.get(reason, "medium")


def _source_grade(ctx: Context, value: Value) -> Confidence:
    """Grade from what a sum, norm or root is taken of (the best of the arms of an earlier
    `if` that assign it)."""
    grades = [_one_source_grade(ctx, value)]
    grades += [_one_source_grade(ctx, alt) for alt in ctx.alternatives(value) if alt is not None]
    return max(grades, key=confidence_rank)


def _one_source_grade(ctx: Context, value: Value, depth: int = 0) -> Confidence:
    found = ctx.deref(value)
    node = found.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        if depth < 3:  # `(e * pos).sum(1) / e.sum(1)`: 0 where the numerator is
            return _one_source_grade(ctx, Value(node.left, found.env), depth + 1)
    parts = factors(found.node)
    if len(parts) > 1 and depth < 3 and not _same_factors(parts):
        # `a.norm(dim=-1) * b.norm(dim=-1)`: a product is 0 where any factor is
        grades = [_one_source_grade(ctx, Value(f, found.env), depth + 1) for f in parts]
        return max(grades, key=confidence_rank)
    bases = _two_squares(ctx, unparenthesized(found.node), found.env)
    if bases is not None and depth < 3:
        # `dx ** 2 + dy ** 2`: 0 only where both are, so as likely as the less likely
        grades = [_summed_grade(ctx, Value(b, found.env)) for b in bases]
        return min(grades, key=confidence_rank)
    inner = reduced(ctx, value)
    return "low" if inner is None else _summed_grade(ctx, inner)


def _same_factors(parts: list[cst.BaseExpression]) -> bool:
    """`x * x`: a square, graded by what it is the square of."""
    return all(p.deep_equals(parts[0]) for p in parts[1:])


def _summed_grade(ctx: Context, inner: Value) -> Confidence:
    """Grade from the value a sum, norm or root is taken of."""
    if diagonal_cleared(ctx, inner):
        return "high"  # positives other than the sample itself: a class seen once has none
    if gradient_tensor(ctx, inner):
        return "high"  # a frozen, unused or dead parameter's gradient is all zeros
    if differentiated_input_gradient(ctx, inner):
        return "medium"  # a gradient penalty: a flat critic region gives a zero gradient
    if gradient_step(ctx, inner):
        return "medium"  # Adam's `m / (sqrt(v) + eps)`: 0 for a parameter whose gradient is
    if mask_like(ctx, inner):
        return "high" if mask_computed(ctx, inner) else "low"
    found = ctx.deref(inner)
    node = found.node
    if isinstance(node, cst.IfExp):  # `k.clamp_min(0) if r else torch.ones_like(d)`: each arm
        arms = (Value(node.body, found.env), Value(node.orelse, found.env))
        return max((_summed_grade(ctx, a) for a in arms), key=confidence_rank)
    while isinstance(node, cst.Subscript) and _sliced(node):
        found = ctx.deref(Value(node.value, found.env))  # `dx[:, :-1]` of a difference dx
        node = found.node
    parts = _joined_parts(ctx, found)
    if parts:  # `torch.cat([d, d[-1:]])`: 0 where any part is
        return max((_summed_grade(ctx, p) for p in parts), key=confidence_rank)
    diff = _difference(unscaled(ctx, node, found.env))
    if diff is not None:
        left, right = diff
        a, b = root_of(left), root_of(right)
        if a and a == b and (broadcast_copy(left) or broadcast_copy(right)):
            return "high"  # x[:, None] - x[None]: a point's distance to itself is 0
        if a and a == b and _shifted(left, right):
            return "high"  # x[:, 1:] - x[:, :-1]: neighbours, 0 across any constant region
        if objective(ctx):
            return "medium"  # a loss's pair (anchor and positive) can be equal in a batch
        return "low"  # two tensors (or gathered pairs, `pos[i] - pos[j]`): rarely equal
    if derivative_filtered(ctx, found):
        return "high"  # `F.conv2d(x, sobel)`: an image gradient, 0 across any flat region
    reason = zero_reason(ctx, inner, "sum")
    if reason == "a tensor filled with 0" and _padding_fill(ctx, inner):
        return "low"  # `w.masked_fill(idx == -1, 0)`: padding entries, a row keeps real ones
    if reason in _EVERYDAY_ZEROS:
        return "high"
    return "low"


def gradient_tensor(ctx: Context, value: Value) -> bool:
    """A parameter's gradient, `p.grad` (through variables and casts): all zeros for a
    frozen, unused or dead parameter. (An input gradient from `torch.autograd.grad` is all
    zero only where the output is locally flat: not counted.)"""
    v, _ = strip(ctx, value)
    node = v.node
    while isinstance(node, cst.Attribute) and node.attr.value == "data":
        v, _ = strip(ctx, Value(node.value, v.env, v.mutations))  # `grad = p.grad.data`
        node = v.node
    if isinstance(node, cst.Name) and ctx.parameter(node.value) is not None:
        return passed_gradient(ctx, node.value)  # `normalized(p.grad)` at a call site
    return isinstance(node, cst.Attribute) and node.attr.value == "grad"


def gradient_step(ctx: Context, value: Value, depth: int = 0) -> bool:
    """An optimizer's step made from a moment of the gradient: `m / (v.sqrt() + eps)` where
    `m` is updated in place with the gradient (`m.mul_(b1).add_(g, alpha=1 - b1)`, `m.lerp_(g,
    w)`), or that moment itself: all zeros for a parameter whose gradient has been 0 (frozen,
    unused, embedding rows never looked up), like the gradient."""
    if isinstance(value.node, cst.Name):  # `exp_avg.mul_(beta1).add_(1 - beta1, grad)`
        binding = ctx.lookup(value.node.value, value.env)
        for stmt in binding.mutations if binding is not None else ():
            for call in descendants(stmt):
                for arg in call.args if isinstance(call, cst.Call) else ():
                    if gradient_tensor(ctx, Value(arg.value, binding.env)):
                        return True
    v, _ = strip(ctx, value)
    node = v.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return depth < 2 and gradient_step(ctx, Value(node.left, v.env), depth + 1)
    return depth > 0 and gradient_tensor(ctx, v)  # the value itself: `_summed_grade` asked


def differentiated_input_gradient(ctx: Context, value: Value) -> bool:
    """The gradient of a network's output with respect to its input, taken with
    `torch.autograd.grad(critic(x), x, create_graph=True)` (through names, indexing and
    reshapes): zero where the network is flat (dead ReLUs), and differentiated again (a
    gradient penalty), so a root of its sum of squares gives an infinite second
    derivative. The gradient of a loss the function is given is 0 only at a stationary
    point: not counted."""
    v, _ = strip(ctx, value)
    node = v.node
    if not isinstance(node, cst.Call):
        return False
    if ctx.qualname(node.func, v.env) != "torch.autograd.grad":
        return False
    graph = keyword(node, "create_graph")
    if not (isinstance(graph, cst.Name) and graph.value == "True"):
        return False
    outputs = positional(node, 0, "outputs")
    if outputs is None:
        return False
    out = ctx.deref(Value(outputs, v.env))
    for _ in range(4):  # `critic(x).sum()`, `out.mean()`
        o = op(ctx, out.node, out.env)
        if o is None or o.name not in ("sum", "mean") or o.input is None:
            break
        out = ctx.deref(Value(o.input, out.env))
    return isinstance(out.node, cst.Call) and op(ctx, out.node, out.env) is None


def diagonal_cleared(ctx: Context, value: Value, depth: int = 0) -> bool:
    """A pairwise mask whose diagonal, its one entry guaranteed by construction (a sample
    equals itself), is cleared: `mask * logits_mask` with `logits_mask` a `scatter` of 0s
    at `arange` into ones, `1 - torch.eye(n)`, `~torch.eye(n, dtype=bool)`; or a mask
    edited by `fill_diagonal_(0)`. A row then keeps only the other samples of its class."""
    if depth > 6:
        return False
    v = ctx.deref(value)
    if any(_clears_diagonal_in_place(m) for m in v.mutations):
        return True
    node = v.node
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Multiply, cst.BitAnd)
    ):
        return any(
            _off_diagonal(ctx, Value(side, v.env))
            or diagonal_cleared(ctx, Value(side, v.env), depth + 1)
            for side in (node.left, node.right)
        )
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, v.env)
        if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
            return diagonal_cleared(ctx, Value(callee.receiver, v.env), depth + 1)
        o = op(ctx, node, v.env)
        if o is not None and o.name in ("masked_fill",) and o.input is not None:
            mask = positional(node, 0, "mask")
            fill = positional(node, 1, "value")
            if mask is not None and fill is not None and const(ctx, fill, v.env) == 0.0:
                return _eye(ctx, Value(mask, v.env))
    return False


def _clears_diagonal_in_place(stmt: cst.CSTNode) -> bool:
    for n in descendants(stmt):
        if (
            isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute)
            and n.func.attr.value == "fill_diagonal_"
            and n.args
            and isinstance(n.args[0].value, (cst.Integer, cst.Float))
            and float(n.args[0].value.value) == 0
        ):
            return True
    return False


def _eye(ctx: Context, value: Value) -> bool:
    """`torch.eye(n)` (through casts and `.to(device)`)."""
    v, _ = strip(ctx, value)
    node = v.node
    return isinstance(node, cst.Call) and ctx.qualname(node.func, v.env) == "torch.eye"


def _off_diagonal(ctx: Context, value: Value) -> bool:
    """A 0/1 tensor that is 0 exactly on the diagonal: `1 - torch.eye(n)`,
    `~torch.eye(n, dtype=bool)`, `torch.eye(n) == 0`, `logical_not(eye)`, or ones with 0s
    scattered at `arange` positions (`torch.ones_like(m).scatter(1, arange(n)..., 0)`)."""
    v, _ = strip(ctx, value)
    node = v.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        return const(ctx, node.left, v.env) == 1.0 and _eye(ctx, Value(node.right, v.env))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return _eye(ctx, Value(node.expression, v.env))
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        target = node.comparisons[0]
        return (
            isinstance(target.operator, cst.Equal)
            and const(ctx, target.comparator, v.env) == 0.0
            and _eye(ctx, Value(node.left, v.env))
        )
    if not isinstance(node, cst.Call):
        return False
    qual = ctx.qualname(node.func, v.env)
    if qual == "torch.logical_not" and node.args:
        return _eye(ctx, Value(node.args[0].value, v.env))
    callee = ctx.callee(node, v.env)
    if qual in ("torch.scatter",) and len(node.args) >= 4:
        base, index, fill = node.args[0].value, node.args[2].value, node.args[3].value
    elif (
        callee.method in ("scatter", "scatter_")
        and callee.receiver is not None
        and len(node.args) >= 3
    ):
        base, index, fill = callee.receiver, node.args[1].value, node.args[2].value
    else:
        return False
    return (
        const(ctx, fill, v.env) == 0.0
        and _ones(ctx, Value(base, v.env))
        and any(
            isinstance(n, cst.Call) and ctx.qualname(n.func, v.env) == "torch.arange"
            for n in descendants(ctx.deref(Value(index, v.env)).node)
        )
    )


def _ones(ctx: Context, value: Value) -> bool:
    v, _ = strip(ctx, value)
    node = v.node
    o = op(ctx, node, v.env) if isinstance(node, cst.Call) else None
    return o is not None and o.name == "ones"


def _padding_fill(ctx: Context, value: Value) -> bool:
    """`w.masked_fill(idx == -1, 0)`, `w.masked_fill(padding_mask, 0)` (through variables):
    zeros only at padding."""
    for _ in range(8):
        v = ctx.deref(value)
        node = v.node
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            value = Value(node.left, v.env, v.mutations)
            continue
        if not isinstance(node, cst.Call):
            return False
        o = op(ctx, node, v.env)
        if o is None or o.name != "masked_fill":
            return False
        mask = positional(node, 0, "mask")
        if mask is None:
            return False
        found = strip(ctx, Value(mask, v.env))[0].node
        if _structural(mask) or _structural(found):
            return True  # `alpha.masked_fill(padding_mask, 0)`: a sequence keeps real frames
        return isinstance(found, cst.Comparison) and _padding_test(ctx, found)
    return False


#: Values that are exactly 0 in ordinary use (a sum of them is 0 when all are).
_EVERYDAY_ZEROS = frozenset(
    {"a ReLU output", "a 0/1 mask", "a value clamped at 0", "a tensor filled with 0",
     "a `torch.where` with a 0 branch"}
)  # fmt: skip
_BROADCASTING = frozenset({"unsqueeze", "view", "reshape", "expand", "expand_as", "repeat"})


def broadcast_copy(node: cst.CSTNode) -> bool:
    """A copy given a new axis: `x[:, None]`, `x.unsqueeze(1)`, `x.view(n, 1, d)`."""
    while True:
        if isinstance(node, cst.Subscript):
            if any(
                isinstance(e.slice, cst.Index)
                and isinstance(e.slice.value, cst.Name)
                and e.slice.value.value == "None"
                for e in node.slice
            ):
                return True
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if node.func.attr.value in _BROADCASTING:
                return True
            node = node.func.value
        else:
            return False


def reduced(ctx: Context, value: Value, depth: int = 0) -> Value | None:
    """What a sum, mean, norm, root or square is taken of (following variables)."""
    if depth > 8:
        return None
    v = ctx.deref(value)
    node = v.node
    base = square_of(ctx, node, v.env)
    if base is not None:
        return reduced(ctx, Value(base, v.env, v.mutations), depth + 1) or Value(base, v.env)
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Power, cst.Multiply)
    ):
        if isinstance(node.operator, cst.Power) or node.left.deep_equals(node.right):
            return reduced(ctx, Value(node.left, v.env, v.mutations), depth + 1)
        return v
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        # an accumulation `s = s + d ** 2`: what the added terms are squares of
        for side in (node.right, node.left):
            found = reduced(ctx, Value(side, v.env, v.mutations), depth + 1)
            if found is not None and found.node is not side:
                return found
        return None
    picked = node.value if isinstance(node, cst.Subscript) else None
    if isinstance(node, cst.Attribute) and node.attr.value == "values":
        picked = node.value
    if picked is not None:  # `d.min(dim=1)[0]`, `d.min(dim=1).values`: the nearest entries
        o = op(ctx, picked, v.env)
        if o is not None and o.name in ("min", "amin") and o.input is not None:
            return reduced(ctx, Value(o.input, v.env, v.mutations), depth + 1)
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, v.env)
        if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
            return reduced(ctx, Value(callee.receiver, v.env, v.mutations), depth + 1)
        o = op(ctx, node, v.env)
        if o is not None and o.name in _THROUGH and o.input is not None:
            return reduced(ctx, Value(o.input, v.env, v.mutations), depth + 1)
        if o is not None and o.name == "amin" and o.input is not None:
            return reduced(ctx, Value(o.input, v.env, v.mutations), depth + 1)
    if depth == 0:
        return None
    return v


_PADDING = re.compile(
    r"(attention|attn|pad|padding|len|lens|length|lengths|causal|tril"
    r"|token|text|caption|seq|src|tgt|frame|word)",
    re.I,
)


def sibling_tested_empty(ctx: Context, value: Value) -> bool:
    """What the sum is taken of is unpacked from one call beside a mask that the function
    tests for emptiness (`_, scores, fg = self.assigner(...)`, then `if fg.sum():` around
    another loss term only): the author expects batches without a foreground, where the
    targets that come with it sum to 0 as well."""
    func = ctx.function
    inner = reduced(ctx, value)
    if func is None or inner is None:
        return False
    v, _ = strip(ctx, inner)
    if not isinstance(v.node, cst.Name):
        return False
    name = v.node.value
    binding = ctx.lookup(name, v.env)
    if binding is None or binding.value is not None:
        return False  # assigned from an expression, or not a name of this function
    siblings: set[str] = set()
    for node in descendants(func):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, (cst.Tuple, cst.List)):
                    unpacked = {
                        e.value.value
                        for e in target.target.elements
                        if isinstance(e.value, cst.Name)
                    }
                    if name in unpacked:
                        siblings |= unpacked - {name, "_"}
    if not siblings:
        return False
    return any(
        isinstance(node, (cst.If, cst.While)) and _tests_empty(ctx, node.test, siblings)
        for node in descendants(func)
    )


_EMPTINESS = frozenset({"sum", "any", "numel", "count_nonzero", "len"})


def _tests_empty(ctx: Context, test: cst.BaseExpression, names: set[str]) -> bool:
    """`if fg.sum():`, `if not fg.any():`, `if fg.sum() == 0:`, `if len(fg) > 0:`: a test
    of whether one of `names` holds any entry."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _tests_empty(ctx, test.expression, names)
    if isinstance(test, cst.BooleanOperation):
        return _tests_empty(ctx, test.left, names) or _tests_empty(ctx, test.right, names)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        if const(ctx, test.comparisons[0].comparator) != 0:
            return False
        test = test.left
    if not isinstance(test, cst.Call) or call_name(test) not in _EMPTINESS:
        return False
    if isinstance(test.func, cst.Attribute) and isinstance(test.func.value, cst.Name):
        if test.func.value.value in names:
            return True  # `fg.sum()`
    first = test.args[0].value if test.args else None
    return isinstance(first, cst.Name) and first.value in names  # `torch.sum(fg)`, `len(fg)`


def zero_tested(ctx: Context, value: Value) -> bool:
    """The function compares the value, or what its root is taken of, with 0 (or a tiny
    eps) somewhere: `k = where(sin_sq > 0, two_theta / sin_theta, 2)` after
    `sin_theta = sqrt(sin_sq)`. Tests of a sum's or norm's entries (`p > 0`) do not count:
    they say nothing of a whole row being 0. The author expects exact zeros there (the identity
    rotation, the principal point); a test that guards the operation itself is a guard,
    which the rules check first."""
    func = ctx.function
    if func is None:
        return False
    wanted: set[str] = set()
    current: Value | None = value
    for _ in range(4):
        if current is None:
            break
        node = current.node
        while isinstance(node, cst.Subscript):
            node = node.value
        name = dotted_name(node)
        if name is not None:
            wanted.add(name)
        following = ctx.deref(Value(node, current.env, current.mutations))
        if following.node is not node:
            current = following
            continue
        current = None
        if isinstance(node, cst.Call):
            callee = ctx.callee(node, following.env)
            if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
                current = Value(callee.receiver, following.env)
                continue
            o = op(ctx, node, following.env)
            if o is not None and o.name in _THROUGH and o.input is not None:
                if o.name in ("sum", "mean", "norm", "std", "var"):
                    break  # `p > 0`, `counts == 0` test entries, not a whole row's total
                current = Value(o.input, following.env)  # sqrt(s): what s is
    if not wanted:
        return False
    filters = {
        id(c)
        for n in descendants(func)
        if isinstance(n, cst.Subscript)
        for c in descendants(n)
        if c is not n and isinstance(c, cst.Comparison)
    }  # `p = p[p > 0]` keeps the positive entries: a filter, not an expected zero
    for node in descendants(func):
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            continue
        if id(node) in filters:
            continue
        left, right = node.left, node.comparisons[0].comparator
        operator = node.comparisons[0].operator
        for a, b, flipped in ((left, right, False), (right, left, True)):
            while isinstance(a, cst.Subscript):
                a = a.value
            bound = const(ctx, b, ctx.env)
            if bound is None and isinstance(b, cst.Name):
                bound = _constant_assigned(ctx, func, b.value)  # `eps = 1e-6` after the root
            if (
                dotted_name(a) in wanted
                and bound is not None
                and _singles_out_zero(operator, bound, flipped)
            ):
                return True
    return False


def _constant_assigned(ctx: Context, func: cst.FunctionDef, name: str) -> float | None:
    """The number `name` is given where the function's only assignment of it is one
    (`eps = 1e-6` below the line being visited, which its bindings do not hold yet)."""
    if ctx.parameter(name) is not None:
        return None
    values = [
        small.value
        for small in descendants(func)
        if isinstance(small, cst.Assign)
        and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
    ]
    return const(ctx, values[0]) if len(values) == 1 else None


def _singles_out_zero(operator: cst.BaseCompOp, bound: float, flipped: bool) -> bool:
    """`x == 0`, `x != 0`, `x > 0`, `x <= 0`, `x < 1e-8`: a test that tells 0 apart (not
    `x < 0` or `x >= 0`, which test the sign)."""
    if abs(bound) > 1e-6:
        return False
    if isinstance(operator, (cst.Equal, cst.NotEqual)):
        return True
    if flipped:  # `0 < x` is `x > 0`
        operator = {
            cst.LessThan: cst.GreaterThan(),
            cst.GreaterThan: cst.LessThan(),
            cst.LessThanEqual: cst.GreaterThanEqual(),
            cst.GreaterThanEqual: cst.LessThanEqual(),
        }.get(type(operator), operator)
    if isinstance(operator, (cst.GreaterThan, cst.LessThanEqual)):
        return bound >= 0
    return isinstance(operator, (cst.LessThan, cst.GreaterThanEqual)) and bound > 0


def padding_mask(ctx: Context, value: Value) -> bool:
    """An attention, padding, length, token or causal mask: every row keeps at least one
    token (a BOS or CLS token, a caption of one word, an utterance of one frame, the diagonal
    of a causal mask), so its sum is not 0 in practice."""
    inner = reduced(ctx, value)
    if inner is None or _entries_cleared(ctx, inner):
        return False  # `mask[:, 0] = 0`: the token that kept the row is gone
    current: Value | None = inner
    for _ in range(8):
        if current is None:
            return False
        node, env = current.node, current.env
        ident = _identifier(node) or _key(node)  # `inputs["input_lens"]`
        if ident is not None and _PADDING.search(ident):
            return True
        if isinstance(node, cst.Name):
            follow = ctx.deref(current)
            if follow.node is node:  # a parameter: what its callers pass
                return any(_PADDING.search(n) for n in passed_names(ctx, node.value))
            current = follow
        elif isinstance(node, cst.Call):
            name = _identifier(node.func) or ""
            if _PADDING.search(name):
                return True  # `length_to_mask(lengths)`, `make_pad_mask(...)`
            qual = ctx.qualname(node.func, env) or ctx.code(node.func)  # `torch, nn = try_...`
            if _method_of_result(node):
                current = Value(node.func.value, env)  # `torch.arange(n).unsqueeze(0)`
            elif qual.startswith(("torch.", "th.")) and node.args:
                current = Value(node.args[0].value, env)  # `torch.reshape(mask, [-1])`
            elif isinstance(node.func, cst.Attribute):
                current = Value(node.func.value, env)
            elif node.args:
                current = Value(node.args[0].value, env)
            else:
                return False
        elif isinstance(node, cst.Subscript):
            current = Value(node.value, env)
        elif isinstance(node, cst.Comparison):
            if _nonzero_rows(ctx, node):
                return True  # `feats.sum(-1) != 0`: the rows that are not padding
            current = Value(node.left, env)  # `arange(T) < lengths[:, None]`
            other = strip(ctx, Value(node.comparisons[0].comparator, env))[0].node
            ident = _identifier(node.comparisons[0].comparator) or _identifier(other)
            if ident is not None and _PADDING.search(ident):
                return True
        else:
            return False
    return False


def _method_of_result(node: cst.Call) -> bool:
    """A method called on the result of a call or an index (`torch.arange(n).unsqueeze(0)`),
    not a module's function."""
    func = node.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, (cst.Call, cst.Subscript))


def mask_like(ctx: Context, value: Value, depth: int = 0) -> bool:
    """A 0/1 mask: a comparison, a cast of one, a logical op, a name saying "mask", or a
    product with one (`x * mask`)."""
    if depth > 6:
        return False
    bound = ctx.deref(value)
    for _ in range(4):  # `data["sample_mask"].unsqueeze(-1)`
        callee = ctx.callee(bound.node, bound.env) if isinstance(bound.node, cst.Call) else None
        if callee is None or callee.method not in TRANSPARENT_METHODS or not callee.receiver:
            break
        bound = ctx.deref(Value(callee.receiver, bound.env))
    if isinstance(bound.node, cst.Subscript) and _keyed_mask(bound.node):
        return True  # `data["token_mask"][:, 1:]`
    v, _ = strip(ctx, value)
    node = v.node
    if isinstance(node, cst.Comparison):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return mask_like(ctx, Value(node.expression, v.env), depth + 1)
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, (cst.Multiply, cst.BitAnd)):
            return mask_like(ctx, Value(node.left, v.env), depth + 1) or mask_like(
                ctx, Value(node.right, v.env), depth + 1
            )
        return False
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, v.env)
        if callee.method in _CASTS and callee.receiver is not None:
            return mask_like(ctx, Value(callee.receiver, v.env), depth + 1)
        name = callee.qualname or callee.method or ""
        if name.rsplit(".", 1)[-1] in _MASK_OPS:
            return True
        cleared = _clearing_call(ctx, node, v.env)
        return cleared is not None and mask_like(ctx, Value(cleared, v.env), depth + 1)
    ident = _identifier(node)
    return ident is not None and bool(_MASK_NAME.search(ident))


def mask_computed(ctx: Context, value: Value, depth: int = 0) -> bool:
    """A 0/1 mask that this code computes from values by a test that can fail everywhere
    (`scores > t`, `iou >= thr`, `d != -1` on scores): it can be all 0. Not a mask the
    function is given (a parameter, an attribute: valid-entry masks, whose rows keep an entry
    by construction) nor a padding test on indices (`idx >= 0`, `species == -1`,
    `tokens.ne(pad_idx)`), which leaves every real row an entry."""
    if depth > 6 or _set_true(ctx, value):
        return False
    if _entries_cleared(ctx, value):
        return True  # `mask[:, 0] = 0` (drop [CLS]): a row may keep no other entry
    if _structural(value.node):
        return False
    given = given_name(ctx, value) or _unpacked_name(ctx, value)
    if given is not None:
        return bool(_CONTENT_MASK.search(given))  # a parameter, however it is rebound
    v, _ = strip(ctx, value)
    node = v.node
    given = _unpacked_name(ctx, v)  # `mask.unsqueeze(-1)` of `pred, mask = inputs`
    if given is not None:
        return bool(_CONTENT_MASK.search(given))

    def sub(expr: cst.BaseExpression) -> bool:
        return mask_computed(ctx, Value(expr, v.env), depth + 1)

    if isinstance(node, cst.Comparison):
        given = _given_mask_as_bool(ctx, node, v.env)
        if given is not None:  # `mask == 1` of the mask the function is given
            return bool(_CONTENT_MASK.search(given))
        cleared = any("fill_diagonal_" in ctx.code(s) for s in (*value.mutations, *v.mutations))
        if (
            len(node.comparisons) == 1
            and not cleared  # `pos.fill_diagonal_(0)`: the entries that always hit are gone
            and _always_hit(
                ctx, node.left, node.comparisons[0].comparator, node.comparisons[0].operator, v.env
            )
        ):
            return False
        return (
            not _padding_test(ctx, node)
            and not _support_test(ctx, node)
            and not _cumulative(ctx, node, v.env)
        )
    if _structural(node):
        return False  # `valid`, `atom_exists`, `attention_mask`: a row keeps an entry
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return sub(node.expression)
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, (cst.Multiply, cst.BitAnd, cst.BitOr)):
            left, right = node.left, node.right
            masks = [e for e in (left, right) if mask_like(ctx, Value(e, v.env), depth + 1)]
            return any(sub(e) for e in masks)
        return False
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, v.env)
        if callee.method in _CASTS and callee.receiver is not None:
            return sub(callee.receiver)
        name = (callee.qualname or callee.method or "").rsplit(".", 1)[-1]
        if name in _MASK_OPS:
            other = positional(node, 0, "other")
            if name in ("eq", "ge"):  # `x.eq(m)` or `torch.eq(x, m)`
                sides = None
                if callee.receiver is not None and other is not None:
                    sides = (callee.receiver, other)
                elif callee.qualname in ("torch.eq", "torch.ge") and len(node.args) >= 2:
                    sides = (node.args[0].value, node.args[1].value)
                operator = cst.Equal() if name == "eq" else cst.GreaterThanEqual()
                if sides is not None and _always_hit(ctx, *sides, operator, v.env):
                    return False
            if callee.receiver is not None and name in ("eq", "ne", "gt", "lt", "ge", "le"):
                return not _padding_parts(ctx, callee.receiver, other)
            args = [a.value for a in node.args if a.keyword is None]
            if callee.receiver is not None:
                args.append(callee.receiver)
            return any(sub(a) for a in args)
        if (callee.qualname or "").startswith("torch.") and name.startswith(("ones", "full")):
            return False  # an all-ones default mask
        if length_mask_result(ctx, node):
            return False  # `length_to_mask(lengths)`: a helper's padding mask
        return True  # a helper's result: computed somewhere
    given = given_name(ctx, v)
    if given is not None:
        return bool(_CONTENT_MASK.search(given))  # `fg_mask`: foreground can be empty
    return isinstance(node, cst.Name)  # unpacked from a call's result, a loop target


#: Masks that select by content (can be empty: an image without objects), not validity.
_CONTENT_MASK = re.compile(
    r"(^|_)(fg|foreground|pos|positive|positives|match|matched|matches|inlier|inliers|"
    r"selected|keep|hit|hits|detected|visible|occupied|obj|object|correct|found|"
    r"loss|label|labels|target|targets|completion|response|answer|"
    r"entity|entities|ent|e\d+|span|spans|subj|subject)"
    r"($|_|\d)",
    re.I,
)


def _set_true(ctx: Context, value: Value) -> bool:
    """The mask has entries set to True in place after it was computed
    (`m.scatter_(1, top1, True)`, `m[idx] = 1`): it is not empty."""
    v = ctx.deref(value)
    for stmt in v.mutations:
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            call = stmt.value
            if call_name(call) in ("scatter_", "index_fill_", "fill_") and call.args:
                fill = call.args[-1].value
                if _true(ctx, fill):
                    return True
        if isinstance(stmt, cst.Assign) and all(
            isinstance(t.target, cst.Subscript) for t in stmt.targets
        ):
            if _true(ctx, stmt.value):
                return True
    return False


_CLEARING_CALLS = frozenset({"masked_fill_", "index_fill_", "fill_diagonal_"})


def _entries_cleared(ctx: Context, value: Value) -> bool:
    """Entries of the mask are set to 0 or False in place after it is made
    (`mask[:, 0] = 0`, `m.masked_fill_(special, False)`): whatever kept a row non-empty,
    such as the one real token of a padded sentence, may be the entry cleared."""
    v, _ = strip(ctx, value)
    if isinstance(v.node, cst.Call) and _clearing_call(ctx, v.node, v.env) is not None:
        return True  # `m = drop_special(mask)`: a helper of the project clears entries
    for stmt in v.mutations:
        if isinstance(stmt, cst.Assign) and all(
            isinstance(t.target, cst.Subscript) for t in stmt.targets
        ):
            if _false(ctx, stmt.value, v.env):
                return True
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            call = stmt.value
            if call_name(call) in _CLEARING_CALLS and call.args:
                if _false(ctx, call.args[-1].value, v.env):
                    return True
    return False


def _clearing_call(ctx: Context, node: cst.Call, env: Env) -> cst.BaseExpression | None:
    """The mask argument of a call to this project's function that returns it with some
    entries set to 0 (numlint.analysis.summaries.cleared_parameter)."""
    target = ctx.project_target(node, env)
    index = cleared_parameter(ctx, *target) if target is not None else None
    return positional(node, index) if index is not None else None


def _false(ctx: Context, node: cst.BaseExpression, env: Env) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "False"
    return is_zero(ctx, node, env)


def _true(ctx: Context, node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "True"
    return const(ctx, node, ctx.env) == 1.0


def _unpacked_name(ctx: Context, value: Value) -> str | None:
    """A name bound by unpacking a call's result (`x, x_mask = self.encoder(...)`): what
    the mask is, only its name says."""
    node = value.node
    if not isinstance(node, cst.Name):
        return None
    binding = ctx.lookup(node.value, value.env)
    if binding is None or binding.value is not None or ctx.function is None:
        return None
    return node.value


def given_name(ctx: Context, value: Value) -> str | None:
    """The name of a value the function is given rather than computes: one of its
    parameters or an attribute (`mask`, `self.mask`, `mask[:, None].float()`)."""
    node, env = value.node, value.env
    for _ in range(8):
        if isinstance(node, cst.Name) and ctx.parameter(node.value) is None:
            bound = ctx.deref(Value(node, env))  # `w = self.class_weights.to(x.device)`
            if bound.node is node or not isinstance(bound.node, cst.BaseExpression):
                break
            node, env = bound.node, bound.env
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and (node.func.attr.value in TRANSPARENT_METHODS or node.func.attr.value in _CASTS)
        ):
            node = node.func.value
        elif isinstance(node, cst.IfExp):  # `adj = adj.unsqueeze(0) if adj.dim() == 2 else adj`
            arms = {given_name(ctx, Value(a, env)) for a in (node.body, node.orelse)}
            return arms.pop() if len(arms) == 1 else None
        else:
            break
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if not isinstance(node, cst.Name):
        return None
    if ctx.parameter(node.value) is not None:
        return node.value
    source = unpacking_call(ctx, node, env)  # `pos, neg, weight, mode = next(iterator)`
    if source is not None and isinstance(source.node, cst.Call):
        return node.value if call_name(source.node) == "next" else None
    return None


def _selected_by_kept_mask(ctx: Context, value: Value) -> bool:
    """`x[mask, 4:5]` with a mask some entry always passes (`box_iou(d[0], d) > t`: the first
    box overlaps itself): the selection is never empty."""
    node = value.node
    if not isinstance(node, cst.Subscript):
        return False
    for element in node.slice:
        index = element.slice
        if not isinstance(index, cst.Index):
            continue
        mask = Value(index.value, value.env)
        if mask_like(ctx, mask) and not mask_computed(ctx, mask):
            return True
    return False


def _given_mask_as_bool(ctx: Context, node: cst.Comparison, env) -> str | None:
    """`mask == 1`, `mask > 0`, `mask != 0` on a mask the function is given (a parameter or
    attribute named as a mask): the same entries as the mask, not a test of content."""
    if len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.GreaterThan)):
        return None
    bound = const(ctx, target.comparator, env)
    if bound not in (0.0, 1.0) or (bound == 1.0 and not isinstance(target.operator, cst.Equal)):
        return None
    given = given_name(ctx, Value(node.left, env))
    return given if given is not None and _MASK_END.search(given) else None


#: A name for a mask itself (`mask`, `pad_mask`, `valid`), not for what it masks (`mask_logits`).
_MASK_END = re.compile(r"(^|_)(mask|masks|valid|keep)\d*$", re.I)


def _reshaped_parameter(ctx: Context, value: Value) -> str | None:
    """A parameter passed through methods numlint does not model (`image.float()
    .normalize()`, a library's own tensor type): still the caller's values, not ones this
    code zeroes (a ReLU, a clamp or a test would be an op it knows)."""
    node, env = value.node, value.env
    for _ in range(8):
        if isinstance(node, cst.Name) and ctx.parameter(node.value) is None:
            bound = ctx.deref(Value(node, env))
            if bound.node is node or not isinstance(bound.node, cst.BaseExpression):
                return None
            node, env = bound.node, bound.env
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if op(ctx, node, env) is not None and method not in _CASTS:
                return None
            if method not in TRANSPARENT_METHODS and method not in _CASTS and _names_in(node):
                return None  # `x.foo(mask)`: what another value does to it is unknown
            node = node.func.value
        else:
            break
    if isinstance(node, cst.Name) and ctx.parameter(node.value) is not None:
        return node.value
    return None


def _names_in(call: cst.Call) -> bool:
    """The call's arguments name a variable (`foo(mask)`, not `mergedims([], {})`)."""
    return any(
        n.value not in ("True", "False", "None")
        for a in call.args
        for n in descendants(a.value, every=True)
        if isinstance(n, cst.Name)
    )


#: Masks of entries that exist (every row has one), whatever computed them.
_STRUCTURAL_MASK = re.compile(
    r"((?<!in)valid|exists?|present|(?<!un)available|attention|attn|padding|nonpad|non_pad"
    r"|node_mask|atom_mask|residue_mask|seq_mask)",  # a dense batch's real nodes, atoms, ...
    re.I,
)
_PROBABILITY = re.compile(r"(prob|probs|probabilities|proba|distribution)(_|$)", re.I)


def _always_hit(
    ctx: Context,
    a: cst.BaseExpression,
    b: cst.BaseExpression,
    operator: cst.BaseCompOp,
    env,
) -> bool:
    """A test some entry always passes: `x == x.max(-1, keepdim=True)` (a maximum is
    attained: ties count at least 1), `idx == torch.cat([idx.t(), queue], 1)` (each entry
    meets itself)."""
    if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)) and _self_overlap(ctx, a, env):
        return True  # `box_iou(boxes[i], boxes) > thr`: each kept box overlaps itself fully
    if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        scaled = _fraction_of(ctx, b, env)
        if scaled is not None:  # `mag > 0.7 * mag.max()`: the maximum passes (unless all 0)
            return _always_hit(ctx, a, scaled, cst.GreaterThanEqual(), env)
    if not isinstance(operator, (cst.Equal, cst.GreaterThanEqual)):
        return False
    for x, y in ((a, b), (b, a)):
        top = ctx.deref(Value(y, env))
        root = root_of(x)
        exact = isinstance(operator, cst.Equal)
        if root and (is_max_of(ctx, top) or _order_statistic(ctx, top, exact)):
            if _mentions(ctx, top.node, root):
                return True  # the maximum (or k-th value) of x itself: an entry of x
    if isinstance(operator, cst.Equal) and _transposed_pair(ctx, a, b, env):
        return True  # `labels == labels.T`: the diagonal holds
    if isinstance(operator, cst.Equal):
        for x, y in ((a, b), (b, a)):
            root = root_of(x)
            target = ctx.deref(Value(y, env)).node
            if root and isinstance(target, cst.Call) and call_name(target) in ("cat", "concat"):
                inside = {
                    root_of(e) for e in descendants(target) if isinstance(e, cst.BaseExpression)
                }
                if root in inside:
                    return True
        for x, y in ((a, b), (b, a)):
            if _picked_from(ctx, x, y) or _entry_against_its_column(ctx, x, y):
                return True  # `cats[y].tile(n, 1).t() == cats`: entry y meets itself
            if isinstance(y, cst.Name) and _iterates_values_of(ctx, y.value, x):
                return True  # `for label in pred.unique(): mask = pred == label`
            if _distinct_values_of(ctx, Value(y, env), root_of(x)):
                return True  # `ids.view(1, -1) == torch.unique(ids).view(-1, 1)`
    return False


def _fraction_of(ctx: Context, node: cst.BaseExpression, env) -> cst.BaseExpression | None:
    """`0.7 * m` or `m * 0.5` (a constant factor in [0, 1)) -> `m`."""
    node = ctx.deref(Value(node, env)).node
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply)):
        return None
    for factor, rest in ((node.left, node.right), (node.right, node.left)):
        c = const(ctx, factor, env)
        if c is not None and 0 <= c < 1:
            return rest
    return None


#: Statistics that are entries of the tensor (or, for quantiles, lie between its entries).
_ORDER = frozenset(
    {"max", "amax", "min", "amin", "kthvalue", "median", "nanmedian", "sort", "topk", "mode"}
)
_QUANTILES = frozenset({"quantile", "nanquantile"})


def _order_statistic(ctx: Context, value: Value, exact: bool, depth: int = 0) -> bool:
    """`torch.kthvalue(x, k).values`, `torch.sort(x)[0].gather(1, k)`, `x.quantile(q)`
    (not with `exact`: it may fall between entries), through reshaping and repeating."""
    if depth > 8:
        return False
    node, env = value.node, value.env
    if isinstance(node, cst.Attribute) and node.attr.value == "values":
        return _order_statistic(ctx, Value(node.value, env), exact, depth + 1)
    if isinstance(node, cst.Subscript):
        return _order_statistic(ctx, Value(node.value, env), exact, depth + 1)
    if isinstance(node, cst.Name):
        follow = ctx.deref(Value(node, env))
        if follow.node is node:
            source = unpacked_from(ctx, node, env)  # `kth, _ = torch.kthvalue(x, k)`
            return source is not None and _order_statistic(ctx, source, exact, depth + 1)
        return _order_statistic(ctx, follow, exact, depth + 1)
    if not isinstance(node, cst.Call):
        return False
    name = call_name(node)
    if name in _ORDER or (not exact and name in _QUANTILES):
        return True
    callee = ctx.callee(node, env)
    keeping = TRANSPARENT_METHODS | {"repeat", "expand", "expand_as", "gather", "squeeze"}
    if callee.receiver is not None and callee.method in keeping:
        return _order_statistic(ctx, Value(callee.receiver, env), exact, depth + 1)
    return False


_OVERLAP = re.compile(r"(iou|overlap)", re.I)


_REPEATS = frozenset({"tile", "t", "repeat", "expand", "expand_as", "view", "reshape",
                      "unsqueeze", "transpose", "permute"})  # fmt: skip


def _picked_from(ctx: Context, x: cst.BaseExpression, y: cst.BaseExpression) -> bool:
    """`x` is entries of `y` picked by an index (`y[idx]`, also tiled or transposed): each
    row compared with all of `y` meets the entry it was picked from."""
    node = x
    while (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in _REPEATS
    ):
        node = node.func.value
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    if not isinstance(index, cst.Index) or isinstance(index.value, (cst.Integer, cst.Slice)):
        return False
    return ctx.code(node.value).strip() == ctx.code(y).strip()


def _entry_against_its_column(ctx: Context, x: cst.BaseExpression, y: cst.BaseExpression) -> bool:
    """`d[0, -1] == d[:, -1]`: one row's entry against the whole column that holds it."""
    if not (isinstance(x, cst.Subscript) and isinstance(y, cst.Subscript)):
        return False
    if len(x.slice) != len(y.slice) or ctx.code(x.value) != ctx.code(y.value):
        return False
    picked = 0
    for a, b in zip(x.slice, y.slice, strict=True):
        if ctx.code(a.slice).strip() == ctx.code(b.slice).strip():
            continue
        whole = isinstance(b.slice, cst.Slice) and b.slice.lower is None and b.slice.upper is None
        if not whole or not isinstance(a.slice, cst.Index):
            return False
        picked += 1
    return picked == 1


def _self_overlap(ctx: Context, expr: cst.BaseExpression, env) -> bool:
    """`box_iou(boxes[i], boxes)`, `bbox_overlaps(b, b)`: the IoU of boxes with a set that
    holds them, 1 on each box's own entry."""
    call = ctx.deref(Value(expr, env)).node
    if not isinstance(call, cst.Call) or not _OVERLAP.search(call_name(call)):
        return False
    args = [x.value for x in call.args if x.keyword is None]
    return len(args) >= 2 and root_of(args[0]) is not None and root_of(args[0]) == root_of(args[1])


def _distinct_values_of(ctx: Context, value: Value, root: str | None, depth: int = 0) -> bool:
    """The value is `torch.unique(x)` (`x.unique()`) of the tensor named `root`, through
    reshaping: each of its values occurs in x."""
    if root is None or depth > 6:
        return False
    v = ctx.deref(value)
    node = v.node
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, v.env)
    if call_name(node) == "unique":
        source = callee.receiver if callee.receiver is not None else positional(node, 0, "input")
        return source is not None and root_of(source) == root
    if callee.receiver is not None and callee.method in TRANSPARENT_METHODS:
        return _distinct_values_of(ctx, Value(callee.receiver, v.env), root, depth + 1)
    return False


def _iterates_values_of(ctx: Context, var: str, tensor: cst.BaseExpression) -> bool:
    """`var` is the target of an enclosing `for` over the distinct values of `tensor`
    (`torch.unique(pred)`, `set(pred.reshape(-1).tolist())`): each value occurs in it."""
    root = root_of(tensor)
    if root is None:
        return False
    for node in reversed(ctx.stack):
        if not isinstance(node, cst.For):
            continue
        if not (isinstance(node.target, cst.Name) and node.target.value == var):
            continue
        source = ctx.deref(Value(node.iter, ctx.env)).node
        calls = {call_name(c) for c in (source, *descendants(source)) if isinstance(c, cst.Call)}
        return bool(calls & {"unique", "set"}) and _mentions(ctx, source, root)
    return False


_TRANSPOSING = frozenset({"T", "mT", "t", "transpose", "permute", "unsqueeze", "view", "reshape"})


def _transposed_pair(ctx: Context, a: cst.BaseExpression, b: cst.BaseExpression, env) -> bool:
    """`x == x.T`, `x.unsqueeze(0) == x.unsqueeze(1)`, `x[:, None] == x[None, :]`: a pairwise
    comparison of a vector with itself, whose diagonal is always equal."""

    def base(e: cst.BaseExpression) -> tuple[str | None, bool]:
        e = ctx.deref(Value(e, env)).node
        moved = False
        for _ in range(4):
            if isinstance(e, cst.Attribute) and e.attr.value in ("T", "mT"):
                e, moved = e.value, True
            elif isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute):
                if e.func.attr.value not in _TRANSPOSING:
                    break
                e, moved = e.func.value, True
            elif isinstance(e, cst.Subscript) and any(
                isinstance(el.slice, cst.Index)
                and isinstance(el.slice.value, cst.Name)
                and el.slice.value.value == "None"
                for el in e.slice
            ):
                e, moved = e.value, True  # `x[:, None]`, not `x[:, 0]`
            else:
                break
        return (dotted_name(e) if isinstance(e, (cst.Name, cst.Attribute)) else None), moved

    (ra, ma), (rb, mb) = base(a), base(b)
    return ra is not None and ra == rb and (ma or mb)


def _mentions(ctx: Context, node: cst.CSTNode, root: str) -> bool:
    """`root` is what the expression (through up to three variables) is computed from."""
    head = root.split(".")[0]
    return _computed_from(ctx, node, ctx.env, lambda n: isinstance(n, cst.Name) and n.value == head)


def _computed_from(
    ctx: Context, node: cst.CSTNode, env, hit: Callable[[cst.CSTNode], bool], depth: int = 0
) -> bool:
    """Whether a node of the expression, or of what its names (up to three variables deep,
    unpacked `m, _ = torch.max(x, 1)` included) were bound to, satisfies `hit`."""
    for n in (node, *descendants(node)):
        if hit(n):
            return True
        if not isinstance(n, cst.Name) or depth >= 3:
            continue
        bound = ctx.deref(Value(n, env))
        if bound.node is n:
            source = unpacked_from(ctx, n, env)
            if source is None:
                continue
            bound = source
        if _computed_from(ctx, bound.node, bound.env, hit, depth + 1):
            return True
    return False


def _structural(node: cst.CSTNode) -> bool:
    ident = _identifier(node) or _key(node)
    return ident is not None and bool(_STRUCTURAL_MASK.search(ident))


def _key(node: cst.CSTNode) -> str | None:
    """`out["atom_exists"]` -> "atom_exists"."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            return (
                index.value.evaluated_value
                if isinstance(index.value.evaluated_value, str)
                else None
            )
    return None


def _support_test(ctx: Context, node: cst.Comparison) -> bool:
    """`probs > 0`: a distribution's entries, of which one at least is positive."""
    if len(node.comparisons) != 1:
        return False
    target = node.comparisons[0]
    if not isinstance(target.operator, (cst.GreaterThan, cst.NotEqual)):
        return False
    if const(ctx, target.comparator, ctx.env) != 0.0:
        return False
    found = strip(ctx, ctx.value(node.left))[0].node
    ident = _identifier(found) or _identifier(node.left)
    return ident is not None and bool(_PROBABILITY.search(ident))


def _cumulative(ctx: Context, node: cst.BaseExpression, env) -> bool:
    """The test compares a cumulative sum (`1 + k * z_sorted > z_sorted.cumsum(-1)`): the
    support of a sparsemax or entmax projection, which always holds the largest entry."""
    return _computed_from(
        ctx, node, env, lambda n: isinstance(n, cst.Call) and call_name(n) == "cumsum"
    )


_INDEX_NAME = re.compile(
    r"(idx|idxs|index|indices|ids|species|elem|atom|atoms|token|tokens|atype|atom_types?)$",
    re.I,
)
#: Padding values (a pad id, or an end-of-sequence id filling what follows the end). Not an
#: ignore index: the tokens of a label mask (`labels != -100`) that count in a loss can all
#: be gone (a prompt truncated before its completion).
_SENTINEL = re.compile(r"pad|eos", re.I)


def _padding_test(ctx: Context, node: cst.Comparison) -> bool:
    if len(node.comparisons) != 1:
        return False
    return (
        _padding_parts(ctx, node.left, node.comparisons[0].comparator)
        or _nonzero_rows(ctx, node)
        or _length_test(ctx, node)
    )


def _length_test(ctx: Context, node: cst.Comparison) -> bool:
    """`torch.arange(t)[None, :] < lengths[:, None]`, `lengths > arange(t)`: positions
    against each row's length, which keeps the first `length` entries of every row (empty
    only for a length of 0): a padding mask."""
    operator = node.comparisons[0].operator
    right = node.comparisons[0].comparator
    if isinstance(operator, (cst.LessThan, cst.LessThanEqual)):
        position, length = node.left, right
    elif isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        position, length = right, node.left
    else:
        return False
    found, _ = strip(ctx, ctx.value(position))
    if not isinstance(found.node, cst.Call):
        return False
    return ctx.qualname(found.node.func, found.env) == "torch.arange" and (
        const(ctx, length) is None
    )


def _nonzero_rows(ctx: Context, node: cst.Comparison) -> bool:
    """`x.sum(-1) != 0`, `torch.sum(feats, -1, keepdim=True) != 0`: which feature vectors
    are not all-zero padding (region features, a set padded with zero rows)."""
    if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, cst.NotEqual):
        return False
    if const(ctx, node.comparisons[0].comparator) != 0:
        return False
    o = op(ctx, node.left)
    if o is None or o.name not in ("sum", "any", "norm") or o.input is None:
        return False
    dim = o.arg(0, "dim")
    return dim is not None and const(ctx, dim) == -1


def _padding_parts(
    ctx: Context, subject: cst.BaseExpression, other: cst.BaseExpression | None
) -> bool:
    """`idx >= 0`, `species == -1`, `labels != -100`, `tokens.ne(self.pad_idx)`: a test of
    an index tensor against its padding value."""
    if other is None:
        return False
    for a, b in ((subject, other), (other, subject)):
        idents = {_identifier(strip(ctx, ctx.value(a))[0].node), _identifier(a), _key(a)}
        idents.discard(None)
        if not idents:
            continue
        named = _identifier(b)
        if named is not None and _SENTINEL.search(named):
            return True  # `x.ne(pad_idx)`, `tokens != self.padding_idx`
        sentinel = const(ctx, b, ctx.env)
        for ident in idents:  # `inputs["atype"] >= 0`: the key names the index
            if _PADDING.search(ident) and "mask" not in ident.lower():
                return True
            if _INDEX_NAME.search(ident) and sentinel in (0.0, -1.0):
                return True
    return False


def _keyed_mask(node: cst.Subscript) -> bool:
    """An entry of a batch whose key says "mask" (`batch["loss_mask"]`, also sliced)."""
    while isinstance(node, cst.Subscript):
        index = node.slice[0].slice if len(node.slice) == 1 else None
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            key = index.value.evaluated_value
            return isinstance(key, str) and bool(_MASK_NAME.search(key))
        node = node.value  # type: ignore[assignment]
    return False


def _identifier(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def _difference(node: cst.CSTNode) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        node = node.func.value  # (a - b).abs(), (a - b).pow(2)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        return node.left, node.right
    return None


def root_of(node: cst.CSTNode) -> str | None:
    """The variable an indexed or reshaped expression starts from (`x[:, None]`,
    `x.unsqueeze(1)`, `self.emb.view(...)` -> its dotted name)."""
    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value
        else:
            break
    return dotted_name(node) if isinstance(node, cst.BaseExpression) else None


#: Functions with f(0) = 0, so that f(x) / x is 0/0 at x = 0 (a removable singularity).
_VANISHING = frozenset({"sin", "tan", "sinh", "tanh", "asin", "atan", "expm1", "log1p", "sqrt"})


def vanishes_together(ctx: Context, numerator: Value, denominator: Value) -> bool:
    """`sin(x) / x`, `(1 - x.cos()) / x**2`, `(x - x.sin()) / x**3`: the numerator is 0
    where the denominator is, a limit written out at its singular point. That point (a zero
    rotation, the identity) is where such formulas are evaluated every day."""
    top = _vanishing_root(ctx, numerator)
    return top is not None and top == _vanishing_root(ctx, denominator)


def _vanishing_root(ctx: Context, value: Value, depth: int = 0) -> str | None:
    """The variable x of an expression that is 0 at x = 0 (`2 * x`, `x ** 2`, `sin(x / 2)`,
    `1 - cos(x)`, `x - sin(x)`), following variables."""
    if depth > 8:
        return None
    node, env = value.node, value.env
    if isinstance(node, (cst.Name, cst.Attribute)):
        bound = ctx.deref(value)  # `half = 0.5 * theta`: theta; else the name itself
        found = None if bound.node is node else _vanishing_root(ctx, bound, depth + 1)
        return found or dotted_name(node)

    def sub(expr: cst.BaseExpression) -> str | None:
        return _vanishing_root(ctx, Value(expr, env), depth + 1)

    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return sub(node.expression)
    if isinstance(node, cst.BinaryOperation):
        left, right = node.left, node.right
        if isinstance(node.operator, cst.Multiply):
            if const(ctx, left, env) is not None:
                return sub(right)
            return sub(left) if const(ctx, right, env) is not None else None
        if isinstance(node.operator, (cst.Divide, cst.Power)):
            c = const(ctx, right, env)
            ok = c is not None and (c > 0 or isinstance(node.operator, cst.Divide))
            return sub(left) if ok and c != 0 else None
        if isinstance(node.operator, cst.Subtract):
            if const(ctx, left, env) == 1.0:
                inner = _cosine_of(ctx, right, env)  # 1 - cos(x)
                return sub(inner) if inner is not None else None
            a, b = sub(left), sub(right)  # x - sin(x)
            return a if a is not None and a == b else None
        return None
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, env)
        name = (callee.qualname or "").rsplit(".", 1)[-1]  # torch.sin, a re-export's sin
        if callee.qualname is None and callee.method in _VANISHING and callee.receiver:
            return None if node.args else sub(callee.receiver)
        if name in _VANISHING and node.args:
            return sub(node.args[0].value)
    return None


def _cosine_of(ctx: Context, node: cst.BaseExpression, env) -> cst.BaseExpression | None:
    node = ctx.deref(Value(node, env)).node
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, env)
    if callee.qualname == "torch.cos" and node.args:
        return node.args[0].value
    if callee.qualname is None and callee.method == "cos" and callee.receiver and not node.args:
        return callee.receiver
    return None


def _squares(node: cst.CSTNode) -> bool:
    """A square somewhere in a reduction's input (`x ** 2`, `x.pow(2)`, `x.square()`)."""
    for n in descendants(node):
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Power):
            return True
        if isinstance(n, cst.Attribute) and n.attr.value in ("pow", "square"):
            return True
    return False


def _outer_call(ctx: Context, value: Value) -> Op | None:
    """The op a value is the result of, through variables and `.float()`-like methods."""
    for _ in range(8):
        v = ctx.deref(value)
        if not isinstance(v.node, cst.Call):
            return None
        callee = ctx.callee(v.node, v.env)
        if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
            value = Value(callee.receiver, v.env, v.mutations)
            continue
        return op(ctx, v.node, v.env)
    return None


def _outer_op(ctx: Context, value: Value) -> str | None:
    """The name of the op a value is the result of (see `_outer_call`)."""
    o = _outer_call(ctx, value)
    return o.name if o is not None else None


#: Names of masks over the tokens a loss counts.
_TOKEN_MASK = re.compile(
    r"(^|_)(loss|label|labels|token|tokens|target|targets|nll|completion|response)_?masks?$",
    re.I,
)
#: Names of label or token ids, whose comparison with an ignore or pad id is a token mask.
_TOKEN_IDS = re.compile(r"(^|_)(labels?|targets?|tokens?|ids)($|_|\d)", re.I)


def count_tested_by_callers(ctx: Context, denominator: Value) -> bool:
    """The denominator counts a mask the function is given (`fg_mask.sum()`), and every known
    caller calls the function only under a test that the mask is not empty (`if
    fg_mask.sum(): loss = self.mask_loss(fg_mask, ...)`)."""
    o = _outer_call(ctx, denominator)
    if o is None or o.name not in ("sum", "count") or o.input is None:
        return False
    node = strip(ctx, Value(o.input, o.env))[0].node
    return (
        isinstance(node, cst.Name)
        and ctx.parameter(node.value) is not None
        and tested_by_callers(ctx, node.value)
    )


def batch_token_count(ctx: Context, denominator: Value) -> bool:
    """The denominator counts the supervised tokens of the whole batch (`mask.sum()` with
    `mask = labels != ignore_index`, `loss_mask.sum()`): it is 0 only when every token of the
    batch is ignored, where a count per row (`mask.sum(-1)`) is 0 for any empty row."""
    o = _outer_call(ctx, denominator)
    if o is None or o.name not in ("sum", "count") or o.input is None:
        return False
    if o.arg(0, "dim") is not None or any(
        a.keyword and a.keyword.value == "axis" for a in o.rest()
    ):
        return False  # a count per row
    inner = Value(o.input, o.env)
    rows = _outer_call(ctx, inner)
    if rows is not None and rows.name in ("sum", "count") and rows.input is not None:
        inner = Value(rows.input, rows.env)  # `tokens = mask.sum(-1)` ... `tokens.sum()`
    return _token_mask(ctx, inner, 0)


def _token_mask(ctx: Context, inner: Value, depth: int) -> bool:
    """A mask of supervised tokens: `labels != ignore_index`, `targets.ne(pad_idx)`, a
    `loss_mask`, or a conjunction with one of those."""
    if depth > 4:
        return False
    mask, _ = strip(ctx, inner)
    node, env = mask.node, mask.env
    for _ in range(4):  # `.long()`, `.bool()`
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if node.func.attr.value in _CASTS:
                node = ctx.deref(Value(node.func.value, env)).node
                continue
        break
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.BitAnd, cst.Multiply)
    ):
        return any(
            _token_mask(ctx, Value(side, env), depth + 1) for side in (node.left, node.right)
        )
    if isinstance(node, cst.IfExp):  # `y.ne(ignore) if ignore >= 0 else torch.ones_like(y)`
        return any(_token_mask(ctx, Value(arm, env), depth + 1) for arm in (node.body, node.orelse))
    wanted: type[cst.BaseCompOp] = cst.NotEqual
    method = "ne"
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        node = ctx.deref(Value(node.expression, env)).node  # `~pad_mask`, `pad_mask = t.eq(pad)`
        wanted, method = cst.Equal, "eq"
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        test = node.comparisons[0]
        if wanted is cst.NotEqual and _not_negative_test(ctx, test, env):
            return _ids_test(ctx, node.left, test.comparator, env)  # `labels >= 0`
        if not isinstance(test.operator, wanted):
            return False
        return _ids_test(ctx, node.left, test.comparator, env)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.args:
        if node.func.attr.value == method:  # `targets.ne(pad_idx)`
            return _ids_test(ctx, node.func.value, node.args[0].value, env)
        return False
    if wanted is cst.Equal:
        return False
    name = given_name(ctx, Value(node, env)) or _root_name(node)
    return name is not None and bool(_TOKEN_MASK.search(name))


def _not_negative_test(ctx: Context, test: cst.ComparisonTarget, env) -> bool:
    """`>= 0` or `> -1`: ids that are not a negative ignore index."""
    bound = const(ctx, test.comparator, env)
    return (isinstance(test.operator, cst.GreaterThanEqual) and bound == 0) or (
        isinstance(test.operator, cst.GreaterThan) and bound == -1
    )


def _ids_test(ctx: Context, ids: cst.BaseExpression, other: cst.BaseExpression, env) -> bool:
    """`labels != -100`, `targets != pad_idx`, `chosen_labels != 0`: a test of token ids."""
    if const(ctx, other, env) == -100 or any(_IGNORED.search(n) for n in names(other)):
        return True
    named = dotted_name(ids) or _key(ids) or ""
    return bool(_TOKEN_IDS.search(named.rsplit(".", 1)[-1]))


_IGNORED = re.compile(r"(ignore|pad|null)", re.I)


def _root_name(node: cst.CSTNode) -> str | None:
    root = root_of(node)
    return root.rsplit(".", 1)[-1] if root else None


def weights_sum(ctx: Context, numerator: Value, denominator: Value) -> bool:
    """`(x * w).sum() / w.sum()`: the denominator sums the weights (a mask, counts) that
    multiply the numerator, a weighted or masked mean; all-zero weights are the empty case."""
    inner = reduced(ctx, denominator)
    if inner is None or _squares(ctx.deref(denominator).node):
        return False  # `/ (c**2 + d**2).sum()`: a squared norm, not a sum of weights
    if _squares(strip(ctx, inner)[0].node):
        return False  # `psf = field.abs().pow(2)`: an energy, positive where the field is not 0
    if _outer_op(ctx, denominator) not in ("sum", "nansum"):
        return False  # `x * y / x.norm()`: a normalisation, not a weighted mean
    ident = root_of(ctx.deref(inner).node)
    if ident is None:
        return False
    if _structural(inner.node):
        return False  # `(x * valid).sum() / valid.sum()`: a valid-entry mask
    weights, _ = strip(ctx, inner)
    if _structural(weights.node):
        return False
    if _selected_by_kept_mask(ctx, ctx.deref(inner)):
        return False  # `w = scores[overlap]` with the box itself in `overlap`: never empty
    if positive_value(ctx, inner):
        return False  # sigmoid / softmax / exp weights: all 0 only if every one underflows
    if mask_like(ctx, inner) and not mask_computed(ctx, inner):
        return False  # a mask that keeps an entry: ties at a maximum, a padding mask
    given = given_name(ctx, inner) or given_name(ctx, weights) or _reshaped_parameter(ctx, inner)
    if given is not None and not _CONTENT_MASK.search(given):
        return False  # weights the caller passes: a valid-entry mask, positive weights
    return _weighs(ctx, numerator, ident)


def neighbour_mean(ctx: Context, numerator: Value, denominator: Value) -> bool:
    """`torch.matmul(adj, x) / adj.sum(-1, keepdim=True)` of a matrix the function is given:
    a matrix product with A divided by A's row sums, a mean over each row's neighbours (a
    dense graph convolution's mean aggregation); a row with no entry (an isolated node)
    gives 0/0."""
    if _outer_op(ctx, denominator) != "sum":
        return False
    inner = reduced(ctx, denominator)
    top = ctx.deref(numerator)
    node = top.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        left: cst.BaseExpression | None = node.left
    else:
        o = op(ctx, node, top.env) if isinstance(node, cst.Call) else None
        left = o.input if o is not None and o.name == "matmul" else None
    if inner is None or left is None or positive_value(ctx, inner):
        return False
    given = given_name(ctx, inner)  # a matrix the code computes has evidence of its own
    if given is None or ctx.parameter(given) is None:
        return False
    return same_value(ctx, Value(left, top.env), ctx.deref(inner))


def _weighs(ctx: Context, numerator: Value, ident: str, *more: str) -> bool:
    """The numerator multiplies something by the value named `ident` (or one of `more`):
    `(x * w).sum()`, `torch.dot(x, w)`, `x @ w`, `torch.mul(x, w)`."""
    found = False
    idents = {ident, *more}

    class _Products(cst.CSTVisitor):
        def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
            nonlocal found
            if isinstance(n.operator, (cst.Multiply, cst.MatrixMultiply)) and idents & {
                root_of(n.left),
                root_of(n.right),
            }:
                found = True

        def visit_Call(self, n: cst.Call) -> None:
            nonlocal found
            if call_name(n) not in _PRODUCT_CALLS:
                return
            operands = [a.value for a in n.args]
            if isinstance(n.func, cst.Attribute):
                operands.append(n.func.value)  # `x.dot(w)`
            if idents & {root_of(o) for o in operands}:
                found = True

    top = ctx.deref(numerator)
    top.node.visit(_Products())
    for n in descendants(top.node):
        if found:
            break
        if isinstance(n, cst.Name) and n.value not in idents:  # `tpos = torch.mul(hit, t)`
            bound = ctx.deref(Value(n, top.env))
            if bound.node is not n:
                bound.node.visit(_Products())
    return found


def selection_mask(ctx: Context, value: Value) -> Value | None:
    """The 0/1 mask of a boolean selection (`x[mask]`, `loss[mask == 1]`,
    `torch.masked_select(x, m)`), which keeps nothing when the mask is all 0."""
    v = ctx.deref(value)
    node = v.node
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and mask_like(ctx, Value(index.value, v.env)):
            return Value(index.value, v.env)
        return None
    if isinstance(node, cst.Call) and call_name(node) == "masked_select":
        callee = ctx.callee(node, v.env)
        if callee.qualname == "torch.masked_select":
            m = positional(node, 1, "mask")  # `torch.masked_select(x, m)`
        elif callee.method == "masked_select" and callee.receiver is not None:
            m = positional(node, 0, "mask")  # `x.masked_select(m)`
        else:
            return None
        return Value(m, v.env) if m is not None and mask_like(ctx, Value(m, v.env)) else None
    return None


def selection_can_be_empty(ctx: Context, mask: Value) -> Confidence:
    """How likely a boolean selection by `mask` keeps nothing: medium for a test this code
    computes that can fail everywhere, or for a mask a loss is given (it comes with the
    targets); low for another given mask (a padding mask keeps entries) and for the batch's
    supervised tokens (empty only if every token is ignored)."""
    if _token_mask(ctx, mask, 0):
        return "low"
    if mask_computed(ctx, mask):
        return "medium"
    node = mask.node
    given = given_name(ctx, mask)
    if given is None and isinstance(node, cst.Comparison):
        given = _given_mask_as_bool(ctx, node, mask.env)
    if given is not None and objective(ctx) and ctx.parameter(given) is not None:
        return "medium"
    return "low"


def whole_masked_mean(ctx: Context, numerator: Value, denominator: Value) -> bool:
    """`(err * w).sum() / w.sum()` over everything, with `w` a weight or mask the function
    is given: all 0 for a batch without what it marks (an image without text, a batch whose
    every response is cut off). In a loss any given weight counts (a target's score map);
    elsewhere a mask (`masked_mean(values, mask, axis=None)`). A mean per row (`mask.sum(1)`)
    is left to the mask's own evidence: a padding mask keeps an entry in every row."""
    if _outer_op(ctx, denominator) != "sum":
        return False
    o = op(ctx, ctx.deref(denominator).node, denominator.env)
    if o is None or o.input is None or not _over_everything(ctx, o):
        return False  # `mask.sum(1)`: per row
    loss = objective(ctx)
    inner = Value(o.input, denominator.env)
    name = given_name(ctx, inner)
    param = ctx.parameter(name) if name is not None else None
    if param is not None and _defaults_to_none(param):
        return False  # `active_masks=None`: a validity mask the caller may leave out
    if param is None or not (loss or mask_like(ctx, inner) or _binary_by_use(ctx, name)):
        name = root_of(o.input)  # `mask = token_mask * sample_mask`: given masks multiplied
        if name is None or not _given_masks(ctx, inner):
            return False
    return _weighs(ctx, numerator, name, root_of(o.input) or name)


def renormalised_masked_softmax(ctx: Context, numerator: Value, denominator: Value) -> bool:
    """`p = softmax(x) * mask; p / p.sum(-1, keepdim=True)`: a softmax over every entry,
    masked, then normalised again. Where the masked entries hold the large logits, the kept
    ones underflow to 0 (their gap exceeds ~104 in float32), and a row whose mask keeps
    nothing is 0 too: 0/0. Masking the logits before the softmax avoids both. Only for a
    mask the function is given (a caller's action mask)."""
    o = _outer_call(ctx, denominator)
    if o is None or o.name != "sum" or o.input is None:
        return False
    inner = ctx.deref(Value(o.input, denominator.env))
    if not same_value(ctx, inner, ctx.deref(numerator)):
        return False
    parts = factors(inner.node)  # type: ignore[arg-type]
    soft = [activation(ctx, Value(f, inner.env), ("softmax",)) is not None for f in parts]
    if len(parts) != 2 or soft.count(True) != 1:
        return False
    # the mask is given (an action mask): it may keep nothing, or hide the large logits; a
    # mask this code computes (the rows that are not padding) keeps what the scores rank
    mask = ctx.deref(Value(parts[soft.index(False)], inner.env)).node
    return isinstance(mask, cst.Name) and ctx.parameter(mask.value) is not None


def _over_everything(ctx: Context, o: Op) -> bool:
    """A reduction over every entry: no dims, or a dim the function is given whose default
    is None (`mask.sum(axis=axis)` of `def masked_mean(values, mask, axis=None)`)."""
    rest = o.rest()
    if not rest:
        return True
    if len(rest) != 1 or not isinstance(rest[0].value, cst.Name):
        return False
    param = ctx.parameter(rest[0].value.value)
    return param is not None and _defaults_to_none(param)


def _binary_by_use(ctx: Context, name: str | None) -> bool:
    """The function compares its parameter `name` for equality with a mask
    (`targs.byte() == (preds > t)`): a 0/1 tensor, the labels a recall counts."""
    func = ctx.function
    if func is None or name is None:
        return False
    for node in descendants(func.body):
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            continue
        target = node.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            continue
        for one, other in ((node.left, target.comparator), (target.comparator, node.left)):
            if root_of(one) == name and mask_like(ctx, Value(other, ctx.env)):
                return True
    return False


#: Calls that multiply their arguments.
_PRODUCT_CALLS = frozenset({"dot", "mul", "multiply", "matmul", "inner", "vdot", "mm", "bmm"})


def _defaults_to_none(param: cst.Param) -> bool:
    return isinstance(param.default, cst.Name) and param.default.value == "None"


def _given_masks(ctx: Context, value: Value) -> bool:
    """A product of two or more masks the function is given (parameters, or entries of
    one: `data["token_mask"] * data["sample_mask"][:, None]`)."""
    found = ctx.deref(value)
    parts = factors(found.node)  # type: ignore[arg-type]
    if len(parts) < 2:
        return False
    for part in parts:
        v = Value(part, found.env)
        name = given_name(ctx, v)
        if name is None or ctx.parameter(name) is None or not mask_like(ctx, v):
            return False
    return True


#: Calls that draw an index from a distribution (or its logits): the entry drawn has p > 0.
_DRAWS = frozenset({"multinomial", "argmax", "sample", "topk", "max"})


def picked_where_drawn(ctx: Context, expr: cst.BaseExpression, sources: set[str]) -> bool:
    """`probs.gather(-1, tok)` / `probs[i, tok]` with `tok` drawn, on every arm, from the
    distribution by a call that reads one of `sources` (`multinomial(probs)`,
    `logits.argmax(-1)`, `sample_top_k(probs, k)`, `Categorical(probs).sample()`): a drawn
    entry has a probability above 0, so its log is finite."""
    value = ctx.deref(ctx.value(expr))
    for _ in range(8):
        node = value.node
        index: list[cst.BaseExpression] = []
        base: cst.BaseExpression | None = None
        if isinstance(node, cst.Subscript):
            base = node.value
            index = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        elif isinstance(node, cst.Call):
            callee = ctx.callee(node, value.env)  # type: ignore[arg-type]
            parts = gather_parts(node, callee)  # type: ignore[arg-type]
            if parts is not None:
                base, index = parts[0], [parts[1]]
            elif callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
                base = callee.receiver
        if base is None:
            return False
        if any(_drawn(ctx, Value(i, value.env), sources) for i in index):
            return True
        value = ctx.deref(Value(base, value.env, value.mutations))
    return False


def gathered_where_drawn(ctx: Context, node: cst.Call, sources: set[str]) -> bool:
    """The node being visited (a log) is gathered right away at an index drawn from the
    distribution: `torch.gather(p.log(), 1, tok)`, `p.log()[rows, tok]`."""
    parent, grand = ctx.parent, ctx.stack[-3] if len(ctx.stack) > 2 else None
    index: list[cst.BaseExpression] = []
    if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
        parts = gather_parts(grand, ctx.callee(grand))
        if parts is not None and parts[0] is node:
            index = [parts[1]]
    elif isinstance(parent, cst.Attribute) and isinstance(grand, cst.Call):
        parts = gather_parts(grand, ctx.callee(grand))  # `p.log().gather(1, tok)`
        if parts is not None and parts[0] is node:
            index = [parts[1]]
    elif isinstance(parent, cst.Subscript) and parent.value is node:
        index = [e.slice.value for e in parent.slice if isinstance(e.slice, cst.Index)]
    return any(_drawn(ctx, ctx.value(i), sources) for i in index)


def _inverse_cdf(ctx: Context, expr: cst.BaseExpression | None) -> bool:
    """`p.cumsum(d) < u` (or `torch.cumsum(p, d) < u`): counting the CDF's entries below a
    uniform draw picks an index with the probability of its entry."""
    if not isinstance(expr, cst.Comparison) or len(expr.comparisons) != 1:
        return False
    if not isinstance(expr.comparisons[0].operator, (cst.LessThan, cst.LessThanEqual)):
        return False
    left = expr.left
    return isinstance(left, cst.Call) and call_name(left) == "cumsum"


def _drawn(ctx: Context, index: Value, sources: set[str]) -> bool:
    arms = [ctx.deref(index), *ctx.alternatives(index)]
    return all(arm is not None and _one_draw(ctx, arm, sources) for arm in arms)


def _one_draw(ctx: Context, value: Value, sources: set[str]) -> bool:
    for _ in range(6):
        node = value.node
        if isinstance(node, cst.Subscript):  # `probs.max(-1)[1]`, `tok[..., 0]`
            value = Value(node.value, value.env)
            continue
        if not isinstance(node, cst.Call):
            return False
        callee = ctx.callee(node, value.env)  # type: ignore[arg-type]
        if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
            value = ctx.deref(Value(callee.receiver, value.env))
            continue
        name = call_name(node)
        if name == "sum" and _inverse_cdf(ctx, callee.receiver or positional(node, 0, "input")):
            node = callee.receiver or node  # `(p.cumsum(1) < u).sum(1)`: the draw's CDF
        elif name not in _DRAWS and "sample" not in name:
            return False
        read = names(node)
        if callee.receiver is not None:
            read |= names(ctx.deref(Value(callee.receiver, value.env)).node)
        return bool(read & sources)
    return False


def project_mentions(ctx: Context, needle: str) -> bool:
    """Some file of the linted file's project contains `needle` (`".backward("`,
    `"unscale_("`) in its code: what the project does anywhere, cached per file being
    linted. A comment or a docstring's example (`>>> loss.backward()`) shows what a user
    may do, not what the project does."""
    key = f"project_mentions:{needle}"
    cached = ctx.shared.get(key)
    if cached is None:
        cached = ctx.shared[key] = any(_in_code(text, needle) for _, text in _project_texts(ctx))
    return cached  # type: ignore[no-any-return]


def _in_code(text: str, needle: str) -> bool:
    """`needle` occurs in `text` on a line that is not a comment or a doctest example."""
    at = text.find(needle)
    while at >= 0:
        line = text[text.rfind("\n", 0, at) + 1 : at].lstrip()
        if not line.startswith(("#", ">>>", "...")):
            return True
        at = text.find(needle, at + len(needle))
    return False


def _project_texts(ctx: Context) -> Iterator[tuple[str, str]]:
    """The text of the file being linted as being edited, then of each file of its project
    (read once per version by numlint.analysis.summaries.file_text), with its path."""
    yield ctx.path, ctx.source or ""
    if os.path.isfile(ctx.path):
        files, _ = project_files(project_root(os.path.abspath(ctx.path)))
        for path in files:
            yield path, file_text(path) or ""


_SIZE_TESTS = frozenset({"len", "numel", "size", "nelement"})


def minibatch_std(ctx: Context, den: cst.BaseExpression) -> bool:
    """`x.std() + eps` (or `x.std(0)`) of a minibatch a `for` loop draws with a batch size
    (`for b in buffer.get(batch_size): a = b.adv`): the unbiased standard deviation of one
    sample is NaN, which the eps does not guard. Not where a test of the batch's size
    encloses it (`if len(a) > 1:`) or exits before it."""
    node: cst.BaseExpression = den
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        if const(ctx, node.right) is not None:
            node = node.left
        elif const(ctx, node.left) is not None:
            node = node.right
    found = ctx.deref(node)
    o = op(ctx, found.node, found.env) if isinstance(found.node, cst.Call) else None
    if o is None or o.name != "std" or o.input is None or not _unbiased_over_batch(ctx, o):
        return False
    root = root_of(ctx.deref(Value(o.input, found.env)).node)
    loop = _batch_loop(ctx, root.split(".")[0]) if root is not None else None
    loop = loop or _slice_loop(ctx, Value(o.input, found.env))
    return loop is not None and not _size_tested(ctx, loop)


def _slice_loop(ctx: Context, value: Value) -> cst.For | None:
    """The enclosing `for start in range(0, n, step)` (also wrapped, `tqdm(range(...))`) whose
    target starts a slice the value is read through (`mb = adv[idx[start:start + step]]`, or
    `end = start + step; mb_inds = b_inds[start:end]`): the last slice may hold one entry."""
    current = value
    for _ in range(8):
        v = ctx.deref(current)
        node = v.node
        if isinstance(node, cst.Call):
            callee = ctx.callee(node, v.env)
            if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
                current = Value(callee.receiver, v.env)  # `adv[mb_inds].to(device)`
                continue
            return None
        if isinstance(node, cst.Subscript):
            for element in node.slice:
                index = element.slice
                if isinstance(index, cst.Slice) and isinstance(index.lower, cst.Name):
                    loop = _stepped_range_loop(ctx, index.lower.value)
                    if loop is not None:
                        return loop
                if isinstance(index, cst.Index):  # `adv[mb_inds]`: how the indices are made
                    current = Value(index.value, v.env)
                    break
            else:
                return None
            continue
        return None
    return None


def _stepped_range_loop(ctx: Context, target: str) -> cst.For | None:
    """The enclosing `for` binding `target` over a `range` with a step."""
    for node in ctx.ancestors():
        if isinstance(node, cst.FunctionDef):
            return None
        if isinstance(node, cst.For) and target in names(node.target):
            ranges = [
                n
                for n in (node.iter, *descendants(node.iter))
                if isinstance(n, cst.Call) and call_name(n) == "range" and len(n.args) == 3
            ]
            return node if ranges else None
    return None


def _unbiased_over_batch(ctx: Context, o: Op) -> bool:
    """A `std` over every entry or over axis 0, with Bessel's correction."""
    dim = o.arg(0, "dim")
    if dim is not None and not (isinstance(dim, cst.Integer) and dim.value == "0"):
        return False
    for arg in o.rest():
        value = arg.value
        if isinstance(value, cst.Name) and value.value == "False":
            return False  # `unbiased=False`, `x.std(0, False)`
        if arg.keyword is not None and arg.keyword.value == "correction":
            if const(ctx, value) == 0:
                return False
    return True


def _batch_loop(ctx: Context, root: str) -> cst.For | None:
    """The enclosing `for` whose target binds `root` and whose iterable is a call given a
    batch size (`loader.get(self.batch_size)`; `batch_size=None` yields everything at once)."""
    for node in ctx.ancestors():
        if isinstance(node, cst.FunctionDef):
            return None
        if not isinstance(node, cst.For) or root not in names(node.target):
            continue
        call = node.iter
        if not isinstance(call, cst.Call):
            return None
        for arg in call.args:
            keyed = arg.keyword.value if arg.keyword is not None else ""
            sized = "batch" in keyed or "batch" in ctx.code(arg.value).lower()
            if sized and not (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
                return node
        return None
    return None


def _size_tested(ctx: Context, loop: cst.For) -> bool:
    """A size test (`len(a) > 1`, `a.numel() < 2`, `a.shape[0]`) around the node, or an `if`
    in the loop that tests one and exits before it."""

    def sizes(test: cst.CSTNode) -> bool:
        return any(
            (isinstance(n, cst.Call) and call_name(n) in _SIZE_TESTS)
            or (isinstance(n, cst.Attribute) and n.attr.value == "shape")
            for n in descendants(test)
        )

    inside = {id(n) for n in ctx.stack}
    for node in ctx.ancestors():
        if node is loop:
            break
        if isinstance(node, (cst.If, cst.IfExp)) and sizes(node.test):
            return True
    for stmt in descendants(loop.body):
        if stmt is loop.body:
            continue
        if id(stmt) in inside:
            break
        if isinstance(stmt, cst.If) and sizes(stmt.test) and exits(stmt.body):
            return True
    return False


_MATRIX_PRODUCTS = frozenset({"mm", "bmm", "matmul", "einsum"})


def caller_rows_cosine(ctx: Context, num: cst.BaseExpression, den: cst.BaseExpression) -> bool:
    """Rows the caller gives (a parameter of the function, also converted under its name)
    divided by their own norm, the quotient then taken in a matrix product (`a / a.norm(dim=1)`,
    then `mm(a_n, b_n.T)`): a pairwise cosine similarity of arbitrary rows, where an all-zero
    row (an empty document's counts, a padded embedding) gives 0/0. A model's own features
    (`model.encode(x) / ...norm()`) are not the caller's rows."""
    func = ctx.function
    row = root_of(num)
    if func is None or row is None or ctx.parameter(row) is None:
        return False
    given, _ = strip(ctx, ctx.value(num))
    if isinstance(given.node, cst.BinaryOperation) or op(ctx, given.node, given.env) is not None:
        return False  # `emb = torch.mean(emb, dim=1)`: computed here, not the caller's rows
    norm, _ = strip(ctx, ctx.value(den))
    o = op(ctx, norm.node, norm.env) if isinstance(norm.node, cst.Call) else None
    if o is None or o.name != "norm" or o.input is None or root_of(o.input) != row:
        return False
    here = assigned_here(ctx)  # `a_n = a / ...`
    return here is not None and _in_matrix_product(func, here[0])


def _in_matrix_product(func: cst.FunctionDef, name: str) -> bool:
    """`name` is an operand of a matrix product in `func` (`@`, `mm`, `matmul`, a helper named
    for one)."""
    for node in descendants(func.body):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
            operands: list[cst.CSTNode] = [node.left, node.right]
        elif isinstance(node, cst.Call) and (
            call_name(node) in _MATRIX_PRODUCTS or call_name(node).endswith("matmul")
        ):
            operands = [a.value for a in node.args]
        else:
            continue
        if any(root_of(x) == name for operand in operands for x in descendants(operand)):
            return True
    return False


def layer_features(ctx: Context, name: str) -> bool:
    """`name` holds features partway through a network, in a module's `forward`: the input
    of a layer (a parameter of a `forward` that is not a loss, not reassigned), or what a
    sub-network returns, taken in a loop (`for f in self.net(x)`, a comprehension). Such features can be an
    all-zero vector at a position (after a ReLU, zero padding, a centred point); a loss's
    inputs are a model's final outputs."""
    if not module_forward(ctx):
        return False
    binding = ctx.lookup(name)
    if binding is None:
        return False
    copied = binding.value
    if copied is not None:  # assigned in the function: computed here, unless a copy
        if (
            isinstance(copied, cst.Call)
            and isinstance(copied.func, cst.Attribute)
            and copied.func.attr.value in TRANSPARENT_METHODS
            and isinstance(copied.func.value, cst.Name)
            and copied.func.value.value != name
        ):
            return layer_features(ctx, copied.func.value.value)  # `z = x.clone()`
        source = _zero_preserving_source(ctx, Value(copied, binding.env))
        return source is not None and ctx.parameter(source) is not None and not objective(ctx)
    if ctx.parameter(name) is not None:
        return not objective(ctx)
    for node in ctx.ancestors():
        loops: list[cst.For | cst.CompFor] = [node] if isinstance(node, cst.For) else []
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            comp: cst.CompFor | None = node.for_in
            while comp is not None:
                loops.append(comp)
                comp = comp.inner_for_in
        for loop in loops:
            if name in names(loop.target):
                return any(
                    isinstance(n, cst.Call)
                    and isinstance(n.func, cst.Attribute)
                    and isinstance(n.func.value, cst.Name)
                    and n.func.value.value == "self"
                    for n in descendants(loop.iter)
                )
    return False


#: Methods whose result is 0 wherever their receiver is (linear, or a reordering).
_ZERO_PRESERVING = frozenset(
    {"sum", "mean", "transpose", "permute", "reshape", "view", "flatten", "squeeze",
     "unsqueeze", "contiguous", "clone", "float", "double", "half", "to"}
)  # fmt: skip


def _zero_preserving_source(ctx: Context, value: Value, depth: int = 0) -> str | None:
    """The parameter a value is a zero-preserving image of (`(x.masked_fill(eye, 0).sum(-1)
    / (c - 1)).transpose(1, 2)`, `x.real`): 0 wherever the parameter's entries are (a
    padded frame, a silent channel). None for anything else."""
    if depth > 8:
        return None
    node, env = value.node, value.env
    if isinstance(node, cst.Name):
        binding = ctx.lookup(node.value, env)
        if binding is None or binding.value is None:
            return node.value  # a parameter (or a name bound elsewhere: the caller checks)
        return _zero_preserving_source(ctx, Value(binding.value, binding.env), depth + 1)
    if isinstance(node, cst.Attribute) and node.attr.value in ("real", "imag", "data", "T", "mT"):
        return _zero_preserving_source(ctx, Value(node.value, env), depth + 1)
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Multiply, cst.Divide)
    ):
        if const(ctx, node.right, env) is not None or no_gradient(
            ctx, Value(node.right, env), integers=True
        ):
            return _zero_preserving_source(ctx, Value(node.left, env), depth + 1)
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        method = node.func.attr.value
        if method in ("masked_fill", "masked_fill_"):
            fill = positional(node, 1, "value")
            if fill is None or const(ctx, fill, env) != 0.0:
                return None
        elif method not in _ZERO_PRESERVING:
            return None
        return _zero_preserving_source(ctx, Value(node.func.value, env), depth + 1)
    return None


def own_norm_of_features(ctx: Context, num: cst.BaseExpression, den: cst.BaseExpression) -> bool:
    """Layer features divided by a norm of themselves (`x / x.norm(dim=1)`, `x / norm` with
    `norm = torch.sqrt((x * x).sum(2))`, a norm helper given `x`)."""
    row = root_of(num)
    if row is None or "." in row or not layer_features(ctx, row):
        return False
    inner, _ = strip(ctx, ctx.value(den))
    found = ctx.deref(ctx.value(den)).node, inner.node
    return any(isinstance(n, cst.Name) and n.value == row for f in found for n in descendants(f))


#: Spectral transforms: a frame or band of a signal's spectrum is 0 where the signal is
#: silent (digital silence, zero padding).
_SPECTRA = frozenset({"stft", "fft", "rfft", "fft2", "rfft2", "fftn", "rfftn", "spectrogram"})


def _loss_parameters(ctx: Context) -> list[str] | None:
    """The parameters (`self` aside) of the function being visited when it is what training
    minimises and takes at least a prediction and a target; else None."""
    func = ctx.function
    if func is None or not objective(ctx):
        return None
    params = [p.name.value for p in func.params.params if p.name.value not in ("self", "cls")]
    return params if len(params) >= 2 else None


def loss_prediction_spectrum(ctx: Context, value: Value) -> bool:
    """A value computed from the spectrum of a loss's prediction alone: the function is what
    training minimises and takes `(prediction, target, ...)` (torch's loss convention,
    `self` aside); of its parameters the value reads only the first, through up to three
    variables, and it reads a spectral transform (`y_spec = stft(est)`, then
    `norm(y_spec) ** 2`) or is the magnitude of each complex entry (complex_magnitude). The
    estimate carries the gradient, and its band energy is 0 in a silent frame. (A loss's
    embedding input is not: an exact zero vector is rare.)"""
    params = _loss_parameters(ctx)
    if params is None or _parameters_read(ctx, value, params) != {params[0]}:
        return False
    node = ctx.deref(value).node
    spectral = _computed_from(
        ctx, node, value.env, lambda n: isinstance(n, cst.Call) and call_name(n) in _SPECTRA
    )
    return spectral or complex_magnitude(ctx, node, value.env)


def _parameters_read(ctx: Context, value: Value, params: list[str]) -> set[str]:
    """Which of the function's parameters `params` the value is computed from, through up to
    three variables."""
    found: set[str] = set()

    def hit(n: cst.CSTNode) -> bool:
        if isinstance(n, cst.Name) and n.value in params and ctx.parameter(n.value) is not None:
            found.add(n.value)
        return False

    _computed_from(ctx, ctx.deref(value).node, value.env, hit)
    return found


def relative_to_target(ctx: Context, numerator: Value, denominator: Value) -> bool:
    """An error relative to the target, per sample (`norm(x - y, dim=-1) / norm(y,
    dim=-1)`): the function is what training minimises and takes `(prediction, target,
    ...)` (torch's loss convention, `self` aside); the numerator reads the prediction, and
    of the parameters the denominator, a norm or sum along a dim, reads only the target,
    through up to three variables. A target is data, and data holds all-zero samples (a
    blank mask, a silent reference, a zero field): one in the batch makes the loss x / 0 or
    0 / 0. Not where every known caller passes a positive target, nor for a norm of the
    whole batch (every sample would have to be 0)."""
    if not _reduced_per_row(ctx, denominator):
        return False
    params = _loss_parameters(ctx)
    if params is None:
        return False
    return (
        _parameters_read(ctx, denominator, params) == {params[1]}
        and params[0] in _parameters_read(ctx, numerator, params)
        and not positive_from_callers(ctx, params[1])  # `y_mag = sqrt(clamp(p, min=eps))`
    )


def learned_weights_sum(ctx: Context, denominator: Value) -> bool:
    """A sum of a trainable parameter's entries, taken as they are (`w = self.w[ids]`, then
    `w.sum(1)`, with `self.w = nn.Parameter(...)`; indexing, reshaping and casts only):
    nothing keeps the weights positive, and training moves them anywhere, through a sum of
    0. A weight made positive first (`exp`, `softplus`, `softmax`, `abs`, a clamp) is not
    one, nor a detached one."""
    total, _ = strip(ctx, denominator, _KEEPS_WEIGHTS)
    o = op(ctx, total.node, total.env)
    if o is None or o.name != "sum" or o.input is None:
        return False
    made, _ = strip(ctx, Value(o.input, total.env), _KEEPS_WEIGHTS)
    return isinstance(made.node, cst.Call) and ctx.callee(made.node, made.env).qualname in (
        "torch.nn.Parameter",
        "torch.nn.parameter.Parameter",
    )


#: Methods that keep a trained weight's values and its gradient (not `detach`).
_KEEPS_WEIGHTS = TRANSPARENT_METHODS - {"detach"}


def _reduced_per_row(ctx: Context, value: Value) -> bool:
    """A norm or sum along a dim (`y.norm(dim=-1)`, `(t ** 2).sum(-1)`), not of every entry."""
    o = op(ctx, ctx.deref(value).node, value.env)
    if o is None or o.name not in ("norm", "sum"):
        return False
    dim = o.arg(1 if o.name == "norm" else 0, "dim")
    return dim is not None or keyword(o.call, "axis") is not None


def planar_radius(ctx: Context, value: Value) -> bool:
    """`v[..., 0] ** 2 + v[..., 1] ** 2` where the function also reads a third component of
    `v` along the same axis (`v[..., 2]`): the length of the vector's projection on a plane,
    0 for every vector along the remaining axis (a point on the z axis, a bond along it),
    which is far likelier than a zero vector."""
    func = ctx.function
    bases = _two_squares(ctx, unparenthesized(ctx.deref(value).node), value.env)
    if func is None or bases is None:
        return False
    parts = [_component(ctx, base) for base in bases]
    if parts[0] is None or parts[1] is None:
        return False
    (whole, axis, one), (other, axis2, two) = parts
    if whole != other or axis != axis2 or one == two:
        return False
    return any(
        (part := _component(ctx, n)) is not None
        and part[:2] == (whole, axis)
        and part[2] not in (one, two)
        for n in descendants(func.body)
        if isinstance(n, cst.Subscript)
    )


def _component(ctx: Context, node: cst.CSTNode) -> tuple[str, int, int] | None:
    """`v[..., 2]`, `v[:, 0]`: (the code of `v`, the axis indexed, the index) for a
    subscript by one integer, the other axes whole (`...` or `:`)."""
    if not isinstance(node, cst.Subscript):
        return None
    found = None
    for axis, element in enumerate(node.slice):
        index = element.slice
        if isinstance(index, cst.Slice):
            if index.lower or index.upper or index.step:
                return None
        elif isinstance(index.value, cst.Integer) and found is None:
            found = (axis, int(index.value.evaluated_value))
        elif not isinstance(index.value, cst.Ellipsis):
            return None
    return None if found is None else (ctx.code(node.value), *found)


def _two_squares(
    ctx: Context, node: cst.CSTNode, env: Env
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """`a ** 2 + b ** 2` (`.pow(2)`, `torch.square`, `a * a`): (a, b); else None."""
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)):
        return None
    left = square_of(ctx, unparenthesized(node.left), env)  # type: ignore[arg-type]
    right = square_of(ctx, unparenthesized(node.right), env)  # type: ignore[arg-type]
    return None if left is None or right is None else (left, right)


def complex_magnitude(ctx: Context, node: cst.CSTNode, env) -> bool:
    """`x[:, :f]**2 + x[:, f:]**2`, `x.real**2 + x.imag**2` or `torch.real(x)**2 +
    torch.imag(x)**2` (an `abs()` of either side too): the squared magnitude of each entry
    of a complex value held as two parts of one tensor, 0 wherever that entry is 0 (a
    silent bin of a spectrum), summed over nothing."""
    bases = _two_squares(ctx, node, env)
    if bases is None:
        return False
    parts = []
    for base in bases:
        o = op(ctx, base, env)
        if o is not None and o.name == "abs" and o.input is not None:
            base = o.input
        if isinstance(base, cst.Subscript):
            parts.append((ctx.code(base.value), ctx.code(base)))
        elif isinstance(base, cst.Attribute) and base.attr.value in ("real", "imag"):
            parts.append((ctx.code(base.value), base.attr.value))
        elif (
            isinstance(base, cst.Call)
            and (qual := ctx.callee(base).qualname) in ("torch.real", "torch.imag")
            and (inner := positional(base, 0, "input")) is not None
        ):
            parts.append((ctx.code(inner), qual.rsplit(".", 1)[-1]))
        else:
            return False
    (whole, one), (other, two) = parts
    return whole == other and one != two


def root_of_features(ctx: Context, value: Value) -> bool:
    """A sum of squares of layer features alone (`(x * x).sum(2)`, `x.pow(2).sum(1)`)."""
    used = names(ctx.deref(value).node)
    return len(used) == 1 and layer_features(ctx, used.pop())


def warned_near_zero(ctx: Context, den: cst.BaseExpression) -> bool:
    """A value the denominator is made of is tested for being 0 or below a bound in the
    function by an `if` whose body only calls (a warning, a log line): `if (var_x <
    bound).any(): warn(...)`. The author expects the 0 and lets the division run."""
    func = ctx.function
    if func is None:
        return False
    warnings = _warnings(ctx, func)
    if not warnings:
        return False  # most functions warn about nothing: no need to read the denominator
    found = ctx.deref(den).node
    if isinstance(found, cst.BinaryOperation) and isinstance(found.operator, cst.Add):
        return False  # `s + eps`: guarded
    if isinstance(found, cst.Call) and call_name(found).rstrip("_") in _GUARDS:
        return False  # `s.add_(eps)`, `s.clamp(min=eps)`
    used = names(den)
    if isinstance(den, cst.Name):
        used |= names(found)
    return any(tested_small(ctx, node.test) & used for node in warnings)


def _warnings(ctx: Context, func: cst.FunctionDef) -> list[cst.If]:
    """The function's `if` statements without `else` whose body only calls (read once per
    function: each division of the function asks)."""
    cache: dict[int, list[cst.If]] = ctx.shared.setdefault("warning_ifs", {})
    found = cache.get(id(func))
    if found is None:
        found = cache[id(func)] = [
            node
            for node in branches(ctx, func)
            if isinstance(node, cst.If) and node.orelse is None and _only_calls(node.body)
        ]
    return found


_GUARDS = frozenset({"add", "clamp", "clamp_min", "clip", "maximum", "fmax"})


def _only_calls(block: cst.BaseSuite) -> bool:
    """Every statement of the block is a call (`warnings.warn(...)`, `log.info(...)`), none
    of them editing a tensor in place (`std.masked_fill_(...)`)."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for line in lines:
        if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return False
        for stmt in line.body:
            if not (isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call)):
                return False
            if call_name(stmt.value).endswith("_"):
                return False
    return True


#: Ops that pick some entries of their input: (method or function name, input position).
_PICKS = frozenset({"index_select", "masked_select", "take_along_dim", "narrow", "topk"})


def sum_of_own_selection(ctx: Context, numerator: Value, denominator: Value) -> bool:
    """`y.gather(1, order)[:, :k].sum(1) / y.sum(1)`, `y[:, idx].sum(-1) / y.sum(-1)`,
    `y.topk(k).values.sum() / y.sum()`: the sum of some entries of a tensor over the sum of
    all of them along the same dims (a recall@k: relevant items ranked in the top k over the
    relevant items). Where a row holds none, both are 0: 0/0. Not the plain normalisation
    `y / y.sum(1, keepdim=True)` (nothing is picked)."""
    top = _outer_call(ctx, Value(unscaled(ctx, numerator.node, numerator.env), numerator.env))  # type: ignore[arg-type]
    whole = _outer_call(ctx, denominator)
    if top is None or whole is None or top.name != "sum" or whole.name != "sum":
        return False
    if top.input is None or whole.input is None or not _same_dims(ctx, top, whole):
        return False
    source = _selection_source(ctx, Value(top.input, numerator.env))
    return source is not None and same_value(
        ctx, ctx.deref(source), ctx.deref(Value(whole.input, denominator.env))
    )


def _same_dims(ctx: Context, a: Op, b: Op) -> bool:
    """Two reductions over the same dims, as written (`sum(1)`, `sum(dim=1)`)."""
    da, db = a.arg(0, "dim"), b.arg(0, "dim")
    if da is None or db is None:
        return da is None and db is None
    return ctx.code(da) == ctx.code(db)


def _selection_source(ctx: Context, value: Value) -> Value | None:
    """The tensor some of whose entries `value` is (an index or slice, a gather, a top-k),
    through several picks; None where nothing is picked."""
    picked = None
    v = ctx.deref(value)
    for _ in range(6):
        node = v.node
        inner: cst.BaseExpression | None = None
        if isinstance(node, cst.Subscript):
            inner = node.value
        elif isinstance(node, cst.Attribute) and node.attr.value == "values":
            inner = node.value
        elif isinstance(node, cst.Call):
            callee = ctx.callee(node, v.env)
            parts = gather_parts(node, callee)
            o = op(ctx, node, v.env)
            if parts is not None:
                inner = parts[0]
            elif callee.method in _PICKS and callee.receiver is not None:
                inner = callee.receiver
            elif o is not None and o.name == "topk" and o.input is not None:
                inner = o.input
        if inner is None:
            break
        found = ctx.deref(Value(inner, v.env))
        if (
            isinstance(found.node, cst.Call)
            and (o2 := op(ctx, found.node, found.env))
            and o2.name == "topk"
        ):
            inner = o2.input  # `y.topk(k)[0]`
            if inner is None:
                break
            found = ctx.deref(Value(inner, found.env))
        picked, v = found, found
    return picked


def _sliced(node: cst.Subscript) -> bool:
    """`x[:, 1:]`, `x[..., :-1]`: entries picked by slices (and `...`) alone, which keep the
    values' zeros."""
    return all(
        isinstance(e.slice, cst.Slice)
        or (isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis))
        for e in node.slice
    )


def _shifted(left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
    """`x[:, 1:] - x[:, :-1]`, `x[..., :-2] - x[..., 2:]`: one tensor less itself shifted by k
    entries along one axis (`k:` against `:-k`, the other axes alike): a finite difference,
    0 wherever the tensor is constant (a flat image region, a silence, a repeated value).
    Not `boxes[:, 2:] - boxes[:, :2]`, two halves of each row."""
    if not (isinstance(left, cst.Subscript) and isinstance(right, cst.Subscript)):
        return False
    if not (_sliced(left) and _sliced(right)) or not left.value.deep_equals(right.value):
        return False
    if len(left.slice) != len(right.slice):
        return False
    shifts = [
        (a.slice, b.slice)
        for a, b in zip(left.slice, right.slice, strict=True)
        if not a.slice.deep_equals(b.slice)
    ]
    return len(shifts) == 1 and _shift_pair(*shifts[0])


def _shift_pair(a: cst.BaseSlice, b: cst.BaseSlice) -> bool:
    """`k:` and `:-k` (either order), k a positive integer."""
    if not (isinstance(a, cst.Slice) and isinstance(b, cst.Slice)) or a.step or b.step:
        return False
    for one, two in ((a, b), (b, a)):
        if one.upper is None and two.lower is None and one.lower is not None and two.upper:
            k = _integer(one.lower)
            if k is not None and k > 0 and _integer(two.upper) == -k:
                return True
    return False


def _integer(node: cst.BaseExpression) -> int | None:
    """The value of an integer literal, `-1` included."""
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _integer(node.expression)
        return -inner if inner is not None else None
    return None


_CONVOLUTIONS = frozenset(
    {f"{m}.conv{d}d" for m in ("torch", "torch.nn.functional") for d in (1, 2, 3)}
)
_CONV_MODULES = frozenset({f"torch.nn.Conv{d}d" for d in (1, 2, 3)})
#: Methods that keep a kernel's taps (and so whether they sum to 0).
_KEEPS_TAPS = frozenset(
    {"unsqueeze", "view", "reshape", "expand", "expand_as", "repeat", "float", "double",
     "half", "to", "type", "type_as", "transpose", "permute", "flip", "t", "contiguous",
     "clone", "cuda", "detach", "requires_grad_"}
)  # fmt: skip


def derivative_filtered(ctx: Context, value: Value) -> bool:
    """The response of a convolution with constant kernels whose taps sum to 0 (Sobel,
    Prewitt, Scharr, a Laplacian, `[-1, 1]`): `F.conv2d(x, k)` with `k = torch.tensor(...)`
    (also stacked, reshaped, moved, or kept on `self`), or a `self.conv(x)` whose weight the
    constructor sets to such a constant (`self.conv.weight = nn.Parameter(k)`, `.weight.data
    = k`). It is 0 across
    any flat region of the input: an image gradient's magnitude has an infinite slope there."""
    v, _ = strip(ctx, value)
    node = v.node
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, v.env)
    if callee.qualname in _CONVOLUTIONS:
        weight = positional(node, 1, "weight")
        return weight is not None and _zero_sum_taps(ctx, Value(weight, v.env))
    func = node.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
        return False
    if func.value.value != "self" or ctx.class_scope is None:
        return False
    made = ctx.class_scope.attrs.get(func.attr.value)
    if made is None or not isinstance(made.node, cst.Call):
        return False
    if ctx.callee(made.node, made.env).qualname not in _CONV_MODULES:
        return False
    weight = _assigned_weight(ctx, func.attr.value)
    return weight is not None and _zero_sum_taps(ctx, weight)


def _assigned_weight(ctx: Context, attr: str) -> Value | None:
    """What the class's methods assign to `self.<attr>.weight` (`= nn.Parameter(k)` or
    `.data = k`), unwrapped from the Parameter."""
    cls = ctx.class_scope
    if cls is None:
        return None
    found = cls.attrs.get(f"{attr}.weight") or cls.attrs.get(f"{attr}.weight.data")
    if found is None:
        return None
    node = found.node
    if isinstance(node, cst.Call) and ctx.qualname(node.func, found.env) in (
        "torch.nn.Parameter",
        "torch.nn.parameter.Parameter",
    ):
        data = positional(node, 0, "data")
        return Value(data, found.env) if data is not None else None
    return found


def _zero_sum_taps(ctx: Context, value: Value) -> bool:
    sums = _kernel_sums(ctx, value)
    return bool(sums) and all(abs(s) < 1e-9 for s in sums)


def _kernel_sums(ctx: Context, value: Value, depth: int = 0) -> list[float] | None:
    """The sums of the taps of each kernel a constant tensor holds (each 2-D or 1-D table of
    a literal), through stacking, reshaping, moves, negation and constant scaling; None for
    anything else."""
    if depth > 10:
        return None
    found = ctx.deref(value)
    node, env = found.node, found.env

    def sub(expr: cst.BaseExpression) -> list[float] | None:
        return _kernel_sums(ctx, Value(expr, env), depth + 1)

    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return sub(node.expression)
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Multiply, cst.Divide)
    ):
        if const(ctx, node.right, env) is not None:
            return sub(node.left)
        if isinstance(node.operator, cst.Multiply) and const(ctx, node.left, env) is not None:
            return sub(node.right)
        return None
    if isinstance(node, cst.Subscript):
        return sub(node.value)  # `k[None, None]`
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT"):
        return sub(node.value)
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, env)
    if callee.qualname in TENSOR_LITERALS:
        data = positional(node, 0, "data")
        return _literal_sums(ctx, data, env) if data is not None else None
    parts = _joined_parts(ctx, found, whole=True)
    if parts:
        sums: list[float] = []
        for part in parts:
            found_sums = sub(part.node)  # type: ignore[arg-type]
            if found_sums is None:
                return None
            sums += found_sums
        return sums
    if callee.method in _KEEPS_TAPS and callee.receiver is not None:
        return sub(callee.receiver)
    return None


def _literal_sums(ctx: Context, data: cst.BaseExpression, env: Env) -> list[float] | None:
    """The sums of each 2-D (or the one 1-D) table of a nested list literal of numbers."""
    found = ctx.deref(Value(data, env))
    node = found.node
    if not isinstance(node, (cst.List, cst.Tuple)) or not node.elements:
        return None
    rows = [e.value for e in node.elements]
    if all(isinstance(r, (cst.List, cst.Tuple)) for r in rows):
        inner = [[e.value for e in r.elements] for r in rows]  # type: ignore[attr-defined]
        if all(not isinstance(x, (cst.List, cst.Tuple)) for row in inner for x in row):
            numbers = [const(ctx, x, found.env) for row in inner for x in row]
            return None if None in numbers else [sum(numbers)]  # type: ignore[arg-type]
        sums: list[float] = []
        for r in rows:
            part = _literal_sums(ctx, r, found.env)
            if part is None:
                return None
            sums += part
        return sums
    numbers = [const(ctx, r, found.env) for r in rows]
    return None if None in numbers else [sum(numbers)]  # type: ignore[arg-type]


def zero_started_tally(ctx: Context, value: Value) -> bool:
    """A per-class tally kept on `self`: a state made as zeros of a given size
    (`self.add_state("union", default=torch.zeros(num_classes))`, `self.register_buffer(...)`,
    `self.counts = torch.zeros(k)`) that the class only ever adds per-class counts to
    (`self.union += histc(...)`, `self.counts[y] += 1`, `self.counts.index_add_(...)`). A
    class no batch has held keeps its 0, so dividing by the tally (an IoU over accumulated
    unions) is 0/0 there. A scalar total, or one that only gains a number of samples
    (`self.total += n_obs`), is 0 only before the first update: not counted. Read from the
    whole class in the file's syntax tree (the methods that update the state hold no
    division)."""
    cls = ctx.class_scope
    if cls is None or not isinstance(cls.node, cst.ClassDef):
        return False
    node = ctx.deref(value).node
    while True:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if node.func.attr.value not in TRANSPARENT_METHODS:
                break
            node = node.func.value  # `self.union.float()`
        elif isinstance(node, cst.Subscript):
            node = node.value  # `self.unions[c]`: a class's entry of the tally
        else:
            break
    if not (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return False
    name, tree = node.attr.value, ctx.class_tree(cls.node.name.value)
    if tree is None:
        return False
    made = added = False
    for method in tree.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for stmt in ast.walk(method):
            if isinstance(stmt, ast.Call) and _registers(stmt, name):
                made = made or _sized_zeros(_registered_value(stmt))
            elif isinstance(stmt, ast.Assign) and any(_self_attr(t, name) for t in stmt.targets):
                if _sized_zeros(stmt.value):
                    made = True
                elif not _adds_to_itself(stmt.value, name):
                    return False  # set to something else somewhere
                else:
                    added = added or _class_counts(method, stmt.value)
            elif isinstance(stmt, ast.AugAssign) and _self_attr(_base(stmt.target), name):
                if not isinstance(stmt.op, ast.Add):
                    return False
                # `self.counts[y] += 1` or a vector of counts is per class
                per_class = isinstance(stmt.target, ast.Subscript)
                added = added or per_class or _class_counts(method, stmt.value)
            elif isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Attribute):
                if not _self_attr(stmt.func.value, name):
                    continue
                if stmt.func.attr in ("index_add_", "scatter_add_", "index_put_"):
                    added = True
                elif stmt.func.attr == "add_" and stmt.args:
                    added = added or _class_counts(method, stmt.args[0])
    return made and added


def _self_attr(node: ast.AST, name: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == name
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _base(node: ast.expr) -> ast.expr:
    """`self.counts` of `self.counts[y]`."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def _registers(
    call: ast.Call, name: str, methods: tuple[str, ...] = ("add_state", "register_buffer")
) -> bool:
    """`self.add_state("name", ...)` or `self.register_buffer("name", ...)` (one of
    `methods`)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in methods):
        return False
    first = call.args[0] if call.args else None
    return isinstance(first, ast.Constant) and first.value == name


def _registered_value(call: ast.Call) -> ast.expr | None:
    if len(call.args) > 1:
        return call.args[1]
    return next((k.value for k in call.keywords if k.arg in ("default", "tensor")), None)


def _sized_zeros(node: ast.expr | None) -> bool:
    """`torch.zeros(num_classes)`, `torch.zeros(k, dtype=...)`, `x.new_zeros(k)`: zeros with a
    size of more than one entry (not `torch.zeros(1)`, `torch.tensor(0.0)`)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr not in ("zeros", "new_zeros"):
        return False
    sizes = list(node.args)
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = list(sizes[0].elts)
    if not sizes:
        return False
    return not all(
        isinstance(s, ast.Constant) and isinstance(s.value, int) and s.value <= 1 for s in sizes
    )


#: Calls that count per class or bin.
_COUNTING = frozenset({"histc", "bincount", "one_hot"})


def _class_counts(func: ast.AST, node: ast.expr, depth: int = 0) -> bool:
    """A vector of counts per class: made by `histc`, `bincount` or `one_hot`, or summing a
    comparison (`(pred == c).sum(0)`), also through names the method binds (`area_union =
    area_pred + area_target - area_inter`). Not a number of samples (`n_obs`)."""
    if depth > 4:
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Compare):
            return True
        if isinstance(sub, ast.Call):
            fn = sub.func
            called = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if called in _COUNTING:
                return True
        if isinstance(sub, ast.Name):
            bound = _bound_in(func, sub.id)
            if bound is not None and _class_counts(func, bound, depth + 1):
                return True
            if any(_class_counts(func, v, depth + 1) for v in _entries_set(func, sub.id)):
                return True  # `new[c] = (pred == c).sum()` in a loop over the classes
    return False


def _entries_set(func: ast.AST, name: str) -> list[ast.expr]:
    """What `func` assigns to entries of `name` (`name[c] = ...`)."""
    return [
        stmt.value
        for stmt in ast.walk(func)
        if isinstance(stmt, ast.Assign)
        and any(
            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name
            for t in stmt.targets
        )
    ]


def _bound_in(func: ast.AST, name: str) -> ast.expr | None:
    """What the last plain assignment to `name` in `func` binds, or None."""
    bound = None
    for stmt in ast.walk(func):
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in stmt.targets
        ):
            bound = stmt.value
    return bound


def _adds_to_itself(node: ast.expr, name: str) -> bool:
    """`self.x + ...` (or `... + self.x`): the attribute plus something."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and (_self_attr(node.left, name) or _self_attr(node.right, name))
    )


#: Dtypes a buffer made with `dtype=` keeps through `model.half()` (not floating point).
_WHOLE_DTYPES = ("bool", "long", "int", "uint8", "int8", "int16", "int32", "int64", "short")


def float_buffer(ctx: Context, name: str) -> bool:
    """`self.<name>` is a floating-point buffer of the module (`self.register_buffer("bias",
    torch.tril(torch.ones(n, n)))`): `model.half()` converts it with the weights, so it is
    float16 wherever the model is. Not a bool or integer buffer, nor a plain attribute."""
    cls = ctx.class_scope
    if cls is None or not isinstance(cls.node, cst.ClassDef):
        return False
    tree = ctx.class_tree(cls.node.name.value)
    for call in ast.walk(tree) if tree is not None else ():
        if not (isinstance(call, ast.Call) and _registers(call, name, ("register_buffer",))):
            continue
        made = _registered_value(call)
        if made is None:
            return False
        text = ast.unparse(made)
        return not any(
            f".{t}(" in text or f"torch.{t}" in text or f"dtype={t}" in text for t in _WHOLE_DTYPES
        )
    return False


#: `create_graph=` set to anything but False (True, `self.training`): a gradient that is
#: itself differentiated.
_CREATE_GRAPH = re.compile(r"create_graph\s*=\s*(?!False\b)[\w.]")


def double_backward(ctx: Context) -> str | None:
    """Where the project takes a gradient it differentiates again (`torch.autograd.grad(E,
    pos, create_graph=True)`: forces trained against, a gradient penalty), as
    "`create_graph=...` in <file>"; None where no file of the project does."""
    key = "double_backward"
    if key in ctx.shared:
        return ctx.shared[key]  # type: ignore[no-any-return]
    found = None
    for path, text in _project_texts(ctx):
        if "create_graph" in text and (match := _CREATE_GRAPH.search(text)):
            found = f"`{match.group(0).split('=')[0].strip()}=...` in {os.path.basename(path)}"
            break
    ctx.shared[key] = found
    return found


def _joined_parts(ctx: Context, value: Value, whole: bool = False) -> list[Value]:
    """The tensors `torch.cat([a, b])` / `torch.stack((a, b))` joins, each as a value in the
    call's environment; [] for anything else (`whole`: also where a part is starred, `[a,
    *rest]`, so that the parts returned are all of them)."""
    node = value.node
    if not isinstance(node, cst.Call):
        return []
    if ctx.qualname(node.func, value.env) not in JOINS:
        return []
    listed = positional(node, 0, "tensors")
    if not isinstance(listed, (cst.List, cst.Tuple)):
        return []
    starred = [isinstance(e, cst.StarredElement) for e in listed.elements]
    if whole and any(starred):
        return []
    return [
        Value(e.value, value.env) for e, s in zip(listed.elements, starred, strict=True) if not s
    ]


#: What a loss function or module is called (`self.varifocal_loss`, `criterion`).
_LOSS_CALL = re.compile(r"loss|criterion", re.I)


def loss_target_total(ctx: Context, numerator: Value, denominator: Value) -> bool:
    """A loss normalised by the total of its own targets (`loss_cls = self.cls_loss(pred,
    target_scores); loss_cls /= target_scores.sum()`): the denominator sums a tensor that the
    numerator's loss call takes after the prediction. Targets are data: a batch without
    positives (background images, empty masks) sums to 0, and the loss is 0/0 there."""
    total = ctx.deref(denominator)
    o = op(ctx, total.node, total.env)  # type: ignore[arg-type]
    if o is None or o.name != "sum" or o.input is None:
        return False
    summed, _ = strip(ctx, Value(o.input, total.env))
    target = ctx.deref(summed).node
    named = o.input.value if isinstance(o.input, cst.Name) else None
    call = ctx.deref(numerator).node
    if not isinstance(call, cst.Call) or not _LOSS_CALL.search(call_name(call)):
        return False
    for i, arg in enumerate(call.args):
        if arg.star or (i == 0 and arg.keyword is None):
            continue  # the prediction comes first
        if named is not None and isinstance(arg.value, cst.Name) and arg.value.value == named:
            return True  # the same variable
        given, _ = strip(ctx, Value(arg.value, numerator.env))
        if ctx.deref(given).node is target or same_value(ctx, given, summed):
            return True
    return False
