"""Every rule declares a probe that confirms its hazard and clears its fix."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from numlint.probe import probe_rule  # noqa: E402
from numlint.probe.docs import evidence_section  # noqa: E402
from numlint.probe.scenarios import SCENARIOS, run_scenario  # noqa: E402
from numlint.probe.templates import run_probe  # noqa: E402
from numlint.rule import Probe, all_rules  # noqa: E402

RULES = all_rules()


@pytest.mark.parametrize("rule", RULES, ids=[r.CODE for r in RULES])
def test_probe_confirms_hazard_and_clears_fix(rule):
    assert rule.PROBE is not None, f"{rule.CODE} declares no PROBE"
    ev = probe_rule(rule)
    assert ev.verdict == "confirmed", f"{rule.CODE}: {ev.summary}"
    assert ev.fix_cleared, f"{rule.CODE}: fix not cleared: {[r for r in ev.rows if not r.fix_ok]}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenarios_confirm(name):
    ev = run_scenario(name)
    assert ev.verdict == "confirmed", ev.summary


def test_unknown_scenario_is_not_probeable():
    ev = run_scenario("no-such-scenario")
    assert ev.verdict == "not probeable" and "no-such-scenario" in ev.summary
    assert run_probe(Probe(scenario="nope")).verdict == "not probeable"


@pytest.mark.parametrize(
    "probe",
    [
        None,
        Probe(hazard="os.system('x')"),
        Probe(hazard="torch.log(x)", inputs={"x": "y"}),
        Probe(hazard="torch.log(x)", inputs={"x": "torch.zeros(2)"}, dtypes=("f8",)),
        Probe(hazard="torch.log(x)", inputs={"x": "torch.zeros(2)"}, compare="maybe"),
        Probe(hazard="x", inputs={"x": ("torch.zeros(1)", "torch.ones(1)"), "y": ("1",)}),
    ],
)
def test_bad_probe_declarations_are_not_probeable(probe):
    assert run_probe(probe).verdict == "not probeable"


def test_silently_wrong_hazards_are_compared_with_float64():
    probe = Probe(
        hazard="(x * x).mean() - x.mean() ** 2",
        fix="torch.var(x, correction=0)",
        inputs={"x": "3000 + 1e-3 * torch.randn(64)"},
        dtypes=("float32",),
        compare="value",
    )
    ev = run_probe(probe)
    assert ev.verdict == "confirmed" and ev.fix_cleared
    assert ev.rows[0].forward == "wrong" and ev.rows[0].fix == "correct"


def test_a_sound_expression_is_not_confirmed():
    probe = Probe(hazard="torch.log_softmax(x, -1)", inputs={"x": "torch.tensor([[0.0, 200.0]])"})
    assert run_probe(probe).verdict == "not confirmed"


def _cells(ev):
    return [(r.dtype, r.inputs, r.forward, r.gradient, r.fix) for r in ev.rows]


def test_expression_probes_are_deterministic():
    for rule in RULES:
        if rule.PROBE is not None and not rule.PROBE.scenario:
            assert _cells(run_probe(rule.PROBE)) == _cells(probe_rule(rule)), rule.CODE


def test_evidence_section_is_a_table_of_words():
    rule = next(r for r in RULES if r.CODE == "NUM101")
    text = evidence_section(rule)
    assert text.startswith("## Evidence")
    assert "| float16 | `x = [[0.0, 18.0]]` | -inf | NaN | finite |" in text
    assert text.rstrip().endswith("Verdict: **confirmed**; the fix passes on every input.")
