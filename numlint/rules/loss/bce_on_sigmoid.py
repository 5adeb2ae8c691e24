"""NUM303 bce-on-sigmoid."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.precision_mode import AUTOCAST, in_autocast, project_half
from numlint.analysis.semantics import needs_parens
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.loss._losses import BCE, LossCall, configuration_grade, loss_call
from numlint.rules.loss._probs import Probability, movable, probability


class BceOnSigmoid(Rule):
    """Binary cross-entropy of a sigmoid: zero gradients when saturated; use the logits form.

    What it does:
    Flags `F.binary_cross_entropy(p, y)`, `nn.BCELoss()(p, y)` and a `BCELoss` object created
    elsewhere (`self.criterion = nn.BCELoss()`, `loss_fn = nn.BCELoss()`) when `p` is a
    sigmoid output: `torch.sigmoid`, `F.sigmoid`, `torch.special.expit`, `x.sigmoid()`, an
    `nn.Sigmoid` module stored on `self`, a hand-written `1 / (1 + torch.exp(-z))`, a variable
    assigned from those in the same function (also through indexing and clamps), or the output
    of a model whose `forward()` returns a sigmoid on every path (`self(x)`, `model(x)` for a
    class of the same file, an `nn.Sequential` ending in `nn.Sigmoid`).

    Why is this bad?
    Once the sigmoid saturates (z = -200 with target 1 in float32; much earlier in float16)
    the probability is exactly 0 or 1, BCE clamps its log at -100 and the gradient is exactly
    zero (-0.0 instead of -1): confidently wrong examples stop training. Under CUDA autocast
    `binary_cross_entropy` raises an error. `binary_cross_entropy_with_logits` computes the
    same loss from the logits with the log-sum-exp trick and keeps the gradient `sigmoid(z) - y`.

    Fix safety:
    Unsafe: values change slightly (they become more accurate). `F.binary_cross_entropy(
    torch.sigmoid(z), y, ...)` becomes `F.binary_cross_entropy_with_logits(z, y, ...)` and an
    inline `nn.BCELoss(...)(torch.sigmoid(z), y)` becomes `nn.BCEWithLogitsLoss(...)(z, y)`,
    keeping `weight` and `reduction` (the logits form also accepts `pos_weight`, which BCE has
    no equivalent of). Offered only when the sigmoid is the loss input itself, or a variable
    assigned from one whose input has no call (nothing runs twice) and still means the same;
    no fix when the loss object is created elsewhere (change it to `BCEWithLogitsLoss` there),
    through indexing or clamps, or for model outputs.

    Known limitations:
    Follows values within one function, `self.` modules of one class and classes of the same
    file. A hand-written BCE on probabilities is reported by NUM102.

    Not reported inside `torch.no_grad()` (validation, label assignment) unless the call
    runs under autocast or the project uses autocast anywhere: no gradient can vanish there.

    Confidence:
    high, except where the loss object or its input is a `self.` attribute the class sets to
    different things in different places (a loss or a score chosen by a configuration
    test): then low, since whether this pair ever runs together depends on the run.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html
    - [numlint hazard catalog, row 9](https://github.com/numlint/numlint/blob/main/docs/hazards.md#9)
    """

    CODE = "NUM303"
    NAME = "bce-on-sigmoid"
    MESSAGE = (
        "binary cross-entropy on sigmoid output: saturated probabilities get exactly zero "
        "gradient (and it fails under autocast); use `F.binary_cross_entropy_with_logits` / "
        "`nn.BCEWithLogitsLoss` on the logits"
    )
    TRIGGERS = ("binary_cross_entropy", "BCELoss")

    VALID = [
        Valid(
            """
            import torch.nn.functional as F
            loss = F.binary_cross_entropy_with_logits(z, y)
            """,
            "the stable API",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            criterion = nn.BCELoss()
            with torch.no_grad():
                val_loss = criterion(torch.sigmoid(model(x)), y).item()
            """,
            "validation without gradients, in a project without autocast",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.binary_cross_entropy(torch.softmax(z, 1), y)
            """,
            "softmax probabilities: the logits form would be wrong",
        ),
        Valid(
            """
            import torch.nn as nn
            def step(probs, y):
                return nn.BCELoss()(probs, y)
            """,
            "probabilities from elsewhere: names alone prove nothing",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def f(z, y):
                p = torch.sigmoid(z)
                p = p * mask
                return F.binary_cross_entropy(p, y)
            """,
            "reassigned before the loss",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.binary_cross_entropy(1 / (2 + torch.exp(-z)), y)
            """,
            "not a sigmoid",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.binary_cross_entropy(torch.sigmoid(z), y, weight=w, reduction="sum")
            """,
            line=3,
            column=8,
            fixed="""
            import torch
            import torch.nn.functional as F
            loss = F.binary_cross_entropy_with_logits(z, y, weight=w, reduction="sum")
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn
            loss = nn.BCELoss(reduction="none")(torch.sigmoid(model(x)), y)
            """,
            line=3,
            column=8,
            fixed="""
            import torch
            from torch import nn
            loss = nn.BCEWithLogitsLoss(reduction="none")(model(x), y)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Disc(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.sigmoid = nn.Sigmoid()
                    self.criterion = nn.BCELoss()
                def loss(self, h, y):
                    return self.criterion(self.sigmoid(h), y)
            """,
            line=9,
            column=16,
            note="loss object created in __init__: flagged, no fix",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def f(z, y):
                h = 1.0 / (1.0 + torch.exp(-z))
                return F.binary_cross_entropy(h, y)
            """,
            line=5,
            column=12,
            fixed="""
            import torch
            import torch.nn.functional as F
            def f(z, y):
                h = 1.0 / (1.0 + torch.exp(-z))
                return F.binary_cross_entropy_with_logits(z, y)
            """,
            note="a hand-written sigmoid through a variable",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class D(nn.Module):
                def forward(self, x):
                    return torch.sigmoid(self.net(x))
            bce = nn.BCELoss()
            def train(x, y):
                d = D()
                return bce(d(x), y)
            """,
            line=9,
            column=12,
            note="a model of the same file whose forward() returns a sigmoid",
        ),
        Invalid(
            """
            import torch.nn.functional as F
            loss = F.binary_cross_entropy(logits.sigmoid().squeeze(1), y)
            """,
            line=2,
            column=8,
            note="through squeeze: flagged, no fix",
        ),
    ]
    PROBE = Probe(
        hazard="torch.nn.functional.binary_cross_entropy(torch.sigmoid(z), y)",
        fix="torch.nn.functional.binary_cross_entropy_with_logits(z, y)",
        inputs={"z": "torch.tensor([-200.0])", "y": "torch.tensor([1.0])"},
        dtypes=("float32",),
        compare="gradient",
        note="the hazard's gradient with respect to z is -0.0, the fix's is -1",
    )

    def visit_Call(self, node: cst.Call) -> None:
        loss = loss_call(self.ctx, node, BCE)
        if loss is None:
            return
        prob = probability(self.ctx, self.ctx.value(loss.input), ("sigmoid",))
        if prob is None:
            return
        if self.ctx.in_no_grad() and not _autocast_possible(self.ctx):
            return  # no gradient to vanish, and the value differs only past the -100 clamp
        self.report(
            node,
            fix=self._fix(loss, prob),
            related=prob.related + loss.related,
            confidence=configuration_grade(self.ctx, loss),
        )

    def _fix(self, loss: LossCall, prob: Probability) -> FixSpec | None:
        ctx = self.ctx
        logits = movable(ctx, prob)
        if logits is None or loss.spelling in ("module", "wrapper"):
            return None
        text = ctx.code(logits)
        if prob.negated:
            text = f"-({text})" if needs_parens(logits) else f"-{text}"
        args = []
        for arg in loss.call.args:
            value = text if arg.value is loss.input else ctx.code(arg.value)
            key = f"{arg.keyword.value}=" if arg.keyword is not None else arg.star
            args.append(f"{key}{value}")
        if loss.spelling == "function":
            func = _renamed(ctx, loss.call.func, "binary_cross_entropy_with_logits")
        else:
            ctor = loss.constructor
            assert ctor is not None
            cls = _renamed(ctx, ctor.func, "BCEWithLogitsLoss")
            func = None if cls is None else f"{cls}({', '.join(_args(ctx, ctor))})"
        if func is None:
            return None
        code = f"{func}({', '.join(args)})"
        return self.fix("unsafe", "Compute the loss from the logits", (loss.call, code))


def _renamed(ctx, func: cst.BaseExpression, new: str) -> str | None:
    """`F.binary_cross_entropy` -> `F.<new>`; a bare imported name -> its spelling here."""
    if isinstance(func, cst.Attribute):
        return f"{ctx.code(func.value)}.{new}"
    module = "torch.nn.functional" if new.islower() else "torch.nn"
    return ctx.spell(f"{module}.{new}")


def _args(ctx, call: cst.Call) -> list[str]:
    out = []
    for arg in call.args:
        key = f"{arg.keyword.value}=" if arg.keyword is not None else arg.star
        out.append(f"{key}{ctx.code(arg.value)}")
    return out


def _autocast_possible(ctx) -> bool:
    """The call runs under autocast, or the project trains with it somewhere: BCE raises
    under CUDA autocast, with or without a gradient."""
    return in_autocast(ctx) or project_half(ctx, (AUTOCAST,)) is not None
