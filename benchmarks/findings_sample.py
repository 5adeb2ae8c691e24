"""Findings on real code: rate per 1,000 lines and a random sample to judge by hand.

Lints the corpus built by `python benchmarks/static_speed.py --skip-peers` (timm,
pytorch-lightning and transformers by default), prints findings per 1,000 lines overall and
per rule, then a seeded random sample of findings with source context, so a person can mark
each one as a real hazard or a false positive.

    python benchmarks/findings_sample.py --select NUM1,NUM2,NUM3,NUM4
    python benchmarks/findings_sample.py --select NUM201 --sample 20 --seed 3 path/to/src
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

from numlint.api import lint_paths
from numlint.diagnostic import Diagnostic

HERE = Path(__file__).resolve().parent
SRC = HERE / ".corpus" / "src"
DEFAULT_DIRS = ("timm", "pytorch_lightning", "transformers")


def count_lines(paths: list[Path]) -> int:
    """Lines in every .py file under `paths`."""
    total = 0
    for root in paths:
        files = [root] if root.is_file() else root.rglob("*.py")
        for f in files:
            with f.open("rb") as fh:
                total += sum(1 for _ in fh)
    return total


def context(path: Path, row: int, around: int) -> str:
    """`around` lines either side of `row`, numbered, the finding's line marked."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "    (unreadable)"
    lo, hi = max(1, row - around), min(len(lines), row + around)
    return "\n".join(
        f"{'>' if n == row else ' '} {n:5d} | {lines[n - 1]}" for n in range(lo, hi + 1)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="directories or files to lint")
    parser.add_argument("--select", default="NUM1,NUM2,NUM3,NUM4", help="comma-separated codes")
    parser.add_argument("--sample", type=int, default=50, help="findings to show")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--context", type=int, default=3, help="lines of context each side")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)

    paths = args.paths or [SRC / name for name in DEFAULT_DIRS]
    missing = [p for p in paths if not p.exists()]
    if missing:
        print(
            f"corpus not found: {', '.join(map(str, missing))}\n"
            "build it with: python benchmarks/static_speed.py --skip-peers",
            file=sys.stderr,
        )
        return 2
    select = [s.strip() for s in args.select.split(",") if s.strip()]

    start = time.perf_counter()
    findings: list[Diagnostic] = []
    for _, diags in lint_paths(paths, config={"select": select}, jobs=args.jobs):
        findings.extend(diags)
    elapsed = time.perf_counter() - start
    lines = count_lines(paths)
    kloc = lines / 1000

    print(f"scanned {lines:,} lines in {elapsed:.1f}s ({', '.join(str(p) for p in paths)})")
    print(f"findings: {len(findings)}  ({len(findings) / kloc:.3f} per 1,000 lines)")
    by_rule = Counter(d.code for d in findings)
    for code, n in sorted(by_rule.items()):
        name = next(d.name for d in findings if d.code == code)
        print(f"  {code} {name:32s} {n:5d}  {n / kloc:.3f} per 1,000 lines")

    rng = random.Random(args.seed)
    sample = rng.sample(findings, min(args.sample, len(findings)))
    sample.sort(key=lambda d: (d.filename, d.row, d.code))
    print(f"\nsample of {len(sample)} (seed {args.seed}):")
    for i, d in enumerate(sample, 1):
        print(f"\n[{i}] {d.filename}:{d.row}:{d.column} {d.code} {d.message}")
        print(context(Path(d.filename), d.row, args.context))
    return 0


if __name__ == "__main__":
    sys.exit(main())
