"""NUM112 fully-masked-softmax."""

from __future__ import annotations

import math
from dataclasses import dataclass

import libcst as cst

from numlint.analysis.context import Env, Value
from numlint.analysis.evidence import mask_computed, root_of, selection_can_be_empty
from numlint.analysis.guards import sanitised_later
from numlint.analysis.ops import const
from numlint.analysis.semantics import activation, positional, string_value, strip
from numlint.analysis.tables import SOFTMAX_MODULES
from numlint.diagnostic import Confidence
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.tree import call_name, descendants

_LOG_SOFTMAX = frozenset(
    {"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"}
)
_FILLS = frozenset({"masked_fill", "masked_fill_"})
_INFINITIES = frozenset({"math.inf", "numpy.inf", "torch.inf", "numpy.Inf", "numpy.PINF"})
_TRIANGLES = frozenset({"triu", "tril"})
_CASTS = frozenset({"bool", "byte", "float", "int", "long", "to", "type", "half", "double"})


@dataclass(frozen=True)
class _Fill:
    """Where masked scores are set to -inf: the node to report, the mask of the entries set
    (None where it is the complement of `keep`), the mask of the entries kept, and the
    -inf expression with the scores it fills (for the fix)."""

    node: cst.CSTNode
    hidden: cst.BaseExpression | None
    keep: cst.BaseExpression | None
    env: Env
    infinity: cst.BaseExpression
    scores: cst.BaseExpression | None


class FullyMaskedSoftmax(Rule):
    """Softmax over scores masked with -inf: a row with every entry masked is all NaN.

    What it does:
    Flags the -inf fill of scores that a softmax or log-softmax then normalises:
    `s.masked_fill(mask, float("-inf"))` (also `-np.inf`, `-math.inf`, `-torch.inf`, a
    constant bound to one, the in-place `s.masked_fill_(...)` and `s[mask] = float("-inf")`
    before the softmax) and `torch.where(keep, s, float("-inf"))` (also with
    `torch.full_like(s, float("-inf"))` or `torch.tensor(float("-inf"))`), also as an additive
    bias (`s + torch.zeros_like(s).masked_fill(m, float("-inf"))`), when the result reaches
    `torch.softmax`, `F.softmax`, `s.softmax(d)`, an `nn.Softmax` module or a `log_softmax`
    in any of those spellings, directly or through variables.

    Why is this bad?
    A row whose every entry is -inf has no largest finite entry: softmax computes
    `exp(-inf - (-inf)) = exp(NaN)`, and the whole row is NaN, forward and backward. An
    all-padding sequence, a query with no valid key, a node without neighbours or a causal
    mask that also hides the diagonal gives such a row, and one NaN row poisons every
    parameter through the shared gradient. `torch.finfo(s.dtype).min` masks the same
    entries exactly (their `exp` is 0 wherever a row keeps an entry) and turns a fully
    masked row into a uniform distribution instead of NaN; zero that row's output if it
    must not count.

    Fix safety:
    Unsafe: `float("-inf")` becomes `torch.finfo(s.dtype).min`, which changes only rows that
    were entirely NaN. Offered for `masked_fill` and `where` when the filled scores are a
    name or attribute chain (nothing runs twice).

    A mask that keeps the diagonal cannot hide a whole row: a causal mask
    `torch.triu(ones, diagonal=1)` (or `~torch.tril(ones)`) is not reported. A softmax whose
    NaN the code replaces next (`attn.masked_fill(torch.isnan(attn), 0)`, `nan_to_num`) is
    not reported. `scores + mask.log()` is reported by NUM103.

    Known limitations:
    Follows the scores within one function. Whether a given mask can hide a whole row is
    what the rows mean (a sequence of padding only, an empty history), which the code does not
    show; such masks are graded low.

    Confidence:
    high for a causal mask that also hides the diagonal (`torch.triu(ones)`: the first row
    is fully masked); medium where the hidden entries are chosen by a test this code computes
    that can hold for a whole row (`dist > radius`, `scores < t`), or the kept ones by one that
    can fail for a whole row, or by a mask a loss is given; low for a mask the function is
    given (a padding mask keeps each real sequence's tokens).

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.softmax.html
    - [numlint hazard catalog, row 18](https://github.com/numlint/numlint/blob/main/docs/hazards.md#18)
    """

    CODE = "NUM112"
    NAME = "fully-masked-softmax"
    MESSAGE = (
        "softmax over scores masked with -inf: a row whose every entry is masked gives "
        "exp(-inf - (-inf)) = NaN for the whole row, forward and backward; fill with "
        "`torch.finfo(scores.dtype).min` instead (a fully masked row becomes uniform) and "
        "zero that row's output if it must not count"
    )
    #: The spellings of -inf (`float("-inf")`, `-float('inf')`, `-np.inf`, `math.inf`),
    #: not every word holding "inf" (`info`, `inference`).
    TRIGGERS = (
        *("-inf", "-Inf", "inf'", 'inf"', "Inf'", 'Inf"'),
        *("np.inf", "numpy.inf", "math.inf", "torch.inf"),
    )
    ALSO_REQUIRES = ("softmax", "Softmax")
    CONFIDENCE = "medium"

    VALID = [
        Valid(
            """
            import torch
            def attend(scores, mask):
                scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
                return scores.softmax(-1)
            """,
            "the dtype's minimum: a fully masked row stays finite",
        ),
        Valid(
            """
            import torch
            def causal(scores):
                n = scores.shape[-1]
                future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
                return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
            """,
            "a causal mask keeps the diagonal: no row is fully masked",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            class Causal(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))
                def forward(self, att):
                    t = att.size(-1)
                    att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
                    return att.softmax(-1)
            """,
            "a causal buffer that keeps the diagonal",
        ),
        Valid(
            """
            import torch
            def attend(scores, mask):
                attn = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
                attn = attn.masked_fill(torch.isnan(attn), 0.0)
                return attn
            """,
            "the NaN of a fully masked row is replaced next",
        ),
        Valid(
            """
            import torch
            def best(scores, mask):
                return scores.masked_fill(~mask, float("-inf")).argmax(-1)
            """,
            "no softmax: an argmax of -inf entries is not NaN",
        ),
        Valid(
            """
            import torch
            def attend(scores, mask):
                scores = scores.masked_fill(~mask, -1e4)
                return scores.softmax(-1)
            """,
            "a finite fill (NUM402 checks it against float16)",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def attend(scores, mask):
                scores = scores.masked_fill(mask == 0, float("-inf"))
                return torch.softmax(scores, dim=-1)
            """,
            line=3,
            column=14,
            fixed="""
            import torch
            def attend(scores, mask):
                scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
                return torch.softmax(scores, dim=-1)
            """,
            confidence="low",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def neighbours(q, pos, radius):
                scores = q @ q.transpose(-1, -2)
                far = torch.cdist(pos, pos) > radius
                scores[far] = -float("inf")
                return F.log_softmax(scores, dim=-1)
            """,
            line=6,
            column=5,
            note="hidden by a test this code computes: a point with no neighbour in range",
            confidence="medium",
        ),
        Invalid(
            """
            import numpy as np
            import torch
            def causal(scores):
                n = scores.size(-1)
                mask = torch.triu(torch.ones(n, n)).bool()
                weights = torch.where(mask, -np.inf, scores)
                return weights.softmax(-1)
            """,
            line=6,
            column=15,
            fixed="""
            import numpy as np
            import torch
            def causal(scores):
                n = scores.size(-1)
                mask = torch.triu(torch.ones(n, n)).bool()
                weights = torch.where(mask, torch.finfo(scores.dtype).min, scores)
                return weights.softmax(-1)
            """,
            note="a causal mask that hides the diagonal too: the first row is fully masked",
            confidence="high",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, q, k, key_padding_mask):
                    scores = q @ k.transpose(-1, -2)
                    scores.masked_fill_(key_padding_mask[:, None, :], float("-inf"))
                    return self.softmax(scores)
            """,
            line=9,
            column=9,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, q, k, key_padding_mask):
                    scores = q @ k.transpose(-1, -2)
                    scores.masked_fill_(key_padding_mask[:, None, :], torch.finfo(scores.dtype).min)
                    return self.softmax(scores)
            """,
            note="filled in place, normalised by an nn.Softmax module on self",
            confidence="low",
        ),
    ]
    PROBE = Probe(
        hazard="torch.softmax(s.masked_fill(m, float('-inf')), -1)",
        fix="torch.softmax(s.masked_fill(m, torch.finfo(s.dtype).min), -1)",
        inputs={
            "s": "torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])",
            "m": "torch.tensor([[False, True, False], [True, True, True]])",
        },
        note="the second row is fully masked: NaN for the hazard, uniform for the fix",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        scores = _softmax_input(ctx, node)
        if scores is None:
            return
        for fill in _fills(ctx, ctx.value(scores)):
            if id(fill.node) in self._seen:
                continue
            grade = _grade(ctx, fill)
            if grade is None or sanitised_later(ctx, nan=True):
                continue
            self._seen.add(id(fill.node))
            self.report(fill.node, fix=self._fix(fill), confidence=grade)

    @property
    def _seen(self) -> set[int]:
        return self.ctx.shared.setdefault("fully_masked_fills", set())  # type: ignore[return-value]

    def _fix(self, fill: _Fill) -> FixSpec | None:
        ctx = self.ctx
        scores = fill.scores
        if scores is None or not _plain(scores):
            return None
        finfo = ctx.spell("torch.finfo")
        if finfo is None:
            return None
        code = f"{finfo}({ctx.code(scores)}.dtype).min"
        return self.fix("unsafe", "Fill with the dtype's minimum", (fill.infinity, code))


def _softmax_input(ctx, node: cst.Call) -> cst.BaseExpression | None:
    """The scores a softmax or log-softmax call normalises, in any spelling."""
    if call_name(node) not in ("softmax", "log_softmax"):
        if ctx.callee(node).instance_of not in SOFTMAX_MODULES:
            return None  # neither spelled so nor an `nn.Softmax` module (cheap first)
    act = activation(ctx, Value(node, ctx.env), ("softmax",))
    if act is not None and act.call is node:
        return act.input
    callee = ctx.callee(node)
    if callee.qualname in _LOG_SOFTMAX:
        return positional(node, 0, "input")
    if callee.method == "log_softmax" and callee.receiver is not None:
        return callee.receiver
    return None


def _fills(ctx, value: Value, depth: int = 0) -> list[_Fill]:
    """The -inf fills that the scores `value` went through (after variables, views, a
    scaling by a number)."""
    if depth > 6:
        return []
    found, _ = strip(ctx, value)
    # an in-place fill reads names as they are after it (here), not where the scores were made
    out = [f for stmt in found.mutations if (f := _statement_fill(ctx, stmt, ctx.env))]
    node = found.node
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Divide, cst.Multiply, cst.Add, cst.Subtract)
    ):  # `masked / temperature`, `s - s.max()`, `scores + bias` of a bias filled with -inf
        for side in (node.left, node.right):
            out += _fills(ctx, Value(side, found.env), depth + 1)
        return out
    if isinstance(node, cst.Call):
        fill = _call_fill(ctx, node, found.env)
        if fill is not None:
            return [*out, fill]
    return out


def _call_fill(ctx, node: cst.Call, env: Env) -> _Fill | None:
    """`s.masked_fill(m, -inf)`, `torch.masked_fill(s, m, -inf)`, `torch.where(k, s, -inf)`
    (or `torch.where(m, -inf, s)`)."""
    callee = ctx.callee(node, env)
    if callee.method in _FILLS and callee.receiver is not None:
        mask, value = positional(node, 0, "mask"), positional(node, 1, "value")
        if mask is not None and value is not None and _negative_infinity(ctx, value, env):
            return _Fill(node, mask, None, env, value, callee.receiver)
        return None
    if callee.qualname == "torch.masked_fill":
        scores, mask = positional(node, 0, "input"), positional(node, 1, "mask")
        value = positional(node, 2, "value")
        if mask is not None and value is not None and _negative_infinity(ctx, value, env):
            return _Fill(node, mask, None, env, value, scores)
        return None
    if callee.qualname == "torch.where":
        test, yes, no = (positional(node, i) for i in range(3))
        if test is None or yes is None or no is None:
            return None
        if _negative_infinity(ctx, no, env):
            return _Fill(node, None, test, env, no, yes)
        if _negative_infinity(ctx, yes, env):
            return _Fill(node, test, None, env, yes, no)
    return None


def _statement_fill(ctx, stmt: cst.CSTNode, env: Env) -> _Fill | None:
    """An in-place fill before the softmax: `s.masked_fill_(m, -inf)`, `s[m] = -inf`."""
    for node in descendants(stmt):
        if isinstance(node, cst.Call):
            fill = _call_fill(ctx, node, env)
            if fill is not None:
                return fill
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if (
                isinstance(target, cst.Subscript)
                and len(target.slice) == 1
                and isinstance(target.slice[0].slice, cst.Index)
                and _negative_infinity(ctx, node.value, env)
            ):
                mask = target.slice[0].slice.value
                return _Fill(node, mask, None, env, node.value, None)
    return None


def _negative_infinity(ctx, expr: cst.BaseExpression, env: Env) -> bool:
    """`float("-inf")`, `-float("inf")`, `-np.inf`, `-math.inf`, `-torch.inf`, a name bound
    to one, `torch.tensor(float("-inf"))`, `torch.full_like(s, float("-inf"))`."""
    value = const(ctx, expr, env)
    if value is not None:
        return value == -math.inf
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = expr.expression
        return (
            isinstance(inner, (cst.Attribute, cst.Name)) and ctx.qualname(inner, env) in _INFINITIES
        )
    if not isinstance(expr, cst.Call):
        return False
    callee = ctx.callee(expr, env)
    if callee.qualname in ("torch.tensor", "torch.as_tensor"):
        first = positional(expr, 0, "data")
    elif callee.qualname in ("torch.full", "torch.full_like") or callee.method == "new_full":
        first = positional(expr, 1, "fill_value")  # `torch.full_like(s, float("-inf"))`
    else:
        return False
    return first is not None and _negative_infinity(ctx, first, env)


def _grade(ctx, fill: _Fill) -> Confidence | None:
    """How likely the mask hides a whole row (None: it cannot)."""
    hidden, keep = fill.hidden, fill.keep
    if hidden is not None and keep is None:
        keep = _complement(hidden)
    triangle = _triangle(ctx, hidden, fill.env) if hidden is not None else None
    if triangle is not None:
        return "high" if triangle else None
    if keep is not None and hidden is None:
        kept = _triangle(ctx, keep, fill.env)
        if kept is not None:  # `torch.where(tril(ones) > 0, s, -inf)` keeps the diagonal;
            return None if kept else "high"  # one that does not leaves an end row empty
    if isinstance(keep, cst.Name):
        keep = _assigned_before(ctx, keep, fill.node) or keep  # an in-place fill's mask
    if keep is not None and _pairwise(ctx, Value(keep, fill.env)):
        return "high"  # `m[:, None] * m[:, :, None]`: the row of each padded entry is empty
    if keep is not None:
        return selection_can_be_empty(ctx, Value(keep, fill.env))
    if hidden is not None and _threshold(ctx, Value(hidden, fill.env)):
        return "medium"
    return "low"


def _threshold(ctx, hidden: Value) -> bool:
    """Entries hidden by an order test this code computes (`dist > radius`, `s < t`): it can
    hold across a whole row (a point with no neighbour in range). An equality test against a
    value (`x == pad`) holds across a row only for a row of padding."""
    found, _ = strip(ctx, hidden)
    node = found.node
    return (
        isinstance(node, cst.Comparison)
        and len(node.comparisons) == 1
        and isinstance(
            node.comparisons[0].operator,
            (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual),
        )
        and mask_computed(ctx, hidden)
    )


def _assigned_before(ctx, name: cst.Name, stmt: cst.CSTNode) -> cst.BaseExpression | None:
    """The value last assigned to `name` before `stmt` in the function's text: an in-place
    fill's names mean what they meant at that statement, not where the scores were made."""
    func = ctx.function
    if func is None:
        return None
    last = None
    for node in descendants(func.body):
        if node is stmt:
            return last
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and node.targets[0].target.value == name.value
        ):
            last = node.value
    return None


def _pairwise(ctx, keep: Value) -> bool:
    """A mask of pairs made from one mask of entries (`m[:, None, :] * m[:, :, None]`,
    `m.unsqueeze(1) & m.unsqueeze(2)`): every pair with a masked entry is masked, so the
    row of an entry the mask drops keeps nothing."""
    found = ctx.deref(keep)
    node = found.node
    if not (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, (cst.Multiply, cst.BitAnd))
    ):
        return False
    left, right = node.left, node.right
    name = root_of(left)
    return (
        name is not None
        and name == root_of(right)
        and not left.deep_equals(right)
        and isinstance(left, (cst.Subscript, cst.Call))
        and isinstance(right, (cst.Subscript, cst.Call))
    )


def _complement(mask: cst.BaseExpression) -> cst.BaseExpression | None:
    """`k` of `~k`, `k == 0`, `k == False`, `k.logical_not()`, `1 - k`, `k.eq(0)`."""
    if isinstance(mask, cst.UnaryOperation) and isinstance(mask.operator, (cst.BitInvert, cst.Not)):
        return mask.expression
    if isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1:
        target = mask.comparisons[0]
        if isinstance(target.operator, cst.Equal) and _falsy(target.comparator):
            return mask.left
    if isinstance(mask, cst.BinaryOperation) and isinstance(mask.operator, cst.Subtract):
        if isinstance(mask.left, cst.Integer) and mask.left.value == "1":
            return mask.right
    if isinstance(mask, cst.Call) and isinstance(mask.func, cst.Attribute):
        name = mask.func.attr.value
        if name == "logical_not" and not mask.args:
            return mask.func.value
        if name == "eq" and len(mask.args) == 1 and _falsy(mask.args[0].value):
            return mask.func.value
    return None


def _falsy(expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Integer) and expr.value == "0") or (
        isinstance(expr, cst.Name) and expr.value == "False"
    )


def _triangle(ctx, mask: cst.BaseExpression, env: Env, depth: int = 0) -> bool | None:
    """For a triangular mask of the entries it marks: True when it marks the diagonal too
    (`torch.triu(ones)`, `ones.triu(0)`), False when it leaves the diagonal out
    (`torch.triu(ones, diagonal=1)`, `~torch.tril(ones)`); None when it is not one."""
    if depth > 6:
        return None
    peeled = mask
    while isinstance(peeled, cst.Subscript):
        peeled = peeled.value
    if isinstance(peeled, cst.Attribute) and (buffer := _buffer(ctx, peeled)) is not None:
        return _triangle(ctx, buffer, env, depth + 1)  # `self.register_buffer("m", tril(...))`
    found, _ = strip(ctx, Value(mask, env))
    node = found.node
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        inner = _triangle(ctx, node.expression, found.env, depth + 1)
        return None if inner is None else not inner
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        target = node.comparisons[0]
        inner = _triangle(ctx, node.left, found.env, depth + 1)
        if inner is None:
            return None
        if isinstance(target.operator, cst.Equal) and _falsy(target.comparator):
            return not inner
        if isinstance(target.operator, (cst.GreaterThan, cst.NotEqual)) and _falsy(
            target.comparator
        ):
            return inner
        return None
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node, found.env)
    if callee.method in _CASTS and callee.receiver is not None:
        return _triangle(ctx, callee.receiver, found.env, depth + 1)  # `.bool()`
    name = (callee.qualname or "").rsplit(".", 1)[-1] if callee.qualname else callee.method
    if name not in _TRIANGLES:
        return None
    if callee.qualname:
        diagonal = positional(node, 1, "diagonal")
    else:
        diagonal = positional(node, 0, "diagonal")
    offset = 0.0 if diagonal is None else const(ctx, diagonal, found.env)
    if offset is None:
        return None
    # triu(d) marks j >= i + d: the diagonal when d <= 0; tril(d) marks j <= i + d
    return offset <= 0 if name == "triu" else offset >= 0


def _buffer(ctx, attr: cst.Attribute) -> cst.BaseExpression | None:
    """The value its class registers as the buffer `self.<name>` (one registration)."""
    cls = ctx.class_scope
    if cls is None or not (isinstance(attr.value, cst.Name) and attr.value.value == "self"):
        return None
    found = []
    for node in descendants(cls.node):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "register_buffer"
            and len(node.args) >= 2
            and string_value(node.args[0].value) == attr.attr.value
        ):
            found.append(node.args[1].value)
    return found[0] if len(found) == 1 else None


def _plain(expr: cst.BaseExpression) -> bool:
    """A name or an attribute chain on one."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)
