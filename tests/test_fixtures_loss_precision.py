"""Fixture corpora for the NUM3xx / NUM4xx rules: `# expect: CODE` marks every flagged line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from numlint import check_source

FIXTURES = Path(__file__).parent / "fixtures"
CODES = ["NUM301", "NUM302", "NUM303", "NUM304", "NUM401", "NUM402", "NUM403", "NUM404"]
_EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9,\s]+)$")


def expected_lines(text: str, code: str) -> set[int]:
    """Lines whose trailing `# expect: A, B` comment names `code`."""
    found = set()
    for row, line in enumerate(text.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match and code in {c.strip() for c in match.group(1).split(",")}:
            found.add(row)
    return found


@pytest.mark.parametrize("code", CODES)
def test_fixture_findings_match_expectations(code: str) -> None:
    path = FIXTURES / f"{code}.py"
    text = path.read_text(encoding="utf-8")
    expected = expected_lines(text, code)
    assert expected, f"{path.name} marks no line"
    found = check_source(text, str(path), {"select": [code]})
    assert all(d.code == code for d in found)
    rows = {d.row for d in found}
    assert rows == expected, (
        f"{code}: missing {sorted(expected - rows)}, unexpected {sorted(rows - expected)}"
    )


@pytest.mark.parametrize("code", CODES)
def test_fixture_fixes_parse_and_clear(code: str) -> None:
    """Applying every fix of the rule (unsafe included) parses and leaves only unfixable ones."""
    from numlint.api import fix_source

    path = FIXTURES / f"{code}.py"
    text = path.read_text(encoding="utf-8")
    result = fix_source(text, str(path), {"select": [code]}, unsafe=True)
    assert result.error is None
    assert all(d.fix is None for d in result.remaining)
