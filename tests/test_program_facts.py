"""Facts of the program that decide a finding's grade: each with the look-alike it must not
raise (numlint.analysis.evidence, zeros, gradients)."""

from __future__ import annotations

from pathlib import Path

import pytest

from numlint.api import check_paths, check_source

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def _package(root: Path, **modules: str) -> Path:
    """A package `pkg` under `root` holding the given modules (name -> source)."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, source in modules.items():
        (pkg / f"{name}.py").write_text(source)
    return pkg


def _grades(code: str, code_selected: str) -> list[str | None]:
    found = check_source(
        HEAD + code, "<string>", {"select": [code_selected], "min-confidence": "low"}
    )
    return [d.confidence for d in found]


SUPCON = """
class SupCon(nn.Module):
    def forward(self, features, labels):
        n = features.shape[0]
        mask = torch.eq(labels.view(-1, 1), labels.view(1, -1)).float()
        logits = features @ features.T
        {clear}
        log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
        return -((mask * log_prob).sum(1) / mask.sum(1)).mean()
"""


@pytest.mark.parametrize(
    ("clear", "expected"),
    [
        # the diagonal (a sample equals itself, the mask's one sure entry) is cleared
        (
            "mask = mask * torch.scatter(torch.ones_like(mask), 1, torch.arange(n).view(-1, 1), 0)",
            ["high"],
        ),
        ("mask = mask * (1 - torch.eye(n))", ["high"]),
        ("mask = mask * ~torch.eye(n, dtype=torch.bool)", ["high"]),
        ("mask.fill_diagonal_(0)", ["high"]),
        ("mask = mask.masked_fill(torch.eye(n, dtype=torch.bool), 0)", ["high"]),
    ],
)
def test_cleared_diagonal_of_a_label_mask_is_high(clear: str, expected: list[str]) -> None:
    """Supervised contrastive loss: a label that occurs once in the batch leaves its row with
    no positive once the diagonal is cleared, and `/ mask.sum(1)` is 0/0."""
    assert _grades(SUPCON.format(clear=clear), "NUM202") == expected


def test_label_mask_with_its_diagonal_is_not_high() -> None:
    """The same mask keeping its diagonal: every row holds the sample itself."""
    assert _grades(SUPCON.format(clear="pass"), "NUM202") != ["high"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # a gradient normalised by its own norm: a frozen or unused parameter's is all zero
        (
            "def step(params):\n    for p in params:\n        g = p.grad\n"
            "        p.data.add_(g / g.norm())\n",
            ["high"],
        ),
        (
            "def step(params):\n    for p in params:\n        g = p.grad\n"
            "        g.div_(torch.norm(g))\n",
            ["high"],
        ),
        # an input gradient is all zero only where the output is locally flat
        (
            "def penalty(out, x):\n    (g,) = torch.autograd.grad(out.sum(), x)\n"
            "    return g / g.norm()\n",
            ["low"],
        ),
        # a helper whose callers pass it a parameter's gradient (a staticmethod: no `self`)
        (
            "class Opt:\n    @staticmethod\n    def normalized(g):\n        return g / g.norm()\n"
            "    def step(self, params):\n        for p in params:\n"
            "            p.data.add_(self.normalized(p.grad))\n",
            ["high"],
        ),
        # the same helper given weights
        (
            "class Opt:\n    @staticmethod\n    def normalized(g):\n        return g / g.norm()\n"
            "    def step(self, params):\n        for p in params:\n"
            "            p.data.add_(self.normalized(p.data))\n",
            ["low"],
        ),
        # the same division by the norm of a weight: 0 only for an all-zero weight
        ("def step(params):\n    for p in params:\n        p.data.div_(p.data.norm())\n", ["low"]),
    ],
)
def test_gradient_normalised_by_its_norm(code: str, expected: list[str]) -> None:
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("init", "expected"),
    [
        ("self.relu = nn.ReLU()", ["high"]),
        ("self.relu = nn.ReLU().to(device)", ["high"]),
        ("self.relu = nn.Tanh()", ["low"]),  # tanh is 0 only at exactly 0
    ],
)
def test_relu_module_attribute(init: str, expected: list[str]) -> None:
    """A ReLU held in a module attribute: its output can be all zero, a norm of it too."""
    code = (
        "class Encoder(nn.Module):\n"
        f"    def __init__(self, device):\n        super().__init__()\n        {init}\n"
        "        self.linear = nn.Linear(4, 4)\n"
        "    def forward(self, h):\n        e = self.relu(self.linear(h))\n"
        "        return e / torch.norm(e, dim=1, keepdim=True)\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("cosine", "expected"),
    [
        # an inner product of unit vectors reaches +-1 as training aligns them
        ("F.linear(F.normalize(x), F.normalize(self.weight))", ["high"]),
        ("F.normalize(x) @ F.normalize(self.weight).T", ["high"]),
        ("torch.mm(F.normalize(x), F.normalize(self.weight).t())", ["high"]),
        # the callers' value: unknown, may be a cosine (a margin loss takes cosines)
        ("x.float()", ["medium"]),
        # an exp(-k) stops short of 1
        ("torch.exp(-x.abs() - 1)", ["low"]),
        # what a method of the project returns: unknown, as the callers' value
        ("self.sample_w(x)", ["medium"]),
        # clamped strictly inside (-1, 1)
        ("self.sample_w(x).clamp(-1 + 1e-6, 1 - 1e-6)", []),
    ],
)
def test_margin_loss_sine_of_a_cosine(cosine: str, expected: list[str]) -> None:
    code = (
        "class ArcMargin(nn.Module):\n"
        "    def forward(self, x, label):\n"
        f"        cosine = {cosine}\n"
        "        sine = torch.sqrt(1.0 - torch.pow(cosine, 2))\n"
        "        return cosine * 0.9 - sine * 0.1\n"
    )
    assert _grades(code, "NUM201") == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # a loss's pair distance: anchor and positive can be the same sample
        (
            "def triplet_loss(a, p, n):\n"
            "    d = torch.sqrt(((a - p) ** 2).sum(-1))\n"
            "    return torch.relu(d - torch.sqrt(((a - n) ** 2).sum(-1)) + 1).mean()\n",
            ["medium", "medium"],
        ),
        # the same distance in code nothing trains on
        (
            "def spread(a, p):\n    return torch.sqrt(((a - p) ** 2).sum(-1))\n",
            ["low"],
        ),
    ],
)
def test_pair_distance_in_a_loss(code: str, expected: list[str]) -> None:
    assert _grades(code, "NUM201") == expected


def test_module_forward_trains_in_a_metrics_file() -> None:
    """`models/metrics.py` holding a margin head: a module's forward is differentiated
    wherever its file lives; a plain function in a metrics file is evaluation code."""
    code = (
        "class ArcMargin(nn.Module):\n"
        "    def forward(self, x, w):\n"
        "        cosine = F.linear(F.normalize(x), F.normalize(w))\n"
        "        return torch.sqrt(1.0 - torch.pow(cosine, 2))\n"
        "def score(x, w):\n"
        "    cosine = F.linear(F.normalize(x), F.normalize(w))\n"
        "    return torch.sqrt(1.0 - torch.pow(cosine, 2))\n"
    )
    found = check_source(
        HEAD + code, "models/metrics.py", {"select": ["NUM201"], "min-confidence": "low"}
    )
    assert [(d.row, d.confidence) for d in found] == [(7, "high")]


@pytest.mark.parametrize(
    ("clamp", "expected"),
    [
        # clamped to [-1, 1] inclusive: |cos| = 1 stays, sqrt(0) has an infinite slope
        ("(-1, 1)", ["high"]),
        # strictly inside (-1, 1) in float32: 1 - cos**2 > 0
        ("(-1 + 1e-6, 1 - 1e-6)", []),
    ],
)
def test_sine_through_named_squares(clamp: str, expected: list[str]) -> None:
    """`c2 = pow(c, 2); s2 = 1 - c2; sqrt(s2)`: the square is followed through its name."""
    code = (
        "class Head(nn.Module):\n"
        "    def forward(self, emb, kernel):\n"
        "        cos_theta = torch.mm(emb, F.normalize(kernel, dim=0))\n"
        f"        cos_theta = cos_theta.clamp{clamp}\n"
        "        cos_theta_2 = torch.pow(cos_theta, 2)\n"
        "        sin_theta_2 = 1 - cos_theta_2\n"
        "        return torch.sqrt(sin_theta_2)\n"
    )
    assert _grades(code, "NUM201") == expected


def test_concatenated_cosines() -> None:
    code = (
        "class Head(nn.Module):\n"
        "    def forward(self, x, ws):\n"
        "        cosine = F.linear(F.normalize(x), F.normalize(ws[0]))\n"
        "        for w in ws[1:]:\n"
        "            cosine = torch.cat((cosine, F.linear(F.normalize(x), F.normalize(w))), dim=1)\n"
        "        return torch.sqrt(1.0 - torch.pow(cosine, 2))\n"
    )
    assert _grades(code, "NUM201") == ["high"]


@pytest.mark.parametrize(
    ("den", "expected"),
    [
        # a bound below 0 does not keep a norm from 0; the guard shows 0 is expected
        ("torch.maximum(n, torch.finfo(n.dtype).min)", ["high"]),
        ("torch.maximum(n, torch.tensor(torch.finfo().min))", ["high"]),
        ("n.clamp(min=-1.0)", ["high"]),
        # real guards
        ("n.clamp(min=1e-6)", []),
        ("torch.maximum(n, torch.tensor(1e-6))", []),
        ("torch.maximum(n, eps)", []),
    ],
)
def test_guard_with_a_negative_bound(den: str, expected: list[str]) -> None:
    code = f"def f(x, t, eps):\n    n = x.pow(2).mean(-1) ** 0.5\n    return t / {den}\n"
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # min-max normalisation of a whole tensor: 0/0 needs a constant input (low); of
        # each row: one constant row of many (a dead channel, a blank sample) is enough
        ("(x - x.min()) / (x.max() - x.min())", ["low"]),
        (
            "(x - x.amin(-1, keepdim=True)) / (x.amax(-1, keepdim=True) - x.amin(-1, keepdim=True))",
            ["medium"],
        ),
        # guarded, or the extremes of two tensors, or an elementwise max and min
        ("(x - x.min()) / (x.max() - x.min() + 1e-8)", []),
        ("(x - y.min()) / (x.max() - y.min())", []),
        ("x / (torch.max(x, y) - torch.min(x, y))", []),
    ],
)
def test_range_of_one_tensor(expr: str, expected: list[str]) -> None:
    assert _grades(f"def f(x, y):\n    return {expr}\n", "NUM202") == expected


def test_range_after_an_equality_exit() -> None:
    """`if lo == hi: return` before `/ (hi - lo)`: the difference is not 0 there."""
    code = (
        "def rescale(x, verbose):\n    lo = x.min()\n    hi = x.max()\n    if lo == hi:\n        return x\n"
        "    return (x - lo) / (hi - lo)\n"
    )
    assert _grades(code, "NUM202") == []
    assert _grades(code.replace("if lo == hi", "if verbose"), "NUM202") == ["low"]


REPAIRED = """
{decorator}
def normalise(confmat, how):
    if how is not None:
        if how == "true":
            confmat = confmat / confmat.sum(dim=-1, keepdim=True)
        elif how == "pred":
            confmat = confmat / confmat.sum(dim=-2, keepdim=True)
        {repair}
    return confmat
"""


@pytest.mark.parametrize(
    ("decorator", "repair", "expected"),
    [
        # a deliberate NaN replaced after the branches, where no gradient flows: no finding
        ("@torch.no_grad()", "confmat[torch.isnan(confmat)] = 0", []),
        ("@torch.no_grad()", "confmat = torch.nan_to_num(confmat)", []),
        # in code a gradient can flow through, the NaN's gradient survives the repair: low
        ("", "confmat[torch.isnan(confmat)] = 0", ["low", "low"]),
        # nothing repairs it: reported
        ("@torch.no_grad()", "pass", ["low", "low"]),
    ],
)
def test_nan_replaced_after_branches(decorator: str, repair: str, expected: list[str]) -> None:
    code = REPAIRED.format(decorator=decorator, repair=repair)
    assert _grades(code, "NUM202") == expected


DISTANCES = """
def distances(x, y):
    x2 = (x ** 2).sum(1, keepdim=True)
    y2 = (y ** 2).sum(1)
    d2 = {d2}
    return {root}
"""


@pytest.mark.parametrize(
    ("d2", "root", "expected"),
    [
        ("x2 + y2 - 2 * x @ y.t()", "d2.sqrt()", ["high"]),
        ("torch.addmm(x2 + y2, x, y.t(), alpha=-2)", "torch.sqrt(d2)", ["high"]),
        ("-2 * torch.mm(x, y.t()) + x2 + y2", "d2 ** 0.5", ["high"]),
        # clamped first: only the gradient at 0 is left, graded as a clamp (low in a helper
        # nothing visibly differentiates: not a number less a value)
        ("(x2 + y2 - 2 * x @ y.t()).clamp(min=0)", "d2.sqrt()", ["low"]),
        # a sum, not a difference: nothing cancels
        ("x2 + y2 + 2 * x @ y.t()", "d2.sqrt()", []),
    ],
)
def test_expanded_distance(d2: str, root: str, expected: list[str]) -> None:
    assert _grades(DISTANCES.format(d2=d2, root=root), "NUM201") == expected


SPREAD = """
{head}
    def {name}(self, estimate, target):
        target = target / torch.std(target, dim=1, keepdim=True)
        return (estimate - target).pow(2).mean()
"""


@pytest.mark.parametrize(
    ("head", "name", "expected"),
    [
        # a spread is 0 for any constant input (a silent reference): medium in a loss
        ("class SNRLoss(nn.Module):", "forward", ["medium"]),
        # the same in code nothing trains with: low
        ("class Report:", "describe", ["low"]),
    ],
)
def test_spread_in_trained_code(head: str, name: str, expected: list[str]) -> None:
    code = SPREAD.format(head=head, name=name)
    assert _grades(code, "NUM202") == expected


HELPER_SPREAD = """
def normalise(volume):
    return (volume - volume.mean()) / volume.std()


class {cls}:
    def {name}(self, x, y):
        return (normalise(x) - normalise(y)).abs().mean()
"""


@pytest.mark.parametrize(
    ("cls", "name", "expected"),
    [
        # a helper every caller of which is a module's forward runs in training too
        ("Perceptual(nn.Module)", "forward", ["medium"]),
        ("Report", "describe", ["low"]),
    ],
)
def test_spread_in_a_helper_of_trained_code(cls: str, name: str, expected: list[str]) -> None:
    code = HELPER_SPREAD.format(cls=cls, name=name)
    assert _grades(code, "NUM202") == expected


MINIBATCH_STD = """
class PolicyGradient:
    def train(self):
        for epoch in range(self.n_epochs):
            for batch in {loop}:
                adv = batch.advantages
                {test}
                adv = (adv - adv.mean()) / (adv.{std} + 1e-8)
                (-(adv * batch.log_prob).mean()).backward()

    def learn(self):
        self.train()
"""


@pytest.mark.parametrize(
    ("loop", "test", "std", "expected"),
    [
        # a minibatch's unbiased std: NaN for a last batch of one sample, whatever the eps
        ("self.buffer.get(self.batch_size)", "pass", "std()", ["medium"]),
        ("loader.iterate(batch_size=64)", "pass", "std(0)", ["medium"]),
        # a test of the batch's size that exits before the division
        ("self.buffer.get(self.batch_size)", "if adv.numel() < 2: continue", "std()", []),
        # the whole buffer at once, or the biased std (0 for one sample, guarded by the eps)
        ("self.buffer.get(batch_size=None)", "pass", "std()", []),
        ("self.buffer.get(self.batch_size)", "pass", "std(unbiased=False)", []),
        ("self.buffer.get(self.batch_size)", "pass", "std(correction=0)", []),
        # a loop that does not draw minibatches
        ("self.buffers", "pass", "std()", []),
    ],
)
def test_std_of_a_minibatch(loop: str, test: str, std: str, expected: list[str]) -> None:
    code = MINIBATCH_STD.format(loop=loop, test=test, std=std)
    assert _grades(code, "NUM202") == expected


def test_std_of_a_minibatch_under_a_size_test() -> None:
    code = MINIBATCH_STD.format(
        loop="self.buffer.get(self.batch_size)", test="pass", std="std()"
    ).replace("adv = (adv", "if len(adv) > 1: adv = (adv")
    assert _grades(code, "NUM202") == []


ROWS_COSINE = """
{head}
    {rows}
    a_n = a / a.norm(dim=1)[:, None]
    b_n = b / b.norm(dim=1)[:, None]
    return {use}


def caller(x, y, model):
    return cos_sim(x, y, model)
"""


@pytest.mark.parametrize(
    ("head", "rows", "use", "expected"),
    [
        # the caller's rows, normalised for a pairwise cosine matrix: an all-zero row is 0/0
        ("def cos_sim(a, b, model):", "pass", "torch.mm(a_n, b_n.transpose(0, 1))", ["medium"] * 2),
        ("def cos_sim(a, b, model):", "a = a.float()", "a_n @ b_n.T", ["medium"] * 2),
        # the same rows, normalised but not taken in a matrix product
        ("def cos_sim(a, b, model):", "pass", "(a_n - b_n).abs()", ["low"] * 2),
        # rows computed from the parameter (a mean over time steps), not the caller's own
        ("def cos_sim(a, b, model):", "a = torch.mean(a, dim=1)", "a_n @ b_n.T", ["low", "medium"]),
        # a model's own features: never exactly all-zero in practice
        ("def cos_sim(x, y, model):", "a, b = model(x), model(y)", "a_n @ b_n.T", ["low"] * 2),
    ],
)
def test_norm_of_caller_rows_in_a_cosine_matrix(
    head: str, rows: str, use: str, expected: list[str]
) -> None:
    code = ROWS_COSINE.format(head=head, rows=rows, use=use)
    assert _grades(code, "NUM202") == expected


FEATURE_NORM = """
class {cls}(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.net = nn.ModuleList([nn.Conv2d(n, n, 1)])
        self.proj = nn.Linear(n, n)

    def forward(self, x, y):
        {body}
"""


@pytest.mark.parametrize(
    ("cls", "body", "expected"),
    [
        # a layer's input divided by its own norm: a zero vector feature gives 0/0
        ("VNBatchNorm", "norm = torch.sqrt((x * x).sum(2))\n        return x / norm", ["medium"]),
        # what a sub-network returns, taken in a loop (per-layer features of a backbone)
        (
            "Perceptual",
            "return [f / f.norm(dim=1, keepdim=True) for f in self.net(x)]",
            ["medium"],
        ),
        ("Perceptual", "for f in self.net(x):\n            y = f / f.norm(dim=1)", ["medium"]),
        # a loss's inputs are a model's final outputs: rarely an exact zero vector
        ("EmbeddingLoss", "norm = torch.sqrt((x * x).sum(2))\n        return x / norm", ["low"]),
        # computed in the forward: not the features the layer was given
        ("Head", "h = self.proj(x)\n        return h / h.norm(dim=-1)", ["low"]),
    ],
)
def test_norm_of_layer_features(cls: str, body: str, expected: list[str]) -> None:
    code = FEATURE_NORM.format(cls=cls, body=body)
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        ("VNBatchNorm", ["medium"]),  # a sum of squares of a layer's input
        ("EmbeddingLoss", ["low"]),  # of a loss's inputs
    ],
)
def test_root_of_layer_features(cls: str, expected: list[str]) -> None:
    body = "return torch.sqrt((x * x).sum(2)) * y"
    assert _grades(FEATURE_NORM.format(cls=cls, body=body), "NUM201") == expected


WARNED = """
import logging


def corrcoef(var_x, var_y, cov, n, bound=1e-6):
    if {test}:
        {body}
    return cov / (var_x * var_y).sqrt()


def caller(a, b, c):
    return corrcoef(a, b, c, 3)
"""


@pytest.mark.parametrize(
    ("test", "body", "expected"),
    [
        # tested for 0 or a small bound, and only warned about: the division still runs
        ("(var_x < 1e-6).any()", "logging.warning('a variance is close to 0')", ["medium"]),
        ("1e-6 > var_y.min()", "print('flat')", ["medium"]),
        ("(var_x == 0).any()", "logging.warning('constant')", ["medium"]),
        ("(var_x < bound).any()", "logging.warning('close to 0')", ["medium"]),
        # the test changes the value or leaves the function: a guard
        ("(var_x < 1e-6).any()", "var_x = var_x.clamp_min(1e-6)", []),
        ("(var_x < 1e-6).any()", "return cov", []),
        ("(var_x < 1e-6).any()", "var_x.clamp_(min=1e-6)", []),
        # a test of something else
        ("n == 1", "logging.warning('one sample')", []),
        ("(var_x > 1e6).any()", "logging.warning('large')", []),
        ("(var_x < 0).any()", "logging.warning('negative')", []),
        # a bound made of other values: `cov > n + 2 * var_x` tests cov, not var_x
        ("(cov > n + 2 * var_x).any()", "logging.warning('far')", []),
    ],
)
def test_denominator_tested_and_only_warned(test: str, body: str, expected: list[str]) -> None:
    assert _grades(WARNED.format(test=test, body=body), "NUM202") == expected


WARNED_ONCE = """
import logging


def corrcoef(var_x, var_y, cov):
    if (var_x < 1e-6).any():
        logging.warning('a variance is close to 0')
    r = cov / (var_x * var_y).sqrt()
    return r, cov / (var_x * 2).sqrt()


def other(var_x, var_y, cov):
    return cov / (var_x * var_y).sqrt()


def caller(a, b, c):
    return corrcoef(a, b, c), other(a, b, c)
"""


def test_each_division_of_the_function_sees_its_warning() -> None:
    """The warning `if`s are read once per function: every division there sees them (both of
    corrcoef's are reported), a division in another function does not (other's is not)."""
    found = check_source(
        HEAD + WARNED_ONCE, "<string>", {"select": ["NUM202"], "min-confidence": "low"}
    )
    assert [(d.row - HEAD.count("\n"), d.confidence) for d in found] == [
        (8, "medium"),
        (9, "medium"),
    ]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # taps built from positive elements: their sum is > 0
        (
            "def gaussian(n, s):\n"
            "    from math import exp\n"
            "    g = torch.Tensor([exp(-(x - n // 2) ** 2 / (2 * s**2)) for x in range(n)])\n"
            "    return g / g.sum()\n",
            [],
        ),
        (
            "def cauchy(s, tail):\n"
            "    k = torch.tensor([((x / s) ** 2 + 1) for x in range(-tail, tail + 1)])\n"
            "    k = torch.reciprocal(k)\n"
            "    return k / torch.sum(k)\n",
            [],
        ),
        # ... elements of either sign: their sum can be 0
        (
            "def taps(n):\n"
            "    k = torch.tensor([x - n for x in range(2 * n + 1)])\n"
            "    return k / k.sum()\n",
            ["low"],
        ),
        # a one-hot encoding has a 1 in every row; one with a row cleared does not
        (
            "def loss(out, y, crit):\n"
            "    t = F.one_hot(y.long(), out.shape[1]).float()\n"
            "    return crit(out, t) / t.sum()\n",
            [],
        ),
        (
            "def loss(out, y, crit):\n"
            "    t = F.one_hot(y.long(), out.shape[1]).float()\n"
            "    t[0] = 0\n"
            "    return crit(out, t) / t.sum()\n",
            ["low"],
        ),
        # ... and a class column counts the samples of a class, which can be absent
        (
            "def means(x, y, k):\n"
            "    t = F.one_hot(y, k).float()\n"
            "    return (x.T @ t) / t.sum(0)\n",
            ["medium"],
        ),
        # ranks 1..n picked by index_select, raised to a power: positive weights
        (
            "def tail(lp, n, beta):\n"
            "    rank = torch.index_select(torch.arange(n) + 1, -1, torch.argsort(lp))\n"
            "    g = torch.pow(rank.float(), beta)\n"
            "    return (lp * g).sum() / g.sum()\n",
            [],
        ),
        # a vector with a component that is always 1 has a nonzero norm
        (
            "def unit(x):\n"
            "    v = torch.stack([x, torch.ones_like(x)], dim=-2)\n"
            "    return v / torch.norm(v, dim=-2, keepdim=True)\n",
            [],
        ),
        (
            "def unit(x, y):\n"
            "    v = torch.stack([x, y], dim=-2)\n"
            "    return v / torch.norm(v, dim=-2, keepdim=True)\n",
            ["low"],
        ),
    ],
)
def test_positive_by_construction(code: str, expected: list[str]) -> None:
    """A denominator the program builds positive is no finding; its signed look-alike is."""
    name = code.split("(")[0].removeprefix("def ")
    call = f"print({name})\n"
    assert _grades(code + call, "NUM202") == expected


DATASET = """
class Points({base}):
    def __init__(self, pts):
        self.pts = pts

    def __getitem__(self, i):
        p = self.pts[i]
        return p, torch.sqrt((p ** 2).sum(-1))


print(Points)
"""


@pytest.mark.parametrize(
    ("base", "expected"),
    [("torch.utils.data.Dataset", []), ("nn.Module", ["low"])],
)
def test_dataset_samples_carry_no_gradient(base: str, expected: list[str]) -> None:
    """A Dataset's methods run in the data loader: a sqrt whose only harm is its gradient at
    0 is no finding there; the same method of a module is."""
    assert _grades(DATASET.format(base=base), "NUM201") == expected


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [("-n + 1, n", []), ("2 * n - 1", []), ("0.5, n", ["low"])],
)
def test_whole_offsets_from_size_bounds(bounds: str, expected: list[str]) -> None:
    """`torch.arange` bounded by sizes gives whole numbers: `log(1 + |x|)` is exact; a range
    from 0.5 is not whole."""
    code = (
        f"def log_distance(n):\n"
        f"    pos = torch.arange({bounds}).float()\n"
        f"    return torch.sign(pos) * torch.log(pos.abs() + 1)\n"
        f"print(log_distance)\n"
    )
    assert _grades(code, "NUM108") == expected


@pytest.mark.parametrize(
    ("write", "expected"),
    [
        ("x_[x_ == 0] = x_[x_ == 0] + eps", []),
        ("x_[x_.abs() < eps] = eps", []),
        ("x_[x_ == 0], y_[y_ == 0] = x_[x_ == 0] + eps, y_[y_ == 0] + eps", []),
        ("x_.clamp_(min=eps)", []),
        # a write that does not select the zero entries leaves them
        ("x_[:, 0] = y_[:, 0]", ["low"]),
        ("x_[x_ > 1] = 1.0", ["low"]),
    ],
)
def test_zero_entries_lifted_before_a_norm(write: str, expected: list[str]) -> None:
    """Zero entries replaced in place by a positive value: no norm of the result is 0."""
    code = (
        "def angles(x, y, eps=1e-6):\n"
        "    x_, y_ = x.clone(), y.clone()\n"
        f"    {write}\n"
        "    r = x_.norm(dim=-1, keepdim=True)\n"
        "    return x.div(r)\n"
        "print(angles)\n"
    )
    assert _grades(code, "NUM202") == expected


NT_XENT = """
class NTXent(nn.Module):
    def forward(self, zi, zj, t=0.5):
        b = zi.shape[0]
        mask = {mask}
        z = torch.cat([zi, zj], 0)
        sim = F.cosine_similarity(z.unsqueeze(1), z.unsqueeze(0), dim=2)
        pos = torch.cat([torch.diag(sim, b), torch.diag(sim, -b)])
        den = mask * torch.exp(sim / t)
        return -torch.log(torch.exp(pos / t) / den.sum(1)).mean()
"""


@pytest.mark.parametrize(
    ("mask", "reported"),
    [
        ("(~torch.eye(2 * b, 2 * b, dtype=torch.bool)).float()", False),
        ("torch.clone((~torch.eye(b * 2, dtype=torch.bool)).type(torch.float))", False),
        ("1 - torch.eye(2 * b)", False),
        # n x n with n = b: a batch of one leaves no negative
        ("1 - torch.eye(b)", True),
        ("(torch.rand(2 * b, 2 * b) > 0.5).float()", True),
    ],
)
def test_off_diagonal_negatives(mask: str, reported: bool) -> None:
    """NT-Xent: the negatives of each of the 2b views are the other 2b - 1, weighted by
    exp, so each row's sum is positive; an off-diagonal mask of b x b is empty for b = 1."""
    assert bool(_grades(NT_XENT.format(mask=mask), "NUM202")) is reported


PSNR = """
def psnr(a, b):
    mse = torch.mean((a - b) ** 2)
    return 20 * torch.log10(1.0 / torch.sqrt(mse))


def train(net, x, opt):
    y = net(x)
    loss = F.mse_loss(y, x)
    loss.backward()
    opt.step()
    {use}
"""


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        ("print(psnr(y, x))", []),
        ("print(f'psnr {psnr(y, x):.2f}')", []),
        ("writer.add_scalar('psnr', psnr(y, x), 0)", []),
        ("(loss - psnr(y, x)).backward()", ["medium"]),
    ],
)
def test_metric_only_reported_carries_no_gradient(use: str, expected: list[str]) -> None:
    """A metric whose every call is printed, formatted or logged is never differentiated:
    a root whose only harm is its gradient is no finding there."""
    assert _grades(PSNR.format(use=use), "NUM201") == expected


DEMO = """import torch


def match(a, b):
    d = ((a[:, None] - b[None]) ** 2).sum(-1)
    return torch.sqrt(d).argmin(-1), torch.sqrt(d)


if __name__ == "__main__":
    x = torch.randn(4, 3)
    {extra}
    print(match(x, x))
"""


@pytest.mark.parametrize(
    ("extra", "imported", "reported"),
    [
        ("pass", False, False),
        # the script trains, or another file imports what it defines
        ("x.requires_grad_(True); match(x, x)[1].sum().backward()", False, True),
        ("train_one_epoch(match)", False, True),
        ("pass", True, True),
    ],
)
def test_inference_script_carries_no_gradient(
    tmp_path: Path, extra: str, imported: bool, reported: bool
) -> None:
    """A script no other file imports, in which nothing trains: a root whose only harm is
    its gradient is no finding there."""
    (tmp_path / ".git").mkdir()
    demo = tmp_path / "demo.py"
    demo.write_text(DEMO.format(extra=extra))
    if imported:
        (tmp_path / "train.py").write_text("from demo import match\n")
    found = check_paths([demo], {"select": ["NUM201"], "min-confidence": "low"})
    assert bool(found) is reported


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return loss.mean()", ["medium"]),  # the helper averages what it is given
        ("return loss.sum()", []),  # a sum of nothing is 0, not NaN
        ("return loss.mean(dim=0)", []),  # per column: not followed
    ],
)
def test_selection_averaged_by_a_helper_in_another_file(
    tmp_path: Path, body: str, expected: list[str]
) -> None:
    pkg = _package(
        tmp_path,
        utils=f"def reduce_loss(loss, how):\n    {body}\n",
        losses="import torch\n"
        "from pkg.utils import reduce_loss\n\n\n"
        "class RegionLoss(torch.nn.Module):\n"
        "    def forward(self, pred, target, mask):\n"
        "        loss = (pred - target) ** 2\n"
        "        return reduce_loss(loss[mask == 1], 'mean')\n",
    )
    found = check_paths([pkg], {"select": ["NUM202"], "min-confidence": "low"})
    assert [(d.row, d.confidence) for d in found] == [(8, c) for c in expected]


DISTANCE = """import torch


def pairwise_distance(a, b):
    return torch.sqrt(torch.sum((a - b) ** 2, dim=-1))
"""

METRIC_USER = """from enum import Enum

from {package} import pairwise_distance


class Metric(Enum):
    EUCLIDEAN = lambda x, y: pairwise_distance(x, y)
"""


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        # a lambda in a loss's module, the helper imported through its package's re-export
        ("triplet_loss.py", ["medium"]),
        # the same lambda in a file that is no loss: nothing differentiates the helper
        ("metrics.py", ["low"]),
    ],
)
def test_distance_called_from_a_loss_lambda(tmp_path: Path, user: str, expected: list) -> None:
    """`class Metric(Enum): EUCLIDEAN = lambda x, y: distance(x, y)` in a triplet loss's
    file: the loss differentiates the distance of an anchor to its positive, which can be
    the same sample."""
    (tmp_path / ".git").mkdir()
    util = tmp_path / "pkg" / "util"
    util.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (util / "__init__.py").write_text("from .similarity import pairwise_distance\n")
    (util / "similarity.py").write_text(DISTANCE)
    (tmp_path / "pkg" / user).write_text(METRIC_USER.format(package="pkg.util"))
    found = check_paths([util / "similarity.py"], {"select": ["NUM201"], "min-confidence": "low"})
    assert [d.confidence for d in found] == expected


ROTATION = """
def rotation(axis_angle):
    def _rodrigues(axis_angle, theta2):
        theta = torch.sqrt(theta2)
        return axis_angle / (theta + 1e-6)

    a = torch.unsqueeze(axis_angle, dim=1)
    theta2 = torch.squeeze(torch.matmul(a, a.transpose(1, 2)), dim=1)
    normal = _rodrigues(axis_angle, {passed})
    eps = 1e-6
    mask = (theta2 > eps).view(-1, 1)
    return mask * normal + ~mask * axis_angle


class Pose(nn.Module):
    def forward(self, x):
        return rotation(x)
"""


@pytest.mark.parametrize(
    ("passed", "expected"),
    [
        # the self dot product, which the function then tests against a tiny eps: the zero
        # rotation is expected, and the mask product does not stop sqrt's NaN gradient
        ("theta2", ["high"]),
        # clamped above 0 where it is passed, or a value nothing is known of
        ("theta2.clamp(min=1e-12)", []),
        ("axis_angle.abs()", []),
    ],
)
def test_root_of_a_nested_functions_parameter(passed: str, expected: list[str]) -> None:
    """A nested helper takes the root of its parameter: judged with what the enclosing
    function passes (`torch.matmul(a, a.transpose(1, 2))`, a squared length)."""
    assert _grades(ROTATION.format(passed=passed), "NUM201") == expected


@pytest.mark.parametrize(
    ("product", "expected"),
    [
        ("torch.matmul(a, a.transpose(1, 2))", ["low"]),
        ("a @ a.transpose(1, 2)", ["low"]),
        # a product of two tensors: not a squared length
        ("torch.matmul(a, b.transpose(1, 2))", []),
    ],
)
def test_root_of_a_self_inner_product(product: str, expected: list[str]) -> None:
    code = f"def length(a, b):\n    return torch.sqrt({product})\n"
    assert _grades(code, "NUM201") == expected


@pytest.mark.parametrize(
    ("magnitude", "expected"),
    [
        ("torch.sqrt(torch.clamp(m**2 + p**2, min=1e-8))", []),  # positive by its clamp
        ("torch.sqrt(m**2 + p**2).clamp_min(1e-5)", []),
        ("torch.exp(m)", []),
        ("torch.sqrt(m**2 + p**2)", ["low"]),  # a silent frame is 0
        ("torch.sqrt(torch.clamp(m**2 + p**2, min=0.0))", ["low"]),
    ],
)
def test_norm_of_a_helper_that_returns_a_positive_value(
    tmp_path: Path, magnitude: str, expected: list[str]
) -> None:
    pkg = _package(
        tmp_path,
        spectra="import torch\n\n\n"
        "def magnitude(x):\n"
        "    o = torch.stft(x, 512, return_complex=False)\n"
        "    m, p = o[..., 0], o[..., 1]\n"
        f"    return {magnitude}\n",
        losses="import torch\n"
        "from pkg.spectra import magnitude\n\n\n"
        "class SpectralConvergence(torch.nn.Module):\n"
        "    def forward(self, y_hat, y):\n"
        "        s_hat, s = magnitude(y_hat), magnitude(y)\n"
        "        return torch.norm(s - s_hat) / torch.norm(s)\n",
    )
    found = check_paths([pkg / "losses.py"], {"select": ["NUM202"], "min-confidence": "low"})
    assert [d.confidence for d in found] == expected


BAND_LOSS = """
class BandLoss(nn.Module):
    def forward(self, {params}):
        spec = torch.stft({signal}, 512, return_complex=True)
        return torch.matmul(self.bands, spec.abs() ** 2).pow(0.5).mean()
"""


@pytest.mark.parametrize(
    ("params", "signal", "expected"),
    [
        # the band energy of the loss's prediction: 0 in a silent frame, with a gradient
        ("estimate, target", "estimate", ["medium"]),
        # the target's: data, no gradient of the prediction
        ("estimate, target", "target", ["low"]),
        # one input: not a (prediction, target) loss
        ("signal", "signal", ["low"]),
    ],
)
def test_root_of_a_loss_predictions_band_energy(
    params: str, signal: str, expected: list[str]
) -> None:
    code = BAND_LOSS.format(params=params, signal=signal)
    assert _grades(code, "NUM201") == expected


def test_root_of_a_loss_embedding_is_low() -> None:
    code = (
        "class EmbeddingLoss(nn.Module):\n"
        "    def forward(self, embeddings, labels):\n"
        "        return embeddings.pow(2).sum(1).pow(0.5).mean()\n"
    )
    assert _grades(code, "NUM201") == ["low"]


UNIT_ROTATION = """
def l2norm(t):
    return F.normalize(t, dim=-1)

def rotation(x, y):
    {prepare}
    xy = (x + y)[..., None]
    xy_t = xy.transpose(-1, -2)
    return 2 * (xy @ xy_t) / (xy_t @ xy)
"""


@pytest.mark.parametrize(
    ("prepare", "expected"),
    [
        # the sum of two unit vectors: 0 when they point in opposite directions
        ("x, y = map(l2norm, (x, y))", ["medium"]),
        ("x, y = map(F.normalize, (x, y))", ["medium"]),
        # (the normalisation `y / y.norm()` is a division of its own: low)
        ("x = F.normalize(x, dim=-1); y = y / y.norm(dim=-1, keepdim=True)", ["low", "medium"]),
        # vectors of any length: their sum is rarely exactly 0
        ("x, y = map(torch.tanh, (x, y))", ["low"]),
        ("pass", ["low"]),
    ],
)
def test_sum_of_unit_vectors(prepare: str, expected: list[str]) -> None:
    assert _grades(UNIT_ROTATION.format(prepare=prepare), "NUM202") == expected


@pytest.mark.parametrize(
    ("diff", "expected"),
    [
        ("F.normalize(a, dim=-1) - F.normalize(b, dim=-1)", ["medium"]),
        ("a - b", ["low"]),
    ],
)
def test_norm_of_a_difference_of_unit_vectors(diff: str, expected: list[str]) -> None:
    code = f"def chord(a, b):\n    d = {diff}\n    return d / d.norm(dim=-1, keepdim=True)\n"
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        # a product of normalised exponentials (a separable Gaussian kernel): positive
        ("g = torch.exp(-x**2)\n    g = g / g.sum()\n    return g[:, None] * g[None, :]", []),
        ("g = torch.exp(-x**2)\n    return g / g.sum(-1, keepdim=True)", []),
        # one factor of any sign: its product can be all 0
        ("g = torch.exp(-x**2)\n    return g * torch.sin(x)", ["low"]),
        ("return torch.sin(x) / 2", ["low"]),
    ],
)
def test_weights_of_a_helper_that_returns_a_positive_kernel(
    tmp_path: Path, kernel: str, expected: list[str]
) -> None:
    pkg = _package(
        tmp_path,
        kernels=f"import torch\n\n\ndef kernel(x):\n    {kernel}\n",
        smooth="import torch\n"
        "from pkg.kernels import kernel\n\n\n"
        "def smooth(img, x, colour):\n"
        "    w = kernel(x) * torch.exp(-colour)\n"
        "    return (img * w).sum(-1) / w.sum(-1)\n",
    )
    found = check_paths([pkg / "smooth.py"], {"select": ["NUM202"], "min-confidence": "low"})
    assert [d.confidence for d in found] == expected


@pytest.mark.parametrize(
    ("squared", "expected"),
    [
        # a tensor's inner product with itself, in every spelling: a sum of squares
        ("torch.einsum('bi,bi->b', x, x)", ["medium", "medium"]),
        ("torch.einsum('...d,...d', x, x)", ["medium", "medium"]),
        ("torch.linalg.vecdot(x, x)", ["medium", "medium"]),
        ("torch.matmul(x, x.transpose(0, 1))", ["medium", "medium"]),
        ("torch.dot(x[0], x[0])", ["medium", "medium"]),
        ("x[0].dot(x[0])", ["medium", "medium"]),
        ("(x ** 2).sum(-1, keepdim=True)", ["medium", "medium"]),  # `True` is no name
        # not one tensor with itself, or nothing summed
        ("torch.einsum('bi,bi->b', x, w)", []),
        ("torch.einsum('bi,bj->b', x, x)", []),
        ("torch.einsum('bi,bi->bi', x, x)", []),
        ("torch.matmul(x, x)", []),
        ("torch.dot(x[0], w[0])", []),
    ],
)
def test_inner_product_with_itself(squared: str, expected: list[str]) -> None:
    code = (
        "class Layer(nn.Module):\n"
        "    def forward(self, x, w):\n"
        f"        s = {squared}\n"
        "        return torch.sqrt(s), x / s\n"
    )
    found = check_source(
        HEAD + code, "<string>", {"select": ["NUM201", "NUM202"], "min-confidence": "low"}
    )
    assert [d.confidence for d in sorted(found, key=lambda d: d.code)] == expected


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        ("torch.rsqrt((x * x).sum(-1, keepdim=True))", ["medium"]),  # inf for a zero vector
        ("(x * x).sum(-1, keepdim=True).rsqrt()", ["medium"]),
        ("torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)", []),  # RMSNorm's eps
    ],
)
def test_rsqrt_of_layer_features(root: str, expected: list[str]) -> None:
    code = f"class Norm(nn.Module):\n    def forward(self, x):\n        return x * {root}\n"
    assert _grades(code, "NUM201") == expected


@pytest.mark.parametrize(
    ("mean", "expected"),
    [
        ("loss[labels > 0].mean()", ["medium"]),
        ("loss.masked_select(labels > 0).mean()", ["medium"]),
        ("torch.masked_select(loss, labels > 0).mean()", ["medium"]),
        ("torch.mean(loss.masked_select(labels > 0))", ["medium"]),
        # guarded: a selection tested for any entry first
        ("loss[labels > 0].mean() if (labels > 0).any() else loss.sum() * 0", []),
    ],
)
def test_mean_of_a_selection_in_every_spelling(mean: str, expected: list[str]) -> None:
    code = (
        "class FocalLoss(nn.Module):\n"
        "    def forward(self, logits, labels):\n"
        "        loss = F.cross_entropy(logits, labels, reduction='none')\n"
        f"        return {mean}\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        # returns what a loss helper computes: it is what training minimises
        ("parts, x_t = self.calc_loss(model, x)\n        return parts['loss'][labels == 0].mean()",
         ["medium"]),
        ("d = self.calc_loss(model, x)[0]\n        total = d['loss'] * 2\n"
         "        return total[labels == 0].mean()", ["medium"]),
        # the mean is only a statistic of the input: the returned value is not the loss's
        ("parts, x_t = self.calc_loss(model, x)\n        return x[labels == 0].mean()", []),
    ],
)  # fmt: skip
def test_a_function_returning_a_loss_helpers_value_is_an_objective(
    tail: str, expected: list[str]
) -> None:
    code = (
        "class Diffusion:\n"
        "    def calc_loss(self, model, x):\n"
        "        x_t = x + torch.randn_like(x)\n"
        "        return {'loss': (model(x_t) - x).square().mean(-1)}, x_t\n"
        "    def guided_step(self, model, x, labels):\n"
        f"        {tail}\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("den", "expected"),
    [
        # a product of norms is 0 where either is: ReLU features can be all zero
        ("a.norm(dim=-1) * b.norm(dim=-1)", ["high"]),
        ("torch.linalg.vector_norm(a, dim=-1) * b.norm(dim=-1)", ["high"]),
        ("a.norm(dim=-1) * 2.0", ["high"]),
        # norms of a layer's outputs without an activation that zeroes them
        ("u.norm(dim=-1) * w.norm(dim=-1)", ["low"]),
    ],
)
def test_product_of_norms_graded_by_its_factors(den: str, expected: list[str]) -> None:
    code = (
        "class Sim(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.f = nn.Linear(3, 3)\n"
        "    def forward(self, x, y):\n"
        "        a, b = F.relu(self.f(x)), F.relu(self.f(y))\n"
        "        u, w = self.f(x), self.f(y)\n"
        f"        return (x * y).sum(-1) / ({den})\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        # the row's maximum is at least half of itself: every row counts >= 1 entry
        ("(s >= peaks / 2.0).float().sum(1)", []),
        ("(s >= 0.5 * s.max(dim=1, keepdim=True)[0]).float().sum(1)", []),
        ("(s == s.max(dim=1, keepdim=True).values).float().sum(1)", []),
        ("(peaks / 2 <= s).float().sum(1)", []),
        # strictly above the maximum: nothing is
        ("(s > peaks).float().sum(1)", ["high"]),
        # a fraction of a maximum that may be negative lies above it
        ("(x >= x.max(dim=1, keepdim=True)[0] / 2.0).float().sum(1)", ["high"]),
    ],
)
def test_count_of_entries_near_the_row_maximum(count: str, expected: list[str]) -> None:
    code = (
        "def widths(x, coeff):\n"
        "    s = torch.sqrt(x)\n"
        "    peaks, _ = torch.max(s, dim=1, keepdim=True)\n"
        f"    n = {count}\n"
        "    return coeff / n\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("grad", "expected"),
    [
        # a gradient penalty differentiates through the input gradient: sqrt'(0) is inf
        ("torch.autograd.grad(out.sum(), x, create_graph=True)[0]", ["medium"]),
        (
            "autograd.grad(outputs=out, inputs=x, grad_outputs=torch.ones_like(out), "
            "create_graph=True, retain_graph=True)[0]",
            ["medium"],
        ),
        # a gradient only read (no second derivative): the root's gradient is never taken
        ("torch.autograd.grad(out.sum(), x)[0]", ["low"]),
        # the gradient of a loss the function is given: 0 only at a stationary point
        ("torch.autograd.grad(loss, x, create_graph=True)[0]", ["low"]),
    ],
)
def test_root_of_a_differentiated_input_gradient(grad: str, expected: list[str]) -> None:
    code = (
        "from torch import autograd\n"
        "def gradient_penalty(critic, x, loss):\n"
        "    out = critic(x)\n"
        f"    g = {grad}\n"
        "    g = g.view(g.size(0), -1)\n"
        "    slopes = torch.sqrt(torch.sum(g ** 2, dim=1))\n"
        "    return ((slopes - 1) ** 2).mean()\n"
    )
    assert _grades(code, "NUM201") == expected


SETTINGS_KERNELS = """import functools
import math

import torch

from pkg.core import tensor


def pascal_row(n: int):
    row = [1.0]
    for _ in range(n - 1):
        row = [a + b for a, b in zip([0.0, *row], [*row, 0.0])]
    return tensor(row)


def pascal_2d(k: int, device=None):
    f = pascal_row(k)[:, None] * pascal_row(k)[None, :]
    return f / f.sum()


def erf_kernel(size: int, sigma: float | torch.Tensor):
    x = torch.arange(size, dtype=torch.float32) - size // 2
    t = 0.7071 / abs(sigma)
    g = 0.5 * ((t * (x + 0.5)).erf() - (t * (x - 0.5)).erf())
    return g / g.sum()


def notch(freq: float, width: int = 101):
    pad = width // 2
    inputs = torch.arange(width) - pad

    def sinc(x):
        return torch.cat([torch.sin(x[:pad]) / x[:pad], torch.ones(1), torch.sin(x[pad + 1 :]) / x[pad + 1 :]])

    h = sinc(3 * freq * inputs)
    h *= torch.hamming_window(width)
    h /= torch.sum(h)
    return h


@functools.lru_cache(maxsize=None)
def basis(l):
    c = torch.randn(2 * l + 1, 2 * l + 1, dtype=torch.float64)
    return c / torch.norm(c)


@functools.lru_cache(maxsize=None)
def coefficients(l):
    from math import factorial

    def f(n):
        return factorial(n)

    c = torch.tensor([f(l + k) / f(k) for k in range(l + 1)], dtype=torch.float64)
    return c / torch.norm(c)


def rows_of(x, size: int):
    def first():
        return x[:, :size]

    w = first()
    return w / w.norm(dim=1, keepdim=True)


def box(size: tuple[int, int] | int, mode: str = "box"):
    b = torch.ones(size, size) * (0.5 if mode == "box" else 1.0)
    return b / b.sum()


def batch_mean(batch: dict[str, torch.Tensor], key: str = "x"):
    m = batch["mask"]
    return (batch[key] * m).sum(1) / m.sum(1)


def data_kernel(weights: torch.Tensor):
    return weights / weights.sum()


def loaded_kernel(path: str):
    k = torch.load(path)
    return k / k.sum()


def smoothing(x, size: int):
    w = x[:, :size]
    w = w * torch.hann_window(size)
    return w / w.sum(dim=1, keepdim=True)
"""


def test_kernels_computed_from_settings_only(tmp_path: Path) -> None:
    """A row normalised by its own sum where every input is a setting (number parameters,
    constants, helpers of the project called with them, a library alias) is the same on
    every call: a 0 shows on the first run. Data and files stay reported."""
    pkg = _package(
        tmp_path, core="import torch\n\ntensor = torch.tensor\n", kernels=SETTINGS_KERNELS
    )
    found = check_paths([pkg], {"select": ["NUM202"], "min-confidence": "low"})
    lines = SETTINGS_KERNELS.splitlines()
    flagged = sorted(lines[d.row - 1].strip() for d in found)
    assert flagged == [
        "return (batch[key] * m).sum(1) / m.sum(1)",
        "return k / k.sum()",
        "return w / w.norm(dim=1, keepdim=True)",
        "return w / w.sum(dim=1, keepdim=True)",
        "return weights / weights.sum()",
    ]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("window(0.25)", []),  # every caller passes a number: a setting
        ("window(torch.tensor([0.25]))", ["low"]),  # a tensor a test builds: users pass data
    ],
)
def test_parameter_every_caller_sets_to_a_number(call: str, expected: list[str]) -> None:
    code = (
        "def window(alpha, size=64):\n"
        "    w = torch.linspace(-1.0, 1.0, size) ** 2 + alpha\n"
        "    return w / w.sum()\n"
        "def build():\n"
        f"    return {call}\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("loop", "expected"),
    [
        # a training loop draws batches of data: sqrt(0) = 0 forward, nothing differentiates it
        ("for pts, y in loader:", []),
        ("for i, (pts, y) in enumerate(loader):", []),
        ("for batch in loader:\n        pts, y = batch['pts'], batch['y']", []),
        # the batch made differentiable, or the model's own tensors: the NaN gradient is real
        ("for pts, y in loader:\n        pts.requires_grad_(True)", ["high"]),
        ("for pts, y in loader:\n        pts = pts.clone().requires_grad_()", ["high"]),
        ("for x, y in loader:\n        pts = model.encoder(x)", ["high"]),
        ("for pts in model.parameters():", ["high"]),
    ],
)
def test_batches_of_a_training_loop_carry_no_gradient(loop: str, expected: list[str]) -> None:
    code = (
        "def train(loader, model, opt, y=None):\n"
        f"    {loop}\n"
        "        d = torch.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))\n"
        "        loss = F.mse_loss(model(d), y)\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )
    assert _grades(code, "NUM201") == expected


@pytest.mark.parametrize(
    ("den", "expected"),
    [
        # the number of samples of each class: 0 for a class the batch does not hold
        ("torch.bincount(y, minlength=10).float()", ["medium"]),
        ("y.bincount(minlength=10)", ["medium"]),
        ("F.one_hot(y, 10).float().sum(0)", ["medium"]),
        # every sample counted: the total is the number of samples
        ("torch.bincount(y, minlength=10).float().sum()", []),
        ("F.one_hot(y, 10).float().sum()", []),
        # each sample's own class counts the sample
        ("torch.bincount(y)[y]", []),
    ],
)
def test_count_per_class(den: str, expected: list[str]) -> None:
    code = f"def class_means(feats, y):\n    counts = {den}\n    return feats / counts\n"
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("param", "expected"),
    [
        # a parameter the distribution validates as positive: its sum is > 0
        ("concentration", []),
        # declared real: an all-zero row is possible
        ("logits", ["low"]),
    ],
)
def test_distribution_parameter_declared_positive(param: str, expected: list[str]) -> None:
    code = (
        "from torch.distributions import constraints\n"
        "class DirichletCounts(torch.distributions.Distribution):\n"
        "    def __init__(self, concentration, logits):\n"
        "        self.concentration, self.logits = concentration, logits\n"
        "    arg_constraints = {\n"
        '        "concentration": constraints.independent(constraints.positive, 1),\n'
        '        "logits": constraints.real,\n'
        "    }\n"
        "    @property\n"
        "    def mean(self):\n"
        f"        return self.{param} / self.{param}.sum(-1, keepdim=True)\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("noise", "expected"),
    [
        # the square of a continuous random draw is never exactly 0: the root is > 0
        ("torch.tensor(rng.normal(0.0, std, size=img.shape).astype(np.float32))", []),
        ("torch.from_numpy(np.random.normal(0.0, std, size=img.shape))", []),
        ("torch.randn_like(img) * std", []),
        # scaled by 0 or by a mask, or data that only looks like noise: the sum can be 0
        ("torch.randn_like(img) * 0", ["low"]),
        ("torch.randn_like(img) * (img > 0)", ["low"]),
        ("img.new_zeros(img.shape)", ["low"]),
        ("std", ["low"]),
    ],
)
def test_square_of_a_random_draw(noise: str, expected: list[str]) -> None:
    code = (
        "import numpy as np\n"
        "def rician(img, rng, std: float = 0.1):\n"
        f"    n = {noise}\n"
        "    return torch.sqrt(img ** 2 + n ** 2)\n"
    )
    assert _grades(code, "NUM201") == expected


@pytest.mark.parametrize(
    ("init", "expected"),
    [
        # filled with random numbers in place, last: its norm is not 0
        ("torch.nn.init.orthogonal_(w.data)", []),
        ("nn.init.kaiming_uniform_(w, a=math.sqrt(5))", []),
        ("w.data.normal_(0, 0.02)", []),
        # drawn, then overwritten; or not drawn at all
        ("torch.nn.init.orthogonal_(w)\n    torch.nn.init.zeros_(w)", ["low"]),
        ("torch.nn.init.zeros_(w)", ["low"]),
        ("pass", ["low"]),
    ],
)
def test_tensor_drawn_in_place(init: str, expected: list[str]) -> None:
    code = (
        f"import math\nfrom torch import nn\ndef rescale(w):\n    {init}\n    return w / w.norm()\n"
    )
    assert _grades(code, "NUM202") == expected


DECOMPOSED = """
PROJ = nn.Linear(4, 4)

def _decompose(a):
    {helper}
    vals, vecs = torch.linalg.eigh(a)
    return vecs, vals

class Beam(nn.Module):
    def forward(self, cov):
        {source}
        vecs, _ = _decompose(uniq)
        return vecs / torch.sum(vecs[..., 0] ** 2, dim=-1, keepdim=True) ** 0.5
"""


@pytest.mark.parametrize(
    ("helper", "source", "expected"),
    [
        # torch.unique has no derivative, and the helper makes its results from its argument
        ("pass", "uniq, idx = torch.unique(cov, return_inverse=True, dim=1)", []),
        # the input itself: a gradient flows through the helper
        ("pass", "uniq = cov * 2", ["low"]),
        # the helper makes its argument require grad: its results carry a gradient
        (
            "a.requires_grad_()",
            "uniq, idx = torch.unique(cov, return_inverse=True, dim=1)",
            ["low"],
        ),
        # the helper applies a module made at import: its parameters carry a gradient
        ("a = PROJ(a)", "uniq, idx = torch.unique(cov, return_inverse=True, dim=1)", ["low"]),
    ],
)
def test_helper_of_data_returns_data(helper: str, source: str, expected: list[str]) -> None:
    """A module-level function of this project (or a staticmethod) that makes no tensor
    requiring grad returns values with a gradient only through its arguments: a root of
    what it computes from data has no gradient to break."""
    assert _grades(DECOMPOSED.format(helper=helper, source=source), "NUM201") == expected


UPSAMPLE = """
def upsample(feats, durs, pace=1.0):
    return [
        torch.repeat_interleave(feats[i], {repeats}, dim=0) for i in range(len(durs))
    ]

def infer(feats, log_durs):
    durs = torch.clamp(torch.exp(log_durs) - 1, 0)
    {use}
    return upsample(feats, durs)
"""


@pytest.mark.parametrize(
    ("repeats", "use", "expected"),
    [
        # every read of the value is rounded in the function it is handed to
        ("(pace * durs[i]).long()", "pass", []),
        ("torch.round(durs[i] * pace).int()", "frames = durs.round()", []),
        # the callee keeps the fraction
        ("pace * durs[i]", "pass", ["low"]),
        # a read here keeps it too
        ("(pace * durs[i]).long()", "total = durs.sum()", ["low"]),
    ],
)
def test_expm1_of_values_rounded_later(repeats: str, use: str, expected: list[str]) -> None:
    """`exp(x) - 1` whose every later use is rounded to whole numbers, here or in the
    project function it is passed to: the digits `expm1` would keep are discarded."""
    code = UPSAMPLE.format(repeats=repeats, use=use)
    assert _grades(code, "NUM108") == expected


DURATIONS = """
def process(code):
    counts = []
    for row in code:
        _, count = torch.unique_consecutive(row, return_counts=True)
        counts.append({part})
    return code, torch.cat(counts).float()

class Model(nn.Module):
    def forward(self, code):
        feats, dur = process(code)
        return torch.log(dur + 1)
"""


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        # counts of torch.unique, gathered in a list, concatenated and cast in a helper
        ("count[1:-1]", []),
        ("count", []),
        # something else gathered: a fraction may be small
        ("count / row.numel()", ["low"]),
    ],
)
def test_log1p_of_counts_a_helper_returns(part: str, expected: list[str]) -> None:
    """`log(1 + n)` is exact for whole numbers: counts followed through a list filled by
    `.append`, `torch.cat`, a cast and a helper's returned tuple are whole."""
    assert _grades(DURATIONS.format(part=part), "NUM108") == expected


NEAR = """
{imp}

def near(junctions, start, tol):
    vecs = junctions[None, ...] - start.unsqueeze(1)
    n = torch.norm(vecs, dim=-1)
    angles = torch.acos(vecs.sum(-1) / n)
    dists = n * sin(angles)
    return dists <= tol
"""


@pytest.mark.parametrize(
    ("imp", "expected"),
    [
        # a NaN angle makes `dists <= tol` False: the ratio only feeds a threshold
        ("from torch import sin", []),
        # not torch's sin: what it does with a NaN is not known
        ("from math import sin", ["low"]),
        ("def sin(x):\n    return x", ["low"]),
    ],
)
def test_ratio_only_thresholded_through_imported_torch_names(imp: str, expected: list[str]) -> None:
    """A ratio carried through torch functions called by an imported name (`sin(a)` after
    `from torch import sin`) into a comparison only: a NaN there is a False, not a value."""
    assert _grades(NEAR.format(imp=imp), "NUM202") == expected


MEAN_POOL = """
{helper}

def pooled(emb, attention_mask):
    {clear}
    return (emb * attention_mask[..., None]).sum(1) / attention_mask.sum(-1, keepdim=True)
"""

DROP_SPECIAL = """
def drop_special(mask):
    mask[:, 0] = 0
    return mask
"""

KEEP_SPECIAL = """
def drop_special(mask):
    return mask
"""


@pytest.mark.parametrize(
    ("helper", "clear", "expected"),
    [
        # an attention mask keeps each sentence's first token: its sum is not 0
        ("", "pass", ["low"]),
        # the [CLS] entry cleared in place: an empty sentence has no token left
        ("", "attention_mask[:, 0] = 0", ["high"]),
        ("", "attention_mask.masked_fill_(attention_mask.cumsum(-1) == 1, False)", ["high"]),
        # by a helper of the project that clears entries of the mask it returns
        (DROP_SPECIAL, "attention_mask = drop_special(attention_mask)", ["high"]),
        # a helper that returns the mask untouched, and a write of ones, keep the guarantee
        (KEEP_SPECIAL, "attention_mask = drop_special(attention_mask)", ["low"]),
        ("", "attention_mask[:, 0] = 1", ["low"]),
    ],
)
def test_mask_with_entries_cleared(helper: str, clear: str, expected: list[str]) -> None:
    """Clearing entries of a mask in place (`mask[:, 0] = 0`, here or in a helper that
    returns it) loses the entry that kept each row non-empty: its sum can be 0."""
    code = MEAN_POOL.format(helper=helper, clear=clear)
    assert _grades(code, "NUM202") == expected


def test_gradient_read_through_data() -> None:
    """`grad = p.grad.data` is the parameter's gradient: all zero for a frozen or unused
    parameter, so dividing by its norm is high; the norm of the weights is not."""
    code = """
def step(params, lr):
    for p in params:
        grad = p.grad.data
        p.data.add_(grad / torch.linalg.norm(grad), alpha=-lr)
"""
    assert _grades(code, "NUM202") == ["high"]
    weights = code.replace("p.grad.data", "p.data")
    assert _grades(weights, "NUM202") == ["low"]


MAX_OF = """
class Soft(nn.Module):
    def forward(self, batch):
        batch = {act}
        return batch / batch.amax(dim=1, keepdim=True)
"""


@pytest.mark.parametrize(
    ("act", "expected"),
    [
        # 0 wherever every channel of a position is 0
        ("F.relu(batch)", ["medium"]),
        ("batch.clamp(min=0)", ["medium"]),
        # values below 0 too, or kept above 0: the maximum is not pinned at 0
        ("torch.tanh(batch)", []),
        ("F.relu(batch) + 1e-6", []),
    ],
)
def test_maximum_of_a_relu_output(act: str, expected: list[str]) -> None:
    """A maximum over channels of a ReLU output (`relu(x).amax(1)`, `torch.max(x, 1)[0]`) is 0
    at a position where every channel is dead."""
    assert _grades(MAX_OF.format(act=act), "NUM202") == expected


GRAPH_NORM = """
from torch_scatter import scatter

class GraphNorm(nn.Module):
    def forward(self, x, batch, n):
        x = x - x.mean()
        var = scatter({src}, batch, dim=0, reduce="{reduce}").sum(dim=-1, keepdim=True) / n
        return x / (var.sqrt()[batch] + 1e-5)
"""


@pytest.mark.parametrize(
    ("src", "reduce", "expected"),
    [
        # a graph's variance summed over its nodes; the eps outside the root
        ("x * x", "add", ["medium"]),
        ("x * x", "mean", ["medium"]),
        # a maximum per graph, and a sum of values that are not squares: no variance
        ("x * x", "max", []),
        ("x", "add", []),
    ],
)
def test_root_of_a_segment_sum_of_squares(src: str, reduce: str, expected: list[str]) -> None:
    """`scatter(x * x, batch, reduce="add")` is a sum of squares per graph, 0 for a graph
    whose nodes are all equal; `sqrt(var)[batch] + eps` floors the root, not its gradient."""
    code = GRAPH_NORM.format(src=src, reduce=reduce)
    assert _grades(code, "NUM201") == expected


HEADS = """import torch.nn as nn


class Head(nn.Module):
    def __init__(self, n, k):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(n, k), {last})

    def forward(self, x):
        return self.block(x)


class Plain(nn.Module):
    def forward(self, x):
        return x
"""

CALLBACK = """import torch.nn.functional as F


class OnlineProbe:
    def setup(self, pl_module):
        from pkg.heads import {cls}
        pl_module.probe = {cls}(8, 10).to(pl_module.device)

    def on_batch_end(self, pl_module, x, y):
        preds = pl_module.probe(x)
        return F.cross_entropy(preds, y)
"""


@pytest.mark.parametrize(
    ("last", "cls", "expected"),
    [
        # a model a method stores on another object, imported inside that method
        ("nn.Softmax(dim=-1)", "Head", [(11, "high")]),
        # its forward returns logits, or another class is stored there
        ("nn.Identity()", "Head", []),
        ("nn.Softmax(dim=-1)", "Plain", []),
    ],
)
def test_model_stored_on_another_object(tmp_path: Path, last: str, cls: str, expected) -> None:
    """`pl_module.probe = Head(...).to(device)` in one method and `pl_module.probe(x)` in
    another: the call runs `Head.forward`, found through an import inside the method."""
    pkg = _package(tmp_path, heads=HEADS.format(last=last), callback=CALLBACK.format(cls=cls))
    found = check_paths([pkg / "callback.py"], {"select": ["NUM301"], "min-confidence": "low"})
    assert [(d.row, d.confidence) for d in found] == expected


DETECTION_LOSS = """
class DetLoss(nn.Module):
    def forward(self, pred_scores, pred_boxes, gt):
        target_boxes, target_scores, fg_mask = self.assigner(pred_scores.detach(), gt)
        scores_sum = target_scores.sum()
        loss_cls = self.bce(pred_scores, target_scores).sum() / scores_sum
        {test}
            loss_box = self.box_loss(pred_boxes[fg_mask], target_boxes[fg_mask])
        return loss_cls
"""


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        # the code tests the assigner's foreground mask for emptiness: the targets that come
        # with it sum to 0 for a batch without objects
        ("if fg_mask.sum():", ["medium"]),
        ("if fg_mask.any():", ["medium"]),
        ("if torch.sum(fg_mask) > 0:", ["medium"]),
        # no test of emptiness (another test, or none), nothing says the batch can be empty
        ("if self.training:", ["low"]),
        ("if pred_boxes.sum():", ["low"]),
    ],
)
def test_sum_of_targets_beside_a_mask_tested_for_emptiness(test: str, expected: list) -> None:
    """A sum of targets unpacked from one call beside a mask the function tests for
    emptiness (`if fg_mask.sum():`) can be 0: the author expects empty batches."""
    assert _grades(DETECTION_LOSS.format(test=test), "NUM202") == expected


MIXTURE = """
from torch.distributions import OneHotCategorical


class PiNet(nn.Module):
    def __init__(self, n, k):
        super().__init__()
        self.fc = nn.Linear(n, k)

    def forward(self, x):
        return OneHotCategorical({arg}=self.fc(x){tail})


class Mixture(nn.Module):
    def __init__(self, n, k):
        super().__init__()
        self.pi_net = PiNet(n, k)

    def forward(self, x):
        return self.pi_net(x), x

    def loss(self, x, loglik):
        pi, _ = self.forward(x)
        return -torch.logsumexp(torch.log(pi.probs) + loglik, dim=1)
"""


@pytest.mark.parametrize(
    ("arg", "tail", "expected"),
    [
        # the `.probs` of a distribution a model builds from logits: a softmax
        ("logits", "", ["high"]),
        # built from probabilities the model computes otherwise: not known to underflow
        ("probs", ".sigmoid()", []),
    ],
)
def test_log_of_a_distributions_probs(arg: str, tail: str, expected: list[str]) -> None:
    """`torch.log(pi.probs)` where `pi` is the `OneHotCategorical(logits=...)` a model's
    `forward` returns, unpacked from a tuple: the log of a softmax."""
    assert _grades(MIXTURE.format(arg=arg, tail=tail), "NUM101") == expected


GUMBEL = """
def noisy(scores):
    u = torch.rand(scores.shape)
    g = -torch.log(-torch.log(u))
    return {ret}
"""


@pytest.mark.parametrize(
    ("ret", "expected"),
    [
        # the noisy scores leave the function: a draw of 0 makes an entry -inf for the caller
        ("torch.log(scores) + g", ["high"]),
        # only an argmax or a softmax reads them: a -inf entry is just never picked
        ("(torch.log(scores) + g).argmax(-1)", []),
        ("F.softmax(torch.log(scores) + g, dim=-1)", ["low"]),
        # the noise itself, for the caller's sampler
        ("g", ["low"]),
    ],
)
def test_gumbel_noise_returned_with_the_scores(ret: str, expected: list[str]) -> None:
    """`-log(-log(u))` of a uniform draw is harmless noise only where the noisy scores are
    selected from; returned as values, its -inf reaches the caller's loss."""
    assert _grades(GUMBEL.format(ret=ret), "NUM103") == expected


SIOU = """
class {cls}:
    def __call__(self, b1, b2):
        s_cw = {dx}
        s_ch = (b2[:, 1] + b2[:, 3] - b1[:, 1] - b1[:, 3]) * 0.5
        sigma = torch.pow(s_cw ** 2 + s_ch ** 2, 0.5)
        return torch.abs(s_cw) / sigma
"""


@pytest.mark.parametrize(
    ("cls", "dx", "expected"),
    [
        # the centres of a predicted and a target box, a loss's pair: they meet in training
        ("SIoULoss", "(b2[:, 0] + b2[:, 2] - b1[:, 0] - b1[:, 2]) * 0.5", ["medium"]),
        ("SIoULoss", "0.5 * (b2[:, 0] + b2[:, 2] - b1[:, 0] - b1[:, 2])", ["medium"]),
        # the same distance outside a loss: two boxes rarely share a centre
        ("BoxGeometry", "(b2[:, 0] + b2[:, 2] - b1[:, 0] - b1[:, 2]) * 0.5", ["low"]),
    ],
)
def test_scaled_difference_in_a_loss(cls: str, dx: str, expected: list[str]) -> None:
    """A difference scaled by a constant (`(a - b) * 0.5`) is still the difference of a
    loss's pair, which can be equal."""
    assert _grades(SIOU.format(cls=cls, dx=dx), "NUM202") == expected


NERF = """
def depth_loss(raw, dists):
    raw2alpha = lambda raw, dists, act_fn={act}: 1.0 - torch.exp(-act_fn(raw) * dists)
    alpha = raw2alpha(raw[..., 3], dists)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1.0 - alpha + 1e-10], -1), -1)
    weights = alpha * trans[:, :-1]
    return -torch.log(weights).sum(1)
"""


@pytest.mark.parametrize(
    ("act", "expected"),
    [
        # a NeRF opacity: 1 - exp(-relu(sigma) * delta) is 0 in empty space, through the lambda
        ("F.relu", ["medium"]),
        # a density kept above 0: exp of a negative number is below 1
        ("lambda x: F.relu(x) + 1.0", []),
    ],
)
def test_opacity_through_a_local_lambda(act: str, expected: list[str]) -> None:
    """A local lambda is applied with its arguments and defaults bound (`act_fn=F.relu`),
    and `1 - exp(y)` is 0 where y is (a ReLU density of 0)."""
    assert _grades(NERF.format(act=act), "NUM103") == expected


def test_function_held_by_a_local_name() -> None:
    """`act = F.relu; torch.log(act(x))` is the log of a ReLU output."""
    code = "def f(x):\n    act = F.relu\n    return torch.log(act(x))\n"
    assert _grades(code, "NUM103") == ["high"]


TANH_LDJ = """
class Tanh(nn.Module):
    def forward(self, x):
        z = {act}
        return z, torch.log(1 - z ** 2).sum(-1)
"""


@pytest.mark.parametrize(
    ("act", "expected"),
    [
        # tanh is exactly +-1 from |x| = 9.01 in float32: the log-determinant is -inf
        ("torch.tanh(x)", ["medium"]),
        ("x.tanh()", ["medium"]),
        # scaled inside (-1, 1), or a value not known to reach +-1
        ("0.99 * torch.tanh(x)", []),
        ("torch.sigmoid(x) - 0.5", []),
    ],
)
def test_log_of_one_minus_a_squared_tanh(act: str, expected: list[str]) -> None:
    """`log(1 - tanh(x) ** 2)`: the square of a saturated tanh is exactly 1."""
    assert _grades(TANH_LDJ.format(act=act), "NUM103") == expected


def test_root_of_a_mean_of_elementwise_squared_errors() -> None:
    """`F.mse_loss(a, b, reduction="none").mean(d).sqrt()` is an RMSE, 0 at a perfect fit
    (medium in a loss); a mean of the errors' absolute values is not squared."""
    code = (
        "def spec_loss(est, ref):\n"
        "    loss = F.{fn}(est, ref, reduction='none')\n"
        "    return loss.mean((2, 3)).sqrt().mean()\n"
    )
    assert _grades(code.format(fn="mse_loss"), "NUM201") == ["medium"]
    assert _grades(code.format(fn="l1_loss"), "NUM201") == []


RECALL_AT_K = """
@torch.no_grad()
def recall(hits, relevant):
    res = hits.sum(1) / relevant.sum(1)
    {repair}
    return res.mean()
"""


@pytest.mark.parametrize(
    ("repair", "expected"),
    [
        # a test for infinities alone: 0/0 is NaN, not inf, and stays
        ("res[torch.isinf(res)] = 0", ["low"]),
        # NaN replaced too: a deliberate NaN, no gradient carries it on
        ("res[torch.isnan(res)] = 0", []),
        ("res = torch.nan_to_num(res)", []),
    ],
)
def test_inf_only_repair_leaves_a_nan(repair: str, expected: list[str]) -> None:
    """A division by a sum that is replaced only where it is infinite is still reported:
    the empty case is 0/0 = NaN."""
    assert _grades(RECALL_AT_K.format(repair=repair), "NUM202") == expected


PPO_SLICES = """
def update(adv_all, n, step):
    inds = torch.randperm(n)
    for start in {loop}:
        end = start + step
        mb_inds = inds[start:end]
        mb = adv_all[mb_inds].to("cpu")
        {test}
        mb = (mb - mb.mean()) / (mb.{std} + 1e-8)
"""


@pytest.mark.parametrize(
    ("loop", "test", "std", "expected"),
    [
        # minibatches sliced by a stepped range: the last one may hold a single sample
        ("range(0, n, step)", "pass", "std()", ["medium"]),
        ("tqdm.tqdm(range(0, n, step))", "pass", "std()", ["medium"]),
        # a size test, the biased std, or a loop without a step: the eps guards the rest
        ("range(0, n, step)", "if len(mb) < 2:\n            continue", "std()", []),
        ("range(0, n, step)", "pass", "std(unbiased=False)", []),
        ("range(n)", "pass", "std()", []),
    ],
)
def test_std_of_a_sliced_minibatch(loop: str, test: str, std: str, expected: list) -> None:
    """The unbiased std of a minibatch sliced from a stepped range (`inds[start:end]`) is
    NaN for a last slice of one sample, which the eps does not guard."""
    code = "import tqdm\n" + PPO_SLICES.format(loop=loop, test=test, std=std)
    assert _grades(code, "NUM202") == expected


CAM_NORM = """
@torch.no_grad()
def normalize(cams):
    {shift}
    cams.div_(cams.flatten(start_dim=-2).max(-1).values[..., None, None])
    return cams
"""


@pytest.mark.parametrize(
    ("shift", "expected"),
    [
        # less its own minimum first: the maximum is each map's range, 0 for a constant map
        ("cams.sub_(cams.flatten(start_dim=-2).min(-1).values[..., None, None])", ["medium"]),
        # less something else, or not shifted: the maximum is not known to be 0
        ("cams.sub_(0.5)", []),
        ("pass", []),
    ],
)
def test_maximum_after_subtracting_the_own_minimum(shift: str, expected: list[str]) -> None:
    """`x.sub_(x.min(...))` then `x.div_(x.max(...))`: a min-max normalisation in place,
    0/0 for a constant map (a channel a ReLU zeroed)."""
    assert _grades(CAM_NORM.format(shift=shift), "NUM202") == expected


def test_option_replaced_when_none_is_live(tmp_path: Path) -> None:
    """A parameter defaulting to None that no caller passes is an unused option, unless the
    function replaces the None (`dims = x.ndim - 1 if dims is None else dims`): then the
    code that reads it runs."""
    body = (
        "import torch\n\n\n"
        "def normalize(cams, dims=None):\n"
        "    {rebind}\n"
        "    lo = cams.flatten(start_dim=-dims).amin(-1, keepdim=True)\n"
        "    return cams / cams.flatten(start_dim=-dims).norm(dim=-1, keepdim=True)\n\n\n"
        "def run(x):\n"
        "    return normalize(x)\n"
    )
    pkg = _package(tmp_path, a=body.format(rebind="dims = cams.ndim - 1 if dims is None else dims"))
    found = check_paths([pkg], {"select": ["NUM202"], "min-confidence": "low"})
    assert [d.row for d in found] == [7]
    (pkg / "a.py").write_text(body.format(rebind="pass"))
    found = check_paths([pkg], {"select": ["NUM202"], "min-confidence": "low"})
    assert found == []


@pytest.mark.parametrize(
    ("reduce", "expected"),
    [("sum", ["medium"]), ("mean", ["medium"]), ("amax", [])],
)
def test_scatter_reduce_is_a_segment_sum(reduce: str, expected: list[str]) -> None:
    """`torch.scatter_reduce(out, 0, batch, x * x, "sum")` (and the method) sums per
    segment like torch_scatter's `scatter`; a maximum per segment does not."""
    code = (
        "class GraphNorm(nn.Module):\n"
        "    def forward(self, x, batch, n):\n"
        "        x = x - x.mean()\n"
        f"        var = torch.scatter_reduce(torch.zeros(n), 0, batch, x * x, '{reduce}')\n"
        "        return x / (var.sqrt()[batch] + 1e-5)\n"
    )
    assert _grades(code, "NUM201") == expected


MIN_MAX = """
class Loss(nn.Module):
    def forward(self, fake, real):
        {values}
        lo, hi = torch.min(v), torch.max(v)
        w = (v - lo) / (hi - lo)
        return (w * fake).sum()
"""


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # eigenvalues of a model's features: all equal for degenerate features in training
        ("v = torch.linalg.eigvalsh(real @ real.T)", ["medium"]),
        # Gaussian noise: distinct draws never tie, and no gradient flows through it
        ("v = torch.randn(16)", ["low"]),
    ],
)
def test_range_of_one_tensor_in_a_loss(values: str, expected: list[str]) -> None:
    """A min-max normalisation is 0/0 for a constant tensor: medium where autograd
    differentiates the function and the tensor carries a gradient."""
    assert _grades(MIN_MAX.format(values=values), "NUM202") == expected
    plain = MIN_MAX.replace("class Loss(nn.Module):\n    def forward(self,", "def scale(")
    assert _grades(plain.format(values=values).replace("\n    ", "\n"), "NUM202") == ["low"]


@pytest.mark.parametrize(
    ("guard", "expected"),
    [
        # a test of the total passes while one row is silent
        ("if rms.sum() < 1e-8:\n        rms = torch.ones_like(rms) * 1e-8", ["low"]),
        ("if rms.mean() == 0:\n        return x", ["low"]),
        # a test of the smallest entry guards each one
        ("if rms.min() < 1e-8:\n        rms = torch.ones_like(rms) * 1e-8", []),
        ("if (rms < 1e-8).any():\n        return x", []),
    ],
)
def test_a_tested_total_guards_no_entry(guard: str, expected: list[str]) -> None:
    """`if rms.sum() < eps: rms = ...` replaces the RMS only when every row is silent: a
    single silent row still divides by 0."""
    code = (
        "def scale(x):\n"
        "    rms = torch.sqrt(torch.mean(torch.square(x), dim=-1, keepdim=True))\n"
        f"    {guard}\n"
        "    return x / rms\n"
    )
    assert _grades(code, "NUM202") == expected


def test_root_mean_square_of_a_helper(tmp_path: Path) -> None:
    """A helper in another file returning `sqrt(mean(x ** 2))` (a root mean square) is a
    norm."""
    pkg = _package(
        tmp_path,
        utils="import torch\n\n\ndef rms(x):\n    return torch.sqrt(torch.mean(x ** 2, dim=-1))\n",
        loss=(
            "import torch\nfrom pkg.utils import rms\n\n\n"
            "def normalised(x):\n    return x.sum(-1) / rms(x)\n"
        ),
    )
    found = check_paths([pkg / "loss.py"], {"select": ["NUM202"], "min-confidence": "low"})
    assert [(d.row, d.confidence) for d in found] == [(6, "low")]
    (pkg / "utils.py").write_text(
        "import torch\n\n\ndef rms(x):\n    return torch.sqrt(torch.mean(x ** 2, dim=-1) + 1e-8)\n"
    )
    assert check_paths([pkg / "loss.py"], {"select": ["NUM202"], "min-confidence": "low"}) == []


@pytest.mark.parametrize(
    ("den", "expected"),
    [
        # local means of two images: both 0 in a black region
        ("F.avg_pool2d(x, 3) ** 2 + F.avg_pool2d(y, 3) ** 2", ["low"]),
        # numbers: `(1 - t) ** 2 + t ** 2` is at least 0.5
        ("(1 - t) ** 2 + t ** 2", []),
    ],
)
def test_sum_of_two_squares_of_tensors(den: str, expected: list[str]) -> None:
    """`a ** 2 + b ** 2` is a sum of squares when a and b are tensors a function computes."""
    code = f"def index(x, y, t=0.5):\n    return (x * y).sum() / ({den})\n"
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("den", "expected"),
    [
        # a node without edges has degree 0, and log(1 + 0) = 0
        ("degree(index, num_nodes=n)", ["medium"]),
        ("torch.log(degree(index, num_nodes=n) + 1)", ["medium"]),
        # counted up to the largest index: a batch vector's graphs each hold a node
        ("degree(index)", ["low"]),
        # 1 + a degree is never 0
        ("degree(index, num_nodes=n) + 1", []),
    ],
)
def test_node_degree_denominators(den: str, expected: list[str]) -> None:
    """A node's degree, and the log of one plus it (a PNA scaler), are 0 for an isolated
    node given by the node count."""
    code = (
        "from torch_geometric.utils import degree\n\n\n"
        f"def scale(out, index, n):\n    return out / ({den})\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        ("sigma.det().sqrt()", ["medium"]),
        ("torch.sqrt(torch.linalg.det(sigma))", ["medium"]),
        ("torch.sqrt(torch.linalg.det(sigma).clamp_min(1e-6))", []),
        # a product of determinants clamped at 0: exactly 0 for a flat box, so the clamp
        # passes sqrt's infinite slope on
        ("(sigma.det() * sigma.mT.det()).clamp(0).sqrt()", ["high"]),
    ],
)
def test_root_of_a_determinant(root: str, expected: list[str]) -> None:
    """The determinant of a covariance is 0 for a degenerate (tiny or flat) Gaussian box:
    its root's gradient is NaN there."""
    code = f"class KFIoU(nn.Module):\n    def forward(self, sigma):\n        return 4 * {root}\n"
    assert _grades(code, "NUM201") == expected


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        ("(0.5 * (1 - cosine)).clamp(0, 1).sqrt()", ["medium"]),  # expected to reach 0
        ("((1 - cosine) / 2).clamp(min=0).sqrt()", ["medium"]),
        ("(0.5 * R[:, 0, 0]).clamp(0, 1).sqrt()", ["low"]),  # no difference: an entry clamped
        ("(cosine * scale).clamp(0, 1).sqrt()", ["low"]),  # scaled by a tensor, not a number
        ("(cosine - scale).clamp(min=0).sqrt()", ["low"]),  # two values: nothing bounds them
    ],
)
def test_a_scaled_difference_clamped_at_0(root: str, expected: list[str]) -> None:
    """A number less a value, scaled by a number and clamped at 0, is 0 where the value
    reaches the number at its bound (the identity rotation): the code expects the 0, so a
    library function that nothing differentiates shows it (medium); a clamp of anything
    else, a difference of two values included, stays low there."""
    code = f"""
def half_angle(R, scale):
    cosine = 0.5 * (R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2] - 1)
    return {root}
"""
    assert _grades(code, "NUM201") == expected


def test_a_name_scaled_by_itself_in_a_loop_ends() -> None:
    """`d = d * 2` in a loop, then the root of `d.clamp(min=0)`: reading through the scaling
    stops (the name is a multiple of itself) and the finding stands."""
    code = """
class Gap(nn.Module):
    def forward(self, a, b):
        d = a - b
        for _ in range(3):
            d = d * 2
        return d.clamp(min=0).sqrt()
"""
    assert len(_grades(code, "NUM201")) == 1


@pytest.mark.parametrize(
    ("den", "expected"),
    [
        # two counts of a test: 0 when the batch has no positive prediction
        ("tp + fp", ["high"]),
        ("tp + 0.5 * (fp + fn)", ["high"]),
        # precision plus recall: 0 without a true positive (an F1 score)
        ("tp / (tp + fp) + tp / (tp + fn)", ["high", "high", "high"]),
        # a count plus a sum of the caller's magnitudes: as likely as that sum
        ("tp + given.abs().sum()", ["low"]),
        # an eps, a smoothed ratio, a positive sum, signed sums: not 0 together
        ("tp + fp + 1e-8", []),
        ("(tp + 1) / (tp + fp + 1) + (tp + 1) / (tp + fn + 1)", []),
        ("tp + torch.sigmoid(x).sum()", []),
        ("x.sum() + x.mean()", []),
        ("tp + given.sum()", []),
    ],
)
def test_a_sum_of_counts_is_0_where_each_is(den: str, expected: list[str]) -> None:
    """`tp + fp`, `precision + recall`: a sum of reductions of values that are never
    negative is 0 where every term is, graded as its least likely term."""
    code = (
        "def score(x, pred, target, given):\n"
        "    tp = ((pred == 1) & (target == 1)).sum().float()\n"
        "    fp = ((pred == 1) & (target == 0)).sum().float()\n"
        "    fn = ((pred == 0) & (target == 1)).sum().float()\n"
        f"    return tp / ({den})\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("setup", "passed", "expected"),
    [
        # a ReLU output or a value clamped at 0, made by the caller: 0 for a dead unit
        ("", "F.relu(out[:, 1])", ["high"]),
        ("", "out[:, 1].clamp(min=0)", ["high"]),
        ("", "torch.clamp(out[:, 1], 0, 10)", ["high"]),
        # unpacked from a tuple written out
        ("mu, var = out[:, 0], F.relu(out[:, 1])", "var", ["high"]),
        # the elementwise maximum with zeros, spelt three ways
        ("", "torch.max(out[:, 1], torch.zeros_like(out[:, 1]))", ["high"]),
        ("", "torch.maximum(out[:, 1], out.new_zeros(()))", ["high"]),
        ("v = out[:, 1]", "v.max(torch.tensor(0.0))", ["high"]),
        # `torch.max(x, 0)` is a maximum along dim 0, not a floor
        ("", "torch.max(out, 0)[0]", []),
        # positive: an exp, a clamp above 0
        ("", "out[:, 1].exp()", []),
        ("", "out[:, 1].clamp(min=1e-4)", []),
        ("mu, var = out[:, 0], out[:, 1].exp()", "var", []),
    ],
)
def test_a_parameter_its_caller_floors_at_0(setup: str, passed: str, expected: list[str]) -> None:
    """`torch.log(var)` of a parameter: a caller passing a ReLU output (or a clamp at 0)
    makes it 0 for a dead unit, as in the caller's own body."""
    code = (
        "def nll(mu, var, y):\n"
        "    return 0.5 * torch.log(var) + (y - mu) ** 2\n\n\n"
        "class Head(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(8, 2)\n\n"
        "    def forward(self, x, y):\n"
        "        out = self.fc(x)\n"
        f"        {setup or 'pass'}\n"
        f"        return nll(out[:, 0], {passed}, y).mean()\n"
    )
    found = check_source(HEAD + code, "<string>", {"select": ["NUM103"], "min-confidence": "low"})
    assert [(d.row, d.confidence) for d in found] == [(5, e) for e in expected]


def test_a_count_a_helper_returns(tmp_path: Path) -> None:
    """A project function that returns the count of a test (`(x > 0).sum(1)`, also in
    another file): 0 where the test holds nowhere; a helper returning a plain size is not."""
    pkg = _package(
        tmp_path,
        stats=HEAD + "\n\ndef hits(x):\n    return (x > 0).sum(1)\n\n\n"
        "def size(x):\n    return x.shape[1]\n",
        loss=HEAD + "from pkg.stats import hits, size\n\n\n"
        "def per_hit(d, x):\n    return d.sum(1) / hits(x)\n\n\n"
        "def per_entry(d, x):\n    return d.sum(1) / size(x)\n",
    )
    found = check_paths([pkg / "loss.py"], {"select": ["NUM202"], "min-confidence": "low"})
    assert [(d.row, d.confidence) for d in found] == [(8, "medium")]
    assert "a count another function makes" in found[0].message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # the exp of a log-probability is a probability, 1 where the model is sure
        ("torch.log(1 - torch.exp(lp))", ["high"]),
        ("torch.log1p(-lp.exp())", ["high"]),
        ("(1 - lp.gather(-1, y[:, None]).exp()).log()", ["high"]),
        # clamped below 1, or the exp of a value the code does not know to be a log-probability
        ("torch.log1p(-lp.exp().clamp(max=1 - 1e-6))", []),
        ("torch.log1p(-torch.exp(-raw.abs() - 1))", []),
    ],
)
def test_the_exp_of_a_log_probability(body: str, expected: list[str]) -> None:
    """`log1p(-exp(lp))` of a log_softmax output, made here or passed by a caller."""
    here = f"def loss(logits, y, raw):\n    lp = F.log_softmax(logits, -1)\n    return {body}\n"
    assert _grades(here, "NUM103") == expected
    passed = (
        f"def term(lp, y, raw):\n    return {body}\n\n\n"
        "def loss(logits, y, raw):\n    return term(F.log_softmax(logits, -1), y, raw)\n"
    )
    assert _grades(passed, "NUM103") == expected


@pytest.mark.parametrize(
    ("den", "expected"),
    [
        # a hand-written variance, in a module's forward: 0 for a constant row (medium)
        ("torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True))", ["medium"]),
        ("((x - x.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True).sqrt()", ["medium"]),
        ("torch.sqrt(x.var(-1, keepdim=True))", ["medium"]),
        # a root mean square of x itself is a norm: 0 only for an all-zero row (low)
        ("torch.sqrt((x ** 2).mean(-1, keepdim=True))", ["low"]),
        # the mean of another tensor: not a deviation from x's own mean
        ("torch.sqrt(((x - y.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True))", ["low"]),
    ],
)
def test_a_hand_written_variance(den: str, expected: list[str]) -> None:
    """`(x - mu) / sqrt(((x - mu) ** 2).mean(-1))`: a layer norm without its eps."""
    code = (
        "class Norm(nn.Module):\n"
        "    def __init__(self, d):\n"
        "        super().__init__()\n"
        "        self.g = nn.Parameter(torch.ones(d))\n\n"
        "    def forward(self, x, y):\n"
        "        mu = x.mean(-1, keepdim=True)\n"
        f"        return self.g * (x - mu) / {den}\n"
    )
    assert _grades(code, "NUM202") == expected


def test_a_zero_made_in_another_function_is_named() -> None:
    """The finding says where the ReLU its value comes from is, and points at it."""
    code = (
        "def nll(var):\n    return torch.log(var)\n\n\n"
        "class Head(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(8, 2)\n\n"
        "    def forward(self, x):\n"
        "        return nll(F.relu(self.fc(x))).mean()\n"
    )
    (found,) = check_source(HEAD + code, "<string>", {"select": ["NUM103"]})
    assert "(the ReLU in `Head.forward`" in found.message
    assert [(row, message) for _, row, _, message in found.related] == [
        (14, "the ReLU in `Head.forward` (<string>) is computed here")
    ]


@pytest.mark.parametrize(
    ("setup", "ratio", "expected"),
    [
        # a metric's Dice and IoU of two masks it is given: both empty gives 0/0
        ("", "2 * (a * b).sum() / (a.sum() + b.sum())", ["medium"]),
        ("", "(a * b).sum() / (a.sum() + b.sum() - (a * b).sum())", ["medium"]),
        # a mask the function thresholds: an empty prediction is everyday
        ("h = (a > 0.5).float()", "2 * (h * b).sum() / (h.sum() + b.sum())", ["high"]),
        # probabilities have a positive sum
        ("a = torch.sigmoid(a)", "2 * (a * b).sum() / (a.sum() + b.sum())", []),
        # smoothed, or a test that one mask is not empty on the arm that divides
        ("", "(2 * (a * b).sum() + 1) / (a.sum() + b.sum() + 1)", []),
        (
            "i, u = (a * b).sum(), a.sum() + b.sum() - (a * b).sum()",
            "torch.where(a.sum() > 0, i / u, torch.tensor(float('nan')))",
            [],
        ),
    ],
)
def test_dice_and_iou_of_two_masks(setup: str, ratio: str, expected: list[str]) -> None:
    """The overlap of two masks over their sizes (numlint.analysis.zeros.overlap_masks)."""
    code = f"def score(a, b):\n    {setup or 'pass'}\n    return {ratio}\n"
    assert _grades(code, "NUM202") == expected


def test_a_dice_loss_on_probabilities_is_low(tmp_path: Path) -> None:
    """In a loss a module's training minimises, a Dice of given tensors is low (they are
    mostly soft probabilities); with the caller's softmax known, it is not reported."""
    loss = (
        "def dice(p, t):\n    return 1 - 2 * (p * t).sum() / (p.sum() + t.sum())\n\n\n"
        "class Seg(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 2, 1)\n\n"
        "    def forward(self, x, t):\n"
        "        return dice({passed}, t)\n"
    )
    assert _grades(loss.format(passed="self.conv(x)"), "NUM202") == ["low"]
    assert _grades(loss.format(passed="self.conv(x).softmax(1)"), "NUM202") == []


def test_counts_a_caller_passes() -> None:
    """A confusion matrix a helper counts with `torch.bincount`, passed to the function that
    divides by the sum of its entries (an IoU): 0 for a class absent from both."""
    code = (
        "def confusion(pred, target, k):\n"
        "    return torch.bincount(target * k + pred, minlength=k * k).reshape(k, k)\n\n\n"
        "def iou_of(c, w):\n"
        "    return w.sum() * c[1, 1] / (c[0, 1] + c[1, 0] + c[1, 1])\n\n\n"
        "def binary_iou(pred, target, w):\n"
        "    return iou_of({passed}, w)\n"
    )
    made = code.format(passed="confusion(pred, target, 2)")
    assert _grades(made, "NUM202") == ["medium"]
    assert _grades(code.format(passed="w.abs()"), "NUM202") == []


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        # masks a loss reads from its batch, multiplied: a batch with every sample masked out
        ('data["token_mask"] * data["sample_mask"].unsqueeze(-1)', ["medium"]),
        ("region_mask * sample_mask.unsqueeze(-1)", ["medium"]),
        # a per-row mean of the same masks is left to the masks (a row keeps a token)
        ('data["token_mask"][:, 0]', ["low"]),
    ],
)
def test_a_loss_mean_over_masks_it_is_given(mask: str, expected: list[str]) -> None:
    """`(err * mask).sum() / mask.sum()` over the whole batch in a loss, with the mask a
    product of masks the loss is given (parameters or entries of one)."""
    code = (
        "def loss_fn(logits, data, region_mask, sample_mask):\n"
        f"    mask = {mask}\n"
        "    err = (logits - data['target']) ** 2\n"
        "    return (err * mask).sum() / mask.sum()\n\n\n"
        "def train(model, batch, opt):\n"
        "    loss = loss_fn(model(batch['x']), batch, batch['m'], batch['s'])\n"
        "    loss.backward()\n"
        "    opt.step()\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        # a dense graph convolution's mean over neighbours: an isolated node has none
        ("torch.matmul(adj, x) / adj.sum(dim=-1, keepdim=True)", ["medium"]),
        ("(adj @ x) / adj.sum(-1, keepdim=True)", ["medium"]),
        # degrees clamped, or positive weights
        ("torch.matmul(adj, x) / adj.sum(-1, keepdim=True).clamp(min=1)", []),
        ("torch.matmul(adj.exp(), x) / adj.exp().sum(-1, keepdim=True)", []),
    ],
)
def test_a_mean_over_neighbours(ratio: str, expected: list[str]) -> None:
    """`(A @ X) / A.sum(-1)` of an adjacency the layer is given."""
    code = (
        "class MeanConv(nn.Module):\n"
        "    def forward(self, x, adj):\n"
        "        adj = adj.unsqueeze(0) if adj.dim() == 2 else adj\n"
        f"        return {ratio}\n"
    )
    assert _grades(code, "NUM202") == expected


def test_a_layer_is_named_where_it_is_built() -> None:
    """A sigmoid layer assigned in `__init__` is named there, not in the method calling it."""
    code = (
        "class D(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.net = nn.Sequential(nn.Linear(8, 1), nn.Sigmoid())\n\n"
        "    def forward(self, x):\n"
        "        return self.net(x)\n\n\n"
        "def d_loss(d: D, real):\n"
        "    return -torch.log(d(real)).mean()\n"
    )
    (found,) = check_source(HEAD + code, "<string>", {"select": ["NUM102"]})
    assert "the `Sigmoid` module built in `D.__init__`" in found.message


@pytest.mark.parametrize(
    ("floor", "expected"),
    [
        ("torch.max(r - m, torch.zeros_like(r))", ["high"]),
        ("torch.maximum(r - m, torch.zeros(1))", ["high"]),
        ("torch.max(r - m, torch.full_like(r, 0.0))", ["high"]),
        ("torch.max(r - m, r.new_full(r.shape, fill_value=0.0))", ["high"]),
        # a floor above 0, and a maximum along a dim: no zero
        ("torch.max(r - m, torch.full_like(r, 0.1))", []),
        ("torch.max(r - m, 1)[0]", []),
    ],
)
def test_the_sum_of_squares_of_a_value_floored_by_another_method(
    tmp_path: Path, floor: str, expected: list[str]
) -> None:
    """A perceptual loss's disturbance: the maximum of a difference and zeros, made in one
    method and summed as squares under a root in another, is 0 for a frame where nothing
    exceeds the masking threshold (silence): sqrt(0) and a NaN gradient."""
    code = (
        "class Loss(nn.Module):\n"
        "    def parts(self, ref, deg):\n"
        "        r = torch.abs(deg - ref)\n"
        "        m = 0.25 * torch.min(ref, deg)\n"
        f"        d = {floor}\n"
        "        return d, r\n\n"
        "    def frame(self, d, w):\n"
        "        s = torch.sum(torch.pow(d * w, 2.0), dim=-1, keepdim=True)\n"
        "        return torch.sqrt(s)\n\n"
        "    def forward(self, ref, deg, w):\n"
        "        d, r = self.parts(ref, deg)\n"
        "        return self.frame(d, w).mean()\n"
    )
    (tmp_path / "loss.py").write_text(HEAD + code)
    found = check_paths([tmp_path / "loss.py"], {"select": ["NUM201"], "min-confidence": "low"})
    assert [(d.row, d.confidence) for d in found if d.confidence != "low"] == [
        (13, e) for e in expected
    ]


BUCKET = """
def bucket(relative_position, num_buckets=32, max_distance=128):
    n = torch.max(-relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * 8
    ).{cast}
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    {use}
"""


@pytest.mark.parametrize(
    ("cast", "use", "expected"),
    [
        # an integer bucket whose entries at 0 a `torch.where` on the same test drops
        ("long()", "return torch.where(is_small, n, large)", []),
        # not dropped: the -inf becomes a garbage bucket
        ("long()", "return large", ["high"]),
        # kept as a float: the log's infinite slope may reach a gradient
        ("float()", "return torch.where(is_small, n, large)", ["high"]),
    ],
)
def test_a_log_rounded_to_a_bucket_and_dropped_by_where(
    cast: str, use: str, expected: list[str]
) -> None:
    """`log(n / k)` of positions floored at 0, made an integer and replaced by a `where` on
    `n < k`: no gradient flows through the rounding, and the -inf entries are dropped."""
    code = "import math\n" + BUCKET.format(cast=cast, use=use)
    assert _grades(code, "NUM103") == expected


SALIENCY = """
class Saliency:
    def __init__(self, model, magnitude=True):
        self.model = model
        self.magnitude = magnitude

    def get_grad(self, x):
        x.requires_grad = True
        self.model(x).sum().backward()
        {made}
        return g


class SmoothGrad(Saliency):
    def __call__(self, x):
        total = torch.zeros_like(x)
        for _ in range(8):
            g = self.get_grad((x + torch.randn_like(x)).detach())
            total += (g * g) if self.magnitude else g
        total = total ** 0.5
        return total / 8
"""


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        # a method of the base class returns a detached input gradient: a map for display
        ("g = x.grad.detach()", []),
        # the model's output: a gradient may flow through the root
        ("g = self.model(x)", [23]),
    ],
)
def test_a_method_returning_a_detached_value_carries_no_gradient(
    tmp_path: Path, made: str, expected: list[int]
) -> None:
    """SmoothGrad's saliency map: the root of summed squared input gradients, which a base
    class's method returns detached, is never differentiated: sqrt(0) = 0 is harmless."""
    (tmp_path / "saliency.py").write_text(HEAD + SALIENCY.format(made=made))
    found = check_paths([tmp_path / "saliency.py"], {"select": ["NUM201"], "min-confidence": "low"})
    assert [d.row for d in found] == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # a loss's mean weighted by a target map it is given: an image without text is 0/0
        (
            "class Loss(nn.Module):\n"
            "    def forward(self, gt_score, pred_score, loss_map):\n"
            "        return torch.sum(loss_map * gt_score) / torch.sum(gt_score)\n",
            ["medium"],
        ),
        # weights a loss reads from its batch, applied by a dot product
        (
            "class Loss(nn.Module):\n"
            "    def forward(self, batch, logits):\n"
            "        w = batch[2][0].float()\n"
            "        return torch.dot(F.softplus(logits), w) / torch.sum(w)\n",
            ["medium"],
        ),
        # a helper's mean over a mask summed over everything (its axis defaults to None)
        (
            "def masked_mean(values, mask, axis=None):\n"
            "    return (values * mask).sum(axis=axis) / mask.sum(axis=axis)\n",
            ["medium"],
        ),
        # a recall: the labels are compared with a thresholded prediction, so they are 0/1
        (
            "def recall(preds, targs, thresh=0.5):\n"
            "    pred_pos = preds > thresh\n"
            "    tpos = torch.mul((targs.byte() == pred_pos), targs.byte())\n"
            "    return tpos.sum() / targs.sum()\n",
            ["medium"],
        ),
        # the same weighting where nothing shows the labels are 0/1
        (
            "def weighted(preds, targs):\n"
            "    tpos = torch.mul(preds, targs)\n"
            "    return tpos.sum() / targs.sum()\n",
            ["low"],
        ),
        # per row: a padding mask keeps an entry in every row
        (
            "def masked_mean(values, mask, axis=1):\n"
            "    return (values * mask).sum(axis=axis) / mask.sum(axis=axis)\n",
            ["low"],
        ),
        # outside a loss, a weight that is not a mask: sample weights are rarely all 0
        (
            "def weighted(values, weight):\n    return (values * weight).sum() / weight.sum()\n",
            ["low"],
        ),
        # the denominator sums something the numerator does not weigh by
        (
            "def ratio(values, mask, other):\n    return (values * other).sum() / mask.sum()\n",
            ["low"],
        ),
    ],
)
def test_a_mean_over_everything_a_given_mask_or_weight_marks(
    code: str, expected: list[str]
) -> None:
    """`(x * w).sum() / w.sum()` over every entry, with `w` given: all 0 for a batch
    without what it marks (a loss's target map; a mask a helper is passed)."""
    assert _grades(code, "NUM202") == expected


NAN_REPAIRED = """
class Pool(nn.Module):
    def forward(self, s, mask):
        s = s.softmax(-1) * mask[..., None]
        return s, self.kl(s)

    @staticmethod
    def kl(s):
        p = s ** 2
        p = p / p.sum(dim=2, keepdim=True)
        {repair}
        return F.kl_div(s.clamp(1e-15).log(), p, reduction="batchmean")
"""


@pytest.mark.parametrize(
    ("repair", "expected"),
    [
        # the NaN of a padded row is replaced: the value is repaired, its gradient is not
        ("p[torch.isnan(p)] = 0.0", ["medium"]),
        ("p = torch.nan_to_num(p)", ["medium"]),
        # nothing replaced: the plain sum of a given value
        ("pass", ["low"]),
    ],
)
def test_a_nan_replaced_after_a_division_still_reaches_the_gradient(
    tmp_path: Path, repair: str, expected: list[str]
) -> None:
    """`p / p.sum(2)` with `p[torch.isnan(p)] = 0` next, in code training differentiates:
    the replacement passes back 0 at the repaired entries, and 0 * (1/0) is NaN."""
    (tmp_path / "pool.py").write_text(HEAD + NAN_REPAIRED.format(repair=repair))
    found = check_paths([tmp_path / "pool.py"], {"select": ["NUM202"], "min-confidence": "low"})
    assert [d.confidence for d in found if d.row == 13] == expected
    if repair != "pass":
        assert "not in the gradient" in found[0].message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("F.hardtanh(x, 0.0, 1.0)", ["high"]),
        ("F.threshold(x, 0.1, 0.0)", ["high"]),
        ("x * (x > 0)", ["high"]),
        ("(x >= 0).float() * x", ["high"]),
        # not a floor at 0: a hardtanh from -1, a threshold filling 20; an indicator's log
        # is a log-density of 0 or -inf by design
        ("F.hardtanh(x, -1.0, 1.0)", []),
        ("F.threshold(x, 0.1, 20.0)", []),
        ("(x > 0).float()", []),
    ],
)
def test_floors_at_zero_spelt_otherwise(value: str, expected: list[str]) -> None:
    """A ReLU or a clamp at 0 written as `F.hardtanh(x, 0, 1)`, `F.threshold(x, t, 0)` or by
    hand (`x * (x > 0)`) is 0 for a dead unit; its log is -inf in a module's forward."""
    code = (
        "class M(nn.Module):\n"
        "    def forward(self, x):\n"
        f"        return torch.log({value}).mean()\n"
    )
    assert _grades(code, "NUM103") == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return x / x.norm(dim=-1, keepdim=True)", ["medium"]),
        # a copy of the layer's input is the same features
        ("z = x.clone()\n        return z / z.norm(dim=-1, keepdim=True)", ["medium"]),
        ("z = x.contiguous()\n        return z / z.norm(dim=-1, keepdim=True)", ["medium"]),
        # computed here from two inputs: not the layer's own features
        (
            "z = torch.cat([x, x.flip(-1)], -1)\n        return z / z.norm(dim=-1, keepdim=True)",
            ["low"],
        ),
    ],
)
def test_a_copy_of_layer_features_divided_by_its_norm(body: str, expected: list[str]) -> None:
    """`x / x.norm()` of a layer's input features in a module's forward, also through a copy
    (`z = x.clone()`): a zero vector at a position (after a ReLU, zero padding) is 0/0."""
    code = f"class M(nn.Module):\n    def forward(self, x):\n        {body}\n"
    assert _grades(code, "NUM202") == expected


def test_bce_of_a_sigmoid_without_gradients(tmp_path) -> None:
    """NUM303's harm is a vanishing gradient, and an error under autocast: a validation loss
    in `torch.no_grad()` is left alone unless autocast is on there or in the project."""
    body = "def validate(model, x, y):\n    with torch.no_grad():\n{inner}"
    plain = "        return F.binary_cross_entropy(torch.sigmoid(model(x)), y)\n"
    assert _grades(body.format(inner=plain), "NUM303") == []
    autocast = (
        "        with torch.autocast('cuda'):\n"
        "            return F.binary_cross_entropy(torch.sigmoid(model(x)), y)\n"
    )
    assert _grades(body.format(inner=autocast), "NUM303") == ["high"]
    trained = (
        "def train(model, x, y):\n    return F.binary_cross_entropy(torch.sigmoid(model(x)), y)\n"
    )
    assert _grades(trained, "NUM303") == ["high"]
    # the project trains with a GradScaler in another file: BCE raises under its autocast
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text("import torch\nscaler = torch.amp.GradScaler('cuda')\n")
    val = tmp_path / "val.py"
    val.write_text(HEAD + body.format(inner=plain))
    found = check_paths([val], {"select": ["NUM303"], "min-confidence": "low"})
    assert [d.code for d in found] == ["NUM303"]


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("p != 250", []),  # a probability never equals 250: the mask keeps every entry
        ("p < 2", []),
        ("-1 < p", []),
        ("p != 0", ["high"]),  # a probability can be 0
        ("logits != 250", ["high"]),  # not a probability: an ignore value can fill it
    ],
)
def test_a_mask_a_probability_always_passes(test: str, expected: list[str]) -> None:
    """A comparison that a softmax output in [0, 1] always passes is a mask of ones: its
    count is never 0 (value ranges decide, not the constant)."""
    code = (
        "class Distill(nn.Module):\n"
        "    def forward(self, x, xs):\n"
        "        logits = self.teacher(xs)\n"
        "        p = F.softmax(logits, dim=1)\n"
        "        loss = F.kl_div(F.log_softmax(self.net(x), 1), p, reduction='none')\n"
        f"        mask = ({test}).float()\n"
        "        return (loss * mask).sum() / mask.sum()\n"
    )
    assert _grades(code, "NUM202") == expected


SINKHORN = """
class Assigner:
    def __init__(self):
        self.assign = self.sinkhorn

    def step(self, out):
        q = {made}
        return self.assign(q, 3)

    def sinkhorn(self, Q, iters):
        with torch.no_grad():
            Q /= torch.sum(Q)
            K, B = Q.shape
            r = torch.ones(K) / K
            c = torch.ones(B) / B
            for _ in range(iters):
                u = torch.sum(Q, dim=1)
                Q *= (r / u).unsqueeze(1)
                Q *= (c / torch.sum(Q, dim=0)).unsqueeze(0)
            return (Q / torch.sum(Q, dim=0, keepdim=True)).t()
"""


@pytest.mark.parametrize(
    "made",
    ["torch.exp(out / 0.05).t()", "torch.exp(out).t() + 1e-3", "F.softmax(out, -1) ** 4"],
)
def test_a_positive_matrix_every_caller_passes(made: str) -> None:
    """Sinkhorn-Knopp on `exp(scores / eps)` (also plus a positive number, or a power of a
    softmax): every caller (here through a method alias, `self.assign = self.sinkhorn`)
    passes a positive matrix, so its sums, and the sums of its products with positive
    vectors (`torch.ones(B) / B` with `K, B = Q.shape`), are never 0. A caller passing raw
    scores leaves every division reported."""
    assert _grades(SINKHORN.format(made=made), "NUM202") == []
    assert len(_grades(SINKHORN.format(made="out.t()"), "NUM202")) == 4


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        # only the indices of a top-k, taken per level in a loop: no gradient reaches d
        ("_, idx = d_level.topk(3, dim=0, largest=False)\n            picked.append(idx)", []),
        # the values are kept too: they carry d's gradient
        ("v, idx = d_level.topk(3, dim=0, largest=False)\n            picked.append(v)", ["low"]),
    ],
)
def test_distances_only_ranked_in_a_loop(use: str, expected: list[str]) -> None:
    """An assigner's centre distances feed only the indices of a top-k per pyramid level."""
    code = (
        "def assign(points, gt, counts):\n"
        "    d = (points[:, None, :] - gt[None, :, :]).pow(2).sum(-1).sqrt()\n"
        "    picked, start = [], 0\n"
        "    for n in counts:\n"
        "        d_level = d[start:start + n]\n"
        f"        {use}\n"
        "        start += n\n"
        "    return picked\n"
    )
    assert _grades(code.replace("\n            ", "\n        "), "NUM201") == expected


@pytest.mark.parametrize(("default", "expected"), [("2.0", []), ("-2.0", ["low"])])
def test_a_setting_with_a_positive_default(default: str, expected: list[str]) -> None:
    """`self.t` assigned from an `__init__` parameter with a constant default has that value:
    `exp(-self.t * d.abs())` cannot overflow when the default is >= 0."""
    code = (
        "class Gate(nn.Module):\n"
        f"    def __init__(self, t={default}):\n"
        "        super().__init__()\n"
        "        self.t = t\n"
        "\n"
        "    def forward(self, d):\n"
        "        return 1 / (1 + torch.exp(-self.t * d.abs()))\n"
    )
    assert _grades(code, "NUM107") == expected


CUSTOM_FUNCTION = """
from torch.autograd import Function


class Loss(Function):
    @staticmethod
    def forward(ctx, pred, target):
        ratio = edge(target)
        ctx.save_for_backward(pred)
        return (pred - target).abs().sum() * ratio.mean()

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def edge(p):
    return torch.sqrt(torch.pow(p[:, 0] - p[:, 2], 2) + torch.pow(p[:, 1] - p[:, 3], 2))
{more}"""


def test_a_helper_only_a_custom_function_calls() -> None:
    """What a custom autograd.Function's forward computes is not differentiated by autograd:
    a helper only it calls has no gradient to be NaN; one a module also calls does."""
    assert _grades(CUSTOM_FUNCTION.format(more=""), "NUM201") == []
    module = "\n\nclass Head(nn.Module):\n    def forward(self, p):\n        return edge(p)\n"
    assert _grades(CUSTOM_FUNCTION.format(more=module), "NUM201") == ["medium"]


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        ("torch.arange(0.0, length, 1.0)", []),  # t >= 0: exp(-t / tau) <= 1, its sum >= 1
        ("torch.arange(length)", []),
        ("torch.linspace(0, 1, length)", []),
        ("torch.arange(-5.0, length, 1.0)", ["low"]),  # a negative start: exp can overflow
        ("torch.randn(length)", ["low"]),
    ],
)
def test_an_exponential_kernel_of_a_range(t: str, expected: list[str]) -> None:
    """`exp(-t / tau)` over a range from 0, with `tau` a setting given as a positive number,
    normalised by its sum: no exponent is positive, so nothing overflows."""
    code = (
        "class ExpFilter(nn.Module):\n"
        "    def __init__(self, length, tau=200):\n"
        "        super().__init__()\n"
        f"        t = {t}\n"
        "        kernel = torch.exp(-t / tau)\n"
        "        self.register_buffer('kernel', kernel / kernel.sum())\n"
    )
    assert _grades(code, "NUM106") == expected


def test_an_api_finding_in_a_package_modules_self_test(tmp_path: Path) -> None:
    """NUM5xx in the `__main__` block of a module its package imports (a self-test run by
    hand) is low; in a script nothing imports, it keeps its grade."""
    main = (
        "import torch\n\n\n"
        "def block(x):\n    return x\n\n\n"
        'if __name__ == "__main__":\n'
        "    scaler = torch.cuda.amp.GradScaler()\n"
    )
    (tmp_path / "pyproject.toml").write_text("")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "unet.py").write_text(main)
    (pkg / "train.py").write_text(main)
    (pkg / "util.py").write_text("from . import unet\n")
    found = check_paths([pkg], {"select": ["NUM505"], "min-confidence": "low"})
    grades = {Path(d.filename).name: d.confidence for d in found}
    assert grades == {"unet.py": "low", "train.py": "high"}


@pytest.mark.parametrize(
    ("test", "den", "expected"),
    [
        # the total passes the test while one entry is 0
        ("rms.sum() < EPS", "rms", ["medium"]),
        ("rms.mean() == 0", "rms", ["medium"]),
        ("EPS > rms.sum()", "rms", ["medium"]),
        # the division is by the total the test covers
        ("rms.sum() < EPS", "rms.sum()", []),
        # a sign test says nothing of a 0
        ("rms.sum() < 0", "rms", []),
        # each entry is tested and repaired
        ("(rms < EPS).any()", "rms", []),
    ],
)
def test_a_value_tested_for_zero_only_in_total(test: str, den: str, expected: list[str]) -> None:
    code = (
        "EPS = 1e-8\n"
        "def scale(x, rms):\n"
        f"    if {test}:\n"
        "        rms = torch.ones_like(rms) * EPS\n"
        f"    return x / {den}\n"
    )
    assert _grades(code, "NUM202") == expected


def test_a_number_over_a_tensor_is_a_tensor_division() -> None:
    """`1 / rms` divides a tensor: the literal numerator says nothing of where it runs."""
    code = (
        "EPS = 1e-8\n"
        "def scale(x, rms):\n"
        "    if rms.sum() < EPS:\n"
        "        rms = torch.ones_like(rms) * EPS\n"
        "    return x * (1 / rms)\n"
    )
    assert _grades(code, "NUM202") == ["medium"]
    numpy = "import numpy as np\ndef f(n):\n    return 1 / np.bincount(n)\n"
    assert _grades(numpy, "NUM202") == []


LOSS_WRAPPERS = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.loss_func = F.binary_cross_entropy_with_logits

    def forward(self, x):
        return torch.sigmoid(self.fc(x))

    def loss(self, logits, labels):
        {body}

    def training_step(self, batch, i):
        x, y = batch
        return self.loss(self(x), y)


class Focal(nn.Module):
    def forward(self, inputs, targets):
        bce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
        return bce.mean()


def train(model, x, y):
    criterion = Focal()
    p = torch.sigmoid(model(x))
    return criterion(p, y)
"""


@pytest.mark.parametrize(
    ("body", "lines"),
    [
        # a method and a loss class of the file that hand their input to the logits loss;
        # the class's own loss call too: its instance is called with the sigmoid (21)
        ("return self.loss_func(input=logits, target=labels)", [16, 21, 28]),
        # a loss the method calls by name is also reported where it is called: every caller
        # of the method passes it the sigmoid
        ("return F.binary_cross_entropy_with_logits(logits, labels)", [12, 16, 21, 28]),
        # the method turns what it is given back into logits first
        ("logits = torch.logit(logits, eps=1e-6)\n        return self.loss_func(logits, labels)",
         [22, 29]),
    ],
)  # fmt: skip
def test_a_loss_wrapper_of_the_file_is_followed(body: str, lines: list[int]) -> None:
    code = LOSS_WRAPPERS.format(body=body)
    found = check_source(HEAD + code, "<string>", {"select": ["NUM305"]})
    offset = len(HEAD.splitlines())
    assert [d.row - offset for d in found] == lines
    assert all(d.related for d in found)


def test_a_transpose_of_positive_values_is_positive() -> None:
    """`p.T` holds the entries of `p`: a Sinkhorn normalisation of a softmax is not 0/0."""
    code = (
        "def sinkhorn(q, iterations=3):\n"
        "    q = q.T\n"
        "    q = q / torch.sum(q)\n"
        "    for _ in range(iterations):\n"
        "        q /= torch.sum(q, dim=1, keepdim=True)\n"
        "    return q\n"
        "def loss(x, t):\n"
        "    return sinkhorn(F.softmax(x / t, dim=1)).sum()\n"
    )
    assert _grades(code, "NUM202") == []
    unknown = code.replace("F.softmax(x / t, dim=1)", "x")
    assert _grades(unknown, "NUM202") == ["low", "low"]


SPECTRAL = """
class Spectral(nn.Module):
    def forward(self, x_mag, y_mag):
        return torch.norm(y_mag - x_mag, p="fro") / torch.norm(y_mag, p="fro")


class STFTLoss(nn.Module):
    def __init__(self, eps={eps}):
        super().__init__()
        self.eps = eps
        self.spectral = Spectral()

    def forward(self, x, y):
        xs = torch.stft(x, 512, return_complex=True)
        ys = torch.stft(y, 512, return_complex=True)
        x_mag = torch.sqrt(torch.clamp(xs.real ** 2 + xs.imag ** 2, min=self.eps))
        y_mag = torch.sqrt(torch.clamp(ys.real ** 2 + ys.imag ** 2, min=self.eps))
        return self.spectral(x_mag, y_mag)
"""


@pytest.mark.parametrize(("eps", "expected"), [("1e-8", []), ("0.0", ["low"])])
def test_a_module_called_through_an_attribute_gets_what_its_callers_pass(
    eps: str, expected: list[str]
) -> None:
    """The callers of a loss module's `forward` are the calls of its instances
    (`self.spectral(x_mag, y_mag)` after `self.spectral = Spectral()`); a clamp at a
    setting the class gives a positive default keeps the magnitudes above 0."""
    assert _grades(SPECTRAL.format(eps=eps), "NUM202") == expected


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        ("", ["low"]),
        ("    attn[attn != attn] = 0.0\n", []),  # NaN is the one value unequal to itself
        ("    out = attn @ v\n    out = out.nan_to_num()\n", []),  # a derived value repaired
    ],
)
def test_a_nan_repaired_after_the_softmax(after: str, expected: list[str]) -> None:
    code = (
        "def attend(scores, v, mask):\n"
        "    attn = torch.softmax(scores.masked_fill(~mask, float('-inf')), -1)\n"
        f"{after}"
        "    return attn\n"
    )
    assert _grades(code, "NUM112") == expected


def test_a_helpers_length_mask_is_a_padding_mask(tmp_path: Path) -> None:
    """A project helper returning `arange(n) < lengths` keeps each row's first `length`
    entries: the softmax it masks is fully masked only for a length of 0 (low), where a
    mask the code computes by a test on values can hide a whole row."""
    helper = (
        "import torch\n"
        "def length_to_mask(length, max_len):\n"
        "    mask = torch.arange(max_len).expand(len(length), max_len) < length.unsqueeze(1)\n"
        "    mask = torch.as_tensor(mask, dtype=length.dtype)\n"
        "    return mask\n"
    )
    user = (
        "import torch\n"
        "from pkg.masks import length_to_mask\n"
        "def pool(x, lengths):\n"
        "    mask = length_to_mask(lengths, x.shape[-1])\n"
        "    attn = x.masked_fill(mask == 0, float('-inf'))\n"
        "    return torch.softmax(attn, dim=-1)\n"
    )
    pkg = _package(tmp_path, masks=helper, pool=user)
    found = check_paths([pkg / "pool.py"], {"select": ["NUM112"], "min-confidence": "low"})
    assert [d.confidence for d in found] == ["low"]
    here = (
        "def pool(x, n):\n"
        "    mask = torch.arange(x.shape[2])[None, :] < n[:, None]\n"
        "    x[~mask.unsqueeze(1)] = float('-inf')\n"
        "    return torch.softmax(x, dim=2)\n"
    )
    assert _grades(here, "NUM112") == ["low"]
    radius = here.replace("torch.arange(x.shape[2])[None, :] < n[:, None]", "dist < n[:, None]")
    assert _grades(radius.replace("def pool(x, n)", "def pool(x, n, dist)"), "NUM112") == ["medium"]


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        # pairs of entries: the row of every padded entry keeps nothing
        ("m[:, None, :] * m[:, :, None]", ["high"]),
        ("m.unsqueeze(1) & m.unsqueeze(2)", ["high"]),
        # the given mask itself: a sequence keeps its tokens
        ("m[:, None, :]", ["low"]),
    ],
)
def test_a_mask_of_pairs_empties_padded_rows(mask: str, expected: list[str]) -> None:
    code = (
        "def attend(dots, m):\n"
        f"    pairs = {mask}\n"
        "    dots.masked_fill_(~pairs, float('-inf'))\n"
        "    return dots.softmax(dim=-1)\n"
    )
    assert _grades(code, "NUM112") == expected


#: A model of its own file whose `forward` returns `(torch.sigmoid(h), h)`.
SIGMOID_AND_LOGITS_NET = (
    "import torch\n"
    "import torch.nn as nn\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(8, 1)\n"
    "    def forward(self, x):\n"
    "        h = self.fc(x)\n"
    "        return torch.sigmoid(h), h\n"
)


def test_an_element_of_a_models_tuple_reaches_a_wrapped_loss(tmp_path: Path) -> None:
    """`pred, m = model(x)` for a model of another file whose `forward` returns
    `(torch.sigmoid(x), m)`, squeezed after (a later assignment of the same name), then given
    to a loss class of the file moved to the GPU (`FocalLoss().cuda()`) whose `forward`
    calls the logits loss on its input."""
    train = (
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "from pkg.model import Net\n"
        "class FocalLoss(nn.Module):\n"
        "    def forward(self, inputs, targets):\n"
        "        return F.binary_cross_entropy_with_logits(inputs, targets)\n"
        "def main(loader):\n"
        "    model = Net().cuda()\n"
        "    criterion = FocalLoss().cuda()\n"
        "    for x, y in loader:\n"
        "        pred, h = model(x)\n"
        "        pred = torch.squeeze(pred)\n"
        "        {use}\n"
    )
    bad = train.replace("{use}", "loss = criterion(pred, y)")
    good = train.replace("{use}", "loss = criterion(h.squeeze(), y)")
    pkg = _package(tmp_path, model=SIGMOID_AND_LOGITS_NET, train=bad)
    found = check_paths([pkg / "train.py"], {"select": ["NUM305"]})
    # at the call, and at the loss in the class: the instance is called with the sigmoid
    assert [(d.row, d.confidence) for d in found] == [(7, "high"), (14, "high")]
    assert len(found[1].related) == 2  # the sigmoid in the model, the loss in the class
    (pkg / "train.py").write_text(good)
    assert check_paths([pkg / "train.py"], {"select": ["NUM305"]}) == []


@pytest.mark.parametrize(
    ("masked", "expected"),
    [
        ("torch.where(near, s, torch.full_like(s, float('-inf')))", ["medium"]),
        ("torch.where(near, s, torch.tensor(-math.inf))", ["medium"]),
        ("torch.where(near, s, s.new_full(s.shape, float('-inf')))", ["medium"]),
        ("torch.where(near, s, torch.full_like(s, -1e4))", []),  # a finite fill
        ("s.masked_fill(~near, float('-inf')) - s.amax(-1, keepdim=True)", ["medium"]),
        ("s + torch.zeros_like(s).masked_fill(~near, float('-inf'))", ["medium"]),  # a bias
    ],
)
def test_every_spelling_of_a_minus_infinity_fill(masked: str, expected: list[str]) -> None:
    code = (
        "import math\n"
        "def attend(s, dist, radius):\n"
        "    near = dist < radius\n"
        f"    return torch.softmax({masked}, dim=-1)\n"
    )
    assert _grades(code, "NUM112") == expected


def test_a_model_passed_to_a_training_function_and_put_in_train_mode(tmp_path: Path) -> None:
    """`classifier = classifier.train()` of a parameter is the model every caller passes
    (`model.Classifier().cuda()` after `import model`): its `forward` returns a softmax, so
    the cross-entropy of its output applies log_softmax twice."""
    model = (
        "import torch.nn as nn\nimport torch.nn.functional as F\n"
        "class Classifier(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 3)\n"
        "    def forward(self, x):\n"
        "        return F.softmax(self.fc(x), dim=1)\n"
    )
    train = (
        "import torch.nn as nn\n"
        "def fit(classifier, loader):\n"
        "    criterion = nn.CrossEntropyLoss()\n"
        "    for epoch in range(3):\n"
        "        classifier = classifier.train()\n"
        "        for x, y in loader:\n"
        "            loss = criterion(classifier(x), y)\n"
        "            loss.backward()\n"
    )
    main = "import pkg.model as model\nimport pkg.train as train\n{body}\n"
    passes = "def main(loader):\n    train.fit(model.Classifier().cuda(), loader)\n"
    pkg = _package(tmp_path, model=model, train=train, main=main.format(body=passes))
    select = {"select": ["NUM301"], "min-confidence": "low"}
    assert [d.confidence for d in check_paths([pkg / "train.py"], select)] == ["high"]
    # a caller that passes a model of another kind: nothing is known of the output
    other = passes.replace("model.Classifier()", "nn.Linear(4, 3)")
    (pkg / "main.py").write_text("import torch.nn as nn\n" + main.format(body=other))
    assert check_paths([pkg / "train.py"], {**select, "no-cache": True}) == []


ASPECT = """
def aspect(boxes):
    d = boxes[:, 2:] - boxes[:, :2]
    return torch.sqrt((d ** 2).sum(-1))

class Assigner(nn.Module):
    def forward(self, boxes, scores):
        ratio = aspect(boxes)
        {use}
"""


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        # what the caller computes from the result ends in a comparison: no gradient
        (
            "r = ratio.mean(0)\n        thr = scores.mean() * torch.exp(-r)\n        return scores >= thr",
            [],
        ),
        ("return (ratio > 2).nonzero()", []),
        # the result reaches what the caller returns: differentiated
        ("r = ratio.mean(0)\n        return scores * r", ["low"]),
    ],
)
def test_a_result_only_compared_by_its_caller_carries_no_gradient(
    use: str, expected: list[str]
) -> None:
    """A helper's root whose every caller only compares what it computes from the result
    (through variables) is not differentiated: its NaN gradient at 0 cannot arise."""
    assert _grades(ASPECT.format(use=use), "NUM201") == expected


@pytest.mark.parametrize(
    ("division", "expected"),
    [
        # entries of one count table, the numerator among them
        ("c[1, 1] / (c[0, 1] + c[1, 0] + c[1, 1])", ["medium"]),
        ("2 * c[1, 1] / (c[0, 1] + c[1, 0] + c[1, 1])", ["medium"]),
        # counts of masks the code computes: each term is itself 0 in ordinary use
        ("tp / (tp + fp)", ["high"]),
        # an eps among the terms, or a constant table
        ("c[1, 1] / (c[0, 1] + c[1, 1] + 1e-8)", []),
        ("w[0] / (w[0] + w[1])", []),
    ],
)
def test_a_part_over_a_sum_that_holds_it(division: str, expected: list[str]) -> None:
    """A precision, recall or IoU of counts, `tp / (tp + fp)`: 0/0 where every term is 0
    (no positive predicted and none present)."""
    code = (
        "def score(pred, target):\n"
        "    c = torch.bincount(target * 2 + pred, minlength=4).reshape(2, 2).float()\n"
        "    w = torch.tensor([0.3, 0.7])\n"
        "    tp = ((pred == 1) & (target == 1)).sum()\n"
        "    fp = ((pred == 1) & (target == 0)).sum()\n"
        f"    return {division}\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("repair", "expected"),
    [
        # the code replaces the inf of x / 0: it expects the 0, and 0 / 0 stays NaN
        ("r[torch.isinf(r)] = 0", ["medium"]),
        ("r[r.isinf()] = 0", ["medium"]),
        # another name's infinities say nothing of this one: no reason to expect a 0
        ("rr = r.clone()\n    rr[rr.isinf()] = 0", []),
        # a repair of every non-finite entry
        ("r[~torch.isfinite(r)] = 0", []),
        ("r = torch.nan_to_num(r)", []),
    ],
)
def test_an_inf_repaired_after_a_division(repair: str, expected: list[str]) -> None:
    code = (
        "def dcg(s):\n"
        "    return (s / torch.log2(torch.arange(s.shape[1]) + 2.0)).sum(-1)\n"
        "def ndcg(y_true, y_pred):\n"
        "    ideal = dcg(torch.sort(y_true, dim=-1, descending=True)[0])\n"
        "    got = dcg(y_true.gather(1, torch.argsort(y_pred, dim=-1, descending=True)))\n"
        "    r = got / ideal\n"
        f"    {repair}\n"
        "    return r.mean()\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # a softmax over every action, masked, then normalised again
        (
            "p = F.softmax(logits, dim=-1) * mask\n"
            "        return p / torch.sum(p, dim=-1).unsqueeze(-1)",
            ["medium"],
        ),
        ("p = mask * logits.softmax(-1)\n        return p / p.sum(-1, keepdim=True)", ["medium"]),
        # the logits masked before the softmax: nothing to normalise again
        (
            "z = logits.masked_fill(mask == 0, torch.finfo(logits.dtype).min)\n"
            "        return z.softmax(-1)",
            [],
        ),
        # a softmax normalised again without a mask: positive
        ("p = F.softmax(logits, dim=-1)\n        return p / p.sum(-1, keepdim=True)", []),
    ],
)
def test_a_masked_softmax_normalised_again(body: str, expected: list[str]) -> None:
    """Where the masked actions hold the large logits the kept ones underflow to 0, and a
    mask that keeps nothing leaves 0 too: the renormalisation is 0/0."""
    code = f"class Policy(nn.Module):\n    def forward(self, logits, mask):\n        {body}\n"
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("reduce", "expected"),
    [
        ('reduce="mean"', ["medium"]),
        ("", ["medium"]),  # the helper's default: a sum
        ('reduce="amax"', []),  # a maximum per segment is not a softmax's denominator
    ],
)
def test_a_project_scatter_helper_is_a_segment_sum(
    tmp_path: Path, reduce: str, expected: list[str]
) -> None:
    """A helper of another file that returns `torch.scatter_reduce(out, dim, index, src,
    reduce)`, called with a sum or mean: `exp / z[dst]` is a segment softmax written by hand
    (no maximum subtracted), which overflows to inf/inf."""
    helper = (
        "import torch\n"
        "def scatter(src, index, dim, dim_size=None, reduce='sum'):\n"
        "    out = torch.zeros(dim_size, *src.shape[1:], dtype=src.dtype)\n"
        "    return torch.scatter_reduce(out, dim, index, src, reduce, include_self=False)\n"
    )
    args = ", ".join(a for a in ("exp, dst, dim=0, dim_size=n", reduce) if a)
    layer = (
        "import torch\nimport torch.nn as nn\n"
        "from pkg.ops import scatter\n"
        "class Attention(nn.Module):\n"
        "    def forward(self, q, k, dst, n):\n"
        "        exp = (q[dst] * k).sum(-1).exp()\n"
        f"        z = scatter({args})\n"
        "        return exp / z[dst]\n"
    )
    pkg = _package(tmp_path, ops=helper, layer=layer)
    found = check_paths([pkg / "layer.py"], {"select": ["NUM106"], "min-confidence": "low"})
    assert [d.confidence for d in found] == expected


@pytest.mark.parametrize(
    ("caller", "expected"),
    [
        # every call of the instance runs without gradients: the root's NaN gradient is moot
        ("with torch.no_grad():\n        return norm(x)", []),
        # an instance called where training differentiates it
        ("return norm(x).mean()", ["high"]),
    ],
)
def test_the_callers_of_a_plain_class_are_the_calls_of_its_instances(
    caller: str, expected: list[str]
) -> None:
    """`__call__` of a class that is not a module is reached by calling an instance (`norm =
    Norm()`, then `norm(x)`): what those calls pass and where they run decide the finding."""
    code = (
        "class Norm:\n"
        "    def __call__(self, x):\n"
        "        d = x[:, None] - x[None]\n"
        "        return torch.sqrt((d ** 2).sum(-1))\n"
        "def loss(x):\n"
        "    norm = Norm()\n"
        f"    {caller}\n"
    )
    assert _grades(code, "NUM201") == expected


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        # a moment updated in place from the gradient, chained
        ("m.mul_(0.9).add_(g, alpha=0.1)", ["medium"]),
        ("m.lerp_(g, 0.1)", ["medium"]),
        # a moment of something else: nothing says it is 0
        ("m.mul_(0.9).add_(p.data, alpha=0.1)", ["low"]),
    ],
)
def test_a_trust_ratio_over_the_norm_of_adams_step(update: str, expected: list[str]) -> None:
    """LAMB's `w_norm / step.norm()`: the step `m / (v.sqrt() + eps)` is all zeros for a
    parameter whose gradient has been 0 (frozen, unused), and the ratio is inf."""
    code = (
        "class Lamb(torch.optim.Optimizer):\n"
        "    @torch.no_grad()\n"
        "    def step(self):\n"
        "        for group in self.param_groups:\n"
        "            for p in group['params']:\n"
        "                g = p.grad.data\n"
        "                state = self.state[p]\n"
        "                m, v = state['exp_avg'], state['exp_avg_sq']\n"
        f"                {update}\n"
        "                v.mul_(0.999).addcmul_(g, g, value=0.001)\n"
        "                step = m / v.sqrt().add(1e-6)\n"
        "                w = p.data.pow(2).sum().sqrt()\n"
        "                ratio = w / step.pow(2).sum().sqrt()\n"
        "                p.data.add_(step, alpha=-group['lr'] * ratio)\n"
    )
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        # a zero-preserving image of the layer's input: 0 wherever the input is (padding)
        (
            "p = x.masked_fill(torch.eye(c, dtype=torch.bool), 0)\n"
            "        p = (p.sum(dim=-1) / (c - 1)).transpose(-1, -2)",
            ["medium"],
        ),
        ("p = x.mean(dim=1) * 0.5", ["medium"]),
        # what a layer computes from it: nothing says it is 0
        ("p = self.proj(x)", []),
    ],
)
def test_a_zero_preserving_image_of_a_layers_input(made: str, expected: list[str]) -> None:
    """The magnitude of features averaged from the layer's input is 0 where the input is (a
    padded frame): the root's gradient there is NaN."""
    code = (
        "class Reference(nn.Module):\n"
        "    def forward(self, x):\n"
        "        b, _, c = x.size()[:3]\n"
        f"        {made}\n"
        "        return (p.real ** 2 + p.imag ** 2) ** 0.5\n"
    )
    assert _grades(code, "NUM201") == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # the target of a loss module's forward: one-hot labels and sparse priors hold zeros
        (
            "class PriorLoss(nn.Module):\n"
            "    def forward(self, probs, target):\n"
            "        return -(probs * torch.log(target)).sum(1).mean()\n",
            ["medium"],
        ),
        # a helper's second parameter, or one with a default: not a loss's target
        (
            "def compress(x, c=1.0):\n    return torch.log(x.clamp(min=1e-5) * c)\n",
            [],
        ),
        (
            "class Compress(nn.Module):\n"
            "    def forward(self, x, scale=1.0):\n"
            "        return torch.log(scale * x.clamp(min=1e-5))\n",
            [],
        ),
    ],
)
def test_the_log_of_a_loss_modules_target(code: str, expected: list[str]) -> None:
    assert _grades(code, "NUM103") == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # an elementwise product summed by einsum: r * log(r) where r is 0
        ("torch.einsum('bcxy,bcxy->bxy', r, torch.log(r) - torch.log(q))", ["medium"]),
        ("torch.einsum('bc,bc->b', r, r.log())", ["medium"]),
        # a matrix product is not an entropy term; xlogy defines 0 * log 0
        ("torch.einsum('bc,cd->bd', r, torch.log(q))", []),
        ("torch.xlogy(r, r).sum(1) - (r * torch.log(q)).sum(1)", []),
    ],
)
def test_an_entropy_term_summed_by_einsum(expr: str, expected: list[str]) -> None:
    code = (
        "class RQ(nn.Module):\n"
        "    def forward(self, q, prior):\n"
        "        r = F.normalize(q * prior, p=1, dim=1)\n"
        f"        return {expr}.mean()\n"
    )
    assert _grades(code, "NUM109") == expected


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        # the exponent is 0.5 at the parameter's default: a root by default
        ("def magnitude(z, power: float = 1.0):", ["low"]),
        # at the default the power is 1: no root
        ("def magnitude(z, power: float = 2.0):", []),
        # no default: the exponent is unknown
        ("def magnitude(z, power):", []),
    ],
)
def test_a_power_that_is_a_root_at_its_defaults(signature: str, expected: list[str]) -> None:
    code = f"{signature}\n    return z.pow(2.0).sum(-1).pow(0.5 * power)\n"
    assert _grades(code, "NUM201") == expected


GRID = """
def radius(x):
    u, v = [{element} for n in {over}]
    r = (u ** 2 + v ** 2).sqrt()
    return r

def loss(model, x):
    out = (radius(x) * model(x)).sum()
    out.backward()
    return out
"""


@pytest.mark.parametrize(
    ("element", "over", "expected"),
    [
        # a frequency grid from `arange` over the input's sizes: data, r = 0 at DC is harmless
        ("(torch.arange(n).to(x) - n // 2) / n", "x.shape[-2:]", []),
        ("torch.linspace(-1, 1, n)", "x.shape[-2:]", []),
        # an element of the input itself, or of a parameter, carries the gradient
        ("x[..., n]", "range(2)", ["low"]),
        ("torch.arange(n) * model.scale", "x.shape[-2:]", ["low"]),
        # the iterable carries the gradient: so do its elements
        ("n", "x.unbind(0)[:2]", ["low"]),
    ],
)
def test_names_unpacked_from_a_comprehension(element: str, over: str, expected: list[str]) -> None:
    """`u, v = [f(n) for n in x.shape[-2:]]`: each name is an element of the comprehension,
    built without gradient when its iterables and element are."""
    assert _grades(GRID.format(element=element, over=over), "NUM201") == expected


@pytest.mark.parametrize(
    ("scores", "mask", "expected"),
    [
        # the mask takes the dtype of float16 scores: the product is float16, 1e30 is inf
        ("(q @ k.T).half()", "m.to(s.dtype)", ["high"]),
        ("(q @ k.T).half()", "m.to(dtype=s.dtype)", ["high"]),
        ("(q @ k.T).half()", "m.type_as(s)", ["high"]),
        ("(q @ k.T).half()", "(1 - m.type_as(s))[:, None]", ["high"]),
        # float32 scores, or a mask not converted here (bool or float32): no overflow
        ("(q @ k.T).float()", "m.to(s.dtype)", []),
        ("(q @ k.T).half()", "m", []),
        ("(q @ k.T).half()", "m.to(s.device)", []),
    ],
)
def test_masking_by_arithmetic_in_another_values_dtype(
    scores: str, mask: str, expected: list[str]
) -> None:
    """`s - 1e30 * mask`: a mask converted to the dtype of another value has its dtype."""
    code = (
        f"def attend(q, k, m):\n    s = {scores}\n    mask = {mask}\n    return s - 1e30 * mask\n"
    )
    assert _grades(code, "NUM402") == expected


STATS = """
def stat_scores(pred, target, c):
    tp = {tp}
    fp = ((pred == c) * (target != c)).to(torch.long).sum()
    fn = ((pred != c) & (target == c)).sum()
    return tp, fp, fn

def per_class(pred, target, k):
    tps = {table}
    fps = torch.zeros(k)
    fns = torch.zeros(k)
    for c in range(k):
        tps[c], fps[c], fns[c] = stat_scores(pred, target, c)
    return tps, fps, fns

def iou(pred, target, k):
    \"\"\"Intersection over union, per class.\"\"\"
    tps, fps, fns = per_class(pred, target, k)
    return tps / (fps + fns + tps)

def iou_of(pred, target, c):
    tp, fp, fn = stat_scores(pred, target, c)
    return tp / (tp + fp + fn)
"""


@pytest.mark.parametrize(
    ("tp", "table", "expected"),
    [
        # counts of tests, made in another function: a class absent from both is 0/0
        ("((pred == c) * (target == c)).to(torch.long).sum()", "torch.zeros(k)", ["medium"] * 2),
        ("((pred == c) & (target == c)).float().sum()", "pred.new_zeros(k)", ["medium"] * 2),
        # soft statistics (products of probabilities) are not counts
        ("(pred * target).sum()", "torch.zeros(k)", []),
        # a table that starts at one is never 0
        ("((pred == c) * (target == c)).sum()", "torch.ones(k)", ["medium"]),
    ],
)
def test_counts_made_in_another_function(tp: str, table: str, expected: list[str]) -> None:
    """`tp / (tp + fp + fn)` of counts a helper returns, also through a table of zeros whose
    entries it fills (`tps[c], fps[c], fns[c] = stat_scores(...)`)."""
    found = _grades(STATS.format(tp=tp, table=table), "NUM202")
    assert found == expected


@pytest.mark.parametrize(
    ("scale", "expected"),
    [
        # a 0-dim tensor divides like a number: the scores keep their float16 dtype
        ("torch.tensor(8.0)", ["high"]),
        ("torch.sqrt(torch.tensor(k.shape[-1]).to(torch.float32))", ["high"]),
        # a dimensioned float32 tensor promotes the scores to float32: -1e9 fits
        ("torch.full((1, 1), 8.0)", []),
    ],
)
def test_a_zero_dim_tensor_keeps_the_dtype(scale: str, expected: list[str]) -> None:
    """`attn / torch.sqrt(torch.tensor(d).to(torch.float32))`: type promotion treats a
    tensor of one number like a Python number."""
    code = (
        "def attend(q, k, mask):\n"
        "    s = (q @ k.transpose(-2, -1)).half()\n"
        f"    s = s / {scale}\n"
        "    return s.masked_fill(mask, -1e9)\n"
    )
    assert _grades(code, "NUM402") == expected


SUPER_CALLS = """
class Attention(nn.Module):
    def forward(self, x, mask=None):
        if mask is not None:
            x = x / mask.sum(-1, keepdim=True)
        return x

class Scaled(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2.0

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
    def forward(self, x, mask):
        return self.attn(x, mask)
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # `super().forward(x)` of another class is nn.Linear's forward, not Attention's:
        # the mask Block passes is not an option no caller passes
        (SUPER_CALLS, ["low"]),
        # a subclass's `super().forward(x)` is Attention's, and leaves the mask out
        (
            SUPER_CALLS.replace("class Scaled(nn.Linear)", "class Scaled(Attention)").replace(
                "        return self.attn(x, mask)", "        return self.attn.forward(x)"
            ),
            [],
        ),
    ],
)
def test_super_calls_are_calls_of_a_base_class(source: str, expected: list[str]) -> None:
    """Liveness: the calls of a method that `super()` makes are its base class's."""
    assert _grades(source, "NUM202") == expected


NET = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        return self.proj(x)

    def loss(self, est, y):
        mag = torch.sqrt(est[:, 0] ** 2 + est[:, 1] ** 2)
        return ((mag - y) ** 2).mean()


def smoke():
    net = Net()
    print(net.loss(torch.zeros(2, 2), torch.zeros(2)))
"""
TRAIN = """
import torch
from model.net import Net as Model


def train(model, loader):
    for x, y in loader:
        {step}


def main(loader):
    model = Model()
    train(model, loader)
"""


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        # a script of the repository trains with the method on the model it is given: the
        # magnitude of the prediction's complex entries, 0 at each silent one
        ("model.loss(model(x), y).backward()", ["medium"]),
        # ... or only evaluates it: every call runs without gradients
        ("with torch.no_grad():\n            print(model.loss(model(x), y))", []),
    ],
)
def test_method_called_by_a_script_on_a_model_it_is_given(
    tmp_path: Path, step: str, expected: list[str]
) -> None:
    """A method's callers in the project's other files count when deciding that it runs
    without gradients; a script in `steps/` imports `model.net` from the repository root."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "steps").mkdir()
    (tmp_path / "model" / "net.py").write_text(NET)
    (tmp_path / "steps" / "train.py").write_text(TRAIN.format(step=step))
    found = check_paths(
        [tmp_path / "model" / "net.py"], {"select": ["NUM201"], "min-confidence": "low"}
    )
    assert [d.confidence for d in found] == expected


POOL = (
    "import torch.nn as nn\n"
    "class Pool(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return self.pooled(x)\n"
    "    def pooled(self, x, mask=None):\n"
    "        if mask is not None:\n"
    "            return (x * mask).sum(1) / mask.sum(1)\n"
    "        return x.mean(1)\n"
)


@pytest.mark.parametrize(("passes", "expected"), [(True, [7]), (False, [])])
def test_an_option_a_caller_in_another_file_passes(
    tmp_path: Path, passes: bool, expected: list[int]
) -> None:
    """A method's option that its own file never passes is still live when a caller in
    another file passes it (`Pool().pooled(x, m)` in a training script); left out
    everywhere, the branch reading it is dead."""
    arg = "x, m" if passes else "x"
    train = f"from pkg.model import Pool\ndef step(x, m):\n    return Pool().pooled({arg})\n"
    pkg = _package(tmp_path, model=POOL, train=train)
    found = check_paths([pkg / "model.py"], {"select": ["NUM202"], "min-confidence": "low"})
    assert [d.row for d in found] == expected


SKIPPED_STEP = """
import torch
def train_step(model, x, y, optimizer, scaler):
    scaler.scale(model(x, y)).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if not torch.isfinite(norm):
        optimizer.zero_grad()
        {skip}
    scaler.step(optimizer)
    scaler.update()
"""


@pytest.mark.parametrize(
    ("skip", "expected"),
    [
        # a train step called once per batch: returning skips this batch's update
        ("return None", [5]),
        # updating before leaving, or raising (training stops): every path updates
        ("scaler.update()\n        return None", []),
        ("raise RuntimeError('non-finite gradients')", []),
        # no jump: the step and update still run (GradScaler skips a non-finite step)
        ("pass", []),
    ],
)
def test_a_path_that_skips_the_scalers_update(skip: str, expected: list[int]) -> None:
    """`scaler.unscale_(opt)` then a path out of the step without `scaler.update()`: the
    next `unscale_` raises; NUM503 names the unscale_."""
    found = check_source(SKIPPED_STEP.format(skip=skip), "t.py", {"select": ["NUM503"]})
    assert [d.row for d in found] == expected


@pytest.mark.parametrize(
    ("bound", "expected"),
    [
        ("autocast = torch.cuda.amp.autocast if amp else nullcontext", [3]),
        ("autocast = amp and torch.cuda.amp.autocast", [3]),
        ("autocast = functools.partial(torch.cuda.amp.autocast, dtype=torch.float16)", [3]),
        # the old class as the fallback of a test for the new API: deliberate
        ("autocast = torch.amp.autocast if new else torch.cuda.amp.autocast", []),
        # a type test constructs nothing
        ("is_scaler = isinstance(s, torch.cuda.amp.GradScaler)", []),
    ],
)
def test_a_deprecated_amp_class_bound_for_a_later_call(bound: str, expected: list[int]) -> None:
    code = f"import torch, functools\nfrom contextlib import nullcontext\n{bound}\n"
    found = check_source(code, "t.py", {"select": ["NUM505"]})
    assert [d.row for d in found] == expected


@pytest.mark.parametrize(
    ("angle", "expected"),
    [
        # measured by acos in a helper of the file: 0 for an identity rotation
        ("rotation_angle(R)", ["medium"]),
        # an angle of unknown origin: 0 only for an exact 0 input
        ("R.sum((-2, -1))", ["low"]),
        # kept away from 0
        ("rotation_angle(R).clamp_min(1e-4)", []),
    ],
)
def test_an_angle_over_its_sine(angle: str, expected: list[str]) -> None:
    """`phi / sin(phi)` is 0/0 at phi = 0; an angle measured by `acos` reaches 0 exactly."""
    code = (
        "def rotation_angle(R):\n"
        "    return torch.acos(((R.diagonal(dim1=-2, dim2=-1).sum(-1) - 1) / 2).clamp(-1, 1))\n"
        "def so3_log(R):\n"
        f"    phi = {angle}\n"
        "    return phi / (2.0 * phi.sin())\n"
    )
    assert _grades(code, "NUM202") == expected


def test_an_angle_from_a_parameter_named_like_a_helper() -> None:
    """A parameter that shadows the file's measuring helper is not that helper: the angle is
    of unknown origin."""
    code = (
        "def rotation_angle(R):\n"
        "    return torch.acos(((R.diagonal(dim1=-2, dim2=-1).sum(-1) - 1) / 2).clamp(-1, 1))\n"
        "def so3_log(R, rotation_angle):\n"
        "    phi = rotation_angle(R)\n"
        "    return phi / (2.0 * phi.sin())\n"
    )
    assert _grades(code, "NUM202") == ["low"]


@pytest.mark.parametrize(
    ("ceiling", "dtype", "expected"),
    [
        ("1.0 - 1e-6", "half", ["high"]),  # rounds to 1 in float16
        ("1 - 1e-4", "half", ["high"]),  # below half of float16's spacing under 1 (2.44e-4)
        ("1 - 1e-3", "half", []),  # 0.999 is a float16 number below 1
        ("1.0 - 1e-6", "float", []),  # float32 keeps it below 1
    ],
)
def test_a_ceiling_that_rounds_to_1_in_float16(ceiling: str, dtype: str, expected: list) -> None:
    code = (
        "def survival(logits):\n"
        f"    p = torch.sigmoid(logits.{dtype}())\n"
        f"    return torch.log1p(-p.clamp(max={ceiling}))\n"
    )
    assert _grades(code, "NUM401") == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        # the batch's mean distribution: probabilities, not log-probabilities
        ("torch.mean(F.softmax(s, dim=1), dim=0)", ["high"]),
        ("F.softmax(s, dim=1).mean(0)", ["high"]),
        # log-probabilities, averaged: what kl_div expects
        ("torch.mean(F.log_softmax(s, dim=1), dim=0)", []),
        # an average of scores, not of probabilities
        ("s.mean(0)", []),
    ],
)
def test_kl_div_of_an_averaged_distribution(given: str, expected: list[str]) -> None:
    code = f"def regulariser(s, prior):\n    m = {given}\n    return F.kl_div(m, prior)\n"
    assert _grades(code, "NUM304") == expected


TEMPLATE_BASE = """import torch
import torch.nn.functional as F


def assignments(q, p):
    return F.{activation}(q @ p.T, dim=1)


class Base(torch.nn.Module):
    def forward(self, q, p):
        mean_probs = torch.mean(assignments(q, p), dim=0)
        return self.regulariser(mean_probs)

    def regulariser(self, mean_probs):
        return mean_probs.sum()
"""


@pytest.mark.parametrize(("activation", "reported"), [("softmax", True), ("log_softmax", False)])
def test_override_called_by_its_base_class_in_another_file(
    tmp_path: Path, activation: str, reported: bool
) -> None:
    """A base class's `forward` calls `self.regulariser(...)`, which a subclass in another file
    overrides: the override's parameter holds what the base class passes."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")  # a library: its API
    pkg = _package(
        tmp_path,
        base=TEMPLATE_BASE.format(activation=activation),
        power=(
            "import torch\nimport torch.nn.functional as F\n"
            "from pkg.base import Base\n\n\n"
            "class Power(Base):\n"
            "    def regulariser(self, mean_probs):\n"
            "        prior = torch.ones_like(mean_probs) / mean_probs.numel()\n"
            "        return F.kl_div(mean_probs, prior, reduction='sum')\n"
        ),
    )
    found = check_paths([pkg / "power.py"], {"select": ["NUM304"], "min-confidence": "low"})
    assert [(d.row, "base.py" in str(d.related)) for d in found] == (
        [(9, True)] if reported else []
    )


MAGNITUDE_LOSS = """
class SpectralLoss(nn.Module):
    def forward(self, est, target):
        f = est.shape[1] // 2
        parts = est
        mag = torch.sqrt({root})
        return ((mag - target.abs()) ** 2).mean()
"""


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        # the magnitude of each complex entry of the prediction (real and imaginary halves,
        # or parts): 0 at every silent bin, and the prediction's gradient flows
        ("parts[:, :f] ** 2 + parts[:, f:] ** 2", ["medium"]),
        ("est.real ** 2 + torch.abs(est.imag) ** 2", ["medium"]),
        ("torch.real(est) ** 2 + torch.imag(est) ** 2", ["medium"]),
        ("torch.real(est) ** 2 + torch.real(est) ** 2", ["low"]),
        # the same magnitude of the target: no prediction's gradient through it
        ("target[:, :f] ** 2 + target[:, f:] ** 2", ["low"]),
        # halves of two different tensors: not one complex value
        ("est[:, :f] ** 2 + target[:, f:] ** 2", ["low"]),
        # one half twice: a square, not a magnitude
        ("est[:, :f] ** 2 + est[:, :f] ** 2", ["low"]),
    ],
)
def test_complex_magnitude_of_a_loss_prediction(root: str, expected: list[str]) -> None:
    """sqrt(re**2 + im**2) of a loss's prediction is graded as its spectrum's energy."""
    assert _grades(MAGNITUDE_LOSS.format(root=root), "NUM201") == expected


RELATIVE_LOSS = """
class RelativeLoss(nn.Module):
    def forward(self, pred, target):
        err = {num}
        scale = {den}
        return (err / scale).mean()
"""


@pytest.mark.parametrize(
    ("num", "den", "expected"),
    [
        # an error relative to each sample's target: one all-zero target gives x / 0
        ("torch.norm(pred - target, dim=-1)", "torch.norm(target, dim=-1)", ["medium"]),
        ("((pred - target) ** 2).sum(-1)", "(target ** 2).sum(dim=1)", ["medium"]),
        ("(pred - target).abs().sum(axis=-1)", "target.abs().sum(axis=-1)", ["medium"]),
        # the norm of the whole batch: every sample would have to be 0
        ("torch.norm(pred - target)", "torch.norm(target)", ["low"]),
        # the denominator reads the prediction too, or only the prediction
        ("(pred * target).sum(-1)", "pred.norm(dim=-1) * target.norm(dim=-1)", ["low"]),
        ("torch.norm(pred - target, dim=-1)", "torch.norm(pred, dim=-1)", ["low"]),
        # a numerator without the prediction: the target's own normalisation
        ("target", "target.norm(dim=-1, keepdim=True)", ["low"]),
    ],
)
def test_a_loss_error_relative_to_its_target(num: str, den: str, expected: list[str]) -> None:
    """A loss's error over its target's per-sample norm or sum is medium."""
    assert _grades(RELATIVE_LOSS.format(num=num, den=den), "NUM202") == expected


def test_a_relative_error_outside_a_loss_stays_low() -> None:
    """The same ratio in a function training does not minimise is not the loss's target."""
    code = (
        "def relative_error(pred, target):\n"
        "    return torch.norm(pred - target, dim=-1) / torch.norm(target, dim=-1)\n"
    )
    assert _grades(code, "NUM202") == ["low"]


def test_a_relative_loss_given_a_positive_target_stays_low(tmp_path: Path) -> None:
    """Every caller passes a magnitude clamped above 0: the target's norm is positive."""
    loss = (
        HEAD + "\n\nclass Relative(nn.Module):\n"
        "    def forward(self, x_mag, y_mag):\n"
        "        return torch.norm(y_mag - x_mag, dim=-1) / torch.norm(y_mag, dim=-1)\n"
    )
    for positive, expected in ((True, []), (False, [8])):
        root = tmp_path / str(positive)
        root.mkdir()
        y_mag = "torch.sqrt(torch.clamp(y ** 2, min=1e-7))" if positive else "y.abs()"
        pkg = _package(
            root,
            loss=loss,
            train=(
                HEAD + "from pkg.loss import Relative\n\n\n"
                "def step(model, x, y, opt):\n"
                "    crit = Relative()\n"
                f"    loss = crit(model(x), {y_mag})\n"
                "    loss.backward()\n"
                "    opt.step()\n"
            ),
        )
        found = check_paths([pkg / "loss.py"], {"select": ["NUM202"]})
        assert [d.row for d in found] == expected


LEARNED_POOL = """
class Pool(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = {init}

    def forward(self, ids, emb):
        w = {weights}
        return (emb * w[:, :, None]).sum(1) / w.sum(1)[:, None]
"""


@pytest.mark.parametrize(
    ("init", "weights", "expected"),
    [
        # trained weights taken as they are: nothing keeps their sum away from 0
        ("nn.Parameter(torch.ones(n))", "self.w[ids]", ["medium"]),
        ("torch.nn.Parameter(torch.ones(n, 1))", "self.w[ids].view(ids.shape)", ["medium"]),
        # made positive first: a sum of positive weights
        ("nn.Parameter(torch.zeros(n))", "self.w.exp()[ids]", []),
        ("nn.Parameter(torch.zeros(n))", "F.softplus(self.w[ids])", []),
        # a buffer, not trained
        ("torch.randn(n)", "self.w[ids]", ["low"]),
        # detached: the weights of the sum are the parameter's values, not a path of training
        ("nn.Parameter(torch.ones(n))", "self.w[ids].detach()", ["low"]),
    ],
)
def test_a_sum_of_trained_weights(init: str, weights: str, expected: list[str]) -> None:
    """A weighted mean over trained weights taken as they are is medium."""
    code = LEARNED_POOL.format(init=init, weights=weights)
    assert _grades(code, "NUM202") == expected


PLANAR = """
def spherical(xyz):
    if {test}:
        xyz = xyz.float()
    z = xyz[..., {third}]
    y = ({root}).sqrt()
    return y + z
"""


@pytest.mark.parametrize(
    ("test", "third", "root", "expected"),
    [
        # a projection on a plane, where the caller's tensor may need grad: 0 along z
        ("xyz.requires_grad", "2", "xyz[..., 0].pow(2) + xyz[..., 1].pow(2)", ["medium"]),
        ("xyz.requires_grad", "2", "xyz[:, 1] ** 2 + xyz[:, 0] ** 2", ["medium"]),
        ("xyz.requires_grad", "0", "torch.square(xyz[..., 1]) + xyz[..., 2] ** 2", ["medium"]),
        # indices spelled in hex or with an underscore are read as numbers
        ("xyz.requires_grad", "0o2", "xyz[..., 0b0] ** 2 + xyz[..., 0x1] ** 2", ["medium"]),
        # every component the function reads: a whole vector, 0 only at the origin
        ("xyz.requires_grad", "1", "xyz[..., 0].pow(2) + xyz[..., 1].pow(2)", ["low"]),
        # one component twice: a square
        ("xyz.requires_grad", "2", "xyz[..., 0].pow(2) + xyz[..., 0].pow(2)", ["low"]),
        # no sign that anything differentiates it: only the gradient is harmed
        ("xyz.is_cuda", "2", "xyz[..., 0].pow(2) + xyz[..., 1].pow(2)", ["low"]),
    ],
)
def test_the_length_of_a_projection_on_a_plane(
    test: str, third: str, root: str, expected: list[str]
) -> None:
    """sqrt(x**2 + y**2) of a vector whose z the function also reads is 0 along z."""
    code = PLANAR.format(test=test, third=third, root=root)
    assert _grades(code, "NUM201") == expected


CONVERTED = """
def to_dtype(x, tensor=None, dtype=None):
    {body}
    return x


def weights_of(dist, cutoff):
    weights = torch.exp(-dist)
    weights = weights * to_dtype(dist < cutoff, dtype=dist.dtype)
    return weights / torch.sum(weights, dim=1, keepdim=True)
"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # a helper that returns its argument, converted or not: the mask passes through it
        ("if x.dtype != dtype:\n        x = x.type(dtype)", ["high"]),
        ("x = x.to(dtype=dtype)", ["high"]),
        ("pass", ["high"]),
        # it changes the argument in place: what it returns is not the mask as given
        ("x[x == 0] = 1", ["low"]),
        ("x.clamp_(min=0.5)", ["low"]),
        # it returns something else besides
        ("if dtype is None:\n        return torch.ones_like(x)", ["low"]),
    ],
)
def test_a_mask_through_a_helper_that_returns_it(body: str, expected: list[str]) -> None:
    """`to_dtype(dist < cutoff, dtype=d)` with a helper that returns its argument cast: the
    product with it keeps the comparison's zeros, and a row cut off entirely sums to 0."""
    assert _grades(CONVERTED.format(body=body), "NUM202") == expected


RECIPROCAL = """
class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = F.relu(self.fc(x))
        n = h.norm(dim=1, keepdim=True)
        {line}
        return y
"""


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # a division by the norm of a ReLU output, however it is spelled
        ("y = h / n", ["high"]),
        ("y = h * n.reciprocal()", ["high"]),
        ("y = h * (1.0 / n)", ["high"]),
        ("y = h * torch.reciprocal(n)", ["high"]),
        ("y = h * n ** -1", ["high"]),
        ("y = h.mul(n.pow(-1))", ["high"]),
        ("inv = 2 / n\n        y = inv * h", ["high"]),
        ("y = h.clone()\n        y *= 1 / n", ["high"]),
        ("y = h.clone()\n        y.mul_(n.reciprocal())", ["high"]),
        # a reciprocal alone is inf, not NaN; one whose inf entries are replaced is finite
        ("y = 1.0 / n", []),
        ("inv = 1.0 / n\n        inv[torch.isinf(inv)] = 0\n        y = h * inv", []),
        # a product with a positive power, or with the reciprocal of a constant
        ("y = h * n ** 2", []),
        ("y = h * (1.0 / 8 ** 0.5)", []),
    ],
)
def test_a_division_spelled_as_a_product(line: str, expected: list[str]) -> None:
    """`x * (1 / n)` is `x / n`: 0 * inf = NaN where n is 0, the norm of a ReLU output."""
    assert _grades(RECIPROCAL.format(line=line), "NUM202") == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # precision and recall of the same true positives: 0 together without any
        ("p = tp / (pred.sum() + 1e-7)\n    r = tp / (target.sum() + 1e-7)\n"
         "    return 2 * p * r / (p + r)", ["medium"]),
        ("p = tp / (pred.sum() + 1e-7)\n    r = tp / (target.sum() + 1e-7)\n"
         "    return 2.0 * (p * r) / (p + r)", ["medium"]),
        ("p = tp / (pred.sum() + 1e-7)\n    r = tp / (target.sum() + 1e-7)\n"
         "    return torch.div(5 * p * r, 4 * p + r)", ["medium"]),
        # two different overlaps: 0 together only without either
        ("p = (pred * t2).sum() / (pred.sum() + 1e-7)\n    r = tp / (target.sum() + 1e-7)\n"
         "    return 2 * p * r / (p + r)", ["low"]),
        # a smoothed rate is positive; an eps in the sum guards it
        ("p = (tp + 1.0) / (pred.sum() + 1.0)\n    r = (tp + 1.0) / (target.sum() + 1.0)\n"
         "    return 2 * p * r / (p + r)", []),
        ("p = tp / (pred.sum() + 1e-7)\n    r = tp / (target.sum() + 1e-7)\n"
         "    return 2 * p * r / (p + r + 1e-7)", []),
        # tested first: the rates are not both 0 past the test
        ("p = tp / (pred.sum() + 1e-7)\n    r = tp / (target.sum() + 1e-7)\n"
         "    if p == r == 0:\n        return p\n    return 2 * p * r / (p + r)", []),
        ("if tp == 0:\n        return tp\n    p = tp / (pred.sum() + 1e-7)\n"
         "    r = tp / (target.sum() + 1e-7)\n    return 2 * p * r / (p + r)", []),
        # a product over a sum of values that are not rates (two masses)
        ("return pred.sum() * target.sum() / (pred.sum() + target.sum())", []),
    ],
)  # fmt: skip
def test_a_harmonic_mean_of_two_rates(body: str, expected: list[str]) -> None:
    """An F-score's precision and recall are 0 together where no prediction is a true
    positive: `2 * p * r / (p + r)` is then 0/0."""
    code = f"def f1(pred, target, t2):\n    tp = (pred * target).sum()\n    {body}\n"
    assert _grades(code, "NUM202") == expected


def test_a_harmonic_mean_of_python_numbers_is_not_a_tensor_division() -> None:
    """Rates of `int` parameters are Python floats: 0/0 raises, it gives no NaN."""
    code = (
        "def fmeasure(hits: int, pred_len: int, target_len: int):\n"
        "    precision = hits / pred_len\n"
        "    recall = hits / target_len\n"
        "    return 2 * precision * recall / (precision + recall)\n"
    )
    assert _grades(code, "NUM202") == []
    assert _grades(code.replace(": int", ""), "NUM202") == ["medium"]


@pytest.mark.parametrize(
    ("helper", "call", "expected"),
    [
        # a helper summing the product of its two arguments, given one tensor twice
        ("return (x * y).sum(-1)", "dot(omega, omega)", ["sqrt"]),
        ("return torch.sum(x * y, dim=-1)", "dot(omega, omega)", ["sqrt"]),
        ("return (x * y).sum(-1, keepdim)", "dot(y=omega, x=omega)", ["sqrt"]),
        # two tensors: a dot product, negative or 0 only by chance
        ("return (x * y).sum(-1)", "dot(omega, upsilon)", []),
        # the helper returns something else as well
        (
            "if keepdim:\n        return x.sum(-1)\n    return (x * y).sum(-1)",
            "dot(omega, omega)",
            [],
        ),
    ],
)
def test_a_helper_contracting_a_tensor_with_itself(
    tmp_path: Path, helper: str, call: str, expected: list[str]
) -> None:
    """`dot(omega, omega).sqrt()` with `def dot(x, y): return (x * y).sum(-1)` in another
    module: the root of a squared norm, 0 for the identity rotation."""
    pkg = _package(
        tmp_path,
        linalg=f"import torch\n\n\ndef dot(x, y, keepdim=False):\n    {helper}\n",
        se3=(
            HEAD + "from pkg.linalg import dot\n\n\n"
            "def log_map(v: torch.Tensor):\n"
            "    upsilon, omega = v[..., :3], v[..., 3:]\n"
            f"    theta = {call}.sqrt()\n"
            "    return theta.sin() / theta * upsilon\n"
        ),
    )
    found = check_paths([pkg / "se3.py"], {"select": ["NUM201"], "min-confidence": "low"})
    assert ["sqrt" for d in found if "sum of squares" in d.message] == expected


@pytest.mark.parametrize(
    ("line", "code", "expected"),
    [
        ("s = (h * h).sum(-1)\n        s.sqrt_()", "NUM201", 1),
        ("h.log_()", "NUM103", 1),
        ("h.rsqrt_()", "NUM201", 1),
        ("h.clamp_(min=1e-6)\n        h.log_()", "NUM103", 0),
    ],
)
def test_in_place_spellings(line: str, code: str, expected: int) -> None:
    """`x.sqrt_()`, `x.log_()`: the same hazard as `x.sqrt()` on the value x holds."""
    src = (
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n"
        "    def forward(self, x):\n"
        "        h = F.relu(self.fc(x))\n"
        f"        {line}\n"
        "        return h\n"
    )
    assert len(_grades(src, code)) == expected


PARTS = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = nn.Linear(8, 1)
        self.aux = nn.Linear(8, 4)

    def forward(self, x):
        p = torch.sigmoid(self.cls(x))
        return {returned}


def step(x, y):
    model = Net()
    criterion = nn.BCEWithLogitsLoss()
    {use}
"""


@pytest.mark.parametrize(
    ("returned", "use", "expected"),
    [
        ("p, self.aux(x)", "pred, aux = model(x)\n    return criterion(pred, y)", 1),
        ("p, self.aux(x)", "return criterion(model(x)[0].squeeze(1), y)", 1),
        ('{"prob": p, "aux": self.aux(x)}', 'return criterion(model(x)["prob"], y)', 1),
        (
            "dict(prob=p, aux=self.aux(x))",
            'out = model(x)\n    return criterion(out["prob"], y)',
            1,
        ),
        # the other part, which is no probability
        ("p, self.aux(x)", "pred, aux = model(x)\n    return criterion(aux, y)", 0),
        ('{"prob": p, "aux": self.aux(x)}', 'return criterion(model(x)["aux"], y)', 0),
        # a starred target before the part: its place is unknown
        ("p, self.aux(x), x", "*rest, last = model(x)\n    return criterion(last, y)", 0),
    ],
)
def test_a_part_of_a_model_output(returned: str, use: str, expected: int) -> None:
    """A sigmoid a model returns beside other outputs reaches a logits loss as one part."""
    code = PARTS.format(returned=returned, use=use)
    assert len(_grades(code, "NUM305")) == expected


LIGHTNING_CE = """
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=-1)

{owner}
    def {method}(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)
"""


@pytest.mark.parametrize(
    ("owner", "method", "expected"),
    [
        # a LightningModule's hooks named test_*: run by the trainer, not by pytest
        ("class Lit(Classifier):", "validation_step", ["high"]),
        ("class Lit(Classifier):", "test_step", ["high"]),
        # methods of test classes are tests: their inputs are built on purpose
        ("class TestLoss(Classifier):", "test_step", ["low"]),
        ("class LossTests(Classifier, BaseTest):", "test_step", ["low"]),
        ("class Checks(Classifier, unittest.TestCase):", "test_step", ["low"]),
    ],
)
def test_a_hook_named_test_is_not_a_test(owner: str, method: str, expected: list[str]) -> None:
    """`test_*` is a test as a module-level function or a method of a test class; a
    LightningModule's `test_step` is the trainer's hook, graded as its `validation_step`."""
    code = "import unittest\nBaseTest = unittest.TestCase\n" + LIGHTNING_CE.format(
        owner=owner, method=method
    )
    assert _grades(code, "NUM301") == expected


SOFTPLUS_SCALE = """
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = {net}

    def forward(self, h):
        return {scale}


def gauss(mu, sigma, y):
    return ((y - mu) / sigma) ** 2 + sigma.log()


def train(scale, loader, opt):
    for x, y in loader:
        s = scale(x)
        loss = gauss(0.0, s, y).mean() + (y / scale(x)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    train(Scale(), [], None)
"""


_LINEAR = "nn.Linear(4, 1)"


@pytest.mark.parametrize(
    ("net", "scale", "expected"),
    [
        (_LINEAR, "F.softplus(self.net(h))", {"NUM103": ["medium"], "NUM202": ["medium"]}),
        (
            "nn.Sequential(nn.Linear(4, 1), nn.Softplus())",
            "self.net(h)",
            {"NUM103": ["medium"], "NUM202": ["medium"]},
        ),
        # an eps after the softplus keeps the scale above 0
        (_LINEAR, "F.softplus(self.net(h)) + 1e-4", {"NUM103": [], "NUM202": []}),
        (_LINEAR, "self.net(h).exp()", {"NUM103": [], "NUM202": []}),
    ],
)
def test_a_softplus_scale_made_in_another_function(
    tmp_path: Path, net: str, scale: str, expected: dict[str, list[str]]
) -> None:
    """A learned scale a model returns through softplus: exactly 0 below an input of -104, so
    its log and a division by it, in code that trains, are medium like one made in place."""
    pkg = _package(tmp_path, train=HEAD + SOFTPLUS_SCALE.format(net=net, scale=scale))
    found = {
        rule: [
            d.confidence for d in check_paths([pkg], {"select": [rule], "min-confidence": "low"})
        ]
        for rule in expected
    }
    assert found == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # some entries of a tensor over all of them, along the same dims: a row with none
        (
            "top = y.gather(1, torch.argsort(s, dim=-1, descending=True))[:, :k]\n"
            "    return top.sum(dim=1) / y.sum(dim=1)",
            ["medium"],
        ),
        ("return y[:, idx].sum(-1) / y.sum(-1)", ["medium"]),
        ("return y.topk(k, dim=1).values.sum(1) / y.sum(1)", ["medium"]),
        ("return 2 * y.index_select(1, idx).sum(1) / y.sum(1)", ["medium"]),
        # nothing picked (a normalisation), or sums over other dims: no such pairing
        ("return y / y.sum(1, keepdim=True)", ["low"]),
        ("return y[:, :k].sum(1) / y.sum()", ["low"]),
        ("return s[:, :k].sum(1) / y.sum(1)", ["low"]),
    ],
)
def test_a_sum_of_some_entries_over_the_sum_of_all(body: str, expected: list[str]) -> None:
    """A recall@k: the relevant items ranked in the top k over all relevant items is 0/0
    for a row (a user, a query) without any."""
    code = f"def recall_at_k(y, s, idx, k):\n    {body}\n"
    assert _grades(code, "NUM202") == expected


TV_LOSS = """
class TVLoss(nn.Module):
    def forward(self, img, ref):
        dx = {dx}
        dy = img[:, :, 1:, :] - img[:, :, :-1, :]
        return torch.sqrt({root}).mean()
"""


@pytest.mark.parametrize(
    ("dx", "root", "expected"),
    [
        # neighbouring pixels of one image: 0 across any flat region
        (
            "img[:, :, :, 1:] - img[:, :, :, :-1]",
            "dx[:, :, :-1, :] ** 2 + dy[:, :, :, :-1] ** 2",
            ["high"],
        ),
        ("img[..., 1:] - img[..., :-1]", "dx.pow(2)", ["high"]),
        # a sum of two squares is 0 only where both are: as likely as the less likely
        (
            "img[..., 1:] - ref[..., :-1]",
            "dx[:, :, :-1, :] ** 2 + dy[:, :, :, :-1] ** 2",
            ["medium"],
        ),
        # the same slice twice, or two halves of each row (a box's corners), are no
        # difference of neighbours
        ("img[..., 1:] - ref[..., 1:]", "dx ** 2", ["medium"]),
        ("img[..., 2:] - img[..., :2]", "dx ** 2", ["medium"]),
        ("img[:, :, :, 1:] - img[:, :, :, :-1]", "dx ** 2 + 1e-6", []),
    ],
)
def test_a_root_of_a_finite_difference(dx: str, root: str, expected: list[str]) -> None:
    """A total-variation or edge loss: the root of squared differences of neighbouring
    entries of one tensor has an infinite slope wherever the image is flat."""
    assert _grades(TV_LOSS.format(dx=dx, root=root), "NUM201") == expected


EDGE_LOSS = """
SOBEL = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]).view(1, 1, 3, 3)
BLUR = torch.tensor([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]).view(1, 1, 3, 3) / 16


def gradient_magnitude(x, k):
    gx = F.conv2d(x, {kernel}, padding=1)
    gy = F.conv2d(x, {kernel}.transpose(2, 3), padding=1)
    return torch.sqrt(gx ** 2 + gy ** 2)


class EdgeLoss(nn.Module):
    def forward(self, pred, target, k):
        return (gradient_magnitude(pred, k) - gradient_magnitude(target, k)).abs().mean()


def train(model, x, y, k, opt):
    loss = EdgeLoss()(model(x), y, k)
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        # a derivative filter's taps sum to 0: its response is 0 across any flat region
        ("SOBEL", ["high"]),
        ("-2 * SOBEL.flip(-1)", ["high"]),
        ("torch.cat([SOBEL, SOBEL.transpose(2, 3)], 0)", ["high"]),
        # a smoothing filter, or a kernel the caller gives: only an all-zero patch
        ("BLUR", ["low"]),
        ("k", ["low"]),
    ],
)
def test_a_root_of_a_derivative_filter_response(tmp_path: Path, kernel: str, expected) -> None:
    """An image gradient's magnitude (Sobel, Prewitt, Laplacian taps sum to 0), in a helper
    named for the gradient it computes that a loss calls: differentiated, not a derivative
    written by hand."""
    pkg = _package(tmp_path, losses=HEAD + EDGE_LOSS.format(kernel=kernel))
    found = check_paths([pkg], {"select": ["NUM201"], "min-confidence": "low"})
    assert [d.confidence for d in found] == expected


SOBEL_MODULE = """
class Sobel(nn.Module):
    def __init__(self):
        super().__init__()
        self.filter = nn.Conv2d(1, 2, kernel_size=3, bias=False)
        gx = torch.tensor([[2.0, 0.0, -2.0], [4.0, 0.0, -4.0], [2.0, 0.0, -2.0]])
        g = torch.cat([gx.unsqueeze(0), gx.t().unsqueeze(0)], 0).unsqueeze(1)
        {assign}

    def forward(self, img):
        x = self.filter(img)
        return torch.sqrt(torch.sum(x * x, dim=1, keepdim=True))
"""


@pytest.mark.parametrize(
    ("assign", "expected"),
    [
        ("self.filter.weight = nn.Parameter(g, requires_grad=False)", ["high"]),
        ("self.filter.weight.data = g", ["high"]),
        # a learned convolution: its features are a zero vector only where the input is
        ("pass", ["low"]),
    ],
)
def test_a_convolution_set_to_a_derivative_filter(assign: str, expected: list[str]) -> None:
    """A layer whose weight the constructor sets to constant Sobel taps."""
    assert _grades(SOBEL_MODULE.format(assign=assign), "NUM201") == expected


TALLY = """
class MeanIoU(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.k = num_classes
        self.register_buffer("inter", {init})
        self.register_buffer("union", {init})

    def update(self, pred, target):
        inter = torch.histc(pred[pred == target].float(), bins=self.k, min=0, max=self.k - 1)
        area = torch.histc(pred.float(), bins=self.k, min=0, max=self.k - 1)
        self.inter += inter
        self.union += {added}

    def compute(self):
        return (self.inter / self.union).mean()
"""


@pytest.mark.parametrize(
    ("init", "added", "expected"),
    [
        # zeros per class, added to by per-class counts: a class never seen keeps 0
        ("torch.zeros(num_classes)", "area - inter", ["medium"]),
        ("torch.zeros(num_classes)", "(pred == 0).sum(0)", ["medium"]),
        # a number of samples added to every entry: 0 only before the first update
        ("torch.zeros(num_classes)", "pred.shape[0]", []),
        # a scalar total, and a state that starts above 0
        ("torch.tensor(0.0)", "area - inter", []),
        ("torch.ones(num_classes)", "area - inter", []),
    ],
)
def test_a_per_class_tally_kept_on_the_module(init: str, added: str, expected: list[str]) -> None:
    """Accumulated per-class unions divide the intersections: 0/0 for a class that no batch
    has held (an mIoU over classes absent from the data)."""
    code = TALLY.format(init=init, added=added)
    assert _grades(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # a column redrawn and clamped at 0 in place: all 0 if every entry was negative
        ("d[:, k].normal_()\n    d[:, k].clamp_(0, None)\n    d[:, k] /= d[:, k].norm()", ["high"]),
        ("d.normal_()\n    d.relu_()\n    return d / d.norm()", ["high"]),
        # clamped, then redrawn: the last edit decides (a norm of Gaussian noise)
        ("d.clamp_(0, None)\n    d.normal_()\n    return d / d.norm()", []),
        # the else branch of a test against the eps the function is given
        ("n = d.relu().norm()\n    if n < eps:\n        return d\n    return d / n", []),
        ("n = d.relu().norm()\n    return d / n if torch.is_nonzero(n) else d", []),
    ],
)
def test_in_place_clamps_and_tests_of_a_norm(body: str, expected: list[str]) -> None:
    code = f"def renorm(d, k, eps=1e-10):\n    {body}\n"
    assert _grades(code, "NUM202") == expected


def test_a_sum_of_centred_squares_is_a_variance() -> None:
    """A Pearson correlation written with sums: 0/0 for a constant input."""
    code = (
        "def corr(x, y):\n"
        "    xc, yc = x - x.mean(), y - y.mean()\n"
        "    return (xc * yc).sum() / (torch.sqrt((xc ** 2).sum()) * torch.sqrt((yc ** 2).sum()))\n"
    )
    found = check_source(HEAD + code, "<string>", {"select": ["NUM202"], "min-confidence": "low"})
    assert [d.message.split(",")[0] for d in found] == ["division by a variance"]


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        # a number less values, clamped at 0 by a max with zeros: 0 at the identity rotation
        ("torch.sqrt(torch.max(zero, 1 + m00 - m11 - m22))", ["medium"]),
        ("torch.sqrt(torch.maximum(1 - m00 - m11 + m22, zero))", ["medium"]),
        ("torch.sqrt(torch.clamp(1 + m00 - m11 - m22, min=0))", ["medium"]),
        # nothing subtracted: clamped against rounding, 0 only for a degenerate input
        ("torch.sqrt(torch.max(zero, 1 + m00 + m11 + m22))", ["low"]),
    ],
)
def test_a_root_of_a_number_less_values_clamped_at_zero(root: str, expected: list[str]) -> None:
    """Quaternions from a rotation matrix: `1 + m00 - m11 - m22` is exactly 0 for the identity,
    and a library function's callers may differentiate it."""
    code = (
        "def quat(matrix):\n"
        "    zero = matrix.new_zeros((1,))\n"
        "    m00, m11, m22 = matrix[..., 0, 0], matrix[..., 1, 1], matrix[..., 2, 2]\n"
        f"    return 0.5 * {root}\n"
    )
    assert _grades(code, "NUM201") == expected


CAUSAL = """
class Attention(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.c_attn = nn.Linear(8, 24)
        {buffer}

    def _attn(self, q, k):
        w = torch.matmul(q, k)
        b = self.bias[:, :, : w.size(-2), : w.size(-1)]
        w = w * b - 1e10 * (1 - b)
        return nn.Softmax(dim=-1)(w)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(8, dim=-1)
        return self._attn(q, k.transpose(-1, -2))
"""


@pytest.mark.parametrize(
    ("buffer", "expected"),
    [
        # a float buffer is converted with the model: float16 wherever the model is
        ('self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))', ["medium"]),
        # a bool buffer keeps its dtype, and a plain attribute is not converted
        ('self.register_buffer("bias", torch.tril(torch.ones(n, n)).bool())', []),
        ("self.bias = torch.tril(torch.ones(n, n)).view(1, 1, n, n)", []),
    ],
)
def test_masking_by_arithmetic_with_a_module_buffer(buffer: str, expected: list[str]) -> None:
    """GPT-2's `w * b - 1e10 * (1 - b)` with `b` a causal-mask buffer: after `model.half()`
    the product is float16 and 1e10 is inf there, in a model library whose callers choose
    the dtype."""
    assert _grades(CAUSAL.format(buffer=buffer), "NUM402") == expected


FORCES = """
class Potential(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(1, 1)

    def forward(self, pos, batch):
        {pairs}
        r = {norm}
        return self.net(r[:, None]).sum()


def train(model, pos, batch, f_ref, opt):
    pos.requires_grad_(True)
    energy = model(pos, batch)
    forces = -torch.autograd.grad(energy, pos, create_graph={graph})[0]
    loss = ((forces - f_ref) ** 2).mean()
    loss.backward()
    opt.step()
"""
_RADIUS = "row, col = radius_graph(pos, r=5.0, batch=batch{loop})"


@pytest.mark.parametrize(
    ("pairs", "norm", "graph", "expected"),
    [
        # differentiated twice (forces): the norm's second derivative at 0 is NaN
        ("n = pos.shape[0]", "(pos[:, None] - pos[None]).norm(dim=-1).flatten()", "True", ["high"]),
        (
            _RADIUS.format(loop=", loop=True"),
            "torch.norm(pos[row] - pos[col], dim=-1)",
            "True",
            ["high"],
        ),
        (
            "row, col = batch[0], batch[1]",
            "(pos[row] - pos[col]).norm(dim=-1)",
            "self.training",
            ["medium"],
        ),
        # a graph without self loops pairs distinct atoms; a single backward is fine at 0
        (_RADIUS.format(loop=""), "torch.norm(pos[row] - pos[col], dim=-1)", "True", []),
        ("n = pos.shape[0]", "(pos[:, None] - pos[None]).norm(dim=-1).flatten()", "False", []),
        # an L1 norm, and the norm of a difference of two tensors
        ("n = pos.shape[0]", "(pos[:, None] - pos[None]).norm(p=1, dim=-1).flatten()", "True", []),
    ],
)
def test_a_norm_of_pair_differences_differentiated_twice(
    pairs: str, norm: str, graph: str, expected: list[str]
) -> None:
    """Training on forces takes the gradient of the energy with `create_graph=True` and
    differentiates it again: the Euclidean norm's second derivative is NaN at a zero
    difference (an atom paired with itself, a padded neighbour)."""
    code = "from torch_cluster import radius_graph\n" + FORCES.format(
        pairs=pairs, norm=norm, graph=graph
    )
    assert _grades(code, "NUM201") == expected


def test_a_direction_of_consecutive_points_joined_with_its_last() -> None:
    """`d = p[1:] - p[:-1]`, `d = torch.cat([d, d[-1:]])`: a zero direction where two
    consecutive points coincide."""
    code = (
        "def directions(p):\n"
        "    d = p[1:] - p[:-1]\n"
        "    d = torch.cat([d, d[-1:]])\n"
        "    return d / torch.norm(d, dim=1, keepdim=True)\n"
    )
    assert _grades(code, "NUM202") == ["high"]


@pytest.mark.parametrize(("graph", "fixed"), [("True", False), ("False", True)])
def test_no_vector_norm_fix_where_differentiated_twice(graph: str, fixed: bool) -> None:
    """`vector_norm` replaces a root of a sum of squares only where one backward runs: its
    second derivative at 0 is NaN too."""
    code = FORCES.format(
        pairs="d = pos[:, None] - pos[None]",
        norm="torch.sqrt((d ** 2).sum(-1)).flatten()",
        graph=graph,
    )
    found = check_source(HEAD + code, "<string>", {"select": ["NUM201"], "min-confidence": "low"})
    assert [d.fix is not None for d in found] == [fixed]


MIXTURE_PRIOR = """
class Prior(nn.Module):
    def __init__(self):
        super().__init__()
        self.d1 = torch.distributions.Normal(0.0, 0.1)
        self.d2 = torch.distributions.Normal(0.0, 0.4)

    def forward(self, w):
        p1 = {p1}
        p2 = torch.exp(self.d2.log_prob(w))
        return torch.log({pdf}).sum()
"""


@pytest.mark.parametrize(
    ("p1", "pdf", "expected"),
    [
        # out of log space and back: the exp of a log-density underflows to 0 below -103
        ("torch.exp(self.d1.log_prob(w))", "0.5 * p1 + 0.5 * p2", ["medium"]),
        ("self.d1.log_prob(w).exp()", "p1", ["medium"]),
        # an eps in the mixture, or a log of the exp of something else
        ("torch.exp(self.d1.log_prob(w))", "0.5 * p1 + 0.5 * p2 + 1e-12", []),
        ("torch.exp(-w ** 2)", "p1", []),
    ],
)
def test_the_log_of_an_exp_of_a_log_probability(p1: str, pdf: str, expected: list[str]) -> None:
    """A scale-mixture prior computed as `log(pi * exp(lp1) + (1 - pi) * exp(lp2))`: a weight
    far in the tail makes both exps 0 and the log -inf; `torch.logsumexp` stays in log space."""
    assert _grades(MIXTURE_PRIOR.format(p1=p1, pdf=pdf), "NUM103") == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return w.abs() / w.abs().amax(dim=1, keepdim=True)", ["low"]),
        ("m = torch.abs(x).max()\n    return x / m", ["low"]),
        ("return x / x.abs().max(dim=1, keepdim=True)[0]", ["low"]),
        # a maximum of signed values, or a guarded peak
        ("return x / x.max()", []),
        ("return x / (x.abs().max() + 1e-8)", []),
    ],
)
def test_a_division_by_the_largest_absolute_value(body: str, expected: list[str]) -> None:
    """Peak normalisation: 0/0 for an all-zero row (a silent clip, a zero weight group)."""
    assert _grades(f"def peak(x, w):\n    {body}\n", "NUM202") == expected


LOG_DISTANCE = """
class LogSpectralLoss(nn.Module):
    def forward(self, x_mag, y_mag):
        {body}
"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # the loss takes the log of its input and of its target alike: both are magnitudes
        ("return (torch.log(x_mag) - torch.log(y_mag)).abs().mean()", ["medium", "medium"]),
        # only the input's log: a prediction of unknown kind
        ("return (torch.log(x_mag) - y_mag).abs().mean()", []),
        # guarded
        ("return (torch.log(x_mag + 1e-7) - torch.log(y_mag + 1e-7)).abs().mean()", []),
    ],
)
def test_the_log_of_a_loss_input_taken_like_its_target(body: str, expected: list[str]) -> None:
    """A spectral loss in log scale logs the prediction's magnitude as it logs the target's:
    an empty band is 0 in both."""
    step = "\n\ndef step(m, x, y):\n    crit = LogSpectralLoss()\n    loss = crit(m(x), y)\n    loss.backward()\n"
    code = LOG_DISTANCE.format(body=body) + step
    assert _grades(code, "NUM103") == expected


MULTI_POSITIVE = """
class MultiPositiveNCE(nn.Module):
    def forward(self, feats, labels, adj):
        sim = feats @ feats.T
        e = torch.exp(sim)
        {mask}
        return -torch.log((e * pos).sum(1) / e.sum(1)).mean()
"""


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        # positives by label with the sample itself removed: a class seen once has none
        (
            "pos = (labels[:, None] == labels[None]).float() * (1 - torch.eye(len(labels)))",
            ["high"],
        ),
        # the diagonal kept: each row holds itself
        ("pos = (labels[:, None] == labels[None]).float()", []),
        # a mask the caller gives: of unknown kind
        ("pos = adj", []),
    ],
)
def test_the_log_of_a_masked_sum(mask: str, expected: list[str]) -> None:
    """A contrastive loss with several positives, `log(sum(exp(s) * pos) / sum(exp(s)))`:
    a row whose mask keeps nothing is log(0)."""
    assert _grades(MULTI_POSITIVE.format(mask=mask), "NUM103") == expected


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        # a ratio is 0 where its numerator is: graded by what the numerator sums
        ("torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1) / scale)", ["high"]),
        ("torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))", ["high"]),
    ],
)
def test_a_root_of_a_ratio_is_graded_by_its_numerator(root: str, expected: list[str]) -> None:
    code = f"class Pairs(nn.Module):\n    def forward(self, x, scale):\n        return {root}\n"
    assert _grades(code, "NUM201") == expected


CORRCOEF = """
class CorrCoef:
    def __call__(self, x, y):
        xc, yc = x - x.mean(), y - y.mean()
        return (xc * yc).sum() / (torch.sqrt((xc ** 2).sum()) * torch.sqrt((yc ** 2).sum()))
"""
PEARSON_LOSS = """
from pkg.metrics import CorrCoef


class PearsonLoss(nn.Module):
    def forward(self, input, targets):
        return 1 - {call}
"""


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        # an instance built and called at once in a loss's forward: its __call__ trains
        ("CorrCoef()(input, targets)", ["medium"]),
        # the metric never called from training code: a metric, graded low
        ("torch.zeros(())", ["low"]),
    ],
)
def test_an_instance_built_and_called_at_once(tmp_path: Path, call: str, expected) -> None:
    """A Pearson correlation class in a metrics module, used as a loss through `1 -
    CorrCoef()(input, targets)`: 0/0 for a constant window, in code that trains."""
    pkg = _package(
        tmp_path,
        metrics=HEAD + CORRCOEF,
        losses=HEAD + PEARSON_LOSS.format(call=call),
    )
    found = check_paths([pkg / "metrics.py"], {"select": ["NUM202"], "min-confidence": "low"})
    assert [d.confidence for d in found] == expected


RELU_LOG = """
def f(x, labels):
    p = torch.relu(x)
    {write}
    return torch.log(p)
"""


@pytest.mark.parametrize(
    ("write", "expected"),
    [
        ("p[p < 1e-6] = 1e-6", []),  # a test of the value itself
        ("m = p == 0\n    p[m] = 1.0", []),  # the same test, through a name
        ("p.masked_fill_(p < 1e-6, 1e-6)", []),
        ("p[:] = 1.0", []),  # all of it
        ("p[labels == 0] = 1.0", ["high"]),  # entries another tensor picks
        ("p.masked_fill_(labels == 0, 1.0)", ["high"]),
    ],
)
def test_a_write_guards_only_the_entries_a_test_of_the_value_picks(
    write: str, expected: list[str]
) -> None:
    """An in-place write of a positive value is a guard where it can reach the zeros: the
    whole value, or entries a test of the value (or of what it is made of) selects."""
    assert _grades(RELU_LOG.format(write=write), "NUM103") == expected


def test_a_doctest_backward_does_not_make_a_project_that_trains(tmp_path: Path) -> None:
    """A model library's attention: its callers choose the dtype, and a `>>> loss.backward()`
    in a docstring is a user's example, not the project's training loop."""
    attention = HEAD + (
        "class Attention(nn.Module):\n"
        "    def forward(self, q, k, mask):\n"
        "        a = torch.bmm(q, k.permute(0, 2, 1))\n"
        "        return a.masked_fill(mask, -1e9).softmax(-1)\n"
    )
    optim = '"""A scheduler.\n\n    >>> loss_fn(model(x), y).backward()\n"""\n'
    select = {"select": ["NUM402"], "min-confidence": "low", "no-cache": True}
    grades = []
    for name, train in (("library", optim), ("trainer", "def step(loss):\n    loss.backward()\n")):
        root = tmp_path / name
        root.mkdir()
        (root / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
        pkg = _package(root, attention=attention, train=train)
        grades.append([d.confidence for d in check_paths([pkg / "attention.py"], select)])
    assert grades == [["medium"], []]


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        ("pred = model(x)[0]", 1),  # the element indexed off the call
        ("out = model(x)\n    pred = out[0]", 1),  # through a variable
        ("pred = model(x)[1]", 0),  # the logits the model also returns
    ],
)
def test_an_indexed_element_of_another_files_model_is_followed(
    tmp_path: Path, use: str, expected: int
) -> None:
    """`model(x)[0]` of a model of another file whose `forward` returns
    `(torch.sigmoid(h), h)`: the first element is a probability, the second the logits."""
    train = (
        "import torch.nn.functional as F\n"
        "from pkg.model import Net\n"
        "def step(x, y):\n"
        "    model = Net()\n"
        f"    {use}\n"
        "    return F.binary_cross_entropy_with_logits(pred, y)\n"
    )
    pkg = _package(tmp_path, model=SIGMOID_AND_LOGITS_NET, train=train)
    found = check_paths([pkg / "train.py"], {"select": ["NUM305"], "no-cache": True})
    assert len(found) == expected


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("crit = Focal()\n    return crit(torch.sigmoid(z), y)", [6]),  # an instance, called
        ("return Focal()(torch.sigmoid(z), y)", [6]),  # built and called at once
        ("return Focal()(z, y)", []),  # logits: as the loss expects
    ],
)
def test_a_loss_modules_forward_learns_what_its_instances_are_called_with(
    tmp_path: Path, call: str, expected: list[int]
) -> None:
    """A loss module's `forward` runs where an instance is called: what a training file of the
    project calls it with is what its parameter holds (here a sigmoid output, given to a
    logits loss inside the module)."""
    losses = HEAD + (
        "class Focal(nn.Module):\n"
        "    def forward(self, inputs, targets):\n"
        "        bce = F.binary_cross_entropy_with_logits(inputs, targets, reduction='none')\n"
        "        return ((1 - torch.exp(-bce)) ** 2 * bce).mean()\n"
    )
    train = f"import torch\nfrom pkg.losses import Focal\ndef step(z, y):\n    {call}\n"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    pkg = _package(tmp_path, losses=losses, train=train)
    found = check_paths([pkg / "losses.py"], {"select": ["NUM305"], "no-cache": True})
    assert [d.row for d in found] == expected
