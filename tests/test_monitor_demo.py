"""The monitor demo (`make demo`): the NaN is named at its layer and step, and the report plots."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytest.importorskip("torch")


def test_demo_names_the_layer_and_step_and_the_report_plots(tmp_path: Path) -> None:
    demo = ROOT / "examples" / "monitor_demo.py"
    run = subprocess.run(
        [sys.executable, str(demo), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "module 'entropy', step 40, phase forward, nan" in run.stdout
    assert "aten::log" in run.stdout and "NUM101" in run.stdout
    pytest.importorskip("matplotlib")
    from numlint.monitor import report

    assert report.main([str(tmp_path / "events.jsonl"), "-o", str(tmp_path / "r.png")]) == 0
    assert (tmp_path / "r.png").stat().st_size > 0
