"""The threshold table is measured again, and every rule's probe reaches its thresholds."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")

from numlint.probe import probe_rule  # noqa: E402
from numlint.probe.runner import DTYPES, compile_probe_expression, run  # noqa: E402
from numlint.probe.templates import dtype_cases  # noqa: E402
from numlint.probe.thresholds import TABLE, expand, trigger  # noqa: E402
from numlint.rule import all_rules  # noqa: E402

RULES = [r for r in all_rules() if r.PROBE is not None and r.PROBE.hazard]
PAIRS = [(k, d) for k, t in TABLE.items() for d in t.at if k != "eps-zero"]


def _fails(kind: str, dtype: str, x: float) -> bool:
    t = TABLE[kind]
    value = torch.tensor([x], dtype=DTYPES[dtype], requires_grad=True)
    out = run(compile_probe_expression(t.hazard), {"x": value})
    if kind == "exp-underflow":
        return bool((out.value == 0).all())
    if kind.endswith("-gradient"):
        return out.gradient_state != "finite"
    return out.forward_state != "finite"


@pytest.mark.parametrize(("kind", "dtype"), PAIRS, ids=[f"{k}-{d}" for k, d in PAIRS])
def test_each_threshold_is_where_the_hazard_starts(kind, dtype):
    t = TABLE[kind]
    past = trigger(kind, dtype)
    assert (past > t.at[dtype]) == (t.side == "above")
    assert _fails(kind, dtype, past), f"{t.what}: not at {past} in {dtype}"
    inside = t.at[dtype] - 1 if t.side == "above" else t.at[dtype] + 1
    assert not _fails(kind, dtype, inside), f"{t.what}: already at {inside} in {dtype}"


def test_eps_literals_below_the_threshold_are_zero_in_float16():
    for eps in (1e-8, 1e-10, 1e-12, trigger("eps-zero", "float16")):
        assert float(torch.tensor(eps, dtype=torch.float16)) == 0.0
    assert float(torch.tensor(1e-7, dtype=torch.float16)) > 0.0


def test_markers_expand_to_one_case_per_dtype():
    assert expand("@softmax-gap [[0.0, {}]]") == (
        ("torch.tensor([[0.0, 104.0]])", ("float32",)),
        ("torch.tensor([[0.0, 18.0]])", ("float16",)),
        ("torch.tensor([[0.0, 93.0]])", ("bfloat16",)),
    )
    assert expand("@exp-overflow") == (
        ("torch.tensor([89.0])", ("float32", "bfloat16")),
        ("torch.tensor([12.0])", ("float16",)),
    )
    assert expand("torch.zeros(2)", ("float16",)) == (("torch.zeros(2)", ("float16",)),)


def _markers(rule) -> list[str]:
    values = rule.PROBE.inputs.values()
    parts = [p for v in values for p in (v if isinstance(v, tuple) else (v,))]
    return [p[1:].split(" ")[0] for p in parts if p.startswith("@")]


@pytest.mark.parametrize("rule", RULES, ids=[r.CODE for r in RULES])
def test_threshold_cases_confirm_in_their_own_dtype(rule):
    """Each case generated from the table fails in each dtype it was generated for."""
    ev = probe_rule(rule)
    failing = {(r.dtype, r.inputs) for r in ev.rows if r.hazard_fails}
    for case, dtypes in dtype_cases(rule.PROBE):
        if not any(v.startswith("torch.tensor(") for v in case.values()) or not _markers(rule):
            continue
        for dtype in dtypes:
            assert any(d == dtype for d, _ in failing), (rule.CODE, dtype, case)
    rows = {(r.dtype, r.inputs): r for r in ev.rows}
    assert all(rows[k].hazard_fails for k in rows if _markers(rule)), rule.CODE


_NAMED = re.compile(r"\b(float32|float16|bfloat16)\b")


@pytest.mark.parametrize("rule", RULES, ids=[r.CODE for r in RULES])
def test_every_dtype_the_docs_name_is_confirmed_by_the_rule_probe(rule):
    doc = rule.__doc__ or ""
    why = doc.split("Why is this bad?", 1)[-1].split("Fix safety:", 1)[0]
    named = {d for d in _NAMED.findall(why) if d in rule.PROBE.dtypes}
    ev = probe_rule(rule)
    confirmed = {r.dtype for r in ev.rows if r.hazard_fails}
    assert named <= confirmed, f"{rule.CODE}: named {sorted(named)}, confirmed {sorted(confirmed)}"


def test_rules_on_thresholds_use_the_table():
    using = {r.CODE for r in RULES if _markers(r)}
    assert {"NUM101", "NUM102", "NUM104", "NUM105", "NUM106", "NUM107"} <= using


def test_log_of_sigmoid_reaches_both_saturations_in_every_dtype():
    ev = probe_rule(next(r for r in RULES if r.CODE == "NUM102"))
    bad = {(r.dtype, r.inputs) for r in ev.rows if r.hazard_fails}
    for dtype in ("float32", "float16", "bfloat16"):
        assert (dtype, f"z = [{trigger('sigmoid-one', dtype)}]") in bad
        assert (dtype, f"z = [{trigger('sigmoid-zero', dtype)}]") in bad
