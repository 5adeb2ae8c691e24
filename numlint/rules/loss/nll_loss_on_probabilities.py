"""NUM302 nll-loss-on-probabilities."""

from __future__ import annotations

import libcst as cst

from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.loss._losses import NLL, LossCall, configuration_grade, loss_call
from numlint.rules.loss._probs import Probability, log_space_code, probability


class NllLossOnProbabilities(Rule):
    """`nll_loss` on probabilities: it expects log-probabilities; use `F.log_softmax` first.

    What it does:
    Flags `F.nll_loss(p, target)`, `nn.NLLLoss()(p, target)` and an `NLLLoss` object created
    elsewhere (`self.criterion = nn.NLLLoss()`) when `p` is a softmax or sigmoid output:
    `torch.softmax`, `F.softmax`, `x.softmax(d)`, `torch.sigmoid`, `nn.Softmax` /
    `nn.Sigmoid` modules stored on `self`, a hand-written softmax or sigmoid, a variable
    assigned from those in the same function, or the output of a model whose `forward()`
    returns a softmax on every path (`self(x)`, `model(x)` for a class of the same file, an
    `nn.Sequential` ending in `nn.Softmax`).

    Why is this bad?
    `nll_loss` only picks `-input[target]`; it assumes the input is already a log. On
    probabilities the loss is `-p[target]`, bounded in [-1, 0], negative and meaningless as
    a likelihood, and its gradient does not grow for confident wrong predictions, so the
    model trains poorly without any error.

    Fix safety:
    Unsafe: the loss value changes (to the intended one). The fix turns the softmax into
    `log_softmax` with the same `dim` and `dtype`, when the softmax is the loss input itself,
    or a variable assigned from one whose input has no call (nothing runs twice) and still
    means the same. No fix for sigmoid outputs, hand-written softmaxes, values seen through
    indexing or clamps, or model outputs.

    Known limitations:
    Follows values within one function, `self.` modules of one class and classes of the same
    file. A softmax output passed through `torch.log` is left to NUM101.

    Confidence:
    high, except where the loss object or its input is a `self.` attribute the class sets to
    different things in different places (a loss or a score chosen by a configuration
    test): then low, since whether this pair ever runs together depends on the run.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.NLLLoss.html
    - [numlint hazard catalog, row 11](https://github.com/numlint/numlint/blob/main/docs/hazards.md#11)
    """

    CODE = "NUM302"
    NAME = "nll-loss-on-probabilities"
    MESSAGE = (
        "`nll_loss` on probabilities: it expects log-probabilities, so the loss is -p[target], "
        "a wrong value with weak gradients; apply `F.log_softmax` instead of softmax "
        "(or `F.cross_entropy` on the logits)"
    )
    TRIGGERS = ("nll_loss", "NLLLoss")

    VALID = [
        Valid(
            """
            import torch.nn.functional as F
            loss = F.nll_loss(F.log_softmax(z, dim=1), t)
            """,
            "log-probabilities",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.nll_loss(torch.log(torch.softmax(z, 1) + 1e-8), t)
            """,
            "a log of the probabilities (NUM101's business, not this rule's)",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def f(z, t):
                p = torch.softmax(z, 1)
                p = torch.log(p.clamp_min(1e-6))
                return F.nll_loss(p, t)
            """,
            "reassigned to a log",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def f(z, t):
                p = torch.softmax(z, 1)
                p.log_()
                return F.nll_loss(p, t)
            """,
            "an in-place log",
        ),
        Valid(
            """
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = nn.LogSoftmax(dim=1)
                    self.loss = nn.NLLLoss()
                def step(self, x, y):
                    return self.loss(self.act(x), y)
            """,
            "an nn.LogSoftmax module",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.nll_loss(torch.softmax(z, 1), t)
            """,
            line=3,
            column=8,
            fixed="""
            import torch
            import torch.nn.functional as F
            loss = F.nll_loss(torch.log_softmax(z, 1), t)
            """,
        ),
        Invalid(
            """
            import torch.nn.functional as F
            loss = F.nll_loss(F.softmax(z, dim=-1), t, ignore_index=-100)
            """,
            line=2,
            column=8,
            fixed="""
            import torch.nn.functional as F
            loss = F.nll_loss(F.log_softmax(z, dim=-1), t, ignore_index=-100)
            """,
        ),
        Invalid(
            """
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.out = nn.Softmax(dim=1)
                    self.criterion = nn.NLLLoss()
                def step(self, h, y):
                    probs = self.out(h)
                    return self.criterion(probs, y)
            """,
            line=9,
            column=16,
            fixed="""
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.out = nn.Softmax(dim=1)
                    self.criterion = nn.NLLLoss()
                def step(self, h, y):
                    probs = self.out(h)
                    return self.criterion(nn.functional.log_softmax(h, dim=1), y)
            """,
            note="modules stored on self, through a variable",
        ),
        Invalid(
            """
            import torch.nn as nn
            loss = nn.NLLLoss()(logits.softmax(1), target)
            """,
            line=2,
            column=8,
            fixed="""
            import torch.nn as nn
            loss = nn.NLLLoss()(logits.log_softmax(1), target)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def f(z, y):
                p = torch.sigmoid(z)
                return F.nll_loss(p, y)
            """,
            line=5,
            column=12,
            note="sigmoid probabilities: flagged, no fix",
        ),
    ]
    PROBE = Probe(
        hazard="torch.nn.functional.nll_loss(torch.softmax(z, 1), t)",
        fix="torch.nn.functional.nll_loss(torch.log_softmax(z, 1), t)",
        inputs={"z": "torch.tensor([[10.0, 0.0, 0.0]])", "t": "torch.tensor([1])"},
        dtypes=("float32",),
        compare="both",
        note="compare with the float64 cross-entropy: the hazard gives -4.5e-5, not 10.0",
    )

    def visit_Call(self, node: cst.Call) -> None:
        loss = loss_call(self.ctx, node, NLL)
        if loss is None:
            return
        prob = probability(self.ctx, self.ctx.value(loss.input))
        if prob is None:
            return
        self.report(
            node,
            fix=self._fix(loss, prob),
            related=prob.related + loss.related,
            confidence=configuration_grade(self.ctx, loss),
        )

    def _fix(self, loss: LossCall, prob: Probability) -> FixSpec | None:
        code = log_space_code(self.ctx, prob)
        if code is None:
            return None
        return self.fix("unsafe", "Use `log_softmax` instead of `softmax`", (loss.input, code))
