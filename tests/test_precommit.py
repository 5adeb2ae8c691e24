"""The exported pre-commit hooks, run with `pre-commit try-repo` in a temporary git repository.

`try-repo` builds a fresh hook environment on every call (numlint installed from the local
path, libcst from the package index), so everything is checked in one call: the hooks
repository is a committed copy of this working tree whose manifest holds the exported hooks
unchanged plus copies of `numlint` restricted to one clean file and to no file at all, and
a hook that looks for torch in the same environment.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from numlint import api

ROOT = Path(__file__).resolve().parent.parent
HAZARD = "import torch\n\ny = torch.log(torch.softmax(x, dim=-1))\n"
CLEAN = "import torch\n\ny = torch.log_softmax(x, dim=-1)\n"
SAFE = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
NO_TORCH = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git executable")


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=numlint", "-c", "user.email=numlint@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _hooks_repo(repo: Path) -> None:
    """This working tree's package and manifest, committed; plus the test-only hooks."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, repo / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".numlint_cache")
    shutil.copytree(ROOT / "numlint", repo / "numlint", ignore=ignore)
    manifest = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in manifest] == ["numlint", "numlint-fix"]
    check = next(h for h in manifest if h["id"] == "numlint")
    manifest += [
        {**check, "id": "clean-file", "name": "clean-file", "files": r"^good\.py$"},
        {**check, "id": "no-files", "name": "no-files", "files": r"^nothing-matches$"},
        {
            **check,
            "id": "no-torch",
            "name": "no-torch",
            "entry": f'python -c "{NO_TORCH}"',
            "pass_filenames": False,
            "always_run": True,
        },
    ]
    (repo / ".pre-commit-hooks.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "hooks", cwd=repo)


_STATUS = re.compile(
    r"^(?P<name>.+?)\.{3,}(?:\(no files to check\))?(?P<status>Passed|Failed|Skipped)$"
)


def _report(output: str) -> tuple[dict[str, str], dict[str, str]]:
    """(hook name -> status, hook id -> what a failing hook printed) from pre-commit's output."""
    statuses: dict[str, str] = {}
    printed: dict[str, str] = {}
    current: str | None = None
    for line in output.splitlines():
        m = _STATUS.match(line)
        if m:
            statuses[m.group("name")] = m.group("status")
            current = None
        elif line.startswith("- hook id: "):
            current = line.removeprefix("- hook id: ").strip()
            printed[current] = ""
        elif current is not None:
            printed[current] += line + "\n"
    return statuses, printed


def test_hooks_with_try_repo(tmp_path: Path):
    hooks, project = tmp_path / "hooks", tmp_path / "project"
    hooks.mkdir()
    project.mkdir()
    _hooks_repo(hooks)
    (project / "bad.py").write_text(HAZARD)
    (project / "good.py").write_text(CLEAN)
    (project / "safe.py").write_text(SAFE)
    (project / "notes.txt").write_text("nothing to lint\n")
    _git("init", "-q", cwd=project)
    _git("add", "-A", cwd=project)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PRE_COMMIT_COLOR": "never"}
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), "--all-files"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    statuses, printed = _report(result.stdout)
    assert statuses == {
        "numlint": "Failed",  # a hazard fails the hook...
        "numlint (apply safe fixes)": "Failed",
        "clean-file": "Passed",  # a clean file passes
        "no-files": "Skipped",  # no files passes
        "no-torch": "Passed",  # the environment pre-commit built for the hooks has no torch
    }, report
    assert "no-files...(no files to check)Skipped" in re.sub(r"\.{3,}", "...", report)
    # ...and shows the finding
    assert "bad.py" in printed["numlint"] and "NUM101" in printed["numlint"], report
    assert "good.py:" not in printed["numlint"]
    # numlint-fix applied the safe fix, left the unsafe one, and reported what is left
    assert "NUM101" in printed["numlint-fix"], report
    assert (project / "safe.py").read_text() == api.fix_source(SAFE, "safe.py", {}).source
    assert (project / "safe.py").read_text() != SAFE
    assert (project / "bad.py").read_text() == HAZARD


def _local_hooks() -> dict[str, dict]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}


def test_own_code_passes_the_own_hook():
    """The repository's own `numlint` hook (and `make test`) pass on a clean checkout: the
    hazards numlint demonstrates on purpose are ignored per file, with the reason."""
    hook = _local_hooks()["numlint"]
    files = subprocess.run(
        ["git", "ls-files", "numlint", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    files = [f for f in files if re.search(hook["files"], f) and f.endswith((".py", ".pyi"))]
    assert files
    entry = hook["entry"].split()
    assert entry[:2] == [".venv/bin/numlint", "check"]
    r = subprocess.run(
        [sys.executable, "-m", "numlint", *entry[1:], "--no-cache", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "numlint", "check", "--no-cache", "numlint", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "numlint check --no-cache numlint tests benchmarks" in (ROOT / "Makefile").read_text()


def test_license_is_an_spdx_expression():
    """`project.license` as a table is deprecated by setuptools (a warning on every build)."""
    from numlint.config import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
