"""NUM402 masked-fill-overflow-half."""

from __future__ import annotations

import math

import libcst as cst

from numlint.analysis.arrays import not_a_tensor
from numlint.analysis.context import Value
from numlint.analysis.dtypes import (
    HALF_MAX,
    HALF_WORDS,
    constant,
    dtype_branch,
    dtype_of_other,
    is_half,
    traced_dtype,
)
from numlint.analysis.evidence import float_buffer, project_mentions
from numlint.analysis.gradients import gradient_evident
from numlint.analysis.precision_mode import (
    AUTOCAST,
    HALF,
    autocast_disabled,
    autocast_float16,
    autocast_float32,
    project_grade,
)
from numlint.analysis.semantics import positional
from numlint.analysis.tables import TRANSPARENT_METHODS
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid

_WHERE_MESSAGE = (
    "torch.where with a value beyond float16's range (65504) on float16 values: the result is "
    "float16 and the value becomes -inf (or inf), so a softmax over a row with every entry "
    "masked is NaN; use `torch.finfo(x.dtype).min` instead"
)
_INDEX_MESSAGE = (
    "assigning a value beyond float16's range (65504) into float16 values: the entries "
    "written become -inf (or inf), so a softmax over a row with every entry masked is NaN; "
    "use `torch.finfo(x.dtype).min` instead"
)
_PRODUCT_MESSAGE = (
    "a constant beyond float16's range (65504) times float16 values: the product is inf "
    "wherever they are not 0, so masked scores become -inf (a softmax over a row with every "
    "entry masked is NaN); fill with `masked_fill(mask, torch.finfo(x.dtype).min)` instead"
)
_MODULE_DTYPE = (
    "the values are converted to the module's own dtype, float16 wherever a caller converts "
    "the model (`model.half()`, `torch_dtype=torch.float16`)"
)
#: Calls that make a float16 or 0-dim tensor of one value (which a float16 `where` keeps in
#: float16; a full float32 tensor, `torch.full(shape, v)`, would promote it): the value's
#: position and keyword.
_FILLED = {
    "torch.tensor": (0, "data"), "torch.as_tensor": (0, "data"),
    "torch.scalar_tensor": (0, "s"), "torch.full_like": (1, "fill_value"),
    "new_tensor": (0, "data"), "new_full": (1, "fill_value"),
}  # fmt: skip
#: Methods that keep a tensor's values (a device or dtype move).
_MOVES = frozenset({"to", "type_as", "cuda", "cpu", "float", "half", "type"})


class MaskedFillOverflowHalf(Rule):
    """`masked_fill(mask, -1e9)` on float16 values: -1e9 does not fit in float16 and raises.

    What it does:
    Flags `scores.masked_fill(mask, v)`, `scores.masked_fill_(mask, v)`,
    `torch.masked_fill(scores, mask, v)` and `torch.where(cond, v, scores)` (either order)
    where `v` is a finite constant beyond float16's range
    (|v| > 65504: `-1e9`, `-1e10`, `float("-1e30")`, `torch.finfo(torch.float32).min`, a name
    bound to one, or a tensor of one: `torch.tensor(-1e9)`, `x.new_tensor(-1e9)`,
    `torch.full_like(x, -1e9)`, also moved by `.to(device)`) and `scores` is float16; also
    the same value assigned by index (`scores[~mask] = -1e9`, into a tensor), and masking by
    arithmetic, a product of such a constant and a tensor in float16 (`scores - 1e30 * mask`,
    `x * (1 - m) - 1e30 * m`), where the mask is float16 by its data flow or converted in the
    function to the dtype of the scores (`mask.type_as(x)`, `mask.to(x.dtype)`) or of the
    module itself (`mask.to(dtype=next(self.parameters()).dtype)`) or is a floating-point
    buffer of the module (`self.register_buffer("bias", torch.tril(torch.ones(n, n)))`, which
    `model.half()` converts with the weights); a mask the caller passes
    unconverted is bool or float32 and not flagged. `scores` is float16: by its data flow in the function (`.half()`,
    `.to(torch.float16)`, `dtype=torch.half`), or, when that is unknown, because the enclosing
    class (for methods), function or module converts to float16 explicitly or enters a float16
    autocast region (`torch.autocast("cuda")`, `torch.cuda.amp.autocast()`, `dtype=torch.float16`),
    where matmul outputs such as attention scores are float16; or, when the function, class and
    module say nothing, because the project trains in float16 (numlint.analysis.precision_mode:
    a `GradScaler`, a float16 `autocast`, `precision=16`, `mixed_precision="fp16"`,
    `fp16=True`, a `model.half()` in any of its files; the message names it). Code under
    `autocast(enabled=False)` and values autocast computes in float32 (a softmax, a norm) are
    not flagged on the project's evidence.

    Why is this bad?
    Filling a float16 tensor with a value it cannot represent raises "value cannot be converted
    to type at::Half without overflow", typically the first time a model runs under autocast
    or after `.half()`; `torch.where` (and a fill made with `torch.tensor`) instead turns it
    into -inf silently, and a softmax over a row with every entry masked is then NaN. `torch.finfo(scores.dtype).min` is the most negative value of whatever
    dtype the scores have and masks just as well.

    Fix safety:
    Unsafe: the fill value changes (to -3.4e38 in float32, -65504 in float16). Offered when the
    filled tensor is a name or attribute, so that `torch.finfo(<it>.dtype)` reads no call twice.
    None for masking by arithmetic: `scores - finfo.max * mask` overflows too.

    Known limitations:
    The dtype is followed within one function; values whose dtype cannot be followed are judged
    by their class, function or module, then by the project's training settings, which do not
    say which tensors a float16 run reaches. `float("-inf")` fills are not this rule's business
    (they fit float16 but give NaN for fully masked rows).

    Confidence:
    high where the values are float16 by their data flow or their class, function or module
    (float16 conversion or autocast); medium without any float16 setting in the project
    for the output of a matmul, convolution or linear layer in a method of a differentiated
    `nn.Module` (attention scores) of a project that runs no backward pass itself (a model
    library: its callers choose the dtype, and autocast computes these in float16; a
    `.backward()` in a comment or a docstring's example is not the project's); on the
    project's evidence only: medium in code autograd
    differentiates (a model's or loss's forward, not a constructor) where the value is float16
    there: any value when the project converts a model to float16, one made by a matmul,
    convolution or linear layer (`q @ k.transpose(-2, -1)`, `self.proj(x)`) under mixed
    precision; low for such a float16 value elsewhere. A value mixed precision leaves in
    float32 (inputs, buffers, reductions) is not reported on the project's evidence. A mask
    converted to the module's own dtype is float16 wherever the model is: medium in a
    method of a differentiated module of a model library, else as the project's float16
    weights say.

    References:
    - https://pytorch.org/docs/stable/generated/torch.Tensor.masked_fill_.html
    - [numlint hazard catalog, row 17](https://github.com/numlint/numlint/blob/main/docs/hazards.md#17)
    """

    CODE = "NUM402"
    NAME = "masked-fill-overflow-half"
    MESSAGE = (
        "masked_fill with a value beyond float16's range (65504) on float16 values raises an "
        "overflow error; fill with `torch.finfo(x.dtype).min` instead"
    )
    CHUNK = "class"
    EVIDENCE = HALF_WORDS
    #: A fill or product beyond float16's range is spelled `1e9`, `-1e30`, `1e+9`, `9e15`,
    #: `-99999999`, `100000.0` or through `torch.finfo(torch.float32).min`.
    TRIGGERS = ("masked_fill", "where(", "finfo", "1e1", "1e2", "1e3", "1e5", "1e6", "1e7",
                "1e8", "1e9", "e+", "9e1", "99999", "00000")  # fmt: skip
    ALSO_REQUIRES = ("half", "Half", "float16", "autocast", "GradScaler", "fp16", " @ ", "matmul",
                     "einsum", "linear", "Linear", "conv", "Conv", "bmm", "addmm")  # fmt: skip

    VALID = [
        Valid(
            """
            import torch
            class Attention(torch.nn.Module):
                def forward(self, q, k, mask):
                    scores = (q @ k.transpose(-2, -1)).float()
                    return scores.masked_fill(~mask, -1e10).softmax(-1)
            """,
            "scores cast to float32 first",
        ),
        Valid(
            """
            import torch
            def attend(q, k, mask):
                with torch.autocast("cuda"):
                    s = q @ k.transpose(-2, -1)
                    return s.masked_fill(mask, torch.finfo(s.dtype).min)
            """,
            "a dtype-aware fill value",
        ),
        Valid(
            """
            import torch
            def attend(q, k, mask):
                s = q @ k.transpose(-2, -1)
                return s.masked_fill(mask, -1e9)
            """,
            "no sign of float16",
        ),
        Valid(
            """
            import torch
            def attend(q, k, mask):
                with torch.autocast("cuda"):
                    s = (q @ k.transpose(-2, -1)).float()
                    return s.masked_fill(mask, -1e9).softmax(-1)
            """,
            "the scores are converted to float32 first",
        ),
        Valid(
            """
            import torch
            def attend(s, mask):
                s = s.half()
                return s.masked_fill(mask, -1e4)
            """,
            "-1e4 fits in float16",
        ),
        Valid(
            """
            import torch
            def attend(s, mask):
                with torch.autocast("cpu"):
                    return (s @ s.T).masked_fill(mask, -1e9)
            """,
            "CPU autocast runs in bfloat16, whose range is float32's",
        ),
        Valid(
            """
            import torch
            def head(logits, query_mask):
                logits = logits.float()
                return torch.where(query_mask == 0, -1e6, logits)
            """,
            "float32 logits",
        ),
        Valid(
            """
            import numpy as np
            def scores_of(a, mask):
                a = np.asarray(a, dtype=np.float16)
                a[mask] = -1e9
                return a
            """,
            "a NumPy array, not a tensor",
        ),
        Valid(
            """
            import torch
            def beams(b, k):
                scores = torch.zeros(b, k)
                scores[:, 1:] = -1e9
                return scores
            """,
            "float32 scores",
        ),
        Valid(
            """
            import torch
            class RelAttention(torch.nn.Module):
                def forward(self, q, k, attn_mask):
                    score = q @ k.transpose(-2, -1)
                    return torch.softmax(score - 1e30 * attn_mask, -1)
            """,
            "the caller's mask, converted nowhere here: bool or float32, so the product is float32",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def attend(scores, mask):
                scores = scores.half()
                neg = torch.tensor(-1e9).to(scores.device)
                return torch.where(mask, scores, neg).softmax(-1)
            """,
            line=5,
            column=12,
            confidence="high",
            fixed="""
            import torch
            def attend(scores, mask):
                scores = scores.half()
                neg = torch.tensor(-1e9).to(scores.device)
                return torch.where(mask, scores, torch.finfo(scores.dtype).min).softmax(-1)
            """,
            note="a 0-dim tensor keeps the where in float16: -1e9 becomes -inf",
        ),
        Invalid(
            """
            import torch
            class Attention(torch.nn.Module):
                def forward(self, q, k, mask):
                    scores = q @ k.transpose(-2, -1)
                    return scores.masked_fill(~mask, -1e10).softmax(-1)
            """,
            line=5,
            column=16,
            confidence="medium",
            fixed="""
            import torch
            class Attention(torch.nn.Module):
                def forward(self, q, k, mask):
                    scores = q @ k.transpose(-2, -1)
                    return scores.masked_fill(~mask, torch.finfo(scores.dtype).min).softmax(-1)
            """,
            note="attention scores of a module's forward: float16 under a caller's autocast, "
            "with no float16 setting in this project",
        ),
        Invalid(
            """
            import torch
            def attend(scores, mask):
                scores = scores.half()
                return scores.masked_fill(mask == 0, -1e9)
            """,
            line=4,
            column=12,
            fixed="""
            import torch
            def attend(scores, mask):
                scores = scores.half()
                return scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def forward(self, q, k, v, mask):
                    with torch.cuda.amp.autocast():
                        att = q @ k.transpose(-2, -1)
                        att.masked_fill_(mask, float("-1e10"))
                        return att.softmax(-1) @ v
            """,
            line=7,
            column=13,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def forward(self, q, k, v, mask):
                    with torch.cuda.amp.autocast():
                        att = q @ k.transpose(-2, -1)
                        att.masked_fill_(mask, torch.finfo(att.dtype).min)
                        return att.softmax(-1) @ v
            """,
            note="in-place form under CUDA autocast",
        ),
        Invalid(
            """
            import torch
            NEG = -1e9
            def f(x, m):
                y = torch.zeros(4, 4, dtype=torch.float16)
                return torch.masked_fill(y + x, m, NEG)
            """,
            line=5,
            column=12,
            note="function form through a constant; the filled tensor is an expression: no fix",
        ),
        Invalid(
            """
            import torch
            def f(model, scores, mask):
                model.half()
                return scores.masked_fill(mask, torch.finfo(torch.float32).min)
            """,
            line=4,
            column=12,
            fixed="""
            import torch
            def f(model, scores, mask):
                model.half()
                return scores.masked_fill(mask, torch.finfo(scores.dtype).min)
            """,
            note="float32's minimum overflows float16 too",
        ),
        Invalid(
            """
            import torch
            def head(logits, query_mask):
                logits = logits.half()
                return torch.where(query_mask == 0, -1e6, logits)
            """,
            line=4,
            column=12,
            fixed="""
            import torch
            def head(logits, query_mask):
                logits = logits.half()
                return torch.where(query_mask == 0, torch.finfo(logits.dtype).min, logits)
            """,
            note="torch.where with a Python number: the result is float16",
        ),
        Invalid(
            """
            import torch
            def attend(q, k, mask):
                s = (q @ k.transpose(-2, -1)).half()
                s[~mask] = -1e9
                return s.softmax(-1)
            """,
            line=4,
            column=5,
            confidence="high",
            fixed="""
            import torch
            def attend(q, k, mask):
                s = (q @ k.transpose(-2, -1)).half()
                s[~mask] = torch.finfo(s.dtype).min
                return s.softmax(-1)
            """,
            note="an indexed assignment: the entries written become -inf",
        ),
        Invalid(
            """
            import torch
            class RelAttention(torch.nn.Module):
                def forward(self, q, k, attn_mask):
                    score = q @ k.transpose(-2, -1)
                    mask = attn_mask.to(dtype=next(self.parameters()).dtype)
                    return torch.softmax(score - 1e30 * mask, -1)
            """,
            line=6,
            column=38,
            confidence="medium",
            note="masking by arithmetic with a mask in the module's own dtype: float16 "
            "wherever a caller converts the model",
        ),
        Invalid(
            """
            import torch
            class SquadHead(torch.nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.dense = torch.nn.Linear(d, 1)
                def forward(self, x, p_mask):
                    x = self.dense(x).squeeze(-1)
                    p_mask = p_mask.type_as(x)
                    return x * (1 - p_mask) - 1e30 * p_mask
            """,
            line=9,
            column=35,
            confidence="medium",
            note="a mask in the dtype of a linear layer's output, float16 under autocast",
        ),
    ]
    PROBE = Probe(
        hazard="x.masked_fill(x > 0, -1e9)",
        fix="x.masked_fill(x > 0, torch.finfo(x.dtype).min)",
        inputs={"x": "torch.tensor([[1.0, 0.0], [0.0, 2.0]])"},
        dtypes=("float16",),
        backward=False,
        note="the hazard raises a RuntimeError (overflow) in float16",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        callee = ctx.callee(node)
        message = None
        if callee.qualname is None and callee.method in ("masked_fill", "masked_fill_"):
            target, fill = callee.receiver, positional(node, 1, "value")
        elif callee.qualname == "torch.masked_fill":
            target, fill = positional(node, 0, "input"), positional(node, 2, "value")
        elif callee.qualname == "torch.where" and len(node.args) == 3:
            target, fill = _where_operands(ctx, node)
            message = _WHERE_MESSAGE
        else:
            return
        if target is None or fill is None:
            return
        value = _fill_value(ctx, fill)
        if value is not None and math.isfinite(value) and abs(value) > HALF_MAX:
            self._judge(node, ctx.value(target), message, (target, fill, value))

    def visit_Assign(self, node: cst.Assign) -> None:
        """`scores[~mask] = -1e9`: the entries written become -inf in float16."""
        ctx = self.ctx
        target = node.targets[0].target if len(node.targets) == 1 else None
        if not isinstance(target, cst.Subscript):
            return
        value = _fill_value(ctx, node.value)
        if value is None or not math.isfinite(value) or abs(value) <= HALF_MAX:
            return
        operand = ctx.value(target.value)
        if not_a_tensor(ctx, operand):
            return
        if traced_dtype(ctx, operand) is None and not autocast_float16(ctx, operand):
            return  # not visibly a tensor: a list, or values that are not scores
        self._judge(node, operand, _INDEX_MESSAGE, (target.value, node.value, value))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        """`scores - 1e30 * mask`: the product is inf in float16 wherever `mask` is 1."""
        if not isinstance(node.operator, cst.Multiply):
            return
        ctx = self.ctx
        value, other = constant(ctx, node.left), node.right
        if value is None:
            value, other = constant(ctx, node.right), node.left
        if value is None or not math.isfinite(value) or abs(value) <= HALF_MAX:
            return
        if constant(ctx, other) is not None:
            return
        operand = ctx.value(other)
        traced = traced_dtype(ctx, operand)
        if traced is not None:
            if traced == "float16":
                self.report(node, _PRODUCT_MESSAGE)
            return
        source = _dtype_source(ctx, operand)
        if source is None:
            return  # a mask the caller passes: bool or float32 unless converted here
        if isinstance(source, Value):
            self._judge(node, source, _PRODUCT_MESSAGE, None)
        elif _module_method(ctx):
            graded = project_grade(ctx, operand, (HALF,))
            why = graded[1] if graded is not None else _MODULE_DTYPE
            grade = graded[0] if graded is not None else "medium"
            self.report(node, f"{_PRODUCT_MESSAGE}; {why}", confidence=grade)

    def _judge(
        self,
        node: cst.CSTNode,
        operand: Value,
        message: str | None,
        fill: tuple[cst.BaseExpression, cst.BaseExpression, float] | None,
    ) -> None:
        """Report `node` when `operand` (the values filled, or whose dtype the product takes)
        is float16: by data flow or region (high), else by the project's settings or as a
        module's attention scores."""
        ctx = self.ctx
        fix = self._fix(*fill) if fill is not None else None
        if is_half(ctx, operand, autocast=True):
            self.report(node, message, fix=fix)
            return
        if traced_dtype(ctx, operand) is not None:
            return
        # float32 under autocast (a softmax, a norm): only float16 weights make it float16
        kinds = (HALF,) if autocast_float32(ctx, operand) else (AUTOCAST, HALF)
        graded = project_grade(ctx, operand, kinds)
        if graded is not None:
            grade, why = graded
            text = f"{message or self.MESSAGE}; {why}"
            self.report(node, text, fix=fix, confidence=grade)
        elif AUTOCAST in kinds and _module_scores(ctx, operand):
            why = (
                "the values come from a matmul in a module's forward, which autocast computes "
                "in float16 wherever a caller enables mixed precision"
            )
            text = f"{message or self.MESSAGE}; {why}"
            self.report(node, text, fix=fix, confidence="medium")

    def _fix(
        self, target: cst.BaseExpression, fill: cst.BaseExpression, value: float
    ) -> FixSpec | None:
        finfo = self.ctx.spell("torch.finfo")
        if finfo is None or not _plain(target):
            return None
        bound = "min" if value < 0 else "max"
        code = f"{finfo}({self.ctx.code(target)}.dtype).{bound}"
        return self.fix("unsafe", f"Fill with `torch.finfo(dtype).{bound}`", (fill, code))


def _module_method(ctx) -> bool:
    """In a method (not the constructor) of an `nn.Module` autograd differentiates, of a
    project that does not train itself (a model library): its callers choose the dtype."""
    func = ctx.function
    if func is None or func.name.value == "__init__" or ctx.class_scope is None:
        return False
    if autocast_disabled(ctx) or dtype_branch(ctx) or not gradient_evident(ctx):
        return False
    return not project_mentions(ctx, ".backward(")  # the project's own training decides


def _dtype_source(ctx, value: Value, depth: int = 6) -> Value | str | None:
    """What a value takes its dtype from, when converted here to another's: `v` of
    `m.to(v.dtype)` / `m.type_as(v)` (also through `1 - m`, `m[:, None]`, `m.unsqueeze(1)`),
    or "module" for the module's own dtype (`m.to(dtype=self.dtype)`,
    `m.to(next(self.parameters()).dtype)`); None when the function shows none."""
    if depth <= 0:
        return None
    held = value.node
    if (
        isinstance(held, cst.Attribute)
        and isinstance(held.value, cst.Name)
        and held.value.value == "self"
        and float_buffer(ctx, held.attr.value)
    ):
        return "module"  # `self.bias`, a float buffer: converted with the model
    value = ctx.deref(value)
    node, env = value.node, value.env
    if isinstance(node, cst.BinaryOperation):
        for side in (node.left, node.right):
            if constant(ctx, side, env) is None:
                return _dtype_source(ctx, Value(side, env), depth - 1)
        return None
    if isinstance(node, cst.UnaryOperation):
        return _dtype_source(ctx, Value(node.expression, env), depth - 1)
    if isinstance(node, cst.Subscript):
        return _dtype_source(ctx, Value(node.value, env), depth - 1)
    if not isinstance(node, cst.Call):
        return None
    other = dtype_of_other(node)
    if other is not None:
        return "module" if _module_itself(other) else Value(other, env)
    callee = ctx.callee(node, env)
    if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
        return _dtype_source(ctx, Value(callee.receiver, env), depth - 1)
    return None


def _module_itself(node: cst.BaseExpression) -> bool:
    """`self` (a module's `dtype`), `next(self.parameters())`, `self.<layer>.weight`."""
    if isinstance(node, cst.Name):
        return node.value == "self"
    if isinstance(node, cst.Call):  # `next(self.parameters())`
        func, args = node.func, node.args
        return (
            isinstance(func, cst.Name)
            and func.value == "next"
            and len(args) == 1
            and isinstance(args[0].value, cst.Call)
            and isinstance(args[0].value.func, cst.Attribute)
            and args[0].value.func.attr.value == "parameters"
            and _module_itself(args[0].value.func.value)
        )
    if isinstance(node, cst.Attribute) and node.attr.value in ("weight", "bias"):
        return isinstance(node.value, cst.Attribute) and _module_itself(node.value.value)
    return False


def _module_scores(ctx, operand: Value) -> bool:
    """A matmul, convolution or linear layer's output (`q @ k.transpose(-2, -1)`) in a
    method of an `nn.Module` autograd differentiates, in a project that does not train
    itself (a model library): the code a caller's `autocast` runs in float16."""
    return _module_method(ctx) and autocast_float16(ctx, operand)


def _where_operands(
    ctx, node: cst.Call
) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    """`torch.where(c, -1e6, x)` / `torch.where(c, x, -1e6)`: (x, the constant), else Nones."""
    a, b = node.args[1].value, node.args[2].value
    if _fill_value(ctx, a) is not None and _fill_value(ctx, b) is None:
        return b, a
    if _fill_value(ctx, b) is not None and _fill_value(ctx, a) is None:
        return a, b
    return None, None


def _fill_value(ctx, expr: cst.BaseExpression, depth: int = 0) -> float | None:
    """The number a fill holds: a constant, or a tensor made of one (`torch.tensor(-1e9)`,
    `x.new_tensor(-1e9)`, `torch.full_like(x, -1e9)`, also moved with `.to(x.device)`,
    through a name)."""
    found = constant(ctx, expr)
    if found is not None or depth > 4:
        return found
    node = ctx.deref(ctx.value(expr)).node
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node)
    if callee.method in _MOVES and callee.receiver is not None:
        return _fill_value(ctx, callee.receiver, depth + 1)
    where = _FILLED.get(callee.qualname or "") or (
        _FILLED.get(callee.method or "") if callee.receiver is not None else None
    )
    if where is None:
        return None
    index, keyword = where
    arg = positional(node, index, keyword)
    return constant(ctx, arg) if arg is not None else None


def _plain(node: cst.BaseExpression) -> bool:
    """A name or an attribute chain of names (`scores`, `self.scores`)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)
