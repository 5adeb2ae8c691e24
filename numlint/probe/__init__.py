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

__all__ = ["annotate", "probe_rule", "verdict"]


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
    from numlint.probe import runner, user
    from numlint.probe.whitelist import NotProbeable
    from numlint.rule import all_rules

    rules = {r.CODE: r for r in all_rules()}
    files: dict[str, tuple[user.FileInfo, Any]] = {}
    out = []
    unavailable = _device_problem(device) if diagnostics else ""
    for d in diagnostics:
        if unavailable:
            ev = runner.not_probeable(unavailable)
            out.append(dataclasses.replace(d, extra={**d.extra, "probe": verdict(ev)}))
            continue
        rule = rules.get(d.code)
        probe = rule.PROBE if rule is not None else None
        source = sources.get(d.filename)
        if rule is None or probe is None:
            ev = runner.not_probeable("the rule declares no probe")
        elif probe.scenario or not probe.hazard:
            # scenarios build optimizers (importing torch._dynamo takes seconds): point to
            # them instead of running them for every `check --probe`
            what = f"its scenario `{probe.scenario}`" if probe.scenario else "its evidence"
            ev = runner.not_probeable(
                f"not one expression; `numlint probe {rule.CODE}` runs {what}"
            )
        elif source is None:
            ev = runner.not_probeable("the source text is not available")
        else:
            if d.filename not in files:
                info = user.file_info(source)
                files[d.filename] = (info, user.scopes_for(info))
            info, scopes = files[d.filename]
            try:
                ev = user.probe_finding(d, probe, info, scopes, device)
            except NotProbeable as exc:
                template = probe_rule(rule, device)
                ev = runner.not_probeable(f"{exc}; the rule's own probe: {template.summary}")
            except Exception as exc:  # a probe must never break `numlint check`
                ev = runner.not_probeable(f"the probe failed: {type(exc).__name__}: {exc}")
        out.append(dataclasses.replace(d, extra={**d.extra, "probe": verdict(ev)}))
    return out


def _device_problem(device: str) -> str:
    """Why `device` cannot run probes ("" when it can)."""
    import torch

    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError, ValueError) as exc:
        return f"device {device!r} is not available ({str(exc).splitlines()[0]})"
    return ""
