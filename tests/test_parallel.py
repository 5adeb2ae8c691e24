"""The process pool hands each project's files to one worker, and finds what a plain run finds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import CLEAN, HAZARD

from numlint import api
from numlint import cache as cache_mod
from numlint.cache import _DEPS

FIXTURE = Path(__file__).parent / "fixtures" / "crossfile"


def _projects(tmp_path: Path, sizes: list[int]) -> list[Path]:
    """Projects (a pyproject.toml each) holding the cross-file fixture and `n` more files."""
    roots = []
    for p, n in enumerate(sizes):
        root = tmp_path / f"proj{p}"
        shutil.copytree(FIXTURE, root / "pkg")
        (root / "pyproject.toml").write_text("[tool.numlint]\n")
        for i in range(n):
            (root / "pkg" / f"m{i}.py").write_text(HAZARD if (i + p) % 3 == 0 else CLEAN)
        roots.append(root)
    return roots


def test_tasks_keep_a_project_together_and_cover_every_file_once(tmp_path: Path) -> None:
    roots = _projects(tmp_path, [30, 2, 9])
    names = [str(f) for f in api.iter_files([tmp_path])]
    names.append("<stdin>")
    tasks = api._by_project(names, 2)
    assert sorted(i for t in tasks for i in t) == list(range(len(names)))
    most = -(-len(names) // 8)
    assert all(0 < len(t) <= most for t in tasks)
    assert [len(t) for t in tasks] == sorted((len(t) for t in tasks), reverse=True)
    for t in tasks:
        owners = {next((r for r in roots if names[i].startswith(str(r))), None) for i in t}
        assert len(owners) == 1
        assert t == sorted(t)  # a project's files in their order
    big = [t for t in tasks if names[t[0]].startswith(str(roots[0]))]
    assert most == 8 and [len(t) for t in big] == [8, 8, 8, 8, 4]  # 36 files, in 8s


def test_no_files_no_tasks() -> None:
    assert api._by_project([], 2) == []


def test_pool_matches_serial_across_projects(tmp_path: Path, monkeypatch) -> None:
    _projects(tmp_path / "src", [25, 3, 11, 0])
    (tmp_path / "src" / "proj1" / "pkg" / "broken.py").write_text("def (:\n")
    monkeypatch.setattr(api, "PARALLEL_THRESHOLD", 8)
    # no status keys: whether a file is older than RACY_NS depends on how long the runs
    # before took (a loaded machine), and content keys are what the runs must agree on
    monkeypatch.setattr(cache_mod, "RACY_NS", 10**18)
    runs = {}
    for jobs in (1, 2, 3):
        cache = tmp_path / f"cache{jobs}"
        monkeypatch.setenv("NUMLINT_CACHE_DIR", str(cache))
        found = list(
            api.lint_paths([tmp_path / "src"], {"min-confidence": "low"}, jobs=jobs, cache=True)
        )
        (entries,) = cache.glob("results-*.json")
        runs[jobs] = found, json.loads(entries.read_text())
    assert runs[2] == runs[1] == runs[3]
    found, entries = runs[1]
    assert [f for f, _ in found] == list(api.iter_files([tmp_path / "src"]))
    assert any(d.related for _, ds in found for d in ds)  # cross-file findings are among them
    assert any(k.endswith(_DEPS) for k in entries)  # with the files they depend on
