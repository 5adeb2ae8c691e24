"""Code that cannot run has no findings (numlint.analysis.liveness)."""

from __future__ import annotations

from pathlib import Path

import pytest

from numlint.api import check_paths, check_source

HAZARD = "torch.log(torch.softmax(x, -1))"
ALL = {"select": ["NUM101"], "min-confidence": "low"}


def _rows(source: str) -> list[int]:
    return [d.row for d in check_source(source, "<string>", ALL)]


@pytest.mark.parametrize(
    ("code", "rows"),
    [
        # a module constant bound once
        (f"DEBUG = False\ndef f(x):\n    if DEBUG:\n        return {HAZARD}\nf(1)\n", []),
        # ... rebound elsewhere: it can be true
        (
            f"DEBUG = False\ndef on():\n    global DEBUG\n    DEBUG = True\n"
            f"def f(x):\n    if DEBUG:\n        return {HAZARD}\nf(1)\n",
            [8],
        ),
        # ... set from outside through an attribute
        (f"DEBUG = False\ndef f(x):\n    if DEBUG:\n        return {HAZARD}\ncfg.DEBUG = 1\n", [5]),
        # a local constant, and the else arm of a true one
        (f"def f(x):\n    merge = False\n    if merge:\n        return {HAZARD}\nf(1)\n", []),
        (
            f"def f(x):\n    if True:\n        return x\n    else:\n        return {HAZARD}\nf(1)\n",
            [],
        ),
        (f"def f(x):\n    if not 0:\n        return {HAZARD}\nf(1)\n", [4]),
        # a default no caller overrides; one a caller overrides
        (f"def f(x, merge=False):\n    if merge:\n        return {HAZARD}\nf(1)\n", []),
        (
            f"def f(x, merge=False):\n    if merge:\n        return {HAZARD}\nf(1, merge=True)\n",
            [4],
        ),
        (f"def f(x, merge=False):\n    if merge:\n        return {HAZARD}\nf(1, True)\n", [4]),
        # a parameter None at every call site
        (f"def f(x, cf=None):\n    if cf is not None:\n        return {HAZARD}\nf(1)\n", []),
        ("def f(x, cf=None):\n    return torch.log(torch.softmax(cf, -1))\nf(1)\n", []),
        ("def f(x, cf=None):\n    return torch.log(torch.softmax(cf, -1))\nf(1, cf=2)\n", [3]),
        # ... but None as an option's value is live: `sum(axis=None)` sums everything
        (
            "def f(x, m, axis=None):\n    return torch.log(torch.softmax(x, axis))\nf(1, 2)\n",
            [3],
        ),
        (
            "def f(x, m, axis=None):\n    return torch.log(x.softmax(dim=axis))\nf(1, 2)\n",
            [3],
        ),
        # a default compared with a literal: never equal, or overridden by a caller
        (f"def f(x, mode=None):\n    if mode == 'l2':\n        return {HAZARD}\nf(1)\n", []),
        (f"def f(x, k=1):\n    if k > 1:\n        return {HAZARD}\nf(1)\n", []),
        (f"def f(x, k=1):\n    if k in (1, 2):\n        return {HAZARD}\nf(1)\n", [4]),
        (f"def f(x, k=1):\n    if k not in (1, 2):\n        return {HAZARD}\nf(1)\n", []),
        (
            f"def f(x, mode=None):\n    if mode == 'l2':\n        return {HAZARD}\nf(1, 'l2')\n",
            [4],
        ),
        (f"NORM = 'l1'\ndef f(x):\n    if NORM == 'l2':\n        return {HAZARD}\nf(1)\n", []),
        (f"def f(x, k=None):\n    if k > 1:\n        return {HAZARD}\nf(1)\n", [4]),
    ],
)
def test_dead_code_is_not_reported(code: str, rows: list[int]) -> None:
    assert _rows(f"import torch\n{code}") == rows


@pytest.mark.parametrize(
    ("code", "rows"),
    [
        # a private function nothing calls; one something calls
        (f"def _unused(x):\n    return {HAZARD}\n", []),
        (f"def _used(x):\n    return {HAZARD}\nprint(_used(1))\n", [3]),
        # a private method nothing calls; a public method (a framework may call it)
        (f"class M:\n    def _unused(self, x):\n        return {HAZARD}\n", []),
        (f"class M:\n    def forward(self, x):\n        return {HAZARD}\n", [4]),
        # a nested function nothing calls
        (f"def f(y):\n    def inner(x):\n        return {HAZARD}\n    return y\n", []),
        # a decorated function is registered by its decorator
        (f"@register\ndef _loss(x):\n    return {HAZARD}\n", [4]),
    ],
)
def test_unreferenced_private_code(tmp_path: Path, code: str, rows: list[int]) -> None:
    """A private or nested function whose name nothing in the project uses cannot run; a
    snippet without a file (`<string>`) is not judged so: it may be part of a larger program."""
    path = tmp_path / "mod.py"
    path.write_text(f"import torch\n{code}")
    assert [d.row for d in check_paths([path], ALL)] == rows
    assert _rows(f"import torch\n{code}") != [] or rows == []


def _project(tmp_path: Path, pyproject: str | None) -> Path:
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / ".git").mkdir()
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "losses.py").write_text(
        f"import torch\ndef used_loss(x):\n    return {HAZARD}\n"
        f"def old_loss(x):\n    return {HAZARD}\n"
    )
    (tmp_path / "train.py").write_text("from pkg.losses import used_loss\nprint(used_loss(1))\n")
    return pkg / "losses.py"


def test_unreferenced_function_in_a_script_project(tmp_path: Path) -> None:
    """Research code (no packaging): a function nothing in the project calls cannot run."""
    losses = _project(tmp_path, None)
    assert [d.row for d in check_paths([losses], ALL)] == [3]


def test_distribution_api_is_reachable(tmp_path: Path) -> None:
    """A packaged project's public functions are its API: reachable though unused inside."""
    losses = _project(tmp_path, '[project]\nname = "pkg"\n')
    assert [d.row for d in check_paths([losses], ALL)] == [3, 5]


def test_tool_only_pyproject_is_no_distribution(tmp_path: Path) -> None:
    losses = _project(tmp_path, "[tool.ruff]\nline-length = 100\n")
    assert [d.row for d in check_paths([losses], ALL)] == [3]


def test_files_outside_a_repository_are_importable(tmp_path: Path) -> None:
    """Without a repository checkout the files seen may not be the whole program (a
    notebook, another directory may import them): public functions stay reachable."""
    losses = _project(tmp_path, "[tool.numlint]\n")
    (tmp_path / ".git").rmdir()
    assert [d.row for d in check_paths([losses], ALL)] == [3, 5]


def test_private_class_of_a_partly_seen_package(tmp_path: Path) -> None:
    """A file importing a sibling module that is not on disk is part of a package numlint
    sees in part: its private classes may be used by the modules it does not see."""
    (tmp_path / ".git").mkdir()
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = f"import torch\nfrom .layers import Block\n\n\nclass _Net:\n    def forward(self, x):\n        return {HAZARD}\n"
    (pkg / "core.py").write_text(body)
    assert [d.row for d in check_paths([pkg / "core.py"], ALL)] == [7]
    (pkg / "layers.py").write_text("class Block:\n    pass\n")
    assert check_paths([pkg / "core.py"], ALL) == []
