"""The Python API, the package surface, and that the static path never imports torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HAZARD

import numlint
from numlint.api import decode, fix_source


def test_check_source_returns_diagnostics():
    (d,) = numlint.check_source(HAZARD, "model.py")
    assert (d.code, d.name, d.filename, d.row, d.column) == (
        "NUM101",
        "log-of-softmax",
        "model.py",
        5,
        12,
    )
    assert d.fix is not None and d.fix.applicability == "unsafe"


def test_check_paths(project: Path):
    found = numlint.check_paths([project / "pkg"])
    assert [(Path(d.filename).name, d.code) for d in found] == [("bad.py", "NUM101")]
    with pytest.raises(FileNotFoundError):
        numlint.check_paths([project / "missing"])


def test_syntax_error_position():
    (d,) = numlint.check_source("import torch\nx = torch.log(torch.softmax(x, 1)\n")
    assert d.code == "NUM000" and d.message.startswith("could not parse") and d.row >= 2


def test_bom_and_cookie_decoding():
    text, enc, _ = decode("\ufeffimport torch\n".encode())
    assert text == "import torch\n" and enc == "utf-8-sig"
    text, enc, _ = decode(b"# coding: latin-1\nx = '\xe9'\n")
    assert "é" in text and enc == "iso-8859-1"
    with pytest.raises(numlint.api.SourceError):
        decode(b"x = '\xe9'\n")
    with pytest.raises(numlint.api.SourceError):
        decode(b"x = 1\x00\n")


def test_fix_source_is_idempotent():
    once = fix_source(HAZARD, unsafe=True)
    assert once.fixed == 1 and once.remaining == []
    twice = fix_source(once.source, unsafe=True)
    assert twice.fixed == 0 and twice.source == once.source


def test_fix_that_would_not_parse_is_refused(monkeypatch):
    from numlint import engine

    monkeypatch.setattr(
        engine, "apply_fixes", lambda src, diags, unsafe=False: (src + "def (:\n", 1)
    )
    result = fix_source(HAZARD, unsafe=True)
    assert result.error and result.source == HAZARD


def test_static_path_never_imports_torch(project: Path):
    code = (
        "import sys, numlint\n"
        "from numlint.cli import main\n"
        f"main(['check', '--output-format', 'json', {str(project)!r}])\n"
        "main(['rules'])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_python_dash_m_and_console_script():
    r = subprocess.run(
        [sys.executable, "-m", "numlint", "--version"], capture_output=True, text=True
    )
    assert r.stdout.strip() == f"numlint {numlint.__version__}"
    script = Path(sys.executable).with_name("numlint")
    if script.exists():
        r = subprocess.run([str(script), "rules"], capture_output=True, text=True)
        assert "NUM101" in r.stdout


def test_docs_check_detects_stale(tmp_path: Path):
    r = subprocess.run(
        [sys.executable, "-m", "numlint", "docs", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0
    page = tmp_path / "NUM101.md"
    text = page.read_text()
    assert (
        "# NUM101 `log-of-softmax`" in text
        and "## Use instead" in text
        and "## Why is this bad?" in text
    )
    page.write_text(text + "edited\n")
    r = subprocess.run(
        [sys.executable, "-m", "numlint", "docs", "--check", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "NUM101.md" in r.stderr


@pytest.mark.parametrize("top", [".", "./src", "src/", "src//pkg", "ABS"])
def test_walked_files_are_named_as_pathlib_names_them(tmp_path: Path, monkeypatch, top: str):
    """The walk names files by text, without a Path each; the names are still str(Path)."""
    for rel in ["src/a.py", "src/pkg/b.py", "src/pkg/deep/c.pyi", "top.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    top = str(tmp_path / "src") if top == "ABS" else top
    expected = sorted(
        str(Path(top) / Path(root).relative_to(top) / f)
        for root, _, files in os.walk(top)
        for f in files
    )
    names = [name for name, _ in numlint.api.lint_names([top])]
    assert sorted(names) == expected
    assert [str(p) for p in numlint.api.iter_files([top])] == names
