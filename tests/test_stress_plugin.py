"""The numlint pytest plugin: the `numlint_stress` fixture, tested in pytest sessions of its own."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

pytest.importorskip("torch")

pytest_plugins = ["pytester"]


def _entry_point_installed() -> bool:
    return any(
        ep.name == "numlint" and ep.value == "numlint.pytest_plugin"
        for ep in metadata.entry_points(group="pytest11")
    )


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Sessions that load only the plugins they name: whichever metadata the working
    directory shows (an installed entry point, a stale egg-info), `-p numlint.pytest_plugin`
    then loads the plugin once."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester


PLUGIN = "numlint.pytest_plugin"

USER_TESTS = """
import torch
from torch import nn


class RowNorm(nn.Module):
    def forward(self, x):
        return x / x.norm(dim=-1, keepdim=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8, bias=False)
        self.norm = RowNorm()

    def forward(self, x):
        return self.norm(self.proj(x))


def test_net_is_stable(numlint_stress):
    torch.manual_seed(0)
    numlint_stress(Net(), torch.randn(8, 8), dtypes=["float32"])


def test_linear_is_stable(numlint_stress):
    torch.manual_seed(0)
    report = numlint_stress(nn.Linear(8, 2), torch.randn(8, 8), dtypes=["float32"])
    assert report.ok and len(report.runs) == 6
"""


def test_fixture_fails_the_test_with_the_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=USER_TESTS)
    result = pytester.runpytest("-p", PLUGIN)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*numlint stress: Net: 1 incident in 6 runs*",
            "*scenario*dtype*phase*module*kind*static finding*",
            "*zero rows*float32*forward*norm*nan*NUM202 test_model.py:7 division by a norm*",
            "*FAILED test_model.py::test_net_is_stable*",
        ]
    )
    # the failure is the report, not a traceback through numlint's code
    assert "numlint/stress/runner.py" not in result.stdout.str()


def test_fixture_needs_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=USER_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*fixture 'numlint_stress' not found*"])


def test_plugin_module_imports_no_torch() -> None:
    code = "import sys, numlint.pytest_plugin; print(sorted(m for m in sys.modules if m in ('torch', 'libcst')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(
    not _entry_point_installed(), reason="numlint installed without its entry point"
)
def test_entry_point_loads_by_name(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-p numlint` turns the plugin on where plugins are not loaded automatically."""
    pytester.makepyfile(test_model=USER_TESTS)
    result = pytester.runpytest_subprocess("-k", "linear")
    result.assert_outcomes(errors=1, deselected=1)
    result = pytester.runpytest_subprocess("-p", "numlint", "-k", "linear")
    result.assert_outcomes(passed=1, deselected=1)
