"""LSP `PublishDiagnosticsParams` per file (0-based positions), as a JSON array."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from numlint.diagnostic import Diagnostic
from numlint.output.common import RenderEnv, stress_note

SEVERITY_ERROR = 1
SEVERITY_WARNING = 2
SEVERITY_INFORMATION = 3


def severity(d: Diagnostic) -> int:
    """Error for NUM000 (the file could not be read or parsed), Information for a
    low-confidence finding (shown only with `min-confidence = "low"`), else Warning."""
    if d.code == "NUM000":
        return SEVERITY_ERROR
    return SEVERITY_INFORMATION if d.confidence == "low" else SEVERITY_WARNING


def _message(d: Diagnostic) -> str:
    text = f"{d.message} [confidence: {d.confidence}]" if d.confidence != "high" else d.message
    stressed = stress_note(d)
    return f"{text} [{stressed}]" if stressed else text


def to_lsp(d: Diagnostic) -> dict[str, Any]:
    """One diagnostic in LSP form (lsprotocol's Diagnostic, as JSON)."""
    return {
        "range": {
            "start": {"line": d.row - 1, "character": d.column - 1},
            "end": {"line": d.end_row - 1, "character": d.end_column - 1},
        },
        "severity": severity(d),
        "code": d.code,
        "codeDescription": {"href": d.url},
        "source": "numlint",
        "message": _message(d),
        "data": {
            "name": d.name,
            "fix": d.fix.to_json() if d.fix else None,
            "confidence": d.confidence,
            **({"stress": d.extra["stress"]} if "stress" in d.extra else {}),
        },
        **(
            {
                "relatedInformation": [
                    {
                        "location": {
                            "uri": uri(f),
                            "range": {
                                "start": {"line": r - 1, "character": c - 1},
                                "end": {"line": r - 1, "character": c - 1},
                            },
                        },
                        "message": m,
                    }
                    for f, r, c, m in d.related
                ]
            }
            if d.related
            else {}
        ),
    }


def uri(filename: str) -> str:
    if filename.startswith("<") or filename == "-":
        return filename
    return Path(filename).resolve().as_uri()


def render(diagnostics: Sequence[Diagnostic], env: RenderEnv) -> str:
    by_file: dict[str, list[dict[str, Any]]] = {name: [] for name in env.files or env.sources}
    for d in diagnostics:
        by_file.setdefault(d.filename, []).append(to_lsp(d))
    return json.dumps(
        [{"uri": uri(name), "diagnostics": diags} for name, diags in by_file.items()], indent=2
    )
