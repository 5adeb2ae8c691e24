"""The exported pre-commit hooks, run with `pre-commit try-repo` in a temporary git repository.

The hooks are tried from a committed copy of this working tree (`try-repo` only sees
committed and tracked files), installed by pre-commit itself into a temporary
PRE_COMMIT_HOME: numlint from that local path, libcst from the package index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from numlint import api

ROOT = Path(__file__).resolve().parent.parent
HAZARD = "import torch\n\ny = torch.log(torch.softmax(x, dim=-1))\n"
CLEAN = "import torch\n\ny = torch.log_softmax(x, dim=-1)\n"
SAFE = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git executable")


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=numlint", "-c", "user.email=numlint@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree's package and hook manifest, committed in a fresh repository."""
    repo = tmp_path_factory.mktemp("hooks_repo")
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, repo / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".numlint_cache")
    shutil.copytree(ROOT / "numlint", repo / "numlint", ignore=ignore)
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "hooks", cwd=repo)
    return repo


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One pre-commit cache for the module: the hook environment is built once."""
    home = tmp_path_factory.mktemp("pre_commit_home")
    return {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A user's repository with one hazardous, one clean and one non-Python file."""
    (tmp_path / "bad.py").write_text(HAZARD)
    (tmp_path / "good.py").write_text(CLEAN)
    (tmp_path / "notes.txt").write_text("nothing to lint\n")
    _git("init", "-q", cwd=tmp_path)
    _git("add", "-A", cwd=tmp_path)
    yield tmp_path


def try_repo(
    hooks_repo: Path, env: dict[str, str], project: Path, hook: str, *files: str
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks_repo), hook, "--color=never"]
    return subprocess.run(
        [*cmd, "--files", *files] if files else [*cmd, "--all-files"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_hazard_fails_clean_passes_no_files_passes(
    hooks_repo: Path, env: dict[str, str], project: Path
):
    bad = try_repo(hooks_repo, env, project, "numlint", "bad.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout and "bad.py" in bad.stdout and "NUM101" in bad.stdout
    good = try_repo(hooks_repo, env, project, "numlint", "good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
    none = try_repo(hooks_repo, env, project, "numlint", "notes.txt")
    assert none.returncode == 0, none.stdout + none.stderr
    assert "(no files to check)Skipped" in none.stdout


def test_the_hook_environment_has_no_torch(hooks_repo: Path, env: dict[str, str], project: Path):
    assert try_repo(hooks_repo, env, project, "numlint", "good.py").returncode == 0
    pythons = list(Path(env["PRE_COMMIT_HOME"]).glob("repo*/py_env-*/bin/python"))
    assert pythons, "pre-commit built no python environment"
    for python in pythons:
        probe = subprocess.run(
            [str(python), "-c", "import numlint.cli, importlib.util as u; "
             "print(u.find_spec('torch') is None)"],
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
        assert probe.stdout.strip() == "True", probe.stderr


def test_fix_hook_applies_safe_fixes_only(hooks_repo: Path, env: dict[str, str], project: Path):
    (project / "safe.py").write_text(SAFE)
    expected = api.fix_source(SAFE, str(project / "safe.py"), {}).source
    if expected == SAFE:
        pytest.skip("no safe fix for the sample any more")
    result = try_repo(hooks_repo, env, project, "numlint-fix", "safe.py", "bad.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert (project / "safe.py").read_text() == expected
    assert (project / "bad.py").read_text() == HAZARD  # its fix is unsafe: left alone
    assert "NUM101" in result.stdout
