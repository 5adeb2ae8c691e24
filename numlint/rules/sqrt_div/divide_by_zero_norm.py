"""NUM202 division-by-zero-norm."""

from __future__ import annotations

import libcst as cst

from numlint.analysis.arrays import not_a_tensor
from numlint.analysis.context import Context, Value
from numlint.analysis.dtypes import traced_dtype
from numlint.analysis.evidence import (
    batch_token_count,
    caller_rows_cosine,
    count_tested_by_callers,
    grade,
    joins_unit_vectors,
    learned_weights_sum,
    loss_target_total,
    mask_computed,
    minibatch_std,
    neighbour_mean,
    own_norm_of_features,
    padding_mask,
    relative_to_target,
    renormalised_masked_softmax,
    selection_can_be_empty,
    selection_mask,
    sibling_tested_empty,
    sum_of_own_selection,
    vanishes_together,
    warned_near_zero,
    weights_sum,
    whole_masked_mean,
    zero_started_tally,
    zero_tested,
)
from numlint.analysis.gradients import (
    compared_here,
    constant_table,
    gradient_flows,
    objective,
    only_thresholds,
    trained,
)
from numlint.analysis.guards import (
    assigned_here,
    guarded_by_condition,
    inf_repaired_later,
    replaced_by_where,
    returned_with_test,
    rows_kept_nonzero,
    sanitised_later,
    selection,
    statement,
    tested_in_total,
)
from numlint.analysis.ops import const, is_zero, names, op, same_code, same_value, unscaled
from numlint.analysis.semantics import keyword, positional
from numlint.analysis.settings import settings_only
from numlint.analysis.summaries import averaged_parameters
from numlint.analysis.zeros import (
    denominator_reason,
    factors,
    fraction_of_whole,
    overlap_masks,
    positive_value,
)
from numlint.diagnostic import Confidence
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.tree import call_name, descendants

#: A spread is 0 wherever its input is constant (silence, a flat patch, a dead feature): a
#: much weaker condition than an all-zero vector.
_SPREADS = frozenset({"a standard deviation", "a variance"})
#: Reasons that reduce a whole row: a row of a table that is 0 spoils every use of the row,
#: where an entry that is 0 (`1 / sqrt(1 - alphas_cumprod)`) spoils only the calls that
#: index it.
_REDUCTIONS = frozenset({"a sum", "a norm", "a sum of squares", "a count", *_SPREADS})
#: `2 * (a * b).sum() / (a.sum() + b.sum())`: Dice, F1 and IoU of two masks.
_OVERLAP = "the total size of two masks (a Dice or IoU denominator)"
#: A value the function tests for 0 (or a small bound) and only warns about.
_WARNED = "a value the code tests for 0 and only warns about"
#: `if rms.sum() < eps: ...` then `x / rms`: the test passes while one entry is 0.
_TOTAL = "a value whose total the code tests for 0, not each entry"
#: `r = a / b`, then `r[torch.isinf(r)] = 0`: the code expects b to be 0.
_INF_ONLY = (
    "a value the code expects to be 0 (it replaces the inf of x / 0 afterwards, not the NaN of "
    "0 / 0)"
)
#: `2 * p * r / (p + r)` of two rates: an F-score's precision and recall are 0 together.
_HARMONIC = "a sum of two rates that are 0 together (a harmonic mean or F-score)"
#: `tp / (tp + fp)`: a part over a sum of terms that holds it.
_WHOLE = "a sum of terms that holds the numerator (all 0 together: no positive at all)"
_TALLY = "a per-class tally that starts at 0 (a class no batch has held keeps it)"


class DivideByZeroNorm(Rule):
    """Division by a norm, sum, count, std or variance that can be 0: 0/0 = NaN; clamp it.

    What it does:
    Flags `x / x.norm(...)`, `x / torch.norm(x, ...)`, `x / torch.linalg.vector_norm(...)`,
    `p / p.sum(-1, keepdim=True)`, `(x * m).sum() / m.sum()`, `(x - mean) / x.std()`,
    `x / x.abs().max()`,
    `/ torch.sqrt(var)`, `torch.div(...)`, `x.div(...)` and `x /= ...` when the denominator
    has no guard, also when it reaches the division through a variable, and the same division
    spelled as a product with a reciprocal (`x * n.reciprocal()`, `x * (1 / n)`, `x * n **
    -1`, `x.mul(torch.reciprocal(n))`, `x *= 1 / n`; a reciprocal alone is inf, not NaN, and
    is not reported, nor one whose inf entries are replaced before the product). In training
    code (a loss, a module's `forward`, a training step, a function returning what a loss
    computes, and what they call) it also flags the mean of a boolean selection,
    `loss[scores > t].mean()`, `torch.mean(x[mask])`, or a selection handed to a function
    of the project that takes its mean (`reduce(loss[mask == 1], "mean")`): the mean of no
    entries is 0/0 too. A test of the mask or of the selection's size before it
    (`if mask.any():`, `n = len(x)` ... `if n >= 1:`) guards it.

    The denominator of a harmonic mean or F-score of two ratios, `2 * p * r / (p + r)`
    (also `(1 + b**2) * p * r / (b**2 * p + r)`): both ratios are 0 where their numerators
    are (no true positive), and the quotient is 0/0.

    An angle over its sine or tangent, or a sine over its angle (`phi / (2 * phi.sin())`,
    `torch.sin(x) / x`), is 0/0 at angle 0: medium where the angle is measured (`acos` of a
    cosine, `atan2`, a norm, also in a helper of the file), which is exactly 0 for an
    identity rotation; low for any other angle.

    Why is this bad?
    A zero row, an empty mask or a constant feature makes the denominator exactly 0; the
    quotient is 0/0 = NaN (or inf), forward and backward, and a single NaN spreads to every
    parameter. Guard the denominator: `den.clamp_min(eps)`, `den + eps`, or for the L2
    normalisation of a vector `F.normalize(x, dim=d)`.

    Fix safety:
    Only `x / x.norm(dim=d, keepdim=True)` (and `torch.norm` / `torch.linalg.norm` /
    `torch.linalg.vector_norm` with p = 2) has a fix, `F.normalize(x, dim=d)`. It is unsafe:
    F.normalize clamps the norm at 1e-12, so values change for tiny vectors.

    A sum counts as possibly 0 unless its terms are known to have a positive total: a sum
    of a mask, a count, a ReLU or clamped-at-0 output, or of values of unknown origin is
    reported (an all-zero row is the everyday case: an empty mask, a padded sample), while
    a sum of exp, softplus, softmax or sigmoid outputs, of a convex mixture of them
    (`(1 - g) * p + g * q`), of their top-k / sorted / gathered parts, of Gaussian noise
    (`torch.randn`), of a distribution's parameter its `arg_constraints` declare positive
    (`self.concentration`), or of `x + eps` is not; nor is a sum of what a project function returns
    when its return is positive by construction (an exp, a clamp above 0, the root of one,
    or a product or quotient of such values: a Gaussian kernel `g / g.sum()` built in a
    helper and multiplied by another). A denominator tested by an enclosing
    `if n > 0:` / `if n != 0:` / `... if n else`, by an earlier `if n == 0: return` (or
    `if n == 0: n = ...`, which replaces it; `if (n == 0).any(): n[n == 0] = 1`), a quotient
    used only as a branch of a `where` testing the denominator (NUM110's case), by a mask
    that selects its nonzero entries (`c[ok] / n[ok]`, also with `ok = ~(n == 0)`,
    `wrong * (n != 0)`) or through a factor (`w = mask * p` after
    `if mask.sum() == 0: break`) is guarded.

    A node's degree (`degree(index, num_nodes=n)`, DGL's `g.in_degrees()`) is 0 for an
    isolated node, and so is the log of one plus a count (`torch.log(deg + 1)`, a PNA
    scaler); `a ** 2 + b ** 2` of tensors the code computes is a sum of squares, and a
    project helper's root mean square (`sqrt(mean(x ** 2))`) a norm; the mean square of a
    deviation from its own mean (`((x - mu) ** 2).mean(-1)` with `mu = x.mean(-1, keepdim=
    True)`, a hand-written layer norm) is a variance, graded as `x.var()`. A test of the
    denominator's total (`if rms.sum() < eps: rms = ...`) guards none of its entries.

    A vector's product with its own transpose (`v.T @ v`, `v_t @ v` with `v_t` a transpose or
    an einops reordering of `v`, `torch.matmul(v, v.mT)`) is a sum of squares, and so is its
    inner product with itself (`torch.dot(v, v)`, `v.dot(v)`, `torch.inner(v, v)`,
    `torch.linalg.vecdot(x, x)`, `torch.einsum("bi,bi->b", x, x)`: one tensor twice with the
    same subscripts, an index summed).

    A sum of such reductions of values that are never negative is 0 where every one of them
    is, and is graded as its least likely term: `tp + fp` of two counts of a test (no
    positive prediction in the batch), `precision + recall` of two ratios of counts (an F1
    score without a true positive). A term that is an eps or a positive value (the sum of a
    sigmoid's outputs), a smoothed ratio (`(tp + s) / (tp + fp + s)`), or a sum of signed
    values (0 only where they cancel) keeps the sum from counting.

    A part over a sum of terms that holds it is 0/0 where every term is 0: entries of one
    table (`c[1, 1] / (c[0, 1] + c[1, 0] + c[1, 1])`, a Jaccard index of a confusion
    matrix: no positive predicted, none present), or counts (`tp / (tp + fp)`), also counts
    a project function returns (`tp, fp, fn = stat_scores(pred, target, c)`) or a table of
    zeros whose entries it fills with counts (`tps[c], fps[c] = stat_scores(...)`); medium. A
    term that is a number, an eps or positive, or a table of constants, keeps it quiet. A
    quotient whose infinities the next statements replace but not its NaNs (`r = got / ideal`,
    then `r[torch.isinf(r)] = 0`) shows the code expects a 0 denominator, where a 0
    numerator gives a NaN that stays: medium. So is a softmax over every entry, masked by a
    mask the function is given, then normalised again (`p = F.softmax(logits, -1) * mask;
    p / p.sum(-1, keepdim=True)`, an action mask): where
    the masked entries hold the large logits the kept ones underflow to 0, and a mask that
    keeps nothing leaves 0 too; masking the logits before the softmax avoids both.

    The overlap of two masks over their sizes, `2 * (a * b).sum() / (a.sum() + b.sum())` (a
    Dice or F1 score) or `(a * b).sum() / (a.sum() + b.sum() - (a * b).sum())` (an IoU), is
    0/0 where both masks are empty (a class absent from an image and from its prediction):
    high where the function thresholds a mask (`(p > t).float()`), medium for the masks a
    metric is given, low in a loss or a module's `forward` (its inputs are mostly soft
    probabilities); not reported where a mask is positive (a sigmoid or softmax, also one
    every caller passes), smoothed, or tested non-empty by the `torch.where` whose arm
    divides (`torch.where(a.sum() > 0, i / u, nan)`).

    Known limitations:
    A sum of values known to be positive (exp, softmax, a clamped tensor) is not reported;
    a hand-written softmax `exp(x) / exp(x).sum(...)` is NUM106. Counts from `len()` are
    Python integers and not reported. Nor are rows a test kept because they are not 0
    (`f = x[x.sum(dim=1) != 0]`, then `f / f.norm(dim=1, keepdim=True)`), a count of the
    entries at least a fraction of their row's maximum (`(s >= s.max(1, keepdim=True)[0] / 2)
    .sum(1)` of values that are not negative: the maximum counts itself), nor the norm,
    variance or sum of a tensor an initialiser has just filled with random numbers
    (`torch.nn.init.orthogonal_(w)`, `w.data.normal_(0, s)`, then `w / w.norm()`), nor a sum, norm or
    count computed only from settings: literals, module constants, parameters annotated as
    Python numbers (also `float | Tensor`), with a number default, of a cached function, or
    set to a number literal by every caller, torch / math / NumPy functions of them and the
    project's helpers (nested or in other files) called with them (a Gaussian, Pascal or
    windowed-sinc kernel normalised by its sum). It is the same on every call, so a 0 in it
    shows on the first run; a tensor the code is given or loads is data. A product of denominators is
    graded by its most likely zero factor (`a.norm(dim=-1) * b.norm(dim=-1)` of ReLU
    features: high). Whether
    `x / (x.norm() + 1e-8)` survives half precision is NUM4xx's concern.

    Confidence:
    for a harmonic mean, medium where both ratios share their numerator (precision and
    recall of the same true positives), low for two numerators; not reported where a ratio
    is positive by construction (`(tp + smooth) / (n + smooth)`). Otherwise:
    high for a count or sum of a mask this code computes by a test that can fail everywhere
    (`m = scores > t; (x * m).sum() / m.sum()`, `(y > 0).sum()`) or that selects by content
    (`fg_mask`, `matched`, `inliers` given as arguments: an image without objects), of a
    ReLU output (also a `self.relu = nn.ReLU()` module) or of a value clamped at 0, of a
    label mask whose diagonal (the sample itself, its one sure entry) is cleared before the
    sum (`mask * logits_mask`, `1 - eye`, `fill_diagonal_(0)`: a class seen once in the
    batch has no positive), of a mask with entries set to 0 in place after it is made
    (`attention_mask[:, 0] = 0` to drop [CLS], `m.masked_fill_(special, False)`, also in a
    helper of the project that returns the mask it clears: the entry that kept each row
    non-empty may be the one cleared), for the norm of a parameter's gradient (`p.grad`, also passed
    to a helper: a frozen or unused parameter's is all zero), for a denominator whose guard
    has a negative bound (`torch.maximum(n, torch.finfo(n.dtype).min)`: the author expects 0
    and the guard does not stop it); and high where the function tests the denominator (or
    what its root is taken of) against 0 elsewhere (`where(sin_sq > 0, k_pos, ...)`: the
    author expects exact zeros; a test of a sum's or norm's entries, `p > 0`, does not
    count); medium for the number of samples of each class (`torch.bincount(y, minlength=k)`,
    `F.one_hot(y, k).sum(0)`: a class the batch does not hold counts 0; their total, and a
    class's count read at the samples' own labels, `counts[y]`, are positive); medium for the range of each row of a tensor (`x.amax(-1) - x.amin(-1)`,
    `v.max(dim=-1)[0] - v.min(dim=-1)[0]`, or the maximum of a tensor less its own minimum,
    `cams.sub_(cams.min(-1).values[..., None])` then `cams.div_(cams.max(-1).values[...,
    None])`: any constant row of many, a dead ReLU channel or a blank sample, gives 0/0);
    medium for the maximum of a ReLU output (`relu(x).amax(1)`: 0 where every channel is);
    medium for the norm of an optimizer's step made from a moment of the gradient (LAMB's
    trust ratio `w_norm / step.norm()` with `step = m / (v.sqrt() + eps)` and `m` updated in
    place from the gradient, `m.mul_(b1).add_(g, alpha=1 - b1)`: all zeros for a parameter
    whose gradient has been 0); medium for an optimizer's parameter divided by its own norm (`for
    p in group["params"]: p.div_(p.norm())`, also through a helper: a layer initialised to
    zeros has norm 0); medium for rows the caller gives (a parameter of the function)
    divided by their own norm and then taken in a matrix product (`a / a.norm(dim=1)[:, None]`,
    then `torch.mm(a_n, b_n.T)`: a pairwise cosine similarity, where an all-zero row, such as
    an empty document's counts, gives 0/0; a model's own features stay low); medium for a
    layer's features divided by their own norm in a module's `forward` (its input, when the
    module is not a loss, or what a sub-network returns, taken in a loop: `x / norm` with
    `norm = torch.sqrt((x * x).sum(2))`, `f / l2_norm(f, dims=[1])` for `f` in
    `self.net(x)`): features partway through a network are a zero vector at some position (a
    centred point, a ReLU's zeros), while a loss's inputs, a model's final outputs, stay low;
    medium for the squared length or norm of a sum or difference of two unit vectors
    (`xy = x + y` of `F.normalize`d vectors or a helper returning one, then `xy_t @ xy`): 0
    when the two point in opposite (sum) or the same (difference) directions, which a
    rotation between two given directions or a pair from one batch reaches; medium for a
    denominator made of a value the function tests for 0 or a small bound in an `if` that
    only calls (`if (var_x < bound).any(): warn(...)`, then `cov / (var_x * var_y).sqrt()`:
    the author expects the 0 and lets the division run); medium for a tensor the function
    divides by after testing only its total for 0 (`if rms.sum() < eps: rms = ...`, then
    `x / rms`: one zero entry passes the test); medium for the
    unbiased standard deviation of a minibatch a `for` loop draws with a batch size (`for b in
    buffer.get(batch_size): (a - a.mean()) / (a.std() + 1e-8)`, or sliced by a stepped range,
    `for start in range(0, n, mb): a = adv[inds[start:start + mb]]`): a last batch of one sample
    makes it NaN, which no eps guards (a test of the batch's size, `len(a) > 1`, around it or
    exiting before it, or `unbiased=False`, leaves it alone); medium for a standard deviation
    or variance in what training minimises, a module's `forward` or a helper only those call,
    where a gradient flows (0 for any constant input: a silent reference, a flat patch); medium
    for a sum of values unpacked from one call beside a mask that the function tests for
    emptiness (`_, target_scores, fg_mask = self.assigner(...)`, `if fg_mask.sum():` around
    another term only, then `loss / target_scores.sum()`): the author expects a batch without
    a foreground, whose targets sum to 0; medium for a loss's error relative to its target,
    per sample (`norm(pred - y, dim=-1) / norm(y, dim=-1)`, `((p - y) ** 2).sum(-1) / (y **
    2).sum(-1)`: the denominator reads only the target, the loss's second parameter): data
    holds all-zero samples (a blank mask, a silent reference, a zero field), unless every
    known caller passes a positive target; a norm of the whole batch stays low; medium for a
    sum of a trainable parameter's entries taken as they are (`w = self.w[ids]` with `self.w =
    nn.Parameter(...)`, then `(x * w).sum(1) / w.sum(1)`: nothing keeps trained weights
    positive; weights made positive first, `exp`, `softplus`, are not); medium for a
    softplus output or a power of one in code autograd differentiates (a learned scale,
    `var = F.softplus(h) ** 2`, then `(x - mu) ** 2 / (2 * var)`: softplus is exactly 0 below
    an input of -104 in float32, its square below -52, and training that shrinks the scale
    drives it there), low elsewhere; low
    for the norm or sum of some tensor or its largest absolute value (`x / x.abs().amax(1)`,
    peak normalisation; each would need an all-zero vector), a weighted mean whose weights are the
    caller's values (also through methods numlint does not model,
    `image.float().normalize()`) or are picked by a mask some entry always passes
    (`w = det[overlap, 4]` with the box itself in `overlap`; `s > 0.7 * s.max()`, which the
    maximum passes), a standard deviation or variance (a constant input), a mask the
    function is given (`mask`, `valid`, `self.mask`: valid-entry masks keep an entry per row
    by construction; but medium for a loss's masked mean over the whole batch, `(err *
    mask).sum() / mask.sum()` with `mask` a parameter of the loss: a region mask that comes
    with the targets is all 0 for a batch without the region; so is a product of masks the
    loss is given, `data["token_mask"] * data["sample_mask"][:, None]`: a batch whose
    samples are all masked out; and medium for a mean over the neighbours of a matrix the
    function is given, `torch.matmul(adj, x) / adj.sum(-1, keepdim=True)`: an isolated
    node; and medium for the sum of some entries of a tensor over the sum of all of them
    along the same dims, `y.gather(1, order)[:, :k].sum(1) / y.sum(1)`, `y[:, idx].sum(-1) /
    y.sum(-1)`, `y.topk(k).values.sum(1) / y.sum(1)`: a recall@k, 0/0 for a row, a user or a
    query, without any relevant item; and medium for a per-class tally kept on the module,
    zeros of a given size (`self.add_state("union", default=torch.zeros(num_classes))`,
    `register_buffer`, `self.counts = torch.zeros(k)`) that the class only adds per-class
    counts to (`self.union += histc(...)`, `self.counts[y] += 1`, a vector whose entries are
    set to per-class counts, `new[c] = (pred == c).sum()`), also one class's entry of it: a
    class no batch has held keeps 0, an mIoU's 0/0; a total that only gains a number of samples is 0 only before the
    first update and is not reported; and medium for a count of the whole batch's
    supervised tokens, `(labels != ignore_index).sum()` or `loss_mask.sum()` over every
    dimension: 0 when every token of the batch is ignored, a batch of prompt-only samples or
    a rank whose instances are all masked; and medium for a standard deviation or variance
    whose quotient (also a reciprocal, `1 / x.std()`) is written into a tensor's `.data`
    (an ActNorm's data-dependent init: one constant channel of the first batch leaves inf in
    the parameter); and medium for a loss divided by the total of
    its own targets (`loss_cls = self.cls_loss(pred, target_scores); loss_cls /=
    target_scores.sum()`): 0 for a batch without positives (background images, empty masks)
    (where a count per row, `mask.sum(-1)`, stays
    high), a padding test of indices (`idx >= 0`, `species == -1`,
    `tokens.ne(pad_idx)`, `x != eos`) or of feature rows (`feats.sum(-1) != 0`: zero rows
    are padding), the range of one tensor (`x.max() - x.min()`: a constant input) and the
    count of an attention, padding or length mask (every row keeps a token; `arange(T) < lengths`), a removal mask with a position of every row cleared
    (`remove[..., 0] = False`, the top-p idiom), a quotient returned beside a test of its
    denominator (`return mu, counts > eps`), a count of a given mask whose every known
    caller (across the project) runs the function only under `if fg_mask.sum():`, weights set
    at construction (`self.class_weights`), and a
    value replaced by `nan_to_num` or a
    finiteness test in the next lines (a test for infinities alone, `r[torch.isinf(r)] = 0`,
    does not count: the empty case is 0/0 = NaN, which it leaves) (also after the `if`/`elif` whose branches compute
    it). Where no gradient can flow through such a repaired value (metrics, `no_grad`, a
    custom backward), the deliberate NaN is not a finding at all; nor is a ratio the rest of
    the function only compares against (`r = h / m; keep = u > 1 - r`, `sqrt(l / l[0]) >
    rcond`: a NaN makes a comparison False, not a NaN value); where one can, the NaN's
    gradient survives the repair (the replacement passes back 0, and 0 * 1/0 is NaN): the
    finding stays, medium in code that training differentiates (the code expects the 0/0),
    low elsewhere.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.normalize.html
    - [numlint hazard catalog, row 14, 15](https://github.com/numlint/numlint/blob/main/docs/hazards.md#14)
    """

    CODE = "NUM202"
    NAME = "division-by-zero-norm"
    MESSAGE = (
        "division by a norm, sum, count or std that can be exactly 0: gives 0/0 = NaN; "
        "clamp the denominator (`den.clamp_min(eps)`) or add an eps"
    )
    #: the denominators it knows (norm, std, var, count, sum, root, clamp, abs, a guard by a
    #: maximum, the range max - min), and a division or a reciprocal; or a mean of a selection
    #: (spelled with `mean(`, or a selection by a mask handed to a helper that takes the mean:
    #: `x[mask == 1]`, `x[~m]`, `x[fg_mask.bool()]`, `masked_select`)
    TRIGGERS = (
        "norm",
        "std",
        "var",
        "count_nonzero",
        "sum",
        "sqrt",
        "pow",
        "**",
        "clamp",
        "clip",
        "abs",
        "max(",
        "min(",
        " @ ",
        "mean(",
        "mask",
        "bincount",
        "degree",
        "log(",
        "log1p(",
        "/ (",
        "/(",
        "sin(",
        "tan(",
    )
    #: or a product with a reciprocal (`x * n.reciprocal()`, `x * n ** -1`)
    ALSO_REQUIRES = ("/", "div", "mean(", "[mask", "mask]", "mask ==", "mask >", "[~", ".bool()]",
                     "masked_select", "reciprocal", "** -", "**-", "pow(-")  # fmt: skip

    VALID = [
        Valid(
            """
            import torch
            import torch.nn.functional as F
            class GaussianPolicy(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mu, self.scale = torch.nn.Linear(8, 2), torch.nn.Linear(8, 2)
                def forward(self, h, a):
                    var = (F.softplus(self.scale(h)) + 1e-4).pow(2)
                    return -(a - self.mu(h)) ** 2 / (2 * var)
            """,
            "a learned scale kept above 0 by an eps after the softplus",
        ),
        Valid(
            """
            import torch
            def so3_log(R, eps=1e-4):
                cos = (R.diagonal(dim1=-2, dim2=-1).sum(-1) - 1) / 2
                phi = torch.acos(cos.clamp(-1 + 1e-6, 1 - 1e-6)).clamp_min(eps)
                return (phi / (2 * phi.sin()))[:, None, None] * (R - R.transpose(1, 2))
            """,
            "an angle clamped above 0",
        ),
        Valid(
            """
            import torch
            def init_unit_rows(w):
                torch.nn.init.normal_(w)
                return w / w.norm(dim=-1, keepdim=True)
            """,
            "a tensor just filled with random numbers has no zero row",
        ),
        Valid(
            """
            import torch
            def ratio(v, w):
                return (v.T @ w) / (w.T @ v + 1e-8)
            """,
            "a product of two different vectors, with an eps",
        ),
        Valid(
            """
            import torch
            def cosine_rows(features):
                kept = features[torch.sum(features, dim=1) != 0]
                return kept / torch.norm(kept, dim=1, keepdim=True)
            """,
            "rows kept because their sum is not 0: their norm is not 0 either",
        ),
        Valid(
            """
            import torch
            def target(ss, k):
                i_s = torch.eye(k).type_as(ss)
                return i_s / torch.norm(i_s)
            """,
            "the norm of an identity matrix is positive",
        ),
        Valid(
            """
            import torch
            def taper(n):
                win = torch.hann_window(n)
                return win / win.sum()
            """,
            "a window function has a positive sum",
        ),
        Valid(
            """
            import torch.nn.functional as F
            y = F.normalize(x, dim=-1)
            """,
            "the stable API",
        ),
        Valid(
            """
            import torch
            y = x / (x.norm(dim=-1, keepdim=True) + 1e-8)
            """,
            "an eps added to the norm (a real guard in float32)",
        ),
        Valid(
            """
            import torch
            def masked_mean(x, m):
                return (x * m).sum() / m.sum().clamp(min=1)
            """,
            "the count is clamped",
        ),
        Valid(
            """
            import torch
            def f(x):
                s = x.std(0)
                s[s == 0] = 1.0
                return (x - x.mean(0)) / s
            """,
            "zero standard deviations replaced in place",
        ),
        Valid(
            """
            import torch
            def f(x):
                e = torch.exp(x - x.max())
                return x / e.sum()
            """,
            "a sum of exponentials is positive",
        ),
        Valid(
            """
            import numpy as np
            y = v / np.linalg.norm(v)
            """,
            "NumPy",
        ),
        Valid(
            """
            import torch
            def f(x, n):
                return x.sum() / len(x)
            """,
            "a Python count",
        ),
        Valid(
            """
            import torch
            def f(x):
                n = torch.maximum(x.norm(dim=1, keepdim=True), torch.tensor(1e-6))
                return x / n
            """,
            "torch.maximum with an eps",
        ),
        Valid(
            """
            import torch
            def gated(patch, pos, g):
                attn = (1.0 - torch.sigmoid(g)) * patch.softmax(-1) + torch.sigmoid(g) * pos.softmax(-1)
                attn /= attn.sum(dim=-1).unsqueeze(-1)
                return attn
            """,
            "a convex mixture of probabilities sums to 1",
        ),
        Valid(
            """
            import torch
            def route(logits, k):
                w = torch.softmax(logits, dim=-1)
                w, idx = torch.topk(w, k, dim=-1)
                return w / w.sum(dim=-1, keepdim=True)
            """,
            "the top-k of probabilities has a positive sum",
        ),
        Valid(
            """
            import torch
            def ratio(area, total):
                if total > 0:
                    return area / total.sum()
                return None
            """,
            "an enclosing test keeps the denominator away from 0",
        ),
        Valid(
            """
            import torch
            def masked_mean(x, m):
                n = m.sum()
                if n == 0:
                    return x.new_zeros(())
                return (x * m).sum() / n
            """,
            "an early return on 0",
        ),
        Valid(
            """
            import numpy as np
            import torch
            def shares(sizes: np.ndarray):
                return sizes / sizes.sum()
            """,
            "a NumPy array annotated as such",
        ),
        Valid(
            """
            import torch
            def f(x, m):
                assert m.sum() > 0
                return (x * m).sum() / m.sum()
            """,
            "asserted non-zero before",
        ),
        Valid(
            """
            import torch
            def f(x, mask):
                if not mask.any():
                    return x.new_zeros(())
                return (x * mask).sum() / mask.sum()
            """,
            "an early return on an empty mask",
        ),
        Valid(
            """
            import torch
            class PolicyGradient:
                def train(self):
                    for batch in self.buffer.get(self.batch_size):
                        adv = batch.advantages
                        if len(adv) > 1:
                            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                        (-(adv * batch.log_prob).mean()).backward()
                def learn(self):
                    self.train()
            """,
            "a minibatch's std under a test of the batch's size",
        ),
        Valid(
            """
            import torch
            def corrcoef(var_x, var_y, cov):
                if (var_x < 1e-6).any() or (var_y < 1e-6).any():
                    return torch.zeros_like(cov)
                return cov / (var_x * var_y).sqrt()
            """,
            "the test exits before the division",
        ),
        Valid(
            """
            import torch
            def precision(pred, target, eps=1e-8):
                tp = ((pred == 1) & (target == 1)).sum()
                fp = ((pred == 1) & (target == 0)).sum()
                return tp / (tp + fp + eps)
            """,
            "counts with an eps",
        ),
        Valid(
            """
            import torch
            def soft_dice(logits, target):
                p = torch.sigmoid(logits)
                return 2 * (p * target).sum() / (p.sum() + (target > 0).sum())
            """,
            "a sum of sigmoid outputs is positive",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def so3_log(R):
                cos = (R.diagonal(dim1=-2, dim2=-1).sum(-1) - 1) / 2
                phi = torch.acos(cos.clamp(-1 + 1e-6, 1 - 1e-6))
                return (phi / (2 * phi.sin()))[:, None, None] * (R - R.transpose(1, 2))
            """,
            line=5,
            column=13,
            confidence="medium",
            note="the angle of an identity rotation is 0: 0/0",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            class GaussianPolicy(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mu, self.scale = torch.nn.Linear(8, 2), torch.nn.Linear(8, 2)
                def forward(self, h, a):
                    var = F.softplus(self.scale(h)).pow(2)
                    return -(a - self.mu(h)) ** 2 / (2 * var)
            """,
            line=9,
            column=16,
            confidence="medium",
            note="a learned scale: softplus is exactly 0 below an input of -104, its square "
            "below -52",
        ),
        Invalid(
            """
            import torch
            def dice_metric(logits, target):
                hits = (logits.sigmoid() > 0.5).float()
                return 2 * (hits * target).sum() / (hits.sum() + target.sum())
            """,
            line=4,
            column=12,
            confidence="high",
            note="a class neither in the image nor predicted: both masks empty, 0/0",
        ),
        Invalid(
            """
            import torch
            def f1_score(pred, target):
                tp = ((pred == 1) & (target == 1)).sum().float()
                fp = ((pred == 1) & (target == 0)).sum().float()
                fn = ((pred == 0) & (target == 1)).sum().float()
                p, r = tp / (tp + fp), tp / (tp + fn)
                return 2 * p * r / (p + r)
            """,
            line=7,
            column=12,
            confidence="high",
            also=[(6, 12), (6, 28)],
            note="a sum of counts is 0 where each is: no positive prediction; and precision "
            "plus recall is 0 without a true positive",
        ),
        Invalid(
            """
            import torch
            def class_centres(feats, labels, k):
                sums = torch.zeros(k, feats.shape[1]).index_add_(0, labels, feats)
                return sums / torch.bincount(labels, minlength=k)[:, None]
            """,
            line=4,
            column=12,
            confidence="medium",
            note="the number of samples of each class: 0 for a class the batch does not hold",
        ),
        Invalid(
            """
            import torch.nn.functional as F
            def rotate_onto(x, y):
                x, y = F.normalize(x, dim=-1), F.normalize(y, dim=-1)
                v = (x + y)[..., None]
                return 2 * (v @ v.mT) / (v.mT @ v)
            """,
            line=5,
            column=12,
            confidence="medium",
            note="the sum of two unit vectors is 0 when they point in opposite directions",
        ),
        Invalid(
            """
            import torch
            class HardLoss(torch.nn.Module):
                def forward(self, loss, scores):
                    return loss[scores > 0.9].mean()
            """,
            line=4,
            column=16,
            confidence="medium",
            note="no score above 0.9 in a batch: the mean of nothing is NaN",
        ),
        Invalid(
            """
            import warnings
            import torch
            def corrcoef(var_x, var_y, cov):
                if (var_x < 1e-6).any() or (var_y < 1e-6).any():
                    warnings.warn("a variance is close to 0")
                return cov / (var_x * var_y).sqrt()
            """,
            line=6,
            column=12,
            confidence="medium",
            note="a value the code tests for 0 and only warns about: the division still runs",
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
            line=9,
            column=16,
            confidence="medium",
            note="a layer's input features divided by their own norm: a zero vector feature "
            "(a centred point, a ReLU's zeros) gives 0/0",
        ),
        Invalid(
            """
            import torch
            def cos_sim(a, b):
                a_n = a / a.norm(dim=1)[:, None]
                b_n = b / b.norm(dim=1)[:, None]
                return torch.mm(a_n, b_n.transpose(0, 1))
            """,
            line=3,
            column=11,
            confidence="medium",
            also=[(4, 11)],
            note="a pairwise cosine similarity of the caller's rows: an all-zero row (an empty "
            "document's counts) gives 0/0",
        ),
        Invalid(
            """
            import torch
            class PolicyGradient:
                def train(self):
                    for batch in self.buffer.get(self.batch_size):
                        adv = batch.advantages
                        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                        (-(adv * batch.log_prob).mean()).backward()
                def learn(self):
                    self.train()
            """,
            line=6,
            column=19,
            confidence="medium",
            note="the unbiased std of a minibatch: a last batch of one sample gives NaN, "
            "whatever the eps",
        ),
        Invalid(
            """
            import torch
            def rescale(acts):
                flat = acts.view(acts.size(0), acts.size(1), -1)
                maxs, mins = flat.max(dim=-1)[0], flat.min(dim=-1)[0]
                return (acts - mins[..., None, None]) / (maxs - mins)[..., None, None]
            """,
            line=5,
            column=12,
            confidence="medium",
            note="a min-max rescaling of each channel: a dead channel is constant",
        ),
        Invalid(
            """
            import torch
            def neuron_norm(x):
                if x.dim() <= 1:
                    return x.abs()
                return x.flatten(1).norm(dim=1).view(-1, *[1] * (x.dim() - 1))
            def project(p):
                p.div_(neuron_norm(p))
            """,
            line=7,
            column=5,
            confidence="low",
            note="a helper's norm whose 1-d case is the absolute value",
        ),
        Invalid(
            """
            import torch
            class Sphere(torch.optim.Optimizer):
                @torch.no_grad()
                def step(self):
                    for group in self.param_groups:
                        for p in group["params"]:
                            p.add_(p.grad, alpha=-group["lr"])
                            if p.dim() > 1:
                                p.div_(p.norm(dim=1, keepdim=True))
            """,
            line=9,
            column=21,
            confidence="medium",
            note="an optimizer projecting each matrix onto the sphere (a test of its number of "
            "axes is no guard): a zero-initialised layer has norm 0",
        ),
        Invalid(
            """
            import torch
            def reflect(v, w):
                return (v.T @ w) / (v.T @ v)
            """,
            line=3,
            column=12,
            confidence="low",
            note="a vector times its own transpose: its squared length",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def embed(x):
                x = x.half()
                return x / x.norm(dim=-1, keepdim=True)
            """,
            line=5,
            column=12,
            confidence="low",
            fixed="""
            import torch
            import torch.nn.functional as F
            def embed(x):
                x = x.half()
                return F.normalize(x, dim=-1, eps=torch.finfo(x.dtype).tiny)
            """,
            note="float16: an eps that survives half precision",
        ),
        Invalid(
            """
            import torch.nn.functional as F
            y = x / x.norm(dim=-1, keepdim=True)
            """,
            confidence="low",
            line=2,
            column=5,
            fixed="""
            import torch.nn.functional as F
            y = F.normalize(x, dim=-1)
            """,
        ),
        Invalid(
            """
            import torch
            y = emb / torch.linalg.vector_norm(emb, dim=1, keepdim=True)
            """,
            confidence="low",
            line=2,
            column=5,
            fixed="""
            import torch
            y = torch.nn.functional.normalize(emb, dim=1)
            """,
        ),
        Invalid(
            """
            import torch
            def renorm(p, threshold):
                p = p * (p > threshold)
                return p / p.sum(-1, keepdim=True)
            """,
            line=4,
            column=12,
        ),
        Invalid(
            """
            import torch
            def masked_mean(x, scores):
                m = scores > 0.5
                return (x * m).sum() / m.sum()
            """,
            line=4,
            column=12,
        ),
        Invalid(
            """
            import torch
            def masked_mean(x, mask):
                return (x * mask).sum() / mask.sum()
            """,
            confidence="medium",
            line=3,
            column=12,
            note="a mask the caller must pass, summed over every entry: a batch whose "
            "every entry is masked out (each response cut off) gives 0/0",
        ),
        Invalid(
            """
            import torch
            def masked_mean(x, mask):
                return (x * mask).sum(1) / mask.sum(1)
            """,
            confidence="low",
            line=3,
            column=12,
            note="a mean per row of a given mask: a padding mask keeps an entry in each row",
        ),
        Invalid(
            """
            import torch
            def standardise(x):
                mean = x.mean(0)
                std = x.std(0)
                return (x - mean) / std
            """,
            confidence="low",
            line=5,
            column=12,
        ),
        Invalid(
            """
            import torch
            def f(x):
                x /= torch.norm(x)
                return x
            """,
            confidence="low",
            line=3,
            column=5,
        ),
        Invalid(
            """
            import torch
            def f(x, var):
                v = ((x - x.mean()) ** 2).mean()
                return torch.div(x, torch.sqrt(v))
            """,
            confidence="low",
            line=4,
            column=12,
        ),
        Invalid(
            """
            import torch
            def positives_mean(sim, labels):
                pos = (labels[:, None] == labels[None]).float()
                pos.fill_diagonal_(0)
                return (sim * pos).sum(1) / pos.sum(1)
            """,
            line=5,
            column=12,
            confidence="high",
            note="mean over the positives of each row: a label seen once in the batch has none",
        ),
        Invalid(
            """
            import torch
            def pool(hidden, attention_mask):
                m = attention_mask.unsqueeze(-1).float()
                return (hidden * m).sum(1) / m.sum(1)
            """,
            line=4,
            column=12,
            confidence="low",
            note="an attention mask keeps at least one token per row",
        ),
        Invalid(
            """
            import torch
            def pool_words(hidden, attention_mask):
                attention_mask[:, 0] = 0
                m = attention_mask.unsqueeze(-1).float()
                return (hidden * m).sum(1) / m.sum(1)
            """,
            line=5,
            column=12,
            confidence="high",
            note="[CLS] cleared: an empty sentence keeps no token, and its mean is 0/0",
        ),
    ]
    INVALID += [
        Invalid(
            """
            import torch
            class DetectionLoss(torch.nn.Module):
                def forward(self, pred_scores, batch):
                    labels, target_scores = self.assigner(pred_scores, batch)
                    loss_cls = self.varifocal_loss(pred_scores, target_scores, labels)
                    loss_cls /= target_scores.sum()
                    return loss_cls
            """,
            line=6,
            column=9,
            confidence="medium",
            note="a batch of background images has no positive: its targets sum to 0",
        ),
        Invalid(
            """
            import torch
            class MeanIoU:
                def __init__(self, num_classes):
                    self.add_state("unions", default=torch.zeros(num_classes))
                def update(self, preds, labels):
                    new_unions = torch.zeros(self.unions.shape)
                    for c in range(len(new_unions)):
                        new_unions[c] = ((preds == c) | (labels == c)).sum()
                    self.unions += new_unions
                def compute(self):
                    scores = []
                    for c in range(len(self.unions)):
                        union = self.unions[c]
                        if union == 0 and self.ignore_missing:
                            continue
                        scores.append(self.inter[c] / union)
                    return torch.stack(scores).mean()
            """,
            line=16,
            column=27,
            confidence="medium",
            note="the test exits only when an option is set: without it, the 0 reaches the division",
        ),
    ]
    INVALID += [
        Invalid(
            """
            import torch
            class ActNorm(torch.nn.Module):
                def initialize(self, data):
                    self.scale.data[:] = torch.log(1 / data.std(dim=0))
                    self.bias.data[:] = -(data * self.scale.exp()).mean(dim=0)
            """,
            line=4,
            column=40,
            confidence="medium",
            note="a channel constant over the first batch writes inf into the parameter",
        ),
    ]
    VALID += [
        Valid(
            """
            import torch
            class ActNorm(torch.nn.Module):
                def initialize(self, data):
                    self.scale.data[:] = torch.log(1 / (data.std(dim=0) + 1e-6))
            """,
            "the data-dependent init with an eps",
        ),
        Valid(
            """
            import torch
            class DetectionLoss(torch.nn.Module):
                def forward(self, pred_scores, batch):
                    labels, target_scores = self.assigner(pred_scores, batch)
                    loss_cls = self.varifocal_loss(pred_scores, target_scores, labels)
                    loss_cls /= target_scores.sum().clamp(min=1)
                    return loss_cls
            """,
            "the targets' total clamped to at least 1",
        ),
    ]
    PROBE = Probe(
        hazard="x / x.norm(dim=-1, keepdim=True)",
        fix="torch.nn.functional.normalize(x, dim=-1, eps=torch.finfo(x.dtype).tiny)",
        inputs={"x": "torch.tensor([[0.0, 0.0], [3.0, 4.0]])"},
        note="F.normalize's default eps=1e-12 rounds to 0 in float16 (NaN again): use tiny",
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check(node, node.left, node.right)
        elif isinstance(node.operator, cst.Multiply):
            self._product(node, node.left, node.right)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self._check(node, node.target, node.value, fixable=False)
        elif isinstance(node.operator, cst.MultiplyAssign):
            self._product(node, node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        self._empty_mean(node)
        o = op(self.ctx, node)
        if o is None or o.name not in ("div", "mul") or o.input is None:
            return
        other = o.arg(0, "other")
        if other is None or keyword(node, "rounding_mode") is not None:
            return
        if o.name == "mul":
            self._product(node, o.input, other)
        else:
            self._check(node, o.input, other, fixable=False)

    def _product(
        self, node: cst.CSTNode, left: cst.BaseExpression, right: cst.BaseExpression
    ) -> None:
        """`x * n.reciprocal()`, `x * (1 / n)`, `x * n ** -1`, `x.mul(torch.reciprocal(n))`:
        a division by n spelled as a product. `1 / n` alone is inf, not NaN (not reported);
        times a value that is 0 with it (`h * (1 / h.norm())`) it is 0/0."""
        for num, factor in ((left, right), (right, left)):
            den = _reciprocal_of(self.ctx, factor)
            if den is not None:
                self._check(node, num, den, fixable=False, product=True)
                return

    def _empty_mean(self, node: cst.Call) -> None:
        """`x[mask].mean()`, `torch.mean(x[m])`, or a function of the project that takes the
        mean of what it is given, called on a selection: an empty one gives 0/0 = NaN."""
        ctx = self.ctx
        o = op(ctx, node)
        if o is not None and o.name == "mean" and o.input is not None and not o.rest():
            operands = [o.input]
        elif (
            isinstance(node.func, cst.Name)
            and (given := [a.value for a in node.args if a.keyword is None and not a.star])
            and any(_may_select(ctx, g) for g in given)  # before asking the project
            and (averaged := averaged_parameters(ctx, node.func.value))
        ):
            operands = [given[i] for i in averaged if i < len(given)]
        else:
            return
        for operand in operands:
            mask = selection_mask(ctx, ctx.value(operand))
            if mask is None or not_a_tensor(ctx, ctx.value(operand)):
                continue
            if not trained(ctx):
                return  # metrics and transforms filter on purpose; training code runs each step
            if any(
                guarded_by_condition(ctx, e) for e in (operand, mask.node, *_sizes(ctx, operand))
            ):
                continue  # `if mask.any():`, `n = len(x)` ... `if n >= 1:`
            confidence = selection_can_be_empty(ctx, mask)
            message = (
                "mean of a boolean selection, which can be empty: the mean of no entries is "
                "0/0 = NaN; test `mask.any()` first, or use `(x * mask).sum() / "
                "mask.sum().clamp_min(1)`"
            )
            self.report(node, message, None, confidence=confidence)
            return

    def _check(
        self,
        node: cst.CSTNode,
        num: cst.BaseExpression,
        den: cst.BaseExpression,
        fixable: bool = True,
        product: bool = False,
    ) -> None:
        """Report `num / den` (`product`: written `num * (1 / den)`) if `den` can be 0."""
        ctx = self.ctx
        if const(ctx, den) is not None:
            return  # `x / 2`, `x / math.sqrt(d)`: no norm, sum or count
        if minibatch_std(ctx, den):
            message = (
                "division by the unbiased standard deviation of a minibatch, NaN for a batch of "
                "one sample (an eps does not help): skip batches of one or use `unbiased=False`"
            )
            self.report(node, message, None, confidence="medium")
            return
        reason = denominator_reason(ctx, ctx.value(den))
        angle = _angle_and_sine(ctx, num, den) if reason is None else None
        if angle is not None:  # `a / sin(a)`; `sin(n) / n` of a norm n has its reason
            self._angle_over_sine(node, num, den, angle)
            return
        if reason is None and warned_near_zero(ctx, den):
            reason = _WARNED
        if reason is None and tested_in_total(ctx, den):
            reason = _TOTAL
        if reason is None and fraction_of_whole(ctx, ctx.value(num), ctx.value(den)):
            reason = _WHOLE
        if reason is None and zero_started_tally(ctx, ctx.value(den)):
            reason = _TALLY
        harmonic = _harmonic(ctx, num, den) if reason is None else None
        if harmonic is not None:
            reason = _HARMONIC
        if reason is None and const(ctx, num) is None and inf_repaired_later(ctx):
            reason = _INF_ONLY
        masks = None
        if reason is None and not _size_tested_by_where(ctx, den):
            masks = overlap_masks(ctx, ctx.value(num), ctx.value(den))
            reason = _OVERLAP if masks is not None else None
        if reason is None or selection(ctx, den) is not None or _hand_softmax(ctx, num, den):
            return
        if guarded_by_condition(ctx, den) or _reciprocal_left(ctx, num, reason):
            return
        if product and reason in (_TOTAL, _WARNED):
            return  # the reciprocal itself is reported (`_reciprocal_left`)
        if _host_values(ctx, num, den):
            return
        if rows_kept_nonzero(ctx, ctx.value(den)):
            return  # `f = x[x.sum(1) != 0]; f / f.norm(dim=1)`
        if reason in _REDUCTIONS and (
            constant_table(ctx, ctx.value(den)) or settings_only(ctx, den)
        ):
            return  # a kernel normalised by its sum: the same on every call, a 0 shows at once
        if replaced_by_where(ctx, den):
            return  # `s = a / n`, then `s = torch.where(n > 0, s, 0)`
        fix = self._fix(node, num, den) if fixable else None
        hint = "clamp the denominator (`den.clamp_min(eps)`) or add an eps"
        if fix is not None:
            hint = "use `F.normalize(x, dim=d)`, or clamp the norm (`n.clamp_min(eps)`)"
        message = f"division by {reason}, which can be exactly 0: gives 0/0 = NaN; {hint}"
        confidence = grade(ctx, reason, ctx.value(den))
        if masks is not None:
            confidence = _overlap_grade(ctx, masks)
        if harmonic is not None:
            confidence = harmonic
        if weights_sum(ctx, ctx.value(num), ctx.value(den)) or vanishes_together(
            ctx, ctx.value(num), ctx.value(den)
        ):
            confidence = "high"
        elif confidence == "low" and whole_masked_mean(ctx, ctx.value(num), ctx.value(den)):
            # a given mask or weight summed over everything: empty without what it marks
            confidence = "medium"
        elif confidence == "low" and neighbour_mean(ctx, ctx.value(num), ctx.value(den)):
            confidence = "medium"  # `(adj @ x) / adj.sum(-1)`: an isolated node has no entry
        elif (
            confidence == "low"
            and reason == "a sum"
            and sum_of_own_selection(ctx, ctx.value(num), ctx.value(den))
        ):
            confidence = "medium"  # a recall@k: a row with nothing relevant is 0/0
        elif confidence == "low" and renormalised_masked_softmax(
            ctx, ctx.value(num), ctx.value(den)
        ):
            message = (
                "division by the sum of a masked softmax, which is 0 where the mask keeps "
                "nothing or the kept entries underflow (the masked ones hold the large "
                "logits): 0/0 = NaN; mask the logits before the softmax instead "
                "(`logits.masked_fill(~mask, torch.finfo(logits.dtype).min).softmax(-1)`)"
            )
            confidence = "medium"
        # an `isinf` test leaves 0/0, but repairs all of `1 / x`: a number over 0 is inf
        sanitised = sanitised_later(ctx, nan=const(ctx, num) in (None, 0.0))
        if sanitised and not (gradient_flows(ctx, num) or gradient_flows(ctx, den)):
            return  # a deliberate NaN the code replaces, where no gradient carries it on
        if sanitised and trained(ctx) and not padding_mask(ctx, ctx.value(den)):
            # the code expects the 0/0 and replaces the NaN: the value is repaired, but the
            # gradient at those entries is 0 * (1/0) = NaN
            message = (
                f"division by {reason}, which can be exactly 0: the NaN that the code replaces "
                "afterwards is repaired in the value, not in the gradient (the 0 that the "
                "replacement passes back, times 1/0, is NaN); clamp the denominator "
                "(`den.clamp_min(eps)`) or divide under `torch.where(den > 0, den, 1)`"
            )
            confidence = "medium"
        elif padding_mask(ctx, ctx.value(den)) or sanitised:
            confidence = "low"
        elif returned_with_test(ctx, den):
            confidence = "low"  # `return mu, counts > eps`: the caller is told which are valid
        elif count_tested_by_callers(ctx, ctx.value(den)):
            confidence = "low"  # every caller runs it under `if fg_mask.sum():`
        elif only_thresholds(ctx) or compared_here(ctx):
            return  # a NaN ratio makes a comparison False, not a NaN value
        elif batch_token_count(ctx, ctx.value(den)):
            confidence = "medium"  # 0 when every token of the batch is ignored (prompt-only)
        elif confidence == "low" and zero_tested(ctx, ctx.value(den)):
            confidence = "high"  # the code tests it against 0 elsewhere: zeros are expected
        elif (
            confidence == "low" and reason == "a sum" and sibling_tested_empty(ctx, ctx.value(den))
        ):
            confidence = "medium"  # `if fg_mask.sum():` elsewhere: no foreground, no targets
        elif (
            confidence == "low"
            and reason in _SPREADS
            and trained(ctx)
            and (gradient_flows(ctx, num) or gradient_flows(ctx, den))
        ):
            confidence = "medium"  # 0 for any constant input (silence, a flat patch)
        elif (
            confidence == "low"
            and reason in ("a sum of squares", "a norm")
            and joins_unit_vectors(ctx, ctx.value(den))
        ):
            confidence = "medium"  # `x + y` of unit vectors: 0 for opposite directions
        elif confidence == "low" and reason == "a norm" and _own_parameter_norm(ctx, num, den):
            confidence = "medium"  # a layer initialised to zeros has norm 0 at the first step
        elif confidence == "low" and reason == "a norm" and caller_rows_cosine(ctx, num, den):
            confidence = "medium"  # a pairwise cosine of the caller's rows: any row can be 0
        elif confidence == "low" and own_norm_of_features(ctx, num, den):
            confidence = "medium"  # a layer's features: a zero vector at a position is 0/0
        elif (
            confidence == "low"
            and reason in ("a norm", "a sum of squares", "a sum")
            and relative_to_target(ctx, ctx.value(num), ctx.value(den))
        ):
            confidence = "medium"  # a loss's error relative to its target: an all-zero target
        elif confidence == "low" and reason == "a sum" and learned_weights_sum(ctx, ctx.value(den)):
            confidence = "medium"  # unconstrained trained weights: training moves them through 0
        elif confidence == "low" and reason in _SPREADS and _into_parameter_data(ctx):
            confidence = "medium"  # a data-dependent init: one constant channel of the first
            # batch writes inf or NaN into the parameter for the rest of training
        elif (
            confidence == "low"
            and reason == "a sum"
            and loss_target_total(ctx, ctx.value(num), ctx.value(den))
        ):
            confidence = "medium"  # a loss over its targets' total: 0 without positives
        self.report(node, message, fix, confidence=confidence)

    def _angle_over_sine(
        self,
        node: cst.CSTNode,
        num: cst.BaseExpression,
        den: cst.BaseExpression,
        angle: cst.BaseExpression,
    ) -> None:
        """`a / sin(a)`, `sin(a) / a` (or tan): 0/0 at a = 0, the identity rotation's angle or
        a grid's centre, in the value and the gradient, unless a is kept away from 0."""
        ctx = self.ctx
        if positive_value(ctx, ctx.value(angle)) or guarded_by_condition(ctx, den):
            return
        if replaced_by_where(ctx, den) or _host_values(ctx, num, den):
            return
        if constant_table(ctx, ctx.value(angle)) or settings_only(ctx, angle):
            return  # a filter built from settings: the same on every call, a 0 shows at once
        message = (
            "an angle over its sine (or a sine over its angle) is 0/0 = NaN where the angle "
            "is 0 (an identity rotation, the centre of a grid): in the value, and in the "
            "gradient even under `torch.where`; use `torch.sinc` (`sin(a) / a` is "
            "`torch.sinc(a / math.pi)`), or a Taylor expansion near 0 with the angle "
            "sanitised (`a = torch.where(small, 1, a)`) before the division"
        )
        # an angle measured by acos / atan2 or a norm is exactly 0 for the identity rotation
        # or a zero vector; any other angle (a grid, a phase) needs an exact 0 input
        grade: Confidence = "medium" if _measured_angle(ctx, angle) else "low"
        self.report(node, message, confidence=grade)

    def _fix(
        self, node: cst.CSTNode, num: cst.BaseExpression, den: cst.BaseExpression
    ) -> FixSpec | None:
        ctx = self.ctx
        o = op(ctx, den)
        if o is None or o.name != "norm" or o.input is None or not same_code(ctx, o.input, num):
            return None
        allowed = {"dim", "keepdim", "p", "ord"}
        if any(a.keyword is None or a.keyword.value not in allowed for a in o.rest()):
            return None
        dim, keep = keyword(o.call, "dim"), keyword(o.call, "keepdim")
        order = keyword(o.call, "p") or keyword(o.call, "ord")
        if dim is None or not (isinstance(keep, cst.Name) and keep.value == "True"):
            return None
        if order is not None and const(ctx, order) != 2.0:
            return None
        func = ctx.spell("torch.nn.functional.normalize")
        if func is None:
            return None
        code = f"{func}({ctx.code(num)}, dim={ctx.code(dim)})"
        if traced_dtype(ctx, ctx.value(num)) == "float16" and (finfo := ctx.spell("torch.finfo")):
            # F.normalize's default eps=1e-12 is 0 in float16: a zero row would give NaN
            code = f"{code[:-1]}, eps={finfo}({ctx.code(num)}.dtype).tiny)"
        return self.fix("unsafe", "Replace with `F.normalize`", (node, code))


def _size_tested_by_where(ctx, den: cst.BaseExpression) -> bool:
    """`torch.where(y_o > 0, inter / (y_o + y_p - inter), nan)`: a test that one of the
    sizes a Dice or IoU denominator adds is above 0 keeps the denominator above 0 on the arm
    that divides."""
    node = ctx.deref(ctx.value(den)).node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        node = node.left
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)):
        return False
    sizes = {ctx.code(node.left).strip(), ctx.code(node.right).strip()}
    for parent in ctx.ancestors():
        o = op(ctx, parent) if isinstance(parent, cst.Call) else None
        if o is None or o.name != "where":
            continue
        test = positional(parent, 0, "condition")
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return False
        bound = test.comparisons[0]
        return (
            isinstance(bound.operator, (cst.GreaterThan, cst.NotEqual))
            and is_zero(ctx, bound.comparator, ctx.value(bound.comparator).env)
            and ctx.code(test.left).strip() in sizes
        )
    return False


def _overlap_grade(ctx, masks: tuple[Value, Value]) -> Confidence:
    """A Dice or IoU of two masks: high where the function thresholds one (`(p > t).float()`,
    a one-hot of an argmax: a prediction can be empty); low in a loss or a module's forward,
    whose inputs are mostly soft probabilities; medium elsewhere (a metric's masks)."""
    made = [m for m in masks if not isinstance(ctx.deref(m).node, cst.Name)]  # not given
    if any(mask_computed(ctx, m) for m in made):
        return "high"
    return "low" if trained(ctx) or objective(ctx) else "medium"


def _sizes(ctx, operand: cst.BaseExpression) -> list[cst.Name]:
    """Names the function binds to the size of `operand` (`n = len(x)`, `k = x.numel()`)."""
    func = ctx.function
    if func is None:
        return []
    text = ctx.code(operand)
    sizes = {f"len({text})", f"{text}.numel()", f"{text}.shape[0]", f"{text}.size(0)"}
    return [
        n.targets[0].target
        for n in descendants(func)
        if isinstance(n, cst.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0].target, cst.Name)
        and ctx.code(n.value) in sizes
    ]


def _own_parameter_norm(ctx, num: cst.BaseExpression, den: cst.BaseExpression) -> bool:
    """An optimizer's parameter divided by a norm of itself (`for p in group["params"]: ...
    p.div_(p.norm())`, also through a helper): a projection onto the sphere, 0/0 for a
    layer initialised to zeros (a zero-init residual branch, LoRA's B)."""
    if not isinstance(num, cst.Name):
        return False
    name = num.value
    loop = next(
        (
            a
            for a in ctx.ancestors()
            if isinstance(a, cst.For) and isinstance(a.target, cst.Name) and a.target.value == name
        ),
        None,
    )
    if loop is None or not _params_of_group(loop.iter):
        return False
    return any(isinstance(n, cst.Name) and n.value == name for n in descendants(den))


def _params_of_group(iterable: cst.BaseExpression) -> bool:
    """`group["params"]` (an optimizer's parameter group)."""
    if not isinstance(iterable, cst.Subscript) or len(iterable.slice) != 1:
        return False
    index = iterable.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and isinstance(index.value, cst.SimpleString)
        and index.value.evaluated_value == "params"
    )


def _host_values(ctx, num: cst.BaseExpression, den: cst.BaseExpression) -> bool:
    """NumPy arrays or Python numbers (`sizes / sizes.sum()` on an `np.ndarray`); a number
    written out as the numerator (`1 / rms`) says nothing of the denominator."""
    if not_a_tensor(ctx, ctx.value(den)):
        return True
    return const(ctx, num) is None and not_a_tensor(ctx, ctx.value(num))


def _harmonic(ctx: Context, num: cst.BaseExpression, den: cst.BaseExpression) -> Confidence | None:
    """`2 * p * r / (p + r)`, `(1 + b**2) * p * r / (b**2 * p + r)`: the numerator holds the
    product of the denominator's two terms, each a ratio (a rate). Both are 0 together, and
    the quotient 0/0, where their numerators are: medium where that is one value (precision
    and recall of the same true positives, 0 for a batch or class without one), low for two
    (two overlaps, empty together only without any overlap). None: not this form, or a term
    positive by construction (`(tp + smooth) / (n + smooth)`)."""
    found = ctx.deref(ctx.value(den))
    node, env = found.node, found.env
    if not isinstance(node, cst.BinaryOperation) or not isinstance(node.operator, cst.Add):
        return None
    terms = [unscaled(ctx, side, env) for side in (node.left, node.right)]
    numerator = ctx.deref(ctx.value(num))
    held = [unscaled(ctx, f, numerator.env) for f in factors(numerator.node)]
    held = [g for f in held for g in factors(f)]  # `(p * r) / 2` unscaled is a product
    if not all(any(same_code(ctx, t, f) for f in held) for t in terms):
        return None
    tops = []
    for term in terms:
        value = ctx.deref(Value(term, env))
        rate = value.node
        if not (isinstance(rate, cst.BinaryOperation) and isinstance(rate.operator, cst.Divide)):
            return None
        if positive_value(ctx, value) or positive_value(ctx, Value(rate.left, value.env)):
            return None
        if not_a_tensor(ctx, value) or any(guarded_by_condition(ctx, e) for e in (term, rate.left)):
            return None  # numbers; `if tp == 0: return 0.0` or `if p == r == 0:` first
        tops.append((rate.left, value.env))
    (a, a_env), (b, b_env) = tops
    same = same_value(ctx, Value(a, a_env), Value(b, b_env))
    return "medium" if same else "low"


def _reciprocal_of(ctx: Context, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """n where `expr` is its reciprocal, also through a variable: `1 / n` (any nonzero
    constant over n), `n.reciprocal()`, `torch.reciprocal(n)`, `n ** -1`, `n.pow(-0.5)` (any
    negative power: 0 where n is); not one edited in place since (`r[torch.isinf(r)] = 0`)."""
    found = ctx.deref(ctx.value(expr))
    if found.mutations:
        return None
    node, env = found.node, found.env
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Divide):
            c = const(ctx, node.left, env)
            return node.right if c is not None and c != 0 else None
        if isinstance(node.operator, cst.Power):
            c = const(ctx, node.right, env)
            return node.left if c is not None and c < 0 else None
        return None
    o = op(ctx, node, env) if isinstance(node, cst.Call) else None
    if o is None or o.input is None:
        return None
    if o.name == "reciprocal":
        return o.input
    if o.name == "pow":
        e = o.arg(0, "exponent")
        c = const(ctx, e, env) if e is not None else None
        return o.input if c is not None and c < 0 else None
    return None


def _reciprocal_left(ctx, num: cst.BaseExpression, reason: str) -> bool:
    """`1 / x`: a number over 0 is inf, not NaN, and code that takes reciprocals mostly
    maps the inf to a weight of 0 or replaces it a few lines on; reported only where the
    code shows it expects the 0 (it tests the value only in total, or only warns), and for
    the reciprocal of a spread (`1 / x.std()`): a scale for centred values, which are all 0
    exactly where the spread is, so the scaled value is 0 * inf = NaN."""
    value = const(ctx, num)
    return value is not None and value != 0 and reason not in (_TOTAL, _WARNED, *_SPREADS)


def _into_parameter_data(ctx: Context) -> bool:
    """The statement being visited writes into a tensor's `.data` (`self.scale.data[:] =
    ...`, `self.shift.data.copy_(...)`), or binds a name that a later statement of its block
    writes there (`mu = ...; self.shift.data = -mu`): a parameter set from a batch."""
    stmt, _ = statement(ctx)
    if stmt is not None and _writes_data(stmt):
        return True
    here = assigned_here(ctx)
    return here is not None and any(_writes_data(s) and here[0] in names(s) for s in here[1])


def _writes_data(stmt: cst.CSTNode) -> bool:
    """`x.data = ...`, `x.data[...] = ...`, `x.data.view(-1)[:] = ...`, `x.data.copy_(...)`."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        targets: list[cst.BaseExpression] = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("copy_", "fill_"):
                targets = [func.value]
        for target in targets:
            if any(
                isinstance(n, cst.Attribute) and n.attr.value == "data"
                for n in (target, *descendants(target))
            ):
                return True
    return False


def _hand_softmax(ctx, num: cst.BaseExpression, den: cst.BaseExpression) -> bool:
    """`exp(x) / exp(x).sum(...)`: reported by NUM106."""
    n = op(ctx, ctx.deref(ctx.value(num)).node)
    d = op(ctx, ctx.deref(ctx.value(den)).node)
    if n is None or d is None or n.name != "exp" or d.name != "sum" or d.input is None:
        return False
    e = op(ctx, ctx.deref(Value(d.input, d.env)).node)
    return e is not None and e.name == "exp" and same_code(ctx, e.input, n.input)


def _may_select(ctx: Context, expr: cst.BaseExpression) -> bool:
    """What selection_mask needs of an operand, read from its form alone: after its names,
    a subscript by one index or a `masked_select` call."""
    node = ctx.deref(ctx.value(expr)).node
    if isinstance(node, cst.Subscript):
        return len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
    return isinstance(node, cst.Call) and call_name(node) == "masked_select"


def _bare(ctx, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` without constant factors (ops.unscaled) and signs: `-2.0 * x.sin()` is
    `x.sin()`."""
    for _ in range(8):
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            expr = expr.expression
            continue
        inner = unscaled(ctx, expr, ctx.env)
        if inner is expr:
            return expr
        expr = inner  # type: ignore[assignment]
    return expr


def _sine_input(ctx, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The angle of a tensor's sine or tangent (`torch.sin(a)`, `a.sin()`, also through a
    name bound to one), constant factors aside."""
    expr = _bare(ctx, expr)
    if isinstance(expr, cst.Name):
        expr = _bare(ctx, ctx.deref(ctx.value(expr)).node)
    o = op(ctx, expr) if isinstance(expr, cst.Call) else None
    return o.input if o is not None and o.name in ("sin", "tan") else None


def _angle_and_sine(
    ctx, num: cst.BaseExpression, den: cst.BaseExpression
) -> cst.BaseExpression | None:
    """The angle a of `a / sin(a)` or `sin(a) / a` (and tan), constant factors aside."""
    for angle, sine in ((num, den), (den, num)):
        inner = _sine_input(ctx, sine)
        if inner is not None and same_code(ctx, _bare(ctx, angle), inner):
            return inner
    return None


_ATAN2 = frozenset({"torch.atan2", "torch.arctan2"})


def _measured_angle(ctx, angle: cst.BaseExpression) -> bool:
    """The angle is measured from data (`acos` of a cosine, `atan2`, a norm of a rotation
    vector), through the names it is computed from in this function and the functions of
    this file it calls (`phi = so3_rotation_angle(R)`)."""
    todo, seen = [ctx.value(angle)], 0
    while todo and seen < 12:
        value = ctx.deref(todo.pop())
        seen += 1
        for node in descendants(value.node):
            if isinstance(node, cst.Call):
                if _measuring(ctx, node, value.env, ("acos", "norm")):
                    return True
                helper = (
                    ctx.top_level(node.func.value, cst.FunctionDef)
                    if isinstance(node.func, cst.Name)
                    else None
                )
                if helper is not None and any(
                    _measuring(ctx, c, None, ("acos",))
                    for c in descendants(helper.body)
                    if isinstance(c, cst.Call)
                ):
                    return True
            elif isinstance(node, cst.Name) and node is not value.node:
                todo.append(Value(node, value.env))
    return False


def _measuring(ctx, call: cst.Call, env, names: tuple[str, ...]) -> bool:
    """`call` is one of the ops `names` (function or method spelling) or an `atan2`."""
    o = op(ctx, call, env)
    return (o is not None and o.name in names) or ctx.qualname(call.func, env) in _ATAN2
