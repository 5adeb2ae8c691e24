"""Fixture corpora: every file under tests/fixtures/ marks the lines that must be flagged.

One syntax for every file: `# expect: NUM202` (reported by default, at medium or high
confidence), `# expect: NUM202(low)` (reported only with `min-confidence = "low"`), several
separated by commas. A file checks the rules named by its expectations (and the rule its
name says, `NUM202.py`); every other line must stay silent for those rules. Files in a
directory are linted together, as one run (hazards that cross files).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import libcst as cst
import pytest

from numlint import check_paths, check_source
from numlint.api import fix_source

FIXTURES = Path(__file__).parent / "fixtures"
_EXPECT = re.compile(r"#\s*expect:\s*(.+)$")
_ONE = re.compile(r"(NUM\d{3})(?:\((low|medium|high)\))?")
FILES = sorted(p for p in FIXTURES.rglob("*.py"))


def expectations(text: str) -> dict[tuple[int, str], str]:
    """(line, code) -> "low" for `NUMxxx(low)`, else "shown"."""
    out = {}
    for row, line in enumerate(text.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            for code, level in _ONE.findall(match.group(1)):
                out[(row, code)] = "low" if level == "low" else "shown"
    return out


def _codes(path: Path, expected: dict[tuple[int, str], str]) -> list[str]:
    codes = {code for _, code in expected}
    if re.fullmatch(r"NUM\d{3}", path.stem):
        codes.add(path.stem)
    if path.parent != FIXTURES:  # a package: the rules any of its files expects
        for other in path.parent.glob("*.py"):
            codes.update(c for _, c in expectations(other.read_text(encoding="utf-8")))
    return sorted(codes)


def _lint(path: Path, codes: list[str], least: str, root: Path = FIXTURES) -> list:
    """Lint the fixture's copy under `root` (the fixtures stand for library code: under
    numlint's own tests/ directory every value finding would be test code, hence low)."""
    config = {"select": codes, "min-confidence": least}
    copy = root / path.relative_to(FIXTURES)
    if path.parent != FIXTURES:  # a package: linted as one run
        return [d for d in check_paths([copy.parent], config) if d.filename == str(copy)]
    return check_source(path.read_text(encoding="utf-8"), str(copy), config)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fixtures outside any tests directory."""
    root = tmp_path_factory.mktemp("library") / "fixtures"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_findings_match_expectations(path: Path, library: Path) -> None:
    expected = expectations(path.read_text(encoding="utf-8"))
    codes = _codes(path, expected)
    assert codes, f"{path.name} names no rule"
    every = {(d.row, d.code) for d in _lint(path, codes, "low", library)}
    assert every == set(expected), (
        f"{path.name}: missed {sorted(set(expected) - every)}, "
        f"unexpected {sorted(every - set(expected))}"
    )
    shown = {(d.row, d.code) for d in _lint(path, codes, "medium", library)}
    assert shown == {k for k, v in expected.items() if v == "shown"}, (
        f"{path.name}: shown by default {sorted(shown)}; marked low: "
        f"{sorted(k for k, v in expected.items() if v == 'low')}"
    )


@pytest.mark.parametrize("path", [p for p in FILES if p.parent == FIXTURES], ids=lambda p: p.name)
def test_fixture_fixes_parse_and_clear(path: Path) -> None:
    """Applying every fix keeps the file parseable and removes the fixed findings."""
    text = path.read_text(encoding="utf-8")
    config = {"select": _codes(path, expectations(text)), "min-confidence": "low"}
    before = check_source(text, path.name, config)
    result = fix_source(text, path.name, config, unsafe=True)
    assert result.error is None
    cst.parse_module(result.source)
    fixable = sum(1 for d in before if d.fix is not None)
    assert len(result.remaining) <= len(before) - fixable + sum(
        1 for d in before if d.fix is not None and d.fix.applicability == "display-only"
    )


def test_opinionated_rule_is_off_by_default() -> None:
    text = (FIXTURES / "NUM901.py").read_text()
    assert not [d for d in check_source(text, "NUM901.py", {}) if d.code == "NUM901"]


def test_expectation_syntax() -> None:
    text = "x = 1  # expect: NUM202(low), NUM103\ny = 2\n"
    assert expectations(text) == {(1, "NUM202"): "low", (1, "NUM103"): "shown"}


def test_value_findings_in_test_code_are_low(library: Path) -> None:
    """The same hazard is shown in library code and low in a test."""
    text = "import torch\ndef f(x):\n    return torch.log(torch.softmax(x, -1))\n"
    config = {"select": ["NUM101"], "min-confidence": "low"}
    grades = {
        name: [d.confidence for d in check_source(text, name, config)]
        for name in ("pkg/model.py", "tests/helpers.py", "pkg/test_model.py", "pkg/testing/ref.py")
    }
    assert grades == {
        "pkg/model.py": ["high"],
        "tests/helpers.py": ["low"],
        "pkg/test_model.py": ["low"],
        "pkg/testing/ref.py": ["low"],
    }
    in_test_function = "import torch\ndef test_f(x):\n    return torch.log(torch.softmax(x, -1))\n"
    assert [d.confidence for d in check_source(in_test_function, "m.py", config)] == ["low"]
    amp = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
    found = check_source(amp, "tests/test_train.py", {"select": ["NUM505"]})
    assert [d.confidence for d in found] == ["high"]  # an API finding holds in tests too
