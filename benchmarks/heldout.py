"""Held-out precision check: every finding on whole packages that numlint was never tuned on.

The packages (PACKAGES) are recall-ledger PyPI pins of projects that the precision ledger does
not hold: research and library code of 20 projects, about 286,000 lines. Each finding numlint reported on them at
`--min-confidence low` (the lines of documented bugs aside: those are the recall ledger's)
was judged once, blind, in context, in benchmarks/heldout/judgements.tsv: real, theoretical
or false, with a reason. This script lints the packages again and joins today's findings to
those verdicts by file, rule and line text, so that a change shows what it took away (by
verdict) and what it added (unjudged). See docs/precision.md, "Held-out check".

    python benchmarks/recall.py fetch    # once: downloads and unpacks the pins
    python benchmarks/heldout.py         # lint, match, print the table
    python benchmarks/heldout.py --list  # also list each finding with its verdict
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ledger import DEFAULT_LEVELS, norm_text  # noqa: E402
from recall import load_bugs, mark_project, root_of  # noqa: E402

HERE = Path(__file__).resolve().parent
JUDGEMENTS = HERE / "heldout" / "judgements.tsv"
#: The packages: recall-ledger PyPI pins of projects the precision ledger does not hold.
PACKAGES = (
    "asteroid==0.2.1", "auraloss==0.2.1", "dhg==0.9.2", "e3tools==0.1.2",
    "equiformer-pytorch==0.3.0", "gateloop-transformer==0.2.4", "grad-cam==1.4.8",
    "lightly==1.4.13", "lightning-bolts==0.3.3", "lycoris-lora==2.2.0.post3",
    "matchzoo-py==1.0", "mmrotate==0.2.0", "piqa==1.2.2", "pythae==0.1.0",
    "pytorch-ood==0.2.0", "snntorch==0.9.4", "super-gradients==3.1.1", "torch-stoi==0.1.2",
    "torchcam==0.3.2", "tropt==0.1.1",
)  # fmt: skip
VERDICTS = ("real", "theoretical", "false")


@dataclass(frozen=True)
class Judged:
    id: str
    source: str
    path: str
    line: int
    code: str
    confidence: str
    text: str
    verdict: str
    reason: str


@dataclass(frozen=True)
class Found:
    source: str
    path: str
    line: int
    code: str
    confidence: str
    text: str


def load_judgements() -> list[Judged]:
    rows = []
    for line in JUDGEMENTS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            f = line.split("\t")
            rows.append(Judged(f[0], f[1], f[2], int(f[3]), f[4], f[5], f[6], f[7], f[8]))
    return rows


def documented() -> tuple[set[tuple[str, str, str, int]], set[tuple[str, str, str]]]:
    """The recall ledger's bug lines: (source, path, rule, line), and (source, rule, line
    text) for their copies elsewhere in the package."""
    bugs = load_bugs()
    return (
        {(b.source, b.path, b.code, b.line) for b in bugs},
        {(b.source, b.code, norm_text(b.text)) for b in bugs},
    )


def lint(sources: list[str]) -> list[Found]:
    """Every finding at min-confidence low on the packages, documented bug lines aside."""
    from numlint.api import lint_paths

    bugs, texts = documented()
    out = []
    for source in sources:
        root = root_of(source)
        if not root.is_dir():
            raise SystemExit(f"not fetched: {root}; run `recall.py fetch`")
        mark_project(source)
        for path, diags in lint_paths([root], config={"min-confidence": "low"}, jobs=4):
            rel = Path(path).resolve().relative_to(root.resolve()).as_posix()
            lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
            for d in diags:
                text = norm_text(lines[d.row - 1]) if 0 < d.row <= len(lines) else ""
                if (source, d.code, text) in texts or any(
                    (source, rel, d.code, d.row + k) in bugs for k in (-1, 0, 1)
                ):
                    continue
                out.append(Found(source, rel, d.row, d.code, d.confidence or "high", text))
    return out


def join(
    found: list[Found], judged: list[Judged]
) -> tuple[list[tuple[Found, Judged | None]], list[Judged]]:
    """Each finding with its judgement (same file, rule and line text, nearest line; failing
    that, same line), and the judgements no finding matches any more."""
    free = list(judged)
    pairs: list[tuple[Found, Judged | None]] = []
    for f in found:
        same = [j for j in free if (j.source, j.path, j.code) == (f.source, f.path, f.code)]
        hit = [j for j in same if j.text == f.text] or [j for j in same if j.line == f.line]
        hit.sort(key=lambda j: abs(j.line - f.line))
        pairs.append((f, hit[0] if hit else None))
        if hit:
            free.remove(hit[0])
    return pairs, free


def share(counts: Counter[str], total: int) -> str:
    if not total:
        return "-"
    return ", ".join(f"{v} {100 * counts[v] / total:.0f}%" for v in VERDICTS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list every finding and verdict")
    args = parser.parse_args(argv)
    _, texts = documented()
    judged = [j for j in load_judgements() if (j.source, j.code, j.text) not in texts]
    sources = [f"pypi:{p}" for p in PACKAGES]
    pairs, gone = join(lint(sources), judged)
    print(f"{len(sources)} packages; {len(pairs)} findings; {len(judged)} judged once")
    for title, levels in (("default view", DEFAULT_LEVELS), ("all confidences", None)):
        rows = [(f, j) for f, j in pairs if levels is None or f.confidence in levels]
        verdicts = Counter(j.verdict for _, j in rows if j is not None)
        judged_n = sum(verdicts.values())
        print(f"{title}: {len(rows)} findings, {judged_n} judged: {share(verdicts, judged_n)}")
    by = Counter((f.confidence, j.verdict if j else "unjudged") for f, j in pairs)
    for level in ("high", "medium", "low"):
        parts = [f"{v} {by[(level, v)]}" for v in (*VERDICTS, "unjudged") if by[(level, v)]]
        print(f"  {level:6}  {', '.join(parts) or '-'}")
    dropped = Counter(j.verdict for j in gone)
    print(
        f"judged findings no longer reported: {sum(dropped.values())} ({share(dropped, sum(dropped.values()))})"
    )
    if args.list:
        for f, j in pairs:
            verdict = j.verdict if j else "UNJUDGED"
            print(
                f"{f.confidence:6} {verdict:11} {f.source} {f.path}:{f.line} {f.code}  {f.text[:70]}"
            )
        for j in gone:
            print(f"gone   {j.verdict:11} {j.source} {j.path}:{j.line} {j.code}  {j.text[:70]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
