"""Fixture corpora of the training-loop (NUM5xx) and opinionated (NUM9xx) rules.

Each `tests/fixtures/<CODE>.py` marks the lines its rule must flag with `# expect: <CODE>`;
every other line must stay silent for that rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst
import pytest

from numlint import check_source
from numlint.api import fix_source

FIXTURES = Path(__file__).parent / "fixtures"
CODES = ["NUM501", "NUM502", "NUM503", "NUM504", "NUM505", "NUM506", "NUM507", "NUM901"]
_EXPECT = re.compile(r"#\s*expect:\s*(NUM\d{3}(?:\s*,\s*NUM\d{3})*)")


def _expected(text: str, code: str) -> set[int]:
    rows = set()
    for row, line in enumerate(text.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match and code in re.split(r"\s*,\s*", match.group(1)):
            rows.add(row)
    return rows


@pytest.mark.parametrize("code", CODES)
def test_fixture_findings_match_expectations(code: str) -> None:
    path = FIXTURES / f"{code}.py"
    text = path.read_text()
    expected = _expected(text, code)
    assert expected, f"{path.name} marks no line to flag"
    found = check_source(text, path.name, {"select": [code]})
    assert all(d.code == code for d in found)
    rows = {d.row for d in found}
    assert rows == expected, (
        f"missed {sorted(expected - rows)}, unexpected {sorted(rows - expected)}"
    )


@pytest.mark.parametrize("code", CODES)
def test_fixture_fixes_parse_and_resolve(code: str) -> None:
    """Applying every fix of the rule yields valid code and removes the fixed findings."""
    path = FIXTURES / f"{code}.py"
    text = path.read_text()
    config = {"select": [code]}
    before = check_source(text, path.name, config)
    result = fix_source(text, path.name, config, unsafe=True)
    assert result.error is None
    cst.parse_module(result.source)
    fixable = sum(1 for d in before if d.fix is not None)
    assert len(result.remaining) == len(before) - fixable


def test_opinionated_rule_is_off_by_default() -> None:
    text = (FIXTURES / "NUM901.py").read_text()
    assert not [d for d in check_source(text, "NUM901.py", {}) if d.code == "NUM901"]
