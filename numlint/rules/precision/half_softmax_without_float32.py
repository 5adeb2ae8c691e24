"""NUM403 half-softmax-without-float32."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.dtypes import HALF_WORDS, dtype_branch, evidence, is_half, traced_dtype
from numlint.analysis.precision_mode import HALF, in_autocast, project_grade
from numlint.analysis.semantics import format_args, keyword, positional
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.tree import descendants

#: Softmax functions and the position of their `dtype` argument.
_FUNCTIONS = {
    "torch.softmax": 2,
    "torch.special.softmax": 2,
    "torch.nn.functional.softmax": 3,
}


class HalfSoftmaxWithoutFloat32(Rule):
    """Softmax of a float16 tensor: small probabilities flush to 0; pass `dtype=torch.float32`.

    What it does:
    Flags `torch.softmax(x, d)`, `F.softmax(x, dim=d)`, `torch.special.softmax(x, d)` and
    `x.softmax(d)` without a `dtype` argument when `x` is float16: by its data flow in the
    function (`x.half()`, `.to(torch.float16)`, `dtype=torch.half`, arithmetic on such values),
    or, when that is unknown, because the enclosing class (for methods), function or module
    converts to float16 explicitly (`.half()`, `.to(torch.float16)`, `dtype=torch.float16`,
    `torch.set_default_dtype(torch.half)`). Autocast alone does not count: it already runs
    softmax in float32. When none of these says anything, a project that converts a model to
    float16 in another file (`model.half()`, `precision="16-true"`; numlint.analysis
    .precision_mode) makes it a low finding, outside autocast blocks; the message names where.

    Why is this bad?
    float16 has no values below 6e-8: a softmax computed in float16 rounds every small
    probability to exactly 0 (18,112 of 32,000 for a 32k vocabulary with logit std 4) and loses
    precision in the rest, so a later log is -inf and sampling never draws those tokens.
    `softmax(x, d, dtype=torch.float32)` upcasts before exponentiating at almost no cost.

    Fix safety:
    Unsafe: adds `dtype=torch.float32`, so the probabilities become float32 (more accurate,
    and a different dtype for the code that follows; add `.to(x.dtype)` where float16 is
    needed). Not offered for `nn.Softmax` modules, which take no dtype.

    Known limitations:
    The dtype is followed within one function; values whose dtype cannot be followed are judged
    by their class, function or module, so an attention softmax in a class that calls `.half()`
    is flagged although its small weights rarely matter, then by the project's float16 models
    (mixed precision is not evidence: autocast runs softmax in float32). `nn.Softmax` modules
    are not checked.

    Confidence:
    high where the values are float16 by their data flow, or the function itself converts to
    float16 (`model.half()` before sampling); low where only the enclosing class or module
    does (an attention softmax in a half model, whose small weights rarely matter), or only
    another file of the project converts a model.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.softmax.html
    - [numlint hazard catalog, row 19](https://github.com/numlint/numlint/blob/main/docs/hazards.md#19)
    """

    CODE = "NUM403"
    NAME = "half-softmax-without-float32"
    MESSAGE = (
        "softmax of a float16 tensor: probabilities below 6e-8 flush to 0 and the rest lose "
        "precision, breaking a later log or sampling; pass `dtype=torch.float32`"
    )
    CHUNK = "class"
    EVIDENCE = HALF_WORDS
    TRIGGERS = ("softmax",)
    ALSO_REQUIRES = ("half", "Half", "float16", "autocast")

    VALID = [
        Valid(
            """
            import torch
            def sample(logits):
                logits = logits.half()
                return torch.softmax(logits, -1, dtype=torch.float32)
            """,
            "computed in float32",
        ),
        Valid(
            """
            import torch
            def sample(logits):
                h = logits.half()
                return torch.softmax(logits.float(), -1)
            """,
            "upcast before the softmax",
        ),
        Valid(
            """
            import torch
            def sample(logits):
                return torch.softmax(logits, -1)
            """,
            "no sign of float16",
        ),
        Valid(
            """
            import torch
            def sample(model, x):
                with torch.autocast("cuda", dtype=torch.float16):
                    return torch.softmax(model(x), -1)
            """,
            "autocast runs softmax in float32",
        ),
        Valid(
            """
            import torch
            def sample(logits):
                logits = logits.half()
                return torch.log_softmax(logits, -1)
            """,
            "log_softmax is this rule's suggested alternative for logs",
        ),
        Valid(
            """
            import torch
            def sample(logits):
                if logits.dtype == torch.float16:
                    logits = logits.float()
                return logits.softmax(-1)
            """,
            "a dtype comparison is not a conversion",
        ),
        Valid(
            """
            import torch
            def attention(q, k):
                w = torch.softmax(q @ k.transpose(1, 2), dim=-1)
                if q.dtype == torch.half:
                    w = w.to(torch.half)
                return w
            """,
            "a conversion chosen by a dtype test is dtype-aware code, not evidence",
        ),
        Valid(
            """
            import torch
            def attention(scores):
                scores = scores.half()
                if scores.dtype == torch.float16:
                    return torch.softmax(scores, dim=-1, dtype=torch.float32).half()
                else:
                    return torch.softmax(scores, dim=-1)
            """,
            "dtype-aware code: each precision is handled on purpose",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def sample(model, x):
                model.half()
                logits = model(x)
                probs = torch.softmax(logits[:, -1], dim=-1)
                return torch.multinomial(probs, 1)
            """,
            line=5,
            column=13,
            fixed="""
            import torch
            def sample(model, x):
                model.half()
                logits = model(x)
                probs = torch.softmax(logits[:, -1], dim=-1, dtype=torch.float32)
                return torch.multinomial(probs, 1)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def f(x):
                h = x.to(torch.float16) * 4
                return F.softmax(h, dim=-1)
            """,
            line=5,
            column=12,
            fixed="""
            import torch
            import torch.nn.functional as F
            def f(x):
                h = x.to(torch.float16) * 4
                return F.softmax(h, dim=-1, dtype=torch.float32)
            """,
        ),
        Invalid(
            """
            import torch
            def f(n):
                z = torch.randn(n, dtype=torch.half)
                return z.softmax(0)
            """,
            line=4,
            column=12,
            fixed="""
            import torch
            def f(n):
                z = torch.randn(n, dtype=torch.half)
                return z.softmax(0, dtype=torch.float32)
            """,
        ),
    ]
    PROBE = Probe(
        hazard="torch.log(torch.softmax(x, -1))",
        fix="torch.log(torch.softmax(x, -1, dtype=torch.float32))",
        inputs={"x": "torch.linspace(-12.0, 12.0, 32000)"},
        dtypes=("float16",),
        note="the float16 softmax flushes probabilities to 0, so the log that follows is -inf",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        callee = ctx.callee(node)
        if callee.qualname in _FUNCTIONS:
            source = positional(node, 0, "input")
            dtype_at = _FUNCTIONS[callee.qualname]
        elif callee.qualname is None and callee.method == "softmax" and callee.receiver:
            source, dtype_at = callee.receiver, 1
        else:
            return
        if source is None or keyword(node, "dtype") is not None:
            return
        if len([a for a in node.args if a.keyword is None]) > dtype_at:
            return  # dtype given positionally
        if dtype_branch(ctx):
            return
        if not is_half(ctx, ctx.value(source)):
            if traced_dtype(ctx, ctx.value(source)) is None and not in_autocast(ctx):
                # float16 weights elsewhere in the project (autocast runs softmax in float32)
                graded = project_grade(ctx, None, (HALF,))
                if graded is not None:
                    message = f"{self.MESSAGE}; {graded[1]}"
                    self.report(node, message, fix=self._fix(node), confidence="low")
            return
        traced = traced_dtype(ctx, ctx.value(source)) == "float16"
        confidence = "high" if traced or _converts_here(ctx, node) else "low"
        self.report(node, fix=self._fix(node), confidence=confidence)

    def _fix(self, node: cst.Call) -> FixSpec | None:
        ctx = self.ctx
        f32 = ctx.spell("torch.float32")
        if f32 is None or any(a.star for a in node.args):
            return None
        args = [*format_args(ctx, node.args), f"dtype={f32}"]
        code = f"{ctx.code(node.func)}({', '.join(args)})"
        return self.fix("unsafe", "Compute the softmax in float32", (node, code))


def _converts_here(ctx, softmax: cst.Call) -> bool:
    """A float16 conversion in the function being linted (not only in its class or module),
    before the softmax: `ans = x.softmax(d); ans = ans.to(torch.float16)` stores a result
    computed in another dtype."""
    func = ctx.function
    if func is None:
        return False
    order: dict[int, int] = {}
    for i, n in enumerate(descendants(func)):
        order[id(n)] = i
    here = order.get(id(softmax), len(order))
    return any(e.kind != "autocast" and order.get(id(e.node), here) < here for e in evidence(ctx))
