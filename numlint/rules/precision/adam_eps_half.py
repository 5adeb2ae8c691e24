"""NUM404 adam-eps-half."""

from __future__ import annotations

import os

import libcst as cst

from numlint.analysis.context import Context, Value
from numlint.analysis.dtypes import HALF_WORDS, constant, evidence, traced_dtype
from numlint.analysis.precision_mode import AUTOCAST, HALF, project_evidence, project_grade
from numlint.analysis.semantics import positional
from numlint.diagnostic import Confidence
from numlint.rule import Invalid, Probe, Rule, Valid
from numlint.tree import descendants

_ADAM = frozenset(
    {f"torch.optim.{name}" for name in ("Adam", "AdamW", "NAdam", "RAdam", "Adamax")}
    | {"torch.optim.adam.Adam", "torch.optim.adamw.AdamW"}
)
_PARAMETERS = ("parameters", "named_parameters")


class AdamEpsHalf(Rule):
    """Adam on float16 parameters with the default eps: eps is 0 in float16; updates blow up.

    What it does:
    Flags `torch.optim.Adam(...)` / `AdamW` / `NAdam` / `RAdam` / `Adamax` whose `eps` is the
    default 1e-8 or any value below the `min_eps` option (1e-4), when the parameters it is
    given belong to a float16 model: `X.parameters()` (also through variables, lists and
    parameter-group dicts) where `X` is converted to float16 in the same class, function or
    module (`X.half()`, `X.to(torch.float16)`, `X.to(dtype=torch.half)`, `X.type(torch.half)`,
    also on a parent module: `model.half()` covers `model.encoder`), or was created that way
    (`model = Net().cuda().half()`), or after `torch.set_default_dtype(torch.float16)`.

    Why is this bad?
    Pure float16 training keeps Adam's moments in float16: eps=1e-8 rounds to exactly 0, and
    the second moment of a small gradient underflows to 0 as well, so the update
    `m / (sqrt(v) + eps)` is 0/0 = NaN or x/0 = inf after one step (gradients `[1e-4, 0, 1e-3,
    1]` already do it). Mixed precision (autocast + GradScaler) keeps float32 master weights
    and avoids the problem; bfloat16 has float32's range; otherwise eps must be at least 1e-4.

    Confidence:
    high, except where a class converts itself to float16 only in another method than the
    one building the optimizer, other than `__init__` (`def quantize(self, bits): ... return
    self.half()`): whether that ran before training is not visible (low); low as well where
    only another file of the project converts a model.

    Known limitations:
    Only parameters whose owner is converted in the same class, function or module are
    graded high or low as above; where another file of the project converts a model to float16
    (`model.half()`, `precision="16-true"`; numlint.analysis.precision_mode) and this file does
    not train with autocast, the optimizer is a low finding naming that file: which model is
    converted is not visible. Mixed precision (GradScaler, autocast) is not evidence: it keeps
    float32 weights. There is no fix: the right change (mixed precision, bfloat16 or a larger
    eps) is a design decision.

    References:
    - https://pytorch.org/docs/stable/generated/torch.optim.Adam.html
    - https://pytorch.org/docs/stable/amp.html
    - [numlint hazard catalog, row 20](https://github.com/numlint/numlint/blob/main/docs/hazards.md#20)
    """

    CODE = "NUM404"
    NAME = "adam-eps-half"
    MESSAGE = (
        "Adam on float16 parameters with a tiny eps: eps (1e-8 by default) is 0 in float16, so "
        "updates become inf/NaN; train with autocast + GradScaler (float32 weights), bfloat16, "
        "or pass `eps=1e-4` or larger"
    )
    CHUNK = "class"
    EVIDENCE = HALF_WORDS
    TRIGGERS = ("Adam",)
    ALSO_REQUIRES = ("half", "Half", "float16", "autocast")
    OPTIONS = {"min_eps": 1e-4}

    VALID = [
        Valid(
            """
            import torch
            model = Net().cuda().half()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-4)
            """,
            "an eps float16 can use",
        ),
        Valid(
            """
            import torch
            model = Net().cuda()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            scaler = torch.amp.GradScaler("cuda")
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(x).sum()
            """,
            "mixed precision keeps float32 weights",
        ),
        Valid(
            """
            import torch
            def setup(model, teacher):
                teacher.half()
                return torch.optim.Adam(model.parameters())
            """,
            "a different model is converted",
        ),
        Valid(
            """
            import torch
            def setup(model):
                model.to(torch.bfloat16)
                return torch.optim.Adam(model.parameters())
            """,
            "bfloat16 has float32's range",
        ),
        Valid(
            """
            import torch
            def setup(model, x):
                x = x.half()
                return torch.optim.Adam(model.parameters())
            """,
            "only the data is float16",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            model = Net().cuda().half()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            """,
            line=3,
            column=7,
        ),
        Invalid(
            """
            import torch
            from torch.optim import AdamW
            def setup(model, lr):
                model.to(device, dtype=torch.float16)
                params = [p for p in model.parameters() if p.requires_grad]
                return AdamW(params, lr=lr, eps=1e-8)
            """,
            line=6,
            column=12,
            note="through a variable; an explicit eps=1e-8 is no better",
        ),
        Invalid(
            """
            import torch
            def main(args):
                model = Model(args)
                if args.fp16:
                    model.half()
                optimizer = torch.optim.Adam(
                    [{"params": model.encoder.parameters(), "lr": 1e-4}], lr=args.lr
                )
            """,
            line=6,
            column=17,
            note="parameter groups of a submodule",
        ),
    ]
    INVALID += [
        Invalid(
            """
            import torch
            from torch import nn
            class Model(nn.Module):
                def quantize(self, bits):
                    if bits == 16:
                        return self.half()
                def fit(self, data, lr):
                    return torch.optim.AdamW(self.parameters(), lr=lr)
            """,
            line=8,
            column=16,
            confidence="low",
            note="converted only by another method (an inference export)",
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.half()
                def fit(self, data, lr):
                    return torch.optim.AdamW(self.parameters(), lr=lr)
            """,
            line=8,
            column=16,
            note="converted in the constructor: every instance is float16",
        ),
    ]
    PROBE = Probe(
        scenario="adam-eps-half",
        inputs={"grad": "torch.tensor([1e-4, 0.0, 1e-3, 1.0])"},
        dtypes=("float16",),
        note="one Adam step on float16 parameters with these gradients: eps=1e-8 gives "
        "non-finite parameters, eps=1e-4 stays finite",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.callee(node).qualname not in _ADAM:
            return
        given = positional(node, 3, "eps")
        if given is not None:
            eps = constant(ctx, given)
            if eps is None or eps >= float(self.options["min_eps"]):
                return
        params = positional(node, 0, "params")
        grade = self._half_owner(params) if params is not None else None
        if grade is not None:
            self.report(node, confidence=grade)
        elif params is not None and self._unknown_owner(params):
            graded = project_grade(ctx, None, (HALF,))
            if graded is not None:
                self.report(node, f"{self.MESSAGE}; {graded[1]}", confidence="low")

    def _unknown_owner(self, params: cst.BaseExpression) -> bool:
        """No owner of the parameters has a known dtype, and this file does not train with
        autocast (mixed precision keeps float32 weights)."""
        ctx = self.ctx
        if any(
            traced_dtype(ctx, Value(o, env)) is not None
            for o, env in _owners(ctx, Value(params, ctx.env))
        ):
            return False
        if any(e.kind != "default" and e.receiver for e in evidence(ctx)):
            return False  # the region converts something: `_half_owner` has judged it
        here = os.path.abspath(ctx.path)
        return not any(e.kind == AUTOCAST and e.path == here for e in project_evidence(ctx)[1])

    def _half_owner(self, params: cst.BaseExpression) -> Confidence | None:
        """None when the parameters are not known to be float16; else the grade: low when
        the class converts itself only in another method (`def quantize(self): return
        self.half()`), which this training path need not have run."""
        ctx = self.ctx
        found = evidence(ctx)
        if any(e.kind == "default" for e in found):
            return "high"
        converted = [e for e in found if e.kind == "convert" and e.receiver]
        grade: Confidence | None = None
        for owner, env in _owners(ctx, Value(params, ctx.env)):
            text = ctx.code(owner)
            for e in converted:
                if text == e.receiver or text.startswith(f"{e.receiver}."):
                    if not _other_method(ctx, e.node):
                        return "high"
                    grade = "low"
            if traced_dtype(ctx, Value(owner, env)) == "float16":
                return "high"
        return grade


def _other_method(ctx: Context, node: cst.CSTNode) -> bool:
    """`node` sits in a method of the enclosing class other than `__init__` and the current
    function."""
    cls = ctx.class_scope
    if cls is None or not isinstance(cls.node, cst.ClassDef):
        return False
    for stmt in cls.node.body.body:
        if isinstance(stmt, cst.FunctionDef) and any(n is node for n in descendants(stmt)):
            return stmt.name.value != "__init__" and not any(a is stmt for a in ctx.ancestors())
    return False


def _owners(ctx, value: Value, depth: int = 4) -> list[tuple[cst.BaseExpression, object]]:
    """Receivers of `.parameters()` calls in a params expression, following names."""
    if depth <= 0:
        return []
    value = ctx.deref(value)
    out: list[tuple[cst.BaseExpression, object]] = []
    for call in descendants(value.node):
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in _PARAMETERS
        ):
            out.append((call.func.value, value.env))
    if not out:
        for name in descendants(value.node):
            if not isinstance(name, cst.Name):
                continue
            if name is not value.node:
                out += _owners(ctx, Value(name, value.env), depth - 1)  # type: ignore[arg-type]
    return out
