"""Which loss a call computes, and what it takes as its input (prediction)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from numlint.analysis.context import Context
from numlint.analysis.semantics import positional
from numlint.diagnostic import Confidence

CROSS_ENTROPY = (
    frozenset({"torch.nn.functional.cross_entropy"}),
    frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.modules.loss.CrossEntropyLoss"}),
)
NLL = (
    frozenset({"torch.nn.functional.nll_loss"}),
    frozenset({"torch.nn.NLLLoss", "torch.nn.modules.loss.NLLLoss"}),
)
BCE = (
    frozenset({"torch.nn.functional.binary_cross_entropy"}),
    frozenset({"torch.nn.BCELoss", "torch.nn.modules.loss.BCELoss"}),
)
KL_DIV = (
    frozenset({"torch.nn.functional.kl_div", "torch.kl_div"}),
    frozenset({"torch.nn.KLDivLoss", "torch.nn.modules.loss.KLDivLoss"}),
)


@dataclass(frozen=True)
class LossCall:
    """A call of a loss function or loss module."""

    call: cst.Call
    #: The prediction argument (`input`).
    input: cst.BaseExpression
    #: "function" (`F.cross_entropy(...)`), "inline" (`nn.BCELoss()(...)`) or "module"
    #: (a loss object created elsewhere: `self.criterion(...)`, `loss_fn(...)`).
    spelling: str
    #: The loss module's constructor call, for "inline" and "module".
    constructor: cst.Call | None = None


def loss_call(
    ctx: Context, call: cst.Call, names: tuple[frozenset[str], frozenset[str]]
) -> LossCall | None:
    """`call` as a call of the loss `names` = (functions, module classes), else None."""
    functions, modules = names
    callee = ctx.callee(call)
    if callee.qualname in functions:
        spelling, ctor = "function", None
    elif callee.instance_of in modules:
        ctor = callee.constructor
        spelling = "inline" if call.func is ctor else "module"
    else:
        return None
    inp = positional(call, 0, "input")
    if inp is None:
        return None
    return LossCall(call, inp, spelling, ctor)


def configuration_grade(ctx: Context, loss: LossCall) -> Confidence | None:
    """`low` where the loss is chosen by a configuration (below); None keeps the rule's
    grade."""
    return "low" if chosen_by_configuration(ctx, loss) else None


def chosen_by_configuration(ctx: Context, loss: LossCall) -> bool:
    """The loss object or its input is a `self.` attribute that the class sets to different
    things in different places (`self.criterion = ContrastiveLoss(...)` on one arm of a
    configuration test, `nn.CrossEntropyLoss()` on another): which pairs up depends on the
    run, so the finding is only as likely as that configuration."""
    cls = ctx.class_scope
    if cls is None or not cls.varied:
        return False
    for expr in (loss.call.func, loss.input):
        node: cst.BaseExpression | None = expr
        for _ in range(6):
            if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
                if node.value.value == "self":
                    if node.attr.value in cls.varied:
                        return True
                    break
            if isinstance(node, cst.Name):
                binding = ctx.lookup(node.value)
                node = binding.value if binding is not None else None
            elif isinstance(node, cst.Subscript):
                node = node.value
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                node = node.func.value  # `self.score.view(-1)`
            else:
                break
    return False
