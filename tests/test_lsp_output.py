"""`numlint check --output-format lsp`: one `PublishDiagnosticsParams` per file, 0-based."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.protocol import default_converter

from numlint import api, cli

HAZARD = "import torch\n\ny = torch.log(torch.softmax(x, dim=-1))\n"
CONVERTER = default_converter()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    code = cli.main(["check", "--no-cache", "--output-format", "lsp", *args])
    return code, json.loads(capsys.readouterr().out)


def test_each_file_is_publish_diagnostics_params(tmp_path: Path, capsys):
    bad, good, broken = tmp_path / "bad.py", tmp_path / "good.py", tmp_path / "broken.py"
    bad.write_text(HAZARD)
    good.write_text("import torch\n")
    broken.write_text("def f(:\n")
    code, data = run(capsys, "--isolated", str(tmp_path))
    assert code == 1
    params = [CONVERTER.structure(p, lsp.PublishDiagnosticsParams) for p in data]
    by_uri = {p.uri: p for p in params}
    assert set(by_uri) == {f.resolve().as_uri() for f in (bad, good, broken)}
    assert not by_uri[good.resolve().as_uri()].diagnostics
    (num000,) = by_uri[broken.resolve().as_uri()].diagnostics
    assert num000.code == "NUM000" and num000.severity == lsp.DiagnosticSeverity.Error
    (d,) = by_uri[bad.resolve().as_uri()].diagnostics
    assert d.severity == lsp.DiagnosticSeverity.Warning and d.source == "numlint"
    assert d.code_description is not None and d.code_description.href.endswith("/NUM101.md")


def test_positions_are_zero_based_and_fixes_travel_along(tmp_path: Path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text(HAZARD)
    _, [entry] = run(capsys, "--isolated", str(bad))
    (expected,) = api.check_source(HAZARD, str(bad), {})
    (d,) = entry["diagnostics"]
    assert d["range"] == {
        "start": {"line": expected.row - 1, "character": expected.column - 1},
        "end": {"line": expected.end_row - 1, "character": expected.end_column - 1},
    }
    assert d["range"]["start"] == {"line": 2, "character": 4}
    assert d["message"] == expected.message
    assert d["data"]["name"] == "log-of-softmax"
    assert d["data"]["fix"]["applicability"] == "unsafe"


def test_stdin_uses_the_given_filename(tmp_path: Path, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(HAZARD))
    name = tmp_path / "from_stdin.py"
    code, [entry] = run(capsys, "--isolated", "--stdin-filename", str(name), "-")
    assert code == 1
    assert entry["uri"] == name.resolve().as_uri()
    assert [d["code"] for d in entry["diagnostics"]] == ["NUM101"]


def test_clean_run_is_still_valid_json(tmp_path: Path, capsys):
    good = tmp_path / "good.py"
    good.write_text("import torch\n")
    code, data = run(capsys, "--isolated", str(good))
    assert code == 0
    assert data == [{"uri": good.resolve().as_uri(), "diagnostics": []}]


def test_confidence_travels_and_low_is_information(tmp_path: Path, capsys):
    low = tmp_path / "low.py"
    low.write_text("import torch\n\ndef f(x):\n    return x / x.norm()\n")
    _, [entry] = run(capsys, "--isolated", str(low))
    assert entry["diagnostics"] == []  # low confidence is hidden by default
    _, [entry] = run(capsys, "--isolated", "--min-confidence", "low", str(low))
    (d,) = entry["diagnostics"]
    assert d["data"]["confidence"] == "low"
    assert CONVERTER.structure(d, lsp.Diagnostic).severity == lsp.DiagnosticSeverity.Information
    bad = tmp_path / "bad.py"
    bad.write_text(HAZARD)
    _, [entry] = run(capsys, "--isolated", str(bad))
    assert entry["diagnostics"][0]["data"]["confidence"] == "high"
    assert entry["diagnostics"][0]["severity"] == lsp.DiagnosticSeverity.Warning
