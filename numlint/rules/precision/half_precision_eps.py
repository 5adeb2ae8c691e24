"""NUM401 half-precision-eps."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.context import Value
from numlint.analysis.dtypes import HALF_WORDS, HALF_ZERO, constant, is_half, traced_dtype
from numlint.analysis.precision_mode import AUTOCAST, HALF, autocast_float32, project_grade
from numlint.analysis.semantics import positional
from numlint.diagnostic import Confidence
from numlint.rule import AnyOf, Invalid, Probe, Rule, Valid
from numlint.tree import descendants

_GUARDED_FUNCTIONS = frozenset(
    {"torch.log", "torch.log2", "torch.log10", "torch.sqrt", "torch.rsqrt", "torch.reciprocal",
     "torch.special.log"}
)  # fmt: skip
_GUARDED_METHODS = frozenset({"log", "log2", "log10", "sqrt", "rsqrt", "reciprocal"})
_CLAMP_METHODS = frozenset({"clamp", "clip", "clamp_", "clip_", "clamp_min", "clamp_min_"})
_CLAMP_FUNCTIONS = frozenset({"torch.clamp", "torch.clip", "torch.clamp_min"})
#: Functions whose eps default rounds to 0 in float16: (eps position, default).
_EPS_DEFAULTS = {
    "torch.nn.functional.normalize": (3, 1e-12),
    "torch.nn.functional.cosine_similarity": (3, 1e-8),
    "torch.cosine_similarity": (3, 1e-8),
}

_EPS_MESSAGE = (
    "eps={eps:g} rounds to 0 in float16, so this guard does nothing and the value can still "
    "be 0 (inf/NaN); use a dtype-aware eps such as `torch.finfo(x.dtype).tiny` (6.1e-5) "
    "or compute in float32"
)
#: Below half of float16's spacing under 1 (2**-11), `1 - eps` rounds to 1.
HALF_ONE_GAP = 2.0**-12
_CEILING_MESSAGE = (
    "`1 - {eps:g}` rounds to 1 in float16 (its spacing below 1 is 4.9e-4), so this clamp "
    "keeps probabilities of 1 and `log(1 - p)` / `log1p(-p)` is still -inf; clamp to "
    "`1 - torch.finfo(p.dtype).eps` or compute in float32"
)
_DEFAULT_MESSAGE = (
    "`{name}` in float16 uses eps={eps:g} by default, which rounds to 0: a zero vector gives "
    "NaN; pass `eps=torch.finfo(torch.float16).tiny` or compute it in float32"
)


class HalfPrecisionEps(Rule):
    """An eps guard below 2.98e-8 in float16 code: it rounds to 0 and guards nothing.

    What it does:
    Flags a positive eps below 2.98e-8 (`1e-8`, `1e-10`, `1e-12`, `torch.finfo(torch.float32)
    .tiny`, a constant or parameter default bound to one) used as a guard on float16 values:
    `x / (d + eps)`, also through a variable (`d = n + eps; x / d`), `torch.log(p + eps)`,
    `d.add(eps).log()`, `torch.sqrt(v + eps)` / `rsqrt` / `reciprocal` (function and method
    forms), `p.clamp(min=eps)`, `p.clamp_min(eps)`, `torch.clamp(p, eps, 1 - eps)`, and
    `F.normalize` / `F.cosine_similarity` whose default eps (1e-12 / 1e-8) is too small.
    It also flags an upper clamp `1 - eps` with eps below 2.44e-4 (`p.clamp(max=1 - 1e-6)`),
    which rounds to 1 in float16, so `log(1 - p)` meets 0 again.
    Values count as float16 when their data flow in the function says so (`x.half()`,
    `.to(torch.float16)`, `dtype=torch.half`), or, when it says nothing, when the enclosing
    class (for methods), function or module converts to float16 explicitly (`.half()`,
    `.to(torch.float16)`, `dtype=torch.float16`, `torch.set_default_dtype(torch.half)`);
    autocast alone does not count there, since it keeps reductions such as norms in float32.
    When neither says anything, a tensor whose dtype is not traced counts as float16 when the
    project trains in float16 (numlint.analysis.precision_mode: a `GradScaler`, a float16
    `autocast`, `precision=16`, `mixed_precision="fp16"`, `fp16=True`, a `model.half()` in
    any of its files); the message names that evidence. Under mixed precision alone, guards
    of values autocast computes in float32 (norms, sums, powers, exps, softmaxes) and
    `F.normalize` / `F.cosine_similarity` (run in float32) are not flagged, nor is code under
    `autocast(enabled=False)`.

    Why is this bad?
    float16 cannot represent positive values below 2**-25 (2.98e-8): `1e-8`, `1e-10` and
    `1e-12` all become exactly 0, so `log(p + 1e-8)` is still -inf and `x / (n + 1e-8)` still
    0/0 = NaN when p or n is 0. The guard looks real and does nothing.

    Known limitations:
    The dtype is followed within one function; values whose dtype cannot be followed are judged
    by the explicit float16 conversions of their class, function or module, then by the
    project's training settings, which do not say which values a float16 run reaches (a
    library function fed float32 images is flagged too). An eps between 2.98e-8 and 6.1e-5
    survives as a subnormal and is not flagged, although `x / eps` can still overflow
    float16's maximum of 65504.

    Confidence:
    high where the value is float16 by its data flow or its class, function or module
    converts to float16; on the project's evidence only: medium in code autograd
    differentiates (a model's or loss's forward, not a constructor) where the value is float16
    there: any value when the project converts a model to float16, one made by a matmul,
    convolution or linear layer (`q @ k.transpose(-2, -1)`, `self.proj(x)`) under mixed
    precision; low for such a float16 value elsewhere. A value mixed precision leaves in
    float32 (inputs, buffers, reductions) is not reported on the project's evidence.

    References:
    - https://pytorch.org/docs/stable/type_info.html#torch.finfo
    - [numlint hazard catalog, row 4 and 15](https://github.com/numlint/numlint/blob/main/docs/hazards.md#4)
    """

    CODE = "NUM401"
    NAME = "half-precision-eps"
    MESSAGE = (
        "an eps below 2.98e-8 rounds to 0 in float16, so this guard does nothing and the value "
        "can still be 0 (inf/NaN); use a dtype-aware eps such as `torch.finfo(x.dtype).tiny` "
        "(6.1e-5) or compute in float32"
    )
    CHUNK = "class"
    EVIDENCE = HALF_WORDS
    #: an eps literal is a power of ten below 1e-7 (`1e-8`, `1E-12`): its exponent's digits
    TRIGGERS = ("half", "Half", "float16", "eps", "EPS", "tiny", "normalize", "cosine_similarity",
                *(f"{e}-{d}" for e in "eE" for d in "0123456789"))  # fmt: skip
    #: float16 in the file (a conversion, autocast), or, where the project's evidence lies in
    #: another file, an op that autocast runs in float16 or a model's `forward` (any value
    #: there is float16 when the project converts its model)
    ALSO_REQUIRES = ("half", "Half", "float16", "autocast", "GradScaler", "fp16", " @ ", "matmul",
                     "einsum", "linear", "Linear", "conv", "Conv", "bmm", "addmm", "forward")  # fmt: skip
    #: an eps the rule can see (it reads the file's own constants and defaults): a literal
    #: below 1e-7 (`1e-8`, `5e-10`, `1E-12`), `finfo(...).tiny`, or a function whose default
    #: eps is too small
    FILE_REQUIRES = AnyOf(
        r"e-(?<=\de-)0*(?:[89]|[1-9]\d+)\b",
        r"E-(?<=\dE-)0*(?:[89]|[1-9]\d+)\b",
        "tiny",
        "normalize",
        "cosine_similarity",
        r"1(?:\.0*)? ?- ?\d(?:\.\d*)?[eE]-0*(?:[4-9]|[1-9]\d+)\b",  # `max=1 - 1e-6`
    )

    VALID = [
        Valid(
            """
            import torch
            def survival(logits):
                p = torch.sigmoid(logits.half())
                return torch.log1p(-p.clamp(max=1 - 1e-3))
            """,
            "1 - 1e-3 is below 1 in float16",
        ),
        Valid(
            """
            import torch
            def f(x):
                x = x.half()
                return x / (x.norm(dim=-1, keepdim=True) + 1e-4)
            """,
            "an eps float16 can represent",
        ),
        Valid(
            """
            import torch
            def f(x):
                return x / (x.norm(dim=-1, keepdim=True) + 1e-8)
            """,
            "no sign of float16",
        ),
        Valid(
            """
            import torch
            def f(x):
                h = x.half()
                x = x.float()
                return x / (x.norm(dim=-1, keepdim=True) + 1e-8)
            """,
            "the guarded value is float32",
        ),
        Valid(
            """
            import torch
            def f(p):
                p = p.half()
                return torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))
            """,
            "a dtype-aware eps",
        ),
        Valid(
            """
            import torch
            def f(x):
                x = x.to(torch.bfloat16)
                return torch.log(x + 1e-8)
            """,
            "1e-8 survives in bfloat16",
        ),
        Valid(
            """
            import torch
            def f(x):
                eps = 1e-4 if x.dtype == torch.float16 else 1e-8
                return x / (x.sum() + eps)
            """,
            "a dtype-dependent eps; a dtype comparison is not a conversion",
        ),
        Valid(
            """
            import math
            def f(model, steps, total):
                model.half()
                return math.log(steps / (total + 1e-8))
            """,
            "Python numbers, not tensors",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def survival(logits):
                p = torch.sigmoid(logits.half())
                return torch.log1p(-p.clamp(max=1.0 - 1e-6))
            """,
            line=4,
            column=25,
            note="1 - 1e-6 is 1 in float16: a saturated sigmoid still gives log1p(-1) = -inf",
        ),
        Invalid(
            """
            import torch
            def f(p):
                p = p.half()
                return torch.log(p + 1e-8)
            """,
            line=4,
            column=22,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self, eps=1e-10):
                    super().__init__()
                    self.eps = eps
                    self.half()
                def forward(self, x):
                    return x / (x.norm(dim=-1, keepdim=True) + self.eps)
            """,
            line=9,
            column=21,
            note="an eps parameter default stored on self, in a class that converts to half",
        ),
        Invalid(
            """
            import torch
            def entropy(logits):
                p = torch.softmax(logits.to(torch.float16), -1)
                return -(p * p.clamp(min=1e-12).log()).sum(-1)
            """,
            line=4,
            column=18,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def embed(x):
                h = torch.zeros(4, 8, dtype=torch.half)
                return F.normalize(h, dim=-1)
            """,
            line=5,
            column=12,
            note="F.normalize's default eps=1e-12 rounds to 0",
        ),
        Invalid(
            """
            import torch
            EPS = 1e-8
            def std(x):
                x = x.half()
                var = x.var(0) + EPS
                return x / torch.sqrt(var)
            """,
            line=5,
            column=11,
            note="through a named constant",
        ),
        Invalid(
            """
            import torch
            def f(x):
                x = x.half()
                return x.clamp_min(torch.finfo(torch.float32).tiny).log()
            """,
            line=4,
            column=12,
            note="float32's tiny is 0 in float16",
        ),
    ]
    PROBE = Probe(
        hazard="torch.log(p + 1e-8)",
        fix="torch.log(p + torch.finfo(p.dtype).tiny)",
        inputs={"p": "torch.tensor([0.0, 0.5])"},
        dtypes=("float16",),
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check_sum(node.right, through=True)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        callee = ctx.callee(node)
        qual = callee.qualname
        if qual in _GUARDED_FUNCTIONS:
            if (arg := positional(node, 0, "input")) is not None:
                self._check_sum(arg, through=True, tensor=True)
        elif qual is None and callee.method in _GUARDED_METHODS and not node.args:
            self._check_sum(callee.receiver, through=True, tensor=True)  # type: ignore[arg-type]
        elif qual is None and callee.method in _CLAMP_METHODS and callee.receiver is not None:
            low = positional(node, 0, "min")
            self._check_bound(node, low, callee.receiver)
            if not callee.method.startswith("clamp_min"):  # type: ignore[union-attr]
                self._check_ceiling(node, positional(node, 1, "max"), callee.receiver)
        elif qual in _CLAMP_FUNCTIONS:
            operand = positional(node, 0, "input")
            if operand is not None:
                self._check_bound(node, positional(node, 1, "min"), operand)
                if qual != "torch.clamp_min":
                    self._check_ceiling(node, positional(node, 2, "max"), operand)
        elif qual in _EPS_DEFAULTS:
            self._check_default(node, qual)

    def _check_sum(self, expr: cst.BaseExpression, through: bool, tensor: bool = False) -> None:
        ctx = self.ctx
        value = ctx.deref(ctx.value(expr)) if through else ctx.value(expr)
        node = value.node
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "add"
            and len(node.args) == 1
            and node.args[0].keyword is None
        ):  # `d.add(eps)`: a tensor
            sides = ((node.args[0].value, node.func.value),)
            tensor = True
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            sides = ((node.right, node.left), (node.left, node.right))
        else:
            return
        for eps_side, other in sides:
            eps = constant(ctx, eps_side, value.env)
            if eps is not None and 0 < eps <= HALF_ZERO:
                operand = Value(other, value.env, value.mutations)
                self._report(node, _EPS_MESSAGE.format(eps=eps), self._half(operand, tensor))
                return

    def _check_bound(
        self, node: cst.Call, low: cst.BaseExpression | None, operand: cst.BaseExpression
    ) -> None:
        if low is None:
            return
        eps = constant(self.ctx, low)
        if eps is not None and 0 < eps <= HALF_ZERO:
            found = self._half(self.ctx.value(operand), tensor=True)
            self._report(node, _EPS_MESSAGE.format(eps=eps), found)

    def _check_ceiling(
        self, node: cst.Call, high: cst.BaseExpression | None, operand: cst.BaseExpression
    ) -> None:
        """`p.clamp(max=1 - 1e-6)`: float16's spacing just below 1 is 4.9e-4, so `1 - eps`
        with eps below half of it (2.44e-4) rounds to 1 and `log(1 - p)` is still -inf."""
        if not (
            isinstance(high, cst.BinaryOperation)
            and isinstance(high.operator, cst.Subtract)
            and constant(self.ctx, high.left) == 1
        ):
            return
        eps = constant(self.ctx, high.right)
        if eps is not None and 0 < eps < HALF_ONE_GAP:
            found = self._half(self.ctx.value(operand), tensor=True)
            self._report(node, _CEILING_MESSAGE.format(eps=eps), found)

    def _check_default(self, node: cst.Call, qual: str) -> None:
        index, default = _EPS_DEFAULTS[qual]
        given = positional(node, index, "eps")
        eps = default if given is None else constant(self.ctx, given)
        if eps is None or not 0 < eps <= HALF_ZERO:
            return
        operand = positional(node, 0, "input" if "normalize" in qual else "x1")
        if operand is None:
            return
        # autocast computes these in float32: only float16 weights make them float16
        found = self._half(self.ctx.value(operand), tensor=True, kinds=(HALF,))
        name = qual.rsplit(".", 1)[-1]
        if given is None:
            self._report(node, _DEFAULT_MESSAGE.format(name=name, eps=eps), found)
        else:
            self._report(node, _EPS_MESSAGE.format(eps=eps), found)

    def _report(
        self, node: cst.CSTNode, message: str, found: tuple[Confidence, str] | None | bool
    ) -> None:
        if found is True:
            self.report(node, message)
        elif found:
            grade, why = found
            self.report(node, f"{message}; {why}", confidence=grade)

    def _half(
        self, value: Value, tensor: bool, kinds: tuple[str, ...] = (AUTOCAST, HALF)
    ) -> tuple[Confidence, str] | bool | None:
        """True: float16 by data flow, or a computed tensor in a region that converts to
        float16; (grade, why): a tensor of unknown dtype in a project that runs in float16
        (`tensor`: the operation says it is a tensor); None: neither."""
        ctx = self.ctx
        traced = traced_dtype(ctx, value)
        if traced is not None:
            return traced == "float16" or None
        if _tensor_like(ctx, value) and is_half(ctx, value):
            return True
        if not (tensor or _tensor_like(ctx, value)):
            return None
        if autocast_float32(ctx, value):
            kinds = tuple(k for k in kinds if k != AUTOCAST)
        return project_grade(ctx, value, kinds) if kinds else None


def _tensor_like(ctx, value: Value, depth: int = 6) -> bool:
    """A value computed by torch or a tensor method (not a parameter, literal or builtin)."""
    if depth <= 0:
        return False
    value = ctx.deref(value)
    node = value.node
    if isinstance(node, cst.Call):
        callee = ctx.callee(node, value.env)
        if callee.qualname is not None:
            return callee.qualname.startswith("torch.")
        return callee.method is not None and callee.receiver is not None
    if isinstance(node, cst.BinaryOperation):
        return _tensor_like(ctx, Value(node.left, value.env), depth - 1) or _tensor_like(
            ctx, Value(node.right, value.env), depth - 1
        )
    if isinstance(node, (cst.Subscript, cst.UnaryOperation)):
        inner = node.value if isinstance(node, cst.Subscript) else node.expression
        return _tensor_like(ctx, Value(inner, value.env), depth - 1)
    if isinstance(node, cst.Name):
        unpacked = _unpacked_from(ctx, node.value)
        return unpacked is not None and _tensor_like(ctx, Value(unpacked, value.env), depth - 1)
    return False


def _unpacked_from(ctx, name: str) -> cst.Call | None:
    """The call a name is unpacked from in the current function (`top, i = x.max(-3)`), when
    that is its only assignment there."""
    func = ctx.function
    if func is None:
        return None
    found: list[cst.BaseExpression] = []
    for n in descendants(func):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, cst.Name) and t.target.value == name:
                    found.append(n.value)
                elif isinstance(t.target, (cst.Tuple, cst.List)) and any(
                    isinstance(e.value, cst.Name) and e.value.value == name
                    for e in t.target.elements
                ):
                    found.append(n.value)
    if len(found) == 1 and isinstance(found[0], cst.Call):
        return found[0]
    return None
