"""Fixture corpora of the NUM103-NUM111 and NUM201-NUM204 rules.

Each `tests/fixtures/<CODE>.py` marks every line its rule must flag with `# expect: <CODE>`;
the rule must flag exactly those lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from numlint import check_source
from numlint.rule import rule_by_selector

FIXTURES = Path(__file__).parent / "fixtures"
CODES = [f"NUM{n}" for n in (*range(103, 112), *range(201, 205))]
_EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


def _expected(text: str, code: str) -> set[int]:
    lines = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match and code in {c.strip() for c in match.group(1).split(",")}:
            lines.add(number)
    return lines


@pytest.mark.parametrize("code", CODES)
def test_fixture_lines_match(code: str) -> None:
    assert rule_by_selector(code) is not None, f"{code} is not a rule"
    path = FIXTURES / f"{code}.py"
    text = path.read_text(encoding="utf-8")
    expected = _expected(text, code)
    assert expected, f"{path.name} has no `# expect: {code}` line"
    found = {d.row for d in check_source(text, str(path), {"select": [code]})}
    assert found == expected, (
        f"{path.name}: missing {sorted(expected - found)}, unexpected {sorted(found - expected)}"
    )


@pytest.mark.parametrize("code", CODES)
def test_fixture_parses_and_fixes_cleanly(code: str) -> None:
    """Applying every fix of the rule keeps the fixture parseable."""
    from numlint.api import fix_source

    path = FIXTURES / f"{code}.py"
    result = fix_source(
        path.read_text(encoding="utf-8"), str(path), {"select": [code]}, unsafe=True
    )
    assert result.error is None
