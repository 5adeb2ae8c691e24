"""The probe worker the language server runs: one finding in, a verdict out, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

REQUEST = {
    "source": "import torch\ny = torch.log(torch.softmax(x, -1))\n",
    "path": "m.py",
    "code": "NUM101",
    "row": 2,
    "column": 5,
}


def _run(request: object, prelude: str = "") -> dict:
    code = f"{prelude}import runpy; runpy.run_module('numlint.probe.worker', run_name='__main__')"
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_confirms_the_finding() -> None:
    result = _run(REQUEST)
    assert result["verdict"] == "confirmed" and "fix finite" in result["evidence"]


def test_a_finding_no_longer_there() -> None:
    result = _run({**REQUEST, "row": 1})
    assert result == {"verdict": "not probeable", "evidence": "the finding is no longer reported"}


def test_without_torch_says_how_to_get_it() -> None:
    result = _run(REQUEST, prelude="import sys; sys.modules['torch'] = None; ")
    assert result["verdict"] == "not probeable" and "numlint[probe]" in result["evidence"]


def test_a_bad_request_is_a_verdict() -> None:
    result = _run({"source": 1})
    assert result["verdict"] == "not probeable" and "KeyError" in result["evidence"]
