"""Probe one finding in a process of its own: `python -m numlint.probe.worker`.

Reads a JSON object from stdin (`source`, `path`, `code`, `row`, `column`), lints the source,
probes the finding at that place and prints `{"verdict", "evidence", "dtype"}` as JSON. The
language server runs it so that torch is never imported into the server and a probe never
blocks it. Without torch the verdict is "not probeable" and the evidence says how to get it.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def probe(request: dict[str, Any]) -> dict[str, Any]:
    """The verdict for the finding `request` names (see the module docstring)."""
    from numlint.api import check_source

    source, path = request["source"], request["path"]
    place = (request["code"], request["row"], request["column"])
    found = check_source(source, path, {"select": [request["code"]], "min-confidence": "low"})
    match = next((d for d in found if (d.code, d.row, d.column) == place), None)
    if match is None:
        return {"verdict": "not probeable", "evidence": "the finding is no longer reported"}
    try:
        import torch  # noqa: F401
    except ImportError:
        return {
            "verdict": "not probeable",
            "evidence": "torch is not installed here: pip install 'numlint[probe]'",
        }
    from numlint.probe import probe_diagnostic, verdict

    return verdict(probe_diagnostic(match, source))


def main() -> int:
    try:
        request = json.loads(sys.stdin.read())
        result = probe(request)
    except Exception as exc:  # a bad request or a probe bug: say so, never a traceback
        result = {"verdict": "not probeable", "evidence": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
