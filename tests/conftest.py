"""Shared test helpers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

HAZARD = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F

    def f(x):
        return torch.log(F.softmax(x, dim=-1))
    """
)
CLEAN = "import torch\n\ndef f(x):\n    return torch.log_softmax(x, dim=-1)\n"


def run_cli(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess:
    """Run `python -m numlint` as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "numlint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small project: one hazardous file, one clean file."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(HAZARD)
    (tmp_path / "pkg" / "good.py").write_text(CLEAN)
    return tmp_path


#: A model file whose Head.forward has a static NUM101 finding (for the monitor's tie-back).
HEAD_WITH_FINDING = """
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return torch.log(torch.softmax(self.proj(x) * 1000.0, -1))
"""


def load_module(path: Path, source: str, name: str):
    """Write `source` to `path` and import it as module `name` (test code only)."""
    import importlib.util

    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def one_torch_thread():
    """Small CPU torch tests: intra-op threads only add contention under xdist."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
