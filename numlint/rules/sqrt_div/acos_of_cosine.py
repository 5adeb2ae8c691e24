"""NUM203 acos-of-cosine."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.context import Env, Value
from numlint.analysis.evidence import reduced
from numlint.analysis.gradients import gradient_flows
from numlint.analysis.guards import edge_tested
from numlint.analysis.ops import FLOAT32_HALF_ULP_BELOW_ONE, clamp_bounds, const, op, same_code
from numlint.analysis.semantics import needs_parens
from numlint.analysis.summaries import origin_of, related
from numlint.analysis.zeros import denominator_reason
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid


class AcosOfCosine(Rule):
    """acos / asin of a cosine similarity: NaN just outside [-1, 1]; clamp strictly inside.

    What it does:
    Flags `torch.acos`, `torch.asin`, `torch.arccos`, `torch.arcsin` and their method forms
    applied to a cosine similarity (`F.cosine_similarity`, `nn.CosineSimilarity`), to a dot
    product of normalised vectors (`(F.normalize(a) * F.normalize(b)).sum(-1)`, `a_n @ b_n.T`)
    or to a dot product divided by norms, unless it is clamped strictly inside (-1, 1); and,
    where a gradient flows, to a coordinate over its vector's length
    (`v[..., 2] / v.norm(dim=-1)`, exactly +-1 on the axis); and to an entry of a matrix
    (`torch.asin(R[..., 0, 2])` in an Euler-angle conversion), which only an orthonormal
    matrix keeps in [-1, 1].

    Why is this bad?
    Rounding makes the cosine of a vector with itself 1.0000001 for about a fifth of random
    vectors: `acos` of it is NaN. Even clamped to exactly [-1, 1], the derivative
    -1/sqrt(1 - c^2) is -inf at +-1 and the gradient is NaN. Clamp to
    `[-1 + 1e-7, 1 - 1e-7]` (float32), or compute the angle with `atan2`.

    Fix safety:
    Unsafe (values near +-1 change): the argument is clamped to `(-1 + 1e-7, 1 - 1e-7)`.
    Offered only where the argument is not clamped already.

    Known limitations:
    A bound closer to 1 than 3e-8 rounds to 1 in float32 and is reported; half precision
    needs a larger margin (NUM4xx). Cosines computed in another function are not seen.

    Confidence:
    high (also for a margin that rounds to 1, `1 - 1e-9`); low for a cosine clamped to
    exactly [-1, 1] (finite: only the gradient at +-1,
    which needs exactly equal or opposite vectors, is infinite), for a coordinate over its
    vector's length (a vector exactly on the axis) and when the function compares the
    argument with +-1 (`d > 1 - eps`): the edge is handled on purpose, usually by a
    `torch.where` or lerp that replaces those entries. medium for a value not known to be a
    cosine that the code clamps to exactly [-1, 1] where a gradient flows (a unit quaternion's
    scalar, a sine in an Euler-angle conversion): those reach +-1 exactly at the identity
    rotation or the pole, ordinary inputs. medium too for a value not known to be a cosine,
    not clamped, that the function tests against +-1 where a gradient flows (`phi =
    torch.acos(r) / 3; phi[r <= -1] = pi / 3` in the closed-form eigenvalues of a 3x3
    matrix): the author expects the value at the edge, rounding takes it past, and the
    entries replaced afterwards keep a NaN gradient. medium for an entry of a matrix, not
    clamped: a rotation matrix's entries are exactly +-1 at axis-aligned rotations (the
    identity, gimbal lock), and float32 products take them to 1.0000001.

    References:
    - https://pytorch.org/docs/stable/generated/torch.acos.html
    - [numlint hazard catalog, row 16](https://github.com/numlint/numlint/blob/main/docs/hazards.md#16)
    """

    CODE = "NUM203"
    NAME = "acos-of-cosine"
    MESSAGE = (
        "acos / asin of a cosine: rounding takes it past +-1 (NaN) and the gradient at +-1 is "
        "infinite; clamp strictly inside: `c.clamp(-1 + 1e-7, 1 - 1e-7)`"
    )
    TRIGGERS = ("acos", "asin", "arccos", "arcsin")

    VALID = [
        Valid(
            """
            import math
            import torch
            @torch.no_grad()
            def eigenvalues(p, q, det):
                r = det / (2 * p ** 3)
                phi = torch.acos(r) / 3.0
                phi[r <= -1] = math.pi / 3
                return q + 2 * p * torch.cos(phi)
            """,
            "no gradient, and the entries past the edge are replaced",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            c = F.cosine_similarity(a, b, dim=-1)
            angle = torch.acos(c.clamp(-1 + 1e-7, 1 - 1e-7))
            """,
            "clamped strictly inside (-1, 1)",
        ),
        Valid(
            """
            import math
            angle = math.acos(c)
            """,
            "`math.acos`",
        ),
        Valid(
            """
            import torch
            angle = torch.acos(x)
            """,
            "not known to be a cosine",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def angle(a, b, eps):
                c = F.cosine_similarity(a, b)
                c = torch.clamp(c, -1.0 + eps, 1.0 - eps)
                return torch.acos(c)
            """,
            "clamped with a named margin in an earlier statement",
        ),
        Valid(
            """
            import torch
            def polar_angle(pos, r):
                return torch.acos(pos[..., 2] / r)
            """,
            "divided by something else than the vector's length",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            angle = torch.acos(F.cosine_similarity(a, b, dim=-1))
            """,
            line=3,
            column=9,
            fixed="""
            import torch
            import torch.nn.functional as F
            angle = torch.acos(F.cosine_similarity(a, b, dim=-1).clamp(-1 + 1e-7, 1 - 1e-7))
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def geodesic(x, y):
                x = F.normalize(x, dim=-1)
                y = F.normalize(y, dim=-1)
                c = (x * y).sum(-1).clamp(-1, 1)
                return c.acos()
            """,
            line=7,
            column=12,
            confidence="low",
            note="clamped to exactly [-1, 1]: the gradient at +-1 is still infinite; no fix",
        ),
        Invalid(
            """
            import torch
            def angle(u, v):
                cos = (u * v).sum(-1) / (u.norm(dim=-1) * v.norm(dim=-1))
                return torch.arccos(cos)
            """,
            line=4,
            column=12,
            fixed="""
            import torch
            def angle(u, v):
                cos = (u * v).sum(-1) / (u.norm(dim=-1) * v.norm(dim=-1))
                return torch.arccos(cos.clamp(-1 + 1e-7, 1 - 1e-7))
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def f(a, b):
                za = F.normalize(a, dim=1)
                zb = F.normalize(b, dim=1)
                return torch.asin(za @ zb.T)
            """,
            line=6,
            column=12,
            fixed="""
            import torch
            import torch.nn.functional as F
            def f(a, b):
                za = F.normalize(a, dim=1)
                zb = F.normalize(b, dim=1)
                return torch.asin((za @ zb.T).clamp(-1 + 1e-7, 1 - 1e-7))
            """,
        ),
        Invalid(
            """
            import torch
            c = torch.cosine_similarity(a, b).clamp(-1 + 1e-9, 1 - 1e-9)
            t = torch.acos(c)
            """,
            line=3,
            column=5,
            note="a margin of 1e-9 rounds to 0 in float32",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def slerp(a, b, t, eps=1e-7):
                d = (F.normalize(a, dim=-1) * F.normalize(b, dim=-1)).sum(-1, keepdim=True)
                collinear = (d > 1 - eps) | (d < -1 + eps)
                omega = d.acos()
                out = (torch.sin((1 - t) * omega) * a + torch.sin(t * omega) * b) / omega.sin()
                return torch.where(collinear, a + t * (b - a), out)
            """,
            confidence="low",
            line=6,
            column=13,
            fixed="""
            import torch
            import torch.nn.functional as F
            def slerp(a, b, t, eps=1e-7):
                d = (F.normalize(a, dim=-1) * F.normalize(b, dim=-1)).sum(-1, keepdim=True)
                collinear = (d > 1 - eps) | (d < -1 + eps)
                omega = d.clamp(-1 + 1e-7, 1 - 1e-7).acos()
                out = (torch.sin((1 - t) * omega) * a + torch.sin(t * omega) * b) / omega.sin()
                return torch.where(collinear, a + t * (b - a), out)
            """,
            note="the edge is tested (`d > 1 - eps`) and replaced by a lerp",
        ),
        Invalid(
            """
            import torch
            def polar_angle(pos):
                rho = pos.norm(dim=-1)
                return torch.acos(pos[..., 2] / rho)
            """,
            confidence="low",
            line=4,
            column=12,
            note="a coordinate over its vector's length: +-1 on the axis; no fix (atan2)",
        ),
        Invalid(
            """
            import torch
            def quaternion_log(q):
                w, v = q[..., 0:1], q[..., 1:4]
                return v * torch.acos(torch.clamp(w, min=-1.0, max=1.0)) / v.norm(dim=-1, keepdim=True)
            """,
            line=4,
            column=16,
            confidence="medium",
            note="the identity quaternion has w = 1 exactly: acos' is infinite there",
        ),
        Invalid(
            """
            import math
            import torch
            def eigenvalues(p, q, det):
                r = det / (2 * p ** 3)
                phi = torch.acos(r) / 3.0
                phi[r <= -1] = math.pi / 3
                phi[r >= 1] = 0
                return q + 2 * p * torch.cos(phi)
            """,
            line=5,
            column=11,
            confidence="medium",
            note="tested against +-1 after the fact: the forward is repaired, the gradient not",
        ),
    ]
    INVALID += [
        Invalid(
            """
            import torch
            def matrix_to_euler(matrix):
                if matrix.size(-1) != 3 or matrix.size(-2) != 3:
                    raise ValueError("a 3x3 matrix")
                pitch = torch.asin(matrix[..., 0, 2] * -1.0)
                yaw = torch.atan2(matrix[..., 0, 1], matrix[..., 0, 0])
                return pitch, yaw
            """,
            line=5,
            column=13,
            confidence="medium",
            note="the identity rotation has entries of exactly 0 and 1; rounding passes 1",
        ),
    ]
    VALID += [
        Valid(
            """
            import torch
            def matrix_to_euler(matrix):
                return torch.asin(matrix[..., 0, 2].clamp(-1 + 1e-6, 1 - 1e-6))
            """,
            "an entry clamped strictly inside (-1, 1)",
        ),
        Valid(
            """
            import torch
            def pitch(matrix):
                return torch.atan2(-matrix[..., 2, 0], torch.hypot(matrix[..., 0, 0], matrix[..., 1, 0]))
            """,
            "the angle computed with atan2",
        ),
    ]
    PROBE = Probe(
        hazard="torch.acos(torch.nn.functional.cosine_similarity(a, a, dim=-1))",
        fix=(
            "torch.acos(torch.nn.functional.cosine_similarity(a, a, dim=-1)"
            ".clamp(-1 + torch.finfo(a.dtype).eps, 1 - torch.finfo(a.dtype).eps))"
        ),
        inputs={"a": "torch.randn(1000, 16)"},
        note="a clamp to 1 - 1e-7 rounds to 1.0 in float16 and bfloat16: clamp by the dtype's eps",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        o = op(ctx, node)
        if o is None or o.name not in ("acos", "asin") or o.input is None:
            return
        if o.spelling == "method" and node.args:
            return
        value = ctx.deref(ctx.value(o.input))
        clamped = False
        c = op(ctx, value.node, value.env)  # type: ignore[arg-type]
        if c is not None and c.name == "clamp" and c.input is not None:
            low, high = clamp_bounds(c)
            if _strict(ctx, low, value.env, -1.0) and _strict(ctx, high, value.env, 1.0):
                return
            clamped = True
            exact = all(
                b is not None and const(ctx, b, value.env) in (-1.0, 1.0) for b in (low, high)
            )
            if not gradient_flows(ctx, o.input):
                return  # clamped to [-1, 1]: finite; only the gradient at +-1 is infinite
            value = ctx.deref(Value(c.input, value.env))
        if _component(ctx, value):
            if gradient_flows(ctx, o.input):
                self.report(node, _COMPONENT, confidence="low")
            return
        if not _cosine(ctx, value):
            found = origin_of(ctx, value.node, ("cosine",)) if not clamped else None
            if found is not None:
                self.report(node, f"{self.MESSAGE} ({found.what})", related=related(found))
            elif clamped and exact:
                # clamping to exactly [-1, 1] says the value reaches +-1 (a unit quaternion's
                # scalar at the identity, a sine at gimbal lock): there the slope is infinite
                self.report(node, _CLAMPED, confidence="medium")
            elif not clamped and edge_tested(ctx, o.input) and gradient_flows(ctx, o.input):
                # so does testing it against +-1 (`phi[r <= -1] = pi / 3`): rounding takes a
                # value computed to lie in [-1, 1] past the edge, and overwriting those
                # entries afterwards leaves their gradient NaN
                self.report(node, _TESTED, confidence="medium")
            elif not clamped and _matrix_entry(ctx, value):
                # only an orthonormal matrix (a rotation) has every entry in [-1, 1]: its
                # entries are exactly +-1 at axis-aligned rotations, the identity among them
                self.report(node, _ENTRY, confidence="medium")
            return
        if clamped and exact:
            # finite; the infinite gradient needs a cosine of exactly +-1 (equal vectors)
            self.report(node, _CLAMPED, confidence="low")
            return
        edge = not clamped and edge_tested(ctx, o.input)
        self.report(
            node, fix=None if clamped else self._fix(o.input), confidence="low" if edge else None
        )

    def _fix(self, arg: cst.BaseExpression) -> FixSpec:
        text = self.ctx.code(arg)
        if needs_parens(arg):
            text = f"({text})"
        code = f"{text}.clamp(-1 + 1e-7, 1 - 1e-7)"
        return self.fix("unsafe", "Clamp strictly inside (-1, 1)", (arg, code))


_TESTED = (
    "acos / asin of a value the code tests against +-1: rounding takes it past +-1, where the "
    "result is NaN, and replacing those entries afterwards leaves their gradient NaN; clamp "
    "strictly inside first: `r.clamp(-1 + 1e-7, 1 - 1e-7)`"
)
_CLAMPED = (
    "acos / asin of a cosine clamped to exactly [-1, 1]: finite, but the gradient at +-1 "
    "(equal or opposite vectors) is infinite; clamp strictly inside: "
    "`c.clamp(-1 + 1e-7, 1 - 1e-7)`"
)


def _strict(ctx, bound: cst.BaseExpression | None, env: Env, edge: float) -> bool:
    """A clamp bound strictly inside (-1, 1) in float32 (a named margin counts)."""
    if bound is None:
        return False
    value = const(ctx, bound, env)
    if value is None:
        return True
    return abs(edge - value) >= FLOAT32_HALF_ULP_BELOW_ONE and abs(value) < 1


def _cosine(ctx, value: Value) -> bool:
    """A cosine similarity, a dot product of normalised vectors, or a dot over norms."""
    node, env = value.node, value.env
    o = op(ctx, node, env)  # type: ignore[arg-type]
    if o is not None and o.name == "cosine":
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return _dot(ctx, Value(node.left, env), normalised=False) and _has_norm(
            ctx, Value(node.right, env)
        )
    return _dot(ctx, value, normalised=True)


#: A coordinate over its own vector's length never rounds past 1 (the squared length is at
#: least the squared coordinate, and rounding is monotone); only the gradient is infinite,
#: for a vector exactly on the axis.
_ENTRY = (
    "acos / asin of an entry of a matrix, which only an orthonormal (rotation) matrix keeps in "
    "[-1, 1]: exactly +-1 at axis-aligned rotations (the identity, gimbal lock), where the "
    "gradient is infinite, and rounding takes it past +-1 (NaN); clamp strictly inside "
    "(`c.clamp(-1 + 1e-7, 1 - 1e-7)`) or compute the angle with `atan2`"
)


def _matrix_entry(ctx, value: Value) -> bool:
    """`m[..., i, j]`, `R[:, 2, 0]`, `m[0, 1]` (the last two indices single entries, not
    slices), also times a sign (`m[..., i, j] * (-1.0 if odd else 1.0)`)."""
    node = value.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        for part, other in ((node.left, node.right), (node.right, node.left)):
            if _sign(ctx, other, value.env):
                node = ctx.deref(Value(part, value.env)).node
                break
        else:
            return False
    if not isinstance(node, cst.Subscript) or len(node.slice) < 2:
        return False
    return all(
        isinstance(e.slice, cst.Index)
        and not isinstance(e.slice.value, cst.Ellipsis)
        and not _is_none(e.slice.value)
        for e in node.slice[-2:]
    )


def _sign(ctx, node: cst.BaseExpression, env: Env) -> bool:
    """`1.0`, `-1`, or `(-1.0 if c else 1.0)`."""
    if isinstance(node, cst.IfExp):
        return _sign(ctx, node.body, env) and _sign(ctx, node.orelse, env)
    return const(ctx, node, env) in (-1.0, 1.0)


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


_COMPONENT = (
    "acos / asin of a coordinate over its vector's length: exactly +-1 for a vector on the "
    "axis, where the gradient is infinite; clamp strictly inside "
    "(`c.clamp(-1 + 1e-7, 1 - 1e-7)`) or compute the angle with `atan2`"
)


def _component(ctx, value: Value) -> bool:
    """`v[..., 2] / v.norm(dim=-1)`, `v[:, 1] / torch.sqrt((v ** 2).sum(-1))`."""
    node = value.node
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)):
        return False
    num, den = Value(node.left, value.env), Value(node.right, value.env)
    part = ctx.deref(num).node
    if not isinstance(part, cst.Subscript):
        return False
    inner = reduced(ctx, den)
    if inner is None:
        return False
    whole = ctx.deref(inner).node
    base = ctx.deref(Value(part.value, num.env)).node
    return base is whole or (
        isinstance(whole, cst.BaseExpression) and same_code(ctx, part.value, whole)
    )


def _dot(ctx, value: Value, normalised: bool) -> bool:
    """A dot product (of normalised vectors when `normalised`)."""
    value = ctx.deref(value)
    node, env = value.node, value.env
    pair: tuple[cst.BaseExpression, cst.BaseExpression] | None = None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        pair = (node.left, node.right)
    o = op(ctx, node, env)  # type: ignore[arg-type]
    if o is not None and o.name == "sum" and o.input is not None:
        inner = ctx.deref(Value(o.input, env))
        product = inner.node
        if isinstance(product, cst.BinaryOperation) and isinstance(product.operator, cst.Multiply):
            pair, env = (product.left, product.right), inner.env
    elif o is not None and o.name == "matmul" and o.input is not None:
        other = o.arg(0, "other")
        if other is not None:
            pair = (o.input, other)
    if pair is None:
        return False
    if not normalised:
        return True
    return all(_unit(ctx, Value(side, env)) for side in pair)


def _unit(ctx, value: Value) -> bool:
    """F.normalize(...) or x / x.norm(...), through transposes and variables."""
    for _ in range(4):
        value = ctx.deref(value)
        node = value.node
        if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT"):
            value = Value(node.value, value.env)
            continue
        if isinstance(node, cst.Call):
            callee = ctx.callee(node, value.env)  # type: ignore[arg-type]
            if callee.method in ("t", "transpose", "permute", "unsqueeze", "detach"):
                value = Value(callee.receiver, value.env)  # type: ignore[arg-type]
                continue
        break
    o = op(ctx, value.node, value.env)  # type: ignore[arg-type]
    if o is not None and o.name == "normalize":
        return True
    node = value.node
    return (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Divide)
        and _has_norm(ctx, Value(node.right, value.env))
    )


def _has_norm(ctx, value: Value, depth: int = 0) -> bool:
    """A norm, possibly guarded (`n + eps`, `n.clamp_min(eps)`) or multiplied by another."""
    value = ctx.deref(value)
    node, env = value.node, value.env
    if depth > 6:
        return False
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Multiply)):
        return _has_norm(ctx, Value(node.left, env), depth + 1) or _has_norm(
            ctx, Value(node.right, env), depth + 1
        )
    o = op(ctx, node, env)  # type: ignore[arg-type]
    if o is None or o.input is None:
        return False
    if o.name in ("clamp", "clamp_min", "maximum", "max"):
        return _has_norm(ctx, Value(o.input, env), depth + 1)
    return o.name == "norm" or (
        o.name == "sqrt" and denominator_reason(ctx, Value(node, env)) is not None
    )
