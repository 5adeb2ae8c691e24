"""Unit tests of numlint.analysis: evidence (confidence), gradients, arrays, names."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from numlint import check_paths, check_source
from numlint.analysis.gradients import evaluation_code
from numlint.analysis.names import import_one, module_imports


def _confidence(code: str, rule: str) -> list[str]:
    found = check_source(textwrap.dedent(code), "m.py", {"select": [rule], "min-confidence": "low"})
    return [d.confidence for d in found]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("x / x.norm(dim=-1, keepdim=True)", ["low"]),  # a learned vector would need to be 0
        ("(x * m).sum() / m.sum()", ["low"]),  # a mask the caller gives: valid entries
        ("(x * (y > 0)).sum() / (y > 0).sum()", ["high"]),  # a mask computed here
        ("x.sum() / (y > 0).sum()", ["high"]),  # a count of a comparison
        ("x.sum() / fg_mask.sum()", ["high"]),  # a given mask that selects by content
        ("x.sum() / valid_mask.sum()", ["low"]),  # a given mask of valid entries
        ("x.sum() / attention_mask.sum()", ["low"]),  # a padding mask keeps one token
        ("x.sum() / (idx >= 0).sum()", ["low"]),  # a padding test of indices
        ("x.sum(1) / (valid_mask == 1).sum(1)", ["low"]),  # the given mask, as booleans
        ("x.sum(1) / (fg_mask == 1).sum(1)", ["high"]),  # a given content mask stays high
        ("x.sum(1) / (e1_mask != 0).sum(1)", ["high"]),  # an entity span: empty if truncated
        ("x.sum() / x.relu().sum()", ["high"]),  # dead ReLUs
        ("(x - x.mean()) / x.std()", ["low"]),  # constant input only
        ("x / x.clamp(min=0)", ["high"]),  # clamped at exactly 0
    ],
)
def test_division_confidence(expr: str, expected: list[str]) -> None:
    params = "x, y, m, idx, fg_mask, valid_mask, attention_mask, e1_mask"
    code = f"import torch\ndef f({params}):\n    return {expr}\n"
    assert _confidence(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))", ["high"]),
        ("torch.sqrt(((x.unsqueeze(1) - x.unsqueeze(0)) ** 2).sum(-1))", ["high"]),
        ("torch.sqrt(((x[i] - x[j]) ** 2).sum(-1))", ["medium"]),  # a loss's pairs can be equal
        ("torch.sqrt(((x - y) ** 2).sum(-1))", ["medium"]),  # anchor and positive can be equal
        ("torch.sqrt((x ** 2).sum(-1))", ["low"]),  # a hand-written norm
        ("torch.sqrt(x.clamp(min=0))", ["low"]),  # 0 before the clamp only by chance
        ("torch.sqrt((x - y).clamp(min=0))", ["high"]),  # a difference cancels to 0
        ("torch.sqrt(torch.relu(x))", []),  # ReLU's backward selects 0: no NaN
        ("torch.sqrt(1 - x ** 2)", ["medium"]),  # the caller's x may be a cosine
        ("torch.sqrt(1 - x.cos() ** 2)", ["high"]),  # a cosine does
        ("torch.sqrt(1 - x.clamp(-1 + 1e-6, 1 - 1e-6) ** 2)", []),
    ],
)
def test_sqrt_confidence(expr: str, expected: list[str]) -> None:
    code = f"import torch\ndef loss(x, y, i, j):\n    return {expr}\n"
    assert _confidence(code, "NUM201") == expected


_SELF_DISTANCE = "torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (f"def pairwise(x):\n    return {_SELF_DISTANCE}", ["low"]),  # nothing differentiates it
        (
            f"class Net(torch.nn.Module):\n    def forward(self, x):\n        return {_SELF_DISTANCE}",
            ["high"],
        ),
        (
            f"class Net(nn.Module):\n    def energy(self, x):\n        return {_SELF_DISTANCE}",
            ["high"],
        ),  # any method of a module
        (f"class Head:\n    def forward(self, x):\n        return {_SELF_DISTANCE}", ["high"]),
        (f"def repulsion_loss(x):\n    return {_SELF_DISTANCE}.mean()", ["high"]),
        (
            f"class Lit:\n    def training_step(self, x):\n        return {_SELF_DISTANCE}.mean()",
            ["high"],
        ),
        (
            f"def fit(x, opt):\n    d = {_SELF_DISTANCE}\n    d.mean().backward()\n    opt.step()",
            ["high"],
        ),
        (
            f"def pairwise(x):\n    return {_SELF_DISTANCE}\n"
            "class Net(nn.Module):\n    def forward(self, x):\n        return pairwise(x)",
            ["high"],
        ),  # a helper a layer calls
        (
            f"def pairwise(x):\n    return {_SELF_DISTANCE}\ndef knn(x):\n    return pairwise(x)\n"
            "def contrastive_loss(x):\n    return knn(x).mean()",
            ["high"],
        ),  # two calls up
        (
            f"def pairwise(x):\n    return {_SELF_DISTANCE}\ndef plot(x):\n    return pairwise(x)",
            ["low"],
        ),  # a caller with no evidence either
        (
            "def angle(x):\n    s = (x**2).sum(-1)\n    t = torch.sqrt(s)\n"
            "    return torch.where(s > 0, t / s, 1.0)",
            ["high"],
        ),  # the code tests the value against 0 itself
    ],
)
def test_sqrt_needs_gradient_evidence(code: str, expected: list[str]) -> None:
    """A root's harm is its gradient: shown by default only where something differentiates."""
    source = f"import torch\nimport torch.nn as nn\n{code}\n"
    assert _confidence(source, "NUM201") == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("def norm(v, n):\n    return torch.where(n > 0, v / n, 0.0)", ["low"]),
        (
            "class Norm(nn.Module):\n    def forward(self, v, n):\n"
            "        return torch.where(n > 0, v / n, 0.0)",
            ["high"],
        ),
    ],
)
def test_where_branch_needs_gradient_evidence(code: str, expected: list[str]) -> None:
    source = f"import torch\nimport torch.nn as nn\n{code}\n"
    assert _confidence(source, "NUM110") == expected


def test_gradient_evidence_crosses_files(tmp_path: Path) -> None:
    """A helper in one file that a module in another file calls is differentiated; a
    distribution's helper that nothing in it calls is its API, reachable but not seen
    differentiated."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "geometry.py").write_text(
        f"import torch\ndef pairwise(x):\n    return {_SELF_DISTANCE}\n"
    )
    (pkg / "lonely.py").write_text(
        f"import torch\ndef pairwise2(x):\n    return {_SELF_DISTANCE}\n"
    )
    (pkg / "model.py").write_text(
        "import torch.nn as nn\nfrom pkg.geometry import pairwise\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return pairwise(x)\n"
    )
    config = {"select": ["NUM201"], "min-confidence": "low"}
    found = {Path(d.filename).name: d.confidence for d in check_paths([pkg], config)}
    assert found == {"geometry.py": "high", "lonely.py": "low"}


@pytest.mark.parametrize(
    "body",
    [
        "return torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1)).item()",
        "return torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1)).cpu().numpy()",
        "return float(torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1)).max())",
        "d = x.detach()\n    return torch.sqrt(((d[:, None] - d[None]) ** 2).sum(-1))",
        "return torch.sqrt(((x.data[:, None] - x.data[None]) ** 2).sum(-1))",
    ],
)
def test_no_gradient_no_sqrt_finding(body: str) -> None:
    code = f"import torch\ndef f(x):\n    {body}\n"
    assert _confidence(code, "NUM201") == []


def test_custom_autograd_function_bodies_have_no_gradient() -> None:
    code = """
    import torch
    class Dist(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    def dist_loss(x):
        return torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    """
    assert _confidence(code, "NUM201") == ["high"]


@pytest.mark.parametrize(
    ("path", "function", "expected"),
    [
        ("src/utils/metrics.py", "", True),
        ("pkg/torchmetrics/functional/ssim.py", "", True),
        ("src/eval_metric.py", "", True),
        ("src/model.py", "compute_metrics", True),
        ("src/model.py", "postprocess", True),
        ("src/model.py", "forward", False),
        ("src/geometric/conv.py", "", False),
        ("deepinv/sampling/sde_solver.py", "step", True),
        ("pkg/inference/generate.py", "", True),
        ("pkg/models/sampler.py", "", False),
        ("src/schedulers/dbim.py", "get_alpha_rho", True),
        ("pkg/models/diffusion.py", "ddim_step", True),
        ("pkg/models/diffusion.py", "p_sample_loop", True),
        ("pkg/models/diffusion.py", "q_sample", False),  # noising in the training loss
        ("pkg/models/vae.py", "sample", False),  # a reparameterised draw is differentiated
        ("src/models/scheduler_utils.py", "", False),
        ("unifold/data/data_ops.py", "get_pairwise_distances", True),
        ("pkg/datasets/shapes.py", "", True),
        ("pkg/models/data_parallel.py", "", False),
        ("kornia/augmentation/transforms.py", "", False),
    ],
)
def test_evaluation_code(path: str, function: str, expected: bool) -> None:
    assert evaluation_code(path, function) is expected


def test_numpy_values_are_not_tensors() -> None:
    code = """
    import numpy as np
    import torch
    def a(sizes: np.ndarray):
        return sizes / sizes.sum()
    def b(t):
        sizes = t.cpu().numpy()
        return sizes / sizes.sum()
    def c(t):
        return t / t.sum()
    """
    assert _confidence(code, "NUM202") == ["low"]


def test_guards() -> None:
    code = """
    import torch
    def asserted(x, s):
        m = s > 0
        assert m.sum() > 0
        return (x * m).sum() / m.sum()
    def early(x, s):
        m = s > 0
        if m.sum() == 0:
            return x.new_zeros(())
        return (x * m).sum() / m.sum()
    def emptiness(x, s):
        m = s > 0
        if not m.any():
            return x.new_zeros(())
        return (x * m).sum() / m.sum()
    def unguarded(x, s):
        m = s > 0
        return (x * m).sum() / m.sum()
    """
    assert _confidence(code, "NUM202") == ["high"]


def test_import_table() -> None:
    tree = ast.parse(
        "import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"
        "from .models import Net\nfrom .. import losses\nfrom . import *\n"
    )
    assert module_imports(tree, "pkg.sub.train") == {
        "torch": "torch",
        "nn": "torch.nn",
        "F": "torch.nn.functional",
        "Net": "pkg.sub.models.Net",
        "losses": "pkg.losses",
    }
    package = ast.parse("from .models import Net\n").body[0]
    assert import_one(package, "pkg.sub", package=True) == {"Net": "pkg.sub.models.Net"}  # type: ignore[arg-type]
    assert module_imports(ast.parse("from .models import Net\n")) == {}  # unknown module


def test_message_says_which_harm_applies() -> None:
    code = """
    import torch
    @torch.no_grad()
    def metric(x):
        return torch.log(torch.relu(x))
    def loss(x):
        return torch.log(torch.relu(x))
    """
    found = check_source(textwrap.dedent(code), "m.py", {"select": ["NUM103"]})
    assert [("no gradient" in d.message, "infinite gradient" in d.message) for d in found] == [
        (True, False),
        (False, True),
    ]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("0.99 * torch.sigmoid(x) + 0.005", 0.995),
        ("torch.sigmoid(x)", 1.0),
        ("x.clamp(0, 6) / 2", 3.0),
        ("torch.softmax(x, -1) * 0.5 - x.abs()", 0.5),
        ("x + 1", None),  # nothing known of x
        ("-2 * torch.sigmoid(x)", None),  # a negative scale flips the bound
    ],
)
def test_upper_bound(expr: str, expected: float | None) -> None:
    import libcst as cst

    from numlint.analysis.context import Context
    from numlint.analysis.zeros import upper_bound

    module = cst.parse_module(f"import torch\ny = {expr}\n")
    ctx = Context(module, "m.py")
    value = module.body[1].body[0].value
    found = upper_bound(ctx, ctx.value(value))
    assert found == pytest.approx(expected) if expected is not None else found is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # 1 - p with p <= 0.995 is positive: no entropy finding
        ("m = 0.99 * torch.sigmoid(x) + 0.005\n    return (1 - m) * (1 - m).log()", []),
        ("m = 0.99 * torch.sigmoid(x) + 0.01\n    return (1 - m) * (1 - m).log()", ["NUM109"]),
        # only the columns with a nonzero sum are kept
        ("c = x[:, x.sum(0) != 0]\n    p = c.sum(0) / c.sum()\n    return p * p.log()", []),
        ("c = x[:, x.sum(0) > 1]\n    p = c.sum(0) / c.sum()\n    return p * p.log()", ["NUM109"]),
    ],
)
def test_positive_values(body: str, expected: list[str]) -> None:
    code = f"import torch\ndef f(x):\n    {body}\n"
    found = check_source(code, "m.py", {"select": ["NUM109"], "min-confidence": "low"})
    assert [d.code for d in found] == expected


def test_log_of_random_draw_only_ranked_is_not_reported() -> None:
    """Sampling keys: a -inf key only sorts last; summed, it makes the result -inf."""
    ranked = """
    import torch
    def f(w, k):
        keys = torch.rand(w.shape).log() / w
        return keys.argsort(dim=-1)[:, :k]
    """
    spread = """
    import torch
    def f(w, k):
        keys = torch.rand(w.shape).log() / w
        return keys.sum()
    """
    assert _confidence(ranked, "NUM103") == []
    assert _confidence(spread, "NUM103") == ["high"]


def test_half_evidence_in_another_arm_does_not_reach() -> None:
    other_arm = """
    import torch
    def f(q, k, flash):
        if flash:
            return (q.half() @ k.half().T).float()
        else:
            return torch.softmax(q @ k.T, -1)
    """
    same_path = """
    import torch
    def f(q, k, flash):
        if flash:
            q = q.half()
        return torch.softmax(q @ k.T, -1)
    """
    model_in_other_arm = """
    import torch
    class M(torch.nn.Module):
        def forward(self, x, fast):
            if fast:
                self.half()
                return self.net(x)
            else:
                return torch.softmax(self.net(x), -1)
    """
    assert _confidence(other_arm, "NUM403") == []
    assert _confidence(same_path, "NUM403") == ["high"]
    assert _confidence(model_in_other_arm, "NUM403") == ["high"]  # `self.half()` persists


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("torch.sin(n) / n", ["high"]),  # sinc at 0
        ("(1 - n.cos()) / n**2", ["high"]),
        ("(n - n.sin()) / n**3", ["high"]),
        ("torch.sin(0.5 * n) / n", ["high"]),
        ("torch.sin(x) / n", ["low"]),  # the numerator vanishes elsewhere
        ("(2 - n.cos()) / n**2", ["low"]),  # not 0 at 0
    ],
)
def test_removable_singularity_is_high(expr: str, expected: list[str]) -> None:
    code = f"import torch\ndef f(x, v):\n    n = v.norm(dim=-1)\n    return {expr}\n"
    assert _confidence(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("x.numel() == 0", []),
        ("not x.nelement()", []),
        ("len(x) == 0", []),
        ("x.shape[0] == 0", []),
        ("y.numel() == 0", ["NUM202"]),  # another tensor is empty
        ("x.numel() == 1", ["NUM202"]),
    ],
)
def test_nothing_is_reported_in_a_branch_for_an_empty_tensor(test: str, expected: list[str]):
    code = (
        f"import torch\ndef f(x, y, m):\n    if {test}:\n        return (x * m).sum() / m.sum()\n"
    )
    found = check_source(code, "m.py", {"select": ["NUM202"], "min-confidence": "low"})
    code_m = code.replace("(x * m).sum() / m.sum()", "(x * m).sum() / x.sum()")
    found += check_source(code_m, "m.py", {"select": ["NUM202"], "min-confidence": "low"})
    assert [d.code for d in found] == expected * (1 if not expected else 2)


def test_every_arm_of_an_if_elif_chain_is_seen() -> None:
    code = """
    import torch
    def f(x, a, b):
        if a:
            p = x
        elif b:
            p = torch.softmax(x, -1)
        else:
            p = x * 2
        return torch.log(p)
    """
    found = check_source(textwrap.dedent(code), "m.py", {"select": ["NUM101"]})
    assert [(d.row, d.fix is None) for d in found] == [(10, True)]  # no fix: one arm only


def test_a_name_assigned_on_one_arm_keeps_its_earlier_value_on_the_other() -> None:
    code = """
    import torch
    def f(x, clamp):
        n = x.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        if clamp:
            n = x.norm(dim=-1, keepdim=True)
        return x / n
    """
    found = check_source(
        textwrap.dedent(code), "m.py", {"select": ["NUM202"], "min-confidence": "low"}
    )
    assert [d.row for d in found] == [7]


def test_self_referential_attributes_do_not_exhaust_the_stack() -> None:
    """`self.z = self.z * c + nu * s` refers to itself: every question about it ends."""
    code = """
    import torch
    class Sampler:
        def step(self, nu, t):
            self.z = self.z * torch.cos(t) + nu * torch.sin(t)
        def radius(self, nu):
            p = self.a @ self.z
            return torch.sqrt(p**2 + (self.a @ nu) ** 2)
    """
    found = check_source(textwrap.dedent(code), "m.py", {"min-confidence": "low"})
    assert [d.code for d in found] == ["NUM201"]


def test_an_arm_that_returns_leaves_nothing_behind() -> None:
    code = """
    import torch
    def f(x, training):
        if training:
            p = torch.softmax(x, -1)
        else:
            raise ValueError("no")
        return torch.log(p)
    """
    found = check_source(textwrap.dedent(code), "m.py", {"select": ["NUM101"]})
    assert [(d.row, d.fix is not None) for d in found] == [(8, True)]  # one arm: fixable


def test_anomaly_detection_is_left_alone_in_tests() -> None:
    code = (
        "import torch\ndef check(model, x):\n"
        "    with torch.autograd.set_detect_anomaly(True):\n        model(x).sum().backward()\n"
    )
    config = {"select": ["NUM507"]}
    found = {
        path: len(check_source(code, path, config))
        for path in ("pkg/train.py", "pkg/utils/unittests/model_tests_basic.py", "tests/m.py")
    }
    assert found == {
        "pkg/train.py": 1,
        "pkg/utils/unittests/model_tests_basic.py": 0,
        "tests/m.py": 0,
    }


@pytest.mark.parametrize(
    ("imports", "expected"),
    [
        ('"""A torch-like library."""\nimport numpy as np\n', []),  # NumPy arrays, not tensors
        ("import numpy as np\nimport torch\n", ["high"]),
        ("from torch import nn\n", ["high"]),
    ],
)
def test_files_of_host_arrays(imports: str, expected: list[str]) -> None:
    code = f"{imports}def grad_of_max(x, result):\n    comp = x.relu()\n    return comp / comp.sum(0)\n"
    assert _confidence(code, "NUM202") == expected
