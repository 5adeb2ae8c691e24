"""NUM103 log-of-zero."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.arrays import not_a_tensor
from numlint.analysis.context import Value
from numlint.analysis.evidence import grade, mask_like, root_of, tallied_share
from numlint.analysis.gradients import (
    compared_here,
    gradient_flows,
    only_ranked,
    only_thresholds,
    rounded_here,
    trained,
)
from numlint.analysis.guards import (
    assigned_here,
    beside_minus_inf,
    edge_tested,
    replaced_by_where,
    sanitised_later,
    selection,
    writes_minus_inf,
)
from numlint.analysis.ops import const, is_zero, op, plus_one, same_code, same_value
from numlint.analysis.semantics import activation, is_one, positional, strip
from numlint.analysis.summaries import bounded_by_callers, related
from numlint.analysis.zeros import (
    MASKED_SUM,
    bounded_probability,
    complemented_probability,
    made_elsewhere,
    positive_value,
    subtraction,
    zero_reason,
)
from numlint.rule import Invalid, Probe, Rule, Valid
from numlint.rules.loss._losses import NLL, loss_call
from numlint.tree import call_name, descendants

_LOGS = ("log", "log2", "log10")


class LogOfZero(Rule):
    """Log of a value that can be exactly 0: -inf and infinite gradients; guard or use log space.

    What it does:
    Flags `torch.log`, `torch.log2`, `torch.log10` and the `.log()` / `.log2()` / `.log10()`
    methods applied to a value that can be exactly 0: `1 - p` of a softmax output or a 0/1
    mask, a ReLU output, a softplus output (0 below an input of -104), the exp of a
    log-probability (`exp(dist.log_prob(w))`, a log_softmax output's exp: out of log space
    and back, 0 below -103), a sum over the entries a mask the code computes keeps
    (`log((exp(s) * pos).sum(1) / exp(s).sum(1))`, a contrastive loss with several positives:
    graded by the mask, high where a label mask's diagonal is cleared, so that a class seen
    once keeps nothing; not reported for a mask the function is given or one that keeps an
    entry in every row), a `torch.rand` draw,
    a value clamped at 0, a normalised ratio (`x / x.sum(-1, keepdim=True)`), a product with
    any of these, or a `torch.where` with a 0 branch; also when the value reaches the log through a variable of the same function,
    and a ReLU output, a value clamped at 0 or a softplus output that another function
    makes: what every caller passes for a parameter (`nll(mu, F.relu(v), y)`, then `torch.log(var)`), or what a
    function, method or model of the project returns. `log1p(-p)` is `log(1 - p)`, and the
    exp of a log-probability (a log_softmax or logsigmoid output or entries of one, also one
    a caller passes) is a probability: `torch.log1p(-logp.exp())` and `torch.log(1 -
    torch.exp(logp))` are -inf where the model is sure. Also the log of a 0/1 mask added to scores that a softmax normalises (`log_softmax(
    vector + mask.log())`): masking by -inf, which a fully masked row turns into NaN.
    The natural log of a softmax or sigmoid output itself is NUM101 / NUM102; a log
    multiplied by its own argument (`p * torch.log(p)`) is NUM109. Also an inverse tanh
    written by hand, `log((1 + x) / (1 - x))` (either way up), `log(1 + x) - log(1 - x)` or
    `log1p(x) - log1p(-x)`, where x is not clamped and the function does not test it (or its
    min, max or abs) against +-1. And `log(1 - exp(x))`, `log1p(-exp(x))` or `log(-expm1(x))`
    of an x of no known kind that is not clamped: the idiom says x <= 0, a log-probability.

    Why is this bad?
    `log(0)` is -inf and its gradient is inf; one such element turns the loss into -inf or
    NaN and poisons every parameter on the next step. `torch.rand` returns exact zeros (268
    per million draws in float16), a ReLU output is 0 for half its inputs, and probabilities
    underflow to 0.

    A sum of two terms picked by complementary tests (`a * (x <= y).float() + b * (x > y)
    .float()`, a selection by hand) is 0 only where the term it picks is.

    Known limitations:
    Values are followed within one function. A real guard stops the rule: an eps inside the
    log (`torch.log(p + eps)`), `clamp(min=eps)` / `clamp_min(eps)`, `torch.maximum(p, eps)`,
    `torch.where(p > 0, p, 1)`, or an in-place `p[p < eps] = eps` earlier in the function
    (a write selected by a test of the value or of what it is made of: `d[counts == 0] = 1`
    guards `d = counts.float()`, `ns[labels == k] = 1` leaves the other entries' zeros);
    whether the eps survives half precision is NUM4xx's concern. A plain division `a / b` is
    only treated as able to reach 0 when its numerator can, or when it is a normalisation by
    a sum or norm.

    Confidence:
    high for a ReLU output, a value clamped or filled with 0, a `torch.rand` draw, `1 - p` of
    a sigmoid or softmax, probabilities that underflow, and a range from 0
    (`torch.arange(n)`, `torch.linspace(0, 1, n)`); medium for a softplus output in code
    autograd differentiates (a learned scale: `std = F.softplus(h)`, then `std.log()`; softplus
    is exactly 0 below an input of -104 in float32, -17.3 in float16, where a sigmoid is, and
    training that shrinks the scale drives it there), low elsewhere; graded the same way for
    the exp of a log-probability (a scale-mixture prior `log(pi * exp(lp1) + (1 - pi) *
    exp(lp2))`: a weight far in the tail makes every exp 0; `torch.logsumexp` stays in log
    space); medium for `1 - tanh(x)
    ** 2` (a flow's log-determinant: tanh is exactly +-1 from |x| = 9.01 in float32; also a squared cosine or
    sine); medium for the target of a loss module (the second parameter of its `forward`,
    torch's `forward(input, target)`, without a default: a one-hot label, a sparse prior or a
    magnitude with empty bins holds exact zeros), and for its input when the loss takes the
    log of its target too (`torch.log(x_mag)`, `torch.log(y_mag)`: the same kind of
    quantity); medium for `1 - exp(-x)` where x can be 0
    (a NeRF opacity `1 - exp(-relu(sigma) * delta)`, 0 in empty space, also computed by a
    local lambda such as `raw2alpha = lambda raw, dists, act_fn=F.relu: ...`, whose
    arguments and defaults are followed); medium for a share of tallies
    (`counts / counts.sum()`: a histogram, frequencies, probabilities, or what callers pass
    under such a name), whose empty bins are everyday zeros; low for the share of any other
    quantity (a composition, a volume: 0 only where the data holds a 0), for the log of a
    0/1 indicator the function is given (usually a deliberate log-density; the log of a
    comparison it computes, `(x == v).float().log()`, is one by design and not reported),
    a ratio of norms in dB (SI-SNR, SQNR), the log of a mask the function is given added to
    scores that a softmax normalises (NaN only for a row with every entry masked, which the
    caller's masks rarely hold; medium where a log_softmax normalises them, whose result
    keeps every masked entry at -inf, NaN under any 0 weight),
    and a `torch.rand` draw in a constructor or parameter initialiser (a few numbers drawn
    once) or inside Gumbel or logistic noise (`-log(-log(u))`: a -inf noise only drops a
    class from the argmax or softmax it feeds; high again where the noise, assigned to a
    name, leaves the function added to scores, `return torch.log(p) + noise`, whose -inf
    reaches the caller's values), and a normalised distribution whose zeros a mask wrote (`p[~mask] = 0` before
    `p / p.sum(-1)`: its -inf logits are the masking), a module's own setting clamped into
    its range (`self.alpha.clamp(0, 1)`, a decay rate: 0 only if training drives it there),
    or a normalised ratio where no gradient flows in a class (or function) that writes -inf
    values itself (an HMM's log-space tables, where -inf is probability 0; a
    `best = float("-inf")` search start does not count), and a log only compared against
    where a gradient may flow (`u.log() < log_alpha`: -inf only passes or fails a test).

    An inverse tanh written by hand: medium where a gradient flows or in code that trains (x
    is usually a tanh output, an action of a squashed policy or a flow's activation: float32
    tanh is exactly +-1 from |u| = 9.01), low elsewhere. So is `log(1 - exp(x))` of a
    log-probability of no known kind (exp(x) rounds to 1 in float32 once x is within 3e-8 of
    0: a sure model's log_softmax entry, 0 where it leads the others by 17); `1 - exp(-d)`
    of a distance or rate d is read only where d is a ReLU output (above).

    A hand-written binary cross-entropy or focal loss on a probability the code is given
    (`y * log(p) + (1 - y) * log(1 - p)`, `log(where(y == 1, p, 1 - p))`, `p * y + (1 - p) *
    (1 - y)`): the code itself treats p as a probability, which saturates to exactly 0 or 1;
    medium where a gradient flows or training minimises it, low elsewhere. A probability
    clamped into [eps, 1 - eps] or with an eps inside each log is guarded; a logit
    `log(p) - log(1 - p)` (no label weighting it) is not reported.

    The log of probabilities that an NLL loss reads (`F.nll_loss(torch.log(p), y)`, a name
    holding `p.log()` passed to an `nn.NLLLoss`, or a log taken under `isinstance(criterion,
    nn.NLLLoss)`): the loss expects log-probabilities, so p is one, and a softmax underflows
    to exactly 0; graded as the hand-written cross-entropy above. So is a categorical
    cross-entropy written by hand on a probability the code is given (`-(t * log(p)).sum()`,
    `-torch.sum(torch.log(p) * t, 1).mean()`: a log in a negated, reduced product with a
    target); a log weighted by a number or by coefficients the code builds (`-0.5 *
    log(var).sum()`, `arange(n) * log(diag(L))`) is a log-density, not one.

    A log of any value whose -inf the next statements replace (`d = log(x)`, then
    `d = torch.nan_to_num(d, posinf=0.0)`, `d[torch.isinf(d)] = 0`): the author expects
    log(0), and the replacement repairs the value but not the gradient, which is 1/0 times
    the 0 the replacement passes back, NaN. Medium in code that trains (a module's forward, a
    loss, or a helper only those call) where a gradient flows, low elsewhere; not reported
    where no gradient flows. A value that can be 0 for a reason above keeps that reason's
    grade in code that trains where a gradient flows; elsewhere the replacement makes it low.
    Nor is a log reported whose result is only ranked or compared where no gradient flows
    (`keys = torch.rand(n).log() / w`, then `keys.topk(k).indices`; `u = torch.log(
    torch.rand(n))`, then `keep = w > u.cpu().numpy() * m`): -inf sorts last or fails a
    test, by design.

    References:
    - https://pytorch.org/docs/stable/generated/torch.log.html
    - [numlint hazard catalog, row 3, 27](https://github.com/numlint/numlint/blob/main/docs/hazards.md#3)
    - [numlint hazard catalog, row 34](https://github.com/numlint/numlint/blob/main/docs/hazards.md#34)
    - [numlint hazard catalog, row 2](https://github.com/numlint/numlint/blob/main/docs/hazards.md#2)
    """

    CODE = "NUM103"
    NAME = "log-of-zero"
    MESSAGE = (
        "log of a value that can be exactly 0: gives -inf and infinite gradients; clamp it "
        "first (`p.clamp_min(torch.finfo(p.dtype).tiny)`) or compute the log in log space"
    )
    TRIGGERS = ("log(", "log2(", "log10(", "log1p(", "log_(", "log2_(", "log10_(", "log1p_(")

    VALID = [
        Valid(
            """
            import torch
            def expected_mutual_info(a, n):
                nijs = torch.arange(0, n)
                nijs[0] = 1
                return torch.log(nijs) + a
            """,
            "the one entry of the range that is 0 is overwritten",
        ),
        Valid(
            """
            import torch
            def kl_target(S):
                P = S**2 / S.sum(dim=1, keepdim=True).clamp_min(1e-12)
                denom = P.sum(dim=2, keepdim=True)
                denom[S.sum(dim=2, keepdim=True) == 0.0] = 1.0
                return torch.log(denom)
            """,
            "the rows whose sum is 0 are selected by a test of what the denominator is made of",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class GaussianActor(nn.Module):
                def __init__(self, d, a):
                    super().__init__()
                    self.scale = nn.Linear(d, a)
                def forward(self, h):
                    std = F.softplus(self.scale(h)) + 1e-5
                    return std, std.log(), torch.log1p(F.softplus(h))
            """,
            "the eps is added after the softplus; log1p of a softplus is >= 0",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def unlikelihood(logits, y):
                logp = F.log_softmax(logits, -1).gather(-1, y[:, None])
                return -torch.log1p(-logp.exp().clamp(max=1 - 1e-6)).mean()
            """,
            "the probability clamped below 1",
        ),
        Valid(
            """
            import torch
            def masked_log_softmax(vector, mask):
                vector = vector + (mask + 1e-45).log()
                return torch.nn.functional.log_softmax(vector, dim=1)
            """,
            "a tiny eps inside the log: a fully masked row stays finite",
        ),
        Valid(
            """
            import torch
            def masked_scores(vector, mask):
                return vector + mask.log()
            """,
            "no softmax normalises the masked scores",
        ),
        Valid(
            """
            import torch
            def spline(a, b, x, y, w):
                d = (a.exp() * (x <= y).float() + b.exp() * (x > y).float()) * w.exp()
                return torch.log(d)
            """,
            "complementary tests pick one positive term per entry",
        ),
        Valid(
            """
            import torch
            def delta_log_prob(x, v):
                return (x == v).type(x.dtype).log()
            """,
            "the log of a comparison: a log-density of 0 or -inf by design",
        ),
        Valid(
            """
            import torch
            def bce(p, y, eps=1e-7):
                p = p.clamp(eps, 1 - eps)
                return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
            """,
            "a probability clamped into [eps, 1 - eps]",
        ),
        Valid(
            """
            import torch
            def bce(p, y):
                return -(y * torch.log(p + 1e-6) + (1 - y) * torch.log(1 - p + 1e-6)).mean()
            """,
            "an eps inside each log",
        ),
        Valid(
            """
            import torch
            def logit(p):
                return torch.log(p) - torch.log(1 - p)
            """,
            "a logit of a probability, not a cross-entropy (callers choose p)",
        ),
        Valid(
            """
            import torch
            y = torch.log(torch.relu(x) + 1e-6)
            """,
            "an eps inside the log",
        ),
        Valid(
            """
            import math
            y = math.log(1 - p)
            """,
            "`math.log`",
        ),
        Valid(
            """
            import torch
            u = torch.rand(8).clamp(min=1e-6, max=1 - 1e-6)
            g = -torch.log(-torch.log(u))
            """,
            "uniform draws clamped away from 0 (and 1)",
        ),
        Valid(
            """
            import torch
            def f(x):
                h = torch.relu(x)
                h = torch.maximum(h, torch.tensor(1e-6))
                return h.log()
            """,
            "a guard in an earlier statement",
        ),
        Valid(
            """
            import torch
            def f(x):
                p = torch.rand(4)
                p[p < 1e-6] = 1e-6
                return torch.log(p)
            """,
            "an in-place guard",
        ),
        Valid(
            """
            import torch
            y = torch.log(1 - torch.rand(8))
            """,
            "`torch.rand` is in [0, 1): 1 - u never reaches 0",
        ),
        Valid(
            """
            import torch
            y = torch.log(torch.softmax(z, -1))
            """,
            "NUM101 reports this one",
        ),
        Valid(
            """
            import torch
            def f(x, y):
                return torch.log(x / y)
            """,
            "a ratio of unknown values: not assumed to reach 0",
        ),
        Valid(
            """
            import torch
            def f(x):
                h = torch.relu(x)
                return torch.log(torch.where(h > 0, h, 1.0))
            """,
            "sanitised with torch.where before the log",
        ),
        Valid(
            """
            import torch
            y = torch.log(torch.clamp(x, min=0) + 1)
            """,
            "clamped at 0, then shifted by 1",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def nll(probs, y):
                return F.nll_loss(torch.log(probs.clamp_min(1e-8)), y)
            """,
            "probabilities clamped before the log an NLL loss reads",
        ),
        Valid(
            """
            import torch
            from torch import nn
            def nll(probs, y):
                crit = nn.NLLLoss()
                return crit(torch.log(probs + 1e-8), y)
            """,
            "an eps inside the log",
        ),
        Valid(
            """
            import torch
            def ce(p, t):
                return -(t * torch.log(p.clamp_min(1e-12))).sum(1).mean()
            """,
            "a hand-written cross-entropy on probabilities clamped off 0",
        ),
        Valid(
            """
            import torch
            def log_det(L):
                order = torch.arange(L.shape[-1], 0, -1, dtype=L.dtype)
                return -(order * torch.diagonal(L, dim1=-2, dim2=-1).log()).sum(-1)
            """,
            "a log weighted by fixed coefficients (a log-determinant), not by a target",
        ),
        Valid(
            """
            import torch
            def gaussian_nll(var):
                return -0.5 * torch.log(var).sum()
            """,
            "a log scaled by a number: a log-density, not a cross-entropy",
        ),
        Valid(
            """
            import torch
            def count_ce(t, y, eps=1e-7):
                y = y + eps
                return -(t * torch.log(y / y.sum(-1, keepdim=True))).sum(-1)
            """,
            "a share whose numerator is kept above 0 is never 0",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            @torch.no_grad()
            def distance(boundary, kernel):
                d = torch.log(F.conv2d(boundary, kernel))
                d = torch.nan_to_num(d, posinf=0.0, neginf=0.0)
                return d
            """,
            "a log whose -inf is replaced where no gradient flows: the value is all there is",
        ),
        Valid(
            """
            import torch
            @torch.no_grad()
            def sample_edges(prob, k):
                keys = torch.rand(prob.shape).log() / prob
                return keys.topk(k, dim=-1).indices
            """,
            "sampling keys only ranked where no gradient flows: a -inf key sorts last",
        ),
        Valid(
            """
            import torch
            def inverse(y):
                if torch.min(y) <= -1 or torch.max(y) >= 1:
                    raise ValueError("outside the domain")
                return 0.5 * torch.log((1 + y) / (1 - y))
            """,
            "an inverse tanh whose input the function tests against +-1 first",
        ),
        Valid(
            """
            import torch
            def atanh(y, eps=1e-6):
                y = y.clamp(-1 + eps, 1 - eps)
                return 0.5 * (torch.log1p(y) - torch.log1p(-y))
            """,
            "an inverse tanh of a clamped input",
        ),
        Valid(
            """
            import torch
            def log1mexp(logp):
                logp = logp.clamp_max(-torch.finfo(logp.dtype).eps)
                return torch.log1p(-torch.exp(logp))
            """,
            "`log(1 - exp(x))` of an x kept below 0",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def non_target_kd(logits, label, target_logits):
                s = F.softmax(logits, dim=1)
                s_t = torch.gather(s, 1, label)
                t = F.softmax(target_logits, dim=1)
                t_t = torch.gather(t, 1, label)
                ns = s / (1 - s_t)
                ns[t == t_t] = 1
                return torch.log(ns).sum()
            """,
            line=10,
            column=12,
            note="the write picks entries by a test of another tensor: the others keep their zeros",
        ),
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F
            class GaussianActor(nn.Module):
                def __init__(self, d, a):
                    super().__init__()
                    self.mean = nn.Linear(d, a)
                    self.scale = nn.Linear(d, a)
                def forward(self, h):
                    std = F.softplus(self.scale(h) + 1e-5)
                    return self.mean(h), std, std.log()
            """,
            line=10,
            column=35,
            confidence="medium",
            note="a learned scale through softplus: 0 once training drives its input below -104",
        ),
        Invalid(
            """
            import torch
            class TanhNormal(torch.distributions.Distribution):
                def log_prob(self, value):
                    pre_tanh = torch.log((1 + value) / (1 - value)) / 2
                    return self.normal.log_prob(pre_tanh)
            """,
            line=4,
            column=20,
            confidence="medium",
            note="an inverse tanh by hand: a squashed action is exactly +-1 once tanh saturates",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def odds_ratio_loss(chosen_logps, rejected_logps):
                log_odds = (chosen_logps - rejected_logps) - (
                    torch.log1p(-torch.exp(chosen_logps)) - torch.log1p(-torch.exp(rejected_logps))
                )
                return -F.logsigmoid(log_odds).mean()
            """,
            line=5,
            column=9,
            also=((5, 49),),
            confidence="medium",
            note="log(1 - exp(x)) of a log-probability, 0 where the model is sure",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def unlikelihood(logits, y):
                logp = F.log_softmax(logits, -1).gather(-1, y[:, None])
                return -torch.log1p(-logp.exp()).mean()
            """,
            line=5,
            column=13,
            confidence="high",
            note="the exp of a log-probability is 1 where the model is sure: log1p(-1) = -inf",
        ),
        Invalid(
            """
            import torch
            def masked_log_softmax(vector, mask):
                vector = vector + mask.log()
                return torch.nn.functional.log_softmax(vector, dim=1)
            """,
            confidence="medium",
            line=3,
            column=23,
            note="a mask turned into -inf log-probabilities, which the function returns",
        ),
        Invalid(
            """
            import torch
            def masked_attention(scores, mask):
                return torch.softmax(scores + torch.log(mask), dim=-1)
            """,
            confidence="low",
            line=3,
            column=35,
            note="a softmax makes masked entries 0: only a fully masked row gives NaN",
        ),
        Invalid(
            """
            import torch
            y = torch.log(torch.relu(x))
            """,
            line=2,
            column=5,
        ),
        Invalid(
            """
            import torch
            gumbel = -torch.log(-torch.log(torch.rand(16)))
            """,
            line=2,
            column=22,
            confidence="low",
            note="Gumbel noise: `torch.rand` returns exact zeros, but a -inf noise only drops a "
            "class from the argmax or softmax it feeds",
        ),
        Invalid(
            """
            import torch
            def exponential(rate, n):
                return -torch.log(torch.rand(n)) / rate
            """,
            line=3,
            column=13,
            note="an exponential draw: `torch.rand` returns exact zeros, giving inf",
        ),
        Invalid(
            """
            import torch.nn.functional as F
            def nll(z):
                p = F.softmax(z, dim=-1)
                return -(1 - p).log()
            """,
            line=4,
            column=13,
            note="`1 - p` of a softmax output, method form",
        ),
        Invalid(
            """
            import torch
            def f(x):
                h = x.clamp(min=0)
                return torch.log2(h)
            """,
            line=4,
            column=12,
            note="`clamp(min=0)` is not a guard for a log",
        ),
        Invalid(
            """
            import torch
            def f(counts):
                p = counts / counts.sum(-1, keepdim=True)
                return torch.log10(p)
            """,
            confidence="medium",
            line=4,
            column=12,
            note="a normalised ratio",
        ),
        Invalid(
            """
            import torch
            y = torch.log(torch.sigmoid(a) * torch.sigmoid(b))
            """,
            line=2,
            column=5,
            note="a product of probabilities",
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = nn.ReLU()
                def forward(self, x):
                    return self.act(x).log()
            """,
            line=8,
            column=16,
            note="an nn.ReLU module",
        ),
        Invalid(
            """
            import torch
            def f(p, mask):
                q = p.softmax(-1) * (mask > 0).float()
                return torch.log(q)
            """,
            line=4,
            column=12,
            note="masked probabilities",
        ),
        Invalid(
            """
            import torch
            def pick(a, b, x, y):
                d = torch.relu(a) * (x <= y).float() + b.exp() * (x > y).float()
                return torch.log(d)
            """,
            line=4,
            column=12,
            note="a selection by complementary tests that can pick a ReLU output",
        ),
        Invalid(
            """
            import torch
            def bce(p, y):
                return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
            """,
            line=3,
            column=18,
            confidence="medium",
            also=((3, 43),),
            note="a hand-written binary cross-entropy on a probability the caller passes",
        ),
        Invalid(
            """
            import torch
            def focal(x, target, gamma=2.0):
                p_t = torch.where(target == 1, x, 1 - x)
                return (-((1 - p_t) ** gamma) * torch.log(p_t)).mean()
            """,
            line=4,
            column=37,
            confidence="medium",
            note="a focal loss on the probability of the true class",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def nll(probs, y):
                logp = probs.log()
                return F.nll_loss(logp, y)
            """,
            line=4,
            column=12,
            confidence="medium",
            note="probabilities whose log an NLL loss reads",
        ),
        Invalid(
            """
            import torch
            class Classifier:
                def get_loss(self, y_pred, y_true):
                    if isinstance(self.criterion, torch.nn.NLLLoss):
                        y_pred = torch.log(y_pred)
                    return self.loss(y_pred, y_true)
            """,
            line=5,
            column=22,
            confidence="medium",
            note="a log taken because the loss is an NLL loss",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn
            class Distance(nn.Module):
                def forward(self, boundary, kernel):
                    d = -torch.log(F.conv2d(boundary, kernel))
                    d = torch.nan_to_num(d, posinf=0.0)
                    return d
            """,
            line=6,
            column=14,
            confidence="medium",
            note="a log whose -inf the code replaces: its gradient there stays NaN",
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class Head(nn.Module):
                def forward(self, x):
                    y = torch.log(torch.relu(x))
                    y = torch.nan_to_num(y, neginf=0.0)
                    return y
            """,
            line=5,
            column=13,
            confidence="high",
            note="a ReLU output's log repaired afterwards: the gradient is still NaN",
        ),
        Invalid(
            """
            import torch
            def ce(p, onehot):
                return -(onehot * torch.log(p)).sum(dim=1).mean()
            """,
            line=3,
            column=23,
            confidence="medium",
            note="a cross-entropy written by hand on probabilities the function is given",
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class ACE(nn.Module):
                def forward(self, probs, label):
                    mass = torch.sum(probs, 1) / probs.shape[1]
                    return -torch.sum(torch.log(mass) * label) / probs.shape[0]
            """,
            line=6,
            column=27,
            confidence="medium",
            note="the log of aggregated probability mass a class can lack entirely",
        ),
    ]
    PROBE = Probe(
        hazard="torch.log(torch.relu(x))",
        fix="torch.log(torch.relu(x).clamp_min(torch.finfo(x.dtype).tiny))",
        inputs={"x": "torch.tensor([-1.0, 0.0, 2.0])"},
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        o = op(ctx, node)
        if o is None or o.name not in (*_LOGS, "log1p") or o.input is None:
            return
        if o.spelling == "method" and node.args:
            return
        value = ctx.value(o.input)
        if (x := _atanh_input(ctx, node, o.name, value)) is not None:
            self._atanh(node, o.input, x)
            return
        if o.name == "log1p":
            reason = _log1p_reason(ctx, value)  # `log1p(-p)` is `log(1 - p)`
            if reason is None:
                if (x := _log1mexp_input(ctx, o.name, value)) is not None:
                    self._log1mexp(node, o.input, x)
                return
        elif o.name == "log" and _other_rule(ctx, value):
            return
        elif o.name in ("log", "log2") and _entropy_factor(ctx, node, value):
            return  # `p * log(p)`: NUM109, whose fix (`xlogy`) covers the log too
        else:
            reason = zero_reason(ctx, value, "log")
        if reason is None and (x := _log1mexp_input(ctx, o.name, value)) is not None:
            self._log1mexp(node, o.input, x)
            return
        if reason is None and o.name == "log":
            paired = complemented_probability(ctx, value)
            if paired is not None and not not_a_tensor(ctx, value):
                self._probability(node, o.input, paired)
            elif _fed_to_nll(ctx, node) and not bounded_probability(ctx, value):
                if not not_a_tensor(ctx, value):
                    self._probability(node, o.input, None)
            elif _infinities_replaced(ctx):
                self._repaired(node, o.input)
            elif (norm := _masks_scores(ctx, value)) and not not_a_tensor(ctx, value):
                # a log_softmax keeps the -inf entries in what it returns, where a 0 weight
                # on them (soft targets, an entropy) gives 0 * -inf = NaN; a softmax turns
                # them into probabilities of 0 and is NaN only for a fully masked row
                log = norm == "log_softmax"
                message = _MASKED_SCORES + (_MASKED_LOG_PROBS if log else "")
                self.report(node, message, confidence="medium" if log else "low")
            elif (
                _hand_cross_entropy(ctx, node, value)
                and not bounded_probability(ctx, value)
                and not positive_value(ctx, value)
                and not _positive_share(ctx, value)
                and not not_a_tensor(ctx, value)
            ):
                self._probability(node, o.input, _CROSS_ENTROPY)
            return
        if reason is None or selection(ctx, o.input) is not None or not_a_tensor(ctx, value):
            return
        if reason == "a 0/1 mask" and isinstance(strip(ctx, value)[0].node, cst.Comparison):
            return  # `(x == v).float().log()`: a log-density of 0 or -inf, by design
        flows = gradient_flows(ctx, o.input) and not rounded_here(ctx)
        tail = _TAIL if flows else _TAIL_FORWARD
        # a replacement of the -inf repairs the value, not the gradient (see `_repaired`)
        repaired = sanitised_later(ctx) and not (
            flows and trained(ctx) and _infinities_replaced(ctx)
        )
        if not flows and (repaired or only_ranked(ctx) or replaced_by_where(ctx, o.input)):
            # a -inf the code replaces, drops (`where(n < k, n, v)`) or only ranks, where no
            # gradient flows: by design
            return
        harmless = repaired
        # an empirical frequency's log in code where -inf means probability 0 (an HMM's table)
        harmless = harmless or (reason == _RATIO and not flows and writes_minus_inf(ctx))
        harmless = harmless or (
            reason == _RAND and _noise_construction(ctx, node) and not _noise_returned(ctx, node)
        )
        harmless = harmless or beside_minus_inf(ctx)  # `where(keep, log(p), -inf)`
        harmless = harmless or only_thresholds(ctx)  # `log_u = log(rand(n))`, `log_u[i] < r`
        harmless = harmless or compared_here(ctx)  # `u.log() < log_alpha`: -inf only accepts
        harmless = harmless or (reason == _RATIO and _masked_distribution(ctx, value))
        # `log(x / x.sum())` of a quantity (a composition, a volume), not of tallies
        harmless = harmless or (reason == _RATIO and not tallied_share(ctx, value))
        harmless = harmless or (reason == _CLAMPED and _clamped_setting(ctx, value))
        confidence = "low" if harmless else grade(ctx, reason, value, log=True)
        if reason == MASKED_SUM and confidence == "low":
            return  # a mask the code is given, or one whose every row keeps an entry
        found = made_elsewhere(ctx, value)  # a caller's ReLU output: say where it is made
        where = f" ({found.what})" if found is not None else ""
        self.report(
            node,
            f"log of {reason}{where}, which can be exactly 0: {tail}",
            confidence=confidence,
            related=related(found) if found is not None else (),
        )

    def _atanh(self, node: cst.Call, arg: cst.BaseExpression, x: Value) -> None:
        """An inverse tanh written by hand (`log((1 + x) / (1 - x))`): +-inf at x = +-1,
        unless x is clamped or the function tests it against +-1."""
        ctx = self.ctx
        if _clamped(ctx, x) or not_a_tensor(ctx, x) or _selected_by_own_test(ctx, x):
            return
        if isinstance(x.node, cst.Name) and bounded_by_callers(ctx, x.node.value):
            return  # `atanh(y.clamp(-1 + eps, 1 - eps))` at every call that bounds it
        if edge_tested(ctx, x.node) or sanitised_later(ctx):
            return
        text = ctx.code(x.node) if len(ctx.code(x.node)) <= 40 else "x"
        self.report(
            node,
            f"inverse tanh written by hand: `{text}` at +-1 (a tanh output is exactly +-1 "
            "in float32 from |u| = 9.01) gives +-inf and an infinite gradient; use "
            f"`torch.atanh({text}.clamp(-1 + eps, 1 - eps))` with "
            f"`eps = torch.finfo({text}.dtype).eps`",
            confidence="medium" if gradient_flows(ctx, arg) or trained(ctx) else "low",
        )

    def _log1mexp(self, node: cst.Call, arg: cst.BaseExpression, x: Value) -> None:
        """`log(1 - exp(x))` of an x of no known kind: the idiom says x <= 0, a
        log-probability, which is exactly 0 where the model is sure."""
        ctx = self.ctx
        if _clamped(ctx, x) or not_a_tensor(ctx, x):
            return
        if sanitised_later(ctx) or only_thresholds(ctx):
            return
        flows = gradient_flows(ctx, arg)
        self.report(
            node,
            "log of `1 - exp(x)`, which is exactly 0 where x is: x is a log-probability here, "
            "and exp(x) rounds to 1 in float32 once x is within 3e-8 of 0 (a log_softmax "
            "entry is exactly 0 where it leads the others by 17), where the log is "
            f"-inf{' with an infinite gradient' if flows else ''}; keep x below 0 "
            "(`x.clamp_max(-torch.finfo(x.dtype).eps)`)",
            confidence="medium" if flows or trained(ctx) else "low",
        )

    def _repaired(self, node: cst.Call, arg: cst.BaseExpression) -> None:
        """A log whose -inf the next statements replace (`nan_to_num`, an `isinf` test): the
        author expects log(0); the value is repaired, its gradient is not."""
        ctx = self.ctx
        if not gradient_flows(ctx, arg) or only_thresholds(ctx) or compared_here(ctx):
            return
        message = (
            "log of a value whose -inf the code replaces afterwards: the value is repaired, "
            "but the gradient at those entries is not (1/0 times the 0 that the replacement "
            "passes back is NaN); clamp the argument before the log "
            "(`x.clamp_min(torch.finfo(x.dtype).tiny)`) or take it under "
            "`torch.where(x > 0, x, 1)`"
        )
        self.report(node, message, confidence="medium" if trained(ctx) else "low")

    def _probability(self, node: cst.Call, arg: cst.BaseExpression, what: str | None) -> None:
        """A hand-written binary cross-entropy or focal loss on a probability (`what`), or
        (None) the log of probabilities that an NLL loss reads."""
        ctx = self.ctx
        if sanitised_later(ctx) or only_thresholds(ctx) or compared_here(ctx):
            return
        flows = gradient_flows(ctx, arg)
        grad = " with an infinite gradient" if flows else ""
        if what is _CROSS_ENTROPY:
            message = (
                "log of probabilities a hand-written cross-entropy (`-sum(t * log(p))`) "
                "reads: a probability underflows to exactly 0 (a float32 softmax does for a "
                f"logit about 104 below the largest), where the log is -inf{grad} and "
                "`0 * -inf` is NaN; compute log-probabilities with `F.log_softmax` (or "
                "`F.cross_entropy` on the logits), or clamp p "
                "(`p.clamp_min(torch.finfo(p.dtype).tiny)`)"
            )
        elif what is None:
            message = (
                "log of probabilities that an NLL loss reads: a probability underflows to "
                "exactly 0 (a float32 softmax does for a logit about 104 below the largest), "
                f"where the log is -inf{grad}; return log-probabilities (`F.log_softmax`) "
                "instead, or clamp p (`p.clamp_min(torch.finfo(p.dtype).tiny)`)"
            )
        else:
            message = (
                f"log of {what}: probabilities saturate to exactly 0 and 1 (a float32 "
                f"sigmoid is 1.0 above a logit of about 17), where the log is -inf{grad}; "
                "clamp p into [eps, 1 - eps], or pass logits to "
                "`F.binary_cross_entropy_with_logits` / `F.logsigmoid`"
            )
        self.report(node, message, confidence="medium" if flows or trained(ctx) else "low")


_TAIL = (
    "the result is -inf with an infinite gradient; clamp it first "
    "(`p.clamp_min(torch.finfo(p.dtype).tiny)`) or compute the log in log space"
)
#: Where no gradient flows (a metric, `no_grad` code) only the value is harmed.
_TAIL_FORWARD = (
    "the result is -inf (no gradient flows here, but the value spreads); clamp it first "
    "(`p.clamp_min(torch.finfo(p.dtype).tiny)`) or compute the log in log space"
)


_MASKED_SCORES = (
    "log of a 0/1 mask added to scores that a softmax normalises: masked entries are -inf, "
    "and a row with every entry masked is -inf throughout, where the softmax is NaN; fill "
    "the masked scores with a finite minimum instead "
    "(`x.masked_fill(mask == 0, torch.finfo(x.dtype).min)`)"
)
_MASKED_LOG_PROBS = (
    "; a log_softmax also returns the masked entries as -inf, and any 0 weight on them "
    "(soft targets, an entropy `p * logp`) gives 0 * -inf = NaN"
)
_SOFTMAXES = frozenset({"softmax", "log_softmax"})


def _atanh_input(ctx, node: cst.Call, name: str, value: Value) -> Value | None:
    """x of an inverse tanh written by hand: `log((1 + x) / (1 - x))` (either way up), or
    the right-hand log of `log(1 + x) - log(1 - x)` / `log1p(x) - log1p(-x)`."""
    if name == "log":
        ratio = ctx.deref(value)
        r = ratio.node
        if isinstance(r, cst.BinaryOperation) and isinstance(r.operator, cst.Divide):
            top = _one_plus(ctx, Value(r.left, ratio.env))
            bottom = _one_plus(ctx, Value(r.right, ratio.env))
            if top and bottom and top[0] != bottom[0] and same_value(ctx, top[1], bottom[1]):
                return top[1]
    parent = ctx.parent
    if not (
        isinstance(parent, cst.BinaryOperation)
        and isinstance(parent.operator, cst.Subtract)
        and parent.right is node
        and isinstance(parent.left, cst.Call)
    ):
        return None
    left = op(ctx, parent.left)
    if left is None or left.name != name or left.input is None or name not in ("log", "log1p"):
        return None
    first, second = Value(left.input, ctx.env), value
    if name == "log":
        a, b = _one_plus(ctx, first), _one_plus(ctx, second)
        if a and b and a[0] == 1 and b[0] == -1 and same_value(ctx, a[1], b[1]):
            return b[1]
        return None
    negated = second.node
    if isinstance(negated, cst.UnaryOperation) and isinstance(negated.operator, cst.Minus):
        if same_value(ctx, first, Value(negated.expression, ctx.env)):
            return first
    return None


def _log1mexp_input(ctx, name: str, value: Value) -> Value | None:
    """x of `log(1 - exp(x))`, `log(-expm1(x))` or `log1p(-exp(x))`."""
    found = ctx.deref(value)
    node = found.node
    if name == "log" and isinstance(node, cst.BinaryOperation):
        one = _one_plus(ctx, found)
        wanted = "exp" if one is not None and one[0] == -1 else None
        inner = one[1] if one is not None else None
    elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        wanted = {"log": "expm1", "log1p": "exp"}.get(name)
        inner = Value(node.expression, found.env)
    else:
        return None
    if wanted is None or inner is None or not isinstance(inner.node, cst.Call):
        return None
    e = op(ctx, inner.node, inner.env)
    if e is None or e.name != wanted or e.input is None:
        return None
    x = e.input
    while isinstance(x, cst.BinaryOperation):
        x = x.left  # `-d * t`, `-raw.abs() - 1`
    if isinstance(x, cst.UnaryOperation) and isinstance(x.operator, cst.Minus):
        return None  # `1 - exp(-d)` of a distance or rate d >= 0: not a log-probability
    return Value(e.input, inner.env)


#: Calls that bound a value (the bound itself is not read).
_BOUNDING = frozenset(
    {"clamp", "clip", "clamp_", "clip_", "clamp_max", "clamp_min", "minimum", "maximum",
     "hardtanh"}
)  # fmt: skip


def _clamped(ctx, x: Value) -> bool:
    """x is made by a clamp, clip, minimum or maximum (through variables)."""
    found = ctx.deref(x)
    if not isinstance(found.node, cst.Call):
        return False
    callee = ctx.callee(found.node, found.env)
    name = callee.method or (callee.qualname or "").rsplit(".", 1)[-1]
    return name in _BOUNDING


def _selected_by_own_test(ctx, x: Value) -> bool:
    """x is `v[mask]` where the mask (through names, `~`, `&` and `|`) compares v itself
    (`v[~((v > c) | (v < -c))]`): the entries kept are the ones the test lets through."""
    found = ctx.deref(x)
    node = found.node
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    if not isinstance(index, cst.Index):
        return False
    todo, seen = [Value(index.value, found.env)], 0
    while todo and seen < 8:
        seen += 1
        test = ctx.deref(todo.pop())
        expr = test.node
        if isinstance(expr, cst.Comparison):
            sides = [expr.left, *(c.comparator for c in expr.comparisons)]
            if any(same_code(ctx, side, node.value) for side in sides):
                return True
        elif isinstance(expr, cst.UnaryOperation):
            todo.append(Value(expr.expression, test.env))
        elif isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
            todo += [Value(expr.left, test.env), Value(expr.right, test.env)]
    return False


def _one_plus(ctx, value: Value) -> tuple[int, Value] | None:
    """(+1, x) for `1 + x` or `x + 1`, (-1, x) for `1 - x`."""
    x = plus_one(ctx, value.node, value.env)
    if x is not None:
        return 1, Value(x, value.env)
    parts = subtraction(ctx, value.node, value.env)
    if parts is not None and is_one(ctx, parts[0]):
        return -1, Value(parts[1], value.env)
    return None


def _masks_scores(ctx, value: Value) -> str | None:
    """`vector + mask.log()` normalised by a softmax (in the call, or through the name the
    sum is assigned to): a 0/1 mask the function is given, turned into -inf scores; a fully
    masked row is NaN. The normaliser's name ("softmax" or "log_softmax"), else None. (The
    log of a comparison the code makes is a log-density by design.)"""
    v, _ = strip(ctx, value)
    if isinstance(v.node, cst.Comparison) or not mask_like(ctx, v):
        return None
    stack = ctx.stack
    i = len(stack) - 2
    while i > 0 and isinstance(stack[i], cst.BinaryOperation):
        if not isinstance(stack[i].operator, cst.Add):  # type: ignore[attr-defined]
            return None
        i -= 1
    if i == len(stack) - 2:
        return None  # not a term of a sum
    holder = stack[i]
    if isinstance(holder, cst.Arg):
        call = stack[i - 1]
        if isinstance(call, cst.Call) and call_name(call) in _SOFTMAXES:
            return call_name(call)
        return None
    if not (isinstance(holder, cst.Assign) and len(holder.targets) == 1):
        return None
    target = holder.targets[0].target
    if not isinstance(target, cst.Name) or ctx.function is None:
        return None
    for call in descendants(ctx.function):
        if isinstance(call, cst.Call) and call_name(call) in _SOFTMAXES:
            receiver = ctx.callee(call).receiver  # `x.softmax(-1)`, else `F.softmax(x, -1)`
            scores = receiver if receiver is not None else positional(call, 0, "input")
            if isinstance(scores, cst.Name) and scores.value == target.value:
                return call_name(call)
    return None


_RAND = "a `torch.rand` draw"
_CLAMPED = "a value clamped at 0"
_RATIO = "a normalised ratio"


_NLL_CLASSES = NLL[1]
_CROSS_ENTROPY = "cross-entropy"
_REDUCTIONS = frozenset({"sum", "mean", "nansum", "nanmean"})


_BUILT = frozenset(
    f"torch.{name}"
    for name in ("arange", "linspace", "logspace", "ones", "ones_like", "full", "full_like")
)


def _built_weights(ctx, value: Value) -> bool:
    """Weights the code builds from a range or a fill: fixed coefficients, not a target."""
    found = ctx.deref(value)
    if not isinstance(found.node, cst.Call):
        return False
    return ctx.callee(found.node, found.env).qualname in _BUILT


#: Calls that replace or find a tensor's infinities.
_INFINITY_REPAIRS = frozenset({"nan_to_num", "nan_to_num_", "isinf", "isneginf", "isfinite"})


def _infinities_replaced(ctx) -> bool:
    """The log's result, assigned to a name, has its infinities replaced within the next
    three statements: `y = log(x)`, then `y = torch.nan_to_num(y, posinf=0.0)`,
    `y[torch.isinf(y)] = 0`, `y.masked_fill_(~torch.isfinite(y), 0)` (the call's tensor is
    the name, or a part or view of it)."""
    here = assigned_here(ctx)
    if here is None:
        return False
    name, later = here
    for stmt in later[:3]:
        for call in descendants(stmt):
            if not isinstance(call, cst.Call) or call_name(call) not in _INFINITY_REPAIRS:
                continue
            func = call.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                if func.value.value == name:
                    return True  # `y.isinf()`
            if call.args and root_of(call.args[0].value) == name:
                return True  # `torch.isinf(y)`, `torch.nan_to_num(y[:, 0])`
    return False


def _positive_share(ctx, value: Value) -> bool:
    """`(y + eps) / total`: a numerator kept above 0 makes a quotient that is never 0."""
    found = ctx.deref(value)
    node = found.node
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)):
        return False
    return positive_value(ctx, Value(node.left, found.env))


def _hand_cross_entropy(ctx, node: cst.Call, value: Value) -> bool:
    """The log is a factor of a negated, reduced product with a tensor other than its own
    argument: `-(t * log(p)).sum()`, `-torch.sum(torch.log(p) * t, 1).mean()`, a
    cross-entropy written by hand, which treats p as a probability. A number or a range as
    the other factor (`-0.5 * log(var).sum()`, a Gaussian's log-density; `-(arange(n) *
    diag(L).log()).sum()`, a log-determinant) is not one."""
    product = reduced = negated = False
    child: cst.CSTNode = node
    for parent in ctx.ancestors():
        if isinstance(parent, cst.Arg):
            pass
        elif isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus):
            negated = True
        elif isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Multiply):
            other = parent.right if parent.left is child else parent.left
            if isinstance(other, cst.UnaryOperation) and isinstance(other.operator, cst.Minus):
                negated, other = True, other.expression
            if not product:
                if const(ctx, other, ctx.env) is not None or same_value(
                    ctx, ctx.value(other), value
                ):
                    return False
                if _built_weights(ctx, ctx.value(other)):
                    return False  # `-(arange(n) * diag(L).log()).sum()`: a log-determinant
                product = True
        elif isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Divide):
            if parent.left is not child:
                return False  # `n / log(p)`
        elif isinstance(parent, cst.Attribute) and parent.value is child:
            pass  # `(t * log(p)).sum`: the call comes next
        elif isinstance(parent, cst.Call) and child is not node:
            o = op(ctx, parent)
            if o is None or o.name not in _REDUCTIONS or not product:
                break
            reduced = True
        else:
            break
        child = parent
    return product and reduced and negated


def _fed_to_nll(ctx, node: cst.Call) -> bool:
    """The log's result is the input of an NLL loss, which expects log-probabilities: so its
    argument is a probability. `F.nll_loss(torch.log(p), y)`, `criterion(logp, y)` with
    `logp = p.log()` and `criterion = nn.NLLLoss()`, or a log taken under a test that the
    loss is one (`if isinstance(self.criterion, nn.NLLLoss): y_pred = torch.log(y_pred)`)."""
    child: cst.CSTNode = node
    for parent in ctx.ancestors():
        if isinstance(parent, cst.Arg):
            child = parent
            continue
        if isinstance(parent, cst.Call) and child is not node:
            loss = loss_call(ctx, parent, NLL)
            if loss is not None and loss.input is node:
                return True
        if isinstance(parent, cst.If) and _tests_nll(ctx, parent.test):
            return True
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            break
        child = parent
    here = assigned_here(ctx)
    if here is None:
        return False
    name, later = here
    for stmt in later:
        for call in descendants(stmt):
            if not isinstance(call, cst.Call):
                continue
            loss = loss_call(ctx, call, NLL)
            if loss is not None and isinstance(loss.input, cst.Name) and loss.input.value == name:
                return True
    return False


def _tests_nll(ctx, test: cst.BaseExpression) -> bool:
    """`isinstance(c, nn.NLLLoss)` (or a tuple holding it), alone or in an `and`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tests_nll(ctx, test.left) or _tests_nll(ctx, test.right)
    if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name)):
        return False
    if test.func.value != "isinstance" or ctx.lookup("isinstance") is not None:
        return False
    if len(test.args) != 2:
        return False
    kinds = test.args[1].value
    items = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    return any(ctx.qualname(k) in _NLL_CLASSES for k in items)


def _clamped_setting(ctx, value: Value) -> bool:
    """`torch.log(self.alpha.clamp(0, 1))`: a module's own setting (a decay rate) held in
    its range, 0 only if training drives it there, unlike data clamped at 0."""
    found = ctx.deref(value)
    o = op(ctx, found.node, found.env) if isinstance(found.node, cst.Call) else None
    if o is None or o.name not in ("clamp", "clamp_min", "clip") or o.input is None:
        return False
    target = o.input
    return (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == "self"
    )


def _masked_distribution(ctx, value: Value) -> bool:
    """`probs[~mask] = 0; probs = probs / probs.sum(-1, keepdim=True); probs.log()`: the
    zeros were written by a mask on purpose, and their -inf logits are the masking."""
    found = ctx.deref(value)
    node = found.node
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)):
        return False
    top = Value(node.left, found.env)
    arms = [ctx.deref(top), *(a for a in ctx.alternatives(top) if a is not None)]
    return any(_zeros_masked(ctx, arm) for arm in arms)


def _zeros_masked(ctx, numerator: Value) -> bool:
    """`p[~mask] = 0` (or `p[m] = 0`) among the in-place edits of `numerator`."""
    for stmt in numerator.mutations:
        target = getattr(stmt, "targets", None)
        if not target or len(target) != 1 or not isinstance(target[0].target, cst.Subscript):
            continue
        index = target[0].target.slice
        if len(index) == 1 and isinstance(index[0].slice, cst.Index):
            mask = index[0].slice.value
            masked = isinstance(mask, (cst.Name, cst.UnaryOperation, cst.Attribute))
            if masked and is_zero(ctx, stmt.value, numerator.env):  # type: ignore[attr-defined]
                return True
    return False


def _noise_construction(ctx, node: cst.Call) -> bool:
    """The log of a uniform draw inside Gumbel noise (`-log(-log(u))`) or logistic noise
    (`log(u) - log(1 - u)`): a draw of exactly 0 gives a class noise of -inf, which only
    takes it out of the argmax or softmax it feeds."""
    child: cst.CSTNode = node
    for parent in ctx.ancestors():
        if isinstance(parent, (cst.UnaryOperation, cst.Arg)):
            child = parent
            continue
        if isinstance(parent, cst.Attribute) and parent.value is child:
            child = parent  # `(-u.log()).log()`: the method's call comes next
            continue
        if isinstance(parent, cst.Call):
            o = op(ctx, parent)
            return o is not None and o.name in _LOGS  # `log(-log(u))`
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Subtract):
            other = parent.right if parent.left is child else parent.left
            o = op(ctx, other) if isinstance(other, cst.Call) else None
            return o is not None and o.name in _LOGS  # `log(u) - log(1 - u)`
        return False
    return False


#: Calls that only select by the noisy scores: a -inf entry is never picked.
_SELECTS = frozenset(
    {"argmax", "argmin", "topk", "max", "sort", "argsort", "softmax", "log_softmax",
     "gumbel_softmax", "multinomial"}
)  # fmt: skip


def _noise_returned(ctx, node: cst.Call) -> bool:
    """The noise, assigned to a name, leaves the function added to values (`noise =
    -log(-log(u))`, then `return log(scores) + noise` outside any selection): a -inf there
    reaches whatever the caller computes from those scores, not only an argmax. A helper
    that returns the noise itself leaves its use to the caller's sampler."""
    func = ctx.function
    statement = next((a for a in ctx.ancestors() if isinstance(a, cst.BaseSmallStatement)), None)
    if not (
        func is not None
        and isinstance(statement, cst.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0].target, cst.Name)
    ):
        return False
    name = statement.targets[0].target.value
    return any(
        isinstance(ret, cst.Return)
        and ret.value is not None
        and _combined_outside_selection(ret.value, name)
        for ret in descendants(func)
    )


def _combined_outside_selection(expr: cst.CSTNode, name: str, combined: bool = False) -> bool:
    """`name` appears in `expr` as an operand of arithmetic (`scores + name`), other than
    inside a call that only selects (`argmax`, `softmax`)."""
    if isinstance(expr, cst.Name):
        return combined and expr.value == name
    if isinstance(expr, cst.Call) and call_name(expr) in _SELECTS:
        return False
    inside = combined or isinstance(expr, cst.BinaryOperation)
    return any(_combined_outside_selection(c, name, inside) for c in expr.children)


def _entropy_factor(ctx, node: cst.Call, value: Value) -> bool:
    """The log is a factor of `p * log(p)` (or `-p * log(p)`) with its own argument."""
    parent = ctx.parent
    if not (isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Multiply)):
        return False
    other = parent.left if parent.right is node else parent.right if parent.left is node else None
    if other is None:
        return False
    if isinstance(other, cst.UnaryOperation) and isinstance(other.operator, cst.Minus):
        other = other.expression
    # NUM109 leaves a softmax or sigmoid `p` to the log rules
    return same_value(ctx, ctx.value(other), value) and activation(ctx, value) is None


def _log1p_reason(ctx, value: Value) -> str | None:
    """`log1p(-p)` (also `log1p(-exp(logp))`) is `log(1 - p)`: -inf where p is exactly 1."""
    found, _ = strip(ctx, value)
    node = found.node
    if not (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)):
        return None
    p = Value(node.expression, found.env)
    if activation(ctx, p, ("sigmoid",)) is not None:
        return None  # `log1p(-sigmoid(z))`: NUM102
    one = zero_reason(ctx, p, "one")
    return f"`1 - p` of {one}" if one else None


def _other_rule(ctx, value: Value) -> bool:
    """The natural log of a softmax / sigmoid (or 1 - sigmoid) output: NUM101 / NUM102."""
    if activation(ctx, value) is not None:
        return True
    direct = ctx.deref(value)
    node = direct.node
    if (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Subtract)
        and is_one(ctx, node.left)
    ):
        inner = Value(node.right, direct.env, direct.mutations)
        return activation(ctx, inner, ("sigmoid",)) is not None
    return False
