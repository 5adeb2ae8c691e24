"""`numlint probe`, `numlint check --probe`, and torch staying out of the static path."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NO_TORCH = """
import sys
from numlint.cli import main
import numlint.probe
rc = main(["check", sys.argv[1], "--isolated", "--select", "ALL", "--output-format", "json"])
assert rc == 1, rc
assert "torch" not in sys.modules, "the static path imported torch"
print("ok")
"""


def test_check_without_probe_never_imports_torch(tmp_path: Path):
    f = tmp_path / "m.py"
    f.write_text("import torch\ny = torch.log(torch.softmax(x, -1))\n")
    proc = subprocess.run(
        [sys.executable, "-c", NO_TORCH, str(f)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")


torch = pytest.importorskip("torch")

from numlint.probe.cli import main  # noqa: E402


def test_probe_prints_a_table(capsys):
    assert main(["NUM101"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NUM101 log-of-softmax: confirmed")
    assert "dtype     input               forward  gradient   fix" in out
    assert "float16   x = [[0.0, 18.0]]   -inf     NaN        finite" in out


def test_probe_by_name_as_json(capsys):
    assert main(["log-of-sigmoid", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["code"] == "NUM102" and data["verdict"] == "confirmed" and data["fix_cleared"]
    assert {r["dtype"] for r in data["rows"]} == {"float32", "float16", "bfloat16"}
    first = next(r for r in data["rows"] if r["hazard_fails"])
    assert first["fix_ok"] is True and first["forward"] == "-inf"


def test_probe_usage_errors(capsys):
    assert main(["NUM999"]) == 2
    assert "unknown rule" in capsys.readouterr().err
    assert main([]) == 2


def test_check_probe_json_has_a_probe_object(tmp_path: Path, capsys):
    from numlint.cli import main as numlint_main

    f = tmp_path / "m.py"
    f.write_text(
        textwrap.dedent(
            """
            import torch
            def f(x):
                return torch.log(torch.softmax(x.half(), -1))
            """
        )
    )
    args = ["check", str(f), "--probe", "--isolated", "--select", "NUM101"]
    assert numlint_main([*args, "--output-format", "json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found[0]["probe"] == {
        "verdict": "confirmed",
        "evidence": "float16: gradient -inf, NaN at x = [[0.0, 12.0]]; fix finite",
        "dtype": "float16",
    }


def test_probe_on_an_unavailable_device_is_a_usage_error(capsys):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    assert main(["NUM101", "--device", "cuda"]) == 2
    assert "not available" in capsys.readouterr().err


def test_probe_several_rules_as_json(capsys):
    main(["NUM101", "NUM102", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [d["code"] for d in data] == ["NUM101", "NUM102"]
