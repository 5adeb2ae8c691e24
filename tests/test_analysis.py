"""Unit tests of numlint.analysis: evidence (confidence), gradients, arrays, names."""

from __future__ import annotations

import ast
import textwrap

import pytest

from numlint import check_source
from numlint.analysis.gradients import evaluation_code
from numlint.analysis.names import import_one, module_imports


def _confidence(code: str, rule: str) -> list[str]:
    found = check_source(textwrap.dedent(code), "m.py", {"select": [rule], "min-confidence": "low"})
    return [d.confidence for d in found]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("x / x.norm(dim=-1, keepdim=True)", ["low"]),  # a learned vector would need to be 0
        ("(x * m).sum() / m.sum()", ["high"]),  # weights that multiply the numerator
        ("x.sum() / (y > 0).sum()", ["high"]),  # a count of a comparison
        ("x.sum() / valid_mask.sum()", ["high"]),  # a mask by name
        ("x.sum() / attention_mask.sum()", ["low"]),  # a padding mask keeps one token
        ("x.sum() / x.relu().sum()", ["high"]),  # dead ReLUs
        ("(x - x.mean()) / x.std()", ["low"]),  # constant input only
        ("x / x.clamp(min=0)", ["high"]),  # clamped at exactly 0
    ],
)
def test_division_confidence(expr: str, expected: list[str]) -> None:
    code = f"import torch\ndef f(x, y, m, valid_mask, attention_mask):\n    return {expr}\n"
    assert _confidence(code, "NUM202") == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("torch.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))", ["high"]),
        ("torch.sqrt(((x.unsqueeze(1) - x.unsqueeze(0)) ** 2).sum(-1))", ["high"]),
        ("torch.sqrt(((x[i] - x[j]) ** 2).sum(-1))", ["low"]),  # gathered pairs
        ("torch.sqrt(((x - y) ** 2).sum(-1))", ["low"]),  # two tensors
        ("torch.sqrt((x ** 2).sum(-1))", ["low"]),  # a hand-written norm
        ("torch.sqrt(x.clamp(min=0))", ["high"]),
        ("torch.sqrt(torch.relu(x))", []),  # ReLU's backward selects 0: no NaN
        ("torch.sqrt(1 - x ** 2)", ["high"]),
        ("torch.sqrt(1 - x.clamp(-1 + 1e-6, 1 - 1e-6) ** 2)", []),
    ],
)
def test_sqrt_confidence(expr: str, expected: list[str]) -> None:
    code = f"import torch\ndef f(x, y, i, j):\n    return {expr}\n"
    assert _confidence(code, "NUM201") == expected


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
    def dist(x):
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
    def asserted(x, m):
        assert m.sum() > 0
        return (x * m).sum() / m.sum()
    def early(x, m):
        if m.sum() == 0:
            return x.new_zeros(())
        return (x * m).sum() / m.sum()
    def emptiness(x, m):
        if not m.any():
            return x.new_zeros(())
        return (x * m).sum() / m.sum()
    def unguarded(x, m):
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
