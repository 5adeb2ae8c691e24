"""NUM301 cross-entropy-on-softmax."""

from __future__ import annotations

import libcst as cst

from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.loss._losses import CROSS_ENTROPY, LossCall, configuration_grade, loss_call
from numlint.rules.loss._probs import Probability, logits_replacement, probability

_MODEL_MESSAGE = (
    "cross-entropy on a model output that its `forward()` already passes through softmax: "
    "the softmax is applied twice and the gradient shrinks by orders of magnitude; "
    "return the logits from `forward()` and apply softmax only for prediction"
)


class CrossEntropyOnSoftmax(Rule):
    """Cross-entropy of softmax probabilities: softmax applied twice; pass the raw logits.

    What it does:
    Flags `F.cross_entropy(p, target)`, `nn.CrossEntropyLoss()(p, target)` and a
    `CrossEntropyLoss` object created elsewhere (`self.criterion = nn.CrossEntropyLoss()` in
    `__init__`, `loss_fn = nn.CrossEntropyLoss()`) when `p` is a softmax output: `torch.softmax`,
    `F.softmax`, `x.softmax(d)`, an `nn.Softmax` module stored on `self`, a hand-written
    `exp(x) / exp(x).sum(d, keepdim=True)`, a variable assigned from those in the same
    function (also through indexing and clamps), or the output of a model whose `forward()`
    returns a softmax on every path (`self(x)`, `self.forward(x)`, `model(x)` / `self.model(x)`
    for a class defined in the same file, an `nn.Sequential` ending in `nn.Softmax`).

    Why is this bad?
    `cross_entropy` computes `log_softmax` of its input itself. Given probabilities in [0, 1],
    it takes a second softmax over values that differ by at most 1: the loss can never
    approach 0 and the gradient shrinks by about 10^4 (norm 1e-4 instead of 1.41 for logits
    `[10, 0, 0]` with a wrong target), so training stalls without any error.

    Fix safety:
    Unsafe: passing the logits changes the loss value and the gradients (to the intended
    ones). Offered when the softmax is the loss input itself, or a variable assigned from one
    whose input has no call (nothing runs twice) and still means the same; not offered
    through indexing or clamps, for a hand-written softmax, or for model outputs (change
    `forward()` instead).

    Known limitations:
    Follows values within one function, `self.` modules of one class and classes of the same
    file; a model defined in another file, or a softmax applied in another function, is not
    seen. A `forward()` that returns logits in training and probabilities otherwise is not
    flagged.

    Confidence:
    high, except where the loss object or its input is a `self.` attribute the class sets to
    different things in different places (a loss or a score chosen by a configuration
    test): then low, since whether this pair ever runs together depends on the run.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
    - [numlint hazard catalog, row 10](https://github.com/numlint/numlint/blob/main/docs/hazards.md#10)
    """

    CODE = "NUM301"
    NAME = "cross-entropy-on-softmax"
    MESSAGE = (
        "cross-entropy on softmax output: `cross_entropy` applies log_softmax itself, so the "
        "softmax is applied twice and gradients shrink ~10^4x; pass the raw logits instead"
    )
    TRIGGERS = ("cross_entropy", "CrossEntropyLoss")

    VALID = [
        Valid(
            """
            import torch.nn.functional as F
            loss = F.cross_entropy(logits, target)
            """,
            "raw logits",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.cross_entropy(torch.log_softmax(z, 1), target)
            """,
            "log_softmax is idempotent under cross_entropy",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def step(z, t):
                probs = torch.softmax(z, 1)
                loss = F.cross_entropy(z, t)
                return loss, probs
            """,
            "the softmax is only used for reporting",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 3)
                    self.criterion = nn.CrossEntropyLoss()
                def forward(self, x):
                    return self.fc(x)
                def training_step(self, x, y):
                    return self.criterion(self(x), y)
            """,
            "forward() returns logits",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def f(z, t):
                p = torch.softmax(z, 1)
                p = p.log()
                return F.cross_entropy(p, t)
            """,
            "reassigned to the log before the loss",
        ),
        Valid(
            """
            import torch.nn.functional as F
            def loss(probs, t):
                return F.cross_entropy(probs, t)
            """,
            "a parameter named `probs`: names alone prove nothing",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.cross_entropy(torch.softmax(z, 1), t)
            """,
            line=3,
            column=8,
            fixed="""
            import torch
            import torch.nn.functional as F
            loss = F.cross_entropy(z, t)
            """,
        ),
        Invalid(
            """
            import torch.nn as nn
            loss = nn.CrossEntropyLoss(label_smoothing=0.1)(logits.softmax(-1), labels)
            """,
            line=2,
            column=8,
            fixed="""
            import torch.nn as nn
            loss = nn.CrossEntropyLoss(label_smoothing=0.1)(logits, labels)
            """,
        ),
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F
            class Classifier(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=1)
                    self.criterion = nn.CrossEntropyLoss()
                def loss(self, x, y):
                    return self.criterion(self.softmax(x), y)
            """,
            line=9,
            column=16,
            fixed="""
            import torch.nn as nn
            import torch.nn.functional as F
            class Classifier(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=1)
                    self.criterion = nn.CrossEntropyLoss()
                def loss(self, x, y):
                    return self.criterion(x, y)
            """,
            note="an nn.Softmax and the loss object both stored on self",
        ),
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F
            class Net(nn.Module):
                def forward(self, x):
                    x = self.fc(x)
                    return F.softmax(x, dim=1)
                def training_step(self, batch):
                    x, y = batch
                    out = self(x)
                    return F.cross_entropy(out, y)
            """,
            line=10,
            column=16,
            note="forward() returns softmax: flagged, no fix",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            criterion = nn.CrossEntropyLoss()
            def train(model, x, y):
                logits = model(x)
                probs = torch.softmax(logits, dim=-1)
                return criterion(probs, y)
            """,
            line=7,
            column=12,
            fixed="""
            import torch
            import torch.nn as nn
            criterion = nn.CrossEntropyLoss()
            def train(model, x, y):
                logits = model(x)
                probs = torch.softmax(logits, dim=-1)
                return criterion(logits, y)
            """,
            note="through a variable; the loss object is module-level",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            model = nn.Sequential(nn.Linear(8, 4), nn.Softmax(dim=1))
            loss = nn.functional.cross_entropy(model(x), y)
            """,
            line=4,
            column=8,
            note="an nn.Sequential that ends in nn.Softmax",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def f(x, t):
                e = torch.exp(x)
                p = e / e.sum(dim=1, keepdim=True)
                return F.cross_entropy(p, t)
            """,
            line=6,
            column=12,
            note="a hand-written softmax",
        ),
    ]
    PROBE = Probe(
        hazard="torch.nn.functional.cross_entropy(torch.softmax(z, 1), t)",
        fix="torch.nn.functional.cross_entropy(z, t)",
        inputs={"z": "torch.tensor([[10.0, 0.0, 0.0]])", "t": "torch.tensor([1])"},
        dtypes=("float32",),
        compare="gradient",
        note="compare gradient norms: about 1e-4 for the hazard against 1.41 for the fix",
    )

    def visit_Call(self, node: cst.Call) -> None:
        loss = loss_call(self.ctx, node, CROSS_ENTROPY)
        if loss is None:
            return
        prob = probability(self.ctx, self.ctx.value(loss.input), ("softmax",))
        if prob is None:
            return
        message = _MODEL_MESSAGE if prob.origin == "model" else None
        self.report(
            node,
            message,
            self._fix(loss, prob),
            related=prob.related + loss.related,
            confidence=configuration_grade(self.ctx, loss),
        )

    def _fix(self, loss: LossCall, prob: Probability) -> FixSpec | None:
        edit = logits_replacement(self.ctx, loss.input, prob)
        return None if edit is None else self.fix("unsafe", "Pass the logits to the loss", edit)
