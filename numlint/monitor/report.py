"""`numlint report EVENTS.jsonl [-o report.png]`: a text summary of a monitor log and a plot of
the global gradient norm per step with skipped AMP steps and the first NaN/Inf marked.

Reads the JSONL file only; imports neither torch nor the monitor (matplotlib only for -o)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

EXIT_OK, EXIT_ERROR = 0, 2
ERROR_EVENTS = ("nonfinite", "nonfinite_remote", "amp_divergence")


class ReportError(Exception):
    """Bad input: reported as one line and exit status 2."""


@dataclass
class Summary:
    """The parsed log, grouped by event type."""

    path: str
    total: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)
    skips: list[dict[str, Any]] = field(default_factory=list)
    explosions: list[dict[str, Any]] = field(default_factory=list)
    vanishing: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)


def _number(value: Any) -> float | None:
    """JSON numbers, and the strings the monitor writes for non-finite floats."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def load(path: Path) -> Summary:
    """Parse a monitor JSONL log. Raises ReportError for a missing file or a malformed line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ReportError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise ReportError(f"{path}: is a directory") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot read: {exc}") from exc
    summary = Summary(str(path))
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReportError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
        if not isinstance(event, dict) or not isinstance(event.get("event"), str):
            raise ReportError(f"{path}:{lineno}: not a numlint event (no 'event' field)")
        summary.total += 1
        if isinstance(event.get("rank"), int):
            summary.ranks.add(event["rank"])
        kind = event["event"]
        if kind == "step":
            summary.steps.append(event)
        elif kind == "amp_overflow_skip":
            summary.skips.append(event)
        elif kind == "grad_explosion":
            summary.explosions.append(event)
        elif kind == "grad_vanishing":
            summary.vanishing.append(event)
        elif kind in ERROR_EVENTS:
            summary.errors.append(event)
    return summary


def _x(event: dict[str, Any]) -> float:
    """The attempt an event belongs to. Step, skip and explosion events are written when their
    attempt completes (`iteration` counts it); a non-finite value is found during the next one."""
    value = _number(event.get("iteration"))
    if value is None:
        value = _number(event.get("step"))
    value = value if value is not None else 0.0
    if event.get("event") in ("nonfinite", "nonfinite_remote"):
        value += 1
    return value


def first_error(summary: Summary) -> dict[str, Any] | None:
    """The origin event of the first failing check (or its first event)."""
    if not summary.errors:
        return None
    first = summary.errors[0]
    same = [
        e
        for e in summary.errors
        if e.get("iteration") == first.get("iteration") and e.get("phase") == first.get("phase")
    ]
    return next((e for e in same if e.get("origin")), first)


def text_summary(summary: Summary) -> str:
    """The human-readable summary printed by `numlint report`."""
    ranks = ",".join(str(r) for r in sorted(summary.ranks)) or "-"
    lines = [f"numlint report: {summary.path} ({summary.total} events, rank {ranks})"]
    norms = [n for n in (_number(s.get("grad_norm")) for s in summary.steps) if n is not None]
    finite = [n for n in norms if n == n and abs(n) != float("inf")]
    if summary.steps:
        last = summary.steps[-1]
        lines.append(
            f"steps: {len(summary.steps)} logged (last: step {last.get('step')}, "
            f"iteration {last.get('iteration')})"
        )
    else:
        lines.append("steps: none logged")
    if finite:
        lines.append(
            f"gradient norm: min {min(finite):.4g}, median {statistics.median(finite):.4g}, "
            f"max {max(finite):.4g}, last {finite[-1]:.4g}"
        )
    if summary.skips:
        its = ", ".join(f"{_x(e):g}" for e in summary.skips[:10])
        more = " ..." if len(summary.skips) > 10 else ""
        lines.append(
            f"AMP: {len(summary.skips)} skipped step(s) (overflow, loss finite) at iteration "
            f"{its}{more}; loss scale now {summary.skips[-1].get('scale')}"
        )
    else:
        lines.append("AMP: no skipped steps")
    lines.append(f"gradient explosions: {len(summary.explosions)}")
    for e in summary.explosions[:5]:
        lines.append(
            f"  iteration {_x(e):g}: norm {_number(e.get('grad_norm')) or 0:.4g} = "
            f"{_number(e.get('ratio')) or 0:.1f}x the running median"
        )
    groups = sorted({str(e.get("group")) for e in summary.vanishing})
    lines.append(
        f"vanishing gradients: {len(summary.vanishing)}"
        + (f" (groups: {', '.join(groups)})" if groups else "")
    )
    err = first_error(summary)
    if err is None:
        lines.append("first non-finite value: none")
    elif err["event"] == "amp_divergence":
        lines.append(f"AMP divergence at step {err.get('step')}: {err.get('reason')}")
    else:
        origin = " (origin)" if err.get("origin") else ""
        tensor = f"{err.get('dtype')}{err.get('shape')}" if err.get("dtype") else ""
        lines.append(
            f"first non-finite value: step {err.get('step')}, {err.get('phase')} of "
            f"{err.get('module')!r}{origin}: {err.get('kind')} ({err.get('nan_count')} NaN, "
            f"{err.get('inf_count')} Inf) {tensor}".rstrip()
        )
        for s in err.get("static") or []:
            lines.append(f"  static: {s.get('code')} {s.get('location')} {s.get('message', '')}")
        if err.get("snapshot"):
            lines.append(
                f"  snapshot: {err['snapshot']} (numlint.replay(snapshot, model, loss_fn))"
            )
    return "\n".join(lines)


def plot(summary: Summary, out: Path) -> None:
    """Global gradient norm per iteration; skipped steps, explosions and the first NaN marked."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ReportError("plotting needs matplotlib: pip install 'numlint[report]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    xs = [_x(s) for s in summary.steps]
    ys = [_number(s.get("grad_norm")) for s in summary.steps]
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and 0 < y < float("inf")]
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.2, label="global grad norm")
        ax.set_yscale("log")
    for k, e in enumerate(summary.skips):
        ax.axvline(
            _x(e), color="tab:orange", alpha=0.5, lw=1, label="AMP skipped step" if k == 0 else None
        )
    if summary.explosions:
        ax.scatter(
            [_x(e) for e in summary.explosions],
            [_number(e.get("grad_norm")) or 0 for e in summary.explosions],
            color="tab:purple",
            zorder=3,
            label="explosion",
        )
    err = first_error(summary)
    if err is not None:
        x = _x(err)
        label = f"first {err.get('kind') or 'error'}: {err.get('phase')} {err.get('module')!r}"
        ax.axvline(x, color="tab:red", ls="--", lw=1.5, label=label)
    if not pts and not summary.skips and err is None:
        ax.text(0.5, 0.5, "no steps logged", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("iteration (optimizer steps attempted)")
    ax.set_ylabel("gradient norm")
    ax.set_title(f"numlint monitor: {Path(summary.path).name}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out)
    except OSError as exc:
        raise ReportError(f"{out}: cannot write: {exc}") from exc
    finally:
        plt.close(fig)


def main(argv: list[str] | None = None, stdout: TextIO | None = None) -> int:
    """Entry point of `numlint report`. Returns 0, or 2 for bad input (with a message)."""
    out = stdout or sys.stdout
    parser = argparse.ArgumentParser(
        prog="numlint report",
        description="Summarise a numlint monitor log (JSONL) and plot the gradient norm.",
    )
    parser.add_argument("events", type=Path, help="the monitor's JSONL log")
    parser.add_argument("-o", "--output", type=Path, help="write a PNG plot here")
    args = parser.parse_args(argv)
    try:
        summary = load(args.events)
        if args.output is not None:
            plot(summary, args.output)
    except ReportError as exc:
        print(f"numlint report: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(text_summary(summary), file=out)
    if args.output is not None:
        print(f"plot written to {args.output}", file=out)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
