"""`numlint check` behaves as a ruff user expects: optional dependencies missing, stdin with
--force-exclude, statistics as JSON, empty directories, fix summaries, symbolic links."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import HAZARD, run_cli

#: A safe fix (a deprecated AMP API) and a finding with only an unsafe fix (NUM101).
MIXED = HAZARD + "\nscaler = torch.cuda.amp.GradScaler()\n"

_WITHOUT = textwrap.dedent(
    """
    import importlib.abc, sys

    class Missing(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {blocked!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

    sys.meta_path.insert(0, Missing())
    from numlint.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def _run_without(blocked: set[str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """numlint's command line in an interpreter where `blocked` packages are not installed."""
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT.format(blocked=blocked), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_probe_without_torch_is_a_usage_error(project: Path):
    r = _run_without({"torch"}, "check", "--probe", "pkg", cwd=project)
    assert r.returncode == 2, r.stderr
    assert "--probe needs torch" in r.stderr and "numlint[probe]" in r.stderr
    assert "Traceback" not in r.stderr


def test_lsp_help_without_the_extra(project: Path):
    r = _run_without({"pygls", "lsprotocol"}, "lsp", "--help", cwd=project)
    assert r.returncode == 0, r.stderr
    assert "usage: numlint lsp" in r.stdout and "--debounce" in r.stdout
    r = _run_without({"pygls", "lsprotocol"}, "lsp", cwd=project)
    assert r.returncode == 2 and "pip install 'numlint[lsp]'" in r.stderr
    assert "Traceback" not in r.stderr
    assert run_cli("lsp", "--no-such-flag", cwd=project).returncode == 2


def test_force_exclude_applies_to_stdin_filename(project: Path):
    (project / "pyproject.toml").write_text('[tool.numlint]\nexclude = ["pkg"]\n')
    args = ("check", "-", "--stdin-filename", "pkg/bad.py")
    assert run_cli(*args, cwd=project, stdin=HAZARD).returncode == 1
    r = run_cli(*args, "--force-exclude", cwd=project, stdin=HAZARD)
    assert r.returncode == 0 and "NUM101" not in r.stdout, r.stdout
    r = run_cli(*args, "--force-exclude", "--fix", cwd=project, stdin=HAZARD)
    assert r.returncode == 0 and r.stdout == HAZARD


def test_statistics_as_json(project: Path):
    (project / "pkg" / "bad.py").write_text(MIXED)
    r = run_cli("check", "--statistics", "--output-format", "json", "pkg", cwd=project)
    assert json.loads(r.stdout) == [
        {"code": "NUM101", "name": "log-of-softmax", "count": 1, "fixable": False},
        {"code": "NUM505", "name": "deprecated-amp-api", "count": 1, "fixable": True},
    ]
    r = run_cli("check", "--statistics", "pkg", cwd=project)
    assert "NUM505\t[*] deprecated-amp-api" in r.stdout


def test_directory_without_python_files_warns(project: Path):
    (project / "empty").mkdir()
    (project / "empty" / "notes.txt").write_text("x")
    r = run_cli("check", "empty", cwd=project)
    assert r.returncode == 0
    assert "warning: No Python files found under the given path(s)" in r.stderr
    assert "No Python files" not in run_cli("check", "pkg/good.py", cwd=project).stderr


def test_fix_summary_counts_fixed_and_remaining(project: Path):
    (project / "pkg" / "bad.py").write_text(MIXED)
    r = run_cli("check", "--fix", "pkg", cwd=project)
    assert r.returncode == 1
    assert "Found 2 errors (1 fixed, 1 remaining)." in r.stdout.splitlines()
    assert 'torch.amp.GradScaler("cuda")' in (project / "pkg" / "bad.py").read_text()


def test_fix_writes_through_a_symbolic_link(project: Path, tmp_path_factory):
    target = tmp_path_factory.mktemp("elsewhere") / "model.py"
    target.write_text(MIXED)
    link = project / "pkg" / "link.py"
    link.symlink_to(target)
    r = run_cli("check", "--fix", "pkg/link.py", cwd=project)
    assert "(1 fixed, 1 remaining)" in r.stdout
    assert link.is_symlink() and link.resolve() == target
    assert 'torch.amp.GradScaler("cuda")' in target.read_text()
    assert not [p for p in link.parent.iterdir() if p.name.endswith(".numlint")]
