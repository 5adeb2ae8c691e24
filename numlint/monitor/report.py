"""`numlint report EVENTS.jsonl [-o report.png]`: a text summary of a monitor log and a plot of
the global gradient norm (pre-clip, with the clipped norm and the clip threshold) and the loss
per step, with skipped AMP steps, explosions and every incident marked.

Reads the JSONL file only; imports neither torch nor the monitor (matplotlib only for -o)."""

from __future__ import annotations

import argparse
import json
import math
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
    repeats: list[dict[str, Any]] = field(default_factory=list)
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
        elif kind == "nonfinite_repeated":
            summary.repeats.append(event)
    return summary


def _x(event: dict[str, Any]) -> float:
    """The attempt an event belongs to (`iteration`: optimizer steps attempted before it, the
    same numbering for step, skip, explosion and incident events)."""
    value = _number(event.get("iteration"))
    if value is None:
        value = _number(event.get("step"))
    return value if value is not None else 0.0


def incidents(summary: Summary) -> list[dict[str, Any]]:
    """The origin event of each failing check (or its first event), in order."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for e in summary.errors:
        key = e.get("incident") or (e.get("iteration"), e.get("phase"), e.get("event"))
        groups.setdefault(key, []).append(e)
    return [next((e for e in g if e.get("origin")), g[0]) for g in groups.values()]


def first_error(summary: Summary) -> dict[str, Any] | None:
    """The origin event of the first failing check (or its first event)."""
    found = incidents(summary)
    return found[0] if found else None


def _describe(err: dict[str, Any]) -> str:
    if err["event"] == "amp_divergence":
        return f"AMP divergence at step {err.get('step')}: {err.get('reason')}"
    if err["event"] == "nonfinite_remote":
        return f"step {err.get('step')}: non-finite value on rank {err.get('source_rank')}"
    origin = " (origin)" if err.get("origin") else ""
    tensor = f"{err.get('dtype')}{err.get('shape')}" if err.get("dtype") else ""
    micro = f", micro-batch {err['micro_batch']}" if err.get("micro_batch") else ""
    return (
        f"step {err.get('step')}{micro}, {err.get('phase')} of {err.get('module')!r}{origin}: "
        f"{err.get('kind')} ({err.get('nan_count')} NaN, {err.get('inf_count')} Inf) {tensor}"
    ).rstrip()


def _ranges(steps: list[Any]) -> str:
    """`25-58, 61` for consecutive step numbers (others as they are)."""
    nums = [s for s in steps if isinstance(s, int) and not isinstance(s, bool)]
    if len(nums) != len(steps):
        return ", ".join(str(s) for s in steps[:20]) + (" ..." if len(steps) > 20 else "")
    out: list[str] = []
    start = prev = None
    for n in nums:
        if start is not None and n == prev + 1:  # type: ignore[operator]
            prev = n
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return ", ".join(out[:20]) + (" ..." if len(out) > 20 else "")


def text_summary(summary: Summary) -> str:
    """The human-readable summary printed by `numlint report`."""
    ranks = ",".join(str(r) for r in sorted(summary.ranks)) or "-"
    lines = [f"numlint report: {summary.path} ({summary.total} events, rank {ranks})"]
    pairs = [(s.get("step"), _number(s.get("grad_norm"))) for s in summary.steps]
    norms = [(step, n) for step, n in pairs if n is not None]
    finite = [n for _, n in norms if math.isfinite(n)]
    bad = [step for step, n in norms if not math.isfinite(n)]
    if summary.steps:
        last = summary.steps[-1]
        lines.append(
            f"steps: {len(summary.steps)} logged (last: step {last.get('step')}, "
            f"iteration {last.get('iteration')})"
        )
    else:
        lines.append("steps: none logged")
    if norms:
        parts = []
        if finite:
            parts.append(
                f"min {min(finite):.4g}, median {statistics.median(finite):.4g}, "
                f"max {max(finite):.4g}"
            )
        parts.append(f"last {norms[-1][1]:.4g}")
        text = "gradient norm: " + ", ".join(parts)
        if bad:
            text += f"; non-finite at {len(bad)} step(s): {_ranges(bad)}"
        lines.append(text)
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
    clipped = [e for e in summary.steps if _number(e.get("max_norm")) is not None]
    if clipped:
        over = sum(
            1 for e in clipped if (_number(e.get("grad_norm")) or 0) > _number(e["max_norm"])
        )
        lines.append(
            f"clipping: max_norm {clipped[-1]['max_norm']:g}; {over} of {len(clipped)} steps "
            f"clipped (the logged norm is the pre-clip one)"
        )
    found = incidents(summary)
    if not found:
        lines.append("first non-finite value: none")
    for k, err in enumerate(found):
        if k == 0 and err["event"] == "amp_divergence":
            lines.append(_describe(err))
        else:
            lines.append(("first non-finite value: " if k == 0 else "then: ") + _describe(err))
        for s in err.get("static") or []:
            lines.append(f"  static: {s.get('code')} {s.get('location')} {s.get('message', '')}")
        if err.get("snapshot"):
            lines.append(
                f"  snapshot: {err['snapshot']} (numlint.replay(snapshot, model, loss_fn))"
            )
    for r in summary.repeats:
        lines.append(
            f"  repeated {r.get('count')} more time(s), steps {r.get('first_step')}-"
            f"{r.get('step')}: {r.get('phase')} of {r.get('module')!r} ({r.get('kind')})"
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
    steps = summary.steps
    xs = [_x(s) for s in steps]

    def curve(key: str) -> list[tuple[float, float]]:
        ys = [_number(s.get(key)) for s in steps]
        return [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and 0 < y < math.inf]

    pts = curve("grad_norm")
    clip = curve("grad_norm_clipped")
    if pts:
        label = "global grad norm" + (" (pre-clip)" if clip else "")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.2, label=label)
        ax.set_yscale("log")
    if clip:
        ax.plot([p[0] for p in clip], [p[1] for p in clip], lw=1, ls=":", label="after clipping")
        max_norm = _number(steps[-1].get("max_norm"))
        if max_norm:
            ax.axhline(max_norm, color="grey", ls="--", lw=1, label=f"max_norm {max_norm:g}")
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
    found = incidents(summary)
    for k, err in enumerate(found):
        label = None
        if k < 6:
            label = f"{err.get('kind') or 'error'} at step {err.get('step')}: "
            label += f"{err.get('phase')} {err.get('module')!r}"
        ax.axvline(_x(err), color="tab:red", ls="--", lw=1.5 if k == 0 else 1, label=label)
    losses = curve("loss")
    if losses:
        ax2 = ax.twinx()
        ax2.plot([p[0] for p in losses], [p[1] for p in losses], color="tab:green", lw=1)
        ax2.set_ylabel("loss", color="tab:green")
        ax.plot([], [], color="tab:green", lw=1, label="loss (right axis)")
    if not pts and not summary.skips and not found:
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
