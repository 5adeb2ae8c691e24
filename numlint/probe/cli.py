"""`numlint probe CODE|NAME [--json] [--device cpu]`: print a rule's measured evidence."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from numlint.rule import Rule, all_rules, rule_by_selector

EXIT_CONFIRMED, EXIT_NOT_CONFIRMED, EXIT_ERROR = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="numlint probe",
        description=(
            "Run rules' runtime probes: the hazardous form and the fix on trigger inputs in "
            "each dtype, forward and backward. Exit 0 when every probe confirms its hazard "
            "and clears its fix, 1 otherwise, 2 on a usage error."
        ),
    )
    parser.add_argument("rules", nargs="+", metavar="CODE|NAME", help="rule codes, names or ALL")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    return parser


def table(rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table with a header rule."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render(rule: type[Rule], device: str) -> tuple[str, dict, bool]:
    """The text block, the JSON object, and whether the probe confirmed and cleared."""
    from numlint.probe import probe_rule

    ev = probe_rule(rule, device)
    ok = ev.confirmed and ev.fix_cleared
    data = {"code": rule.CODE, "name": rule.NAME, "device": device, **ev.to_json()}
    probe = rule.PROBE
    lines = [
        f"{rule.CODE} {rule.NAME}: {ev.verdict}"
        + ("" if ok or not ev.confirmed else " (fix not cleared)")
    ]
    if probe is not None and probe.scenario:
        lines.append(f"scenario: {probe.scenario}")
    else:
        if ev.hazard:
            lines.append(f"hazard: {ev.hazard}")
        if ev.fix:
            lines.append(f"fix:    {ev.fix}")
    if probe is not None and probe.note:
        lines.append(f"note:   {probe.note}")
    lines.append(f"evidence: {ev.summary}")
    if ev.rows:
        scenario = probe is not None and bool(probe.scenario)
        cells = [["dtype", "case" if scenario else "input", "hazard" if scenario else "forward"]]
        cells[0] += ["gradient", "fix"]
        for r in ev.rows:
            cells.append(
                [
                    r.dtype,
                    r.inputs,
                    _with(r.forward, r.details.get("forward", "")),
                    _with(r.gradient, r.details.get("gradient", "")),
                    _with(r.fix, r.details.get("fix", "")),
                ]
            )
        lines += ["", table(cells)]
    return "\n".join(lines), data, ok


def _with(cell: str, detail: str) -> str:
    if not detail or detail == cell:
        return cell
    return f"{cell} ({detail})"


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_ERROR if exc.code else 0
    selected: list[type[Rule]] = []
    for sel in args.rules:
        if sel.upper() == "ALL":
            selected.extend(all_rules())
            continue
        rule = rule_by_selector(sel) or rule_by_selector(sel.upper())
        if rule is None:
            print(f"error: unknown rule `{sel}` (see `numlint rules`)", file=sys.stderr)
            return EXIT_ERROR
        selected.append(rule)
    try:
        import torch
    except ImportError:
        print("error: `numlint probe` needs torch: pip install 'numlint[probe]'", file=sys.stderr)
        return EXIT_ERROR
    if args.device != "cpu":
        try:
            torch.empty(0, device=args.device)
        except (RuntimeError, AssertionError) as exc:
            print(f"error: device {args.device!r} is not available: {exc}", file=sys.stderr)
            return EXIT_ERROR
    blocks, objects, all_ok = [], [], True
    for rule in dict.fromkeys(selected):
        text, data, ok = render(rule, args.device)
        blocks.append(text)
        objects.append(data)
        all_ok = all_ok and ok
    if args.json:
        print(json.dumps(objects[0] if len(objects) == 1 else objects, indent=2))
    else:
        print("\n\n".join(blocks))
    return EXIT_CONFIRMED if all_ok else EXIT_NOT_CONFIRMED
