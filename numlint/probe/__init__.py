"""Runtime probes: confirm a rule's hazard on sample tensors, and the user's own expression.

Importing this package does not import torch; torch loads when a probe first runs. The
probe never imports or executes the checked code: flagged expressions are walked with
`ast` against a whitelist of torch functions and tensor methods (numlint.probe.whitelist).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numlint.diagnostic import Diagnostic
    from numlint.probe.runner import Evidence
    from numlint.rule import Rule

__all__ = ["annotate", "probe_diagnostic", "probe_rule", "verdict"]


def probe_rule(rule: type[Rule], device: str = "cpu") -> Evidence:
    """The evidence of a rule's own probe (its template hazard, fix and trigger inputs)."""
    from numlint.probe.templates import probe_rule as run

    return run(rule, device)


def verdict(evidence: Evidence) -> dict[str, Any]:
    """The `probe` object of a JSON finding."""
    return {"verdict": evidence.verdict, "evidence": evidence.summary, "dtype": evidence.dtype}


def annotate(
    diagnostics: list[Diagnostic], sources: dict[str, str], device: str = "cpu"
) -> list[Diagnostic]:
    """Each diagnostic with `extra["probe"]`: confirmed / not confirmed / not probeable."""
    from numlint.probe import runner

    with runner.single_threaded():
        return _annotate(diagnostics, sources, device)


def _annotate(
    diagnostics: list[Diagnostic], sources: dict[str, str], device: str
) -> list[Diagnostic]:
    from numlint.probe import runner
    from numlint.rule import all_rules

    rules = {r.CODE: r for r in all_rules()}
    files: dict[str, tuple[Any, Any]] = {}
    out = []
    unavailable = _device_problem(device) if diagnostics else ""
    for d in diagnostics:
        if unavailable:
            ev = runner.not_probeable(unavailable)
        else:
            ev = _probe_one(d, rules.get(d.code), sources.get(d.filename), files, device)
        out.append(dataclasses.replace(d, extra={**d.extra, "probe": verdict(ev)}))
    return out


def probe_diagnostic(diagnostic: Diagnostic, source: str, device: str = "cpu") -> Evidence:
    """Probe one finding of one source text (an editor's "probe this finding"): the verdict,
    its one line of evidence and the rows behind it. Never raises for a finding it cannot
    probe: the verdict is then "not probeable" and the evidence says why."""
    from numlint.probe import runner
    from numlint.rule import all_rules

    rule = next((r for r in all_rules() if r.CODE == diagnostic.code), None)
    with runner.single_threaded():
        unavailable = _device_problem(device)
        if unavailable:
            return runner.not_probeable(unavailable)
        return _probe_one(diagnostic, rule, source, {}, device)


def _probe_one(
    d: Diagnostic,
    rule: type[Rule] | None,
    source: str | None,
    files: dict[str, tuple[Any, Any]],
    device: str,
) -> Evidence:
    """One finding's evidence; `files` caches each file's parsed information."""
    from numlint.probe import runner, scenarios, user
    from numlint.probe.whitelist import NotProbeable

    probe = rule.PROBE if rule is not None else None
    if rule is None or probe is None:
        return runner.not_probeable("the rule declares no probe")
    if probe.scenario:
        flagged = ""
        if source is not None:
            try:
                flagged = user.flagged(source, d)[0]
            except NotProbeable:
                flagged = ""
        try:
            return scenarios.for_finding(probe.scenario, d.message, flagged, device)
        except Exception as exc:  # a probe must never break `numlint check`
            return runner.not_probeable(
                f"the probe's scripted loop failed (the probe's own failure, not a verdict on "
                f"your code: {type(exc).__name__}: {exc})"
            )
    if not probe.hazard:
        return runner.not_probeable("the rule's probe declares no hazard expression")
    if source is None:
        return runner.not_probeable("the source text is not available")
    if d.filename not in files:
        info = user.file_info(source)
        files[d.filename] = (info, user.scopes_for(info))
    info, scopes = files[d.filename]
    try:
        return user.probe_finding(d, probe, info, scopes, device)
    except NotProbeable as exc:
        template = probe_rule(rule, device)
        return runner.not_probeable(f"{exc}; the rule's own probe: {template.summary}")
    except Exception as exc:  # a probe must never break `numlint check`
        return runner.not_probeable(
            f"the probe failed (its own failure, not a verdict on your code: "
            f"{type(exc).__name__}: {exc})"
        )


def _device_problem(device: str) -> str:
    """Why `device` cannot run probes ("" when it can)."""
    import torch

    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError, ValueError) as exc:
        return f"device {device!r} is not available ({str(exc).splitlines()[0]})"
    return ""
