"""Every rule's VALID / INVALID examples become tests (adding a rule adds its tests)."""

from __future__ import annotations

import libcst as cst
import pytest

from numlint import check_source
from numlint.api import fix_source
from numlint.rule import Rule, all_rules

RULES = all_rules()


def _cases(kind: str) -> list:
    out = []
    for rule in RULES:
        for i, ex in enumerate(getattr(rule, kind)):
            out.append(pytest.param(rule, ex, id=f"{rule.CODE}-{kind.lower()}-{i}"))
    return out


def _only(rule: type[Rule]) -> dict:
    return {"select": [rule.CODE]}


def _every(rule: type[Rule]) -> dict:
    return {"select": [rule.CODE], "min-confidence": "low"}


@pytest.mark.parametrize(("rule", "example"), _cases("VALID"))
def test_valid_is_silent(rule, example):
    found = check_source(example.source, "example.py", _every(rule))
    assert found == [], f"{rule.CODE} flagged a near miss:\n{example.source}\n{found}"


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_is_reported_where_expected(rule, example):
    found = check_source(example.source, "example.py", _every(rule))
    positions = sorted((d.row, d.column) for d in found)
    expected = sorted([(example.line, example.column), *example.also])
    assert positions == expected, (
        f"{rule.CODE} expected at {expected}, got {positions}\n{example.source}"
    )
    assert all(d.code == rule.CODE and d.message for d in found)
    main = next(d for d in found if (d.row, d.column) == (example.line, example.column))
    assert main.confidence == (example.confidence or rule.CONFIDENCE), (
        f"{rule.CODE} confidence {main.confidence}, expected "
        f"{example.confidence or rule.CONFIDENCE}\n{example.source}"
    )
    shown = check_source(example.source, "example.py", _only(rule))
    assert bool(shown) == (main.confidence != "low"), "the default hides low findings only"


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_fix_gives_expected_code(rule, example):
    result = fix_source(example.source, "example.py", _every(rule), unsafe=True)
    assert result.error is None
    if example.fixed_source is None:
        assert result.source == example.source, "a fix was applied where the example expects none"
        return
    assert result.source == example.fixed_source
    cst.parse_module(result.source)
    assert check_source(result.source, "example.py", _every(rule)) == []


def test_rule_metadata_is_complete():
    codes = [r.CODE for r in RULES]
    assert len(codes) == len(set(codes))
    names = [r.NAME for r in RULES]
    assert len(names) == len(set(names))
    for rule in RULES:
        assert rule.CODE[:3] == "NUM" and rule.CODE[3:].isdigit() and len(rule.CODE) == 6
        assert rule.NAME == rule.NAME.lower() and " " not in rule.NAME and "_" not in rule.NAME
        doc = rule.docstring()
        for section in ("What it does:", "Why is this bad?", "Known limitations:", "References:"):
            assert section in doc, f"{rule.CODE} docstring lacks {section}"
        assert rule.VALID, f"{rule.CODE} has no near-miss examples"
        assert rule.INVALID, f"{rule.CODE} has no examples to flag"
        assert rule.TRIGGERS or rule.CODE.startswith("NUM9"), (
            f"{rule.CODE} has no prefilter triggers"
        )
        if any(ex.fixed is not None for ex in rule.INVALID):
            assert "Fix safety:" in doc, f"{rule.CODE} has a fix but no Fix safety section"


def test_examples_pass_prefilter():
    """A rule's triggers must not hide its own examples (the prefilter is a pure speed-up)."""
    for rule in RULES:
        for ex in rule.INVALID:
            assert not rule.TRIGGERS or any(t in ex.source for t in rule.TRIGGERS), rule.CODE
            assert not rule.NEEDS_TORCH or "torch" in ex.source, rule.CODE
            also = rule.ALSO_REQUIRES
            assert not also or any(t in ex.source for t in also), rule.CODE


def test_files_without_torch_are_left_to_torch_free_rules():
    """TensorFlow / JAX code that happens to use `.softmax(...).log()` stays silent."""
    from numlint import check_source

    assert check_source("import tensorflow as tf\ny = x.softmax(-1).log()\n") == []
    assert [d.code for d in check_source("import torch\ny = x.softmax(-1).log()\n")] == ["NUM101"]
