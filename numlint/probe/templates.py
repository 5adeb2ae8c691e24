"""A rule's own probe: its declared hazard and fix on its declared trigger inputs."""

from __future__ import annotations

import ast
from functools import cache
from typing import Any

from numlint.probe import runner, thresholds
from numlint.probe.evaluator import MAX_INPUT_ELEMENTS
from numlint.probe.roles import NO_GRAD, roles
from numlint.probe.whitelist import NotProbeable
from numlint.rule import Probe, Rule


def cases(probe: Probe) -> list[dict[str, str]]:
    """The trigger cases: tuples of inputs are zipped, plain strings serve every case."""
    return [case for case, _ in dtype_cases(probe)]


def dtype_cases(probe: Probe) -> list[tuple[dict[str, str], tuple[str, ...]]]:
    """The trigger cases with the dtypes each is measured in.

    An input `"@kind pattern"` stands for one case per dtype of the probe, the first value
    past that dtype's threshold in numlint.probe.thresholds, measured in that dtype only.
    """
    dtypes = probe.dtypes
    inputs: dict[str, tuple[tuple[str, tuple[str, ...]], ...] | str] = {}
    for k, v in probe.inputs.items():
        parts = v if isinstance(v, tuple) else (v,)
        expanded = tuple(e for part in parts for e in thresholds.expand(part, dtypes))
        inputs[k] = expanded if isinstance(v, tuple) or len(expanded) > 1 else expanded[0][0]
    lengths = {len(v) for v in inputs.values() if isinstance(v, tuple)}
    if len(lengths) > 1:
        raise NotProbeable("input tuples of different lengths")
    n = lengths.pop() if lengths else 1
    out = []
    for i in range(n):
        case: dict[str, str] = {}
        allowed = set(dtypes)
        for k, v in inputs.items():
            if isinstance(v, tuple):
                case[k] = v[i][0]
                allowed &= set(v[i][1])
            else:
                case[k] = v
        out.append((case, tuple(d for d in dtypes if d in allowed)))
    return out


def short(text: str) -> str:
    """`torch.tensor([[0.0, 20.0]])` -> `[[0.0, 20.0]]`; other builders stay as written."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return text
    if (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) in ("torch.tensor", "tensor")
        and len(node.args) == 1
        and not node.keywords
    ):
        return ast.unparse(node.args[0])
    return text.replace("torch.", "")


def describe(case: dict[str, str]) -> str:
    return ", ".join(f"{k} = {short(v)}" for k, v in case.items())


def _valid_dtypes(probe: Probe) -> tuple[str, ...]:
    bad = [d for d in probe.dtypes if d not in runner.DTYPES]
    if bad:
        raise NotProbeable(f"unknown dtype {bad[0]}")
    return probe.dtypes


def run_probe(probe: Probe | None, device: str = "cpu") -> runner.Evidence:
    """Evidence for a declared probe (expression or scenario)."""
    if probe is None:
        return runner.not_probeable("the rule declares no probe")
    if probe.scenario:
        from numlint.probe.scenarios import run_scenario

        return run_scenario(probe.scenario, device)
    if not probe.hazard:
        return runner.not_probeable("the probe declares no hazard expression")
    if probe.compare not in ("", "value", "gradient", "both"):
        return runner.not_probeable(f"unknown comparison {probe.compare!r}")
    try:
        hazard = runner.compile_probe_expression(probe.hazard)
        fix = runner.compile_probe_expression(probe.fix) if probe.fix else None
        dtypes = _valid_dtypes(probe)
        no_grad = frozenset(n for n, r in roles(hazard).items() if r in NO_GRAD)
        rows = []
        for case, case_dtypes in dtype_cases(probe):
            raw: dict[str, Any] = {k: runner.build_input(v) for k, v in case.items()}
            for dtype in case_dtypes:
                rows.append(
                    runner.measure(
                        hazard,
                        fix,
                        raw,
                        dtype,
                        describe(case),
                        device,
                        probe.backward,
                        probe.compare,
                        no_grad,
                        MAX_INPUT_ELEMENTS,
                    )
                )
    except NotProbeable as exc:
        return runner.not_probeable(str(exc), probe.hazard, probe.fix)
    rows.sort(key=lambda r: dtypes.index(r.dtype))
    return runner.evidence(rows, probe.hazard, probe.fix, dtypes)


@cache
def probe_rule(rule: type[Rule], device: str = "cpu") -> runner.Evidence:
    """The rule's measured evidence (cached per rule and device)."""
    with runner.single_threaded():
        return run_probe(rule.PROBE, device)
