"""The `numlint check` command line: exit codes, selection, fixes, formats, stdin."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import CLEAN, HAZARD, run_cli

from numlint.cli import main


def test_findings_exit_1_and_full_format(project: Path):
    r = run_cli("check", "pkg", cwd=project)
    assert r.returncode == 1, r.stderr
    assert "pkg/bad.py:5:12: NUM101" in r.stdout
    assert "^^^^" in r.stdout and "help: Replace with `log_softmax`" in r.stdout
    assert "Found 1 error." in r.stdout
    assert "good.py" not in r.stdout


def test_clean_exit_0(project: Path):
    r = run_cli("check", "pkg/good.py", cwd=project)
    assert r.returncode == 0
    assert "All checks passed!" in r.stdout


def test_missing_path_is_a_finding_and_the_rest_is_linted(project: Path):
    r = run_cli("check", "--output-format", "concise", "nope/", "pkg/bad.py", cwd=project)
    assert r.returncode == 1, r.stderr
    assert "nope/:1:1: NUM000 could not read: no such file or directory" in r.stdout
    assert "pkg/bad.py:5:12: NUM101" in r.stdout
    assert "Found 2 errors." in r.stdout and "Traceback" not in r.stderr
    r = run_cli("check", "nope.py", cwd=project)
    assert r.returncode == 1 and "nope.py:1:1: NUM000" in r.stdout
    r = run_cli("check", "--fix", "nope.py", "pkg/good.py", cwd=project)
    assert r.returncode == 1 and "nope.py:1:1: NUM000" in r.stdout


def test_bad_flag_exits_2(project: Path):
    assert run_cli("check", "--output-format", "xml", cwd=project).returncode == 2


def test_exit_zero_and_quiet(project: Path):
    r = run_cli("check", "--exit-zero", "-q", "pkg", cwd=project)
    assert r.returncode == 0
    assert "NUM101" in r.stdout and "Found" not in r.stdout


def test_concise(project: Path):
    r = run_cli("check", "--output-format", "concise", "pkg", cwd=project)
    assert r.stdout.splitlines()[0] == (
        "pkg/bad.py:5:12: NUM101 log of softmax: probabilities underflow to 0, giving -inf and "
        "NaN gradients; use `log_softmax` (or `F.cross_entropy` on the logits)"
    )


def test_json_schema_fields(project: Path):
    r = run_cli("check", "--output-format", "json", "pkg", cwd=project)
    data = json.loads(r.stdout)
    assert len(data) == 1
    f = data[0]
    assert f["code"] == "NUM101" and f["name"] == "log-of-softmax"
    assert f["filename"] == "pkg/bad.py"  # relative stays relative
    assert f["location"] == {"row": 5, "column": 12}
    assert f["end_location"] == {"row": 5, "column": 43}
    assert f["fix"]["applicability"] == "unsafe"
    assert f["fix"]["edits"] == [
        {
            "content": "F.log_softmax(x, dim=-1)",
            "location": {"row": 5, "column": 12},
            "end_location": {"row": 5, "column": 43},
        }
    ]
    assert f["url"].endswith("rules/NUM101.md")


def test_github_format(project: Path):
    r = run_cli("check", "--output-format", "github", "pkg", cwd=project)
    assert r.stdout.startswith("::error title=numlint (NUM101),file=pkg/bad.py,line=5,col=12,")


def test_select_ignore_by_code_prefix_name(project: Path):
    assert run_cli("check", "--ignore", "NUM101", "pkg", cwd=project).returncode == 0
    assert run_cli("check", "--ignore", "NUM1", "pkg", cwd=project).returncode == 0
    assert run_cli("check", "--ignore", "log-of-softmax", "pkg", cwd=project).returncode == 0
    assert run_cli("check", "--select", "NUM102", "pkg", cwd=project).returncode == 0
    assert run_cli("check", "--select", "ALL", "pkg", cwd=project).returncode == 1
    r = run_cli("check", "--select", "NUM102", "--extend-select", "NUM101", "pkg", cwd=project)
    assert r.returncode == 1


def test_unknown_selector_is_an_error(project: Path):
    for flag in ("--select", "--extend-select", "--ignore"):
        r = run_cli("check", flag, "NUM999", "pkg", cwd=project)
        assert r.returncode == 2, (flag, r.stdout)
        assert f"unknown rule selector `NUM999` in `{flag}`" in r.stderr
        assert "All checks passed" not in r.stdout
    assert run_cli("check", "--select", "NUM000,ALL", "pkg", cwd=project).returncode == 1


def test_statistics(project: Path):
    r = run_cli("check", "--statistics", "pkg", cwd=project)
    assert r.stdout.split() == ["1", "NUM101", "log-of-softmax"]


def test_fix_needs_unsafe_for_unsafe_fixes(project: Path):
    bad = project / "pkg" / "bad.py"
    r = run_cli("check", "--fix", "pkg", cwd=project)
    assert r.returncode == 1
    assert bad.read_text() == HAZARD
    r = run_cli("check", "--fix", "--unsafe-fixes", "pkg", cwd=project)
    assert r.returncode == 0, r.stdout
    assert "return F.log_softmax(x, dim=-1)" in bad.read_text()
    assert "Found 1 error (1 fixed, 0 remaining)." in r.stdout


def test_fix_preserves_mode_and_crlf(project: Path):
    bad = project / "pkg" / "bad.py"
    bad.write_bytes(HAZARD.replace("\n", "\r\n").encode())
    os.chmod(bad, 0o751)
    run_cli("check", "--fix", "--unsafe-fixes", "pkg/bad.py", cwd=project)
    data = bad.read_bytes()
    assert b"F.log_softmax" in data
    assert data.count(b"\r\n") == HAZARD.count("\n") and b"\n" not in data.replace(b"\r\n", b"")
    assert os.stat(bad).st_mode & 0o777 == 0o751
    assert not [p for p in bad.parent.iterdir() if p.name.endswith(".numlint")]


def test_diff_changes_nothing(project: Path):
    bad = project / "pkg" / "bad.py"
    r = run_cli("check", "--diff", "--unsafe-fixes", "pkg", cwd=project)
    assert r.returncode == 1
    assert "-    return torch.log(F.softmax(x, dim=-1))" in r.stdout
    assert "+    return F.log_softmax(x, dim=-1)" in r.stdout
    assert bad.read_text() == HAZARD
    assert run_cli("check", "--diff", "pkg/good.py", cwd=project).returncode == 0


def test_stdin(project: Path):
    r = run_cli("check", "-", "--stdin-filename", "snippet.py", cwd=project, stdin=HAZARD)
    assert r.returncode == 1 and "snippet.py:5:12: NUM101" in r.stdout
    r = run_cli("check", "-", "--fix", "--unsafe-fixes", cwd=project, stdin=HAZARD)
    assert "F.log_softmax(x, dim=-1)" in r.stdout
    assert run_cli("check", "-", cwd=project, stdin=CLEAN).returncode == 0


def test_syntax_error_is_num000_and_others_still_checked(project: Path):
    (project / "pkg" / "broken.py").write_text("def f(:\n    pass\n")
    r = run_cli("check", "--output-format", "json", "pkg", cwd=project)
    data = json.loads(r.stdout)
    codes = sorted((d["filename"], d["code"]) for d in data)
    assert codes == [("pkg/bad.py", "NUM101"), ("pkg/broken.py", "NUM000")]
    broken = next(d for d in data if d["code"] == "NUM000")
    assert broken["message"].startswith("could not parse")
    assert broken["location"]["row"] == 1
    assert "Traceback" not in r.stderr


def test_binary_and_bad_encoding_are_num000(project: Path):
    (project / "pkg" / "bin.py").write_bytes(b"\x00\x01\x02")
    (project / "pkg" / "latin.py").write_bytes("x = 'é'\n".encode("latin-1"))
    (project / "pkg" / "cookie.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\ny = torch.log(torch.softmax(x, 1))  # \xe9\n"
    )
    r = run_cli("check", "--output-format", "json", "pkg", cwd=project)
    found = {(Path(d["filename"]).name, d["code"]) for d in json.loads(r.stdout)}
    assert ("bin.py", "NUM000") in found
    assert ("latin.py", "NUM000") in found
    assert ("cookie.py", "NUM101") in found


def test_walk_skips_default_excludes(project: Path):
    for d in (".venv", "build", "site-packages", "__pycache__"):
        (project / d).mkdir()
        (project / d / "x.py").write_text(HAZARD)
    r = run_cli("check", "--output-format", "json", ".", cwd=project)
    assert {d["filename"] for d in json.loads(r.stdout)} == {"pkg/bad.py"}


def test_python_api_main_returns_codes(project: Path, capsys):
    assert main(["check", str(project / "pkg" / "good.py")]) == 0
    assert main(["check", str(project / "missing")]) == 1
    assert main(["check", "--select", "NUM999", str(project)]) == 2
    assert main(["rule", "NUM101"]) == 0
    assert "log-of-softmax" in capsys.readouterr().out
    assert main(["rule", "NUM999"]) == 2


def test_rules_listing():
    r = run_cli("rules", "--json")
    rows = json.loads(r.stdout)
    assert {"code": "NUM101", "name": "log-of-softmax"}.items() <= rows[0].items()
    assert run_cli("rules").stdout.startswith("NUM101  log-of-softmax")
