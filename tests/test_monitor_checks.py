"""The monitor's checks: one file each under numlint/monitor/checks, found without a registry."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from numlint.monitor.checks import Check, all_checks  # noqa: E402


def test_every_check_file_is_found_in_priority_order() -> None:
    folder = Path(__file__).resolve().parent.parent / "numlint" / "monitor" / "checks"
    files = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
    found = all_checks()
    assert {c.__module__.rsplit(".", 1)[1] for c in found} == files
    assert all(issubclass(c, Check) for c in found)
    priorities = [c.PRIORITY for c in found]
    assert priorities == sorted(priorities) and len(set(priorities)) == len(priorities)
