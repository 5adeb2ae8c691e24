"""NUM305 logits-loss-on-probabilities."""

from __future__ import annotations

import libcst as cst

from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.loss._losses import ON_LOGITS, LossCall, configuration_grade, loss_call
from numlint.rules.loss._probs import Probability, logits_replacement, probability

_MODEL_MESSAGE = (
    "a logits loss on a model output that its `forward()` already passes through {kind}: the "
    "loss applies a sigmoid again, so its input is squashed into (0.5, 0.73), the loss never "
    "reaches 0 and the gradient shrinks ~10^4x; return the logits from `forward()` and apply "
    "{kind} only for prediction"
)


class LogitsLossOnProbabilities(Rule):
    """A logits loss (`BCEWithLogitsLoss`) given probabilities: the sigmoid is applied twice.

    What it does:
    Flags `F.binary_cross_entropy_with_logits(p, y)`, `nn.BCEWithLogitsLoss()(p, y)`, a
    `BCEWithLogitsLoss` object created elsewhere (`self.criterion = nn.BCEWithLogitsLoss()` in
    `__init__`, `loss_fn = nn.BCEWithLogitsLoss(pos_weight=w)`), `F.multilabel_soft_margin_loss`
    / `nn.MultiLabelSoftMarginLoss` and `torchvision.ops.sigmoid_focal_loss` when `p` is
    already a probability: a sigmoid or softmax in any spelling (`torch.sigmoid`, `x.sigmoid()`,
    `torch.special.expit`, an `nn.Sigmoid` module stored on `self`, a hand-written
    `1 / (1 + torch.exp(-z))`), a variable assigned from one (also through indexing and
    clamps), or the output of a model whose `forward()` returns one on every path (`self(x)`,
    `model(x)` for a class of the project, an `nn.Sequential` ending in `nn.Sigmoid`), also
    as one part of a tuple or dict it returns (`pred, aux = model(x)`, `model(x)[0]`,
    `out["exist"]` of `return {"exist": torch.sigmoid(e), ...}`; also for a model of another
    file, `out = model(x)` then `out[0]`). A
    method, function or loss class of the file that hands its argument unchanged to such a
    loss counts as the loss (`self.loss(self(x), y)` with `def loss(self, z, y): return
    self.loss_func(z, y)` and `self.loss_func = F.binary_cross_entropy_with_logits`;
    `FocalLoss()(p, y)` whose `forward` calls the loss on its input); the finding names the
    loss call as a related location. Inside a loss function or module, a parameter handed
    to the loss is judged by what the project's callers pass it, instances included
    (`crit = FocalLoss()` then `crit(model(x)[0], y)` in a training script of the project:
    the finding is at the loss call and names the sigmoid).

    Why is this bad?
    These losses apply a sigmoid to their input themselves. Given probabilities in [0, 1], the
    second sigmoid maps them into [0.5, 0.73]: the loss can never approach 0 (at least 0.31 for
    a positive target, 0.69 for a negative one), and the gradient is multiplied by the first
    sigmoid's derivative, about 4.5e-5 for a logit of 10. A model confidently wrong gets a
    gradient of 3e-5 instead of 1, so training stalls or converges to a poor model without any
    error.

    Fix safety:
    Unsafe: passing the logits changes the loss value and the gradients (to the intended
    ones). Offered when the probability is the loss input itself, or a variable assigned from
    one whose input has no call (nothing runs twice) and still means the same; not offered
    through indexing or clamps, for a softmax, or for model outputs (return the logits from
    `forward()` instead, or switch to `BCELoss` on purpose).

    Known limitations:
    Follows values within one function, `self.` modules of one class, classes of the same file
    and functions and models of other project files through their summaries. A wrapper of the
    loss in another file is followed only in files that name one of the logits losses. A
    loss chosen by a configuration in a base class of another file (`self.criterion =
    self._build_criterion(loss_type)`), or a model the function is given as a parameter
    (`def step(self, net, batch)`), is not seen. A `forward()` that returns logits in
    training and probabilities otherwise is not flagged.

    Confidence:
    high, except where the loss object or its input is a `self.` attribute the class sets to
    different things in different places (a loss or a score chosen by a configuration test):
    then low, since whether this pair ever runs together depends on the run.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html
    - [numlint hazard catalog, row 35](https://github.com/numlint/numlint/blob/main/docs/hazards.md#35)
    """

    CODE = "NUM305"
    NAME = "logits-loss-on-probabilities"
    MESSAGE = (
        "logits loss on probabilities: `binary_cross_entropy_with_logits` applies a sigmoid "
        "itself, so a sigmoid or softmax output is squashed twice, the loss never reaches 0 "
        "and gradients shrink ~10^4x; pass the raw logits instead"
    )
    TRIGGERS = (
        "binary_cross_entropy_with_logits",
        "BCEWithLogitsLoss",
        "multilabel_soft_margin_loss",
        "MultiLabelSoftMarginLoss",
        "sigmoid_focal_loss",
    )
    #: A method or function of the file may hand its input to the loss: its callers too.
    CHUNK = "callers"

    VALID = [
        Valid(
            """
            import torch
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cls = nn.Linear(8, 1)
                def forward(self, x):
                    logits = self.cls(x)
                    return logits, torch.sigmoid(logits)
            def step(images, labels):
                logits, probs = Net()(images)
                return nn.BCEWithLogitsLoss()(logits, labels), probs
            """,
            "the logits part of a model that also returns its probabilities",
        ),
        Valid(
            """
            import torch.nn.functional as F
            loss = F.binary_cross_entropy_with_logits(logits, y)
            """,
            "raw logits",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.binary_cross_entropy(torch.sigmoid(z), y)
            """,
            "BCELoss takes probabilities (NUM303 reports its instability)",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def step(z, y):
                probs = torch.sigmoid(z)
                loss = F.binary_cross_entropy_with_logits(z, y)
                return loss, probs
            """,
            "the sigmoid is only used for reporting",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            class Head(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.token = nn.Sequential(nn.Linear(dim, 1), nn.Sigmoid())
                    self.loss_fn = nn.BCEWithLogitsLoss()
                def loss(self, x, y):
                    return self.loss_fn(self.token[0](x), y)
            """,
            "only the linear layer of a sequential that ends in a sigmoid",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def f(z, y):
                p = torch.sigmoid(z)
                p = torch.logit(p, eps=1e-6)
                return F.binary_cross_entropy_with_logits(p, y)
            """,
            "reassigned to logits before the loss",
        ),
        Valid(
            """
            import torch.nn.functional as F
            def loss(probs, y):
                return F.binary_cross_entropy_with_logits(probs, y)
            """,
            "a parameter named `probs`: names alone prove nothing",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.binary_cross_entropy_with_logits(z, torch.sigmoid(t))
            """,
            "soft targets may be probabilities",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cls = nn.Linear(8, 1)
                    self.map = nn.Linear(8, 4)
                def forward(self, x):
                    return torch.sigmoid(self.cls(x)), self.map(x)
            def step(images, labels, depth):
                model = Net()
                criterion = nn.BCEWithLogitsLoss()
                pred, depth_map = model(images)
                return criterion(pred.squeeze(1), labels) + (depth_map - depth).abs().mean()
            """,
            line=14,
            column=12,
            note="the first part of a tuple the model returns",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            loss = F.binary_cross_entropy_with_logits(torch.sigmoid(z), y, pos_weight=w)
            """,
            line=3,
            column=8,
            fixed="""
            import torch
            import torch.nn.functional as F
            loss = F.binary_cross_entropy_with_logits(z, y, pos_weight=w)
            """,
        ),
        Invalid(
            """
            import torch.nn as nn
            loss = nn.BCEWithLogitsLoss(reduction="none")(scores.sigmoid(), labels)
            """,
            line=2,
            column=8,
            fixed="""
            import torch.nn as nn
            loss = nn.BCEWithLogitsLoss(reduction="none")(scores, labels)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 1)
                    self.criterion = nn.BCEWithLogitsLoss()
                def forward(self, x):
                    return torch.sigmoid(self.fc(x))
                def training_step(self, x, y):
                    return self.criterion(self(x), y)
            """,
            line=11,
            column=16,
            note="forward() returns a sigmoid: flagged, no fix",
        ),
        Invalid(
            """
            import torch.nn as nn
            class Head(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.token = nn.Sequential(nn.Linear(dim, 1), nn.Sigmoid())
                    self.loss_fn = nn.BCEWithLogitsLoss()
                def loss(self, x, y):
                    return self.loss_fn(self.token(x), y)
            """,
            line=8,
            column=16,
            note="an nn.Sequential on self that ends in nn.Sigmoid",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 1)
                    self.loss_func = F.binary_cross_entropy_with_logits
                def forward(self, x):
                    return torch.sigmoid(self.fc(x))
                def loss(self, logits, labels):
                    return self.loss_func(input=logits, target=labels)
                def training_step(self, batch, i):
                    x, y = batch
                    return self.loss(self.forward(x), y)
            """,
            line=15,
            column=16,
            note="a method of the class hands its input to the loss",
        ),
        Invalid(
            """
            import torch
            from torchvision.ops import sigmoid_focal_loss
            def f(z, y):
                p = torch.sigmoid(z)
                return sigmoid_focal_loss(p, y, reduction="mean")
            """,
            line=5,
            column=12,
            fixed="""
            import torch
            from torchvision.ops import sigmoid_focal_loss
            def f(z, y):
                p = torch.sigmoid(z)
                return sigmoid_focal_loss(z, y, reduction="mean")
            """,
            note="torchvision's focal loss takes logits too",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            criterion = nn.MultiLabelSoftMarginLoss()
            def train(model, x, y):
                out = torch.softmax(model(x), dim=1)
                return criterion(out, y)
            """,
            line=6,
            column=12,
            note="a softmax given to a multi-label logits loss: flagged, no fix",
        ),
    ]
    PROBE = Probe(
        hazard="torch.nn.functional.binary_cross_entropy_with_logits(torch.sigmoid(z), y)",
        fix="torch.nn.functional.binary_cross_entropy_with_logits(z, y)",
        inputs={"z": "torch.tensor([10.0])", "y": "torch.tensor([0.0])"},
        dtypes=("float32",),
        compare="gradient",
        note="a confidently wrong logit: gradient 3.3e-05 for the hazard against 1.0 for the fix",
    )

    def visit_Call(self, node: cst.Call) -> None:
        loss = loss_call(self.ctx, node, ON_LOGITS)
        if loss is None:
            return
        prob = probability(self.ctx, self.ctx.value(loss.input))
        if prob is None:
            return
        message = _MODEL_MESSAGE.format(kind=prob.kind) if prob.origin == "model" else None
        self.report(
            node,
            message,
            self._fix(loss, prob),
            related=prob.related + loss.related,
            confidence=configuration_grade(self.ctx, loss),
        )

    def _fix(self, loss: LossCall, prob: Probability) -> FixSpec | None:
        if prob.kind != "sigmoid" or prob.negated:
            return None  # a softmax has no logits this loss could take instead
        edit = logits_replacement(self.ctx, loss.input, prob)
        return None if edit is None else self.fix("unsafe", "Pass the logits to the loss", edit)
