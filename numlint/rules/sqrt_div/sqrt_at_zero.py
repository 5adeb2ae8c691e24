"""NUM201 sqrt-at-zero."""

from __future__ import annotations

import ast

import libcst as cst

from numlint.analysis.arrays import not_a_tensor
from numlint.analysis.context import Binding, Value
from numlint.analysis.dtypes import traced_dtype
from numlint.analysis.evidence import (
    broadcast_copy,
    double_backward,
    grade,
    loss_prediction_spectrum,
    planar_radius,
    root_of_features,
    unit_bounded,
    unit_unknown,
    zero_tested,
)
from numlint.analysis.gradients import gradient_evident, gradient_flows, objective
from numlint.analysis.guards import branch_taken, guarded_by_condition, selection
from numlint.analysis.ops import const, has_tensor_op, is_zero, op, unpacked_value, unscaled
from numlint.analysis.semantics import (
    dotted_name,
    keyword,
    needs_parens,
    positional,
    same_bindings,
)
from numlint.analysis.summaries import function_key, origin_of, related
from numlint.analysis.tables import TRANSPARENT_METHODS
from numlint.analysis.zeros import (
    MEAN_SQUARED_ERROR,
    eps_like,
    expanded_distance,
    factors,
    square_of,
    zero_reason,
)
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.tree import call_name, descendants, unparenthesized


class SqrtAtZero(Rule):
    """Square root of a value that can be 0: NaN gradients there; use `vector_norm` or an eps inside.

    What it does:
    Flags `torch.sqrt`, `torch.rsqrt`, `x.sqrt()`, `x ** 0.5`, `x.pow(0.5)`, `torch.pow(x, 0.5)`,
    `x ** -0.5` and `pow(x, 0.5)` (also an exponent that is 0.5 at the defaults of the
    function's parameters, `x.pow(0.5 * power)` with `power=1.0`) of a value that can be
    exactly 0: a sum or mean of squares
    (`((a - b) ** 2).sum(-1)`, `x.pow(2).sum()`, a mean squared error `F.mse_loss(a, b)`
    or an `nn.MSELoss` criterion's result, also per entry and then averaged,
    `F.mse_loss(a, b, reduction="none").mean(d)`, a vector's product with its own transpose
    `torch.matmul(v, v.transpose(1, 2))` or inner product with itself, `torch.dot(v, v)`,
    `torch.linalg.vecdot(x, x)`, `torch.einsum("bi,bi->b", x, x)`), a square, the absolute
    value of a difference of two tensors (`torch.sqrt((a - b).abs())`), a variance, `1 - x**2`
    (`1 - cos**2`), a ReLU output, a determinant (`Sigma.det().sqrt()`: 0 for a degenerate
    covariance), or a value clamped at 0; also through a variable and
    through the smallest entries of one (`d.min(dim=1).values`, `torch.min(d, 1)[0]`,
    `d.amin(-1)`: a nearest-neighbour distance).
    Also the root of a squared distance expanded as `|x|**2 + |y|**2 - 2 x.y` (through
    variables, views, einops and `addmm(..., alpha=-2)`), and a power the caller sets
    (`(1 - p) ** gamma`, `torch.pow(1 - p, self.gamma)`) of a sigmoid or softmax gap.
    And the Euclidean norm (`torch.norm`, `x.norm()`, `torch.linalg.norm` / `vector_norm`)
    of a difference of one tensor's entries (`pos[:, None] - pos[None]`, `pos[row] -
    pos[col]`) in differentiated code of a project that takes a gradient with
    `create_graph=` (training on forces, a gradient penalty): the norm's first derivative at
    0 is 0, its second is NaN. High where every entry is paired with itself (a broadcast, a
    `radius_graph(..., loop=True)`), medium for index pairs of unknown origin; not reported
    for a radius or k-NN graph without self loops (`loop` left out or False), where only
    two coinciding atoms give 0.

    Why is this bad?
    The derivative of sqrt at 0 is infinite; autograd multiplies it by the zero gradient of the
    sum of squares and gets NaN, which then reaches every parameter. `rsqrt(0)` is already inf
    in the forward pass. Identical points (a == b), zero vectors and constant features make
    the argument exactly 0. `torch.linalg.vector_norm` has a gradient of 0 there.
    An expanded squared distance is worse: for vectors close together its terms cancel and
    rounding leaves a value below 0, so the root is NaN in the forward pass. A power below 1
    (a focal loss's gamma = 0.5) has the same infinite slope at 0 as a root, and `1 - p`
    is exactly 0 wherever a sigmoid or softmax saturates.

    Fix safety:
    `torch.sqrt((E ** 2).sum(d))` becomes `torch.linalg.vector_norm(E, dim=d)` (keepdim kept).
    Unsafe: the norm is computed differently and may differ in the last bits. Not offered in
    differentiated code of a project that takes a gradient with `create_graph=`: the norm's
    second derivative at 0 is NaN too. The root of one square taken entry by entry,
    `torch.sqrt((a - b) ** 2)`, becomes `(a - b).abs()`: the same value (without the square's
    overflow), whose gradient at 0 is 0 where the root's is NaN; unsafe for the same reason.
    Other forms have no automatic fix: put the eps inside the root (`torch.sqrt(s + eps)`).

    Known limitations:
    The hazard is in the gradient only: `sqrt` inside `torch.no_grad()` / `inference_mode()`
    (or a function decorated with them), of a tensor built only from constructors and
    constants (`torch.arange(n) ** 2`), of what a module-level function or staticmethod of the
    project computes from such values (a helper that makes no tensor requiring grad), or of
    a batch a training loop draws (`for pts, y in
    loader:` around `loss.backward()`, unless the code calls `pts.requires_grad_()`), is not
    reported; `rsqrt(0) = inf` always is.
    A sum holding the square of a continuous random draw (Rician noise, `(x + n1) ** 2 +
    n2 ** 2` with `n2 = torch.tensor(rng.normal(0, std, size))` or `torch.randn_like(x) *
    std`) is never 0 and is not reported.
    An eps added outside the root (`torch.sqrt(s) + eps`) and `clamp(min=0)` before the root
    are not guards, and are reported. The root of a sigmoid output is not reported unless
    the value is float16 (a float32 sigmoid is exactly 0 only below a logit of -103, float16
    below -17); the root of `1 - sigmoid(x)` (0 from x = 16.6) is. Values are followed within
    one function, and into a function nested in it: the root of a nested helper's parameter
    is judged with what the enclosing function passes.

    Confidence:
    high for the root of an expanded squared distance (reported also where no gradient
    flows: the NaN is in the forward value); medium for a caller-set power of `1 - p`;
    medium for a root the code then keeps from 0 with an eps (`sqrt(s) + eps`,
    `n = sqrt(s); x / (n + eps)`, `n.clamp(min=eps)`) in differentiated code: the author
    expects the root to be 0, where its own gradient is infinite (not for a value computed
    only from the module's own weights, or from `self` attributes every caller passes);
    high where the argument is exactly 0 in ordinary use: distances of a set to itself
    (`x[:, None] - x[None]`: the diagonal), differences of neighbouring entries of one
    tensor (`img[..., 1:] - img[..., :-1]`, a total-variation or edge loss: 0 across any flat
    region; a sum of two squares, `dx ** 2 + dy ** 2`, is graded by the less likely to be 0),
    the response of a convolution with constant taps that sum to 0 (`F.conv2d(x, sobel)`,
    a Prewitt or Laplacian kernel, also stacked or reshaped, or an `nn.Conv2d` whose weight
    the constructor sets to one: an image gradient's magnitude, 0 across any flat region),
    a difference clamped at 0 (also `torch.max(zero, v)` with a zeros tensor) (equal terms cancel;
    not a quadratic's discriminant `b**2 - 4*a*c`, 0 only at a double root),
    a mask, `1 - cos**2` (of a cosine, sine, tanh, clamp, an inner product of unit vectors
    such as `F.linear(F.normalize(x), F.normalize(w))`, also concatenated, or a value named
    so; through a named square `c2 = c**2; 1 - c2`), a value the function tests against 0
    elsewhere (`mask = theta_sq > 0`);
    medium for `1 - x**2` of a parameter or attribute in differentiated code (a margin loss
    takes its callers' cosines) or of what a function of the project returns (a sampler's
    draw on [-1, 1]), and for the root of a sum of squared differences of two
    tensors in what training minimises (a loss, a training step, or code whose result a
    caller calls `backward()` on: an anchor and its positive can be the same sample);
    medium for the root of a sum of squares of a layer's features alone in a module's
    `forward` (its input, when the module is not a loss, an image of it that is 0 where it
    is: a mean, a sum, a fill with 0, a transpose, `.real` and `.imag`, or what a
    sub-network returns, taken in a loop: `norm = torch.sqrt((x * x).sum(2))`,
    `(p.real ** 2 + p.imag ** 2) ** 0.5` of `p = x.mean(1)`): features partway through a
    network are a zero vector at some position (a centred point, a ReLU's zeros);
    medium for the root of a mean squared error in what training minimises (an RMSE loss:
    0 wherever the prediction fits its target exactly, a padded or constant region), low
    elsewhere (a metric);
    medium for the root of a sum of squares of a network's input gradient taken with
    `torch.autograd.grad(critic(x), x, create_graph=True)` (a gradient penalty: 0 where the
    network is flat, and differentiated again); the gradient of a loss the function is
    given, 0 only at a stationary point, stays low;
    medium for the root of a spectral energy a loss computes from its prediction alone (a
    loss taking `(prediction, target, ...)`, torch's convention; the band energies of an
    estimate, `matmul(bands, norm(stft(est)) ** 2).pow(0.5)`), or the magnitude of each
    complex entry of the prediction held as two parts of it (`est[:, :f] ** 2 + est[:, f:]
    ** 2`, `est.real ** 2 + est.imag ** 2`): 0 in a silent frame or bin, and the
    prediction's gradient flows; the same root of the target, or of an embedding a loss is
    given (an exact zero vector is rare), stays low;
    medium for the length of a vector's projection on a plane (`xyz[..., 0] ** 2 + xyz[...,
    1] ** 2` where the function also reads `xyz[..., 2]`): 0 for every vector along the
    remaining axis (a point on the z axis), far likelier than a zero vector; the same sum
    of every component the function reads stays low;
    low for `1 - x**2` of a value whose range stops short of 1 (`exp(-k)`), for another
    value clamped at 0 (clamp's backward selects, like
    ReLU's: only a value exactly 0 before the clamp hurts, and a variance, eigenvalue or
    pivot clamped against rounding is 0 only when degenerate);
    low for the root of a sum of squares of one tensor (a hand-written norm), of a
    difference of two tensors or gathered pairs outside a loss, of a variance, or of a
    probability. Not reported where no gradient can flow (under `no_grad`, `.item()`,
    `.detach()`, `.data`, NumPy, custom `autograd.Function` bodies, metrics and evaluation
    code, though a module's `forward` is differentiated wherever its file lives; a helper
    whose every caller only compares or indexes what it computes from the result, through
    its variables: `r = aspect(gt).mean(0)`, `thr = t * torch.exp(-r)`, `pos = iou >= thr`)
    or for a
    ReLU output (its backward selects 0). The harm is a gradient, so a root is low unless
    something visibly differentiates the code (a method of an `nn.Module`, a loss, a function
    calling `backward()` or `autograd.grad`, one testing whether a tensor it is given
    requires grad, `if xyz.requires_grad:`, or a function one of those calls, across the
    project) or the code expects the value to be 0: it tests it against 0, or clamps a
    number less a value at 0, also scaled (`(0.5 * (1 - c)).clamp(0, 1)`, `torch.max(zero, 1
    + m00 - m11 - m22)`: the value reaches the number at its bound, the cosine or the
    diagonal of the identity rotation; medium in a library
    function nothing differentiates, whose callers' tensors may require grad; a difference of
    two computed values there stays low). Also low where a variable the
    root is computed from was first given a safe value at some entries
    (`r = torch.where(sphere, torch.full_like(r, 0.5), r)`, the double-`where` fix).

    References:
    - https://pytorch.org/docs/stable/generated/torch.linalg.vector_norm.html
    - [numlint hazard catalog, row 6](https://github.com/numlint/numlint/blob/main/docs/hazards.md#6)
    - [row 32, expanded distances](https://github.com/numlint/numlint/blob/main/docs/hazards.md#32)
    - [row 33, powers of 1 - p](https://github.com/numlint/numlint/blob/main/docs/hazards.md#33)
    """

    CODE = "NUM201"
    NAME = "sqrt-at-zero"
    MESSAGE = (
        "sqrt of a value that can be exactly 0: its gradient there is NaN; use "
        "`torch.linalg.vector_norm(...)` or put an eps inside the root (`torch.sqrt(s + eps)`)"
    )
    TRIGGERS = ("sqrt(", "sqrt_(", ".5", "pow(", "** (1", "**(1", "sigmoid", "softmax", "norm(")

    VALID = [
        Valid(
            """
            import torch
            def rician_noise(img, std: float = 0.1):
                n1 = torch.randn_like(img) * std
                n2 = torch.randn_like(img) * std
                return torch.sqrt((img + n1) ** 2 + n2 ** 2)
            """,
            "the square of a continuous random draw is never 0",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def rmse_loss(pred, target, eps=1e-8):
                return torch.sqrt(F.mse_loss(pred, target) + eps)
            """,
            "an RMSE loss with an eps inside the root",
        ),
        Valid(
            """
            import torch
            def chamfer_loss(p, q):
                d = ((p[:, :, None] - q[:, None]) ** 2).sum(-1)
                return torch.sqrt(d.min(dim=2).values.clamp_min(1e-12)).mean()
            """,
            "the nearest squared distance clamped above 0 before the root",
        ),
        Valid(
            """
            import torch
            def schedule(log_snr, x):
                alpha = torch.sqrt(log_snr.sigmoid())
                return x * alpha
            """,
            "a float32 sigmoid reaches 0 only below a logit of -103",
        ),
        Valid(
            """
            import torch
            class Phat(torch.nn.Module):
                def forward(self, xx, eps=1e-20):
                    vals, idx = torch.unique(xx, return_inverse=True, dim=-1)
                    mag = torch.sqrt(vals[..., 0] ** 2 + vals[..., 1] ** 2) + eps
                    return vals[..., 0] / mag
            """,
            "values from `torch.unique` carry no gradient (its derivative is not implemented)",
        ),
        Valid(
            """
            import torch
            def _decompose(a):
                vals, vecs = torch.linalg.eigh(a)
                return vecs, vals
            class Beam(torch.nn.Module):
                def forward(self, cov):
                    uniq, idx = torch.unique(cov, return_inverse=True, dim=1)
                    vecs, _ = _decompose(uniq)
                    return torch.sum(vecs[..., 0] ** 2, dim=-1) ** 0.5
            """,
            "a helper of this project computes from data only: its results carry no gradient",
        ),
        Valid(
            """
            import torch
            def focal(logits, gamma):
                p = torch.sigmoid(logits).clamp(1e-6, 1 - 1e-6)
                return (1 - p) ** gamma
            """,
            "a power of a clamped probability gap",
        ),
        Valid(
            """
            import torch
            def focal(logits):
                p = torch.sigmoid(logits)
                return (1 - p) ** 2
            """,
            "a constant exponent of at least 1: the slope at 0 is finite",
        ),
        Valid(
            """
            import torch
            def cdist(x, y):
                d2 = (x ** 2).sum(1, keepdim=True) + (y ** 2).sum(1) - 2 * x @ y.t()
                return d2.clamp_min(1e-12).sqrt()
            """,
            "an expanded squared distance clamped above 0",
        ),
        Valid(
            """
            import torch
            def spread(x, y):
                s = (x ** 2).sum(1, keepdim=True) + (y ** 2).sum(1) + 2 * x @ y.t()
                return s.sqrt()
            """,
            "plus the inner product: no cancellation, nothing to report",
        ),
        Valid(
            """
            import torch
            d = torch.linalg.vector_norm(a - b, dim=-1)
            """,
            "the stable API",
        ),
        Valid(
            """
            import torch
            d = torch.sqrt(((a - b) ** 2).sum(-1) + 1e-8)
            """,
            "an eps inside the root",
        ),
        Valid(
            """
            import math
            d = math.sqrt(x ** 2 + y ** 2)
            """,
            "`math.sqrt`",
        ),
        Valid(
            """
            import torch
            def f(a, b):
                d2 = (a - b).pow(2).sum(-1)
                d2 = d2.clamp(min=1e-12)
                return d2.sqrt()
            """,
            "clamped away from 0 in an earlier statement",
        ),
        Valid(
            """
            import torch
            def f(x):
                return torch.sqrt(x)
            """,
            "an unknown value: not assumed to reach 0",
        ),
        Valid(
            """
            import torch
            s = torch.sqrt(torch.tensor(2.0)) * x
            """,
            "a constant",
        ),
        Valid(
            """
            import torch
            def hypot(dx: float, dy: float) -> float:
                return (dx ** 2 + dy ** 2) ** 0.5
            """,
            "plain Python arithmetic: no tensor operation in sight",
        ),
        Valid(
            """
            import torch
            def f(v):
                return torch.sqrt(torch.var(v, dim=0) + 1e-5)
            """,
            "a variance with an eps inside (batch norm)",
        ),
        Valid(
            """
            import torch
            def distances(n):
                ind = torch.arange(n).view(1, -1) - torch.arange(n).view(-1, 1)
                d2 = ind.repeat(n, n) ** 2 + ind.repeat_interleave(n, dim=0) ** 2
                return d2 ** 0.5
            """,
            "built only from constructors: no gradient flows",
        ),
        Valid(
            """
            import torch
            @torch.no_grad()
            def dist(a, b):
                return torch.sqrt(((a - b) ** 2).sum(-1))
            """,
            "no gradient under torch.no_grad(): sqrt(0) = 0 is fine forward",
        ),
        Valid(
            """
            import torch
            def rmse(x, y):
                return torch.sqrt(((x - y) ** 2).mean()).item()
            """,
            "turned into a Python number at once: no gradient flows",
        ),
        Valid(
            """
            import torch
            def rescale(weight, scale):
                scale = scale / (weight * weight).sum()
                weight.data *= scale.sqrt()
            """,
            "written into a tensor's `.data`: outside autograd",
        ),
        Valid(
            """
            import torch
            def distance(x, y, eps: float = 1e-6):
                return (x - y + eps).pow(2).sum(-1).sqrt()
            """,
            "an eps inside each square: identical points give eps**2 > 0",
        ),
        Valid(
            """
            import torch
            from torch.distributions import Distribution
            class Rejection(Distribution):
                def sample(self, sample_shape=torch.Size()):
                    return torch.sqrt(self.a ** 2 + self.b ** 2)
            """,
            "a distribution's `sample` draws without gradient (`rsample` is differentiable)",
        ),
        Valid(
            """
            import torch
            class Model:
                def validation_step(self, x, y):
                    return torch.sqrt(((x - y) ** 2).sum(-1))
            """,
            "Lightning runs validation_step without gradients",
        ),
        Valid(
            """
            import numpy as np
            import torch
            def dist(a: np.ndarray):
                return (a ** 2).sum() ** 0.5 + torch.zeros(1)
            """,
            "a NumPy array",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def chamfer_loss(p, q):
                d = ((p[:, :, None] - q[:, None]) ** 2).sum(-1)
                return torch.sqrt(d.min(dim=2).values).mean()
            """,
            line=4,
            column=12,
            confidence="medium",
            note="the nearest squared distance is 0 where two points coincide",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class AbsoluteError(nn.Module):
                def forward(self, pred, target):
                    return torch.sqrt((pred - target) ** 2).mean()
            """,
            line=5,
            column=16,
            confidence="medium",
            fixed="""
            import torch
            import torch.nn as nn
            class AbsoluteError(nn.Module):
                def forward(self, pred, target):
                    return (pred - target).abs().mean()
            """,
            note="the root of one square is |x| entry by entry: NaN gradient at every tie",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class VectorNorm(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.bn = nn.BatchNorm1d(n)
                def forward(self, x):
                    norm = torch.sqrt((x * x).sum(2))
                    return x / norm.unsqueeze(2) * self.bn(norm).unsqueeze(2)
            """,
            line=8,
            column=16,
            confidence="medium",
            fixed="""
            import torch
            import torch.nn as nn
            class VectorNorm(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.bn = nn.BatchNorm1d(n)
                def forward(self, x):
                    norm = torch.linalg.vector_norm(x, dim=2)
                    return x / norm.unsqueeze(2) * self.bn(norm).unsqueeze(2)
            """,
            note="a layer's input features divided by their own norm: a zero vector feature "
            "(a centred point, a ReLU's zeros) has an infinite root slope",
        ),
        Invalid(
            """
            import torch
            def normalize(feat, eps=1e-10):
                n = torch.sqrt(torch.sum(feat ** 2, dim=1, keepdim=True))
                return feat / (n + eps)
            class Distance(torch.nn.Module):
                def forward(self, a, b):
                    return (normalize(a) - normalize(b)).pow(2).mean()
            """,
            confidence="medium",
            line=3,
            column=9,
            fixed="""
            import torch
            def normalize(feat, eps=1e-10):
                n = torch.linalg.vector_norm(feat, dim=1, keepdim=True)
                return feat / (n + eps)
            class Distance(torch.nn.Module):
                def forward(self, a, b):
                    return (normalize(a) - normalize(b)).pow(2).mean()
            """,
            note="an eps added to the root's value: the author expects 0, where the root's "
            "own gradient is infinite",
        ),
        Invalid(
            """
            import torch
            class Flow(torch.nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.weight = torch.nn.Parameter(torch.randn(n, n))
                def forward(self, x):
                    w = torch.exp(self.weight)
                    return x @ (w / (w.pow(2).sum(-1, keepdim=True).sqrt() + 1e-8))
            """,
            confidence="low",
            line=8,
            column=26,
            fixed="""
            import torch
            class Flow(torch.nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.weight = torch.nn.Parameter(torch.randn(n, n))
                def forward(self, x):
                    w = torch.exp(self.weight)
                    return x @ (w / (torch.linalg.vector_norm(w, dim=-1, keepdim=True) + 1e-8))
            """,
            note="the norm of the module's own weights: 0 only if every learned entry is",
        ),
        Invalid(
            """
            import torch
            def focal_loss(logits, target, gamma=2.0):
                p = torch.sigmoid(logits)
                return -(torch.pow(1 - p, gamma) * target * torch.log(p)).mean()
            """,
            confidence="medium",
            line=4,
            column=14,
            note="a caller-set power of `1 - p`: infinite slope at a saturated sigmoid for "
            "gamma below 1",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            class FocalLoss(torch.nn.Module):
                def __init__(self, gamma):
                    super().__init__()
                    self.gamma = gamma
                def forward(self, x, y):
                    p = F.softmax(x, dim=1) + 1e-6
                    return (-p + 1.0) ** self.gamma * F.cross_entropy(x, y, reduction="none")
            """,
            confidence="medium",
            line=9,
            column=16,
            note="`-p + 1` of a softmax plus eps, to an attribute's power",
        ),
        Invalid(
            """
            import torch
            def cdist(x, y):
                x2 = (x ** 2).sum(1, keepdim=True)
                y2 = y.pow(2).sum(1)
                d2 = x2 + y2[None] - 2 * x @ y.t()
                return d2.sqrt()
            """,
            confidence="high",
            line=6,
            column=12,
            note="an expanded squared distance rounds below 0: NaN forward",
        ),
        Invalid(
            """
            import torch
            from einops import einsum, rearrange, reduce
            def cdist(x, y):
                x2 = reduce(x ** 2, "b n d -> b n", "sum")
                y2 = reduce(y ** 2, "b n d -> b n", "sum")
                xy = einsum(x, y, "b i d, b j d -> b i j") * -2
                return (rearrange(x2, "b i -> b i 1") + rearrange(y2, "b j -> b 1 j") + xy).sqrt()
            """,
            confidence="high",
            line=7,
            column=12,
            note="the same through einops, with the -2 on the product",
        ),
        Invalid(
            """
            import torch
            def band_levels(bands, spec):
                return torch.matmul(bands, spec.abs() ** 2).pow(0.5)
            """,
            confidence="low",
            line=3,
            column=12,
            note="a matrix product with squares: a weighted sum of squares, 0 for a silent band",
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class RMSELoss(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mse = nn.MSELoss()
                def forward(self, pred, target):
                    return torch.sqrt(self.mse(pred, target))
            """,
            confidence="medium",
            line=8,
            column=16,
            note="an RMSE loss: the mean squared error is 0 where the prediction fits exactly",
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class BandLoss(nn.Module):
                def forward(self, estimate, target):
                    spec = torch.stft(estimate, 512, return_complex=True)
                    bands = torch.matmul(self.bands, spec.abs() ** 2).pow(0.5)
                    ref = torch.matmul(self.bands, torch.stft(target, 512).abs() ** 2)
                    return (bands - ref.pow(0.5)).abs().mean()
            """,
            confidence="medium",
            line=6,
            column=17,
            also=[(8, 25)],
            note="a loss's prediction (its first input): a band of a silent estimate is 0; "
            "the target's bands (line 8, low) carry no gradient of the prediction",
        ),
        Invalid(
            """
            import torch
            d = torch.sqrt(((a - b) ** 2).sum(-1))
            """,
            confidence="low",
            line=2,
            column=5,
            fixed="""
            import torch
            d = torch.linalg.vector_norm(a - b, dim=-1)
            """,
        ),
        Invalid(
            """
            import torch
            def norm(x):
                s = x.pow(2).sum(dim=1, keepdim=True)
                return s.sqrt() + 1e-8
            """,
            confidence="low",
            line=4,
            column=12,
            fixed="""
            import torch
            def norm(x):
                s = x.pow(2).sum(dim=1, keepdim=True)
                return torch.linalg.vector_norm(x, dim=1, keepdim=True) + 1e-8
            """,
            note="an eps outside the root is not a guard",
        ),
        Invalid(
            """
            import torch
            r = (x.real ** 2 + x.imag.pow(2)) ** 0.5
            """,
            confidence="low",
            line=2,
            column=5,
        ),
        Invalid(
            """
            import torch
            def angular_loss(cos):
                return torch.sqrt(1 - cos ** 2).mean()
            """,
            line=3,
            column=12,
            note="`1 - cos**2` is 0 at cos = +-1",
        ),
        Invalid(
            """
            import torch
            def periodicity(a):
                return torch.sqrt(1 - a * a)
            """,
            confidence="low",
            line=3,
            column=12,
            note="`1 - a**2` of an unknown value: 0 only if it reaches +-1",
        ),
        Invalid(
            """
            import torch
            def f(x):
                v = x.var(-1, keepdim=True)
                return (x - x.mean(-1, keepdim=True)) * torch.rsqrt(v)
            """,
            confidence="low",
            line=4,
            column=45,
            note="rsqrt of a variance: inf for a constant row",
        ),
        Invalid(
            """
            import torch
            def f(a, b):
                d2 = torch.sum(torch.square(a - b), dim=-1).clamp(min=0)
                return d2.pow(0.5)
            """,
            confidence="low",
            line=4,
            column=12,
            note="`clamp(min=0)` is not a guard: the gradient at 0 is still infinite",
        ),
        Invalid(
            """
            import torch
            def cdist_loss(x1, x2):
                x1n = (x1**2).sum(-1, keepdim=True)
                x2n = (x2**2).sum(-1, keepdim=True)
                return (x1n + x2n.T - 2 * x1 @ x2.T).clamp(min=0).sqrt().mean()
            """,
            line=5,
            column=12,
            note="a difference clamped at 0: equal points cancel to exactly 0",
        ),
        Invalid(
            """
            import torch
            def pairwise(x):
                d2 = ((x.unsqueeze(1) - x.unsqueeze(0)) ** 2).sum(-1)
                return torch.sqrt(d2)
            class Repulsion(torch.nn.Module):
                def forward(self, x):
                    return pairwise(x).mean()
            """,
            line=4,
            column=12,
            confidence="high",
            fixed="""
            import torch
            def pairwise(x):
                d2 = ((x.unsqueeze(1) - x.unsqueeze(0)) ** 2).sum(-1)
                return torch.linalg.vector_norm(x.unsqueeze(1) - x.unsqueeze(0), dim=-1)
            class Repulsion(torch.nn.Module):
                def forward(self, x):
                    return pairwise(x).mean()
            """,
            note="pairwise distances of a set with itself (the diagonal is exactly 0), in a "
            "helper a layer's forward calls",
        ),
        Invalid(
            """
            import torch
            def pairwise(x):
                d2 = ((x.unsqueeze(1) - x.unsqueeze(0)) ** 2).sum(-1)
                return torch.sqrt(d2)
            """,
            line=4,
            column=12,
            confidence="low",
            fixed="""
            import torch
            def pairwise(x):
                d2 = ((x.unsqueeze(1) - x.unsqueeze(0)) ** 2).sum(-1)
                return torch.linalg.vector_norm(x.unsqueeze(1) - x.unsqueeze(0), dim=-1)
            """,
            note="the same helper with no module, loss or caller that differentiates it",
        ),
        Invalid(
            """
            import torch
            def half_angle_sine(R):
                cosine = 0.5 * (R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2] - 1)
                return (0.5 * (1 - cosine)).clamp(0, 1).sqrt()
            """,
            line=4,
            column=12,
            confidence="medium",
            fixed=None,
            note="a scaled difference clamped at 0 in a library function: the identity "
            "rotation makes it exactly 0, and the caller's rotations may require grad",
        ),
    ]
    PROBE = Probe(
        hazard="torch.sqrt(((a - b) ** 2).sum(-1))",
        fix="torch.linalg.vector_norm(a - b, dim=-1)",
        inputs={"a": "torch.tensor([[1.0, 2.0]])", "b": "torch.tensor([[1.0, 2.0]])"},
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        o = op(ctx, node)
        arg: cst.BaseExpression | None = None
        name = ""
        if o is not None and o.name in ("sqrt", "rsqrt") and o.input is not None:
            if o.spelling == "method" and node.args:
                return
            arg, name = o.input, o.name
        elif o is not None and o.name == "pow" and o.input is not None:
            arg, name = o.input, _root_kind(ctx, o.arg(0, "exponent"))
            if not name:
                self._fractional_power(node, o.input, o.arg(0, "exponent"))
        elif (
            isinstance(node.func, cst.Name)
            and node.func.value == "pow"
            and ctx.lookup("pow") is None
            and "pow" not in ctx.imports
            and len(node.args) == 2
        ):
            arg, name = node.args[0].value, _root_kind(ctx, node.args[1].value)
            if not has_tensor_op(ctx, ctx.value(arg)):
                return
        if arg is not None and name:
            self._check(node, arg, name)
        elif o is not None and o.name == "norm" and o.input is not None:
            self._norm_twice(node, o)
        elif isinstance(node.func, cst.Name) and ctx.function is not None:
            self._judge_nested(node)

    def _norm_twice(self, node: cst.Call, o) -> None:
        """`torch.norm(pos[j] - pos[i], dim=-1)`, `(x[:, None] - x[None]).norm(dim=-1)`: the
        Euclidean norm of a difference of one tensor's entries (a pair of an atom with itself,
        padding) in code the project differentiates twice (`autograd.grad(energy, pos,
        create_graph=True)`: forces from energies, a gradient penalty). Its first derivative
        at 0 is 0, but its second is NaN there."""
        ctx = self.ctx
        order = o.arg(0, "p") if o.name == "norm" else None
        order = order if order is not None else keyword(node, "ord")
        if order is not None and const(ctx, order) != 2.0 and ctx.code(order) != '"fro"':
            return
        pair = _same_tensor_pair(ctx, ctx.value(o.input))
        if pair is None or not gradient_evident(ctx) or not gradient_flows(ctx, o.input):
            return
        where = double_backward(ctx)
        if where is None or not_a_tensor(ctx, ctx.value(o.input)):
            return
        message = (
            f"norm of a difference of one tensor's entries, which is exactly 0 for {pair}, in "
            f"code the project differentiates twice ({where}): the norm's second derivative "
            "is NaN at 0 (its first is not); use `sqrt((d ** 2).sum(-1) + eps)` or mask "
            "those pairs out"
        )
        confidence = "high" if pair == "a point and itself" else "medium"
        self.report(node, message, confidence=confidence)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Power):
            name = _root_kind(self.ctx, node.right)
            if name and has_tensor_op(self.ctx, self.ctx.value(node.left)):
                self._check(node, node.left, name)
            elif not name:
                self._fractional_power(node, node.left, node.right)

    def _fractional_power(
        self, node: cst.CSTNode, base: cst.BaseExpression, exponent: cst.BaseExpression | None
    ) -> None:
        """`(1 - p) ** gamma` with p a sigmoid or softmax output and gamma set by the caller
        (a parameter or attribute): the base is exactly 0 where p saturates, and a power
        below 1 has an infinite slope there (a focal loss with gamma = 0.5)."""
        ctx = self.ctx
        if exponent is None or not _caller_setting(ctx, exponent):
            return
        reason = zero_reason(ctx, ctx.value(base), "log")
        if reason is None or not reason.startswith("`1 - p` of a s"):
            return
        if selection(ctx, base) is not None or guarded_by_condition(ctx, base):
            return
        if not gradient_flows(ctx, base) or not_a_tensor(ctx, ctx.value(base)):
            return
        power = ctx.code(exponent)
        message = (
            f"power `** {power}` of {reason}, which is exactly 0 where the probability "
            f"saturates: for `{power}` below 1 its gradient there is infinite and turns into "
            "NaN; clamp the base (`(1 - p).clamp_min(eps)`) or keep the exponent at least 1"
        )
        self.report(node, message, confidence="medium")

    def _check(
        self, node: cst.CSTNode, arg: cst.BaseExpression, name: str, passed: bool = False
    ) -> None:
        """The root `node` of `arg`; `passed`: `arg` is what the enclosing function passes
        for the parameter whose root a nested function takes (`node` lies in that one)."""
        ctx = self.ctx
        reason = zero_reason(ctx, ctx.value(arg), "sqrt")
        found = None
        if reason is None:
            found = origin_of(ctx, ctx.deref(ctx.value(arg)).node, ("sum_of_squares",))
            reason = f"a sum of squares ({found.what})" if found is not None else None
        if reason is None and expanded_distance(ctx, ctx.value(arg)):
            self._expanded(node, arg, name)
            return
        if reason is None and not passed:
            self._defer(node, arg, name)
        if reason is None or selection(ctx, arg) is not None or guarded_by_condition(ctx, arg):
            return
        if name == "sqrt" and not gradient_flows(ctx, arg):
            return  # sqrt(0) = 0 is fine forward; only its gradient is NaN
        if reason == "a sigmoid output" and traced_dtype(ctx, ctx.value(arg)) != "float16":
            return  # a float32 sigmoid is 0 only below a logit of -103 (float16: -17)
        if name == "sqrt" and (reason == "a ReLU output" or _selected_zero(ctx, arg, reason)):
            return  # ReLU, masked_fill and where select in backward: no inf * 0 at their 0
        if not_a_tensor(ctx, ctx.value(arg)):
            return
        if name == "rsqrt":
            message = (
                f"rsqrt of {reason}, which can be exactly 0: the result is inf; "
                "put an eps inside (`torch.rsqrt(v + eps)`)"
            )
        else:
            message = (
                f"sqrt of {reason}, which can be exactly 0: its gradient there is NaN; use "
                "`torch.linalg.vector_norm(...)` or put an eps inside the root "
                "(`torch.sqrt(s + eps)`)"
            )
        # sqrt's harm is its gradient only: shown by default where something differentiates
        # this code, or where the code itself expects the value to be 0 (it tests it, or
        # clamps a number less a value at 0: the value reaches the number at its bound)
        gap = _clamped_difference(ctx, arg) if reason == "a value clamped at 0" else None
        clamped, at_bound = gap is not None, gap == "a number less a value"
        expected = zero_tested(ctx, ctx.value(arg))
        evident = gradient_evident(ctx)
        unseen = name == "sqrt" and not expected and not at_bound and not evident
        if found is not None:
            confidence = "low" if unseen else found.confidence
            if confidence == "low" and not unseen and _of_prediction(ctx, name, arg):
                confidence = "medium"
            self.report(node, message, None, confidence=confidence, related=related(found))
            return
        fix = self._fix(node, arg) if name == "sqrt" and not passed else None
        if fix is not None and evident and double_backward(ctx) is not None:
            fix = None  # differentiated twice: `vector_norm`'s second derivative is NaN at 0 too
        confidence = grade(ctx, reason, ctx.value(arg))
        lone = _lone_square(ctx, arg) if name == "sqrt" else None
        if lone is not None:
            text = ctx.code(unparenthesized(lone))
            text = text if len(text) <= 40 else "x"
            receiver = f"({text})" if text != "x" and needs_parens(unparenthesized(lone)) else text
            message = (
                f"sqrt of a square, taken entry by entry: it is `|{text}|`, whose gradient "
                "through the root is NaN at every entry that is 0 (one tie is enough, no "
                f"sum has to vanish); use `{receiver}.abs()`"
            )
            fix = self._abs_fix(node, arg, lone) if not passed else None
            if confidence == "low":
                confidence = "medium"  # ties entry by entry: a ReLU's zeros, padding, x - x
        if name == "sqrt" and reason == "a value clamped at 0" and not clamped:
            # clamp's backward selects like ReLU's: only a value exactly 0 before the clamp
            # hurts, which a difference reaches by cancellation and a variance, eigenvalue or
            # pivot clamped against rounding only when degenerate
            confidence = "low"
        if reason == "`1 - x**2`" and not unit_bounded(ctx, ctx.value(arg)):
            # `1 - exp(-k)**2`, `1 - r**2` with |r| < 1: rarely exactly 0; an x the callers
            # give (a margin loss's cosine) may reach +-1
            confidence = "medium" if unit_unknown(ctx, ctx.value(arg)) else "low"
        elif confidence == "low" and expected:
            confidence = "high"  # `mask = theta_sq > 0` elsewhere: zeros are expected
        elif (
            confidence == "low"
            and name == "sqrt"
            and not passed
            and _floored_after(ctx, node, arg)
            and not _own_weights(ctx, ctx.value(arg))
        ):
            confidence = "medium"  # `sqrt(s) + eps`: the author expects the root to be 0
        elif confidence == "low" and root_of_features(ctx, ctx.value(arg)):
            confidence = "medium"  # a layer's features: a zero vector at a position
        elif confidence == "low" and _of_prediction(ctx, name, arg):
            confidence = "medium"  # a loss's prediction: a silent output is 0
        elif confidence == "low" and reason == MEAN_SQUARED_ERROR and objective(ctx):
            confidence = "medium"  # an RMSE loss: 0 wherever the prediction fits exactly
        elif confidence == "low" and name == "sqrt" and planar_radius(ctx, ctx.value(arg)):
            confidence = "medium"  # `x**2 + y**2` of `xyz`: 0 for a vector along z
        if unseen or (name == "sqrt" and _safe_value_substituted(ctx, arg)):
            confidence = "low"  # `r = torch.where(sphere, 0.5, r)` first: the double-where fix
        elif at_bound and not evident and confidence == "high":
            confidence = "medium"  # a library's function: its caller's tensors may need grad
        self.report(node, message, fix, confidence=confidence)

    def _defer(self, node: cst.CSTNode, arg: cst.BaseExpression, name: str) -> None:
        """`sqrt(theta2)` of a parameter of a function nested in another one: judged where
        the enclosing function calls it, with the value it passes (`_judge_nested`)."""
        ctx = self.ctx
        func = ctx.function
        if name != "sqrt" or func is None or not isinstance(arg, cst.Name):
            return
        if ctx.deref(ctx.value(arg)).node is not arg or ctx.parameter(arg.value) is None:
            return  # rebound before the root
        outer = [n for n in ctx.stack if isinstance(n, cst.FunctionDef) and n is not func]
        params = [p.name.value for p in func.params.params]
        if outer and arg.value in params:
            pending = self.ctx.shared.setdefault("sqrt-at-zero nested roots", {})
            key = (id(outer[-1]), func.name.value)
            pending.setdefault(key, []).append((node, params.index(arg.value), arg.value))

    def _judge_nested(self, call: cst.Call) -> None:
        """A call of a nested function that takes the root of a parameter: the root is
        judged with what this call passes (`theta2 = a @ a.T; _rotation(a, theta2)`)."""
        ctx = self.ctx
        pending = ctx.shared.get("sqrt-at-zero nested roots", {})
        for node, index, param in pending.get((id(ctx.function), call.func.value), ()):  # type: ignore[union-attr]
            passed = positional(call, index, param)
            if passed is not None:
                self._check(node, passed, "sqrt", passed=True)

    def _expanded(self, node: cst.CSTNode, arg: cst.BaseExpression, name: str) -> None:
        """The root of `|x|**2 + |y|**2 - 2 x.y`: below 0 after rounding, NaN forward."""
        ctx = self.ctx
        if selection(ctx, arg) is not None or guarded_by_condition(ctx, arg):
            return
        if not_a_tensor(ctx, ctx.value(arg)):
            return
        message = (
            f"{name} of a squared distance expanded as `|x|**2 + |y|**2 - 2 x.y`: for "
            "vectors close together the terms cancel and rounding leaves a value below 0, "
            "so the result is NaN in the forward pass; use `torch.cdist(x, y)` or clamp "
            "the value (`.clamp_min(eps)`) before the root"
        )
        self.report(node, message, confidence="high")

    def _abs_fix(
        self, node: cst.CSTNode, arg: cst.BaseExpression, base: cst.BaseExpression
    ) -> FixSpec | None:
        """`torch.sqrt(d ** 2)` -> `d.abs()`, where the square is written in the root."""
        if square_of(self.ctx, unparenthesized(arg), self.ctx.env) is None:
            return None
        base = unparenthesized(base)
        code = self.ctx.code(base)
        return self.fix(
            "unsafe",
            "Replace with `.abs()`",
            (node, f"({code}).abs()" if needs_parens(base) else f"{code}.abs()"),
        )

    def _fix(self, node: cst.CSTNode, arg: cst.BaseExpression) -> FixSpec | None:
        ctx = self.ctx
        value = ctx.deref(ctx.value(arg))
        if value.mutations or not same_bindings(ctx, value.node, value.env):
            return None
        o = op(ctx, value.node, value.env)  # type: ignore[arg-type]
        if o is None or o.name != "sum" or o.input is None or o.qualname == "torch.nansum":
            return None
        if o.spelling == "method" and isinstance(o.call.func, cst.Attribute):
            if o.call.func.attr.value != "sum":
                return None
        base = square_of(ctx, ctx.deref(Value(o.input, value.env)).node, value.env)  # type: ignore[arg-type]
        if base is None or ctx.deref(Value(o.input, value.env)).node is not o.input:
            return None
        rest = o.rest()
        if any(a.keyword is not None and a.keyword.value not in ("dim", "keepdim") for a in rest):
            return None
        dim = positional(o.call, 1 if o.spelling == "function" else 0, "dim")
        keep = keyword(o.call, "keepdim") or positional(
            o.call, 2 if o.spelling == "function" else 1
        )
        func = ctx.spell("torch.linalg.vector_norm")
        if func is None:
            return None
        parts = [ctx.code(unparenthesized(base))]
        if dim is not None:
            parts.append(f"dim={ctx.code(dim)}")
        if keep is not None:
            parts.append(f"keepdim={ctx.code(keep)}")
        code = f"{func}({', '.join(parts)})"
        return self.fix("unsafe", "Replace with `torch.linalg.vector_norm`", (node, code))


_FLOORS = frozenset({"clamp", "clamp_min", "clip", "maximum", "max", "fmax"})


def _lone_square(ctx, arg: cst.BaseExpression) -> cst.BaseExpression | None:
    """x of a root taken of one square `x ** 2` (also through a variable), with no sum
    between: the root is |x| entry by entry."""
    found = ctx.deref(ctx.value(arg))
    node = unparenthesized(found.node)
    return square_of(ctx, node, found.env)  # type: ignore[arg-type]


def _of_prediction(ctx, name: str, arg: cst.BaseExpression) -> bool:
    """The root of a band energy a loss computes from its prediction alone
    (`evidence.loss_prediction_spectrum`): 0 in a silent frame, and its gradient flows."""
    return name == "sqrt" and loss_prediction_spectrum(ctx, ctx.value(arg))


def _floored_after(ctx, node: cst.CSTNode, arg: cst.BaseExpression) -> bool:
    """The root's value is kept from 0 by an eps afterwards (`sqrt(s) + eps`,
    `sqrt(s)[index] + eps`, `n = sqrt(s); x / (n + eps)`, `n.clamp(min=eps)`): the author expects the root to be 0,
    where its own gradient is already infinite."""
    env = ctx.value(arg).env
    ancestors = list(ctx.ancestors())[:3]
    below: cst.CSTNode = node
    for above in ancestors:
        if _floors(ctx, above, below, env):
            return True
        if isinstance(above, cst.Subscript) and above.value is below:
            below = above  # `sqrt(var)[batch] + eps`: gathered per node, then floored
            continue
        if not isinstance(above, (cst.Arg, cst.Attribute)):
            break
        below = above
    assign = ancestors[0] if ancestors else None
    if not (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0].target, cst.Name)
        and ctx.function is not None
    ):
        return False
    name = assign.targets[0].target.value
    for use in descendants(ctx.function):
        if isinstance(use, cst.Name) and use.value == name:
            continue
        children = list(use.children) if isinstance(use, (cst.BinaryOperation, cst.Call)) else []
        for child in children:
            inner = child.value if isinstance(child, (cst.Arg, cst.Attribute)) else child
            if isinstance(inner, cst.Name) and inner.value == name:
                if _floors(ctx, use, child, env):
                    return True
    return False


def _own_weights(ctx, value: Value, depth: int = 0) -> bool:
    """Computed only from attributes of `self` and constants (`torch.exp(self._weight) *
    self.mask`): a module's own weights, whose norm is 0 only if every learned entry is."""
    if isinstance(value.node, cst.Attribute) and isinstance(value.node.value, cst.Name):
        return value.node.value.value == "self"
    found = ctx.deref(value)
    node = found.node
    if depth > 8 or node is None:
        return False
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Name) and ctx.parameter(node.value) is not None:
        return _passed_own_attributes(ctx, node.value)  # `op(x, self.r_weight)` at each call
    if isinstance(node, cst.Attribute):
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            return True
        return _own_weights(ctx, Value(node.value, found.env), depth + 1)
    parts: list[cst.BaseExpression] = []
    if isinstance(node, cst.BinaryOperation):
        parts = [node.left, node.right]
    elif isinstance(node, cst.UnaryOperation):
        parts = [node.expression]
    elif isinstance(node, cst.Subscript):
        parts = [node.value]
    elif isinstance(node, cst.Call):
        callee = ctx.callee(node, found.env)
        parts = [a.value for a in node.args if a.keyword is None]
        if callee.receiver is not None:
            parts.append(callee.receiver)
        elif not (callee.qualname or "").startswith("torch."):
            return False
    return bool(parts) and all(_own_weights(ctx, Value(p, found.env), depth + 1) for p in parts)


def _passed_own_attributes(ctx, param: str) -> bool:
    """Every known caller (at least one) passes an attribute of its `self` as `param`."""
    project = ctx.project
    key = function_key(ctx)
    found = project.passed(key, param) if project is not None and key is not None else []
    return bool(found) and all(
        isinstance(arg, ast.Attribute)
        and isinstance(arg.value, ast.Name)
        and arg.value.id == "self"
        for _, _, arg in found
    )


def _floors(ctx, above: cst.CSTNode, below: cst.CSTNode, env) -> bool:
    """`below + eps`, `below.clamp(min=eps)`, `torch.clamp(below, min=eps)`, `max(below,
    eps)`: `above` keeps `below` from 0."""
    if isinstance(above, cst.BinaryOperation) and isinstance(above.operator, cst.Add):
        other = above.right if above.left is below else above.left
        return eps_like(ctx, other, env)
    if isinstance(above, cst.Call) and call_name(above) in _FLOORS:
        bounds = [a.value for a in above.args if a is not below and a.value is not below]
        return any(eps_like(ctx, b, env) for b in bounds)
    return False


def _caller_setting(ctx, exponent: cst.BaseExpression) -> bool:
    """An exponent the caller chooses: a parameter of the function, or an attribute of
    `self` (`self.gamma`), not a constant or a value the function computes."""
    if isinstance(exponent, cst.Name):
        return const(ctx, exponent) is None and ctx.parameter(exponent.value) is not None
    return (
        isinstance(exponent, cst.Attribute)
        and isinstance(exponent.value, cst.Name)
        and exponent.value.value == "self"
    )


def _under_views(ctx, arg: cst.BaseExpression) -> Value:
    """The value `arg` is a view or cast of (`x.clamp(min=0).float()` -> the clamp)."""
    value = ctx.deref(ctx.value(arg))
    for _ in range(6):
        callee = ctx.callee(value.node, value.env) if isinstance(value.node, cst.Call) else None
        if callee is None or callee.method not in TRANSPARENT_METHODS or callee.receiver is None:
            break
        value = ctx.deref(Value(callee.receiver, value.env))
    return value


def _safe_value_substituted(ctx, arg: cst.BaseExpression) -> bool:
    """A variable the root is computed from was rebound as `torch.where(c, safe, v)` with a
    constant `safe` (`torch.full_like(v, 0.5)`): the documented way to keep a singular
    point out of a root's backward, so the author has dealt with the entries at 0."""
    found = ctx.deref(ctx.value(arg))
    for name in descendants(found.node, every=True):
        if not isinstance(name, cst.Name):
            continue
        bound = ctx.deref(Value(name, found.env)).node
        o = op(ctx, bound, found.env) if isinstance(bound, cst.Call) else None
        if o is None or o.name != "where" or len(bound.args) != 3:  # type: ignore[union-attr]
            continue
        arms = [a.value for a in bound.args[1:]]  # type: ignore[union-attr]
        if any(_constant_fill(ctx, a) for a in arms) and any(isinstance(a, cst.Name) for a in arms):
            return True
    return False


def _constant_fill(ctx, expr: cst.BaseExpression) -> bool:
    """`0.5`, `torch.full_like(v, 0.5)`, `torch.ones_like(v)`: a constant safe value."""
    if const(ctx, expr) is not None:
        return const(ctx, expr) != 0
    if isinstance(expr, cst.Call):
        qual = ctx.callee(expr).qualname or ""
        if qual in ("torch.ones_like", "torch.ones"):
            return True
        if qual == "torch.full_like" and len(expr.args) >= 2:
            return (const(ctx, expr.args[1].value) or 0) != 0
    return False


def _clamped_difference(ctx, arg: cst.BaseExpression) -> str | None:
    """What `arg` clamps at 0 that can be exactly 0 there, or None: "a difference"
    (`(a - b).clamp(min=0)`, `torch.clamp(x2 + y2 - 2 * xy, min=0)`: equal terms cancel),
    "a number less a value" (`(0.5 * (1 - c)).clamp(0, 1)`: the clamp says the value passes
    the number, which it reaches at its bound, the cosine of the identity rotation), or "a
    determinant" (a product of determinants, exactly 0 for a degenerate matrix and
    underflowing for tiny ones)."""
    value = _under_views(ctx, arg)
    o = op(ctx, value.node, value.env)  # type: ignore[arg-type]
    if o is None or o.name not in ("clamp", "clamp_min", "maximum", "max") or not o.input:
        return None
    clamped = o.input
    if o.name in ("maximum", "max") and is_zero(ctx, clamped, value.env):
        clamped = o.arg(0, "other")  # `torch.max(zero, 1 + m00 - m11 - m22)`
        if clamped is None:
            return None
    inner = ctx.deref(Value(clamped, value.env)).node
    if any(_determinant(ctx, f, value.env) for f in factors(inner)):
        return "a determinant"  # `(det(S1) * det(S2)).clamp(0)`: a flat or tiny box
    for _ in range(4):  # `0.5 * (1 - c)`, also through names (`d = d * 2` in a loop: bounded)
        stripped = unscaled(ctx, inner, value.env)
        if stripped is inner:
            break
        inner = ctx.deref(Value(stripped, value.env)).node  # type: ignore[arg-type]
    whole = inner
    while isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Add):
        inner = inner.left  # `a - b + c`: the difference is on the left
    if not (isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Subtract)):
        return None
    if _discriminant(ctx, inner, value.env):
        return None
    if const(ctx, inner.left, value.env) or _leading_number(ctx, whole, value.env):
        return "a number less a value"  # `1 - c`, `1 + m00 - m11 - m22` (0 at the identity)
    return "a difference"


def _same_tensor_pair(ctx, value) -> str | None:
    """What makes `a - b` 0 where both sides are entries of one tensor: "a point and itself"
    (`x[:, None] - x[None]`), "a pair of an entry with itself or with padding" (`pos[j] -
    pos[i]` of index tensors, `pos[edge[1]] - pos[edge[0]]`, `x.index_select(0, j) - ...`,
    also through names); None otherwise."""
    found = ctx.deref(value)
    node = found.node
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)):
        return None
    sides = [ctx.deref(Value(side, found.env)).node for side in (node.left, node.right)]
    roots = [_picked_root(side) for side in sides]
    if roots[0] is None or roots[0] != roots[1]:
        return None
    if any(broadcast_copy(side) for side in sides):
        return "a point and itself"
    loops = _graph_loops(ctx, sides[0], found.env)
    if loops is False:
        return None  # `radius_graph(pos, r)` pairs distinct atoms: 0 only if two coincide
    return "a point and itself" if loops else "a pair of an entry with itself or with padding"


#: Graph builders whose `loop` keyword (default False) says whether a node is paired with
#: itself.
_GRAPH_BUILDERS = frozenset({"radius_graph", "knn_graph"})


def _graph_loops(ctx, side: cst.CSTNode, env) -> bool | None:
    """For `pos[row]` with `row, col = radius_graph(pos, r, loop=...)` (or `pos[edge_index[0]]`):
    whether the graph pairs each node with itself (`loop=True`), False where it does not
    (`loop` left out or False), None where the indices come from elsewhere or the setting
    is not a literal."""
    if not isinstance(side, cst.Subscript) or len(side.slice) != 1:
        return None
    index = side.slice[0].slice
    if not isinstance(index, cst.Index):
        return None
    found = ctx.deref(Value(index.value, env))
    if isinstance(found.node, cst.Name):  # `row, col = edge_index`
        found = unpacked_value(ctx, found.node, found.env) or found
    node = found.node
    for _ in range(4):
        if isinstance(node, cst.Subscript):
            node = ctx.deref(Value(node.value, env)).node  # `edge_index[0]`
        else:
            break
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    if name not in _GRAPH_BUILDERS:
        return None
    loop = keyword(node, "loop")
    if loop is None:
        return False
    if isinstance(loop, cst.Name) and loop.value in ("True", "False"):
        return loop.value == "True"
    # `loop=self.add_self_loops`, then `if self.add_self_loops: ... else: ...`
    return branch_taken(ctx, ctx.code(loop))


def _picked_root(node: cst.CSTNode) -> str | None:
    """The code of the tensor `x[i]`, `x[:, None]`, `x.index_select(0, i)`, `x.gather(...)`
    picks entries of; None for anything else (a difference of two tensors)."""
    if isinstance(node, cst.Subscript):
        return dotted_name(node.value)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value in ("index_select", "gather", "unsqueeze"):
            return dotted_name(node.func.value)
    return None


def _leading_number(ctx, node: cst.BaseExpression, env) -> bool:
    """A chain of sums and differences whose first term is a number and which subtracts a
    value (`1 + m00 - m11 - m22`): the number less what the values add up to."""
    subtracted = False
    while isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Add, cst.Subtract)
    ):
        subtracted = subtracted or isinstance(node.operator, cst.Subtract)
        node = node.left
    return subtracted and const(ctx, node, env) is not None


def _determinant(ctx, expr: cst.BaseExpression, env) -> bool:
    node = ctx.deref(Value(expr, env)).node
    o = op(ctx, node, env) if isinstance(node, cst.Call) else None
    return o is not None and o.name == "det"


def _discriminant(ctx, diff: cst.BinaryOperation, env) -> bool:
    """`b**2 - 4 * a * c`: a quadratic's discriminant, 0 only at a double root (a ray
    exactly tangent to a circle); the clamp guards rounding, not an everyday 0."""
    if square_of(ctx, diff.left, env) is None:
        return False
    return any(const(ctx, f, env) == 4.0 for f in factors(diff.right))


_FILLS = frozenset({"a tensor filled with 0", "a `torch.where` with a 0 branch"})


def _selected_zero(ctx, arg: cst.BaseExpression, reason: str) -> bool:
    """The root is taken of a `masked_fill(m, 0)` / `torch.where(c, x, 0)` result itself:
    their backward passes no gradient to the filled entries, so sqrt's infinite slope at
    those zeros never reaches an input."""
    if reason not in _FILLS:
        return False
    value = _under_views(ctx, arg)
    o = op(ctx, value.node, value.env)  # type: ignore[arg-type]
    return o is not None and o.name in ("masked_fill", "where")


def _root_kind(ctx, exponent: cst.BaseExpression | None) -> str:
    """ "sqrt" for an exponent of 0.5, "rsqrt" for -0.5, else "" (also at the defaults of
    the function's parameters: `x.pow(0.5 * power)` with `power=1.0`)."""
    if exponent is None:
        return ""
    value = const(ctx, exponent)
    if value is None:
        value = _at_defaults(ctx, exponent)
    if value == 0.5:
        return "sqrt"
    if value == -0.5:
        return "rsqrt"
    return ""


def _at_defaults(ctx, expr: cst.BaseExpression) -> float | None:
    """The value of an expression of numbers and parameters of the function at the
    parameters' defaults (`0.5 * power` with `power: float = 1.0`), by `const` with each
    parameter the function does not reassign bound to its default."""
    env = dict(ctx.env)
    for name in descendants(expr):
        param = ctx.parameter(name.value) if isinstance(name, cst.Name) else None
        binding = ctx.lookup(name.value) if param is not None else None
        if param is not None and param.default is not None and binding and binding.value is None:
            env[name.value] = Binding(param.default, ctx.env)
    return const(ctx, expr, env)
