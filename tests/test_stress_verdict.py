"""`numlint check --stress-report`: the findings a stress report confirmed, in every output
format and in the editor; matching after edits; bad report files. No torch needed here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from numlint.diagnostic import Diagnostic
from numlint.output import RenderEnv, formats
from numlint.stress.report import (
    ExercisedClass,
    LinkedFinding,
    StressIncident,
    StressReport,
    StressRun,
)
from numlint.stress.verdict import annotate

MODEL = """\
import torch
from torch import nn


class RowNorm(nn.Module):
    def forward(self, x):
        return x / x.norm(dim=-1, keepdim=True)


class Score(nn.Module):
    def forward(self, x):
        return torch.log(torch.sigmoid(x))


class Unused(nn.Module):
    def forward(self, x):
        return torch.log(torch.softmax(x, -1))
"""
NORM_TEXT = "return x / x.norm(dim=-1, keepdim=True)"


def _report(path: Path, row: int = 7) -> StressReport:
    """A report as `numlint.stress` writes it: zero rows broke RowNorm (float32, float16);
    RowNorm and Score ran."""
    found = LinkedFinding(
        "NUM202", "norm-division", "division by a norm", str(path), row, 16, "low", NORM_TEXT
    )
    incidents = [
        StressIncident("zero rows", d, "forward", "norm", "nan", findings=(found,))
        for d in ("float32", "float16")
    ]
    runs = [StressRun("zero rows", "float32", "failed"), StressRun("as given", "float32", "ok")]
    exercised = [
        ExercisedClass(str(path), "RowNorm", ("norm",)),
        ExercisedClass(str(path), "Score", ("score",)),
    ]
    return StressReport("Net", runs, incidents, exercised)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL)
    _report(tmp_path / "model.py").save(tmp_path / "report.json")
    return tmp_path


def _check(project: Path, *args: str) -> tuple[int, str, str]:
    out = run_cli("check", "--no-cache", "--min-confidence", "low", "model.py", *args, cwd=project)
    return out.returncode, out.stdout, out.stderr


def test_full_output_marks_the_confirmed_finding(project: Path) -> None:
    code, out, err = _check(project, "--stress-report", "report.json")
    assert code == 1, err
    blocks = out.split("\n\n")
    norm = next(b for b in blocks if "NUM202" in b)
    assert "= stress: confirmed in your model: zero rows (float32, float16)" in norm
    score = next(b for b in blocks if "NUM102" in b)
    assert "= stress: not confirmed (ran in your model as 'score' in 2 runs: float32" in score
    unused = next(b for b in blocks if "NUM101" in b)
    assert "stress:" not in unused  # its class never ran: no verdict


def test_concise_json_sarif_lsp_carry_the_verdict(project: Path) -> None:
    _, out, _ = _check(project, "--stress-report", "report.json", "--output-format", "concise")
    line = next(x for x in out.splitlines() if "NUM202" in x)
    assert "[stress: confirmed in your model: zero rows (float32, float16)]" in line

    _, out, _ = _check(project, "--stress-report", "report.json", "--output-format", "json")
    by_code = {d["code"]: d for d in json.loads(out)}
    stress = by_code["NUM202"]["stress"]
    assert stress["verdict"] == "confirmed"
    assert [i["dtype"] for i in stress["incidents"]] == ["float32", "float16"]
    assert by_code["NUM102"]["stress"]["verdict"] == "not confirmed"
    assert "stress" not in by_code["NUM101"]

    _, out, _ = _check(project, "--stress-report", "report.json", "--output-format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    props = {r["ruleId"]: r["properties"] for r in results}
    assert props["NUM202"]["stress"]["verdict"] == "confirmed"

    _, out, _ = _check(project, "--stress-report", "report.json", "--output-format", "lsp")
    (published,) = json.loads(out)
    diag = next(d for d in published["diagnostics"] if d["code"] == "NUM202")
    assert diag["data"]["stress"]["verdict"] == "confirmed"
    assert "[stress: confirmed in your model: zero rows" in diag["message"]


def test_configured_report(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.numlint]\nstress-report = "report.json"\n')
    (project / "sub").mkdir()
    code, out, err = _check(project, "--output-format", "concise")
    assert "warning" not in err
    assert "[stress: confirmed in your model: zero rows" in out
    # a configured report that is not there: the same clear error as the option's
    (project / "pyproject.toml").write_text('[tool.numlint]\nstress-report = "gone.json"\n')
    code, out, err = _check(project)
    assert code == 2 and "gone.json: no such file" in err and "Traceback" not in err


def test_bad_report_type_in_config(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.numlint]\nstress-report = 3\n")
    code, _, err = _check(project)
    assert code == 2 and "`stress-report`" in err and "must be a path" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("[1, 2", "is not JSON"),
        ('{"format": "x"}', "not a numlint stress report"),
    ],
)
def test_bad_report_file_exits_2(project: Path, content: str | None, message: str) -> None:
    if content is not None:
        (project / "bad.json").write_text(content)
    code, out, err = _check(project, "--stress-report", "bad.json")
    assert code == 2
    assert message in err and "Traceback" not in err and out == ""


def _diag(path: Path, row: int) -> Diagnostic:
    return Diagnostic("NUM202", "norm-division", "m", str(path), row, 16, row, 48, confidence="low")


def test_matching_survives_lines_moved_but_not_changed(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    report = _report(path)
    moved = MODEL.replace("import torch\n", "import torch\nimport math\n\n\n")
    path.write_text(moved)
    (d,) = annotate([_diag(path, 10)], report, {str(path): moved})
    assert d.extra["stress"]["verdict"] == "confirmed"
    # the line itself changed: the old verdict no longer applies to it
    changed = MODEL.replace(NORM_TEXT, "return x / x.norm(dim=1, keepdim=True)")
    path.write_text(changed)
    (d,) = annotate([_diag(path, 7)], report, {str(path): changed})
    assert d.extra.get("stress", {}).get("verdict") != "confirmed"


def test_other_files_and_codes_are_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    other = tmp_path / "other.py"
    other.write_text(MODEL)
    report = _report(path)
    wrong_code = Diagnostic("NUM201", "x", "m", str(path), 7, 16, 7, 48)
    found = annotate([_diag(other, 7), wrong_code], report, {})
    assert found[0].extra == {}  # another file: the report says nothing of it
    # another rule on the confirmed line: its code ran, but no incident confirms it
    assert found[1].extra["stress"]["verdict"] == "not confirmed"


def test_lsp_server_shows_the_configured_report(project: Path) -> None:
    pytest.importorskip("pygls")
    from numlint.lsp.server import lint_document

    (project / "pyproject.toml").write_text(
        '[tool.numlint]\nstress-report = "report.json"\nmin-confidence = "low"\n'
    )
    uri = (project / "model.py").as_uri()
    snap = lint_document(uri, 1, MODEL)
    norm = next(d for d in snap.diagnostics if d.code == "NUM202")
    assert norm.extra["stress"]["verdict"] == "confirmed"
    (project / "report.json").unlink()
    from numlint.config import clear_cache

    clear_cache()
    snap = lint_document(uri, 2, MODEL)
    assert all("stress" not in d.extra for d in snap.diagnostics)
    assert any("no such file" in w for w in snap.warnings)


def test_render_without_a_report_is_unchanged(tmp_path: Path) -> None:
    d = _diag(tmp_path / "m.py", 1)
    for name, render in formats().items():
        assert "stress" not in render([d], RenderEnv()), name


def test_verdicts_set_the_confidence_the_default_view_uses(project: Path) -> None:
    """Without --min-confidence: the confirmed NUM202 is shown (high), the NUM102 that
    ran without an incident is refuted (low, hidden), the unexercised NUM101 keeps its grade."""
    args = ("check", "--no-cache", "--output-format", "json", "model.py")
    judged = run_cli(*args, "--stress-report", "report.json", cwd=project)
    grades = {d["code"]: d["confidence"] for d in json.loads(judged.stdout)}
    assert grades == {"NUM202": "high", "NUM101": "high"}
    plain = run_cli(*args, cwd=project)
    # NUM202 (a layer's input divided by its own norm) is medium: shown with or without it
    assert {d["code"] for d in json.loads(plain.stdout)} >= {"NUM101", "NUM102"}


def test_a_loss_finding_is_not_refuted_by_a_run_without_nan(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    loss = Diagnostic("NUM301", "cross-entropy-on-softmax", "m", str(path), 12, 16, 12, 40)
    (judged,) = annotate([loss], _report(path), {})
    assert judged.extra["stress"]["verdict"] == "not confirmed"
    assert judged.confidence == "high"
    (norm,) = annotate([_diag(path, 12)], _report(path), {})  # a NaN hazard in the same class
    assert norm.confidence == "low"
