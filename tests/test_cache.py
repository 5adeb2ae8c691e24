"""The results cache and the process pool give the same findings as a plain run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import CLEAN, HAZARD, run_cli

from numlint import api


def _json(project: Path, *extra: str) -> list[dict]:
    r = run_cli("check", "--output-format", "json", *extra, "pkg", cwd=project)
    return json.loads(r.stdout)


def test_cache_matches_no_cache_and_follows_changes(project: Path):
    cold = _json(project)
    assert (project / ".numlint_cache").is_dir()
    warm = _json(project)
    assert warm == cold == _json(project, "--no-cache")
    # a changed file is re-linted
    (project / "pkg" / "good.py").write_text(HAZARD)
    assert len(_json(project)) == 2 == len(_json(project, "--no-cache"))
    (project / "pkg" / "good.py").write_text(CLEAN)
    assert _json(project) == cold
    # a configuration change is seen
    (project / "pyproject.toml").write_text('[tool.numlint]\nignore = ["NUM101"]\n')
    assert _json(project) == [] == _json(project, "--no-cache")
    (project / "pyproject.toml").write_text("[tool.numlint]\n")
    assert _json(project) == cold
    assert _json(project, "--select", "NUM102") == []


def test_cached_entry_is_really_used(project: Path, monkeypatch):
    monkeypatch.chdir(project)
    first = list(api.lint_paths(["pkg"], cache=True))
    calls = []
    monkeypatch.setattr(api, "_check_bytes", lambda job: calls.append(job) or [])
    second = list(api.lint_paths(["pkg"], cache=True))
    assert calls == [] and second == first


def test_clean_removes_cache(project: Path):
    _json(project)
    r = run_cli("clean", cwd=project)
    assert r.returncode == 0 and not (project / ".numlint_cache").exists()


def test_pool_matches_serial(tmp_path: Path, monkeypatch):
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(HAZARD if i % 3 == 0 else CLEAN)
    (tmp_path / "broken.py").write_text("def (:\n")
    monkeypatch.setattr(api, "PARALLEL_THRESHOLD", 8)
    parallel = list(api.lint_paths([tmp_path], jobs=2))
    serial = list(api.lint_paths([tmp_path], jobs=1))
    assert parallel == serial
    assert sum(len(d) for _, d in serial) == 15


def test_a_fully_cached_run_loads_neither_libcst_nor_the_rules(project: Path):
    code = (
        "import sys\n"
        "from numlint.cli import main\n"
        "code = main(['check', '--output-format', 'concise', 'pkg'])\n"
        "print(sorted(m for m in sys.modules if m == 'libcst' or m.startswith('numlint.rule')))\n"
    )
    first = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert "'libcst'" in first.stdout.splitlines()[-1]  # files were linted
    again = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert again.stdout.splitlines()[-1] == "[]"
    assert again.stdout.splitlines()[:-1] == first.stdout.splitlines()[:-1]  # same findings
