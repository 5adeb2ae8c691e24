"""NUM304 kl-div-input-not-log."""

from __future__ import annotations

import libcst as cst

from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.loss._losses import KL_DIV, LossCall, configuration_grade, loss_call
from numlint.rules.loss._probs import Probability, averaged_probability, log_space_code


class KlDivInputNotLog(Rule):
    """`kl_div` with probabilities as input: it expects log-probabilities; use `log_softmax`.

    What it does:
    Flags `F.kl_div(p, q)`, `nn.KLDivLoss()(p, q)` and a `KLDivLoss` object created elsewhere
    when the first argument `p` (the input) is a softmax or sigmoid output: `torch.softmax`,
    `F.softmax`, `x.softmax(d)`, `torch.sigmoid`, `nn.Softmax` / `nn.Sigmoid` modules stored on
    `self`, a hand-written softmax or sigmoid, a variable assigned from those in the same
    function, or the output of a model whose `forward()` returns a softmax on every path; also
    an average of such outputs (`p.mean(0)`, the batch's mean distribution), and a parameter
    that the callers pass one as, a base class's `self.m(...)` calling an override included.

    Why is this bad?
    `kl_div(input, target)` computes `target * (log(target) - input)`: the input must be in
    log space. Given probabilities the result is not a divergence at all: for `p = [.5, .5]`
    and `q = [.9, .1]` it gives -0.825, a negative "KL", and its gradient pushes the model in
    a meaningless direction. `log_target=True` only changes how the target is read.

    Fix safety:
    Unsafe: the loss value changes (to the intended one). The fix turns the softmax into
    `log_softmax` with the same `dim` and `dtype`, when the softmax is the input itself, or a
    variable assigned from one whose input has no call (nothing runs twice) and still means
    the same. No fix for sigmoid outputs, hand-written softmaxes, values seen through
    indexing or clamps, or model outputs.
    Consider `reduction="batchmean"`, which matches the mathematical definition.

    Known limitations:
    Only inputs known to be probabilities are flagged; a target mistakenly given in log
    space without `log_target=True` is not checked.

    Confidence:
    high, except where the loss object or its input is a `self.` attribute the class sets to
    different things in different places (a loss or a score chosen by a configuration
    test): then low, since whether this pair ever runs together depends on the run.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.kl_div.html
    - [numlint hazard catalog, row 11](https://github.com/numlint/numlint/blob/main/docs/hazards.md#11)
    """

    CODE = "NUM304"
    NAME = "kl-div-input-not-log"
    MESSAGE = (
        "`kl_div` input is probabilities, not log-probabilities: the divergence is wrong and "
        "can be negative; pass `F.log_softmax(...)` as the input"
    )
    TRIGGERS = ("kl_div", "KLDivLoss")

    VALID = [
        Valid(
            """
            import torch.nn.functional as F
            kl = F.kl_div(F.log_softmax(s, -1), F.softmax(t, -1), reduction="batchmean")
            """,
            "log-probabilities in, probabilities as target",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            kl = F.kl_div(torch.log(p), torch.softmax(t, -1))
            """,
            "a softmax target is right",
        ),
        Valid(
            """
            import torch.nn as nn
            def distill(student_logp, teacher_p):
                return nn.KLDivLoss(reduction="batchmean")(student_logp, teacher_p)
            """,
            "unknown values",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def f(s, t):
                p = torch.softmax(s, -1)
                p = p.log()
                return F.kl_div(p, t)
            """,
            "reassigned to its log",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch.nn.functional as F
            kl = F.kl_div(F.softmax(s, dim=-1), F.softmax(t, dim=-1), reduction="batchmean")
            """,
            line=2,
            column=6,
            fixed="""
            import torch.nn.functional as F
            kl = F.kl_div(F.log_softmax(s, dim=-1), F.softmax(t, dim=-1), reduction="batchmean")
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            def distill(student, teacher, T):
                p = torch.softmax(student / T, dim=1)
                q = torch.softmax(teacher / T, dim=1)
                return nn.KLDivLoss(reduction="batchmean")(p, q) * T * T
            """,
            line=6,
            column=12,
            fixed="""
            import torch
            import torch.nn as nn
            def distill(student, teacher, T):
                p = torch.softmax(student / T, dim=1)
                q = torch.softmax(teacher / T, dim=1)
                return nn.KLDivLoss(reduction="batchmean")(torch.log_softmax(student / T, dim=1), q) * T * T
            """,
            note="through a variable (distillation with a temperature)",
        ),
        Invalid(
            """
            import torch.nn as nn
            class Distiller(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.kl = nn.KLDivLoss(reduction="batchmean")
                def forward(self, s, t):
                    return self.kl(s.softmax(-1), t.softmax(-1))
            """,
            line=7,
            column=16,
            fixed="""
            import torch.nn as nn
            class Distiller(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.kl = nn.KLDivLoss(reduction="batchmean")
                def forward(self, s, t):
                    return self.kl(s.log_softmax(-1), t.softmax(-1))
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            kl = F.kl_div(torch.sigmoid(a), torch.sigmoid(b))
            """,
            line=3,
            column=6,
            note="sigmoid probabilities: flagged, no fix",
        ),
    ]
    PROBE = Probe(
        hazard="torch.nn.functional.kl_div(p, q, reduction='sum')",
        fix="torch.nn.functional.kl_div(torch.log(p), q, reduction='sum')",
        inputs={"p": "torch.tensor([[0.5, 0.5]])", "q": "torch.tensor([[0.9, 0.1]])"},
        dtypes=("float32",),
        compare="both",
        note="the hazard gives -0.825 (a negative divergence), the fix 0.368",
    )

    def visit_Call(self, node: cst.Call) -> None:
        loss = loss_call(self.ctx, node, KL_DIV)
        if loss is None:
            return
        prob = averaged_probability(self.ctx, self.ctx.value(loss.input))
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
        return self.fix("unsafe", "Use `log_softmax` for the input", (loss.input, code))
