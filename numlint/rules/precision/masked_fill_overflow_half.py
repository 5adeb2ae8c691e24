"""NUM402 masked-fill-overflow-half."""

from __future__ import annotations

import math

import libcst as cst

from numlint.analysis.context import Value
from numlint.analysis.dtypes import (
    HALF_MAX,
    HALF_WORDS,
    constant,
    dtype_branch,
    is_half,
    traced_dtype,
)
from numlint.analysis.evidence import project_mentions
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
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid

_WHERE_MESSAGE = (
    "torch.where with a value beyond float16's range (65504) on float16 values: the result is "
    "float16 and the value becomes -inf (or inf), so a softmax over a row with every entry "
    "masked is NaN; use `torch.finfo(x.dtype).min` instead"
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
    `torch.full_like(x, -1e9)`, also moved by `.to(device)`) and `scores` is float16: by its data flow in the function (`.half()`,
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
    library: its callers choose the dtype, and autocast computes these in float16); on the
    project's evidence only: medium in code autograd
    differentiates (a model's or loss's forward, not a constructor) where the value is float16
    there: any value when the project converts a model to float16, one made by a matmul,
    convolution or linear layer (`q @ k.transpose(-2, -1)`, `self.proj(x)`) under mixed
    precision; low for such a float16 value elsewhere. A value mixed precision leaves in
    float32 (inputs, buffers, reductions) is not reported on the project's evidence.

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
    TRIGGERS = ("masked_fill", "where(")
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
        if value is None or not math.isfinite(value) or abs(value) <= HALF_MAX:
            return
        operand = ctx.value(target)
        if is_half(ctx, operand, autocast=True):
            self.report(node, message, fix=self._fix(target, fill, value))
            return
        if traced_dtype(ctx, operand) is not None:
            return
        # float32 under autocast (a softmax, a norm): only float16 weights make it float16
        kinds = (HALF,) if autocast_float32(ctx, operand) else (AUTOCAST, HALF)
        graded = project_grade(ctx, operand, kinds)
        if graded is not None:
            grade, why = graded
            text = f"{message or self.MESSAGE}; {why}"
            self.report(node, text, fix=self._fix(target, fill, value), confidence=grade)
        elif AUTOCAST in kinds and _module_scores(ctx, operand):
            why = (
                "the values come from a matmul in a module's forward, which autocast computes "
                "in float16 wherever a caller enables mixed precision"
            )
            text = f"{message or self.MESSAGE}; {why}"
            self.report(node, text, fix=self._fix(target, fill, value), confidence="medium")

    def _fix(
        self, target: cst.BaseExpression, fill: cst.BaseExpression, value: float
    ) -> FixSpec | None:
        finfo = self.ctx.spell("torch.finfo")
        if finfo is None or not _plain(target):
            return None
        bound = "min" if value < 0 else "max"
        code = f"{finfo}({self.ctx.code(target)}.dtype).{bound}"
        return self.fix("unsafe", f"Fill with `torch.finfo(dtype).{bound}`", (fill, code))


def _module_scores(ctx, operand: Value) -> bool:
    """A matmul, convolution or linear layer's output (`q @ k.transpose(-2, -1)`) in a
    method of an `nn.Module` autograd differentiates, in a project that does not train
    itself (a model library): the code a caller's `autocast` runs in float16."""
    func = ctx.function
    if func is None or func.name.value == "__init__" or ctx.class_scope is None:
        return False
    if autocast_disabled(ctx) or dtype_branch(ctx):
        return False
    if not (gradient_evident(ctx) and autocast_float16(ctx, operand)):
        return False
    return not project_mentions(ctx, ".backward(")  # the project's own training decides


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
