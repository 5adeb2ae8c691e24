"""Project-level float16 evidence (numlint.analysis.precision_mode) in the NUM4xx rules."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numlint
from numlint.analysis.precision_mode import AUTOCAST, HALF, scan_text

_MODEL = """
import torch
import torch.nn.functional as F
from torch import nn

EPS = 1e-8


class Attention(nn.Module):
    def forward(self, q, k, mask):
        s = q @ k.transpose(-2, -1)
        s = s.masked_fill(~mask, -1e10)
        return s.softmax(-1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.attn = Attention()

    def forward(self, x, mask):
        h = self.proj(x)
        a = self.attn(h, h, mask)
        s = h / (h.amax(-1, keepdim=True) + EPS)
        g = h.clamp(min=1e-20).log()
        n = F.normalize(h, dim=-1, eps=1e-12)
        return (a.sum() + s + g + n).mean()
"""

_AMP_TRAIN = """
import torch
from model import Net

def main(data):
    model = Net().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for x, mask, y in data:
        with torch.autocast("cuda"):
            loss = (model(x, mask) - y).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
"""

_PLAIN_TRAIN = """
import torch
from model import Net

def main(data):
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x, mask, y in data:
        loss = (model(x, mask) - y).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
"""

_BF16_TRAIN = """
import torch
from model import Net

def main(data):
    model = Net().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x, mask, y in data:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = (model(x, mask) - y).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
"""


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def _findings(root: Path, name: str = "model.py") -> list[tuple[int, str, str]]:
    found = numlint.check_paths([root / name], config={"min-confidence": "low"})
    return sorted((d.row, d.code, d.confidence or "high") for d in found if d.code[:5] == "NUM40")


def test_amp_training_script_reports_model_hazards_medium(tmp_path: Path) -> None:
    root = _project(tmp_path, {"model.py": _MODEL, "train.py": _AMP_TRAIN})
    assert _findings(root) == [
        (11, "NUM402", "medium"),  # attention scores: float16 under autocast
        (24, "NUM401", "medium"),  # h / (max + 1e-8): the sum is float16
        (25, "NUM401", "medium"),  # clamp(min=1e-20)
    ]  # F.normalize and softmax run in float32 under autocast: not reported
    found = numlint.check_paths([root / "model.py"], config={"min-confidence": "low"})
    message = next(d.message for d in found if d.code == "NUM402")
    assert "the project trains with float16 autocast (GradScaler in train.py:7)" in message


def test_without_mixed_precision_as_before(tmp_path: Path) -> None:
    root = _project(tmp_path, {"model.py": _MODEL, "train.py": _PLAIN_TRAIN})
    assert _findings(root) == []


def test_bfloat16_project_is_not_evidence(tmp_path: Path) -> None:
    root = _project(tmp_path, {"model.py": _MODEL, "train.py": _BF16_TRAIN})
    assert _findings(root) == []


def test_explicit_float32_stays_silent(tmp_path: Path) -> None:
    model = _MODEL.replace("s = q @ k.transpose(-2, -1)", "s = (q @ k.transpose(-2, -1)).float()")
    model = model.replace("h = self.proj(x)", "h = self.proj(x).float()")
    root = _project(tmp_path, {"model.py": model, "train.py": _AMP_TRAIN})
    assert _findings(root) == []


def test_autocast_disabled_stays_silent(tmp_path: Path) -> None:
    model = _MODEL.replace(
        "    def forward(self, q, k, mask):\n",
        "    @torch.autocast('cuda', enabled=False)\n    def forward(self, q, k, mask):\n",
    )
    root = _project(tmp_path, {"model.py": model, "train.py": _AMP_TRAIN})
    assert [f for f in _findings(root) if f[1] == "NUM402"] == []


def test_half_model_reports_softmax_and_normalize(tmp_path: Path) -> None:
    train = """
    import torch
    from model import Net

    def main(data):
        model = Net().cuda().half()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-4)
        for x, mask, y in data:
            loss = (model(x, mask) - y).pow(2).mean()
            loss.backward()
            opt.step()
    """
    root = _project(tmp_path, {"model.py": _MODEL, "train.py": train})
    assert _findings(root) == [
        (11, "NUM402", "medium"),
        # NUM403 takes the project's evidence only where the file names half precision
        (24, "NUM401", "medium"),
        (25, "NUM401", "medium"),
        (26, "NUM401", "medium"),  # F.normalize's eps is float16 in a float16 model
    ]


def test_region_evidence_grades_as_before(tmp_path: Path) -> None:
    model = _MODEL.replace(
        "        self.attn = Attention()\n",
        "        self.attn = Attention()\n        self.half()\n",
    )
    root = _project(tmp_path, {"model.py": model, "train.py": _AMP_TRAIN})
    found = _findings(root)
    assert (11, "NUM402", "medium") in found  # Attention itself converts nothing
    assert (25, "NUM401", "high") in found  # the class converts itself: as today


def test_function_nothing_differentiates_is_low(tmp_path: Path) -> None:
    """A matmul's output is float16 under autocast: low where nothing differentiates it; an
    input mixed precision leaves in float32 is not a finding at all."""
    util = """
    import torch

    def scores(a, b, eps=1e-8):
        s = a @ b.T
        return s / (s.amax() + eps)

    def saturation(image, eps=1e-8):
        top, _ = image.max(-3)
        return (top - image.amin(-3)) / (top + eps)
    """
    root = _project(tmp_path, {"util.py": util, "train.py": _AMP_TRAIN, "model.py": _MODEL})
    assert _findings(root, "util.py") == [(5, "NUM401", "low")]


def test_scan_text_kinds() -> None:
    def kinds(code: str) -> list[tuple[str, str]]:
        return [(e.what, e.kind) for e in scan_text("f.py", textwrap.dedent(code))]

    assert kinds("scaler = torch.cuda.amp.GradScaler()") == [("GradScaler", AUTOCAST)]
    assert kinds("with torch.autocast('cuda'):\n    pass") == [("autocast", AUTOCAST)]
    assert kinds("with autocast(enabled=False):\n    pass") == []
    assert kinds("with torch.autocast('cpu'):\n    pass") == []
    assert kinds("with torch.autocast('cuda', dtype=torch.bfloat16):\n    pass") == []
    assert kinds("trainer = Trainer(precision='16-mixed')") == [("precision=16", AUTOCAST)]
    assert kinds("trainer = Trainer(precision='bf16-mixed')") == []
    assert kinds("acc = Accelerator(mixed_precision='fp16')") == [
        ('mixed_precision="fp16"', AUTOCAST)
    ]
    assert kinds("acc = Accelerator(mixed_precision='bf16')") == []
    assert kinds("args = TrainingArguments(out, fp16=True)") == [("fp16=True", AUTOCAST)]
    assert kinds("cfg = {'fp16': {'enabled': True}}") == [('"fp16" enabled', AUTOCAST)]
    assert kinds("p.add_argument('--fp16', action='store_true')") == [
        ("the --fp16 option", AUTOCAST)
    ]
    assert kinds("model.half()") == [("`model.half()`", HALF)]
    assert kinds("net = Net().cuda().half()") == [("`Net().cuda().half()`", HALF)]
    assert kinds("x = x.half()") == []  # a tensor
    assert kinds("model.to(torch.bfloat16)") == []
    assert kinds('doc = "use torch.cuda.amp.GradScaler() and model.half()"') == []
    assert kinds("# scaler = GradScaler()") == []


def test_model_library_scores_under_a_callers_autocast(tmp_path: Path) -> None:
    # no file of the project trains: its callers pick the dtype, and autocast makes the
    # attention scores float16; the float32-only eps guards stay silent
    root = _project(tmp_path, {"model.py": _MODEL})
    found = _findings(root)
    assert [f for f in found if f[1] == "NUM402"] == [(11, "NUM402", "medium")]
    assert [f for f in found if f[1] != "NUM402"] == []


def test_an_eps_literal_alone_triggers_the_rule(tmp_path: Path) -> None:
    """A file whose only NUM401 trigger is the literal's exponent (`1e-20`: `e-2`, looked
    for with the other `e-` digits in one search) is linted by it."""
    model = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x, mask):
            h = self.proj(x)
            return h.clamp(min=1e-20).log().mean()
    """
    root = _project(tmp_path, {"model.py": model, "train.py": _AMP_TRAIN})
    assert _findings(root) == [(12, "NUM401", "medium")]


def test_quick_filter_words_keep_their_boundary() -> None:
    """`autocast(` and `fp16=` are evidence where no letter, digit or `_` precedes them."""
    from numlint.analysis.precision_mode import may_hold_evidence

    for text in ("autocast(", "x = torch.autocast ('cuda')", "fp16=True", "{'fp16': 1}"):
        assert may_hold_evidence(text), text
    for text in ("my_autocast(", "xautocast(", "use_fp16=True", "2fp16=1", "autocast", "fp16"):
        assert not may_hold_evidence(text), text
