"""The editor and pre-commit recipes in docs/editors.md work as written."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
EDITORS = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
SAFE = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\ny = torch.log(torch.softmax(x, -1))\n"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", EDITORS, flags=re.DOTALL)


def test_precommit_example_uses_the_exported_hooks_and_no_made_up_tag():
    (block,) = [b for b in _blocks("yaml") if "numlint/numlint" in b]
    config = yaml.safe_load(block)
    (repo,) = config["repos"]
    exported = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {h["id"] for h in repo["hooks"]} <= exported
    assert repo["rev"] == "main" and "pre-commit autoupdate --repo" in EDITORS


def test_neovim_011_snippet_needs_no_plugin():
    section = EDITORS[EDITORS.index("### Neovim") : EDITORS.index("### Helix")]
    assert "lspconfig" not in section
    assert 'vim.lsp.enable("numlint")' in section


@pytest.mark.skipif(shutil.which("nvim") is None, reason="needs Neovim")
def test_neovim_recipes_lint_and_fix_on_save(tmp_path: Path):
    """The 0.7-0.10 set-up and the fix-on-save recipe, run in a headless Neovim: diagnostics
    arrive, the file is written with the safe fix, and the buffer is left unmodified."""
    start, fix = [b for b in _blocks("lua") if "start_client" in b or "BufWritePre" in b]
    bindir = Path(sys.executable).parent
    init = tmp_path / "init.lua"
    init.write_text(f'vim.env.PATH = "{bindir}:" .. vim.env.PATH\n{start}\n{fix}\n')
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.numlint]\n")
    (project / "safe.py").write_text(SAFE)
    codes = "vim.tbl_map(function(d) return d.code end, vim.diagnostic.get(0))"
    r = subprocess.run(
        ["nvim", "--headless", "-u", str(init), "safe.py",
         "-c", "sleep 4",
         "-c", f"lua io.stderr:write(table.concat({codes}, ',') .. '\\n')",
         "-c", "write",
         "-c", "lua io.stderr:write('modified=' .. tostring(vim.bo.modified) .. '\\n')",
         "-c", "qa!"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "NUM505" in r.stderr and "NUM101" in r.stderr, r.stderr
    assert "modified=false" in r.stderr, r.stderr
    text = (project / "safe.py").read_text()
    assert 'torch.amp.GradScaler("cuda")' in text  # the safe fix, written
    assert "torch.log(torch.softmax(x, -1))" in text  # the unsafe one is not applied
