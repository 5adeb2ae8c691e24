"""SARIF 2.1.0: one run, the rules that fired in its driver, one result per finding."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from numlint import __version__
from numlint.diagnostic import Diagnostic
from numlint.output.common import RenderEnv

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(filename: str) -> str:
    p = Path(filename)
    return p.as_posix() if not p.is_absolute() else p.as_uri()


def _rule(code: str, name: str, url: str) -> dict[str, Any]:
    from numlint.rule import rule_by_selector  # only for SARIF: other formats need no rules

    rule = rule_by_selector(code)
    text = rule.summary() if rule else "The file could not be read or parsed."
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": text},
        "fullDescription": {"text": rule.MESSAGE if rule else text},
        "helpUri": url,
        "defaultConfiguration": {"level": "error" if code == "NUM000" else "warning"},
    }


def _level(d: Diagnostic) -> str:
    """error for NUM000, note for a low-confidence finding, else warning."""
    if d.code == "NUM000":
        return "error"
    return "note" if d.confidence == "low" else "warning"


def render(diagnostics: Sequence[Diagnostic], env: RenderEnv) -> str:
    rules: dict[str, dict[str, Any]] = {}
    for d in diagnostics:
        rules.setdefault(d.code, _rule(d.code, d.name, d.url))
    index = {code: i for i, code in enumerate(rules)}
    results = []
    for d in diagnostics:
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _level(d),
            "message": {"text": d.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(d.filename)},
                        "region": {
                            "startLine": d.row,
                            "startColumn": d.column,
                            "endLine": d.end_row,
                            "endColumn": d.end_column,
                        },
                    }
                }
            ],
        }
        result["properties"] = {"confidence": d.confidence}
        if "probe" in d.extra:
            result["properties"]["probe"] = d.extra["probe"]
        if "stress" in d.extra:
            result["properties"]["stress"] = d.extra["stress"]
        if d.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f)},
                        "region": {"startLine": r, "startColumn": c},
                    },
                    "message": {"text": m},
                }
                for i, (f, r, c, m) in enumerate(d.related)
            ]
        if d.fix is not None and d.fix.edits:
            result["fixes"] = [
                {
                    "description": {"text": d.fix.message},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": _uri(d.filename)},
                            "replacements": [
                                {
                                    "deletedRegion": {
                                        "startLine": e.row,
                                        "startColumn": e.column,
                                        "endLine": e.end_row,
                                        "endColumn": e.end_column,
                                    },
                                    "insertedContent": {"text": e.content},
                                }
                                for e in d.fix.edits
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "numlint",
                        "version": __version__,
                        "informationUri": "https://github.com/numlint/numlint",
                        "rules": list(rules.values()),
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2)
