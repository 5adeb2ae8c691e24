"""The "## Evidence" section of a rule page: the probe's table, in words only.

Cells are verdict words ("NaN", "-inf", "wrong", "finite"), never raw measurements, so the
page is identical on every machine and `numlint docs --check` is stable.
"""

from __future__ import annotations

from numlint.rule import Probe, Rule


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def evidence_section(rule: type[Rule]) -> str:
    """Markdown for the rule page ("" when torch is not installed or there is no probe)."""
    if rule.PROBE is None:
        return ""
    try:
        import torch  # noqa: F401
    except ImportError:
        return ""
    from numlint.probe import probe_rule

    ev = probe_rule(rule, "cpu")
    probe = rule.PROBE
    lines = ["## Evidence", ""]
    if probe.scenario:
        lines.append(
            f"Measured by `numlint probe {rule.CODE}` on CPU with the scripted scenario "
            f"`{probe.scenario}`: the hazardous protocol and the fixed one on the same step."
        )
        header = "| dtype | case | hazard | gradient | fix |"
    else:
        passes = "forward and backward" if probe.backward else "forward"
        compared = (
            f"; the {_COMPARED[probe.compare]} compared with the fix evaluated in float64"
            if probe.compare in _COMPARED
            else ""
        )
        lines.append(
            f"Measured by `numlint probe {rule.CODE}` on CPU: the hazard `{_escape(probe.hazard)}`"
            + (f" and the fix `{_escape(probe.fix)}`" if probe.fix else "")
            + f" run {passes} on each input in each dtype{compared}."
        )
        if _from_table(probe):
            lines[-1] += (
                " Inputs written `@kind` in the rule's `PROBE` are the first values past each"
                " dtype's threshold in `numlint/probe/thresholds.py`, each measured in its own"
                " dtype."
            )
        header = "| dtype | input | forward | gradient | fix |"
    lines.append("")
    if not ev.rows:
        lines.append(f"Verdict: **{ev.verdict}** ({_escape(ev.summary)}).")
        return "\n".join(lines) + "\n"
    lines += [header, "|---|---|---|---|---|"]
    for r in ev.rows:
        cells = [r.dtype, f"`{r.inputs}`", r.forward, r.gradient, r.fix]
        lines.append("| " + " | ".join(_escape(c) for c in cells) + " |")
    cleared = "; the fix passes on every input" if ev.fix_cleared else ""
    lines += ["", f"Verdict: **{ev.verdict}**{cleared}."]
    return "\n".join(lines) + "\n"


def _from_table(probe: Probe) -> bool:
    parts = [p for v in probe.inputs.values() for p in (v if isinstance(v, tuple) else (v,))]
    return any(p.startswith("@") for p in parts)


_COMPARED = {"value": "value is", "gradient": "gradient is", "both": "value and gradient are"}
