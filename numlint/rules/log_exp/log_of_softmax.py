"""NUM101 log-of-softmax."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.context import Context
from numlint.analysis.evidence import gathered_where_drawn, picked_where_drawn
from numlint.analysis.gradients import gradient_flows
from numlint.analysis.ops import names, op
from numlint.analysis.semantics import (
    Activation,
    activation,
    format_args,
    log_argument,
    same_bindings,
)
from numlint.analysis.summaries import origin_of, related
from numlint.analysis.tables import TRANSPARENT_METHODS
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.tree import descendants

_LOG_SOFTMAX = {
    "torch.softmax": "torch.log_softmax",
    "torch.Tensor.softmax": "torch.Tensor.log_softmax",
    "torch.nn.functional.softmax": "torch.nn.functional.log_softmax",
    "torch.special.softmax": "torch.special.log_softmax",
}


class LogOfSoftmax(Rule):
    """Log of a softmax: underflows to -inf and gives NaN gradients; use `log_softmax`.

    What it does:
    Flags a natural log taken of a softmax output: `torch.log(torch.softmax(x, d))`,
    `F.softmax(x, dim=d).log()`, `x.softmax(d).log()`, an `nn.Softmax` module stored on
    `self`, and a softmax result that reaches the log through a variable of the same function;
    also the `.probs` of a distribution made from logits (`Categorical(logits=s).probs`,
    `OneHotCategorical`, `Multinomial`; here or returned by a model of the project), whose
    `.logits` already holds the normalised log-probabilities.

    Why is this bad?
    A softmax probability underflows to exactly 0 once its logit trails the largest by more
    than 103.97 (float32), 17.34 (float16) or 92.75 (bfloat16); its log is then -inf, and the
    gradient is already NaN from a gap of 88.72 in float32 (11.09 in float16) while the
    forward value still looks finite. `log_softmax` computes `x - logsumexp(x)` directly and
    stays finite for any finite logits.

    Fix safety:
    The fix rewrites `log(softmax(x, d))` into `log_softmax(x, d)`, keeping `dim` and `dtype`.
    It is unsafe: the results differ in the last bits (they are more accurate). When the
    softmax reaches the log through a variable, the fix is offered only if the softmax's
    inputs were not reassigned in between.

    Confidence:
    high, except a log of probabilities picked at indices drawn from them (`p.gather(-1,
    tok)` with `tok` from `torch.multinomial(p, 1)`, `logits.argmax(-1)` or a sampler given
    `p`, on every arm): a drawn entry is above 0, so only the accuracy is at stake (low).
    Also low where no gradient flows and the whole log is gathered at once at a drawn index
    (`torch.gather(p.log(), 1, tok)` under `no_grad`, `tok` also from an inverse-CDF draw
    `(p.cumsum(1) < u).sum(1)`): the -inf entries are never picked. With a gradient the
    same code gives NaN (0 times the infinite derivative of log at 0) and stays high.

    Known limitations:
    Follows values within one function (and `self.` modules set in the same class); a softmax
    computed in another function or file is not seen. A log of a slice or gather of the
    probabilities is flagged without a fix.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.log_softmax.html
    - [numlint hazard catalog, row 1](https://github.com/numlint/numlint/blob/main/docs/hazards.md#1)
    """

    CODE = "NUM101"
    NAME = "log-of-softmax"
    MESSAGE = (
        "log of softmax: probabilities underflow to 0, giving -inf and NaN gradients; "
        "use `log_softmax` (or `F.cross_entropy` on the logits)"
    )
    TRIGGERS = ("softmax", "Softmax", "log(")

    VALID = [
        Valid(
            """
            import torch
            from torch.distributions import Categorical
            def log_weights(p):
                return torch.log(Categorical(probs=p).probs)
            """,
            "a distribution made from the caller's probabilities: no softmax here",
        ),
        Valid(
            """
            from torch.distributions import Categorical
            def log_probs(logits):
                return Categorical(logits=logits).logits
            """,
            "the distribution's normalised log-probabilities",
        ),
        Valid(
            """
            import torch.nn.functional as F
            y = F.log_softmax(x, dim=-1)
            """,
            "the stable API",
        ),
        Valid(
            """
            import math
            y = math.log(0.5)
            """,
            "`math.log` is not a tensor log",
        ),
        Valid(
            """
            import torch
            p = torch.softmax(x, dim=-1).clamp(min=1e-6)
            y = torch.log(p)
            """,
            "the probabilities are clamped away from 0 before the log",
        ),
        Valid(
            """
            import torch
            p = torch.softmax(x, dim=-1)
            p = p.clamp_min(1e-6)
            y = p.log()
            """,
            "a guard in an earlier statement",
        ),
        Valid(
            """
            import torch
            y = torch.log(torch.softmax(x, dim=-1) + 1e-6)
            """,
            "an eps inside the log",
        ),
        Valid(
            """
            import torch
            def f(x, p):
                s = torch.softmax(x, -1)
                return torch.log(p)
            """,
            "a different variable",
        ),
        Valid(
            """
            import torch
            p = torch.softmax(x, -1)
            p = p * mask + 0.5
            y = torch.log(p)
            """,
            "reassigned to something else before the log",
        ),
        Valid(
            """
            class Model:
                def training_step(self, batch):
                    probs = self.softmax(batch)
                    self.log("loss", probs)
            """,
            "`self.log(...)` is a logging call, not a tensor log",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            y = torch.log(torch.softmax(x, dim=-1))
            """,
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.log_softmax(x, dim=-1)
            """,
        ),
        Invalid(
            """
            import torch.nn.functional as F
            y = F.softmax(logits, dim=1, dtype=torch.float32).log()
            """,
            line=2,
            column=5,
            fixed="""
            import torch.nn.functional as F
            y = F.log_softmax(logits, dim=1, dtype=torch.float32)
            """,
            note="method form; dim and dtype are kept",
        ),
        Invalid(
            """
            import torch as th
            y = x.softmax(-1).log()
            """,
            line=2,
            column=5,
            fixed="""
            import torch as th
            y = x.log_softmax(-1)
            """,
        ),
        Invalid(
            """
            import torch as th
            import torch.nn.functional as F
            y = th.log(F.softmax(z, dim=-1))
            """,
            line=3,
            column=5,
            fixed="""
            import torch as th
            import torch.nn.functional as F
            y = F.log_softmax(z, dim=-1)
            """,
        ),
        Invalid(
            """
            from torch.nn.functional import softmax as sm
            from torch import log
            y = log(sm(z, -1))
            """,
            line=3,
            column=5,
            note="imported names; no fix, since no import reaches `log_softmax`",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def loss(z, y):
                p = F.softmax(z, dim=-1)
                return -(y * torch.log(p)).sum(-1)
            """,
            line=5,
            column=18,
            fixed="""
            import torch
            import torch.nn.functional as F
            def loss(z, y):
                p = F.softmax(z, dim=-1)
                return -(y * F.log_softmax(z, dim=-1)).sum(-1)
            """,
            note="through a variable",
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, x):
                    return torch.log(self.softmax(x))
            """,
            line=8,
            column=16,
            fixed="""
            import torch
            from torch import nn
            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, x):
                    return nn.functional.log_softmax(x, dim=-1)
            """,
            note="an nn.Softmax stored on self",
        ),
        Invalid(
            """
            import torch
            def nll(z, idx):
                probs = torch.softmax(z, -1)
                return -torch.log(probs.gather(1, idx))
            """,
            line=4,
            column=13,
            note="through gather: flagged, no fix",
        ),
        Invalid(
            """
            import torch
            def f(z):
                p = torch.softmax(z, -1)
                z = z * 2
                return torch.log(p)
            """,
            line=5,
            column=12,
            note="the softmax input was reassigned: flagged, no fix",
        ),
        Invalid(
            """
            import torch
            from torch.distributions import Categorical
            def policy_entropy(logits):
                pi = Categorical(logits=logits)
                return -(pi.probs * torch.log(pi.probs)).sum(-1)
            """,
            line=5,
            column=25,
            confidence="high",
            note="a distribution's `.probs` is the softmax of its logits; `.logits` is its log",
        ),
    ]
    INVALID += [
        Invalid(
            """
            import torch
            def step(logits, use_sampling):
                probs = torch.softmax(logits, -1)
                if use_sampling:
                    tok = torch.multinomial(probs, 1)
                else:
                    tok = logits.argmax(-1, keepdim=True)
                return -torch.log(probs.gather(-1, tok))
            """,
            line=8,
            column=13,
            confidence="low",
            note="entries drawn from the probabilities on every arm: above 0",
        ),
        Invalid(
            """
            import torch
            def step(logits, tok, use_sampling):
                probs = torch.softmax(logits, -1)
                if use_sampling:
                    tok = torch.multinomial(probs, 1)
                return -torch.log(probs.gather(-1, tok))
            """,
            line=6,
            column=13,
            note="an index drawn on one arm only: the other arm's tokens come from the caller",
        ),
        Invalid(
            """
            import torch
            def step(logits, other):
                probs = torch.softmax(logits, -1)
                tok = torch.multinomial(other, 1)
                return torch.log(probs[torch.arange(4), tok])
            """,
            line=5,
            column=12,
            note="drawn from another distribution",
        ),
        Invalid(
            """
            import torch
            def draw(model, x):
                with torch.no_grad():
                    p = model(x).softmax(1)
                    tok = (p.cumsum(1) < torch.rand(p.shape[0], 1)).sum(1, keepdim=True)
                    return tok, torch.gather(p.log(), 1, tok)
            """,
            line=6,
            column=34,
            confidence="low",
            note="an inverse-CDF draw, gathered where no gradient flows",
        ),
        Invalid(
            """
            import torch
            def policy_loss(model, x):
                p = model(x).softmax(1)
                tok = (p.cumsum(1) < torch.rand(p.shape[0], 1)).sum(1, keepdim=True)
                return -torch.gather(p.log(), 1, tok).mean()
            """,
            line=5,
            column=26,
            note="with a gradient: the unpicked zeros give 0 * inf = NaN",
        ),
    ]
    PROBE = Probe(
        hazard="torch.log(torch.softmax(x, -1))",
        fix="torch.log_softmax(x, -1)",
        inputs={"x": ("@softmax-gap-gradient [[0.0, {}]]", "@softmax-gap [[0.0, {}]]")},
    )

    def visit_Call(self, node: cst.Call) -> None:
        arg = log_argument(self.ctx, node)
        if arg is None:
            return
        act = activation(self.ctx, self.ctx.value(arg), ("softmax",))
        if act is None:
            found = origin_of(self.ctx, arg, ("softmax",))
            if found is not None:
                hint = (
                    _PROBS
                    if isinstance(arg, cst.Attribute) and arg.attr.value == "probs"
                    else _CROSSED
                )
                message = f"log of softmax ({found.what}): {hint}"
                self.report(node, message, related=related(found))
            return
        if act.indirect and picked_where_drawn(self.ctx, arg, _sources(self.ctx, arg, act)):
            self.report(node, _DRAWN, confidence="low")
            return
        if (
            not act.indirect
            and gathered_where_drawn(self.ctx, node, _sources(self.ctx, arg, act))
            and not gradient_flows(self.ctx, arg)
        ):  # `gather(p.log(), 1, tok)` under no_grad: the -inf entries are not picked
            self.report(node, _DRAWN, confidence="low")
            return
        if act.spelling == "distribution":  # `torch.log(Categorical(logits=s).probs)`
            self.report(node, f"log of softmax (a distribution's `.probs`): {_PROBS}")
            return
        self.report(node, fix=self._fix(node, act))

    def _fix(self, node: cst.Call, act: Activation) -> FixSpec | None:
        if act.indirect:
            return None
        if act.through_variable and not same_bindings(self.ctx, act.call, act.env):
            return None
        ctx = self.ctx
        if act.through_variable and _runs_other_code(ctx, act.input, act.env):
            return None  # `p = model(x).softmax(1)`: moving it would run the model again
        if act.spelling == "method":
            receiver = ctx.code(act.input)
            args = ", ".join(format_args(ctx, act.args))
            code = f"{receiver}.log_softmax({args})"
        else:
            args = [
                ctx.code(act.input),
                *format_args(ctx, act.args, ("dim",) if act.spelling == "module" else ()),
            ]
            if act.spelling == "module":
                func = ctx.spell("torch.nn.functional.log_softmax")
            elif isinstance(act.call.func, cst.Attribute):
                func = f"{ctx.code(act.call.func.value)}.log_softmax"
            else:
                func = ctx.spell(_LOG_SOFTMAX[act.func_qualname or "torch.softmax"])
            if func is None:
                return None
            code = f"{func}({', '.join(args)})"
        return self.fix("unsafe", "Replace with `log_softmax`", (node, code))


def _runs_other_code(ctx: Context, expr: cst.BaseExpression, env) -> bool:
    """`expr` calls something besides torch operations (a model, a helper)."""
    for call in descendants(expr, every=True):
        if not isinstance(call, cst.Call):
            continue
        callee = ctx.callee(call, env)
        if op(ctx, call, env) is not None or callee.method in TRANSPARENT_METHODS:
            continue
        if not (callee.qualname or "").startswith("torch."):
            return True
    return False


def _sources(ctx: Context, arg: cst.BaseExpression, act: Activation) -> set[str]:
    """The names a draw from these probabilities would read: the probabilities' variables
    and the softmax's inputs."""
    return names(act.call) | names(arg) | names(ctx.deref(ctx.value(arg)).node)


_DRAWN = (
    "log of softmax at entries drawn from it: a drawn entry has a probability above 0, so "
    "this is finite; `log_softmax(...).gather(...)` is still the more accurate form"
)
_PROBS = (
    "probabilities underflow to 0, giving -inf and NaN gradients; use the distribution's "
    "`.logits` (normalised log-probabilities) or `log_prob` instead"
)
_CROSSED = (
    "probabilities underflow to 0, giving -inf and NaN gradients; return log-probabilities "
    "(`log_softmax`) from there, or pass the logits to `F.cross_entropy`"
)
